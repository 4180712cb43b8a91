// sarif.cpp: SARIF 2.1.0 for code scanning. Every finding, failed gate and unreadable model is one
// result of a declared rule; models are named by repository-relative URIs (from the current
// directory, under %SRCROOT%), attention blocks by logical locations, and each result carries a
// fingerprint that stays the same while the problem does, so code scanning tracks it across runs.
#include <cstdint>
#include <filesystem>
#include <map>
#include <tuple>

#include "json_writer.h"
#include "layout.h"
#include "renderers.h"

#include "headcount/results/gate.h"
#include "../paths.h"
#include "headcount/version.h"

namespace headcount::renderers {
namespace {

const char* sarif_level(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    default: return "note";
  }
}

struct Uri {
  std::string uri;
  bool relative = false;  // to %SRCROOT%, the current directory
};

// A model inside the current directory is named relative to it (code scanning resolves that
// against the repository's root, where CI runs); anything else by an absolute file: URI.
Uri uri_of(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  fs::path absolute = fs::absolute(path, ec).lexically_normal();
  if (!ec) {
    fs::path rel = absolute.lexically_relative(cwd.lexically_normal());
    if (!rel.empty() && *rel.begin() != ".." && rel != ".") return {percent_encoded(rel.generic_string(), true), true};
  }
  return {"file://" + percent_encoded(absolute.generic_string(), true), false};
}

// FNV-1a, 64 bits, as 16 hex digits: a stable digest, not a security measure.
std::string fingerprint(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = hex[h & 15];
  return out;
}

struct RuleInfo {
  std::string id, name, summary, doc;
  const char* level;
};

// "duplicate-weights" -> "DuplicateWeights": SARIF's readable rule name.
std::string pascal_case(const std::string& id) {
  std::string out;
  bool up = true;
  for (char c : id) {
    if (c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

std::vector<RuleInfo> sarif_rules() {
  std::vector<RuleInfo> out;
  for (const auto& r : rules()) out.push_back({r.id, pascal_case(r.id), r.summary, r.doc, sarif_level(r.severity)});
  for (const auto& g : gate_kinds()) {
    std::string id = std::string("gate-") + g.id;
    out.push_back({id, pascal_case(id), std::string("gate failed: ") + g.summary, g.doc, "error"});
  }
  out.push_back({"input-error", "InputError", "the model could not be audited",
                 "The file is missing, truncated, hostile or not a model headcount can read; the message says what is "
                 "wrong. Its counts are unknown, so no gate can pass it.",
                 "error"});
  return out;
}

// The tool's driver: its name, version and every rule a result may name, in `declared` order.
void write_driver(JsonWriter& j, const std::vector<RuleInfo>& declared) {
  j.key("tool").begin_object().key("driver").begin_object();
  j.field("name", "headcount");
  j.field("version", kVersion);
  j.field("semanticVersion", kVersion);
  j.key("rules").begin_array();
  for (const auto& r : declared) {
    j.begin_object();
    j.field("id", r.id);
    j.field("name", r.name);
    j.key("shortDescription").begin_object().field("text", r.summary).end_object();
    j.key("fullDescription").begin_object().field("text", r.doc).end_object();
    const bool is_rule = find_rule(r.id) != nullptr;
    std::string more = is_rule ? "headcount explain " + r.id + " shows this with a worked example." : "";
    j.key("help").begin_object();
    j.field("text", r.doc + (more.empty() ? "" : "\n\n" + more));
    j.field("markdown", "**" + r.summary + "**\n\n" + r.doc +
                            (is_rule ? "\n\n`headcount explain " + r.id + "` shows this with a worked example." : ""));
    j.end_object();
    j.key("defaultConfiguration").begin_object().field("level", r.level).end_object();
    j.key("properties").begin_object().key("tags").begin_array();
    j.value(r.id.rfind("gate-", 0) == 0 ? "gate" : r.id == "input-error" ? "input" : "model");
    j.end_array().end_object();
    j.end_object();
  }
  j.end_array();
  j.end_object().end_object();  // driver, tool
}

// Writes one result at a time. Results with the same rule, file and block are told apart by
// their order in the file.
class ResultWriter {
 public:
  ResultWriter(JsonWriter& j, const std::map<std::string, size_t>& index) : j_(j), index_(index) {}

  void write(const std::string& rule_id, const char* level, const std::string& text, const std::string& path,
             const std::string& block) {
    Uri u = uri_of(path);
    int ordinal = seen_[{rule_id, u.uri, block}]++;
    j_.begin_object();
    j_.field("ruleId", rule_id);
    j_.field("ruleIndex", static_cast<uint64_t>(index_.at(rule_id)));
    j_.field("level", level);
    j_.key("message").begin_object().field("text", text).end_object();
    j_.key("locations").begin_array().begin_object();
    j_.key("physicalLocation").begin_object();
    j_.key("artifactLocation").begin_object().field("uri", u.uri);
    if (u.relative) j_.field("uriBaseId", "%SRCROOT%");
    j_.end_object();
    // A model is a binary file: code scanning needs a line, so results point at its first one
    // and name the attention block as a logical location.
    j_.key("region").begin_object().field("startLine", uint64_t{1}).end_object();
    j_.end_object();
    if (!block.empty()) {
      j_.key("logicalLocations").begin_array().begin_object();
      j_.field("name", block);
      j_.field("kind", "module");
      j_.end_object().end_array();
    }
    j_.end_object().end_array();
    j_.key("partialFingerprints").begin_object();
    j_.field("headcount/v1", fingerprint(rule_id + '\n' + u.uri + '\n' + block + '\n' + std::to_string(ordinal)));
    j_.end_object();
    j_.end_object();
  }

 private:
  JsonWriter& j_;
  const std::map<std::string, size_t>& index_;
  std::map<std::tuple<std::string, std::string, std::string>, int> seen_;
};

// Each file's results: its input error, or its findings (named by block) and failed gates.
void write_results(ResultWriter& result, const Run& run) {
  for (const auto& f : run.files) {
    if (!f.audit) {
      result.write("input-error", "error", f.error, f.path, "");
      continue;
    }
    const auto& blocks = f.audit->attention.blocks;
    for (const auto& x : f.audit->findings) {
      std::string block;
      if (x.block && *x.block >= 0 && static_cast<size_t>(*x.block) < blocks.size()) {
        const auto& b = blocks[static_cast<size_t>(*x.block)];
        block = b.name.empty() ? "block " + std::to_string(*x.block) : b.name;
      }
      result.write(x.rule, sarif_level(x.severity),
                   (x.block ? "block " + std::to_string(*x.block) + ": " : std::string()) + x.message, f.path, block);
    }
    for (const auto& g : f.gates) result.write("gate-" + g.gate, "error", g.message, f.path, "");
  }
}

}  // namespace

void write_sarif(const Run& run, const RenderOptions&, std::ostream& out) {
  const std::vector<RuleInfo> declared = sarif_rules();
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < declared.size(); ++i) index[declared[i].id] = i;

  JsonWriter j(out);
  j.begin_object();
  j.field("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
  j.field("version", "2.1.0");
  j.key("runs").begin_array().begin_object();
  write_driver(j, declared);

  bool all_read = true;
  for (const auto& f : run.files) all_read = all_read && f.audit.has_value();
  j.key("invocations").begin_array().begin_object().field("executionSuccessful", all_read).end_object().end_array();

  j.key("results").begin_array();
  ResultWriter result(j, index);
  write_results(result, run);
  j.end_array();
  j.end_object().end_array();  // run, runs
  j.end_object();
  out << "\n";
}

}  // namespace headcount::renderers
