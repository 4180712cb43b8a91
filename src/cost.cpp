// cost.cpp: the K/V cache and the MACs per token, from the matched blocks and the weight shapes.
#include "headcount/cost.h"

#include "headcount/checkpoint_index.h"

#include <set>
#include <unordered_set>

#include "headcount/checked.h"
#include "headcount/error.h"
#include "headcount/numbers.h"
#include "ops.h"

namespace headcount {
namespace {

using T = onnx::TensorProto;


// Matrix products whose stored operand costs one MAC per weight element per token.
bool is_matrix_product(std::string_view op) {
  return op_has(op, Trait::MatrixProduct) || op == "Einsum"sv;
}

// The stored weight behind an operand, through the steps exporters put between a weight and its
// product (dequantization, a transpose, a cast), or null.
const Weight* weight_behind(const Model& m, int g, Name name) {
  for (int step = 0; step < 4 && !name.empty(); ++step) {
    if (const Weight* w = m.weight_for(g, name)) return w;
    int p = m.producer_of(g, name);
    if (p < 0) return nullptr;
    const auto& n = *m.nodes[static_cast<size_t>(p)].rec;
    std::string_view op = n.op_type();
    if (!op_has(op, Trait::Dequantize | Trait::LayoutOnly | Trait::Cast)) {
      return nullptr;
    }
    name = input_of(n, 0);
  }
  return nullptr;
}

// A quantized weight is computed with in the type of the scale that dequantizes it: input 1 of
// its DequantizeLinear, or the scales (input 2) of a MatMulNBits.
const Weight* dequantization_scale(const Model& m, const Weight& w) {
  for (int ni : w.consumers) {
    const auto& n = *m.nodes[static_cast<size_t>(ni)].rec;
    int slot = n.op_type() == "DequantizeLinear"sv && n.input_size() > 1 && n.input(0) == w.name ? 1
               : n.op_type() == "MatMulNBits"sv && n.input_size() > 2 && n.input(1) == w.name ? 2
                                                                                           : -1;
    if (slot < 0) continue;
    const Weight* s = m.weight_for(m.nodes[static_cast<size_t>(ni)].graph, n.input(slot));
    if (s && is_float_dtype(s->dtype)) return s;
  }
  return nullptr;
}

// a · b, or nullopt when it does not fit in 64 bits.
std::optional<uint64_t> times(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (mul_overflows(a, b, &r)) return std::nullopt;
  return r;
}

void add_to(uint64_t& sum, uint64_t v, bool& overflow) {
  if (add_overflows(sum, v, &sum)) overflow = true;
}

// "0, 1, 2", the first 8 and how many more.
std::string list_of(const std::vector<std::string>& items) {
  std::string list;
  for (size_t i = 0; i < items.size() && i < 8; ++i) list += (i ? ", " : "") + items[i];
  if (items.size() > 8) list += " and " + std::to_string(items.size() - 8) + " more";
  return list;
}

const onnx::ValueInfoProto* graph_input(const Model& m, std::string_view name) {
  for (const auto& vi : m.proto->graph().input()) {
    if (vi.name() == name) return &vi;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::pair<std::string, int>>& kv_dtypes() {
  static const std::vector<std::pair<std::string, int>> types = {
      {"float32", 32}, {"fp32", 32}, {"float16", 16}, {"fp16", 16}, {"bfloat16", 16}, {"bf16", 16},
      {"float8", 8},   {"fp8", 8},   {"int8", 8},     {"int4", 4}};
  return types;
}

int kv_dtype_bits(const std::string& name) {
  for (const auto& [n, bits] : kv_dtypes()) {
    if (n == name) return bits;
  }
  throw InputError("'" + name + "' is not a K/V cache type (float32, float16, bfloat16, float8, int8, int4)");
}

namespace {

// What the cost's steps share: the inputs, the cost being built, and whether a total overflowed.
struct CostState {
  const Model& model;
  const CostOptions& options;
  Cost& c;
  bool overflow = false;  // a total does not fit in 64 bits
};

// The sums over the attention blocks that are not fields of the cost.
struct AttentionSums {
  uint64_t full_mha = 0;  // the self-attention K/V per token with kv_heads = heads
  bool grouped = false;   // a block has fewer K/V heads than query heads
  std::vector<std::string> overflowing_scores;  // blocks whose score MACs do not fit in 64 bits
};

// The weights counted per block as Q/K/V/O, not again as products of their own.
std::vector<bool> projection_weights_of(const Model& model, const AttentionResult& attention) {
  std::vector<bool> projection_weights(model.weights.size(), false);
  for (const auto& b : attention.blocks) {
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(r).tensors) {
        projection_weights[static_cast<size_t>(t.weight)] = true;
      }
    }
  }
  return projection_weights;
}

// Projection MACs: one per weight element of Q, K, V and O, for every token.
// A weight fed as a graph input is not stored but multiplies all the same: its declared shape.
uint64_t projection_macs(const AttentionBlock& b, bool& overflow) {
  uint64_t sum = 0;
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    const Projection& p = b.projection(r);
    uint64_t macs = p.weight;
    if (!p.weight_input.empty() && p.in_width > 0 && p.out_width > 0 &&
        mul_overflows(static_cast<uint64_t>(p.in_width), static_cast<uint64_t>(p.out_width), &macs)) {
      overflow = true;
    }
    add_to(sum, macs, overflow);
  }
  return sum;
}

// The head sizes of K and of V: their own when the block has them, else the block's one.
std::optional<int64_t> k_head_size(const AttentionBlock& b) { return b.k_head_dim ? b.k_head_dim : b.head_dim; }
std::optional<int64_t> v_head_size(const AttentionBlock& b) { return b.v_head_dim ? b.v_head_dim : b.head_dim; }

// K and V features per token: the projections' output widths, else heads x head size. Latent
// attention caches its latent and RoPE key instead, and `expanded` gets the full K and V features
// the graph computes. Says whether heads x head size were known and their product past 64 bits.
bool kv_widths(const AttentionBlock& b, BlockCost& bc, Int& expanded) {
  bool width_overflow = false;  // heads x head size known, their product past 64 bits
  auto width_of = [&](const Projection& p, const std::optional<int64_t>& d) -> std::optional<int64_t> {
    if (p.found && p.out_width > 0) return p.out_width;
    if (b.kv_heads && d) {
      Int w = Int(*b.kv_heads) * Int(*d);
      if (w && *w > 0) return *w;
      if (!w && *b.kv_heads > 0 && *d > 0) width_overflow = true;
    }
    return std::nullopt;
  };
  bc.k_width = width_of(b.k, k_head_size(b));
  bc.v_width = width_of(b.v, v_head_size(b));
  if (b.latent) {
    expanded = (Int(bc.k_width) + Int(bc.v_width)).positive() ? Int(bc.k_width) + Int(bc.v_width) : Int();
    bc.k_width = (Int(b.latent->kv_rank) + Int(b.latent->rope_dim)).opt();
    if (!bc.k_width) width_overflow = true;  // both ranks are known: only their sum can fail
    bc.v_width = 0;
  }
  return width_overflow;
}

// K/V read straight from a graph input another block already reads: one cache. The block that
// counts it, or -1.
int shared_cache(const AttentionResult& attention, const std::vector<BlockCost>& earlier_blocks, const AttentionBlock& b) {
  if (b.k.from_input.empty()) return -1;
  for (const auto& earlier : earlier_blocks) {
    const AttentionBlock& eb = attention.blocks[static_cast<size_t>(earlier.block)];
    if (eb.k.from_input == b.k.from_input && eb.v.from_input == b.v.from_input) {
      return earlier.shared_with >= 0 ? earlier.shared_with : earlier.block;
    }
  }
  return -1;
}

// The type K is computed in, from its projection's stored weight: llama.cpp's default for a GGUF
// model (its cache is f16 whatever the weights' type, F32 included, unless --cache-type-k says
// otherwise), else the weight's own float type, the scale that dequantizes it, or why it is unknown.
void kv_dtype_from_weight(const Model& model, const AttentionBlock& b, BlockCost& bc) {
  const Weight& w = model.weights[static_cast<size_t>(b.k.tensors.front().weight)];
  const Weight* scale = is_float_dtype(w.dtype) ? nullptr : dequantization_scale(model, w);
  if (model.checkpoint && model.checkpoint->kind == FormatKind::Gguf) {
    bc.bits = 16;  // llama.cpp's cache type unless its --cache-type-k says otherwise
    bc.dtype = "float16";
    bc.dtype_from = "llama.cpp's default K/V cache type (f16) for a GGUF model, whatever its weights' type "
                    "(--kv-dtype sets another)";
  } else if (is_float_dtype(w.dtype)) {
    bc.bits = dtype_bits(w.dtype);
    bc.dtype = dtype_name(w.dtype);
    bc.dtype_from = "the K projection's weight '" + std::string(w.name) + "'";
  } else if (scale) {
    bc.bits = dtype_bits(scale->dtype);
    bc.dtype = dtype_name(scale->dtype);
    bc.dtype_from = "the scale '" + std::string(scale->name) + "' that dequantizes the K projection's weight";
  } else {
    bc.dtype_from = "unknown: the K projection's weight '" + std::string(w.name) + "' is " + dtype_name(w.dtype) +
                    ", not the type K is computed in (give --kv-dtype)";
  }
}

// The element size: --kv-dtype, else the type the graph computes K in.
void kv_dtype(const Model& model, const AttentionBlock& b, const CostOptions& options, BlockCost& bc) {
  if (options.kv_bits > 0) {
    bc.bits = options.kv_bits;
    bc.dtype = options.kv_dtype;
    bc.dtype_from = "--kv-dtype";
  } else if (!b.k.tensors.empty()) {
    kv_dtype_from_weight(model, b, bc);
  } else if (!b.k.from_input.empty() || !b.k.weight_input.empty()) {
    // K read from a graph input, or projected by a weight fed as one: that input's type.
    const std::string& name = b.k.from_input.empty() ? b.k.weight_input : b.k.from_input;
    const onnx::ValueInfoProto* in = graph_input(model, name);
    int32_t t = in && in->type().has_tensor_type() ? in->type().tensor_type().elem_type() : 0;
    if (is_float_dtype(t)) {
      bc.bits = dtype_bits(t);
      bc.dtype = dtype_name(t);
      bc.dtype_from = "the graph input '" + name + "'";
    } else {
      bc.dtype_from = "unknown: the graph input '" + name + "' has no float type (give --kv-dtype)";
    }
  } else {
    bc.dtype_from = "unknown: K has no projection or input to take its type from (give --kv-dtype)";
  }
}

// The K/V bytes per token, from the widths and the element size, or why they are unknown.
void kv_bytes(bool width_overflow, BlockCost& bc) {
  if ((!bc.k_width || !bc.v_width) && width_overflow) {
    bc.unknown = "its K/V widths (K/V heads × head size) do not fit in 64 bits";
  } else if (!bc.k_width || !bc.v_width) {
    bc.unknown = "its K/V widths are unknown (heads or head size not found)";
  } else if (bc.bits == 0) {
    bc.unknown = bc.dtype_from;
  } else {
    // (k + v) features x bits / 8, rounded up to whole bytes (4-bit caches of odd sizes).
    Int bits = (Int(*bc.k_width) + Int(*bc.v_width)) * Int(bc.bits);
    if (bits && *bits >= 0) bc.kv_bytes_per_token = (static_cast<uint64_t>(*bits) + 7) / 8;
    else bc.unknown = "its K/V size does not fit in 64 bits";
  }
}

// Latent attention: the bytes of the full K and V the graph computes, which a runtime that
// expands the latent before caching keeps, and a note that says so.
void expanded_kv_bytes(const AttentionBlock& b, const Int& expanded, BlockCost& bc, std::vector<std::string>& notes) {
  if (!bc.kv_bytes_per_token || !expanded.positive()) return;
  Int bits = expanded * Int(bc.bits);
  if (!bits || *bits < 0) return;
  bc.expanded_kv_bytes_per_token = (static_cast<uint64_t>(*bits) + 7) / 8;
  notes.push_back("block " + std::to_string(b.index) + " is latent attention: a decoder caches its rank-" +
                  std::to_string(b.latent->kv_rank) + " latent and " + std::to_string(b.latent->rope_dim) +
                  "-wide RoPE key, " + with_commas(*bc.kv_bytes_per_token) +
                  " bytes per token (counted above); the graph computes full K and V of " + expanded.str() +
                  " values, " + with_commas(*bc.expanded_kv_bytes_per_token) +
                  " bytes per token, which is what a runtime that expands the latent before caching keeps");
}

// Fewer K/V heads than query heads: the cache full multi-head attention would keep, and the K/V
// projection weights the grouping saves.
void grouped_kv(const AttentionBlock& b, BlockCost& bc, uint64_t& kv_parameters_saved, bool& overflow) {
  if (!bc.kv_bytes_per_token || !b.heads || !b.kv_heads || *b.kv_heads <= 0 || *b.kv_heads >= *b.heads) return;
  Int full = Int(static_cast<int64_t>(*bc.kv_bytes_per_token)) * Int(*b.heads);
  Int per = floor_div(full, Int(*b.kv_heads));
  if (per) bc.full_mha_bytes_per_token = static_cast<uint64_t>(*per);
  Int saved = (Int::of_unsigned(b.k.weight) + Int::of_unsigned(b.v.weight)) *
              (Int(*b.heads) - Int(*b.kv_heads));
  Int saved_per = floor_div(saved, Int(*b.kv_heads));
  if (saved_per && *saved_per > 0 && b.k.found && b.v.found) add_to(kv_parameters_saved, static_cast<uint64_t>(*saved_per), overflow);
}

// Scores and the weighted sum: heads x d_k x context, and heads x d_v x context; a sliding
// window caps the tokens at min(context, window).
void score_macs(const AttentionBlock& b, uint64_t context, BlockCost& bc, Cost& c,
                std::vector<std::string>& overflowing_scores) {
  const std::optional<int64_t> dk = k_head_size(b), dv = v_head_size(b);
  bc.window = b.window;
  uint64_t tokens = std::min<uint64_t>(context, INT64_MAX);
  if (b.window && *b.window > 0) tokens = std::min<uint64_t>(tokens, static_cast<uint64_t>(*b.window));
  bool scores_overflow = false;  // heads and head sizes known, the product past 64 bits
  if (b.heads && dk && dv) {
    Int per = Int(*b.heads) * (Int(*dk) + Int(*dv)) * Int(static_cast<int64_t>(tokens));
    if (per && *per >= 0) bc.score_macs = static_cast<uint64_t>(*per);
    else scores_overflow = *b.heads > 0 && *dk >= 0 && *dv >= 0;
  }
  if (bc.score_macs) return;
  c.macs_lower_bound = true;
  if (scores_overflow) {
    overflowing_scores.push_back(std::to_string(b.index));
    if (bc.unknown.empty()) bc.unknown = "its score MACs (heads × (d_k + d_v) × context) do not fit in 64 bits";
  } else if (bc.unknown.empty()) {
    bc.unknown = "its heads or head sizes are unknown";
  }
}

// One block's cost: its projections, its K/V cache and its scores.
BlockCost block_cost(CostState& s, const AttentionResult& attention, const AttentionBlock& b, AttentionSums& sums) {
  BlockCost bc;
  bc.block = b.index;
  bc.cross = b.kind == "cross";
  bc.projection_macs = projection_macs(b, s.overflow);
  Int expanded;  // latent attention: the full K and V features the graph computes
  bool width_overflow = kv_widths(b, bc, expanded);
  bc.shared_with = shared_cache(attention, s.c.blocks, b);
  kv_dtype(s.model, b, s.options, bc);
  kv_bytes(width_overflow, bc);
  expanded_kv_bytes(b, expanded, bc, s.c.notes);
  grouped_kv(b, bc, s.c.kv_parameters_saved, s.overflow);
  score_macs(b, s.options.context, bc, s.c, sums.overflowing_scores);
  return bc;
}

// A block's figures into the totals: its MACs, and its K/V once per cache.
void add_block_totals(const BlockCost& bc, CostState& s, AttentionSums& sums) {
  Cost& c = s.c;
  add_to(c.macs_attention_projections, bc.projection_macs, s.overflow);
  if (bc.score_macs) add_to(c.macs_attention_scores, *bc.score_macs, s.overflow);
  if (bc.shared_with >= 0) return;
  if (!bc.kv_bytes_per_token) {
    c.kv_lower_bound = true;
  } else if (bc.cross) {
    add_to(c.cross_kv_bytes_per_encoder_token, *bc.kv_bytes_per_token, s.overflow);
  } else {
    add_to(c.kv_bytes_per_token, *bc.kv_bytes_per_token, s.overflow);
    uint64_t full = bc.full_mha_bytes_per_token ? *bc.full_mha_bytes_per_token : *bc.kv_bytes_per_token;
    add_to(sums.full_mha, full, s.overflow);
    sums.grouped = sums.grouped || bc.full_mha_bytes_per_token.has_value();
  }
}

// Every attention block's cost, and their totals.
void count_attention(CostState& s, const AttentionResult& attention) {
  AttentionSums sums;
  for (const auto& b : attention.blocks) {
    BlockCost bc = block_cost(s, attention, b, sums);
    add_block_totals(bc, s, sums);
    s.c.blocks.push_back(std::move(bc));
  }
  if (sums.grouped) s.c.full_mha_kv_bytes_per_token = sums.full_mha;
  if (!sums.overflowing_scores.empty()) {
    s.c.notes.push_back("the attention scores of " + std::string(sums.overflowing_scores.size() == 1 ? "block " : "blocks ") +
                        list_of(sums.overflowing_scores) + " at a context of " + with_commas(s.options.context) +
                        " tokens do not fit in 64 bits: left out of the MACs, which are a lower bound");
  }
}

// The two sizes of every embedding table, either way round.
std::set<std::pair<int64_t, int64_t>> embedding_shapes_of(const Model& model, const Composition& composition) {
  std::set<std::pair<int64_t, int64_t>> embedding_shapes;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (composition.part_of[i] == Part::Embeddings && w.dims.size() == 2) {
      embedding_shapes.insert({w.dims[0], w.dims[1]});
      embedding_shapes.insert({w.dims[1], w.dims[0]});
    }
  }
  return embedding_shapes;
}

// Every other matrix product with a stored weight: one MAC per weight element per token. An
// embedding table (or its tied copy) in a product is the LM head; so is a weight of the
// embedding's two sizes when the copy was not compared (--no-content).
void count_graph_products(CostState& s, const Composition& composition, const std::vector<bool>& projection_weights) {
  const Model& model = s.model;
  Cost& c = s.c;
  const std::set<std::pair<int64_t, int64_t>> embedding_shapes = embedding_shapes_of(model, composition);
  for (size_t ni = 0; ni < model.nodes.size(); ++ni) {
    const auto& n = *model.nodes[ni].rec;
    if (!is_matrix_product(n.op_type())) continue;
    std::unordered_set<const Weight*> seen;  // a weight given twice to one node is one product
    for (const auto& in : n.input()) {
      if (in.empty()) continue;
      const Weight* w = weight_behind(model, model.nodes[ni].graph, in);
      if (!w || !w->parameter || (w->dims.size() < 2 && !w->packed) || !seen.insert(w).second) continue;
      size_t wi = static_cast<size_t>(w - model.weights.data());
      if (projection_weights[wi]) continue;
      Part part = composition.part_of[wi];
      bool lm_head = part == Part::Embeddings || part == Part::LMHead ||
                     (w->dims.size() == 2 && embedding_shapes.count({w->dims[0], w->dims[1]}));
      if (part == Part::RoutedExperts) continue;  // counted per layer below: only the k a token runs
      if (lm_head) add_to(c.macs_lm_head, w->elements, s.overflow);
      else if (part == Part::FeedForward) add_to(c.macs_feed_forward, w->elements, s.overflow);
      else if (part == Part::Mixers) add_to(c.macs_mixers, w->elements, s.overflow);
      else add_to(c.macs_other, w->elements, s.overflow);
    }
  }
}

// A checkpoint has no graph: every matrix of the feed-forward, the mixers and the LM head (by
// their names) is one product per token.
void count_checkpoint_products(CostState& s, const Composition& composition, const std::vector<bool>& projection_weights,
                               const ExpertResult& experts) {
  const Model& model = s.model;
  Cost& c = s.c;
  bool routed = false;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (projection_weights[i] || !w.parameter || w.dims.size() < 2) continue;
    Part part = composition.part_of[i];
    if (part == Part::LMHead) add_to(c.macs_lm_head, w.elements, s.overflow);
    else if (part == Part::FeedForward) add_to(c.macs_feed_forward, w.elements, s.overflow);
    else if (part == Part::Mixers) add_to(c.macs_mixers, w.elements, s.overflow);
    else if (part == Part::RoutedExperts) routed = true;
  }
  if (routed && experts.layers.empty()) {
    c.macs_lower_bound = true;
    c.notes.push_back("the routed experts' MACs are left out: a checkpoint's names do not say how many experts a token runs");
  }
}

