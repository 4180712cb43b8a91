// cli.cpp: CLI11 wiring: parse the options, call the library, write the report, return the exit code.
//
// run_cli() parses argv into AuditArgs, ExplainArgs or DiffArgs and hands them to
// audit_command(), explain_command() or diff_command(); the audit and the comparison themselves
// are the library's run_audit() and run_diff() (runner.h), which the Python module and the fuzz
// harnesses call too.
#include "headcount/cli.h"

#include <google/protobuf/stubs/common.h>
#include <onnx/common/version.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "cli_docs.h"
#include "config.h"
#include "headcount/baseline.h"
#include "headcount/cost.h"
#include "headcount/diff.h"
#include "headcount/error.h"
#include "headcount/explain.h"
#include "headcount/families.h"
#include "headcount/render.h"
#include "headcount/runner.h"
#include "suggest.h"

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

// ---- the options of each subcommand ----

struct AuditArgs {
  std::vector<std::string> models;
  std::string format = "text", output, config, model_config;
  int top = 10, jobs = 1;
  bool no_content = false, timings = false, all_blocks = false;
  std::string fail_on, baseline, tolerance = "0", kv_dtype, checkpoint, base;
  std::string context = "4096", batch = "1";
  std::string fetch_budget = "64MiB";
  long http_timeout = 15;
  // The budget gates' options as given, by BudgetGate::id: text, or a whole number (0: not given).
  std::map<std::string, std::string> budget_text;
  std::map<std::string, int64_t> budget_whole;
};

struct ExplainArgs {
  std::string target, convention = "pytorch";
  int64_t width = 0, heads = 0, head_dim = 0, v_head_dim = 0, kv_heads = 0, key_channels = 0, layers = 0;
  std::string context = "4096", kv_dtype = "float16", config, format = "text", window, sliding, model_config;
  bool no_bias = false, names = false;
  int block = -1;
  const CLI::Option* context_option = nullptr;  // given on the command line, not the default
  const CLI::Option* kv_dtype_option = nullptr;
};

