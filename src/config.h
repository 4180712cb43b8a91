// config.h: headcount.toml, read with toml++ and checked key by key (internal to the CLI).
//
// Every key is an audit option by its long name, or a [[budget]] table of budgets for the models
// whose path matches a glob. A key headcount does not know, invalid TOML or a byte-order mark is an
// error that names the line: a silently ignored typo would switch a gate off.
#pragma once

#include <string>
#include <vector>

#include "headcount/gate.h"

namespace headcount {

struct ConfigOption {
  std::string key;    // an option's long name: "max-params"
  std::string value;  // as text, the way the command line would give it; a relative file
                      // (output, baseline, model-config) joined to the config's folder
  int line = 0;
};

struct ConfigFile {
  std::string path;
  std::vector<ConfigOption> options;  // top-level keys, in file order
  std::vector<PathBudget> budgets;    // globs made absolute against the config's folder
};

// The audit options whose value is a file (long names): a config's relative path is joined to
// the config's folder, and the shells complete a file name for them.
const std::vector<std::string>& file_options();

// Reads a config. `options` are the audit options a config may set (long names). Throws
// InputError with "FILE:LINE[:COLUMN]: what is wrong".
ConfigFile read_config(const std::string& path, const std::vector<std::string>& options);

}  // namespace headcount
