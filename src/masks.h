// masks.h: what a stored mask's values say, read by the attention stage's windows
// (src/attention/windows.cpp) and by the buffers stage (src/buffers.cpp), which tells a stored
// mask from a parameter (internal).
#pragma once

#include <cstdint>
#include <optional>

#include "headcount/model.h"

namespace headcount {

constexpr uint64_t kMostMaskValues = uint64_t{1} << 24;  // larger masks are not read

// The window of a stored causal mask: W when its last two axes (a T x T grid, the other axes 1)
// allow a query i to see key j exactly when 0 <= i - j < W, with W < T (a grid that allows every
// j <= i is a causal mask, not a window). `additive`: 0 allows and large negatives (<= -1e4,
// -inf) forbid; else a boolean (or 0/1) grid whose true allows, or forbids when `inverted`.
// nullopt when the values are not read, or are not such a band.
std::optional<int64_t> mask_window(const Weight& w, bool additive, bool inverted = false);

}  // namespace headcount
