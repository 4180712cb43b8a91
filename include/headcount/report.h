// headcount/report.h: one model's audit as plain data, and the renderers that print it.
//
// audit_file() runs load -> match -> rules; render() is the only place that knows formats.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/buffers.h"
#include "headcount/declared.h"
#include "headcount/findings.h"
#include "headcount/gate.h"
#include "headcount/load.h"
#include "headcount/model.h"

namespace headcount {

extern const char* const kVersion;
extern const char* const kSchema;  // "headcount/1"

// Totals per dtype or per storage kind, over parameter tensors.
struct Breakdown {
  std::string key;
  uint64_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

struct Inventory {
  uint64_t stored = 0;   // elements of every parameter tensor, each tensor once
  uint64_t bytes = 0;
  uint64_t tensors = 0;  // parameter tensors
  uint64_t non_parameter_tensors = 0;  // integer shape/index constants and scalars
  std::vector<Breakdown> by_dtype;
  std::vector<Breakdown> by_storage;
  std::vector<int> largest;  // weight indices, most elements first
};

// Counts the parameter tensors of a model. Throws InputError if a total overflows.
Inventory take_inventory(const Model& model);

// Where the stored parameters go, each tensor in one category: attention projections first,
// then embeddings (Gather tables and their duplicates), norms, feed-forward, everything else.
enum class Part { Attention, Embeddings, Norms, FeedForward, Buffers, Other };

struct Composition {
  std::vector<Part> part_of;  // per weight index (non-parameters are Other)
  uint64_t attention = 0;
  uint64_t embeddings = 0;
  uint64_t feed_forward = 0;
  uint64_t norms = 0;
  uint64_t buffers = 0;  // masks, rotary tables and the like (buffers.h)
  uint64_t other = 0;
};

struct Audit {
  Model model;
  Inventory inventory;
  AttentionResult attention;
  std::vector<DuplicatePair> duplicates;
  uint64_t unique = 0;  // stored minus duplicate copies
  bool content_compared = false;  // false with --no-content: unique is then just stored
  FrameworkView framework;        // buffers, merged copies and the framework-comparable count
  // The model's config (config.json or genai_config.json beside it, or --model-config) against the
  // graph; empty when there is none. declared_error: a config beside it that could not be read.
  std::optional<Declared> declared;
  std::string declared_error;
  Composition composition;
  std::vector<Finding> findings;
};

// Sorts each parameter tensor into one Composition category.
Composition compose(const Model& model, const AttentionResult& attention, const std::vector<DuplicatePair>& duplicates,
                    const std::vector<BufferTensor>& buffers);

struct AuditOptions {
  LoadOptions load;
  bool compare_content = true;  // look for duplicate tensors by content (reads only candidates)
  std::string model_config;     // --model-config FILE: compare every model with this config
  bool find_model_config = true;  // else: a config.json or genai_config.json beside the model
};

// load -> inventory -> match -> rules for one file. Throws InputError for bad input.
Audit audit_file(const std::string& path, const AuditOptions& options = {});

// One model of a run: its audit, or the error that stopped it, and the gates it failed.
struct FileResult {
  std::string path;
  std::optional<Audit> audit;
  std::string error;                // set when audit is empty
  std::vector<GateFailure> gates;
};

// Everything one `headcount audit` invocation produced, in input order.
struct Run {
  std::vector<FileResult> files;
  std::string config;         // the config file that was read, or ""
  bool gates_configured = false;
};

enum class Format { Text, Json, Jsonl, Markdown, Sarif, Github };

struct RenderOptions {
  Format format = Format::Text;
  int top = 10;             // largest tensors listed in text
  bool all_tensors = true;  // json lists every tensor
};

// Writes a whole run in one format; the only entry point the CLI needs.
void render(const Run& run, const RenderOptions& options, std::ostream& out);

// Single-audit renderers used by render() (and by tests).
void render_text(const Audit& audit, const RenderOptions& options, std::ostream& out);
void render_json(const Audit& audit, const RenderOptions& options, std::ostream& out, bool compact = false,
                 const FileResult* result = nullptr, const std::string& config = "");
void render_markdown(const Run& run, std::ostream& out);
void render_sarif(const Run& run, std::ostream& out);
void render_github(const Run& run, std::ostream& out);

// "1,234,567"
std::string with_commas(uint64_t n);
// "437.9 MB"
std::string human_bytes(uint64_t n);

}  // namespace headcount
