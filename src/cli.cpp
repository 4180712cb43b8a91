// cli.cpp: CLI11 wiring. The only place that knows about exit codes.
#include "headcount/cli.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "headcount/error.h"
#include "headcount/explain.h"
#include "headcount/families.h"
#include "headcount/render.h"
#include "headcount/gate.h"
#include "headcount/report.h"

namespace headcount {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitGate = 1;
constexpr int kExitInput = 2;
constexpr const char* kDefaultConfig = "headcount.toml";

// Restores the previous default logger when run_cli returns: the logger it installs writes to the
// caller's `err` stream, which may not outlive the call (tests pass string streams).
struct LoggerGuard {
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  ~LoggerGuard() { spdlog::set_default_logger(previous); }
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

// Error and gate lines are one line each, whatever names a hostile file carries.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out;
}

// Edit distance between two words, hyphens ignored: "widthmismatch" is one step from nothing.
size_t edit_distance(std::string a, std::string b) {
  a.erase(std::remove(a.begin(), a.end(), '-'), a.end());
  b.erase(std::remove(b.begin(), b.end(), '-'), b.end());
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "did you mean" for a mistyped rule id: close spellings, else rules that contain the word.
std::string suggest_rules(const std::string& word) {
  std::vector<std::string> close, containing;
  for (const auto& r : rules()) {
    if (edit_distance(word, r.id) <= std::max<size_t>(2, word.size() / 5)) close.push_back(r.id);
    else if (word.size() >= 3 && std::string(r.id).find(word) != std::string::npos) containing.push_back(r.id);
  }
  const auto& pick = close.empty() ? containing : close;
  std::string out;
  for (size_t i = 0; i < pick.size() && i < 3; ++i) {
    if (i) out += i + 1 == std::min<size_t>(pick.size(), 3) ? " or " : ", ";
    out += "'" + pick[i] + "'";
  }
  return out;
}

// Files as given; directories searched recursively for .onnx files, in sorted order. A directory
// without any stays in the list, so the loader reports it as the error it is.
std::vector<std::string> expand_inputs(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const auto& a : args) {
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      std::vector<std::string> found;
      auto it = std::filesystem::recursive_directory_iterator(
          a, std::filesystem::directory_options::skip_permission_denied, ec);
      for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && it->path().extension() == ".onnx") found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) found.push_back(a);
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(a);
    }
  }
  return files;
}

std::vector<PathBudget> read_budgets(const std::string& path) {
  std::vector<PathBudget> out;
  CLI::ConfigTOML toml;
  std::vector<CLI::ConfigItem> items = toml.from_file(path);
  PathBudget* current = nullptr;
  for (const auto& item : items) {
    if (item.parents.empty() || item.parents[0] != "budget") continue;
    if (item.name == "++") {
      out.emplace_back();
      current = &out.back();
      continue;
    }
    if (item.name == "--" || !current || item.inputs.empty()) continue;
    const std::string& v = item.inputs[0];
    if (item.name == "path") current->pattern = v;
    else if (item.name == "max-params") current->budget.max_params = parse_count(v);
    else if (item.name == "max-attention-params") current->budget.max_attention_params = parse_count(v);
    else if (item.name == "max-bytes") current->budget.max_bytes = parse_bytes(v);
    else if (item.name == "expect-heads") current->budget.expect_heads = static_cast<int64_t>(parse_count(v));
    else throw InputError(path + ": unknown key '" + item.name + "' in a [[budget]] table");
  }
  for (const auto& b : out) {
    if (b.pattern.empty()) throw InputError(path + ": a [[budget]] table has no path");
  }
  return out;
}

