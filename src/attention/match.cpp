// match.cpp: finds attention cores (unfused Softmax patterns and fused operators), assembles
// each block's Q/K/V/O shares, infers heads, and accounts for every Softmax.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <tuple>
#include <map>
#include <set>

#include "headcount/error.h"
#include "headcount/numbers.h"
#include "matcher.h"
#include "../ops.h"
#include "../stages.h"

namespace headcount {

const char* role_name(Role r) {
  switch (r) {
    case Role::Q: return "q";
    case Role::K: return "k";
    case Role::V: return "v";
    case Role::O: return "o";
  }
  return "?";
}

const char* extra_role_name(ExtraRole r) {
  switch (r) {
    case ExtraRole::BiasK: return "bias_k";
    case ExtraRole::BiasV: return "bias_v";
    case ExtraRole::RelativeBias: return "relative_bias";
    case ExtraRole::Sink: return "sink";
    case ExtraRole::HeadScale: return "head_scale";
    case ExtraRole::LatentNorm: return "latent_norm";
    case ExtraRole::QNorm: return "q_norm";
    case ExtraRole::KNorm: return "k_norm";
  }
  return "?";
}

const Projection& AttentionBlock::projection(Role r) const {
  switch (r) {
    case Role::Q: return q;
    case Role::K: return k;
    case Role::V: return v;
    default: return o;
  }
}

Projection& AttentionBlock::projection(Role r) {
  return const_cast<Projection&>(static_cast<const AttentionBlock*>(this)->projection(r));
}

namespace detail {

uint64_t plus(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (add_overflows(a, b, &r)) throw InputError("an attention block's parameter count overflows 64 bits");
  return r;
}

int64_t plus_width(int64_t a, int64_t b) { return (Int(a) + b).value_or(0); }

std::string node_name(const Model& m, int ni) {
  const auto& n = *m.nodes[ni].rec;
  if (!n.name().empty()) return std::string(n.name());
  return std::string(n.op_type()) + (n.output_size() ? " -> " + std::string(output_of(n, 0)) : std::string());
}

AttentionResult Matcher::run() {
  // The cores first, so the blocks are reserved once: a block is large, and a vector that doubles
  // holds its old and new copies at once.
  struct Core {
    int graph, node;
    bool softmax;
  };
  std::vector<Core> cores;
  for (size_t g = 0; g < m_.graphs.size(); ++g) {
    for (int ni : m_.graphs[g].nodes) {
      const auto& n = *m_.nodes[ni].rec;
      if (n.op_type() == "Softmax"sv && (n.domain().empty() || n.domain() == "ai.onnx")) {
        cores.push_back({static_cast<int>(g), ni, true});
      } else if (is_fused_attention(n)) {
        cores.push_back({static_cast<int>(g), ni, false});
      }
    }
  }
  AttentionResult result;
  result.blocks.reserve(cores.size());
  for (const Core& c : cores) {
    if (!c.softmax) {
      result.blocks.push_back(fused(c.graph, c.node));
      continue;
    }
    std::string why;
    if (auto b = unfused(c.graph, c.node, &why)) {
      result.blocks.push_back(std::move(*b));
    } else {
      result.unmatched.push_back({c.node, node_name(m_, c.node), why});
    }
  }
  merge_per_head_cores(result);
  finish(result);
  return result;
}

std::string Matcher::source_of(int g, std::string value) {
  for (int step = 0; step < 8; ++step) {
    int p = m_.producer_of(g, value);
    if (p < 0) break;
    const auto& n = *m_.nodes[p].rec;
    std::string_view op = n.op_type();
    // A quantization step, a Cast or an Identity; CastLike and Dropout are left out, as they
    // always were.
    const bool quantization = op_has(op, Trait::Quantize | Trait::Dequantize);
    const bool cast = op_has(op, Trait::Cast) && op != "CastLike"sv;
    const bool identity = op_has(op, Trait::NoOp) && op != "Dropout"sv;
    if (!quantization && !cast && !identity) break;
    value = input_of(n, 0);
  }
  return value;
}

void Matcher::assemble(int g, AttentionBlock& b, RoleHit& q, RoleHit& k, RoleHit& v, RoleHit& o) {
  // Roles whose walks reach one projection node and each select part of its output split its
  // packed weight: by the parts the walk saw, else equally in order. Roles that reach a weight
  // whole (two projection nodes reading one tensor, or one output used as both Q and K) share it.
  std::vector<std::pair<Role, RoleHit*>> roles = {{Role::Q, &q}, {Role::K, &k}, {Role::V, &v}};
  std::map<std::tuple<int, int, int64_t>, std::vector<std::pair<Role, RoleHit*>>> groups;
  for (auto& [role, r] : roles) {
    if (!r->present || !r->hit.found() || !r->hit.per_head.empty()) continue;
    int64_t row_key = r->hit.weight.rows ? r->hit.weight.rows->first : -1;
    groups[{r->hit.node, r->hit.weight.weight, row_key}].push_back({role, r});
  }
  for (auto& [key, members] : groups) {
    Int full = members[0].second->hit.out;
    bool exact = std::all_of(members.begin(), members.end(), [](auto& m) { return m.second->hit.part.offset.has_value(); });
    bool indexed = std::all_of(members.begin(), members.end(), [](auto& m) { return m.second->hit.part.index.has_value(); });
    bool selected = std::all_of(members.begin(), members.end(), [](auto& m) { return m.second->hit.selected; });
    int64_t n = static_cast<int64_t>(members.size());
    for (int64_t i = 0; i < n; ++i) {
      Part& p = members[static_cast<size_t>(i)].second->hit.part;
      if (exact || (!indexed && !selected)) continue;
      if (n == 1 && !p.index) continue;  // the whole tensor
      Int count = p.count ? p.count : n;
      if (Int each = exact_div(full, count); indexed && each.positive()) {
        p.length = each;
        p.offset = p.index * each;
      } else if (Int part = exact_div(full, n)) {
        p.length = part;
        p.offset = i * part;
        b.notes.push_back(std::string(role_name(members[static_cast<size_t>(i)].first)) +
                          " is taken as part " + std::to_string(i + 1) + " of " + std::to_string(n) +
                          " equal parts of a packed projection: the graph does not say which part");
      }
    }
  }
  for (auto& [role, r] : roles) {
    if (r->present && r->hit.found()) fill(b.projection(role), r->hit);
  }
  if (o.hit.found()) {
    fill(b.o, o.hit);
  } else if (o.present) {  // not present: a per-head core, whose O is found after merging
    b.notes.push_back("output projection not found: " + o.hit.failure);
  }
  if (b.kind.empty()) {
    std::string qi = q.hit.input, ki = k.hit.input;
    if (!q.hit.per_head.empty()) qi = q.hit.per_head[0].input;
    if (!k.hit.per_head.empty()) ki = k.hit.per_head[0].input;
    qi = source_of(g, qi);
    ki = source_of(g, ki);
    b.kind = (q.hit.node >= 0 && q.hit.node == k.hit.node) || (!qi.empty() && qi == ki) ? "self" : "cross";
  }
  b.width = b.q.in_width;
  note_weight_inputs(b);
  // Learned tokens concatenated onto K and V (add_bias_kv): parameters of the block, not of a projection.
  for (auto [hit, role] : {std::pair<const ProjectionHit*, ExtraRole>{&k.hit, ExtraRole::BiasK}, {&v.hit, ExtraRole::BiasV}}) {
    for (int wi : hit->extra_weights) add_extra(b, wi, role);
  }
}

void Matcher::note_weight_inputs(AttentionBlock& b) const {
  std::vector<std::string> roles, inputs, biases, widths;
  Int elements = 0;
  auto add_once = [](std::vector<std::string>& v, const std::string& s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
  };
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    const Projection& p = b.projection(r);
    if (p.weight_input.empty()) continue;
    std::string role = role_name(r);
    role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
    roles.push_back(role);
    add_once(inputs, "'" + p.weight_input + "'");
    if (!p.bias_input.empty()) add_once(biases, "'" + p.bias_input + "'");
    widths.push_back(role + " " + std::to_string(p.in_width) + " → " + std::to_string(p.out_width));
    elements = elements + Int(p.in_width) * Int(p.out_width);
  }
  if (roles.empty()) return;
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
    return s;
  };
  auto plural = [](const std::vector<std::string>& v, const char* one, const char* many) { return v.size() == 1 ? one : many; };
  std::string sizes;
  for (const auto& w : widths) sizes += (sizes.empty() ? "" : ", ") + w;
  if (!biases.empty()) sizes += std::string("; ") + plural(biases, "bias ", "biases ") + join(biases);
  bool one = roles.size() == 1;
  b.notes.push_back(join(roles) + (one ? " weight is" : " weights are") + " fed at run time as the graph " +
                    plural(inputs, "input ", "inputs ") + join(inputs) + " (" + sizes + "): nothing of " +
                    (one ? "it" : "them") + " is stored, so " + (one ? "it adds" : "they add") + " 0 here (" +
                    (elements ? with_commas(static_cast<uint64_t>(*elements)) : std::string("?")) + " weights by the " +
                    plural(inputs, "declared shape)", "declared shapes)"));
}

