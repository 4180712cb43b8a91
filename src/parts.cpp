// parts.cpp: the parts of a model and the tensors each claims (see headcount/parts.h).
#include "headcount/parts.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "headcount/error.h"
#include "ops.h"

namespace headcount {

const char* part_name(Part p) {
  switch (p) {
    case Part::Attention: return "attention";
    case Part::Embeddings: return "embeddings";
    case Part::Norms: return "norms";
    case Part::FeedForward: return "feed_forward";
    case Part::RoutedExperts: return "routed_experts";
    case Part::Routers: return "routers";
    case Part::Buffers: return "buffers";
    case Part::Constants: return "constants";
    case Part::LMHead: return "lm_head";
    case Part::Mixers: return "mixers";
    case Part::Adapter: return "adapter";
    case Part::Other: return "other";
  }
  return "other";
}

namespace {

bool is_norm(std::string_view op) { return op_has(op, Trait::Normalization); }
bool is_matmul(std::string_view op) { return op_has(op, Trait::MatrixProduct); }

// The stored tensor a product reads as its weight: itself, or through the casts, transposes and
// DequantizeLinear that exporters put between them (an int8 QDQ weight).
const Weight* weight_behind(const Model& m, int g, Name value) {
  for (int step = 0; step < 8 && !value.empty(); ++step) {
    if (const Weight* w = m.weight_for(g, value)) return w;
    int p = m.producer_of(g, value);
    if (p < 0) return nullptr;
    const auto& n = *m.nodes[static_cast<size_t>(p)].rec;
    if (!op_has(n.op_type(), Trait::Dequantize | Trait::Cast | Trait::LayoutOnly)) return nullptr;
    value = input_of(n, 0);
  }
  return nullptr;
}

// Walks upstream from a MatMul's activation input through elementwise ops, stopping at other
// MatMuls, norms and reductions. A feed-forward down-projection sees an activation on the way, and
// the MatMuls where the walk stops are its up (and gate) projections.
struct UpstreamScan {
  bool activation = false;
  std::vector<int> matmuls;
  VisitBudget& budget;  // wide fan-ins (a Concat of thousands) and doubling chains stay cheap
  // By value id: the visit that last looked at the value, so a value one node lists many times
  // (an Add of one MatMul output 30,000 times) is followed once.
  std::vector<uint32_t>& seen;
  uint32_t visits = 0;
};

void scan_upstream(const Model& m, int g, Name value, int depth, UpstreamScan& scan) {
  if (depth > 12 || !scan.budget.spend()) return;  // a QDQ-wrapped GELU MLP is 10 steps deep
  int p = m.producer_of(g, value);
  if (p < 0) return;
  const auto& n = *m.nodes[p].rec;
  std::string_view op = n.op_type();
  const uint64_t traits = op_traits(op);
  if (has(traits, Trait::MatrixProduct)) {
    scan.matmuls.push_back(p);
    return;
  }
  if (has(traits, Trait::Activation)) scan.activation = true;
  // The arithmetic of an activation (Algebraic), and the layout, cast and quantization steps
  // around it. Max, Min and Mod stay out, as this walk has always left them out: letting a clamp
  // through is a change of what the composition claims, not of how the walk is written.
  else if (!(has(traits, Trait::Algebraic | Trait::Cast | Trait::LayoutOnly | Trait::NoOp | Trait::Quantize |
                             Trait::Dequantize) ||
             op == "Where"sv)) {
    return;  // norms, reductions, Softmax, Concat...: not inside an MLP
  }
  const uint32_t visit = ++scan.visits;
  for (Name in : n.input()) {
    if (in.empty()) continue;
    // Each input looked at is spent too: a node listing thousands (weights among them, which are
    // not followed) costs a walk its allowance, not thousands of lookups per walk.
    if (!scan.budget.spend()) return;
    if (in.id >= 0 && static_cast<size_t>(in.id) < scan.seen.size()) {
      uint32_t& last = scan.seen[static_cast<size_t>(in.id)];
      if (last == visit) continue;
      last = visit;
    }
    if (!m.weight_for(g, in)) scan_upstream(m, g, in, depth + 1, scan);
  }
}

// Feed-forward tensors: down-projections (an activation upstream), the up/gate projections that
// feed them, and the biases added right after any of them. Each value and each consumer is looked
// at once, however many feed-forward nodes share it or a node lists it.
std::vector<bool> feed_forward_tensors(const Model& m, VisitBudget& budget) {
  std::vector<bool> ffn(m.weights.size(), false);
  std::vector<bool> ffn_node(m.nodes.size(), false);
  std::vector<uint32_t> seen(m.values.size(), 0);
  UpstreamScan scan{false, {}, budget, seen};
  for (size_t ni = 0; ni < m.nodes.size(); ++ni) {
    const auto& n = *m.nodes[ni].rec;
    if (!is_matmul(n.op_type()) || n.input_size() < 2) continue;
    scan.activation = false;
    scan.matmuls.clear();
    budget.start_walk(256);
    scan_upstream(m, m.nodes[ni].graph, input_of(n, 0), 0, scan);
    if (!scan.activation || scan.matmuls.empty()) continue;
    ffn_node[ni] = true;
    for (int up : scan.matmuls) ffn_node[up] = true;
  }
  std::vector<bool> value_done(m.values.size(), false), consumer_done(m.nodes.size(), false);
  for (size_t ni = 0; ni < m.nodes.size(); ++ni) {
    if (!ffn_node[ni]) continue;
    const auto& n = *m.nodes[ni].rec;
    int g = m.nodes[ni].graph;
    for (int i = 1; i < n.input_size(); ++i) {
      if (const Weight* w = weight_behind(m, g, input_of(n, i))) ffn[static_cast<size_t>(w - m.weights.data())] = true;
    }
    for (Name out : n.output()) {
      int id = m.value_id(g, out);
      if (id < 0 || value_done[static_cast<size_t>(id)]) continue;
      value_done[static_cast<size_t>(id)] = true;
      for (int c : m.consumers(id)) {
        if (consumer_done[static_cast<size_t>(c)]) continue;
        consumer_done[static_cast<size_t>(c)] = true;
        const auto& cn = *m.nodes[c].rec;
        if (cn.op_type() != "Add"sv && !op_has(cn.op_type(), Trait::BiasActivation)) continue;
        for (const auto& in : cn.input()) {
          const Weight* w = weight_behind(m, g, in);
          if (w && w->dims.size() == 1) ffn[static_cast<size_t>(w - m.weights.data())] = true;
        }
      }
    }
  }
  return ffn;
}

// A decomposed LayerNorm/RMSNorm ends in Mul(normalized, gamma) [+ beta]: the normalized value
// comes from a Div or Mul whose divisor passes through Sqrt/Reciprocal.
bool is_decomposed_norm(const Model& m, int ni, VisitBudget& budget, int depth = 0) {
  if (depth > 3 || !budget.spend()) return false;
  const auto& n = *m.nodes[ni].rec;
  for (const auto& in : n.input()) {
    int p = m.producer_of(m.nodes[ni].graph, in);
    if (p < 0) continue;
    std::string_view op = m.nodes[p].rec->op_type();
    if (op_has(op, Trait::InverseOrRoot) || is_norm(op)) return true;
    if (op_has(op, Trait::Scales) && is_decomposed_norm(m, p, budget, depth + 1)) return true;
  }
  return false;
}

// An untied LM head: the weight of a MatMul (or Gemm) that projects the width of an embedding
// table to its vocabulary, [width, vocabulary] (or [vocabulary, width] under Gemm's transB).
Part lm_head(const Model& m, const Weight& w, const std::set<std::pair<int64_t, int64_t>>& tables) {
  if (w.dims.size() != 2 || tables.empty()) return Part::Other;
  for (int ni : w.consumers) {
    const auto& n = *m.nodes[ni].rec;
    if (n.input_size() < 2 || input_of(n, 1) != w.name) continue;
    bool out_first = n.op_type() == "Gemm"sv && [&] {
      for (const Attribute& a : n.attribute()) {
        if (a.name == "transB"sv) return a.i != 0;
      }
      return false;
    }();
    if (!op_has(n.op_type(), Trait::PlainProduct)) continue;
    int64_t in = out_first ? w.dims[1] : w.dims[0], out = out_first ? w.dims[0] : w.dims[1];
    if (tables.count({out, in})) return Part::LMHead;
  }
  return Part::Other;
}

// Each weight's part as the claims are made, and whether a claim has decided it (a later,
// weaker claim does not take a decided weight).
struct Claims {
  std::vector<Part> category;
  std::vector<bool> decided;
  explicit Claims(size_t weights) : category(weights, Part::Other), decided(weights, false) {}
  void claim(size_t weight, Part part) {
    category[weight] = part;
    decided[weight] = true;
  }
  // A claim that leaves a weight an earlier claim decided.
  void claim_undecided(size_t weight, Part part) {
    if (!decided[weight]) claim(weight, part);
  }
};

// The matchers' claims: each attention block's projections and extras, then the experts' routed
// weights and routers.
void claim_matched(const AttentionResult& attention, const ExpertResult& experts, Claims& claims) {
  for (const auto& b : attention.blocks) {
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(r).tensors) claims.claim(t.weight, Part::Attention);
    }
    for (const auto& e : b.extras) claims.claim(e.weight, Part::Attention);
  }
  for (const auto& l : experts.layers) {
    for (int wi : l.routed_weights) claims.claim_undecided(static_cast<size_t>(wi), Part::RoutedExperts);
    for (int wi : l.router_weights) claims.claim_undecided(static_cast<size_t>(wi), Part::Routers);
  }
}

