// headcount/run.h: one `headcount audit` run as plain data: every model's audit or error, and
// the gates it failed, in input order. run_audit() (runner.h) makes it; renderers (render.h) print it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "headcount/results/audit.h"
#include "headcount/results/gate.h"

namespace headcount {

// One model of a run: its audit, or the error that stopped it, and the gates it failed.
struct FileResult {
  std::string path;
  std::optional<Audit> audit;
  std::string error;                // set when audit is empty
  std::vector<GateFailure> gates;
  StageTimes times;
};

// Everything one `headcount audit` invocation produced, in input order.
struct Run {
  std::vector<FileResult> files;
  std::string config;         // the config file that was read, or ""
  bool gates_configured = false;
};

}  // namespace headcount
