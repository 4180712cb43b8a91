// headcount/results/inventory.h: what a model stores, by dtype and kind. Written by take_inventory
// (src/inventory.cpp); read by the gates and the renderers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headcount {

// Totals per dtype or per storage kind, over parameter tensors.
struct Breakdown {
  std::string key;
  uint64_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

struct Inventory {
  uint64_t stored = 0;   // elements of every parameter tensor, each tensor once
  uint64_t bytes = 0;
  uint64_t tensors = 0;  // parameter tensors
  uint64_t non_parameter_tensors = 0;  // integer shape/index constants and scalars
  uint64_t non_parameter_elements = 0;  // their elements: in no count, and said so
  std::vector<Breakdown> by_dtype;
  std::vector<Breakdown> by_storage;
  std::vector<int> largest;  // weight indices, most elements first
};

}  // namespace headcount
