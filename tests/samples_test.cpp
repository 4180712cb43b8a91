// samples_test.cpp: every torch-exported sample against the counts PyTorch reported at export
// time (samples/NAME.counts.tsv, written by samples/make_samples.py from the module's tensors).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "graph_builder.h"
#include "headcount/explain.h"
#include "headcount/fidelity.h"
#include "headcount/audit.h"

using namespace headcount;

namespace {

struct ExpectedBlock {
  std::map<std::string, std::string> fields;
  int64_t get(const std::string& k) const { return std::stoll(fields.at(k)); }
};

struct Expected {
  uint64_t total = 0;
  std::vector<ExpectedBlock> blocks;
  std::vector<ExpectedBlock> mixers;  // "mixer" lines: kind, parameters, state (elements)
};

Expected read_counts(const std::string& name) {
  Expected e;
  std::ifstream in(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".counts.tsv");
  REQUIRE(in.good());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string kind;
    std::getline(s, kind, '\t');
    if (kind == "total") {
      std::string v;
      std::getline(s, v, '\t');
      e.total = std::stoull(v);
    } else if (kind == "block" || kind == "mixer") {
      ExpectedBlock b;
      std::string field;
      std::getline(s, field, '\t');  // index
      while (std::getline(s, field, '\t')) {
        auto eq = field.find('=');
        b.fields[field.substr(0, eq)] = field.substr(eq + 1);
      }
      (kind == "block" ? e.blocks : e.mixers).push_back(b);
    }
  }
  return e;
}

Audit audit_sample(const std::string& name) { return audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx"); }

// Invariants that hold for any audit: shares add up, totals add up, every Softmax is accounted for.
void check_invariants(const Audit& a) {
  uint64_t tensors = 0;
  for (const auto& w : a.model.weights) tensors += w.parameter ? w.elements : 0;
  CHECK(tensors == a.inventory.stored);
  uint64_t by_dtype = 0;
  for (const auto& r : a.inventory.by_dtype) by_dtype += r.elements;
  CHECK(by_dtype == a.inventory.stored);
  testutil::check_block_invariants(a.model, a.attention);
  CHECK(a.attention.parameters <= a.inventory.stored);
  std::set<int> cores;
  for (const auto& b : a.attention.blocks) {
    cores.insert(b.core_node);
    cores.insert(b.merged_cores.begin(), b.merged_cores.end());
  }
  for (const auto& u : a.attention.unmatched) cores.insert(u.node);
  const Composition& c = a.composition;
  // Every parameter tensor is in one part, so the parts add up to what is stored.
  CHECK(c.attention + c.embeddings + c.feed_forward + c.routed_experts + c.routers + c.norms + c.buffers + c.constants +
            c.lm_head + c.mixers + c.other ==
        a.inventory.stored);
  uint64_t unclaimed = 0;
  for (int wi : c.unclaimed) unclaimed += a.model.weights[static_cast<size_t>(wi)].elements;
  CHECK(unclaimed == c.other);
  size_t softmaxes = 0;
  for (const auto& n : a.model.nodes) softmaxes += n.rec->op_type() == "Softmax";
  size_t fused = 0;
  for (const auto& b : a.attention.blocks) fused += b.form != "unfused";
  CHECK(cores.size() == softmaxes + fused);
}

void check_blocks(const std::string& name) {
  INFO("sample " << name);
  Expected e = read_counts(name);
  Audit a = audit_sample(name);
  check_invariants(a);
  REQUIRE(a.attention.blocks.size() == e.blocks.size());
  for (size_t i = 0; i < e.blocks.size(); ++i) {
    INFO("block " << i);
    const AttentionBlock& b = a.attention.blocks[i];
    const ExpectedBlock& x = e.blocks[i];
    CHECK(b.kind == x.fields.at("kind"));
    REQUIRE(b.heads.has_value());
    CHECK(*b.heads == x.get("heads"));
    REQUIRE(b.kv_heads.has_value());
    CHECK(*b.kv_heads == x.get("kv_heads"));
    CHECK(b.width == x.get("width"));
    REQUIRE(b.head_dim.has_value());
    CHECK(*b.head_dim == x.get("head_dim"));
    REQUIRE(b.v_head_dim.has_value());
    CHECK(*b.v_head_dim == x.get("v_head_dim"));
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      std::string role = role_name(r);
      INFO("projection " << role);
      CHECK(b.projection(r).found);
      CHECK(static_cast<int64_t>(b.projection(r).weight) == x.get(role + "_weight"));
      CHECK(static_cast<int64_t>(b.projection(r).bias) == x.get(role + "_bias"));
    }
    // The module's learned attention tensors beside Q/K/V/O (add_bias_kv tokens, sinks, relative
    // bias tables, temperatures), as torch counted them.
    int64_t extras = 0;
    for (const auto& ex : b.extras) extras += static_cast<int64_t>(ex.elements);
    CHECK(extras == x.get("extras"));
  }
}

}  // namespace

