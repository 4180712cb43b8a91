// checkpoint/names.cpp: what a checkpoint tensor's name says it is. Naming conventions are tables
// (a family's module path after the layer index -> a role), not branches: a new family is rows.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "checkpoint/model.h"
#include "headcount/checked.h"
#include "headcount/error.h"

namespace headcount {
namespace {

// A name's path after the layer index ("self_attn.q_proj" in model.layers.3.self_attn.q_proj.weight),
// with a further index (an expert's) written '#', and what it is.
struct Row {
  const char* path;
  const char* role;
  const char* family;
};

// Roles: q, k, v, o (a projection), qkv (Q, K and V packed [3·out, in]), qkv_t (packed and stored
// transposed, GPT-2's Conv1D [in, 3·out]), q_norm, k_norm, sink, relative_bias (block extras),
// multi-head latent attention's q_a, q_a_norm, q_b (Q through its latent), kv_a (the K/V latent
// and the RoPE key, [kv_rank + rope, in]), kv_a_norm, kv_b ([heads · (nope + v), kv_rank]: each
// head's K then V) or llama.cpp's k_b and v_b (kv_b split), cq/ck/cv/co (cross-attention), norm, ffn,
// expert (a routed expert, one per index or stacked [experts, ...]), shared (a shared expert),
// router, mixer (a state-space or linear-attention layer), buffer (not a parameter).
const Row kLayerRows[] = {
    // Hugging Face transformers: LLaMA, Mistral, Qwen, Gemma, Phi-3, OLMo, gpt-oss, DeepSeek ...
    {"self_attn.q_proj", "q", "hf"},
    {"self_attn.k_proj", "k", "hf"},
    {"self_attn.v_proj", "v", "hf"},
    {"self_attn.o_proj", "o", "hf"},
    {"self_attn.qkv_proj", "qkv", "hf"},
    {"self_attn.q_norm", "q_norm", "hf"},
    {"self_attn.k_norm", "k_norm", "hf"},
    {"self_attn.sinks", "sink", "hf"},
    {"self_attn.q_a_proj", "q_a", "hf"},
    {"self_attn.q_a_layernorm", "q_a_norm", "hf"},
    {"self_attn.q_b_proj", "q_b", "hf"},
    {"self_attn.kv_a_proj_with_mqa", "kv_a", "hf"},
    {"self_attn.kv_a_layernorm", "kv_a_norm", "hf"},
    {"self_attn.kv_b_proj", "kv_b", "hf"},
    {"self_attn.rotary_emb.inv_freq", "buffer", "hf"},
    {"input_layernorm", "norm", "hf"},
    {"post_attention_layernorm", "norm", "hf"},
    {"pre_feedforward_layernorm", "norm", "hf"},
    {"post_feedforward_layernorm", "norm", "hf"},
    {"mlp.gate_proj", "ffn", "hf"},
    {"mlp.up_proj", "ffn", "hf"},
    {"mlp.down_proj", "ffn", "hf"},
    {"mlp.gate_up_proj", "ffn", "hf"},
    {"mlp.fc1", "ffn", "hf"},
    {"mlp.fc2", "ffn", "hf"},
    {"mlp.gate", "router", "hf"},
    {"mlp.gate.e_score_correction_bias", "router", "hf"},
    {"mlp.router", "router", "hf"},
    {"mlp.experts.#.gate_proj", "expert", "hf"},
    {"mlp.experts.#.up_proj", "expert", "hf"},
    {"mlp.experts.#.down_proj", "expert", "hf"},
    {"mlp.experts.gate_up_proj", "expert", "hf"},
    {"mlp.experts.gate_up_proj_bias", "expert", "hf"},
    {"mlp.experts.down_proj", "expert", "hf"},
    {"mlp.experts.down_proj_bias", "expert", "hf"},
    {"mlp.shared_experts.gate_proj", "shared", "hf"},
    {"mlp.shared_experts.up_proj", "shared", "hf"},
    {"mlp.shared_experts.down_proj", "shared", "hf"},
    {"mlp.shared_expert.gate_proj", "shared", "hf"},
    {"mlp.shared_expert.up_proj", "shared", "hf"},
    {"mlp.shared_expert.down_proj", "shared", "hf"},
    {"mlp.shared_expert_gate", "shared", "hf"},
    {"block_sparse_moe.gate", "router", "hf"},
    {"block_sparse_moe.experts.#.w1", "expert", "hf"},
    {"block_sparse_moe.experts.#.w2", "expert", "hf"},
    {"block_sparse_moe.experts.#.w3", "expert", "hf"},
    // GPT-2 (Conv1D weights stored [in, out]).
    {"attn.c_attn", "qkv_t", "gpt2"},
    {"attn.c_proj", "o_t", "gpt2"},
    {"attn", "buffer", "gpt2"},  // h.N.attn.bias: the causal mask, a buffer
    {"attn.masked_bias", "buffer", "gpt2"},
    {"mlp.c_fc", "ffn", "gpt2"},
    {"mlp.c_proj", "ffn", "gpt2"},
    {"ln_1", "norm", "gpt2"},
    {"ln_2", "norm", "gpt2"},
    // GPT-NeoX, Pythia (Q, K and V interleaved per head) and Falcon.
    {"attention.query_key_value", "qkv", "neox"},
    {"attention.dense", "o", "neox"},
    {"attention.rotary_emb.inv_freq", "buffer", "neox"},
    {"attention.masked_bias", "buffer", "neox"},
    {"attention", "buffer", "neox"},  // layers.N.attention.bias: the causal mask
    {"mlp.dense_h_to_4h", "ffn", "neox"},
    {"mlp.dense_4h_to_h", "ffn", "neox"},
    {"self_attention.query_key_value", "qkv", "falcon"},
    {"self_attention.dense", "o", "falcon"},
    {"ln_attn", "norm", "falcon"},
    {"ln_mlp", "norm", "falcon"},
    // BERT and its kin (encoder.layer.N.).
    {"attention.self.query", "q", "bert"},
    {"attention.self.key", "k", "bert"},
    {"attention.self.value", "v", "bert"},
    {"attention.output.dense", "o", "bert"},
    {"attention.output.LayerNorm", "norm", "bert"},
    {"intermediate.dense", "ffn", "bert"},
    {"output.dense", "ffn", "bert"},
    {"output.LayerNorm", "norm", "bert"},
    // T5 (encoder.block.N., decoder.block.N.).
    {"layer.#.SelfAttention.q", "q", "t5"},
    {"layer.#.SelfAttention.k", "k", "t5"},
    {"layer.#.SelfAttention.v", "v", "t5"},
    {"layer.#.SelfAttention.o", "o", "t5"},
    {"layer.#.SelfAttention.relative_attention_bias", "relative_bias", "t5"},
    {"layer.#.EncDecAttention.q", "cq", "t5"},
    {"layer.#.EncDecAttention.k", "ck", "t5"},
    {"layer.#.EncDecAttention.v", "cv", "t5"},
    {"layer.#.EncDecAttention.o", "co", "t5"},
    {"layer.#.layer_norm", "norm", "t5"},
    {"layer.#.DenseReluDense.wi", "ffn", "t5"},
    {"layer.#.DenseReluDense.wi_0", "ffn", "t5"},
    {"layer.#.DenseReluDense.wi_1", "ffn", "t5"},
    {"layer.#.DenseReluDense.wo", "ffn", "t5"},
    // llama.cpp's GGUF names (blk.N.).
    {"attn_q", "q", "gguf"},
    {"attn_k", "k", "gguf"},
    {"attn_v", "v", "gguf"},
    {"attn_output", "o", "gguf"},
    {"attn_qkv", "qkv", "gguf"},
    {"attn_q_norm", "q_norm", "gguf"},
    {"attn_k_norm", "k_norm", "gguf"},
    {"attn_sinks", "sink", "gguf"},
    {"attn_q_a", "q_a", "gguf"},
    {"attn_q_a_norm", "q_a_norm", "gguf"},
    {"attn_q_b", "q_b", "gguf"},
    {"attn_kv_a_mqa", "kv_a", "gguf"},
    {"attn_kv_a_norm", "kv_a_norm", "gguf"},
    {"attn_kv_b", "kv_b", "gguf"},
    {"attn_k_b", "k_b", "gguf"},
    {"attn_v_b", "v_b", "gguf"},
    {"attn_norm", "norm", "gguf"},
    {"attn_post_norm", "norm", "gguf"},
    {"post_attention_norm", "norm", "gguf"},
    {"ffn_norm", "norm", "gguf"},
    {"post_ffw_norm", "norm", "gguf"},
    {"ffn_gate", "ffn", "gguf"},
    {"ffn_up", "ffn", "gguf"},
    {"ffn_down", "ffn", "gguf"},
    {"ffn_gate_inp", "router", "gguf"},
    {"exp_probs_b", "router", "gguf"},
    {"ffn_gate_exps", "expert", "gguf"},
    {"ffn_up_exps", "expert", "gguf"},
    {"ffn_down_exps", "expert", "gguf"},
    {"ffn_gate_up_exps", "expert", "gguf"},
    {"ffn_gate_shexp", "shared", "gguf"},
    {"ffn_up_shexp", "shared", "gguf"},
    {"ffn_down_shexp", "shared", "gguf"},
    {"ffn_gate_inp_shexp", "shared", "gguf"},
    {"ssm_in", "mixer", "gguf"},
    {"ssm_conv1d", "mixer", "gguf"},
    {"ssm_x", "mixer", "gguf"},
    {"ssm_dt", "mixer", "gguf"},
    {"ssm_a", "mixer", "gguf"},
    {"ssm_d", "mixer", "gguf"},
    {"ssm_norm", "mixer", "gguf"},
    {"ssm_out", "mixer", "gguf"},
};

// Names outside the layers: the last components before .weight/.bias.
const Row kModelRows[] = {
    {"embed_tokens", "embedding", "hf"},    {"embed_positions", "embedding", "hf"},
    {"wte", "embedding", "gpt2"},           {"wpe", "embedding", "gpt2"},
    {"word_embeddings", "embedding", "bert"}, {"position_embeddings", "embedding", "bert"},
    {"token_type_embeddings", "embedding", "bert"}, {"embed_in", "embedding", "neox"},
    {"shared", "embedding", "t5"},          {"token_embd", "embedding", "gguf"},
    {"lm_head", "lm_head", "hf"},           {"embed_out", "lm_head", "neox"},
    {"output", "lm_head", "gguf"},          {"norm", "norm", "hf"},
    {"ln_f", "norm", "gpt2"},               {"final_layer_norm", "norm", "t5"},
    {"final_layernorm", "norm", "hf"},      {"embeddings.LayerNorm", "norm", "bert"},
    {"output_norm", "norm", "gguf"},        {"norm_f", "norm", "hf"},
    {"rope_freqs", "buffer", "gguf"},
};

// The containers a layer index follows.
bool layer_container(std::string_view s) {
  return s == "layers" || s == "h" || s == "blocks" || s == "blk" || s == "layer" || s == "block";
}

bool digits(std::string_view s) {
  return !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}


}  // namespace

std::vector<std::string_view> name_parts(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

size_t layer_index_at(const std::vector<std::string_view>& parts) {
  for (size_t i = 1; i < parts.size(); ++i) {
    if (digits(parts[i]) && layer_container(parts[i - 1])) return i;
  }
  return parts.size();
}

const std::vector<NameRow>& name_rows() {
  static const std::vector<NameRow> rows = [] {
    std::vector<NameRow> out;
    for (const Row& r : kLayerRows) out.push_back({r.path, r.role, r.family, true});
    for (const Row& r : kModelRows) out.push_back({r.path, r.role, r.family, false});
    return out;
  }();
  return rows;
}

std::vector<NamedTensor> name_roles(const Model& model) {
  static const auto layer_table = [] {
    std::unordered_map<std::string, const Row*> t;
    for (const Row& r : kLayerRows) t.emplace(r.path, &r);
    return t;
  }();
  static const auto model_table = [] {
    std::unordered_map<std::string, const Row*> t;
    for (const Row& r : kModelRows) t.emplace(r.path, &r);
    return t;
  }();
  std::vector<NamedTensor> out(model.weights.size());
  std::map<std::string, int> layer_ids;  // "model.layers.3" -> its index among the layers, in order
  for (size_t wi = 0; wi < model.weights.size(); ++wi) {
    NamedTensor& nt = out[wi];
    std::vector<std::string_view> parts = name_parts(model.weights[wi].name);
    if (parts.size() > 1 && (parts.back() == "weight" || parts.back() == "bias" || parts.back() == "scale")) {
      nt.bias = parts.back() == "bias";
      parts.pop_back();
    }
    const size_t at = layer_index_at(parts);  // the layer: the first index after a layer container
    if (at < parts.size()) {
      std::string prefix;
      for (size_t i = 0; i <= at; ++i) prefix += std::string(parts[i]) + (i < at ? "." : "");
      auto [it, fresh] = layer_ids.emplace(prefix, static_cast<int>(layer_ids.size()));
      (void)fresh;
      std::string path;
      for (size_t i = at + 1; i < parts.size(); ++i) {
        bool index = digits(parts[i]);
        if (index && i > 0 && parts[i - 1] == "experts") nt.expert = std::stoi(std::string(parts[i]));
        path += (path.empty() ? "" : ".") + (index ? std::string("#") : std::string(parts[i]));
      }
      auto row = layer_table.find(path);
      if (row != layer_table.end()) {
        nt.layer = it->second;
        nt.role = row->second->role;
        nt.family = row->second->family;
      }
      continue;
    }
    // Outside the layers: the longest known tail of the name.
    for (size_t take = std::min<size_t>(parts.size(), 2); take >= 1; --take) {
      std::string tail;
      for (size_t i = parts.size() - take; i < parts.size(); ++i) tail += (tail.empty() ? "" : ".") + std::string(parts[i]);
      auto row = model_table.find(tail);
      if (row != model_table.end()) {
        nt.role = row->second->role;
        nt.family = row->second->family;
        break;
      }
    }
  }
  // Layer indices in the order layers first appear; renumber by the prefixes' own order so that
  // model.layers.10 follows model.layers.9 (the map sorts them as strings).
  std::vector<std::pair<std::pair<std::string, long>, int>> order;  // ((container prefix, index), id)
  for (const auto& [prefix, id] : layer_ids) {
    size_t dot = prefix.rfind('.');
    order.push_back({{prefix.substr(0, dot), std::stol(prefix.substr(dot + 1))}, id});
  }
  std::sort(order.begin(), order.end());
  std::vector<int> renumber(layer_ids.size());
  for (size_t i = 0; i < order.size(); ++i) renumber[static_cast<size_t>(order[i].second)] = static_cast<int>(i);
  for (NamedTensor& nt : out) {
    if (nt.layer >= 0) nt.layer = renumber[static_cast<size_t>(nt.layer)];
  }
  return out;
}

std::vector<Part> named_parts(const Model& model, const std::vector<NamedTensor>& names) {
  // Each role's part of the composition; a role not listed (none: a name no table knows) is Other.
  static const std::unordered_map<std::string, Part> part_of = {
      {"q", Part::Attention},      {"k", Part::Attention},      {"v", Part::Attention},
      {"o", Part::Attention},      {"o_t", Part::Attention},    {"qkv", Part::Attention},
      {"qkv_t", Part::Attention},  {"q_norm", Part::Attention}, {"k_norm", Part::Attention},
      {"sink", Part::Attention},   {"relative_bias", Part::Attention}, {"q_a", Part::Attention},
      {"q_a_norm", Part::Attention}, {"q_b", Part::Attention},  {"kv_a", Part::Attention},
      {"kv_a_norm", Part::Attention}, {"kv_b", Part::Attention}, {"k_b", Part::Attention},
      {"v_b", Part::Attention},
      {"cq", Part::Attention},     {"ck", Part::Attention},     {"cv", Part::Attention},
      {"co", Part::Attention},     {"norm", Part::Norms},       {"ffn", Part::FeedForward},
      {"shared", Part::FeedForward}, {"expert", Part::RoutedExperts}, {"router", Part::Routers},
      {"embedding", Part::Embeddings}, {"lm_head", Part::LMHead}, {"mixer", Part::Mixers},
      {"buffer", Part::Buffers}};
  std::vector<Part> parts(model.weights.size(), Part::Other);
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = part_of.find(names[i].role);
    if (it != part_of.end()) parts[i] = it->second;
  }
  return parts;
}

namespace {

// Output and input widths of a weight: [out, in] as Linear stores it, [in, out] when transposed.
std::pair<int64_t, int64_t> widths(const Weight& w, bool transposed) {
  if (w.dims.size() != 2) return {0, 0};
  return transposed ? std::make_pair(w.dims[1], w.dims[0]) : std::make_pair(w.dims[0], w.dims[1]);
}

void add_share(Projection& p, int wi, bool bias, uint64_t elements, const std::string& slice) {
  p.found = true;
  p.tensors.push_back({wi, bias, elements, slice});
  (bias ? p.bias : p.weight) += elements;
}

// Multi-head latent attention from its tensors' shapes and the head count h: kv_a is
// [kv_rank + rope, width] (kv_rank from kv_b's input or kv_a_norm's size), Q's output (q_b's, or
// q's) is h · (nope + rope), and kv_b is h · (nope + v) rows over kv_rank: each head's nope rows
// of K, then v rows of V. kv_b is split between K and V, and the latent sizes set, only when
// every size follows; otherwise kv_b is K's with a note.
void read_latent(const Model& m, const std::map<std::string, int>& t, const NamedHeads& heads, AttentionBlock& b) {
  auto weight = [&](const char* role) -> const Weight* {
    auto it = t.find(role);
    return it == t.end() ? nullptr : &m.weights[static_cast<size_t>(it->second)];
  };
  auto out_in = [&](const char* role) { return weight(role) ? widths(*weight(role), false) : std::make_pair(int64_t{0}, int64_t{0}); };
  const auto [kv_a_out, width] = out_in("kv_a");
  const auto [kv_b_out, kv_b_in] = out_in("kv_b");
  const auto [q_b_out, q_b_in] = out_in("q_b");
  const auto [q_a_out, q_a_in] = out_in("q_a");
  int64_t kv_rank = kv_b_in;
  if (!kv_rank && weight("kv_a_norm") && weight("kv_a_norm")->elements < (uint64_t{1} << 31)) {
    kv_rank = static_cast<int64_t>(weight("kv_a_norm")->elements);
  }
  const int64_t rope = kv_rank > 0 && kv_a_out > kv_rank ? kv_a_out - kv_rank : 0;
  const int64_t q_out = q_b_out ? q_b_out : b.q.out_width;
  int64_t nope = 0, v = 0;
  if (heads.heads && *heads.heads > 0) {
    const int64_t h = *heads.heads;
    if (q_out > 0 && q_out % h == 0 && q_out / h > rope) nope = q_out / h - rope;
    if (nope && kv_b_out > 0 && kv_b_out % h == 0 && kv_b_out / h > nope) v = kv_b_out / h - nope;
    if (nope && !weight("kv_b") && weight("v_b") && kv_rank > 0) {
      // llama.cpp's split kv_b: v_b holds h · v · kv_rank elements.
      Int each = exact_div(Int::of_unsigned(weight("v_b")->elements), Int(h) * Int(kv_rank));
      if (each.positive()) v = *each;
    }
  }
  // The split holds only when kv_b is exactly h · (nope + v) rows of kv_rank: kv_rank read from
  // kv_a_norm does not make an empty kv_b hold anything.
  Int k_share, v_share;
  if (const Weight* w = weight("kv_b"); w && v > 0 && kv_rank > 0) {
    const Int h = Int(*heads.heads);
    k_share = h * Int(nope) * Int(kv_rank);
    v_share = h * Int(v) * Int(kv_rank);
    if (!same(k_share + v_share, Int::of_unsigned(w->elements))) k_share = v_share = Int();
    if (!k_share.known()) v = 0;
  }
  if (width > 0) b.width = width;
  else if (q_a_in > 0) b.width = q_a_in;
  if (const Weight* w = weight("kv_b")) {
    const int wi = t.at("kv_b");
    if (k_share.known()) {
      const int64_t h = *heads.heads;
      const std::string each = " of each head's " + (Int(nope) + Int(v)).str() + " (" + std::to_string(h) + " heads)";
      add_share(b.k, wi, false, static_cast<uint64_t>(*k_share), "rows 0:" + std::to_string(nope) + each);
      add_share(b.v, wi, false, static_cast<uint64_t>(*v_share), "rows " + std::to_string(nope) + ":" + (Int(nope) + Int(v)).str() + each);
    } else {
      add_share(b.k, wi, false, w->elements, "K and V of every head, split unknown");
      b.notes.push_back("latent attention's kv_b '" + std::string(w->name) + "' " + shape_string(w->dims) +
                        (heads.heads ? ": its shape is not heads × (K + V head sizes) rows over the K/V latent, so its "
                                       "split between K and V is unknown; counted under K"
                                     : ": its split between K and V is unknown without the heads; counted under K"));
    }
  }
  if (nope > 0 && v > 0 && kv_rank > 0) {
    LatentAttention l;
    l.q_rank = q_a_out;
    l.kv_rank = kv_rank;
    l.rope_dim = rope;
    l.qk_nope_dim = nope;
    l.v_head_dim = v;
    auto shape_of = [&](const char* role) { return weight(role) ? " " + shape_string(weight(role)->dims) : std::string(); };
    l.from = "by name: " + std::string(weight("q_a") ? "Q through q_a" + shape_of("q_a") + " → norm → q_b" + shape_of("q_b") : "Q through q" + shape_of("q")) +
             "; K/V through kv_a" + shape_of("kv_a") + " (" + std::to_string(kv_rank) + " latent + " + std::to_string(rope) +
             " RoPE key) → norm → " + (weight("kv_b") ? "kv_b" + shape_of("kv_b") : "k_b" + shape_of("k_b") + " and v_b" + shape_of("v_b")) +
             " (per head " + std::to_string(nope) + " K + " + std::to_string(v) + " V)";
    b.latent = l;
    b.head_dim = nope + rope;
    b.v_head_dim = v;
  }
}

std::string common_prefix(const Model& m, const std::vector<int>& weights) {
  if (weights.empty()) return "";
  std::string p(m.weights[static_cast<size_t>(weights[0])].name);
  for (int wi : weights) {
    std::string_view n = m.weights[static_cast<size_t>(wi)].name;
    size_t i = 0;
    while (i < p.size() && i < n.size() && p[i] == n[i]) ++i;
    p.resize(i);
  }
  size_t cut = p.find_last_of('.');
  return cut == std::string::npos ? p : p.substr(0, cut);
}

// Per layer and kind (self, cross): the tensors of each role.
std::map<std::pair<int, int>, std::vector<int>> attention_layers(const std::vector<NamedTensor>& names) {
  std::map<std::pair<int, int>, std::vector<int>> layers;
  for (size_t i = 0; i < names.size(); ++i) {
    const NamedTensor& n = names[i];
    if (n.layer < 0) continue;
    static const char* self_roles[] = {"q",    "k",        "v",    "o",    "o_t",       "qkv",  "qkv_t", "q_norm",
                                       "k_norm", "sink", "relative_bias", "q_a", "q_a_norm", "q_b", "kv_a",
                                       "kv_a_norm", "kv_b", "k_b", "v_b"};
    static const char* cross_roles[] = {"cq", "ck", "cv", "co"};
    bool self = std::any_of(std::begin(self_roles), std::end(self_roles), [&](const char* x) { return n.role == x; });
    bool cross = std::any_of(std::begin(cross_roles), std::end(cross_roles), [&](const char* x) { return n.role == x; });
    if (self || cross) layers[{n.layer, cross ? 1 : 0}].push_back(static_cast<int>(i));
  }
  return layers;
}

AttentionBlock new_named_block(const Model& model, const std::vector<int>& tensors, bool cross, int index, const NamedHeads& heads) {
  AttentionBlock b;
  b.index = index;
  b.form = "by name";
  b.kind = cross ? "cross" : "self";
  b.name = common_prefix(model, tensors);
  b.heads = heads.heads;
  b.kv_heads = heads.kv_heads ? heads.kv_heads : heads.heads;
  b.head_dim = heads.head_dim;
  b.v_head_dim = heads.v_head_dim ? heads.v_head_dim : heads.head_dim;
  b.heads_from = heads.from;
  return b;
}

// The packed Q, K and V: split by the head counts, else in thirds when the output is three
// times the input (multi-head attention), said in the slice.
void add_packed_qkv(AttentionBlock& b, int wi, const Weight& w, const NamedTensor& n, bool transposed, const NamedHeads& heads) {
  auto [out, in] = n.bias ? std::make_pair(static_cast<int64_t>(w.elements), int64_t{0}) : widths(w, transposed);
  int64_t q_out = 0, kv_out = 0;
  std::string how;
  if (heads.heads && heads.head_dim) {
    Int q = Int(*heads.heads) * Int(*heads.head_dim), kv = Int(*b.kv_heads) * Int(*heads.head_dim);
    Int total = q + kv + kv;
    if (total.known() && *total == out) {
      q_out = *q;
      kv_out = *kv;
      how = "by the heads";
    }
  }
  if (!q_out && out > 0 && out % 3 == 0 && (n.bias || out / 3 == in)) {
    q_out = kv_out = out / 3;
    how = "in thirds (output = 3 × width, as multi-head attention packs it)";
  }
  if (!q_out) {
    b.notes.push_back("packed Q/K/V '" + std::string(w.name) + "' " + shape_string(w.dims) +
                      ": its split is unknown without the heads; counted under Q");
    add_share(b.q, wi, n.bias, w.elements, "Q, K and V packed, split unknown");
    return;
  }
  // Each share is its rows times the input width (a bias: its elements): a weight with an
  // empty input axis stores nothing, and none of its slices holds more.
  const Int per = n.bias ? Int(1) : Int(in);
  int64_t at = 0;  // q_out + 2·kv_out = out: no step overflows
  for (auto [role2, size] : {std::make_pair(Role::Q, q_out), std::make_pair(Role::K, kv_out), std::make_pair(Role::V, kv_out)}) {
    Projection& p = b.projection(role2);
    std::string slice = std::string(n.bias ? "elements " : "rows ") + std::to_string(at) + ":" + std::to_string(at + size) +
                        " of " + std::to_string(out) + ", " + how;
    add_share(p, wi, n.bias, (Int(size) * per).count().value_or(w.elements), slice);
    if (!n.bias) {
      p.out_width = size;
      p.in_width = in;
    }
    at += size;
  }
}

// One named tensor into its block: a projection (or its share), a latent attention's tensor
// (kept in latent_tensors by role), or an extra.
void add_named_tensor(AttentionBlock& b, int wi, const Weight& w, const NamedTensor& n, const NamedHeads& heads,
                      std::map<std::string, int>& latent_tensors) {
  std::string role = n.role;
  if (role.size() == 2 && role[0] == 'c') role = role.substr(1);  // cross: cq -> q
  if (role == "q" || role == "k" || role == "v" || role == "o" || role == "o_t") {
    Projection& p = b.projection(role == "q" ? Role::Q : role == "k" ? Role::K : role == "v" ? Role::V : Role::O);
    add_share(p, wi, n.bias, w.elements, "");
    if (!n.bias) std::tie(p.out_width, p.in_width) = widths(w, role == "o_t");
  } else if (role == "qkv" || role == "qkv_t") {
    add_packed_qkv(b, wi, w, n, role == "qkv_t", heads);
  } else if (role == "q_a" || role == "q_b" || role == "kv_a" || role == "k_b" || role == "v_b") {
    // Latent attention: Q through its latent; K is the K/V latent with the RoPE key, plus its
    // share of kv_b (or llama.cpp's k_b); V the rest of kv_b (or v_b).
    Projection& p = role == "q_a" || role == "q_b" ? b.q : role == "v_b" ? b.v : b.k;
    add_share(p, wi, n.bias, w.elements, "");
    if (role == "q_a" && !n.bias) p.in_width = widths(w, false).second;
    latent_tensors[role] = wi;
  } else if (role == "kv_b") {
    latent_tensors[role] = wi;  // split per head below, once the sizes are known
  } else if (role == "q_a_norm" || role == "kv_a_norm") {
    b.extras.push_back({wi, ExtraRole::LatentNorm, w.elements});
    latent_tensors[role] = wi;
  } else if (role == "q_norm" || role == "k_norm" || role == "sink" || role == "relative_bias") {
    b.extras.push_back({wi,
                        role == "q_norm" ? ExtraRole::QNorm : role == "k_norm" ? ExtraRole::KNorm
                                         : role == "sink"  ? ExtraRole::Sink : ExtraRole::RelativeBias,
                        w.elements});
  }
}

// The block's width, bias, total, standard count and head size, once its tensors are in.
void finish_named_block(const Model& model, const NamedHeads& heads, AttentionBlock& b) {
  bound_claims(model, b);
  if (!b.width) b.width = b.q.in_width;
  Int total = 0;  // each share within its tensor, and the tensors within the file: it fits, checked all the same
  for (const Projection* p : {&b.q, &b.k, &b.v, &b.o}) {
    total += Int::of_unsigned(p->weight) + Int::of_unsigned(p->bias);
    b.has_bias = b.has_bias || p->bias > 0;
  }
  for (const auto& e : b.extras) total += Int::of_unsigned(e.elements);
  if (!total.count()) throw InputError("an attention block's parameter count overflows 64 bits");
  b.total = *total.count();
  if (b.width > 0) {
    Int std4 = Int(4) * Int(b.width) * Int(b.width) + (b.has_bias ? Int(4) * Int(b.width) : Int(0));
    if (std4.known()) b.standard = static_cast<uint64_t>(*std4);
  }
  if (!b.heads && heads.heads) b.heads = heads.heads;
  if (b.heads && !b.head_dim && b.q.out_width > 0 && b.q.out_width % *b.heads == 0) b.head_dim = b.q.out_width / *b.heads;
}

// Each tensor once, the extras too, as the graph's matcher counts them.
void count_once(const Model& model, const AttentionBlock& b, std::vector<bool>& counted, uint64_t& parameters) {
  auto once = [&](int wi) {
    if (!counted[static_cast<size_t>(wi)]) {
      counted[static_cast<size_t>(wi)] = true;
      parameters += model.weights[static_cast<size_t>(wi)].elements;
    }
  };
  for (const Projection* p : {&b.q, &b.k, &b.v, &b.o}) {
    for (const auto& t : p->tensors) once(t.weight);
  }
  for (const auto& e : b.extras) once(e.weight);
}

}  // namespace

AttentionResult named_attention(const Model& model, const std::vector<NamedTensor>& names, const NamedHeads& heads) {
  AttentionResult r;
  std::vector<bool> counted(model.weights.size(), false);
  for (const auto& [key, tensors] : attention_layers(names)) {
    AttentionBlock b = new_named_block(model, tensors, key.second != 0, static_cast<int>(r.blocks.size()), heads);
    std::map<std::string, int> latent_tensors;  // latent attention's tensors by role
    for (int wi : tensors) add_named_tensor(b, wi, model.weights[static_cast<size_t>(wi)], names[static_cast<size_t>(wi)], heads, latent_tensors);
    if (!latent_tensors.empty()) read_latent(model, latent_tensors, heads, b);
    if (!b.q.found && !b.k.found && !b.v.found && !b.o.found) continue;
    finish_named_block(model, heads, b);
    count_once(model, b, counted, r.parameters);
    r.blocks.push_back(std::move(b));
  }
  return r;
}

ExpertResult named_experts(const Model& model, const std::vector<NamedTensor>& names, const NamedHeads& heads) {
  ExpertResult r;
  std::map<int, std::vector<int>> layers;  // layer -> its expert, router and shared tensors
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& role = names[i].role;
    if (names[i].layer >= 0 && (role == "expert" || role == "router" || role == "shared")) layers[names[i].layer].push_back(static_cast<int>(i));
  }
  bool all_known = true;
  uint64_t idle = 0;
  for (const auto& [layer, tensors] : layers) {
    ExpertLayer l;
    l.index = static_cast<int>(r.layers.size());
    l.form = "by name";
    std::vector<int> routed;
    std::set<int> indices;                   // experts.N.*: the N seen
    std::optional<int64_t> stacked;          // [experts, ...]: the experts of the first stacked tensor
    bool stacked_disagree = false;
    for (int wi : tensors) {
      const Weight& w = model.weights[static_cast<size_t>(wi)];
      const NamedTensor& n = names[static_cast<size_t>(wi)];
      if (n.role == "router") {
        l.router_weights.push_back(wi);
        l.router += w.elements;
      } else if (n.role == "shared") {
        l.shared_weights.push_back(wi);
        l.shared += w.elements;
      } else {
        l.routed_weights.push_back(wi);
        l.routed += w.elements;
        if (n.expert >= 0) {
          indices.insert(n.expert);
        } else if (!w.dims.empty()) {
          if (stacked && *stacked != w.dims[0]) stacked_disagree = true;
          stacked = w.dims[0];
        }
      }
    }
    if (l.routed_weights.empty()) continue;  // a dense layer's router-like tensor alone is not a mixture
    l.name = common_prefix(model, l.routed_weights);
    l.shared_experts = l.shared_weights.empty() ? 0 : 1;
    // The experts: the config's count, else what the names or the stacked shapes show.
    std::optional<int64_t> seen;
    if (!indices.empty() && !stacked) seen = static_cast<int64_t>(indices.size());
    if (stacked && indices.empty() && !stacked_disagree) seen = stacked;
    l.experts = heads.experts ? heads.experts : seen;
    l.found = seen.value_or(0);
    if (heads.experts && seen && *seen != *heads.experts) {
      l.notes.push_back("the names hold " + std::to_string(*seen) + " experts where " + heads.experts_from + " says " +
                        std::to_string(*heads.experts));
    }
    l.top_k = heads.experts_per_token;
    if (l.experts && *l.experts > 0 && l.routed % static_cast<uint64_t>(*l.experts) == 0) {
      l.expert = l.routed / static_cast<uint64_t>(*l.experts);
    }
    if (!l.top_k) l.notes.push_back("the experts a token runs (k) are unknown: " + heads.experts_from);
    check_expert_counts(l);
    if (l.experts && l.top_k && l.expert && *l.top_k >= 0 && *l.top_k <= *l.experts) {
      Int layer_idle = Int(*l.experts - *l.top_k) * Int::of_unsigned(*l.expert);
      if (auto n = layer_idle.count(); n && !add_overflows(idle, *n, &idle)) {
      } else {
        all_known = false;
      }
    } else {
      all_known = false;
    }
    r.layers.push_back(std::move(l));
  }
  if (!r.layers.empty() && all_known) r.idle = idle;
  return r;
}

}  // namespace headcount