void Matcher::add_norm_extras(AttentionBlock& b, const RoleHit& q, const RoleHit& k) const {
  for (auto [r, role] : {std::pair<const RoleHit*, ExtraRole>{&q, ExtraRole::QNorm}, {&k, ExtraRole::KNorm}}) {
    if (!r->present || !r->hit.found()) continue;
    for (int wi : r->hit.norm_weights) add_extra(b, wi, role);
  }
}

void Matcher::add_extra(AttentionBlock& b, int weight, ExtraRole role) const {
  const Weight& w = m_.weights[static_cast<size_t>(weight)];
  if (!w.parameter) return;  // integer constants are not learned
  // One tensor in two roles (q_norm and k_norm merged by the exporter into one initializer) is
  // two uses the block owns; in one role it is one.
  for (const auto& e : b.extras) {
    if (e.weight == weight && e.role == role) return;
  }
  b.extras.push_back({weight, role, w.elements});
}

void Matcher::note_shared_weights(AttentionBlock& b) const {
  std::map<int, std::vector<Role>> users;  // weight -> roles that use it whole
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    for (const auto& t : b.projection(r).tensors) {
      if (!t.bias && t.slice.empty()) users[t.weight].push_back(r);
    }
  }
  for (const auto& [wi, roles] : users) {
    if (roles.size() < 2) continue;
    std::string who;
    for (size_t i = 0; i < roles.size(); ++i) {
      std::string r = role_name(roles[i]);
      r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
      who += (i == 0 ? "" : i + 1 == roles.size() ? " and " : ", ") + r;
    }
    b.notes.push_back(who + " use the same weight tensor '" + std::string(m_.weights[wi].name) +
                      "' whole: one tensor shared by the projections, counted in each of them and once in the model "
                      "totals");
  }
}

