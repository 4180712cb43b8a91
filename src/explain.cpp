// explain.cpp: the calculator, rule documentation and per-block derivations.
#include "headcount/explain.h"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headcount/cost.h"
#include "headcount/error.h"
#include "headcount/families.h"
#include "headcount/audit.h"
#include "checkpoint/model.h"
#include "render/layout.h"
#include "headcount/numbers.h"
#include "headcount/version.h"

namespace headcount {

const std::vector<ConventionInfo>& conventions() {
  static const std::vector<ConventionInfo> table = {
      {Convention::PyTorch, "pytorch", "PyTorch nn.MultiheadAttention(embed_dim, num_heads)",
       "embed_dim is the total width; head size is embed_dim / num_heads", false},
      {Convention::Keras, "keras", "Keras MultiHeadAttention(num_heads, key_dim, value_dim)",
       "key_dim and value_dim are PER HEAD", true},
      {Convention::Matlab, "matlab", "MATLAB selfAttentionLayer(NumHeads, NumKeyChannels)",
       "NumKeyChannels is the TOTAL over heads", false},
      {Convention::Flax, "flax", "Flax MultiHeadDotProductAttention(num_heads, qkv_features)",
       "qkv_features is the total over heads", false},
      {Convention::HuggingFace, "hf", "Hugging Face config (hidden_size, num_attention_heads, num_key_value_heads, head_dim)",
       "head_dim, when set, is per head; otherwise hidden_size / num_attention_heads", false},
  };
  return table;
}

const ConventionInfo* find_convention(const std::string& name) {
  for (const auto& c : conventions()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

namespace {

uint64_t checked_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (mul_overflows(a, b, &r)) throw InputError("the numbers are too large: the count overflows 64 bits");
  return r;
}

uint64_t checked_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (add_overflows(a, b, &r)) throw InputError("the numbers are too large: the count overflows 64 bits");
  return r;
}

std::string n(int64_t v) { return with_commas_signed(v); }

ProjectionCount projection(const std::string& role, int64_t in, int64_t heads, int64_t per_head, int64_t bias_len,
                           bool bias, bool out_is_heads) {
  ProjectionCount p;
  p.role = role;
  p.in = out_is_heads ? in : heads * per_head;
  p.out = out_is_heads ? heads * per_head : bias_len;
  p.weight = checked_mul(static_cast<uint64_t>(p.in), static_cast<uint64_t>(p.out));
  p.bias = bias ? static_cast<uint64_t>(p.out) : 0;
  std::string heads_expr = "(" + std::to_string(heads) + " × " + std::to_string(per_head) + ")";
  p.formula = out_is_heads ? std::to_string(in) + " × " + heads_expr : heads_expr + " × " + std::to_string(bias_len);
  if (bias) p.formula += " + " + (out_is_heads ? heads_expr : std::to_string(bias_len));
  p.formula += " = " + with_commas(checked_add(p.weight, p.bias));
  return p;
}

// The count of a block with given per-head sizes, for the "how heads move it" lines.
uint64_t count(int64_t w, int64_t h, int64_t dk, int64_t dv, int64_t kv, bool bias) {
  BlockSpec s;
  s.width = w;
  s.heads = h;
  s.head_dim = dk;
  s.v_head_dim = dv;
  s.kv_heads = kv;
  s.bias = bias;
  return calculate(s).total;
}

}  // namespace

Calculation calculate(const BlockSpec& spec) {
  Calculation c;
  if (spec.width <= 0) throw InputError("--width must be a positive number");
  if (spec.heads <= 0) throw InputError("--heads must be a positive number");
  c.width = spec.width;
  c.heads = spec.heads;
  c.bias = spec.bias;
  if (spec.head_dim && spec.key_channels) throw InputError("give --head-dim (per head) or --key-channels (total), not both");
  if (spec.head_dim) {
    c.head_dim = *spec.head_dim;
  } else if (spec.key_channels) {
    if (*spec.key_channels % spec.heads != 0) {
      throw InputError("--key-channels " + n(*spec.key_channels) + " is not divisible by " + n(spec.heads) + " heads");
    }
    c.head_dim = *spec.key_channels / spec.heads;
  } else {
    if (spec.width % spec.heads != 0) {
      throw InputError("width " + n(spec.width) + " is not divisible by " + n(spec.heads) +
                       " heads; give --head-dim to set the per-head size");
    }
    c.head_dim = spec.width / spec.heads;
  }
  c.v_head_dim = spec.v_head_dim ? *spec.v_head_dim : c.head_dim;
  c.kv_heads = spec.kv_heads ? *spec.kv_heads : spec.heads;
  if (c.head_dim <= 0 || c.v_head_dim <= 0 || c.kv_heads <= 0) throw InputError("sizes must be positive numbers");
  if (c.heads % c.kv_heads != 0) throw InputError(n(c.heads) + " heads cannot be grouped over " + n(c.kv_heads) + " K/V heads");
  for (int64_t v : {c.width, c.heads, c.head_dim, c.v_head_dim, c.kv_heads}) {
    if (v > (int64_t{1} << 31)) throw InputError("the numbers are too large: " + n(v));
  }
  c.projections.push_back(projection("Q", c.width, c.heads, c.head_dim, 0, c.bias, true));
  c.projections.push_back(projection("K", c.width, c.kv_heads, c.head_dim, 0, c.bias, true));
  c.projections.push_back(projection("V", c.width, c.kv_heads, c.v_head_dim, 0, c.bias, true));
  c.projections.push_back(projection("O", c.width, c.heads, c.v_head_dim, c.width, c.bias, false));
  for (const auto& p : c.projections) c.total = checked_add(c.total, checked_add(p.weight, p.bias));
  uint64_t w = static_cast<uint64_t>(c.width);
  c.standard = checked_add(checked_mul(4, checked_mul(w, w)), c.bias ? checked_mul(4, w) : 0);
  return c;
}

int64_t sliding_layers(const CostSpec& cost) {
  if (!cost.window || cost.layers <= 0) return 0;
  const int64_t period = cost.sliding + cost.full;
  if (period <= 0) return cost.layers;
  return cost.layers / period * cost.sliding + std::min(cost.layers % period, cost.sliding);
}

std::string explain_cost(const BlockSpec& spec, const CostSpec& cost) {
  Calculation c = calculate(spec);
  if (cost.layers <= 0) throw InputError("--layers must be 1 or more");
  if (cost.sliding < 0 || cost.full < 0) throw InputError("--sliding takes two counts of layers, A:B");
  auto product = [](std::initializer_list<uint64_t> xs) {
    uint64_t r = 1;
    for (uint64_t x : xs) {
      if (mul_overflows(r, x, &r)) throw InputError("the cost does not fit in 64 bits");
    }
    return r;
  };
  auto sum = [](uint64_t a, uint64_t b) {
    uint64_t r = 0;
    if (add_overflows(a, b, &r)) throw InputError("the cost does not fit in 64 bits");
    return r;
  };
  const uint64_t L = static_cast<uint64_t>(cost.layers), hkv = static_cast<uint64_t>(c.kv_heads),
                 h = static_cast<uint64_t>(c.heads), dk = static_cast<uint64_t>(c.head_dim),
                 dv = static_cast<uint64_t>(c.v_head_dim), N = cost.context;
  // bytes = layers x kv_heads x (d_k + d_v) x bits / 8, rounded up for 4-bit caches.
  uint64_t bits = product({L, hkv, dk + dv, static_cast<uint64_t>(cost.kv_bits)});
  uint64_t per_token = (bits + 7) / 8;
  std::string size = cost.kv_bits % 8 == 0 ? std::to_string(cost.kv_bits / 8) + " bytes" : std::to_string(cost.kv_bits) + " bits";
  // Sliding layers keep, and score, at most the window.
  const uint64_t S = static_cast<uint64_t>(sliding_layers(cost)), F = L - S;
  const uint64_t kept = cost.window && cost.window < N ? cost.window : N;
  const uint64_t layer_bits = product({hkv, dk + dv, static_cast<uint64_t>(cost.kv_bits)});
  uint64_t at_context = S ? (sum(product({F, layer_bits, N}), product({S, layer_bits, kept})) + 7) / 8 : product({per_token, N});
  std::ostringstream out;
  out << "\ninference cost of " << n(cost.layers) << " such blocks (" << cost.kv_dtype << " K/V, context " << with_commas(N)
      << "):\n";
  out << "  K/V per token     " << L << " layers × " << hkv << " K/V heads × (" << dk << " + " << dv << ") × " << size
      << " = " << with_commas(per_token) << " bytes (" << binary_bytes(per_token) << ")\n";
  if (S) {
    std::string pattern = cost.sliding + cost.full > 0 && cost.full > 0
                              ? " (" + n(cost.sliding) + " sliding, then " + n(cost.full) + " full, repeating)"
                              : "";
    out << "  sliding layers    " << S << " of " << L << pattern << " keep at most " << with_commas(cost.window)
        << " tokens of K/V, and their scores cost at most " << with_commas(cost.window) << " per token\n";
    std::string per_layer = layer_bits % 8 == 0 ? with_commas(layer_bits / 8) + " bytes" : with_commas(layer_bits) + " bits";
    out << "  at " << with_commas(N) << " tokens  ";
    if (F) out << F << " full × " << per_layer << " × " << with_commas(N) << " + ";
    out << S << " sliding × " << per_layer << " × " << with_commas(kept) << " = " << with_commas(at_context) << " bytes ("
        << binary_bytes(at_context) << ")\n";
  } else {
    out << "  at " << with_commas(N) << " tokens  " << with_commas(per_token) << " × " << with_commas(N) << " = "
        << with_commas(at_context) << " bytes (" << binary_bytes(at_context) << ")\n";
  }
  if (hkv < h) {
    uint64_t full = (product({L, h, dk + dv, static_cast<uint64_t>(cost.kv_bits)}) + 7) / 8;
    out << "  full multi-head   " << L << " × " << h << " × (" << dk << " + " << dv << ") × " << size << " = "
        << with_commas(full) << " bytes per token: grouping K/V into " << hkv << " heads keeps " << h / hkv
        << (h % hkv ? "+" : "") << "x less\n";
  }
  uint64_t weights = 0;
  for (const auto& p : c.projections) weights += p.weight;
  uint64_t scores = product({h, dk + dv, N});
  if (S) {
    uint64_t window_scores = product({h, dk + dv, kept});
    uint64_t total = sum(product({F, sum(weights, scores)}), product({S, sum(weights, window_scores)}));
    out << "  MACs per token    ";
    if (F) {
      out << F << " × (Q/K/V/O weights " << with_commas(weights) << " + scores " << h << " × (" << dk << " + " << dv << ") × "
          << with_commas(N) << " = " << with_commas(scores) << ") + ";
    }
    out << S << " × (" << (F ? "" : "Q/K/V/O weights ") << with_commas(weights) << " + " << (F ? "" : "scores ") << h << " × ("
        << dk << " + " << dv << ") × " << with_commas(kept)
        << " = " << with_commas(window_scores) << ") = " << with_commas(total)
        << " (attention only; one MAC per weight per token)\n";
    return out.str();
  }
  uint64_t per_layer = weights + scores;
  out << "  MACs per token    " << L << " × (Q/K/V/O weights " << with_commas(weights) << " + scores " << h << " × (" << dk
      << " + " << dv << ") × " << with_commas(N) << " = " << with_commas(scores) << ") = " << with_commas(product({L, per_layer}))
      << " (attention only; one MAC per weight per token)\n";
  return out.str();
}

namespace {

// 46,702,792,704 -> "46.70B": billions (or millions) to two decimals, beside the exact figure.
std::string approx(uint64_t n) {
  char buf[32];
  if (n >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.2fB", static_cast<double>(n) / 1e9);
  else std::snprintf(buf, sizeof buf, "%.2fM", static_cast<double>(n) / 1e6);
  return buf;
}

}  // namespace

namespace {

// A config's count with the K/V cache at the element type and context asked for.
struct ConfigView {
  ModelConfig config;
  FamilyCount count;
  int bits = 0;  // the K/V cache's element size (0: unknown)
  std::optional<uint64_t> per_token;
  std::string per_token_formula;
  uint64_t context = 4096;
  bool context_asked = false, windowed = false;
  std::optional<KvAtContext> at_context;
};

ConfigView view_config(const std::string& path, const ConfigExplainOptions& o) {
  ConfigView v;
  v.config = read_model_config(path);
  v.count = family_count_or_explain(v.config);
  const FamilyCount& f = v.count;
  v.bits = f.kv_bits;
  v.per_token = f.kv_bytes_per_token;
  v.per_token_formula = f.kv_formula;
  if (o.kv_dtype) {
    v.bits = kv_dtype_bits(*o.kv_dtype);
    v.per_token.reset();
    if (auto at = kv_at_context(f, 1, v.bits)) {
      int64_t layers = 0;
      for (const auto& g : f.kv_layers) layers += g.layers;
      std::string size = v.bits % 8 == 0 ? std::to_string(v.bits / 8) + (v.bits == 8 ? " byte" : " bytes")
                                         : std::to_string(v.bits) + " bits";
      v.per_token = at->bytes;
      v.per_token_formula = std::to_string(layers) + (layers == *v.config.layers ? " layers · " : " attention layers · ") +
                            with_commas(f.kv_layers[0].elements) +
                            " K/V elements · " + size + " (" + *o.kv_dtype + ", --kv-dtype)";
    }
  }
  for (const auto& g : f.kv_layers) v.windowed |= g.window > 0;
  v.context_asked = o.context.has_value();
  if (o.context) v.context = *o.context;
  v.at_context = kv_at_context(f, v.context, v.bits);
  return v;
}

// "12 of the 24 attention layers slide over the last 128 tokens ...", one clause per window.
std::string window_sentence(const FamilyCount& f) {
  int64_t layers = 0;
  for (const auto& g : f.kv_layers) layers += g.layers;
  std::string out;
  for (const auto& g : f.kv_layers) {
    if (!g.window) continue;
    std::string w = with_commas(g.window);
    out += (out.empty() ? "" : " ") + std::to_string(g.layers) + " of the " + std::to_string(layers) + " attention layers " +
           (g.kind == "chunked" ? "attend within chunks of " + w + " tokens" : "slide over the last " + w + " tokens") +
           ": each keeps at most " + w + " tokens of K/V, and its scores cost at most " + w + " per token.";
  }
  return out;
}

}  // namespace

std::string explain_config(const std::string& path, const ConfigExplainOptions& options) {
  ConfigView v = view_config(path, options);
  const ModelConfig& c = v.config;
  const FamilyCount& f = v.count;
  std::ostringstream out;
  if (f.estimate) {
    out << "Estimate for model_type " << renderers::visible(c.model_type)
        << (c.read_as.empty() ? "" : " (" + renderers::visible(c.read_as) + ")") << ", read as "
        << renderers::visible(f.estimated_as) << " (" << renderers::visible(path)
        << "): " << with_commas(f.total) << " parameters (" << approx(f.total) << "), an estimate\n\n";
  } else {
    out << renderers::visible(f.family) << " (model_type " << renderers::visible(c.model_type)
        << (c.read_as.empty() ? "" : ", " + renderers::visible(c.read_as)) << ", " << renderers::visible(path)
        << "): " << with_commas(f.total) << " parameters (" << approx(f.total) << ")";
    if (f.total_with_vision) {
      out << " in the language model, " << with_commas(*f.total_with_vision) << " (" << approx(*f.total_with_vision)
          << ") with the vision tower";
    }
    out << "\n\n";
  }
  size_t w = 0;
  for (const auto& p : f.parts) w = std::max(w, p.part.size());
  for (const auto& p : f.parts) {
    std::string head = "  " + p.part + std::string(w - p.part.size() + 2, ' ');
    out << head << renderers::wrap(p.formula, head.size(), head.size()) << "\n";
  }
  out << "  total" << std::string(w - 3, ' ') << with_commas(f.total) << " (" << approx(f.total) << ")\n";
  if (f.total_with_vision) {
    size_t vw = 0;
    for (const auto& p : f.vision_parts) vw = std::max(vw, p.part.size());
    out << "\n  vision tower (vision_config):\n";
    for (const auto& p : f.vision_parts) {
      std::string head = "  " + p.part + std::string(vw - p.part.size() + 2, ' ');
      out << head << renderers::wrap(p.formula, head.size(), head.size()) << "\n";
    }
    out << "  total" << std::string(vw - 3, ' ') << with_commas(f.vision_total) << " (" << approx(f.vision_total) << ")\n";
    out << "\n  language model and vision tower " << with_commas(*f.total_with_vision) << " (" << approx(*f.total_with_vision)
        << ")\n";
  }
  if (f.active) {
    std::string line = "active per token " + with_commas(*f.active) + " (" + approx(*f.active) + "): " + f.active_formula;
    if (f.active_without_embedding && *f.active_without_embedding != *f.active) {
      line += "; without the input embedding (a lookup, no multiply) " + with_commas(*f.active_without_embedding) + " (" +
              approx(*f.active_without_embedding) + ")";
    }
    out << "\n  " << renderers::wrap(line, 2, 4) << "\n";
    // One expert model: the total with a single routed expert per MoE layer.
    uint64_t one_expert = f.total - static_cast<uint64_t>(f.moe_layers) * static_cast<uint64_t>(f.experts - 1) * f.expert_size;
    std::string why = "Each MoE layer holds " + std::to_string(f.experts) + " routed experts of " + with_commas(f.expert_size) +
                      " parameters and runs " + std::to_string(f.experts_per_token) + " of them per token. The experts " +
                      "repeat only the feed-forward: attention, embeddings, norms, routers and the LM head are there once. " +
                      "The same model with one expert per layer has " + with_commas(one_expert) + " (" + approx(one_expert) + ")";
    if (f.experts <= 16) {  // "8x7B": the name counts whole copies, which the model is not
      why += "; " + std::to_string(f.experts) + " copies of it would be " + approx(one_expert * static_cast<uint64_t>(f.experts)) +
             ", but the total is " + approx(f.total);
    }
    why += ".";
    out << "  " << renderers::wrap(why, 2, 2) << "\n";
  }
  if (v.per_token) {
    out << "\n  " << renderers::wrap("K/V cache per token " + with_commas(*v.per_token) + " bytes (" + binary_bytes(*v.per_token) +
                                       "): " + v.per_token_formula, 2, 4)
        << "\n";
    if (v.windowed) out << "  " << renderers::wrap(window_sentence(f), 2, 2) << "\n";
    if (v.at_context && (v.context_asked || v.windowed)) {
      out << "  " << renderers::wrap("K/V cache at " + with_commas(v.context) + " tokens " + with_commas(v.at_context->bytes) +
                                         " bytes (" + binary_bytes(v.at_context->bytes) + "): " + v.at_context->formula, 2, 4)
          << "\n";
    }
  }
  if (f.state_bytes) {
    out << "\n  " << renderers::wrap("recurrent state per sequence " + with_commas(*f.state_bytes) + " bytes (" +
                                       binary_bytes(*f.state_bytes) + "), whatever the context: " + f.state_formula, 2, 4)
        << "\n";
  }
  if (!f.mtp.empty()) {
    out << "\n  " << renderers::wrap("apart from the total, " + f.mtp[0].part + ": " + f.mtp[0].formula +
                                       " (it shares the embedding and the LM head)", 2, 4)
        << "\n";
  }
  for (const auto& n : f.notes) out << "  " << renderers::wrap("note: " + n, 2, 4) << "\n";
  return out.str();
}

std::string explain_config_json(const std::string& path, const ConfigExplainOptions& options) {
  ConfigView v = view_config(path, options);
  const ModelConfig& c = v.config;
  const FamilyCount& f = v.count;
  using J = nlohmann::ordered_json;
  auto or_null = [](const auto& x) { return x ? J(*x) : J(nullptr); };
  J j;
  j["schema"] = kSchema;
  j["config"] = path;
  j["model_type"] = c.model_type;
  j["read_as"] = c.read_as.empty() ? J(nullptr) : J(c.read_as);
  j["family"] = f.family;
  j["parts"] = J::array();
  for (const auto& p : f.parts) j["parts"].push_back({{"part", p.part}, {"parameters", p.parameters}, {"formula", p.formula}});
  j["total"] = f.total;
  j["active"] = or_null(f.active);
  j["active_without_embedding"] = or_null(f.active_without_embedding);
  if (f.active) {
    j["experts"] = {{"moe_layers", f.moe_layers}, {"experts", f.experts}, {"per_token", f.experts_per_token},
                    {"expert_size", f.expert_size}};
  } else {
    j["experts"] = nullptr;
  }
  j["kv_bytes_per_token"] = or_null(v.per_token);
  j["kv_formula"] = v.per_token ? v.per_token_formula : std::string();
  j["kv_layers"] = J::array();
  for (const auto& g : f.kv_layers) {
    j["kv_layers"].push_back({{"kind", g.kind}, {"layers", g.layers}, {"elements_per_token", g.elements},
                              {"window", g.window ? J(g.window) : J(nullptr)}});
  }
  if (v.at_context) {
    j["kv_at_context"] = {{"context", v.context}, {"bytes", v.at_context->bytes}, {"formula", v.at_context->formula}};
  } else {
    j["kv_at_context"] = nullptr;
  }
  if (f.state_layers) {
    j["recurrent_state"] = {{"layers", f.state_layers}, {"elements_per_layer", f.state_elements},
                            {"bytes", or_null(f.state_bytes)}, {"formula", f.state_formula}};
  } else {
    j["recurrent_state"] = nullptr;
  }
  if (!f.mtp.empty()) {
    j["mtp"] = {{"parameters", f.mtp_total}, {"formula", f.mtp[0].formula}};
  } else {
    j["mtp"] = nullptr;
  }
  if (f.total_with_vision) {
    J parts = J::array();
    for (const auto& p : f.vision_parts) parts.push_back({{"part", p.part}, {"parameters", p.parameters}, {"formula", p.formula}});
    j["vision"] = {{"parts", parts}, {"total", f.vision_total}, {"total_with_language_model", *f.total_with_vision}};
  } else {
    j["vision"] = nullptr;
  }
  if (f.estimate) {
    j["estimate"] = {{"read_as", f.estimated_as}, {"not_understood", f.not_understood}};
  } else {
    j["estimate"] = nullptr;
  }
  j["notes"] = f.notes;
  return j.dump(2) + "\n";
}

namespace {

// The block's projections, its total and how it compares with the standard 4·d² (+ 4·d).
void write_calculation(std::ostream& out, const Calculation& c) {
  out << "attention block: width " << n(c.width) << ", " << n(c.heads) << " heads × " << n(c.head_dim)
      << " (Q/K per head), V per head " << n(c.v_head_dim) << ", " << n(c.kv_heads) << " K/V heads, "
      << (c.bias ? "with biases" : "no biases") << "\n\n";
  for (const auto& p : c.projections) {
    out << "  " << p.role << "  " << p.formula << "\n";
  }
  out << "  total  " << with_commas(c.total) << "\n";
  out << "  standard 4·" << c.width << "²" << (c.bias ? " + 4·" + std::to_string(c.width) : "") << " = "
      << with_commas(c.standard);
  if (c.total == c.standard) out << ": this block is the standard one\n";
  else out << ": this block has " << with_commas(c.total) << " (" << (c.total > c.standard ? "+" : "-")
           << with_commas(c.total > c.standard ? c.total - c.standard : c.standard - c.total) << ")\n";
}

// The block as the convention's own settings would build it.
std::string convention_settings(const Calculation& c, const BlockSpec& spec, Convention convention) {
  int64_t h = c.heads;
  switch (convention) {
    case Convention::PyTorch:
      if (c.heads * c.head_dim != c.width || c.v_head_dim != c.head_dim || c.kv_heads != c.heads) {
        return "nn.MultiheadAttention cannot build this block: its head size is always embed_dim / num_heads "
               "and K/V are never grouped";
      }
      return "nn.MultiheadAttention(embed_dim=" + std::to_string(c.width) + ", num_heads=" + std::to_string(h) +
             (c.bias ? "" : ", bias=False") + ")";
    case Convention::Keras:
      return "MultiHeadAttention(num_heads=" + std::to_string(h) + ", key_dim=" + std::to_string(c.head_dim) +
             (c.v_head_dim != c.head_dim ? ", value_dim=" + std::to_string(c.v_head_dim) : "") +
             (c.bias ? "" : ", use_bias=False") + ")";
    case Convention::Matlab:
      return "selfAttentionLayer(" + std::to_string(h) + ", " + std::to_string(c.heads * c.head_dim) +
             (c.v_head_dim != c.head_dim ? ", NumValueChannels=" + std::to_string(c.heads * c.v_head_dim) : "") + ")";
    case Convention::Flax:
      return "MultiHeadDotProductAttention(num_heads=" + std::to_string(h) +
             ", qkv_features=" + std::to_string(c.heads * c.head_dim) + ")";
    case Convention::HuggingFace:
      return "hidden_size=" + std::to_string(c.width) + ", num_attention_heads=" + std::to_string(h) +
             (c.kv_heads != c.heads ? ", num_key_value_heads=" + std::to_string(c.kv_heads) : "") +
             (spec.head_dim || c.heads * c.head_dim != c.width ? ", head_dim=" + std::to_string(c.head_dim) : "");
  }
  return "";
}

// How the count moves with heads under the chosen convention, holding the user's knob fixed.
void write_heads_scaling(std::ostream& out, const Calculation& c, const BlockSpec& spec, Convention convention) {
  const ConventionInfo* conv = nullptr;
  for (const auto& ci : conventions()) {
    if (ci.id == convention) conv = &ci;
  }
  int64_t h = c.heads;
  int64_t half = h > 1 ? h / 2 : 0, twice = h * 2;
  out << "\nunder " << conv->framework << ":\n  " << conv->knob << ".\n";
  auto at_heads = [&](int64_t heads, bool per_head_fixed) -> std::string {
    int64_t total_k = c.heads * c.head_dim, total_v = c.heads * c.v_head_dim;
    int64_t kv = c.kv_heads == c.heads ? heads : c.kv_heads;
    if (heads <= 0 || (c.kv_heads != c.heads && heads % c.kv_heads != 0)) return "";
    if (per_head_fixed) return with_commas(count(c.width, heads, c.head_dim, c.v_head_dim, kv, c.bias));
    if (total_k % heads != 0 || total_v % heads != 0) return "";
    return with_commas(count(c.width, heads, total_k / heads, total_v / heads, kv, c.bias));
  };
  bool grows = conv->per_head || (convention == Convention::HuggingFace && spec.head_dim.has_value());
  out << "  this block: " << convention_settings(c, spec, convention) << "\n";
  std::string at_half = at_heads(half, grows), at_twice = at_heads(twice, grows);
  if (grows) {
    out << "  the per-head size stays " << c.head_dim << " when heads change, so the count grows with heads:";
  } else {
    out << "  the total stays " << c.heads * c.head_dim << " when heads change, so the count does not depend on heads"
        << (c.kv_heads != c.heads ? " (K/V grouping aside)" : "") << ":";
  }
  if (!at_half.empty()) out << " " << half << " heads → " << at_half << ",";
  out << " " << h << " heads → " << with_commas(c.total);
  if (!at_twice.empty()) out << ", " << twice << " heads → " << at_twice;
  out << "\n";
}

// The same numbers typed into each framework's key-size setting.
void write_typed_key_size(std::ostream& out, const Calculation& c, const BlockSpec& spec) {
  int64_t h = c.heads;
  int64_t typed = spec.key_channels ? *spec.key_channels : c.head_dim;
  out << "\nthe number " << typed << " typed into each framework's key-size setting, with " << h << " heads:\n";
  for (const auto& ci : conventions()) {
    int64_t dk = 0;
    std::string how;
    switch (ci.id) {
      case Convention::PyTorch:
        if (c.width % h == 0) dk = c.width / h;
        how = "no key-size setting: head size = embed_dim / num_heads = " + (dk ? std::to_string(dk) : std::string("(not divisible)"));
        break;
      case Convention::Keras:
        dk = typed;
        how = "key_dim=" + std::to_string(typed) + " per head";
        break;
      case Convention::Matlab:
        if (typed % h == 0) dk = typed / h;
        how = "NumKeyChannels=" + std::to_string(typed) + " total: " + (dk ? std::to_string(dk) : std::string("?")) + " per head";
        break;
      case Convention::Flax:
        if (typed % h == 0) dk = typed / h;
        how = "qkv_features=" + std::to_string(typed) + " total: " + (dk ? std::to_string(dk) : std::string("?")) + " per head";
        break;
      case Convention::HuggingFace:
        dk = typed;
        how = "head_dim=" + std::to_string(typed) + " per head";
        break;
    }
    out << "  " << ci.name << std::string(8 - std::string(ci.name).size(), ' ') << how << " → ";
    if (dk) out << with_commas(count(c.width, h, dk, dk, c.kv_heads, c.bias)) << "\n";
    else out << "cannot be built\n";
  }
}

}  // namespace

std::string explain_calculation(const BlockSpec& spec, Convention convention) {
  Calculation c = calculate(spec);
  std::ostringstream out;
  write_calculation(out, c);
  write_heads_scaling(out, c, spec, convention);
  write_typed_key_size(out, c, spec);
  return out.str();
}

std::string explain_names() {
  std::ostringstream out;
  out << "Tensor names headcount reads in a checkpoint (safetensors, GGUF). In a layer, the path after\n"
         "the layer index: ....C.N.PATH.weight (or .bias, .scale), where C, the component before the\n"
         "index N, is layers, h, blocks, blk, layer or block, and # in PATH is an expert's index. Outside\n"
         "the layers, the last one or two components of a name. A name no row matches is \"everything\n"
         "else\".\n";
  for (bool layer : {true, false}) {
    out << (layer ? "\nin a layer\n" : "\noutside the layers\n");
    renderers::Table t;
    t.right = {false, false, false};
    t.rows.push_back({"family", "path", "role"});
    for (const NameRow& r : name_rows()) {
      if (r.in_layer == layer) t.rows.push_back({r.family, r.path, r.role});
    }
    t.print(out, "  ");
  }
  return out.str();
}

std::string explain_rule(const Rule& rule) {
  std::ostringstream out;
  out << rule.id << " (" << severity_name(rule.severity) << "): " << rule.summary << "\n\n" << rule.doc << "\n";
  return out.str();
}

namespace {

// Multi-head latent attention, factor by factor, from the sizes alone; it must give the block's
// own total, which is summed from the tensors.
std::string latent_derivation(const AttentionBlock& b) {
  const LatentAttention& la = *b.latent;
  Int d = b.width, h = b.heads, qr = la.q_rank, kr = la.kv_rank, rope = la.rope_dim, nope = la.qk_nope_dim,
      dv = la.v_head_dim, d_out = b.o.out_width > 0 ? Int(b.o.out_width) : Int();
  auto s = [](Int v) { return v ? with_commas(static_cast<uint64_t>(*v)) : std::string("?"); };
  std::ostringstream out;
  out << "  latent     " << la.from << "\n";
  Int q = qr.positive() ? d * qr + qr * h * (nope + rope) : d * h * (nope + rope);
  Int k = d * (kr + rope) + kr * h * nope, v = kr * h * dv, o = h * dv * d_out;
  uint64_t norms = 0;
  for (const auto& e : b.extras) norms += e.role == ExtraRole::LatentNorm ? e.elements : 0;
  out << "  formula    Q " << (qr.positive() ? "d·q_rank + q_rank·h(nope + rope) = " + s(d) + "·" + s(qr) + " + " + s(qr) +
                                                  "·" + s(h) + "·(" + s(nope) + " + " + s(rope) + ")"
                                            : "d·h(nope + rope) = " + s(d) + "·" + s(h) + "·(" + s(nope) + " + " + s(rope) + ")")
      << " = " << s(q) << "\n";
  out << "             K d·(kv_rank + rope) + kv_rank·h·nope = " << s(d) << "·(" << s(kr) << " + " << s(rope) << ") + " << s(kr)
      << "·" << s(h) << "·" << s(nope) << " = " << s(k) << "\n";
  out << "             V kv_rank·h·d_v = " << s(kr) << "·" << s(h) << "·" << s(dv) << " = " << s(v) << "\n";
  out << "             O h·d_v·d_out = " << s(h) << "·" << s(dv) << "·" << s(d_out) << " = " << s(o) << "\n";
  Int sum = q + k + v + o + Int::of_unsigned(norms);
  out << "             + " << with_commas(norms) << " in the latent norms = " << s(sum);
  if (b.has_bias) out << " without biases\n";
  else out << (sum.is(static_cast<int64_t>(b.total)) ? ", the block's total\n" : ", which is not the block's total: see the tensors below\n");
  return out.str();
}

// The block's name, heads, width, window, score path and head size (and a latent block's factors).
void write_block_header(std::ostream& out, const AttentionBlock& b, const Model& m) {
  out << "block " << b.index << " of " << renderers::visible(m.path) << ": " << renderers::visible(b.name) << " (" << b.form
      << ", " << b.kind << "-attention)\n";
  out << "  heads      " << (b.heads ? std::to_string(*b.heads) : std::string("unknown"));
  if (b.kv_heads && b.heads && *b.kv_heads != *b.heads) out << " query, " << *b.kv_heads << " key/value";
  std::string from = b.heads_from;  // "unknown: why" says unknown once
  if (!b.heads && from.rfind("unknown: ", 0) == 0) from = from.substr(9);
  out << ": " << renderers::visible(from) << "\n";
  out << "  width      " << (b.width > 0 ? std::to_string(b.width) : std::string("unknown"))
      << (b.q.found || b.width <= 0 ? " (input of the Q projection)\n" : " (the query's width: no Q projection in this graph)\n");
  if (b.window) out << "  window     " << *b.window << " tokens: " << renderers::visible(b.window_from) << "\n";
  if (!b.score_path.empty()) {
    std::string path;
    for (const auto& step : b.score_path) path += (path.empty() ? "" : " → ") + step;
    out << "  scores     " << renderers::visible(path) << "\n";
  }
  if (b.head_dim) out << "  head size  " << *b.head_dim << " for Q/K, " << (b.v_head_dim ? std::to_string(*b.v_head_dim) : "?") << " for V\n";
  if (b.latent) out << latent_derivation(b);
}

// One projection: its widths, each tensor (or graph input) it reads, and its sum.
void write_projection(std::ostream& out, Role r, const Projection& p, const Model& m) {
  std::string role = role_name(r);
  role[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(role[0])));
  if (!p.found) {
    if (p.from_input.empty()) out << "  " << role << "  not found\n";
    else out << "  " << role << "  from the graph input '" << renderers::visible(p.from_input)
             << "': projected outside this graph\n";
    for (const auto& t : p.tensors) {  // a share of a packed bias inside a fused op
      out << "     bias   " << renderers::visible(m.weights[t.weight].name) << " " << shape_string(m.weights[t.weight].dims);
      if (!t.slice.empty()) out << ", " << renderers::visible(t.slice);
      out << ": " << with_commas(t.elements) << "\n";
    }
    return;
  }
  out << "  " << role << "  " << p.in_width << " → " << p.out_width << "\n";
  if (!p.weight_input.empty()) {
    out << "     weight the graph input '" << renderers::visible(p.weight_input) << "' [" << p.in_width << ", " << p.out_width
        << "], fed at run time: 0 stored\n";
  }
  if (!p.bias_input.empty()) {
    out << "     bias   the graph input '" << renderers::visible(p.bias_input) << "', fed at run time: 0 stored\n";
  }
  for (const auto& t : p.tensors) {
    const Weight& w = m.weights[t.weight];
    out << "     " << (t.bias ? "bias   " : "weight ") << renderers::visible(w.name) << " " << shape_string(w.dims);
    if (!t.slice.empty()) out << ", " << renderers::visible(t.slice);
    out << ": " << with_commas(t.elements) << "\n";
  }
  out << "     = " << (p.bias ? with_commas(p.weight) + " + " + with_commas(p.bias) + " = " : std::string()) << with_commas(p.total())
      << "\n";
}

// The extras, the block's total, and how it compares with the standard 4·d² (+ 4·d).
void write_block_total(std::ostream& out, const AttentionBlock& b, const Model& m) {
  uint64_t extras = 0;
  for (const auto& e : b.extras) {
    const Weight& w = m.weights[static_cast<size_t>(e.weight)];
    out << "  extra  " << extra_role_name(e.role) << " " << renderers::visible(w.name) << " " << shape_string(w.dims) << ": "
        << with_commas(e.elements) << "\n";
    extras += e.elements;
  }
  out << "\n  total      " << with_commas(b.q.total()) << " + " << with_commas(b.k.total()) << " + "
      << with_commas(b.v.total()) << " + " << with_commas(b.o.total())
      << (b.extras.empty() ? std::string() : " + " + with_commas(extras) + " (extras)") << " = " << with_commas(b.total)
      << "\n";
  if (!b.q.found && !b.k.found && !b.v.found && !b.o.found) {
    out << "  standard   not compared: none of Q, K, V and O is projected in this graph\n";
  } else if (!b.standard) {
    out << "  standard   unknown: the width is not known (or its square does not fit in 64 bits)\n";
  } else {
    out << "  standard   4·" << b.width << "²" << (b.has_bias ? " + 4·" + std::to_string(b.width) : "") << " = "
        << with_commas(b.standard);
    if (b.total == b.standard) out << " (this block matches it)\n";
    else out << " (this block differs by " << (b.total > b.standard ? "+" : "-")
             << with_commas(b.total > b.standard ? b.total - b.standard : b.standard - b.total) << ")\n";
  }
}

}  // namespace

std::string explain_block(const Audit& a, int index) {
  const auto& blocks = a.attention.blocks;
  if (index < 0 || index >= static_cast<int>(blocks.size())) {
    throw InputError("there is no block " + std::to_string(index) + " (the model has " + std::to_string(blocks.size()) +
                     (blocks.size() == 1 ? " attention block)" : " attention blocks)"));
  }
  const AttentionBlock& b = blocks[static_cast<size_t>(index)];
  std::ostringstream out;
  write_block_header(out, b, a.model);
  out << "\n";
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) write_projection(out, r, b.projection(r), a.model);
  write_block_total(out, b, a.model);
  for (const auto& note : b.notes) out << "  note: " << renderers::visible(note) << "\n";
  for (const auto& f : a.findings) {
    if (f.block && *f.block == b.index) {
      out << "  " << severity_name(f.severity) << " [" << f.rule << "]: " << renderers::visible(f.message) << "\n";
    }
  }
  return out.str();
}

}  // namespace headcount
