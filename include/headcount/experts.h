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

#include "headcount/results/experts.h"
#include "headcount/results/attention.h"
#include "headcount/model.h"

namespace headcount {

// Finds the mixture-of-experts layers. A router's Softmax that matching left unmatched is taken
// out of attention.unmatched: it is the router of its layer, not attention.
ExpertResult match_experts(const Model& model, AttentionResult& attention);

}  // namespace headcount