TEST_CASE("nn.MultiheadAttention samples match PyTorch's per-projection counts", "[samples]") {
  for (const char* name : {"mha_self_bias", "mha_self_nobias", "mha_cross", "mha_kdim_vdim", "mha_bias_kv"}) {
    check_blocks(name);
  }
}

TEST_CASE("Transformer layer samples match PyTorch's per-projection counts", "[samples]") {
  for (const char* name : {"encoder", "encoder_untrained", "decoder_layer", "transformer"}) check_blocks(name);
}

TEST_CASE("BERT, GPT-2, per-head, GQA and QDQ samples match PyTorch's counts", "[samples]") {
  for (const char* name : {"bert_tiny", "gpt2_tiny", "per_head", "per_head_loop", "gqa", "qdq_int8", "bert_base_external"}) {
    check_blocks(name);
  }
}

TEST_CASE("findings samples match PyTorch's per-projection counts", "[samples]") {
  for (const char* name : {"width_mismatch_matlab", "width_mismatch_keras", "whisper_kbias", "mqa"}) check_blocks(name);
}

TEST_CASE("decoder, T5 and ViT samples match PyTorch's per-projection counts", "[samples]") {
  for (const char* name : {"kv_cache_decoder", "t5_relative", "vit_batch_first"}) check_blocks(name);
}

TEST_CASE("stored parameters equal PyTorch's total where the file stores exactly the module's tensors", "[samples]") {
  for (const char* name : {"mha_self_bias", "mha_self_nobias", "mha_cross", "mha_kdim_vdim", "mha_bias_kv", "encoder",
                           "bert_tiny", "per_head", "classifier_softmax", "bert_base_external"}) {
    INFO(name);
    CHECK(audit_sample(name).inventory.stored == read_counts(name).total);
  }
}

TEST_CASE("stored parameters exceed PyTorch's total by the tensors the exporter added", "[samples]") {
  // decoder_layer/transformer: the causal tgt_mask buffer folds into a float [1, 5, 5] constant = 25.
  CHECK(audit_sample("decoder_layer").inventory.stored == read_counts("decoder_layer").total + 25);
  CHECK(audit_sample("transformer").inventory.stored == read_counts("transformer").total + 25);
  // gpt2_tiny: the LM head tied to wte [100, 32] is stored again transposed: 32 x 100 = 3,200.
  CHECK(audit_sample("gpt2_tiny").inventory.stored == read_counts("gpt2_tiny").total + 3200);
  // gqa: cos/sin caches [16, 8] twice = 256 and the float causal mask [16, 16] = 256.
  CHECK(audit_sample("gqa").inventory.stored == read_counts("gqa").total + 512);
}

TEST_CASE("BERT-base with its external data file left out is counted from dims alone", "[samples]") {
  Audit a = audit_sample("bert_base_external");
  // 12 layers x (4 x 768^2 + 4 x 768) = 12 x 2,362,368 = 28,348,416 attention parameters.
  CHECK(a.attention.parameters == 28348416u);
  CHECK(a.attention.blocks.size() == 12);
  size_t missing = 0;
  for (const auto& w : a.model.weights) missing += w.external_status() == ExternalStatus::Missing;
  CHECK(missing > 0);
  // The file on disk is small: the weights are not in it.
  CHECK(a.model.file_size < 1000000u);
}

