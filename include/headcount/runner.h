// headcount/runner.h: the runs the command line and the Python module start, as library calls
// that take options already in hand. run_audit() audits every model and checks its gates (what
// `headcount audit` does once its options are read), report_problems() writes the error and gate
// lines, and exit_code() turns the run into the process's exit code; run_diff() compares two
// models as `headcount diff` does. The command line (cli.h) is a parser over these; the Python
// module and the fuzz harnesses call them without it.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "headcount/audit.h"
#include "headcount/diff.h"
#include "headcount/gate.h"
#include "headcount/run.h"

namespace headcount {

// What `headcount audit` was asked to do once its options and config are read.
struct AuditRequest {
  std::vector<std::string> inputs;  // files, and folders searched for .onnx files
  AuditOptions audit;
  GateOptions gates;                // the global budget and the other gates
  std::vector<PathBudget> budgets;  // [[budget]] tables of the config
  std::string config;               // the config file that was read, or ""
  int jobs = 1;
  std::ostream* progress = nullptr;  // where the progress line goes, when it should
};

// Audits every model and checks its gates. A model that cannot be audited (bad input, out of
// memory, an internal error) becomes its own error entry; it never stops the others.
Run run_audit(const AuditRequest& request);
// One `headcount: error: FILE: ...` line per model that failed, then one
// `headcount: gate failed: FILE: GATE: ...` line per failed gate.
void report_problems(const Run& run, std::ostream& err);
// 2 when a model failed, else 1 when a gate failed, else 0.
int exit_code(const Run& run);

// What `headcount diff A B` was asked to compare.
struct DiffRequest {
  std::string a, b;             // B: a model, a one-model json/jsonl report, or A's checkpoint
  bool compare_content = true;  // false: --no-content
};

// The comparison, or what stopped it: "FILE: what is wrong" when a side cannot be read.
struct DiffRun {
  std::optional<Diff> diff;
  std::string error;  // set when diff is empty
  // The sides' audits, which diff.a.audit and diff.b.audit point to (the HTML page draws them):
  // on the heap, so that they stay where they are when the run is moved.
  std::unique_ptr<const Audit> a, b;

  // What `diff --fail-on-change` fails on. Against its checkpoint, an export fails on a lost or
  // changed weight: its stored count differs by design (a tied table stored twice, a transposed
  // copy). Otherwise a parameter count or the number of blocks that differs.
  bool failed() const { return diff && (diff->fidelity ? diff->fidelity->failed() : diff->counts_changed); }
};

// Reads A, then B, and compares them block by block; an export and its checkpoint, in either
// order, also by their weights' values (check_fidelity).
DiffRun run_diff(const DiffRequest& request);

// An error or gate line is one line, whatever names a hostile file carries: control characters
// (C0, DEL, and C1 written in UTF-8) become '?'.
std::string one_line(const std::string& text);

}  // namespace headcount
