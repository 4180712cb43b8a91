// adapter.cpp: a LoRA adapter read from a checkpoint (adapter.h). The three tools write the same
// thing three ways: PEFT `M.lora_A.weight` [r, in] and `M.lora_B.weight` [out, r] (embeddings
// `M.lora_embedding_A` [r, vocab] and `M.lora_embedding_B` [dim, r], DoRA's
// `M.lora_magnitude_vector` [out]); llama.cpp's GGUF `M.weight.lora_a` and `.lora_b`, the same
// shapes as PEFT's once GGUF's dims are read outermost first; MLX `M.lora_a` [in, r] and
// `M.lora_b` [r, out] (DoRA's `M.m` [out]). Every other tensor of an adapter is a whole module
// saved beside it (PEFT's modules_to_save, a classifier's head).
#include "headcount/adapter.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "checkpoint/model.h"
#include "headcount/checkpoint_index.h"
#include "headcount/dtypes.h"
#include "paths.h"

namespace headcount {
namespace {

enum class Factor { A, B, Magnitude };

struct Suffix {
  const char* text;
  Factor factor;
  bool peft;       // a PEFT name (lora_A/lora_B), as opposed to MLX's or llama.cpp's lora_a/lora_b
  bool embedding;  // PEFT's embedding factors: A [r, vocab], B [dim, r]
};

const Suffix kSuffixes[] = {
    {".lora_A.weight", Factor::A, true, false},          {".lora_B.weight", Factor::B, true, false},
    {".lora_A", Factor::A, true, false},                 {".lora_B", Factor::B, true, false},
    {".lora_embedding_A", Factor::A, true, true},        {".lora_embedding_B", Factor::B, true, true},
    {".lora_magnitude_vector.weight", Factor::Magnitude, true, false},
    {".lora_magnitude_vector", Factor::Magnitude, true, false},
    {".lora_a", Factor::A, false, false},                {".lora_b", Factor::B, false, false},
};

// Modules that pack several projections into one, and what they hold.
const std::pair<const char*, const char*> kPacked[] = {
    {"c_attn", "Q, K and V"},   {"qkv_proj", "Q, K and V"}, {"query_key_value", "Q, K and V"},
    {"Wqkv", "Q, K and V"},     {"attn_qkv", "Q, K and V"}, {"gate_up_proj", "gate and up"},
};

// One module of one layer: its factors' weight indices.
struct Instance {
  int a = -1, b = -1, magnitude = -1;
  bool embedding = false;
};

// A module's path without the format's wrapping: PEFT's "base_model.model." and GGUF's ".weight".
std::string module_path(std::string path) {
  if (path.rfind("base_model.model.", 0) == 0) path = path.substr(17);
  if (ends_with(path, ".weight")) path.resize(path.size() - 7);
  return path;
}

// The module's name (its last component) and whether it is inside a layer (an index after a
// layer container, as a checkpoint's names are read: checkpoint/model.h).
std::pair<std::string, bool> module_name(const std::string& path) {
  const std::vector<std::string_view> parts = name_parts(path);
  return {std::string(parts.back()), layer_index_at(parts) < parts.size()};
}

// The weights of `model` named as LoRA factors, by module path; `format` says whose names they are.
std::map<std::string, Instance> find_factors(const Model& model, std::string& format, std::vector<std::string>& notes) {
  std::map<std::string, Instance> out;
  bool peft = false, other = false;
  for (size_t wi = 0; wi < model.weights.size(); ++wi) {
    const std::string name(model.weights[wi].name);
    for (const Suffix& s : kSuffixes) {
      if (!ends_with(name, s.text)) continue;
      const std::string path = module_path(name.substr(0, name.size() - std::string(s.text).size()));
      Instance& in = out[path];
      int& slot = s.factor == Factor::A ? in.a : s.factor == Factor::B ? in.b : in.magnitude;
      if (slot >= 0) {  // a second name for one factor ("M.lora_A.weight" and "M.lora_A"): the first is the factor
        notes.push_back(path + " has a second " + (s.factor == Factor::A ? "A" : s.factor == Factor::B ? "B" : "magnitude") +
                        " factor, " + name + ": it is counted as a module saved beside the factors");
        break;
      }
      slot = static_cast<int>(wi);
      in.embedding |= s.embedding;
      (s.peft ? peft : other) = true;
      break;
    }
  }
  bool gguf = model.checkpoint && model.checkpoint->kind == FormatKind::Gguf;
  format = peft ? "PEFT" : gguf ? "GGUF" : other ? "MLX" : "";
  if (format == "MLX") {  // MLX's DoRA keeps each module's magnitude as M.m
    for (size_t wi = 0; wi < model.weights.size(); ++wi) {
      const std::string name(model.weights[wi].name);
      if (!ends_with(name, ".m")) continue;
      auto it = out.find(module_path(name.substr(0, name.size() - 2)));
      if (it != out.end()) it->second.magnitude = static_cast<int>(wi);
    }
  }
  return out;
}

// An instance's rank, input and output widths from its factors' shapes (0 when unknown), and a
// note when the factors do not agree.
struct Widths {
  int64_t rank = 0, in = 0, out = 0;
  std::string problem;
};

Widths widths_of(const Model& m, const std::string& path, const Instance& in, bool transposed) {
  Widths w;
  if (in.a < 0 && in.b < 0) {  // a DoRA magnitude alone
    w.problem = path + " has a magnitude vector but neither factor";
    return w;
  }
  if (in.a < 0 || in.b < 0) {
    w.problem = path + " has its " + std::string(in.a < 0 ? "B" : "A") + " factor but not its " + (in.a < 0 ? "A" : "B");
    return w;
  }
  const auto& a = m.weights[static_cast<size_t>(in.a)].dims;
  const auto& b = m.weights[static_cast<size_t>(in.b)].dims;
  if (a.size() != 2 || b.size() != 2) {
    w.problem = path + ": its factors are not matrices";
    return w;
  }
  // PEFT and GGUF: A [r, in], B [out, r]; MLX: A [in, r], B [r, out].
  int64_t ra = transposed ? a[1] : a[0], rb = transposed ? b[0] : b[1];
  w.in = transposed ? a[0] : a[1];
  w.out = transposed ? b[1] : b[0];
  w.rank = ra;
  if (ra != rb) w.problem = path + ": A's rank " + std::to_string(ra) + " and B's " + std::to_string(rb) + " disagree";
  return w;
}

// The strings of `j`'s `key`: one string, or a list's strings. Read in place: a copy of a value
// nested 100,000 deep would recurse as deep.
std::vector<std::string> strings_of(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  const nlohmann::json& v = *it;
  if (v.is_string()) out.push_back(v.get<std::string>());
  if (v.is_array()) {
    for (const auto& e : v) {
      if (e.is_string()) out.push_back(e.get<std::string>());
    }
  }
  return out;
}

// A whole number of a config (a rank): an integer in int64's range, else nothing. A float is not
// converted (a rank of 1e300 or NaN would be undefined as an integer).
std::optional<int64_t> whole(const nlohmann::json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    return u <= static_cast<uint64_t>(INT64_MAX) ? std::optional<int64_t>(static_cast<int64_t>(u)) : std::nullopt;
  }
  return v.get<int64_t>();
}

std::optional<int64_t> whole_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? std::nullopt : whole(*it);
}

