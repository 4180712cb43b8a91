// families.cpp: reading model configs (nlohmann-json, exact 64-bit integers) and the parameter
// counts of the families whose modules are known.
#include "headcount/families.h"

#include <algorithm>
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

bool llama_like(const std::string& t) {
  return t == "llama" || t == "mistral" || t == "qwen2" || t == "qwen3" || t == "mixtral" || t == "qwen3_moe" ||
         t == "deepseek_v2" || t == "deepseek_v3";
}
bool deepseek(const std::string& t) { return t == "deepseek_v2" || t == "deepseek_v3"; }

// Config keys whose values change a parameter count somewhere in Hugging Face's families, and
// which of them each family's formula reads.
const std::vector<std::string> kCountKeys = {
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "mlp_only_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "num_nextn_predict_layers", "topk_method", "attention_bias", "mlp_bias", "use_qk_norm",
    "head_dim", "num_key_value_heads", "tie_word_embeddings", "n_inner", "intermediate_size", "type_vocab_size",
    "max_position_embeddings", "n_positions", "is_encoder_decoder", "num_shared_experts",
    "moe_num_experts", "moe_k", "expert_interval", "qkv_bias", "use_bias", "linear_bias"};

std::vector<std::string> reads_of(const std::string& t) {
  std::vector<std::string> base = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size",
                                   "attention_bias", "mlp_bias", "max_position_embeddings", "is_encoder_decoder",
                                   "type_vocab_size", "n_inner", "n_positions"};
  if (t == "mixtral") base.insert(base.end(), {"num_local_experts", "num_experts_per_tok"});
  if (t == "qwen3_moe") {
    base.insert(base.end(), {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step",
                             "mlp_only_layers"});
  }
  if (deepseek(t)) {
    base.insert(base.end(), {"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                             "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                             "qk_rope_head_dim", "v_head_dim", "topk_method"});
    if (t == "deepseek_v3") base.push_back("num_nextn_predict_layers");
  }
  return base;
}

