// experts.cpp: the mixture-of-experts stage (see headcount/experts.h).
#include "headcount/experts.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

#include "shapes.h"
#include "stages.h"
#include "ops.h"
#include "headcount/checked.h"
#include "headcount/numbers.h"

namespace headcount {

namespace {

// The products the routed forms are written against: MatMul and Gemm, whose input 1 is a float
// weight. The quantized ones (Trait::MatrixProduct) are left out until a written-out quantized MoE
// is seen and tested.
bool is_product(std::string_view op) { return op_has(op, Trait::PlainProduct); }

// A router's score function: a Softmax (or LogSoftmax) or a Sigmoid over the logits.
bool is_score_function(std::string_view op) { return op_has(op, Trait::Softmax) || op == "Sigmoid"sv; }

// What leads to a TopK's scores: the router's product, the score function before the choice,
// and the tensors added on the way (a router's bias, DeepSeek-V3's correction bias).
struct Router {
  int node = -1;
  int score = -1;
  std::vector<int> added;  // indices into Model::weights
};

class ExpertMatcher {
 public:
  ExpertMatcher(detail::SharedShapes& shapes, const AttentionResult& attention)
      : m_(shapes.model()), shapes_(shapes), budget_(m_), in_attention_(m_.weights.size(), false) {
    budget_.share(&shapes.budget(), "routers");  // every visit also spends the audit's value budget
    for (const auto& b : attention.blocks) {
      for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
        for (const auto& t : b.projection(r).tensors) in_attention_[static_cast<size_t>(t.weight)] = true;
      }
    }
  }

  ExpertResult run() {
    ExpertResult r;
    // First the router behind every TopK, then the layers in graph order. A TopK whose choice
    // feeds another TopK over the same router (DeepSeek-V3's group-limited choice: the best
    // experts of each group, then the best groups) is a step of that layer's routing, not a layer.
    Candidates found = find_candidates(r);
    std::vector<bool> preselection = preselections(found);
    for (size_t c = 0; c < found.list.size(); ++c) {
      if (!preselection[c]) read_candidate(found.list[c], r);
    }
    count_idle(r);
    return r;
  }

 private:
  struct Candidate {
    int g, node;
    bool fused;
    Router router;  // of a TopK
  };
  struct Candidates {
    std::vector<Candidate> list;
    std::map<int, std::vector<int>> by_router;  // router node -> indices into list
  };

  // Every fused MoE operator, and every TopK with the router behind it (a TopK over something
  // else is not routing).
  Candidates find_candidates(ExpertResult& r) {
    Candidates out;
    for (size_t g = 0; g < m_.graphs.size(); ++g) {
      for (int ni : m_.graphs[g].nodes) {
        const auto& n = *m_.nodes[ni].rec;
        if (n.domain() == "com.microsoft" && op_has(n.op_type(), Trait::FusedExperts)) {
          out.list.push_back({static_cast<int>(g), ni, true, {}});
        } else if (n.op_type() == "TopK"sv && (n.domain().empty() || n.domain() == "ai.onnx")) {
          if (budget_.exhausted()) {
            ++r.unexamined;
            continue;
          }
          budget_.start_walk(256);
          Router router = router_of(static_cast<int>(g), input_of(n, 0));
          if (router.node < 0) continue;  // a TopK over something else: not routing
          out.by_router[router.node].push_back(static_cast<int>(out.list.size()));
          out.list.push_back({static_cast<int>(g), ni, false, std::move(router)});
        }
      }
    }
    return out;
  }

  // Per candidate, whether it is a step of another TopK's routing over the same router.
  std::vector<bool> preselections(const Candidates& found) {
    std::vector<bool> preselection(found.list.size(), false);
    for (const auto& [router, topks] : found.by_router) {
      if (topks.size() < 2) continue;
      std::set<int> nodes;
      for (int c : topks) nodes.insert(found.list[static_cast<size_t>(c)].node);
      for (int c : topks) {
        const Candidate& t = found.list[static_cast<size_t>(c)];
        budget_.start_walk(512);
        nodes.erase(t.node);
        preselection[static_cast<size_t>(c)] = reaches(t.g, t.node, nodes);
        nodes.insert(t.node);
      }
    }
    return preselection;
  }