TEST_CASE("a classifier Softmax is listed as not attention, with the reason", "[samples]") {
  Audit a = audit_sample("classifier_softmax");
  check_invariants(a);
  CHECK(a.attention.blocks.empty());
  REQUIRE(a.attention.unmatched.size() == 1);
  CHECK(a.attention.unmatched[0].reason == "no MatMul(Q, Kᵀ) of two activations before it: Gemm '/fc2/Gemm' multiplies "
                                            "by a constant: a projection or a classifier, not Q·Kᵀ");
}

TEST_CASE("packed projections report each role's slice of the shared tensor", "[samples]") {
  Audit a = audit_sample("gpt2_tiny");
  const AttentionBlock& b = a.attention.blocks[0];
  // c_attn.weight [32, 96] split [32, 32, 32] on its columns: q is the first third.
  REQUIRE(b.q.tensors.size() == 2);
  CHECK(b.q.tensors[0].slice == "columns 0:32 of 96");
  CHECK(b.k.tensors[0].slice == "columns 32:64 of 96");
  CHECK(b.v.tensors[0].slice == "columns 64:96 of 96");
  CHECK(b.q.tensors[1].slice == "elements 0:32 of 96");
  Audit m = audit_sample("mha_self_bias");
  // in_proj weight folded to [32, 96] (MatMul layout), sliced at run time into thirds.
  CHECK(m.attention.blocks[0].k.tensors[0].slice == "columns 32:64 of 96");
}

TEST_CASE("BERT-base composition adds up by hand", "[samples]") {
  Audit a = audit_sample("bert_base_external");
  // attention: 12 x (4 x 768^2 + 4 x 768) = 28,348,416
  CHECK(a.composition.attention == 28348416u);
  // embeddings: (30,522 words + 512 positions + 2 token types) x 768 = 23,835,648
  CHECK(a.composition.embeddings == 23835648u);
  // feed-forward: 12 x (768 x 3072 + 3072 + 3072 x 768 + 768) = 12 x 4,722,432 = 56,669,184
  CHECK(a.composition.feed_forward == 56669184u);
  // norms: 25 LayerNorms (embeddings + 2 per layer) x (768 + 768) = 38,400
  CHECK(a.composition.norms == 38400u);
  // everything else: the pooler Linear(768, 768) = 590,592
  CHECK(a.composition.other == 590592u);
  CHECK(a.composition.buffers == 0u);  // no value can be read: the data file is not there
  CHECK(a.composition.attention + a.composition.embeddings + a.composition.feed_forward + a.composition.norms +
            a.composition.other == a.inventory.stored);
}

TEST_CASE("a tied LM head stored twice is found by content and removed from unique", "[samples]") {
  Audit a = audit_sample("gpt2_tiny");
  REQUIRE(a.duplicates.size() == 1);
  CHECK(a.model.weights[a.duplicates[0].original].name == "wte.weight");
  CHECK(a.duplicates[0].transposed);
  // torch counts the tied weight once: unique equals PyTorch's sum(p.numel()).
  CHECK(a.unique == read_counts("gpt2_tiny").total);
  // untied samples: no duplicates, unique == stored
  for (const char* name : {"bert_tiny", "encoder", "mha_self_bias"}) {
    Audit b = audit_sample(name);
    CHECK(b.duplicates.empty());
    CHECK(b.unique == b.inventory.stored);
  }
}

namespace {

// The findings of one rule in an audit.
std::vector<Finding> findings_of(const Audit& a, const std::string& rule) {
  std::vector<Finding> out;
  for (const auto& f : a.findings) {
    if (f.rule == rule) out.push_back(f);
  }
  return out;
}

// Exactly one finding of `rule`, on block 0, with the rule's own severity.
Finding only_on_block0(const Audit& a, const std::string& rule) {
  auto fs = findings_of(a, rule);
  INFO("findings of " << rule);
  REQUIRE(fs.size() == 1);
  REQUIRE(fs[0].block.has_value());
  CHECK(*fs[0].block == 0);
  REQUIRE(find_rule(rule) != nullptr);
  CHECK(fs[0].severity == find_rule(rule)->severity);
  return fs[0];
}

}  // namespace

