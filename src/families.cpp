// families.cpp: reading model configs (nlohmann-json, exact 64-bit integers) and the parameter
// counts of the families whose modules are known. Each family is one row of families(): what a
// layer of it holds and which config keys say so; Counter reads a row and a config.
#include "headcount/families.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headcount/error.h"
#include "paths.h"

namespace headcount {
namespace {

using json = nlohmann::json;

std::string commas(uint64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

// ---- the family table ----

// How an attention layer's Q/K/V/O weights are laid out.
enum class Attention {
  Square,       // BERT: Q, K, V and O each width × width, whatever the heads
  SquareFused,  // GPT-2: c_attn width × 3·width, then c_proj width × width
  Heads,        // LLaMA: Q width → H·d, K and V width → KV·d, O H·d → width
  HeadsFused,   // Phi-3: one qkv_proj width → (H + 2·KV)·d, then O
  Latent,       // DeepSeek: multi-head latent attention (low-rank Q, a shared K/V latent, a RoPE key)
};

// What mixes the tokens in a layer.
enum class Mixer {
  Full,     // softmax attention over the whole context
  Sliding,  // softmax attention over the last `sliding_window` tokens
  Chunked,  // softmax attention within fixed chunks of `attention_chunk_size` tokens (Llama 4)
  Linear,   // Gated DeltaNet (Qwen3-Next): a recurrent state, no K/V
  Mamba,    // a selective state space (Mamba-1, Jamba): a recurrent state, no K/V
  Mamba2,   // Mamba-2 (Nemotron-H): heads × head_dim wide, grouped B and C; a recurrent state
  ShortConv,  // LFM2's gated short convolution: a depthwise conv1d of conv_L_cache over the width
};

// The feed-forward of a dense layer and of one expert.
enum class Mlp {
  Plain,  // up and down: 2·h·f (+ f + h with biases)
  Gated,  // gate, up and down (or gate_up fused): 3·h·f (+ 2·f + h with biases)
};

// The vision tower beside a wrapper's text_config: none counted, or Qwen3-VL's (a ViT with a patch
// merger and DeepStack mergers), Gemma 3's SigLIP encoder and its projector, or Gemma 4's encoder.
enum class Vision { None, Qwen3VL, Qwen35, Siglip, Gemma4 };

// Whether a projection has a bias: never, always, or as the config's attention_bias / mlp_bias say.
enum class Bias { None, Always, FromConfig };

// A router's bias: DeepSeek's e_score_correction_bias when topk_method is noaux_tc, always (gpt-oss),
// or a score-correction bias always (Nemotron-H's e_score_correction_bias, kept in its checkpoints).
enum class RouterBias { FromTopk, Always, ScoreAlways };

// Layers l with l % P == O: P the config's value of `period` (`period_default` when it is absent
// or not positive), O = 0, P − 1, or the value of `offset` (`offset_default`).
struct EveryNth {
  const char* period = nullptr;
  int64_t period_default = 1;
  enum class At { First, Last, Key } at = At::First;
  const char* offset = nullptr;
  int64_t offset_default = 0;
  bool used() const { return period || period_default != 1 || at == At::Key; }
};

// Which layers hold a mixture of experts when the config declares experts (all by default).
struct ExpertLayers {
  EveryNth every;
  const char* first = nullptr;       // the layers before this many stay dense
  const char* last = nullptr;        // the layers after this one stay dense (a negative value: none)
  const char* dense_list = nullptr;  // the layers listed here stay dense
  const char* moe_list = nullptr;    // when given, exactly the layers listed here are MoE layers
  const char* kinds = nullptr;       // when given, a name a layer: "dense" or "sparse" (a MoE layer)
};

// What mixes the tokens in each layer.
struct MixerLayers {
  Mixer base = Mixer::Full;     // every layer's, but for the ones below
  Mixer special = Mixer::Full;  // the layers `every` picks
  EveryNth every;
  const char* flags = nullptr;        // a per-layer list: nonzero keeps `base`, 0 makes `special`
  const char* special_list = nullptr; // the layers listed here are `special`, the others `base`; unlisted: all `special`
  const char* enabled_by = nullptr;   // a boolean key; unless true, every layer is Full
  const char* full_before = nullptr;  // the layers before this many are Full
  bool layer_types = false;           // the config's layer_types, when given, names each layer
  bool block_names = false;           // ... by Granite's names: "mamba" (a Mamba-2 layer) and "attention"
  // Nemotron-H: each layer is one block, named by a character of this key's string (M Mamba-2,
  // * attention, - feed-forward, E experts) or by a name of `blocks` (mamba, attention, mlp, moe).
  const char* pattern = nullptr;
  const char* blocks = nullptr;
};

// One family: what a layer holds, which config keys say it, and what the config may leave out.
struct Family {
  std::vector<std::string> types;     // model_type names
  std::vector<std::string> classes;   // Hugging Face classes (`architectures`) that build it
  std::vector<std::string> wrappers;  // model_types whose text_config is this family (llama4)
  // The configuration class's defaults for keys a config may leave out, and the class's name.
  std::vector<std::pair<std::string, int64_t>> defaults;
  std::string defaults_from;
  Vision vision = Vision::None;       // the wrappers' vision tower, counted from their vision_config
  std::string name;                   // as shown
  // Embeddings: tokens always; learned positions (max_position_embeddings) and token types.
  bool positions = false, token_types = false;
  // Attention layers.
  Attention attention = Attention::Heads;
  Bias qkv_bias = Bias::FromConfig, o_bias = Bias::FromConfig, mlp_bias = Bias::FromConfig;
  bool qk_norm = false;      // q_norm and k_norm of head_dim in every attention layer
  const char* qk_norm_key = nullptr;  // ... or when this boolean key is true (GLM-4.5's use_qk_norm)
  bool qk_norm_width = false;  // OLMo 2: q_norm over all heads · head_dim, k_norm over K/V heads · head_dim
  bool gated_query = false;  // Q projects twice the width: the query and a sigmoid gate on the output
  bool sinks = false;        // one learned logit per head, beside the scores
  bool indexer = false;      // DeepSeek sparse attention's indexer (index_n_heads, index_head_dim) in every layer ...
  // ... or in the layers whose indexer runs (GLM-MoE-DSA: indexer_types' "full" layers, or the
  // pattern of index_topk_pattern, or every index_topk_freq-th layer from index_skip_topk_offset on)
  bool indexer_types = false;
  bool derive_head_dim = true;  // head_dim, when absent, is width / heads (else it must be given)
  // Gemma 4: the full-attention layers have their own head size (global_head_dim) and, with
  // attention_k_eq_v, num_global_key_value_heads keys that serve as values (no v_proj); every layer
  // holds a layer_scalar.
  bool global_layers = false;
  bool lfm2_ff = false;  // LFM2: the feed-forward size adjusted as Lfm2MLP does (two thirds, rounded up)
  bool bamba_keys = false;  // Mamba-2 layers named as BambaMixer reads them (mamba_n_heads, mamba_expand ...)
  // Which layers attend, slide, chunk or recur, and the windows.
  MixerLayers layers;
  const char* window = nullptr;  // the sliding layers' window
  const char* chunk = nullptr;   // the chunked layers' chunk
  // Feed-forward.
  Mlp mlp = Mlp::Gated;
  const char* dense_size = nullptr;  // the dense layers' size, when not intermediate_size
  // Norms: weights per norm (RMSNorm 1, LayerNorm 2 with its bias), per layer, and where else.
  int norm_weights = 1, norms_per_layer = 2;
  bool embedding_norm = false, final_norm = true;
  bool pooler = false, lm_head = true;
  bool kv_cache = true;  // report the K/V cache a decoder keeps
  // What the config may leave out.
  int64_t intermediate_per_hidden = 0;  // the feed-forward size is this · width (GPT-2: 4)
  std::string intermediate_note;
  int64_t type_vocab_default = 0;
  bool kv_heads_default = false;  // K/V heads default to the query heads
  std::optional<bool> tied;       // tie_word_embeddings' default, and where it is from
  std::string tied_note;
  // Mixtures of experts, when the config declares experts.
  bool experts = false;
  const char* expert_size = "moe_intermediate_size";
  bool expert_bias = false;  // gate_up and down biases in every expert
  Mlp expert_mlp = Mlp::Gated;  // an expert's (and a shared expert's) feed-forward
  RouterBias router_bias = RouterBias::FromTopk;
  ExpertLayers expert_layers;
  const char* shared_count = nullptr;  // shared experts per MoE layer (n_shared_experts) ...
  int64_t shared_fixed = 0;            // ... or always this many
  const char* shared_size = nullptr;   // a shared expert's size, when not a routed expert's
  bool shared_gate = false;            // a sigmoid gate width → 1 on the shared expert
  // Multi-token-prediction modules: the key, its default and what the default rests on, the name
  // of the projection of [normed embedding; normed hidden].
  const char* mtp = nullptr;
  int64_t mtp_default = 0;
  std::string mtp_note;
  std::string mtp_proj = "eh_proj";
  // A key whose modules the family's class does not build (ERNIE 4.5's MTP layers): read, not
  // counted, and this note given when the config sets it.
  const char* unbuilt = nullptr;
  std::string unbuilt_note;
  // The config keys that change a count somewhere and that this row's formula reads.
  std::vector<std::string> reads;
};

// Config keys whose values change a parameter count, or the K/V cache or recurrent state,
// somewhere in Hugging Face's families.
const std::vector<std::string> kCountKeys = {
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "mlp_only_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "num_nextn_predict_layers", "topk_method", "attention_bias", "mlp_bias", "use_qk_norm",
    "head_dim", "num_key_value_heads", "tie_word_embeddings", "n_inner", "intermediate_size", "type_vocab_size",
    "max_position_embeddings", "n_positions", "is_encoder_decoder", "num_shared_experts",
    "moe_num_experts", "moe_k", "expert_interval", "qkv_bias", "use_bias", "linear_bias",
    // which layers slide, chunk, recur or hold experts, and their sizes
    "layer_types", "sliding_window", "sliding_window_pattern", "use_sliding_window", "max_window_layers",
    "attention_chunk_size", "no_rope_layers", "no_rope_layer_interval", "moe_layers", "interleave_moe_layer_step",
    "intermediate_size_mlp", "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "attn_layer_period",
    "attn_layer_offset", "expert_layer_period", "expert_layer_offset", "mamba_d_state", "mamba_d_conv",
    "mamba_expand", "mamba_dt_rank", "mamba_conv_bias", "mamba_proj_bias", "mamba_inner_layernorms",
    "hybrid_override_pattern", "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "layers_block_type",
    // Mamba-2 (Nemotron-H) and its experts
    "mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "use_conv_bias",
    "moe_shared_expert_intermediate_size", "moe_latent_size", "mtp_layers_block_type",
    // DeepSeek sparse attention's indexer
    "index_n_heads", "index_head_dim", "index_topk", "attn_output_gate", "mtp_num_hidden_layers",
    // Gemma 4: full layers of their own head size and K/V heads, keys as values; per-layer
    // embeddings, experts beside the MLP, layers that share another's K/V, a double-wide MLP
    "global_head_dim", "num_global_key_value_heads", "attention_k_eq_v", "hidden_size_per_layer_input",
    "enable_moe_block", "num_kv_shared_layers", "use_double_wide_mlp", "top_k_experts",
    // GLM-MoE-DSA: the layers whose indexer runs, and each layer's feed-forward by name
    "indexer_types", "index_topk_pattern", "index_topk_freq", "index_skip_topk_offset", "mlp_layer_types",
    // ERNIE 4.5: shared experts and the span of the MoE layers
    "moe_num_shared_experts", "moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval",
    // Granite 4.0's hybrids: a shared MLP in every layer, BambaMixer's keys
    "shared_intermediate_size", "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_conv",
    // LFM2: its short convolutions and the sizing of its feed-forward
    "conv_L_cache", "conv_bias", "conv_dim", "full_attn_idxs", "block_ff_dim", "block_auto_adjust_ff_dim",
    "block_ffn_dim_multiplier", "block_multiple_of"};

// The keys the LLaMA-like rows read (sizes, biases, positions), then each row's own.
std::vector<std::string> reads(std::initializer_list<const char*> own) {
  std::vector<std::string> r = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size",
                                "attention_bias", "mlp_bias", "max_position_embeddings", "is_encoder_decoder",
                                "type_vocab_size", "n_inner", "n_positions"};
  r.insert(r.end(), own.begin(), own.end());
  return r;
}

Family encoder(std::vector<std::string> types, std::string name, std::vector<std::string> classes) {
  Family f;
  f.types = std::move(types);
  f.classes = std::move(classes);
  f.name = std::move(name);
  f.positions = f.token_types = true;
  f.attention = Attention::Square;
  f.qkv_bias = f.o_bias = f.mlp_bias = Bias::Always;
  f.mlp = Mlp::Plain;
  f.norm_weights = 2;
  f.embedding_norm = true;
  f.final_norm = false;
  f.pooler = true;
  f.lm_head = false;
  f.kv_cache = false;
  f.type_vocab_default = 2;
  f.reads = reads({});
  return f;
}

// A LLaMA-style decoder: RMSNorms, gated feed-forward, grouped K/V, untied LM head by default.
Family decoder(std::string type, std::string name, std::string cls) {
  Family f;
  f.types = {type};
  f.classes = {std::move(cls)};
  f.name = std::move(name);
  f.kv_heads_default = true;
  f.experts = true;
  f.tied = false;
  f.tied_note = type + "'s default";
  f.reads = reads({});
  return f;
}

// Every layer slides over `sliding_window` when the config gives one (Mistral, Mixtral, Phi-3).
void all_slide(Family& f) {
  f.layers.base = Mixer::Sliding;
  f.window = "sliding_window";
  f.reads.push_back("sliding_window");
}

// Qwen2's rule: with use_sliding_window, the layers from max_window_layers on slide; layer_types,
// when given, says it per layer.
void qwen_windows(Family& f) {
  f.layers.base = Mixer::Sliding;
  f.layers.enabled_by = "use_sliding_window";
  f.layers.full_before = "max_window_layers";
  f.layers.layer_types = true;
  f.window = "sliding_window";
  f.reads.insert(f.reads.end(), {"sliding_window", "use_sliding_window", "max_window_layers", "layer_types"});
}

// GLM-5 (glm_moe_dsa, GlmMoeDsaForCausalLM): DeepSeek-V3.2's layers (MLA, the lightning indexer,
// dense layers before first_k_dense_replace or as mlp_layer_types names them, then experts
// with n_shared_experts shared ones and a router with its e_score_correction_bias, MTP layers);
// a layer whose indexer_types entry is "shared" has no indexer (it reuses the previous full
// layer's top-k) and keeps no indexer key.
Family glm_moe_dsa_row() {
  Family f = decoder("glm_moe_dsa", "GLM-5", "GlmMoeDsaForCausalLM");
  f.attention = Attention::Latent;
  f.indexer = true;
  f.indexer_types = true;
  f.expert_layers.every = {"moe_layer_freq"};
  f.expert_layers.first = "first_k_dense_replace";
  f.expert_layers.kinds = "mlp_layer_types";
  f.shared_count = "n_shared_experts";
  f.router_bias = RouterBias::ScoreAlways;
  f.mtp = "num_nextn_predict_layers";
  f.reads = reads({"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                   "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                   "qk_rope_head_dim", "v_head_dim", "topk_method", "num_nextn_predict_layers", "index_n_heads",
                   "index_head_dim", "index_topk", "indexer_types", "index_topk_pattern", "index_topk_freq",
                   "index_skip_topk_offset", "mlp_layer_types"});
  return f;
}

// Gemma 4 (gemma4_text, in a gemma4 config beside its vision tower): Gemma 3's layers (four
// norms, q_norm and k_norm of the head size, a gated feed-forward, the LM head tied); five of
// six layers slide over sliding_window with head_dim, the full ones use global_head_dim and,
// with attention_k_eq_v, num_global_key_value_heads keys that serve as values (no v_proj; the
// values are the keys normed apart, v_norm has no weights); a layer_scalar in every layer.
// What the 31B model leaves off and the small ones use (per-layer embeddings, experts, shared
// K/V layers, the double-wide MLP) is not read: refused by the count keys.
Family gemma4_row() {
  Family f = decoder("gemma4_text", "Gemma 4", "Gemma4ForCausalLM");
  f.wrappers = {"gemma4"};
  f.vision = Vision::Gemma4;
  f.norms_per_layer = 4;
  f.qk_norm = true;
  f.global_layers = true;
  f.mlp_bias = Bias::None;
  f.derive_head_dim = false;
  f.experts = false;
  f.tied = true;
  f.tied_note = "Gemma 4's default";
  f.layers.base = Mixer::Sliding;
  f.layers.special = Mixer::Full;
  f.layers.every = {nullptr, 6, EveryNth::At::Last};
  f.layers.layer_types = true;
  f.window = "sliding_window";
  f.defaults = {{"vocab_size", 262144}, {"hidden_size", 2304},  {"intermediate_size", 9216},
                {"num_hidden_layers", 30}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
                {"head_dim", 256},       {"global_head_dim", 512}, {"sliding_window", 512},
                {"max_position_embeddings", 131072}};
  f.defaults_from = "Gemma4TextConfig";
  f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "attention_bias",
             "max_position_embeddings", "layer_types", "sliding_window", "global_head_dim",
             "num_global_key_value_heads", "attention_k_eq_v"};
  return f;
}

// ERNIE 4.5 MoE (Ernie4_5_MoeForCausalLM): LLaMA's attention; layer l holds experts when
// (l + 1) % moe_layer_interval == 0 and moe_layer_start_index <= l <= moe_layer_end_index, else
// a dense MLP; moe_num_experts gated experts of moe_intermediate_size, top moe_k, a shared MLP of
// moe_num_shared_experts · moe_intermediate_size (the parameters of that many shared experts),
// a router without bias and moe_statics' e_score_correction_bias. use_bias (biases on every
// projection and the LM head) is not read: refused. The MTP layers of the checkpoint are not
// built by the class (its _keys_to_ignore_on_load_unexpected: mtp).
Family ernie4_5_moe_row() {
  Family f = decoder("ernie4_5_moe", "ERNIE 4.5 MoE", "Ernie4_5_MoeForCausalLM");
  f.qkv_bias = f.o_bias = f.mlp_bias = Bias::None;
  f.tied = true;
  f.tied_note = "ERNIE 4.5's default";
  f.expert_layers.every = {"moe_layer_interval", 1, EveryNth::At::Last};
  f.expert_layers.first = "moe_layer_start_index";
  f.expert_layers.last = "moe_layer_end_index";
  f.shared_count = "moe_num_shared_experts";
  f.router_bias = RouterBias::ScoreAlways;
  f.unbuilt = "num_nextn_predict_layers";
  f.unbuilt_note = "the checkpoint's multi-token-prediction layers (num_nextn_predict_layers) are not built by "
                   "Ernie4_5_MoeForCausalLM (it ignores mtp.* on load): not counted";
  f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "max_position_embeddings",
             "moe_num_experts", "moe_k", "moe_intermediate_size", "moe_num_shared_experts", "moe_layer_start_index",
             "moe_layer_end_index", "moe_layer_interval", "num_nextn_predict_layers"};
  return f;
}