  // One candidate's layer into the result, or a note why it is none, or counted not examined.
  void read_candidate(const Candidate& t, ExpertResult& r) {
    if (t.fused) {
      r.layers.push_back(fused(t.g, t.node));
      return;
    }
    if (budget_.exhausted()) {
      ++r.unexamined;
      return;
    }
    auto layer = routed(t.g, t.node, t.router);
    if (budget_.exhausted()) {  // a layer whose search ran out is not reported half-found
      ++r.unexamined;
      return;
    }
    if (!layer) return;
    if (layer->found > 0) {
      r.layers.push_back(std::move(*layer));
    } else {
      r.notes.push_back(label(t.node) + " picks among the " +
                        (layer->experts ? std::to_string(*layer->experts) : std::string("?")) + " outputs of " +
                        label(layer->router_node) + ", but no expert MLP weighted by it reads that projection's "
                        "input: not read as a mixture of experts");
    }
  }

  // Numbers the layers, checks their counts, and sums the parameters no token runs: known only
  // when every layer's are and every TopK was examined.
  static void count_idle(ExpertResult& r) {
    Int idle = 0;
    for (size_t i = 0; i < r.layers.size(); ++i) {
      ExpertLayer& l = r.layers[i];
      l.index = static_cast<int>(i);
      check_expert_counts(l);
      Int e = l.experts, k = l.top_k;
      if (l.expert && e.positive() && k.positive() && *k <= *e) {
        idle = idle + (e - k) * Int::of_unsigned(*l.expert);
      } else {
        idle = Int();
      }
    }
    if (auto c = idle.count(); c && r.unexamined == 0) r.idle = *c;
  }

  const Model& m_;
  detail::SharedShapes& shapes_;  // the audit's, built on first use: most models have no TopK to read
  VisitBudget budget_;
  std::vector<bool> in_attention_;
  // Per graph, built on first use: the products with a weight, by the value their input is taken
  // from; and each product's down projection once found. Many TopKs over one input cost no more.
  std::map<int, std::map<std::string_view, std::vector<int>>> by_input_;
  std::map<int, int> down_;
  std::map<std::pair<int, std::string_view>, std::map<int, std::set<int>>> groups_;  // by (graph, input)

  // The products reading an input grouped by their down projection (down -> up/gate projections),
  // worked out once per input: many TopKs over one input look the groups up, not every product
  // again. Each candidate gets a walk allowance of its own: a layer of 256 experts is 256 times the
  // walking of a layer of one (the model's own budget still bounds it). nullptr once spent.
  const std::map<int, std::set<int>>* groups_reading(int g, std::string_view input) {
    auto key = std::make_pair(g, input);
    auto it = groups_.find(key);
    if (it == groups_.end()) {
      std::map<int, std::set<int>> groups;
      for (int ni : products_reading(g, input)) {
        if (budget_.exhausted()) return nullptr;
        budget_.start_walk(256);
        int down = cached_down_of(g, ni);
        if (down >= 0) groups[down].insert(ni);
      }
      it = groups_.emplace(key, std::move(groups)).first;
    }
    budget_.start_walk(static_cast<int64_t>(it->second.size()) + 1);  // a lookup spends, one per group read
    return budget_.spend() ? &it->second : nullptr;
  }

  const std::vector<int>& products_reading(int g, std::string_view input) {
    auto it = by_input_.find(g);
    if (it == by_input_.end()) {
      auto& table = by_input_[g];
      for (int ni : m_.graphs[static_cast<size_t>(g)].nodes) {
        const auto& n = *m_.nodes[ni].rec;
        if (!is_product(n.op_type()) || n.input_size() < 2) continue;
        int wi = weight_index(g, input_of(n, 1));
        if (wi < 0 || in_attention_[static_cast<size_t>(wi)]) continue;
        table[base_of(g, input_of(n, 0))].push_back(ni);
      }
      it = by_input_.find(g);
    }
    static const std::vector<int> none;
    auto found = it->second.find(input);
    return found == it->second.end() ? none : found->second;
  }

  // A lookup spends like a walk step even when it is cached: many TopKs over one input each pay
  // for the products they look at.
  int cached_down_of(int g, int up) {
    if (!budget_.spend()) return -1;
    auto it = down_.find(up);
    if (it != down_.end()) return it->second;
    return down_[up] = down_of(g, up);
  }

