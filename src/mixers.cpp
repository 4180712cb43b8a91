// mixers.cpp: token mixers that are not softmax attention (see headcount/mixers.h).
#include "headcount/mixers.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "shapes.h"
#include "stages.h"
#include "ops.h"
#include "payload.h"
#include "headcount/checked.h"

namespace headcount {

const char* mixer_kind_name(MixerKind k) {
  switch (k) {
    case MixerKind::LinearAttention: return "linear_attention";
    case MixerKind::StateSpace: return "state_space";
    case MixerKind::DeltaRule: return "delta_rule";
  }
  return "?";
}

namespace {

constexpr size_t kMostRegionNodes = 8192;  // a sublayer larger than this is not bounded

std::string label(const Model& m, int node) {
  const auto& n = *m.nodes[static_cast<size_t>(node)].rec;
  return std::string(n.op_type()) + " '" + std::string(n.name().empty() ? output_of(n, 0) : n.name()) + "'";
}

// A product whose input 1 is its weight (QLinearMatMul's is a scale; its weight is input 3).
bool is_product(std::string_view op) { return op_has(op, Trait::MatrixProduct) && op != "QLinearMatMul"sv; }

// The ops an exporter puts between a stored tensor and its use, which weight_behind looks through.
bool passes_weight(std::string_view op) { return op_has(op, Trait::Dequantize | Trait::Cast | Trait::LayoutOnly); }

// The stored tensor behind a value: itself, or through the casts, transposes and
// DequantizeLinear that exporters put before a product.
int weight_behind(const Model& m, int g, Name value) {
  for (int step = 0; step < 8 && !value.empty(); ++step) {
    if (const Weight* w = m.weight_for(g, value)) return static_cast<int>(w - m.weights.data());
    int p = m.producer_of(g, value);
    if (p < 0) return -1;
    const auto& n = *m.nodes[static_cast<size_t>(p)].rec;
    if (!passes_weight(n.op_type())) return -1;
    value = input_of(n, 0);
  }
  return -1;
}

// A product of an activation by a stored weight: the weight's index, else -1.
int product_weight(const Model& m, int node) {
  const auto& n = *m.nodes[static_cast<size_t>(node)].rec;
  if (!is_product(n.op_type()) || n.input_size() < 2) return -1;
  int g = m.nodes[static_cast<size_t>(node)].graph;
  if (weight_behind(m, g, input_of(n, 0)) >= 0) return -1;  // both constant: not a projection
  return weight_behind(m, g, input_of(n, 1));
}

// A depthwise convolution over one axis (Conv1d with groups = channels): weight [C, 1, k].
bool depthwise_conv1d(const Model& m, int node) {
  const auto& n = *m.nodes[static_cast<size_t>(node)].rec;
  if (n.op_type() != "Conv"sv || n.input_size() < 2) return false;
  const Weight* w = m.weight_for(m.nodes[static_cast<size_t>(node)].graph, input_of(n, 1));
  if (!w || w->dims.size() != 3 || w->dims[1] != 1 || w->dims[0] < 2 || w->dims[2] < 2) return false;
  for (const Attribute& a : n.attribute()) {
    if (a.name == "group"sv) return a.has_i && a.i == w->dims[0];
  }
  return false;
}

class MixerMatcher {
 public:
  MixerMatcher(detail::SharedShapes& shapes, const AttentionResult& attention, const ExpertResult& experts,
               const FrameworkView& fw)
      : m_(shapes.model()),
        budget_(m_),
        claimed_(m_.weights.size(), false),
        core_(m_.nodes.size(), false),
        shapes_(shapes) {
    budget_.share(&shapes.budget(), "mixers");  // every visit also spends the audit's value budget
    for (const auto& b : attention.blocks) {
      for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
        for (const auto& t : b.projection(r).tensors) claimed_[static_cast<size_t>(t.weight)] = true;
      }
      for (const auto& e : b.extras) claimed_[static_cast<size_t>(e.weight)] = true;
      if (b.core_node >= 0) core_[static_cast<size_t>(b.core_node)] = true;
      for (int c : b.merged_cores) core_[static_cast<size_t>(c)] = true;
    }
    for (const auto& l : experts.layers) {
      for (const auto* list : {&l.routed_weights, &l.router_weights, &l.shared_weights}) {
        for (int wi : *list) claimed_[static_cast<size_t>(wi)] = true;
      }
    }
    for (const auto& b : fw.buffers) claimed_[static_cast<size_t>(b.weight)] = true;
    for (const auto& c : fw.constants) claimed_[static_cast<size_t>(c.weight)] = true;
    for (const auto& out : m_.proto->graph().output()) outputs_.insert(out.name());
    if (m_.graphs.size() > 1) index_body_reads();
  }

