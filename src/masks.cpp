// masks.cpp: what a stored mask's values say (masks.h).
#include "masks.h"

#include "payload.h"

namespace headcount {
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

}  // namespace headcount
