// unfused.cpp: attention written out op by op: MatMul(Q, Kᵀ) -> [scale] -> [mask] -> Softmax ->
// MatMul(·, V), attention computed head by head, and heads read from the graph's Reshapes.
#include <tuple>

#include "matcher.h"
#include "../ops.h"

namespace headcount::detail {

namespace {

// The steps between a Softmax's probabilities and their product with V, each for its own reason:
// a cast or a no-op (CastLike is left out, as it always was), a Where of a mask, a Reshape of the
// heads, a Mul by a head mask, and a Slice that takes a sink column off again.
bool carries_probabilities(std::string_view op) {
  if (op_has(op, Trait::NoOp)) return true;
  if (op_has(op, Trait::Cast)) return op != "CastLike"sv;
  const bool mask = op == "Where"sv;
  const bool heads = op == "Reshape"sv;
  const bool head_mask = op == "Mul"sv;
  const bool sink_removed = op == "Slice"sv;
  return mask || heads || head_mask || sink_removed;
}

}  // namespace

// The score path is a chain of element-wise and shape steps between MatMul(Q, Kᵀ) and the
// Softmax: scale (Div/Mul), soft-capping (Div -> Tanh -> Mul), masks and biases (Add, Where),
// casts, reshapes, and the Concat of learned sinks. The walk follows the operand that leads back
// to the scores and looks at the others for learned tensors: a table looked up by Gather
// (relative-position bias), a per-head vector multiplying the scores (temperature, gate), a
// per-head logit concatenated as one more column (sink).
ScorePath Matcher::walk_scores(int g, Name value, int depth) {
  ScorePath r;
  if (value.empty()) return r;
  int p = m_.producer_of(g, value);
  if (p < 0) {
    r.why = m_.weight_for(g, value) ? "it reaches the constant '" + std::string(value) + "'" : "it reaches the graph input '" + std::string(value) + "'";
    return r;
  }
  const auto& n = *m_.nodes[p].rec;
  std::string_view op = n.op_type();
  if (depth > 16 || !budget_.spend()) {
    r.why = "the walk back gave up after " + std::to_string(depth) + " steps at " + walker_.label(p);
    return r;
  }
  if (op_has(op, Trait::BatchedProduct) || (op == "Einsum"sv && parse_einsum(n))) {
    if (n.input_size() >= 2 && !walker_.weight_of(g, input_of(n, 0)) && !walker_.weight_of(g, input_of(n, 1))) {
      r.scores = p;
    } else {
      r.why = walker_.label(p) + " multiplies by a constant: a projection or a classifier, not Q·Kᵀ";
    }
    return r;
  }
  // One operand on: a layout step, a cast, a no-op, or a value step that keeps which score each
  // element is: a softcap's Tanh, a Clip (Max and Min join two operands, below), a Neg (not Abs,
  // which this walk has never taken).
  const bool softcap = op == "Tanh"sv;
  const bool clip = op_has(op, Trait::Clamp) && !op_has(op, Trait::Arithmetic);
  const bool negation = op_has(op, Trait::SignChange) && op != "Abs"sv;
  if (op_has(op, Trait::LayoutOnly | Trait::Cast | Trait::NoOp) || softcap || clip || negation) {
    r = walk_scores(g, input_of(n, 0), depth + 1);
    if (r.scores >= 0) {
      r.steps.push_back(std::string(op));
      r.nodes.push_back(p);
    }
    return r;
  }
  // A step that joins the scores with another operand: arithmetic that shifts, scales or clamps
  // them (not Pow or Mod, which no exporter puts between scores and Softmax), a Where of a mask,
  // the sinks' Concat.
  const bool joins = (op_has(op, Trait::Arithmetic) && op_has(op, Trait::Shifts | Trait::Scales | Trait::Clamp)) ||
                     op_has(op, Trait::Merges);
  if (!joins) {
    if (walker_.as_projection(g, p, input_of(n, 0))) {
      r.why = walker_.label(p) + " multiplies by a constant: a projection or a classifier, not Q·Kᵀ";
    } else {
      r.why = "the walk back stopped at " + walker_.label(p) + ", which is not a step between scores and a Softmax";
    }
    return r;
  }
  return walk_joined(g, p, depth);
}

ScorePath Matcher::walk_joined(int g, int p, int depth) {
  const auto& n = *m_.nodes[p].rec;
  std::string_view op = n.op_type();
  ScorePath r;
  // An element-wise step (or the sinks' Concat): one operand leads back to the scores.
  int on_path = -1;
  for (int i = op == "Where"sv ? 1 : 0; i < n.input_size() && on_path < 0; ++i) {
    if (input_of(n, i).empty() || walker_.weight_of(g, input_of(n, i))) continue;
    ScorePath t = walk_scores(g, input_of(n, i), depth + 1);
    if (t.scores >= 0) {
      r = std::move(t);
      on_path = i;
    } else if (r.why.empty()) {
      r.why = t.why;
    }
  }
  if (on_path < 0) {
    if (r.why.empty()) r.why = "the walk back from " + walker_.label(p) + " reaches only constants";
    return r;
  }
  std::string what = learned_operands(g, n, on_path, r);
  r.steps.push_back(what.empty() ? std::string(op) : std::string(op) + "(" + what + ")");
  r.nodes.push_back(p);
  return r;
}

std::string Matcher::learned_operands(int g, const NodeRec& n, int on_path, ScorePath& r) {
  std::string_view op = n.op_type();
  // What the other operands are: learned tensors become the block's extras.
  std::string what;
  for (int i = op == "Where"sv ? 1 : 0; i < n.input_size(); ++i) {
    if (i == on_path || input_of(n, i).empty()) continue;
    LearnedSource src = learned_source(g, input_of(n, i), 0);
    const Weight* w = src.weight >= 0 ? &m_.weights[static_cast<size_t>(src.weight)] : nullptr;
    bool learned = w && w->parameter;
    if (op == "Concat"sv && learned) {
      r.learned.push_back({src.weight, ExtraRole::Sink});
      what = "sink";
    } else if (op_has(op, Trait::Shifts) && learned && src.looked_up) {
      r.learned.push_back({src.weight, ExtraRole::RelativeBias});
      what = "relative bias";
    } else if (op_has(op, Trait::Scales) && learned && w->elements > 1 && src.direct) {
      r.learned.push_back({src.weight, ExtraRole::HeadScale});
      what = "head scale";
    } else if (op == "Where"sv || (op_has(op, Trait::Shifts) && !src.direct)) {
      what = "mask";  // selected, or computed at run time from the inputs
    } else if (op_has(op, Trait::Shifts)) {
      what = "constant";  // a constant added to the scores: a causal mask or a position bias buffer
    }
  }
  return what;
}

Matcher::LearnedSource Matcher::learned_source(int g, Name value, int depth) {
  LearnedSource r;
  if (depth > 8 || value.empty() || !budget_.spend()) return r;
  if (const Weight* w = m_.weight_for(g, value)) {
    r.weight = static_cast<int>(w - m_.weights.data());
    r.direct = true;
    return r;
  }
  int p = m_.producer_of(g, value);
  if (p < 0) return r;
  const auto& n = *m_.nodes[p].rec;
  std::string_view op = n.op_type();
  if (op == "Gather"sv && m_.weight_for(g, input_of(n, 0)) && !m_.weight_for(g, input_of(n, 1))) {
    // A table looked up by run-time indices: relative-position buckets.
    r.weight = static_cast<int>(m_.weight_for(g, input_of(n, 0)) - m_.weights.data());
    r.looked_up = true;
    return r;
  }
  if (op_has(op, Trait::LayoutOnly | Trait::Repeats | Trait::Selects | Trait::Cast) || op == "Neg"sv) {
    return learned_source(g, input_of(n, 0), depth + 1);
  }
  // A bias computed once and reused with a mask added (Add, Sub, Mul or Where; Div is left out, as
  // it always was).
  if (op_has(op, Trait::Shifts | Trait::Affine) || op == "Where"sv) {
    for (int i = op == "Where"sv ? 1 : 0; i < n.input_size(); ++i) {
      LearnedSource t = learned_source(g, input_of(n, i), depth + 1);
      if (t.looked_up) return t;
    }
  }
  return r;
}

int Matcher::find_values_matmul(int g, Name value, int depth) {
  if (depth > 8) return -1;
  for (int c : m_.consumers_of(g, value)) {
    if (!budget_.spend()) return -1;
    const auto& n = *m_.nodes[c].rec;
    std::string_view op = n.op_type();
    if (op_has(op, Trait::BatchedProduct) && n.input_size() >= 2 && input_of(n, 0) == value) return c;
    if (op == "Einsum"sv && detail::parse_einsum(n) && (input_of(n, 0) == value || input_of(n, 1) == value)) return c;
    if (carries_probabilities(op)) {
      int r = find_values_matmul(g, output_of(n, 0), depth + 1);
      if (r >= 0) return r;
    }
  }
  return -1;
}

bool Matcher::leads_from(int g, Name value, std::string_view source, int depth) {
  if (value == source) return true;
  if (depth > 8 || value.empty() || !budget_.spend()) return false;
  int p = m_.producer_of(g, value);
  if (p < 0) return false;
  const auto& n = *m_.nodes[p].rec;
  std::string_view op = n.op_type();
  if (!carries_probabilities(op)) return false;
  for (const auto& in : n.input()) {
    if (leads_from(g, in, source, depth + 1)) return true;
  }
  return false;
}

std::optional<AttentionBlock> Matcher::unfused(int g, int softmax, std::string* why) {
  const auto& sm = *m_.nodes[softmax].rec;
  if (budget_.exhausted()) {
    *why = "not examined: matching used up the node visits a graph of this size gets (" +
           std::to_string(VisitBudget::kPerNode) + " per node)";
    return std::nullopt;
  }
  budget_.start_walk(512);  // looking around one Softmax: hostile fan-outs stay cheap
  ScorePath path = walk_scores(g, input_of(sm, 0), 0);
  int qk = path.scores;
  if (qk < 0) {
    *why = "no MatMul(Q, Kᵀ) of two activations before it";
    if (!path.why.empty()) *why += ": " + path.why;
    return std::nullopt;
  }
  int av = find_values_matmul(g, output_of(sm, 0), 0);
  if (av < 0) {
    *why = "its output does not feed a MatMul with V";
    return std::nullopt;
  }
  const auto& qkn = *m_.nodes[qk].rec;
  const auto& avn = *m_.nodes[av].rec;
  CoreValues c = core_values(g, sm, qkn, avn);
  if (std::string why_latent = absorbed_latent(g, c.k, c.v); !why_latent.empty()) {
    *why = why_latent;
    return std::nullopt;
  }
  RoleHit q, k, v;
  if (!find_roles(g, c, q, k, v, why)) return std::nullopt;
  RoleHit o{walker_.forward(g, output_of(avn, 0)), true};
  AttentionBlock b = block_of_core(softmax, qk, path);
  if (!o.hit.found()) {
    // Attention computed head by head: each core's output joins the others in a Concat, and the
    // output projection follows the Concat. The cores become one block after matching.
    int concat = concat_after(g, output_of(avn, 0));
    if (concat >= 0) {
      head_concat_[softmax] = {g, concat};
      o.present = false;
    }
  }
  assemble(g, b, q, k, v, o);
  for (auto [weight, role] : path.learned) add_extra(b, weight, role);
  add_norm_extras(b, q, k);
  for (auto [name, r, p] : {std::tuple<const char*, RoleHit*, Projection*>{"K", &k, &b.k}, {"V", &v, &b.v}}) {
    if (r->present) continue;
    p->from_input = r->hit.from_input;
    b.notes.push_back(std::string(name) + " comes from the graph input '" + r->hit.from_input +
                      "' unprojected (an encoder output or a cache): its projection is not in this graph");
  }
  CoreSizes core = contracted_sizes(g, qkn, c.q, c.k);
  infer_heads_unfused(b, q.hit, k.hit, v.hit, core);
  unprojected_heads(g, b, c, k, v, core, avn);
  if (q.present && k.present && v.present) latent(g, b, q.hit, v.hit, c.k, c.v);
  note_shared_weights(b);  // once the shares are final: latent attention splits its up projection
  return b;
}

Matcher::CoreValues Matcher::core_values(int g, const NodeRec& sm, const NodeRec& qkn, const NodeRec& avn) {
  CoreValues c{input_of(qkn, 0), input_of(qkn, 1), input_of(avn, 1)};
  if (auto eq = detail::parse_einsum(qkn)) {
    // Keras writes einsum("aecd,abcd->acbe", key, query): K is the operand that carries the
    // scores' last axis, the one Softmax normalises.
    if (!eq->out.empty() && eq->in[0].find(eq->out.back()) != std::string::npos &&
        eq->in[1].find(eq->out.back()) == std::string::npos) {
      std::swap(c.q, c.k);
    }
  }
  if (detail::parse_einsum(avn) && leads_from(g, input_of(avn, 1), output_of(sm, 0), 0)) {
    c.v = input_of(avn, 0);  // einsum(probabilities, value) or einsum(value, probabilities)
  }
  return c;
}

bool Matcher::find_roles(int g, const CoreValues& c, RoleHit& q, RoleHit& k, RoleHit& v, std::string* why) {
  q = {walker_.back(g, c.q), true};
  k = {walker_.back(g, c.k), true};
  v = {walker_.back(g, c.v), true};
  for (auto [name, r] : {std::pair<const char*, RoleHit*>{"Q", &q}, {"K", &k}, {"V", &v}}) {
    if (r->hit.found()) continue;
    // K and V may come straight from a graph input: a decoder's cached encoder K/V. The block is
    // still a block (its Q and O are here); Q without a projection is not attention we can count.
    if (r != &q && !r->hit.from_input.empty()) {
      r->present = false;
      continue;
    }
    *why = std::string("looks like attention, but its ") + name + " " + r->hit.failure;
    return false;
  }
  return true;
}

AttentionBlock Matcher::block_of_core(int softmax, int qk, const ScorePath& path) const {
  AttentionBlock b;
  b.form = "unfused";
  b.core_node = softmax;
  b.score_path.push_back(std::string(m_.nodes[qk].rec->op_type()));
  b.score_path.insert(b.score_path.end(), path.steps.begin(), path.steps.end());
  b.score_path.push_back("Softmax");
  b.score_nodes.push_back(qk);
  b.score_nodes.insert(b.score_nodes.end(), path.nodes.begin(), path.nodes.end());
  b.score_nodes.push_back(softmax);
  return b;
}

void Matcher::unprojected_heads(int g, AttentionBlock& b, const CoreValues& c, const RoleHit& k, const RoleHit& v,
                                const CoreSizes& core, const NodeRec& avn) {
  // K or V from an input: what the core's operands state. A [B, h, ·, ·] Q whose axis 1 holds
  // the heads proves that K's axis 1 holds the K/V heads; P·V's features are V's last axis.
  Dims qd = shapes_.dims(g, c.q), kd = shapes_.dims(g, c.k), vd = shapes_.dims(g, c.v);
  bool axis1_heads = qd.rank == 4 && kd.rank == 4 && b.heads && same(qd.d[1], *b.heads);
  if (!k.present && !b.kv_heads && axis1_heads && kd.d[1].positive()) b.kv_heads = kd.d[1].opt();
  if (!k.present && !b.kv_heads) kv_heads_from_input(g, b, k.hit.from_input);
  if (!k.present && !b.k_head_dim && core.k.positive() && same(core.q, core.k) && b.head_dim) b.k_head_dim = b.head_dim;
  if (!v.present && !b.v_head_dim && avn.op_type() == "MatMul"sv && vd.rank > 0 && vd.d.back().positive()) {
    b.v_head_dim = vd.d.back().opt();
  }
}

void Matcher::kv_heads_from_input(int g, AttentionBlock& b, std::string_view input) {
  // A cache input declared [batch, kv_heads, sequence, head_size], as decoders with past K/V
  // declare them: axis 1 holds the K/V heads when the last axis is K's head size and axis 1
  // divides the query heads. A second axis that would also fit leaves it unknown.
  const std::optional<int64_t> dk = b.k_head_dim ? b.k_head_dim : b.head_dim;
  if (input.empty() || !b.heads || *b.heads <= 0 || !dk) return;
  Dims d = shapes_.dims(g, Name(input));
  if (d.rank != 4 || !d.d[1].positive() || !same(d.d[3], Int(*dk))) return;
  auto divides_heads = [&](Int a) { return a.positive() && *b.heads % *a == 0; };
  if (!divides_heads(d.d[1])) return;
  if (divides_heads(d.d[2]) && !same(d.d[2], d.d[1])) return;
  b.kv_heads = d.d[1].opt();
  b.heads_from += "; K/V heads " + d.d[1].str() + " from axis 1 of the declared shape " + detail::format_ints(d.d) +
                  " of the graph input '" + std::string(input) + "'";
}

CoreSizes Matcher::contracted_sizes(int g, const NodeRec& scores, Name q_value,
                                    Name k_value) const {
  // The axis each operand contributes, counted from its end: MatMul(Q, Kᵀ) contracts Q's last
  // axis with Kᵀ's second-to-last (a Kᵀ reshaped to [B·h, d, L] has its head size there, not last).
  int q_from_end = 1, k_from_end = 2;
  if (auto eq = parse_einsum(scores)) {
    // The one letter both operands carry and the output drops; Q may be either operand.
    std::string qs = input_of(scores, 0) == q_value ? eq->in[0] : eq->in[1];
    std::string ks = input_of(scores, 0) == q_value ? eq->in[1] : eq->in[0];
    std::string contracted;
    for (char c : qs) {
      if (ks.find(c) != std::string::npos && eq->out.find(c) == std::string::npos) contracted += c;
    }
    if (contracted.size() != 1) return {};
    q_from_end = static_cast<int>(qs.size() - qs.find(contracted[0]));
    k_from_end = static_cast<int>(ks.size() - ks.find(contracted[0]));
  } else if (scores.op_type() == "FusedMatMul"sv) {
    q_from_end = attr_flag(scores, "transA") ? 2 : 1;
    k_from_end = attr_flag(scores, "transB") ? 1 : 2;
  }
  auto size_at = [&](Name value, int from_end) {
    Dims d = shapes_.dims(g, value);
    if (d.rank >= from_end) return d.d[static_cast<size_t>(d.rank - from_end)];
    return from_end == 1 && d.rank < 0 ? d.tail : Int();
  };
  return {size_at(q_value, q_from_end), size_at(k_value, k_from_end)};
}

int Matcher::concat_after(int g, Name value) {
  for (int step = 0; step < 16; ++step) {
    const auto& users = m_.consumers_of(g, value);
    if (users.size() != 1) return -1;
    const auto& n = *m_.nodes[users[0]].rec;
    if (n.op_type() == "Concat"sv) return users[0];
    if (!op_has(n.op_type(), Trait::LayoutOnly | Trait::Cast | Trait::NoOp)) {
      return -1;
    }
    value = output_of(n, 0);
  }
  return -1;
}

void Matcher::merge_per_head_cores(AttentionResult& r) {
  std::map<std::pair<int, int>, std::vector<size_t>> groups;  // (graph, concat) -> block positions
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    auto it = head_concat_.find(r.blocks[i].core_node);
    if (it != head_concat_.end() && r.blocks[i].form == "unfused") groups[it->second].push_back(i);
  }
  std::vector<bool> drop(r.blocks.size(), false);
  for (auto& [key, members] : groups) {
    auto [g, concat] = key;
    AttentionBlock& b = r.blocks[members[0]];
    if (members.size() < 2) {
      b.notes.push_back("output projection not found: its output joins a Concat that no other attention head feeds");
      continue;
    }
    for (size_t j = 1; j < members.size(); ++j) {
      AttentionBlock& other = r.blocks[members[j]];
      for (Role role : {Role::Q, Role::K, Role::V}) {
        Projection& mine = b.projection(role);
        const Projection& theirs = other.projection(role);
        mine.weight = plus(mine.weight, theirs.weight);
        mine.bias = plus(mine.bias, theirs.bias);
        mine.out_width = plus_width(mine.out_width, theirs.out_width);
        mine.tensors.insert(mine.tensors.end(), theirs.tensors.begin(), theirs.tensors.end());
      }
      b.merged_cores.push_back(other.core_node);
      drop[members[j]] = true;
    }
    int64_t n = static_cast<int64_t>(members.size());  // b's projections now hold all n heads
    b.heads = n;
    b.kv_heads = n;
    b.head_dim = exact_div(b.q.out_width, n).opt();
    b.k_head_dim = exact_div(b.k.out_width, n).opt();
    b.v_head_dim = exact_div(b.v.out_width, n).opt();
    b.heads_from = std::to_string(n) + " attention cores, one per head, concatenated by " +
                   node_name(m_, concat) + " before the output projection";
    ProjectionHit o = walker_.forward(g, output_of(*m_.nodes[concat].rec, 0));
    if (o.found()) fill(b.o, o);
    else b.notes.push_back("output projection not found: " + o.failure);
  }
  // The merged heads leave in place, the others keeping their order.
  size_t kept = 0;
  for (size_t i = 0; i < r.blocks.size(); ++i) {
    if (drop[i]) continue;
    if (kept != i) r.blocks[kept] = std::move(r.blocks[i]);
    ++kept;
  }
  r.blocks.erase(r.blocks.begin() + static_cast<std::ptrdiff_t>(kept), r.blocks.end());
}