  MixerResult run() {
    MixerResult r;
    std::vector<bool> used(m_.nodes.size(), false);  // anchors already inside a mixer
    for (size_t ni = 0; ni < m_.nodes.size(); ++ni) {
      const auto& n = *m_.nodes[ni].rec;
      bool cumsum = n.op_type() == "CumSum"sv;
      if (used[ni] || !(cumsum || depthwise_conv1d(m_, static_cast<int>(ni)))) continue;
      std::string why;
      auto mixer = region(static_cast<int>(ni), used, &why);
      if (mixer) r.mixers.push_back(std::move(*mixer));
      else if (!why.empty()) r.notes.push_back(label(m_, static_cast<int>(ni)) + " " + why);
    }
    for (size_t i = 0; i < r.mixers.size(); ++i) r.mixers[i].index = static_cast<int>(i);
    r.built = std::move(built_);
    return r;
  }

 private:
  const Model& m_;
  VisitBudget budget_;
  std::vector<bool> claimed_, core_;
  std::set<std::string_view> outputs_;
  detail::SharedShapes& shapes_;  // the audit's, built on first use: most models have no mixer
  std::vector<BufferTensor> built_;
  const Weight* delta_state_ = nullptr;  // the current delta-rule mixer's zero initial state
  // A Loop or Scan reads values of its own scope inside its body, by name: a recurrence written
  // as a loop reads the projections and the decay so. Per such value, the control-flow nodes that
  // read it so, and per node those values, as if they were its inputs. Empty for one graph.
  std::unordered_map<int, std::vector<int>> body_readers_;  // value id -> nodes of its scope
  std::unordered_map<int, std::vector<Name>> body_reads_;   // node -> values of its scope
  std::map<int, std::string_view> read_as_;  // the current mixer's weights, by the name it reads them as

  void index_body_reads() {
    std::unordered_set<uint64_t> seen;  // (node, value) pairs already indexed
    for (size_t id = 0; id < m_.values.size(); ++id) {
      const Value& v = m_.values[id];
      if (v.def < 0 || static_cast<size_t>(v.def) == id || v.consumer_count == 0) continue;
      const Value& d = m_.values[static_cast<size_t>(v.def)];
      if (d.graph == v.graph) continue;
      int x = v.graph;  // the scope directly inside d's whose owner is the reading node
      while (x >= 0 && m_.graphs[static_cast<size_t>(x)].parent != d.graph) x = m_.graphs[static_cast<size_t>(x)].parent;
      if (x < 0 || m_.graphs[static_cast<size_t>(x)].owner < 0) continue;
      int owner = m_.graphs[static_cast<size_t>(x)].owner;
      if (!seen.insert(uint64_t(static_cast<uint32_t>(owner)) << 32 | static_cast<uint32_t>(v.def)).second) continue;
      body_readers_[v.def].push_back(owner);
      body_reads_[owner].push_back(Name(d.name, v.def));
    }
  }

