// cli_docs.cpp: the man page and the completions (see cli_docs.h).
#include "cli_docs.h"

#include <algorithm>
#include <sstream>

#include "config.h"

namespace headcount::detail {

namespace {

// The subcommands a user types (option groups are nameless sub-apps, hidden ones have no group).
std::vector<const CLI::App*> commands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty() && !s->get_group().empty(); });
}

// Every option of a subcommand, its option groups' included, without --help.
std::vector<const CLI::Option*> options_of(const CLI::App& app) {
  std::vector<const CLI::Option*> out;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_lnames().size() == 1 && o->get_lnames()[0] == "help") continue;
    out.push_back(o);
  }
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* s) { return s->get_name().empty(); })) {
    for (const CLI::Option* o : options_of(*group)) out.push_back(o);
  }
  return out;
}

std::vector<std::string> names_of(const CLI::Option* o) {
  std::vector<std::string> n;
  for (const auto& s : o->get_snames()) n.push_back("-" + s);
  for (const auto& l : o->get_lnames()) n.push_back("--" + l);
  return n;
}

bool takes_value(const CLI::Option* o) { return o->get_type_size_max() > 0 && o->get_expected_max() > 0; }

// Whether the option names a file: the audit's file options (config.h), and --config itself.
bool takes_file(const CLI::Option* o) {
  if (o->get_lnames().empty()) return false;
  const std::string& name = o->get_lnames()[0];
  const auto& files = file_options();
  return name == "config" || std::find(files.begin(), files.end(), name) != files.end();
}

std::string long_name(const CLI::Option* o) {
  return o->get_lnames().empty() ? (o->get_snames().empty() ? o->get_name() : "-" + o->get_snames()[0])
                                 : "--" + o->get_lnames()[0];
}