  // The stored tensor a value is read from, and whether the value is one expert's slice of it: a
  // tensor stacked [experts, ...] read by Gather at a constant index on its first axis (a traced
  // loop over stacked experts, exported without folding). A stacked tensor gathered on its first
  // axis by a TopK's indices (the chosen experts' matrices, then a batched product) is read whole:
  // every expert of it is one a token may choose.
  struct Use {
    int weight = -1;
    bool slice = false;
    bool operator<(const Use& o) const { return weight != o.weight ? weight < o.weight : slice < o.slice; }
  };

  Use weight_use(int g, Name value) const {
    bool slice = false, gathered = false;
    for (int step = 0; step < 8; ++step) {
      if (const Weight* w = m_.weight_for(g, value)) {
        if ((slice || gathered) && (w->dims.size() < 2 || w->dims[0] <= 0)) return {};
        return {static_cast<int>(w - m_.weights.data()), slice};
      }
      int p = m_.producer_of(g, value);
      if (p < 0) return {};
      const auto& n = *m_.nodes[p].rec;
      std::string_view op = n.op_type();
      if (op == "Gather"sv && !slice && !gathered) {
        Int axis = detail::attr_int(n, "axis");
        if (axis && !axis.is(0)) return {};
        const Weight* index = m_.weight_for(g, input_of(n, 1));
        if (index && index->elements == 1 && index->dims.size() <= 1) {
          slice = true;
        } else if (!index && chosen_by_topk(g, input_of(n, 1))) {
          gathered = true;
        } else {
          return {};
        }
      } else if (!op_has(op, Trait::LayoutOnly | Trait::Cast | Trait::Dequantize)) {
        return {};
      }
      value = input_of(n, 0);
    }
    return {};
  }

  // Whether a value is the indices output of a TopK (output 1), through layout steps and casts:
  // the experts a router chose, by which a stacked tensor is gathered.
  bool chosen_by_topk(int g, Name value) const {
    for (int step = 0; step < 8; ++step) {
      int p = m_.producer_of(g, value);
      if (p < 0) return false;
      const auto& n = *m_.nodes[p].rec;
      if (n.op_type() == "TopK"sv) return n.output_size() > 1 && output_of(n, 1) == value;
      if (!op_has(n.op_type(), Trait::LayoutOnly | Trait::Cast)) return false;
      value = input_of(n, 0);
    }
    return false;
  }

  int weight_index(int g, Name value) const { return weight_use(g, value).weight; }

  uint64_t params(int wi) const {
    const Weight& w = m_.weights[static_cast<size_t>(wi)];
    return w.parameter ? w.elements : 0;
  }

  // The parameters a use reads: the whole tensor, or one expert's slice of a stacked one.
  uint64_t params(const Use& u) const {
    return u.slice ? params(u.weight) / static_cast<uint64_t>(m_.weights[static_cast<size_t>(u.weight)].dims[0])
                   : params(u.weight);
  }

  // The router behind a TopK's (or a fused node's) scores: through the score function (Softmax,
  // Sigmoid), shape steps, a constant added or multiplied (DeepSeek-V3's correction bias) and a
  // masked_fill (Where with a constant: the groups a group-limited choice leaves out), to a product
  // with a weight. node -1 when there is none.
  Router router_of(int g, Name value) {
    Router r;
    for (int step = 0; step < 12; ++step) {
      int p = m_.producer_of(g, value);
      if (p < 0 || !budget_.spend()) return {};
      const auto& n = *m_.nodes[p].rec;
      std::string_view op = n.op_type();
      if (is_product(op)) {
        if (weight_index(g, input_of(n, 1)) < 0) return {};
        r.node = p;
        return r;
      }
      if (is_score_function(op)) {
        if (r.score < 0) r.score = p;
        value = input_of(n, 0);
      } else if (op_has(op, Trait::LayoutOnly | Trait::Cast)) {
        value = input_of(n, 0);
      } else if (op_has(op, Trait::Shifts | Trait::Scales) && n.input_size() == 2) {
        int w0 = weight_index(g, input_of(n, 0)), w1 = weight_index(g, input_of(n, 1));
        if ((w0 >= 0) == (w1 >= 0)) return {};
        if (op_has(op, Trait::Shifts)) r.added.push_back(w0 >= 0 ? w0 : w1);
        value = input_of(n, w0 >= 0 ? 1 : 0);
      } else if (op == "Where"sv && n.input_size() == 3) {
        bool c1 = weight_index(g, input_of(n, 1)) >= 0, c2 = weight_index(g, input_of(n, 2)) >= 0;
        if (c1 == c2) return {};
        value = input_of(n, c1 ? 2 : 1);
      } else {
        return {};
      }
    }
    return {};
  }