  // Who reads a value of scope g: its consumers and the control-flow nodes whose bodies read it.
  std::vector<int> readers(int g, Name v) const {
    NodeSpan direct = m_.consumers_of(g, v);
    std::vector<int> out(direct.begin(), direct.end());
    if (body_readers_.empty()) return out;
    int id = m_.value_id(g, v);
    auto it = id < 0 ? body_readers_.end() : body_readers_.find(id);
    if (it != body_readers_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    return out;
  }

  // The learned decay an Exp reads (A_log), through the copies an exporter makes of a weight
  // that two layers hold alike; null when it reads no stored tensor.
  const Weight* decay(int exp_node) const {
    int wi = weight_behind(m_, m_.nodes[static_cast<size_t>(exp_node)].graph,
                           input_of(*m_.nodes[static_cast<size_t>(exp_node)].rec, 0));
    return wi < 0 ? nullptr : &m_.weights[static_cast<size_t>(wi)];
  }

  // What a node reads: its inputs and, for a Loop or Scan, what its body reads of its scope.
  std::vector<Name> reads(int node) const {
    const auto& n = *m_.nodes[static_cast<size_t>(node)].rec;
    std::vector<Name> out;
    for (Name in : n.input()) out.push_back(in);
    auto it = body_reads_.find(node);
    if (it != body_reads_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    return out;
  }

  static bool all_zero(const Weight& w) {
    if (w.elements == 0 || w.elements > (uint64_t{1} << 24)) return false;
    return for_each_value(w, [](uint64_t, double v) { return v == 0; });
  }

  // The value the anchor's input projections read: walking back from the anchor through
  // anything but products, the products with a weight that it meets, and their common input.
  // -1 (and why) when they read different values or there is none.
  std::optional<std::pair<int, std::string>> entry(int anchor, std::string* why) {
    int g = m_.nodes[static_cast<size_t>(anchor)].graph;
    std::deque<std::string_view> queue{input_of(*m_.nodes[static_cast<size_t>(anchor)].rec, 0)};
    std::set<std::string_view> seen;
    std::set<std::string_view> reads;
    budget_.start_walk(512);
    while (!queue.empty()) {
      std::string_view v = queue.front();
      queue.pop_front();
      if (v.empty() || !seen.insert(v).second || m_.weight_for(g, v)) continue;
      if (!budget_.spend()) {
        *why = "is not read as a mixer: the walk to its input projections gave up";
        return std::nullopt;
      }
      int p = m_.producer_of(g, v);
      if (p < 0) continue;
      if (product_weight(m_, p) >= 0) {
        reads.insert(input_of(*m_.nodes[static_cast<size_t>(p)].rec, 0));
        continue;
      }
      if (core_[static_cast<size_t>(p)]) {
        *why = "";  // inside an attention block: not a mixer of its own
        return std::nullopt;
      }
      for (const auto& in : this->reads(p)) queue.push_back(in);
    }
    if (reads.size() != 1) {
      *why = reads.empty() ? "is not read as a mixer: no projection with a stored weight feeds it"
                           : "is not read as a mixer: its projections read " + std::to_string(reads.size()) + " different values";
      return std::nullopt;
    }
    return std::make_pair(g, std::string(*reads.begin()));
  }

  // The values a sublayer's input may be joined to again by the residual Add: the input itself
  // and, when a norm made it, the norm's own input.
  std::set<std::string> residual_sources(int g, const std::string& input) {
    std::set<std::string> out{input};
    int p = m_.producer_of(g, input);
    if (p < 0) return out;
    const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
    if (op_has(n.op_type(), Trait::TokenNorm)) {
      out.insert(std::string(input_of(n, 0)));
      return out;
    }
    // A norm written out: the values its arithmetic starts from (what ReduceMean and Pow read).
    std::deque<std::string_view> queue{input};
    std::set<std::string_view> seen;
    for (int steps = 0; !queue.empty() && steps < 32 && budget_.spend(); ++steps) {
      std::string_view v = queue.front();
      queue.pop_front();
      if (!seen.insert(v).second || m_.weight_for(g, v)) continue;
      int q = m_.producer_of(g, v);
      if (q < 0) continue;
      const auto& qn = *m_.nodes[static_cast<size_t>(q)].rec;
      const uint64_t traits = op_traits(qn.op_type());
      if (!has(traits, Trait::NormStep)) continue;
      // The steps that read x itself: the mean and the square (ReduceMean, Pow), the norm's steps
      // that shift, scale, take a root or cast nothing of x's own.
      const bool reads_x = !has(traits, Trait::Shifts | Trait::Scales | Trait::InverseOrRoot | Trait::Cast);
      for (const auto& in : qn.input()) {
        if (in.empty() || m_.weight_for(g, in)) continue;
        if (reads_x) out.insert(std::string(in));
        queue.push_back(in);
      }
    }
    return out;
  }

  // The nodes between a sublayer's input and the residual Adds that join it to the layer's input
  // (its exits), found forward from the input.
  struct Sublayer {
    std::vector<int> nodes;
    std::set<int> inside, exits;
  };

  // Forward from the input to the residual Adds: the sublayer's nodes. An Add that reads the input
  // itself and another value waits: when the input is the residual stream (a model without norms,
  // x + layer(x)) it is the exit once the sublayer reaches it; one the sublayer never reaches is
  // the sublayer's own (an Add of the normed input and something else), walked on from then.
  bool sublayer(int g, const std::string& input, const std::set<std::string>& sources, Sublayer& sub, std::string* why) {
    std::deque<std::string_view> queue{input};
    std::set<std::string_view> seen;
    std::vector<int> waiting;
    for (;;) {
      while (!queue.empty()) {
        std::string_view v = queue.front();
        queue.pop_front();
        if (!seen.insert(v).second) continue;
        if (outputs_.count(v)) {
          *why = "is not read as a mixer: its sublayer reaches the graph output '" + std::string(v) + "' without a residual Add";
          return false;
        }
        for (int c : readers(g, Name(v))) {
          if (!budget_.spend()) {
            *why = "is not read as a mixer: its sublayer could not be bounded";
            return false;
          }
          if (sub.inside.count(c) || sub.exits.count(c)) continue;
          const auto& cn = *m_.nodes[static_cast<size_t>(c)].rec;
          bool joins = false;
          if (cn.op_type() == "Add"sv) {
            for (Name x : cn.input()) joins = joins || sources.count(std::string(x)) > 0;
          }
          if (joins) {
            if (v != input) sub.exits.insert(c);
            else waiting.push_back(c);
            continue;
          }
          if (!enter(c, sub, queue, why)) return false;
        }
      }
      bool more = false;  // the waiting Adds the sublayer never reached are its own
      for (int c : waiting) {
        if (sub.exits.count(c) || sub.inside.count(c)) continue;
        if (!enter(c, sub, queue, why)) return false;
        more = true;
      }
      waiting.clear();
      if (!more) return true;
    }
  }

  // A node into the sublayer, its outputs onto the walk; false (and *why) at an attention core or
  // past the size bound.
  bool enter(int c, Sublayer& sub, std::deque<std::string_view>& queue, std::string* why) {
    if (core_[static_cast<size_t>(c)]) {
      *why = "";  // an attention block's sublayer
      return false;
    }
    sub.inside.insert(c);
    sub.nodes.push_back(c);
    if (sub.nodes.size() > kMostRegionNodes) {
      *why = "is not read as a mixer: its sublayer has more than " + std::to_string(kMostRegionNodes) + " nodes";
      return false;
    }
    for (const auto& out : m_.nodes[static_cast<size_t>(c)].rec->output()) queue.push_back(out);
    return true;
  }

  std::optional<Mixer> region(int anchor, std::vector<bool>& used, std::string* why) {
    auto in = entry(anchor, why);
    if (!in) return std::nullopt;
    auto [g, input] = *in;
    Sublayer sub;
    budget_.start_walk(static_cast<int64_t>(kMostRegionNodes) * 4);
    if (!sublayer(g, input, residual_sources(g, input), sub, why)) return std::nullopt;
    auto& [nodes, inside, exits] = sub;
    if (exits.empty()) {
      *why = "is not read as a mixer: no residual Add joins its sublayer to the layer's input";
      return std::nullopt;
    }
    // The nodes that compute from parameters alone for the sublayer (Mamba's A = -exp(A_log)).
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const auto& v : reads(nodes[i])) {
        int p = m_.producer_of(g, v);
        if (p < 0 || inside.count(p) || !from_parameters(g, p, 0)) continue;
        inside.insert(p);
        nodes.push_back(p);
      }
    }
    std::sort(nodes.begin(), nodes.end());  // node order is topological within a graph
    return build(anchor, g, input, nodes, exits, used, why);
  }

