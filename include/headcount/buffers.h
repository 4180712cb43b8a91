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
#include <vector>

#include "headcount/results/buffers.h"
#include "headcount/results/attention.h"
#include "headcount/results/duplicates.h"
#include "headcount/model.h"

namespace headcount {

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
