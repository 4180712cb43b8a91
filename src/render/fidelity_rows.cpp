// fidelity_rows.cpp: an export against its checkpoint, as rows and as JSON (render/fidelity_rows.h).
#include "fidelity_rows.h"

#include <cstdio>
#include <map>

#include "headcount/model.h"
#include "headcount/numbers.h"
#include "layout.h"

namespace headcount::renderers {
namespace {

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::string where(const Holder& h) {
  switch (h.layout) {
    case Layout::Rows: return "elements " + with_commas(h.start) + ":" + with_commas(h.end) + " of " + h.name;
    case Layout::Columns: return "columns " + with_commas(h.start) + ":" + with_commas(h.end) + " of " + h.name + " (transposed)";
    case Layout::Same: return h.name;
    default: return h.name + " (" + layout_name(h.layout) + ")";
  }
}

std::string tensor(const NamedShape& n) {
  return n.name + " " + shape_string(n.shape) + " " + n.dtype;
}

}  // namespace

std::vector<FidelityRow> fidelity_rows(const Fidelity& f, size_t limit) {
  std::vector<FidelityRow> rows;
  rows.push_back({"checkpoint", f.checkpoint_path});
  uint64_t same = 0, transposed = 0, reshaped = 0;
  for (const TensorFidelity& t : f.tensors) {
    if (t.verdict != Verdict::Kept || t.held.empty()) continue;
    switch (t.held[0].layout) {
      case Layout::Transposed: ++transposed; break;
      case Layout::Reshaped: ++reshaped; break;
      default: ++same; break;
    }
  }
  std::string summary = count_of(f.tensors.size(), "checkpoint tensor", "checkpoint tensors") + ": " + with_commas(f.kept) + " kept";
  std::vector<std::string> how;
  if (same) how.push_back(with_commas(same) + " as stored");
  if (transposed) how.push_back(with_commas(transposed) + " transposed");
  if (reshaped) how.push_back(with_commas(reshaped) + " reshaped");
  if (!how.empty() && f.kept) {
    summary += " (";
    for (size_t i = 0; i < how.size(); ++i) summary += (i ? ", " : "") + how[i];
    summary += ")";
  }
  if (f.duplicated) summary += ", " + with_commas(f.duplicated) + " of them stored more than once";
  if (f.shared) summary += ", " + with_commas(f.shared) + " sharing an export tensor with an equal one";
  if (f.folded) summary += ", " + with_commas(f.folded) + " folded into packed tensors";
  if (f.changed) summary += ", " + with_commas(f.changed) + " changed";
  if (f.lost) summary += ", " + with_commas(f.lost) + " lost";
  if (f.unknown) summary += ", " + with_commas(f.unknown) + " not compared";
  if (!f.added.empty()) summary += "; " + count_of(f.added.size(), "export tensor", "export tensors") + " added";
  if (!f.unpaired.empty()) {
    summary += "; " + count_of(f.unpaired.size(), "export tensor", "export tensors") + " unpaired, of the sizes of those not compared";
  }
  rows.push_back({"tensors", summary});
  rows.push_back({"counts", f.counts});

  std::map<std::string, size_t> shown;
  auto add = [&](const std::string& label, const std::string& text) {
    if (limit == 0 || ++shown[label] <= limit) rows.push_back({label, text});
  };
  for (const TensorFidelity& t : f.tensors) {
    switch (t.verdict) {
      case Verdict::Kept:
        if (t.held.size() > 1) {
          std::string s = tensor(t.what) + ": ";
          for (size_t i = 0; i < t.held.size(); ++i) s += (i ? ", " : "") + where(t.held[i]);
          add(t.held.size() == 2 ? "stored twice" : "stored " + std::to_string(t.held.size()) + " times", s);
        }
        break;
      case Verdict::Folded: add("folded", tensor(t.what) + ": " + where(t.held[0])); break;
      case Verdict::Changed: {
        const Holder& h = t.held[0];
        add("changed", tensor(t.what) + " as " + h.name + " (" + layout_name(h.layout) + "; paired by " + t.paired_by + "): " +
                           with_commas(t.differing) + " of " + with_commas(t.what.elements) + " elements differ at " +
                           dtype_name(t.compared_as) + ", the largest by " + number(t.largest) + " at element " +
                           with_commas(t.largest_at) + " (" + number(t.checkpoint_value) + " in the checkpoint, " +
                           number(t.export_value) + " in the export)");
        break;
      }
      case Verdict::Lost:
        add("lost", tensor(t.what) + ": no export tensor holds its values, and none of its size pairs with it by name, "
                    "role or closest values");
        break;
      case Verdict::Unknown:
        add("not compared", tensor(t.what) + (t.held.empty() ? "" : " as " + t.held[0].name + " (paired by " + t.paired_by + ")") +
                                ": " + t.why);
        break;
    }
  }
  for (const NamedShape& a : f.added) add("added", tensor(a) + ": " + count_of(a.elements, "parameter", "parameters") + " not in the checkpoint");
  for (const NamedShape& a : f.unpaired) {
    add("unpaired", tensor(a) + ": holds no checkpoint tensor that was compared, and has the size of one that was not");
  }
  for (const auto& [label, n] : shown) {
    if (limit && n > limit) rows.push_back({label, "… and " + with_commas(n - limit) + " more (every one in --format json)"});
  }
  rows.push_back({"outcome", f.outcome});
  return rows;
}

void fidelity_text(const Fidelity& f, size_t limit, std::ostream& out) {
  std::vector<FidelityRow> rows = fidelity_rows(f, limit);
  size_t w = 0;
  for (const auto& r : rows) w = std::max(w, display_width(r.label));
  for (const auto& r : rows) {
    std::string head = "  " + r.label + std::string(w - display_width(r.label), ' ') + "  ";
    out << head << wrap(r.text, head.size(), head.size()) << "\n";
  }
}

void fidelity_json(const Fidelity& f, JsonWriter& j) {
  auto shape = [&](const NamedShape& n) {
    j.key("name").value(n.name).key("shape").int_array(n.shape).key("dtype").value(n.dtype).key("elements").value(n.elements);
  };
  j.begin_object();
  j.key("export").value(f.export_path).key("checkpoint").value(f.checkpoint_path);
  j.key("tensors").begin_array();
  for (const TensorFidelity& t : f.tensors) {
    j.begin_object();
    shape(t.what);
    j.key("verdict").value(verdict_name(t.verdict));
    j.key("held").begin_array();
    for (const Holder& h : t.held) {
      j.begin_object().key("name").value(h.name).key("layout").value(layout_name(h.layout));
      j.key("start").value(h.start).key("end").value(h.end).end_object();
    }
    j.end_array();
    j.key("shared").value(t.shared);
    j.key("paired_by");
    if (t.paired_by.empty()) j.null();
    else j.value(t.paired_by);
    j.key("differing").value(t.differing);
    j.key("largest_difference");
    if (t.verdict == Verdict::Changed) j.value(t.largest);
    else j.null();
    j.key("largest_at");
    if (t.verdict == Verdict::Changed) j.value(t.largest_at);
    else j.null();
    j.key("compared_as");
    if (t.compared_as) j.value(dtype_name(t.compared_as));
    else j.null();
    j.key("why");
    if (t.why.empty()) j.null();
    else j.value(t.why);
    j.end_object();
  }
  j.end_array();
  for (const auto& [key, list] : {std::make_pair("added", &f.added), std::make_pair("unpaired", &f.unpaired)}) {
    j.key(key).begin_array();
    for (const NamedShape& a : *list) {
      j.begin_object();
      shape(a);
      j.end_object();
    }
    j.end_array();
  }
  j.key("kept").value(f.kept).key("folded").value(f.folded).key("changed").value(f.changed).key("lost").value(f.lost);
  j.key("unknown").value(f.unknown).key("duplicated").value(f.duplicated).key("shared").value(f.shared);
  j.key("export_parameters").value(f.export_parameters).key("checkpoint_parameters").value(f.checkpoint_parameters);
  j.key("counts").value(f.counts).key("outcome").value(f.outcome).key("failed").value(f.failed());
  j.end_object();
}

}  // namespace headcount::renderers
