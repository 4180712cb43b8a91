// config.cpp: reading headcount.toml with toml++: unknown keys, invalid TOML and a byte-order mark
// are errors with their line.
#include "config.h"

#include <algorithm>
#include <filesystem>

#include <toml++/toml.h>

#include "headcount/error.h"
#include "paths.h"
#include "suggest.h"

namespace headcount {
namespace {

// The keys of a [[budget]] table: its path and every budget gate.
std::vector<std::string> budget_keys() {
  std::vector<std::string> keys = {"path"};
  for (const auto& g : budget_gates()) keys.push_back(g.id);
  return keys;
}

std::string at(const std::string& path, const toml::source_region& where) {
  return path + ":" + std::to_string(where.begin.line);
}

[[noreturn]] void unknown(const std::string& path, const toml::key& key, const std::string& where,
                          const std::vector<std::string>& known) {
  std::string hint = did_you_mean(std::string(key.str()), known);
  throw InputError(at(path, key.source()) + ": unknown key '" + std::string(key.str()) + "'" + where +
                   (hint.empty() ? std::string() : " (did you mean " + hint + "?)"));
}

// A value as the command line would give it: strings as they are, numbers in decimal, booleans
// as true/false. Tables and arrays are not option values.
std::string as_text(const std::string& path, const toml::key& key, const toml::node& v) {
  if (auto s = v.value_exact<std::string>()) return *s;
  if (auto i = v.value_exact<int64_t>()) return std::to_string(*i);
  if (auto b = v.value_exact<bool>()) return *b ? "true" : "false";
  throw InputError(at(path, key.source()) + ": '" + std::string(key.str()) + "' must be a string, a whole number or true/false");
}

}  // namespace

ConfigFile read_config(const std::string& path, const std::vector<std::string>& options) {
  const std::string bytes = read_named_file(path, "config");
  if (bytes.rfind("\xEF\xBB\xBF", 0) == 0) {
    throw InputError(path + ":1: the file starts with a byte-order mark; save it as UTF-8 without one");
  }
  toml::table root;
  try {
    root = toml::parse(bytes, path);
  } catch (const toml::parse_error& e) {
    throw InputError(path + ":" + std::to_string(e.source().begin.line) + ":" + std::to_string(e.source().begin.column) +
                     ": invalid TOML: " + std::string(e.description()));
  }
  ConfigFile c;
  c.path = path;
  std::filesystem::path folder = std::filesystem::absolute(std::filesystem::path(path)).parent_path();
  std::vector<std::string> top = options;
  top.push_back("budget");
  for (auto&& [key, value] : root) {
    if (key.str() == "budget") {
      const toml::array* tables = value.as_array();
      if (!tables || !tables->is_array_of_tables()) {
        throw InputError(at(path, key.source()) + ": 'budget' must be a list of tables: write [[budget]]");
      }
      for (const toml::node& t : *tables) {
        PathBudget b;
        for (auto&& [k, v] : *t.as_table()) {
          std::string name(k.str()), text = as_text(path, k, v);
          try {
            if (name == "path") b.pattern = (folder / text).lexically_normal().generic_string();
            else if (const BudgetGate* g = find_budget_gate(name)) b.budget.limits[g->id] = parse_limit(*g, text);
            else unknown(path, k, " in a [[budget]] table", budget_keys());
          } catch (const InputError& e) {
            std::string what = e.what();
            if (what.rfind(path + ":", 0) == 0) throw;  // already located
            throw InputError(at(path, k.source()) + ": " + name + ": " + what);
          }
        }
        if (b.pattern.empty()) throw InputError(at(path, t.source()) + ": a [[budget]] table has no path");
        c.budgets.push_back(std::move(b));
      }
      continue;
    }
    if (std::find(options.begin(), options.end(), key.str()) == options.end()) unknown(path, key, "", top);
    std::string text = as_text(path, key, value);
    // A file named in the config is found from the config's folder, as its globs are.
    if (std::find(file_options().begin(), file_options().end(), key.str()) != file_options().end() && text != "-" &&
        std::filesystem::path(text).is_relative()) {
      text = (std::filesystem::path(path).parent_path() / text).lexically_normal().generic_string();
    }
    c.options.push_back({std::string(key.str()), text, static_cast<int>(key.source().begin.line)});
  }
  return c;
}

const std::vector<std::string>& file_options() {
  static const std::vector<std::string> names = {"output", "baseline", "model-config"};
  return names;
}

}  // namespace headcount
