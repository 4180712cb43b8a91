// cli.cpp: CLI11 wiring. The only place that knows about exit codes.
#include "headcount/cli.h"

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "headcount/error.h"
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
      out << (audit->parsed() ? audit->help() : app.help());
      return kExitOk;
    }
    err << "headcount: error: " << e.what() << "\n";
    err << "Run 'headcount --help' for usage.\n";
    return kExitInput;
  }
  set_up_logging(err, quiet ? -1 : verbose);

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
