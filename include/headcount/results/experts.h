// headcount/results/experts.h: what the experts stage finds: mixture-of-experts layers, their
// routers, routed and shared experts. Written by match_experts (src/experts.cpp) and by a
// checkpoint's names; read by the mixers, the composition, the cost and the findings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headcount {

struct ExpertLayer {
  int index = 0;
  std::string name;
  std::string form;                   // "MoE", "QMoE" (fused) or "routed" (a TopK over a router)
  int node = -1;                      // the fused node or the TopK
  int router_node = -1;               // the router's product, when found
  std::optional<int64_t> experts;     // routed experts the router chooses from
  std::optional<int64_t> top_k;       // experts each token runs
  int64_t found = 0;                  // routed experts found (all of them in a fused node)
  uint64_t routed = 0;                // parameters of all routed experts found
  std::optional<uint64_t> expert;     // one routed expert, when all are found and equal
  uint64_t router = 0;                // the router's weight and bias, and a bias added to its
                                      // scores for the choice (DeepSeek-V3's correction bias)
  uint64_t shared = 0;                // shared experts: run for every token
  int64_t shared_experts = 0;
  int score_node = -1;                // the Softmax or Sigmoid over the router's logits (or over
                                      // the k a TopK chose from them), or -1
  std::vector<int> routed_weights, router_weights, shared_weights;  // indices into Model::weights
  std::vector<std::string> notes;     // what could not be read, in words
};

struct ExpertResult {
  std::vector<ExpertLayer> layers;
  // Σ over layers of (experts − k) · expert: parameters a token leaves idle. Unknown when a
  // layer's experts, k or expert size is unknown.
  std::optional<uint64_t> idle;
  // TopK nodes not examined because matching used up the node visits a graph of its size gets
  // (a hostile graph): the active count is then unknown.
  int64_t unexamined = 0;
  // TopKs over a projection's scores with no expert found behind them (sampling over an LM
  // head's logits, or experts in a form not read): not counted as layers, said here.
  std::vector<std::string> notes;
};

// Keeps a layer's counts to what its tensors hold, whichever form found it: a k outside
// 1..experts is a note and never a count (top_k unset: the active count and the experts' MACs are
// then unknown, and said to be); experts × one expert above the routed parameters (tensors shared
// between experts) leaves the size of one expert unknown. So active <= routed <= stored.
void check_expert_counts(ExpertLayer& layer);

}  // namespace headcount