// The framework's buffers and constants, the token mixers' tensors, and a checkpoint's tensors by
// their names.
void claim_stated(const Model& model, const FrameworkView& framework, const MixerResult& mixers,
                  const std::vector<Part>* named, Claims& claims) {
  for (const auto& b : framework.buffers) claims.claim(static_cast<size_t>(b.weight), Part::Buffers);
  for (const auto& c : framework.constants) claims.claim(static_cast<size_t>(c.weight), Part::Constants);
  for (const auto& mx : mixers.mixers) {
    for (const auto& t : mx.tensors) claims.claim_undecided(static_cast<size_t>(t.weight), Part::Mixers);
  }
  if (named) {  // a checkpoint's tensors, by their names (checkpoint/names.cpp)
    for (size_t i = 0; i < model.weights.size() && i < named->size(); ++i) {
      if (claims.decided[i] || (*named)[i] == Part::Other || !model.weights[i].parameter) continue;
      claims.claim(i, (*named)[i]);
    }
  }
}

// The vocabularies and widths of the embedding tables, for the LM head.
std::set<std::pair<int64_t, int64_t>> embedding_tables(const Model& model) {
  std::set<std::pair<int64_t, int64_t>> tables;  // (vocabulary, width)
  for (const Weight& w : model.weights) {
    if (w.dims.size() != 2 || !w.parameter) continue;
    for (int ni : w.consumers) {
      const auto& n = *model.nodes[ni].rec;
      if (n.op_type() == "Gather"sv && n.input_size() > 0 && input_of(n, 0) == w.name) tables.insert({w.dims[0], w.dims[1]});
    }
  }
  return tables;
}

