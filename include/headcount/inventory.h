// headcount/inventory.h: what a model holds: its parameter tensors by dtype and storage, and
// where they go (attention, embeddings, feed-forward, norms, buffers, everything else).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/experts.h"
#include "headcount/buffers.h"
#include "headcount/findings.h"
#include "headcount/model.h"

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
  std::vector<Breakdown> by_dtype;
  std::vector<Breakdown> by_storage;
  std::vector<int> largest;  // weight indices, most elements first
};

// Counts the parameter tensors of a model. Throws InputError if a total overflows.
Inventory take_inventory(const Model& model);

// Where the stored parameters go, each tensor in one category: attention projections first,
// then embeddings (Gather tables and their duplicates), norms, feed-forward, everything else.
enum class Part { Attention, Embeddings, Norms, FeedForward, RoutedExperts, Routers, Buffers, Constants, Other };

struct Composition {
  std::vector<Part> part_of;  // per weight index (non-parameters are Other)
  uint64_t attention = 0;
  uint64_t embeddings = 0;
  uint64_t feed_forward = 0;    // dense feed-forward and shared experts
  uint64_t routed_experts = 0;  // experts a router chooses among (experts.h)
  uint64_t routers = 0;
  uint64_t norms = 0;
  uint64_t buffers = 0;  // masks, rotary tables and the like (buffers.h)
  uint64_t constants = 0;  // scalar constants of arithmetic stored as tensors (buffers.h)
  uint64_t other = 0;
};

// Sorts each parameter tensor into one Composition category.
Composition compose(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                    const std::vector<DuplicatePair>& duplicates, const FrameworkView& framework);

}  // namespace headcount
