// headcount/report.h: one model's audit as plain data, and the renderers that print it.
//
// audit_file() runs load -> match -> rules; render() is the only place that knows formats.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/findings.h"
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
struct Composition {
  uint64_t attention = 0;
  uint64_t embeddings = 0;
  uint64_t feed_forward = 0;
  uint64_t norms = 0;
  uint64_t other = 0;
};

struct Audit {
  Model model;
  Inventory inventory;
  AttentionResult attention;
  std::vector<DuplicatePair> duplicates;
  uint64_t unique = 0;  // stored minus duplicate copies: what the framework reports
  Composition composition;
  std::vector<Finding> findings;
};

// Sorts each parameter tensor into one Composition category.
Composition compose(const Model& model, const AttentionResult& attention, const std::vector<DuplicatePair>& duplicates);

struct AuditOptions {
  LoadOptions load;
  bool compare_content = true;  // look for duplicate tensors by content (reads only candidates)
};

// load -> inventory -> match -> rules for one file. Throws InputError for bad input.
Audit audit_file(const std::string& path, const AuditOptions& options = {});

enum class Format { Text, Json };

struct RenderOptions {
  Format format = Format::Text;
  int top = 10;             // largest tensors listed in text
  bool all_tensors = true;  // json lists every tensor
};

// Writes one audit. Several audits in JSON form an array (see README, "JSON output").
void render_text(const Audit& audit, const RenderOptions& options, std::ostream& out);
void render_json(const Audit& audit, const RenderOptions& options, std::ostream& out);

// "1,234,567"
std::string with_commas(uint64_t n);
// "437.9 MB"
std::string human_bytes(uint64_t n);

}  // namespace headcount
