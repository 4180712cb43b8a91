// sarif.cpp: SARIF 2.1.0 for code scanning: findings and failed gates as results.
#include "json_writer.h"
#include "layout.h"
#include "renderers.h"

namespace headcount::renderers {
namespace {

const char* sarif_level(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    default: return "note";
  }
}

}  // namespace

void write_sarif(const Run& run, const RenderOptions&, std::ostream& out) {
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


}  // namespace headcount::renderers