void Matcher::fill(Projection& p, const ProjectionHit& hit) {
  p.found = true;
  if (!hit.per_head.empty()) {
    for (const auto& h : hit.per_head) {
      Projection one;
      fill(one, h);
      p.weight = plus(p.weight, one.weight);
      p.bias = plus(p.bias, one.bias);
      p.in_width = one.in_width;
      p.out_width = plus_width(p.out_width, one.out_width);
      p.tensors.insert(p.tensors.end(), one.tensors.begin(), one.tensors.end());
    }
    return;
  }
  // Sizes from the weight's dims (unknown counts as 0); a part comes from Split sizes or Slice
  // bounds in the file, so it is kept inside the projection.
  int64_t in = std::max<int64_t>(hit.in.value_or(0), 0), out = std::max<int64_t>(hit.out.value_or(0), 0);
  int64_t length = hit.part.length ? std::clamp<int64_t>(*hit.part.length, 0, out) : out;
  int64_t offset = hit.part.offset ? std::clamp<int64_t>(*hit.part.offset, 0, out - length) : 0;
  p.in_width = in;
  p.out_width = length;
  p.bias_input = hit.bias_input;
  if (hit.weight.weight < 0) {
    p.weight_input = hit.weight_input;  // fed at run time: widths from its declared shape, nothing stored
  } else {
    const Weight& w = m_.weights[hit.weight.weight];
    TensorShare ws;
    ws.weight = hit.weight.weight;
    ws.elements = (Int(in) * length).count().value_or(0);  // at most in × out, the tensor's own elements
    bool stored_out_first = hit.weight.transposed != (m_.nodes[hit.node].rec->op_type() == "Gemm"sv &&
                                                      detail::attr_flag(*m_.nodes[hit.node].rec, "transB"));
    // Gemm with transB and an untransposed tensor, or MatMul behind Transpose: stored [out, in].
    const std::string axis = stored_out_first ? "rows " : "columns ";
    Int stored_full = stored_out_first ? Int(w.dims.empty() ? 0 : w.dims[0]) : Int(out);
    Int first = Int(hit.weight.rows ? hit.weight.rows->first : 0) + offset;
    if (hit.weight.rows || length != out) {
      ws.slice = axis + first.str() + ":" + (first + length).str() + " of " + stored_full.str();
    }
    if (m_.nodes[hit.node].rec->op_type() == "MatMulNBits"sv) {
      uint64_t stored = 1;  // the blob's own dims: Weight::elements may already be the logical K x N
      for (int64_t d : w.dims) mul_overflows(stored, static_cast<uint64_t>(d), &stored);  // checked at load
      ws.slice = "logical K x N from attributes (packed " + std::to_string(stored) + " stored elements)";
    }
    p.weight = ws.elements;
    p.tensors.push_back(ws);
  }
  if (hit.bias >= 0) {
    const Weight& bw = m_.weights[hit.bias];
    TensorShare bs;
    bs.weight = hit.bias;
    bs.bias = true;
    Int bfirst = hit.bias_range ? hit.bias_range->first : 0;
    Int blen = hit.bias_range ? Int(hit.bias_range->second - hit.bias_range->first) : Int::of_unsigned(bw.elements);
    if (blen.is(out) && length != out) {  // a packed bias is split like its weight
      bfirst = bfirst + offset;
      blen = length;
    }
    bs.elements = blen.count().value_or(0);
    if (bs.elements != bw.elements) {
      bs.slice = "elements " + bfirst.str() + ":" + (bfirst + blen).str() + " of " + std::to_string(bw.elements);
    }
    p.bias = bs.elements;
    p.tensors.push_back(bs);
  }
}