// A value that changes something: not null, false, 0, "" or an empty list.
bool active_value(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  return true;
}

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
    if (c.model_type == "qwen3" || c.model_type == "qwen3_moe") c.qk_norm = true;
  }
  if (!c.head_dim && c.hidden && c.heads && !deepseek(c.model_type)) {  // latent attention has no single head size
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
    c.experts = integer(c, "experts", j, {"num_local_experts", "num_experts", "n_routed_experts"});
    c.experts_per_token = integer(c, "experts_per_token", j, {"num_experts_per_tok"});
    c.moe_intermediate = integer(c, "moe_intermediate", j, {"moe_intermediate_size"});
    c.shared_experts = integer(c, "shared_experts", j, {"n_shared_experts"});
    c.first_dense_layers = integer(c, "first_dense_layers", j, {"first_k_dense_replace"});
    c.moe_layer_freq = integer(c, "moe_layer_freq", j, {"moe_layer_freq"});
    c.sparse_step = integer(c, "sparse_step", j, {"decoder_sparse_step"});
    if (auto it = j.find("mlp_only_layers"); it != j.end() && it->is_array()) {
      for (const auto& x : *it) {
        if (!x.is_number_integer()) throw InputError("model config '" + path + "': mlp_only_layers holds a non-integer");
        c.dense_layers.push_back(x.get<int64_t>());
      }
    }
    if (auto it = j.find("topk_method"); it != j.end() && it->is_string()) c.router_bias = it->get<std::string>() == "noaux_tc";
    c.q_lora_rank = integer(c, "q_lora_rank", j, {"q_lora_rank"});
    c.kv_lora_rank = integer(c, "kv_lora_rank", j, {"kv_lora_rank"});
    c.qk_nope_dim = integer(c, "qk_nope_dim", j, {"qk_nope_head_dim"});
    c.qk_rope_dim = integer(c, "qk_rope_dim", j, {"qk_rope_head_dim"});
    c.v_head_dim = integer(c, "v_head_dim", j, {"v_head_dim"});
    c.mtp_layers = integer(c, "mtp_layers", j, {"num_nextn_predict_layers"});
    if (auto it = j.find("torch_dtype"); it != j.end() && it->is_string()) c.dtype = it->get<std::string>();
    for (const auto& k : kCountKeys) {
      if (auto it = j.find(k); it != j.end() && active_value(*it)) c.count_keys.push_back(k);
    }
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
    const bool mla = deepseek(c.model_type);
    if (!known({L, h, V, H}) || (!mla && !known({KV, d}))) return std::nullopt;
    static const std::map<std::string, std::string> names = {
        {"llama", "LLaMA"}, {"mistral", "Mistral"}, {"qwen2", "Qwen2"}, {"qwen3", "Qwen3"}, {"mixtral", "Mixtral"},
        {"qwen3_moe", "Qwen3-MoE"}, {"deepseek_v2", "DeepSeek-V2"}, {"deepseek_v3", "DeepSeek-V3"}};
    f.family = names.at(c.model_type);
    std::string Hs = H.str(), KVs = KV.str(), ds = d.str();

    // One layer's attention.
    Int attn;
    std::string formula;
    if (mla) {
      // Multi-head latent attention: Q through a low-rank factor (or straight), K/V through a
      // shared latent with a decoupled RoPE key; the latent norms belong to the block.
      Int qr = c.q_lora_rank, kr = c.kv_lora_rank, nope = c.qk_nope_dim, rope = c.qk_rope_dim, vd = c.v_head_dim;
      if (!known({kr, nope, rope, vd})) return std::nullopt;
      std::string qk = "(" + nope.str() + " + " + rope.str() + ")";
      if (qr.positive()) {
        attn = h * qr + qr + qr * H * (nope + rope);
        formula = hs + "·" + qr.str() + " + " + qr.str() + " + " + qr.str() + "·" + Hs + "·" + qk;
      } else {
        attn = h * H * (nope + rope);
        formula = hs + "·" + Hs + "·" + qk;
      }
      attn += h * (kr + rope) + kr + kr * H * (nope + vd) + H * vd * h;
      formula += " + " + hs + "·(" + kr.str() + " + " + rope.str() + ") + " + kr.str() + " + " + kr.str() + "·" + Hs + "·(" +
                 nope.str() + " + " + vd.str() + ") + " + Hs + "·" + vd.str() + "·" + hs;
    } else {
      attn = h * H * d + 2 * h * KV * d + H * d * h;
      formula = hs + "·" + Hs + "·" + ds + " + 2·" + hs + "·" + KVs + "·" + ds + " + " + Hs + "·" + ds + "·" + hs;
      if (c.qkv_bias) {
        attn += H * d + 2 * KV * d;
        formula += " + " + Hs + "·" + ds + " + 2·" + KVs + "·" + ds;
      }
      if (c.o_bias) {
        attn += h;
        formula += " + " + hs;
      }
    }

    // Which layers are mixtures of experts.
    const bool moe = c.experts.positive();
    int64_t moe_layers = 0;
    if (moe) {
      if (!c.experts_per_token.positive() || *L > (int64_t{1} << 20)) return std::nullopt;
      for (int64_t l = 0; l < *L; ++l) {
        bool is_moe = true;
        if (c.model_type == "qwen3_moe") {
          int64_t step = c.sparse_step.positive() ? *c.sparse_step : 1;
          is_moe = std::find(c.dense_layers.begin(), c.dense_layers.end(), l) == c.dense_layers.end() && (l + 1) % step == 0;
        } else if (mla) {
          int64_t freq = c.moe_layer_freq.positive() ? *c.moe_layer_freq : 1;
          is_moe = l >= static_cast<int64_t>(c.first_dense_layers.count().value_or(0)) && l % freq == 0;
        }
        moe_layers += is_moe ? 1 : 0;
      }
    }
    Int M = Int(moe_layers), dense_layers = L - M;
    Int mi = moe ? (c.model_type == "mixtral" ? i : c.moe_intermediate) : Int(0);
    if (moe && !mi.positive()) return std::nullopt;
    if (dense_layers.positive() && !i.positive()) return std::nullopt;

    ok &= part("embeddings", V * h, Vs + "·" + hs);
    ok &= part("attention", L * attn, Ls + " · (" + formula + ")");
    Int mlp = 3 * h * i + (c.mlp_bias ? 2 * i + h : Int(0));
    if (!moe || dense_layers.positive()) {
      std::string n = moe ? dense_layers.str() + " dense layers" : Ls;
      ok &= part("feed-forward", dense_layers * mlp, n + " · 3·" + hs + "·" + is + (c.mlp_bias ? " + biases" : ""));
    }
    Int expert = 3 * h * mi;
    if (moe) {
      Int E = c.experts, k = c.experts_per_token;
      ok &= part("routed experts", M * E * expert, M.str() + " MoE layers · " + E.str() + " experts · 3·" + hs + "·" + mi.str());
      if (c.shared_experts.positive()) {
        ok &= part("shared experts", M * c.shared_experts * expert,
                   M.str() + " · " + c.shared_experts.str() + " · 3·" + hs + "·" + mi.str());
      }
      Int router = h * E + (c.router_bias ? E : Int(0));
      ok &= part("routers", M * router, M.str() + " · " + hs + "·" + E.str() + (c.router_bias ? " + " + E.str() + " (score bias)" : ""));
      f.moe_layers = moe_layers;
      f.experts = *E;
      f.experts_per_token = *k;
      f.expert_size = expert.count().value_or(0);
    }
    Int norms = L * 2 * h + h + (c.qk_norm ? L * 2 * d : Int(0));
    ok &= part("norms", norms, Ls + " · 2·" + hs + " + " + hs + (c.qk_norm ? " + " + Ls + " · 2·" + ds + " (q_norm, k_norm)" : ""));
    bool tied = c.tied.value_or(false);
    ok &= part("lm head", tied ? Int(0) : V * h, tied ? std::string("tied to the token embedding") : Vs + "·" + hs);

    if (moe) {
      Int idle = M * (c.experts - c.experts_per_token) * expert;
      Int active = total - idle;
      if (active.non_negative()) {
        f.active = active.count();
        f.active_formula = "the total less " + M.str() + " MoE layers · (" + c.experts.str() + " − " + c.experts_per_token.str() +
                           ") idle experts · " + commas(expert.count().value_or(0)) + " = " + commas(*active.count());
      }
    }
    // The K/V cache per token, at the config's dtype.
    static const std::map<std::string, int> bytes = {{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8}};
    std::string dtype = c.dtype.empty() ? "float32" : c.dtype;
    if (auto it = bytes.find(dtype); it != bytes.end()) {
      Int per = mla ? L * (c.kv_lora_rank + c.qk_rope_dim) * it->second : L * KV * 2 * d * it->second;
      if (per.positive()) {
        f.kv_bytes_per_token = per.count();
        f.kv_formula = mla ? Ls + " layers · (" + c.kv_lora_rank.str() + " latent + " + c.qk_rope_dim.str() + " RoPE key) · " +
                                 std::to_string(it->second) + " bytes (" + dtype + ")"
                           : Ls + " layers · " + KVs + " K/V heads · 2·" + ds + " · " + std::to_string(it->second) +
                                 " bytes (" + dtype + ")";
        if (c.dtype.empty()) f.kv_formula += "; the config declares no torch_dtype";
      }
    }
    // DeepSeek-V3's multi-token-prediction modules: one more MoE layer each, with the projection
    // of [normed hidden; normed embedding] and its norms; they share the embedding and LM head.
    if (c.mtp_layers.positive() && c.model_type == "deepseek_v3" && moe) {
      Int E = c.experts;
      Int layer = attn + E * expert + (c.shared_experts.positive() ? c.shared_experts * expert : Int(0)) + h * E +
                  (c.router_bias ? E : Int(0)) + 2 * h;
      Int mtp = c.mtp_layers * (layer + 2 * h * h + 3 * h);
      f.mtp.push_back({"multi-token prediction", mtp.count().value_or(0),
                       c.mtp_layers.str() + " · (one MoE layer " + commas(layer.count().value_or(0)) + " + eh_proj 2·" + hs +
                           "·" + hs + " + 3·" + hs + " norms) = " + commas(mtp.count().value_or(0))});
      f.mtp_total = mtp.count().value_or(0);
    }
  } else {
    return std::nullopt;
  }
  if (!ok || !total.non_negative()) return std::nullopt;  // a product that does not fit in 64 bits
  f.total = *total.count();
  return f;
}

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> families = {"bert",    "roberta",   "xlm-roberta", "gpt2",        "llama",
                                                    "mistral", "qwen2",     "qwen3",       "mixtral",     "qwen3_moe",
                                                    "deepseek_v2", "deepseek_v3"};
  return families;
}

