// families.cpp: reading model configs (nlohmann-json, exact 64-bit integers) and the parameter
// counts of the families whose modules are known. Each family is one row of families(): what a
// layer of it holds and which config keys say so; count() reads a row and a config.
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

// ---- the family table ----

// How a layer's Q/K/V/O weights are laid out.
enum class Attention {
  Square,       // BERT: Q, K, V and O each width × width, whatever the heads
  SquareFused,  // GPT-2: c_attn width × 3·width, then c_proj width × width
  Heads,        // LLaMA: Q width → H·d, K and V width → KV·d, O H·d → width
  Latent,       // DeepSeek: multi-head latent attention (low-rank Q, a shared K/V latent, a RoPE key)
};

// The feed-forward of a dense layer (and of one expert).
enum class Mlp {
  Plain,  // up and down: 2·h·f (+ f + h with biases)
  Gated,  // gate, up and down: 3·h·f (+ 2·f + h with biases)
};

// Whether a projection has a bias: never, always, or as the config's attention_bias / mlp_bias say.
enum class Bias { None, Always, FromConfig };

// Layers l with l % P == 0 (or P − 1 when `last`), P the config's value of `period` (1 when it is
// absent or not positive).
struct EveryNth {
  const char* period = nullptr;
  bool last = false;
};

// Which layers hold a mixture of experts, when the config declares experts (all by default).
struct ExpertLayers {
  EveryNth every;
  const char* first = nullptr;       // the layers before this many stay dense
  const char* dense_list = nullptr;  // the layers listed here stay dense
};

// One family: what a layer holds, which config keys say it, and what the config may leave out.
struct Family {
  std::vector<std::string> types;  // model_type names
  std::string name;                // as shown
  // Embeddings: tokens always; learned positions (max_position_embeddings) and token types.
  bool positions = false, token_types = false;
  // A layer.
  Attention attention = Attention::Heads;
  Bias qkv_bias = Bias::FromConfig, o_bias = Bias::FromConfig, mlp_bias = Bias::FromConfig;
  bool qk_norm = false;  // q_norm and k_norm of head_dim in every attention layer
  Mlp mlp = Mlp::Gated;
  // Norms: weights per norm (RMSNorm 1, LayerNorm 2 with its bias), per layer, and where else.
  int norm_weights = 1, norms_per_layer = 2;
  bool embedding_norm = false, final_norm = true;
  bool pooler = false, lm_head = true;
  bool kv_cache = true;  // report the K/V cache a decoder keeps
  // What the config may leave out.
  int64_t intermediate_per_hidden = 0;  // the feed-forward size is this · width (GPT-2: 4)
  std::string intermediate_note;
  int64_t type_vocab_default = 0;
  bool kv_heads_default = false;  // K/V heads default to the query heads
  std::optional<bool> tied;       // tie_word_embeddings' default, and where it is from
  std::string tied_note;
  // Mixtures of experts, when the config declares experts.
  bool experts = false;
  const char* expert_size = "moe_intermediate_size";
  ExpertLayers expert_layers;
  const char* mtp = nullptr;  // the key that gives multi-token-prediction modules
  // The config keys that change a count somewhere and that this row's formula reads.
  std::vector<std::string> reads;
};

// Config keys whose values change a parameter count somewhere in Hugging Face's families.
const std::vector<std::string> kCountKeys = {
    "num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
    "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "mlp_only_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "num_nextn_predict_layers", "topk_method", "attention_bias", "mlp_bias", "use_qk_norm",
    "head_dim", "num_key_value_heads", "tie_word_embeddings", "n_inner", "intermediate_size", "type_vocab_size",
    "max_position_embeddings", "n_positions", "is_encoder_decoder", "num_shared_experts",
    "moe_num_experts", "moe_k", "expert_interval", "qkv_bias", "use_bias", "linear_bias"};

// The keys every row reads (sizes, biases, positions), then each row's own.
std::vector<std::string> reads(std::initializer_list<const char*> own) {
  std::vector<std::string> r = {"num_key_value_heads", "tie_word_embeddings", "head_dim", "intermediate_size",
                                "attention_bias", "mlp_bias", "max_position_embeddings", "is_encoder_decoder",
                                "type_vocab_size", "n_inner", "n_positions"};
  r.insert(r.end(), own.begin(), own.end());
  return r;
}

