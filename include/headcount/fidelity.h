// headcount/fidelity.h: does an export hold its checkpoint? Every checkpoint tensor is looked for
// in the exported model by its values, in each layout exporters write (as stored, transposed for a
// MatMul, reshaped, packed with others into one tensor), across dtype conversions; a tensor whose
// values are nowhere is paired by name, role or shape to say what changed, or else it is lost.
// `headcount diff model.onnx CHECKPOINT` and `headcount audit model.onnx --checkpoint PATH`.
#pragma once

#include <string>

#include "headcount/results/fidelity.h"

namespace headcount {

struct Audit;

// Compares an audited export with an audited checkpoint. Reads both payloads: a few sampled
// elements of every tensor, then in full only the pairs whose samples agree, in bounded chunks.
Fidelity check_fidelity(const Audit& exported, const std::string& export_path, const Audit& checkpoint,
                        const std::string& checkpoint_path);

}  // namespace headcount
