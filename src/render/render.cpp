// render.cpp: the registry of output formats and render(), the one entry point the CLI uses.
#include "headcount/render.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

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

namespace renderers {

void for_each_section(const Run& run, int jobs, const SectionWriter& write,
                      const std::function<void(size_t, const std::string*)>& put) {
  const size_t n = run.files.size();
  const int threads = std::min<int>(std::max(jobs, 1), static_cast<int>(n));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) put(i, nullptr);
    return;
  }
  const size_t ahead = 2 * static_cast<size_t>(threads);  // sections held at most: memory stays flat
  std::vector<std::optional<std::string>> done(n);
  size_t claimed = 0, emitted = 0;
  std::mutex lock;
  std::condition_variable changed;
  std::exception_ptr failure;
  auto worker = [&] {
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> l(lock);
        changed.wait(l, [&] { return claimed >= n || claimed < emitted + ahead; });
        if (claimed >= n) return;
        i = claimed++;
      }
      std::ostringstream s;
      try {
        write(run.files[i], s);
      } catch (...) {  // out of memory: handed to the calling thread, which rethrows it at the end
        std::lock_guard<std::mutex> l(lock);
        if (!failure) failure = std::current_exception();
      }
      std::lock_guard<std::mutex> l(lock);
      done[i] = std::move(s).str();
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (size_t i = 0; i < n; ++i) {
    std::string text;
    bool failed;
    {
      std::unique_lock<std::mutex> l(lock);
      changed.wait(l, [&] { return done[i].has_value(); });
      text = std::move(*done[i]);
      done[i].reset();
      emitted = i + 1;
      failed = failure != nullptr;
      changed.notify_all();
    }
    try {
      if (!failed) put(i, &text);
    } catch (...) {  // the sections still in flight are drained, so every thread ends
      std::lock_guard<std::mutex> l(lock);
      if (!failure) failure = std::current_exception();
    }
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace renderers

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
