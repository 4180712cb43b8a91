// families.cpp: reading model configs (nlohmann-json, exact 64-bit integers) and the parameter
// counts of the families whose modules are known.
#include "headcount/families.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "headcount/error.h"

namespace headcount {
namespace {

using json = nlohmann::json;

std::string commas(uint64_t n) {
  std::string s = std::to_string(n), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

// The first of `keys` that the object holds as an integer; a null counts as absent. The key read
// is remembered under `field` (the first key names the field when none is present).
Int integer(ModelConfig& c, const char* field, const json& j, std::initializer_list<const char*> keys) {
  c.key_of[field] = *keys.begin();
  for (const char* k : keys) {
    auto it = j.find(k);
    if (it == j.end() || it->is_null()) continue;
    c.key_of[field] = k;
    if (it->is_number_integer()) return it->is_number_unsigned() ? Int::of_unsigned(it->get<uint64_t>()) : Int(it->get<int64_t>());
    if (it->is_number_float()) return Int::of_double(it->get<double>());
    throw InputError("model config '" + c.file + "': " + k + " is not a number");
  }
  return {};
}

std::optional<bool> boolean(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

bool llama_like(const std::string& t) { return t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3"; }
bool bert_like(const std::string& t) { return t == "bert" || t == "roberta" || t == "xlm-roberta"; }

// Family defaults for what a config may leave out, each noted.
void apply_defaults(ModelConfig& c) {
  if (c.model_type == "gpt2") {
    if (!c.intermediate && c.hidden) {
      c.intermediate = 4 * c.hidden;
      c.derived_from["intermediate"] = "4 · n_embd";
    }
    if (!c.tied) {
      c.tied = true;  // GPT2LMHeadModel ties its head to wte
      c.derived_from["tied"] = "GPT-2's default";
    }
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
  } else if (bert_like(c.model_type)) {
    c.qkv_bias = c.o_bias = c.mlp_bias = true;
    if (!c.type_vocab) c.type_vocab = 2;
  } else if (llama_like(c.model_type)) {
    if (!c.kv_heads && c.heads) {
      c.kv_heads = c.heads;
      c.derived_from["kv_heads"] = "num_attention_heads";
    }
    if (!c.tied) {
      c.tied = false;
      c.derived_from["tied"] = c.model_type + "'s default";
    }
    if (c.model_type == "qwen2") c.qkv_bias = true;  // Qwen2's q/k/v projections always have biases
    if (c.model_type == "qwen3") c.qk_norm = true;
  }
  if (!c.head_dim && c.hidden && c.heads) {
    c.head_dim = exact_div(c.hidden, c.heads);
    if (c.head_dim) c.derived_from["head_dim"] = c.key_of["hidden"] + " / " + c.key_of["heads"];
  }
}

}  // namespace

ModelConfig read_model_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("model config '" + path + "' cannot be opened");
  std::stringstream text;
  text << in.rdbuf();
  json j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) throw InputError("model config '" + path + "' is not valid JSON");
  if (!j.is_object()) throw InputError("model config '" + path + "' is not a JSON object");
  ModelConfig c;
  c.file = path;
  if (j.contains("model") && j["model"].is_object() && j["model"].contains("decoder")) {
    // onnxruntime-genai: {"model": {"type": ..., "vocab_size": ..., "decoder": {...}}}
    const json& m = j["model"];
    const json& d = m["decoder"];
    if (!d.is_object()) throw InputError("model config '" + path + "': model.decoder is not an object");
    c.format = "genai_config.json";
    if (m.contains("type") && m["type"].is_string()) c.model_type = m["type"].get<std::string>();
    c.layers = integer(c, "layers", d, {"num_hidden_layers"});
    c.hidden = integer(c, "hidden", d, {"hidden_size"});
    c.heads = integer(c, "heads", d, {"num_attention_heads"});
    c.kv_heads = integer(c, "kv_heads", d, {"num_key_value_heads"});
    c.head_dim = integer(c, "head_dim", d, {"head_size"});
    c.vocab = integer(c, "vocab", m, {"vocab_size"});
  } else {
    c.format = "config.json";
    if (!j.contains("model_type") || !j["model_type"].is_string()) {
      throw InputError("model config '" + path + "' has no model_type: not a Hugging Face config.json");
    }
    c.model_type = j["model_type"].get<std::string>();
    c.layers = integer(c, "layers", j, {"num_hidden_layers", "n_layer", "num_layers"});
    c.hidden = integer(c, "hidden", j, {"hidden_size", "n_embd", "d_model"});
    c.heads = integer(c, "heads", j, {"num_attention_heads", "n_head", "num_heads"});
    c.kv_heads = integer(c, "kv_heads", j, {"num_key_value_heads"});
    c.head_dim = integer(c, "head_dim", j, {"head_dim"});
    c.intermediate = integer(c, "intermediate", j, {"intermediate_size", "n_inner", "d_ff"});
    c.vocab = integer(c, "vocab", j, {"vocab_size"});
    c.max_positions = integer(c, "max_positions", j, {"max_position_embeddings", "n_positions"});
    c.type_vocab = integer(c, "type_vocab", j, {"type_vocab_size"});
    c.tied = boolean(j, "tie_word_embeddings");
    c.key_of["tied"] = "tie_word_embeddings";
    c.encoder_decoder = boolean(j, "is_encoder_decoder").value_or(false);
    c.qkv_bias = c.o_bias = boolean(j, "attention_bias").value_or(false);
    c.mlp_bias = boolean(j, "mlp_bias").value_or(false);
  }
  apply_defaults(c);
  return c;
}

std::optional<FamilyCount> family_count(const ModelConfig& c) {
  Int L = c.layers, h = c.hidden, V = c.vocab, i = c.intermediate;
  auto known = [](std::initializer_list<Int> v) {
    for (Int x : v) {
      if (!x.positive()) return false;
    }
    return true;
  };
  FamilyCount f;
  Int total = 0;
  auto part = [&](const char* name, Int n, const std::string& formula) {
    f.parts.push_back({name, n.count().value_or(0), formula + " = " + commas(n.count().value_or(0))});
    total += n;
    return n.non_negative();
  };
  auto sq = [](Int x) { return x * x; };
  bool ok = true;
  std::string Ls = L.str(), hs = h.str(), Vs = V.str(), is = i.str();
  if (bert_like(c.model_type)) {
    Int P = c.max_positions, T = c.type_vocab;
    if (!known({L, h, V, i, P, T})) return std::nullopt;
    f.family = c.model_type == "bert" ? "BERT" : "RoBERTa";
    ok &= part("embeddings", V * h + P * h + T * h, Vs + "·" + hs + " + " + P.str() + "·" + hs + " + " + T.str() + "·" + hs);
    ok &= part("attention", L * 4 * (sq(h) + h), Ls + " · 4·(" + hs + "² + " + hs + ")");
    ok &= part("feed-forward", L * (2 * h * i + i + h), Ls + " · (2·" + hs + "·" + is + " + " + is + " + " + hs + ")");
    ok &= part("norms", 2 * h + L * 4 * h, "2·" + hs + " + " + Ls + " · 4·" + hs);
    ok &= part("pooler", sq(h) + h, hs + "² + " + hs);
  } else if (c.model_type == "gpt2") {
    Int P = c.max_positions;
    if (!known({L, h, V, i, P})) return std::nullopt;
    f.family = "GPT-2";
    ok &= part("embeddings", V * h + P * h, Vs + "·" + hs + " + " + P.str() + "·" + hs);
    ok &= part("attention", L * 4 * (sq(h) + h), Ls + " · (" + hs + "·3·" + hs + " + 3·" + hs + " + " + hs + "² + " + hs + ")");
    ok &= part("feed-forward", L * (2 * h * i + i + h), Ls + " · (2·" + hs + "·" + is + " + " + is + " + " + hs + ")");
    ok &= part("norms", L * 4 * h + 2 * h, Ls + " · 4·" + hs + " + 2·" + hs);
    bool tied = c.tied.value_or(true);
    ok &= part("lm head", tied ? Int(0) : V * h, tied ? std::string("tied to the token embedding") : Vs + "·" + hs);
  } else if (llama_like(c.model_type)) {
    Int H = c.heads, KV = c.kv_heads, d = c.head_dim;
    if (!known({L, h, V, i, H, KV, d})) return std::nullopt;
    f.family = c.model_type == "llama" ? "LLaMA" : c.model_type == "mistral" ? "Mistral" : c.model_type == "qwen2" ? "Qwen2" : "Qwen3";
    std::string Hs = H.str(), KVs = KV.str(), ds = d.str();
    Int attn = h * H * d + 2 * h * KV * d + H * d * h;
    std::string formula = Ls + " · (" + hs + "·" + Hs + "·" + ds + " + 2·" + hs + "·" + KVs + "·" + ds + " + " + Hs + "·" + ds + "·" + hs;
    if (c.qkv_bias) {
      attn += H * d + 2 * KV * d;
      formula += " + " + Hs + "·" + ds + " + 2·" + KVs + "·" + ds;
    }
    if (c.o_bias) {
      attn += h;
      formula += " + " + hs;
    }
    ok &= part("embeddings", V * h, Vs + "·" + hs);
    ok &= part("attention", L * attn, formula + ")");
    Int mlp = 3 * h * i + (c.mlp_bias ? 2 * i + h : Int(0));
    ok &= part("feed-forward", L * mlp, Ls + " · 3·" + hs + "·" + is + (c.mlp_bias ? " + biases" : ""));
    Int norms = L * 2 * h + h + (c.qk_norm ? L * 2 * d : Int(0));
    ok &= part("norms", norms, Ls + " · 2·" + hs + " + " + hs + (c.qk_norm ? " + " + Ls + " · 2·" + ds + " (q_norm, k_norm)" : ""));
    bool tied = c.tied.value_or(false);
    ok &= part("lm head", tied ? Int(0) : V * h, tied ? std::string("tied to the token embedding") : Vs + "·" + hs);
  } else {
    return std::nullopt;
  }
  if (!ok || !total.non_negative()) return std::nullopt;  // a product that does not fit in 64 bits
  f.total = *total.count();
  return f;
}

}  // namespace headcount
