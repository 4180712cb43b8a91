// headcount/results/declared.h: the model's config against the graph, field by field. Written by
// compare_declared (src/declared.cpp); read by the findings, the gates and the renderers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "headcount/checked.h"
#include "headcount/results/model_config.h"

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

}  // namespace headcount