  // Whether a node's outputs reach one of `targets` through nodes that are not products (a choice
  // feeding a later choice), within the walk's allowance.
  bool reaches(int g, int from, const std::set<int>& targets) {
    std::deque<std::string_view> queue;
    for (const auto& o : m_.nodes[from].rec->output()) queue.push_back(o);
    std::set<std::string_view> seen;
    while (!queue.empty()) {
      std::string_view v = queue.front();
      queue.pop_front();
      if (v.empty() || !seen.insert(v).second) continue;
      for (int c : m_.consumers_of(g, v)) {
        if (!budget_.spend()) return false;
        if (targets.count(c)) return true;
        const auto& n = *m_.nodes[c].rec;
        if (is_product(n.op_type())) continue;
        for (const auto& o : n.output()) queue.push_back(o);
      }
    }
    return false;
  }

  // The Softmax (or Sigmoid) over the k values a TopK chose from the raw logits (gpt-oss), a few
  // shape steps after it, or -1.
  int score_after(int g, int topk) {
    std::string_view v = output_of(*m_.nodes[topk].rec, 0);
    for (int step = 0; step < 4 && !v.empty(); ++step) {
      std::string_view next;
      for (int c : m_.consumers_of(g, v)) {
        if (!budget_.spend()) return -1;
        const auto& n = *m_.nodes[c].rec;
        if (is_score_function(n.op_type())) return c;
        if (op_has(n.op_type(), Trait::LayoutOnly | Trait::Cast) && next.empty()) {
          next = output_of(n, 0);
        }
      }
      v = next;
    }
    return -1;
  }

  // The value a projection's input is taken from: through reshapes and row selections (Gather of
  // tokens by index, as sparse routing does; Tile of every token for each expert, as gpt-oss's
  // batched experts do), to the layer's input.
  std::string_view base_of(int g, Name value) const {
    for (int step = 0; step < 8; ++step) {
      int p = m_.producer_of(g, value);
      if (p < 0) break;
      const auto& n = *m_.nodes[p].rec;
      if (!op_has(n.op_type(), Trait::LayoutOnly | Trait::Cast | Trait::Selects | Trait::Repeats)) {
        break;
      }
      value = input_of(n, 0);
    }
    return value;
  }

  // The down projection an up (or gate) projection feeds through element-wise steps and an
  // activation: the first product with a weight its output reaches. -1 when none. A fused gate_up
  // projection reaches it through its two halves (Split, Slice; gpt-oss's strided [..., ::2] and
  // [..., 1::2]) and their clamps (Clip).
  int down_of(int g, int up) {
    std::deque<std::string_view> queue;
    for (const auto& o : m_.nodes[up].rec->output()) queue.push_back(o);
    std::set<std::string_view> seen;
    while (!queue.empty()) {
      std::string_view v = queue.front();
      queue.pop_front();
      if (v.empty() || !seen.insert(v).second) continue;
      if (seen.size() > 24) return -1;
      for (int c : m_.consumers_of(g, v)) {
        if (!budget_.spend()) return -1;
        const auto& n = *m_.nodes[c].rec;
        std::string_view op = n.op_type();
        if (is_product(op)) {
          if (input_of(n, 0) == v && weight_index(g, input_of(n, 1)) >= 0) return c;
          continue;
        }
        // The expert's activation and its gate: arithmetic, activations, a clamp (Clip, Min, Max,
        // as gpt-oss's), a Neg, the Split or Slice of a fused gate-up product. Abs is left out, as
        // it always was: no expert seen takes one.
        if (op_has(op, Trait::Arithmetic | Trait::Activation | Trait::Cast | Trait::NoOp | Trait::Clamp | Trait::Cuts) ||
            (op_has(op, Trait::SignChange) && op != "Abs"sv)) {
          for (const auto& o : n.output()) queue.push_back(o);
        }
      }
    }
    return -1;
  }

  // Whether `value` is computed from node's output without crossing another product.
  bool derives_from(int g, Name value, const std::set<int>& nodes) {
    std::deque<std::string_view> queue{value};
    std::set<std::string_view> seen;
    while (!queue.empty()) {
      std::string_view v = queue.front();
      queue.pop_front();
      if (v.empty() || !seen.insert(v).second) continue;
      if (seen.size() > 64 || !budget_.spend()) return false;
      int p = m_.producer_of(g, v);
      if (p < 0) continue;
      if (nodes.count(p)) return true;
      const auto& n = *m_.nodes[p].rec;
      if (is_product(n.op_type())) continue;
      for (const auto& in : n.input()) queue.push_back(in);
    }
    return false;
  }

