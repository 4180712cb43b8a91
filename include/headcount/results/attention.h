// headcount/results/attention.h: what the attention stage finds: blocks, their Q/K/V/O projections, extras,
// the score path, windows, and the Softmaxes it could not place. Written by match_attention
// (src/attention/) and by a checkpoint's names (src/checkpoint/names.cpp); read by every later stage.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/model.h"

namespace headcount {

enum class Role { Q, K, V, O };
const char* role_name(Role r);  // "q", "k", "v", "o"

// One tensor's part in a projection: the whole tensor or a slice of a packed one.
struct TensorShare {
  int weight = -1;            // index into Model::weights
  bool bias = false;          // a bias vector rather than a weight matrix
  uint64_t elements = 0;      // elements of this share (a third of a packed QKV tensor, say)
  std::string slice;          // "" for the whole tensor, else e.g. "columns 0:32 of 96"
};

// A Q, K, V or O projection: weight and bias elements that belong to it.
struct Projection {
  bool found = false;
  uint64_t weight = 0;
  uint64_t bias = 0;
  int64_t in_width = 0;   // input features (0 when unknown)
  int64_t out_width = 0;  // output features (0 when unknown)
  std::string from_input;  // K or V that comes from this graph input unprojected (a cache, an
                           // encoder output): not found, and its projection lives elsewhere
  // The weight is this graph input, fed at run time: the projection is here (found, its widths
  // from the input's declared shape), and nothing of its weight is stored, so it adds 0.
  std::string weight_input;
  std::string bias_input;  // the same for a bias added to it: a graph input [out], not stored
  std::vector<TensorShare> tensors;
  uint64_t total() const { return weight + bias; }
};

// The learned attention parameters that are not Q/K/V/O weights or biases.
enum class ExtraRole {
  BiasK,         // add_bias_kv: a learned token concatenated onto K
  BiasV,         // ... and onto V
  RelativeBias,  // a relative-position bias table added to the scores (T5, DeBERTa)
  Sink,          // learned attention sinks: one logit per head, a column of the scores
  HeadScale,     // a per-head temperature or gate multiplying the scores
  LatentNorm,    // the norm (scale, bias) on a latent attention block's Q or K/V latent
  QNorm,         // a norm on Q between its projection and the scores (QK-norm: Qwen3, Gemma 3, OLMo 2)
  KNorm,         // ... and on K
};
// "bias_k", "bias_v", "relative_bias", "sink", "head_scale", "latent_norm", "q_norm", "k_norm"
const char* extra_role_name(ExtraRole r);

// One such parameter tensor of a block: counted in the block's total and in the attention total.
struct AttentionExtra {
  int weight = -1;  // index into Model::weights
  ExtraRole role = ExtraRole::BiasK;
  uint64_t elements = 0;
};

// Multi-head latent attention (DeepSeek-V2/V3, Kimi, GLM): Q through a low-rank latent
// (down, norm, up), K and V through one shared latent (down with a RoPE key split off, norm, up
// split into K and V). Each query head gets its own K and V from the latent, so heads x head
// size has nothing to do with the model width.
struct LatentAttention {
  int64_t q_rank = 0;     // Q's latent size; 0 when Q is one plain projection
  int64_t kv_rank = 0;    // the shared K/V latent a decoder caches
  int64_t rope_dim = 0;   // the decoupled RoPE key, one for all heads (0: none)
  int64_t qk_nope_dim = 0;  // per head: the part of Q/K made from the latent
  int64_t v_head_dim = 0;
  std::string from;       // the nodes it was read from, in words
};

struct AttentionBlock {
  int index = 0;
  std::string name;   // readable common prefix of its nodes or weights, else the core node's name
  std::string form;   // "unfused" or the fused op type ("Attention", "MultiHeadAttention", ...)
  std::string kind;   // "self" or "cross"
  std::optional<int64_t> heads;
  std::optional<int64_t> kv_heads;
  std::string heads_from;     // where the head count came from, or why it is unknown
  int64_t width = 0;          // input width of the Q projection
  std::optional<int64_t> head_dim;
  std::optional<int64_t> v_head_dim;
  std::optional<int64_t> k_head_dim;  // K's own per-head size when the graph states it separately
  Projection q, k, v, o;
  std::optional<LatentAttention> latent;  // set only when the whole latent structure is proven
  std::vector<AttentionExtra> extras;
  // The steps from MatMul(Q, Kᵀ) to the Softmax, e.g. MatMul, Div, Tanh, Mul, Add(mask), Softmax
  // (unfused blocks; empty for fused operators, which do it inside), and their nodes.
  std::vector<std::string> score_path;
  std::vector<int> score_nodes;  // indices into Model::nodes, in the same order
  // Sliding-window attention: each query attends to its last `window` tokens (itself included),
  // so a decoder keeps min(context, window) of them. Set only on evidence (find_windows), which
  // window_from names; null for full attention or when nothing says.
  std::optional<int64_t> window;
  std::string window_from;
  uint64_t total = 0;         // q + k + v + o totals, plus the extras
  uint64_t standard = 0;      // 4*width^2 (+ 4*width with biases): the textbook count; 0 when the
                              // width is unknown or its square does not fit in 64 bits
  bool has_bias = false;      // any projection has a bias
  int core_node = -1;         // the Softmax or fused node (index into Model::nodes)
  std::vector<int> merged_cores;  // further Softmaxes of the same block (one per head, merged)
  std::vector<std::string> notes;  // what the matcher could not see, in words
  // Shares refused by bound_claims: a tensor whose shares in this block summed to more than it
  // holds, counted whole once instead (in words, one per tensor; the count-exceeds-tensors finding).
  std::vector<std::string> overclaimed;
  const Projection& projection(Role r) const;
  Projection& projection(Role r);
};

// A Softmax that is not part of any block, and why.
struct UnmatchedSoftmax {
  int node = -1;
  std::string name;
  std::string reason;
};

struct AttentionResult {
  std::vector<AttentionBlock> blocks;
  std::vector<UnmatchedSoftmax> unmatched;
  uint64_t parameters = 0;  // elements in all Q/K/V/O projections, each tensor once
};

// The invariant every matcher's blocks keep: a block's shares of one tensor (a packed Q/K/V's
// slices, a latent kv_b's K and V) add up to at most the elements it stores, so no block or
// projection holds more parameters than the tensors it claims. A tensor whose shares sum to more
// (per-head arithmetic on an empty or hostile shape) is refused: its shares are replaced by the
// whole tensor under the first projection that claimed it, said in `overclaimed`, and the
// projections' and block's totals are summed again. Run by match_attention and named_attention.
void bound_claims(const Model& model, AttentionBlock& block);

}  // namespace headcount
