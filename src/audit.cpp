// audit.cpp: the audit pipeline for one file: load -> inventory -> match -> rules. Each stage reads
// what it needs of the audit state (headcount/results/audit.h) and writes its own member; this file
// runs them in order, and is the only one that includes every stage's header.
#include "headcount/audit.h"

#include <chrono>

#include "checkpoint/formats.h"
#include "checkpoint/model.h"
#include "headcount/error.h"
#include "headcount/adapter.h"
#include "headcount/attention.h"
#include "headcount/buffers.h"
#include "headcount/declared.h"
#include "headcount/duplicates.h"
#include "headcount/experts.h"
#include "headcount/fidelity.h"
#include "headcount/findings.h"
#include "headcount/inventory.h"
#include "headcount/mixers.h"
#include "headcount/parts.h"
#include "paths.h"
#include "payload.h"
#include "remote.h"
#include "stages.h"

namespace headcount {

namespace {

double ms_since(std::chrono::steady_clock::time_point& t) {
  auto now = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(now - t).count();
  t = now;
  return ms;
}

// The model's config, read once for both its readers (a checkpoint's heads, what the config
// declares): --model-config, whose error stops the audit, or the config.json / genai_config.json
// beside the model, whose error is reported and ignored.
struct ConfigRead {
  std::optional<ModelConfig> config;
  std::string error;  // why the config beside the model was not read
  std::string adapter_text, adapter_name;  // an adapter's adapter_config.json beside the model
};

constexpr uint64_t kMostAdapterConfig = uint64_t{16} << 20;  // as a config.json

// The adapter_config.json beside a local checkpoint, read whole when it is at most 16 MiB; a file
// that cannot be read is an adapter without a config, and the adapter's notes say so.
void read_adapter_config(const std::string& path, ConfigRead& r) {
  const std::string beside = find_adapter_config(path);
  if (beside.empty()) return;
  r.adapter_name = beside;
  try {
    RegularFile f(beside);
    if (f.size() > kMostAdapterConfig) throw InputError("is larger than 16 MiB");
    r.adapter_text = f.read_all();
  } catch (const InputError& e) {
    r.adapter_text = "\"" + std::string(e.what()) + "\"";  // not an object: the adapter's notes say it was not read
  }
}

ConfigRead read_config_once(const AuditOptions& options, const std::string& path) {
  ConfigRead r;
  if (!options.model_config.empty()) {
    r.config = read_model_config(options.model_config);  // asked for: an error stops the audit
    return r;
  }
  const std::string beside = options.find_model_config && !path.empty() ? find_model_config(path) : "";
  if (beside.empty()) return r;
  try {
    r.config = read_model_config(beside);
  } catch (const InputError& e) {
    r.error = e.what();  // a config.json that describes something else is not the model's fault
  }
  return r;
}

// A checkpoint's heads: GGUF's <arch>.attention.* metadata, else the config (--model-config, or a
// config.json beside the checkpoint or in its folder).
NamedHeads checkpoint_heads(const Model& m, const ConfigRead& config) {
  NamedHeads h;
  const Checkpoint& c = *m.checkpoint;
  if (c.kind == FormatKind::Gguf) {
    auto arch = c.metadata.find("general.architecture");
    if (arch != c.metadata.end() && arch->second.type == CheckpointValue::Type::String) {
      auto number = [&](const std::string& key) -> std::optional<int64_t> {
        auto it = c.metadata.find(arch->second.s + "." + key);
        if (it == c.metadata.end()) return std::nullopt;
        const CheckpointValue& v = it->second;
        if (v.type == CheckpointValue::Type::Unsigned && v.u > 0 && v.u < (uint64_t{1} << 31)) return static_cast<int64_t>(v.u);
        if (v.type == CheckpointValue::Type::Signed && v.i > 0 && v.i < (int64_t{1} << 31)) return v.i;
        return std::nullopt;
      };
      h.experts = number("expert_count");
      h.experts_per_token = number("expert_used_count");
      h.experts_from = "GGUF metadata " + arch->second.s + ".expert_count and expert_used_count";
      h.heads = number("attention.head_count");
      h.kv_heads = number("attention.head_count_kv");
      h.head_dim = number("attention.key_length");
      h.v_head_dim = number("attention.value_length");
      auto width = number("embedding_length");
      if (h.heads && !h.head_dim && width && *width % *h.heads == 0) h.head_dim = *width / *h.heads;
      if (h.heads) {
        h.from = "GGUF metadata " + arch->second.s + ".attention.head_count";
        return h;
      }
    }
  }
  if (!config.error.empty()) {
    h.from = h.experts_from = "unknown: " + config.error;
    return h;
  }
  if (!config.config) {
    h.from = h.experts_from = "unknown: no config.json beside the checkpoint (--model-config names one)";
    return h;
  }
  {
    const ModelConfig& mc = *config.config;
    // A config's numbers are as hostile as a file's: only a positive count below 2^31 is a count.
    auto count = [](Int v) { return v.positive() && *v < (int64_t{1} << 31) ? v.opt() : std::nullopt; };
    h.heads = count(mc.heads);
    h.kv_heads = mc.kv_heads ? count(mc.kv_heads) : h.heads;
    h.head_dim = count(mc.head_dim);
    h.v_head_dim = count(mc.v_head_dim);
    h.experts = count(mc.experts);
    h.experts_per_token = count(mc.experts_per_token);
    h.experts_from = "the config's " + (mc.key_of.count("experts_per_token") ? mc.key_of.at("experts_per_token") : std::string("experts per token"));
    if (mc.q_lora_rank.known() || mc.kv_lora_rank.known()) h.head_dim = h.v_head_dim = std::nullopt;  // latent: per role
    h.from = h.heads ? "the config's " + (mc.key_of.count("heads") ? mc.key_of.at("heads") : std::string("heads"))
                     : "unknown: the config states no positive head count";
  }
  return h;
}

// Everything after loading: inventory -> match -> content -> rules. `path` is where a config.json
// beside the model is looked for ("" for none).
Audit audit_loaded(Model model, const ConfigRead& config, const AuditOptions& options, StageTimes& t,
                   std::chrono::steady_clock::time_point clock) {
  PayloadScope payload_files;  // the stages' reads of values open the model's files once
  Audit a{std::move(model), {}, {}, {}, 0, false, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  a.inventory = take_inventory(a.model);
  t.read = ms_since(clock);
  // A checkpoint has no graph: its parts come from its tensors' names and its heads from its
  // metadata or config (checkpoint/model.h); the stages after this read it as any model.
  std::vector<NamedTensor> names;
  std::vector<Part> named;
  detail::SharedShapes shapes(a.model);  // one oracle for every stage that reads shapes
  if (a.model.checkpoint) {
    names = name_roles(a.model);
    named = named_parts(a.model, names);
    NamedHeads heads = checkpoint_heads(a.model, config);
    a.attention = named_attention(a.model, names, heads);
    a.experts = named_experts(a.model, names, heads);
    a.adapter = read_adapter(a.model, config.adapter_text, config.adapter_name);
    if (a.adapter) {
      for (int wi : a.adapter->factors) named[static_cast<size_t>(wi)] = Part::Adapter;
    }
  } else {
    a.attention = detail::match_attention(shapes, &t.shapes);
    a.experts = detail::match_experts(shapes, a.attention);
  }
  // The mixers come after the content stage; when the graph cannot hold one, nothing reads the
  // oracle again, and its memory is not kept through the content comparison.
  if (!detail::may_hold_mixers(a.model)) shapes.release();
  t.match = ms_since(clock) - t.shapes;
  if (options.compare_content) a.duplicates = find_duplicates(a.model);
  a.content_compared = options.compare_content;
  a.unique = a.inventory.stored;
  for (const auto& d : a.duplicates) a.unique -= a.model.weights[d.copy].elements;
  a.framework = framework_view(a.model, a.attention, a.duplicates, a.unique, options.compare_content, &shapes.budget());
  find_windows(a.model, a.attention, options.compare_content, &shapes.budget());  // a stored band mask is read here
  t.content = ms_since(clock);
  a.mixers = detail::match_mixers(shapes, a.attention, a.experts, a.framework);  // after buffers: they are not a mixer's
  add_buffers(a.framework, a.mixers.built, a.model);
  if (a.model.checkpoint) {  // buffers a checkpoint stores by name (rotary frequencies, causal masks)
    std::vector<BufferTensor> by_name;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].role == "buffer") by_name.push_back({static_cast<int>(i), "a buffer by its name (" + names[i].family + " family)"});
    }
    add_buffers(a.framework, by_name, a.model);
  }
  t.match += ms_since(clock);
  if (!a.experts.layers.empty() && a.experts.idle && *a.experts.idle <= a.framework.parameters) {
    a.active_parameters = a.framework.parameters - *a.experts.idle;
  }
  a.composition = compose(a.model, a.attention, a.experts, a.mixers, a.duplicates, a.framework, a.model.checkpoint ? &named : nullptr);
  a.cost = estimate_cost(a.model, a.attention, a.experts, a.mixers, a.composition, options.cost);
  auto declared = [&](const ModelConfig& config) {
    return compare_declared(config, a.model, a.attention, a.composition, a.duplicates, a.framework.parameters);
  };
  a.declared_error = config.error;
  if (config.config && !options.model_config.empty()) {
    a.declared = declared(*config.config);  // asked for: an error stops the audit
  } else if (config.config) {
    try {
      a.declared = declared(*config.config);
    } catch (const InputError& e) {
      a.declared_error = e.what();  // a config.json that describes something else is not the model's fault
    }
  }
  a.findings = run_rules(a.model, a.attention, a.duplicates, a.declared ? &*a.declared : nullptr, &a.experts,
                         a.framework.parameters, a.active_parameters);
  if (auto spent = value_budget_finding(shapes.budget())) a.findings.push_back(std::move(*spent));
  t.rules = ms_since(clock);
  return a;
}