TEST_CASE("the findings samples fire their findings on the real torch exports", "[samples]") {
  SECTION("MATLAB-like: 4 heads x 8 = 32 key channels on a width of 64") {
    Audit a = audit_sample("width_mismatch_matlab");
    only_on_block0(a, "width-mismatch");
  }
  SECTION("Keras-like: key_dim 32 per head, 4 x 32 = 128 on a width of 32") {
    Audit a = audit_sample("width_mismatch_keras");
    only_on_block0(a, "width-mismatch");
  }
  SECTION("Whisper: K has no bias, Q/V/O have") {
    Audit a = audit_sample("whisper_kbias");
    only_on_block0(a, "bias-inconsistent");
    CHECK(findings_of(a, "width-mismatch").empty());
  }
  SECTION("MQA: 4 query heads share 1 K/V head") {
    Audit a = audit_sample("mqa");
    REQUIRE(a.attention.blocks.size() == 1);
    REQUIRE(a.attention.blocks[0].kv_heads.has_value());
    CHECK(*a.attention.blocks[0].kv_heads == 1);
    Finding f = only_on_block0(a, "grouped-kv");
    CHECK(f.message.find("multi-query attention (MQA)") != std::string::npos);
    CHECK(findings_of(a, "width-mismatch").empty());
  }
  SECTION("standard blocks (KV cache, T5, batch-first ViT) raise none of these") {
    for (const char* name : {"kv_cache_decoder", "t5_relative", "vit_batch_first"}) {
      INFO(name);
      Audit a = audit_sample(name);
      for (const char* rule : {"width-mismatch", "bias-inconsistent", "grouped-kv"}) {
        INFO(rule);
        CHECK(findings_of(a, rule).empty());
      }
    }
  }
}

TEST_CASE("the seven findings/decoder/T5/ViT samples store exactly PyTorch's total", "[samples]") {
  // No buffers: kv_cache_decoder's causal mask and t5_relative's buckets are computed from Range at
  // run time, so the file holds the module's parameters and nothing else (t5_relative's
  // relative_attention_bias [8, 4] is one of them; vit_batch_first's LayerNorms and FFN too).
  for (const char* name : {"width_mismatch_matlab", "width_mismatch_keras", "whisper_kbias", "mqa", "kv_cache_decoder",
                           "t5_relative", "vit_batch_first"}) {
    INFO(name);
    Audit a = audit_sample(name);
    CHECK(a.inventory.stored == read_counts(name).total);
    CHECK(a.unique == a.inventory.stored);
  }
}

TEST_CASE("attention computed head by head is one block of h heads", "[samples]") {
  Audit a = audit_sample("per_head_loop");
  check_invariants(a);
  REQUIRE(a.attention.blocks.size() == 1);
  const AttentionBlock& b = a.attention.blocks[0];
  // 4 Softmax cores, one per head: the block keeps the first and lists the other 3.
  CHECK(b.merged_cores.size() == 3);
  CHECK(a.attention.unmatched.empty());
  // Q: 4 heads x (32 x 8 + 8) = 1,056, like one packed nn.Linear(32, 32); O: 32 x 32 + 32 = 1,056.
  CHECK(b.q.total() == 1056);
  CHECK(b.o.total() == 1056);
  CHECK(b.q.tensors.size() == 8);  // 4 weights and 4 biases
  CHECK(b.heads_from.find("4 attention cores, one per head") == 0);
  CHECK(audit_sample("per_head_loop").inventory.stored == read_counts("per_head_loop").total);
}

