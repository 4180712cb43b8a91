// headcount/audit.h: audit one model: audit_file() runs load -> inventory -> match -> content ->
// rules for one file and returns the Audit (headcount/results/audit.h: what every stage found).
// Gates (gate.h) read the Audit, a Run (run.h) holds the audits of one `headcount audit`; nothing
// here prints.
#pragma once

#include <cstdint>
#include <string>

#include "headcount/results/audit.h"
#include "headcount/cost.h"
#include "headcount/load.h"
#include "headcount/version.h"

namespace headcount {

// Reading a remote input (hf://ORG/REPO, an http(s) URL).
struct RemoteOptions {
  uint64_t fetch_budget = uint64_t{64} << 20;  // bytes one model may fetch (--fetch-budget)
  long timeout_s = 15;                         // to connect, and of a stalled transfer (--http-timeout)
};

struct AuditOptions {
  LoadOptions load;
  bool compare_content = true;  // look for duplicate tensors by content (reads only candidates)
  std::string model_config;     // --model-config FILE: compare every model with this config
  bool find_model_config = true;  // else: a config.json or genai_config.json beside the model
  CostOptions cost;               // --context, --batch, --kv-dtype
  std::string checkpoint;         // --checkpoint PATH: compare the model with the checkpoint it came from
  std::string base;               // --base MODEL: check an adapter against the model it is for
  RemoteOptions remote;
};

// load -> inventory -> match -> rules for one file. Throws InputError for bad input.
Audit audit_file(const std::string& path, const AuditOptions& options = {}, StageTimes* times = nullptr);
// The same for a model in memory (load_model_bytes), shown as `name`: options.load.base_dir is
// where its external data lives. The buffer is read only during the call.
Audit audit_bytes(const char* data, uint64_t size, const std::string& name, const AuditOptions& options = {},
                  StageTimes* times = nullptr);

}  // namespace headcount
