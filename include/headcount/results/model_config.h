// headcount/results/model_config.h: what a model's own description (config.json,
// genai_config.json) declares, and the count its family's formula gives. Read by read_model_config
// and family_count (src/families.cpp); the audit state keeps both (Declared), and declared vs found,
// the findings and the renderers read them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "headcount/checked.h"

namespace headcount {

// One key's value in a config, as the family table reads it: a number, a boolean, a string or a
// list of those (nested values are Other).
struct ConfigValue {
  enum class Kind { Null, Number, Boolean, String, List, Other } kind = Kind::Null;
  Int number;  // unknown unless a whole number in int64's range
  bool flag = false;
  std::string text;
  std::vector<ConfigValue> items;
};

// The fields of a config that describe the architecture, with the family's defaults applied
// (GPT-2's n_inner = 4·n_embd, LLaMA's K/V heads = heads ...). Unknown means not declared.
struct ModelConfig {
  std::string file;
  std::string format;      // "config.json" (Hugging Face) or "genai_config.json" (onnxruntime-genai)
  std::string model_type;  // "bert", "gpt2", "llama" ... as the file says
  // The model_type the family table counts it as: model_type itself, a known architecture named by
  // `architectures` (Kimi K2's kimi_k2 is DeepseekV3ForCausalLM), or a wrapper's text_config
  // (llama4 -> llama4_text); "" when none is known. `read_as` says how, for messages.
  std::string family, read_as;
  std::vector<std::string> architectures;
  Int layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, max_positions, type_vocab;
  std::optional<bool> tied;  // tie_word_embeddings
  bool encoder_decoder = false;
  bool qkv_bias = false, o_bias = false, mlp_bias = false, qk_norm = false;
  // Mixtures of experts (Mixtral, Qwen3-MoE, DeepSeek): experts per MoE layer, how many run per
  // token, one expert's inner size, shared experts, and which layers are MoE layers.
  Int experts, experts_per_token, moe_intermediate, shared_experts, first_dense_layers, moe_layer_freq,
      sparse_step;
  std::vector<int64_t> dense_layers;  // Qwen3-MoE's mlp_only_layers
  bool router_bias = false;           // DeepSeek-V3's e_score_correction_bias (topk_method noaux_tc)
  // Multi-head latent attention (DeepSeek): the low-rank Q and the shared K/V latent.
  Int q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
  Int mtp_layers;     // DeepSeek-V3's multi-token-prediction modules (num_nextn_predict_layers)
  std::string dtype;  // torch_dtype (or dtype), "" when not declared
  // Keys present with a value that changes a parameter count (experts, latent ranks, biases ...):
  // a family whose formula does not read one of them cannot count the model.
  std::vector<std::string> count_keys;
  // The key each field was read from ("layers" -> "n_layer"), for messages in the config's words,
  // and the fields the config leaves out and its family derives ("head_dim" -> "hidden_size /
  // num_attention_heads").
  std::map<std::string, std::string> key_of;
  std::map<std::string, std::string> derived_from;
  // Every key of a config.json (of its text_config for a wrapper), for the keys a family's row names.
  std::map<std::string, ConfigValue> values;
  // The keys the file leaves out that its configuration class's defaults filled ("head_dim 256").
  std::vector<std::string> defaulted;
  // A wrapper's vision_config (Qwen3-VL), for the vision tower; empty when there is none.
  std::map<std::string, ConfigValue> vision;
};

// One part of a family's count and its formula with the numbers in.
struct CountPart {
  std::string part;     // "embeddings", "attention", "feed-forward", "norms", "pooler", "lm head"
  uint64_t parameters = 0;
  std::string formula;  // "12 · 4·(768² + 768) = 28,348,416"
};

// Attention layers that keep the same K/V per token: full (the whole context), sliding or chunked
// (at most `window` tokens), or latent (MLA: the latent and the RoPE key).
struct KvLayers {
  std::string kind;  // "full", "sliding", "chunked", "latent"
  int64_t layers = 0;
  uint64_t elements = 0;  // K/V elements one layer keeps per token
  uint64_t window = 0;    // the most tokens a sliding or chunked layer keeps; 0: the whole context
};

struct FamilyCount {
  std::string family;  // "BERT", "GPT-2", "LLaMA" ...
  std::vector<CountPart> parts;
  uint64_t total = 0;
  // Mixtures of experts: the parameters one token runs through, the total less the experts that
  // stay idle in every MoE layer.
  std::optional<uint64_t> active;
  std::string active_formula;
  // The same without the input embedding (a lookup, no multiply), as some publishers count; equal
  // to `active` when the embedding is also the LM head.
  std::optional<uint64_t> active_without_embedding;
  int64_t moe_layers = 0, experts = 0, experts_per_token = 0;
  uint64_t expert_size = 0;  // one routed expert's parameters
  // Multi-token-prediction modules (DeepSeek-V3, Qwen3-Next), apart from the main total.
  std::vector<CountPart> mtp;
  uint64_t mtp_total = 0;
  // The K/V cache a decoder keeps per token at the config's dtype (MLA: the latent and the RoPE key).
  std::optional<uint64_t> kv_bytes_per_token;
  std::string kv_formula;
  // The attention layers by what they keep, for the cache at a context, and the config's element
  // size (0 when its dtype is not one headcount knows).
  std::vector<KvLayers> kv_layers;
  int kv_bits = 0;
  std::string kv_dtype;
  // Linear-attention and state-space layers keep a state per sequence whatever the context: the
  // convolution's last k - 1 inputs and the recurrent state, at the config's dtype.
  int64_t state_layers = 0;
  uint64_t state_elements = 0;  // per layer
  std::optional<uint64_t> state_bytes;
  std::string state_formula;
  // What the count assumed where the config is silent, in words.
  std::vector<std::string> notes;
  // An unknown model_type is estimated, not refused: the row it was read as (in words), and every
  // key of the config the estimate did not read and that is not known to leave a count alone.
  // A multimodal config's vision tower (Qwen3-VL), counted apart from the language model (`total`),
  // and the two together; empty and nullopt without one.
  std::vector<CountPart> vision_parts;
  uint64_t vision_total = 0;
  std::optional<uint64_t> total_with_vision;
  bool estimate = false;
  std::string estimated_as;
  std::vector<std::string> not_understood;
};

}  // namespace headcount