  // Whether a node computes from stored tensors alone (a few steps deep).
  bool from_parameters(int g, int node, int depth) {
    if (depth > 6 || !budget_.spend()) return false;
    const auto& n = *m_.nodes[static_cast<size_t>(node)].rec;
    if (n.input_size() == 0) return n.op_type() == "Constant"sv;
    for (const auto& v : reads(node)) {
      if (v.empty() || m_.weight_for(g, v)) continue;
      int p = m_.producer_of(g, v);
      if (p < 0 || !from_parameters(g, p, depth + 1)) return false;
    }
    return true;
  }

  // The products whose outputs reach one of `targets` inside the region without passing another
  // product: one walk back from the targets, not a walk forward for every product and target.
  std::set<int> products_reaching(int g, const std::set<int>& targets, const std::set<int>& inside) {
    std::set<int> found;
    if (budget_.exhausted()) return found;
    std::deque<int> queue(targets.begin(), targets.end());
    std::set<int> seen;
    while (!queue.empty() && budget_.spend()) {
      int n = queue.front();
      queue.pop_front();
      for (const auto& in : reads(n)) {
        int p = m_.producer_of(g, in);
        if (p < 0 || !inside.count(p) || !seen.insert(p).second) continue;
        if (product_weight(m_, p) >= 0) found.insert(p);
        else queue.push_back(p);
      }
    }
    return found;
  }