std::string Matcher::common_prefix(const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string p = names[0];
  for (const auto& n : names) {
    size_t i = 0;
    while (i < p.size() && i < n.size() && p[i] == n[i]) ++i;
    p.resize(i);
  }
  // Cut back to a separator unless the prefix is a whole name.
  bool whole = std::all_of(names.begin(), names.end(), [&](std::string_view n) { return n == p; });
  if (!whole) {
    size_t cut = p.find_last_of("./");
    p = cut == std::string::npos ? "" : p.substr(0, cut);
  }
  while (!p.empty() && (p.back() == '.' || p.back() == '/' || p.back() == '_')) p.pop_back();
  return p;
}

std::string Matcher::block_name(const AttentionBlock& b, const std::vector<int>& blocks_using) {
  std::vector<std::string> names;
  std::set<Role> roles;
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    for (const auto& t : b.projection(r).tensors) {
      std::string_view n = m_.weights[t.weight].name;
      if (n.rfind("onnx::", 0) != 0 && blocks_using[static_cast<size_t>(t.weight)] == 1) {
        names.push_back(std::string(n));
        roles.insert(r);
      }
    }
  }
  std::string prefix = common_prefix(names);
  if (roles.size() == 1) {  // names of one projection only: drop that projection's own module name
    size_t cut = prefix.find_last_of("./");
    prefix = cut == std::string::npos ? "" : prefix.substr(0, cut);
  }
  if (prefix.size() >= 2) return prefix;
  std::string_view core = m_.nodes[b.core_node].rec->name();
  size_t cut = core.find_last_of('/');
  if (cut != std::string::npos && cut > 0) return std::string(core.substr(0, cut));
  return node_name(m_, b.core_node);
}

// What a block's shares claim of each tensor, by weight index in increasing order: a share that
// several projections read (the same tensor and slice) once, at its first reading in Q, K, V, O
// order, the extras whole. A sum past 64 bits saturates and sets *overflow.
std::vector<std::pair<int, uint64_t>> block_claims(const AttentionBlock& b, bool* overflow) {
  static const std::string kWhole;
  struct Share {
    int weight;
    const std::string* slice;
    uint64_t elements;
  };
  std::vector<Share> shares;
  for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
    for (const auto& t : b.projection(role).tensors) shares.push_back({t.weight, &t.slice, t.elements});
  }
  for (const auto& e : b.extras) shares.push_back({e.weight, &kWhole, e.elements});
  auto key = [](const Share& x) { return std::tie(x.weight, *x.slice); };
  std::stable_sort(shares.begin(), shares.end(), [&](const Share& x, const Share& y) { return key(x) < key(y); });
  std::vector<std::pair<int, uint64_t>> claims;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (i > 0 && key(shares[i]) == key(shares[i - 1])) continue;  // read again: counted at its first
    if (claims.empty() || claims.back().first != shares[i].weight) claims.emplace_back(shares[i].weight, 0);
    uint64_t& c = claims.back().second;
    if (add_overflows(c, shares[i].elements, &c)) {
      c = UINT64_MAX;
      if (overflow) *overflow = true;
    }
  }
  return claims;
}

