// text.cpp: the text report, for a person at a terminal: aligned tables, wrapped findings, and a
// summary table after a run over several models.
#include <algorithm>

#include "layout.h"
#include "renderers.h"

namespace headcount::renderers {
namespace {

void model_text(const Audit& a, const RenderOptions& options, std::ostream& out) {
  const Model& m = a.model;
  const Inventory& inv = a.inventory;
  out << "headcount " << kVersion << ": " << m.path << "\n";
  out << "  model       " << producer_string(*m.proto) << ", ir " << m.proto->ir_version() << ", "
      << opset_string(*m.proto) << "; " << count_of(m.graphs.size(), "graph", "graphs") << ", "
      << count_of(m.nodes.size(), "node", "nodes") << "\n";
  out << "  parameters  " << with_commas(inv.stored) << " stored in " << count_of(inv.tensors, "tensor", "tensors") << " ("
      << human_bytes(inv.bytes) << ")\n";
  const FrameworkView& fw = a.framework;
  if (fw.parameters != inv.stored) {
    // How the framework's own count (PyTorch's sum(p.numel())) follows from what the file stores.
    std::string how = with_commas(inv.stored) + " stored";
    if (a.unique != inv.stored) {
      how += " - " + with_commas(inv.stored - a.unique) + " in " + std::to_string(a.duplicates.size()) +
             (a.duplicates.size() == 1 ? " duplicate copy" : " duplicate copies");
    }
    if (fw.buffer_elements) {
      how += " - " + with_commas(fw.buffer_elements) + " in " + std::to_string(fw.buffers.size()) +
             (fw.buffers.size() == 1 ? " buffer" : " buffers");
    }
    if (fw.merged_elements) {
      how += " + " + with_commas(fw.merged_elements) + " stored once for " +
             count_of(fw.merged.size(), "more parameter", "more parameters") + " (Identity copies)";
    }
    out << "  framework   " << with_commas(fw.parameters) << ", as the framework counts its parameters: "
        << wrap(how, 14 + with_commas(fw.parameters).size() + 43, 14) << "\n";
  }
  const auto& att = a.attention;
  out << "  attention   " << with_commas(att.parameters) << " in " << att.blocks.size()
      << (att.blocks.size() == 1 ? " block" : " blocks") << " (" << percent(att.parameters, inv.stored)
      << " of stored)\n";

  if (!att.blocks.empty()) {
    out << "\nattention blocks\n";
    Table t;
    t.right = {true, false, false, false, true, true, true, true, true};
    t.rows.push_back({"#", "name", "form", "kind", "heads", "width", "d_k", "parameters", "of std"});
    for (const auto& b : att.blocks) {
      std::string heads = optional_int(b.heads);
      if (b.kv_heads && b.heads && *b.kv_heads != *b.heads) heads += "/" + std::to_string(*b.kv_heads);
      t.rows.push_back({std::to_string(b.index), truncate(b.name, 24), b.form, b.kind, heads, b.width > 0 ? std::to_string(b.width) : "?",
                        optional_int(b.head_dim), with_commas(b.total), percent(b.total, b.standard)});
    }
    t.print(out, "  ");
    out << "  heads a/b: a query heads, b key/value heads. of std: share of the standard 4·width² (+4·width).\n";
    bool extras = std::any_of(att.blocks.begin(), att.blocks.end(), [](const AttentionBlock& b) { return !b.extras.empty(); });
    out << "\nQ/K/V/O per block (weight + bias" << (extras ? "; extras: learned parameters beside the projections" : "")
        << ")\n";
    Table p;
    p.right = {true, true, true, true, true, true};
    p.rows.push_back({"#", "Q", "K", "V", "O"});
    if (extras) p.rows.back().push_back("extras");
    for (const auto& b : att.blocks) {
      // K or V read from a graph input: its projection is elsewhere; a bias share may still be here.
      auto cell = [](const Projection& pr) {
        if (pr.from_input.empty()) return with_commas(pr.total());
        return pr.total() ? with_commas(pr.total()) + " + input" : std::string("input");
      };
      p.rows.push_back({std::to_string(b.index), cell(b.q), cell(b.k), cell(b.v), cell(b.o)});
      if (!extras) continue;
      uint64_t n = 0;
      std::string roles;
      for (const auto& e : b.extras) {
        n += e.elements;
        roles += (roles.empty() ? " (" : ", ") + std::string(extra_role_name(e.role));
      }
      p.rows.back().push_back(b.extras.empty() ? "" : with_commas(n) + roles + ")");
    }
    p.print(out, "  ");
  }
  if (att.unmatched.empty()) {
    out << "  " << att.blocks.size() << (att.blocks.size() == 1 ? " attention block" : " attention blocks")
        << "; every softmax is accounted for\n";
  } else {
    out << "  " << att.blocks.size() << (att.blocks.size() == 1 ? " attention block" : " attention blocks") << "; "
        << att.unmatched.size() << (att.unmatched.size() == 1 ? " softmax is" : " softmaxes are")
        << " not attention:\n";
    for (const auto& u : att.unmatched) {
      std::string head = "    " + u.name + ":";
      out << head << " " << wrap(u.reason, head.size() + 1, 6) << "\n";
    }
  }

  if (!a.findings.empty()) {
    out << "\nfindings\n";
    for (const auto& f : a.findings) {
      std::string head = "  " + std::string(severity_name(f.severity)) + " [" + f.rule + "]" +
                         (f.block ? " block " + std::to_string(*f.block) : std::string()) + ":";
      out << head << " " << wrap(f.message, head.size() + 1, 4) << "\n";
    }
  }

  if (a.declared) {
    const Declared& d = *a.declared;
    out << "\nwhat the config declares (" << d.config.file
        << (d.config.model_type.empty() ? std::string() : ", model_type " + d.config.model_type) << ")\n";
    Table t;
    t.right = {false, false, true, true, false};
    t.rows.push_back({"field", "key", "declared", "found", ""});
    auto show = [](const DeclaredField& f, Int v) {
      if (!v) return std::string("-");
      return f.boolean ? std::string(*v ? "yes" : "no") : with_commas(static_cast<uint64_t>(std::max<int64_t>(*v, 0)));
    };
    for (const auto& f : d.fields) {
      std::string verdict = agreement_name(f.agreement);
      if (f.agreement == Agreement::NotCheckable) verdict += !f.declared ? ": not declared" : ": " + f.note;
      t.rows.push_back({f.label, f.derived_from.empty() ? f.key : "(" + f.derived_from + ")", show(f, f.declared),
                        show(f, f.found), verdict});
    }
    t.print(out, "  ");
    if (d.count) {
      out << "  " << d.count->family << " formula: " << with_commas(d.count->total) << " parameters; "
          << wrap(d.count_note, 4 + d.count->family.size() + 10 + with_commas(d.count->total).size() + 13, 4) << "\n";
      for (const auto& p : d.count->parts) out << "    " << p.part << ": " << wrap(p.formula, 6 + p.part.size(), 6) << "\n";
    } else if (!d.config.model_type.empty()) {
      out << "  no formula for model_type " << d.config.model_type << ": its fields are compared, its count is not\n";
    }
  } else if (!a.declared_error.empty()) {
    out << "\nwhat the config declares: " << wrap(a.declared_error + " (ignored)", 28, 4) << "\n";
  }

  out << "\nwhere the parameters are\n";
  Table c;
  c.right = {false, true, true};
  const Composition& comp = a.composition;
  for (auto [label, v] : {std::pair<const char*, uint64_t>{"attention (Q/K/V/O)", comp.attention},
                          {"embeddings", comp.embeddings}, {"feed-forward", comp.feed_forward},
                          {"norms", comp.norms}, {"buffers", comp.buffers}, {"everything else", comp.other}}) {
    c.rows.push_back({label, with_commas(v), percent(v, inv.stored)});
  }
  c.print(out, "  ");
  if (!fw.buffers.empty()) {
    out << "\nbuffers (stored, not learned: the framework does not count them)\n";
    for (const auto& b : fw.buffers) {
      const Weight& w = m.weights[static_cast<size_t>(b.weight)];
      std::string head = "  " + w.name + " " + shape_string(w.dims) + " " + with_commas(w.elements) + ":";
      out << head << " " << wrap(b.reason, head.size() + 1, 4) << "\n";
    }
  }
  if (!fw.values_read) out << "  (--no-content: buffers found by their use only, no value was read)\n";

  out << "\nby dtype\n";
  Table d;
  d.right = {false, true, true, true};
  d.rows.push_back({"dtype", "tensors", "parameters", "bytes"});
  for (const auto& r : inv.by_dtype) d.rows.push_back({r.key, with_commas(r.tensors), with_commas(r.elements), human_bytes(r.bytes)});
  d.print(out, "  ");
  out << "\nby storage\n";
  Table s;
  s.right = {false, true, true, true};
  s.rows.push_back({"storage", "tensors", "parameters", "bytes"});
  for (const auto& r : inv.by_storage) s.rows.push_back({r.key, with_commas(r.tensors), with_commas(r.elements), human_bytes(r.bytes)});
  s.print(out, "  ");

  if (!inv.largest.empty() && options.top > 0) {
    out << "\nlargest tensors\n";
    Table l;
    l.right = {false, false, false, true, false};
    l.rows.push_back({"name", "shape", "dtype", "parameters", "storage"});
    size_t n = std::min(inv.largest.size(), static_cast<size_t>(options.top));
    for (size_t i = 0; i < n; ++i) {
      const Weight& w = m.weights[inv.largest[i]];
      std::string storage = storage_name(w.storage);
      if (w.external_status == ExternalStatus::Missing) storage += " (data file missing)";
      if (w.external_status == ExternalStatus::SizeMismatch) storage += " (data file too short)";
      l.rows.push_back({truncate(w.name, 40), shape_string(w.dims), dtype_name(w.dtype), with_commas(w.elements), storage});
    }
    l.print(out, "  ");
    if (inv.largest.size() > n) out << "  ... and " << with_commas(inv.largest.size() - n) << " more (--top N, or --format json for all)\n";
  }
}

void render_gates_text(const Run& run, const FileResult& f, std::ostream& out) {
  if (!run.gates_configured) return;
  if (f.gates.empty()) {
    out << "\ngates: all passed\n";
    return;
  }
  out << "\ngates: " << f.gates.size() << " failed\n";
  for (const auto& g : f.gates) {
    std::string head = "  " + g.gate + ":";
    out << head << " " << wrap(g.message, head.size() + 1, 4) << "\n";
  }
}

// The closing table of a text run over several models.
void render_summary(const Run& run, std::ostream& out) {
  out << "\nsummary of " << run.files.size() << " models\n";
  Table t;
  t.right = {false, true, true, true, true, false, false};
  t.rows.push_back({"model", "parameters", "stored", "attention", "blocks", "findings", "status"});
  for (const auto& f : run.files) {
    if (!f.audit) {
      t.rows.push_back({f.path, "-", "-", "-", "-", "-", "error"});
      continue;
    }
    const Audit& a = *f.audit;
    int counts[3] = {0, 0, 0};
    for (const auto& x : a.findings) ++counts[static_cast<int>(x.severity)];
    std::string findings = std::to_string(counts[2]) + "e " + std::to_string(counts[1]) + "w " + std::to_string(counts[0]) + "i";
    std::string status = !run.gates_configured ? "ok" : f.gates.empty() ? "gates passed" : std::to_string(f.gates.size()) + (f.gates.size() == 1 ? " gate failed" : " gates failed");
    t.rows.push_back({f.path, with_commas(a.framework.parameters), with_commas(a.inventory.stored), with_commas(a.attention.parameters),
                      std::to_string(a.attention.blocks.size()), findings, status});
  }
  t.print(out, "  ");
}

}  // namespace

void write_text(const Run& run, const RenderOptions& options, std::ostream& out) {
  bool first = true;
  for (const auto& f : run.files) {
    if (!f.audit) continue;
    if (!first) out << "\n";
    first = false;
    if (!run.config.empty()) out << "config: " << run.config << "\n";
    model_text(*f.audit, options, out);
    render_gates_text(run, f, out);
  }
  if (run.files.size() > 1) render_summary(run, out);
}

}  // namespace headcount::renderers