// CLI11 (2.1) reads the config file of the main app only, never a subcommand's, so the top-level
// keys of headcount.toml ("max-params = ...") are applied here: each to the audit option of that
// name, unless the command line gave it. Unknown keys are ignored, as allow_config_extras says.
void apply_config(CLI::App* audit, const std::string& path) {
  CLI::ConfigTOML toml;
  for (const auto& item : toml.from_file(path)) {
    if (!item.parents.empty() || item.name == "++" || item.name == "--") continue;
    CLI::Option* op = audit->get_option_no_throw("--" + item.name);
    if (!op || !op->get_configurable() || op->count() > 0) continue;
    if (op->get_expected_min() == 0) op->add_result(op->get_flag_value(item.name, toml.to_flag(item)));
    else op->add_result(item.inputs);
    op->run_callback();  // validates and stores the value
  }
}

}  // namespace

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  LoggerGuard logger_guard;
  CLI::App app{"headcount: audit the attention blocks and parameter counts of ONNX transformer models.",
               "headcount"};
  app.set_version_flag("--version", std::string("headcount ") + kVersion);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 a gate failed, 2 usage or input error (2 wins over 1).\n"
      "Run 'headcount SUBCOMMAND --help' for the options of each subcommand.");
  int verbose = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbose, "more log output on stderr (-vv for debug)");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");

  // ---- audit ----
  std::vector<std::string> models;
  std::string format_name = "text", output_path;
  int top = 10, jobs = 1;
  bool no_content = false;
  std::string max_params, max_attention_params, max_bytes, fail_on, baseline_path, tolerance = "0";
  int64_t expect_heads = 0;
  auto* audit = app.add_subcommand("audit", "count the parameters of each model and of each attention block");
  audit->add_option("MODEL", models, "one or more .onnx files or directories (searched recursively)")->required();
  std::string format_help = "output format:";
  std::vector<std::string> format_names;
  for (const auto& f : formats()) {
    format_help += std::string("\n  ") + f.name + ": " + f.summary;
    format_names.push_back(f.name);
  }
  audit->add_option("-f,--format", format_name, format_help)->check(CLI::IsMember(format_names))->capture_default_str();
  audit->add_option("-o,--output", output_path, "write the report to FILE instead of stdout");
  audit->add_option("--top", top, "largest tensors listed in the text report")->check(CLI::NonNegativeNumber)->capture_default_str();
  audit->add_option("-j,--jobs", jobs, "audit N models in parallel (output order does not depend on N)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  audit->add_flag("--no-content", no_content, "skip the duplicate-tensor content comparison (reads no weight bytes)");
  std::string model_config;
  audit->add_option("--model-config", model_config,
                    "compare every model with this config.json or genai_config.json (default: the one beside each model)");
  auto* gates = audit->add_option_group("gates", "fail (exit 1) when a model leaves its budget");
  gates->add_option("--max-params", max_params, "most parameters, as the framework counts them (parameters.framework): 350k, 110M, 1.5B");
  gates->add_option("--max-attention-params", max_attention_params, "most Q/K/V/O parameters (parameters.attention)");
  gates->add_option("--max-bytes", max_bytes, "most parameter bytes (parameters.bytes): 500MB, 2GiB");
  gates->add_option("--expect-heads", expect_heads, "every attention block must have N query heads")
      ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));  // 0 or -3 must not turn the gate off
  gates->add_option("--fail-on", fail_on, "fail on any finding at or above: error, warning or info")
      ->check(CLI::IsMember({"error", "warning", "info"}));
  gates->add_option("--baseline", baseline_path, "an earlier --format json report: fail if parameters, blocks, heads or widths moved");
  gates->add_option("--tolerance", tolerance, "parameters the baseline comparison lets pass: a count (5000, 1k) or a percentage (0.5%)")
      ->capture_default_str();
  audit->set_config("--config", kDefaultConfig,
                    "read these options from a TOML file, plus [[budget]] tables per model path or glob "
                    "(default: ./headcount.toml when it exists)");
  audit->allow_config_extras(CLI::config_extras_mode::ignore);
  audit->fallthrough();  // -v/-q may come after the subcommand too

  // ---- explain ----
  std::string target;
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
  explain->fallthrough();
  std::string rule_list = "Rules:";
  for (const auto& r : rules()) rule_list += std::string("\n  ") + r.id + " (" + severity_name(r.severity) + "): " + r.summary;
  explain->footer(rule_list);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help on a subcommand
      out << (audit->parsed() ? audit->help() : explain->parsed() ? explain->help() : app.help());
      return kExitOk;
    }
    err << "headcount: error: " << one_line(e.what()) << "\n";
    err << "Run 'headcount --help' for usage.\n";
    return kExitInput;
  }
  set_up_logging(err, quiet ? -1 : verbose);

  if (explain->parsed()) {
    try {
      if (width || heads || head_dim || key_channels || v_head_dim || kv_heads) {
        if (!target.empty()) throw InputError("give either TARGET or calculator options, not both");
        BlockSpec spec;
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
        std::string hint = suggest_rules(target);
        throw InputError("'" + target + "' is not a rule id; for a model give --block N" +
                         (hint.empty() ? std::string() : " (did you mean " + hint + "?)"));
      }
    } catch (const InputError& e) {
      err << "headcount: error: " << one_line(e.what()) << "\n";
      return kExitInput;
    }
    try {
      Audit a = audit_file(target);
      out << explain_block(a, block);
      return kExitOk;
    } catch (const InputError& e) {
      err << "headcount: error: " << one_line(target + ": " + e.what()) << "\n";
      return kExitInput;
    }
  }

  // ---- audit: options, gates, config ----
  Run run;
  GateOptions gate_options;
  std::vector<BaselineModel> baseline;
  std::vector<PathBudget> budgets;
  try {
    auto* config = audit->get_config_ptr();
    if (config && config->count() > 0) run.config = config->as<std::string>();
    else if (std::filesystem::exists(kDefaultConfig)) run.config = kDefaultConfig;
    if (!run.config.empty()) {
      apply_config(audit, run.config);
      budgets = read_budgets(run.config);
    }
    Budget& b = gate_options.budget;
    if (!max_params.empty()) b.max_params = parse_count(max_params);
    if (!max_attention_params.empty()) b.max_attention_params = parse_count(max_attention_params);
    if (!max_bytes.empty()) b.max_bytes = parse_bytes(max_bytes);
    if (expect_heads > 0) b.expect_heads = expect_heads;
    if (!fail_on.empty()) gate_options.fail_on = parse_severity(fail_on);
    parse_tolerance(tolerance, &gate_options.tolerance, &gate_options.tolerance_fraction);
    if (!model_config.empty()) read_model_config(model_config);  // a config given by hand must be readable
    if (!baseline_path.empty()) {
      baseline = read_baseline(baseline_path);
      gate_options.baseline = &baseline;
    }
  } catch (const InputError& e) {
    err << "headcount: error: " << one_line(e.what()) << "\n";
    return kExitInput;
  } catch (const CLI::Error& e) {
    err << "headcount: error: " << one_line(run.config + ": " + e.what()) << "\n";
    return kExitInput;
  }
  RenderOptions render_options;
  render_options.format = find_format(format_name)->format;  // validated by CLI11 against formats()
  render_options.top = top;
  AuditRequest request;
  request.inputs = models;
  request.audit.compare_content = !no_content;
  request.audit.model_config = model_config;
  request.gates = gate_options;
  request.budgets = std::move(budgets);
  request.config = run.config;
  request.jobs = jobs;
  if (!quiet && isatty(STDERR_FILENO) && &err == &std::cerr) request.progress = &err;
  run = run_audit(request);
  report_problems(run, err);
  int code = exit_code(run);

  if (!output_path.empty()) {
    std::ofstream file(output_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      err << "headcount: error: cannot write '" << output_path << "'\n";
      return kExitInput;
    }
    render(run, render_options, file);
    file.flush();
    if (!file) {
      err << "headcount: error: writing '" << output_path << "' failed\n";
      return kExitInput;
    }
  } else {
    render(run, render_options, out);
    out.flush();
  }
  return code;
}