// A string or a flag of a config, read only when it has that type (PEFT writes null for a base it
// was not given; a hostile config writes anything): "" and false otherwise.
std::string text_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

bool flag_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

std::optional<double> number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// PEFT's adapter_config.json ({"peft_type": "LORA", "r", "lora_alpha", "target_modules", ...}) or
// MLX's ({"fine_tune_type", "lora_parameters": {"rank", "scale", "keys"}, "model"}).
// PEFT's target_modules: a list of module names (each matches a path's tail), or one string that
// is a regular expression over whole paths, or "all-linear" (every linear layer but the output).
// Only a list is checked against the factors; a pattern is said not to be.
void read_targets(const nlohmann::json& j, Adapter& ad) {
  auto it = j.find("target_modules");
  if (it == j.end() || !it->is_string()) {
    ad.declared_targets = strings_of(j, "target_modules");
    return;
  }
  const std::string pattern = it->get<std::string>();
  if (pattern == "all-linear") return;
  ad.notes.push_back("the config targets the modules whose paths match the pattern '" +
                     (pattern.size() > 80 ? pattern.substr(0, 80) + "..." : pattern) +
                     "': which modules that reaches is not checked");
}

// PEFT's rank_pattern ({"q_proj": 16}, a regular expression of module names to its rank): the
// ranks it gives, which a factor may have beside r.
std::set<int64_t> pattern_ranks(const nlohmann::json& j) {
  std::set<int64_t> out;
  auto it = j.find("rank_pattern");
  if (it == j.end() || !it->is_object()) return out;
  for (const auto& [key, value] : it->items()) {
    if (auto r = whole(value)) out.insert(*r);
  }
  return out;
}