TEST_CASE("score-path samples: soft-capping, sinks, ALiBi and a per-head temperature each give their block", "[samples]") {
  for (const char* name : {"softcap", "sinks", "alibi", "temperature"}) check_blocks(name);
  auto path = [](const std::string& name) {
    Audit a = audit_sample(name);
    REQUIRE(a.attention.blocks.size() == 1);
    std::string p;
    for (const auto& step : a.attention.blocks[0].score_path) p += (p.empty() ? "" : " → ") + step;
    return p;
  };
  // The exports, read op by op (torch 1.13, opset 14): / √8, then tanh(s / 50) · 50.
  CHECK(path("softcap") == "MatMul → Div → Div → Tanh → Mul → Add(constant) → Softmax");
  CHECK(path("sinks") == "MatMul → Div → Concat(sink) → Softmax");
  CHECK(path("alibi") == "MatMul → Div → Add(constant) → Softmax");
  CHECK(path("temperature") == "MatMul → Div → Mul(head scale) → Softmax");
}

TEST_CASE("the framework-comparable count equals PyTorch's sum(p.numel()) on every sample", "[samples]") {
  // qdq_int8 is the one exception: its file holds int8 weights plus their scales and zero points,
  // which the float model torch counted does not have (see the quantized-weights finding).
  for (const auto& e : std::filesystem::directory_iterator(HEADCOUNT_SAMPLES_DIR)) {
    if (e.path().extension() != ".onnx" || e.path().stem() == "qdq_int8") continue;
    std::string name = e.path().stem().string();
    INFO(name);
    CHECK(audit_sample(name).framework.parameters == read_counts(name).total);
  }
}

TEST_CASE("buffers are listed with the evidence that makes them buffers", "[samples]") {
  auto reasons = [](const std::string& name, bool content = true) {
    AuditOptions o;
    o.compare_content = content;
    Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx", o);
    std::map<std::string, std::string> out;
    for (const auto& b : a.framework.buffers) out[std::string(a.model.weights[static_cast<size_t>(b.weight)].name)] = b.reason;
    return out;
  };
  // gqa: the rotary tables and the causal mask torch registered as buffers (sidecar: 128, 128, 256).
  CHECK(reasons("gqa") == std::map<std::string, std::string>{
                              {"causal_mask", "an additive mask: 0 and -3.40282e+38"},
                              {"cos_cached", "a rotary cos table: values in [-1, 1], cos(0) = 1 in the first row"},
                              {"sin_cached", "a rotary sin table: values in [-1, 1], sin(0) = 0 in the first row"}});
  CHECK(reasons("softcap") == std::map<std::string, std::string>{{"causal_mask", "an additive mask: 0 and -inf"}});
  // alibi: torch's 4 slopes are folded with the distances into one [1, 4, 5, 5] constant.
  auto alibi = reasons("alibi");
  REQUIRE(alibi.size() == 1);
  CHECK(alibi.begin()->second == "ALiBi position bias: for each of 4 heads, a slope times the same integer distances");
  // Without content no value is read: only buffers proven by the operator they feed remain.
  CHECK(reasons("gqa", false).empty());
  Audit gqa = audit_sample("gqa");
  CHECK(gqa.composition.buffers == 512);  // 128 + 128 + 256
  CHECK(gqa.framework.parameters == 3072);
}