Run run_audit(const AuditRequest& request) {
  Run run;
  run.config = request.config;
  const GateOptions& gates = request.gates;
  run.gates_configured = !request.budgets.empty() || gates.budget.max_params || gates.budget.max_attention_params ||
                         gates.budget.max_bytes || gates.budget.expect_heads || gates.fail_on || gates.baseline;
  std::vector<std::string> files = expand_inputs(request.inputs);
  run.files.resize(files.size());
  std::atomic<size_t> next{0}, done{0};
  bool progress = request.progress && files.size() > 1;
  std::mutex progress_lock;
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      FileResult& r = run.files[i];
      r.path = files[i];
      try {
        r.audit = audit_file(files[i], request.audit);
        GateOptions o = gates;
        o.budget = budget_for(files[i], gates.budget, request.budgets);
        r.gates = check_gates(*r.audit, o);
      } catch (const InputError& e) {
        r.audit.reset();
        r.error = e.what();
      } catch (const std::bad_alloc&) {
        r.audit.reset();
        r.error = "out of memory while reading the model";
      } catch (const std::exception& e) {  // a bug, not the file's fault: still one line, exit 2
        r.audit.reset();
        r.error = std::string("internal error while auditing (please report it): ") + e.what();
      }
      size_t n = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_lock);
        *request.progress << "\rheadcount: audited " << n << "/" << files.size() << std::flush;
      }
    }
  };
  std::vector<std::thread> pool;
  int threads = std::min<int>(request.jobs, static_cast<int>(std::max<size_t>(files.size(), 1)));
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (progress) *request.progress << "\r\033[K" << std::flush;
  return run;
}

void report_problems(const Run& run, std::ostream& err) {
  for (const auto& r : run.files) {
    if (!r.audit) err << "headcount: error: " << one_line(r.path + ": " + r.error) << "\n";
  }
  for (const auto& r : run.files) {
    for (const auto& g : r.gates) {
      err << "headcount: gate failed: " << one_line(r.path + ": " + g.gate + ": " + g.message) << "\n";
    }
  }
}

int exit_code(const Run& run) {
  int code = kExitOk;
  for (const auto& r : run.files) {
    if (!r.audit) return kExitInput;
    if (!r.gates.empty()) code = kExitGate;
  }
  return code;
}

}  // namespace headcount
