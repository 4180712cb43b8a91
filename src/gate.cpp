// gate.cpp: the budget gates' table, budgets per path, severity gates and the baseline comparison.
#include "headcount/gate.h"

#include <fnmatch.h>

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "headcount/results/audit.h"
#include "headcount/error.h"
#include "headcount/numbers.h"

namespace headcount {
namespace {

// Parses "1.5" times `unit` exactly, without floating point: "1.5" x 1,000,000,000. A fraction
// of a whole unit is refused unless `round_down` ("476.8MiB" is 499,961,036.8 bytes: 499,961,036).
std::optional<uint64_t> scaled(const std::string& number, uint64_t unit, bool round_down = false) {
  if (number.empty()) return std::nullopt;
  uint64_t whole = 0, frac = 0, frac_scale = 1;
  bool dot = false, digits = false;
  for (char c : number) {
    if (c == '.' && !dot) {
      dot = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    digits = true;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (!dot) {
      if (mul_overflows(whole, 10, &whole) || add_overflows(whole, d, &whole)) return std::nullopt;
    } else {
      if (frac_scale > 1000000000000ull) return std::nullopt;
      frac = frac * 10 + d;
      frac_scale *= 10;
    }
  }
  if (!digits) return std::nullopt;
  uint64_t a = 0, b = 0;
  if (mul_overflows(whole, unit, &a) || mul_overflows(frac, unit, &b)) return std::nullopt;
  if (b % frac_scale != 0 && !round_down) return std::nullopt;  // "1.5" of a plain count is not a whole number
  uint64_t out = 0;
  if (add_overflows(a, b / frac_scale, &out)) return std::nullopt;
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", x * 100.0);
  return buf;
}

std::string diff_of(uint64_t now, uint64_t before) {
  if (now >= before) return "+" + with_commas(now - before);
  return "-" + with_commas(before - now);
}

std::string heads_text(const std::optional<int64_t>& h) { return h ? std::to_string(*h) : "unknown"; }

std::string names_of(const Baseline& b) {
  std::string s;
  for (size_t i = 0; i < b.models.size() && i < 5; ++i) s += (i ? ", " : "") + b.models[i].file;
  if (b.models.size() > 5) s += ", ...";
  return s.empty() ? "no models" : s;
}

}  // namespace

namespace {

// Shell-style glob over '/'-separated paths: *, ? and [...] within one segment, ** for any number
// of segments.
bool glob_match(const std::vector<std::string>& pat, size_t i, const std::vector<std::string>& path, size_t j) {
  if (i == pat.size()) return j == path.size();
  if (pat[i] == "**") {
    for (size_t k = j; k <= path.size(); ++k) {
      if (glob_match(pat, i + 1, path, k)) return true;
    }
    return false;
  }
  return j < path.size() && fnmatch(pat[i].c_str(), path[j].c_str(), FNM_PERIOD) == 0 && glob_match(pat, i + 1, path, j + 1);
}

std::vector<std::string> segments(const std::string& p) {
  std::vector<std::string> out;
  for (const auto& part : std::filesystem::path(p)) {
    if (!part.empty() && part != "/") out.push_back(part.string());
  }
  return out;
}

}  // namespace

bool path_matches(const std::string& pattern, const std::string& file) {
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(file, ec).lexically_normal().generic_string();
  return glob_match(segments(pattern), 0, segments(absolute), 0);
}

Budget budget_for(const std::string& file, const Budget& global, const std::vector<PathBudget>& budgets,
                  const Budget& pinned) {
  Budget b = global;
  for (const auto& pb : budgets) {
    if (!path_matches(pb.pattern, file)) continue;
    for (const auto& [id, limit] : pb.budget.limits) b.limits[id] = limit;
    break;
  }
  // What the command line gave beats every table of the config.
  for (const auto& [id, limit] : pinned.limits) b.limits[id] = limit;
  return b;
}

uint64_t parse_count(const std::string& text) {
  std::string t = lower(text);
  uint64_t unit = 1;
  if (!t.empty()) {
    char last = t.back();
    if (last == 'k') unit = 1000;
    else if (last == 'm') unit = 1000000;
    else if (last == 'b' || last == 'g') unit = 1000000000;
    else if (last == 't') unit = 1000000000000ull;
    if (unit != 1) t.pop_back();
  }
  auto v = scaled(t, unit);
  if (!v) throw InputError("'" + text + "' is not a parameter count (examples: 350000, 350k, 110M, 1.5B)");
  return *v;
}

uint64_t parse_bytes(const std::string& text) {
  std::string t = lower(text);
  struct Unit {
    const char* suffix;
    uint64_t bytes;
  };
  static const Unit units[] = {{"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"tib", 1ull << 40},
                               {"kb", 1000}, {"mb", 1000000}, {"gb", 1000000000}, {"tb", 1000000000000ull},
                               {"k", 1000}, {"m", 1000000}, {"g", 1000000000}, {"b", 1}};
  uint64_t unit = 1;
  for (const auto& u : units) {
    std::string s = u.suffix;
    if (t.size() > s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0) {
      unit = u.bytes;
      t.resize(t.size() - s.size());
      break;
    }
  }
  auto v = scaled(t, unit, /*round_down=*/unit > 1);  // a byte budget of 476.8MiB holds 499,961,036 bytes
  if (!v) throw InputError("'" + text + "' is not a size in bytes (examples: 500000000, 500MB, 476.8MiB, 2GiB)");
  return *v;
}

void parse_tolerance(const std::string& text, uint64_t* absolute, uint64_t* ppb) {
  *absolute = 0;
  *ppb = 0;
  if (!text.empty() && text.back() == '%') {
    // 1% is 10,000,000 parts per billion; read exactly, up to 100%.
    auto v = scaled(text.substr(0, text.size() - 1), 10000000);
    if (!v || *v > 1000000000) throw InputError("'" + text + "' is not a tolerance (examples: 0, 5000, 1k, 0.5%)");
    *ppb = *v;
    return;
  }
  *absolute = parse_count(text);
}

namespace {

// What failed on a ceiling, in the gate's words; nothing when the figure is within `limit`.
std::optional<std::string> judge(const BudgetGate& gate, const Measured& m, uint64_t limit) {
  bool bytes = gate.unit == BudgetUnit::Bytes;
  std::string what = std::string(gate.what) + m.note;
  auto over = [&] {
    auto show = [&](uint64_t v) { return bytes ? with_commas(v) + " (" + human_bytes(v) + ")" : with_commas(v); };
    return what + " " + show(m.value) + " exceed the budget of " + show(limit) + " by " + with_commas(m.value - limit) +
           (bytes ? " bytes" : "") + " (" +
           pct(limit ? static_cast<double>(m.value - limit) / static_cast<double>(limit) : 1.0) + ")";
  };
  auto unknown = [&] { return what + " cannot be checked against the budget of " + with_commas(limit) + ": " + m.unknown; };
  switch (m.bound) {
    case Measured::Bound::Exact:
      if (m.value > limit) return over();
      break;
    case Measured::Bound::AtLeast:  // a total with an unknown part passes only what it proves
      if (m.value > limit) return "at least " + over();
      return unknown() + "; the known part is " + with_commas(m.value);
    case Measured::Bound::AtMost:
      if (m.value > limit) return unknown() + ", and the whole model has " + with_commas(m.value);
      break;
  }
  return std::nullopt;
}

Measured exact(uint64_t value) { return {value, Measured::Bound::Exact, "", ""}; }

// A cost figure with an unknown part is a lower bound; the first block that says why names it.
Measured cost_figure(const Audit& a, uint64_t value, bool lower_bound) {
  if (!lower_bound) return exact(value);
  std::string why = "a block's figure is unknown";
  for (const auto& bc : a.cost.blocks) {
    if (!bc.unknown.empty()) {
      why = "block " + std::to_string(bc.block) + ": " + bc.unknown;
      break;
    }
  }
  return {value, Measured::Bound::AtLeast, why, ""};
}

Measured active_parameters(const Audit& a) {
  if (a.experts.layers.empty()) return {a.framework.parameters, Measured::Bound::Exact, "", " (no experts: every parameter runs)"};
  if (a.active_parameters) return exact(*a.active_parameters);
  return {a.framework.parameters, Measured::Bound::AtMost,
          "a mixture-of-experts layer's experts, top-k or expert size is unknown", ""};
}

std::optional<std::string> expect_heads(const Audit& a, uint64_t limit) {
  int64_t expected = static_cast<int64_t>(limit);
  std::vector<std::string> wrong;
  for (const auto& blk : a.attention.blocks) {
    if (!blk.heads || *blk.heads != expected) wrong.push_back("block " + std::to_string(blk.index) + " has " + heads_text(blk.heads));
  }
  if (a.attention.blocks.empty()) wrong.push_back("the model has no attention blocks");
  if (wrong.empty()) return std::nullopt;
  std::string msg = "expected " + std::to_string(expected) + " heads in every block, but ";
  for (size_t i = 0; i < wrong.size() && i < 5; ++i) msg += (i ? "; " : "") + wrong[i];
  if (wrong.size() > 5) msg += "; and " + std::to_string(wrong.size() - 5) + " more";
  return msg;
}

}  // namespace

const std::vector<BudgetGate>& budget_gates() {
  static const std::vector<BudgetGate> gates = {
      {"max-params", BudgetUnit::Count,
       "most parameters, as the framework counts them (parameters.framework): 350k, 110M, 1.5B",
       "the model has more parameters than its budget",
       "--max-params N (or max-params in headcount.toml, or a [[budget]] table) caps parameters.framework: the "
       "parameters as the framework counts them, each stored tensor once, without buffers. Raise the budget if the "
       "growth is intended.",
       "parameters", [](const Audit& a) { return exact(a.framework.parameters); }, nullptr},
      {"max-attention-params", BudgetUnit::Count, "most Q/K/V/O parameters (parameters.attention)",
       "the attention projections have more parameters than their budget",
       "--max-attention-params N caps parameters.attention: the Q, K, V and O projections (and their extras) of every "
       "attention block, each tensor once.",
       "attention parameters", [](const Audit& a) { return exact(a.attention.parameters); }, nullptr},
      {"max-bytes", BudgetUnit::Bytes, "most parameter bytes (parameters.bytes): 500MB, 2GiB",
       "the stored parameters take more bytes than their budget",
       "--max-bytes SIZE caps parameters.bytes: the bytes of every stored parameter tensor, embedded or external, "
       "as stored (quantized tensors at their stored width).",
       "parameter bytes", [](const Audit& a) { return exact(a.inventory.bytes); }, nullptr},
      {"expect-heads", BudgetUnit::Heads, "every attention block must have N query heads",
       "an attention block does not have the expected number of query heads",
       "--expect-heads N requires every attention block to have N query heads; a block whose heads cannot be "
       "inferred, or a model without attention blocks, fails it too.",
       nullptr, nullptr, expect_heads},
      {"max-kv-bytes-per-token", BudgetUnit::Bytes,
       "most K/V cache bytes per token (cost.kv.bytes_per_token): 512KiB, 131072",
       "the K/V cache takes more bytes per token than its budget",
       "--max-kv-bytes-per-token SIZE caps cost.kv.bytes_per_token: the keys and values every self-attention block "
       "keeps per token, at the element size the graph computes them in (or --kv-dtype). A block whose size is "
       "unknown fails the gate unless the known blocks are already over.",
       "K/V cache bytes per token",
       [](const Audit& a) { return cost_figure(a, a.cost.kv_bytes_per_token, a.cost.kv_lower_bound); }, nullptr},
      {"max-macs-per-token", BudgetUnit::Count,
       "most multiply-accumulates per token at --context (cost.macs.per_token): 7B, 500M",
       "one token costs more multiply-accumulates than its budget",
       "--max-macs-per-token N caps cost.macs.per_token: the multiply-accumulates of one token decoded against a cache "
       "of --context tokens (projections, attention scores, feed-forward, LM head and other matrix products with "
       "stored weights). An unknown part fails the gate unless the known part is already over.",
       "MACs per token", [](const Audit& a) { return cost_figure(a, a.cost.macs_per_token, a.cost.macs_lower_bound); },
       nullptr},
      {"max-active-params", BudgetUnit::Count,
       "most parameters one token runs (experts.active_parameters; every parameter without experts): 13B",
       "one token runs more parameters than its budget",
       "--max-active-params N caps the parameters one token runs: experts.active_parameters for a mixture of "
       "experts (parameters.framework less (experts - k) x one expert in every MoE layer), parameters.framework for "
       "a model without experts. A mixture of experts whose active count is unknown fails the gate unless its "
       "whole count is already within the budget.",
       "active parameters", active_parameters, nullptr},
  };
  return gates;
}

const BudgetGate* find_budget_gate(const std::string& id) {
  for (const auto& g : budget_gates()) {
    if (id == g.id) return &g;
  }
  return nullptr;
}

uint64_t parse_limit(const BudgetGate& gate, const std::string& text) {
  return gate.unit == BudgetUnit::Bytes ? parse_bytes(text) : parse_count(text);
}

const std::vector<GateKind>& gate_kinds() {
  static const std::vector<GateKind> kinds = [] {
    std::vector<GateKind> k;
    for (const auto& g : budget_gates()) k.push_back({g.id, g.summary, g.doc});
    k.push_back({"fail-on", "a finding reached the --fail-on severity",
                 "--fail-on SEVERITY fails the model when any finding is at or above it (error, warning or info). The "
                 "findings themselves are reported under their own rules."});
    k.push_back({"checkpoint", "the export lost or changed a weight of its --checkpoint",
                 "--checkpoint PATH compares the exported model with the safetensors or GGUF checkpoint it came from: "
                 "every checkpoint tensor is looked for by its values (as stored, transposed, reshaped, or packed into a "
                 "larger tensor), across dtype conversions (compared at the narrower type). The gate fails when a "
                 "checkpoint tensor is lost (no export tensor holds its values or pairs with it) or changed (paired by "
                 "name, role or shape with an export tensor whose values differ). Tensors stored twice, packed or "
                 "added are reported and do not fail it."});
    k.push_back({"adapter-base", "a LoRA adapter does not fit its --base",
                 "--base MODEL checks a LoRA adapter (PEFT, MLX or GGUF) against the model it is for (an export, a "
                 "checkpoint, an hf:// id, a config.json): each module the adapter changes is looked for in the base by its path from "
                 "the layer on (layers.0.self_attn.q_proj), and fails the gate when the base's tensor has other widths "
                 "than the adapter's factors, when a module's factors make no matrix, or when a checkpoint base, or a "
                 "config of a family whose modules are named as LLaMA's, holds no such module. An export whose tensor "
                 "names do not show a module leaves it unchecked (the report lists it), as does a config of another "
                 "family; a base in which no module could be checked fails the gate, since nothing was proven."});
    k.push_back({"baseline", "the model moved from its --baseline report",
                 "--baseline REPORT compares the model with its entry (by path) in an earlier --format json or jsonl "
                 "report: parameters.framework and parameters.attention within --tolerance, and the number of attention "
                 "blocks and each block's heads, key/value heads and width exactly. A model the baseline has no entry "
                 "for fails it."});
    return k;
  }();
  return kinds;
}

namespace {

// The budget gates: ceilings first, then the gates that expect a value, each in the table's order.
void check_budgets(const Audit& a, const GateOptions& o, std::vector<GateFailure>& out) {
  for (bool ceilings : {true, false}) {
    for (const auto& g : budget_gates()) {
      auto limit = o.budget.limits.find(g.id);
      if (limit == o.budget.limits.end() || (g.measure != nullptr) != ceilings) continue;
      auto failed = g.measure ? judge(g, g.measure(a), limit->second) : g.expect(a, limit->second);
      if (failed) out.push_back({g.id, *failed});
    }
  }
}

void check_fail_on(const Audit& a, const GateOptions& o, std::vector<GateFailure>& out) {
  size_t count = 0;
  std::string first;
  for (const auto& f : a.findings) {
    if (f.severity >= *o.fail_on) {
      if (!count) first = f.rule;
      ++count;
    }
  }
  if (count) {
    out.push_back({"fail-on", std::to_string(count) + (count == 1 ? " finding" : " findings") + " at or above " +
                                  severity_name(*o.fail_on) + " (first: " + first + ")"});
  }
}

// The model's entry in the baseline, or nullptr with the failure said in out: no entry, or one
// written with the other --no-content setting.
const BaselineModel* baseline_entry(const Audit& a, const Baseline& bl, std::vector<GateFailure>& out) {
  // Matched by path, normalized; a baseline of many models compares only the ones of this run.
  std::string key = baseline_key(a.model.path);
  const BaselineModel* base = nullptr;
  for (const auto& m : bl.models) {
    if (m.key == key) base = &m;
  }
  if (!base) {
    out.push_back({"baseline", "the baseline '" + bl.path + "' has no entry for '" + key + "' (it holds: " + names_of(bl) +
                                   "); write it again with this model in the run"});
    return nullptr;
  }
  if (base->content_compared != a.content_compared) {
    out.push_back({"baseline", std::string(base->content_compared
                                               ? "the baseline was written without --no-content and this run uses it"
                                               : "the baseline was written with --no-content and this run without it") +
                                   ": their parameter counts are not comparable; run both the same way"});
    return nullptr;
  }
  return base;
}

void check_moved(const GateOptions& o, const char* what, uint64_t now, uint64_t before, std::vector<GateFailure>& out) {
  // A percentage tolerance is a share of the baseline's own value of this count, exact.
  uint64_t allowed = o.tolerance;
  if (o.tolerance_ppb > 0) {
    // before · ppb / 1e9 without overflow: (q·1e9 + r) · ppb / 1e9 = q·ppb + r·ppb / 1e9, where
    // q·ppb <= before (ppb <= 1e9) and r·ppb < 1e18.
    constexpr uint64_t kBillion = 1000000000u;
    allowed = before / kBillion * o.tolerance_ppb + before % kBillion * o.tolerance_ppb / kBillion;
  }
  uint64_t d = now > before ? now - before : before - now;
  if (d > allowed) {
    out.push_back({"baseline", std::string(what) + " moved from " + with_commas(before) + " to " + with_commas(now) + " (" +
                                   diff_of(now, before) + "; tolerance " + with_commas(allowed) + ")"});
  }
}

// The number of blocks, and each block's heads, K/V heads and width, exactly.
void check_blocks(const Audit& a, const BaselineModel& base, std::vector<GateFailure>& out) {
  if (base.blocks.size() != a.attention.blocks.size()) {
    out.push_back({"baseline", "attention blocks changed from " + std::to_string(base.blocks.size()) + " to " +
                                   std::to_string(a.attention.blocks.size())});
  }
  size_t n = std::min(base.blocks.size(), a.attention.blocks.size());
  for (size_t i = 0; i < n; ++i) {
    const auto& was = base.blocks[i];
    const auto& now = a.attention.blocks[i];
    std::vector<std::string> changes;
    if (was.heads != now.heads) changes.push_back("heads " + heads_text(was.heads) + " → " + heads_text(now.heads));
    if (was.kv_heads != now.kv_heads) changes.push_back("kv_heads " + heads_text(was.kv_heads) + " → " + heads_text(now.kv_heads));
    std::optional<int64_t> width = now.width > 0 ? std::optional<int64_t>(now.width) : std::nullopt;
    if (was.width != width) changes.push_back("width " + heads_text(was.width) + " → " + heads_text(width));
    if (!changes.empty()) {
      std::string msg = "block " + std::to_string(i) + " changed:";
      for (size_t c = 0; c < changes.size(); ++c) msg += (c ? ", " : " ") + changes[c];
      out.push_back({"baseline", msg});
    }
  }
}

}  // namespace

std::vector<GateFailure> check_gates(const Audit& a, const GateOptions& o) {
  std::vector<GateFailure> out;
  check_budgets(a, o, out);
  if (o.fail_on) check_fail_on(a, o, out);
  if (a.adapter && a.adapter->fit) {
    const AdapterFit& f = *a.adapter->fit;
    if (!f.misfits.empty()) {
      out.push_back({"adapter-base", std::to_string(f.misfits.size()) + " of the adapter's modules do not fit the base '" +
                                         f.base + "': " + f.misfits.front() + (f.misfits.size() > 1 ? "; ..." : "")});
    } else if (f.fitted == 0) {  // a pass must rest on a module checked, never on none
      out.push_back({"adapter-base", "none of the adapter's modules could be checked against the base '" + f.base +
                                         "': its tensor names do not show them"});
    }
  }
  if (a.fidelity && a.fidelity->failed()) {
    out.push_back({"checkpoint", a.fidelity->outcome});
  }
  if (o.baseline) {
    const BaselineModel* base = baseline_entry(a, *o.baseline, out);
    if (!base) return out;
    check_moved(o, "parameters", a.framework.parameters, base->framework, out);
    check_moved(o, "attention parameters", a.attention.parameters, base->attention, out);
    check_blocks(a, *base, out);
  }
  return out;
}

}  // namespace headcount
