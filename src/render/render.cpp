// render.cpp: the registry of output formats and render(), the one entry point the CLI uses.
#include "headcount/render.h"

#include "renderers.h"

namespace headcount {

const std::vector<FormatInfo>& formats() {
  static const std::vector<FormatInfo> table = {
      {"text", Format::Text, "aligned tables for a person (default); a summary table closes a run over several models",
       renderers::write_text},
      {"json", Format::Json, "one headcount/2 document for the run: every model, every error and the gate verdict", renderers::write_json},
      {"jsonl", Format::Jsonl, "one compact headcount/2 record per line: a model or an error, in input order", renderers::write_jsonl},
      {"markdown", Format::Markdown, "a summary table for a pull-request comment", renderers::write_markdown},
      {"sarif", Format::Sarif, "SARIF 2.1.0 for code scanning: findings and failed gates as results", renderers::write_sarif},
      {"github", Format::Github, "GitHub Actions annotations (10 of each type), and the markdown table in $GITHUB_STEP_SUMMARY",
       renderers::write_github},
      {"html", Format::Html, "one self-contained page: the parameters by part, block by block, each projection drawn to "
                             "scale in its heads, the findings (no script, nothing fetched)",
       renderers::write_html},
  };
  return table;
}

const FormatInfo* find_format(const std::string& name) {
  for (const auto& f : formats()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

void render(const Run& run, const RenderOptions& options, std::ostream& out) {
  for (const auto& f : formats()) {
    if (f.format == options.format) f.write(run, options, out);
  }
}

}  // namespace headcount
