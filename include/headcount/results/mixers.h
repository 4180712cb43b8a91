// headcount/results/mixers.h: what the token-mixer stage finds: linear attention, state-space and
// delta-rule layers with their tensors and state. Written by match_mixers (src/mixers.cpp); read
// by the composition, the cost and the renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/results/buffers.h"

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

}  // namespace headcount
