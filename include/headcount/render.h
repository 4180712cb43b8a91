// headcount/render.h: the output formats, one row each in one registry, and render().
//
// Only the renderers know about formats. Each format is a row of formats(): its name on the
// command line, a one-line summary for --help, and the function that writes a whole run.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "headcount/run.h"

namespace headcount {

enum class Format { Text, Json, Jsonl, Markdown, Sarif, Github, Html };

struct RenderOptions {
  Format format = Format::Text;
  int top = 10;             // largest tensors listed in text
  int jobs = 1;             // threads that may render the models' sections (the output does not depend on it)
  // Text, markdown and html fold runs of identical consecutive blocks (and expert layers, and the
  // findings they share) into one row each; true lists every one. Machine formats never fold.
  bool all_blocks = false;
};

// One output format: a row of the registry that feeds --help, validation and render().
struct FormatInfo {
  const char* name;
  Format format;
  const char* summary;
  void (*write)(const Run& run, const RenderOptions& options, std::ostream& out);
};
const std::vector<FormatInfo>& formats();
const FormatInfo* find_format(const std::string& name);

// Writes a whole run in one format.
void render(const Run& run, const RenderOptions& options, std::ostream& out);

struct Diff;
// headcount diff's formats, and the writer: text (default), json, markdown or html.
const std::vector<std::string>& diff_formats();
void render_diff(const Diff& diff, const std::string& format, std::ostream& out);

}  // namespace headcount