// The part the first telling consumer of a weight makes it (an embedding's Gather, a norm),
// Other when none does.
Part part_by_use(const Model& model, const Weight& w, VisitBudget& budget) {
  for (int ni : w.consumers) {
    const auto& n = *model.nodes[ni].rec;
    std::string_view op = n.op_type();
    if (op == "Gather"sv && n.input_size() > 0 && input_of(n, 0) == w.name && w.dims.size() == 2) return Part::Embeddings;
    if (op == "EmbedLayerNormalization"sv && w.dims.size() == 2) return Part::Embeddings;
    if (is_norm(op) && w.dims.size() == 1) return Part::Norms;
    if (op_has(op, Trait::Affine) && w.dims.size() == 1 && [&] {
          budget.start_walk(64);
          return is_decomposed_norm(model, ni, budget);
        }()) {
      return Part::Norms;
    }
  }
  return Part::Other;
}

// The weights no claim decided, by how the graph uses them: feed-forward, an untied LM head, an
// embedding table or a norm.
void classify_by_use(const Model& model, Claims& claims, VisitBudget& budget) {
  std::vector<bool> ffn = feed_forward_tensors(model, budget);
  std::set<std::pair<int64_t, int64_t>> tables = embedding_tables(model);
  for (size_t i = 0; i < model.weights.size(); ++i) {
    if (claims.decided[i]) continue;
    if (ffn[i]) {
      claims.category[i] = Part::FeedForward;
      continue;
    }
    const Weight& w = model.weights[i];
    if (Part head = lm_head(model, w, tables); head == Part::LMHead) {
      claims.category[i] = head;
      continue;
    }
    if (Part part = part_by_use(model, w, budget); part != Part::Other) claims.category[i] = part;
  }
}

// A stored tensor given the part of the weight it goes with, unless its own part is decided or
// it has more axes than a scale or zero point has (per tensor or per channel: `most_axes`).
void claim_with(const Model& model, int g, Name value, Part part, Claims& claims, size_t most_axes = SIZE_MAX) {
  const Weight* q = model.weight_for(g, value);
  if (!q || q->dims.size() > most_axes) return;
  size_t qi = static_cast<size_t>(q - model.weights.data());
  if (!claims.decided[qi] && claims.category[qi] == Part::Other) claims.category[qi] = part;
}

