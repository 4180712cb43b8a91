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

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/buffers.h"
#include "headcount/experts.h"
#include "headcount/model.h"

namespace headcount {

enum class MixerKind { LinearAttention, StateSpace, DeltaRule };
const char* mixer_kind_name(MixerKind k);  // "linear_attention", "state_space", "delta_rule"

// One learned tensor of a mixer and what it does there.
struct MixerTensor {
  int weight = -1;   // index into Model::weights
  std::string role;  // "in_proj", "q", "k", "v", "x_proj", "dt_proj", "out_proj", "conv1d", "A_log", "D",
                     // "dt_bias", "norm", "other"
  uint64_t elements = 0;
};

struct Mixer {
  int index = 0;
  std::string name;      // the common prefix of its tensors' names, else its anchor's node path
  MixerKind kind = MixerKind::LinearAttention;
  int anchor = -1;       // the node that proves it (CumSum, Conv)
  std::string evidence;  // what proves it, in words
  std::vector<MixerTensor> tensors;
  uint64_t total = 0;    // its tensors' elements, each tensor once
  std::optional<uint64_t> state_elements;  // recurrent state per sequence, null when unknown
  std::optional<uint64_t> state_bytes;     // at the projections' element size
  std::string state_from;                  // how the state was counted, in words
  std::vector<std::string> notes;
};

struct MixerResult {
  std::vector<Mixer> mixers;
  std::vector<std::string> notes;  // anchors whose mixer could not be bounded, in words
  // Tensors a mixer's forward builds and the exporter stored (a recurrence's initial state of
  // zeros, [1, d_inner, N] beside A_log): buffers, not parameters (add_buffers in buffers.h).
  std::vector<BufferTensor> built;
};

// Finds the token mixers of a model. Tensors claimed by attention blocks, expert layers, buffers
// or scalar constants are not a mixer's. Linear in the graph: every walk spends a budget.
MixerResult match_mixers(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                         const FrameworkView& framework);

}  // namespace headcount
