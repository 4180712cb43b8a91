// headcount/buffers.h: which stored tensors are buffers rather than learned parameters, and the
// count the framework itself reports for the model.
//
// Exports keep non-trainable tensors as initializers: causal masks, ALiBi biases, rotary cos/sin
// tables and inverse frequencies. They also merge identical parameters (an untrained model's
// all-ones norm weights) into one initializer re-created by Identity nodes. PyTorch's
// sum(p.numel()) and Hugging Face's num_parameters() count neither the buffers nor the merges.
// Each buffer is classified by evidence, with its reason: the operator slot it feeds (a rotary
// cache input), or its values (0/-inf masks, 0/1 triangles, per-head slopes times distances,
// cos/sin tables, geometric frequencies, an arange). A tensor without such evidence stays a
// parameter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/duplicates.h"
#include "headcount/model.h"

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

// Adds buffers a later stage proved (the mixers' built tensors) and takes them out of the
// framework count.
void add_buffers(FrameworkView& view, const std::vector<BufferTensor>& more, const Model& model);

// Classifies the buffers and merged copies of an audited model. `unique` is the stored count less
// duplicate copies (find_duplicates); `read_values` allows reading candidate tensors' bytes, each
// element read spending from `budget` (the audit's; an allowance of its own when null): a tensor
// whose check it cannot pay for is not proven a buffer and stays a parameter.
FrameworkView framework_view(const Model& model, const AttentionResult& attention,
                             const std::vector<DuplicatePair>& duplicates, uint64_t unique, bool read_values,
                             ValueBudget* budget = nullptr);

}  // namespace headcount
