// github.cpp: GitHub Actions workflow commands: ::notice, ::warning and ::error annotations.
#include <map>

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

// GitHub workflow commands: data escapes %, CR, LF; properties also escape ':' and ','. Other
// control characters from the file are shown as \t or \xNN (shown_byte, layout.h): an escape
// sequence in a name would otherwise colour the job's log.
std::string gh_data(const std::string& s) {
  std::string o;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '%') o += "%25";
    else if (c == '\r') o += "%0D";
    else if (c == '\n') o += "%0A";
    else if (u < 0x20 || u == 0x7F) o += shown_byte(u);
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

// GitHub shows at most 10 annotations of each type per step and drops the rest silently, so
// headcount writes 10 of each and says in plain log lines how many more there are.
constexpr int kAnnotationsPerType = 10;

void write_github(const Run& run, const RenderOptions&, std::ostream& out) {
  std::map<std::string, int> written, held_back;
  auto annotate = [&](const std::string& command, const std::string& file, const std::string& title, const std::string& text) {
    if (written[command] >= kAnnotationsPerType) {
      ++held_back[command];
      return;
    }
    ++written[command];
    out << "::" << command << " file=" << gh_property(file) << ",title=" << gh_property(title) << "::" << gh_data(text) << "\n";
  };
  for (const auto& f : run.files) {
    if (!f.audit) {
      annotate("error", f.path, "headcount", f.error);
      continue;
    }
    const Audit& a = *f.audit;
    annotate("notice", f.path, "headcount " + f.path,
             with_commas(a.framework.parameters) + " parameters (" + with_commas(a.inventory.stored) + " stored), " +
                 with_commas(a.attention.parameters) + " in " +
                 count_of(a.attention.blocks.size(), "attention block", "attention blocks") + ", heads " + heads_summary(a));
    for (const auto& x : a.findings) {
      annotate(github_command(x.severity), f.path, "headcount " + x.rule,
               (x.block ? "block " + std::to_string(*x.block) + ": " : std::string()) + x.message);
    }
    for (const auto& g : f.gates) annotate("error", f.path, "headcount gate " + g.gate, g.message);
  }
  for (const char* command : {"error", "warning", "notice"}) {
    int n = held_back[command];
    if (n) {
      out << "headcount: " << n << " more " << command << (n == 1 ? "" : "s") << " not annotated (GitHub shows "
          << kAnnotationsPerType << " of each type per step); every one is in --format text, markdown or sarif\n";
    }
  }
}

}  // namespace headcount::renderers