  // Whether a down projection's output is weighted by the router: a Mul a few shape steps after
  // it whose other operand comes from the TopK or the score function.
  bool weighted_by_router(int g, int down, const std::set<int>& routing) {
    std::string_view v = output_of(*m_.nodes[down].rec, 0);
    for (int step = 0; step < 6; ++step) {
      const auto& users = m_.consumers_of(g, v);
      std::string_view next;
      for (int c : users) {
        const auto& n = *m_.nodes[c].rec;
        if (n.op_type() == "Mul"sv && n.input_size() == 2) {
          std::string_view other = input_of(n, 0) == v ? input_of(n, 1) : input_of(n, 0);
          if (derives_from(g, other, routing)) return true;
        } else if ((op_has(n.op_type(), Trait::LayoutOnly | Trait::Cast) || n.op_type() == "Add"sv) && next.empty()) {
          next = output_of(n, 0);
        }
      }
      if (next.empty()) return false;
      v = next;
    }
    return false;
  }

  // Values a down projection's output flows into within a few steps (not past another product):
  // where a routed expert's output is summed into the layer's output.
  void flows_into(int g, int down, std::set<std::string_view>& into) {
    std::deque<std::pair<std::string_view, int>> queue{{output_of(*m_.nodes[down].rec, 0), 0}};
    while (!queue.empty()) {
      auto [v, depth] = queue.front();
      queue.pop_front();
      if (v.empty() || depth > 12 || !into.insert(v).second || !budget_.spend()) continue;
      for (int c : m_.consumers_of(g, v)) {
        const auto& n = *m_.nodes[c].rec;
        if (is_product(n.op_type()) || !budget_.spend()) continue;
        for (const auto& o : n.output()) queue.push_back({o, depth + 1});
      }
    }
  }

  // A product's weight and bias tensors: its weight input, a Gemm's bias, a bias added right after
  // (one per output; a stacked weight [experts, in, out] has stacked biases [experts, (1,) out], and
  // one expert's slice of it the slice of a stacked bias [experts, out]).
  std::vector<Use> uses_of(int g, int node) const {
    std::vector<Use> out;
    const auto& n = *m_.nodes[node].rec;
    for (int i = 1; i < n.input_size() && i < 3; ++i) {
      Use u = weight_use(g, input_of(n, i));
      if (u.weight >= 0) out.push_back(u);
    }
    Use weight = weight_use(g, input_of(n, 1));
    Span<int64_t> stacked;
    if (weight.weight >= 0 && !weight.slice && m_.weights[static_cast<size_t>(weight.weight)].dims.size() == 3) {
      stacked = m_.weights[static_cast<size_t>(weight.weight)].dims;
    }
    for (int c : m_.consumers_of(g, output_of(n, 0))) {
      const auto& cn = *m_.nodes[c].rec;
      if (cn.op_type() != "Add"sv) continue;
      for (const auto& in : cn.input()) {
        Use u = weight_use(g, in);
        if (u.weight < 0) continue;
        const auto& d = m_.weights[static_cast<size_t>(u.weight)].dims;
        bool bias = u.slice ? d.size() == 2 && weight.slice
                            : d.size() == 1 || (!stacked.empty() && d.size() >= 2 && d.size() <= 3 && d[0] == stacked[0]);
        if (bias) out.push_back(u);
      }
    }
    return out;
  }

  std::vector<int> tensors_of(int g, int node) const {
    std::vector<int> out;
    for (const Use& u : uses_of(g, node)) out.push_back(u.weight);
    return out;
  }

  std::string label(int node) const {
    const auto& n = *m_.nodes[static_cast<size_t>(node)].rec;
    return std::string(n.op_type()) + " '" + std::string(n.name().empty() ? output_of(n, 0) : n.name()) + "'";
  }

