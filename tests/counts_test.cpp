// counts_test.cpp: counts that the file cannot hold (issue 39, items 8, 14 and 15). No block or
// projection holds more parameters than the tensors it claims; a MoE's k outside 1..experts is
// never a count; a tensor given to several fused-MoE inputs is counted once; every "unknown" in
// the cost says its true reason. The numbers are worked by hand in the comments. The same cases
// are regression files written by tests/fuzz/make_cases_counts.py.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <string>

#include "graph_builder.h"
#include "headcount/audit.h"
#include "headcount/findings.h"
#include "test_util.h"

using namespace headcount;
using testutil::GraphBuilder;

using testutil::le64;

namespace {

// A safetensors file of tensors that store nothing (every shape has a 0), plus `data` bytes of
// tensors whose header the caller writes: `header` is the JSON object's inside.
std::string safetensors(const std::string& header, size_t data = 0) {
  std::string text = "{" + header + "}";
  text += std::string((8 - text.size() % 8) % 8, ' ');
  return le64(text.size()) + text + std::string(data, '\0');
}

bool has_note(const std::vector<std::string>& notes, const std::string& text) {
  for (const auto& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

// A fused com.microsoft MoE of 4 experts fed by a router MatMul x [15, 8] · gate [8, 4] (32):
// fc1 [4, 8, 16] and fc2 [4, 16, 8], 512 each, so one expert is 8·16 + 16·8 = 256 and the four
// are 1,024; k as given.
GraphBuilder moe_of_4(int64_t k) {
  GraphBuilder n;
  n.input("x", {15, 8});
  n.op("MatMul", {"x", n.init("gate", {8, 4})}, "logits");
  auto* moe = n.op("MoE", {"x", "logits", n.init("fc1", {4, 8, 16}), "", n.init("fc2", {4, 16, 8})}, "y", "com.microsoft");
  testutil::attr_int(moe, "k", k);
  n.output("y");
  return n;
}

}  // namespace

TEST_CASE("counts: an empty packed qkv_proj [3·2^61, 0] gives a block of 0, as it stores", "[counts]") {
  testutil::TempDir dir;
  // [6917529027641081856, 0] stores 6917529027641081856 · 0 = 0 elements: its thirds are 0 too.
  const std::string path = dir.file("model.safetensors");
  testutil::write_bytes(path, safetensors(R"("model.layers.0.self_attn.qkv_proj.weight":)"
                                          R"({"dtype":"F32","shape":[6917529027641081856,0],"data_offsets":[0,0]})"));
  Audit a = audit_file(path);
  REQUIRE(a.attention.blocks.size() == 1);
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.total == 0u);
  CHECK(b.q.total() + b.k.total() + b.v.total() + b.o.total() == 0u);
  CHECK(a.attention.parameters == 0u);
  testutil::check_block_invariants(a.model, a.attention);
}

TEST_CASE("counts: empty latent-attention tensors give a block of the 4 elements stored", "[counts]") {
  testutil::TempDir dir;
  // q_b [2^62, 0] and kv_b [2^63 − 2, 0] store nothing; kv_a [2, 1] stores 2 and its norm [2]
  // stores 2: 4 in all. With 2 heads and kv_rank 2 (the norm's size), the per-head split of kv_b
  // would be 2 · (2^62 − 1) · 2 = 2^64 − 4: kv_b holds 0, so no split, and the block holds 4.
  const std::string p = "model.layers.0.self_attn.";
  testutil::write_bytes(
      dir.file("model.safetensors"),
      safetensors("\"" + p + "kv_a_layernorm.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}," + "\"" + p +
                      "kv_a_proj_with_mqa.weight\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[8,16]}," + "\"" + p +
                      "kv_b_proj.weight\":{\"dtype\":\"F32\",\"shape\":[9223372036854775806,0],\"data_offsets\":[16,16]}," +
                      "\"" + p + "q_b_proj.weight\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,0],\"data_offsets\":[16,16]}",
                  16));
  testutil::write_bytes(dir.file("config.json"), R"({"model_type": "deepseek_v3", "num_attention_heads": 2, "kv_lora_rank": 2})");
  Audit a = audit_file(dir.file("model.safetensors"));
  REQUIRE(a.attention.blocks.size() == 1);
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.heads == std::optional<int64_t>(2));
  CHECK(b.total == 4u);
  CHECK(a.attention.parameters == 4u);
  CHECK(a.inventory.stored == 4u);
  CHECK_FALSE(b.latent.has_value());  // its sizes are not proven by kv_b's shape
  CHECK(has_note(b.notes, "its shape is not heads × (K + V head sizes) rows"));
  testutil::check_block_invariants(a.model, a.attention);
}