void add_audit_options(CLI::App* audit, AuditArgs& a, detail::Choices& choices) {
  audit->add_option("MODEL", a.models, "one or more .onnx files, checkpoints (a .safetensors file, a sharded index or a folder holding either; a .gguf file or one part of a split one), directories searched recursively for .onnx files, or remote ones read by range requests: hf://ORG/REPO[@REVISION][/PATH] on the Hugging Face Hub, or an http(s) URL of a safetensors or GGUF file")->required();
  std::string format_help = "output format:";
  std::vector<std::string> names;
  for (const auto& f : formats()) {
    format_help += std::string("\n  ") + f.name + ": " + f.summary;
    names.push_back(f.name);
  }
  choices["audit --format"] = names;
  audit->add_option("-f,--format", a.format, format_help)->check(CLI::IsMember(names))->capture_default_str();
  audit->add_option("-o,--output", a.output, "write the report to FILE instead of stdout ('-': stdout)");
  audit->add_option("--top", a.top, "largest tensors listed in the text report (0 or more)")
      ->check(CLI::Validator([](std::string& v) { return v.find_first_not_of("0123456789") == std::string::npos && !v.empty()
                                                            ? std::string() : "--top takes 0 or more (a count of tensors)"; },
                             "N", "count"))
      ->capture_default_str();
  audit->add_flag("--all-blocks", a.all_blocks,
                  "text, markdown and html: one row per attention block, expert layer and finding (default: a run of "
                  "identical consecutive blocks is one row naming its range and count)");
  audit->add_option("-j,--jobs", a.jobs, "audit N models in parallel (output order does not depend on N)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  audit->add_flag("--no-content", a.no_content,
                  "skip the duplicate-tensor comparison and the buffer value checks (reads no weight bytes)");
  audit->add_flag("--timings", a.timings, "print the time of each stage (read, shapes, match, content, rules, render) on stderr");
  audit->add_option("--model-config", a.model_config,
                    "compare every model with this config.json or genai_config.json (default: the one beside each model)");
  auto* remote = audit->add_option_group("remote inputs", "hf:// ids and http(s) URLs, read by range requests");
  remote->add_option("--fetch-budget", a.fetch_budget,
                     "the most bytes one remote model may fetch (its headers, index and config): 64MiB, 500MB")
      ->capture_default_str();
  remote->add_option("--http-timeout", a.http_timeout,
                     "seconds to connect, and that a stalled transfer may last, before a remote model is an error")
      ->check(CLI::Range(1L, 600L))
      ->capture_default_str();
  auto* cost = audit->add_option_group("inference cost", "the K/V cache and the MACs per token (cost in the report)");
  cost->add_option("--context", a.context, "tokens in the K/V cache, and of a prompt: 4096, 32k")->capture_default_str();
  cost->add_option("--batch", a.batch, "sequences decoded together")->capture_default_str();
  std::vector<std::string> kv_names;
  for (const auto& [name, bits] : kv_dtypes()) kv_names.push_back(name);
  choices["audit --kv-dtype"] = kv_names;
  cost->add_option("--kv-dtype", a.kv_dtype, "the K/V cache's element type (default: the type the graph computes K and V in)")
      ->check(CLI::IsMember(kv_names));
  auto* gates = audit->add_option_group("gates", "fail (exit 1) when a model leaves its budget");
  for (const auto& g : budget_gates()) {
    std::string flag = std::string("--") + g.id;
    if (g.unit == BudgetUnit::Heads) {
      gates->add_option(flag, a.budget_whole[g.id], g.help)
          ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));  // 0 or -3 must not turn the gate off
    } else {
      gates->add_option(flag, a.budget_text[g.id], g.help);
    }
  }
  choices["audit --fail-on"] = {"error", "warning", "info"};
  gates->add_option("--fail-on", a.fail_on, "fail on any finding at or above: error, warning or info")
      ->check(CLI::IsMember(choices["audit --fail-on"]));
  gates->add_option("--baseline", a.baseline, "an earlier --format json or jsonl report: fail if parameters, blocks, heads or widths moved");
  gates->add_option("--checkpoint", a.checkpoint,
                    "the safetensors or GGUF checkpoint the model was exported from: fail if the export lost or "
                    "changed one of its weights (one MODEL; reads both files' weights)");
  gates->add_option("--base", a.base,
                    "the model a LoRA adapter is for (an export, a checkpoint, an hf:// id, a config.json): its share of "
                    "it, and fail "
                    "if a module it changes is not in the base with the adapter's widths");
  gates->add_option("--tolerance", a.tolerance, "parameters the baseline comparison lets pass: a count (5000, 1k) or a percentage (0.5%)")
      ->capture_default_str();
  audit->add_option("--config", a.config,
                    "read these options from a TOML file, plus [[budget]] tables per model path or glob "
                    "(default: ./headcount.toml when it exists); options given here win");
  audit->fallthrough();  // -v/-q may come after the subcommand too
}

