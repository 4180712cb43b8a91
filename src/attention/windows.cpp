// windows.cpp: sliding-window attention, read from what the graph states about a block: the
// local_window_size of onnxruntime's GroupQueryAttention, or a band-shaped mask on the score path
// (0 where 0 <= i - j < W and a large negative elsewhere, or its boolean form).
#include <algorithm>
#include <cmath>

#include "../payload.h"
#include "headcount/attention.h"
#include "headcount/checked.h"

namespace headcount {
namespace {

constexpr uint64_t kMostMaskValues = uint64_t{1} << 24;  // larger masks are not read

std::string label(const Model& m, int node) {
  const auto& n = *m.nodes[static_cast<size_t>(node)].rec;
  return std::string(n.op_type()) + " '" + std::string(n.name().empty() ? output_of(n, 0) : n.name()) + "'";
}

// The stored tensor a mask operand comes from through slicing and shape steps, and whether a Not
// on the way inverts it; nullptr when it is computed (or reaches an input).
const Weight* mask_source(const Model& m, int g, Name value, bool* inverted) {
  for (int step = 0; step < 16 && !value.empty(); ++step) {
    if (const Weight* w = m.weight_for(g, value)) return w;
    int p = m.producer_of(g, value);
    if (p < 0) return nullptr;
    const auto& n = *m.nodes[static_cast<size_t>(p)].rec;
    std::string_view op = n.op_type();
    if (op == "Not"sv) *inverted = !*inverted;
    else if (!one_of(op, {"Slice", "Unsqueeze", "Squeeze", "Expand", "Cast", "Reshape", "Identity", "Tile", "CastLike"})) return nullptr;
    value = input_of(n, 0);
  }
  return nullptr;
}

std::string window_words(int64_t w) { return w == 1 ? "itself" : "itself and the " + std::to_string(w - 1) + " before it"; }

}  // namespace

std::optional<int64_t> mask_window(const Weight& w, bool additive, bool inverted) {
  size_t r = w.dims.size();
  if (r < 2 || w.dims[r - 1] != w.dims[r - 2] || w.dims[r - 1] < 2) return std::nullopt;
  uint64_t side = static_cast<uint64_t>(w.dims[r - 1]);
  if (side * side != w.elements || w.elements > kMostMaskValues) return std::nullopt;  // other axes 1
  // The allowed band of each row must be 0 <= i - j < W with one W for every row that is long
  // enough to show it (row i shows min(i + 1, W) allowed keys).
  int64_t window = -1;
  int64_t row_allowed = 0, row_first = -1;  // allowed keys of the current row, and the first of them
  bool ok = for_each_value(w, [&](uint64_t index, double v) {
    uint64_t i = index / side, j = index % side;
    bool allowed;
    if (additive) {
      if (v == 0) allowed = true;
      else if (v <= -1e4) allowed = false;
      else return false;
    } else {
      if (v != 0 && v != 1) return false;
      allowed = (v == 1) != inverted;
    }
    if (allowed) {
      if (j > i) return false;  // a key after the query: not a causal band
      if (row_first < 0) row_first = static_cast<int64_t>(j);
      else if (static_cast<int64_t>(j) != row_first + row_allowed) return false;  // a hole in the band
      ++row_allowed;
    }
    if (j + 1 == side) {  // the row is complete: its band ends at the diagonal
      if (row_allowed == 0 || row_first + row_allowed != static_cast<int64_t>(i) + 1) return false;
      if (row_allowed < static_cast<int64_t>(i) + 1) {  // cut short: the window shows
        if (window < 0) window = row_allowed;
        else if (window != row_allowed) return false;
      } else if (window >= 0) {
        return false;  // a full row after a cut one: not one window
      }
      row_allowed = 0;
      row_first = -1;
    }
    return true;
  });
  if (!ok || window < 1) return std::nullopt;
  // Rows before the cut are full because they are shorter than the window: the first cut row
  // (i = window) holds exactly `window` keys, so every row agrees.
  return window;
}

void find_windows(const Model& m, AttentionResult& attention, bool read_values) {
  for (AttentionBlock& b : attention.blocks) {
    if (b.core_node < 0) continue;
    const auto& core = *m.nodes[static_cast<size_t>(b.core_node)].rec;
    int g = m.nodes[static_cast<size_t>(b.core_node)].graph;
    if (b.form != "unfused") {
      // onnxruntime's GroupQueryAttention (and SparseAttention) attend to the token and the
      // local_window_size before it; -1 is no window.
      for (const Attribute& a : core.attribute()) {
        if (a.name != "local_window_size"sv || !a.has_i || a.i < 0 || a.i == INT64_MAX) continue;
        b.window = a.i + 1;
        b.window_from = "attribute local_window_size " + std::to_string(a.i) + " of " + label(m, b.core_node) +
                        ": each query attends to " + window_words(a.i + 1);
      }
      continue;
    }
    if (!read_values) continue;
    // The masks on the score path: Add(scores, mask) or Where(condition, scores, fill).
    for (size_t s = 1; s < b.score_nodes.size() && !b.window; ++s) {
      int ni = b.score_nodes[s];
      const auto& n = *m.nodes[static_cast<size_t>(ni)].rec;
      std::string_view op = n.op_type();
      std::string on_path = std::string(output_of(*m.nodes[static_cast<size_t>(b.score_nodes[s - 1])].rec, 0));
      if (op == "Add"sv) {
        for (const auto& in : n.input()) {
          if (in == on_path) continue;
          bool inverted = false;
          const Weight* w = mask_source(m, g, in, &inverted);
          if (!w || inverted) continue;
          if (auto win = mask_window(*w, true)) {
            b.window = win;
            b.window_from = "the band of the mask '" + std::string(w->name) + "' " + shape_string(w->dims) +
                            " added to the scores: 0 where 0 ≤ i − j < " + std::to_string(*win) +
                            ", so each query attends to " + window_words(*win);
          }
        }
      } else if (op == "Where"sv && n.input_size() == 3) {
        // The scores on the true branch: the condition allows; on the false branch: it forbids.
        bool scores_if_true = input_of(n, 1) == on_path;
        if (!scores_if_true && input_of(n, 2) != on_path) continue;
        bool inverted = !scores_if_true;
        const Weight* w = mask_source(m, g, input_of(n, 0), &inverted);
        if (!w) continue;
        if (auto win = mask_window(*w, false, inverted)) {
          b.window = win;
          b.window_from = "the band of the boolean mask '" + std::string(w->name) + "' " + shape_string(w->dims) +
                          " that selects the scores: each query attends to " + window_words(*win);
        }
      }
    }
  }
}

}  // namespace headcount