// Granite 4.0's hybrids (granitemoehybrid): each layer a Mamba-2 mixer (BambaMixer) or attention
// (q, k, v, o, biases with attention_bias), as layer_types names them ("mamba" when not given),
// then a shared gated MLP of shared_intermediate_size and, with num_local_experts, experts of
// intermediate_size (input_linear h → 2·f, output_linear f → h) behind a router without bias;
// 2 norms a layer. GraniteMoeHybridConfig's defaults fill what a config leaves out.
Family granitemoehybrid_row() {
  Family f = decoder("granitemoehybrid", "Granite 4.0 hybrid", "GraniteMoeHybridForCausalLM");
  f.o_bias = Bias::FromConfig;
  f.mlp_bias = Bias::None;
  f.layers.base = Mixer::Mamba2;
  f.layers.special = Mixer::Full;
  f.layers.layer_types = true;
  f.layers.block_names = true;
  f.bamba_keys = true;
  f.dense_size = "shared_intermediate_size";
  f.expert_size = "intermediate_size";
  f.shared_fixed = 1;
  f.shared_size = "shared_intermediate_size";
  f.defaults = {{"num_local_experts", 8}, {"num_experts_per_tok", 2}, {"shared_intermediate_size", 1024},
                {"mamba_n_heads", 128},   {"mamba_n_groups", 1},      {"mamba_d_state", 256},
                {"mamba_d_conv", 4},      {"mamba_expand", 2}};
  f.defaults_from = "GraniteMoeHybridConfig";
  f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "attention_bias",
             "max_position_embeddings", "layer_types", "num_local_experts", "num_experts_per_tok",
             "shared_intermediate_size", "mamba_n_heads", "mamba_d_head", "mamba_n_groups", "mamba_d_state",
             "mamba_d_conv", "mamba_expand", "mamba_conv_bias", "mamba_proj_bias"};
  return f;
}

// LFM2 (Lfm2ForCausalLM): layers of a gated short convolution ("conv") or attention without
// biases with q_layernorm and k_layernorm of the head size ("full_attention"), by layer_types or
// full_attn_idxs (every layer attends when neither is given); Lfm2MLP (w1, w3, w2) of the
// adjusted size; operator_norm and ffn_norm a layer; the final embedding_norm; the LM head tied
// by default (tie_embedding in the original keys).
Family lfm2_row() {
  Family f = decoder("lfm2", "LFM2", "Lfm2ForCausalLM");
  f.qkv_bias = f.o_bias = f.mlp_bias = Bias::None;
  f.qk_norm = true;
  f.experts = false;
  f.tied = true;
  f.tied_note = "LFM2's default";
  f.lfm2_ff = true;
  f.layers.base = Mixer::ShortConv;
  f.layers.special = Mixer::Full;
  f.layers.special_list = "full_attn_idxs";
  f.layers.layer_types = true;
  f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "max_position_embeddings",
             "layer_types", "full_attn_idxs", "conv_L_cache", "conv_bias", "conv_dim", "block_ff_dim",
             "block_auto_adjust_ff_dim", "block_ffn_dim_multiplier", "block_multiple_of"};
  return f;
}

const std::vector<Family>& families() {
  static const std::vector<Family> table = [] {
    std::vector<Family> t;
    t.push_back(encoder({"bert"}, "BERT", {"BertModel", "BertForMaskedLM", "BertForPreTraining"}));
    t.push_back(encoder({"roberta", "xlm-roberta"}, "RoBERTa",
                        {"RobertaModel", "RobertaForMaskedLM", "XLMRobertaModel", "XLMRobertaForMaskedLM"}));
    {
      Family f;
      f.types = {"gpt2"};
      f.classes = {"GPT2LMHeadModel"};
      f.name = "GPT-2";
      f.positions = true;
      f.attention = Attention::SquareFused;
      f.qkv_bias = f.o_bias = f.mlp_bias = Bias::Always;
      f.mlp = Mlp::Plain;
      f.norm_weights = 2;
      f.kv_cache = false;
      f.intermediate_per_hidden = 4;
      f.intermediate_note = "4 · n_embd";
      f.tied = true;  // GPT2LMHeadModel ties its head to wte
      f.tied_note = "GPT-2's default";
      f.reads = reads({});
      t.push_back(f);
    }
    t.push_back(decoder("llama", "LLaMA", "LlamaForCausalLM"));
    {
      Family f = decoder("mistral", "Mistral", "MistralForCausalLM");
      all_slide(f);
      t.push_back(f);
    }
    {
      Family f = decoder("qwen2", "Qwen2", "Qwen2ForCausalLM");
      f.qkv_bias = Bias::Always;  // Qwen2's q/k/v projections always have biases
      qwen_windows(f);
      t.push_back(f);
    }
    {
      // Qwen3, and Qwen3-VL's language model (qwen3_vl_text in a qwen3_vl config beside its vision tower).
      Family f = decoder("qwen3", "Qwen3", "Qwen3ForCausalLM");
      f.types.push_back("qwen3_vl_text");
      f.wrappers = {"qwen3_vl"};
      f.vision = Vision::Qwen3VL;
      f.qk_norm = true;
      qwen_windows(f);
      t.push_back(f);
    }
    {
      Family f = decoder("mixtral", "Mixtral", "MixtralForCausalLM");
      f.expert_size = "intermediate_size";
      f.reads = reads({"num_local_experts", "num_experts_per_tok"});
      all_slide(f);
      t.push_back(f);
    }
    {
      Family f = decoder("qwen3_moe", "Qwen3-MoE", "Qwen3MoeForCausalLM");
      f.types.push_back("qwen3_vl_moe_text");  // Qwen3-VL-MoE's language model
      f.wrappers = {"qwen3_vl_moe"};
      f.vision = Vision::Qwen3VL;
      f.qk_norm = true;
      f.expert_layers.every = {"decoder_sparse_step", 1, EveryNth::At::Last};
      f.expert_layers.dense_list = "mlp_only_layers";
      f.reads = reads({"num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step",
                       "mlp_only_layers"});
      qwen_windows(f);
      t.push_back(f);
    }
    for (const char* v : {"deepseek_v2", "deepseek_v3", "deepseek_v32"}) {
      const bool v32 = v == std::string("deepseek_v32"), v3 = v32 || v == std::string("deepseek_v3");
      Family f = decoder(v, v32 ? "DeepSeek-V3.2" : v3 ? "DeepSeek-V3" : "DeepSeek-V2",
                         v32 ? "DeepseekV32ForCausalLM" : v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM");
      f.attention = Attention::Latent;
      f.expert_layers.every = {"moe_layer_freq"};
      f.expert_layers.first = "first_k_dense_replace";
      f.shared_count = "n_shared_experts";
      f.reads = reads({"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                       "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                       "qk_rope_head_dim", "v_head_dim", "topk_method"});
      if (v3) {
        f.mtp = "num_nextn_predict_layers";
        f.reads.push_back("num_nextn_predict_layers");
      }
      if (v32) {  // DeepSeek sparse attention: a lightning indexer beside each layer's MLA
        f.indexer = true;
        f.reads.insert(f.reads.end(), {"index_n_heads", "index_head_dim", "index_topk"});
      }
      t.push_back(f);
    }
    t.push_back(glm_moe_dsa_row());
    {
      // gpt-oss: every layer a mixture of experts whose experts and router have biases; attention
      // with biases and a learned sink per head, sliding over 128 tokens in every other layer.
      Family f = decoder("gpt_oss", "gpt-oss", "GptOssForCausalLM");
      f.sinks = true;
      f.derive_head_dim = false;
      f.layers.base = Mixer::Sliding;
      f.layers.special = Mixer::Full;
      f.layers.every = {nullptr, 2, EveryNth::At::Last};
      f.layers.layer_types = true;
      f.window = "sliding_window";
      f.expert_size = "intermediate_size";
      f.expert_bias = true;
      f.router_bias = RouterBias::Always;
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim",     "intermediate_size", "attention_bias",
                 "max_position_embeddings", "num_local_experts", "num_experts_per_tok", "layer_types", "sliding_window"};
      t.push_back(f);
    }
    for (const char* v : {"gemma2", "gemma3_text"}) {
      // Gemma 2 and 3: four norms per layer, a decoupled head size, tied embeddings, sliding layers
      // (every other one in Gemma 2, five of six in Gemma 3); Gemma 3 normalizes q and k.
      const bool g3 = v == std::string("gemma3_text");
      Family f = decoder(v, g3 ? "Gemma 3" : "Gemma 2", g3 ? "Gemma3ForCausalLM" : "Gemma2ForCausalLM");
      f.norms_per_layer = 4;
      f.qk_norm = g3;
      f.mlp_bias = Bias::None;
      f.derive_head_dim = false;
      f.experts = false;
      f.tied = true;
      f.tied_note = std::string(g3 ? "Gemma 3" : "Gemma 2") + "'s default";
      f.layers.base = Mixer::Sliding;
      f.layers.special = Mixer::Full;
      f.layers.every = g3 ? EveryNth{"sliding_window_pattern", 6, EveryNth::At::Last} : EveryNth{nullptr, 2, EveryNth::At::Last};
      f.layers.layer_types = true;
      f.window = "sliding_window";
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "attention_bias",
                 "max_position_embeddings", "layer_types", "sliding_window"};
      if (g3) {
        f.wrappers = {"gemma3"};
        f.vision = Vision::Siglip;
        f.defaults = {{"vocab_size", 262208},      {"hidden_size", 2304},          {"intermediate_size", 9216},
                      {"num_hidden_layers", 26},   {"num_attention_heads", 8},     {"num_key_value_heads", 4},
                      {"head_dim", 256},           {"sliding_window", 4096},       {"sliding_window_pattern", 6},
                      {"max_position_embeddings", 131072}};
        f.defaults_from = "Gemma3TextConfig";
        f.reads.push_back("sliding_window_pattern");
      }
      t.push_back(f);
    }
    t.push_back(gemma4_row());
    {
      // Qwen3-Next: three Gated DeltaNet layers, then one gated attention layer (its Q projection
      // doubled for a sigmoid gate, q and k normed); experts with a gated shared expert; one
      // multi-token-prediction layer in the releases, which the config does not declare.
      Family f = decoder("qwen3_next", "Qwen3-Next", "Qwen3NextForCausalLM");
      f.gated_query = true;
      f.qk_norm = true;
      f.derive_head_dim = false;
      f.mlp_bias = Bias::None;
      f.layers.base = Mixer::Linear;
      f.layers.special = Mixer::Full;
      f.layers.every = {"full_attention_interval", 4, EveryNth::At::Last};
      f.layers.layer_types = true;
      f.expert_layers.every = {"decoder_sparse_step", 1, EveryNth::At::Last};
      f.expert_layers.dense_list = "mlp_only_layers";
      f.shared_fixed = 1;
      f.shared_size = "shared_expert_intermediate_size";
      f.shared_gate = true;
      f.mtp = "num_nextn_predict_layers";
      f.mtp_default = 1;
      f.mtp_note =
          "the config does not declare num_nextn_predict_layers; Qwen3-Next's releases hold one multi-token-prediction "
          "layer (mtp.*), which vLLM assumes too";
      f.mtp_proj = "fc";
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "attention_bias",
                 "max_position_embeddings", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                 "shared_expert_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "layer_types",
                 "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                 "linear_value_head_dim", "linear_conv_kernel_dim", "num_nextn_predict_layers"};
      t.push_back(f);
      // Qwen3.5-MoE's language model (qwen3_5_moe_text in a qwen3_5_moe config beside its vision
      // tower): Qwen3-Next's layers (its Gated DeltaNet projections split into in_proj_qkv, _z, _b
      // and _a, the same sizes), the query's output gate when attn_output_gate, its MTP layers in
      // mtp_num_hidden_layers.
      f.types = {"qwen3_5_moe_text"};
      f.classes = {"Qwen3_5MoeForCausalLM"};
      f.wrappers = {"qwen3_5_moe"};
      f.name = "Qwen3.5-MoE";
      f.vision = Vision::Qwen35;
      f.mtp = "mtp_num_hidden_layers";
      f.mtp_default = 0;
      f.mtp_note.clear();
      f.reads.back() = "mtp_num_hidden_layers";
      f.reads.push_back("attn_output_gate");
      t.push_back(f);
      // Qwen3.5's dense models (qwen3_5_text in a qwen3_5 config beside the same vision tower): the
      // MoE row's layers with a gated feed-forward of intermediate_size in every layer, no experts;
      // its MTP layer a dense layer too. The expert keys are not read: a config declaring experts
      // is refused by this row, not counted without them.
      f.types = {"qwen3_5_text"};
      f.classes = {"Qwen3_5ForCausalLM"};
      f.wrappers = {"qwen3_5"};
      f.name = "Qwen3.5";
      f.experts = false;
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "attention_bias",
                 "max_position_embeddings", "layer_types", "full_attention_interval", "linear_num_key_heads",
                 "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
                 "mtp_num_hidden_layers", "attn_output_gate"};
      t.push_back(f);
    }
    {
      // Llama 4 (the text model): chunked attention in three of four layers (the RoPE ones; the
      // others attend to everything without RoPE), experts with a shared expert in every layer or
      // every other one, dense layers of intermediate_size_mlp between; its q/k norm has no weights.
      Family f = decoder("llama4_text", "Llama 4", "Llama4ForCausalLM");
      f.wrappers = {"llama4"};
      f.mlp_bias = Bias::None;
      f.layers.base = Mixer::Chunked;
      f.layers.special = Mixer::Full;
      f.layers.every = {"no_rope_layer_interval", 4, EveryNth::At::Last};
      f.layers.flags = "no_rope_layers";
      f.layers.layer_types = true;
      f.chunk = "attention_chunk_size";
      f.dense_size = "intermediate_size_mlp";
      f.expert_size = "intermediate_size";
      f.expert_layers.every = {"interleave_moe_layer_step", 1, EveryNth::At::Last};
      f.expert_layers.moe_list = "moe_layers";
      f.shared_fixed = 1;
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "intermediate_size_mlp",
                 "attention_bias", "max_position_embeddings", "num_local_experts", "num_experts_per_tok",
                 "interleave_moe_layer_step", "moe_layers", "no_rope_layers", "no_rope_layer_interval",
                 "attention_chunk_size", "layer_types", "use_qk_norm"};
      t.push_back(f);
    }
    {
      // Jamba: Mamba layers with one attention layer in eight, experts in every other layer.
      Family f = decoder("jamba", "Jamba", "JambaForCausalLM");
      f.qkv_bias = f.o_bias = f.mlp_bias = Bias::None;
      f.layers.base = Mixer::Mamba;
      f.layers.special = Mixer::Full;
      f.layers.every = {"attn_layer_period", 8, EveryNth::At::Key, "attn_layer_offset", 4};
      f.expert_size = "intermediate_size";
      f.expert_layers.every = {"expert_layer_period", 2, EveryNth::At::Key, "expert_layer_offset", 1};
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "max_position_embeddings",
                 "num_experts", "num_experts_per_tok", "attn_layer_period", "attn_layer_offset", "expert_layer_period",
                 "expert_layer_offset", "mamba_d_state", "mamba_d_conv", "mamba_expand", "mamba_dt_rank",
                 "mamba_conv_bias", "mamba_proj_bias", "mamba_inner_layernorms"};
      t.push_back(f);
    }
    {
      // SmolLM3: LLaMA's layers; every no_rope_layer_interval-th layer (or each 0 in no_rope_layers)
      // skips RoPE, which has no parameters; sliding layers only with use_sliding_window.
      Family f = decoder("smollm3", "SmolLM3", "SmolLM3ForCausalLM");
      f.experts = false;
      qwen_windows(f);
      f.reads.insert(f.reads.end(), {"no_rope_layers", "no_rope_layer_interval"});
      t.push_back(f);
    }
    {
      // OLMo 2: norms after attention and after the feed-forward (none before), q and k normed over
      // the whole projection's width, not per head.
      Family f = decoder("olmo2", "OLMo 2", "Olmo2ForCausalLM");
      f.qk_norm_width = true;
      f.experts = false;
      f.reads = reads({});
      t.push_back(f);
      // OLMo 3: OLMo 2's layers; three of four slide over sliding_window (Olmo3Config: 4096), the
      // fourth attends to everything (layer_types, when given, names each layer).
      f.types = {"olmo3"};
      f.classes = {"Olmo3ForCausalLM"};
      f.name = "OLMo 3";
      f.tied_note = "olmo3's default";
      f.layers.base = Mixer::Sliding;
      f.layers.special = Mixer::Full;
      f.layers.every = {nullptr, 4, EveryNth::At::Last};
      f.layers.layer_types = true;
      f.window = "sliding_window";
      f.defaults = {{"sliding_window", 4096}};
      f.defaults_from = "Olmo3Config";
      f.reads = reads({"layer_types", "sliding_window"});
      t.push_back(f);
    }
    {
      // MiniMax-M2: every layer a mixture of gated experts of intermediate_size with a sigmoid router
      // and its e_score_correction_bias, no shared expert; attention without biases, q and k normed
      // over the whole width (q_norm of heads · head_dim, k_norm of K/V heads · head_dim).
      Family f = decoder("minimax_m2", "MiniMax-M2", "MiniMaxM2ForCausalLM");
      f.qkv_bias = f.o_bias = f.mlp_bias = Bias::None;
      f.qk_norm_width = true;
      f.expert_size = "intermediate_size";
      f.router_bias = RouterBias::ScoreAlways;
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "max_position_embeddings",
                 "num_local_experts", "num_experts_per_tok", "use_qk_norm"};
      t.push_back(f);
    }
    {
      // GLM-4.5 (glm4_moe): grouped attention with q/k/v biases (attention_bias) and no o bias, q and
      // k normed when use_qk_norm; dense layers before first_k_dense_replace, then experts with
      // n_shared_experts shared ones of moe_intermediate_size and a router whose
      // e_score_correction_bias is always kept; MTP layers as DeepSeek-V3's.
      Family f = decoder("glm4_moe", "GLM-4.5", "Glm4MoeForCausalLM");
      f.o_bias = Bias::None;
      f.qk_norm_key = "use_qk_norm";
      f.expert_layers.first = "first_k_dense_replace";
      f.shared_count = "n_shared_experts";
      f.router_bias = RouterBias::ScoreAlways;
      f.mtp = "num_nextn_predict_layers";
      // decoder_sparse_step is in GLM's configs but Glm4MoeModel does not read it: every layer from
      // first_k_dense_replace on is a MoE layer.
      f.reads = reads({"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                       "first_k_dense_replace", "topk_method", "use_qk_norm", "num_nextn_predict_layers",
                       "decoder_sparse_step"});
      t.push_back(f);
    }
    t.push_back(ernie4_5_moe_row());
    {
      // Nemotron-H (and Nemotron 3): each layer one block behind one RMSNorm: Mamba-2 (M), attention
      // without biases (*), a squared-ReLU feed-forward of up and down (-), or experts of up and down
      // with one shared expert and a sigmoid router with a score-correction bias (E).
      Family f = decoder("nemotron_h", "Nemotron-H", "NemotronHForCausalLM");
      f.qkv_bias = f.o_bias = Bias::None;
      f.mlp = f.expert_mlp = Mlp::Plain;
      f.norms_per_layer = 1;
      f.layers.pattern = "hybrid_override_pattern";
      f.layers.blocks = "layers_block_type";
      f.shared_fixed = 1;
      f.shared_size = "moe_shared_expert_intermediate_size";
      f.router_bias = RouterBias::ScoreAlways;
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "use_bias",
                 "max_position_embeddings", "hybrid_override_pattern", "layers_block_type", "mamba_num_heads",
                 "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "use_conv_bias", "n_routed_experts",
                 "num_experts_per_tok", "moe_intermediate_size", "moe_shared_expert_intermediate_size",
                 "n_shared_experts"};
      t.push_back(f);
    }
    t.push_back(granitemoehybrid_row());
    t.push_back(lfm2_row());
    {
      // Phi-3: one fused qkv_proj and one fused gate_up_proj, no biases, every layer sliding.
      Family f = decoder("phi3", "Phi-3", "Phi3ForCausalLM");
      f.attention = Attention::HeadsFused;
      f.qkv_bias = f.o_bias = f.mlp_bias = Bias::None;
      f.experts = false;
      f.reads = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size", "max_position_embeddings"};
      all_slide(f);
      t.push_back(f);
    }
    return t;
  }();
  return table;
}

