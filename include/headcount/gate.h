// headcount/gate.h: CI gates over an audit: size budgets, expected heads, finding severity, and a
// baseline report to compare against. Gates only read the Audit; the CLI turns failures into exit 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/findings.h"

namespace headcount {

struct Audit;

// What an earlier JSON report said about one model (the fields gates compare).
struct BaselineBlock {
  std::optional<int64_t> heads, kv_heads;
  int64_t width = 0;
  std::string form;
};
struct BaselineModel {
  std::string file;
  uint64_t stored = 0, unique = 0, attention = 0;
  std::vector<BaselineBlock> blocks;
};

// Reads a headcount/1 report: one JSON document, a JSON array of documents, or JSON lines.
// Throws InputError when the file is missing or is not such a report.
std::vector<BaselineModel> read_baseline(const std::string& path);

struct Budget {
  std::optional<uint64_t> max_params;            // against parameters.framework
  std::optional<uint64_t> max_attention_params;  // against parameters.attention
  std::optional<uint64_t> max_bytes;             // against parameters.bytes
  std::optional<int64_t> expect_heads;           // every block
};

struct GateOptions {
  Budget budget;
  std::optional<Severity> fail_on;
  const std::vector<BaselineModel>* baseline = nullptr;
  uint64_t tolerance = 0;           // parameters a baseline comparison lets pass
  double tolerance_fraction = 0.0;  // or a fraction of the baseline's count ("0.5%")
};

struct GateFailure {
  std::string gate;     // "max-params", "expect-heads", "fail-on", "baseline" ...
  std::string message;  // what failed and by how much
};

std::vector<GateFailure> check_gates(const Audit& audit, const GateOptions& options);

// A [[budget]] table of the config file: budgets for the models whose path matches a glob.
struct PathBudget {
  std::string pattern;
  Budget budget;
};

// The global budget, overridden field by field by the first PathBudget whose glob matches `file`.
Budget budget_for(const std::string& file, const Budget& global, const std::vector<PathBudget>& budgets);

// "350k", "110M", "1.5B", "1234": a parameter count. Throws InputError on anything else.
uint64_t parse_count(const std::string& text);
// "500", "64MiB", "1.5GB", "2GiB", "10kB": a byte size. Throws InputError on anything else.
uint64_t parse_bytes(const std::string& text);
// "1000" or "0.5%": an absolute count or a fraction of the baseline.
void parse_tolerance(const std::string& text, uint64_t* absolute, double* fraction);

}  // namespace headcount