// A note for a setting the config gives but that is not read: a rank of "8" or 8.5, an alpha of
// NaN or "16", targets that are a number. Said, never dropped silently.
void note_unread(const nlohmann::json& j, const char* key, const std::string& shown, bool read, Adapter& ad) {
  auto it = j.find(key);
  if (read || it == j.end() || it->is_null()) return;
  // A scalar as written; an object or a list by its kind (dumping one nested 100,000 deep would recurse as deep).
  std::string value = it->is_structured() ? std::string("an ") + (it->is_object() ? "object" : "array") : it->dump();
  if (value.size() > 40) value = value.substr(0, 40) + "...";
  ad.notes.push_back("the config's " + shown + " is " + value + ", not what it must be (" +
                     (shown == "target_modules" || shown == "lora_parameters.keys" ? "a name or a list of names" : "a number") +
                     "): it is not read");
}

void read_config(const nlohmann::json& j, Adapter& ad, std::set<int64_t>& ranks) {
  if (auto lp = j.find("lora_parameters"); lp != j.end() && lp->is_object()) {
    ad.declared_rank = whole_number(*lp, "rank");
    if ((ad.scale = number(*lp, "scale"))) ad.scale_from = "lora_parameters.scale";
    ad.declared_targets = strings_of(*lp, "keys");
    note_unread(*lp, "rank", "lora_parameters.rank", ad.declared_rank.has_value(), ad);
    note_unread(*lp, "scale", "lora_parameters.scale", ad.scale.has_value(), ad);
    note_unread(*lp, "keys", "lora_parameters.keys", !ad.declared_targets.empty(), ad);
    if (text_of(j, "fine_tune_type") == "dora") ad.method = "DoRA";
    ad.base = text_of(j, "model");
    if (ad.declared_rank) ranks.insert(*ad.declared_rank);
    return;
  }
  ad.declared_rank = whole_number(j, "r");
  ad.alpha = number(j, "lora_alpha");
  read_targets(j, ad);
  note_unread(j, "r", "r", ad.declared_rank.has_value(), ad);
  note_unread(j, "lora_alpha", "lora_alpha", ad.alpha.has_value(), ad);
  const auto targets = j.find("target_modules");
  note_unread(j, "target_modules", "target_modules", !ad.declared_targets.empty() || (targets != j.end() && targets->is_string()), ad);
  ad.base = text_of(j, "base_model_name_or_path");
  if (flag_of(j, "use_dora")) ad.method = "DoRA";
  if (auto f = j.find("fan_in_fan_out"); f != j.end() && f->is_boolean()) ad.fan_in_fan_out = f->get<bool>();
  if (ad.declared_rank) ranks.insert(*ad.declared_rank);
  ranks.merge(pattern_ranks(j));
  if (ad.alpha && ad.declared_rank && *ad.declared_rank > 0) {
    bool rs = flag_of(j, "use_rslora");
    ad.scale = *ad.alpha / (rs ? std::sqrt(static_cast<double>(*ad.declared_rank)) : static_cast<double>(*ad.declared_rank));
    ad.scale_from = rs ? "lora_alpha / sqrt(r) (rsLoRA)" : "lora_alpha / r";
    for (const char* key : {"rank_pattern", "alpha_pattern"}) {
      auto p = j.find(key);
      if (p != j.end() && p->is_object() && !p->empty()) {
        ad.scale_from += "; the modules rank_pattern or alpha_pattern names have their own";
        break;
      }
    }
  }
}

