// diff_report.cpp: `headcount diff` in text, JSON and markdown (the HTML page is in html.cpp, beside the
// drawings it shares).
#include "headcount/results/diff.h"

#include "headcount/render.h"
#include "json_writer.h"
#include "layout.h"
#include "fidelity_rows.h"
#include "renderers.h"

namespace headcount {

namespace {

void diff_text(const Diff& d, std::ostream& out) {
  out << "headcount diff\n  A  " << d.a.path << "\n  B  " << d.b.path << "\n\n";
  renderers::Table t;
  t.right = {false, true, true, true};
  t.rows.push_back({"", "A", "B", "change"});
  for (const auto& c : d.totals) t.rows.push_back({c.what, c.a, c.b, change_text(c)});
  t.print(out, "  ");
  if (!d.blocks.empty()) {
    out << "\nblocks that changed\n";
    for (const auto& b : d.blocks) {
      out << "  block " << b.index << "\n";
      renderers::Table bt;
      bt.right = {false, true, false, true, true};
      for (const auto& c : b.changes) bt.rows.push_back({c.what, c.a, "→", c.b, change_text(c)});
      bt.print(out, "    ");
    }
  } else {
    out << "\nno block differs in what both sides state (heads, sizes, counts)\n";
  }
  if (!d.findings_added.empty() || !d.findings_removed.empty()) {
    out << "\nfindings\n";
    for (const auto& f : d.findings_added) out << "  + " << f << "\n";
    for (const auto& f : d.findings_removed) out << "  − " << f << "\n";
  }
  if (d.fidelity) {
    out << "\ndoes the export hold its checkpoint?\n";
    renderers::fidelity_text(*d.fidelity, 10, out);
  }
  out << "\noutcome: " << renderers::wrap(d.outcome, 9, 4) << "\n";
}

void diff_json(const Diff& d, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object();
  j.key("schema").value("headcount/2");
  j.key("diff").begin_object();
  j.key("a").value(d.a.path);
  j.key("b").value(d.b.path);
  j.key("totals").begin_array();
  for (const auto& c : d.totals) {
    j.begin_object().key("what").value(c.what).key("a").value(c.a).key("b").value(c.b).key("delta");
    if (c.delta) j.value(*c.delta);
    else j.null();
    j.end_object();
  }
  j.end_array();
  j.key("blocks").begin_array();
  for (const auto& b : d.blocks) {
    j.begin_object().key("index").value(b.index).key("changes").begin_array();
    for (const auto& c : b.changes) {
      j.begin_object().key("what").value(c.what).key("a").value(c.a).key("b").value(c.b).key("delta");
      if (c.delta) j.value(*c.delta);
      else j.null();
      j.end_object();
    }
    j.end_array().end_object();
  }
  j.end_array();
  j.key("findings_added").begin_array();
  for (const auto& f : d.findings_added) j.value(f);
  j.end_array();
  j.key("findings_removed").begin_array();
  for (const auto& f : d.findings_removed) j.value(f);
  j.end_array();
  j.key("counts_changed").value(d.counts_changed);
  j.key("checkpoint");  // B (or A) a checkpoint of the other: does the export hold every weight of it?
  if (d.fidelity) renderers::fidelity_json(*d.fidelity, j);
  else j.null();
  j.key("outcome").value(d.outcome);
  j.end_object();
  j.end_object();
  out << "\n";
}

void diff_markdown(const Diff& d, std::ostream& out) {
  out << "### headcount diff\n\n**" << renderers::md_text(d.outcome) << "**\n\n| | " << renderers::md_text(d.a.path) << " | " << renderers::md_text(d.b.path) << " | change |\n"
      << "|---|---:|---:|---:|\n";
  for (const auto& c : d.totals) out << "| " << c.what << " | " << c.a << " | " << c.b << " | " << change_text(c) << " |\n";
  for (const auto& b : d.blocks) {
    out << "\n#### block " << b.index << "\n\n| | A | B | change |\n|---|---:|---:|---:|\n";
    for (const auto& c : b.changes) out << "| " << renderers::md_text(c.what) << " | " << renderers::md_text(c.a) << " | " << renderers::md_text(c.b) << " | " << change_text(c) << " |\n";
  }
  if (!d.findings_added.empty() || !d.findings_removed.empty()) {
    out << "\nfindings: ";
    for (const auto& f : d.findings_added) out << "+" << renderers::md_text(f) << " ";
    for (const auto& f : d.findings_removed) out << "−" << renderers::md_text(f) << " ";
    out << "\n";
  }
  if (d.fidelity) {
    out << "\n#### does the export hold its checkpoint?\n\n| | |\n|---|---|\n";
    for (const auto& r : renderers::fidelity_rows(*d.fidelity, 10)) out << "| " << renderers::md_text(r.label) << " | " << renderers::md_text(r.text) << " |\n";
  }
}

}  // namespace

const std::vector<std::string>& diff_formats() {
  static const std::vector<std::string> names = {"text", "json", "markdown", "html"};
  return names;
}

void render_diff(const Diff& d, const std::string& format, std::ostream& out) {
  if (format == "json") diff_json(d, out);
  else if (format == "markdown") diff_markdown(d, out);
  else if (format == "html") renderers::write_diff_html(d, out);
  else diff_text(d, out);
}

}  // namespace headcount
