// headcount/results/audit.h: the audit state: one model and what every stage found in it, as
// plain data. Each stage reads what it needs and writes its own member; audit_file (src/audit.cpp)
// runs them in order. Gates, diff and the renderers read it; nothing here runs or prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/results/adapter.h"
#include "headcount/results/attention.h"
#include "headcount/results/buffers.h"
#include "headcount/results/cost.h"
#include "headcount/results/declared.h"
#include "headcount/results/duplicates.h"
#include "headcount/results/experts.h"
#include "headcount/results/fidelity.h"
#include "headcount/results/findings.h"
#include "headcount/results/inventory.h"
#include "headcount/results/mixers.h"
#include "headcount/results/parts.h"
#include "headcount/model.h"

namespace headcount {

// Where a remote input (hf://, http(s)://) was read from, and what reading it took.
struct RemoteRead {
  std::string url;      // the file audited
  std::string commit;   // the revision's commit, when the Hub said it (X-Repo-Commit)
  uint64_t bytes = 0;   // body bytes fetched, every request of the model and its config
  uint64_t requests = 0;
};

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
  // A remote input: where it was read and what that took; no tensor's values were fetched, so
  // content_compared is false.
  std::optional<RemoteRead> remote;
  // A checkpoint that is a LoRA adapter (PEFT, MLX, GGUF): its targets, ranks and parameters.
  std::optional<Adapter> adapter;
};

// Wall time of each stage of one audit, in milliseconds (--timings).
struct StageTimes {
  double read = 0;     // the file parsed into the model's skeleton and indexed
  double shapes = 0;   // every value's shape and small constant values, in topological order
  double match = 0;    // attention blocks and experts matched
  double content = 0;  // duplicate tensors compared, buffers classified (the only weight reads)
  double rules = 0;    // composition, declared vs found, findings
};

}  // namespace headcount
