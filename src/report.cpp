// report.cpp: the audit pipeline for one file: load -> inventory -> match -> rules.
#include "headcount/report.h"

#include <chrono>

#include "headcount/error.h"

namespace headcount {

const char* const kVersion = HEADCOUNT_VERSION;
const char* const kSchema = "headcount/2";

namespace {

double ms_since(std::chrono::steady_clock::time_point& t) {
  auto now = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(now - t).count();
  t = now;
  return ms;
}

}  // namespace

namespace {

// Everything after loading: inventory -> match -> content -> rules. `path` is where a config.json
// beside the model is looked for ("" for none).
Audit audit_loaded(Model model, const std::string& path, const AuditOptions& options, StageTimes& t,
                   std::chrono::steady_clock::time_point clock) {
  Audit a{std::move(model), {}, {}, {}, 0, false, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  a.inventory = take_inventory(a.model);
  t.read = ms_since(clock);
  a.attention = match_attention(a.model, &t.shapes);
  a.experts = match_experts(a.model, a.attention);
  t.match = ms_since(clock) - t.shapes;
  if (options.compare_content) a.duplicates = find_duplicates(a.model);
  a.content_compared = options.compare_content;
  a.unique = a.inventory.stored;
  for (const auto& d : a.duplicates) a.unique -= a.model.weights[d.copy].elements;
  a.framework = framework_view(a.model, a.attention, a.duplicates, a.unique, options.compare_content);
  find_windows(a.model, a.attention, options.compare_content);  // a stored band mask is read here
  t.content = ms_since(clock);
  a.mixers = match_mixers(a.model, a.attention, a.experts, a.framework);  // after buffers: they are not a mixer's
  add_buffers(a.framework, a.mixers.built, a.model);
  t.match += ms_since(clock);
  if (!a.experts.layers.empty() && a.experts.idle && *a.experts.idle <= a.framework.parameters) {
    a.active_parameters = a.framework.parameters - *a.experts.idle;
  }
  a.composition = compose(a.model, a.attention, a.experts, a.mixers, a.duplicates, a.framework);
  a.cost = estimate_cost(a.model, a.attention, a.experts, a.mixers, a.composition, options.cost);
  if (!options.model_config.empty()) {
    a.declared = compare_declared(read_model_config(options.model_config), a);  // asked for: an error stops the audit
  } else if (std::string beside = options.find_model_config && !path.empty() ? find_model_config(path) : "";
             !beside.empty()) {
    try {
      a.declared = compare_declared(read_model_config(beside), a);
    } catch (const InputError& e) {
      a.declared_error = e.what();  // a config.json that describes something else is not the model's fault
    }
  }
  a.findings = run_rules(a.model, a.attention, a.duplicates, a.declared ? &*a.declared : nullptr, &a.experts,
                         a.framework.parameters, a.active_parameters);
  t.rules = ms_since(clock);
  return a;
}

}  // namespace

Audit audit_file(const std::string& path, const AuditOptions& options, StageTimes* times) {
  StageTimes local;
  auto clock = std::chrono::steady_clock::now();
  return audit_loaded(load_model(path, options.load), path, options, times ? *times : local, clock);
}

Audit audit_bytes(const char* data, uint64_t size, const std::string& name, const AuditOptions& options,
                  StageTimes* times) {
  StageTimes local;
  auto clock = std::chrono::steady_clock::now();
  Audit a = audit_loaded(load_model_bytes(data, size, name, options.load), "", options, times ? *times : local, clock);
  for (Weight& w : a.model.weights) {  // the caller's buffer is not kept: no later read may reach it
    if (w.payload_memory) {
      w.payload_memory = nullptr;
      w.payload_known = false;
    }
  }
  return a;
}

}  // namespace headcount
