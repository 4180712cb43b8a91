// headcount/experts.h: find the mixture-of-experts layers of a Model: the router, the routed
// experts and how many of them run per token, the shared experts that always run.
//
// A matcher stage of its own beside attention (src/experts.cpp). Forms read:
//   - onnxruntime's fused com.microsoft MoE and QMoE: stacked expert weights [experts, ...],
//     attribute k; QMoE's 4-bit weights hold two parameters per byte (counted by the loader);
//   - routing written out: a TopK over the scores of a router projection: through Softmax or
//     Sigmoid, on the raw logits with a Softmax over the k after it (gpt-oss), or with a
//     correction bias and a group-limited choice before it (DeepSeek-V3: the TopKs that choose
//     groups are steps of the layer's routing). Every expert is an MLP reading the router's input
//     (whole: dense routing; its rows picked by Gather: sparse routing; tiled per expert) whose
//     output is multiplied by a weight derived from the TopK; its gate and up may be one
//     projection split in two, and tensors stacked [experts, ...] hold every expert at once. MLPs
//     reading that input without such a weight are shared experts.
// A layer whose experts cannot all be found says so; the active count is then unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/model.h"

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

// Finds the mixture-of-experts layers. A router's Softmax that matching left unmatched is taken
// out of attention.unmatched: it is the router of its layer, not attention.
ExpertResult match_experts(const Model& model, AttentionResult& attention);

}  // namespace headcount