void add_explain_options(CLI::App* explain, ExplainArgs& e, detail::Choices& choices) {
  for (const auto& r : rules()) choices["explain TARGET"].push_back(r.id);
  explain->add_option("TARGET", e.target, "a rule id (see below) or an .onnx file; omit for the calculator");
  explain->add_option("--width", e.width, "calculator: model width d");
  explain->add_option("--heads", e.heads, "calculator: query heads h");
  explain->add_option("--head-dim", e.head_dim, "calculator: Q/K size PER HEAD (default width / heads)");
  explain->add_option("--key-channels", e.key_channels,
                      "calculator: Q/K size as a TOTAL over heads (MATLAB NumKeyChannels, Flax qkv_features)");
  explain->add_option("--v-head-dim", e.v_head_dim, "calculator: V size per head (default: the Q/K head size)");
  explain->add_option("--kv-heads", e.kv_heads, "calculator: key/value heads for GQA/MQA (default: heads)");
  explain->add_flag("--no-bias", e.no_bias, "calculator: projections without biases");
  std::vector<std::string> names;
  std::string help = "calculator: whose meaning of the settings to explain:";
  for (const auto& c : conventions()) {
    names.push_back(c.name);
    help += std::string("\n  ") + c.name + ": " + c.knob;
  }
  choices["explain --convention"] = names;
  explain->add_option("--convention", e.convention, help)->check(CLI::IsMember(names))->capture_default_str();
  explain->add_option("--layers", e.layers, "calculator: L such blocks: adds the K/V cache and MACs per token")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  e.context_option = explain->add_option("--context", e.context,
                                         "with --layers or --config: tokens in the K/V cache (sliding and chunked "
                                         "layers keep at most their window)")
                         ->capture_default_str();
  explain->add_option("--window", e.window,
                      "calculator with --layers: sliding layers keep at most W tokens of K/V and score at most W per "
                      "token (every layer slides unless --sliding says which)");
  explain->add_option("--sliding", e.sliding,
                      "calculator with --window: which layers slide, A:B = A sliding layers, then B full, repeating "
                      "(5:1 is Gemma 3's pattern, 1:1 gpt-oss's)");
  std::vector<std::string> kv_names;
  for (const auto& [name, bits] : kv_dtypes()) kv_names.push_back(name);
  choices["explain --kv-dtype"] = kv_names;
  e.kv_dtype_option = explain->add_option("--kv-dtype", e.kv_dtype,
                                          "with --layers: the K/V cache's element type; with --config: instead of "
                                          "the config's torch_dtype")
                          ->check(CLI::IsMember(kv_names))
                          ->capture_default_str();
  explain->add_option("--block", e.block, "with MODEL: the block index to derive");
  explain->add_flag("--names", e.names,
                    "the tensor names headcount reads in a checkpoint: each family's module paths and the role each "
                    "gives a tensor");
  explain->add_option("--model-config", e.model_config,
                      "with MODEL: its config.json or genai_config.json (default: the one beside it); a checkpoint's "
                      "heads come from it");
  explain->add_option("--config", e.config,
                      "a Hugging Face config.json: the whole model's parameters by part, the active ones per token "
                      "(mixtures of experts), the K/V cache per token and at --context, and the recurrent state of "
                      "linear-attention and state-space layers");
  choices["explain --format"] = {"text", "json"};
  explain->add_option("-f,--format", e.format, "with --config: text or json")->check(CLI::IsMember(choices["explain --format"]))
      ->capture_default_str();
  explain->fallthrough();
  std::string rule_list = "Rules:";
  for (const auto& r : rules()) rule_list += std::string("\n  ") + r.id + " (" + severity_name(r.severity) + "): " + r.summary;
  explain->footer(rule_list);
}

// --context and --batch: a count of at least 1 (32k is 32,000).
uint64_t positive_count(const char* option, const std::string& text) {
  uint64_t n = 0;
  try {
    n = parse_count(text);
  } catch (const InputError&) {
    throw InputError(std::string(option) + ": '" + text + "' is not a count of 1 or more (examples: 4096, 32k)");
  }
  if (n == 0) throw InputError(std::string(option) + ": '" + text + "' is not a count of 1 or more (examples: 4096, 32k)");
  return n;
}

// --sliding A:B: A sliding layers, then B full ones, each a count of 0 to 2^20, not both 0.
std::pair<int64_t, int64_t> sliding_pattern(const std::string& text) {
  const std::string why = "--sliding: '" + text + "' is not A:B, two counts of layers (examples: 5:1, 1:1, 3:1)";
  size_t colon = text.find(':');
  if (colon == std::string::npos) throw InputError(why);
  auto count = [&](const std::string& part) {
    if (part.empty() || part.size() > 7 || part.find_first_not_of("0123456789") != std::string::npos) throw InputError(why);
    int64_t v = std::stoll(part);
    if (v > (int64_t{1} << 20)) throw InputError(why);
    return v;
  };
  int64_t a = count(text.substr(0, colon)), b = count(text.substr(colon + 1));
  if (a + b == 0) throw InputError(why);
  return {a, b};
}

// ---- writing the report; diff; explain ----

// The run's models (thousands of small allocations each) are not taken apart one by one when the
// process is about to end and the system frees its memory at once. The last run stays reachable
// from here, so leak checkers count it as in use; a later run (the tests call run_cli many times
// in one process) frees the one before.
void keep_until_exit(Run run) {
  static Run* kept = nullptr;
  delete kept;
  kept = new Run(std::move(run));
}