const Family* find_family(const std::string& type) {
  for (const auto& f : families()) {
    if (std::find(f.types.begin(), f.types.end(), type) != f.types.end()) return &f;
  }
  return nullptr;
}

// ---- reading a config ----

// The first of `keys` that the object holds as an integer; a null counts as absent. The key read
// is remembered under `field` (the first key names the field when none is present).
Int integer(ModelConfig& c, const char* field, const json& j, std::initializer_list<const char*> keys) {
  c.key_of[field] = *keys.begin();
  for (const char* k : keys) {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) continue;
    c.key_of[field] = k;
    if (it->is_number_integer()) return it->is_number_unsigned() ? Int::of_unsigned(it->get<uint64_t>()) : Int(it->get<int64_t>());
    if (it->is_number_float()) return Int::of_double(it->get<double>());
    throw InputError("model config '" + c.file + "': " + k + " is not a number");
  }
  return {};
}

std::optional<bool> boolean(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

// A value that changes something: not null, false, 0, "" or an empty list.
bool active_value(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  return true;
}

// A key's value as the table reads it; a list holds scalars (a nested value is Other).
ConfigValue value_of(const json& v, bool nested = false) {
  ConfigValue out;
  using K = ConfigValue::Kind;
  if (v.is_null()) return out;
  if (v.is_number_integer()) {
    out.kind = K::Number;
    out.number = v.is_number_unsigned() ? Int::of_unsigned(v.get<uint64_t>()) : Int(v.get<int64_t>());
  } else if (v.is_number_float()) {
    out.kind = K::Number;
    out.number = Int::of_double(v.get<double>());
  } else if (v.is_boolean()) {
    out.kind = K::Boolean;
    out.flag = v.get<bool>();
  } else if (v.is_string()) {
    out.kind = K::String;
    out.text = v.get<std::string>();
  } else if (v.is_array() && !nested) {
    out.kind = K::List;
    out.items.reserve(v.size());
    for (const auto& x : v) out.items.push_back(value_of(x, true));
  } else {
    out.kind = K::Other;
  }
  return out;
}

// The family's defaults for what a config may leave out, each noted.
void apply_defaults(ModelConfig& c) {
  const Family* f = find_family(c.family);
  if (f) {
    if (f->intermediate_per_hidden && !c.intermediate && c.hidden) {
      c.intermediate = f->intermediate_per_hidden * c.hidden;
      c.derived_from["intermediate"] = f->intermediate_note;
    }
    if (f->kv_heads_default && !c.kv_heads && c.heads) {
      c.kv_heads = c.heads;
      c.derived_from["kv_heads"] = "num_attention_heads";
    }
    if (f->tied && !c.tied) {
      c.tied = *f->tied;
      c.derived_from["tied"] = f->tied_note;
    }
    if (f->type_vocab_default && !c.type_vocab) c.type_vocab = f->type_vocab_default;
    if (f->qkv_bias == Bias::Always) c.qkv_bias = true;
    if (f->o_bias == Bias::Always) c.o_bias = true;
    if (f->mlp_bias == Bias::Always) c.mlp_bias = true;
    if (f->qkv_bias == Bias::None) c.qkv_bias = false;
    if (f->o_bias == Bias::None) c.o_bias = false;
    if (f->mlp_bias == Bias::None) c.mlp_bias = false;
    if (f->qk_norm) c.qk_norm = true;
  }
  // Latent attention has no single head size; some families' head size is their own.
  const bool derive = !f || (f->attention != Attention::Latent && f->derive_head_dim);
  if (!c.head_dim && c.hidden && c.heads && derive) {
    c.head_dim = exact_div(c.hidden, c.heads);
    if (c.head_dim) c.derived_from["head_dim"] = c.key_of["hidden"] + " / " + c.key_of["heads"];
  }
}

// The model_type the table counts a config as, and how it got there.
void resolve_family(ModelConfig& c) {
  if (find_family(c.model_type)) {
    c.family = c.model_type;
    return;
  }
  for (const auto& cls : c.architectures) {
    for (const auto& f : families()) {
      if (std::find(f.classes.begin(), f.classes.end(), cls) != f.classes.end()) {
        c.family = f.types[0];
        c.read_as = "read as " + c.family + " by its architectures " + cls;
        return;
      }
    }
  }
}

// The wrapper row whose text_config this model_type holds (llama4's is llama4_text), if any.
const Family* wrapped_by(const std::string& type) {
  for (const auto& f : families()) {
    if (std::find(f.wrappers.begin(), f.wrappers.end(), type) != f.wrappers.end()) return &f;
  }
  return nullptr;
}

}  // namespace

// A config.json or genai_config.json is a few kB (a vision model's label names: a few MB); a
// larger one is refused before it is read, as the safetensors header and the index are.
constexpr uint64_t kMostModelConfigBytes = 16u << 20;

namespace {
ModelConfig parse_config(const std::string& text, const std::string& path);
}  // namespace

ModelConfig read_model_config(const std::string& path) {
  std::string text;
  try {
    RegularFile in(path);  // a FIFO is refused, not waited on
    if (in.size() > kMostModelConfigBytes) {
      throw InputError("is " + std::to_string(in.size()) + " bytes, above the " + std::to_string(kMostModelConfigBytes) +
                       " a model config can be");
    }
    text = in.read_all();
  } catch (const InputError& e) {
    const std::string what = e.what();  // "is a FIFO, not a regular file", "is N bytes, above ..."
    throw InputError("model config '" + path + "' " + (what.rfind("cannot open", 0) == 0 ? "cannot be opened" : what));
  }
  return parse_config(text, path);
}

ModelConfig parse_model_config(const std::string& text, const std::string& path) {
  if (text.size() > kMostModelConfigBytes) {
    throw InputError("model config '" + path + "' is " + std::to_string(text.size()) + " bytes, above the " +
                     std::to_string(kMostModelConfigBytes) + " a model config can be");
  }
  return parse_config(text, path);
}

