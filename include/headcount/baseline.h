// headcount/baseline.h: an earlier JSON report read back: what it said about each model, the
// fields the --baseline gate and `headcount diff` compare, with 64-bit counts read exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headcount {

// What an earlier JSON report said about one model (the fields gates compare), read exactly.
struct BaselineBlock {
  std::optional<int64_t> heads, kv_heads, width;
  std::string form;
};
struct BaselineModel {
  std::string file;  // as the report wrote it
  std::string key;   // normalized (baseline_key), to match the models of this run
  uint64_t stored = 0, unique = 0, framework = 0, attention = 0;
  bool content_compared = true;
  std::vector<BaselineBlock> blocks;
};
struct Baseline {
  std::string path;
  std::vector<BaselineModel> models;
};

// Reads a headcount/2 report written with --format json (one document) or jsonl (one record a
// line), with 64-bit counts read exactly. Throws InputError, naming the file and what is wrong,
// when it is missing, not JSON, another schema, or holds a model entry without the fields gates
// compare.
Baseline read_baseline(const std::string& path);
// How a model's path is matched with a baseline entry: relative to the current directory when it
// lies below it, lexically normalized ("./models/x.onnx" and "models/x.onnx" are one key).
std::string baseline_key(const std::string& path);

}  // namespace headcount
