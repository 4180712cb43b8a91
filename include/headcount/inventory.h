// headcount/inventory.h: what a model holds: its parameter tensors by dtype and storage, counted
// from dims alone (where they go is parts.h).
#pragma once

#include "headcount/results/inventory.h"
#include "headcount/model.h"

namespace headcount {

// Counts the parameter tensors of a model. Throws InputError if a total overflows.
Inventory take_inventory(const Model& model);

}  // namespace headcount