// Writes a report to --output FILE, or to `out` for "" and "-". False, with the error line,
// when the file cannot be written.
bool write_output(const std::string& path, std::ostream& out, std::ostream& err,
                  const std::function<void(std::ostream&)>& write) {
  if (path.empty() || path == "-") {
    write(out);
    out.flush();
    return true;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    err << "headcount: error: cannot write '" << one_line(path) << "'\n";
    return false;
  }
  write(file);
  file.flush();
  if (!file) {
    err << "headcount: error: writing '" << one_line(path) << "' failed\n";
    return false;
  }
  return true;
}

struct DiffArgs {
  std::string a, b, format = "text", output;
  bool fail_on_change = false, no_content = false;
};

void add_diff_options(CLI::App* diff, DiffArgs& d, detail::Choices& choices) {
  diff->add_option("A", d.a, "the model before (an .onnx file or a checkpoint)")->required();
  diff->add_option("B", d.b, "the model after: an .onnx file, a --format json/jsonl report of one model, or the "
                             "checkpoint (safetensors, GGUF) the ONNX model A was exported from: then every checkpoint "
                             "tensor is looked for in the export")->required();
  choices["diff --format"] = diff_formats();
  diff->add_option("-f,--format", d.format, "output format: text, json, markdown or html")
      ->check(CLI::IsMember(diff_formats()))
      ->capture_default_str();
  diff->add_option("-o,--output", d.output, "write the comparison to FILE instead of stdout ('-': stdout)");
  diff->add_flag("--fail-on-change", d.fail_on_change,
                 "exit 1 when a parameter count or the number of blocks differs; against a checkpoint, when the "
                 "export lost or changed one of its weights");
  diff->add_flag("--no-content", d.no_content,
                 "skip the duplicate-tensor comparison (reads no weight bytes; not with a checkpoint, whose comparison "
                 "reads them)");
  diff->fallthrough();
}

int diff_command(const DiffArgs& d, std::ostream& out, std::ostream& err) {
  DiffRequest request;
  request.a = d.a;
  request.b = d.b;
  request.compare_content = !d.no_content;
  DiffRun run = run_diff(request);
  if (!run.diff) {
    err << "headcount: error: " << one_line(run.error) << "\n";
    return kExitInput;
  }
  if (!write_output(d.output, out, err, [&](std::ostream& to) { render_diff(*run.diff, d.format, to); })) return kExitInput;
  return d.fail_on_change && run.failed() ? kExitGate : kExitOk;
}