TEST_CASE("counts: bound_claims refuses shares of a tensor that sum to more than it holds", "[counts][findings]") {
  GraphBuilder n;
  n.input("x", {1, 2});
  n.op("MatMul", {"x", n.init("w", {2, 2})}, "y");
  n.output("y");
  auto r = testutil::audited(n.m);
  const Model& m = r->audit.model;
  int w = -1;
  for (size_t i = 0; i < m.weights.size(); ++i) {
    if (m.weights[i].name == "w") w = static_cast<int>(i);
  }
  REQUIRE(w >= 0);
  // w [2, 2] stores 4. A block claiming rows 0:2 of it for Q (4) and rows 2:4 for K (4): 8 > 4.
  AttentionResult attention;
  attention.blocks.emplace_back();
  AttentionBlock& b = attention.blocks[0];
  b.q.found = b.k.found = true;
  b.q.tensors.push_back({w, false, 4, "rows 0:2"});
  b.q.weight = 4;
  b.k.tensors.push_back({w, false, 4, "rows 2:4"});
  b.k.weight = 4;
  b.total = 8;
  bound_claims(m, b);
  // Refused: the whole tensor, 4, once under Q; K keeps nothing of it.
  CHECK(b.q.weight == 4u);
  CHECK(b.k.weight == 0u);
  CHECK(b.k.tensors.empty());
  CHECK(b.total == 4u);
  REQUIRE(b.overclaimed.size() == 1);
  CHECK(b.overclaimed[0] ==
        "tensor 'w' [2, 2] holds 4 elements, but the block's shares of it summed to 8: the split is refused and the tensor "
        "counted whole, once");
  auto findings = run_rules(m, attention, {}, nullptr, nullptr, 0, std::nullopt);
  int said = 0;
  for (const auto& f : findings) {
    if (f.rule != "count-exceeds-tensors") continue;
    ++said;
    CHECK(f.severity == Severity::Warning);
    CHECK(f.block == std::optional<int>(0));
  }
  CHECK(said == 1);
  // Shares within the tensor (2 + 2 of 4) are left as they are.
  AttentionBlock fine;
  fine.q.tensors.push_back({w, false, 2, "rows 0:1"});
  fine.q.weight = 2;
  fine.k.tensors.push_back({w, false, 2, "rows 1:2"});
  fine.k.weight = 2;
  fine.total = 4;
  bound_claims(m, fine);
  CHECK(fine.overclaimed.empty());
  CHECK(fine.q.weight == 2u);
  CHECK(fine.k.weight == 2u);
}

TEST_CASE("counts: a fused MoE's k outside 1..experts is a note, never a count", "[counts][experts]") {
  for (int64_t k : {int64_t{1000}, int64_t{-5}, int64_t{0}, int64_t{5}}) {
    INFO("k = " << k);
    auto r = testutil::audited(moe_of_4(k).m);
    const Audit& a = r->audit;
    REQUIRE(a.experts.layers.size() == 1);
    const ExpertLayer& l = a.experts.layers[0];
    CHECK(l.experts == std::optional<int64_t>(4));
    CHECK_FALSE(l.top_k.has_value());
    CHECK(has_note(l.notes, "k = " + std::to_string(k) + " is outside 1..4"));
    CHECK(l.routed == 1024u);  // 512 + 512
    CHECK(l.expert == std::optional<uint64_t>(256));
    // No active count; the experts' MACs left out (the router's 32 alone), and said to be a lower bound.
    CHECK_FALSE(a.active_parameters.has_value());
    CHECK(a.cost.macs_experts == 0u);
    CHECK(a.cost.macs_per_token == 32u);
    CHECK(a.cost.macs_lower_bound);
    CHECK(has_note(a.cost.notes, "the routed experts of MoE layer 0 are left out of the MACs"));
  }
  // k = 4 of 4 is a count: every expert runs, 4 · 256 = 1,024 MACs; active = stored 1,056.
  auto r = testutil::audited(moe_of_4(4).m);
  CHECK(r->audit.experts.layers[0].top_k == std::optional<int64_t>(4));
  CHECK(r->audit.cost.macs_experts == 1024u);
  CHECK(r->audit.active_parameters == std::optional<uint64_t>(1056));
}

