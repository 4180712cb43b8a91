// headcount/duplicates.h: parameter tensors stored twice, found by comparing their content (the
// content stage, after matching; src/duplicates.cpp). The rules and the counts read the pairs.
#pragma once

#include <vector>

#include "headcount/results/duplicates.h"
#include "headcount/model.h"

namespace headcount {

// Finds duplicate parameter tensors by content. Only candidate pairs (same dtype and element count,
// same or transposed shape) are compared: a few sampled elements first, then the whole tensors
// in bounded chunks, so memory stays flat and time stays near one read of those tensors.
std::vector<DuplicatePair> find_duplicates(const Model& model);

}  // namespace headcount
