// checkpoint/model.h: a checkpoint read as a Model (weights, no graph) and its parts by name.
#pragma once

#include <string>
#include <vector>

#include "headcount/results/attention.h"
#include "headcount/checkpoint_index.h"
#include "headcount/results/experts.h"
#include "headcount/model.h"
#include "headcount/results/parts.h"

namespace headcount {

// The checkpoint's tensors as the model's weights, in the checkpoint's order; the Model keeps the
// Checkpoint, which owns the names and shapes the weights view.
Model checkpoint_model(Checkpoint checkpoint, const std::string& path);

// What a tensor's name says it is, from the naming tables of the common families (Hugging Face
// transformers' modules, llama.cpp's GGUF names).
struct NamedTensor {
  int layer = -1;        // the layer index in the name, -1 for none
  int expert = -1;       // an expert index in the name, -1 for none
  std::string role;      // "q", "k", "v", "o", "qkv", "q_norm", "ffn", "expert", "router", "embedding", ...
  std::string family;    // the table row's family: "hf", "gpt2", "neox", "bert", "t5", "gguf", ...
  bool bias = false;     // a ".bias" (a weight otherwise)
};

// The names of every weight, read through the tables.
std::vector<NamedTensor> name_roles(const Model& model);

// A tensor's name split at its dots ("model.layers.3.self_attn" -> model, layers, 3, self_attn).
std::vector<std::string_view> name_parts(std::string_view name);
// Where a name's layer index is: the first part of digits after a layer container ("layers", "h",
// "blocks", "blk", "layer", "block"); parts.size() when the name is outside the layers.
size_t layer_index_at(const std::vector<std::string_view>& parts);

// Every row of the tables, for `headcount explain --names` and its documentation.
struct NameRow {
  const char* path;    // after the layer index ("self_attn.q_proj", '#' an expert's index), or a name's tail
  const char* role;
  const char* family;
  bool in_layer;       // a layer's row; else a row for names outside the layers
};
const std::vector<NameRow>& name_rows();

// What a checkpoint's names cannot say, from GGUF metadata or a config.json (unknown otherwise):
// the heads of its attention, and the experts of its MoE layers.
struct NamedHeads {
  std::optional<int64_t> heads, kv_heads, head_dim, v_head_dim;
  std::string from;  // where they came from, or why they are unknown
  std::optional<int64_t> experts, experts_per_token;  // routed experts per MoE layer, and its k
  std::string experts_from;
};

// The attention blocks, one per layer with Q/K/V/O tensors, and the parts each tensor belongs to.
AttentionResult named_attention(const Model& model, const std::vector<NamedTensor>& names, const NamedHeads& heads);
// The mixture-of-experts layers: per layer holding routed experts by name (experts.N.* or tensors
// stacked [experts, ...]), the routed, router and shared tensors; k from `heads`.
ExpertResult named_experts(const Model& model, const std::vector<NamedTensor>& names, const NamedHeads& heads);
// Each weight's part by its name (Part::Other for a name no table knows), for compose().
std::vector<Part> named_parts(const Model& model, const std::vector<NamedTensor>& names);

}  // namespace headcount