int explain_command(const ExplainArgs& e, std::ostream& out, std::ostream& err) {
  try {
    if (!e.config.empty()) {
      if (!e.target.empty() || e.width || e.heads || e.layers || !e.window.empty() || !e.sliding.empty()) {
        throw InputError("give --config alone, without TARGET or calculator options");
      }
      ConfigExplainOptions o;
      if (e.context_option && e.context_option->count()) o.context = positive_count("--context", e.context);
      if (e.kv_dtype_option && e.kv_dtype_option->count()) o.kv_dtype = e.kv_dtype;
      out << (e.format == "json" ? explain_config_json(e.config, o) : explain_config(e.config, o));
      return kExitOk;
    }
    if (e.names) {
      if (!e.target.empty() || e.width || e.heads || e.layers || e.block >= 0) throw InputError("give --names alone");
      out << explain_names();
      return kExitOk;
    }
    if (e.format != "text") throw InputError("--format json is for --config");
    if (!e.model_config.empty() && e.block < 0) throw InputError("--model-config goes with MODEL --block N");
    if (!e.sliding.empty() && e.window.empty()) throw InputError("--sliding needs --window: the tokens a sliding layer keeps");
    if (!e.window.empty() && !e.layers) throw InputError("--window needs --layers: the calculator's cost of L such blocks");
    if (e.width || e.heads || e.head_dim || e.key_channels || e.v_head_dim || e.kv_heads || e.layers) {
      if (!e.target.empty()) throw InputError("give either TARGET or calculator options, not both");
      BlockSpec spec;
      spec.width = e.width;
      spec.heads = e.heads;
      if (e.head_dim) spec.head_dim = e.head_dim;
      if (e.key_channels) spec.key_channels = e.key_channels;
      if (e.v_head_dim) spec.v_head_dim = e.v_head_dim;
      if (e.kv_heads) spec.kv_heads = e.kv_heads;
      spec.bias = !e.no_bias;
      std::string text = explain_calculation(spec, find_convention(e.convention)->id);
      if (e.layers > 0) {
        CostSpec cs;
        cs.layers = e.layers;
        cs.context = positive_count("--context", e.context);
        cs.kv_bits = kv_dtype_bits(e.kv_dtype);
        cs.kv_dtype = e.kv_dtype;
        if (!e.window.empty()) cs.window = positive_count("--window", e.window);
        if (!e.sliding.empty()) {
          std::tie(cs.sliding, cs.full) = sliding_pattern(e.sliding);
        }
        text += explain_cost(spec, cs);
      }
      out << text;
      return kExitOk;
    }
    if (e.target.empty()) throw InputError("explain needs --width and --heads, a rule id, or MODEL --block N");
    if (const Rule* r = find_rule(e.target)) {
      out << explain_rule(*r);
      return kExitOk;
    }
    if (e.block < 0) {
      std::vector<std::string> ids;
      for (const auto& r : rules()) ids.push_back(r.id);
      std::string hint = did_you_mean(e.target, ids);
      throw InputError("'" + e.target + "' is not a rule id; for a model give --block N" +
                       (hint.empty() ? std::string() : " (did you mean " + hint + "?)"));
    }
  } catch (const InputError& ex) {
    err << "headcount: error: " << one_line(ex.what()) << "\n";
    return kExitInput;
  }
  try {
    AuditOptions options;
    options.model_config = e.model_config;
    Audit a = audit_file(e.target, options);
    out << explain_block(a, e.block);
    return kExitOk;
  } catch (const InputError& ex) {
    err << "headcount: error: " << one_line(e.target + ": " + ex.what()) << "\n";
    return kExitInput;
  }
}

// ---- audit ----

// The audit options a config file may set: every option of the subcommand by its long name, but
// the models and the config itself.
// Option groups (the gates) hold their own options, so they are searched too.
void collect_config_keys(const CLI::App* app, std::vector<std::string>& keys) {
  for (const CLI::Option* op : app->get_options()) {
    for (const auto& name : op->get_lnames()) {
      if (name != "help" && name != "config") keys.push_back(name);
    }
  }
  for (const CLI::App* group : app->get_subcommands([](const CLI::App* s) { return s->get_name().empty(); })) {
    collect_config_keys(group, keys);
  }
}

std::vector<std::string> config_keys(CLI::App* audit) {
  std::vector<std::string> keys;
  collect_config_keys(audit, keys);
  return keys;
}

// Fills the options the command line did not give from the config's top-level keys.
void apply_config(CLI::App* audit, const ConfigFile& config) {
  for (const auto& o : config.options) {
    CLI::Option* op = audit->get_option_no_throw("--" + o.key);
    if (!op || op->count() > 0) continue;  // the command line wins
    try {
      op->add_result(o.value);
      op->run_callback();  // validates and stores the value
    } catch (const CLI::ParseError& e) {
      throw InputError(config.path + ":" + std::to_string(o.line) + ": " + o.key + ": " + e.what());
    }
  }
}

// The gate values as text -> a budget (only the ones given).
Budget budget_of(const AuditArgs& a) {
  Budget b;
  for (const auto& g : budget_gates()) {
    if (g.unit == BudgetUnit::Heads) {
      if (int64_t n = a.budget_whole.at(g.id); n > 0) b.limits[g.id] = static_cast<uint64_t>(n);
    } else if (const std::string& text = a.budget_text.at(g.id); !text.empty()) {
      b.limits[g.id] = parse_limit(g, text);
    }
  }
  return b;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// --timings: one line per model with its stages, then the render and the whole run's totals.
void report_timings(const Run& run, double render_ms, std::ostream& err) {
  auto ms = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
    return std::string(buf);
  };
  StageTimes sum;
  for (const auto& r : run.files) {
    const StageTimes& t = r.times;
    err << "headcount: timings: " << one_line(r.path) << ": read " << ms(t.read) << ", shapes " << ms(t.shapes)
        << ", match " << ms(t.match) << ", content " << ms(t.content) << ", rules " << ms(t.rules) << "\n";
    sum.read += t.read;
    sum.shapes += t.shapes;
    sum.match += t.match;
    sum.content += t.content;
    sum.rules += t.rules;
  }
  err << "headcount: timings: all models: read " << ms(sum.read) << ", shapes " << ms(sum.shapes) << ", match "
      << ms(sum.match) << ", content " << ms(sum.content) << ", rules " << ms(sum.rules) << "; render " << ms(render_ms)
      << "\n";
}

