// render_ci.cpp: the formats CI systems read: Markdown for a pull-request comment, SARIF 2.1.0
// for code scanning, and GitHub workflow commands for annotations.
#include <algorithm>
#include <sstream>

#include "headcount/report.h"
#include "json_writer.h"

namespace headcount {
namespace {

const char* sarif_level(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    default: return "note";
  }
}

const char* github_command(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    default: return "notice";
  }
}

// GitHub workflow commands: data escapes %, CR, LF; properties also escape ':' and ','.
std::string gh_data(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '%') o += "%25";
    else if (c == '\r') o += "%0D";
    else if (c == '\n') o += "%0A";
    else o += c;
  }
  return o;
}

std::string gh_property(const std::string& s) {
  std::string o;
  for (char c : gh_data(s)) {
    if (c == ':') o += "%3A";
    else if (c == ',') o += "%2C";
    else o += c;
  }
  return o;
}

std::string md_cell(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n') o += ' ';
    else o += c;
  }
  return o;
}

std::string heads_summary(const Audit& a) {
  std::vector<std::string> seen;
  for (const auto& b : a.attention.blocks) {
    std::string h = b.heads ? std::to_string(*b.heads) : "?";
    if (b.kv_heads && b.heads && *b.kv_heads != *b.heads) h += "/" + std::to_string(*b.kv_heads);
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
  }
  std::string s;
  for (size_t i = 0; i < seen.size(); ++i) s += (i ? ", " : "") + seen[i];
  return s.empty() ? "-" : s;
}

}  // namespace

void render_markdown(const Run& run, std::ostream& out) {
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

void render_sarif(const Run& run, std::ostream& out) {
  JsonWriter j(out);
  j.begin_object();
  j.field("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
  j.field("version", "2.1.0");
  j.key("runs").begin_array().begin_object();
  j.key("tool").begin_object().key("driver").begin_object();
  j.field("name", "headcount");
  j.field("version", kVersion);
  j.field("semanticVersion", kVersion);
  j.key("rules").begin_array();
  auto rule = [&](const std::string& id, const std::string& summary, const std::string& doc, const char* level) {
    j.begin_object();
    j.field("id", id);
    j.key("shortDescription").begin_object().field("text", summary).end_object();
    j.key("fullDescription").begin_object().field("text", doc).end_object();
    j.key("defaultConfiguration").begin_object().field("level", level).end_object();
    j.end_object();
  };
  for (const auto& r : rules()) rule(r.id, r.summary, r.doc, sarif_level(r.severity));
  rule("gate", "a CI gate failed (budget, expected heads, severity or baseline)",
       "headcount audit fails a gate when the model leaves its parameter or byte budget, its heads differ from "
       "--expect-heads, a finding reaches --fail-on, or it moved from the --baseline report.",
       "error");
  rule("input-error", "the model could not be audited", "The file is missing, truncated, hostile or unsupported.", "error");
  j.end_array();
  j.end_object().end_object();  // driver, tool

  j.key("results").begin_array();
  auto result = [&](const std::string& rule_id, const char* level, const std::string& text, const std::string& uri) {
    j.begin_object();
    j.field("ruleId", rule_id);
    j.field("level", level);
    j.key("message").begin_object().field("text", text).end_object();
    j.key("locations").begin_array().begin_object();
    j.key("physicalLocation").begin_object().key("artifactLocation").begin_object().field("uri", uri).end_object().end_object();
    j.end_object().end_array();
    j.end_object();
  };
  for (const auto& f : run.files) {
    if (!f.audit) {
      result("input-error", "error", f.error, f.path);
      continue;
    }
    for (const auto& x : f.audit->findings) {
      result(x.rule, sarif_level(x.severity), (x.block ? "block " + std::to_string(*x.block) + ": " : std::string()) + x.message, f.path);
    }
    for (const auto& g : f.gates) result("gate", "error", g.gate + ": " + g.message, f.path);
  }
  j.end_array();
  j.end_object().end_array();  // run, runs
  j.end_object();
  out << "\n";
}

void render_github(const Run& run, std::ostream& out) {
  for (const auto& f : run.files) {
    if (!f.audit) {
      out << "::error file=" << gh_property(f.path) << ",title=headcount::" << gh_data(f.error) << "\n";
      continue;
    }
    const Audit& a = *f.audit;
    out << "::notice file=" << gh_property(f.path) << ",title=" << gh_property("headcount " + f.path) << "::"
        << gh_data(with_commas(a.framework.parameters) + " parameters (" + with_commas(a.inventory.stored) + " stored), " +
                   with_commas(a.attention.parameters) + " in " + std::to_string(a.attention.blocks.size()) +
                   (a.attention.blocks.size() == 1 ? " attention block" : " attention blocks") + ", heads " + heads_summary(a))
        << "\n";
    for (const auto& x : a.findings) {
      out << "::" << github_command(x.severity) << " file=" << gh_property(f.path)
          << ",title=" << gh_property("headcount " + x.rule) << "::"
          << gh_data((x.block ? "block " + std::to_string(*x.block) + ": " : std::string()) + x.message) << "\n";
    }
    for (const auto& g : f.gates) {
      out << "::error file=" << gh_property(f.path) << ",title=" << gh_property("headcount gate " + g.gate) << "::"
          << gh_data(g.message) << "\n";
    }
  }
}

}  // namespace headcount