  // The nodes of a mixer's sublayer that say what kind of mixer it is.
  struct MixerNodes {
    std::vector<int> cumsums, convs, exps, products, sigmoids;
    bool learned_decay = false;
  };

  std::optional<Mixer> build(int anchor, int g, const std::string& input, const std::vector<int>& nodes,
                             const std::set<int>& exits, std::vector<bool>& used, std::string* why) {
    std::set<int> inside(nodes.begin(), nodes.end());
    MixerNodes parts = classify(nodes);
    Mixer mx;
    mx.anchor = anchor;
    if (!read_kind(parts, mx, why)) return std::nullopt;
    note_loop(nodes, mx);
    for (int c : parts.cumsums) used[static_cast<size_t>(c)] = true;
    for (int c : parts.convs) used[static_cast<size_t>(c)] = true;
    auto role_of = product_roles(g, input, inside, exits, parts, mx.kind, why);
    if (!role_of) return std::nullopt;
    std::map<int, std::string> tensors = tensor_roles(g, nodes, *role_of, mx.kind);
    drop_initial_states(mx.kind, tensors);
    for (auto& [wi, role] : tensors) {
      mx.tensors.push_back({wi, role, m_.weights[static_cast<size_t>(wi)].elements});
      mx.total += m_.weights[static_cast<size_t>(wi)].elements;
    }
    std::stable_sort(mx.tensors.begin(), mx.tensors.end(), [&](const MixerTensor& a, const MixerTensor& b) {
      return role_rank(a.role) < role_rank(b.role);
    });
    state(g, mx, parts.cumsums, parts.convs, parts.exps);
    mx.name = name_of(mx, anchor);
    return mx;
  }

  MixerNodes classify(const std::vector<int>& nodes) {
    MixerNodes parts;
    for (int ni : nodes) {
      const auto& n = *m_.nodes[static_cast<size_t>(ni)].rec;
      if (n.op_type() == "CumSum"sv) parts.cumsums.push_back(ni);
      if (n.op_type() == "Sigmoid"sv) parts.sigmoids.push_back(ni);
      if (depthwise_conv1d(m_, ni)) parts.convs.push_back(ni);
      if (n.op_type() == "Exp"sv && decay(ni)) {
        parts.exps.push_back(ni);
        parts.learned_decay = true;
      }
      if (product_weight(m_, ni) >= 0) parts.products.push_back(ni);
    }
    return parts;
  }

  // The kind of mixer and the evidence for it; false (and *why) when the sublayer is none.
  bool read_kind(const MixerNodes& parts, Mixer& mx, std::string* why) {
    const auto& cumsums = parts.cumsums;
    const auto& convs = parts.convs;
    const auto& exps = parts.exps;
    // A per-head decay (A_log [heads]) and a Sigmoid write strength beside the conv: the gated
    // delta rule (Gated DeltaNet); a decay per channel and state entry (A_log [d_inner, N]): Mamba.
    bool per_head_decay = !exps.empty() && decay(exps[0])->dims.size() == 1;
    if (!convs.empty() && parts.learned_decay && per_head_decay && !parts.sigmoids.empty()) {
      mx.kind = MixerKind::DeltaRule;
      mx.evidence = "a depthwise causal " + label(m_, convs[0]) + ", a per-head decay read through " + label(m_, exps[0]) +
                    " and a write strength through " + label(m_, parts.sigmoids[0]) + " (Gated DeltaNet's conv1d, A_log and beta)";
    } else if (!convs.empty() && parts.learned_decay) {
      mx.kind = MixerKind::StateSpace;
      mx.evidence = "a depthwise causal " + label(m_, convs[0]) + " and a learned decay read through " + label(m_, exps[0]) +
                    " (Mamba's conv1d and A_log)";
    } else if (!cumsums.empty() && convs.empty()) {
      mx.kind = MixerKind::LinearAttention;
      mx.evidence = std::to_string(cumsums.size()) + (cumsums.size() == 1 ? " cumulative sum" : " cumulative sums") + " (" +
                    label(m_, cumsums[0]) + (cumsums.size() > 1 ? ", ..." : "") +
                    ") of products of the projections: a running state instead of a Softmax over the context";
    } else {
      *why = "is not read as a mixer: its sublayer is neither a cumulative sum of projections nor a convolution with a learned decay";
      return false;
    }
    return true;
  }

