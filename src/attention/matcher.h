// matcher.h: the attention matcher's state and steps (internal to the attention stage).
//
// One Matcher runs over one model: run() looks at every Softmax (unfused.cpp) and every fused
// attention operator (fused.cpp), settles each block's Q/K/V/O shares (match.cpp) and accounts
// for every Softmax. All walks spend from one VisitBudget, so matching stays linear.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "headcount/attention.h"
#include "projections.h"
#include "../shapes.h"

namespace headcount::detail {

// Sums of shares: a hostile graph can route one huge tensor into many projections, so a count
// that does not fit in 64 bits refuses the model (InputError) instead of wrapping.
uint64_t plus(uint64_t a, uint64_t b);
// What a block's shares claim of each tensor, by weight index (match.cpp); a sum past 64 bits
// saturates and sets *overflow when given.
std::vector<std::pair<int, uint64_t>> block_claims(const AttentionBlock& b, bool* overflow);
// Widths add as checked integers; unknown (0) when a sum does not fit.
int64_t plus_width(int64_t a, int64_t b);
// Whether a node is a fused attention operator that matching reads (fused.cpp).
bool is_fused_attention(const NodeRec& n);
// A node's name, or its op type and first output when it has none.
std::string node_name(const Model& m, int ni);

// The sizes Q and K contribute where they meet in the scores: the axes the core contracts, read
// from the operands' dims. Unknown unless the graph states them.
struct CoreSizes {
  Int q, k;
};

// What the walk from a Softmax back to MatMul(Q, Kᵀ) passed (unfused.cpp).
struct ScorePath {
  int scores = -1;                 // the MatMul, FusedMatMul or Einsum of Q and Kᵀ
  std::vector<std::string> steps;  // the ops after it, in order: "Div", "Tanh", "Add(mask)", ...
  std::vector<int> nodes;          // the nodes of those steps
  std::vector<std::pair<int, ExtraRole>> learned;  // learned tensors on the path (weight index, role)
  std::string why;                 // where and why the walk stopped, when it found no scores
};

// One role's raw result before shares are settled; `present` is false when the role has no
// projection to look for (or its search failed and was turned into a note).
struct RoleHit {
  ProjectionHit hit;
  bool present = false;
};

class Matcher {
 public:
  explicit Matcher(ShapeOracle& shapes)
      : m_(shapes.model()), shapes_(shapes), budget_(m_), walker_(shapes_, budget_) {}

  AttentionResult run();

 private:
  const Model& m_;
  ShapeOracle& shapes_;  // the audit's (SharedShapes)
  VisitBudget budget_;  // every walk of the matcher spends from it
  ProjectionWalker walker_;
  // core Softmax -> (graph, Concat node) for cores whose output is concatenated with other heads'.
  std::map<int, std::pair<int, int>> head_concat_;

  // ---- unfused.cpp: MatMul(Q, K^T) -> [scale] -> [mask] -> Softmax -> MatMul(., V) ----

  ScorePath walk_scores(int g, Name value, int depth);
  // The steps of walk_scores() at a step that joins the scores with other operands: the operand
  // that leads back to the scores, then what the others are (learned tensors into r.learned; the
  // step's label, "mask", "sink", ..., returned).
  ScorePath walk_joined(int g, int p, int depth);
  std::string learned_operands(int g, const NodeRec& n, int on_path, ScorePath& r);
  // Where an operand beside the score path comes from: a weight reached through shape ops
  // (`direct`), or a table looked up by a Gather with run-time indices (`looked_up`).
  struct LearnedSource {
    int weight = -1;
    bool direct = false;
    bool looked_up = false;
  };
  LearnedSource learned_source(int g, Name value, int depth);
  int find_values_matmul(int g, Name value, int depth);
  // Whether `value` is `source` or is made from it by the casts, dropouts and masks that may sit
  // between a Softmax and the MatMul with V.
  bool leads_from(int g, Name value, std::string_view source, int depth);
  std::optional<AttentionBlock> unfused(int g, int softmax, std::string* why);
  // The steps of unfused(): the values Q, K and V enter the core as; the projections behind them
  // (false and *why set when one is missing); the block with its score path; the K/V heads and
  // head sizes the core's operands state when K or V comes unprojected from a graph input.
  struct CoreValues {
    Name q, k, v;
  };
  CoreValues core_values(int g, const NodeRec& sm, const NodeRec& qkn, const NodeRec& avn);
  bool find_roles(int g, const CoreValues& c, RoleHit& q, RoleHit& k, RoleHit& v, std::string* why);
  AttentionBlock block_of_core(int softmax, int qk, const ScorePath& path) const;
  void unprojected_heads(int g, AttentionBlock& b, const CoreValues& c, const RoleHit& k, const RoleHit& v,
                         const CoreSizes& core, const NodeRec& avn);
  // The Concat an attention output reaches through shape-only ops, or -1.
  int concat_after(int g, Name value);
  // Blocks whose cores feed one Concat are the heads of one block: their Q/K/V projections add up,
  // and the output projection is found after the Concat.
  void merge_per_head_cores(AttentionResult& r);
  // Heads of an unfused block: per-head projections, else the head-splitting Reshape on Q.
  void infer_heads_unfused(AttentionBlock& b, const ProjectionHit& q, const ProjectionHit& k, const ProjectionHit& v,
                           CoreSizes core);
  // K/V heads of a block whose K comes unprojected from a graph input, from that input's declared
  // shape [batch, kv_heads, sequence, head_size]; left unknown unless the shape proves it.
  void kv_heads_from_input(int g, AttentionBlock& b, std::string_view input);
  // The contracted sizes of a scores node MatMul(Q, Kᵀ) (or FusedMatMul, Einsum) whose operands
  // as the core sees them are q_value and k_value.
  CoreSizes contracted_sizes(int g, const NodeRec& scores, Name q_value,
                             Name k_value) const;

