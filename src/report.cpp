// report.cpp: the inventory of parameter tensors and the audit pipeline for one file.
#include "headcount/report.h"

#include <algorithm>
#include <map>

#include "headcount/error.h"

namespace headcount {

const char* const kVersion = "0.1.0";
const char* const kSchema = "headcount/1";

namespace {

void add_checked(uint64_t* total, uint64_t v) {
  if (add_overflows(*total, v, total)) throw InputError("the model's parameter total overflows 64 bits");
}

void add_to(std::vector<Breakdown>& rows, const std::string& key, const Weight& w) {
  auto it = std::find_if(rows.begin(), rows.end(), [&](const Breakdown& b) { return b.key == key; });
  if (it == rows.end()) {
    rows.push_back(Breakdown{key, 0, 0, 0});
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

Audit audit_file(const std::string& path, const AuditOptions& options) {
  Audit a{load_model(path, options.load), {}, {}, {}};
  a.inventory = take_inventory(a.model);
  a.attention = match_attention(a.model);
  a.findings = run_rules(a.model, a.attention);
  return a;
}

std::string with_commas(uint64_t n) {
  std::string s = std::to_string(n), out;
  int c = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (c && c % 3 == 0) out += ',';
    out += *it;
    ++c;
  }
  return std::string(out.rbegin(), out.rend());
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace headcount