// llama.cpp's adapter metadata: general.type "adapter", adapter.type "lora", adapter.lora.alpha.
void read_gguf_metadata(const Model& m, Adapter& ad) {
  const auto& md = m.checkpoint->metadata;
  auto type = md.find("adapter.type");
  if (type == md.end()) return;
  ad.config = "GGUF metadata";
  if (type->second.type != CheckpointValue::Type::String) {
    ad.notes.push_back("adapter.type is of type " + type->second.type_name + ", not the string lora");
  } else if (type->second.s != "lora") {
    ad.notes.push_back("adapter.type is '" + type->second.s + "', not lora");
  }
  auto alpha = md.find("adapter.lora.alpha");
  if (alpha != md.end()) {
    const CheckpointValue& v = alpha->second;
    using T = CheckpointValue::Type;
    if (v.type != T::Float && v.type != T::Signed && v.type != T::Unsigned) {
      ad.notes.push_back("adapter.lora.alpha is of type " + v.type_name + ", not a number: the alpha is not read");
      return;
    }
    double a = v.type == T::Float ? v.f : v.type == T::Signed ? static_cast<double>(v.i) : static_cast<double>(v.u);
    if (std::isfinite(a)) {
      ad.alpha = a;
    } else {
      ad.notes.push_back("adapter.lora.alpha is " + std::string(std::isnan(a) ? "NaN" : "infinite") + ": the alpha is not read");
    }
  }
}

// A module path's tails that a declared target may be: the path and each part after a dot
// ("model.layers.0.q_proj", "layers.0.q_proj", "0.q_proj", "q_proj"), as names_module matches.
std::vector<std::string_view> tails_of(std::string_view path) {
  std::vector<std::string_view> out{path};
  for (size_t dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1)) out.push_back(path.substr(dot + 1));
  return out;
}

// The declared targets against the factors' modules, through a set of the targets (a config may
// name 100,000 and an adapter hold 10,000 modules: never each against each), each named once.
void check_targets(const std::map<std::string, Instance>& factors, Adapter& ad) {
  if (ad.declared_targets.empty()) return;
  const std::set<std::string, std::less<>> declared(ad.declared_targets.begin(), ad.declared_targets.end());
  std::set<std::string, std::less<>> found;
  std::set<std::string> undeclared;
  for (const auto& factor : factors) {
    bool targeted = false;
    for (std::string_view tail : tails_of(factor.first)) {
      auto it = declared.find(tail);
      if (it == declared.end()) continue;
      targeted = true;
      found.insert(*it);
    }
    if (!targeted) undeclared.insert(module_name(factor.first).first);
  }
  std::vector<std::string> missing;
  for (const std::string& t : declared) {
    if (!found.count(t)) missing.push_back(t);
  }
  const size_t shown = missing.size() > 10 ? 10 : missing.size();  // a config may name 100,000: ten, and how many more
  for (size_t k = 0; k < shown; ++k) ad.notes.push_back("the config targets '" + missing[k] + "', which no factor belongs to");
  if (missing.size() > shown) {
    ad.notes.push_back("the config targets " + std::to_string(missing.size() - shown) + " more modules which no factor belongs to");
  }
  for (const std::string& u : undeclared) ad.notes.push_back("'" + u + "' has factors, but the config does not target it");
}