void Matcher::infer_heads_unfused(AttentionBlock& b, const ProjectionHit& q, const ProjectionHit& k, const ProjectionHit& v,
                                  CoreSizes core) {
  Int q_out = b.q.out_width, k_out = b.k.out_width, v_out = b.v.out_width;
  // Keras EinsumDense kernels keep heads as an axis: [d, h, k].
  auto einsum_heads = [](const ProjectionHit& hit) { return hit.einsum_out_dims.size() >= 2 ? Int(hit.einsum_out_dims[0]) : Int(); };
  Int heads, d;
  if (Int eh = einsum_heads(q); (d = exact_div(q_out, eh)).positive()) {
    heads = eh;
    b.heads_from = "the Q projection's Einsum weight keeps " + heads.str() + " heads × " + d.str() + " as separate axes";
  } else if (!q.per_head.empty()) {
    heads = static_cast<int64_t>(q.per_head.size());
    d = q.per_head[0].part.length ? q.per_head[0].part.length : q.per_head[0].out;
    b.heads_from = std::to_string(q.per_head.size()) + " per-head Q projections concatenated";
  } else if (q.reshape && !q.reshape->empty()) {
    const IntVector& t = *q.reshape;
    // A target known only at its end: "[..., 3, 8, 15]".
    std::string target = q.reshape_tail ? "[..., " + detail::format_ints(IntVector(t.begin() + 1, t.end())).substr(1)
                                        : detail::format_ints(t);
    Int second_last = t.size() >= 2 ? t[t.size() - 2] : Int();
    if (t.back().positive() && (heads = exact_div(q_out, t.back())).positive()) {
      d = t.back();
      b.heads_from = "head size " + d.str() + " from " + q.reshape_node + " target " + target + " on the Q path; " +
                     q_out.str() + " / " + d.str() + " = " + heads.str() + " heads";
    } else if (second_last.positive() && (d = exact_div(q_out, second_last)).positive()) {
      heads = second_last;
      b.heads_from = "heads " + heads.str() + " from " + q.reshape_node + " target " + target + " on the Q path";
    } else {
      heads = d = Int();
      b.heads_from = "unknown: " + q.reshape_node + " target " + target + " on the Q path has no constant head size";
    }
  } else if (!q.reshape_node.empty()) {
    b.heads_from = "unknown: the target of " + q.reshape_node + " on the Q path is computed at run time";
  } else if (q_out.positive() && same(core.q, q_out)) {
    // No head split, and the scores contract every feature Q projects: one head as wide as Q.
    heads = 1;
    d = q_out;
    b.heads_from = "no Reshape splits Q, and MatMul(Q, Kᵀ) contracts all " + q_out.str() +
                   " features of the Q projection: one head";
  } else {
    b.heads_from = "unknown: no Reshape splits Q into heads between its projection and the attention core";
  }
  b.heads = heads.opt();
  if (!d.positive()) return;
  b.head_dim = d.opt();
  auto last = [](const std::optional<IntVector>& t) { return t && !t->empty() ? t->back() : Int(); };
  if (Int kd = exact_div(k_out, einsum_heads(k)); kd.positive()) {
    b.k_head_dim = kd.opt();
  } else if (!k.per_head.empty()) {
    b.k_head_dim = k.per_head[0].out.opt();
  } else if (core.q.positive() && core.k.positive()) {
    // Only sizes proven at the core count: the axes MatMul(Q, Kᵀ) contracts. When they agree,
    // K's heads have Q's head size, whatever regrouping happened on the way.
    b.k_head_dim = (same(core.q, core.k) ? d : core.k).opt();
  }
  if (!k.per_head.empty()) b.kv_heads = static_cast<int64_t>(k.per_head.size());
  else if (einsum_heads(k).positive()) b.kv_heads = einsum_heads(k).opt();
  else if (k_out.positive()) b.kv_heads = exact_div(k_out, d).opt();
  if (Int vd = exact_div(v_out, einsum_heads(v)); vd.positive()) {
    b.v_head_dim = vd.opt();
  } else if (!v.per_head.empty()) {
    b.v_head_dim = v.per_head[0].out.opt();
  } else if (Int vd = last(v.reshape); vd.positive()) {
    b.v_head_dim = vd.opt();
  } else if (Int kv = b.kv_heads; kv.positive()) {
    b.v_head_dim = exact_div(v_out, kv).opt();
  }
}

}  // namespace headcount::detail