  void note_loop(const std::vector<int>& nodes, Mixer& mx) {
    for (int ni : nodes) {  // a recurrence written as a loop over the sequence
      std::string_view op = m_.nodes[static_cast<size_t>(ni)].rec->op_type();
      if (op_has(op, Trait::Iterates)) {
        mx.evidence += "; its recurrence runs in " + label(m_, ni);
        break;
      }
    }
  }

  // Roles of the products: those reading the input, the one reaching the residual Add, the rest.
  // nullopt (and *why) when the walks that tell them apart run out of budget.
  std::optional<std::map<int, std::string>> product_roles(int g, const std::string& input, const std::set<int>& inside,
                                                          const std::set<int>& exits, const MixerNodes& parts, MixerKind kind,
                                                          std::string* why) {
    const auto& cumsums = parts.cumsums;
    std::map<int, std::string> role_of;  // product node -> role
    std::vector<int> entries, inner;
    int out_proj = -1;
    budget_.start_walk(static_cast<int64_t>(kMostRegionNodes) * 4);
    std::set<int> last = products_reaching(g, exits, inside);
    for (int p : parts.products) {
      const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
      if (input_of(n, 0) == input) {
        entries.push_back(p);
        continue;
      }
      if (last.count(p) && out_proj < 0) out_proj = p;
      else inner.push_back(p);
    }
    std::map<int, size_t> reached;  // entry product -> the cumulative sums it reaches
    if (kind == MixerKind::LinearAttention) {
      for (int c : cumsums) {
        budget_.start_walk(static_cast<int64_t>(kMostRegionNodes) * 4);
        for (int p : products_reaching(g, {c}, inside)) ++reached[p];
      }
    }
    if (budget_.exhausted()) {
      *why = "is not read as a mixer: the roles of its projections could not be worked out within the budget";
      return std::nullopt;
    }
    for (int p : entries) {
      if (kind != MixerKind::LinearAttention) {
        role_of[p] = "in_proj";
        continue;
      }
      size_t n = reached.count(p) ? reached[p] : 0;
      role_of[p] = n == 0 ? "q" : n == cumsums.size() && cumsums.size() > 1 ? "k" : "v";
    }
    if (out_proj >= 0) role_of[out_proj] = "out_proj";
    const char* inner_names[] = {"x_proj", "dt_proj"};
    for (size_t i = 0; i < inner.size(); ++i) {
      role_of[inner[i]] = kind == MixerKind::StateSpace && i < 2 ? inner_names[i] : "projection";
    }
    return role_of;
  }

  // Every learned tensor read inside, with its role (weight -> role); remembers in read_as_ the
  // name each is read as.
  std::map<int, std::string> tensor_roles(int g, const std::vector<int>& nodes, const std::map<int, std::string>& role_of,
                                          MixerKind kind) {
    std::map<int, std::string> tensors;  // weight -> role
    read_as_.clear();
    auto add = [&](int wi, const std::string& role) {
      if (wi < 0 || claimed_[static_cast<size_t>(wi)] || !m_.weights[static_cast<size_t>(wi)].parameter) return;
      tensors.emplace(wi, role);
    };
    for (auto& [p, role] : role_of) add(product_weight(m_, p), role);
    // The nodes that use a tensor first, then the copies and casts before them: a copy of a weight
    // that two layers hold alike (an Identity) has the role of what reads it.
    std::vector<int> order;
    for (int pass = 0; pass < 2; ++pass) {
      for (int ni : nodes) {
        if (passes_weight(m_.nodes[static_cast<size_t>(ni)].rec->op_type()) == (pass == 1)) order.push_back(ni);
      }
    }
    for (int ni : order) {
      const auto& n = *m_.nodes[static_cast<size_t>(ni)].rec;
      for (int i = 0; i < n.input_size(); ++i) {
        int wi = weight_behind(m_, g, input_of(n, i));
        if (wi < 0 || tensors.count(wi)) continue;
        read_as_.emplace(wi, input_of(n, i));
        add(wi, tensor_role(g, ni, wi, kind, role_of));
      }
    }
    return tensors;
  }