// Routed experts: one MAC per parameter of each of the k experts a token runs.
void count_routed_experts(CostState& s, const ExpertResult& experts) {
  Cost& c = s.c;
  std::vector<std::string> unknown_layers;
  for (const auto& l : experts.layers) {
    Int k = l.top_k;
    Int per = l.expert ? k * Int::of_unsigned(*l.expert) : Int();
    if (auto n = per.count()) {
      add_to(c.macs_experts, *n, s.overflow);
    } else {
      c.macs_lower_bound = true;
      unknown_layers.push_back(std::to_string(l.index));
    }
  }
  if (!unknown_layers.empty()) {
    c.notes.push_back("the routed experts of MoE " + std::string(unknown_layers.size() == 1 ? "layer " : "layers ") + list_of(unknown_layers) +
                      " are left out of the MACs: the size of one expert or k is unknown");
  }
}

// The MACs per token: the sum of the parts'.
void total_macs(CostState& s) {
  Cost& c = s.c;
  for (uint64_t v : {c.macs_attention_projections, c.macs_attention_scores, c.macs_feed_forward, c.macs_experts,
                     c.macs_lm_head, c.macs_mixers, c.macs_other}) {
    add_to(c.macs_per_token, v, s.overflow);
  }
}

// The mixers' recurrent state per sequence: constant in the context.
void count_mixer_state(CostState& s, const MixerResult& mixers) {
  for (const auto& mx : mixers.mixers) {
    if (!mx.state_bytes) {
      s.c.state_lower_bound = true;
      continue;
    }
    auto b = times(*mx.state_bytes, s.options.batch);
    if (!b || add_overflows(s.c.state_bytes, *b, &s.c.state_bytes)) s.overflow = true;
  }
}

