// headcount/gate.h: CI gates over an audit: size budgets, expected heads, finding severity, and a
// baseline report to compare against. Gates only read the Audit; the CLI turns failures into exit 1.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "headcount/baseline.h"
#include "headcount/results/findings.h"
#include "headcount/results/gate.h"

namespace headcount {

struct Audit;

// How a budget gate's limit is written, on the command line, in headcount.toml and in Python.
enum class BudgetUnit {
  Count,  // a count with k, M, B or T: 350k, 110M, 1.5B (parse_count)
  Bytes,  // a size in bytes: 500MB, 2GiB, 476.8MiB (parse_bytes)
  Heads,  // a whole number of 1 or more (the command line's int option; a [[budget]] table reads a count)
};

// What a ceiling gate measured of one model, and how far the figure is known.
struct Measured {
  enum class Bound {
    Exact,    // `value` is the figure
    AtLeast,  // a part is unknown: `value` is the known part; it fails unless that alone is over
    AtMost,   // the figure is unknown but not above `value`: it fails only when `value` is over
  };
  uint64_t value = 0;
  Bound bound = Bound::Exact;
  std::string unknown;     // AtLeast and AtMost: what is not known, in words
  const char* note = "";   // added to the gate's wording: " (no experts: every parameter runs)"
};

// One budget gate, a row of budget_gates(). The row is the gate: its id is the command-line
// option (--ID), the headcount.toml key (top level and [[budget]] tables), the key of Budget, the
// keyword of Python's Report.check (with '_' for '-') and GateFailure::gate; its texts are the
// option's help and the gate's SARIF rule. A ceiling reads its figure with `measure`; a gate that
// is not a ceiling (expect-heads) says its own failure with `expect`.
struct BudgetGate {
  const char* id;       // "max-params"
  BudgetUnit unit;      // how its limit is written
  const char* help;     // the option's line in --help, the man page and the completions
  const char* summary;  // one line (the SARIF rule)
  const char* doc;      // what it compares and how to set it
  const char* what;     // a ceiling's failure names the figure: "parameters 29,184 exceed the budget of ..."
  Measured (*measure)(const Audit& audit);                                     // a ceiling: the figure
  std::optional<std::string> (*expect)(const Audit& audit, uint64_t limit);  // otherwise: the failure, if any
};

// Every budget gate, in the order of --help and of the config's keys. Ceilings are checked in this
// order, then the other budget gates, then --fail-on and --baseline.
const std::vector<BudgetGate>& budget_gates();
// The row with this id ("max-params"), or null.
const BudgetGate* find_budget_gate(const std::string& id);
// A limit as `gate.unit` writes it ("110M", "2GiB", "12"). Throws InputError on anything else.
uint64_t parse_limit(const BudgetGate& gate, const std::string& text);

// The limits one model is held to: one per budget gate that has one, by BudgetGate::id.
struct Budget {
  std::map<std::string, uint64_t> limits;
};

struct GateOptions {
  Budget budget;  // the global budget: the command line, else the config's top level
  Budget pinned;  // the part of it the command line gave: beats every [[budget]] table
  std::optional<Severity> fail_on;
  const Baseline* baseline = nullptr;
  uint64_t tolerance = 0;      // parameters a baseline comparison lets pass
  uint64_t tolerance_ppb = 0;  // or a share of the baseline's count, in parts per billion ("0.5%")
};

std::vector<GateFailure> check_gates(const Audit& audit, const GateOptions& options);

// A [[budget]] table of the config file: budgets for the models whose path matches a glob.
struct PathBudget {
  std::string pattern;  // absolute and normalized: the config's folder joined with its path
  Budget budget;
};

// Whether a model path matches a glob: the path is made absolute and normalized first, so
// "./models/x.onnx" and "models/x.onnx" match the same tables; * and ? stay within one path
// segment, ** spans any number of them.
bool path_matches(const std::string& pattern, const std::string& file);

// The budget of one model: the global one, overridden gate by gate by the first PathBudget
// whose glob matches `file`, and then by what the command line gave (`pinned`), which always wins.
Budget budget_for(const std::string& file, const Budget& global, const std::vector<PathBudget>& budgets,
                  const Budget& pinned = {});

// "350k", "110M", "1.5B", "1234": a parameter count. Throws InputError on anything else.
uint64_t parse_count(const std::string& text);
// "500", "64MiB", "1.5GB", "2GiB", "10kB": a byte size. Throws InputError on anything else.
uint64_t parse_bytes(const std::string& text);
// "1000" or "0.5%": an absolute count, or a share of the baseline in parts per billion (0.5% is
// 5,000,000), read exactly.
void parse_tolerance(const std::string& text, uint64_t* absolute, uint64_t* ppb);

}  // namespace headcount
