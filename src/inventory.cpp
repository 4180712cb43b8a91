// inventory.cpp: the parameter tensors of a model, by dtype and storage.
#include "headcount/inventory.h"

#include <algorithm>
#include <map>

#include "headcount/error.h"

namespace headcount {

namespace {

void add_checked(uint64_t* total, uint64_t v) {
  if (add_overflows(*total, v, total)) throw InputError("the model's parameter total overflows 64 bits");
}

void add_to(std::vector<Breakdown>& rows, std::string_view key, const Weight& w) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const Breakdown& b) { return b.key == key; });
  if (it == rows.end()) {
    rows.push_back(Breakdown{std::string(key), 0, 0, 0});
    it = rows.end() - 1;
  }
  it->tensors += 1;
  add_checked(&it->elements, w.elements);
  add_checked(&it->bytes, w.bytes);
}

void sort_rows(std::vector<Breakdown>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Breakdown& a, const Breakdown& b) {
    return a.elements != b.elements ? a.elements > b.elements : a.key < b.key;
  });
}

}  // namespace

Inventory take_inventory(const Model& model) {
  Inventory inv;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (!w.parameter) {
      ++inv.non_parameter_tensors;
      add_checked(&inv.non_parameter_elements, w.elements);
      continue;
    }
    ++inv.tensors;
    add_checked(&inv.stored, w.elements);
    add_checked(&inv.bytes, w.bytes);
    add_to(inv.by_dtype, dtype_name(w.dtype), w);
    add_to(inv.by_storage, storage_name(w.storage), w);
    inv.largest.push_back(static_cast<int>(i));
  }
  sort_rows(inv.by_dtype);
  sort_rows(inv.by_storage);
  std::stable_sort(inv.largest.begin(), inv.largest.end(), [&](int a, int b) {
    return model.weights[a].elements > model.weights[b].elements;
  });
  return inv;
}

}  // namespace headcount