// The cache at the context: each block keeps min(context, window) tokens of K/V.
void cache_at_context(CostState& s) {
  Cost& c = s.c;
  const CostOptions& options = s.options;
  bool fits = true, fits_full = true, windowed = false;
  uint64_t kept = 0, full = 0;
  for (const auto& bc : c.blocks) {
    if (bc.shared_with >= 0 || bc.cross || !bc.kv_bytes_per_token) continue;
    uint64_t tokens = options.context;
    if (bc.window && *bc.window > 0 && static_cast<uint64_t>(*bc.window) < tokens) {
      tokens = static_cast<uint64_t>(*bc.window);
      windowed = true;
    }
    auto k = times(*bc.kv_bytes_per_token, tokens), f = times(*bc.kv_bytes_per_token, options.context);
    fits = fits && k && !add_overflows(kept, *k, &kept);
    fits_full = fits_full && f && !add_overflows(full, *f, &full);
  }
  bool cached = false;  // a block whose K/V per token is known
  for (const auto& bc : c.blocks) cached = cached || (bc.shared_with < 0 && !bc.cross && bc.kv_bytes_per_token);
  if (fits) c.kv_bytes_at_context = times(kept, options.batch);
  if (cached && !c.kv_bytes_at_context && !s.overflow) {
    c.notes.push_back("the K/V cache at " + with_commas(options.context) + " tokens" +
                      (options.batch > 1 ? " × " + with_commas(options.batch) + " sequences" : std::string()) +
                      " does not fit in 64 bits: no figure at the context");
  }
  if (fits_full) {
    if (windowed && c.kv_bytes_at_context) {
      if (auto all = times(full, options.batch)) c.kv_window_saved_bytes = *all - *c.kv_bytes_at_context;
    }
  }
}

