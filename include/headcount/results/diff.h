// headcount/results/diff.h: two models (or a model and a baseline) compared. Written by
// compare_sides (src/diff.cpp); read by diff's renderers (src/render/diff_report.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headcount/results/audit.h"
#include "headcount/results/fidelity.h"

namespace headcount {

// What a side of the comparison states; a baseline report states less than an audit (no
// projection counts or head sizes), and what it does not state is not compared.
struct DiffBlock {
  std::optional<int64_t> heads, kv_heads, width, head_dim, v_head_dim;
  std::optional<uint64_t> q, k, v, o, extras, total;
  std::optional<std::pair<int64_t, int64_t>> q_shape, k_shape, v_shape, o_shape;  // in × out
  std::string form;
};

struct DiffSide {
  std::string path;
  std::optional<uint64_t> framework, stored, attention;
  std::vector<DiffBlock> blocks;
  std::vector<std::string> findings;  // "rule" or "rule (block N)"
  const Audit* audit = nullptr;       // when the side is a model
};

struct Change {
  std::string what;  // "parameters", "heads", "Q"
  std::string a, b;  // as shown ("?" when a side does not state it)
  std::optional<int64_t> delta;  // for counts
};

struct BlockChanges {
  int index = 0;
  std::vector<Change> changes;  // only what differs
};

struct Diff {
  DiffSide a, b;
  std::vector<Change> totals;          // parameters, stored, attention, blocks: each, changed or not
  std::vector<BlockChanges> blocks;    // blocks with a change, and blocks only one side has
  std::vector<std::string> findings_added, findings_removed;
  std::string outcome;                 // the result in one sentence
  bool counts_changed = false;         // a parameter count or the number of blocks differs
  // An export against its checkpoint (one side a safetensors or GGUF file): does the export hold
  // every checkpoint weight?
  std::optional<Fidelity> fidelity;
};

// "+4,918,424" or "−16" (a minus sign; INT64_MIN too), and a change's delta as reports show it:
// "unchanged", a signed count, or "" when the change is not a count.
std::string signed_count(int64_t d);
std::string change_text(const Change& c);

}  // namespace headcount
