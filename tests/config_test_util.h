// config_test_util.h: what the `explain --config` tests share: a published config of tests/configs
// by name, a config file's count and its notes, a copy of one with an edit, the error a config
// gives, the K/V cache at a context, and whether an exact count agrees with a published rounded
// figure.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "headcount/error.h"
#include "headcount/families.h"
#include "test_util.h"

namespace configtest {

using headcount::FamilyCount;
using headcount::InputError;
using headcount::family_count_or_explain;
using headcount::kv_at_context;
using headcount::read_model_config;
using Json = nlohmann::json;

inline std::string config(const std::string& name) { return std::string(HEADCOUNT_CONFIGS_DIR) + "/" + name + ".config.json"; }

// The count of a config file.
inline FamilyCount count_file(const std::string& path) { return family_count_or_explain(read_model_config(path)); }

// Whether one of a count's notes holds `part`.
inline bool has_note(const FamilyCount& f, const std::string& part) {
  for (const auto& n : f.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

// The K/V cache at `context` tokens and `bits` per element (0 when none).
inline uint64_t kv_at(const FamilyCount& f, uint64_t context, int bits) {
  auto at = kv_at_context(f, context, bits);
  return at ? at->bytes : 0;
}

// A published config with one change, written into `dir`.
template <typename Edit>
inline std::string edited(const testutil::TempDir& dir, const std::string& name, Edit edit) {
  Json j = Json::parse(testutil::read_text(config(name)));
  edit(j);
  std::string path = dir.file(name + ".config.json");
  testutil::write_bytes(path, j.dump(2));
  return path;
}

// The error explain --config gives for a config file, without the "headcount: error: " prefix.
inline std::string error_of(const std::string& path) {
  try {
    family_count_or_explain(read_model_config(path));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A published figure in billions with `digits` decimals agrees when the exact count is within one
// unit of its last digit (publishers round or truncate).
inline bool agrees(uint64_t exact, double published_billions, int digits) {
  double unit = std::pow(10.0, -digits);
  return std::fabs(static_cast<double>(exact) / 1e9 - published_billions) < unit;
}

}  // namespace configtest