FamilyCount family_count_or_explain(const ModelConfig& c) {
  const auto& known = known_families();
  if (std::find(known.begin(), known.end(), c.model_type) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw InputError("model config '" + c.file + "': headcount does not know the model_type '" + c.model_type +
                     "' (it knows " + list + ")");
  }
  const std::vector<std::string> reads = reads_of(c.model_type);
  for (const auto& k : c.count_keys) {
    if (std::find(reads.begin(), reads.end(), k) == reads.end()) {
      throw InputError("model config '" + c.file + "': '" + k + "' changes the parameter count, and headcount's " +
                       c.model_type + " formula does not read it; counting without it would be a guess");
    }
  }
  auto f = family_count(c);
  if (!f) {
    std::string missing;
    std::vector<std::pair<const char*, Int>> fields = {{"layers", c.layers}, {"hidden", c.hidden}, {"heads", c.heads},
                                                       {"vocab", c.vocab}, {"intermediate", c.intermediate}};
    for (const auto& [field, v] : fields) {
      if (v.positive()) continue;
      auto it = c.key_of.find(field);
      missing += (missing.empty() ? "" : ", ") + (it != c.key_of.end() ? it->second : std::string(field));
    }
    throw InputError("model config '" + c.file + "': the " + c.model_type + " formula needs a number the config does not give" +
                     (missing.empty() ? std::string(" (or one that does not fit in 64 bits)") : " (" + missing + ")"));
  }
  return *f;
}

}  // namespace headcount