  std::string name_of(int weight, int node) const {
    if (weight >= 0) {
      std::string n = std::string(m_.weights[static_cast<size_t>(weight)].name);
      if (n.rfind("onnx::", 0) != 0) {
        size_t cut = n.find_last_of('.');
        n = cut == std::string::npos ? n : n.substr(0, cut);  // "model.layers.0.mlp.gate.weight" -> "...gate"
        cut = n.find_last_of('.');
        return cut == std::string::npos ? n : n.substr(0, cut);  // the layer's module
      }
    }
    const auto& nn = *m_.nodes[node].rec;
    size_t cut = nn.name().find_last_of('/');
    if (cut != std::string::npos && cut > 0) return std::string(nn.name().substr(0, cut));
    return std::string(nn.name().empty() ? nn.op_type() : nn.name());
  }

  void add_router(int g, ExpertLayer& l, int router) {
    for (int wi : tensors_of(g, router)) {
      if (std::find(l.router_weights.begin(), l.router_weights.end(), wi) != l.router_weights.end()) continue;
      l.router_weights.push_back(wi);
      l.router += params(wi);
    }
  }

  ExpertLayer fused(int g, int ni) {
    const auto& n = *m_.nodes[ni].rec;
    ExpertLayer l;
    l.form = n.op_type();
    l.node = ni;
    bool q = l.form == "QMoE";
    Int k = detail::attr_int(n, "k");
    l.top_k = (k ? k : Int(1)).opt();  // the operator's default is 1
    // Weights and biases of fc1, fc2 and fc3 (the SwiGLU gate); QMoE's scales sit between them.
    std::vector<int> slots = q ? std::vector<int>{2, 4, 5, 7, 8, 10} : std::vector<int>{2, 3, 4, 5, 6, 7};
    std::map<int, int> repeated;  // a tensor given to several slots: counted once, how many more
    for (int s : slots) {
      int wi = weight_index(g, input_of(n, s));
      if (wi < 0) {
        if (!input_of(n, s).empty()) l.notes.push_back("input " + std::to_string(s) + " of " + l.form + " is not a stored tensor");
        continue;
      }
      if (std::find(l.routed_weights.begin(), l.routed_weights.end(), wi) != l.routed_weights.end()) {
        ++repeated[wi];
        continue;
      }
      l.routed_weights.push_back(wi);
      l.routed += params(wi);
    }
    for (const auto& [wi, more] : repeated) {
      l.notes.push_back("tensor '" + std::string(m_.weights[static_cast<size_t>(wi)].name) + "' fills " +
                        std::to_string(more + 1) + " expert inputs of " + l.form + ": counted once");
    }
    int fc1 = weight_index(g, input_of(n, 2));
    if (fc1 >= 0 && !m_.weights[static_cast<size_t>(fc1)].dims.empty()) {
      int64_t e = m_.weights[static_cast<size_t>(fc1)].dims[0];
      if (e > 0) l.experts = e;
    }
    if (!l.experts) l.notes.push_back("the number of experts is unknown: fc1_experts_weights is not a stored tensor");
    if (l.experts) {
      l.found = *l.experts;
      bool stacked = true;
      for (int wi : l.routed_weights) {
        const auto& d = m_.weights[static_cast<size_t>(wi)].dims;
        stacked = stacked && !d.empty() && d[0] == *l.experts;
      }
      Int each = exact_div(Int::of_unsigned(l.routed), Int(*l.experts));
      if (stacked && each.count()) l.expert = *each.count();
      else l.notes.push_back("the expert tensors are not stacked [experts, ...] alike: no size of one expert");
    }
    budget_.start_walk(256);
    Router router = router_of(g, input_of(n, 1));
    l.score_node = router.score;
    if (router.node >= 0) add_router(g, l, router.node);
    else l.notes.push_back("the router producing router_probs was not found");
    l.name = name_of(l.routed_weights.empty() ? -1 : l.routed_weights[0], ni);
    return l;
  }

  // Whether a group of expert tensors holds every expert at once, stacked [experts, ...] as the
  // fused operators read them (gpt-oss's batched experts): a 3-D product weight, and every tensor's
  // first axis the router's count.
  bool stacked(const std::vector<Use>& uses, int64_t experts) const {
    if (experts <= 0) return false;
    bool three = false;
    for (const Use& u : uses) {
      if (u.slice) return false;
      const auto& d = m_.weights[static_cast<size_t>(u.weight)].dims;
      if (d.size() < 2 || d[0] != experts) return false;
      three = three || d.size() == 3;
    }
    return three;
  }

