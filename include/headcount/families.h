// headcount/families.h: what a model's own description says, and which tensors a model of a known
// family has.
//
// A Hugging Face config.json (Optimum writes one beside its exports) or onnxruntime-genai's
// genai_config.json declares the architecture: layers, width, heads, K/V heads, head size,
// feed-forward size, vocabulary, tied embeddings, and which layers slide, chunk, recur or route to
// experts. For the families whose modules are known (BERT, GPT-2, LLaMA and its kin, the mixtures
// of experts, latent attention, Gemma 2 and 3, gpt-oss, Llama 4, Qwen3-Next, Jamba, Phi-3,
// DeepSeek-V3.2, GLM-4.5, OLMo 2, Nemotron-H) the
// framework's own parameter count follows from those numbers, part by part, and so do the K/V
// cache and the recurrent state a decoder keeps. Each family is one row of a table (families.cpp).
// This module owns that knowledge: the audit's declared-vs-found comparison and the explanations
// read it from here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/checked.h"
#include "headcount/results/model_config.h"

namespace headcount {

// Reads config.json or genai_config.json. Throws InputError (message with the file) when the file
// is missing, not a regular file, above 16 MiB, not JSON, or not a model description.
ModelConfig read_model_config(const std::string& path);
// The same for a config's text fetched from elsewhere (a remote model's config.json), shown as
// `path`; above 16 MiB is refused as for a file.
ModelConfig parse_model_config(const std::string& text, const std::string& path);

// The K/V cache at `context` tokens (sliding and chunked layers keep at most their window), at
// `bits` per element, and its formula with the numbers in; nullopt when a product does not fit in
// 64 bits or no layer keeps K/V.
struct KvAtContext {
  uint64_t bytes = 0;
  std::string formula;
};
std::optional<KvAtContext> kv_at_context(const FamilyCount& count, uint64_t context, int bits);

// The model_types family_count knows, in the table's order.
const std::vector<std::string>& known_families();

// The framework's count of a config's model, for the families whose modules are known; nullopt for
// another model_type or a config missing a number the formula needs.
std::optional<FamilyCount> family_count(const ModelConfig& config);

// The same for `headcount explain --config`: throws InputError naming what is not known in a
// known family: a missing number, a field that changes the count and that the family's formula
// does not read, or a layer kind it does not know (a guess would be silent). Another model_type is
// estimated from the common field names, and the count says so (FamilyCount::estimate) and names
// every field it did not understand.
FamilyCount family_count_or_explain(const ModelConfig& config);

}  // namespace headcount