// roff: a backslash and a leading dot or quote are escaped; dashes in option names stay minus signs.
std::string roff(const std::string& s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else if (line_start && (c == '.' || c == '\'')) out += "\\&" + std::string(1, c);
    else out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

std::string man_page(const CLI::App& app, const Choices& choices, const std::string& version) {
  std::ostringstream out;
  out << ".TH HEADCOUNT 1 \"\" \"headcount " << version << "\" \"User Commands\"\n";
  out << ".SH NAME\nheadcount \\- audit the attention blocks and parameter counts of ONNX transformer models\n";
  out << ".SH SYNOPSIS\n";
  for (const CLI::App* c : commands(app)) {
    out << "\\fBheadcount " << c->get_name() << "\\fR [\\fIoptions\\fR]";
    for (const CLI::Option* o : options_of(*c)) {
      if (o->get_positional()) out << " " << (o->get_required() ? "" : "[") << o->get_name() << (o->get_required() ? "" : "]");
    }
    out << "\n.br\n";
  }
  out << ".SH DESCRIPTION\n" << roff(app.get_description()) << "\n";
  out << ".PP\nheadcount loads a model without its weight payloads, finds every multi\\-head attention block "
         "(unfused and fused forms, latent attention), sums the weights of each Q, K, V and O projection, finds "
         "mixture\\-of\\-experts layers, and explains the count: findings, the inference cost, and gates for CI.\n";
  out << ".SH GLOBAL OPTIONS\n";
  for (const CLI::Option* o : options_of(app)) {
    out << ".TP\n.B " << roff(join(names_of(o), ", ")) << "\n" << roff(o->get_description()) << "\n";
  }
  for (const CLI::App* c : commands(app)) {
    out << ".SH " << roff(c->get_name()) << "\n" << roff(c->get_description()) << "\n";
    auto describe = [&](const CLI::Option* o) {
      std::string head = o->get_positional() ? o->get_name() : join(names_of(o), ", ");
      if (!o->get_positional() && takes_value(o)) head += " " + (o->get_type_name().empty() ? std::string("VALUE") : o->get_type_name());
      out << ".TP\n.B " << roff(head) << "\n";
      std::string desc = o->get_description();
      for (char& ch : desc) {
        if (ch == '\n') ch = ' ';
      }
      out << roff(desc);
      if (!o->get_default_str().empty()) out << " (default: " << roff(o->get_default_str()) << ")";
      auto it = choices.find(c->get_name() + " " + (o->get_positional() ? o->get_name() : long_name(o)));
      if (it != choices.end()) out << "\n.br\n" << (o->get_positional() ? "It may be one of: " : "One of: ") << roff(join(it->second, ", ")) << ".";
      out << "\n";
    };
    for (const CLI::Option* o : c->get_options()) {
      if (!(o->get_lnames().size() == 1 && o->get_lnames()[0] == "help")) describe(o);
    }
    for (const CLI::App* group : c->get_subcommands([](const CLI::App* s) { return s->get_name().empty(); })) {
      out << ".SS " << roff(group->get_group()) << "\n" << roff(group->get_description()) << "\n";
      for (const CLI::Option* o : group->get_options()) describe(o);
    }
  }
  out << ".SH EXIT STATUS\n.TP\n.B 0\nevery model was audited and every gate passed\n"
         ".TP\n.B 1\na gate failed (a budget, --expect-heads, --fail-on, --baseline)\n"
         ".TP\n.B 2\na usage error, or a model that could not be read: one line "
         "\\(lqheadcount: error: FILE: what is wrong\\(rq per model, and the other models are still audited. "
         "2 wins over 1.\n";
  out << ".SH FILES\n.TP\n.I headcount.toml\nread by \\fBaudit\\fR from the working folder (or \\fB\\-\\-config\\fR "
         "FILE): the audit options as keys, plus [[budget]] tables per model path or glob; options on the command "
         "line win. An unknown key is an error.\n"
         ".TP\n.I config.json, genai_config.json\nbeside a model: what it declares, compared with the graph.\n"
         ".TP\n.I /usr/share/headcount/headcount.schema.json\nthe JSON Schema (draft 2020\\-12) of "
         "\\fB\\-\\-format json\\fR and \\fBjsonl\\fR reports.\n";
  out << ".SH JSON OUTPUT\n\\fB\\-\\-format json\\fR writes one object: schema (\\(lqheadcount/2\\(rq), tool, config, "
         "models[] (per model: parameters, attention blocks, experts, cost, findings, gates), errors[] and "
         "gate {configured, failures, passed}. \\fBjsonl\\fR writes one record per input file. The schema file "
         "above describes every field.\n";
  out << ".SH EXAMPLES\n.TP\nheadcount audit model.onnx\nthe text report of one model\n"
         ".TP\nheadcount audit models/ \\-j 4 \\-\\-max\\-params 110M \\-\\-expect\\-heads 12\na CI gate over a folder\n"
         ".TP\nheadcount audit model.onnx \\-f sarif \\-o headcount.sarif \\-\\-fail\\-on warning\nfindings for code scanning\n"
         ".TP\nheadcount explain \\-\\-width 768 \\-\\-heads 12\nthe calculator: what the standard block holds and how heads move it\n"
         ".TP\nheadcount explain model.onnx \\-\\-block 0\nhow one block's count is derived\n"
         ".TP\nheadcount explain \\-\\-config config.json\na whole model from its Hugging Face config, with the active "
         "parameters of a mixture of experts\n";
  out << ".SH SEE ALSO\nThe documentation in the source repository: docs/usage.md, docs/counting.md, docs/rules.md, "
         "docs/ci.md, docs/json.md.\n";
  return out.str();
}

std::string bash_completion(const CLI::App& app, const Choices& choices) {
  std::ostringstream out;
  out << "# bash completion for headcount (generated by 'headcount completion bash')\n";
  out << "_headcount() {\n  local cur prev cmd i\n  cur=\"${COMP_WORDS[COMP_CWORD]}\"\n  prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n";
  out << "  cmd=\"\"\n  for ((i = 1; i < COMP_CWORD; i++)); do\n    case \"${COMP_WORDS[i]}\" in\n";
  std::vector<std::string> names;
  for (const CLI::App* c : commands(app)) names.push_back(c->get_name());
  out << "      " << join(names, "|") << ") cmd=\"${COMP_WORDS[i]}\"; break ;;\n    esac\n  done\n";
  std::vector<std::string> global;
  for (const CLI::Option* o : options_of(app)) {
    for (const auto& n : names_of(o)) global.push_back(n);
  }
  global.push_back("--help");
  out << "  case \"$cmd\" in\n    \"\")\n      COMPREPLY=($(compgen -W \"" << join(names, " ") << " " << join(global, " ")
      << "\" -- \"$cur\"))\n      return ;;\n";
  for (const CLI::App* c : commands(app)) {
    out << "    " << c->get_name() << ")\n      case \"$prev\" in\n";
    std::vector<std::string> words = global;
    std::vector<std::string> value_options;
    for (const CLI::Option* o : options_of(*c)) {
      if (o->get_positional()) continue;
      for (const auto& n : names_of(o)) words.push_back(n);
      if (!takes_value(o)) continue;
      auto it = choices.find(c->get_name() + " " + long_name(o));
      std::string pattern = join(names_of(o), "|");
      if (it != choices.end()) {
        out << "        " << pattern << ") COMPREPLY=($(compgen -W \"" << join(it->second, " ") << "\" -- \"$cur\")); return ;;\n";
      } else if (takes_file(o)) {
        out << "        " << pattern << ") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n";
      } else {
        value_options.push_back(pattern);
      }
    }
    if (!value_options.empty()) out << "        " << join(value_options, "|") << ") return ;;\n";
    out << "      esac\n";
    out << "      if [[ \"$cur\" == -* ]]; then\n        COMPREPLY=($(compgen -W \"" << join(words, " ") << "\" -- \"$cur\"))\n";
    out << "      else\n";
    auto targets = choices.find(c->get_name() + " TARGET");
    if (targets != choices.end()) {
      out << "        COMPREPLY=($(compgen -W \"" << join(targets->second, " ") << "\" -- \"$cur\") "
          << "$(compgen -f -X '!*.[oO][nN][nN][xX]' -- \"$cur\") $(compgen -d -- \"$cur\"))\n";
    } else {
      out << "        COMPREPLY=($(compgen -f -X '!*.[oO][nN][nN][xX]' -- \"$cur\") $(compgen -d -- \"$cur\"))\n";
    }
    out << "      fi ;;\n";
  }
  out << "  esac\n}\ncomplete -o filenames -F _headcount headcount\n";
  return out.str();
}

std::string zsh_completion(const CLI::App& app, const Choices& choices) {
  auto quote = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '\n') c = ' ';
      if (c == '\'') out += "'\\''";
      else if (c == '[' || c == ']' || c == ':') out += std::string("\\") + c;
      else out += c;
    }
    return out;
  };
  std::ostringstream out;
  out << "#compdef headcount\n# zsh completion for headcount (generated by 'headcount completion zsh')\n\n";
  out << "_headcount() {\n  local curcontext=\"$curcontext\" state line\n  typeset -A opt_args\n";
  out << "  _arguments -C \\\n";
  for (const CLI::Option* o : options_of(app)) {
    for (const auto& n : names_of(o)) out << "    '" << n << "[" << quote(o->get_description()) << "]' \\\n";
  }
  out << "    '1: :->command' \\\n    '*:: :->args'\n";
  out << "  case $state in\n    command)\n      local -a commands\n      commands=(\n";
  for (const CLI::App* c : commands(app)) out << "        '" << c->get_name() << ":" << quote(c->get_description()) << "'\n";
  out << "      )\n      _describe 'command' commands ;;\n    args)\n      case $line[1] in\n";
  for (const CLI::App* c : commands(app)) {
    out << "        " << c->get_name() << ")\n          _arguments \\\n";
    for (const CLI::Option* o : options_of(*c)) {
      if (o->get_positional()) continue;
      std::string desc = quote(o->get_description());
      if (desc.size() > 100) desc = desc.substr(0, 97) + "...";
      std::string action;
      if (takes_value(o)) {
        auto it = choices.find(c->get_name() + " " + long_name(o));
        if (it != choices.end()) action = ":value:(" + join(it->second, " ") + ")";
        else if (takes_file(o)) action = ":file:_files";
        else action = ":value: ";
      }
      for (const auto& n : names_of(o)) out << "            '" << n << "[" << desc << "]" << action << "' \\\n";
    }
    auto targets = choices.find(c->get_name() + " TARGET");
    if (targets != choices.end()) {
      out << "            '1:target:{_alternative \"rules:rule:(" << join(targets->second, " ")
          << ")\" \"files:model:_files -g \\\"*.(onnx|ONNX)\\\"\"}'\n";
    } else {
      out << "            '*:model:_files -g \"*.(onnx|ONNX)\"'\n";
    }
    out << "          ;;\n";
  }
  out << "      esac ;;\n  esac\n}\n\n_headcount \"$@\"\n";
  return out.str();
}

}  // namespace headcount::detail
