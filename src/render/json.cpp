// json.cpp: the JSON report, a contract for machines: stable field names, raw integers.
#include "../json_fields.h"
#include "fidelity_rows.h"
#include "json_writer.h"
#include "layout.h"
#include "renderers.h"
#include "headcount/checkpoint_index.h"
#include "headcount/version.h"

namespace headcount::renderers {

namespace {

void write_projection(JsonWriter& j, const Model& m, const Projection& p) {
  j.begin_object();
  j.field("found", p.found);
  j.field("weight", p.weight);
  j.field("bias", p.bias);
  j.field("total", p.total());
  j.key("from_input");
  if (p.from_input.empty()) j.null();
  else j.value(p.from_input);
  j.key("weight_input");
  if (p.weight_input.empty()) j.null();
  else j.value(p.weight_input);
  j.key("bias_input");
  if (p.bias_input.empty()) j.null();
  else j.value(p.bias_input);
  j.key("tensors").begin_array();
  for (const auto& t : p.tensors) {
    const Weight& w = m.weights[t.weight];
    j.begin_object();
    j.field("name", w.name);
    j.field("role", t.bias ? "bias" : "weight");
    j.key("shape").int_array(w.dims);
    j.field("elements", t.elements);
    if (t.slice.empty()) j.key("slice").null();
    else j.field("slice", t.slice);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void write_optional(JsonWriter& j, const std::string& k, const std::optional<int64_t>& v) {
  j.key(k);
  if (v) j.value(*v);
  else j.null();
}

void write_optional_count(JsonWriter& j, const std::string& k, const std::optional<uint64_t>& v) {
  j.key(k);
  if (v) j.value(*v);
  else j.null();
}

void write_mixers(JsonWriter& j, const Audit& a) {
  const Model& m = a.model;
  j.key("mixers").begin_object();
  j.key("notes").begin_array();
  for (const auto& n : a.mixers.notes) j.value(n);
  j.end_array();
  j.key("layers").begin_array();
  for (const auto& mx : a.mixers.mixers) {
    j.begin_object();
    j.field("index", static_cast<int64_t>(mx.index));
    j.field("name", mx.name);
    j.field("kind", mixer_kind_name(mx.kind));
    j.field("evidence", mx.evidence);
    j.field("parameters", mx.total);
    j.key("tensors").begin_array();
    for (const auto& t : mx.tensors) {
      const Weight& w = m.weights[static_cast<size_t>(t.weight)];
      j.begin_object().field("name", w.name).field("role", t.role);
      j.key("shape").int_array(w.dims);
      j.field("elements", t.elements).end_object();
    }
    j.end_array();
    write_optional_count(j, "state_elements", mx.state_elements);
    write_optional_count(j, "state_bytes", mx.state_bytes);
    j.field("state_from", mx.state_from);
    j.key("notes").begin_array();
    for (const auto& n : mx.notes) j.value(n);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void write_experts(JsonWriter& j, const Audit& a) {
  j.key("experts").begin_object();
  write_optional_count(j, "active_parameters", a.active_parameters);
  write_optional_count(j, "idle_parameters", a.experts.idle);
  j.field("unexamined", a.experts.unexamined);
  j.key("notes").begin_array();
  for (const auto& n : a.experts.notes) j.value(n);
  j.end_array();
  j.key("layers").begin_array();
  for (const auto& l : a.experts.layers) {
    j.begin_object();
    j.field("index", l.index).field("name", l.name).field("form", l.form);
    write_optional(j, "experts", l.experts);
    write_optional(j, "top_k", l.top_k);
    j.field("found", l.found);
    write_optional_count(j, "expert_parameters", l.expert);
    j.field("routed_parameters", l.routed).field("router_parameters", l.router);
    j.field("shared_parameters", l.shared).field("shared_experts", l.shared_experts);
    j.key("notes").begin_array();
    for (const auto& n : l.notes) j.value(n);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void write_cost(JsonWriter& j, const Cost& c) {
  j.key("cost").begin_object();
  j.field("context", c.context).field("batch", c.batch);
  j.key("kv").begin_object();
  j.field("bytes_per_token", c.kv_bytes_per_token);
  j.field("lower_bound", c.kv_lower_bound);
  write_optional_count(j, "bytes_at_context", c.kv_bytes_at_context);
  write_optional_count(j, "window_saved_bytes", c.kv_window_saved_bytes);
  write_optional_count(j, "full_mha_bytes_per_token", c.full_mha_kv_bytes_per_token);
  j.field("parameters_saved", c.kv_parameters_saved);
  j.field("cross_bytes_per_encoder_token", c.cross_kv_bytes_per_encoder_token);
  j.end_object();
  j.key("macs").begin_object();
  j.field("per_token", c.macs_per_token);
  j.field("lower_bound", c.macs_lower_bound);
  j.field("attention_projections", c.macs_attention_projections);
  j.field("attention_scores", c.macs_attention_scores);
  j.field("feed_forward", c.macs_feed_forward);
  j.field("experts", c.macs_experts);
  j.field("lm_head", c.macs_lm_head);
  j.field("mixers", c.macs_mixers);
  j.field("other", c.macs_other);
  write_optional_count(j, "prefill", c.prefill_macs);
  j.end_object();
  j.key("state").begin_object();
  j.field("bytes_per_sequence", c.state_bytes);
  j.field("lower_bound", c.state_lower_bound);
  j.end_object();
  j.key("blocks").begin_array();
  for (const auto& b : c.blocks) {
    j.begin_object();
    j.field("index", b.block);
    j.field("cross", b.cross);
    j.key("shared_with");
    if (b.shared_with >= 0) j.value(b.shared_with);
    else j.null();
    write_optional(j, "k_width", b.k_width);
    write_optional(j, "v_width", b.v_width);
    write_optional(j, "window", b.window);
    j.key("dtype");
    if (b.bits) j.value(b.dtype);
    else j.null();
    j.field("dtype_from", b.dtype_from);
    write_optional_count(j, "kv_bytes_per_token", b.kv_bytes_per_token);
    write_optional_count(j, "full_mha_bytes_per_token", b.full_mha_bytes_per_token);
    write_optional_count(j, "expanded_kv_bytes_per_token", b.expanded_kv_bytes_per_token);
    j.field("projection_macs", b.projection_macs);
    write_optional_count(j, "score_macs", b.score_macs);
    j.key("unknown");
    if (b.unknown.empty()) j.null();
    else j.value(b.unknown);
    j.end_object();
  }
  j.end_array();
  j.key("notes").begin_array();
  for (const auto& n : c.notes) j.value(n);
  j.end_array();
  j.end_object();
}

// "model": what the file is (its format, producer, opsets and sizes).
void write_model(JsonWriter& j, const Model& m) {
  j.key("model").begin_object();
  j.field("format", m.checkpoint ? m.checkpoint->format : std::string("onnx"));
  if (m.checkpoint) {
    j.key("files").begin_array();
    for (const auto& f : m.checkpoint->files) j.value(f);
    j.end_array();
  }
  j.field("ir_version", static_cast<int64_t>(m.proto->ir_version()));
  j.field("producer", producer_string(*m.proto));
  j.key("opsets").begin_array();
  for (const auto& o : m.proto->opset_import()) {
    j.begin_object().field("domain", o.domain()).field("version", static_cast<int64_t>(o.version())).end_object();
  }
  j.end_array();
  j.field("file_bytes", m.file_size);
  j.field("graphs", static_cast<uint64_t>(m.graphs.size()));
  j.field("nodes", static_cast<uint64_t>(m.nodes.size()));
  j.field("functions", static_cast<int64_t>(m.proto->functions_size()));
  j.end_object();
}

// "parameters": the counts, and the composition by part.
void write_parameters(JsonWriter& j, const Audit& a) {
  namespace F = json_field;
  const Inventory& inv = a.inventory;
  j.key(F::kParameters).begin_object();
  j.field(F::kStored, inv.stored);
  j.field("bytes", inv.bytes);
  j.field("tensors", inv.tensors);
  j.key("not_parameters").begin_object().field("tensors", inv.non_parameter_tensors).field("elements", inv.non_parameter_elements).end_object();
  j.field(F::kUnique, a.unique);
  j.field("buffers", a.framework.buffer_elements);
  j.field("constants", a.framework.constant_elements);
  j.field("merged", a.framework.merged_elements);
  j.field(F::kFramework, a.framework.parameters);
  j.field(F::kContentCompared, a.content_compared);
  j.field(F::kAttention, a.attention.parameters);
  j.key("composition").begin_object();
  j.field("attention", a.composition.attention);
  j.field("embeddings", a.composition.embeddings);
  j.field("feed_forward", a.composition.feed_forward);
  j.field("routed_experts", a.composition.routed_experts);
  j.field("routers", a.composition.routers);
  j.field("norms", a.composition.norms);
  j.field("buffers", a.composition.buffers);
  j.field("constants", a.composition.constants);
  j.field("lm_head", a.composition.lm_head);
  j.field("mixers", a.composition.mixers);
  j.field("adapter", a.composition.adapter);
  j.field("other", a.composition.other);
  j.end_object();
  j.end_object();
}

// "buffers", "constants", "everything_else" and "merged": the tensors set apart from the
// framework's count or from every part, each with why.
void write_set_apart(JsonWriter& j, const Audit& a) {
  const Model& m = a.model;
  j.key("buffers").begin_array();
  for (const auto& b : a.framework.buffers) {
    const Weight& w = m.weights[static_cast<size_t>(b.weight)];
    j.begin_object().field("name", w.name).field("elements", w.elements).field("reason", b.reason).end_object();
  }
  j.end_array();
  j.key("constants").begin_array();
  for (const auto& c : a.framework.constants) {
    const Weight& w = m.weights[static_cast<size_t>(c.weight)];
    j.begin_object().field("name", w.name).field("elements", w.elements).field("reason", c.reason).end_object();
  }
  j.end_array();
  j.key("everything_else").begin_array();
  for (int wi : a.composition.unclaimed) {
    const Weight& w = m.weights[static_cast<size_t>(wi)];
    j.begin_object().field("name", w.name).field("elements", w.elements).field("reason", unclaimed_reason(m, wi)).end_object();
  }
  j.end_array();
  j.key("merged").begin_array();
  for (const auto& c : a.framework.merged) {
    const Weight& w = m.weights[static_cast<size_t>(c.weight)];
    j.begin_object().field("name", output_of(*m.nodes[static_cast<size_t>(c.node)].rec, 0)).field("tensor", w.name);
    j.field("elements", w.elements).end_object();
  }
  j.end_array();
}

void write_duplicates(JsonWriter& j, const Audit& a) {
  const Model& m = a.model;
  j.key("duplicates").begin_array();
  for (const auto& d : a.duplicates) {
    j.begin_object();
    j.field("original", m.weights[d.original].name);
    j.field("copy", m.weights[d.copy].name);
    j.field("transposed", d.transposed);
    j.field("elements", m.weights[d.copy].elements);
    j.end_object();
  }
  j.end_array();
}

// "by_dtype" or "by_storage": one row per key.
void write_breakdown(JsonWriter& j, const char* name, const char* keyname, const std::vector<Breakdown>& rows) {
  j.key(name).begin_array();
  for (const auto& r : rows) {
    j.begin_object().field(keyname, r.key).field("tensors", r.tensors).field("elements", r.elements)
        .field("bytes", r.bytes).end_object();
  }
  j.end_array();
}

// "tensors": every parameter, where it is stored and what reads it.
void write_tensors(JsonWriter& j, const Model& m) {
  j.key("tensors").begin_array();
  for (const Weight& w : m.weights) {
    if (!w.parameter) continue;
    j.begin_object();
    j.field("name", w.name);
    j.field("graph", m.scope_name(w.graph));
    j.field("dtype", dtype_name(w.dtype));
    j.key("shape").int_array(w.dims);
    j.field("elements", w.elements);
    j.field("bytes", w.bytes);
    j.field("storage", storage_name(w.storage));
    if (w.sparse) j.field("sparse", true);
    if (w.external) {
      const Weight::External& x = *w.external;
      j.key("external").begin_object();
      j.field("location", x.location);
      j.field("offset", x.offset);
      j.key("length");
      if (x.length >= 0) j.value(x.length);
      else j.null();
      j.field("status", external_status_name(x.status));
      j.end_object();
    }
    j.key("consumers").begin_array();
    for (int ni : w.consumers) {
      const std::string_view name = m.nodes[static_cast<size_t>(ni)].rec->name();
      if (name.empty()) j.value(node_label(m, ni));
      else j.value(name);  // node_label's text, without a copy
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
}

// One attention block: its heads and sizes, each projection, its window and what else it holds.
void write_block(JsonWriter& j, const Model& m, const AttentionBlock& b) {
  namespace F = json_field;
  j.begin_object();
  j.field("index", b.index);
  j.field("name", b.name);
  j.field(F::kForm, b.form);
  j.field("kind", b.kind);
  write_optional(j, F::kHeads, b.heads);
  write_optional(j, F::kKvHeads, b.kv_heads);
  j.field("heads_from", b.heads_from);
  write_optional(j, F::kWidth, b.width > 0 ? std::optional<int64_t>(b.width) : std::nullopt);
  write_optional(j, "head_dim", b.head_dim);
  write_optional(j, "v_head_dim", b.v_head_dim);
  j.key("latent");
  if (b.latent) {
    const LatentAttention& la = *b.latent;
    j.begin_object();
    j.field("q_rank", la.q_rank).field("kv_rank", la.kv_rank).field("rope_dim", la.rope_dim);
    j.field("qk_nope_dim", la.qk_nope_dim).field("v_head_dim", la.v_head_dim).field("from", la.from);
    j.end_object();
  } else {
    j.null();
  }
  j.field("total", b.total);
  j.field("standard", b.standard);
  j.key("projections").begin_object();
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    j.key(role_name(r));
    write_projection(j, m, b.projection(r));
  }
  j.end_object();
  write_optional(j, "window", b.window);
  j.key("window_from");
  if (b.window_from.empty()) j.null();
  else j.value(b.window_from);
  j.key("score_path").begin_array();
  for (const auto& step : b.score_path) j.value(step);
  j.end_array();
  j.key("extras").begin_array();
  for (const auto& e : b.extras) {
    const Weight& w = m.weights[static_cast<size_t>(e.weight)];
    j.begin_object().field("name", w.name).field("role", extra_role_name(e.role)).field("elements", e.elements);
    j.key("shape").int_array(w.dims);
    j.end_object();
  }
  j.end_array();
  j.key("notes").begin_array();
  for (const auto& n : b.notes) j.value(n);
  j.end_array();
  j.end_object();
}

// "declared": what the config beside the model declares against what was found, or null.
void write_declared(JsonWriter& j, const std::optional<Declared>& declared) {
  j.key("declared");
  if (!declared) {
    j.null();
    return;
  }
  const Declared& d = *declared;
  j.begin_object().field("file", d.config.file).field("format", d.config.format).field("model_type", d.config.model_type);
  j.key("fields").begin_array();
  for (const auto& f : d.fields) {
    j.begin_object().field("field", f.label).field("key", f.key);
    j.key("derived_from");
    if (f.derived_from.empty()) j.null();
    else j.value(f.derived_from);
    for (auto [k, v] : {std::pair<const char*, Int>{"declared", f.declared}, {"found", f.found}}) {
      j.key(k);
      if (!v) j.null();
      else if (f.boolean) j.value(*v != 0);
      else j.value(*v);
    }
    j.field("agreement", agreement_name(f.agreement)).field("note", f.note).end_object();
  }
  j.end_array();
  j.key("formula");
  if (!d.count) {
    j.null();
  } else {
    j.begin_object().field("family", d.count->family).field("total", d.count->total).field("note", d.count_note);
    j.key("parts").begin_array();
    for (const auto& p : d.count->parts) j.begin_object().field("part", p.part).field("parameters", p.parameters).field("formula", p.formula).end_object();
    j.end_array();
    j.end_object();
  }
  j.end_object();
}

void write_findings(JsonWriter& j, const std::vector<Finding>& findings) {
  j.key("findings").begin_array();
  for (const auto& f : findings) {
    j.begin_object();
    j.field("rule", f.rule);
    j.field("severity", severity_name(f.severity));
    j.key("block");
    if (f.block) j.value(*f.block);
    else j.null();
    j.field("message", f.message);
    j.end_object();
  }
  j.end_array();
}

// "unmatched": the softmaxes that are not attention, with why.
void write_unmatched(JsonWriter& j, const Audit& a) {
  j.key("unmatched").begin_array();
  for (const auto& u : a.attention.unmatched) {
    j.begin_object().field("node", u.name).field("op_type", a.model.nodes[u.node].rec->op_type()).field("reason", u.reason).end_object();
  }
  j.end_array();
}

// The fields of one audited model (the object's braces are the caller's).

// A LoRA adapter (adapter.h): how it was made, its targets, its totals, what does not agree.
void write_adapter(JsonWriter& j, const Audit& a) {
  const Adapter& ad = *a.adapter;
  j.key("adapter").begin_object().field("format", ad.format).field("method", ad.method);
  j.key("config");
  if (ad.config.empty()) j.null();
  else j.value(ad.config);
  j.key("rank");
  if (ad.declared_rank) j.value(*ad.declared_rank);
  else j.null();
  j.key("alpha");
  if (ad.alpha) j.value(*ad.alpha);
  else j.null();
  j.key("scale");
  if (ad.scale) j.value(*ad.scale);
  else j.null();
  j.field("scale_from", ad.scale_from);
  j.key("base");
  if (ad.base.empty()) j.null();
  else j.value(ad.base);
  j.key("targets").begin_array();
  for (const AdapterTarget& t : ad.targets) {
    j.begin_object().field("module", t.module).field("reaches", t.reaches).field("layers", t.layers);
    j.key("ranks").begin_array();
    for (int64_t r : t.ranks) j.value(r);
    j.end_array();
    j.field("in", t.in).field("out", t.out).field("parameters", t.parameters).field("magnitudes", t.magnitudes).end_object();
  }
  j.end_array();
  j.key("saved_modules").begin_array();
  for (int wi : ad.saved_modules) j.value(std::string(a.model.weights[static_cast<size_t>(wi)].name));
  j.end_array();
  j.field("lora", ad.lora).field("magnitudes", ad.magnitudes).field("saved", ad.saved).field("total", ad.total);
  j.key("notes").begin_array();
  for (const std::string& n : ad.notes) j.value(n);
  j.end_array();
  j.key("base_check");
  if (!ad.fit) {
    j.null();
  } else {
    j.begin_object().field("base", ad.fit->base);
    j.key("parameters");
    if (ad.fit->base_parameters) j.value(*ad.fit->base_parameters);
    else j.null();
    j.field("fitted", ad.fit->fitted);
    j.key("misfits").begin_array();
    for (const std::string& m : ad.fit->misfits) j.value(m);
    j.end_array();
    j.key("unchecked").begin_array();
    for (const std::string& m : ad.fit->unchecked) j.value(m);
    j.end_array();
    j.end_object();
  }
  j.end_object();
}

void model_fields(JsonWriter& j, const Audit& a, const FileResult& result) {
  namespace F = json_field;
  j.field(F::kFile, result.path);
  write_model(j, a.model);
  write_parameters(j, a);
  write_set_apart(j, a);
  write_duplicates(j, a);
  write_breakdown(j, "by_dtype", "dtype", a.inventory.by_dtype);
  write_breakdown(j, "by_storage", "storage", a.inventory.by_storage);
  write_tensors(j, a.model);
  j.key(F::kBlocks).begin_array();
  for (const auto& b : a.attention.blocks) write_block(j, a.model, b);
  j.end_array();
  write_declared(j, a.declared);
  write_experts(j, a);
  write_mixers(j, a);
  write_cost(j, a.cost);
  j.key("checkpoint");  // --checkpoint: does the export hold every weight of it?
  if (a.fidelity) fidelity_json(*a.fidelity, j);
  else j.null();
  if (a.remote) {  // only for a remote input: where it was read and what that took
    j.key("remote").begin_object().field("url", a.remote->url);
    j.key("commit");
    if (a.remote->commit.empty()) j.null();
    else j.value(a.remote->commit);
    j.field("bytes", a.remote->bytes).field("requests", a.remote->requests).end_object();
  }
  if (a.adapter) write_adapter(j, a);  // only for a LoRA adapter
  write_findings(j, a.findings);
  write_unmatched(j, a);
  j.key("gates").begin_array();
  for (const auto& g : result.gates) j.begin_object().field("gate", g.gate).field("message", g.message).end_object();
  j.end_array();
}

void tool_fields(JsonWriter& j, const Run& run) {
  j.field(json_field::kSchema, kSchema);
  j.key("tool").begin_object().field("name", "headcount").field("version", kVersion).end_object();
  j.key("config");
  if (run.config.empty()) j.null();
  else j.value(run.config);
}

}  // namespace

// One document, whatever the number of inputs: every audited model, every model that could not
// be audited, and the gate's verdict.
void write_json(const Run& run, const RenderOptions& options, std::ostream& out) {
  namespace F = json_field;
  JsonWriter j(out, 2);
  j.begin_object();
  tool_fields(j, run);
  j.key(F::kModels).begin_array();
  const size_t depth = j.depth();
  auto model = [&](const FileResult& f, std::ostream& s) {
    if (!f.audit) return;
    JsonWriter m(s, 2, depth);
    m.begin_object();
    model_fields(m, *f.audit, f);
    m.end_object();
  };
  for_each_section(run, options.jobs, model, [&](size_t i, const std::string* text) {
    if (!run.files[i].audit) return;
    if (text) {
      j.raw(*text);
    } else {
      j.raw("");  // the separator, then the model streams out after it
      j.flush();
      model(run.files[i], out);
    }
  });
  j.end_array();
  j.key(F::kErrors).begin_array();
  size_t failures = 0, errors = 0;
  for (const auto& f : run.files) {
    failures += f.gates.size();
    if (!f.audit) {
      ++errors;
      j.begin_object().field(F::kFile, f.path).field(F::kMessage, f.error).end_object();
    }
  }
  j.end_array();
  // A model that could not be read passes no gate: "passed" is exit code 0.
  j.key("gate").begin_object();
  j.field("configured", run.gates_configured);
  j.field("failures", static_cast<uint64_t>(failures));
  j.field("passed", failures == 0 && errors == 0);
  j.end_object();
  j.end_object();
  out << "\n";
}

// One compact line per model or error, in input order.
void write_jsonl(const Run& run, const RenderOptions& options, std::ostream& out) {
  namespace F = json_field;
  auto record = [&](const FileResult& f, std::ostream& s) {
    JsonWriter j(s, -1);
    j.begin_object();
    j.field(F::kSchema, kSchema);
    j.field(F::kRecord, f.audit ? "model" : "error");
    if (f.audit) model_fields(j, *f.audit, f);
    else j.field(F::kFile, f.path).field(F::kMessage, f.error);
    j.end_object();
  };
  for_each_section(run, options.jobs, record, [&](size_t i, const std::string* text) {
    if (text) out << *text;
    else record(run.files[i], out);
    out << "\n";
  });
}

}  // namespace headcount::renderers