// A remote input (remote.h): its file and the config.json beside it fetched by range, never a
// tensor's values (no content comparison).
void check_base(Audit& a, const std::string& path, const AuditOptions& options);

Audit audit_remote(const std::string& input, const AuditOptions& options, StageTimes& times,
                   std::chrono::steady_clock::time_point clock) {
  if (!options.checkpoint.empty()) throw InputError("--checkpoint compares local files only: download the model");
  http::Options http;
  http.budget = options.remote.fetch_budget;
  http.stall_timeout_s = options.remote.timeout_s;
  http.connect_timeout_ms = options.remote.timeout_s * 1000;
  remote::Fetched f = remote::fetch_model(input, http, options.load);
  ConfigRead config;
  if (!options.model_config.empty()) {
    config = read_config_once(options, "");
  } else if (!f.config_text.empty() && options.find_model_config) {
    try {
      config.config = parse_model_config(f.config_text, f.config_name);
    } catch (const InputError& e) {
      config.error = e.what();
    }
  }
  config.adapter_text = std::move(f.adapter_config_text);
  config.adapter_name = f.adapter_config_name;
  AuditOptions local = options;
  local.compare_content = false;
  Audit a = audit_loaded(std::move(f.model), config, local, times, clock);
  a.remote = f.read;
  if (!options.base.empty()) check_base(a, input, options);
  return a;
}

