// headcount/parts.h: where the stored parameters go. Each part of a model claims the tensors it
// proves: the attention blocks their projections and extras, the expert layers their routed
// experts and routers, the buffers and scalar constants theirs, the token mixers (linear
// attention, state-space layers) theirs, then the feed-forward (products
// around an activation), embeddings (tables a Gather reads), the LM head (a product of the width
// to an embedding's vocabulary) and norms. A tensor
// belongs to the first part that claims it; the composition is the union of the claims, and what
// no part claims is "everything else", each tensor with why (unclaimed_reason).
#pragma once

#include <vector>

#include "headcount/results/parts.h"
#include "headcount/results/attention.h"
#include "headcount/results/buffers.h"
#include "headcount/results/duplicates.h"
#include "headcount/results/experts.h"
#include "headcount/results/mixers.h"
#include "headcount/model.h"

namespace headcount {

// The claims of every part, in order; a tied copy (duplicates) goes with its original. `named`:
// a checkpoint's parts by tensor name (checkpoint/model.h), claimed after the matchers' own.
Composition compose(const Model& model, const AttentionResult& attention, const ExpertResult& experts,
                    const MixerResult& mixers, const std::vector<DuplicatePair>& duplicates, const FrameworkView& framework,
                    const std::vector<Part>* named = nullptr);

}  // namespace headcount