  // What the search for one routed layer's experts gathers, group by group.
  struct ExpertSearch {
    std::set<int> routing;     // the TopK and its score function: what weights a routed expert
    std::set<uint64_t> sizes;  // one expert's parameters, as each group holds them
    Int found = 0;
    std::set<int> routed_tensors, shared_tensors;
    std::set<std::string_view> routed_flow;  // where the routed experts' outputs go
    std::vector<std::pair<int, std::vector<int>>> unrouted;  // down, its tensors
  };

  std::optional<ExpertLayer> routed(int g, int topk, const Router& router) {
    budget_.start_walk(2048);
    const auto& rn = *m_.nodes[router.node].rec;
    int rw = weight_index(g, input_of(rn, 1));
    std::optional<ExpertLayer> l = router_layer(g, topk, router, rw);
    if (!l) return std::nullopt;
    // The experts: MLPs reading the router's input, grouped by their down projection.
    auto groups = expert_groups(g, base_of(g, input_of(rn, 0)), router.node);
    if (!groups) return std::nullopt;  // run() counts the TopK as not examined
    ExpertSearch s;
    s.routing.insert(topk);
    if (l->score_node >= 0) s.routing.insert(l->score_node);
    read_routed_experts(g, *groups, *l, s);
    read_shared_experts(g, *l, s);
    size_routed_experts(*l, s);
    l->name = name_of(rw, topk);  // the router's module, else the TopK's path
    l->router_node = router.node;
    return l;
  }

  // The layer as its router gives it: the count of experts (the router weight's output axis),
  // top-k, the score function and the router's tensors. None when the router weight (rw) is not
  // a 2-D matrix of its own.
  std::optional<ExpertLayer> router_layer(int g, int topk, const Router& router, int rw) {
    const auto& t = *m_.nodes[topk].rec;
    const auto& rn = *m_.nodes[router.node].rec;
    const Weight& w = m_.weights[static_cast<size_t>(rw)];
    if (w.dims.size() != 2 || in_attention_[static_cast<size_t>(rw)]) return std::nullopt;
    bool out_first = rn.op_type() == "Gemm"sv && detail::attr_flag(rn, "transB");
    int wp = m_.producer_of(g, input_of(rn, 1));
    if (wp >= 0 && m_.nodes[wp].rec->op_type() == "Transpose"sv) out_first = !out_first;  // stored [out, in]
    ExpertLayer l;
    l.form = "routed";
    l.node = topk;
    // The score function: before the choice (Softmax or Sigmoid over every expert), or over the k
    // chosen from the raw logits (gpt-oss).
    l.score_node = router.score >= 0 ? router.score : score_after(g, topk);
    l.experts = out_first ? w.dims[0] : w.dims[1];
    auto kv = shapes_.get().eval(g, input_of(t, 1));
    if (kv && kv->size() == 1 && (*kv)[0].known()) l.top_k = *(*kv)[0];  // checked against the experts later
    else l.notes.push_back("top-k is computed at run time");
    add_router(g, l, router.node);
    // A tensor added to the logits or scores on the way, one value per expert (the router's bias,
    // DeepSeek-V3's e_score_correction_bias), is the router's.
    for (int wi : router.added) {
      const Weight& a = m_.weights[static_cast<size_t>(wi)];
      if (!a.parameter || a.elements != static_cast<uint64_t>(*l.experts)) continue;
      if (std::find(l.router_weights.begin(), l.router_weights.end(), wi) != l.router_weights.end()) continue;
      l.router_weights.push_back(wi);
      l.router += params(wi);
    }
    return l;
  }

  // The MLPs reading the router's input, by down projection (down -> up/gate projections), the
  // router's own product left out. None once the budget is spent.
  std::optional<std::map<int, std::set<int>>> expert_groups(int g, std::string_view input, int router) {
    const std::map<int, std::set<int>>* reading = groups_reading(g, input);
    if (!reading) return std::nullopt;
    std::map<int, std::set<int>> groups;
    for (const auto& [down, ups] : *reading) {
      if (!budget_.spend()) return std::nullopt;
      std::set<int> mine = ups;
      mine.erase(router);
      if (!mine.empty()) groups.emplace(down, std::move(mine));
    }
    return groups;
  }