// --base: the adapter against the model it is for, audited as a model of its own (no content read).
void check_base(Audit& a, const std::string& path, const AuditOptions& options) {
  if (!a.adapter) throw InputError("--base checks an adapter against its base; '" + path + "' holds no LoRA adapter");
  AuditOptions o;
  o.compare_content = false;
  o.cost = options.cost;
  o.remote = options.remote;
  try {
    if (!remote::is_remote(options.base) && ends_with(options.base, ".json") && format_of(options.base).kind == FormatKind::Onnx) {
      // A config: the matrices its numbers give, and its family's count when the family is known.
      ModelConfig config = read_model_config(options.base);
      std::optional<FamilyCount> count = family_count(config);
      const std::vector<BaseMatrix> matrices = config_matrices(config);
      // Its matrices are in Hugging Face's names: they prove a PEFT or MLX module absent, not llama.cpp's blk.N.attn_q.
      a.adapter->fit = fit_adapter(*a.adapter, matrices, !matrices.empty() && a.adapter->format != "GGUF", BaseLayout::OutIn, options.base,
                                   count ? std::optional<uint64_t>(count->total) : std::nullopt);
      return;
    }
    Audit base = audit_file(options.base, o);
    // A checkpoint's names prove a module absent when they are the adapter's kind of names: llama.cpp's
    // (blk.0.attn_q) for a GGUF adapter in a GGUF base, Hugging Face's for PEFT and MLX elsewhere.
    const bool gguf_base = base.model.checkpoint && base.model.checkpoint->kind == FormatKind::Gguf;
    const bool names_prove = base.model.checkpoint && gguf_base == (a.adapter->format == "GGUF");
    // A safetensors base stores a layer as PEFT's fan_in_fan_out says, when the adapter says it;
    // an export's MatMul weights and a GGUF's either way (not known).
    const bool safetensors_base = base.model.checkpoint && !gguf_base;
    const BaseLayout layout = safetensors_base && a.adapter->fan_in_fan_out
                                  ? (*a.adapter->fan_in_fan_out ? BaseLayout::InOut : BaseLayout::OutIn)
                                  : BaseLayout::Either;
    a.adapter->fit = fit_adapter(*a.adapter, base_matrices(base.model), names_prove, layout, options.base,
                                 base.framework.parameters);
  } catch (const InputError& e) {
    throw InputError("the base '" + options.base + "': " + e.what());
  }
}

}  // namespace

