// headcount/results/buffers.h: which stored tensors are buffers, scalar constants or merged copies,
// and the framework's own count. Written by framework_view (src/buffers.cpp); read by the mixers,
// the composition, the findings and the gates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headcount {

// A stored tensor the framework keeps as a buffer, and why headcount says so.
struct BufferTensor {
  int weight = -1;     // index into Model::weights
  std::string reason;  // "an additive mask: 0 and -inf", "the cos cache of RotaryEmbedding 'rot'" ...
};

// An Identity node that re-creates a parameter from a tensor the exporter stored once.
struct MergedCopy {
  int weight = -1;  // the stored tensor
  int node = -1;    // the Identity node (its output is named after the merged parameter)
};

struct FrameworkView {
  std::vector<BufferTensor> buffers;
  uint64_t buffer_elements = 0;
  // One-element tensors that are constants of arithmetic, not parameters: older exporters store
  // a decomposed LayerNorm's exponent and epsilon, GELU's constants and the score scale as 0-d or
  // [1] initializers. Each is set aside only when every consumer is arithmetic and its value is
  // one that arithmetic uses (see scalar_constant in buffers.cpp), with the reason.
  std::vector<BufferTensor> constants;
  uint64_t constant_elements = 0;
  std::vector<MergedCopy> merged;
  uint64_t merged_elements = 0;
  // unique - buffers - constants + merged copies: the number the framework's own count gives.
  uint64_t parameters = 0;
  // False with --no-content: no value was read, so only buffers proven by their use were found.
  bool values_read = false;
};

}  // namespace headcount
