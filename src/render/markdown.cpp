// markdown.cpp: a summary table for a pull-request comment or a job summary.
#include <algorithm>
#include <string_view>

#include "fold.h"
#include "fidelity_rows.h"
#include "layout.h"
#include "renderers.h"
#include "headcount/version.h"

namespace headcount::renderers {
namespace {

// A code span that holds any text: a fence longer than the longest run of backticks in it, and
// '|' escaped for the table (GitHub reads \| inside code spans in tables).
std::string md_code(const std::string& s) {
  size_t longest = 0, run = 0;
  std::string body;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|') body += "\\|";
    else if (c == '\n' || c == '\r') body += ' ';
    else body += c;
  }
  std::string fence(longest + 1, '`');
  bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

}  // namespace

void write_markdown(const Run& run, const RenderOptions& options, std::ostream& out) {
  out << "### headcount " << kVersion << "\n\n";
  if (!run.config.empty()) out << "config: " << md_code(run.config) << "\n\n";
  out << "| model | parameters | stored | attention | blocks | heads | findings |" << (run.gates_configured ? " gates |" : "")
      << "\n";
  out << "|---|---:|---:|---:|---:|---|---|" << (run.gates_configured ? "---|" : "") << "\n";
  for (const auto& f : run.files) {
    if (!f.audit) {
      out << "| " << md_code(f.path) << " | error: " << md_text(f.error) << " | | | | | |" << (run.gates_configured ? " |" : "") << "\n";
      continue;
    }
    const Audit& a = *f.audit;
    int counts[3] = {0, 0, 0};
    for (const auto& x : a.findings) ++counts[static_cast<int>(x.severity)];
    std::string findings;
    if (counts[2]) findings += count_of(static_cast<uint64_t>(counts[2]), "error", "errors");
    if (counts[1]) findings += (findings.empty() ? "" : ", ") + count_of(static_cast<uint64_t>(counts[1]), "warning", "warnings");
    if (counts[0]) findings += (findings.empty() ? "" : ", ") + with_commas(static_cast<uint64_t>(counts[0])) + " info";
    if (findings.empty()) findings = "none";
    out << "| " << md_code(f.path) << " | " << with_commas(a.framework.parameters) << " | " << with_commas(a.inventory.stored) << " | "
        << with_commas(a.attention.parameters) << " | " << a.attention.blocks.size() << " | " << heads_summary(a) << " | "
        << findings << " |";
    if (run.gates_configured) out << " " << (f.gates.empty() ? "passed" : "**" + std::to_string(f.gates.size()) + " failed**") << " |";
    out << "\n";
  }
  // Inference cost, one row per audited model.
  bool audited = false;
  for (const auto& f : run.files) audited = audited || f.audit.has_value();
  if (audited) {
    const Cost& first = std::find_if(run.files.begin(), run.files.end(), [](const FileResult& f) { return f.audit.has_value(); })
                            ->audit->cost;
    out << "\n#### Inference cost (context " << with_commas(first.context) << ", batch " << with_commas(first.batch) << ")\n\n";
    out << "| model | K/V bytes per token | K/V at context | MACs per token |\n|---|---:|---:|---:|\n";
    for (const auto& f : run.files) {
      if (!f.audit) continue;
      const Cost& c = f.audit->cost;
      out << "| " << md_code(f.path) << " | " << (c.kv_lower_bound ? "≥ " : "") << with_commas(c.kv_bytes_per_token) << " | "
          << (c.kv_bytes_at_context ? (c.kv_lower_bound ? "≥ " : "") + binary_bytes(*c.kv_bytes_at_context) : std::string("-"))
          << " | " << (c.macs_lower_bound ? "≥ " : "") << with_commas(c.macs_per_token) << " |\n";
    }
  }
  bool any = false, folded = false;
  for (const auto& f : run.files) {
    if (!f.audit) continue;
    for (const auto& g : f.gates) {
      if (!any) out << "\n#### Details\n\n";
      any = true;
      out << "- " << md_code(f.path) << " **gate " << g.gate << " failed**: " << md_text(g.message) << "\n";
    }
    for (const auto& g : finding_folds(f.audit->findings, options.all_blocks)) {
      const Finding& x = f.audit->findings[g.first];
      if (x.severity == Severity::Info) continue;
      if (!any) out << "\n#### Details\n\n";
      any = true;
      folded = folded || g.folded();
      out << "- " << md_code(f.path) << " " << severity_name(x.severity) << " `" << x.rule << "`"
          << (g.blocks.empty() ? "" : " (" + blocks_text(g.blocks) + ")") << ": " << md_text(x.message) << "\n";
    }
  }
  if (folded) out << "\nA finding about several blocks is listed once, naming them; `--all-blocks` lists each block's apart.\n";
  for (const auto& f : run.files) {
    if (!f.audit || !f.audit->fidelity) continue;
    out << "\n#### Does " << md_code(f.path) << " hold its checkpoint?\n\n| | |\n|---|---|\n";
    for (const auto& r : fidelity_rows(*f.audit->fidelity, options.all_blocks ? 0 : 10)) {
      out << "| " << md_text(r.label) << " | " << md_text(r.text) << " |\n";
    }
  }
}


}  // namespace headcount::renderers