TEST_CASE("counts: one tensor in all six fused-MoE slots is counted once", "[counts][experts]") {
  GraphBuilder n;
  n.input("x", {15, 8});
  n.op("MatMul", {"x", n.init("gate", {8, 4})}, "logits");
  const std::string w = n.init("w", {4, 8, 16});
  auto* moe = n.op("MoE", {"x", "logits", w, w, w, w, w, w}, "y", "com.microsoft");
  testutil::attr_int(moe, "k", 2);
  n.output("y");
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  // w [4, 8, 16] stores 512, once: routed 512, one expert 512 / 4 = 128; stored 512 + gate 32 = 544.
  CHECK(l.routed == 512u);
  CHECK(l.routed_weights.size() == 1);
  CHECK(l.expert == std::optional<uint64_t>(128));
  CHECK(a.inventory.stored == 544u);
  CHECK(a.composition.routed_experts == 512u);
  CHECK(has_note(l.notes, "tensor 'w' fills 6 expert inputs of MoE: counted once"));
  // Active: 544 − (4 − 2) · 128 = 288 <= routed + router; the experts' MACs 2 · 128 = 256.
  CHECK(a.active_parameters == std::optional<uint64_t>(288));
  CHECK(a.cost.macs_experts == 256u);
}

TEST_CASE("counts: experts that share tensors have no size of one expert", "[counts][experts]") {
  // 4 experts of 300 each would be 1,200, more than the 1,024 routed parameters stored.
  ExpertLayer l;
  l.experts = 4;
  l.top_k = 2;
  l.routed = 1024;
  l.expert = 300;
  check_expert_counts(l);
  CHECK_FALSE(l.expert.has_value());
  CHECK(l.top_k == std::optional<int64_t>(2));
  CHECK(has_note(l.notes, "4 experts of 300 parameters each are more than the 1,024 routed parameters stored"));
  // 4 · 256 = 1,024: the size stands.
  ExpertLayer ok;
  ok.experts = 4;
  ok.top_k = 4;
  ok.routed = 1024;
  ok.expert = 256;
  check_expert_counts(ok);
  CHECK(ok.expert == std::optional<uint64_t>(256));
  CHECK(ok.notes.empty());
}

TEST_CASE("counts: a routed layer whose TopK k exceeds its experts says so", "[counts][experts]") {
  Audit a = audit_file(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions/counts-routed-topk-9-of-4.onnx");
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  // The router [8, 4] scores 4 experts; the TopK's k is the constant 9.
  CHECK(l.experts == std::optional<int64_t>(4));
  CHECK_FALSE(l.top_k.has_value());
  CHECK(has_note(l.notes, "k = 9 is outside 1..4"));
  CHECK(a.cost.macs_experts == 0u);
  CHECK(a.cost.macs_lower_bound);
}

TEST_CASE("counts: a checkpoint's experts per token above its experts is no count", "[counts][experts]") {
  testutil::TempDir dir;
  // Two experts' up projections [2, 2] (4 each) in layer 0, and a config of 2 experts, k = 3.
  const std::string p = "model.layers.0.mlp.experts.";
  testutil::write_bytes(dir.file("model.safetensors"),
                        safetensors("\"" + p + "0.up_proj.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}," +
                                        "\"" + p + "1.up_proj.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[16,32]}",
                                    32));
  testutil::write_bytes(dir.file("config.json"), R"({"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3})");
  Audit a = audit_file(dir.file("model.safetensors"));
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  CHECK(l.experts == std::optional<int64_t>(2));
  CHECK(l.routed == 8u);
  CHECK(l.expert == std::optional<uint64_t>(4));
  CHECK_FALSE(l.top_k.has_value());
  CHECK(has_note(l.notes, "k = 3 is outside 1..2"));
  CHECK_FALSE(a.experts.idle.has_value());
}