// PEFT's layers_to_transform: the layer indices its targets are in (one, or a list); nothing when
// the config gives none, and a note when it gives something else.
std::optional<std::set<int64_t>> transformed_layers(const nlohmann::json& j, Adapter& ad) {
  auto it = j.find("layers_to_transform");
  if (it == j.end() || it->is_null()) return std::nullopt;
  std::set<int64_t> out;
  bool read = true;
  if (auto one = whole(*it)) {
    out.insert(*one);
  } else if (it->is_array()) {
    for (const auto& e : *it) {
      auto n = whole(e);
      read = read && n;
      if (n) out.insert(*n);
    }
  } else {
    read = false;
  }
  if (!read) {
    ad.notes.push_back("the config's layers_to_transform is not a layer index or a list of them: it is not read");
    return std::nullopt;
  }
  return out;
}

// Factors in a layer that layers_to_transform leaves out: the first, and how many.
void check_layers(const std::map<std::string, Instance>& factors, const std::set<int64_t>& layers, Adapter& ad) {
  size_t outside = 0;
  std::string first;
  for (const auto& factor : factors) {
    const std::vector<std::string_view> parts = name_parts(factor.first);
    const size_t at = layer_index_at(parts);
    if (at == parts.size()) continue;
    int64_t layer = 0;
    const auto [end, ec] = std::from_chars(parts[at].data(), parts[at].data() + parts[at].size(), layer);
    if (ec != std::errc() || layers.count(layer)) continue;
    if (outside++ == 0) first = factor.first;
  }
  if (outside) {
    ad.notes.push_back(first + (outside > 1 ? " and " + std::to_string(outside - 1) + " more modules have" : " has") +
                       " factors in a layer the config's layers_to_transform leaves out");
  }
}

void add_instance(const Model& m, const std::string& path, const Instance& in, const Widths& w,
                  std::map<std::string, AdapterTarget>& targets, Adapter& ad) {
  auto [name, in_layer] = module_name(path);
  AdapterTarget& t = targets[name];
  if (t.module.empty()) {
    t.module = name;
    t.in = w.in;
    t.out = w.out;
    for (const auto& [packed, reaches] : kPacked) {
      if (name == packed) t.reaches = reaches;
    }
  } else if (t.in != w.in || t.out != w.out) {
    t.in = t.out = 0;  // widths that differ among layers
  }
  t.layers += in_layer ? 1 : 0;
  ad.modules.push_back({path, w.in, w.out, w.problem, in.embedding});
  if (w.rank > 0 && std::find(t.ranks.begin(), t.ranks.end(), w.rank) == t.ranks.end()) {
    t.ranks.push_back(w.rank);
    std::sort(t.ranks.begin(), t.ranks.end());
  }
  for (int wi : {in.a, in.b, in.magnitude}) {
    if (wi < 0) continue;
    uint64_t n = m.weights[static_cast<size_t>(wi)].elements;
    t.parameters += n;
    (wi == in.magnitude ? ad.magnitudes : ad.lora) += n;
    if (wi == in.magnitude) t.magnitudes += n;
    ad.factors.push_back(wi);
  }
}

}  // namespace

