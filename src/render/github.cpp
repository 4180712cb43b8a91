// github.cpp: GitHub Actions workflow commands: ::notice, ::warning and ::error annotations.
#include "layout.h"
#include "renderers.h"

namespace headcount::renderers {
namespace {

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

}  // namespace

void write_github(const Run& run, const RenderOptions&, std::ostream& out) {
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


}  // namespace headcount::renderers
