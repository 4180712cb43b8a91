// fidelity_rows.h: an export against its checkpoint (headcount/results/fidelity.h) as rows every format prints
// the same way, and as JSON (internal to the renderers).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "headcount/results/fidelity.h"
#include "json_writer.h"

namespace headcount::renderers {

struct FidelityRow {
  std::string label;  // "tensors", "counts", "stored twice", "folded", "changed", "lost", "added", ...
  std::string text;
};

// The summary, the two counts, then one row per tensor that is not simply kept once (stored more
// than once, folded, changed, lost, not compared) and per added tensor: at most `limit` rows of
// each kind, and a row saying how many more (limit 0: every row).
std::vector<FidelityRow> fidelity_rows(const Fidelity& f, size_t limit);

// The rows as the text report prints them, a label column and wrapped text.
void fidelity_text(const Fidelity& f, size_t limit, std::ostream& out);

// The comparison as a JSON object at the writer's place.
void fidelity_json(const Fidelity& f, JsonWriter& j);

}  // namespace headcount::renderers