TEST_CASE("counts: the cost's unknown says a figure does not fit in 64 bits (--context 2^62)", "[counts][cost]") {
  // llama_tiny's blocks have known heads and head sizes; heads · (d_k + d_v) >= 2, so the scores
  // at 2^62 tokens are at least 2^63 MACs: past INT64_MAX. The K/V cache at the context (256
  // bytes per token · 2^62 = 2^70) and the prefill (21,632 · 2^62) do not fit either.
  const std::string model = std::string(HEADCOUNT_SAMPLES_DIR) + "/llama_tiny.onnx";
  auto r = testutil::cli({"audit", model, "--context", "4611686018427387904", "--format", "json"});
  REQUIRE(r.code == 0);
  CHECK(r.out.find("\"unknown\": \"its score MACs (heads × (d_k + d_v) × context) do not fit in 64 bits\"") != std::string::npos);
  CHECK(r.out.find("its heads or head sizes are unknown") == std::string::npos);
  CHECK(r.out.find("the attention scores of blocks 0, 1 at a context of 4,611,686,018,427,387,904 tokens do not fit in 64 "
                   "bits: left out of the MACs, which are a lower bound") != std::string::npos);
  CHECK(r.out.find("the K/V cache at 4,611,686,018,427,387,904 tokens does not fit in 64 bits") != std::string::npos);
  CHECK(r.out.find("the prefill MACs (MACs per token × 4,611,686,018,427,387,904 tokens) do not fit in 64 bits") !=
        std::string::npos);
  // At 4,096 tokens every figure fits: no such note.
  auto fine = testutil::cli({"audit", model, "--format", "json"});
  CHECK(fine.out.find("do not fit in 64 bits") == std::string::npos);
  CHECK(fine.out.find("does not fit in 64 bits") == std::string::npos);
}

TEST_CASE("counts: the same cases in GGUF (head_count and expert_used_count from the metadata)", "[counts][gguf]") {
  const std::string dir = std::string(HEADCOUNT_FUZZ_DIR) + "/regressions-gguf/";
  // attn_q_b [2^62, 0] and attn_kv_b [2^63 − 2, 0] store nothing; attn_kv_a_mqa [2, 1] and its
  // norm [2] store 4; head_count 2.
  Audit latent = audit_file(dir + "counts-empty-latent-tensors.gguf");
  REQUIRE(latent.attention.blocks.size() == 1);
  CHECK(latent.attention.blocks[0].heads == std::optional<int64_t>(2));
  CHECK(latent.attention.blocks[0].total == 4u);
  CHECK(latent.attention.parameters == 4u);
  testutil::check_block_invariants(latent.model, latent.attention);
  // expert_used_count 9 of expert_count 4: up [4, 16, 8] and down [4, 8, 16] are 512 each, one
  // expert 256; k is no count.
  Audit moe = audit_file(dir + "counts-expert-used-count-9-of-4.gguf");
  REQUIRE(moe.experts.layers.size() == 1);
  const ExpertLayer& l = moe.experts.layers[0];
  CHECK(l.experts == std::optional<int64_t>(4));
  CHECK(l.routed == 1024u);
  CHECK(l.expert == std::optional<uint64_t>(256));
  CHECK_FALSE(l.top_k.has_value());
  CHECK(has_note(l.notes, "k = 9 is outside 1..4"));
  CHECK_FALSE(moe.active_parameters.has_value());
}

TEST_CASE("counts: a config's experts per token above its experts gives no active count", "[counts][config]") {
  // Mixtral-8x7B with num_experts_per_tok 9 of 8: (8 − 9) idle experts would make the active count
  // 52.34B, larger than the 46.70B total. The total stands; the active count is not given.
  std::string text = testutil::read_text(std::string(HEADCOUNT_CONFIGS_DIR) + "/mixtral-8x7b.config.json");
  const std::string key = "\"num_experts_per_tok\": 2";
  REQUIRE(text.find(key) != std::string::npos);
  text.replace(text.find(key), key.size(), "\"num_experts_per_tok\": 9");
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("config.json"), text);
  auto r = testutil::cli({"explain", "--config", dir.file("config.json")});
  CHECK(r.out.find("total           46,702,792,704") != std::string::npos);
  CHECK(r.out.find("num_experts_per_tok is 9, outside 1..8 (the experts): no active count") != std::string::npos);
  CHECK(r.out.find("active per token") == std::string::npos);
}
