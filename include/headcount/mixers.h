// headcount/mixers.h: token mixers that are not softmax attention: causal linear attention,
// selective state-space layers (Mamba) and gated delta-rule layers (Gated DeltaNet), which hybrids
// (Jamba, Granite 4.0-H, Falcon-H1, Qwen3-Next) put beside attention layers.
//
// A mixer is proven by an anchor the graph holds: a cumulative sum (CumSum) of a product of
// projections (linear attention's running k·vᵀ state), or a depthwise causal Conv1d together with
// a learned decay read through Exp (Mamba's conv and A_log; with a per-head decay and a Sigmoid
// write strength, Gated DeltaNet's). Its extent is the sublayer around the
// anchor: from the value its input projections read (the norm's output) forward to the residual
// Add that joins the layer's input again. Every learned tensor read inside belongs to the mixer,
// each with its role (in_proj, q, k, v, x_proj, dt_proj, conv1d, A_log, D, out_proj). Its
// recurrent state per sequence is constant in the context: conv state (k - 1) x channels plus the
// SSM state d_inner x N, or the delta rule's heads x d_k x d_v (from its zero initial state), or the
// linear-attention state heads x d_k x d_v (and its normaliser).
#pragma once

#include "headcount/results/mixers.h"
#include "headcount/results/attention.h"
#include "headcount/results/buffers.h"
#include "headcount/results/experts.h"
#include "headcount/model.h"

namespace headcount {

// Finds the token mixers of a model. Tensors claimed by attention blocks, expert layers, buffers
// or scalar constants are not a mixer's. Linear in the graph: every walk spends a budget.
MixerResult match_mixers(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                         const FrameworkView& framework);

}  // namespace headcount