TEST_CASE("latent attention: the DeepSeek-V2-style sample counts every factor, as PyTorch does", "[samples][latent]") {
  // mla.counts.tsv holds torch's own shares: Q = q_a_proj + q_b_proj = 32·16 + 16·48 = 1,280;
  // K = kv_a_proj_with_mqa + kv_b_proj's K rows = 32·12 + 8·(4·8) = 640; V = kv_b_proj's V rows
  // = 8·(4·8) = 256; O = 32·32 = 1,024; extras = the two latent RMSNorms, 16 + 8.
  check_blocks("mla");
  Audit a = audit_sample("mla");
  REQUIRE(a.attention.blocks.size() == 2);
  for (const auto& b : a.attention.blocks) {
    INFO("block " << b.index);
    REQUIRE(b.latent.has_value());
    CHECK(b.latent->q_rank == 16);
    CHECK(b.latent->kv_rank == 8);
    CHECK(b.latent->rope_dim == 4);
    CHECK(b.latent->qk_nope_dim == 8);
    CHECK(b.latent->v_head_dim == 8);
    CHECK(b.total == 3224);  // sum(p.numel() for p in attn.parameters()) at export
    CHECK(b.k_head_dim == 12);
    for (const auto& e : b.extras) CHECK(e.role == ExtraRole::LatentNorm);
  }
  // Both blocks' tensors are distinct: 2 · 3,224 in the attention total.
  CHECK(a.attention.parameters == 6448);
  // No finding above info: the width rules do not apply to a latent block.
  std::set<std::string> rules;
  for (const auto& f : a.findings) {
    CHECK(f.severity == Severity::Info);
    rules.insert(f.rule);
  }
  CHECK(rules.count("latent-attention") == 1);
  CHECK(rules.count("width-mismatch") == 0);
  CHECK(rules.count("per-head-projections") == 0);
  // The cache: (8 latent + 4 RoPE) float32 values = 48 bytes per token and layer, 96 for both.
  // The graph's full K and V: 4·12 + 4·8 = 80 values, 320 bytes per layer.
  CHECK(a.cost.kv_bytes_per_token == 96);
  REQUIRE(a.cost.blocks.size() == 2);
  CHECK(a.cost.blocks[0].expanded_kv_bytes_per_token == std::optional<uint64_t>(320));
  CHECK(a.cost.blocks[0].k_width == std::optional<int64_t>(12));
  CHECK(a.cost.blocks[0].v_width == std::optional<int64_t>(0));
  // The derivation in explain adds up to torch's figure.
  std::string text = explain_block(a, 0);
  CHECK(text.find("+ 24 in the latent norms = 3,224, the block's total") != std::string::npos);
}

TEST_CASE("latent attention is not claimed for ordinary blocks whose inputs pass a norm", "[samples][latent]") {
  // LLaMA's V reads the RMSNorm of the residual stream: a norm before V is not a latent.
  for (const char* name : {"llama_tiny", "gqa", "bert_tiny", "gpt2_tiny", "transformer"}) {
    INFO(name);
    Audit a = audit_sample(name);
    for (const auto& b : a.attention.blocks) CHECK_FALSE(b.latent.has_value());
  }
}

TEST_CASE("latent attention in the absorbed form is reported as unmatched, with the reason", "[samples][latent]") {
  // The same weights as one mla.onnx block (torch counts 3,224), with kv_b_proj absorbed: the
  // scores and the weighted sum read the normed latent itself, so K and V are one tensor.
  Audit a = audit_sample("mla_absorbed");
  CHECK(a.inventory.stored == read_counts("mla_absorbed").total);
  CHECK(a.attention.blocks.empty());
  REQUIRE(a.attention.unmatched.size() == 1);
  CHECK(a.attention.unmatched[0].reason.find("absorbed into Q and O") != std::string::npos);
  CHECK(a.attention.unmatched[0].reason.find("kv_a_proj_with_mqa") != std::string::npos);
  size_t warnings = 0;
  for (const auto& f : a.findings) warnings += f.rule == "unmatched-softmax" ? 1 : 0;
  CHECK(warnings == 1);
}

TEST_CASE("hybrid samples: each token mixer's kind, parameters and recurrent state as PyTorch's module has them", "[samples][mixers]") {
  // hybrid_linear: three linear-attention mixers of q/k/v/o Linear(32, 32), 4 x 1,024 = 4,096
  // each, state 4 heads x 8 x 8 (k·vᵀ) + 4 x 8 (the normaliser) = 288 elements; hybrid_mamba: two
  // Mamba mixers of 10,176 (in_proj 32·128, conv1d 64·4 + 64, x_proj 64·36, dt_proj 4·64 + 64,
  // A_log 64·16, D 64, out_proj 64·32), state (4 − 1)·64 + 64·16 = 1,216. The counts files hold
  // what the modules report (MambaMixer.state(), LinearAttentionMixer.state()).
  for (const char* name : {"hybrid_linear", "hybrid_mamba"}) {
    INFO(name);
    Audit a = audit_sample(name);
    check_invariants(a);
    Expected e = read_counts(name);
    REQUIRE(a.mixers.mixers.size() == e.mixers.size());
    uint64_t state = 0;
    for (size_t i = 0; i < e.mixers.size(); ++i) {
      const Mixer& mx = a.mixers.mixers[i];
      INFO("mixer " << i);
      CHECK(mixer_kind_name(mx.kind) == e.mixers[i].fields.at("kind"));
      CHECK(static_cast<int64_t>(mx.total) == e.mixers[i].get("parameters"));
      REQUIRE(mx.state_elements);
      CHECK(static_cast<int64_t>(*mx.state_elements) == e.mixers[i].get("state"));
      state += *mx.state_elements * 4;  // float32
    }
    // Nothing of a mixer is feed-forward or left over, and the framework count is torch's.
    CHECK(a.composition.feed_forward == 0);
    CHECK(a.composition.other == 0);
    CHECK(a.framework.parameters == e.total);
    CHECK(a.cost.state_bytes == state);  // --batch 1
    CHECK(a.attention.blocks.size() == e.blocks.size());
  }
}

