// latent.cpp: multi-head latent attention (MLA, DeepSeek-V2/V3 and their descendants).
//
// An unfused block whose V projection reads a normed slice of another projection is read as
// latent attention when every piece of the structure is in the graph:
//
//   x -> down_kv -> [latent | rope key]; latent -> norm -> up_kv -> per head [K part | V]
//   K at the core = per head [K part of up_kv | the rope key, shared by all heads]
//   Q = up_q(norm(down_q(x))), or one plain projection
//
// Then each factor is counted in its role (down_q and up_q in Q, down_kv and up_kv's K columns
// in K, up_kv's V columns in V), the norms are the block's extras, and heads x head size is not
// compared with the width: latent attention does not split the width into heads.
#include <algorithm>
#include <deque>
#include <set>

#include "matcher.h"
#include "../ops.h"

namespace headcount::detail {

namespace {

// A norm's own steps (ReduceMean is a reduction, asked first), a negation and an Identity between
// them. Abs and Dropout are left out, as they always were.
bool elementwise(std::string_view op) {
  const uint64_t traits = op_traits(op);  // one lookup for the three questions
  if (has(traits, Trait::NormStep)) return true;
  if (has(traits, Trait::SignChange)) return op != "Abs"sv;
  return has(traits, Trait::NoOp) && op != "Dropout"sv;
}

bool reduction(std::string_view op) { return op_has(op, Trait::NormReduce); }

}  // namespace

std::optional<Matcher::NormHit> Matcher::norm_before(int g, Name value) {
  int p = m_.producer_of(g, value);
  if (p < 0 || !budget_.spend()) return std::nullopt;
  const auto& n = *m_.nodes[p].rec;
  NormHit r;
  auto learned = [&](Name v) {
    auto w = walker_.weight_of(g, v);
    if (w && m_.weights[w->weight].parameter && m_.weights[w->weight].elements > 1) r.weights.push_back(w->weight);
    return w.has_value();
  };
  if (op_has(n.op_type(), Trait::TokenNorm) && !op_has(n.op_type(), Trait::AddsSkip)) {
    r.input = input_of(n, 0);
    for (int i = 1; i < n.input_size(); ++i) learned(input_of(n, i));
    return r;
  }
  // Written out. First the reduction: RMSNorm reduces x² (Pow or Mul(x, x)), LayerNorm x and
  // (x - mean)²; what it reduces, with those steps taken off, is the norm's input x.
  // The walks hold the names the skeleton owns (and `value`), by address: no copies.
  std::vector<Name> stack{value};
  std::set<std::string_view> seen;
  Name x;
  while (!stack.empty() && x.empty()) {
    Name v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    if (seen.size() > 32 || !budget_.spend()) return std::nullopt;
    int q = m_.producer_of(g, v);
    if (q < 0) continue;
    const auto& qn = *m_.nodes[q].rec;
    if (reduction(qn.op_type())) {
      x = input_of(qn, 0);
      for (int step = 0; step < 4; ++step) {
        int s = m_.producer_of(g, x);
        if (s < 0) break;
        const auto& sn = *m_.nodes[s].rec;
        // The steps of the statistic before its reduction, taken off: x² (a Pow, or a Mul of x by
        // itself), x − mean (a Sub) and a Cast.
        std::string_view sop = sn.op_type();
        bool power = sop == "Pow"sv;
        bool self_product = sop == "Mul"sv && input_of(sn, 0) == input_of(sn, 1);
        bool mean_removed = sop == "Sub"sv;
        if (!power && !self_product && !mean_removed && sop != "Cast"sv) break;
        x = input_of(sn, 0);
      }
    } else if (elementwise(qn.op_type())) {
      for (Name in : qn.input()) stack.push_back(in);
    }
  }
  if (x.empty()) return std::nullopt;
  // Then everything between x and the output must be element-wise steps over x and constants.
  stack = {value};
  seen.clear();
  while (!stack.empty()) {
    Name v = stack.back();
    stack.pop_back();
    if (v == x || v.empty() || !seen.insert(v).second) continue;
    if (seen.size() > 32 || !budget_.spend()) return std::nullopt;
    if (learned(v)) continue;
    int q = m_.producer_of(g, v);
    if (q < 0) return std::nullopt;  // another graph input: not a norm of x alone
    const auto& qn = *m_.nodes[q].rec;
    if (reduction(qn.op_type())) {
      stack.push_back(input_of(qn, 0));
    } else if (elementwise(qn.op_type())) {
      for (Name in : qn.input()) stack.push_back(in);
    } else {
      return std::nullopt;  // something else feeds it: not a norm of x alone
    }
  }
  r.input = x;
  std::set<int> unique(r.weights.begin(), r.weights.end());
  r.weights.assign(unique.begin(), unique.end());
  return r;
}

bool Matcher::reaches(int g, Name value, int node) {
  // Breadth first, and never past another product: the path from a projection to the core holds
  // only shape and element-wise steps, and the graph behind a product is another layer's.
  std::deque<Name> queue{value};
  std::set<std::string_view> seen;
  while (!queue.empty()) {
    Name v = queue.front();
    queue.pop_front();
    if (v.empty() || !seen.insert(v).second) continue;
    if (seen.size() > 128 || !budget_.spend()) return false;
    int p = m_.producer_of(g, v);
    if (p == node) return true;
    if (p < 0) continue;
    const auto& n = *m_.nodes[p].rec;
    std::string_view op = n.op_type();
    // A product ends the path (an Einsum whatever its equation), and so does the scores' Softmax
    // (not a LogSoftmax, which is no score, as it never was).
    bool ends = op_has(op, Trait::PlainProduct) || op == "Einsum"sv;
    ends = ends || op == "Softmax"sv;
    if (ends || walker_.as_projection(g, p, input_of(n, 0))) continue;
    // Shape operands (a Reshape's target, Slice bounds, Expand's shape) carry no data.
    bool data_only = op_has(op, Trait::ShapeOperands);
    for (int i = 0; i < (data_only ? std::min(1, n.input_size()) : n.input_size()); ++i) queue.push_back(input_of(n, i));
  }
  return false;
}

std::string Matcher::absorbed_latent(int g, Name k_value, Name v_value) {
  // K and V read one tensor: strip the layout steps on both sides.
  auto strip = [&](Name v) {
    for (int step = 0; step < 6; ++step) {
      int p = m_.producer_of(g, v);
      if (p < 0) break;
      const auto& n = *m_.nodes[p].rec;
      if (!op_has(n.op_type(), Trait::LayoutOnly | Trait::Cast)) {
        break;
      }
      v = input_of(n, 0);
    }
    return v;
  };
  Name k = strip(k_value);
  if (k.empty() || k != strip(v_value) || m_.producer_of(g, k) < 0) return "";
  auto norm = norm_before(g, k);
  if (!norm) return "";
  ProjectionHit down = walker_.back(g, norm->input);
  if (!down.found() || !down.per_head.empty() || !down.part.length) return "";
  return "looks like attention, but its K and V are one tensor, the normed part of " + walker_.label(down.node) +
         ": multi-head latent attention with its up projections absorbed into Q and O, as inference engines "
         "rewrite it. headcount reads latent attention in its exported form (K and V projected up before the "
         "core)";
}

void Matcher::latent(int g, AttentionBlock& b, const ProjectionHit& q, const ProjectionHit& v, Name k_value,
                     Name v_value) {
  if (!v.found() || !v.per_head.empty() || v.weight.rows || !q.found() || !b.heads || !b.head_dim) return;
  budget_.start_walk(512);  // an allowance of its own, after the walks that found the projections
  auto kv = latent_kv(g, b, v, k_value, v_value);
  if (!kv) return;
  auto lq = latent_q(g, q);
  if (!lq) return;
  Projection nq, nk, nv;
  if (!latent_shares(*kv, *lq, v, nq, nk, nv)) return;
  b.q = std::move(nq);
  b.k = std::move(nk);
  b.v = std::move(nv);
  set_latent(g, b, *kv, *lq, v);
}

std::optional<Matcher::LatentKV> Matcher::latent_kv(int g, const AttentionBlock& b, const ProjectionHit& v,
                                                    Name k_value, Name v_value) {
  LatentKV kv;
  // K/V: the up projection reads a normed part of the down projection's output.
  auto kv_norm = norm_before(g, v.input);
  if (!kv_norm) return std::nullopt;
  // The latent is a part of the down projection's output: a Split or Slice feeds the norm (an
  // ordinary block's norm reads the residual stream, which is not walked back).
  int cut = m_.producer_of(g, kv_norm->input);
  if (cut < 0 || !op_has(m_.nodes[cut].rec->op_type(), Trait::Cuts)) return std::nullopt;
  kv.norm = std::move(*kv_norm);
  kv.down = walker_.back(g, kv.norm.input);
  const ProjectionHit& down = kv.down;
  if (!down.found() || !down.per_head.empty() || down.weight.rows || down.node == v.node || down.reshape) return std::nullopt;
  kv.h = *b.heads, kv.qk = *b.head_dim, kv.kv_rank = v.in;
  kv.rope = down.out - kv.kv_rank;
  // The latent is the part of the down projection the norm reads, the graph says which part, and
  // the rest is the RoPE key.
  if (!kv.kv_rank.positive() || !kv.rope.positive() || !same(down.part.length, kv.kv_rank)) return std::nullopt;
  kv.nope = kv.qk - kv.rope;
  kv.vd = exact_div(v.out, kv.h) - kv.nope;
  if (!kv.nope.positive() || !kv.vd.positive()) return std::nullopt;
  if (differ(shapes_.dims(g, v_value).last(), kv.vd)) return std::nullopt;  // the graph states another V head size
  // K must be made from the up projection and (its RoPE key) from the down projection.
  if (!reaches(g, k_value, v.node) || !reaches(g, k_value, down.node)) return std::nullopt;
  return kv;
}

std::optional<Matcher::LatentQ> Matcher::latent_q(int g, const ProjectionHit& q) {
  // Q: up_q(norm(down_q(x))) when there is a latent, else one projection.
  LatentQ lq;
  lq.up = q.per_head.empty() ? q : q.per_head[0];
  for (const auto& each : q.per_head) {
    if (each.node != lq.up.node) return std::nullopt;  // Q made of several projections: not this form
  }
  if (lq.up.weight.rows) return std::nullopt;
  lq.up.part = {};
  lq.up.selected = false;
  lq.norm = norm_before(g, lq.up.input);
  if (lq.norm) {
    lq.down = walker_.back(g, lq.norm->input);
    const ProjectionHit& down_q = lq.down;
    if (!down_q.found() || !down_q.per_head.empty() || down_q.selected || down_q.weight.rows || down_q.node == lq.up.node) {
      lq.norm.reset();
    }
  }
  return lq;
}

bool Matcher::latent_shares(const LatentKV& kv, const LatentQ& lq, const ProjectionHit& v, Projection& nq,
                            Projection& nk, Projection& nv) {
  const Int &h = kv.h, &nope = kv.nope, &vd = kv.vd;
  // Counted: K/V's up projection split per head into K columns and V columns.
  Int k_weight = kv.kv_rank * h * nope, v_weight = kv.kv_rank * h * vd;
  if (!k_weight.count() || !v_weight.count()) return false;
  const auto& up_node = *m_.nodes[v.node].rec;
  bool out_first = v.weight.transposed != (up_node.op_type() == "Gemm"sv && attr_flag(up_node, "transB"));
  std::string axis = out_first ? "rows " : "columns ";
  std::string each = " of each head's " + exact_div(v.out, h).str() + " (" + h.str() + " heads)";
  fill(nq, lq.up);
  if (lq.norm) {
    Projection dq;
    fill(dq, lq.down);
    nq.weight = plus(nq.weight, dq.weight);
    nq.bias = plus(nq.bias, dq.bias);
    nq.tensors.insert(nq.tensors.begin(), dq.tensors.begin(), dq.tensors.end());
    nq.in_width = dq.in_width;
  }
  ProjectionHit down_whole = kv.down;
  down_whole.part = {};
  fill(nk, down_whole);
  nk.out_width = (h * kv.qk).value_or(0);
  nk.tensors.push_back({v.weight.weight, false, *k_weight.count(), axis + "0:" + nope.str() + each});
  nk.weight = plus(nk.weight, *k_weight.count());
  nv.found = true;
  nv.in_width = nk.in_width;
  nv.out_width = (h * vd).value_or(0);
  nv.tensors.push_back({v.weight.weight, false, *v_weight.count(), axis + nope.str() + ":" + (nope + vd).str() + each});
  nv.weight = *v_weight.count();
  if (v.bias >= 0 && !v.bias_range && m_.weights[v.bias].elements == static_cast<uint64_t>(v.out.value_or(-1))) {
    uint64_t kb = static_cast<uint64_t>(*(h * nope)), vb = static_cast<uint64_t>(*(h * vd));
    nk.tensors.push_back({v.bias, true, kb, "elements 0:" + nope.str() + each});
    nk.bias = plus(nk.bias, kb);
    nv.tensors.push_back({v.bias, true, vb, "elements " + nope.str() + ":" + (nope + vd).str() + each});
    nv.bias = vb;
  } else if (v.bias >= 0) {
    return false;  // a bias the K/V split cannot be read from
  }
  return true;
}

void Matcher::set_latent(int g, AttentionBlock& b, const LatentKV& kv, const LatentQ& lq, const ProjectionHit& v) {
  b.kv_heads = *kv.h;
  b.k_head_dim = *kv.qk;
  b.v_head_dim = *kv.vd;
  b.width = b.q.in_width;
  const ProjectionHit &up_q = lq.up, &down_q = lq.down, &down = kv.down;
  std::string q_source = source_of(g, lq.norm ? down_q.input : up_q.input);
  b.kind = !q_source.empty() && q_source == source_of(g, down.input) ? "self" : "cross";
  for (const auto* norm : {lq.norm ? &*lq.norm : nullptr, &kv.norm}) {
    if (norm) {
      for (int wi : norm->weights) add_extra(b, wi, ExtraRole::LatentNorm);
    }
  }
  LatentAttention la;
  la.q_rank = lq.norm ? up_q.in.value_or(0) : 0;
  la.kv_rank = *kv.kv_rank;
  la.rope_dim = *kv.rope;
  la.qk_nope_dim = *kv.nope;
  la.v_head_dim = *kv.vd;
  la.from = (lq.norm ? "Q through " + walker_.label(down_q.node) + " → norm → " + walker_.label(up_q.node) + "; "
                     : std::string("Q from ") + walker_.label(up_q.node) + "; ") +
            "K/V through " + walker_.label(down.node) + " (" + kv.kv_rank.str() + " latent + " + kv.rope.str() +
            " RoPE key) → norm → " + walker_.label(v.node) + " (per head " + kv.nope.str() + " K + " + kv.vd.str() + " V)";
  b.latent = std::move(la);
}

}  // namespace headcount::detail
