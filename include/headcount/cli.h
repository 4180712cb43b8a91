// headcount/cli.h: the command line, as functions tests and harnesses can call without a process.
//
// run_cli() parses argv and runs a subcommand. Its audit half is split out so that callers with
// options already in hand (the fuzz harnesses) go through the very same steps: run_audit() audits
// every model and checks its gates, report_problems() writes the error and gate lines, and
// exit_code() turns the run into the process's exit code.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "headcount/gate.h"
#include "headcount/run.h"

namespace headcount {

// Parses argv, runs the subcommand, writes the report to `out` and errors to `err`.
// Returns the exit code: 0 ok, 1 a gate failed, 2 usage or input error.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

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

}  // namespace headcount