TEST_CASE("sliding_qknorm: windows from the mask buffers, QK-norm in the block, the config's head_dim", "[samples]") {
  // Three Qwen3-style layers of GQA 4/2 heads of 16 over a width of 32, two sliding over 4 tokens
  // and one full. Per block (torch's own shares, sliding_qknorm.counts.tsv): q 32·64 = 2,048, k and
  // v 32·32 = 1,024, o 64·32 = 2,048, q_norm and k_norm 16 each: 6,176.
  check_blocks("sliding_qknorm");
  AuditOptions o;
  o.model_config = std::string(HEADCOUNT_SAMPLES_DIR) + "/sliding_qknorm.config.json";
  Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/sliding_qknorm.onnx", o);
  REQUIRE(a.attention.blocks.size() == 3);
  CHECK(a.attention.blocks[0].window == 4);
  CHECK(a.attention.blocks[1].window == 4);
  CHECK_FALSE(a.attention.blocks[2].window);
  for (const auto& b : a.attention.blocks) CHECK(b.total == 6176);
  // K/V per token and block: 2 K/V heads x (16 + 16) x 4 bytes = 256. At 4,096 tokens the two
  // sliding blocks keep 4 tokens: 2 x 256 x 4 + 256 x 4,096 = 1,050,624 (3 x 256 x 4,096 =
  // 3,145,728 without the windows: 2,095,104 saved).
  CHECK(a.cost.kv_bytes_per_token == 768);
  CHECK(a.cost.kv_bytes_at_context == 1050624);
  CHECK(a.cost.kv_window_saved_bytes == 2095104);
  // The config states head_dim 16: 4 x 16 != 32 is its design.
  size_t decoupled = 0;
  for (const auto& f : a.findings) {
    CHECK(f.rule != "width-mismatch");
    decoupled += f.rule == "decoupled-head-size";
  }
  CHECK(decoupled == 3);
  CHECK(a.framework.parameters == read_counts("sliding_qknorm").total);
}

namespace {

// A checkpoint of llama_tiny read by its names has the export's blocks: each projection's count,
// and llama_tiny's 4 query heads over 2 K/V heads.
void check_llama_tiny_blocks(const Audit& checkpoint, const Audit& exported) {
  REQUIRE(checkpoint.attention.blocks.size() == exported.attention.blocks.size());
  for (size_t i = 0; i < checkpoint.attention.blocks.size(); ++i) {
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      CHECK(checkpoint.attention.blocks[i].projection(r).total() == exported.attention.blocks[i].projection(r).total());
    }
    CHECK(checkpoint.attention.blocks[i].heads == 4);
    CHECK(checkpoint.attention.blocks[i].kv_heads == 2);
  }
}

}  // namespace