namespace {

// Python's json writes float('inf') and float('nan') as the bare words Infinity, -Infinity and
// NaN, which JSON has not (a published Nemotron-H config.json holds "time_step_limit": [0.0,
// Infinity]). Outside strings each such word becomes null: not a number a count is read from.
// `depth` is how deep its objects and arrays nest (a config nests 3 or 4; a copy of a value nested
// 60,000 deep recurses as deep, past the stack).
constexpr size_t kMostConfigDepth = 64;

std::string without_python_constants(const std::string& text, size_t& depth) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  size_t open = 0;
  depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') depth = std::max(depth, ++open);
    if ((c == '}' || c == ']') && open > 0) --open;
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::strlen(word);
      const bool ends = i + n >= text.size() || !std::isalnum(static_cast<unsigned char>(text[i + n]));
      if (text.compare(i, n, word) == 0 && ends) {
        out += "null";
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// The object a config's language model is read from: the config itself, a known wrapper's
// text_config (with its vision_config kept for the tower), or an unknown wrapper's text_config.
const json* language_model(ModelConfig& c, const json& j, const std::string& path) {
  // A multimodal wrapper (Llama 4, Gemma 3): its text_config is the language model counted.
  const json* t = &j;
  if (const Family* inner = wrapped_by(c.model_type)) {
    auto it = j.find("text_config");
    if (it == j.end() || !it->is_object()) {
      throw InputError("model config '" + path + "': a " + c.model_type + " config without a text_config object");
    }
    t = &*it;
    std::string type = inner->types[0];
    if (auto mt = t->find("model_type"); mt != t->end() && mt->is_string()) type = mt->get<std::string>();
    if (std::find(inner->types.begin(), inner->types.end(), type) == inner->types.end()) {
      throw InputError("model config '" + path + "': text_config's model_type is '" + type + "', not " + inner->types[0]);
    }
    c.family = type;
    c.read_as = "its text_config (" + type + ") counted, not the vision encoder";
    // Without a vision_config, the language model alone is counted, and said so.
    if (auto v = j.find("vision_config"); inner->vision != Vision::None && v != j.end() && v->is_object()) {
      for (const auto& [k, x] : v->items()) c.vision[k] = value_of(x);
      c.read_as = "its text_config (" + type + ") and its vision_config counted";
    }
    // An audio tower (Gemma 4's small models) is not counted, and the first line says so.
    if (auto a = j.find("audio_config"); a != j.end() && a->is_object()) c.read_as += "; its audio_config (an audio tower) is not";
  } else if (auto it = j.find("text_config"); !find_family(c.model_type) && it != j.end() && it->is_object() &&
                                               !j.contains("hidden_size") && !j.contains("n_embd") && !j.contains("d_model")) {
    // A wrapper headcount does not know, holding the language model in text_config: that is read
    // (by its own row when its model_type is known, else as an estimate), the rest is not.
    t = &*it;
    std::string type;
    if (auto mt = t->find("model_type"); mt != t->end() && mt->is_string()) type = mt->get<std::string>();
    if (find_family(type)) c.family = type;
    c.read_as = "its text_config" + (type.empty() ? std::string() : " (" + type + ")") + " counted; the rest of the " +
                c.model_type + " config (a vision or audio tower) is not";
  }
  return t;
}

ModelConfig parse_config(const std::string& text, const std::string& path) {
  size_t depth = 0;
  json j = json::parse(without_python_constants(text, depth), nullptr, false);
  if (j.is_discarded()) throw InputError("model config '" + path + "' is not valid JSON");
  if (depth > kMostConfigDepth) {
    throw InputError("model config '" + path + "' nests " + std::to_string(depth) + " deep, above the " +
                     std::to_string(kMostConfigDepth) + " a model config can");
  }
  if (!j.is_object()) throw InputError("model config '" + path + "' is not a JSON object");
  ModelConfig c;
  c.file = path;
  if (j.contains("model") && j["model"].is_object() && j["model"].contains("decoder")) {
    // onnxruntime-genai: {"model": {"type": ..., "vocab_size": ..., "decoder": {...}}}
    const json& m = j["model"];
    const json& d = m["decoder"];
    if (!d.is_object()) throw InputError("model config '" + path + "': model.decoder is not an object");
    c.format = "genai_config.json";
    if (m.contains("type") && m["type"].is_string()) c.model_type = m["type"].get<std::string>();
    c.layers = integer(c, "layers", d, {"num_hidden_layers"});
    c.hidden = integer(c, "hidden", d, {"hidden_size"});
    c.heads = integer(c, "heads", d, {"num_attention_heads"});
    c.kv_heads = integer(c, "kv_heads", d, {"num_key_value_heads"});
    c.head_dim = integer(c, "head_dim", d, {"head_size"});
    c.vocab = integer(c, "vocab", m, {"vocab_size"});
    if (find_family(c.model_type)) c.family = c.model_type;
  } else {
    c.format = "config.json";
    if (!j.contains("model_type") || !j["model_type"].is_string()) {
      throw InputError("model config '" + path + "' has no model_type: not a Hugging Face config.json");
    }
    c.model_type = j["model_type"].get<std::string>();
    if (auto it = j.find("architectures"); it != j.end() && it->is_array()) {
      for (const auto& a : *it) {
        if (a.is_string()) c.architectures.push_back(a.get<std::string>());
      }
    }
    const json* t = language_model(c, j, path);
    // A family's configuration class fills what the file leaves out (gemma-3-4b-it's text_config
    // names 6 keys): those defaults, each noted.
    json filled;
    if (const Family* row = find_family(c.family.empty() ? c.model_type : c.family); row && !row->defaults.empty()) {
      filled = *t;
      for (const auto& [key, v] : row->defaults) {
        if (filled.contains(key) && !filled[key].is_null()) continue;
        filled[key] = v;
        c.defaulted.push_back(key + " " + std::to_string(v));
      }
      t = &filled;
    }
    const json& x = *t;
    c.layers = integer(c, "layers", x, {"num_hidden_layers", "n_layer", "num_layers"});
    c.hidden = integer(c, "hidden", x, {"hidden_size", "n_embd", "d_model"});
    c.heads = integer(c, "heads", x, {"num_attention_heads", "n_head", "num_heads"});
    c.kv_heads = integer(c, "kv_heads", x, {"num_key_value_heads"});
    c.head_dim = integer(c, "head_dim", x, {"head_dim", "attention_head_dim"});
    c.intermediate = integer(c, "intermediate", x, {"intermediate_size", "n_inner", "d_ff", "block_ff_dim"});
    c.vocab = integer(c, "vocab", x, {"vocab_size"});
    c.max_positions = integer(c, "max_positions", x, {"max_position_embeddings", "n_positions"});
    c.type_vocab = integer(c, "type_vocab", x, {"type_vocab_size"});
    c.tied = boolean(x, "tie_word_embeddings");
    if (!c.tied) c.tied = boolean(j, "tie_word_embeddings");  // a wrapper's own
    if (!c.tied) c.tied = boolean(x, "tie_embedding");        // LFM2's original key
    c.key_of["tied"] = "tie_word_embeddings";
    c.encoder_decoder = boolean(x, "is_encoder_decoder").value_or(false);
    c.qkv_bias = c.o_bias = boolean(x, "attention_bias").value_or(false);
    c.mlp_bias = boolean(x, "mlp_bias").value_or(false);
    c.experts = integer(c, "experts", x, {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"});
    c.experts_per_token = integer(c, "experts_per_token", x, {"num_experts_per_tok", "moe_k"});
    c.moe_intermediate = integer(c, "moe_intermediate", x, {"moe_intermediate_size"});
    c.shared_experts = integer(c, "shared_experts", x, {"n_shared_experts"});
    c.first_dense_layers = integer(c, "first_dense_layers", x, {"first_k_dense_replace"});
    c.moe_layer_freq = integer(c, "moe_layer_freq", x, {"moe_layer_freq"});
    c.sparse_step = integer(c, "sparse_step", x, {"decoder_sparse_step"});
    if (auto it = x.find("mlp_only_layers"); it != x.end() && it->is_array()) {
      for (const auto& n : *it) {
        if (!n.is_number_integer()) throw InputError("model config '" + path + "': mlp_only_layers holds a non-integer");
        c.dense_layers.push_back(n.get<int64_t>());
      }
    }
    if (auto it = x.find("topk_method"); it != x.end() && it->is_string()) c.router_bias = it->get<std::string>() == "noaux_tc";
    c.q_lora_rank = integer(c, "q_lora_rank", x, {"q_lora_rank"});
    c.kv_lora_rank = integer(c, "kv_lora_rank", x, {"kv_lora_rank"});
    c.qk_nope_dim = integer(c, "qk_nope_dim", x, {"qk_nope_head_dim"});
    c.qk_rope_dim = integer(c, "qk_rope_dim", x, {"qk_rope_head_dim"});
    c.v_head_dim = integer(c, "v_head_dim", x, {"v_head_dim"});
    c.mtp_layers = integer(c, "mtp_layers", x, {"num_nextn_predict_layers"});
    for (const json* o : {&x, static_cast<const json*>(&j)}) {  // a wrapper's text_config, then the wrapper
      for (const char* k : {"torch_dtype", "dtype"}) {
        if (auto it = o->find(k); c.dtype.empty() && it != o->end() && it->is_string()) c.dtype = it->get<std::string>();
      }
    }
    for (const auto& k : kCountKeys) {
      if (auto it = x.find(k); it != x.end() && active_value(*it)) c.count_keys.push_back(k);
    }
    for (const auto& [k, v] : x.items()) c.values[k] = value_of(v);
    // A default is what the class implies, not what the file declares (the audit says so).
    if (const Family* row = find_family(c.family.empty() ? c.model_type : c.family); row && !c.defaulted.empty()) {
      for (const auto& [field, key] : c.key_of) {
        for (const auto& [k, v] : row->defaults) {
          if (k == key && std::find(c.defaulted.begin(), c.defaulted.end(), k + " " + std::to_string(v)) != c.defaulted.end()) {
            c.derived_from[field] = row->defaults_from + "'s default " + std::to_string(v);
          }
        }
      }
    }
    if (c.family.empty()) resolve_family(c);
  }

  apply_defaults(c);
  return c;
}

// ---- counting a row ----

const char* mixer_name(Mixer m) {
  switch (m) {
    case Mixer::Full: return "full";
    case Mixer::Sliding: return "sliding";
    case Mixer::Chunked: return "chunked";
    case Mixer::Linear: return "linear";
    case Mixer::Mamba: return "mamba";
    case Mixer::Mamba2: return "mamba2";
    case Mixer::ShortConv: return "conv";
  }
  return "";
}

// layer_types' names.
std::optional<Mixer> mixer_of(const std::string& name) {
  if (name == "full_attention") return Mixer::Full;
  if (name == "sliding_attention") return Mixer::Sliding;
  if (name == "chunked_attention") return Mixer::Chunked;
  if (name == "linear_attention") return Mixer::Linear;
  if (name == "conv") return Mixer::ShortConv;
  return std::nullopt;
}

constexpr int64_t kMaxLayers = int64_t{1} << 20;

// The bytes of one element of a torch dtype the calculator knows, 0 for any other.
int element_bytes(const std::string& dtype) {
  static const std::map<std::string, int> bytes = {{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8}};
  auto it = bytes.find(dtype);
  return it == bytes.end() ? 0 : it->second;
}

// The count of one config by its family's row. run() returns nullopt when a number is missing
// (named in missing()) or does not fit in 64 bits, or when the config says something the row
// cannot read (error()).
class Counter {
 public:
  Counter(const Family& f, const ModelConfig& c) : f_(f), c_(c) {}

  std::optional<FamilyCount> run();
  const std::vector<std::string>& missing() const { return missing_; }
  const std::string& error() const { return error_; }

 private:
  bool part(const char* name, Int n, const std::string& formula) {
    out_.parts.push_back({name, n.count().value_or(0), formula + " = " + commas(n.count().value_or(0))});
    total_ += n;
    return n.non_negative();
  }
  const ConfigValue* value(const char* key) const {
    if (!key) return nullptr;
    auto it = c_.values.find(key);
    return it == c_.values.end() || it->second.kind == ConfigValue::Kind::Null ? nullptr : &it->second;
  }
  Int number(const char* key) const {
    const ConfigValue* v = value(key);
    return v ? v->number : Int();
  }
  std::optional<bool> flag(const char* key) const {
    const ConfigValue* v = value(key);
    if (!v || v->kind != ConfigValue::Kind::Boolean) return std::nullopt;
    return v->flag;
  }
  // A number the formula needs: positive, else its key is noted as missing.
  Int need(const char* key) {
    Int v = number(key);
    if (!v.positive() && std::find(missing_.begin(), missing_.end(), key) == missing_.end()) missing_.push_back(key);
    return v;
  }
  bool fail(const std::string& why) {
    if (error_.empty()) error_ = why;
    return false;
  }
  // Whether a per-layer list of `n` entries under `key` has one a layer; else fails, saying so.
  bool one_per_layer(const std::string& key, size_t n) {
    if (c_.layers.is(static_cast<int64_t>(n))) return true;
    return fail(key + " names " + std::to_string(n) + " layers, and " + c_.key_of.at("layers") + " is " + c_.layers.str());
  }
  bool picks(const EveryNth& e, int64_t l) const;
  bool expert_layer(int64_t l) const;
  bool qk_norm() const { return c_.qk_norm || (f_.qk_norm_key && flag(f_.qk_norm_key).value_or(false)); }
  bool bias(Bias b, bool from_config) const { return b == Bias::Always || (b == Bias::FromConfig && from_config); }
  bool read_layer_types();
  bool read_list(const char* key, std::vector<Int>& out);
  Mixer mixer(int64_t l) const;
  bool attention(Int& n, std::string& formula) { return attention(n, formula, c_.kv_heads, c_.head_dim, true); }
  bool attention(Int& n, std::string& formula, Int KV, Int d, bool values);
  bool global_attention();
  bool linear_attention(Int& n, std::string& formula, Int& state, std::string& state_formula);
  bool short_conv();
  bool lfm2_feed_forward();
  bool mamba(Int& n, std::string& formula, Int& state, std::string& state_formula);
  bool mamba2(Int& n, std::string& formula, Int& state, std::string& state_formula);
  bool plan_blocks();
  bool indexer();
  bool plan_indexers();
  bool read_mlp_kinds();
  std::string expert_formula(Int size) const;
  // run()'s stages, in order.
  bool required();
  bool plan();
  bool sizes();
  bool mixer_parts();
  bool feed_forward_parts();
  bool closing_parts();
  void active();
  void caches();
  void recurrent_state(const std::string& dtype, int size, const std::string& undeclared);
  void mtp();

  const Family& f_;
  const ModelConfig& c_;
  FamilyCount out_;
  Int total_ = 0;
  std::vector<std::string> missing_;
  std::string error_;
  std::vector<Mixer> layer_types_;       // from the config, when given
  std::vector<Int> flags_;               // per-layer flags, when given
  std::vector<int64_t> moe_list_, dense_list_;  // sorted, so a layer is found in log time
  bool has_flags_ = false, has_moe_list_ = false, has_special_list_ = false;
  std::vector<int64_t> special_list_;  // sorted
  // What the stages learn: the layers of each mixer kind and the MoE layers; the sizes; one layer
  // of each mixer with its formula and state.
  bool moe_ = false, router_bias_ = false;
  int64_t kinds_[7] = {0, 0, 0, 0, 0, 0, 0}, moe_layers_ = 0, attention_layers_ = 0;
  // Families of one block per layer (Nemotron-H): the feed-forward layers, apart from the mixers.
  bool single_block_ = false;
  int64_t mlp_layers_ = 0;
  Int ssm2_conv_, ssm2_ssm_;  // a Mamba-2 layer's state: the conv's inputs and the SSM's
  Int conv_, conv_state_;     // an LFM2 short-convolution layer's parameters and state
  std::string conv_formula_, conv_state_formula_;
  Int lin_conv_, lin_ssm_;    // a Gated DeltaNet layer's
  // Gemma 4's full layers: their K/V heads and head size, whether their keys serve as values, one
  // such layer's projections.
  Int full_kv_heads_, full_head_dim_, attn_full_;
  bool keys_as_values_ = false;
  std::string attn_full_formula_;
  // DeepSeek sparse attention: the layers with an indexer, and one indexer's parameters.
  int64_t indexer_layers_ = 0;
  Int idx_;
  std::string idx_formula_;
  Int i_, mi_, shared_n_, shared_size_, expert_, shared_params_, router_, embedding_;
  Int attn_, linear_, ssm_, ssm2_, linear_state_, ssm_state_, ssm2_state_;
  std::string attn_formula_, linear_formula_, ssm_formula_, ssm2_formula_, linear_state_formula_, ssm_state_formula_,
      ssm2_state_formula_;
};

bool Counter::picks(const EveryNth& e, int64_t l) const {
  Int p = number(e.period);
  int64_t period = p.positive() ? *p : e.period_default;
  if (period <= 0) return false;
  int64_t offset = e.at == EveryNth::At::First ? 0 : e.at == EveryNth::At::Last ? period - 1 : e.offset_default;
  if (e.at == EveryNth::At::Key) {
    Int o = number(e.offset);
    if (o.non_negative()) offset = *o;
  }
  return l % period == offset;
}

bool Counter::expert_layer(int64_t l) const {
  const ExpertLayers& e = f_.expert_layers;
  if (has_moe_list_) return std::binary_search(moe_list_.begin(), moe_list_.end(), l);
  if (e.dense_list && std::binary_search(dense_list_.begin(), dense_list_.end(), l)) return false;
  if (e.first && l < static_cast<int64_t>(number(e.first).count().value_or(0))) return false;
  if (e.last && number(e.last).non_negative() && l > *number(e.last)) return false;
  if (!e.every.used()) return true;
  return picks(e.every, l);
}

bool Counter::read_list(const char* key, std::vector<Int>& out) {
  const ConfigValue* v = value(key);
  if (!v) return false;
  if (v->kind != ConfigValue::Kind::List) return fail(std::string(key) + " is not a list");
  for (const auto& x : v->items) {
    if (x.kind != ConfigValue::Kind::Number || !x.number.non_negative()) return fail(std::string(key) + " holds a value that is not a layer number");
    out.push_back(x.number);
  }
  return true;
}

bool Counter::read_layer_types() {
  const ConfigValue* v = f_.layers.layer_types ? value("layer_types") : nullptr;
  if (!v) return true;
  if (v->kind != ConfigValue::Kind::List) return fail("layer_types is not a list");
  if (!one_per_layer("layer_types", v->items.size())) return false;
  const MixerLayers& m = f_.layers;
  for (size_t l = 0; l < v->items.size(); ++l) {
    const ConfigValue& x = v->items[l];
    auto kind = x.kind == ConfigValue::Kind::String ? mixer_of(x.text) : std::nullopt;
    if (m.block_names) {
      kind = x.kind != ConfigValue::Kind::String ? std::nullopt
             : x.text == "mamba"                 ? std::optional<Mixer>(Mixer::Mamba2)
             : x.text == "attention"             ? std::optional<Mixer>(Mixer::Full)
                                                 : std::nullopt;
    }
    // The kinds a layer of this family can be: the base, the special, and full attention.
    if (!kind || (*kind != m.base && *kind != m.special && *kind != Mixer::Full)) {
      return fail("layer_types[" + std::to_string(l) + "] is " + (x.kind == ConfigValue::Kind::String ? "'" + x.text + "'" : "not a name") +
                  ", a layer headcount's " + f_.types[0] + " formula does not know");
    }
    layer_types_.push_back(*kind);
  }
  // Gemma4TextConfig makes the last layer full (with a warning) whatever layer_types says: refused
  // rather than counted either way.
  if (f_.global_layers && !layer_types_.empty() && layer_types_.back() != Mixer::Full) {
    return fail("layer_types' last layer is not full_attention, which Gemma4TextConfig forces it to be");
  }
  return true;
}

Mixer Counter::mixer(int64_t l) const {
  const MixerLayers& m = f_.layers;
  Mixer kind = m.base;
  if (!layer_types_.empty()) {
    kind = layer_types_[static_cast<size_t>(l)];
  } else if (m.enabled_by && !flag(m.enabled_by).value_or(false)) {
    kind = Mixer::Full;
  } else if (m.full_before && l < static_cast<int64_t>(number(m.full_before).count().value_or(0))) {
    kind = Mixer::Full;
  } else if (has_flags_) {
    kind = flags_[static_cast<size_t>(l)].is(0) ? m.special : m.base;
  } else if (m.special_list) {
    kind = !has_special_list_ || std::binary_search(special_list_.begin(), special_list_.end(), l) ? m.special : m.base;
  } else if (m.every.used() && picks(m.every, l)) {
    kind = m.special;
  }
  // Gemma4TextConfig makes the last layer full whatever the pattern.
  if (f_.global_layers && c_.layers.is(l + 1)) kind = Mixer::Full;
  // A sliding layer without a window, or a chunked one without a chunk, attends to everything.
  if (kind == Mixer::Sliding && !number(f_.window).positive()) kind = Mixer::Full;
  if (kind == Mixer::Chunked && !number(f_.chunk).positive()) kind = Mixer::Full;
  return kind;
}

// One attention layer's projections; KV heads of d (and their V projection unless `values` is
// false: keys that serve as values) for the grouped layouts.
bool Counter::attention(Int& n, std::string& formula, Int KV, Int d, bool values) {
  Int h = c_.hidden, H = c_.heads;
  std::string hs = h.str(), Hs = H.str(), KVs = KV.str(), ds = d.str();
  const bool qkv_b = bias(f_.qkv_bias, c_.qkv_bias), o_b = bias(f_.o_bias, c_.o_bias);
  switch (f_.attention) {
    case Attention::Square:  // Q, K, V, O: width × width each
      n = 4 * (h * h + (qkv_b ? h : Int(0)));
      formula = qkv_b ? "4·(" + hs + "² + " + hs + ")" : "4·" + hs + "²";
      return true;
    case Attention::SquareFused:  // c_attn width × 3·width, c_proj width × width
      n = h * 3 * h + (qkv_b ? 3 * h : Int(0)) + h * h + (o_b ? h : Int(0));
      formula = "(" + hs + "·3·" + hs + (qkv_b ? " + 3·" + hs : "") + " + " + hs + "²" + (o_b ? " + " + hs : "") + ")";
      return true;
    case Attention::Heads:
    case Attention::HeadsFused: {
      if (!KV.positive()) missing_.push_back(c_.key_of.at("kv_heads"));
      if (!d.positive()) missing_.push_back(c_.key_of.at("head_dim"));
      if (!KV.positive() || !d.positive()) return false;
      const bool gated = f_.gated_query && flag("attn_output_gate").value_or(true);
      const int q = gated ? 2 : 1;
      const std::string qs = gated ? "2·" : "";
      const int kv = values ? 2 : 1;
      const std::string kvs = values ? "2·" : "";
      n = q * h * H * d + kv * h * KV * d + H * d * h;
      formula = f_.attention == Attention::HeadsFused
                    ? hs + "·(" + Hs + " + 2·" + KVs + ")·" + ds + " + " + Hs + "·" + ds + "·" + hs
                    : hs + "·" + qs + Hs + "·" + ds + " + " + kvs + hs + "·" + KVs + "·" + ds + " + " + Hs + "·" + ds + "·" + hs;
      if (qkv_b) {
        n += q * H * d + kv * KV * d;
        formula += " + " + qs + Hs + "·" + ds + " + " + kvs + KVs + "·" + ds;
      }
      if (o_b) {
        n += h;
        formula += " + " + hs;
      }
      if (f_.sinks) {
        n += H;
        formula += " + " + Hs + " (sinks)";
      }
      formula = "(" + formula + ")";
      return true;
    }
    case Attention::Latent: {
      // Q through a low-rank factor (or straight), K/V through a shared latent with a decoupled
      // RoPE key; the latent norms belong to the block.
      Int qr = c_.q_lora_rank, kr = c_.kv_lora_rank, nope = c_.qk_nope_dim, rope = c_.qk_rope_dim, vd = c_.v_head_dim;
      for (const char* k : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) need(k);
      if (!kr.positive() || !nope.positive() || !rope.positive() || !vd.positive()) return false;
      std::string qk = "(" + nope.str() + " + " + rope.str() + ")";
      if (qr.positive()) {
        n = h * qr + qr + qr * H * (nope + rope);
        formula = hs + "·" + qr.str() + " + " + qr.str() + " + " + qr.str() + "·" + Hs + "·" + qk;
      } else {
        n = h * H * (nope + rope);
        formula = hs + "·" + Hs + "·" + qk;
      }
      n += h * (kr + rope) + kr + kr * H * (nope + vd) + H * vd * h;
      formula += " + " + hs + "·(" + kr.str() + " + " + rope.str() + ") + " + kr.str() + " + " + kr.str() + "·" + Hs + "·(" +
                 nope.str() + " + " + vd.str() + ") + " + Hs + "·" + vd.str() + "·" + hs;
      if (f_.indexer) {
        if (!indexer()) return false;
        if (indexer_layers_ == attention_layers_) {  // in every layer: a part of its attention
          n += idx_;
          formula += " + indexer " + idx_formula_;
        }
      }
      formula = "(" + formula + ")";
      return true;
    }
  }
  return false;
}

// Gemma 4's full-attention layers (Gemma4TextAttention with is_sliding false): head size
// global_head_dim (head_dim when 0); with attention_k_eq_v, num_global_key_value_heads K heads and no
// v_proj. The sliding layers' head size and K/V heads are the config's head_dim and
// num_key_value_heads; which layers are which must be known, so a sliding_window that is not
// positive (the layers would count as full) is refused.
bool Counter::global_attention() {
  if (!number(f_.window).positive()) {
    missing_.push_back(f_.window);
    return false;
  }
  keys_as_values_ = flag("attention_k_eq_v").value_or(false);
  full_head_dim_ = number("global_head_dim").positive() ? number("global_head_dim") : c_.head_dim;
  full_kv_heads_ = keys_as_values_ ? need("num_global_key_value_heads") : c_.kv_heads;
  if (!full_kv_heads_.positive()) return false;
  return attention(attn_full_, attn_full_formula_, full_kv_heads_, full_head_dim_, !keys_as_values_);
}

// DeepSeek sparse attention's lightning indexer (DeepseekV32Indexer): wq_b from the Q latent
// q_lora_rank → index_n_heads · index_head_dim, wk width → index_head_dim, k_norm a LayerNorm of
// index_head_dim (weight and bias), weights_proj width → index_n_heads; no biases.
bool Counter::indexer() {
  Int heads = need("index_n_heads"), d = need("index_head_dim"), qr = c_.q_lora_rank, h = c_.hidden;
  if (!qr.positive()) missing_.push_back("q_lora_rank");
  if (!heads.positive() || !d.positive() || !qr.positive()) return false;
  idx_ = qr * heads * d + h * d + 2 * d + h * heads;
  idx_formula_ = "(" + qr.str() + "·" + heads.str() + "·" + d.str() + " + " + h.str() + "·" + d.str() + " + 2·" + d.str() + " + " +
                 h.str() + "·" + heads.str() + ")";
  return true;
}

// GlmMoeDsaConfig's indexer_types: a name a layer ("full" runs the indexer, "shared" reuses the
// previous full layer's top-k), else index_topk_pattern's F and S, else layer i is full when
// max(i − index_skip_topk_offset + 1, 0) % max(index_topk_freq, 1) == 0 (offset 2, freq 1 by
// default: every layer). Counts the full layers.
bool Counter::plan_indexers() {
  const int64_t L = *c_.layers;
  indexer_layers_ = 0;
  if (const ConfigValue* v = value("indexer_types")) {
    if (v->kind != ConfigValue::Kind::List) return fail("indexer_types is not a list");
    if (!one_per_layer("indexer_types", v->items.size())) return false;
    for (size_t l = 0; l < v->items.size(); ++l) {
      const ConfigValue& x = v->items[l];
      const bool full = x.kind == ConfigValue::Kind::String && x.text == "full";
      if (!full && !(x.kind == ConfigValue::Kind::String && x.text == "shared")) {
        return fail("indexer_types[" + std::to_string(l) + "] is neither 'full' nor 'shared'");
      }
      indexer_layers_ += full ? 1 : 0;
    }
    return true;
  }
  if (const ConfigValue* v = value("index_topk_pattern")) {
    if (v->kind != ConfigValue::Kind::String) return fail("index_topk_pattern is not a string");
    if (!one_per_layer("index_topk_pattern", v->text.size())) return false;
    for (size_t l = 0; l < v->text.size(); ++l) {
      if (v->text[l] != 'F' && v->text[l] != 'S') return fail("index_topk_pattern[" + std::to_string(l) + "] is neither F nor S");
      indexer_layers_ += v->text[l] == 'F' ? 1 : 0;
    }
    return true;
  }
  Int freq = number("index_topk_freq"), offset = number("index_skip_topk_offset");
  const int64_t f = freq.positive() ? *freq : 1;
  const int64_t o = value("index_skip_topk_offset") ? (offset.non_negative() ? *offset : -1) : 2;
  if (o < 0) return fail("index_skip_topk_offset is not a number of layers");
  // Layers 0 .. o − 1 are full (max(·, 0) is 0), then every f-th: counted, not walked (the layer
  // count may be any int64).
  indexer_layers_ = std::min(o, L) + (L > o ? (L - o) / f : 0);
  return true;
}

// mlp_layer_types: "dense" or "sparse" (a MoE layer) for each layer; the MoE layers listed.
bool Counter::read_mlp_kinds() {
  const ConfigValue* v = value(f_.expert_layers.kinds);
  if (v->kind != ConfigValue::Kind::List) return fail(std::string(f_.expert_layers.kinds) + " is not a list");
  if (!one_per_layer(f_.expert_layers.kinds, v->items.size())) return false;
  for (size_t l = 0; l < v->items.size(); ++l) {
    const ConfigValue& x = v->items[l];
    const bool sparse = x.kind == ConfigValue::Kind::String && x.text == "sparse";
    if (!sparse && !(x.kind == ConfigValue::Kind::String && x.text == "dense")) {
      return fail(std::string(f_.expert_layers.kinds) + "[" + std::to_string(l) + "] is neither 'dense' nor 'sparse'");
    }
    if (sparse) moe_list_.push_back(static_cast<int64_t>(l));
  }
  has_moe_list_ = true;
  return true;
}

// Gated DeltaNet (Qwen3-Next): in_proj_qkvz width → 2·key + 2·value, in_proj_ba width → 2·value
// heads, a depthwise conv1d over q, k and v (no bias), dt_bias and A_log per value head, a gated
// RMSNorm of the value head size, out_proj value → width. Its state: the conv's last k − 1 inputs
// and a key × value matrix per value head.
bool Counter::linear_attention(Int& n, std::string& formula, Int& state, std::string& state_formula) {
  Int kh = need("linear_num_key_heads"), vh = need("linear_num_value_heads"), kd = need("linear_key_head_dim"),
      vd = need("linear_value_head_dim"), k = need("linear_conv_kernel_dim");
  if (!kh.positive() || !vh.positive() || !kd.positive() || !vd.positive() || !k.positive()) return false;
  Int h = c_.hidden;
  std::string hs = h.str(), khs = kh.str(), vhs = vh.str(), kds = kd.str(), vds = vd.str();
  Int conv = 2 * kh * kd + vh * vd;
  std::string convs = "(2·" + khs + "·" + kds + " + " + vhs + "·" + vds + ")";
  n = h * (2 * kh * kd + 2 * vh * vd) + h * 2 * vh + conv * k + 2 * vh + vd + vh * vd * h;
  formula = "(" + hs + "·(2·" + khs + "·" + kds + " + 2·" + vhs + "·" + vds + ") + " + hs + "·2·" + vhs + " + " + convs + "·" +
            k.str() + " + 2·" + vhs + " + " + vds + " + " + vhs + "·" + vds + "·" + hs + ")";
  state = (k - 1) * conv + vh * kd * vd;
  lin_conv_ = (k - 1) * conv;
  lin_ssm_ = vh * kd * vd;
  state_formula = "(conv " + (k - 1).str() + "·" + convs + " + state " + vhs + "·" + kds + "·" + vds + ")";
  return true;
}

// LFM2's short convolution (Lfm2ShortConv) over the width h: in_proj h → 3·h (B, C and x), a
// depthwise conv1d of conv_L_cache taps, out_proj h → h, all with biases when conv_bias. Its state:
// the last conv_L_cache inputs of the h channels (Lfm2's cache keeps conv_L_cache of them).
bool Counter::short_conv() {
  Int h = c_.hidden, k = need("conv_L_cache");
  if (!k.positive()) return false;
  if (value("conv_dim") && !number("conv_dim").is(*h)) return fail("conv_dim is " + number("conv_dim").str() + ", not the width " + h.str());
  const bool b = flag("conv_bias").value_or(false);
  std::string hs = h.str();
  conv_ = h * 3 * h + h * k + h * h + (b ? 3 * h + h + h : Int(0));
  conv_formula_ = "(" + hs + "·3·" + hs + " + " + hs + "·" + k.str() + " + " + hs + "²" + (b ? " + 5·" + hs + " (biases)" : "") + ")";
  conv_state_ = h * k;
  conv_state_formula_ = "(" + hs + "·" + k.str() + ")";
  return true;
}

// Lfm2MLP's size: intermediate_size (block_ff_dim in the original keys), and when
// block_auto_adjust_ff_dim (the default) int(2·f / 3), times block_ffn_dim_multiplier when given,
// rounded up to a multiple of block_multiple_of (256 by default). A multiplier that is not a whole
// number is refused: Python's float product and int() are not reproduced.
bool Counter::lfm2_feed_forward() {
  Int f = value("block_ff_dim") ? number("block_ff_dim") : c_.intermediate;
  if (!f.positive()) {
    missing_.push_back(value("block_ff_dim") ? "block_ff_dim" : "intermediate_size");
    return false;
  }
  if (!flag("block_auto_adjust_ff_dim").value_or(true)) {
    i_ = f;
    return true;
  }
  f = floor_div(2 * f, Int(3));
  if (const ConfigValue* m = value("block_ffn_dim_multiplier")) {
    if (m->kind != ConfigValue::Kind::Number || !m->number.positive()) {
      return fail("block_ffn_dim_multiplier is not a whole number headcount can multiply by exactly");
    }
    f = m->number * f;
  }
  Int multiple = value("block_multiple_of") ? number("block_multiple_of") : Int(256);
  if (!multiple.positive()) return fail("block_multiple_of is not a positive number");
  i_ = multiple * floor_div(f + multiple - 1, multiple);
  out_.notes.push_back("Lfm2MLP's size: int(2·" + (value("block_ff_dim") ? number("block_ff_dim") : c_.intermediate).str() +
                       " / 3) rounded up to a multiple of " + multiple.str() + " = " + i_.str());
  return i_.positive();
}

// A Mamba-1 mixer (Jamba): in_proj width → 2·inner, a depthwise conv1d over inner, x_proj inner →
// dt_rank + 2·N, dt_proj dt_rank → inner with its bias, A_log inner × N, D inner, out_proj inner →
// width, and Jamba's RMSNorms on dt, B and C. Its state: the conv's last k − 1 inputs and inner × N.
bool Counter::mamba(Int& n, std::string& formula, Int& state, std::string& state_formula) {
  Int N = need("mamba_d_state"), k = need("mamba_d_conv"), e = need("mamba_expand"), h = c_.hidden;
  Int r;
  if (const ConfigValue* v = value("mamba_dt_rank"); v && v->kind == ConfigValue::Kind::String && v->text == "auto") {
    r = floor_div(h + 15, Int(16));  // Hugging Face's "auto": ceil(width / 16)
    out_.notes.push_back("mamba_dt_rank \"auto\" is ceil(" + h.str() + " / 16) = " + r.str());
  } else {
    r = need("mamba_dt_rank");
  }
  if (!N.positive() || !k.positive() || !e.positive() || !r.positive()) return false;
  const bool conv_bias = flag("mamba_conv_bias").value_or(true), proj_bias = flag("mamba_proj_bias").value_or(false),
             inner_norms = flag("mamba_inner_layernorms").value_or(true);
  Int di = e * h;
  std::string hs = h.str(), dis = di.str(), Ns = N.str(), rs = r.str();
  n = h * 2 * di + di * k + di * (r + 2 * N) + r * di + di + di * N + di + di * h;
  formula = hs + "·2·" + dis + " + " + dis + "·" + k.str() + " + " + dis + "·(" + rs + " + 2·" + Ns + ") + " + rs + "·" + dis +
            " + " + dis + " + " + dis + "·" + Ns + " + " + dis + " + " + dis + "·" + hs;
  if (conv_bias) {
    n += di;
    formula += " + " + dis + " (conv bias)";
  }
  if (proj_bias) {
    n += 2 * di + h;
    formula += " + 2·" + dis + " + " + hs + " (projection biases)";
  }
  if (inner_norms) {
    n += r + 2 * N;
    formula += " + " + rs + " + 2·" + Ns + " (dt, B, C norms)";
  }
  formula = "(" + formula + ")";
  state = (k - 1) * di + di * N;
  state_formula = "(conv " + (k - 1).str() + "·" + dis + " + state " + dis + "·" + Ns + ")";
  return true;
}

// A Mamba-2 mixer (Nemotron-H), inner I = heads × head_dim (not expand × width), B and C in G groups
// of state N, conv_dim = I + 2·G·N: in_proj width → I (gate) + conv_dim + heads (dt), a depthwise
// conv1d over conv_dim with its bias, dt_bias, A_log and D per head, a gated RMSNorm of I, out_proj
// I → width. Its state: the conv's last k − 1 inputs and heads × head_dim × N.
bool Counter::mamba2(Int& n, std::string& formula, Int& state, std::string& state_formula) {
  const bool bamba = f_.bamba_keys;
  Int H = need(bamba ? "mamba_n_heads" : "mamba_num_heads"), N = need(bamba ? "mamba_d_state" : "ssm_state_size"),
      G = need(bamba ? "mamba_n_groups" : "n_groups"), k = need(bamba ? "mamba_d_conv" : "conv_kernel"), h = c_.hidden, d;
  std::string width_note;
  if (bamba) {
    // BambaMixer: the width is mamba_expand · hidden_size, in mamba_n_heads heads of mamba_d_head
    // ("auto": the width / the heads); GraniteMoeHybridConfig refuses a head size that does not fit.
    Int e = need("mamba_expand");
    const ConfigValue* dh = value("mamba_d_head");
    const bool automatic = !dh || (dh->kind == ConfigValue::Kind::String && dh->text == "auto");
    d = automatic ? exact_div(e * h, H) : number("mamba_d_head");
    if (!e.positive() || !H.positive()) return false;
    if (!d.positive() || !(e * h).positive() || !(H * d).is(*(e * h))) {
      return fail("mamba_n_heads · mamba_d_head is not mamba_expand · hidden_size (" + e.str() + "·" + h.str() + ")");
    }
    width_note = "the Mamba-2 width is mamba_expand · hidden_size = " + e.str() + "·" + h.str() + " = mamba_n_heads · mamba_d_head = " +
                 H.str() + "·" + d.str();
  } else {
    d = need("mamba_head_dim");
  }
  if (!H.positive() || !d.positive() || !N.positive() || !G.positive() || !k.positive()) return false;
  const bool conv_bias = flag(bamba ? "mamba_conv_bias" : "use_conv_bias").value_or(true),
             proj_bias = flag(bamba ? "mamba_proj_bias" : "use_bias").value_or(false);
  Int I = H * d, conv = I + 2 * G * N;
  std::string hs = h.str(), Is = I.str(), cs = conv.str(), Hs = H.str();
  n = h * (I + conv + H) + conv * k + 3 * H + I + I * h;
  formula = hs + "·(" + Is + " + " + cs + " + " + Hs + ") + " + cs + "·" + k.str() + " + 3·" + Hs + " + " + Is + " + " + Is +
            "·" + hs;
  if (conv_bias) {
    n += conv;
    formula += " + " + cs + " (conv bias)";
  }
  if (proj_bias) {
    n += I + conv + H + h;
    formula += " + " + Is + " + " + cs + " + " + Hs + " + " + hs + " (projection biases)";
  }
  formula = "(" + formula + ")";
  state = (k - 1) * conv + H * d * N;
  ssm2_conv_ = (k - 1) * conv;
  ssm2_ssm_ = H * d * N;
  state_formula = "(conv " + (k - 1).str() + "·" + cs + " + state " + Hs + "·" + d.str() + "·" + N.str() + ")";
  out_.notes.push_back((bamba ? width_note + " = " + Is : "the Mamba-2 width is mamba_num_heads · mamba_head_dim = " + Hs + "·" + d.str() +
                                                             " = " + Is + " (not expand · hidden_size)") +
                       "; conv_dim " + Is + " + 2·" + G.str() + "·" + N.str() + " = " + cs);
  return true;
}

std::string Counter::expert_formula(Int size) const {
  std::string hs = c_.hidden.str(), fs = size.str();
  if (f_.expert_bias) return "(3·" + hs + "·" + fs + " + 2·" + fs + " + " + hs + ")";
  return (f_.expert_mlp == Mlp::Plain ? "2·" : "3·") + hs + "·" + fs;
}

// The numbers every family needs: layers, width, vocabulary; heads unless the layout is square;
// positions and token types where the family learns them.
bool Counter::required() {
  const ModelConfig& c = c_;
  auto key = [&](const char* field, const char* fallback) { return c.key_of.count(field) ? c.key_of.at(field) : fallback; };
  if (!c.layers.positive()) missing_.push_back(key("layers", "num_hidden_layers"));
  if (!c.hidden.positive()) missing_.push_back(key("hidden", "hidden_size"));
  if (!c.vocab.positive()) missing_.push_back(key("vocab", "vocab_size"));
  if (f_.attention != Attention::Square && f_.attention != Attention::SquareFused && !c.heads.positive()) {
    missing_.push_back(key("heads", "num_attention_heads"));
  }
  if (f_.positions && !c.max_positions.positive()) missing_.push_back(key("max_positions", "max_position_embeddings"));
  if (f_.token_types && !c.type_vocab.positive()) missing_.push_back("type_vocab_size");
  return missing_.empty();
}

// Which layers attend (fully, sliding, chunked), recur, or hold experts.
bool Counter::plan() {
  const ModelConfig& c = c_;
  const int64_t L = *c.layers;
  moe_ = f_.experts && c.experts.positive();
  const MixerLayers& ml = f_.layers;
  const bool uniform = !ml.every.used() && !ml.flags && !ml.enabled_by && !ml.full_before && !ml.layer_types && !ml.pattern &&
                       !ml.special_list;
  if ((moe_ || !uniform) && L > kMaxLayers) {
    if (uniform) return false;
    return fail(c.key_of.at("layers") + " is " + c.layers.str() + ", more layers than headcount reads (" + commas(kMaxLayers) + ")");
  }
  if (ml.pattern) return plan_blocks();
  if (moe_ && !c.experts_per_token.positive()) {
    missing_.push_back("num_experts_per_tok");
    return false;
  }
  if (!read_layer_types()) return false;
  if (ml.flags && value(ml.flags)) {
    if (!read_list(ml.flags, flags_)) return false;
    has_flags_ = !flags_.empty();
    if (has_flags_ && !c.layers.is(static_cast<int64_t>(flags_.size()))) {
      return fail(std::string(ml.flags) + " has " + std::to_string(flags_.size()) + " entries, and " + c.key_of.at("layers") +
                  " is " + c.layers.str());
    }
  }
  if (ml.special_list && value(ml.special_list)) {
    std::vector<Int> listed;
    if (!read_list(ml.special_list, listed)) return false;
    for (Int x : listed) special_list_.push_back(*x);
    std::sort(special_list_.begin(), special_list_.end());
    has_special_list_ = true;
  }
  if (moe_ && f_.expert_layers.moe_list && value(f_.expert_layers.moe_list)) {
    std::vector<Int> listed;
    if (!read_list(f_.expert_layers.moe_list, listed)) return false;
    for (Int x : listed) moe_list_.push_back(*x);
    std::sort(moe_list_.begin(), moe_list_.end());
    has_moe_list_ = true;
  }
  if (moe_ && f_.expert_layers.kinds && value(f_.expert_layers.kinds) && !read_mlp_kinds()) return false;
  for (const char* k : {f_.expert_layers.first, f_.expert_layers.last, f_.expert_layers.every.period}) {
    // A list or a string where a layer number belongs (ERNIE-VL's per-modality lists) is not read as 0.
    if (moe_ && k && value(k) && value(k)->kind != ConfigValue::Kind::Number) return fail(std::string(k) + " is not a number");
  }
  if (moe_ && f_.expert_layers.dense_list) {
    dense_list_ = c.dense_layers;
    std::sort(dense_list_.begin(), dense_list_.end());
  }
  if (moe_ || !uniform) {
    for (int64_t l = 0; l < L; ++l) {
      ++kinds_[static_cast<int>(mixer(l))];
      if (moe_) moe_layers_ += expert_layer(l) ? 1 : 0;
    }
  } else {
    kinds_[static_cast<int>(mixer(0))] = L;
  }
  attention_layers_ = kinds_[0] + kinds_[1] + kinds_[2];
  indexer_layers_ = f_.indexer ? attention_layers_ : 0;
  if (f_.indexer_types && !plan_indexers()) return false;
  return true;
}

// One block per layer (Nemotron-H): the pattern string ("M-M*-E", one character a layer) or the list
// of block names says each layer's block; the experts are counted only when a layer holds them.
bool Counter::plan_blocks() {
  const ModelConfig& c = c_;
  const MixerLayers& ml = f_.layers;
  std::vector<char> kinds;
  const ConfigValue* p = value(ml.pattern);
  const ConfigValue* b = value(ml.blocks);
  const char* key = p ? ml.pattern : ml.blocks;
  if (p) {
    if (p->kind != ConfigValue::Kind::String) return fail(std::string(ml.pattern) + " is not a string");
    kinds.assign(p->text.begin(), p->text.end());
  } else if (b) {
    if (b->kind != ConfigValue::Kind::List) return fail(std::string(ml.blocks) + " is not a list");
    static const std::map<std::string, char> names = {{"mamba", 'M'}, {"attention", '*'}, {"mlp", '-'}, {"moe", 'E'}};
    for (const auto& x : b->items) {
      auto it = x.kind == ConfigValue::Kind::String ? names.find(x.text) : names.end();
      kinds.push_back(it == names.end() ? '?' : it->second);
    }
  } else {
    missing_.push_back(ml.pattern);
    return false;
  }
  if (!one_per_layer(key, kinds.size())) return false;
  for (size_t l = 0; l < kinds.size(); ++l) {
    switch (kinds[l]) {
      case 'M': ++kinds_[static_cast<int>(Mixer::Mamba2)]; break;
      case '*': ++kinds_[static_cast<int>(Mixer::Full)]; break;
      case '-': ++mlp_layers_; break;
      case 'E': ++moe_layers_; break;
      default:
        return fail(std::string(key) + "[" + std::to_string(l) + "] is a layer headcount's " + f_.types[0] +
                    " formula does not know (it knows M, *, - and E; mamba, attention, mlp and moe)");
    }
  }
  single_block_ = true;
  moe_ = moe_layers_ > 0;
  if (moe_ && !c.experts.positive()) missing_.push_back(c.key_of.at("experts"));
  if (moe_ && !c.experts_per_token.positive()) missing_.push_back("num_experts_per_tok");
  attention_layers_ = kinds_[0];
  return missing_.empty();
}

// The sizes of a dense feed-forward, an expert and a shared expert, and one layer of each mixer.
bool Counter::sizes() {
  const ModelConfig& c = c_;
  Int h = c.hidden;
  i_ = f_.dense_size ? number(f_.dense_size) : c.intermediate;
  if (f_.lfm2_ff && !lfm2_feed_forward()) return false;
  mi_ = moe_ ? (f_.expert_size == std::string("intermediate_size") ? c.intermediate : c.moe_intermediate) : Int(0);
  if (moe_ && !mi_.positive()) missing_.push_back(f_.expert_size);
  if ((single_block_ ? Int(mlp_layers_) : c.layers - Int(moe_layers_)).positive() && !i_.positive()) {
    missing_.push_back(f_.dense_size ? f_.dense_size : c.key_of.count("intermediate") ? c.key_of.at("intermediate") : "intermediate");
  }
  shared_n_ = f_.shared_count ? number(f_.shared_count) : Int(f_.shared_fixed);
  shared_size_ = f_.shared_size ? number(f_.shared_size) : mi_;
  const bool shared = moe_ && shared_n_.positive() && shared_size_.positive();
  const int up = f_.expert_mlp == Mlp::Plain ? 2 : 3;  // up and down, or gate, up and down
  expert_ = up * h * mi_ + (f_.expert_bias ? 2 * mi_ + h : Int(0));
  shared_params_ = shared ? shared_n_ * up * h * shared_size_ + (f_.shared_gate ? h : Int(0)) : Int(0);
  router_bias_ = f_.router_bias != RouterBias::FromTopk || c.router_bias;
  router_ = moe_ ? h * c.experts + (router_bias_ ? c.experts : Int(0)) : Int(0);

  if ((attention_layers_ > 0 || f_.mtp) && !attention(attn_, attn_formula_) && attention_layers_ > 0) return false;
  if (f_.global_layers && kinds_[static_cast<int>(Mixer::Full)] && !global_attention()) return false;
  if (kinds_[static_cast<int>(Mixer::Linear)] && !linear_attention(linear_, linear_formula_, linear_state_, linear_state_formula_)) {
    return false;
  }
  if (kinds_[static_cast<int>(Mixer::Mamba)] && !mamba(ssm_, ssm_formula_, ssm_state_, ssm_state_formula_)) return false;
  if (kinds_[static_cast<int>(Mixer::Mamba2)] && !mamba2(ssm2_, ssm2_formula_, ssm2_state_, ssm2_state_formula_)) return false;
  if (kinds_[static_cast<int>(Mixer::ShortConv)] && !short_conv()) return false;
  return missing_.empty();
}

// Embeddings and the token mixers, each group of layers with its formula.
bool Counter::mixer_parts() {
  const ModelConfig& c = c_;
  Int L = c.layers, h = c.hidden, V = c.vocab;
  std::string hs = h.str();
  std::string embeddings = V.str() + "·" + hs;
  embedding_ = V * h;
  if (f_.positions) {
    embeddings += " + " + c.max_positions.str() + "·" + hs;
    embedding_ += c.max_positions * h;
  }
  if (f_.token_types) {
    embeddings += " + " + c.type_vocab.str() + "·" + hs;
    embedding_ += c.type_vocab * h;
  }
  bool ok = part("embeddings", embedding_, embeddings);
  auto layers_of = [&](int64_t n, const char* what) { return n == *L ? L.str() : std::to_string(n) + " " + what + " layers"; };
  const int64_t full = f_.global_layers ? kinds_[static_cast<int>(Mixer::Full)] : 0, rest = attention_layers_ - full;
  if (rest > 0) ok &= part("attention", Int(rest) * attn_, layers_of(rest, full ? "sliding" : "attention") + " · " + attn_formula_);
  if (f_.indexer && indexer_layers_ > 0 && indexer_layers_ < attention_layers_) {
    ok &= part("indexer", Int(indexer_layers_) * idx_, layers_of(indexer_layers_, "indexer") + " · " + idx_formula_);
  }
  if (full > 0) {
    ok &= part("full attention", Int(full) * attn_full_,
               layers_of(full, "full") + " · " + attn_full_formula_ + (keys_as_values_ ? " (the keys serve as values: no v_proj)" : ""));
  }
  if (int64_t g = kinds_[static_cast<int>(Mixer::Linear)]) {
    ok &= part("linear attention", Int(g) * linear_, layers_of(g, "Gated DeltaNet") + " · " + linear_formula_);
  }
  if (int64_t s = kinds_[static_cast<int>(Mixer::Mamba)]) ok &= part("mamba", Int(s) * ssm_, layers_of(s, "Mamba") + " · " + ssm_formula_);
  if (int64_t s = kinds_[static_cast<int>(Mixer::Mamba2)]) {
    ok &= part("mamba-2", Int(s) * ssm2_, layers_of(s, "Mamba-2") + " · " + ssm2_formula_);
  }
  if (int64_t s = kinds_[static_cast<int>(Mixer::ShortConv)]) {
    ok &= part("short convolution", Int(s) * conv_, layers_of(s, "short-convolution") + " · " + conv_formula_);
  }
  return ok;
}

// The dense layers' feed-forward, then the experts, shared experts and routers of the MoE layers.
bool Counter::feed_forward_parts() {
  const ModelConfig& c = c_;
  Int h = c.hidden, i = i_, M = Int(moe_layers_), dense_layers = single_block_ ? Int(mlp_layers_) : c.layers - M;
  std::string hs = h.str(), is = i.str();
  const bool mlp_b = bias(f_.mlp_bias, c.mlp_bias);
  bool ok = true;
  if ((!moe_ && !single_block_) || dense_layers.positive()) {
    std::string n = single_block_ ? dense_layers.str() + " feed-forward layers" : moe_ ? dense_layers.str() + " dense layers" : c.layers.str();
    if (f_.mlp == Mlp::Plain) {
      ok &= part("feed-forward", dense_layers * (2 * h * i + (mlp_b ? i + h : Int(0))),
                 n + " · (2·" + hs + "·" + is + (mlp_b ? " + " + is + " + " + hs : "") + ")");
    } else {
      ok &= part("feed-forward", dense_layers * (3 * h * i + (mlp_b ? 2 * i + h : Int(0))),
                 n + " · 3·" + hs + "·" + is + (mlp_b ? " + biases" : ""));
    }
  }
  if (!moe_) return ok;
  Int E = c.experts;
  ok &= part("routed experts", M * E * expert_, M.str() + " MoE layers · " + E.str() + " experts · " + expert_formula(mi_));
  if (shared_params_.positive()) {
    std::string one = (f_.shared_count ? shared_n_.str() + " · " : "") + expert_formula(shared_size_);
    ok &= part("shared experts", M * shared_params_, M.str() + " · " + (f_.shared_gate ? "(" + one + " + " + hs + " (gate))" : one));
  }
  std::string bias_note = f_.router_bias == RouterBias::Always ? " (bias)" : " (score bias)";
  if (f_.router_bias == RouterBias::ScoreAlways) bias_note = " (score-correction bias)";
  ok &= part("routers", M * router_, M.str() + " · " + hs + "·" + E.str() + (router_bias_ ? " + " + E.str() + bias_note : ""));
  out_.moe_layers = moe_layers_;
  out_.experts = *E;
  out_.experts_per_token = *c.experts_per_token;
  out_.expert_size = expert_.count().value_or(0);
  return ok;
}

// Norms (the embeddings' in BERT, every layer's, the final one, q_norm and k_norm of head_dim in
// the attention layers), the pooler and the LM head.
bool Counter::closing_parts() {
  const ModelConfig& c = c_;
  Int L = c.layers, h = c.hidden, A = Int(attention_layers_);
  std::string hs = h.str(), Ls = L.str();
  const int w = f_.norm_weights;
  auto width = [&](int times) { return times == 1 ? hs : std::to_string(times) + "·" + hs; };
  Int norms = L * (f_.norms_per_layer * w) * h;
  std::string formula = Ls + " · " + width(f_.norms_per_layer * w);
  if (f_.embedding_norm) {
    norms = w * h + norms;
    formula = width(w) + " + " + formula;
  }
  if (f_.final_norm) {
    norms += w * h;
    formula += " + " + width(w);
  }
  if (f_.qk_norm_width && attention_layers_ > 0) {
    norms += A * (c.heads + c.kv_heads) * c.head_dim;
    formula += " + " + A.str() + " · (" + c.heads.str() + " + " + c.kv_heads.str() + ")·" + c.head_dim.str() + " (q_norm, k_norm)";
  } else if (f_.global_layers && attention_layers_ > 0) {
    // q_norm and k_norm of each layer's head size; v_norm has no weights; a layer_scalar a layer.
    Int full = Int(kinds_[static_cast<int>(Mixer::Full)]), rest = A - full;
    norms += rest * 2 * c.head_dim + (full.positive() ? full * 2 * full_head_dim_ : Int(0)) + L;
    formula += " + " + rest.str() + " · 2·" + c.head_dim.str() + " + " + full.str() + " · 2·" + full_head_dim_.str() +
               " (q_norm, k_norm) + " + Ls + " (layer_scalar)";
  } else if (qk_norm() && attention_layers_ > 0) {
    norms += A * 2 * c.head_dim;
    formula += " + " + A.str() + " · 2·" + c.head_dim.str() + " (q_norm, k_norm)";
  }
  bool ok = part("norms", norms, formula);
  if (f_.pooler) ok &= part("pooler", h * h + h, hs + "² + " + hs);
  const bool tied = c.tied.value_or(false);
  if (f_.lm_head) {
    ok &= part("lm head", tied ? Int(0) : c.vocab * h, tied ? std::string("tied to the token embedding") : c.vocab.str() + "·" + hs);
  }
  return ok;
}

// The parameters one token runs through: the total less each MoE layer's idle experts; and less
// the input embedding, a lookup (unless it is the LM head's weights too).
void Counter::active() {
  const ModelConfig& c = c_;
  if (!moe_) return;
  if (!c.experts_per_token.positive() || !c.experts.known() || *c.experts_per_token > *c.experts) {
    // Never a count: k experts of fewer would make the idle experts negative and the active count
    // larger than the total.
    out_.notes.push_back(c.key_of.count("experts_per_token") ? c.key_of.at("experts_per_token") + " is " + c.experts_per_token.str() +
                         ", outside 1.." + c.experts.str() + " (the experts): no active count"
                                                            : "the experts per token are outside 1.." + c.experts.str() + ": no active count");
    return;
  }
  Int M = Int(moe_layers_);
  Int active = total_ - M * (c.experts - c.experts_per_token) * expert_;
  if (!active.non_negative()) return;
  out_.active = active.count();
  out_.active_formula = "the total less " + M.str() + " MoE layers · (" + c.experts.str() + " − " + c.experts_per_token.str() +
                        ") idle experts · " + commas(expert_.count().value_or(0)) + " = " + commas(*active.count());
  Int lookup = f_.lm_head && c.tied.value_or(false) ? Int(0) : embedding_;
  out_.active_without_embedding = (active - lookup).count();
}

// The K/V cache per token at the config's dtype, the attention layers by what they keep, and the
// recurrent state of linear-attention and state-space layers per sequence.
void Counter::caches() {
  const ModelConfig& c = c_;
  const bool mla = f_.attention == Attention::Latent;
  const std::string dtype = c.dtype.empty() ? "float32" : c.dtype;
  const std::string undeclared = c.dtype.empty() ? "; the config declares no torch_dtype" : "";
  const int size = element_bytes(dtype);
  if (size) {
    out_.kv_bits = size * 8;
    out_.kv_dtype = dtype;
  }
  Int A = Int(attention_layers_);
  Int per_layer = mla ? c.kv_lora_rank + c.qk_rope_dim : c.kv_heads * 2 * c.head_dim;
  // Gemma 4's full layers keep their own K/V heads of their own size; with attention_k_eq_v the
  // values are the keys normed apart (without k_norm's weights and RoPE), so the cache keeps both.
  const int64_t F = f_.global_layers ? kinds_[static_cast<int>(Mixer::Full)] : 0;
  Int per_full = F ? full_kv_heads_ * 2 * full_head_dim_ : per_layer;
  if (f_.kv_cache && attention_layers_ > 0 && per_layer.positive() && per_full.positive()) {
    for (Mixer m : {Mixer::Full, Mixer::Sliding, Mixer::Chunked}) {
      if (int64_t n = kinds_[static_cast<int>(m)]) {
        Int window = m == Mixer::Sliding ? number(f_.window) : m == Mixer::Chunked ? number(f_.chunk) : Int(0);
        Int each = m == Mixer::Full ? per_full : per_layer;
        out_.kv_layers.push_back({mla ? "latent" : mixer_name(m), n, *each.count(), window.count().value_or(0)});
      }
    }
  }
  if (F && keys_as_values_) {
    out_.notes.push_back("the full layers have no v_proj (attention_k_eq_v): their values are their keys before k_norm and "
                         "RoPE, normed apart, and the K/V cache keeps keys and values both");
  }
  // The indexer keeps one key of index_head_dim per token in every attention layer.
  Int index_key = f_.indexer ? number("index_head_dim") : Int(0);
  if (f_.kv_cache && indexer_layers_ > 0 && index_key.positive()) {
    out_.kv_layers.push_back({"indexer", indexer_layers_, *index_key.count(), 0});
    out_.notes.push_back("the indexer's key cache is counted at the config's dtype, as Hugging Face keeps it; DeepSeek's own "
                         "kernels keep it in FP8 with a float32 scale per 128 elements: " +
                         (index_key + 4 * floor_div(index_key + 127, Int(128))).str() + " bytes per layer and token");
  }
  if (f_.kv_cache && size) {
    Int per = ((A - Int(F)) * per_layer + Int(F) * per_full + Int(indexer_layers_) * index_key) * size;
    if (per.positive()) {
      std::string layers = attention_layers_ == *c.layers ? c.layers.str() : A.str() + " attention";
      std::string each = std::to_string(size) + " bytes (" + dtype + ")";
      out_.kv_bytes_per_token = per.count();
      out_.kv_formula = mla ? layers + " layers · (" + c.kv_lora_rank.str() + " latent + " + c.qk_rope_dim.str() + " RoPE key) · " + each
                            : layers + " layers · " + c.kv_heads.str() + " K/V heads · 2·" + c.head_dim.str() + " · " + each;
      if (F) {
        out_.kv_formula = "(" + std::to_string(attention_layers_ - F) + " sliding layers · " + c.kv_heads.str() + " K/V heads · 2·" +
                          c.head_dim.str() + " + " + std::to_string(F) + " full layers · " + full_kv_heads_.str() + " K/V heads · 2·" +
                          full_head_dim_.str() + ") · " + each;
      }
      if (index_key.positive() && indexer_layers_ > 0) {
        std::string with = indexer_layers_ == attention_layers_ ? layers : std::to_string(indexer_layers_) + " indexer";
        out_.kv_formula += " + " + with + " layers · " + index_key.str() + " indexer key · " + each;
      }
      out_.kv_formula += undeclared;
    }
  }
  recurrent_state(dtype, size, undeclared);
}

// The recurrent state per sequence of the linear-attention, state-space and short-convolution
// layers, at the config's dtype (`size` bytes an element, 0 when unknown); the SSM state at its own
// dtype where the config names one.
void Counter::recurrent_state(const std::string& dtype, int size, const std::string& undeclared) {
  struct Recurrent {
    Mixer mixer;
    Int state;
    const std::string& formula;
    const char* what;
  };
  for (const Recurrent& r : {Recurrent{Mixer::Linear, linear_state_, linear_state_formula_, "Gated DeltaNet"},
                             Recurrent{Mixer::Mamba, ssm_state_, ssm_state_formula_, "Mamba"},
                             Recurrent{Mixer::Mamba2, ssm2_state_, ssm2_state_formula_, "Mamba-2"},
                             Recurrent{Mixer::ShortConv, conv_state_, conv_state_formula_, "short-convolution"}}) {
    int64_t n = kinds_[static_cast<int>(r.mixer)];
    if (!n || !r.state.positive()) continue;
    out_.state_layers = n;
    out_.state_elements = *r.state.count();
    Int b = size ? Int(n) * r.state * size : Int();
    // Nemotron 3 keeps the SSM state at mamba_ssm_cache_dtype, Qwen3.5 at mamba_ssm_dtype (float32),
    // the conv's inputs at the dtype.
    const char* ssm_key = r.mixer == Mixer::Mamba2 ? "mamba_ssm_cache_dtype" : r.mixer == Mixer::Linear ? "mamba_ssm_dtype" : nullptr;
    const ConfigValue* ssm_dtype = value(ssm_key);
    const int ssm_size = ssm_dtype && ssm_dtype->kind == ConfigValue::Kind::String ? element_bytes(ssm_dtype->text) : 0;
    if (ssm_size && size) {
      const Int& conv = r.mixer == Mixer::Mamba2 ? ssm2_conv_ : lin_conv_;
      const Int& ssm = r.mixer == Mixer::Mamba2 ? ssm2_ssm_ : lin_ssm_;
      b = Int(n) * (conv * size + ssm * ssm_size);
      if (b.positive()) {
        out_.state_bytes = b.count();
        out_.state_formula = std::to_string(n) + " " + r.what + " layers · (conv " + conv.str() + " · " +
                             std::to_string(size) + " bytes (" + dtype + ") + state " + ssm.str() + " · " +
                             std::to_string(ssm_size) + " bytes (" + ssm_key + " " + ssm_dtype->text + "))" + undeclared;
      }
      continue;
    }
    if (b.positive()) {
      out_.state_bytes = b.count();
      out_.state_formula = std::to_string(n) + " " + r.what + " layers · " + r.formula + " · " + std::to_string(size) +
                           " bytes (" + dtype + ")" + undeclared;
    }
  }
}

// Multi-token-prediction modules: one more decoder layer each (full attention, and a MoE layer, or a
// dense one in a dense model), with the projection of [normed embedding; normed hidden] and three
// norms; they share the embedding and the LM head.
void Counter::mtp() {
  const ModelConfig& c = c_;
  if (!f_.mtp) return;
  Int layers = number(f_.mtp), h = c.hidden;
  if (!value(f_.mtp) && f_.mtp_default) {
    layers = Int(f_.mtp_default);
    out_.notes.push_back(f_.mtp_note);
  }
  if (!layers.positive()) return;
  // A MoE layer in the mixtures of experts; a dense layer of intermediate_size in a dense model
  // (Qwen3.5's).
  const int up = f_.mlp == Mlp::Plain ? 2 : 3;
  Int ffn = moe_ ? c.experts * expert_ + shared_params_ + router_ : up * h * i_;
  // An MTP layer runs its own indexer, also where the main layers share one (GLM-MoE-DSA).
  Int indexer = f_.indexer && indexer_layers_ < attention_layers_ ? idx_ : Int(0);
  Int layer = attn_ + indexer + ffn + f_.norms_per_layer * f_.norm_weights * h + (qk_norm() ? 2 * c.head_dim : Int(0));
  Int mtp = layers * (layer + 2 * h * h + 3 * h);
  if (!mtp.count()) {  // never a wrapped or zero count
    out_.notes.push_back(std::string(value(f_.mtp) ? f_.mtp : "the multi-token-prediction layers") + " is " + layers.str() +
                         ": the multi-token-prediction modules' count does not fit in 64 bits, and is not given");
    return;
  }
  std::string hs = h.str();
  out_.mtp.push_back({"multi-token prediction", mtp.count().value_or(0),
                      layers.str() + " · (one " + (moe_ ? "MoE" : "dense") + " layer " + commas(layer.count().value_or(0)) + " + " +
                          f_.mtp_proj + " 2·" + hs + "·" + hs + " + 3·" + hs + " norms) = " + commas(mtp.count().value_or(0))});
  out_.mtp_total = mtp.count().value_or(0);
}

std::optional<FamilyCount> Counter::run() {
  if (!required() || !plan() || !sizes()) return std::nullopt;
  out_.family = f_.name;
  if (f_.unbuilt && number(f_.unbuilt).positive()) out_.notes.push_back(f_.unbuilt_note);
  bool ok = mixer_parts();
  ok &= feed_forward_parts();
  ok &= closing_parts();
  active();
  caches();
  mtp();
  if (!ok || !total_.non_negative()) return std::nullopt;  // a product that does not fit in 64 bits
  out_.total = *total_.count();
  return out_;
}

}  // namespace

std::optional<FamilyCount> family_count(const ModelConfig& c) {
  const Family* f = find_family(c.family);
  if (!f) return std::nullopt;
  return Counter(*f, c).run();
}

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& f : families()) {
      t.insert(t.end(), f.types.begin(), f.types.end());
      t.insert(t.end(), f.wrappers.begin(), f.wrappers.end());
    }
    return t;
  }();
  return types;
}

