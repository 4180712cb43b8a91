// headcount/declared.h: what a model's own description declares, against what its graph holds.
//
// A model usually travels with a config.json (Hugging Face, written by Optimum) or a
// genai_config.json (onnxruntime-genai). A model exported with the wrong config is a real and
// silent bug, so each declared field is compared with the graph: agrees, differs, or not
// checkable (and why). The framework's count from the config's own formula (families.h) is set
// beside the graph's framework count.
#pragma once

#include <string>
#include <vector>

#include "headcount/results/declared.h"
#include "headcount/results/attention.h"
#include "headcount/results/duplicates.h"
#include "headcount/results/parts.h"
#include "headcount/families.h"
#include "headcount/model.h"

namespace headcount {

// config.json, else genai_config.json, in the model file's folder (any file but a folder: one that
// is not a regular file is refused when read, with the reason); "" when there is neither.
std::string find_model_config(const std::string& model_path);

// Compares a config with a model: its attention blocks, its composition (the feed-forward and
// embedding tensors), its duplicate tensors (a tied LM head stored twice) and its framework count.
Declared compare_declared(const ModelConfig& config, const Model& model, const AttentionResult& attention,
                          const Composition& composition, const std::vector<DuplicatePair>& duplicates,
                          uint64_t framework_parameters);

}  // namespace headcount
