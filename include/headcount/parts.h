// headcount/parts.h: where the stored parameters go. Each part of a model claims the tensors it
// proves: the attention blocks their projections and extras, the expert layers their routed
// experts and routers, the buffers and scalar constants theirs, the token mixers (linear
// attention, state-space layers) theirs, then the feed-forward (products
// around an activation), embeddings (tables a Gather reads), the LM head (a product of the width
// to an embedding's vocabulary) and norms. A tensor
// belongs to the first part that claims it; the composition is the union of the claims, and what
// no part claims is "everything else", each tensor with why (unclaimed_reason).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/buffers.h"
#include "headcount/duplicates.h"
#include "headcount/experts.h"
#include "headcount/mixers.h"
#include "headcount/model.h"

namespace headcount {

enum class Part { Attention, Embeddings, Norms, FeedForward, RoutedExperts, Routers, Buffers, Constants, LMHead, Mixers, Other };
// "attention", "embeddings", "norms", "feed_forward", "routed_experts", "routers", "buffers",
// "constants", "lm_head", "mixers", "other": the JSON names.
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
  uint64_t other = 0;
  std::vector<int> unclaimed;  // parameter tensors no part claimed (weight indices, most elements first)
};

// The claims of every part, in order; a tied copy (duplicates) goes with its original. `named`:
// a checkpoint's parts by tensor name (checkpoint/model.h), claimed after the matchers' own.
Composition compose(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                    const MixerResult& mixers, const std::vector<DuplicatePair>& duplicates, const FrameworkView& framework,
                    const std::vector<Part>* named = nullptr);

// Why no part claimed a tensor, in words: what reads it ("read by Conv 'stem'", "no node reads
// it"), a node that none of the parts above reads as theirs.
std::string unclaimed_reason(const Model& model, int weight);

}  // namespace headcount