int audit_command(CLI::App* audit, AuditArgs& a, bool show_progress, std::ostream& out, std::ostream& err) {
  AuditRequest request;
  Baseline baseline;
  CostOptions cost_options;
  try {
    request.gates.pinned = budget_of(a);  // what the command line gave, before the config fills the rest
    if (!a.config.empty()) request.config = a.config;
    else if (std::filesystem::exists(kDefaultConfig)) request.config = kDefaultConfig;
    if (!request.config.empty()) {
      ConfigFile config = read_config(request.config, config_keys(audit));
      apply_config(audit, config);
      request.budgets = std::move(config.budgets);
    }
    request.gates.budget = budget_of(a);
    if (!a.fail_on.empty()) request.gates.fail_on = parse_severity(a.fail_on);
    parse_tolerance(a.tolerance, &request.gates.tolerance, &request.gates.tolerance_ppb);
    if (!a.model_config.empty()) read_model_config(a.model_config);  // a config given by hand must be readable
    if (!a.checkpoint.empty()) {
      if (a.no_content) throw InputError("--checkpoint compares weight values, which --no-content does not read");
      if (a.models.size() != 1 || std::filesystem::is_directory(a.models[0])) {
        throw InputError("--checkpoint compares one exported model with its checkpoint: give one MODEL file");
      }
    }
    request.audit.remote.fetch_budget = parse_bytes(a.fetch_budget);
    cost_options.context = positive_count("--context", a.context);
    cost_options.batch = positive_count("--batch", a.batch);
    if (!a.kv_dtype.empty()) {
      cost_options.kv_bits = kv_dtype_bits(a.kv_dtype);
      cost_options.kv_dtype = a.kv_dtype;
    }
    if (!a.baseline.empty()) {
      baseline = read_baseline(a.baseline);
      request.gates.baseline = &baseline;
    }
  } catch (const InputError& e) {
    err << "headcount: error: " << one_line(e.what()) << "\n";
    return kExitInput;
  }
  RenderOptions render_options;
  render_options.format = find_format(a.format)->format;  // validated by CLI11 against formats()
  render_options.top = a.top;
  render_options.jobs = a.jobs;
  render_options.all_blocks = a.all_blocks;
  request.inputs = a.models;
  request.audit.compare_content = !a.no_content;
  request.audit.model_config = a.model_config;
  request.audit.checkpoint = a.checkpoint;
  request.audit.base = a.base;
  request.audit.cost = cost_options;
  request.audit.remote.timeout_s = a.http_timeout;
  request.jobs = a.jobs;
  if (show_progress) request.progress = &err;
  Run run = run_audit(request);
  report_problems(run, err);
  int code = exit_code(run);

  auto render_start = std::chrono::steady_clock::now();
  if (!write_output(a.output, out, err, [&](std::ostream& to) { render(run, render_options, to); })) return kExitInput;
  if (a.timings) report_timings(run, ms_since(render_start), err);
  // In GitHub Actions, the github format also puts the whole table in the job's summary.
  const char* summary = std::getenv("GITHUB_STEP_SUMMARY");
  if (render_options.format == Format::Github && summary && *summary) {
    std::ofstream file(summary, std::ios::binary | std::ios::app);
    RenderOptions md = render_options;
    md.format = Format::Markdown;
    render(run, md, file);
    if (!file) err << "headcount: warning: cannot write the job summary '" << one_line(summary) << "'\n";
  }
  keep_until_exit(std::move(run));
  return code;
}

