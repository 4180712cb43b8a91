// headcount/diff.h: two models compared block by block (`headcount diff A B`): what changed in
// heads, sizes and counts, and the outcome in one sentence ("heads 12 → 4; attention parameters
// unchanged (each projection is still 768 × 768)"). B may be a baseline report instead of a model.
#pragma once

#include <string>

#include "headcount/results/diff.h"
#include "headcount/results/audit.h"
#include "headcount/baseline.h"

namespace headcount {

DiffSide diff_side(const std::string& path, const Audit& audit);
DiffSide diff_side(const std::string& path, const BaselineModel& baseline);

Diff compare_sides(DiffSide a, DiffSide b);

}  // namespace headcount
