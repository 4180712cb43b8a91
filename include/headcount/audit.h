// headcount/audit.h: one model's audit, as plain data: what every stage found in it.
//
// audit_file() runs load -> inventory -> match -> content -> rules for one file. Gates (gate.h)
// read the Audit, a Run (run.h) holds the audits of one `headcount audit`; nothing here prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/buffers.h"
#include "headcount/cost.h"
#include "headcount/declared.h"
#include "headcount/duplicates.h"
#include "headcount/experts.h"
#include "headcount/fidelity.h"
#include "headcount/findings.h"
#include "headcount/inventory.h"
#include "headcount/load.h"
#include "headcount/mixers.h"
#include "headcount/model.h"
#include "headcount/parts.h"
#include "headcount/version.h"

namespace headcount {

struct Audit {
  Model model;
  Inventory inventory;
  AttentionResult attention;
  std::vector<DuplicatePair> duplicates;
  uint64_t unique = 0;  // stored minus duplicate copies
  bool content_compared = false;  // false with --no-content: unique is then just stored
  FrameworkView framework;        // buffers, merged copies and the framework-comparable count
  // The model's config (config.json or genai_config.json beside it, or --model-config) against the
  // graph; empty when there is none. declared_error: a config beside it that could not be read.
  std::optional<Declared> declared;
  std::string declared_error;
  Composition composition;
  Cost cost;  // the K/V cache and MACs per token at options.cost's context
  std::vector<Finding> findings;
  ExpertResult experts;  // mixture-of-experts layers (experts.h)
  MixerResult mixers;    // token mixers that are not softmax attention (mixers.h)
  // Parameters one token runs: framework.parameters less the idle experts; null without experts
  // or when a layer's size is unknown.
  std::optional<uint64_t> active_parameters;
  // With --checkpoint: whether this export holds every weight of its checkpoint (fidelity.h).
  std::optional<Fidelity> fidelity;
};

struct AuditOptions {
  LoadOptions load;
  bool compare_content = true;  // look for duplicate tensors by content (reads only candidates)
  std::string model_config;     // --model-config FILE: compare every model with this config
  bool find_model_config = true;  // else: a config.json or genai_config.json beside the model
  CostOptions cost;               // --context, --batch, --kv-dtype
  std::string checkpoint;         // --checkpoint PATH: compare the model with the checkpoint it came from
};

// Wall time of each stage of one audit, in milliseconds (--timings).
struct StageTimes {
  double read = 0;     // the file parsed into the model's skeleton and indexed
  double shapes = 0;   // every value's shape and small constant values, in topological order
  double match = 0;    // attention blocks and experts matched
  double content = 0;  // duplicate tensors compared, buffers classified (the only weight reads)
  double rules = 0;    // composition, declared vs found, findings
};

// load -> inventory -> match -> rules for one file. Throws InputError for bad input.
Audit audit_file(const std::string& path, const AuditOptions& options = {}, StageTimes* times = nullptr);
// The same for a model in memory (load_model_bytes), shown as `name`: options.load.base_dir is
// where its external data lives. The buffer is read only during the call.
Audit audit_bytes(const char* data, uint64_t size, const std::string& name, const AuditOptions& options = {},
                  StageTimes* times = nullptr);

}  // namespace headcount
