// headcount/attention.h: find every attention block in a Model and the Q/K/V/O weights it owns.
//
// Matching is structural: the unfused core MatMul(Q, K^T) -> [scale] -> [mask] -> Softmax ->
// MatMul(., V), and the fused operators (com.microsoft Attention, MultiHeadAttention,
// GroupQueryAttention, ONNX Attention). Names are used only for display. Every Softmax ends up
// either inside a block or in `unmatched` with the reason.
#pragma once

#include "headcount/results/attention.h"
#include "headcount/model.h"

namespace headcount {

// Finds the attention blocks of a loaded model. Never throws for unusual graphs: what it cannot
// read becomes an unmatched entry or a note.
AttentionResult match_attention(const Model& model, double* shapes_ms = nullptr);

// Sets each block's window from what the graph states: GroupQueryAttention's local_window_size,
// or a band-shaped mask on the score path (stored, read only when `read_values`). Reading masks
// spends from `budget` (the audit's; an allowance of its own when null): a block whose mask was
// not read before it ran out keeps no window.
void find_windows(const Model& model, AttentionResult& attention, bool read_values, ValueBudget* budget = nullptr);

}  // namespace headcount
