// headcount/results/cost.h: the inference cost: K/V cache bytes and MACs per token. Written by
// estimate_cost (src/cost.cpp); read by the gates and the renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headcount {

struct BlockCost {
  int block = 0;
  bool cross = false;       // cross-attention: its K/V are per token of the encoder's output
  int shared_with = -1;     // K/V read from the same graph input as this earlier block: counted there
  std::optional<int64_t> k_width, v_width;  // K and V features per token (kv_heads x head size)
  int bits = 0;             // per element; 0 when unknown
  std::string dtype;        // "float16"
  std::string dtype_from;   // where the element size came from, or why it is unknown
  std::optional<uint64_t> kv_bytes_per_token;      // null when unknown
  std::optional<uint64_t> full_mha_bytes_per_token;  // with kv_heads = heads: set for grouped blocks
  // Latent attention: the cache holds the latent and the RoPE key (k_width, v_width 0); this is
  // the full K and V the graph computes from it, which a runtime that expands before caching keeps.
  std::optional<uint64_t> expanded_kv_bytes_per_token;
  uint64_t projection_macs = 0;                     // per token: one per Q/K/V/O weight element
  std::optional<uint64_t> score_macs;               // per token at the context: heads x (d_k + d_v) x context
  // A sliding window: the block keeps and scores min(context, window) tokens, not the context.
  std::optional<int64_t> window;
  std::string unknown;      // why a figure of this block is unknown, or ""
};

struct Cost {
  uint64_t context = 0, batch = 0;
  std::vector<BlockCost> blocks;
  // Self-attention K/V per token (what a decoder caches), each cache once.
  uint64_t kv_bytes_per_token = 0;
  bool kv_lower_bound = false;                 // a block's size is unknown: at least this much
  std::optional<uint64_t> kv_bytes_at_context;  // per token x context x batch (windows capped); null on overflow
  // What sliding windows save at the context: the same blocks' K/V at the whole context less what
  // they keep (null when no block has a window, or on overflow).
  std::optional<uint64_t> kv_window_saved_bytes;
  uint64_t cross_kv_bytes_per_encoder_token = 0;  // cross-attention K/V, per encoder token
  // Grouped K/V heads: the same blocks with full multi-head attention, when any block is grouped.
  std::optional<uint64_t> full_mha_kv_bytes_per_token;
  uint64_t kv_parameters_saved = 0;  // K/V projection weights grouping saved (weights only)
  // MACs per token, decoding one token against a cache of `context` tokens.
  uint64_t macs_attention_projections = 0;
  uint64_t macs_attention_scores = 0;
  uint64_t macs_feed_forward = 0;
  uint64_t macs_experts = 0;  // routed experts: k of them per token in each layer
  uint64_t macs_lm_head = 0;
  uint64_t macs_mixers = 0;  // the token mixers' projections (mixers.h)
  uint64_t macs_other = 0;  // every other matrix product with a stored weight
  uint64_t macs_per_token = 0;
  bool macs_lower_bound = false;
  std::optional<uint64_t> prefill_macs;  // a whole prompt of `context` tokens; null on overflow
  // The recurrent state the token mixers keep per sequence (constant in the context), x batch;
  // 0 without mixers. A lower bound when a mixer's state is unknown.
  uint64_t state_bytes = 0;
  bool state_lower_bound = false;
  std::vector<std::string> notes;        // what the figures leave out, in words
};

}  // namespace headcount
