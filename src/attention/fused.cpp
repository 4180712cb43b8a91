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
  std::string_view domain;  // "com.microsoft", or "" for the ONNX operator
  std::string_view type;
  int packed_weight;      // [in, q + k + v] weight inside the op; -1: Q, K and V are projected
                          // upstream of inputs 0, 1 and 2 (a packed query when 1 and 2 are empty)
  int packed_bias;        // the [q + k + v] bias, of packed_weight or of the upstream projections
  int global_weight;      // a second packed weight set of the same block (LongformerAttention)
  int global_bias;
  const char* heads;      // attribute with the query heads
  const char* kv_heads;   // attribute with the key/value heads; nullptr: as many as query heads
  int past_key;           // [B, h_kv, P, d] caches: their shapes give K/V heads and head sizes
  int past_value;
  bool causal;            // causal attention over a cache it extends: self-attention whatever
                          // its inputs are called (onnxruntime: "only supports causal and local")
};

// Slots as onnxruntime's ContribOperators.md and the ONNX operator spec (opset 23) give them.
constexpr FusedOp kFusedOps[] = {
    // domain          type                               weight bias global gbias heads          kv_heads        past k, v  causal
    {"com.microsoft", "Attention",                        1,     2,   -1,    -1,   "num_heads",   nullptr,        -1, -1, false},
    {"com.microsoft", "PackedAttention",                  1,     2,   -1,    -1,   "num_heads",   nullptr,        -1, -1, false},
    {"com.microsoft", "QAttention",                       1,     2,   -1,    -1,   "num_heads",   nullptr,        -1, -1, false},
    {"com.microsoft", "LongformerAttention",              1,     2,   4,     5,    "num_heads",   nullptr,        -1, -1, false},
    {"com.microsoft", "MultiHeadAttention",               -1,    3,   -1,    -1,   "num_heads",   nullptr,        6,  7, false},
    {"com.microsoft", "PackedMultiHeadAttention",         -1,    3,   -1,    -1,   "num_heads",   nullptr,        -1, -1, false},
    {"com.microsoft", "DecoderMaskedMultiHeadAttention",  -1,    10,  -1,    -1,   "num_heads",   nullptr,        5,  6, false},
    {"com.microsoft", "GroupQueryAttention",              -1,    -1,  -1,    -1,   "num_heads",   "kv_num_heads", 3,  4, true},
    {"com.microsoft", "SparseAttention",                  -1,    -1,  -1,    -1,   "num_heads",   "kv_num_heads", 3,  4, true},
    {"com.microsoft", "PagedAttention",                   -1,    -1,  -1,    -1,   "num_heads",   "kv_num_heads", -1, -1, true},
    {"",              "Attention",                        -1,    -1,  -1,    -1,   "q_num_heads", "kv_num_heads", 4,  5, false},
};
// Every fused attention op's type ends in "Attention" (checked at compile time), so any other
// node is told apart without a look at the table.
constexpr bool ends_in_attention(std::string_view type) {
  constexpr std::string_view kAttention = "Attention";
  return type.size() >= kAttention.size() && type.substr(type.size() - kAttention.size()) == kAttention;
}
constexpr bool every_type_ends_in_attention() {
  for (const FusedOp& op : kFusedOps) {
    if (!ends_in_attention(op.type)) return false;
  }
  return true;
}
static_assert(every_type_ends_in_attention(), "fused_op() looks only at op types ending in Attention");

const FusedOp* fused_op(const NodeRec& n) {
  if (!ends_in_attention(n.op_type())) return nullptr;
  std::string_view domain = n.domain() == "ai.onnx" ? std::string_view() : std::string_view(n.domain());
  for (const FusedOp& op : kFusedOps) {
    if (domain == op.domain && n.op_type() == op.type) return &op;
  }
  return nullptr;
}

// A head count from an attribute: only a positive number is one.
Int heads_attribute(const NodeRec& n, const char* name) {
  Int h = name ? attr_int(n, name) : Int();
  return h.positive() ? h : Int();
}

