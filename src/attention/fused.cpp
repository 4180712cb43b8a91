// fused.cpp: the fused attention operators (com.microsoft Attention, MultiHeadAttention,
// GroupQueryAttention and their relatives, and the ONNX Attention operator).
//
// Each operator is one row of kFusedOps: which input slot holds which weight or bias, and which
// attributes give the heads. Matcher::fused() reads any row; a new operator is one more row.
#include "matcher.h"

namespace headcount::detail {
namespace {

// How one fused attention operator holds its projections and states its heads. Slots are input
// indices, -1 when the operator has none.
struct FusedOp {
  const char* domain;     // "com.microsoft", or "" for the ONNX operator
  const char* type;
  int packed_weight;      // [in, q + k + v] weight inside the op; -1: Q, K and V are projected
                          // upstream of inputs 0, 1 and 2 (a packed query when 1 and 2 are empty)
  int packed_bias;        // the [q + k + v] bias, of packed_weight or of the upstream projections
  int global_weight;      // a second packed weight set of the same block (LongformerAttention)
  int global_bias;
  const char* heads;      // attribute with the query heads
  const char* kv_heads;   // attribute with the key/value heads; nullptr: as many as query heads
};

// Slots as onnxruntime's ContribOperators.md and the ONNX operator spec (opset 23) give them.
const FusedOp kFusedOps[] = {
    // domain          type                               weight bias  global  gbias heads          kv_heads
    {"com.microsoft", "Attention",                        1,     2,    -1,     -1,   "num_heads",   nullptr},
    {"com.microsoft", "PackedAttention",                  1,     2,    -1,     -1,   "num_heads",   nullptr},
    {"com.microsoft", "QAttention",                       1,     2,    -1,     -1,   "num_heads",   nullptr},
    {"com.microsoft", "LongformerAttention",              1,     2,    4,      5,    "num_heads",   nullptr},
    {"com.microsoft", "MultiHeadAttention",               -1,    3,    -1,     -1,   "num_heads",   nullptr},
    {"com.microsoft", "PackedMultiHeadAttention",         -1,    3,    -1,     -1,   "num_heads",   nullptr},
    {"com.microsoft", "DecoderMaskedMultiHeadAttention",  -1,    10,   -1,     -1,   "num_heads",   nullptr},
    {"com.microsoft", "GroupQueryAttention",              -1,    -1,   -1,     -1,   "num_heads",   "kv_num_heads"},
    {"com.microsoft", "SparseAttention",                  -1,    -1,   -1,     -1,   "num_heads",   "kv_num_heads"},
    {"com.microsoft", "PagedAttention",                   -1,    -1,   -1,     -1,   "num_heads",   "kv_num_heads"},
    {"",              "Attention",                        -1,    -1,   -1,     -1,   "q_num_heads", "kv_num_heads"},
};

const FusedOp* fused_op(const onnx::NodeProto& n) {
  std::string_view domain = n.domain() == "ai.onnx" ? std::string_view() : std::string_view(n.domain());
  for (const FusedOp& op : kFusedOps) {
    if (domain == op.domain && n.op_type() == op.type) return &op;
  }
  return nullptr;
}

// A head count from an attribute: only a positive number is one.
Int heads_attribute(const onnx::NodeProto& n, const char* name) {
  Int h = name ? attr_int(n, name) : Int();
  return h.positive() ? h : Int();
}

}  // namespace

bool is_fused_attention(const onnx::NodeProto& n) { return fused_op(n) != nullptr; }

AttentionBlock Matcher::fused(int g, int ni) {
  const auto& n = *m_.nodes[ni].proto;
  const FusedOp& desc = *fused_op(n);
  const std::string& op = n.op_type();
  AttentionBlock b;
  b.form = op;
  b.core_node = ni;
  RoleHit q, k, v;
  Int heads = heads_attribute(n, desc.heads), kv_heads = heads_attribute(n, desc.kv_heads);
  auto input = [&](int i) -> std::string { return i >= 0 && i < n.input_size() ? input_of(n, i) : std::string(); };

  if (desc.packed_weight >= 0) {
    // Packed weight inside the op: [in, q + k + v], and its bias.
    auto w = walker_.weight_of(g, input(desc.packed_weight));
    if (!w) {
      b.notes.push_back(op + " weight input '" + input(desc.packed_weight) + "' is not a constant");
    } else {
      const Weight& tensor = m_.weights[w->weight];
      ProjectionHit packed;
      packed.node = ni;
      packed.weight = *w;
      packed.input = input(0);
      if (tensor.dims.size() == 2) {
        packed.in = tensor.dims[0];
        packed.out = tensor.dims[1];
      }
      if (auto bias = walker_.weight_of(g, input(desc.packed_bias))) packed.bias = bias->weight;
      std::vector<Int> sizes;
      if (auto qkv = detail::attr_ints(n, "qkv_hidden_sizes"); qkv && qkv->size() == 3) sizes.assign(qkv->begin(), qkv->end());
      else if (Int third = exact_div(packed.out, 3)) sizes = {third, third, third};
      Int offset = 0;
      RoleHit* roles[] = {&q, &k, &v};
      for (size_t i = 0; i < 3 && sizes.size() == 3; ++i) {
        roles[i]->hit = packed;
        roles[i]->hit.part.offset = offset;
        roles[i]->hit.part.length = sizes[i];
        roles[i]->present = true;
        offset += sizes[i];
      }
      if (sizes.empty()) b.notes.push_back("cannot split the packed weight of " + packed.out.str("unknown") + " outputs into Q, K and V");
    }
    b.kind = "self";
  } else {
    // Projections sit upstream of the op: walk back from query, key and value.
    q = {walker_.back(g, input(0)), true};
    bool packed_query = input(1).empty() && input(2).empty();
    if (packed_query) {
      if (q.hit.found()) {
        // [h·d + 2·h_kv·d] packed: d is the width over h + 2·h_kv.
        Int h = heads, hk = kv_heads ? kv_heads : heads;
        if (Int d = exact_div(q.hit.out, h + 2 * hk); d.positive()) {
          k = q;
          v = q;
          q.hit.part = Part{0, h * d, {}, {}};
          k.hit.part = Part{h * d, hk * d, {}, {}};
          v.hit.part = Part{h * d + hk * d, hk * d, {}, {}};
        } else {
          k = q;
          v = q;
        }
      }
    } else {
      k = {walker_.back(g, input(1)), true};
      v = {walker_.back(g, input(2)), true};
    }
    for (auto [name, r] : {std::pair<const char*, RoleHit*>{"Q", &q}, {"K", &k}, {"V", &v}}) {
      if (r->present && !r->hit.found()) {
        b.notes.push_back(std::string(name) + " projection not found: it " + r->hit.failure);
        r->present = false;
      }
    }
    // MultiHeadAttention-style ops keep the packed Q/K/V bias inside the op: input 3 for
    // (Packed)MultiHeadAttention, a later input for DecoderMaskedMultiHeadAttention. It is the
    // 1-D constant whose length is the sum of the three projections' widths.
    if (op == "MultiHeadAttention" || op == "PackedMultiHeadAttention" || op == "DecoderMaskedMultiHeadAttention") {
      auto width = [](const RoleHit* r) { return r->hit.part.length ? r->hit.part.length : r->hit.out; };
      Int want = 0;
      for (RoleHit* r : {&q, &k, &v}) {
        if (r->present) want += width(r);
      }
      for (int i = 3; i < n.input_size() && want.positive(); ++i) {
        auto bias = walker_.weight_of(g, input(i));
        if (!bias || bias->rows) continue;
        const Weight& w = m_.weights[bias->weight];
        if (w.dims.size() != 1 || w.elements != want.count() || !dtype_is_parameter_type(w.dtype)) continue;
        int64_t offset = 0;  // the widths add up to `want`, so no step overflows
        for (RoleHit* r : {&q, &k, &v}) {
          if (!r->present) continue;
          r->hit.bias = bias->weight;
          r->hit.bias_range = std::make_pair(offset, offset + *width(r));
          offset += *width(r);
        }
        break;
      }
    }
  }
  RoleHit o{walker_.forward(g, output_of(n, 0)), true};
  assemble(g, b, q, k, v, o);
  if (desc.global_weight >= 0) add_global_weights(g, n, desc.global_weight, desc.global_bias, b);
  if (heads) {
    b.heads = heads.opt();
    b.kv_heads = (kv_heads ? kv_heads : heads).opt();
    b.heads_from = "attribute " + std::string(desc.heads) + " of " + op + " '" +
                   node_name(m_, ni) + "'";
    if (kv_heads) b.heads_from += ", kv_num_heads " + kv_heads.str();
    if (b.q.out_width > 0) b.head_dim = exact_div(b.q.out_width, heads).opt();
    if (b.v.out_width > 0) b.v_head_dim = exact_div(b.v.out_width, Int(b.kv_heads)).opt();
  } else if (desc.domain[0] == '\0' && q.present && q.hit.found()) {
    // 4-D inputs [B, h, S, d]: the heads are in the Reshape that split Q upstream of the op.
    infer_heads_unfused(b, q.hit, k.hit, v.hit);
  } else if (desc.domain[0] == '\0') {
    b.heads_from = "unknown: ONNX Attention without q_num_heads takes heads from a 4-D input shape, which this "
                   "model does not declare";
  } else {
    b.heads_from = "unknown: " + op + " has no num_heads attribute";
  }
  return b;
}

void Matcher::add_global_weights(int g, const onnx::NodeProto& n, int weight_slot, int bias_slot, AttentionBlock& b) {
  auto w = walker_.weight_of(g, input_of(n, weight_slot));
  if (!w || w->rows || w->transposed) {
    b.notes.push_back(n.op_type() + " global weight input " + std::to_string(weight_slot) + " is not a constant: not counted");
    return;
  }
  const Weight& gw = m_.weights[w->weight];
  if (gw.dims.size() != 2 || gw.dims[1] % 3 != 0) {
    b.notes.push_back(n.op_type() + " global weight '" + gw.name + "' is not [in, 3·hidden]: not counted");
    return;
  }
  int64_t in = gw.dims[0], third = gw.dims[1] / 3;
  auto gb = walker_.weight_of(g, input_of(n, bias_slot));
  const Weight* bias = gb && !gb->rows && m_.weights[gb->weight].elements == static_cast<uint64_t>(3 * third)
                           ? &m_.weights[gb->weight] : nullptr;
  int i = 0;
  for (Role role : {Role::Q, Role::K, Role::V}) {
    Projection& p = b.projection(role);
    std::string cols = std::to_string(i * third) + ":" + std::to_string((i + 1) * third) + " of " + std::to_string(3 * third);
    TensorShare ws{w->weight, false, static_cast<uint64_t>(in) * static_cast<uint64_t>(third), "columns " + cols};
    p.tensors.push_back(ws);
    p.weight += ws.elements;
    if (bias) {
      TensorShare bs{static_cast<int>(bias - m_.weights.data()), true, static_cast<uint64_t>(third), "elements " + cols};
      p.tensors.push_back(bs);
      p.bias += bs.elements;
    }
    p.found = true;
    ++i;
  }
  b.notes.push_back("Q, K and V include the global-attention weights '" + gw.name + "' (inputs " + std::to_string(weight_slot) + " and " +
                    std::to_string(bias_slot) + ")");
}

}  // namespace headcount::detail
