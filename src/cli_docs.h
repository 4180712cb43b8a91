// cli_docs.h: the man page and the shell completions, generated from the command line's own
// option tables (the CLI11 app run_cli builds), so that neither can drift from --help.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace headcount::detail {

// The values an option accepts, recorded where its check is made: "audit --format" -> names;
// "explain TARGET" -> the rule ids.
using Choices = std::map<std::string, std::vector<std::string>>;

// The man page (roff, section 1).
std::string man_page(const CLI::App& app, const Choices& choices, const std::string& version);
// A bash completion script (`complete -F`), and a zsh one (`#compdef headcount`).
std::string bash_completion(const CLI::App& app, const Choices& choices);
std::string zsh_completion(const CLI::App& app, const Choices& choices);

}  // namespace headcount::detail