// What an input's shape says of heads: [B, h, L, d] has the heads on axis 1 and the head size
// last, a packed [B, S, h, 3, d] on axes 2 and 4; a 3-D [B, L, h·d] gives only its width.
struct InputShape {
  Int heads, head_size, width;
  std::string shape;  // "[?, 4, ?, 16]", for explanations
};

InputShape shape_of(const Dims& d) {
  InputShape s;
  s.shape = d.rank >= 0 ? format_ints(d.d) : "";
  if (d.rank == 4) s = {d.d[1], d.d[3], d.d[1] * d.d[3], s.shape};
  else if (d.rank == 5) s = {d.d[2], d.d[4], d.d[2] * d.d[4], s.shape};
  else if (d.rank == 3) s.width = d.d[2];
  if (!s.heads.positive()) s.heads = Int();
  if (!s.head_size.positive()) s.head_size = Int();
  if (!s.width.positive()) s.width = Int();
  return s;
}


// What the steps of Matcher::fused share: the operator, its row of kFusedOps, and the model,
// shapes and walker they read.
struct FusedSite {
  const Model& m;
  ShapeOracle& shapes;
  ProjectionWalker& walker;
  int g, ni;
  const NodeRec& n;
  const FusedOp& desc;
  std::string input(int i) const { return std::string(input_of(n, i)); }
};

// How the packed weight's outputs split into Q, K and V: qkv_hidden_sizes when stated, else
// thirds; empty (and a note) when neither splits it.
std::vector<Int> packed_sizes(const NodeRec& n, const ProjectionHit& packed, AttentionBlock& b) {
  std::vector<Int> sizes;
  auto qkv = detail::attr_ints(n, "qkv_hidden_sizes");
  if (qkv && qkv->size() == 3) {
    // Only sizes that are not negative and add up to the packed weight's outputs split it.
    Int sum = 0;
    bool valid = true;
    for (int64_t v : *qkv) {
      valid = valid && v >= 0;
      sum = sum + v;
    }
    if (valid && same(sum, packed.out)) sizes.assign(qkv->begin(), qkv->end());
    else b.notes.push_back("qkv_hidden_sizes " + format_ints(IntVector(qkv->begin(), qkv->end())) + " do not split the " +
                           packed.out.str("unknown") + " outputs of the packed weight");
  } else if (Int third = exact_div(packed.out, 3)) {
    sizes = {third, third, third};
  }
  if (sizes.empty() && !(qkv && qkv->size() == 3)) {
    b.notes.push_back("cannot split the packed weight of " + packed.out.str("unknown") + " outputs into Q, K and V");
  }
  return sizes;
}

// Packed weight inside the op: [in, q + k + v], and its bias; each role takes its part.
void packed_roles(const FusedSite& s, AttentionBlock& b, RoleHit& q, RoleHit& k, RoleHit& v) {
  const auto& n = s.n;
  std::string_view op = n.op_type();
  auto w = s.walker.weight_of(s.g, s.input(s.desc.packed_weight));
  // A packed weight fed as a graph input declared [in, q + k + v]: the projections are here,
  // nothing of them is stored.
  auto fed = w ? std::nullopt : s.walker.input_projection(s.g, s.ni, input_of(n, 0), input_of(n, s.desc.packed_weight), false);
  if (!w && !fed) {
    b.notes.push_back(std::string(op) + " weight input '" + s.input(s.desc.packed_weight) + "' is not a constant");
    return;
  }
  ProjectionHit packed;
  if (fed) {
    packed = *fed;
  } else {
    const Weight& tensor = s.m.weights[w->weight];
    packed.node = s.ni;
    packed.weight = *w;
    packed.input = s.input(0);
    if (tensor.dims.size() == 2) {
      packed.in = tensor.dims[0];
      packed.out = tensor.dims[1];
    }
  }
  if (auto bias = s.walker.weight_of(s.g, s.input(s.desc.packed_bias))) packed.bias = bias->weight;
  std::vector<Int> sizes = packed_sizes(n, packed, b);
  Int offset = 0;
  RoleHit* roles[] = {&q, &k, &v};
  for (size_t i = 0; i < 3 && sizes.size() == 3; ++i) {
    roles[i]->hit = packed;
    roles[i]->hit.part.offset = offset;
    roles[i]->hit.part.length = sizes[i];
    roles[i]->present = true;
    offset += sizes[i];
  }
}