  // ---- latent.cpp: multi-head latent attention ----

  // A norm (LayerNorm or RMSNorm, one op or written out) whose output is `value`: its input and
  // its learned scale and bias.
  struct NormHit {
    std::string input;
    std::vector<int> weights;
  };
  std::optional<NormHit> norm_before(int g, Name value);
  // Why a core whose K and V are one and the same normed part of a projection is latent attention
  // with its up projection absorbed into Q and O (the form inference engines run), or "".
  std::string absorbed_latent(int g, Name k_value, Name v_value);
  // Whether `value` is computed (at any distance, within a bounded walk) from node's output.
  bool reaches(int g, Name value, int node);
  // Reads the block as latent attention when the whole structure is proven: rewrites its Q/K/V
  // shares, heads, head sizes and kind, and sets b.latent. Leaves it as it is otherwise.
  void latent(int g, AttentionBlock& b, const ProjectionHit& q, const ProjectionHit& v, Name k_value,
              Name v_value);
  // The steps of latent(): the K/V form (down projection, norm, ranks and head sizes), the Q form,
  // the Q/K/V shares it counts, and the block's heads, kind, norms and latent description.
  struct LatentKV {
    NormHit norm;
    ProjectionHit down;
    Int h, qk, kv_rank, rope, nope, vd;
  };
  struct LatentQ {
    ProjectionHit up, down;
    std::optional<NormHit> norm;  // set when Q goes through a latent: down, norm, up
  };
  std::optional<LatentKV> latent_kv(int g, const AttentionBlock& b, const ProjectionHit& v, Name k_value,
                                    Name v_value);
  std::optional<LatentQ> latent_q(int g, const ProjectionHit& q);
  bool latent_shares(const LatentKV& kv, const LatentQ& lq, const ProjectionHit& v, Projection& nq, Projection& nk,
                     Projection& nv);
  void set_latent(int g, AttentionBlock& b, const LatentKV& kv, const LatentQ& lq, const ProjectionHit& v);

  // ---- fused.cpp: the fused operators ----

  AttentionBlock fused(int g, int ni);
  // LongformerAttention has a second packed Q/K/V set for its global tokens (inputs 4 and 5):
  // parameters of the same block, split in thirds like the first set.
  // Heads, K/V heads and head sizes of a fused block: attributes first, then what the shapes of
  // its inputs and caches state, then (ONNX Attention) the Reshape upstream of Q.
  void fused_heads(int g, const NodeRec& n, const char* heads_attr, const char* kv_attr, int past_key,
                   int past_value, Int heads, Int kv_heads, AttentionBlock& b, const ProjectionHit& qh,
                   const ProjectionHit& kh, const ProjectionHit& vh);
  void add_global_weights(int g, const NodeRec& n, int weight_slot, int bias_slot, AttentionBlock& b);

  // ---- match.cpp: shares of packed tensors, per-head sums, kind, widths, names and totals ----

  // The activation behind a projection input, looking through quantize/dequantize pairs and casts,
  // so that Q and K fed by one tensor count as self-attention.
  std::string source_of(int g, std::string value);
  void assemble(int g, AttentionBlock& b, RoleHit& q, RoleHit& k, RoleHit& v, RoleHit& o);
  // Turns one hit into a Projection with its tensor shares.
  void fill(Projection& p, const ProjectionHit& hit);
  // The norms the walks passed on Q and K between projection and core (QK-norm): extras.
  void add_norm_extras(AttentionBlock& b, const RoleHit& q, const RoleHit& k) const;
  // A learned non-Q/K/V/O parameter of the block (once per tensor; integer constants are not).
  void add_extra(AttentionBlock& b, int weight, ExtraRole role) const;
  // A note naming the projections whose weights are graph inputs (fed at run time, not stored).
  void note_weight_inputs(AttentionBlock& b) const;
  // A note for each weight tensor that several projections of the block use whole.
  void note_shared_weights(AttentionBlock& b) const;
  static std::string common_prefix(const std::vector<std::string>& names);
  // A readable name: the common prefix of the tensor names only this block uses (exporters keep
  // module names on biases even when weights become onnx::MatMul_123), else the core's node path.
  std::string block_name(const AttentionBlock& b, const std::vector<int>& blocks_using);
  void finish(AttentionResult& r);
};

}  // namespace headcount::detail