std::optional<Adapter> read_adapter(const Model& model, const std::string& config_text, const std::string& config_name) {
  if (!model.checkpoint) return std::nullopt;
  Adapter ad;
  std::set<int64_t> declared_ranks;  // r, and the ranks of rank_pattern
  std::optional<std::set<int64_t>> layers;  // layers_to_transform
  std::map<std::string, Instance> factors = find_factors(model, ad.format, ad.notes);
  if (factors.empty()) return std::nullopt;
  ad.method = "LoRA";
  if (ad.format == "GGUF") read_gguf_metadata(model, ad);
  if (!config_text.empty()) {
    nlohmann::json j = nlohmann::json::parse(config_text, nullptr, false);
    if (j.is_object()) {
      ad.config = config_name;
      read_config(j, ad, declared_ranks);
      layers = transformed_layers(j, ad);
    } else {
      // A config that could not be read comes as a JSON string saying why (audit.cpp's read_adapter_config).
      std::string why = j.is_discarded() ? "is not valid JSON" : "is not a JSON object";
      if (j.is_string()) why += " (" + j.get<std::string>().substr(0, 80) + ")";
      ad.notes.push_back(config_name + " " + why + ": the adapter's settings are not read");
    }
  }
  std::map<std::string, AdapterTarget> targets;
  for (const auto& [path, in] : factors) {
    Widths w = widths_of(model, path, in, ad.format == "MLX");
    if (!w.problem.empty()) ad.notes.push_back(w.problem);
    if (in.magnitude >= 0) ad.method = "DoRA";
    add_instance(model, path, in, w, targets, ad);
  }
  for (auto& [name, t] : targets) ad.targets.push_back(std::move(t));
  std::sort(ad.factors.begin(), ad.factors.end());
  for (size_t wi = 0; wi < model.weights.size(); ++wi) {
    if (!std::binary_search(ad.factors.begin(), ad.factors.end(), static_cast<int>(wi)) && model.weights[wi].parameter) {
      ad.saved_modules.push_back(static_cast<int>(wi));
      ad.saved += model.weights[wi].elements;
    }
  }
  ad.total = ad.lora + ad.magnitudes + ad.saved;
  // The scale llama.cpp applies: alpha / rank, when every target has one rank.
  std::set<int64_t> ranks;
  for (const AdapterTarget& t : ad.targets) ranks.insert(t.ranks.begin(), t.ranks.end());
  if (ad.format == "GGUF" && ad.alpha && *ad.alpha != 0 && ranks.size() == 1 && *ranks.begin() > 0) {
    ad.scale = *ad.alpha / static_cast<double>(*ranks.begin());
    ad.scale_from = "adapter.lora.alpha / rank";
  }
  if (ad.declared_rank) {
    for (int64_t r : ranks) {
      if (!declared_ranks.count(r))
        ad.notes.push_back("the config's rank is " + std::to_string(*ad.declared_rank) + (declared_ranks.size() > 1 ? " (and its rank_pattern's)" : "") +
                           ", but factors have rank " + std::to_string(r));
    }
  }
  check_targets(factors, ad);
  if (layers) check_layers(factors, *layers, ad);
  return ad;
}

namespace {

// A module's key for finding it in another model: its path from the layer container on
// ("layers.0.self_attn.q_proj", "h.3.attn.c_attn", "blk.0.attn_q"), or its last component
// outside the layers ("embed_tokens").
std::string module_key(const std::string& path) {
  const std::vector<std::string_view> parts = name_parts(path);
  const size_t at = layer_index_at(parts);
  if (at == parts.size()) return std::string(parts.back());
  std::string key;
  for (size_t k = at - 1; k < parts.size(); ++k) key += (key.empty() ? "" : ".") + std::string(parts[k]);
  return key;
}

}  // namespace

namespace {

// The last components of the tensors a quantized module is stored as (GPTQ, AWQ, compressed
// tensors, bitsandbytes' 8-bit SCB): the module is there, its widths are not in its shapes.
const char* const kQuantizedParts[] = {"qweight", "qzeros", "scales", "g_idx", "weight_packed", "weight_scale", "SCB"};

// bitsandbytes' 4-bit weight: NAME.weight as bytes in one column, beside NAME.weight.absmax ...
bool packed_bytes(const Weight& w) {
  static const int32_t u8 = checkpoint_dtype("U8")->onnx, i8 = checkpoint_dtype("I8")->onnx;
  return (w.dtype == u8 || w.dtype == i8) && w.dims.size() == 2 && w.dims[1] == 1;
}

}  // namespace

std::vector<BaseMatrix> base_matrices(const Model& base) {
  std::vector<BaseMatrix> out;
  std::set<std::string> known, quantized;
  for (const Weight& w : base.weights) {
    const std::string name(w.name);
    if (w.dims.size() == 2 && ends_with(name, ".weight") && !packed_bytes(w)) {
      out.push_back({name.substr(0, name.size() - 7), w.dims[0], w.dims[1]});
      known.insert(out.back().path);
      continue;
    }
    const size_t inner = name.find(".weight.");  // NAME.weight.absmax, NAME.weight.quant_state...
    const size_t dot = name.rfind('.');
    if (inner != std::string::npos) {
      quantized.insert(name.substr(0, inner));
    } else if (dot != std::string::npos && (packed_bytes(w) || std::any_of(std::begin(kQuantizedParts), std::end(kQuantizedParts),
                                                                             [&](const char* p) { return name.compare(dot + 1, std::string::npos, p) == 0; }))) {
      quantized.insert(name.substr(0, dot));
    }
  }
  for (const std::string& path : quantized) {
    if (!known.count(path)) out.push_back({path, 0, 0, false});
  }
  return out;
}