// MatMulInteger's weight scale: onnxruntime's dynamic quantizer Casts the product to float and
// multiplies it by Mul(input scale, weight scale); the stored operand of that Mul goes with the
// weight when it is one: a scalar or a vector (per output channel), never a matrix.
void claim_integer_scale(const Model& model, int g, const NodeRec& product, Part part, Claims& claims) {
  const auto& casts = model.consumers_of(g, output_of(product, 0));
  if (casts.size() != 1 || !op_has(model.nodes[casts[0]].rec->op_type(), Trait::Cast)) return;
  for (int c : model.consumers_of(g, output_of(*model.nodes[casts[0]].rec, 0))) {
    const auto& mul = *model.nodes[c].rec;
    if (!op_has(mul.op_type(), Trait::Scales) || !op_has(mul.op_type(), Trait::Affine)) continue;  // Mul
    for (const auto& in : mul.input()) {
      int p = model.producer_of(g, in);
      if (p < 0) continue;
      const auto& scales = *model.nodes[p].rec;
      if (!op_has(scales.op_type(), Trait::Scales) || !op_has(scales.op_type(), Trait::Affine)) continue;
      for (const auto& s : scales.input()) claim_with(model, g, s, part, claims, 1);
    }
  }
}

// The tensors that go with another: a tied copy with its original, and a quantized weight's
// scale and zero point with the weight: DequantizeLinear's inputs 1, 2, and MatMulInteger's
// weight zero point (input 3) and the scale its output is multiplied by.
void claim_companions(const Model& model, const std::vector<DuplicatePair>& duplicates, Claims& claims) {
  std::vector<Part>& category = claims.category;
  for (const auto& d : duplicates) {  // a tied copy belongs with its original
    if (!claims.decided[d.copy]) category[d.copy] = category[d.original];
  }
  for (size_t ni = 0; ni < model.nodes.size(); ++ni) {
    const auto& n = *model.nodes[ni].rec;
    bool dequantize = n.op_type() == "DequantizeLinear"sv;
    bool integer = n.op_type() == "MatMulInteger"sv;  // its weight is input 1, not 0
    if ((!dequantize && !integer) || n.input_size() < 2) continue;
    int g = model.nodes[ni].graph;
    const Weight* data = model.weight_for(g, input_of(n, dequantize ? 0 : 1));
    if (!data) continue;
    Part part = category[static_cast<size_t>(data - model.weights.data())];
    if (part == Part::Other) continue;
    if (integer) {
      if (n.input_size() > 3) claim_with(model, g, input_of(n, 3), part, claims, 1);
      claim_integer_scale(model, g, n, part, claims);
      continue;
    }
    for (int i = 1; i < n.input_size() && i < 3; ++i) claim_with(model, g, input_of(n, i), part, claims);
  }
}

// The parameters of each part, and those of no part, most elements first.
Composition tally(const Model& model, const std::vector<Part>& category) {
  Composition c;
  c.part_of.assign(model.weights.size(), Part::Other);
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (!w.parameter) continue;
    c.part_of[i] = category[i];
    switch (category[i]) {
      case Part::Attention: c.attention += w.elements; break;
      case Part::Embeddings: c.embeddings += w.elements; break;
      case Part::Norms: c.norms += w.elements; break;
      case Part::FeedForward: c.feed_forward += w.elements; break;
      case Part::RoutedExperts: c.routed_experts += w.elements; break;
      case Part::Routers: c.routers += w.elements; break;
      case Part::Buffers: c.buffers += w.elements; break;
      case Part::Constants: c.constants += w.elements; break;
      case Part::LMHead: c.lm_head += w.elements; break;
      case Part::Mixers: c.mixers += w.elements; break;
      case Part::Adapter: c.adapter += w.elements; break;
      case Part::Other:
        c.other += w.elements;
        c.unclaimed.push_back(static_cast<int>(i));
        break;
    }
  }
  std::stable_sort(c.unclaimed.begin(), c.unclaimed.end(),
                   [&](int a, int b) { return model.weights[static_cast<size_t>(a)].elements > model.weights[static_cast<size_t>(b)].elements; });
  return c;
}

}  // namespace

Composition compose(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                    const MixerResult& mixers, const std::vector<DuplicatePair>& duplicates, const FrameworkView& framework,
                    const std::vector<Part>* named) {
  Claims claims(model.weights.size());
  claim_matched(attention, experts, claims);
  claim_stated(model, framework, mixers, named, claims);
  // Classification walks share one budget: a model built to make them expensive gets "other".
  VisitBudget budget(model);
  classify_by_use(model, claims, budget);
  claim_companions(model, duplicates, claims);
  return tally(model, claims.category);
}

std::string unclaimed_reason(const Model& model, int weight) {
  const Weight& w = model.weights[static_cast<size_t>(weight)];
  if (model.checkpoint) return "its name is in none of the tables of known names";
  if (w.consumers.empty()) return "no node reads it";
  const auto& n = *model.nodes[static_cast<size_t>(w.consumers[0])].rec;
  std::string who = std::string(n.op_type()) + " '" + std::string(n.name().empty() ? output_of(n, 0) : n.name()) + "'";
  if (w.consumers.size() > 1) who += " and " + std::to_string(w.consumers.size() - 1) + " more";
  return "read by " + who;
}

}  // namespace headcount