Family encoder(std::vector<std::string> types, std::string name) {
  Family f;
  f.types = std::move(types);
  f.name = std::move(name);
  f.positions = f.token_types = true;
  f.attention = Attention::Square;
  f.qkv_bias = f.o_bias = f.mlp_bias = Bias::Always;
  f.mlp = Mlp::Plain;
  f.norm_weights = 2;
  f.embedding_norm = true;
  f.final_norm = false;
  f.pooler = true;
  f.lm_head = false;
  f.kv_cache = false;
  f.type_vocab_default = 2;
  f.reads = reads({});
  return f;
}

// A LLaMA-style decoder: RMSNorms, gated feed-forward, grouped K/V, untied LM head by default.
Family decoder(std::string type, std::string name) {
  Family f;
  f.types = {type};
  f.name = std::move(name);
  f.kv_heads_default = true;
  f.experts = true;
  f.tied = false;
  f.tied_note = type + "'s default";
  f.reads = reads({});
  return f;
}

const std::vector<Family>& families() {
  static const std::vector<Family> table = [] {
    std::vector<Family> t;
    t.push_back(encoder({"bert"}, "BERT"));
    t.push_back(encoder({"roberta", "xlm-roberta"}, "RoBERTa"));
    {
      Family f;
      f.types = {"gpt2"};
      f.name = "GPT-2";
      f.positions = true;
      f.attention = Attention::SquareFused;
      f.qkv_bias = f.o_bias = f.mlp_bias = Bias::Always;
      f.mlp = Mlp::Plain;
      f.norm_weights = 2;
      f.kv_cache = false;
      f.intermediate_per_hidden = 4;
      f.intermediate_note = "4 · n_embd";
      f.tied = true;  // GPT2LMHeadModel ties its head to wte
      f.tied_note = "GPT-2's default";
      f.reads = reads({});
      t.push_back(f);
    }
    t.push_back(decoder("llama", "LLaMA"));
    t.push_back(decoder("mistral", "Mistral"));
    {
      Family f = decoder("qwen2", "Qwen2");
      f.qkv_bias = Bias::Always;  // Qwen2's q/k/v projections always have biases
      t.push_back(f);
    }
    {
      Family f = decoder("qwen3", "Qwen3");
      f.qk_norm = true;
      t.push_back(f);
    }
    {
      Family f = decoder("mixtral", "Mixtral");
      f.expert_size = "intermediate_size";
      f.reads = reads({"num_local_experts", "num_experts_per_tok"});
      t.push_back(f);
    }
    {
      Family f = decoder("qwen3_moe", "Qwen3-MoE");
      f.qk_norm = true;
      f.expert_layers.every = {"decoder_sparse_step", true};
      f.expert_layers.dense_list = "mlp_only_layers";
      f.reads = reads({"num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step",
                       "mlp_only_layers"});
      t.push_back(f);
    }
    for (const char* v : {"deepseek_v2", "deepseek_v3"}) {
      Family f = decoder(v, v == std::string("deepseek_v2") ? "DeepSeek-V2" : "DeepSeek-V3");
      f.attention = Attention::Latent;
      f.expert_layers.every = {"moe_layer_freq", false};
      f.expert_layers.first = "first_k_dense_replace";
      f.reads = reads({"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                       "first_k_dense_replace", "moe_layer_freq", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                       "qk_rope_head_dim", "v_head_dim", "topk_method"});
      if (f.types[0] == "deepseek_v3") {
        f.mtp = "num_nextn_predict_layers";
        f.reads.push_back("num_nextn_predict_layers");
      }
      t.push_back(f);
    }
    return t;
  }();
  return table;
}

const Family* find_family(const std::string& type) {
  for (const auto& f : families()) {
    if (std::find(f.types.begin(), f.types.end(), type) != f.types.end()) return &f;
  }
  return nullptr;
}

// ---- reading a config ----

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

// A value that changes something: not null, false, 0, "" or an empty list.
bool active_value(const json& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  return true;
}

// A key's value as the count reads it: a number (Int), or unknown for anything else.
ConfigValue value_of(const json& v) {
  ConfigValue out;
  if (v.is_number_integer()) {
    out.number = v.is_number_unsigned() ? Int::of_unsigned(v.get<uint64_t>()) : Int(v.get<int64_t>());
  } else if (v.is_number_float()) {
    out.number = Int::of_double(v.get<double>());
  }
  return out;
}

// The family's defaults for what a config may leave out, each noted.
void apply_defaults(ModelConfig& c) {
  const Family* f = find_family(c.model_type);
  if (f) {
    if (f->intermediate_per_hidden && !c.intermediate && c.hidden) {
      c.intermediate = f->intermediate_per_hidden * c.hidden;
      c.derived_from["intermediate"] = f->intermediate_note;
    }
    if (f->kv_heads_default && !c.kv_heads && c.heads) {
      c.kv_heads = c.heads;
      c.derived_from["kv_heads"] = "num_attention_heads";
    }
    if (f->tied && !c.tied) {
      c.tied = *f->tied;
      c.derived_from["tied"] = f->tied_note;
    }
    if (f->type_vocab_default && !c.type_vocab) c.type_vocab = f->type_vocab_default;
    if (f->qkv_bias == Bias::Always) c.qkv_bias = true;
    if (f->o_bias == Bias::Always) c.o_bias = true;
    if (f->mlp_bias == Bias::Always) c.mlp_bias = true;
    if (f->qk_norm) c.qk_norm = true;
  }
  const bool latent = f && f->attention == Attention::Latent;
  if (!c.head_dim && c.hidden && c.heads && !latent) {  // latent attention has no single head size
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
    for (const auto& [k, v] : j.items()) c.values[k] = value_of(v);
  }

  apply_defaults(c);
  return c;
}

namespace {

// ---- counting a row ----

// The count of one config by its family's row.
class Counter {
 public:
  Counter(const Family& f, const ModelConfig& c) : f_(f), c_(c) {}

  std::optional<FamilyCount> run();

 private:
  bool part(const char* name, Int n, const std::string& formula) {
    out_.parts.push_back({name, n.count().value_or(0), formula + " = " + commas(n.count().value_or(0))});
    total_ += n;
    return n.non_negative();
  }
  Int value(const char* key) const {
    if (!key) return {};
    auto it = c_.values.find(key);
    return it == c_.values.end() ? Int() : it->second.number;
  }
  // The period of an EveryNth (1 when the config does not give a positive one).
  int64_t period(const EveryNth& e) const {
    Int p = value(e.period);
    return p.positive() ? *p : 1;
  }
  bool expert_layer(int64_t l) const;
  bool bias(Bias b, bool from_config) const { return b == Bias::Always || (b == Bias::FromConfig && from_config); }
  // One layer's attention and its formula.
  bool attention(Int& n, std::string& formula) const;

  const Family& f_;
  const ModelConfig& c_;
  FamilyCount out_;
  Int total_ = 0;
};

bool Counter::expert_layer(int64_t l) const {
  const ExpertLayers& e = f_.expert_layers;
  if (e.dense_list && std::find(c_.dense_layers.begin(), c_.dense_layers.end(), l) != c_.dense_layers.end()) return false;
  if (e.first && l < static_cast<int64_t>(value(e.first).count().value_or(0))) return false;
  if (!e.every.period) return true;
  int64_t p = period(e.every);
  return l % p == (e.every.last ? p - 1 : 0);
}

bool Counter::attention(Int& n, std::string& formula) const {
  Int h = c_.hidden, H = c_.heads, KV = c_.kv_heads, d = c_.head_dim;
  std::string hs = h.str(), Hs = H.str(), KVs = KV.str(), ds = d.str();
  const bool qkv_b = bias(f_.qkv_bias, c_.qkv_bias), o_b = bias(f_.o_bias, c_.o_bias);
  switch (f_.attention) {
    case Attention::Square:  // Q, K, V, O: width × width each
      n = 4 * (h * h + (qkv_b ? h : Int(0)));
      formula = qkv_b ? "4·(" + hs + "² + " + hs + ")" : "4·" + hs + "²";
      return true;
    case Attention::SquareFused:  // c_attn width × 3·width, c_proj width × width
      n = h * 3 * h + (qkv_b ? 3 * h : Int(0)) + h * h + (o_b ? h : Int(0));
      formula = "(" + hs + "·3·" + hs + (qkv_b ? " + 3·" + hs : "") + " + " + hs + "²" + (o_b ? " + " + hs : "") + ")";
      return true;
    case Attention::Heads:
      if (!KV.positive() || !d.positive()) return false;
      n = h * H * d + 2 * h * KV * d + H * d * h;
      formula = hs + "·" + Hs + "·" + ds + " + 2·" + hs + "·" + KVs + "·" + ds + " + " + Hs + "·" + ds + "·" + hs;
      if (qkv_b) {
        n += H * d + 2 * KV * d;
        formula += " + " + Hs + "·" + ds + " + 2·" + KVs + "·" + ds;
      }
      if (o_b) {
        n += h;
        formula += " + " + hs;
      }
      formula = "(" + formula + ")";
      return true;
    case Attention::Latent: {
      // Q through a low-rank factor (or straight), K/V through a shared latent with a decoupled
      // RoPE key; the latent norms belong to the block.
      Int qr = c_.q_lora_rank, kr = c_.kv_lora_rank, nope = c_.qk_nope_dim, rope = c_.qk_rope_dim, vd = c_.v_head_dim;
      if (!kr.positive() || !nope.positive() || !rope.positive() || !vd.positive()) return false;
      std::string qk = "(" + nope.str() + " + " + rope.str() + ")";
      if (qr.positive()) {
        n = h * qr + qr + qr * H * (nope + rope);
        formula = hs + "·" + qr.str() + " + " + qr.str() + " + " + qr.str() + "·" + Hs + "·" + qk;
      } else {
        n = h * H * (nope + rope);
        formula = hs + "·" + Hs + "·" + qk;
      }
      n += h * (kr + rope) + kr + kr * H * (nope + vd) + H * vd * h;
      formula += " + " + hs + "·(" + kr.str() + " + " + rope.str() + ") + " + kr.str() + " + " + kr.str() + "·" + Hs + "·(" +
                 nope.str() + " + " + vd.str() + ") + " + Hs + "·" + vd.str() + "·" + hs;
      formula = "(" + formula + ")";
      return true;
    }
  }
  return false;
}

std::optional<FamilyCount> Counter::run() {
  const ModelConfig& c = c_;
  Int L = c.layers, h = c.hidden, V = c.vocab, i = c.intermediate, H = c.heads;
  auto known = [](std::initializer_list<Int> v) {
    for (Int x : v) {
      if (!x.positive()) return false;
    }
    return true;
  };
  if (!known({L, h, V})) return std::nullopt;
  if (f_.attention != Attention::Square && f_.attention != Attention::SquareFused && !H.positive()) return std::nullopt;
  if (f_.positions && !c.max_positions.positive()) return std::nullopt;
  if (f_.token_types && !c.type_vocab.positive()) return std::nullopt;
  out_.family = f_.name;
  std::string Ls = L.str(), hs = h.str(), Vs = V.str(), is = i.str();

  Int attn;
  std::string attn_formula;
  if (!attention(attn, attn_formula)) return std::nullopt;

  // Which layers are mixtures of experts.
  const bool moe = f_.experts && c.experts.positive();
  int64_t moe_layers = 0;
  if (moe) {
    if (!c.experts_per_token.positive() || *L > (int64_t{1} << 20)) return std::nullopt;
    for (int64_t l = 0; l < *L; ++l) moe_layers += expert_layer(l) ? 1 : 0;
  }
  Int M = Int(moe_layers), dense_layers = L - M;
  Int mi = moe ? (f_.expert_size == std::string("intermediate_size") ? i : c.moe_intermediate) : Int(0);
  if (moe && !mi.positive()) return std::nullopt;
  if (dense_layers.positive() && !i.positive()) return std::nullopt;

  bool ok = true;
  std::string embeddings = Vs + "·" + hs;
  Int embedding = V * h;
  if (f_.positions) {
    embeddings += " + " + c.max_positions.str() + "·" + hs;
    embedding += c.max_positions * h;
  }
  if (f_.token_types) {
    embeddings += " + " + c.type_vocab.str() + "·" + hs;
    embedding += c.type_vocab * h;
  }
  ok &= part("embeddings", embedding, embeddings);
  ok &= part("attention", L * attn, Ls + " · " + attn_formula);

  const bool mlp_b = bias(f_.mlp_bias, c.mlp_bias);
  if (!moe || dense_layers.positive()) {
    std::string n = moe ? dense_layers.str() + " dense layers" : Ls;
    if (f_.mlp == Mlp::Plain) {
      ok &= part("feed-forward", dense_layers * (2 * h * i + (mlp_b ? i + h : Int(0))),
                 n + " · (2·" + hs + "·" + is + (mlp_b ? " + " + is + " + " + hs : "") + ")");
    } else {
      ok &= part("feed-forward", dense_layers * (3 * h * i + (mlp_b ? 2 * i + h : Int(0))),
                 n + " · 3·" + hs + "·" + is + (mlp_b ? " + biases" : ""));
    }
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
    out_.moe_layers = moe_layers;
    out_.experts = *E;
    out_.experts_per_token = *k;
    out_.expert_size = expert.count().value_or(0);
  }

  // Norms: the embeddings' (BERT), every layer's, the final one; q_norm and k_norm of head_dim.
  const int w = f_.norm_weights;
  auto width = [&](int times) { return times == 1 ? hs : std::to_string(times) + "·" + hs; };
  Int norms = L * (f_.norms_per_layer * w) * h;
  std::string norms_formula = Ls + " · " + width(f_.norms_per_layer * w);
  if (f_.embedding_norm) {
    norms = w * h + norms;
    norms_formula = width(w) + " + " + norms_formula;
  }
  if (f_.final_norm) {
    norms += w * h;
    norms_formula += " + " + width(w);
  }
  if (c.qk_norm) {
    norms += L * 2 * c.head_dim;
    norms_formula += " + " + Ls + " · 2·" + c.head_dim.str() + " (q_norm, k_norm)";
  }
  ok &= part("norms", norms, norms_formula);
  if (f_.pooler) ok &= part("pooler", h * h + h, hs + "² + " + hs);
  if (f_.lm_head) {
    bool tied = c.tied.value_or(false);
    ok &= part("lm head", tied ? Int(0) : V * h, tied ? std::string("tied to the token embedding") : Vs + "·" + hs);
  }

  if (moe) {
    Int idle = M * (c.experts - c.experts_per_token) * expert;
    Int active = total_ - idle;
    if (active.non_negative()) {
      out_.active = active.count();
      out_.active_formula = "the total less " + M.str() + " MoE layers · (" + c.experts.str() + " − " +
                            c.experts_per_token.str() + ") idle experts · " + commas(expert.count().value_or(0)) + " = " +
                            commas(*active.count());
    }
  }
  // The K/V cache per token, at the config's dtype.
  const bool mla = f_.attention == Attention::Latent;
  static const std::map<std::string, int> bytes = {{"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8}};
  std::string dtype = c.dtype.empty() ? "float32" : c.dtype;
  if (auto it = bytes.find(dtype); f_.kv_cache && it != bytes.end()) {
    Int per = mla ? L * (c.kv_lora_rank + c.qk_rope_dim) * it->second : L * c.kv_heads * 2 * c.head_dim * it->second;
    if (per.positive()) {
      out_.kv_bytes_per_token = per.count();
      out_.kv_formula = mla ? Ls + " layers · (" + c.kv_lora_rank.str() + " latent + " + c.qk_rope_dim.str() + " RoPE key) · " +
                                  std::to_string(it->second) + " bytes (" + dtype + ")"
                            : Ls + " layers · " + c.kv_heads.str() + " K/V heads · 2·" + c.head_dim.str() + " · " +
                                  std::to_string(it->second) + " bytes (" + dtype + ")";
      if (c.dtype.empty()) out_.kv_formula += "; the config declares no torch_dtype";
    }
  }
  // Multi-token-prediction modules: one more MoE layer each, with the projection of [normed hidden;
  // normed embedding] and its norms; they share the embedding and LM head.
  Int mtp_layers = value(f_.mtp);
  if (f_.mtp && mtp_layers.positive() && moe) {
    Int E = c.experts;
    Int layer = attn + E * expert + (c.shared_experts.positive() ? c.shared_experts * expert : Int(0)) + h * E +
                (c.router_bias ? E : Int(0)) + 2 * h;
    Int mtp = mtp_layers * (layer + 2 * h * h + 3 * h);
    out_.mtp.push_back({"multi-token prediction", mtp.count().value_or(0),
                        mtp_layers.str() + " · (one MoE layer " + commas(layer.count().value_or(0)) + " + eh_proj 2·" + hs +
                            "·" + hs + " + 3·" + hs + " norms) = " + commas(mtp.count().value_or(0))});
    out_.mtp_total = mtp.count().value_or(0);
  }
  if (!ok || !total_.non_negative()) return std::nullopt;  // a product that does not fit in 64 bits
  out_.total = *total_.count();
  return out_;
}

}  // namespace

std::optional<FamilyCount> family_count(const ModelConfig& c) {
  const Family* f = find_family(c.model_type);
  if (!f) return std::nullopt;
  return Counter(*f, c).run();
}

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& f : families()) t.insert(t.end(), f.types.begin(), f.types.end());
    return t;
  }();
  return types;
}

FamilyCount family_count_or_explain(const ModelConfig& c) {
  const Family* family = find_family(c.model_type);
  if (!family) {
    std::string list;
    for (const auto& k : known_families()) list += (list.empty() ? "" : ", ") + k;
    throw InputError("model config '" + c.file + "': headcount does not know the model_type '" + c.model_type +
                     "' (it knows " + list + ")");
  }
  for (const auto& k : c.count_keys) {
    if (std::find(family->reads.begin(), family->reads.end(), k) == family->reads.end()) {
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
