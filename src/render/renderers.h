// renderers.h: the writer of each output format (internal; the registry is in render.cpp).
#pragma once

#include <ostream>

#include "headcount/render.h"

namespace headcount::renderers {

void write_text(const Run& run, const RenderOptions& options, std::ostream& out);
void write_json(const Run& run, const RenderOptions& options, std::ostream& out);
void write_jsonl(const Run& run, const RenderOptions& options, std::ostream& out);
void write_markdown(const Run& run, const RenderOptions& options, std::ostream& out);
void write_sarif(const Run& run, const RenderOptions& options, std::ostream& out);
void write_github(const Run& run, const RenderOptions& options, std::ostream& out);

}  // namespace headcount::renderers
