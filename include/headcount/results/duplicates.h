// headcount/results/duplicates.h: tensors stored twice, by content. Written by find_duplicates
// (src/duplicates.cpp); read by the buffers, the composition, the findings and the renderers.
#pragma once

namespace headcount {

// Two stored tensors with identical content, or one the transpose of the other.
struct DuplicatePair {
  int original = -1;   // weight index, the first in file order
  int copy = -1;       // weight index of the copy
  bool transposed = false;
};

}  // namespace headcount
