// markdown.cpp: a summary table for a pull-request comment or a job summary.
#include "layout.h"
#include "renderers.h"

namespace headcount::renderers {
namespace {

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

}  // namespace

void write_markdown(const Run& run, const RenderOptions&, std::ostream& out) {
  out << "### headcount " << kVersion << "\n\n";
  if (!run.config.empty()) out << "config: `" << md_cell(run.config) << "`\n\n";
  out << "| model | parameters | stored | attention | blocks | heads | findings |" << (run.gates_configured ? " gates |" : "")
      << "\n";
  out << "|---|---:|---:|---:|---:|---|---|" << (run.gates_configured ? "---|" : "") << "\n";
  for (const auto& f : run.files) {
    if (!f.audit) {
      out << "| `" << md_cell(f.path) << "` | error: " << md_cell(f.error) << " | | | | | |" << (run.gates_configured ? " |" : "") << "\n";
      continue;
    }
    const Audit& a = *f.audit;
    int counts[3] = {0, 0, 0};
    for (const auto& x : a.findings) ++counts[static_cast<int>(x.severity)];
    std::string findings;
    if (counts[2]) findings += std::to_string(counts[2]) + " error" + (counts[2] > 1 ? "s" : "");
    if (counts[1]) findings += (findings.empty() ? "" : ", ") + std::to_string(counts[1]) + " warning" + (counts[1] > 1 ? "s" : "");
    if (counts[0]) findings += (findings.empty() ? "" : ", ") + std::to_string(counts[0]) + " info";
    if (findings.empty()) findings = "none";
    out << "| `" << md_cell(f.path) << "` | " << with_commas(a.framework.parameters) << " | " << with_commas(a.inventory.stored) << " | "
        << with_commas(a.attention.parameters) << " | " << a.attention.blocks.size() << " | " << heads_summary(a) << " | "
        << findings << " |";
    if (run.gates_configured) out << " " << (f.gates.empty() ? "passed" : "**" + std::to_string(f.gates.size()) + " failed**") << " |";
    out << "\n";
  }
  bool any = false;
  for (const auto& f : run.files) {
    if (!f.audit) continue;
    for (const auto& g : f.gates) {
      if (!any) out << "\n#### Details\n\n";
      any = true;
      out << "- `" << md_cell(f.path) << "` **gate " << g.gate << " failed**: " << g.message << "\n";
    }
    for (const auto& x : f.audit->findings) {
      if (x.severity == Severity::Info) continue;
      if (!any) out << "\n#### Details\n\n";
      any = true;
      out << "- `" << md_cell(f.path) << "` " << severity_name(x.severity) << " `" << x.rule << "`"
          << (x.block ? " (block " + std::to_string(*x.block) + ")" : "") << ": " << x.message << "\n";
    }
  }
}


}  // namespace headcount::renderers
