// renderers.h: the writer of each output format (internal; the registry is in render.cpp).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "headcount/results/diff.h"
#include "headcount/render.h"

namespace headcount::renderers {

void write_text(const Run& run, const RenderOptions& options, std::ostream& out);
void write_json(const Run& run, const RenderOptions& options, std::ostream& out);
void write_jsonl(const Run& run, const RenderOptions& options, std::ostream& out);
void write_markdown(const Run& run, const RenderOptions& options, std::ostream& out);
void write_sarif(const Run& run, const RenderOptions& options, std::ostream& out);
void write_github(const Run& run, const RenderOptions& options, std::ostream& out);
void write_html(const Run& run, const RenderOptions& options, std::ostream& out);
// Hands each file's section to `put`, in input order, on the calling thread: a writer that takes
// its sections from here prints the same bytes at any -j. With -j N and several files, N threads
// write sections into strings a few ahead of `put`, which gets the text; otherwise `put` gets
// nullptr and writes the section itself, in place, so nothing is held.
using SectionWriter = std::function<void(const FileResult&, std::ostream&)>;
void for_each_section(const Run& run, int jobs, const SectionWriter& write,
                      const std::function<void(size_t, const std::string*)>& put);

// headcount diff's page: the two models' bars side by side, then the changes.
void write_diff_html(const Diff& diff, std::ostream& out);

}  // namespace headcount::renderers
