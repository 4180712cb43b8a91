// headcount/declared.h: what a model's own description declares, against what its graph holds.
//
// A model usually travels with a config.json (Hugging Face, written by Optimum) or a
// genai_config.json (onnxruntime-genai). A model exported with the wrong config is a real and
// silent bug, so each declared field is compared with the graph: agrees, differs, or not
// checkable (and why). The framework's count from the config's own formula (families.h) is set
// beside the graph's framework count.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/checked.h"
#include "headcount/duplicates.h"
#include "headcount/families.h"
#include "headcount/model.h"
#include "headcount/parts.h"

namespace headcount {

enum class Agreement { Agrees, Differs, NotCheckable };
const char* agreement_name(Agreement a);  // "agrees", "differs", "not checkable"

// One architecture field: its key in the config, what the config declares, what the graph holds.
struct DeclaredField {
  std::string label;  // "layers", "hidden size", "heads", "kv heads", "head size", ...
  std::string key;    // the config's key: "num_attention_heads", "n_head" ...
  std::string derived_from;  // when the config leaves it out: how its family derives it
  Int declared, found;
  bool boolean = false;  // tied embeddings: 1 yes, 0 no
  Agreement agreement = Agreement::NotCheckable;
  std::string note;      // where the found value comes from, or why it cannot be checked
};

struct Declared {
  ModelConfig config;
  std::vector<DeclaredField> fields;
  std::optional<FamilyCount> count;  // the framework's count from the config's formula
  std::string count_note;            // how that count compares with the graph's framework count
};

// config.json, else genai_config.json, in the model file's folder (any file but a folder: one that
// is not a regular file is refused when read, with the reason); "" when there is neither.
std::string find_model_config(const std::string& model_path);

// Compares a config with a model: its attention blocks, its composition (the feed-forward and
// embedding tensors), its duplicate tensors (a tied LM head stored twice) and its framework count.
Declared compare_declared(const ModelConfig& config, const Model& model, const AttentionResult& attention,
                          const Composition& composition, const std::vector<DuplicatePair>& duplicates,
                          uint64_t framework_parameters);

}  // namespace headcount
