// renderers.h: the writer of each output format (internal; the registry is in render.cpp).
#pragma once

#include <ostream>

#include "headcount/diff.h"
#include "headcount/render.h"

namespace headcount::renderers {

void write_text(const Run& run, const RenderOptions& options, std::ostream& out);
void write_json(const Run& run, const RenderOptions& options, std::ostream& out);
void write_jsonl(const Run& run, const RenderOptions& options, std::ostream& out);
void write_markdown(const Run& run, const RenderOptions& options, std::ostream& out);
void write_sarif(const Run& run, const RenderOptions& options, std::ostream& out);
void write_github(const Run& run, const RenderOptions& options, std::ostream& out);
void write_html(const Run& run, const RenderOptions& options, std::ostream& out);
// headcount diff's page: the two models' bars side by side, then the changes.
void write_diff_html(const Diff& diff, std::ostream& out);

}  // namespace headcount::renderers