Audit audit_file(const std::string& path, const AuditOptions& options, StageTimes* times) {
  StageTimes local;
  auto clock = std::chrono::steady_clock::now();
  if (remote::is_remote(path)) return audit_remote(path, options, times ? *times : local, clock);
  // The format's row (checkpoint/formats.h): recognised by the path's folder, name or first bytes.
  const FormatRow& format = format_of(path);
  if (format.checkpoint && !options.checkpoint.empty()) {
    throw InputError("--checkpoint compares an exported model with its checkpoint; this file is a " + std::string(format.name) +
                     " checkpoint itself");
  }
  Model model = format.open(path, options.load);
  ConfigRead config = read_config_once(options, path);
  if (format.checkpoint) read_adapter_config(path, config);
  Audit a = audit_loaded(std::move(model), config, options, times ? *times : local, clock);
  if (!options.base.empty()) check_base(a, path, options);
  if (format.checkpoint) return a;
  if (!options.checkpoint.empty()) {
    // The checkpoint is audited as a model of its own (its config beside it, not the export's).
    AuditOptions o;
    o.compare_content = options.compare_content;
    o.cost = options.cost;
    if (!format_of(options.checkpoint).checkpoint) {
      throw InputError("--checkpoint '" + options.checkpoint + "' is not a safetensors or GGUF checkpoint");
    }
    std::optional<Audit> c;
    try {
      c = audit_file(options.checkpoint, o);
    } catch (const InputError& e) {
      throw InputError("the checkpoint '" + options.checkpoint + "': " + e.what());
    }
    auto start = std::chrono::steady_clock::now();
    a.fidelity = check_fidelity(a, path, *c, options.checkpoint);
    (times ? *times : local).content += ms_since(start);
  }
  return a;
}

Audit audit_bytes(const char* data, uint64_t size, const std::string& name, const AuditOptions& options,
                  StageTimes* times) {
  StageTimes local;
  auto clock = std::chrono::steady_clock::now();
  const FormatRow& format = format_of_bytes(data, size);
  if (!format.open_bytes) {
    throw InputError("a " + std::string(format.name) + " checkpoint is read from its file, not from bytes in memory: give its path");
  }
  Model model = format.open_bytes(data, size, name, options.load);
  Audit a = audit_loaded(std::move(model), read_config_once(options, ""), options, times ? *times : local, clock);
  for (Weight& w : a.model.weights) {  // the caller's buffer is not kept: no later read may reach it
    if (w.payload_memory) {
      w.payload_memory = nullptr;
      w.payload_known = false;
    }
  }
  return a;
}

}  // namespace headcount
