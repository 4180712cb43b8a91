// cost.cpp: the K/V cache and the MACs per token, from the matched blocks and the weight shapes.
#include "headcount/cost.h"

#include "headcount/checkpoint.h"

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

Cost estimate_cost(const Model& model, const AttentionResult& attention, const ExpertResult& experts, const MixerResult& mixers,
                   const Composition& composition, const CostOptions& options) {
  Cost c;
  c.context = options.context;
  c.batch = options.batch;
  bool overflow = false;
  std::vector<bool> projection_weights(model.weights.size(), false);  // counted per block, not again as products of their own
  uint64_t full_mha = 0;
  bool grouped = false;
  std::vector<std::string> overflowing_scores;  // blocks whose score MACs do not fit in 64 bits

  for (const auto& b : attention.blocks) {
    BlockCost bc;
    bc.block = b.index;
    bc.cross = b.kind == "cross";
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(r).tensors) {
        projection_weights[static_cast<size_t>(t.weight)] = true;
      }
    }
    // Projection MACs: one per weight element of Q, K, V and O, for every token.
    // A weight fed as a graph input is not stored but multiplies all the same: its declared shape.
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      const Projection& p = b.projection(r);
      uint64_t macs = p.weight;
      if (!p.weight_input.empty() && p.in_width > 0 && p.out_width > 0 &&
          mul_overflows(static_cast<uint64_t>(p.in_width), static_cast<uint64_t>(p.out_width), &macs)) {
        overflow = true;
      }
      add_to(bc.projection_macs, macs, overflow);
    }

    // K and V features per token: the projections' output widths, else heads x head size.
    const std::optional<int64_t> dk = b.k_head_dim ? b.k_head_dim : b.head_dim;
    const std::optional<int64_t> dv = b.v_head_dim ? b.v_head_dim : b.head_dim;
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
    bc.k_width = width_of(b.k, dk);
    bc.v_width = width_of(b.v, dv);
    Int expanded;  // latent attention: the full K and V features the graph computes
    if (b.latent) {
      expanded = (Int(bc.k_width) + Int(bc.v_width)).positive() ? Int(bc.k_width) + Int(bc.v_width) : Int();
      bc.k_width = (Int(b.latent->kv_rank) + Int(b.latent->rope_dim)).opt();
      if (!bc.k_width) width_overflow = true;  // both ranks are known: only their sum can fail
      bc.v_width = 0;
    }

    // K/V read straight from a graph input another block already reads: one cache.
    if (!b.k.from_input.empty()) {
      for (const auto& earlier : c.blocks) {
        const AttentionBlock& eb = attention.blocks[static_cast<size_t>(earlier.block)];
        if (eb.k.from_input == b.k.from_input && eb.v.from_input == b.v.from_input) {
          bc.shared_with = earlier.shared_with >= 0 ? earlier.shared_with : earlier.block;
          break;
        }
      }
    }

    // The element size: --kv-dtype, else the type the graph computes K in.
    if (options.kv_bits > 0) {
      bc.bits = options.kv_bits;
      bc.dtype = options.kv_dtype;
      bc.dtype_from = "--kv-dtype";
    } else if (!b.k.tensors.empty()) {
      const Weight& w = model.weights[static_cast<size_t>(b.k.tensors.front().weight)];
      const Weight* scale = is_float_dtype(w.dtype) ? nullptr : dequantization_scale(model, w);
      if (is_float_dtype(w.dtype)) {
        bc.bits = dtype_bits(w.dtype);
        bc.dtype = dtype_name(w.dtype);
        bc.dtype_from = "the K projection's weight '" + std::string(w.name) + "'";
      } else if (scale) {
        bc.bits = dtype_bits(scale->dtype);
        bc.dtype = dtype_name(scale->dtype);
        bc.dtype_from = "the scale '" + std::string(scale->name) + "' that dequantizes the K projection's weight";
      } else if (model.checkpoint && model.checkpoint->format == "gguf") {
        bc.bits = 16;  // llama.cpp's cache type unless its --cache-type-k says otherwise
        bc.dtype = "float16";
        bc.dtype_from = "llama.cpp's default K/V cache type (f16) for a GGUF model (--kv-dtype sets another)";
      } else {
        bc.dtype_from = "unknown: the K projection's weight '" + std::string(w.name) + "' is " + dtype_name(w.dtype) +
                        ", not the type K is computed in (give --kv-dtype)";
      }
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
    if (bc.kv_bytes_per_token && expanded.positive()) {
      Int bits = expanded * Int(bc.bits);
      if (bits && *bits >= 0) {
        bc.expanded_kv_bytes_per_token = (static_cast<uint64_t>(*bits) + 7) / 8;
        c.notes.push_back("block " + std::to_string(b.index) + " is latent attention: a decoder caches its rank-" +
                          std::to_string(b.latent->kv_rank) + " latent and " + std::to_string(b.latent->rope_dim) +
                          "-wide RoPE key, " + with_commas(*bc.kv_bytes_per_token) +
                          " bytes per token (counted above); the graph computes full K and V of " + expanded.str() +
                          " values, " + with_commas(*bc.expanded_kv_bytes_per_token) +
                          " bytes per token, which is what a runtime that expands the latent before caching keeps");
      }
    }
    if (bc.kv_bytes_per_token && b.heads && b.kv_heads && *b.kv_heads > 0 && *b.kv_heads < *b.heads) {
      Int full = Int(static_cast<int64_t>(*bc.kv_bytes_per_token)) * Int(*b.heads);
      Int per = floor_div(full, Int(*b.kv_heads));
      if (per) bc.full_mha_bytes_per_token = static_cast<uint64_t>(*per);
      Int saved = (Int::of_unsigned(b.k.weight) + Int::of_unsigned(b.v.weight)) *
                  (Int(*b.heads) - Int(*b.kv_heads));
      Int saved_per = floor_div(saved, Int(*b.kv_heads));
      if (saved_per && *saved_per > 0 && b.k.found && b.v.found) add_to(c.kv_parameters_saved, static_cast<uint64_t>(*saved_per), overflow);
    }

    // Scores and the weighted sum: heads x d_k x context, and heads x d_v x context; a sliding
    // window caps the tokens at min(context, window).
    bc.window = b.window;
    uint64_t tokens = std::min<uint64_t>(options.context, INT64_MAX);
    if (b.window && *b.window > 0) tokens = std::min<uint64_t>(tokens, static_cast<uint64_t>(*b.window));
    bool scores_overflow = false;  // heads and head sizes known, the product past 64 bits
    if (b.heads && dk && dv) {
      Int per = Int(*b.heads) * (Int(*dk) + Int(*dv)) * Int(static_cast<int64_t>(tokens));
      if (per && *per >= 0) bc.score_macs = static_cast<uint64_t>(*per);
      else scores_overflow = *b.heads > 0 && *dk >= 0 && *dv >= 0;
    }
    if (!bc.score_macs) {
      c.macs_lower_bound = true;
      if (scores_overflow) {
        overflowing_scores.push_back(std::to_string(b.index));
        if (bc.unknown.empty()) bc.unknown = "its score MACs (heads × (d_k + d_v) × context) do not fit in 64 bits";
      } else if (bc.unknown.empty()) {
        bc.unknown = "its heads or head sizes are unknown";
      }
    }

    // Totals.
    add_to(c.macs_attention_projections, bc.projection_macs, overflow);
    if (bc.score_macs) add_to(c.macs_attention_scores, *bc.score_macs, overflow);
    if (bc.shared_with < 0) {
      if (!bc.kv_bytes_per_token) {
        c.kv_lower_bound = true;
      } else if (bc.cross) {
        add_to(c.cross_kv_bytes_per_encoder_token, *bc.kv_bytes_per_token, overflow);
      } else {
        add_to(c.kv_bytes_per_token, *bc.kv_bytes_per_token, overflow);
        uint64_t full = bc.full_mha_bytes_per_token ? *bc.full_mha_bytes_per_token : *bc.kv_bytes_per_token;
        add_to(full_mha, full, overflow);
        grouped = grouped || bc.full_mha_bytes_per_token.has_value();
      }
    }
    c.blocks.push_back(std::move(bc));
  }
  if (grouped) c.full_mha_kv_bytes_per_token = full_mha;
  if (!overflowing_scores.empty()) {
    c.notes.push_back("the attention scores of " + std::string(overflowing_scores.size() == 1 ? "block " : "blocks ") +
                      list_of(overflowing_scores) + " at a context of " + with_commas(options.context) +
                      " tokens do not fit in 64 bits: left out of the MACs, which are a lower bound");
  }

  // Every other matrix product with a stored weight: one MAC per weight element per token. An
  // embedding table (or its tied copy) in a product is the LM head; so is a weight of the
  // embedding's two sizes when the copy was not compared (--no-content).
  std::set<std::pair<int64_t, int64_t>> embedding_shapes;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (composition.part_of[i] == Part::Embeddings && w.dims.size() == 2) {
      embedding_shapes.insert({w.dims[0], w.dims[1]});
      embedding_shapes.insert({w.dims[1], w.dims[0]});
    }
  }
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
      if (lm_head) add_to(c.macs_lm_head, w->elements, overflow);
      else if (part == Part::FeedForward) add_to(c.macs_feed_forward, w->elements, overflow);
      else if (part == Part::Mixers) add_to(c.macs_mixers, w->elements, overflow);
      else add_to(c.macs_other, w->elements, overflow);
    }
  }
  // A checkpoint has no graph: every matrix of the feed-forward, the mixers and the LM head (by
  // their names) is one product per token.
  if (model.checkpoint) {
    bool routed = false;
    for (size_t i = 0; i < model.weights.size(); ++i) {
      const Weight& w = model.weights[i];
      if (projection_weights[i] || !w.parameter || w.dims.size() < 2) continue;
      Part part = composition.part_of[i];
      if (part == Part::LMHead) add_to(c.macs_lm_head, w.elements, overflow);
      else if (part == Part::FeedForward) add_to(c.macs_feed_forward, w.elements, overflow);
      else if (part == Part::Mixers) add_to(c.macs_mixers, w.elements, overflow);
      else if (part == Part::RoutedExperts) routed = true;
    }
    if (routed && experts.layers.empty()) {
      c.macs_lower_bound = true;
      c.notes.push_back("the routed experts' MACs are left out: a checkpoint's names do not say how many experts a token runs");
    }
  }
  // Routed experts: one MAC per parameter of each of the k experts a token runs.
  std::vector<std::string> unknown_layers;
  for (const auto& l : experts.layers) {
    Int k = l.top_k;
    Int per = l.expert ? k * Int::of_unsigned(*l.expert) : Int();
    if (auto n = per.count()) {
      add_to(c.macs_experts, *n, overflow);
    } else {
      c.macs_lower_bound = true;
      unknown_layers.push_back(std::to_string(l.index));
    }
  }
  if (!unknown_layers.empty()) {
    c.notes.push_back("the routed experts of MoE " + std::string(unknown_layers.size() == 1 ? "layer " : "layers ") + list_of(unknown_layers) +
                      " are left out of the MACs: the size of one expert or k is unknown");
  }
  for (uint64_t v : {c.macs_attention_projections, c.macs_attention_scores, c.macs_feed_forward, c.macs_experts,
                     c.macs_lm_head, c.macs_mixers, c.macs_other}) {
    add_to(c.macs_per_token, v, overflow);
  }
  // The mixers' recurrent state per sequence: constant in the context.
  for (const auto& mx : mixers.mixers) {
    if (!mx.state_bytes) {
      c.state_lower_bound = true;
      continue;
    }
    auto b = times(*mx.state_bytes, options.batch);
    if (!b || add_overflows(c.state_bytes, *b, &c.state_bytes)) overflow = true;
  }
  // The cache at the context: each block keeps min(context, window) tokens of K/V.
  {
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
    if (cached && !c.kv_bytes_at_context && !overflow) {
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
  if (auto p = times(c.macs_per_token, options.context)) c.prefill_macs = times(*p, options.batch);
  if (!c.prefill_macs && !overflow) {
    c.notes.push_back("the prefill MACs (MACs per token × " + with_commas(options.context) + " tokens" +
                      (options.batch > 1 ? " × " + with_commas(options.batch) + " sequences" : std::string()) +
                      ") do not fit in 64 bits");
  }
  if (overflow) {
    c.kv_bytes_at_context.reset();
    c.kv_window_saved_bytes.reset();
    c.prefill_macs.reset();
    c.notes.push_back("a total does not fit in 64 bits");
  }
  if (c.cross_kv_bytes_per_encoder_token) {
    c.notes.push_back("cross-attention K/V are computed once from the encoder's output: " +
                      with_commas(c.cross_kv_bytes_per_encoder_token) + " bytes per encoder token, apart from the cache");
  }
  return c;
}

}  // namespace headcount
