// baseline.cpp: reading an earlier --format json or jsonl report, exactly, for --baseline and diff.
#include "headcount/baseline.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headcount/error.h"
#include "paths.h"
#include "headcount/version.h"
#include "json_fields.h"

namespace headcount {
namespace {

// Reads an unsigned count exactly; the reader never goes through a double.
uint64_t count_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_unsigned()) {
    throw InputError(where + ": '" + key + "' is missing or not a whole number");
  }
  return it->get<uint64_t>();
}

std::optional<int64_t> optional_int(const nlohmann::json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) throw InputError(where + ": '" + key + "' is missing");
  if (it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) throw InputError(where + ": '" + key + "' is not a whole number or null");
  return it->get<int64_t>();
}

BaselineModel model_from(const nlohmann::json& doc, const std::string& where) {
  namespace F = json_field;
  if (!doc.is_object()) throw InputError(where + ": a model entry is not an object");
  BaselineModel m;
  auto file = doc.find(F::kFile);
  if (file == doc.end() || !file->is_string()) throw InputError(where + ": a model entry has no '" + F::kFile + "'");
  m.file = file->get<std::string>();
  m.key = baseline_key(m.file);
  std::string at = where + ", model '" + m.file + "'";
  auto p = doc.find(F::kParameters);
  if (p == doc.end() || !p->is_object()) throw InputError(at + ": '" + F::kParameters + "' is missing");
  m.stored = count_field(*p, F::kStored, at);
  m.unique = count_field(*p, F::kUnique, at);
  m.framework = count_field(*p, F::kFramework, at);
  m.attention = count_field(*p, F::kAttention, at);
  auto content = p->find(F::kContentCompared);
  if (content == p->end() || !content->is_boolean()) throw InputError(at + ": '" + F::kContentCompared + "' is missing");
  m.content_compared = content->get<bool>();
  auto blocks = doc.find(F::kBlocks);
  if (blocks == doc.end() || !blocks->is_array()) throw InputError(at + ": '" + F::kBlocks + "' is missing");
  for (const auto& b : *blocks) {
    if (!b.is_object()) throw InputError(at + ": an attention block is not an object");
    BaselineBlock x;
    x.heads = optional_int(b, F::kHeads, at);
    x.kv_heads = optional_int(b, F::kKvHeads, at);
    x.width = optional_int(b, F::kWidth, at);
    auto form = b.find(F::kForm);
    if (form != b.end() && form->is_string()) x.form = form->get<std::string>();
    m.blocks.push_back(x);
  }
  return m;
}

void check_schema(const nlohmann::json& doc, const std::string& path) {
  auto schema = doc.find(json_field::kSchema);
  std::string seen = schema != doc.end() && schema->is_string() ? schema->get<std::string>() : "";
  if (seen == kSchema) return;
  if (seen == "headcount/1") {
    throw InputError("baseline '" + path + "' was written by an earlier headcount (headcount/1); write it again with "
                     "this version: headcount audit MODEL... --format json -o " + path);
  }
  throw InputError("baseline '" + path + "' is not a " + std::string(kSchema) +
                   " report (run 'headcount audit MODEL... --format json -o " + path + "' to make one)");
}

}  // namespace

std::string baseline_key(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::error_code ec;
  if (p.is_absolute()) {
    fs::path rel = p.lexically_normal().lexically_relative(fs::current_path(ec).lexically_normal());
    if (!ec && !rel.empty() && *rel.begin() != "..") p = rel;
  }
  std::string key = p.lexically_normal().generic_string();
  while (key.rfind("./", 0) == 0) key = key.substr(2);
  return key;
}

Baseline read_baseline(const std::string& path) {
  namespace F = json_field;
  const std::string text = read_named_file(path, "baseline");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw InputError("baseline '" + path + "' is empty");
  Baseline b;
  b.path = path;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_discarded()) {  // --format json: one document
    if (!doc.is_object()) throw InputError("baseline '" + path + "' is not a headcount report");
    check_schema(doc, path);
    auto models = doc.find(F::kModels);
    if (models == doc.end() || !models->is_array()) throw InputError("baseline '" + path + "' has no '" + F::kModels + "' list");
    for (const auto& m : *models) b.models.push_back(model_from(m, "baseline '" + path + "'"));
    return b;
  }
  std::istringstream lines(text);  // --format jsonl: one record a line
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = "baseline '" + path + "' line " + std::to_string(n);
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) throw InputError(where + " is not JSON");
    check_schema(record, path);
    auto kind = record.find(F::kRecord);
    if (kind == record.end() || !kind->is_string()) throw InputError(where + " has no '" + F::kRecord + "'");
    if (*kind == "error") continue;  // a model the earlier run could not audit: nothing to compare
    if (*kind != "model") throw InputError(where + ": unknown record '" + kind->get<std::string>() + "'");
    b.models.push_back(model_from(record, where));
  }
  return b;
}

}  // namespace headcount