  // The role of the weight `wi` that node `ni` reads, by what reads it.
  std::string tensor_role(int g, int ni, int wi, MixerKind kind, const std::map<int, std::string>& role_of) {
    const auto& n = *m_.nodes[static_cast<size_t>(ni)].rec;
    std::string_view op = n.op_type();
    bool vector = m_.weights[static_cast<size_t>(wi)].dims.size() == 1;
    std::string role = "other";
    if (depthwise_conv1d(m_, ni)) {
      role = "conv1d";
    } else if (op == "Exp"sv) {
      role = "A_log";
    } else if (op == "Add"sv) {
      // A bias added right after a product is that product's.
      for (const auto& other : n.input()) {
        int p = m_.producer_of(g, other);
        if (p >= 0 && role_of.count(p)) role = role_of.at(p);
      }
    } else if (op == "Mul"sv && kind == MixerKind::StateSpace && vector) {
      role = "D";
    } else if (op == "Mul"sv && kind == MixerKind::DeltaRule && vector) {
      role = "norm";  // the gated RMSNorm on the output
    }
    if (role == "other" && op == "Add"sv && kind == MixerKind::DeltaRule && vector) {
      role = "dt_bias";
    }
    return role;
  }

  // A recurrence's initial state, built in forward as zeros [batch, d_inner, N] (A_log's shape
  // for the export's batch) and stored by the exporter: not a parameter. Moves each from
  // `tensors` to built_.
  void drop_initial_states(MixerKind kind, std::map<int, std::string>& tensors) {
    const Weight* a_log = nullptr;
    for (auto& [wi, role] : tensors) {
      if (role == "A_log") a_log = &m_.weights[static_cast<size_t>(wi)];
    }
    // The delta rule's state [batch, heads, d_k, d_v]: heads as A_log's.
    delta_state_ = nullptr;
    for (auto it = tensors.begin(); it != tensors.end();) {
      const Weight& w = m_.weights[static_cast<size_t>(it->first)];
      bool ssm_shape = kind == MixerKind::StateSpace && a_log && w.dims.size() == a_log->dims.size() + 1 &&
                       w.dims[0] >= 1 && std::equal(a_log->dims.begin(), a_log->dims.end(), w.dims.begin() + 1);
      bool delta_shape = kind == MixerKind::DeltaRule && a_log && a_log->dims.size() == 1 && w.dims.size() == 4 &&
                         w.dims[0] >= 1 && w.dims[1] == a_log->dims[0] && w.dims[2] >= 1 && w.dims[3] >= 1;
      if (it->second == "other" && (ssm_shape || delta_shape) && all_zero(w)) {
        built_.push_back({it->first, "the initial recurrent state of a " + std::string(ssm_shape ? "state-space" : "delta-rule") +
                                         " mixer (zeros " + shape_string(w.dims) + ": " +
                                         (ssm_shape ? "A_log's " + shape_string(a_log->dims) : std::string("heads × d_k × d_v")) +
                                         " for the export's batch), built in forward: not a parameter"});
        if (delta_shape) delta_state_ = &w;
        it = tensors.erase(it);
      } else {
        ++it;
      }
    }
  }

  static int role_rank(const std::string& r) {
    static const char* order[] = {"in_proj", "q", "k", "v", "conv1d", "x_proj", "dt_proj", "dt_bias", "A_log", "D",
                                  "norm", "projection", "out_proj", "other"};
    for (int i = 0; i < 14; ++i) {
      if (r == order[i]) return i;
    }
    return 14;
  }