  // The groups weighted by the router are its experts: their tensors, sizes and count go to the
  // layer and the search; the others wait in s.unrouted to be read as shared experts.
  void read_routed_experts(int g, const std::map<int, std::set<int>>& groups, ExpertLayer& l, ExpertSearch& s) {
    for (const auto& [down, ups] : groups) {
      std::vector<Use> uses;
      for (int node : ups) {
        for (const Use& u : uses_of(g, node)) uses.push_back(u);
      }
      for (const Use& u : uses_of(g, down)) uses.push_back(u);
      budget_.start_walk(512);
      if (!weighted_by_router(g, down, s.routing)) {
        std::vector<int> tensors;
        for (const Use& u : uses) tensors.push_back(u.weight);
        s.unrouted.push_back({down, tensors});
        continue;
      }
      std::set<Use> mine(uses.begin(), uses.end());
      uint64_t size = 0;  // the group's share: whole tensors, and one expert's slice of stacked ones
      for (const Use& u : mine) size += params(u);
      for (const Use& u : mine) {
        if (s.routed_tensors.insert(u.weight).second) l.routed += params(u.weight);
      }
      if (stacked(uses, *l.experts)) {
        // Every expert in one group: each tensor's first axis is the experts, so one expert is
        // exactly 1/E of the group.
        s.sizes.insert(size / static_cast<uint64_t>(*l.experts));
        s.found = s.found + Int(*l.experts);
      } else {
        s.sizes.insert(size);
        s.found = s.found + Int(1);
      }
      flows_into(g, down, s.routed_flow);
    }
  }

  // A shared expert is an MLP on the same input whose output meets the routed experts' sum.
  void read_shared_experts(int g, ExpertLayer& l, ExpertSearch& s) {
    for (auto& [down, tensors] : s.unrouted) {
      budget_.start_walk(512);
      std::set<std::string_view> mine;
      flows_into(g, down, mine);
      mine.erase(output_of(*m_.nodes[down].rec, 0));
      bool meets = std::any_of(mine.begin(), mine.end(), [&](std::string_view v) { return s.routed_flow.count(v) > 0; });
      if (!meets) continue;
      ++l.shared_experts;
      for (int wi : tensors) {
        if (s.shared_tensors.insert(wi).second) l.shared += params(wi);
      }
    }
  }

  // The layer's tensors, experts found and the size of one expert, when every group agrees on it.
  void size_routed_experts(ExpertLayer& l, const ExpertSearch& s) const {
    l.routed_weights.assign(s.routed_tensors.begin(), s.routed_tensors.end());
    l.shared_weights.assign(s.shared_tensors.begin(), s.shared_tensors.end());
    l.found = s.found.opt().value_or(0);
    if (l.experts && l.found != *l.experts) {
      l.notes.push_back("found " + std::to_string(l.found) + " of the " + std::to_string(*l.experts) +
                        " experts the router scores: the size of one expert and the active count are unknown");
    } else if (s.sizes.size() == 1) {
      l.expert = *s.sizes.begin();
    } else if (!s.sizes.empty()) {
      l.notes.push_back("the routed experts differ in size: no size of one expert");
    }
  }
};

}  // namespace

void check_expert_counts(ExpertLayer& l) {
  if (l.top_k && (*l.top_k < 1 || (l.experts && *l.top_k > *l.experts))) {
    l.notes.push_back("k = " + std::to_string(*l.top_k) + " is outside 1.." + (l.experts ? std::to_string(*l.experts) : std::string("experts")) +
                      ": not a count of the experts a token runs; the active parameters and the experts' MACs are unknown");
    l.top_k.reset();
  }
  if (l.expert && l.experts) {
    Int all = Int(*l.experts) * Int::of_unsigned(*l.expert);
    if (!all.count() || *all.count() > l.routed) {
      l.notes.push_back(std::to_string(*l.experts) + " experts of " + with_commas(*l.expert) + " parameters each are more than the " +
                        with_commas(l.routed) + " routed parameters stored (experts share tensors): no size of one expert");
      l.expert.reset();
    }
  }
}

ExpertResult detail::match_experts(SharedShapes& shapes, AttentionResult& attention) {
  ExpertResult r = ExpertMatcher(shapes, attention).run();
  std::set<int> routers;  // a router's Softmax leaves the unmatched list only when its layer was found
  for (const auto& l : r.layers) {
    if (l.score_node >= 0) routers.insert(l.score_node);
  }
  auto& u = attention.unmatched;
  u.erase(std::remove_if(u.begin(), u.end(), [&](const UnmatchedSoftmax& s) { return routers.count(s.node) > 0; }), u.end());
  return r;
}

ExpertResult match_experts(const Model& model, AttentionResult& attention) {
  detail::SharedShapes shapes(model);
  return detail::match_experts(shapes, attention);
}

}  // namespace headcount