namespace {

// The families whose Hugging Face modeling names every linear module of a layer as LLaMA does
// (self_attn.q/k/v/o_proj, mlp.gate/up/down_proj) and nothing else: for them a config proves which
// modules a model holds. Others pack them (Phi-3's qkv_proj), name them otherwise (GPT-2's c_attn,
// BERT's query) or hold experts, and a config of theirs proves nothing about a module's name. The
// config is the language model's own (not a wrapper's text_config, whose vision tower has modules
// of the same names and other widths).
bool llama_named(const ModelConfig& c) {
  static const char* const kFamilies[] = {"llama", "mistral", "qwen2", "qwen3", "gemma2", "olmo2", "smollm3"};
  return std::any_of(std::begin(kFamilies), std::end(kFamilies), [&](const char* f) { return c.family == f; }) &&
         c.model_type == c.family && c.vision.empty() && !c.experts.positive() && !c.q_lora_rank.positive() &&
         !c.kv_lora_rank.positive();
}

}  // namespace

std::vector<BaseMatrix> config_matrices(const ModelConfig& c) {
  std::vector<BaseMatrix> out;
  auto known = [](const Int& v) { return v.positive() && *v < (int64_t{1} << 40); };
  // Every matrix, or none: a config whose names or numbers are not all known proves no module
  // absent. At most kMostLayers layers (a model has hundreds; 100,000 made 700,000 matrices, 160 MB).
  constexpr int64_t kMostLayers = 10000;
  if (!llama_named(c) || !known(c.hidden) || !known(c.vocab) || !known(c.layers) || *c.layers > kMostLayers || !known(c.heads) ||
      !known(c.intermediate)) {
    return out;
  }
  const int64_t width = *c.hidden;
  const Int head_dim = known(c.head_dim) ? c.head_dim : (width % *c.heads == 0 ? Int(width / *c.heads) : Int());
  const Int q = c.heads * head_dim, kv = (known(c.kv_heads) ? c.kv_heads : c.heads) * head_dim;  // checked: 2^40 · 2^40 overflows
  if (!known(head_dim) || !known(q) || !known(kv)) return out;
  out.reserve(static_cast<size_t>(2 + 7 * *c.layers));
  out.push_back({"model.embed_tokens", *c.vocab, width});
  out.push_back({"lm_head", *c.vocab, width});
  for (int64_t l = 0; l < *c.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    out.push_back({p + "self_attn.q_proj", *q, width});
    out.push_back({p + "self_attn.k_proj", *kv, width});
    out.push_back({p + "self_attn.v_proj", *kv, width});
    out.push_back({p + "self_attn.o_proj", width, *q});
    out.push_back({p + "mlp.gate_proj", *c.intermediate, width});
    out.push_back({p + "mlp.up_proj", *c.intermediate, width});
    out.push_back({p + "mlp.down_proj", width, *c.intermediate});
  }
  return out;
}

namespace {

// How many of two paths' last components agree ("model.vision.layers.0.q" and "vision.layers.0.q": 4).
size_t common_tail(const std::string& a, const std::string& b) {
  const std::vector<std::string_view> pa = name_parts(a), pb = name_parts(b);
  size_t n = 0;
  while (n < pa.size() && n < pb.size() && pa[pa.size() - 1 - n] == pb[pb.size() - 1 - n]) ++n;
  return n;
}

// The base's matrices a module of the adapter may be: of those with its key, the ones whose paths
// agree with its own furthest from the end (a multimodal base holds layers.0.self_attn.q_proj in
// its language model and in its vision tower); none when more than kMostAlike share the key.
constexpr size_t kMostAlike = 64;

std::vector<const BaseMatrix*> candidates(const std::multimap<std::string, const BaseMatrix*>& by_key, const std::string& path) {
  auto [first, last] = by_key.equal_range(module_key(path));
  std::vector<const BaseMatrix*> out;
  if (static_cast<size_t>(std::distance(first, last)) > kMostAlike) return out;
  size_t best = 0;
  for (auto it = first; it != last; ++it) {
    const size_t n = common_tail(path, it->second->path);
    if (n > best) out.clear(), best = n;
    if (n == best) out.push_back(it->second);
  }
  return out;
}

}  // namespace

