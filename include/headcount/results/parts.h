// headcount/results/parts.h: the composition: which part claims each stored tensor. Written by
// compose (src/parts.cpp); read by the cost, declared vs found and the renderers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headcount/model.h"

namespace headcount {

enum class Part { Attention, Embeddings, Norms, FeedForward, RoutedExperts, Routers, Buffers, Constants, LMHead, Mixers,
                  Adapter, Other };
// "attention", "embeddings", "norms", "feed_forward", "routed_experts", "routers", "buffers",
// "constants", "lm_head", "mixers", "adapter", "other": the JSON names.
const char* part_name(Part p);

struct Composition {
  std::vector<Part> part_of;  // per weight index (non-parameters are Other)
  uint64_t attention = 0;
  uint64_t embeddings = 0;
  uint64_t feed_forward = 0;    // dense feed-forward and shared experts
  uint64_t routed_experts = 0;  // experts a router chooses among (experts.h)
  uint64_t routers = 0;
  uint64_t norms = 0;
  uint64_t buffers = 0;    // masks, rotary tables and the like (buffers.h)
  uint64_t constants = 0;  // scalar constants of arithmetic stored as tensors (buffers.h)
  // An LM head with a weight of its own (untied): a product of the width to the vocabulary of an
  // embedding table. A tied head is the table itself, or a copy of it that goes with the table.
  uint64_t lm_head = 0;
  uint64_t mixers = 0;  // token mixers that are not softmax attention (mixers.h)
  uint64_t adapter = 0;  // a LoRA adapter's factors (adapter.h)
  uint64_t other = 0;
  std::vector<int> unclaimed;  // parameter tensors no part claimed (weight indices, most elements first)
};

// Why no part claimed a tensor, in words: what reads it ("read by Conv 'stem'", "no node reads
// it"), a node that none of the parts above reads as theirs.
std::string unclaimed_reason(const Model& model, int weight);

}  // namespace headcount
