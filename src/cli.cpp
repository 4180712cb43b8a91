// cli.cpp: CLI11 wiring. The only place that knows about exit codes.
#include "headcount/cli.h"

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "headcount/error.h"
#include "headcount/explain.h"
#include "headcount/report.h"

namespace headcount {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInput = 2;

struct Format_ {
  const char* name;
  Format format;
  const char* summary;
};
// One row per output format; feeds --help and validation.
const Format_ kFormats[] = {
    {"text", Format::Text, "aligned tables for a person (default)"},
    {"json", Format::Json, "one headcount/1 document per model (an array when several models are given)"},
};

void set_up_logging(std::ostream& err, int verbosity) {
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(err, true);
  auto logger = std::make_shared<spdlog::logger>("headcount", sink);
  logger->set_pattern("headcount: %l: %v");
  logger->set_level(verbosity < 0 ? spdlog::level::err
                    : verbosity == 0 ? spdlog::level::warn
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"headcount: audit the attention blocks and parameter counts of ONNX transformer models.",
               "headcount"};
  app.set_version_flag("--version", std::string("headcount ") + kVersion);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 a gate failed, 2 usage or input error.\n"
      "Run 'headcount SUBCOMMAND --help' for the options of each subcommand.");
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more log output on stderr (-vv for debug)");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");

  std::vector<std::string> models;
  std::string format_name = "text";
  int top = 10;
  auto* audit = app.add_subcommand("audit", "count the parameters of each model and of each attention block");
  audit->add_option("MODEL", models, "one or more .onnx files")->required();
  std::string format_help = "output format:";
  std::vector<std::string> format_names;
  for (const auto& f : kFormats) {
    format_help += std::string("\n  ") + f.name + ": " + f.summary;
    format_names.push_back(f.name);
  }
  audit->add_option("-f,--format", format_name, format_help)
      ->check(CLI::IsMember(format_names))
      ->capture_default_str();
  audit->add_option("--top", top, "largest tensors listed in the text report")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  // explain: the calculator, a rule's documentation, or one block of a model.
  std::string target;
  BlockSpec spec;
  int64_t width = 0, heads = 0, head_dim = 0, v_head_dim = 0, kv_heads = 0, key_channels = 0;
  bool no_bias = false;
  std::string convention_name = "pytorch";
  int block = -1;
  auto* explain = app.add_subcommand(
      "explain",
      "show how a count is derived: 'explain --width W --heads H' (calculator), 'explain RULE', "
      "or 'explain MODEL --block N'");
  explain->add_option("TARGET", target, "a rule id (see below) or an .onnx file; omit for the calculator");
  explain->add_option("--width", width, "calculator: model width d");
  explain->add_option("--heads", heads, "calculator: query heads h");
  explain->add_option("--head-dim", head_dim, "calculator: Q/K size PER HEAD (default width / heads)");
  explain->add_option("--key-channels", key_channels,
                      "calculator: Q/K size as a TOTAL over heads (MATLAB NumKeyChannels, Flax qkv_features)");
  explain->add_option("--v-head-dim", v_head_dim, "calculator: V size per head (default: the Q/K head size)");
  explain->add_option("--kv-heads", kv_heads, "calculator: key/value heads for GQA/MQA (default: heads)");
  explain->add_flag("--no-bias", no_bias, "calculator: projections without biases");
  std::vector<std::string> convention_names;
  std::string convention_help = "calculator: whose meaning of the settings to explain:";
  for (const auto& c : conventions()) {
    convention_names.push_back(c.name);
    convention_help += std::string("\n  ") + c.name + ": " + c.knob;
  }
  explain->add_option("--convention", convention_name, convention_help)
      ->check(CLI::IsMember(convention_names))
      ->capture_default_str();
  explain->add_option("--block", block, "with MODEL: the block index to derive");
  std::string rule_list = "Rules:";
  for (const auto& r : rules()) rule_list += std::string("\n  ") + r.id + " (" + severity_name(r.severity) + "): " + r.summary;
  explain->footer(rule_list);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    if (audit->parsed()) { out.flush(); }
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help on a subcommand
      out << (audit->parsed() ? audit->help() : explain->parsed() ? explain->help() : app.help());
      return kExitOk;
    }
    err << "headcount: error: " << e.what() << "\n";
    err << "Run 'headcount --help' for usage.\n";
    return kExitInput;
  }
  set_up_logging(err, quiet ? -1 : verbose);

  if (explain->parsed()) {
    try {
      if (width || heads || head_dim || key_channels || v_head_dim || kv_heads) {
        if (!target.empty()) throw InputError("give either TARGET or calculator options, not both");
        spec.width = width;
        spec.heads = heads;
        if (head_dim) spec.head_dim = head_dim;
        if (key_channels) spec.key_channels = key_channels;
        if (v_head_dim) spec.v_head_dim = v_head_dim;
        if (kv_heads) spec.kv_heads = kv_heads;
        spec.bias = !no_bias;
        out << explain_calculation(spec, find_convention(convention_name)->id);
        return kExitOk;
      }
      if (target.empty()) throw InputError("explain needs --width and --heads, a rule id, or MODEL --block N");
      if (const Rule* r = find_rule(target)) {
        out << explain_rule(*r);
        return kExitOk;
      }
      if (block < 0) {
        std::string hint;
        for (const auto& r : rules()) {
          if (std::string(r.id).find(target) != std::string::npos || target.find(r.id) != std::string::npos) hint = r.id;
        }
        throw InputError("'" + target + "' is not a rule id; for a model give --block N" +
                         (hint.empty() ? std::string() : " (did you mean the rule '" + hint + "'?)"));
      }
    } catch (const InputError& e) {
      err << "headcount: error: " << e.what() << "\n";
      return kExitInput;
    }
    try {
      Audit a = audit_file(target);
      out << explain_block(a, block);
      return kExitOk;
    } catch (const InputError& e) {
      err << "headcount: error: " << target << ": " << e.what() << "\n";
      return kExitInput;
    }
  }

  Format format = Format::Text;
  for (const auto& f : kFormats) {
    if (format_name == f.name) format = f.format;
  }
  RenderOptions render;
  render.format = format;
  render.top = top;

  int code = kExitOk;
  bool many = models.size() > 1;
  bool first = true;
  if (format == Format::Json && many) out << "[\n";
  for (const auto& path : models) {
    try {
      Audit a = audit_file(path);
      if (format == Format::Json) {
        if (!first) out << ",\n";
        render_json(a, render, out);
      } else {
        if (!first) out << "\n";
        render_text(a, render, out);
      }
      first = false;
    } catch (const InputError& e) {
      err << "headcount: error: " << path << ": " << e.what() << "\n";
      code = kExitInput;
    } catch (const std::bad_alloc&) {
      err << "headcount: error: " << path << ": out of memory while reading the model\n";
      code = kExitInput;
    }
    out.flush();
  }
  if (format == Format::Json && many) out << "]\n";
  return code;
}

}  // namespace headcount
