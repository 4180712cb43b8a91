// render.cpp: text and JSON renderers. Nothing else in headcount knows about output formats.
#include <algorithm>
#include <iomanip>
#include <sstream>

#include "headcount/report.h"
#include "json_writer.h"

namespace headcount {
namespace {

std::string node_label(const Model& m, int ni) {
  const auto& n = *m.nodes[ni].proto;
  return n.name().empty() ? n.op_type() + "#" + std::to_string(ni) : n.name();
}

std::string producer_string(const onnx::ModelProto& p) {
  std::string s = p.producer_name().empty() ? "unknown producer" : p.producer_name();
  if (!p.producer_version().empty()) s += " " + p.producer_version();
  return s;
}

std::string opset_string(const onnx::ModelProto& p) {
  std::string s;
  for (const auto& o : p.opset_import()) {
    if (!s.empty()) s += ", ";
    s += (o.domain().empty() || o.domain() == "ai.onnx" ? std::string("opset ") : o.domain() + " ") +
         std::to_string(o.version());
  }
  return s;
}

// Left- or right-aligned column printing for the text tables.
struct Table {
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right;  // per column
  void print(std::ostream& out, const std::string& indent) const {
    std::vector<size_t> w(right.size(), 0);
    for (const auto& r : rows)
      for (size_t c = 0; c < r.size(); ++c) w[c] = std::max(w[c], r[c].size());
    for (const auto& r : rows) {
      std::string line = indent;
      for (size_t c = 0; c < r.size(); ++c) {
        std::string cell = r[c];
        std::string pad(w[c] - cell.size(), ' ');
        line += right[c] ? pad + cell : cell + (c + 1 < r.size() ? pad : "");
        if (c + 1 < r.size()) line += "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
    }
  }
};

std::string optional_int(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "?";  // no standard to compare with (unknown width)
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << 100.0 * static_cast<double>(part) / static_cast<double>(whole) << "%";
  return s.str();
}

// Word-wraps `text` to lines of at most `width` columns, every line after the first indented.
std::string wrap(const std::string& text, size_t first_used, size_t indent, size_t width = 100) {
  std::string out, word;
  size_t col = first_used;
  auto flush = [&] {
    if (word.empty()) return;
    size_t len = 0;
    for (unsigned char c : word) len += (c & 0xC0) != 0x80;  // count UTF-8 characters, not bytes
    if (col > indent && col + 1 + len > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (col > first_used || (col > indent && !out.empty())) {
      out += ' ';
      ++col;
    }
    out += word;
    col += len;
    word.clear();
  };
  for (char c : text) {
    if (c == ' ') flush();
    else word += c;
  }
  flush();
  return out;
}

std::string truncate(const std::string& s, size_t n) {
  return s.size() <= n ? s : "…" + s.substr(s.size() - (n - 1));
}

}  // namespace

void render_text(const Audit& a, const RenderOptions& options, std::ostream& out) {
  const Model& m = a.model;
  const Inventory& inv = a.inventory;
  out << "headcount " << kVersion << ": " << m.path << "\n";
  out << "  model       " << producer_string(*m.proto) << ", ir " << m.proto->ir_version() << ", "
      << opset_string(*m.proto) << "; " << m.graphs.size() << (m.graphs.size() == 1 ? " graph, " : " graphs, ")
      << m.nodes.size() << " nodes\n";
  out << "  parameters  " << with_commas(inv.stored) << " stored in " << with_commas(inv.tensors) << " tensors ("
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
      how += " + " + with_commas(fw.merged_elements) + " stored once for " + std::to_string(fw.merged.size() + 0) +
             " more parameters (Identity copies)";
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

namespace {

void write_projection(JsonWriter& j, const Model& m, const Projection& p) {
  j.begin_object();
  j.field("found", p.found);
  j.field("weight", p.weight);
  j.field("bias", p.bias);
  j.field("total", p.total());
  j.key("from_input");
  if (p.from_input.empty()) j.null();
  else j.value(p.from_input);
  j.key("tensors").begin_array();
  for (const auto& t : p.tensors) {
    const Weight& w = m.weights[t.weight];
    j.begin_object();
    j.field("name", w.name);
    j.field("role", t.bias ? "bias" : "weight");
    j.key("shape").int_array(w.dims);
    j.field("elements", t.elements);
    if (t.slice.empty()) j.key("slice").null();
    else j.field("slice", t.slice);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void write_optional(JsonWriter& j, const std::string& k, const std::optional<int64_t>& v) {
  j.key(k);
  if (v) j.value(*v);
  else j.null();
}

}  // namespace

void render_json(const Audit& a, const RenderOptions& options, std::ostream& out, bool compact,
                 const FileResult* result, const std::string& config) {
  const Model& m = a.model;
  const Inventory& inv = a.inventory;
  JsonWriter j(out, compact ? -1 : 2);
  j.begin_object();
  j.field("schema", kSchema);
  j.key("tool").begin_object().field("name", "headcount").field("version", kVersion).end_object();
  j.field("file", m.path);
  j.key("config");
  if (config.empty()) j.null();
  else j.value(config);
  j.key("model").begin_object();
  j.field("ir_version", static_cast<int64_t>(m.proto->ir_version()));
  j.field("producer", producer_string(*m.proto));
  j.key("opsets").begin_array();
  for (const auto& o : m.proto->opset_import()) {
    j.begin_object().field("domain", o.domain()).field("version", static_cast<int64_t>(o.version())).end_object();
  }
  j.end_array();
  j.field("file_bytes", m.file_size);
  j.field("graphs", static_cast<uint64_t>(m.graphs.size()));
  j.field("nodes", static_cast<uint64_t>(m.nodes.size()));
  j.field("functions", static_cast<int64_t>(m.proto->functions_size()));
  j.end_object();

  j.key("parameters").begin_object();
  j.field("stored", inv.stored);
  j.field("bytes", inv.bytes);
  j.field("tensors", inv.tensors);
  j.field("unique", a.unique);
  j.field("buffers", a.framework.buffer_elements);
  j.field("merged", a.framework.merged_elements);
  j.field("framework", a.framework.parameters);
  j.field("content_compared", a.content_compared);
  j.field("attention", a.attention.parameters);
  j.key("composition").begin_object();
  j.field("attention", a.composition.attention);
  j.field("embeddings", a.composition.embeddings);
  j.field("feed_forward", a.composition.feed_forward);
  j.field("norms", a.composition.norms);
  j.field("buffers", a.composition.buffers);
  j.field("other", a.composition.other);
  j.end_object();
  j.end_object();

  j.key("buffers").begin_array();
  for (const auto& b : a.framework.buffers) {
    const Weight& w = m.weights[static_cast<size_t>(b.weight)];
    j.begin_object().field("name", w.name).field("elements", w.elements).field("reason", b.reason).end_object();
  }
  j.end_array();
  j.key("merged").begin_array();
  for (const auto& c : a.framework.merged) {
    const Weight& w = m.weights[static_cast<size_t>(c.weight)];
    j.begin_object().field("name", output_of(*m.nodes[static_cast<size_t>(c.node)].proto, 0)).field("tensor", w.name);
    j.field("elements", w.elements).end_object();
  }
  j.end_array();

  j.key("duplicates").begin_array();
  for (const auto& d : a.duplicates) {
    j.begin_object();
    j.field("original", m.weights[d.original].name);
    j.field("copy", m.weights[d.copy].name);
    j.field("transposed", d.transposed);
    j.field("elements", m.weights[d.copy].elements);
    j.end_object();
  }
  j.end_array();

  auto breakdown = [&](const char* name, const char* keyname, const std::vector<Breakdown>& rows) {
    j.key(name).begin_array();
    for (const auto& r : rows) {
      j.begin_object().field(keyname, r.key).field("tensors", r.tensors).field("elements", r.elements)
          .field("bytes", r.bytes).end_object();
    }
    j.end_array();
  };
  breakdown("by_dtype", "dtype", inv.by_dtype);
  breakdown("by_storage", "storage", inv.by_storage);

  j.key("tensors").begin_array();
  if (options.all_tensors) {
    for (const Weight& w : m.weights) {
      if (!w.parameter) continue;
      j.begin_object();
      j.field("name", w.name);
      j.field("graph", m.scope_name(w.graph));
      j.field("dtype", dtype_name(w.dtype));
      j.key("shape").int_array(w.dims);
      j.field("elements", w.elements);
      j.field("bytes", w.bytes);
      j.field("storage", storage_name(w.storage));
      if (w.sparse) j.field("sparse", true);
      if (w.external_status != ExternalStatus::NotExternal) {
        j.key("external").begin_object();
        j.field("location", w.external_location);
        j.field("offset", w.external_offset);
        j.key("length");
        if (w.external_length >= 0) j.value(w.external_length);
        else j.null();
        j.field("status", external_status_name(w.external_status));
        j.end_object();
      }
      j.key("consumers").begin_array();
      for (int ni : w.consumers) j.value(node_label(m, ni));
      j.end_array();
      j.end_object();
    }
  }
  j.end_array();

  j.key("attention_blocks").begin_array();
  for (const auto& b : a.attention.blocks) {
    j.begin_object();
    j.field("index", b.index);
    j.field("name", b.name);
    j.field("form", b.form);
    j.field("kind", b.kind);
    write_optional(j, "heads", b.heads);
    write_optional(j, "kv_heads", b.kv_heads);
    j.field("heads_from", b.heads_from);
    write_optional(j, "width", b.width > 0 ? std::optional<int64_t>(b.width) : std::nullopt);
    write_optional(j, "head_dim", b.head_dim);
    write_optional(j, "v_head_dim", b.v_head_dim);
    j.field("total", b.total);
    j.field("standard", b.standard);
    j.key("projections").begin_object();
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      j.key(role_name(r));
      write_projection(j, m, b.projection(r));
    }
    j.end_object();
    j.key("score_path").begin_array();
    for (const auto& step : b.score_path) j.value(step);
    j.end_array();
    j.key("extras").begin_array();
    for (const auto& e : b.extras) {
      const Weight& w = m.weights[static_cast<size_t>(e.weight)];
      j.begin_object().field("name", w.name).field("role", extra_role_name(e.role)).field("elements", e.elements);
      j.key("shape").int_array(w.dims);
      j.end_object();
    }
    j.end_array();
    j.key("notes").begin_array();
    for (const auto& n : b.notes) j.value(n);
    j.end_array();
    j.end_object();
  }
  j.end_array();

  j.key("declared");
  if (!a.declared) {
    j.null();
  } else {
    const Declared& d = *a.declared;
    j.begin_object().field("file", d.config.file).field("format", d.config.format).field("model_type", d.config.model_type);
    j.key("fields").begin_array();
    for (const auto& f : d.fields) {
      j.begin_object().field("field", f.label).field("key", f.key);
      j.key("derived_from");
      if (f.derived_from.empty()) j.null();
      else j.value(f.derived_from);
      for (auto [k, v] : {std::pair<const char*, Int>{"declared", f.declared}, {"found", f.found}}) {
        j.key(k);
        if (!v) j.null();
        else if (f.boolean) j.value(*v != 0);
        else j.value(*v);
      }
      j.field("agreement", agreement_name(f.agreement)).field("note", f.note).end_object();
    }
    j.end_array();
    j.key("formula");
    if (!d.count) {
      j.null();
    } else {
      j.begin_object().field("family", d.count->family).field("total", d.count->total).field("note", d.count_note);
      j.key("parts").begin_array();
      for (const auto& p : d.count->parts) j.begin_object().field("part", p.part).field("parameters", p.parameters).field("formula", p.formula).end_object();
      j.end_array();
      j.end_object();
    }
    j.end_object();
  }

  j.key("findings").begin_array();
  for (const auto& f : a.findings) {
    j.begin_object();
    j.field("rule", f.rule);
    j.field("severity", severity_name(f.severity));
    j.key("block");
    if (f.block) j.value(*f.block);
    else j.null();
    j.field("message", f.message);
    j.end_object();
  }
  j.end_array();

  j.key("unmatched").begin_array();
  for (const auto& u : a.attention.unmatched) {
    j.begin_object().field("node", u.name).field("op_type", m.nodes[u.node].proto->op_type()).field("reason", u.reason).end_object();
  }
  j.end_array();

  j.key("gates").begin_array();
  if (result) {
    for (const auto& g : result->gates) j.begin_object().field("gate", g.gate).field("message", g.message).end_object();
  }
  j.end_array();
  j.end_object();
  out << "\n";
}

namespace {

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

void render(const Run& run, const RenderOptions& options, std::ostream& out) {
  switch (options.format) {
    case Format::Text: {
      bool first = true;
      for (const auto& f : run.files) {
        if (!f.audit) continue;
        if (!first) out << "\n";
        first = false;
        if (!run.config.empty()) out << "config: " << run.config << "\n";
        render_text(*f.audit, options, out);
        render_gates_text(run, f, out);
      }
      if (run.files.size() > 1) render_summary(run, out);
      break;
    }
    case Format::Json: {
      bool many = run.files.size() > 1, first = true;
      if (many) out << "[\n";
      for (const auto& f : run.files) {
        if (!f.audit) continue;
        if (!first) out << ",\n";
        first = false;
        render_json(*f.audit, options, out, false, &f, run.config);
      }
      if (many) out << "]\n";
      break;
    }
    case Format::Jsonl:
      for (const auto& f : run.files) {
        if (f.audit) render_json(*f.audit, options, out, true, &f, run.config);
      }
      break;
    case Format::Markdown: render_markdown(run, out); break;
    case Format::Sarif: render_sarif(run, out); break;
    case Format::Github: render_github(run, out); break;
  }
}

}  // namespace headcount