void Matcher::finish(AttentionResult& r) {
  for (auto& b : r.blocks) bound_claims(m_, b);
  // By weight index (vectors, not maps: a model of many layers has many weights in blocks).
  std::vector<uint64_t> per_weight(m_.weights.size(), 0);  // elements claimed by the busiest block
  std::vector<int> blocks_using(m_.weights.size(), 0);     // the number of blocks that use it
  std::vector<std::vector<std::pair<int, uint64_t>>> claims(r.blocks.size());
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    claims[i] = block_claims(r.blocks[i], nullptr);
    for (const auto& c : claims[i]) ++blocks_using[static_cast<size_t>(c.first)];
  }
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    AttentionBlock& b = r.blocks[i];
    b.index = static_cast<int>(i);
    b.name = block_name(b, blocks_using);
    b.total = 0;
    for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
      const Projection& p = b.projection(role);
      b.total = plus(b.total, plus(p.weight, p.bias));
    }
    for (const auto& e : b.extras) b.total = plus(b.total, e.elements);
    b.has_bias = b.q.bias || b.k.bias || b.v.bias || b.o.bias;
    uint64_t w = static_cast<uint64_t>(std::max<int64_t>(b.width, 0)), w2 = 0, std4 = 0;
    if (mul_overflows(w, w, &w2) || mul_overflows(w2, 4, &std4) || add_overflows(std4, b.has_bias ? 4 * w : 0, &b.standard)) {
      b.standard = 0;  // only a hostile width gets here: no standard to compare with
    }
    if (!b.q.found && !b.k.found && !b.v.found && !b.o.found) b.standard = 0;  // nothing here to compare
    // Each tensor's claim, bounded above by bound_claims: no sum here reaches 64 bits.
    for (const auto& [wi, n] : claims[i]) per_weight[static_cast<size_t>(wi)] = std::max(per_weight[static_cast<size_t>(wi)], n);
  }
  for (size_t wi = 0; wi < per_weight.size(); ++wi) {
    // A tensor gives the attention total at most its own elements, and only when it is a
    // parameter: a hostile graph can route one tensor into overlapping shares.
    const Weight& w = m_.weights[wi];
    if (w.parameter) r.parameters += std::min(per_weight[wi], w.elements);
  }
}

}  // namespace detail

// A block may claim no more of a tensor than it stores (an empty tensor of huge dims split per
// head would): a split that does is refused and the tensor counted whole, once.
void bound_claims(const Model& model, AttentionBlock& b) {
  bool overflow = false;
  const std::vector<std::pair<int, uint64_t>> claimed = detail::block_claims(b, &overflow);
  bool refused = false;
  for (const auto& [tensor, n] : claimed) {
    const int wi = tensor;  // a plain variable: lambdas cannot capture a structured binding in C++17
    const Weight& w = model.weights[static_cast<size_t>(wi)];
    if (n <= w.elements) continue;
    refused = true;
    bool placed = false;
    for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
      auto& tensors = b.projection(role).tensors;
      auto first = std::find_if(tensors.begin(), tensors.end(), [&](const TensorShare& t) { return t.weight == wi; });
      if (first == tensors.end()) continue;
      const TensorShare whole{wi, first->bias, placed ? 0 : w.elements, "the whole tensor: its shares summed to more than it holds"};
      tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const TensorShare& t) { return t.weight == wi; }), tensors.end());
      if (!placed) tensors.push_back(whole);
      placed = true;
    }
    for (auto& e : b.extras) {
      if (e.weight == wi) e.elements = std::min(e.elements, w.elements);
    }
    b.overclaimed.push_back("tensor '" + std::string(w.name) + "' " + shape_string(w.dims) + " holds " + with_commas(w.elements) +
                            " elements, but the block's shares of it summed to " +
                            (overflow && n == UINT64_MAX ? std::string("more than 64 bits hold") : with_commas(n)) +
                            ": the split is refused and the tensor counted whole, once");
  }
  if (!refused) return;
  b.total = 0;
  for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
    Projection& p = b.projection(role);
    p.weight = p.bias = 0;
    for (const auto& t : p.tensors) (t.bias ? p.bias : p.weight) = detail::plus(t.bias ? p.bias : p.weight, t.elements);
    b.total = detail::plus(b.total, p.total());
  }
  for (const auto& e : b.extras) b.total = detail::plus(b.total, e.elements);
}

// The matcher first evaluates every value's shape (the audit's ShapeOracle); shapes_ms, when
// given, is how long that took.
AttentionResult detail::match_attention(SharedShapes& shapes, double* shapes_ms) {
  auto start = std::chrono::steady_clock::now();
  detail::Matcher matcher(shapes.get());
  if (shapes_ms) *shapes_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return matcher.run();
}

AttentionResult match_attention(const Model& model, double* shapes_ms) {
  detail::SharedShapes shapes(model);
  return detail::match_attention(shapes, shapes_ms);
}

}  // namespace headcount