// Projections sit upstream of the op: walk back from query, key and value.
void upstream_roles(const FusedSite& s, Int heads, Int kv_heads, AttentionBlock& b, RoleHit& q, RoleHit& k, RoleHit& v) {
  q = {s.walker.back(s.g, s.input(0)), true};
  bool packed_query = s.input(1).empty() && s.input(2).empty();
  if (packed_query) {
    if (!q.hit.found() && !q.hit.from_input.empty()) {
      // A packed query straight from a graph input carries K and V from that input too.
      k.hit.from_input = v.hit.from_input = q.hit.from_input;
    }
    if (q.hit.found()) {
      // [h·d + 2·h_kv·d] packed: d is the width over h + 2·h_kv.
      Int h = heads, hk = kv_heads ? kv_heads : heads;
      k = q;
      v = q;
      if (Int d = exact_div(q.hit.out, h + 2 * hk); d.positive()) {
        q.hit.part = Part{0, h * d, {}, {}};
        k.hit.part = Part{h * d, hk * d, {}, {}};
        v.hit.part = Part{h * d + hk * d, hk * d, {}, {}};
      }
    }
  } else {
    k = {s.walker.back(s.g, s.input(1)), true};
    v = {s.walker.back(s.g, s.input(2)), true};
  }
  for (auto [name, r] : {std::pair<const char*, RoleHit*>{"Q", &q}, {"K", &k}, {"V", &v}}) {
    if (!r->present || r->hit.found()) continue;
    r->present = false;
    if (r != &q && !r->hit.from_input.empty()) {
      b.notes.push_back(std::string(name) + " comes from the graph input '" + r->hit.from_input +
                        "' unprojected (an encoder output or a cache): its projection is not in this graph");
    } else {
      b.notes.push_back(std::string(name) + " projection not found: it " + r->hit.failure);
    }
  }
}

using BiasRanges = std::vector<std::pair<Role, std::pair<int64_t, int64_t>>>;  // role, [begin, end)

// The MultiHeadAttention family keeps the Q/K/V bias of its upstream projections inside the op:
// one [q + k + v] vector, laid out Q, K, V. Each role takes its slice, also a role whose K or V
// comes from an input: those elements are stored parameters of this block all the same (their
// ranges go to `unprojected_bias`). Returns the bias weight, or -1.
int packed_bias(const FusedSite& s, RoleHit& q, RoleHit& k, RoleHit& v, BiasRanges& unprojected_bias) {
  RoleHit* roles[] = {&q, &k, &v};
  Int widths[3];
  for (int i = 0; i < 3; ++i) {
    const RoleHit& r = *roles[i];
    if (r.present) widths[i] = r.hit.part.length ? r.hit.part.length : r.hit.out;
    else if (r.hit.found() || !r.hit.from_input.empty() || i == 0) widths[i] = shape_of(s.shapes.dims(s.g, s.input(i))).width;
  }
  auto bias = s.walker.weight_of(s.g, s.input(s.desc.packed_bias));
  const Weight* w = bias && !bias->rows ? &s.m.weights[bias->weight] : nullptr;
  if (!w || w->dims.size() != 1 || !dtype_is_parameter_type(w->dtype)) return -1;
  Int total = Int::of_unsigned(w->elements);
  // The op has one head count for Q and K: K's width is Q's, and V takes the rest.
  if (!widths[1] && !s.desc.kv_heads && roles[1]->hit.found() == false && !roles[1]->hit.from_input.empty()) widths[1] = widths[0];
  if (!widths[2] && widths[0] && widths[1] && !roles[2]->hit.from_input.empty()) widths[2] = total - widths[0] - widths[1];
  if (!same(widths[0] + widths[1] + widths[2], total) || !widths[0].positive()) return -1;
  int64_t offset = 0;  // the widths add up to the bias length, so no step overflows
  for (int i = 0; i < 3; ++i) {
    if (!widths[i].positive()) continue;
    std::pair<int64_t, int64_t> range{offset, offset + *widths[i]};
    offset += *widths[i];
    if (roles[i]->present) {
      roles[i]->hit.bias = bias->weight;
      roles[i]->hit.bias_range = range;
    } else {
      unprojected_bias.push_back({i == 0 ? Role::Q : i == 1 ? Role::K : Role::V, range});
    }
  }
  return bias->weight;
}