std::optional<KvAtContext> kv_at_context(const FamilyCount& f, uint64_t context, int bits) {
  if (f.kv_layers.empty() || bits <= 0) return std::nullopt;
  KvAtContext out;
  uint64_t total_bits = 0;
  for (const auto& g : f.kv_layers) {
    uint64_t tokens = g.window && g.window < context ? g.window : context;
    uint64_t b = 0;
    if (mul_overflows(static_cast<uint64_t>(g.layers), g.elements, &b) || mul_overflows(b, static_cast<uint64_t>(bits), &b) ||
        mul_overflows(b, tokens, &b) || add_overflows(total_bits, b, &total_bits)) {
      return std::nullopt;
    }
    uint64_t per_layer_bits = 0;
    mul_overflows(g.elements, static_cast<uint64_t>(bits), &per_layer_bits);
    std::string per_layer = per_layer_bits % 8 == 0 ? commas(per_layer_bits / 8) + " bytes" : commas(per_layer_bits) + " bits";
    out.formula += (out.formula.empty() ? "" : " + ") + std::to_string(g.layers) + " " + g.kind + " layers · " + per_layer +
                   " · " + commas(tokens) + (g.window && g.window < context ? " (the window)" : "");
  }
  out.bytes = total_bits / 8 + (total_bits % 8 ? 1 : 0);
  out.formula += " = " + commas(out.bytes) + " bytes";
  return out;
}