// "adit" -> "did you mean 'audit'?": a word where the subcommand belongs.
std::string subcommand_hint(int argc, const char* const* argv, const CLI::App& app) {
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word.empty() || word[0] == '-') continue;
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) != names.end()) return "";
    std::string hint = did_you_mean(word, names);
    return "'" + word + "' is not a subcommand" + (hint.empty() ? std::string(" (audit or explain)") : " (did you mean " + hint + "?)");
  }
  return "";
}

}  // namespace

// "headcount 0.2.0 (git abc1234)" and the ONNX and protobuf versions it was built with.
static std::string version_text() {
  int pb = GOOGLE_PROTOBUF_VERSION;
  return std::string("headcount ") + kVersion + " (git " + HEADCOUNT_GIT_REVISION + ")\nONNX " +
         onnx::LAST_RELEASE_VERSION + ", protobuf " + std::to_string(pb / 1000000) + "." +
         std::to_string(pb / 1000 % 1000) + "." + std::to_string(pb % 1000);
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  LoggerGuard logger_guard;
  CLI::App app{"headcount: audit the attention blocks and parameter counts of ONNX transformer models.",
               "headcount"};
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 ok, 1 a gate failed, 2 usage or input error (2 wins over 1).\n"
      "Run 'headcount SUBCOMMAND --help' for the options of each subcommand.");
  int verbose = 0;
  bool quiet = false;
  auto* verbose_flag = app.add_flag("-v,--verbose", verbose, "more log output on stderr (-vv for debug)");
  auto* quiet_flag = app.add_flag("-q,--quiet", quiet, "only errors on stderr");
  verbose_flag->excludes(quiet_flag);
  AuditArgs audit_args;
  ExplainArgs explain_args;
  detail::Choices choices;
  auto* audit = app.add_subcommand("audit", "count the parameters of each model and of each attention block");
  add_audit_options(audit, audit_args, choices);
  auto* explain = app.add_subcommand(
      "explain",
      "show how a count is derived: 'explain --width W --heads H' (calculator), 'explain RULE', "
      "or 'explain MODEL --block N'");
  add_explain_options(explain, explain_args, choices);
  DiffArgs diff_args;
  auto* diff = app.add_subcommand("diff", "compare two models block by block: heads, sizes, counts and findings, and the "
                                          "outcome in one sentence");
  add_diff_options(diff, diff_args, choices);
  std::string shell;
  auto* completion = app.add_subcommand("completion", "print a shell completion script: bash or zsh");
  choices["completion SHELL"] = {"bash", "zsh"};
  completion->add_option("SHELL", shell, "bash or zsh")->required()->check(CLI::IsMember(choices["completion SHELL"]));
  auto* man = app.add_subcommand("man", "print the man page (roff)");
  man->group("");  // hidden: the build writes headcount.1 with it

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
      out << (audit->parsed() ? audit->help() : explain->parsed() ? explain->help() : diff->parsed() ? diff->help()
              : completion->parsed() ? completion->help() : app.help());
      return kExitOk;
    }
    std::string hint = audit->parsed() || explain->parsed() || diff->parsed() || completion->parsed() ? "" : subcommand_hint(argc, argv, app);
    err << "headcount: error: " << one_line(hint.empty() ? e.what() : hint) << "\n";
    err << "Run 'headcount --help' for usage.\n";
    return kExitInput;
  }
  set_up_logging(err, quiet ? -1 : verbose);
  if (explain->parsed()) return explain_command(explain_args, out, err);
  if (diff->parsed()) return diff_command(diff_args, out, err);
  if (completion->parsed()) {
    out << (shell == "bash" ? detail::bash_completion(app, choices) : detail::zsh_completion(app, choices));
    return kExitOk;
  }
  if (man->parsed()) {
    out << detail::man_page(app, choices, kVersion);
    return kExitOk;
  }
  // Progress on a terminal only, and not mixed with log lines.
  bool progress = !quiet && verbose == 0 && &err == &std::cerr && isatty(STDERR_FILENO);
  return audit_command(audit, audit_args, progress, out, err);
}

}  // namespace headcount