  // The recurrent state per sequence: constant in the context.
  void state(int g, Mixer& mx, const std::vector<int>& cumsums, const std::vector<int>& convs, const std::vector<int>& exps) {
    Int elements = 0;
    std::string from;
    if (mx.kind == MixerKind::DeltaRule) {
      const Weight* conv = m_.weight_for(g, input_of(*m_.nodes[static_cast<size_t>(convs[0])].rec, 1));
      Int channels = conv->dims[0], k = conv->dims[2];
      Int conv_state = (k - 1) * channels;
      if (delta_state_) {
        Int delta = Int(delta_state_->dims[1]) * Int(delta_state_->dims[2]) * Int(delta_state_->dims[3]);
        elements = conv_state + delta;
        from = "conv state (" + k.str() + " − 1) × " + channels.str() + " = " + conv_state.str() + " and delta-rule state " +
               std::to_string(delta_state_->dims[1]) + " × " + std::to_string(delta_state_->dims[2]) + " × " +
               std::to_string(delta_state_->dims[3]) + " (heads × d_k × d_v, as its initial state) = " + delta.str() + " elements";
      } else {
        elements = Int();
        from = "unknown: the delta-rule state's size is not stored (no initial state of [batch, heads, d_k, d_v])";
      }
    } else if (mx.kind == MixerKind::StateSpace) {
      const Weight* conv = m_.weight_for(g, input_of(*m_.nodes[static_cast<size_t>(convs[0])].rec, 1));
      Int channels = conv->dims[0], k = conv->dims[2];
      Int conv_state = (k - 1) * channels;
      const Weight* a = decay(exps[0]);
      if (a->dims.size() == 2) {
        Int ssm = Int(a->dims[0]) * Int(a->dims[1]);
        elements = conv_state + ssm;
        from = "conv state (" + k.str() + " − 1) × " + channels.str() + " = " + conv_state.str() + " and SSM state " +
               std::to_string(a->dims[0]) + " × " + std::to_string(a->dims[1]) + " (d_inner × N, as A_log) = " + ssm.str() +
               " elements";
      } else {
        elements = Int();
        from = "unknown: A_log is " + shape_string(a->dims) + ", not [d_inner, N]";
      }
    } else {
      for (int c : cumsums) {
        const auto& n = *m_.nodes[static_cast<size_t>(c)].rec;
        detail::Dims d = shapes_.get().dims(g, input_of(n, 0));
        auto axis = shapes_.get().eval(g, input_of(n, 1));
        Int ax = axis && axis->size() == 1 ? (*axis)[0] : Int();
        if (ax && *ax < 0 && d.rank > 0) ax = ax + d.rank;
        Int per = 1;
        std::string dims;
        if (d.rank < 2 || !ax) per = Int();
        for (int i = 1; per && i < d.rank; ++i) {
          if (ax.is(i)) continue;
          per = per * d.d[static_cast<size_t>(i)];
          dims += (dims.empty() ? "" : " × ") + d.d[static_cast<size_t>(i)].str();
        }
        elements = elements + per;
        from += (from.empty() ? "" : ", ") + std::string("the running sum of ") + label(m_, c) + " " +
                (per ? dims + " = " + per.str() + " elements" : std::string("(unknown)"));
      }
    }
    mx.state_from = from;
    if (auto e = elements.count()) {
      mx.state_elements = *e;
      int bits = 0;
      for (const auto& t : mx.tensors) {
        int32_t dt = m_.weights[static_cast<size_t>(t.weight)].dtype;
        if (is_float_dtype(dt)) {
          bits = dtype_bits(dt);
          break;
        }
      }
      uint64_t bytes = 0;
      if (bits > 0 && !mul_overflows(*e, static_cast<uint64_t>(bits), &bytes)) mx.state_bytes = (bytes + 7) / 8;
    }
  }

  std::string name_of(const Mixer& mx, int anchor) const {
    std::vector<std::string> names;
    for (const auto& t : mx.tensors) {
      auto as = read_as_.find(t.weight);  // a layer's copy of a weight another layer holds alike
      std::string_view n = as != read_as_.end() ? as->second : std::string_view(m_.weights[static_cast<size_t>(t.weight)].name);
      if (n.rfind("onnx::", 0) != 0 && n.find("Constant") == std::string_view::npos) names.push_back(std::string(n));
    }
    std::string p = names.empty() ? std::string() : names[0];
    for (const auto& n : names) {
      size_t i = 0;
      while (i < p.size() && i < n.size() && p[i] == n[i]) ++i;
      p.resize(i);
    }
    if (names.size() > 1 || !p.empty()) {
      size_t cut = p.find_last_of("./");
      p = cut == std::string::npos ? "" : p.substr(0, cut);
    }
    if (p.size() >= 2) return p;
    std::string_view core = m_.nodes[static_cast<size_t>(anchor)].rec->name();
    size_t cut = core.find_last_of('/');
    return cut != std::string_view::npos && cut > 0 ? std::string(core.substr(0, cut)) : label(m_, anchor);
  }
};

}  // namespace

bool detail::may_hold_mixers(const Model& model) {
  return (model.op_traits & static_cast<uint64_t>(Trait::WindowSum)) != 0;
}

MixerResult detail::match_mixers(SharedShapes& shapes, const AttentionResult& attention, const ExpertResult& experts,
                                 const FrameworkView& framework) {
  if (!may_hold_mixers(shapes.model())) return {};
  return MixerMatcher(shapes, attention, experts, framework).run();
}

MixerResult match_mixers(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                         const FrameworkView& framework) {
  detail::SharedShapes shapes(model);
  return detail::match_mixers(shapes, attention, experts, framework);
}

}  // namespace headcount