// The slices of the packed bias that belong to roles without a projection here.
void add_unprojected_bias(const Model& m, AttentionBlock& b, int bias_weight, const BiasRanges& unprojected_bias) {
  for (auto& [role, range] : unprojected_bias) {
    const Weight& w = m.weights[static_cast<size_t>(bias_weight)];
    uint64_t len = static_cast<uint64_t>(range.second - range.first);
    Projection& p = b.projection(role);
    p.tensors.push_back({bias_weight, true, len,
                         "elements " + std::to_string(range.first) + ":" + std::to_string(range.second) + " of " +
                             std::to_string(w.elements)});
    p.bias = plus(p.bias, len);
  }
}
}  // namespace

bool is_fused_attention(const NodeRec& n) { return fused_op(n) != nullptr; }

AttentionBlock Matcher::fused(int g, int ni) {
  const auto& n = *m_.nodes[ni].rec;
  const FusedOp& desc = *fused_op(n);
  const FusedSite site{m_, shapes_, walker_, g, ni, n, desc};
  AttentionBlock b;
  b.form = n.op_type();
  b.core_node = ni;
  RoleHit q, k, v;
  Int heads = heads_attribute(n, desc.heads), kv_heads = heads_attribute(n, desc.kv_heads);

  if (desc.packed_weight >= 0) {
    packed_roles(site, b, q, k, v);
    b.kind = "self";
  } else {
    upstream_roles(site, heads, kv_heads, b, q, k, v);
  }
  BiasRanges unprojected_bias;
  int bias_weight = -1;
  if (desc.packed_weight < 0 && desc.packed_bias >= 0) bias_weight = packed_bias(site, q, k, v, unprojected_bias);
  RoleHit o{walker_.forward(g, output_of(n, 0)), true};
  if (desc.causal) b.kind = "self";
  assemble(g, b, q, k, v, o);
  add_norm_extras(b, q, k);
  add_unprojected_bias(m_, b, bias_weight, unprojected_bias);
  if (!q.present && !q.hit.from_input.empty()) b.q.from_input = q.hit.from_input;
  if (!k.present && !k.hit.from_input.empty()) b.k.from_input = k.hit.from_input;
  if (!v.present && !v.hit.from_input.empty()) b.v.from_input = v.hit.from_input;
  if (desc.global_weight >= 0) add_global_weights(g, n, desc.global_weight, desc.global_bias, b);
  fused_heads(g, n, desc.heads, desc.kv_heads, desc.past_key, desc.past_value, heads, kv_heads, b, q.hit, k.hit, v.hit);
  note_shared_weights(b);
  return b;
}