TEST_CASE("llama_tiny.safetensors: the checkpoint of llama_tiny.onnx, read by its names", "[samples][checkpoint]") {
  // The module's parameters, each once: torch's sum(p.numel()) is llama_tiny.counts.tsv's total.
  const std::string dir = HEADCOUNT_SAMPLES_DIR;
  AuditOptions o;
  o.model_config = dir + "/llama_tiny.config.json";
  Audit c = audit_file(dir + "/llama_tiny.safetensors", o);
  Audit e = audit_file(dir + "/llama_tiny.onnx", o);
  CHECK(c.framework.parameters == read_counts("llama_tiny").total);
  CHECK(c.framework.parameters == e.framework.parameters);
  check_llama_tiny_blocks(c, e);
  // Every tensor has a part by its name: embeddings 100·32, LM head 32·100, feed-forward
  // 2 · 3·32·64 = 12,288, norms 2 · 2·32 + 32 = 160.
  CHECK(c.composition.other == 0);
  CHECK(c.composition.feed_forward == 12288);
  CHECK(c.composition.norms == 160);
  CHECK(c.composition.embeddings == 3200);
  CHECK(c.composition.lm_head == 3200);
  CHECK(c.cost.kv_bytes_per_token == e.cost.kv_bytes_per_token);
  // explain --block names the tensors by their checkpoint names, the heads by the config's key.
  std::string x = explain_block(c, 0);
  CHECK(x.find("heads      4 query, 2 key/value: the config's num_attention_heads\n") != std::string::npos);
  CHECK(x.find("weight layers.0.self_attn.k_proj.weight [16, 32]: 512") != std::string::npos);
  // The same from the command line: the config is not beside the checkpoint, --model-config names it.
  auto without = testutil::cli({"explain", dir + "/llama_tiny.safetensors", "--block", "0"});
  CHECK(without.code == 0);
  CHECK(without.out.find("heads      unknown: no config.json beside the checkpoint") != std::string::npos);
  auto with = testutil::cli({"explain", dir + "/llama_tiny.safetensors", "--block", "0", "--model-config",
                             dir + "/llama_tiny.config.json"});
  CHECK(with.code == 0);
  CHECK(with.out.find("heads      4 query, 2 key/value: the config's num_attention_heads\n") != std::string::npos);
  auto alone = testutil::cli({"explain", "--width", "32", "--heads", "4", "--model-config", "c.json"});
  CHECK(alone.code == 2);
  CHECK(alone.err == "headcount: error: --model-config goes with MODEL --block N\n");
}

TEST_CASE("llama_tiny.gguf: the same checkpoint as llama.cpp writes it in Q8_0", "[samples][checkpoint]") {
  const std::string dir = HEADCOUNT_SAMPLES_DIR;
  Audit g = audit_file(dir + "/llama_tiny.gguf");
  Audit e = audit_file(dir + "/llama_tiny.onnx");
  // torch's sum(p.numel()) (llama_tiny.counts.tsv); heads from llama.attention.head_count 4 and
  // head_count_kv 2.
  CHECK(g.framework.parameters == read_counts("llama_tiny").total);
  check_llama_tiny_blocks(g, e);
  // Bytes by the block sizes: the embedding 3,200 x 2 (float16), 5 norms of 32 x 4 (float32) and
  // 21,632 matrix weights in Q8_0 blocks of 32 weights in 34 bytes: 676 x 34 = 22,984; 30,024 in all.
  CHECK(g.inventory.bytes == 6400 + 640 + 22984);
  // Against the export: the float16 embedding holds the export's float32 table at float16, the
  // five float32 norms are the export's, as stored; the 15 Q8_0 matrices are not read: Q/K/V/O pair by their role in the layer's
  // block (8), the feed-forward ones pair with nothing and the export's 6 of their sizes are
  // unpaired, not added. Nothing is lost or changed.
  Fidelity f = check_fidelity(e, "llama_tiny.onnx", g, "llama_tiny.gguf");
  CHECK(f.kept == 6);
  CHECK(f.unknown == 15);
  CHECK((f.lost == 0 && f.changed == 0 && !f.failed()));
  CHECK(f.added.empty());
  CHECK(f.unpaired.size() == 6);
  size_t by_role = 0;
  for (const auto& t : f.tensors) {
    by_role += t.paired_by == "role";
    if (t.what.name == "token_embd.weight") {
      CHECK(t.verdict == Verdict::Kept);
      CHECK(t.what.dtype == "float16");
    }
  }
  CHECK(by_role == 8);
}