namespace {

// Keys that leave a parameter count, the K/V cache and the state alone (token ids, epsilons,
// dropout, initialization, RoPE's frequencies, routing arithmetic, the writer's bookkeeping).
const std::vector<std::string> kHarmlessKeys = {
    "architectures", "model_type", "torch_dtype", "dtype", "transformers_version", "auto_map", "_name_or_path",
    "bos_token_id", "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id", "rms_norm_eps",
    "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "rope_theta", "rope_scaling", "rope_parameters",
    "partial_rotary_factor", "initializer_range", "initializer_factor", "hidden_act", "activation_function",
    "attention_dropout", "hidden_dropout", "hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop",
    "embd_pdrop", "attn_pdrop", "classifier_dropout", "use_cache", "pretraining_tp", "router_aux_loss_coef",
    "output_router_logits", "norm_topk_prob", "routed_scaling_factor", "n_group", "topk_group", "scoring_func",
    "aux_loss_alpha", "seq_aux", "ep_size", "num_logits_to_keep", "logits_to_keep", "tokenizer_class", "task_specific_params",
    "bos_token", "eos_token", "chat_template", "id2label", "label2id", "problem_type", "return_dict", "output_attentions",
    "output_hidden_states", "torchscript", "use_return_dict", "gradient_checkpointing", "max_window_layers",
    "use_sliding_window", "attn_implementation", "_attn_implementation", "quantization_config", "rope_type",
    "original_max_position_embeddings", "mlp_hidden_act", "router_jitter_noise", "rescale_prenorm_residual",
    "residual_in_fp32", "max_seq_len", "seq_length", "model_max_length", "use_flash_attn", "attention_softmax_in_fp32"};

// The row an unknown model_type is estimated as, from the common field names: latent attention when
// a K/V latent rank is given, experts when an expert count is, else a LLaMA-style decoder (RMSNorms,
// gated feed-forward, grouped K/V heads, no biases unless attention_bias / mlp_bias say so).
Family estimate_row(const ModelConfig& c) {
  Family f = decoder(c.model_type, "", "");
  f.classes.clear();
  f.reads = reads({});
  // Every layer attends to the whole context, unless layer_types names sliding ones: then their
  // window is sliding_window (without layer_types, which layers slide is not known: not read).
  f.layers.base = Mixer::Full;
  f.layers.special = Mixer::Sliding;
  f.layers.layer_types = true;
  if (c.values.count("layer_types")) {
    f.window = "sliding_window";
    f.reads.insert(f.reads.end(), {"layer_types", "sliding_window"});
  }
  std::string kind = "a LLaMA-style decoder (RMSNorms, gated feed-forward, grouped K/V heads)";
  if (c.kv_lora_rank.positive()) {
    f.attention = Attention::Latent;
    f.reads.insert(f.reads.end(), {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
    kind = "a DeepSeek-style decoder (multi-head latent attention)";
  }
  if (c.experts.positive()) {
    const bool own = c.moe_intermediate.positive();
    f.expert_size = own ? "moe_intermediate_size" : "intermediate_size";
    f.expert_layers.first = "first_k_dense_replace";
    f.expert_layers.dense_list = "mlp_only_layers";
    f.shared_count = "n_shared_experts";
    f.reads.insert(f.reads.end(), {"num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
                                   "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace", "mlp_only_layers",
                                   "topk_method"});
    kind += std::string(", with experts of ") + (own ? "moe_intermediate_size" : "intermediate_size") +
            " in every layer but the first first_k_dense_replace and mlp_only_layers";
  }
  f.name = "an estimate: " + kind;
  return f;
}

// Every key of the config that the estimate neither read nor knows to leave the count alone.
std::vector<std::string> not_understood(const ModelConfig& c, const Family& row) {
  std::vector<std::string> out;
  for (const auto& [key, v] : c.values) {
    if (v.kind == ConfigValue::Kind::Null) continue;
    bool read = std::find(row.reads.begin(), row.reads.end(), key) != row.reads.end() ||
                std::find(kHarmlessKeys.begin(), kHarmlessKeys.end(), key) != kHarmlessKeys.end();
    for (const auto& [field, k] : c.key_of) read |= k == key;
    if (!read) out.push_back(key);
  }
  return out;
}

}  // namespace

namespace {

// Qwen3-VL's vision tower (Qwen3VLVisionModel), width h, MLP size I, merged width M = h · s²:
// patch_embed a Conv3d in_channels → h over temporal_patch_size × patch_size² with its bias;
// pos_embed num_position_embeddings × h; depth blocks of two LayerNorms (4·h), qkv h → 3·h and proj
// h → h with biases, linear_fc1 h → I and linear_fc2 I → h with biases; the merger (a LayerNorm of
// h, fc1 M → M, fc2 M → out_hidden_size, biases) and one DeepStack merger per
// deepstack_visual_indexes entry (a LayerNorm of M, then the same fc1 and fc2). Returns the missing
// keys; the parts go into `out`, nullopt total when a product does not fit in 64 bits.
std::vector<std::string> qwen3_vl_vision(const ModelConfig& c, FamilyCount& out, Int& total, bool deepstack) {
  std::vector<std::string> missing;
  auto num = [&](const char* k) {
    auto it = c.vision.find(k);
    Int v = it != c.vision.end() && it->second.kind == ConfigValue::Kind::Number ? it->second.number : Int();
    if (!v.positive()) missing.push_back(std::string("vision_config.") + k);
    return v;
  };
  Int h = num("hidden_size"), depth = num("depth"), I = num("intermediate_size"), cin = num("in_channels"),
      p = num("patch_size"), t = num("temporal_patch_size"), sm = num("spatial_merge_size"), o = num("out_hidden_size"),
      npos = num("num_position_embeddings");
  auto ds = c.vision.find("deepstack_visual_indexes");
  const bool listed = ds != c.vision.end() && ds->second.kind == ConfigValue::Kind::List;
  if (deepstack && !listed) missing.push_back("vision_config.deepstack_visual_indexes");
  if (!missing.empty()) return missing;
  Int n = Int(deepstack ? static_cast<int64_t>(ds->second.items.size()) : 0), M = h * sm * sm;
  std::string hs = h.str(), Is = I.str(), Ms = M.str(), os = o.str();
  total = 0;
  auto part = [&](const char* name, Int v, const std::string& formula) {
    out.vision_parts.push_back({name, v.count().value_or(0), formula + " = " + commas(v.count().value_or(0))});
    total += v;
  };
  part("patch embedding", h * cin * t * p * p + h, hs + "·" + cin.str() + "·" + t.str() + "·" + p.str() + "² + " + hs);
  part("position embedding", npos * h, npos.str() + "·" + hs);
  part("blocks", depth * (4 * h + 3 * h * h + 3 * h + h * h + h + h * I + I + I * h + h),
       depth.str() + " · (4·" + hs + " + " + hs + "·3·" + hs + " + 3·" + hs + " + " + hs + "² + " + hs + " + 2·" + hs + "·" + Is +
           " + " + Is + " + " + hs + ")");
  part("merger", 2 * h + M * M + M + M * o + o, "2·" + hs + " + " + Ms + "² + " + Ms + " + " + Ms + "·" + os + " + " + os);
  if (deepstack) {
    part("deepstack mergers", n * (2 * M + M * M + M + M * o + o),
         n.str() + " · (2·" + Ms + " + " + Ms + "² + " + Ms + " + " + Ms + "·" + os + " + " + os + ")");
  }
  return missing;
}

// Gemma 3's vision tower: SiglipVisionModel (width h, MLP size I, image_size / patch_size patches a
// side) and Gemma3MultiModalProjector. patch_embedding a Conv2d num_channels → h over patch_size²
// with its bias; position_embedding patches × h; num_hidden_layers layers of layer_norm1 and
// layer_norm2 (4·h), q, k, v and out_proj h → h with biases, fc1 h → I and fc2 I → h with biases;
// post_layernorm 2·h (vision_use_head false: no pooling head); the projector's
// mm_input_projection_weight h × the text width and mm_soft_emb_norm of h.
std::vector<std::string> siglip_vision(const ModelConfig& c, FamilyCount& out, Int& total) {
  std::vector<std::string> missing;
  auto get = [&](const char* k) {
    auto it = c.vision.find(k);
    return it != c.vision.end() && it->second.kind == ConfigValue::Kind::Number ? it->second.number : Int();
  };
  auto num = [&](const char* k) {
    Int v = get(k);
    if (!v.positive()) missing.push_back(std::string("vision_config.") + k);
    return v;
  };
  Int h = num("hidden_size"), I = num("intermediate_size"), L = num("num_hidden_layers"), img = num("image_size"),
      p = num("patch_size"), cin = get("num_channels");
  auto head = c.vision.find("vision_use_head");
  if (head != c.vision.end() && (head->second.kind != ConfigValue::Kind::Boolean || head->second.flag)) {
    missing.push_back("vision_config.vision_use_head false (a pooling head is not in Gemma 3's tower)");
  }
  if (!missing.empty()) return missing;
  if (!cin.positive()) {
    cin = Int(3);
    out.notes.push_back("vision_config.num_channels is not given: SiglipVisionConfig's default 3");
  }
  Int side = exact_div(img, p);
  if (!side.positive()) return {"vision_config.image_size a multiple of vision_config.patch_size"};
  std::string hs = h.str(), Is = I.str(), ts = c.hidden.str();
  total = 0;
  auto part = [&](const char* name, Int v, const std::string& formula) {
    out.vision_parts.push_back({name, v.count().value_or(0), formula + " = " + commas(v.count().value_or(0))});
    total += v;
  };
  part("patch embedding", h * cin * p * p + h, hs + "·" + cin.str() + "·" + p.str() + "² + " + hs);
  part("position embedding", side * side * h, "(" + img.str() + " / " + p.str() + ")²·" + hs);
  part("layers", L * (4 * h + 4 * h * h + 4 * h + h * I + I + I * h + h),
       L.str() + " · (4·" + hs + " + 4·(" + hs + "² + " + hs + ") + 2·" + hs + "·" + Is + " + " + Is + " + " + hs + ")");
  part("post layernorm", 2 * h, "2·" + hs);
  part("projector", h * c.hidden + h, hs + "·" + ts + " + " + hs + " (mm_soft_emb_norm)");
  return missing;
}

// Gemma 4's vision tower (Gemma4VisionModel, width h, MLP size I, H heads and KV heads of d) and
// its embedder into the text model (Gemma4MultimodalEmbedder): patch_embedder.input_proj 3·patch² →
// h and position_embedding_table 2 × position_embedding_size × h, no biases; num_hidden_layers
// layers of four RMSNorms (4·h), q, k, v, o (h → H·d, h → KV·d twice, H·d → h) without biases,
// q_norm and k_norm of d (v_norm has no weights), gate, up and down (3·h·I); std_bias and std_scale
// (2·h) when standardize; the pooler has no weights; embedding_projection h → the text width (its
// pre-projection norm has no weights). Clipped linears and attention biases are not in this count:
// refused.
std::vector<std::string> gemma4_vision(const ModelConfig& c, FamilyCount& out, Int& total) {
  std::vector<std::string> missing;
  auto num = [&](const char* k) {
    auto it = c.vision.find(k);
    Int v = it != c.vision.end() && it->second.kind == ConfigValue::Kind::Number ? it->second.number : Int();
    if (!v.positive()) missing.push_back(std::string("vision_config.") + k);
    return v;
  };
  auto flag = [&](const char* k) {
    auto it = c.vision.find(k);
    return it != c.vision.end() && it->second.kind == ConfigValue::Kind::Boolean && it->second.flag;
  };
  Int h = num("hidden_size"), I = num("intermediate_size"), L = num("num_hidden_layers"), H = num("num_attention_heads"),
      KV = num("num_key_value_heads"), d = num("head_dim"), p = num("patch_size"), P = num("position_embedding_size");
  for (const char* k : {"use_clipped_linears", "attention_bias"}) {
    if (flag(k)) missing.push_back(std::string("vision_config.") + k + " false (not in headcount's Gemma 4 tower)");
  }
  if (!missing.empty()) return missing;
  const bool standardize = flag("standardize");
  std::string hs = h.str(), Is = I.str(), ds = d.str();
  total = 0;
  auto part = [&](const char* name, Int v, const std::string& formula) {
    out.vision_parts.push_back({name, v.count().value_or(0), formula + " = " + commas(v.count().value_or(0))});
    total += v;
  };
  part("patch embedding", 3 * p * p * h, "3·" + p.str() + "²·" + hs);
  part("position embedding", 2 * P * h, "2·" + P.str() + "·" + hs);
  part("layers", L * (4 * h + h * H * d + 2 * h * KV * d + H * d * h + 2 * d + 3 * h * I),
       L.str() + " · (4·" + hs + " + " + hs + "·" + H.str() + "·" + ds + " + 2·" + hs + "·" + KV.str() + "·" + ds + " + " +
           H.str() + "·" + ds + "·" + hs + " + 2·" + ds + " + 3·" + hs + "·" + Is + ")");
  if (standardize) part("standardize", 2 * h, "2·" + hs + " (std_bias, std_scale)");
  part("projector", h * c.hidden, hs + "·" + c.hidden.str() + " (embedding_projection)");
  return missing;
}

// The vision tower of a wrapper whose row counts one, added beside the language model.
void add_vision(const Family& family, const ModelConfig& c, FamilyCount& f) {
  if (family.vision == Vision::None || c.vision.empty()) return;
  Int vision;
  const bool qwen = family.vision == Vision::Qwen3VL || family.vision == Vision::Qwen35;
  std::vector<std::string> missing = qwen ? qwen3_vl_vision(c, f, vision, family.vision == Vision::Qwen3VL)
                                     : family.vision == Vision::Gemma4 ? gemma4_vision(c, f, vision)
                                                                       : siglip_vision(c, f, vision);
  if (!missing.empty()) {
    std::string list;
    for (const auto& k : missing) list += (list.empty() ? "" : ", ") + k;
    const char* tower = family.vision == Vision::Qwen35    ? "Qwen3.5"
                        : qwen                             ? "Qwen3-VL"
                        : family.vision == Vision::Gemma4 ? "Gemma 4"
                                                           : "Gemma 3";
    throw InputError("model config '" + c.file + "': the " + tower + " vision tower needs a number the config does not give (" +
                     list + ")");
  }
  Int sum = vision + Int::of_unsigned(f.total);
  if (!vision.non_negative() || !sum.non_negative()) {
    throw InputError("model config '" + c.file + "': the vision tower's count does not fit in 64 bits");
  }
  f.vision_total = *vision.count();
  f.total_with_vision = sum.count();
}

}  // namespace

FamilyCount family_count_or_explain(const ModelConfig& config) {
  const Family* family = find_family(config.family);
  ModelConfig estimated;
  Family row;
  if (!family) {
    // Not refused: counted from the common field names, as an estimate that says what it assumed.
    estimated = config;
    row = estimate_row(config);
    estimated.family = config.model_type;
    if (row.kv_heads_default && !estimated.kv_heads && estimated.heads) {
      estimated.kv_heads = estimated.heads;
      estimated.derived_from["kv_heads"] = "num_attention_heads";
    }
    if (!estimated.tied) estimated.tied = false;
    family = &row;
  }
  const ModelConfig& c = family == &row ? estimated : config;
  const bool estimate = family == &row;
  const std::string name = estimate ? "estimate's" : c.family == c.model_type ? c.model_type : c.family + " (model_type " + c.model_type + ")";
  for (const auto& k : estimate ? std::vector<std::string>{} : c.count_keys) {
    if (std::find(family->reads.begin(), family->reads.end(), k) == family->reads.end()) {
      throw InputError("model config '" + c.file + "': '" + k + "' changes the parameter count, and headcount's " + name +
                       " formula does not read it; counting without it would be a guess");
    }
  }
  Counter counter(*family, c);
  auto f = counter.run();
  if (f && !estimate) {
    add_vision(*family, c, *f);
    std::string list;
    for (const auto& d : c.defaulted) list += (list.empty() ? "" : ", ") + d;
    if (!list.empty()) f->notes.push_back("not in the config, so " + family->defaults_from + "'s defaults: " + list);
  }
  if (f && estimate) {
    f->estimate = true;
    f->family = "Estimate";
    f->estimated_as = row.name.substr(std::string("an estimate: ").size());
    f->not_understood = not_understood(c, row);
    f->notes.insert(f->notes.begin(), "an estimate: headcount does not know the model_type '" + c.model_type + "'; it read the config as " +
                                          f->estimated_as + " from the common field names" +
                                          (config.tied ? "" : ", with an untied LM head (tie_word_embeddings not given)"));
    std::string list;
    for (const auto& k : f->not_understood) list += (list.empty() ? "" : ", ") + k;
    if (!list.empty()) f->notes.insert(f->notes.begin() + 1, "not understood (each may change the count, and the estimate leaves it out): " + list);
  }
  if (!f) {
    if (!counter.error().empty()) throw InputError("model config '" + c.file + "': " + counter.error());
    std::string missing;
    std::vector<std::pair<const char*, Int>> fields = {{"layers", c.layers}, {"hidden", c.hidden}, {"heads", c.heads},
                                                       {"vocab", c.vocab}, {"intermediate", c.intermediate}};
    std::vector<std::string> keys;
    for (const auto& [field, v] : fields) {
      if (v.positive()) continue;
      auto it = c.key_of.find(field);
      keys.push_back(it != c.key_of.end() ? it->second : std::string(field));
    }
    for (const auto& k : counter.missing()) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    for (const auto& k : keys) missing += (missing.empty() ? "" : ", ") + k;
    throw InputError("model config '" + c.file + "': the " + name + " formula needs a number the config does not give" +
                     (missing.empty() ? std::string(" (or one that does not fit in 64 bits)") : " (" + missing + ")"));
  }
  return *f;
}

}  // namespace headcount
