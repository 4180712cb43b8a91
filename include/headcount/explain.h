// headcount/explain.h: derivations a person can follow: the calculator (no model needed), a rule's
// documentation, and one block's count worked out from the model's tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/results/audit.h"
#include "headcount/results/findings.h"

namespace headcount {

enum class Convention { PyTorch, Keras, Matlab, Flax, HuggingFace };

// One row per framework convention; feeds --help, validation and the calculator's text.
struct ConventionInfo {
  Convention id;
  const char* name;      // as typed on the command line
  const char* framework; // as shown to people
  const char* knob;      // the setting that fixes Q/K size, and whether it is per head or total
  bool per_head;         // the knob is per head: the count grows with heads when it is held fixed
};
const std::vector<ConventionInfo>& conventions();
const ConventionInfo* find_convention(const std::string& name);

// A block described in headcount's own terms (per-head sizes).
struct BlockSpec {
  int64_t width = 0;                  // model width d (input of Q/K/V, output of O)
  int64_t heads = 0;                  // query heads h
  std::optional<int64_t> head_dim;    // d_k per head; default width / heads
  std::optional<int64_t> key_channels;  // h x d_k total (MATLAB NumKeyChannels, Flax qkv_features)
  std::optional<int64_t> v_head_dim;  // d_v per head; default d_k
  std::optional<int64_t> kv_heads;    // h_kv; default h
  bool bias = true;
};

struct ProjectionCount {
  std::string role;  // "Q", "K", "V", "O"
  int64_t in = 0, out = 0;
  uint64_t weight = 0, bias = 0;
  std::string formula;  // "512 × (8 × 64) + 8 × 64 = 262,656"
};

struct Calculation {
  int64_t width = 0, heads = 0, head_dim = 0, v_head_dim = 0, kv_heads = 0;
  bool bias = true;
  std::vector<ProjectionCount> projections;  // Q, K, V, O
  uint64_t total = 0;
  uint64_t standard = 0;  // 4d^2 (+4d)
};

// The DOMAIN.md table with the numbers filled in. Throws InputError for impossible specs
// (non-positive sizes, a width heads do not divide with no head size given, overflow).
Calculation calculate(const BlockSpec& spec);

// The calculator's full text: formulas, total, how heads move the count under `convention`, and
// what the same numbers give under the other conventions.
std::string explain_calculation(const BlockSpec& spec, Convention convention);

// The calculator's inference cost: `layers` blocks like `spec` at `context` tokens.
struct CostSpec {
  int64_t layers = 0;
  uint64_t context = 4096;
  int kv_bits = 16;
  std::string kv_dtype = "float16";
  // Sliding windows: a sliding layer keeps at most `window` tokens of K/V and its scores cost at
  // most `window` per token (0: no layer slides). The layers slide in a pattern of `sliding`
  // layers, then `full` layers, repeating from the first; 0:0 with a window: every layer slides.
  uint64_t window = 0;
  int64_t sliding = 0, full = 0;
};

// The layers of `cost` that slide (all of them for the pattern 0:0).
int64_t sliding_layers(const CostSpec& cost);

// K/V cache per token and at the context (with the formula and the numbers plugged in; sliding
// layers capped at their window), what full multi-head attention would keep, and the attention
// MACs per token. Throws InputError on overflow or impossible specs, as calculate() does.
std::string explain_cost(const BlockSpec& spec, const CostSpec& cost);

// What `explain --config` is asked beyond the config: the context for the K/V cache (when not
// given, the text shows the cache at 4,096 tokens only for models whose layers slide or chunk),
// and the cache's element type instead of the config's dtype (a kv_dtypes() name).
struct ConfigExplainOptions {
  std::optional<uint64_t> context;
  std::optional<std::string> kv_dtype;
};

// `explain --config`: a whole model from its config.json alone: parameters by part, the total,
// the parameters one token runs through (mixtures of experts, with and without the input
// embedding), the K/V cache per token and at a context with sliding and chunked layers capped at
// their window, the recurrent state of linear-attention and state-space layers, and
// multi-token-prediction modules apart. Throws InputError for a model_type or a count-changing
// field headcount does not know (family_count_or_explain).
std::string explain_config(const std::string& path, const ConfigExplainOptions& options = {});
std::string explain_config_json(const std::string& path, const ConfigExplainOptions& options = {});

// A rule's documentation.
std::string explain_rule(const Rule& rule);

// `explain --names`: the tensor names headcount reads in a checkpoint, a row per name-table row
// (family, module path, role), the layers' rows first.
std::string explain_names();

// One block's derivation from the model: tensors, shapes, shares, formula. Throws InputError when
// the block index does not exist.
std::string explain_block(const Audit& audit, int block);

}  // namespace headcount