// The prefill: the MACs per token for every token of the prompts.
void prefill_macs(CostState& s) {
  Cost& c = s.c;
  const CostOptions& options = s.options;
  if (auto p = times(c.macs_per_token, options.context)) c.prefill_macs = times(*p, options.batch);
  if (!c.prefill_macs && !s.overflow) {
    c.notes.push_back("the prefill MACs (MACs per token × " + with_commas(options.context) + " tokens" +
                      (options.batch > 1 ? " × " + with_commas(options.batch) + " sequences" : std::string()) +
                      ") do not fit in 64 bits");
  }
}

// A total past 64 bits voids the figures made from the totals; cross-attention's K/V are said
// apart from the cache.
void closing_notes(CostState& s) {
  Cost& c = s.c;
  if (s.overflow) {
    c.kv_bytes_at_context.reset();
    c.kv_window_saved_bytes.reset();
    c.prefill_macs.reset();
    c.notes.push_back("a total does not fit in 64 bits");
  }
  if (c.cross_kv_bytes_per_encoder_token) {
    c.notes.push_back("cross-attention K/V are computed once from the encoder's output: " +
                      with_commas(c.cross_kv_bytes_per_encoder_token) + " bytes per encoder token, apart from the cache");
  }
}

}  // namespace

Cost estimate_cost(const Model& model, const AttentionResult& attention, const ExpertResult& experts, const MixerResult& mixers,
                   const Composition& composition, const CostOptions& options) {
  Cost c;
  c.context = options.context;
  c.batch = options.batch;
  CostState s{model, options, c};
  // Counted per block, not again as products of their own.
  const std::vector<bool> projection_weights = projection_weights_of(model, attention);
  count_attention(s, attention);
  count_graph_products(s, composition, projection_weights);
  if (model.checkpoint) count_checkpoint_products(s, composition, projection_weights, experts);
  count_routed_experts(s, experts);
  total_macs(s);
  count_mixer_state(s, mixers);
  cache_at_context(s);
  prefill_macs(s);
  closing_notes(s);
  return c;
}

}  // namespace headcount