void Matcher::fused_heads(int g, const NodeRec& n, const char* heads_attr, const char* kv_attr, int past_key,
                          int past_value, Int heads, Int kv_heads, AttentionBlock& b, const ProjectionHit& qh,
                          const ProjectionHit& kh, const ProjectionHit& vh) {
  auto input = [&](int i) { return std::string(input_of(n, i)); };
  auto shape = [&](int i) { return input(i).empty() ? InputShape{} : shape_of(shapes_.dims(g, input(i))); };
  InputShape qs = shape(0), ks = shape(1), vs = shape(2), pk = shape(past_key), pv = shape(past_value);
  const std::string op = std::string(n.op_type()) + " '" + node_name(m_, b.core_node) + "'";
  if (heads) {
    b.heads_from = "attribute " + std::string(heads_attr) + " of " + op;
    if (kv_heads) b.heads_from += ", " + std::string(kv_attr) + " " + kv_heads.str();
  } else {
    if (std::string_view(heads_attr) == "q_num_heads" && qh.found()) {
      // The ONNX operator with 4-D inputs: the Reshape that split Q upstream names the heads. It
      // multiplies Q [B, h, S, d] by K [B, h_kv, L, d] transposed: both last axes.
      infer_heads_unfused(b, qh, kh, vh, {shapes_.dims(g, input(0)).last(), shapes_.dims(g, input(1)).last()});
      if (b.heads) return;
    }
    if (qs.heads) {
      heads = qs.heads;
      b.heads_from = "axis 1 of the shape " + qs.shape + " of " + op + "'s query '" + input(0) + "'";
    }
  }
  if (!heads) {
    b.heads_from = "unknown: " + op + " has no " + heads_attr + " attribute" +
                   (qs.shape.empty() ? ", and the shape of its query is not known" : ", and its query's shape " + qs.shape + " does not give them");
    return;
  }
  b.heads = heads.opt();
  // K/V heads: the attribute, else K's or the cache's shape, else (ops with one head count) heads.
  if (!kv_heads) kv_heads = ks.heads ? ks.heads : pk.heads;
  if (!kv_heads && !kv_attr) kv_heads = heads;
  b.kv_heads = kv_heads.opt();
  // Head sizes: Q's width over the heads, else what the inputs' and caches' shapes state.
  // A packed query without its projection in the graph holds Q, K and V: [B, S, (h + 2·h_kv)·d].
  bool packed = input(1).empty() && input(2).empty();
  Int q_width = b.q.out_width > 0 ? Int(b.q.out_width) : qs.width;
  Int d = b.q.out_width <= 0 && packed ? exact_div(qs.width, heads + 2 * (kv_heads ? kv_heads : heads))
                                       : exact_div(q_width, heads);
  if (!d.positive()) d = qs.head_size ? qs.head_size : ks.head_size ? ks.head_size : pk.head_size;
  b.head_dim = d.positive() ? d.opt() : std::nullopt;
  Int v_width = b.v.out_width > 0 ? Int(b.v.out_width) : vs.width;
  Int dv = exact_div(v_width, kv_heads);
  if (!dv.positive()) dv = vs.head_size ? vs.head_size : pv.head_size;
  if (!dv.positive() && packed && b.v.out_width <= 0) dv = d;  // the packed query's V part has Q's head size
  b.v_head_dim = dv.positive() ? dv.opt() : std::nullopt;
  if (b.width <= 0 && !b.q.found && !b.k.found && !b.v.found && !b.o.found) {
    // No Q projection in the graph: the query's declared [B, S, h·d] is the width it attends in
    // (a packed query also holds K and V: then h · d).
    Int w = packed ? heads * d : qs.width;
    if (w.positive() && (!packed || d.positive())) {
      b.width = *w;
      b.notes.push_back("width " + w.str() + " from the declared shape " + qs.shape + " of the query '" + input(0) + "'" +
                        (packed ? " (" + heads.str() + " heads × " + d.str() + "; it packs K and V too)" : "") +
                        ": the operator holds no projection");
    }
  }
}

void Matcher::add_global_weights(int g, const NodeRec& n, int weight_slot, int bias_slot, AttentionBlock& b) {
  auto w = walker_.weight_of(g, input_of(n, weight_slot));
  if (!w || w->rows || w->transposed) {
    b.notes.push_back(std::string(n.op_type()) + " global weight input " + std::to_string(weight_slot) + " is not a constant: not counted");
    return;
  }
  const Weight& gw = m_.weights[w->weight];
  if (gw.dims.size() != 2 || gw.dims[1] % 3 != 0) {
    b.notes.push_back(std::string(n.op_type()) + " global weight '" + std::string(gw.name) + "' is not [in, 3·hidden]: not counted");
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
  b.notes.push_back("Q, K and V include the global-attention weights '" + std::string(gw.name) + "' (inputs " + std::to_string(weight_slot) + " and " +
                    std::to_string(bias_slot) + ")");
}

}  // namespace headcount::detail
