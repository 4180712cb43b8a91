// stages.h: the matching stages' entry points that share the audit's shape oracle (internal).
//
// The public ones (match_attention, match_experts, match_mixers) each make an oracle of their own
// when they need one; the audit pipeline (audit_loaded, src/audit.cpp) calls these instead, with
// one SharedShapes per audit, so a graph's shapes are propagated once whatever stages read them.
#pragma once

#include "shapes.h"
#include "headcount/results/attention.h"
#include "headcount/results/buffers.h"
#include "headcount/results/experts.h"
#include "headcount/results/mixers.h"

namespace headcount::detail {

// As headcount::match_attention; shapes_ms is how long building the oracle took (0 when an
// earlier stage built it).
AttentionResult match_attention(SharedShapes& shapes, double* shapes_ms = nullptr);
// As headcount::match_experts.
ExpertResult match_experts(SharedShapes& shapes, AttentionResult& attention);
// Whether a graph has an op a token mixer is anchored on (a CumSum, a Conv): without one,
// match_mixers finds nothing and reads no shapes.
bool may_hold_mixers(const Model& model);
// As headcount::match_mixers.
MixerResult match_mixers(SharedShapes& shapes, const AttentionResult& attention, const ExpertResult& experts,
                         const FrameworkView& framework);

}  // namespace headcount::detail