AdapterFit fit_adapter(const Adapter& adapter, const std::vector<BaseMatrix>& base, bool names_prove, BaseLayout layout,
                       const std::string& shown, std::optional<uint64_t> parameters) {
  AdapterFit fit;
  fit.base = shown;
  fit.base_parameters = parameters;
  std::multimap<std::string, const BaseMatrix*> by_key;  // the base's matrices by module key
  for (const BaseMatrix& m : base) by_key.emplace(module_key(m.path), &m);
  for (const AdapterModule& m : adapter.modules) {
    if (!m.problem.empty()) {  // factors that make no matrix fit no base
      fit.misfits.push_back(m.problem);
      continue;
    }
    const size_t alike = by_key.count(module_key(m.path));
    const std::vector<const BaseMatrix*> found = candidates(by_key, m.path);
    if (alike == 0) {
      std::string what = m.path + (base.empty() ? ": the base's module names are not known"
                                                : ": the base holds no tensor " + module_key(m.path) + ".weight");
      // A checkpoint whose LM head is tied to its embedding saves no lm_head.weight; the module is
      // there all the same (Llama 3.2 1B, Gemma; llama.cpp's output.weight likewise): its absence proves nothing.
      const bool tied_head = module_key(m.path) == "lm_head" || (adapter.format == "GGUF" && module_key(m.path) == "output");
      if (tied_head) what += " (an LM head tied to the embedding is not saved)";
      (names_prove && !tied_head ? fit.misfits : fit.unchecked).push_back(what);
      continue;
    }
    auto fits = [&](const BaseMatrix* d) {  // as the layout says; an embedding's weight is [in (vocabulary), out] in any
      const bool out_in = d->rows == m.out && d->columns == m.in, in_out = d->rows == m.in && d->columns == m.out;
      if (m.embedding) return in_out || (layout == BaseLayout::Either && out_in);
      return layout == BaseLayout::OutIn ? out_in : layout == BaseLayout::InOut ? in_out : out_in || in_out;
    };
    if (!found.empty() && std::all_of(found.begin(), found.end(), [](const BaseMatrix* d) { return !d->widths_known; })) {
      fit.unchecked.push_back(m.path + ": the base stores " + found.front()->path + " quantized; its widths are not read");
      continue;
    }
    const size_t fitting = static_cast<size_t>(std::count_if(found.begin(), found.end(), fits));
    if (!found.empty() && fitting == found.size()) {
      ++fit.fitted;
    } else if (fitting == 0 && !found.empty()) {
      const BaseMatrix& d = *found.front();
      fit.misfits.push_back(m.path + ": the adapter is " + std::to_string(m.in) + " -> " + std::to_string(m.out) + ", the base's " +
                            d.path + ".weight is [" + std::to_string(d.rows) + ", " + std::to_string(d.columns) + "]");
    } else {  // tensors of its key that fit and that do not, and nothing in their paths to choose by
      fit.unchecked.push_back(m.path + ": the base holds " + std::to_string(alike) + " tensors " + module_key(m.path) +
                              ".weight, not told apart by their paths");
    }
  }
  return fit;
}

std::string find_adapter_config(const std::string& model_path) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::is_directory(model_path, ec) ? std::filesystem::path(model_path)
                                                                              : std::filesystem::path(model_path).parent_path();
  std::filesystem::path p = dir / "adapter_config.json";
  return std::filesystem::is_regular_file(p, ec) ? p.string() : "";
}

}  // namespace headcount
