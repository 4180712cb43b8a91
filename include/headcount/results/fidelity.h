// headcount/results/fidelity.h: whether an export holds its checkpoint, tensor by tensor. Written
// by check_fidelity (src/fidelity.cpp); read by the gates, diff and the renderers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headcount {

// Where an export tensor holds a checkpoint tensor's values.
enum class Layout {
  Same,        // the same shape (dimensions of 1 aside), element for element
  Transposed,  // a 2-D tensor stored transposed ([out, in] as a MatMul's [in, out])
  Reshaped,    // another shape with the same elements in the same order
  Rows,        // a run of the export tensor's elements: rows of a packed [3·out, in] or [3·out]
  Columns,     // transposed into a run of columns of a packed [in, 3·out]
  // A GGUF's Q or K: llama.cpp's converter reorders each head's rows for its rotary layout (the
  // two halves of a head interleaved); the export holds the rows in the model's own order.
  Rotary,            // ... as stored
  RotaryTransposed,  // ... transposed
};

struct Holder {
  int weight = -1;  // index into the export's Model::weights
  std::string name;
  Layout layout = Layout::Same;
  uint64_t start = 0, end = 0;  // Rows: elements [start, end); Columns: columns [start, end)
};

enum class Verdict {
  Kept,     // its values are in the export, whole
  Folded,   // its values are a part of a larger export tensor (packed Q/K/V, a merged bias)
  Changed,  // paired with an export tensor whose values differ
  Lost,     // no export tensor holds its values, and none pairs with it
  Unknown,  // not compared: a type whose values are not read (a quantized block type)
};

// A tensor as reports name it (the models the indices point into need not outlive the result).
struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype;  // "float32", "bfloat16", "Q4_K" ...
  uint64_t elements = 0;
};

struct TensorFidelity {
  int tensor = -1;  // index into the checkpoint's Model::weights
  NamedShape what;
  Verdict verdict = Verdict::Lost;
  // Kept: every export tensor holding it (2 or more: stored more than once); Folded: the packed
  // tensor; Changed and Unknown: the tensor it is paired with, if any.
  std::vector<Holder> held;
  bool shared = false;       // Kept: its export tensor also holds an equal checkpoint tensor
  std::string paired_by;     // Changed, Unknown: "name", "role", "closest values", "only one of its size"
  uint64_t differing = 0;    // Changed: elements that differ at the narrower type
  double largest = 0;        // ... the largest absolute difference
  uint64_t largest_at = 0;   // ... at this element of the checkpoint tensor (row-major)
  double checkpoint_value = 0, export_value = 0;  // ... the two values there
  int32_t compared_as = 0;   // the narrower of the two types, the values compared at
  std::string why;           // Unknown: why not compared
};

struct Fidelity {
  std::string export_path, checkpoint_path;
  std::vector<TensorFidelity> tensors;  // one per checkpoint parameter tensor, in its order
  std::vector<NamedShape> added;        // export parameter tensors that hold no checkpoint tensor
  // Export parameters that hold nothing compared but have the size of a checkpoint tensor that
  // was not compared (a quantized one): they may hold it, so they are not called added.
  std::vector<NamedShape> unpaired;
  uint64_t kept = 0, folded = 0, changed = 0, lost = 0, unknown = 0;
  uint64_t duplicated = 0;  // kept tensors stored more than once
  uint64_t shared = 0;      // kept tensors whose export tensor holds an equal one too
  uint64_t lost_elements = 0, added_elements = 0;
  uint64_t export_parameters = 0, checkpoint_parameters = 0;  // each side's framework count
  std::string counts;   // the two framework counts: equal, or why not
  std::string outcome;  // the result in one sentence
  bool failed() const { return lost > 0 || changed > 0; }
};

const char* verdict_name(Verdict v);  // "kept", "folded", "changed", "lost", "unknown"
const char* layout_name(Layout l);    // "as stored", "transposed", "reshaped", "rows", "columns"

}  // namespace headcount
