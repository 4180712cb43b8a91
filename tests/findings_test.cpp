// findings_test.cpp: every rule of headcount::rules() on a hand-built model that triggers it and on
// one that must not, through the whole audit (load -> match -> duplicates -> rules): in memory
// (testutil::audited), or from a file where a data file beside the model is what is tested.
//
// Every expected number is worked out by hand in the comment next to its assertion, from DOMAIN.md
// section 1 (Q: w x (h*d_k) + h*d_k, K: w x (h_kv*d_k) + h_kv*d_k, V: w x (h_kv*d_v) + h_kv*d_v,
// O: (h*d_v) x d_out + d_out; standard 4d^2 + 4d) or from the operator spec it cites.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "headcount/error.h"
#include "headcount/findings.h"
#include "headcount/audit.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;
using testutil::GraphBuilder;
using testutil::kFloat;
using testutil::LayerSpec;
using testutil::layers_model;
using Catch::Contains;

namespace {

using testutil::audited;
using testutil::set_external;

std::vector<Finding> with_rule(const Audit& a, const std::string& rule) {
  std::vector<Finding> out;
  for (const auto& f : a.findings) {
    if (f.rule == rule) out.push_back(f);
  }
  return out;
}

// The one finding of `rule`, with the rule's own severity.
Finding only(const Audit& a, const std::string& rule) {
  auto fs = with_rule(a, rule);
  INFO("findings of " << rule);
  REQUIRE(fs.size() == 1);
  REQUIRE(find_rule(rule) != nullptr);
  CHECK(fs[0].severity == find_rule(rule)->severity);
  return fs[0];
}

// Random float content (deterministic), and tensors that hold it.
std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

onnx::TensorProto float_tensor(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  onnx::TensorProto t = testutil::tensor(name, std::move(dims), kFloat, true);
  t.set_raw_data(bytes_of(v));
  return t;
}

// [rows, cols] -> [cols, rows]
std::vector<float> transposed(const std::vector<float>& a, size_t rows, size_t cols) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < cols; ++j) out[j * rows + i] = a[i * cols + j];
  }
  return out;
}

// A tied LM head: ids -> Gather(embed [256, 64]) -> MatMul(., head) -> logits [1, 5, 256].
// `head` is [64, 256] (used directly) or [256, 64] (used through a Transpose).
onnx::ModelProto tied_model(onnx::TensorProto embed, onnx::TensorProto head) {
  GraphBuilder n;
  n.input("ids", {1, 5}, onnx::TensorProto::INT64);
  std::string head_name = head.name();
  bool stored_vd = head.dims(0) == 256;
  *n.g->add_initializer() = std::move(embed);
  *n.g->add_initializer() = std::move(head);
  n.op("Gather", {"embed.weight", "ids"}, "hidden");
  std::string w = stored_vd ? n.transpose(head_name, {1, 0}, "head_t") : head_name;
  n.op("MatMul", {"hidden", w}, "logits");
  n.output("logits");
  return n.m;
}

// x [1, 5, 64] -> MatMul(w [64, 64]) -> y, with w an external tensor named "w".
onnx::ModelProto external_model(const std::vector<onnx::TensorProto>& weights) {
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  std::string y = "x";
  for (const auto& t : weights) {
    *n.g->add_initializer() = t;
    n.op("MatMul", {y, t.name()}, t.name() + "/MatMul");
    y = t.name() + "/MatMul";
  }
  n.output(y);
  return n.m;
}

onnx::TensorProto external_tensor(const std::string& name, std::vector<int64_t> dims, const std::string& location,
                                  int64_t offset = -1, int64_t length = -1) {
  onnx::TensorProto t = testutil::tensor(name, std::move(dims), kFloat, true);
  set_external(t, location, offset, length);
  return t;
}

const Weight& weight_named(const Audit& a, const std::string& name) {
  for (const auto& w : a.model.weights) {
    if (w.name == name) return w;
  }
  FAIL("no weight " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// width-mismatch

TEST_CASE("width-mismatch: Q/K/V project a width of 64 to 4 heads x 8 = 32", "[findings]") {
  LayerSpec s;
  s.head_dim = 8;
  auto r = audited(layers_model({s}));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  Finding f = only(a, "width-mismatch");
  CHECK(f.severity == Severity::Warning);
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // Q = K = V: 64 x (4 x 8) + 32 = 2,048 + 32 = 2,080; O: (4 x 8) x 64 + 64 = 2,048 + 64 = 2,112.
  // Total 3 x 2,080 + 2,112 = 8,352; standard 4 x 64^2 + 4 x 64 = 16,384 + 256 = 16,640;
  // 8,352 / 16,640 = 0.50192 -> 50.2%. 32 < 64, so the MATLAB reading: 32 per head would be
  // 4 x 32 = 128 channels; the same block in Keras is key_dim = 8.
  CHECK(a.attention.blocks[0].total == 8352u);
  CHECK(f.message ==
        "Q/K project 64 → 32 (4 heads × 8) instead of 64: this block has 8,352 parameters, 50.2% of the standard "
        "16,640 (4·64² + 4·64). This is what MATLAB's selfAttentionLayer builds when a per-head size is typed as "
        "NumKeyChannels, which is the total over heads: the count then falls as heads grow. If 32 was meant per "
        "head, use 4 × 32 = 128 channels. (Keras' key_dim is per head: key_dim = 8 gives this same block, and its "
        "count grows with heads.) Or it is a head size chosen on purpose, as Gemma (256) and Qwen3 (128) do: with the "
        "model's config.json beside it (or --model-config) stating head_dim = 8, headcount reports it as that design "
        "instead.");
}

TEST_CASE("decoupled-head-size: a config that states head_dim turns the width rule into the design", "[findings]") {
  // The same block as above (4 heads x 8 on a width of 64, 8,352 parameters) with a config.json
  // that states head_dim 8, as Gemma and Qwen3 configs state theirs: an info finding in place of
  // the warning. A config whose head_dim is derived (64 / 4 = 16) does not state one.
  LayerSpec s;
  s.head_dim = 8;
  testutil::TempDir dir;
  std::string config = dir.file("config.json");
  for (bool states : {true, false}) {
    INFO((states ? "head_dim 8 stated" : "no head_dim"));
    testutil::write_bytes(config, std::string("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, ") +
                                      (states ? "\"head_dim\": 8, " : "") + "\"num_hidden_layers\": 1}");
    AuditOptions o;
    o.model_config = config;
    auto r = audited(layers_model({s}), o);
    const Audit& a = r->audit;
    if (!states) {
      CHECK(with_rule(a, "width-mismatch").size() == 1);
      CHECK(with_rule(a, "decoupled-head-size").empty());
      continue;
    }
    CHECK(with_rule(a, "width-mismatch").empty());
    Finding f = only(a, "decoupled-head-size");
    CHECK(f.block == 0);
    // 64 / 4 = 16 would be the standard split; the block: 8,352 of 16,640 = 50.2%.
    CHECK(f.message == "Q/K project 64 → 32 (4 heads × 8), as the config's head_dim = 8 declares: a head size chosen "
                       "apart from width / heads (64 / 4 = 16), not a mix-up; this block has 8,352 parameters, 50.2% of "
                       "the standard 16,640 (4·64² + 4·64).");
  }
}

TEST_CASE("width-mismatch: key_dim = width in Keras style (4 heads x 64 on a width of 64)", "[findings]") {
  LayerSpec s;
  s.head_dim = 64;
  auto r = audited(layers_model({s}));
  Finding f = only(r->audit, "width-mismatch");
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // Q = K = V: 64 x (4 x 64) + 256 = 16,384 + 256 = 16,640; O: 256 x 64 + 64 = 16,448.
  // Total 3 x 16,640 + 16,448 = 66,368; 66,368 / 16,640 = 3.9885 -> 398.8%.
  CHECK_THAT(f.message, Contains("Q/K project 64 → 256 (4 heads × 64) instead of 64"));
  CHECK_THAT(f.message, Contains("this block has 66,368 parameters, 398.8% of the standard 16,640"));
  // The standard block in Keras: key_dim = 64 / 4 = 16.
  CHECK_THAT(f.message, Contains("For the standard block use key_dim = 64 / 4 = 16."));
}

TEST_CASE("width-mismatch: V/O alone carry 4 heads x 8 = 32 of a width of 64", "[findings]") {
  LayerSpec s;
  s.v_head_dim = 8;  // Q/K: 4 x 16 = 64, the standard split
  auto r = audited(layers_model({s}));
  const Audit& a = r->audit;
  Finding f = only(a, "width-mismatch");
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // Q = K: 64 x 64 + 64 = 4,160; V: 64 x (4 x 8) + 32 = 2,080; O: (4 x 8) x 64 + 64 = 2,112.
  // Total 2 x 4,160 + 2,080 + 2,112 = 12,512; 12,512 / 16,640 = 0.75192 -> 75.2%.
  CHECK_THAT(f.message, Contains("V/O carry 32 features (4 heads × 8) instead of 64"));
  CHECK_THAT(f.message, Contains("this block has 12,512 parameters, 75.2% of the standard 16,640 (4·64² + 4·64)"));
  CHECK_THAT(f.message, Contains("(4·8) × d_out"));
}

TEST_CASE("width-mismatch: not reported for the standard split 4 x 16 = 64", "[findings]") {
  auto r = audited(layers_model({LayerSpec{}}));
  REQUIRE(r->audit.attention.blocks.size() == 1);
  // 4 x (64 x 64 + 64) = 16,640 = 4 x 64^2 + 4 x 64: the standard block.
  CHECK(r->audit.attention.blocks[0].total == 16640u);
  CHECK(with_rule(r->audit, "width-mismatch").empty());
  CHECK(r->audit.findings.empty());
}

// ---------------------------------------------------------------------------------------------
// heads-not-divisor

// com.microsoft Attention: input [1, 5, 64], packed weight [64, 192], bias [192], then O.
static onnx::ModelProto fused_attention(int64_t heads) {
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.init("qkv.weight", {64, 192});
  n.init("qkv.bias", {192});
  testutil::attr_int(n.op("Attention", {"x", "qkv.weight", "qkv.bias"}, "attn", "com.microsoft"), "num_heads", heads);
  n.output(n.linear("attn", "o", 64, 64));
  return n.m;
}

TEST_CASE("heads-not-divisor: fused Attention with 3 heads on a width of 64", "[findings]") {
  auto r = audited(fused_attention(3));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  Finding f = only(a, "heads-not-divisor");
  CHECK(f.severity == Severity::Error);
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // 64 = 3 x 21 + 1: 64 / 3 leaves 1. No head size exists (64 / 3 is not whole), so no suffix.
  CHECK(f.message == "width 64 is not divisible by 3 heads (64 / 3 leaves 1): no per-head split of the width exists");
}

TEST_CASE("heads-not-divisor: unfused Reshape [0, 0, 6, 10] on a width of 64", "[findings]") {
  LayerSpec s;
  s.heads = 6;
  s.head_dim = 10;
  auto r = audited(layers_model({s}));
  Finding f = only(r->audit, "heads-not-divisor");
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // heads = 60 / 10 = 6; 64 = 6 x 10 + 4: leaves 4; the block uses 6 x 10 = 60 features.
  CHECK(f.message ==
        "width 64 is not divisible by 6 heads (64 / 6 leaves 4): no per-head split of the width exists; this block "
        "uses 6 heads × 10 = 60");
  // 60 != 64 is also a width mismatch.
  CHECK_THAT(only(r->audit, "width-mismatch").message, Contains("Q/K project 64 → 60 (6 heads × 10)"));
}

TEST_CASE("heads-not-divisor: not reported for fused Attention with 4 heads on 64", "[findings]") {
  auto r = audited(fused_attention(4));
  REQUIRE(r->audit.attention.blocks.size() == 1);
  // 64 / 4 = 16 per head: Q takes columns 0:64 of 192, 64 / 4 = 16.
  REQUIRE(r->audit.attention.blocks[0].head_dim.has_value());
  CHECK(*r->audit.attention.blocks[0].head_dim == 16);
  CHECK(with_rule(r->audit, "heads-not-divisor").empty());
}

// ---------------------------------------------------------------------------------------------
// qk-dim-mismatch

TEST_CASE("qk-dim-mismatch: Q split into heads of 16, K into heads of 8", "[findings]") {
  // A broken export: Q [1, 5, 64] -> Reshape [0, 0, 4, 16] -> [1, 4, 5, 16], but K [1, 5, 64] ->
  // Reshape [0, 0, 8, 8] -> Transpose -> Kᵀ [1, 8, 8, 5]: MatMul(Q, Kᵀ) cannot multiply 16 by 8.
  LayerSpec s;
  s.k_reshape = {0, 0, 8, 8};
  auto r = audited(layers_model({s}));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  REQUIRE(a.attention.blocks[0].k_head_dim.has_value());
  CHECK(*a.attention.blocks[0].k_head_dim == 8);
  Finding f = only(a, "qk-dim-mismatch");
  CHECK(f.severity == Severity::Error);
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  CHECK(f.message ==
        "Q heads have 16 features but K heads have 8: MatMul(Q, Kᵀ) needs equal sizes, so this block's head numbers "
        "cannot be trusted");
}

TEST_CASE("qk-dim-mismatch: not reported when K is regrouped into Q's head size before the core", "[findings]") {
  // A valid graph: K [1, 5, 64] -> Reshape [0, 0, 8, 8] -> Reshape [0, 0, 4, 16] -> Transpose
  // [1, 4, 16, 5], so MatMul(Q [1, 4, 5, 16], Kᵀ) runs: K's heads are 16 where they meet Q.
  LayerSpec s;
  s.k_first_reshape = {0, 0, 8, 8};
  auto r = audited(layers_model({s}));
  REQUIRE(r->audit.attention.blocks.size() == 1);
  REQUIRE(r->audit.attention.blocks[0].k_head_dim.has_value());
  CHECK(*r->audit.attention.blocks[0].k_head_dim == 16);
  CHECK(with_rule(r->audit, "qk-dim-mismatch").empty());
}

TEST_CASE("qk-dim-mismatch: not reported when Q and K both split into 4 x 16", "[findings]") {
  auto r = audited(layers_model({LayerSpec{}}));
  REQUIRE(r->audit.attention.blocks[0].k_head_dim.has_value());
  CHECK(*r->audit.attention.blocks[0].k_head_dim == 16);
  CHECK(with_rule(r->audit, "qk-dim-mismatch").empty());
}

// ---------------------------------------------------------------------------------------------
// bias-inconsistent

TEST_CASE("bias-inconsistent: K without a bias, Whisper-style", "[findings]") {
  LayerSpec s;
  s.bias_k = false;
  auto r = audited(layers_model({s}));
  Finding f = only(r->audit, "bias-inconsistent");
  CHECK(f.severity == Severity::Info);
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // Q = V = O: 64 x 64 + 64 = 4,160; K: 64 x 64 = 4,096. Total 3 x 4,160 + 4,096 = 16,576,
  // between 4 x 64^2 = 16,384 and 4 x 64^2 + 4 x 64 = 16,640.
  CHECK(f.message ==
        "Q, V and O have biases, K has none: the block has 16,576 parameters, between the standard 16,384 without "
        "biases and 16,640 with them (Whisper's K projection is bias-free by design)");
}

TEST_CASE("bias-inconsistent: not reported with biases everywhere or nowhere", "[findings]") {
  auto with = audited(layers_model({LayerSpec{}}));
  CHECK(with_rule(with->audit, "bias-inconsistent").empty());
  LayerSpec s;
  s.bias_q = s.bias_k = s.bias_v = s.bias_o = false;
  auto without = audited(layers_model({s}));
  // 4 x 64^2 = 16,384: the standard block without biases.
  CHECK(without->audit.attention.blocks[0].total == 16384u);
  CHECK(with_rule(without->audit, "bias-inconsistent").empty());
}

// ---------------------------------------------------------------------------------------------
// grouped-kv

TEST_CASE("grouped-kv: 4 query heads over 2 K/V heads (GQA)", "[findings]") {
  LayerSpec s;
  s.kv_heads = 2;
  auto r = audited(layers_model({s}));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  Finding f = only(a, "grouped-kv");
  CHECK(f.severity == Severity::Info);
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // Q: 64 x 64 + 64 = 4,160; K = V: 64 x (2 x 16) + 32 = 2,080; O: 64 x 64 + 64 = 4,160.
  // Total 2 x 4,160 + 2 x 2,080 = 12,480 instead of 16,640. Groups of 4 / 2 = 2.
  CHECK(f.message ==
        "4 query heads share 2 K/V heads (groups of 2): K and V project 64 → 32 instead of 64, so this block has "
        "12,480 parameters instead of the 16,640 of full multi-head attention. This is grouped-query attention "
        "(GQA), not a mismatch.");
  // Not a width mismatch: V/O carry 4 x 16 = 64.
  CHECK(with_rule(a, "width-mismatch").empty());
}

TEST_CASE("grouped-kv: one K/V head is multi-query attention (MQA)", "[findings]") {
  LayerSpec s;
  s.kv_heads = 1;
  auto r = audited(layers_model({s}));
  Finding f = only(r->audit, "grouped-kv");
  // K = V: 64 x 16 + 16 = 1,040; total 2 x 4,160 + 2 x 1,040 = 10,400.
  CHECK_THAT(f.message, Contains("4 query heads share 1 K/V head (groups of 4): K and V project 64 → 16"));
  CHECK_THAT(f.message, Contains("this block has 10,400 parameters"));
  CHECK_THAT(f.message, Contains("multi-query attention (MQA)"));
}

TEST_CASE("grouped-kv: not reported when K/V have as many heads as Q", "[findings]") {
  auto r = audited(layers_model({LayerSpec{}}));
  REQUIRE(r->audit.attention.blocks[0].kv_heads.has_value());
  CHECK(*r->audit.attention.blocks[0].kv_heads == 4);
  CHECK(with_rule(r->audit, "grouped-kv").empty());
}

// ---------------------------------------------------------------------------------------------
// per-head-projections

TEST_CASE("per-head-projections: Q, K and V as 4 projections 64 -> 16 each", "[findings]") {
  LayerSpec s;
  s.per_head = true;
  auto r = audited(layers_model({s}));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  REQUIRE(a.attention.blocks[0].heads.has_value());
  CHECK(*a.attention.blocks[0].heads == 4);
  Finding f = only(a, "per-head-projections");
  CHECK(f.severity == Severity::Info);
  REQUIRE(f.block.has_value());
  CHECK(*f.block == 0);
  // 3 roles x 4 heads = 12 projections of 64 x 16 + 16 = 1,040: 12 x 1,040 = 12,480, the same as
  // 3 packed projections of 64 x 64 + 64 = 4,160: 3 x 4,160 = 12,480.
  CHECK(f.message ==
        "Q, K and V are computed by 12 separate per-head projections; they hold the same 12,480 parameters as one "
        "packed projection per role would, only run slower");
  // The block itself is the standard 16,640 (O: 4,160 on top of 12,480).
  CHECK(a.attention.blocks[0].total == 16640u);
}

TEST_CASE("per-head-projections: not reported for packed projections", "[findings]") {
  auto r = audited(layers_model({LayerSpec{}}));
  CHECK(with_rule(r->audit, "per-head-projections").empty());
}

// ---------------------------------------------------------------------------------------------
// shared-weights

TEST_CASE("shared-weights: two blocks use one Q bias tensor", "[findings]") {
  LayerSpec s;
  s.q_bias = "shared.q.bias";
  auto r = audited(layers_model({s, s}));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 2);
  Finding f = only(a, "shared-weights");
  CHECK(f.severity == Severity::Info);
  CHECK_FALSE(f.block.has_value());
  // The bias has 64 elements.
  CHECK(f.message == "tensor 'shared.q.bias' (64 parameters) is used by blocks 0 and 1 and counted once in the totals");
  // Each block shows it: 16,640 each; the model counts it once: 2 x 16,640 - 64 = 33,216.
  CHECK(a.attention.blocks[0].total == 16640u);
  CHECK(a.attention.blocks[1].total == 16640u);
  CHECK(a.attention.parameters == 33216u);
}

TEST_CASE("shared-weights: one bias tensor used by Q and K of one block", "[findings]") {
  LayerSpec s;
  s.q_bias = "qk.bias";
  s.k_bias = "qk.bias";
  auto r = audited(layers_model({s}));
  Finding f = only(r->audit, "shared-weights");
  CHECK_FALSE(f.block.has_value());
  CHECK(f.message == "tensor 'qk.bias' (64 parameters) is used by several projections of block 0 and counted once in "
                     "the totals");
  // The block shows it for Q and K: 16,640; the model counts it once: 16,640 - 64 = 16,576.
  CHECK(r->audit.attention.blocks[0].total == 16640u);
  CHECK(r->audit.attention.parameters == 16576u);
}

TEST_CASE("shared-weights: not reported when every block has its own tensors", "[findings]") {
  auto r = audited(layers_model({LayerSpec{}, LayerSpec{}}));
  REQUIRE(r->audit.attention.blocks.size() == 2);
  // 2 x 16,640 = 33,280, nothing shared.
  CHECK(r->audit.attention.parameters == 33280u);
  CHECK(with_rule(r->audit, "shared-weights").empty());
}

// ---------------------------------------------------------------------------------------------
// duplicate-weights

TEST_CASE("duplicate-weights: an embedding [256, 64] and its transposed copy [64, 256]", "[findings]") {
  std::vector<float> e = random_floats(256 * 64, 1);
  auto r = audited(tied_model(float_tensor("embed.weight", {256, 64}, e),
                              float_tensor("lm_head.weight", {64, 256}, transposed(e, 256, 64))));
  const Audit& a = r->audit;
  REQUIRE(a.duplicates.size() == 1);
  CHECK(a.model.weights[a.duplicates[0].original].name == "embed.weight");
  CHECK(a.model.weights[a.duplicates[0].copy].name == "lm_head.weight");
  CHECK(a.duplicates[0].transposed);
  // stored: 2 x 256 x 64 = 32,768; unique: 32,768 - 16,384 = 16,384.
  CHECK(a.inventory.stored == 32768u);
  CHECK(a.unique == a.inventory.stored - 16384u);
  CHECK(a.unique == 16384u);
  // The copy belongs with its original: both are embeddings, 32,768.
  CHECK(a.composition.embeddings == 32768u);
  Finding f = only(a, "duplicate-weights");
  CHECK(f.severity == Severity::Warning);
  CHECK_FALSE(f.block.has_value());
  CHECK(f.message ==
        "tensors 'embed.weight' [256, 64] and 'lm_head.weight' [64, 256] hold the same values, one the transpose of "
        "the other: the file stores 16,384 parameters twice, as exporters do for a tied embedding and LM head; "
        "parameters.unique counts them once");
}

TEST_CASE("duplicate-weights: an identical, untransposed copy [256, 64]", "[findings]") {
  std::vector<float> e = random_floats(256 * 64, 2);
  auto r = audited(tied_model(float_tensor("embed.weight", {256, 64}, e), float_tensor("lm_head.weight", {256, 64}, e)));
  const Audit& a = r->audit;
  REQUIRE(a.duplicates.size() == 1);
  CHECK_FALSE(a.duplicates[0].transposed);
  CHECK(a.unique == 16384u);  // 32,768 - 16,384
  CHECK_THAT(only(a, "duplicate-weights").message,
             Contains("'embed.weight' [256, 64] and 'lm_head.weight' [256, 64] hold identical values"));
}

TEST_CASE("duplicate-weights: two tensors of zeros are not copies", "[findings]") {
  std::vector<float> zeros(256 * 64, 0.0f);
  auto r = audited(tied_model(float_tensor("embed.weight", {256, 64}, zeros),
                              float_tensor("lm_head.weight", {64, 256}, zeros)));
  CHECK(r->audit.duplicates.empty());
  CHECK(r->audit.unique == r->audit.inventory.stored);
  CHECK(with_rule(r->audit, "duplicate-weights").empty());
  auto same = audited(tied_model(float_tensor("embed.weight", {256, 64}, zeros),
                                 float_tensor("lm_head.weight", {256, 64}, zeros)));
  CHECK(same->audit.duplicates.empty());
}

TEST_CASE("duplicate-weights: a transposed copy that differs in one unsampled element is not a copy", "[findings]") {
  std::vector<float> e = random_floats(256 * 64, 3);
  std::vector<float> t = transposed(e, 256, 64);
  // embed element 100 = row 1, column 36; in the transpose [64, 256] it sits at 36 x 256 + 1 = 9,217.
  // 16 samples are compared before the full content: elements (16,383 x s) / 15 for s = 0..15 =
  // 0, 1,092, ..., 8,737, 9,829, ... of one orientation. Neither 100 (embed order) nor 9,217
  // (transposed order) is among them, so only the full comparison can tell.
  t[9217] += 0.5f;
  auto r = audited(tied_model(float_tensor("embed.weight", {256, 64}, e), float_tensor("lm_head.weight", {64, 256}, t)));
  CHECK(r->audit.duplicates.empty());
  CHECK(with_rule(r->audit, "duplicate-weights").empty());
}

TEST_CASE("duplicate-weights: a group of look-alikes whose samples agree finds its copies, and only them", "[findings]") {
  // Seven [30, 40] or [40, 30] tensors, each a canonical [30, 40] matrix (a [40, 30] one is stored
  // as its transpose) whose 17 sampled elements are the same 1..17 in all: element 600 (the
  // middle, 1,200 / 2) and 1,199 x s / 15 for s = 0..15 of the canonical orientation. So all
  // seven have one fingerprint, and the search must tell them apart by their whole content:
  // t0 [30, 40] = K0; t1 [40, 30] = K0 transposed (a copy of t0); t2 [30, 40] = K2; t3 [30, 40]
  // = K2 (a copy of t2); t4 [40, 30] = K4 transposed; t5 [40, 30] = K0 transposed with canonical
  // element 1 (row 0, column 1; stored at 1 x 30 + 0 = 30) changed: not a copy; t6 [30, 40] = K6.
  std::vector<int64_t> sampled = {600};
  for (int64_t s = 0; s < 16; ++s) sampled.push_back(1199 * s / 15);
  auto canonical = [&](uint32_t seed) {
    std::vector<float> k = random_floats(1200, seed);
    for (size_t i = 0; i < sampled.size(); ++i) k[static_cast<size_t>(sampled[i])] = static_cast<float>(i + 1);
    return k;
  };
  const std::vector<float> k0 = canonical(10), k2 = canonical(12), k4 = canonical(14), k6 = canonical(16);
  std::vector<float> t5 = transposed(k0, 30, 40);
  t5[30] += 0.5f;
  std::vector<onnx::TensorProto> ts = {
      float_tensor("t0", {30, 40}, k0), float_tensor("t1", {40, 30}, transposed(k0, 30, 40)),
      float_tensor("t2", {30, 40}, k2), float_tensor("t3", {30, 40}, k2),
      float_tensor("t4", {40, 30}, transposed(k4, 30, 40)), float_tensor("t5", {40, 30}, t5),
      float_tensor("t6", {30, 40}, k6)};
  GraphBuilder n;
  for (auto& t : ts) {
    const std::string name = t.name();
    *n.g->add_initializer() = std::move(t);
    n.op("Identity", {name}, name + "/out");
    n.output(name + "/out");
  }
  auto r = audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.duplicates.size() == 2);
  CHECK(a.model.weights[a.duplicates[0].original].name == "t0");
  CHECK(a.model.weights[a.duplicates[0].copy].name == "t1");
  CHECK(a.duplicates[0].transposed);
  CHECK(a.model.weights[a.duplicates[1].original].name == "t2");
  CHECK(a.model.weights[a.duplicates[1].copy].name == "t3");
  CHECK_FALSE(a.duplicates[1].transposed);
  CHECK(a.unique == 7u * 1200u - 2u * 1200u);  // 8,400 stored, two copies of 1,200: 6,000
}

TEST_CASE("duplicate-weights: a transposed copy whose sides are not multiples of 4 is compared to the last element", "[findings]") {
  // [257, 67]: 257 = 4 x 64 + 1 rows and 67 = 64 + 3 columns, so the comparison's 4 x 4 blocks
  // leave a last row and three last columns to the element-by-element edge.
  std::vector<float> e = random_floats(257 * 67, 6);
  std::vector<float> t = transposed(e, 257, 67);
  auto audit_with = [&](const std::vector<float>& head) {
    return audited(
        tied_model(float_tensor("embed.weight", {257, 67}, e), float_tensor("lm_head.weight", {67, 257}, head)));
  };
  // The 16 samples are elements (17,218 x s) / 15, s = 0..15, of one orientation: 0, 1,147,
  // 2,295, 3,443, 4,591, 5,739, 6,887, 8,034, 9,182, 10,330, 11,478, 12,626, 13,774, 14,921,
  // 16,069, 17,218. The changed elements below are none of them in either orientation.
  SECTION("equal: found, 257 x 67 = 17,219 parameters stored twice") {
    auto r = audit_with(t);
    REQUIRE(r->audit.duplicates.size() == 1);
    CHECK(r->audit.duplicates[0].transposed);
    CHECK(r->audit.unique == 17219u);
  }
  SECTION("the last row differs (row 256, column 5: element 17,157, or 5 x 257 + 256 = 1,541 transposed)") {
    std::vector<float> changed = t;
    changed[1541] += 0.25f;
    CHECK(audit_with(changed)->audit.duplicates.empty());
  }
  SECTION("a last column differs (row 10, column 66: element 736, or 66 x 257 + 10 = 16,972 transposed)") {
    std::vector<float> changed = t;
    changed[16972] += 0.25f;
    CHECK(audit_with(changed)->audit.duplicates.empty());
  }
  SECTION("a 4 x 4 block differs (row 100, column 40: element 6,740, or 40 x 257 + 100 = 10,380 transposed)") {
    std::vector<float> changed = t;
    changed[10380] += 0.25f;
    CHECK(audit_with(changed)->audit.duplicates.empty());
  }
}

TEST_CASE("duplicate-weights: both tensors in an external data file", "[findings]") {
  testutil::TempDir dir;
  std::vector<float> e = random_floats(256 * 64, 4);
  std::vector<float> t = transposed(e, 256, 64);
  // Each tensor is 256 x 64 x 4 = 65,536 bytes: embed at offset 0, lm_head at offset 65,536.
  testutil::write_bytes(dir.file("model.data"), bytes_of(e) + bytes_of(t));
  onnx::TensorProto embed = testutil::tensor("embed.weight", {256, 64}, kFloat, true);
  onnx::TensorProto head = testutil::tensor("lm_head.weight", {64, 256}, kFloat, true);
  set_external(embed, "model.data", 0, 65536);
  set_external(head, "model.data", 65536, 65536);
  testutil::save(tied_model(embed, head), dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  CHECK(weight_named(a, "lm_head.weight").external_status() == ExternalStatus::Present);
  REQUIRE(a.duplicates.size() == 1);
  CHECK(a.duplicates[0].transposed);
  CHECK(a.unique == 16384u);  // 32,768 - 16,384
  CHECK_THAT(only(a, "duplicate-weights").message, Contains("one the transpose of the other"));
  CHECK(with_rule(a, "external-data-missing").empty());
  CHECK(with_rule(a, "external-data-size-mismatch").empty());
}

TEST_CASE("duplicate-weights: a large transposed copy is compared band by band in either order", "[findings]") {
  // [20000, 64] float32: rows of 256 bytes, so a 4 MiB band holds 16,384 rows and the comparison
  // takes two bands (16,384 + 3,616 rows), read from an external file.
  testutil::TempDir dir;
  const int64_t rows = 20000, cols = 64;
  std::vector<float> e = random_floats(static_cast<size_t>(rows * cols), 5);
  std::vector<float> t = transposed(e, static_cast<size_t>(rows), static_cast<size_t>(cols));
  const int64_t bytes = rows * cols * 4;  // 5,120,000
  auto audit_pair = [&](const std::vector<float>& first, std::vector<int64_t> first_dims, const std::vector<float>& second,
                        std::vector<int64_t> second_dims) {
    testutil::write_bytes(dir.file("model.data"), bytes_of(first) + bytes_of(second));
    onnx::TensorProto a = testutil::tensor("embed.weight", first_dims, kFloat, true);
    onnx::TensorProto b = testutil::tensor("lm_head.weight", second_dims, kFloat, true);
    set_external(a, "model.data", 0, bytes);
    set_external(b, "model.data", bytes, bytes);
    testutil::save(tied_model(a, b), dir.file("model.onnx"));
    return audit_file(dir.file("model.onnx"));
  };
  SECTION("the long tensor first") {
    Audit a = audit_pair(e, {rows, cols}, t, {cols, rows});
    REQUIRE(a.duplicates.size() == 1);
    CHECK(a.duplicates[0].transposed);
    CHECK(a.unique == 1280000u);  // 2 x 1,280,000 stored, one copy
  }
  SECTION("the wide tensor first") {
    Audit a = audit_pair(t, {cols, rows}, e, {rows, cols});
    REQUIRE(a.duplicates.size() == 1);
    CHECK(a.unique == 1280000u);
  }
  SECTION("one element of the second band differs") {
    // Row 19,999, column 63 of the long tensor: the very last element, in the second band; in
    // the transpose [64, 20000] it is element 63 x 20,000 + 19,999 = 1,279,999, the last too.
    // The 16 samples include element 1,279,999 (s = 15) in the canonical (wide) orientation, so
    // change the one before it in the long tensor's order instead: row 19,999, column 62 =
    // transposed element 62 x 20,000 + 19,999 = 1,259,999, not a sample ((1,279,999 x s) / 15
    // for s = 0..15 are multiples of 85,333.27 rounded down; 1,259,999 is not one of them).
    std::vector<float> changed = t;
    changed[1259999] += 1.0f;
    Audit a = audit_pair(e, {rows, cols}, changed, {cols, rows});
    CHECK(a.duplicates.empty());
  }
}

// ---------------------------------------------------------------------------------------------
// unmatched-softmax

TEST_CASE("unmatched-softmax: an attention core whose Q weight is a graph input of unknown shape", "[findings]") {
  // The Q weight is a graph input whose first dim is symbolic: nothing proves it is an [in, out]
  // weight fed at run time (tests/edges_test.cpp has the declared case, which is a block).
  LayerSpec s;
  s.q_weight_is_input = true;
  onnx::ModelProto m = layers_model({s});
  for (auto& in : *m.mutable_graph()->mutable_input()) {
    if (in.name() == "layer0.q.weight") in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("n");
  }
  auto r = audited(m);
  const Audit& a = r->audit;
  CHECK(a.attention.blocks.empty());
  REQUIRE(a.attention.unmatched.size() == 1);
  Finding f = only(a, "unmatched-softmax");
  CHECK(f.severity == Severity::Warning);
  CHECK_FALSE(f.block.has_value());
  // MatMul(x, layer0.q.weight) has no constant operand: a product of two activations.
  CHECK(f.message ==
        "Softmax 'layer0/Softmax' looks like attention, but its Q comes from MatMul 'layer0.q/MatMul', a product of "
        "two activations: its projections are missing from the attention total");
}

TEST_CASE("an attention core whose Q weight is a graph input declared [64, 64] is a block", "[findings]") {
  // One layer of width 64, 4 heads of 16; the Q projection is MatMul(x, 'layer0.q.weight') with
  // the weight a graph input [64, 64] and no bias; K, V and O are stored with biases:
  // 3 x (64 x 64 + 64) = 12,480, all the block holds.
  LayerSpec s;
  s.q_weight_is_input = true;
  auto r = audited(layers_model({s}));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  CHECK(a.attention.unmatched.empty());
  CHECK(with_rule(a, "unmatched-softmax").empty());
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.heads == 4);
  CHECK(b.q.weight_input == "layer0.q.weight");
  CHECK(b.q.weight == 0);
  CHECK(b.q.bias == 0);
  CHECK(b.q.out_width == 64);
  CHECK(b.total == 12480);
  // Q has no bias and K, V, O have: the bias rule says so, as for a stored Q without one.
  CHECK(with_rule(a, "bias-inconsistent").size() == 1);
}

TEST_CASE("unmatched-softmax: a classifier Softmax is listed but not flagged", "[findings]") {
  GraphBuilder n;
  n.input("x", {1, 64});
  testutil::attr_int(n.op("Softmax", {n.linear("x", "classifier", 64, 10)}, "probs"), "axis", -1);
  n.output("probs");
  auto r = audited(n.m);
  const Audit& a = r->audit;
  CHECK(a.attention.blocks.empty());
  REQUIRE(a.attention.unmatched.size() == 1);
  CHECK(a.attention.unmatched[0].name == "probs");
  CHECK(a.attention.unmatched[0].reason == "no MatMul(Q, Kᵀ) of two activations before it: MatMul 'classifier/MatMul' "
                                            "multiplies by a constant: a projection or a classifier, not Q·Kᵀ");
  CHECK(with_rule(a, "unmatched-softmax").empty());
  CHECK(a.findings.empty());
}

// ---------------------------------------------------------------------------------------------
// external-data-missing

TEST_CASE("external-data-missing: two data files absent, each with its own tensors", "[findings]") {
  auto r = audited(external_model({external_tensor("a", {64, 64}, "a.data"), external_tensor("b1", {64, 32}, "b.data", 0),
                                   external_tensor("b2", {32, 64}, "b.data", 8192)}));
  const Audit& a = r->audit;
  auto fs = with_rule(a, "external-data-missing");
  REQUIRE(fs.size() == 2);
  for (const auto& f : fs) {
    CHECK(f.severity == Severity::Error);
    CHECK_FALSE(f.block.has_value());
  }
  // a.data: one tensor of 64 x 64 = 4,096; b.data: two tensors of 64 x 32 = 32 x 64 = 2,048, 4,096 in all.
  CHECK(fs[0].message ==
        "external data file 'a.data' is not next to the model; 1 tensors (4,096 parameters) were counted from their "
        "dims alone");
  CHECK(fs[1].message ==
        "external data file 'b.data' is not next to the model; 2 tensors (4,096 parameters) were counted from their "
        "dims alone");
  // The counts stand: 4,096 + 2,048 + 2,048 = 8,192.
  CHECK(a.inventory.stored == 8192u);
}

TEST_CASE("external-data-missing: not reported when the data file is there", "[findings]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("w.data"), std::string(64 * 64 * 4, '\0'));  // 16,384 bytes
  testutil::save(external_model({external_tensor("w", {64, 64}, "w.data")}), dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  CHECK(weight_named(a, "w").external_status() == ExternalStatus::Present);
  CHECK(with_rule(a, "external-data-missing").empty());
  CHECK(a.findings.empty());
}

// ---------------------------------------------------------------------------------------------
// external-data-size-mismatch

TEST_CASE("external-data-size-mismatch: the data file is too short", "[findings]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("w.data"), std::string(1000, '\0'));
  testutil::save(external_model({external_tensor("w", {64, 64}, "w.data")}), dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  Finding f = only(a, "external-data-size-mismatch");
  CHECK(f.severity == Severity::Error);
  CHECK_FALSE(f.block.has_value());
  // 64 x 64 float32 = 4,096 x 4 = 16,384 bytes.
  CHECK(f.message == "tensor 'w' needs 16,384 bytes at offset 0 of 'w.data', but that file has 1,000 bytes");
}

TEST_CASE("external-data-size-mismatch: the range runs past the end of the file", "[findings]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("w.data"), std::string(16384, '\0'));
  testutil::save(external_model({external_tensor("w", {64, 64}, "w.data", 100, 16384)}), dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  // 100 + 16,384 = 16,484 > 16,384.
  CHECK(only(a, "external-data-size-mismatch").message ==
        "tensor 'w' needs 16,384 bytes at offset 100 of 'w.data' (length 16,384), but that file has 16,384 bytes");
}

TEST_CASE("external-data-size-mismatch: the stated length disagrees with the shape", "[findings]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("w.data"), std::string(20000, '\0'));
  testutil::save(external_model({external_tensor("w", {64, 64}, "w.data", 0, 8192)}), dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  // The file is long enough (20,000 >= 16,384); the length 8,192 is half of 64 x 64 x 4 = 16,384.
  CHECK(only(a, "external-data-size-mismatch").message ==
        "tensor 'w' needs 16,384 bytes by its shape, but its external data length is 8,192 (at offset 0 of 'w.data')");
}

TEST_CASE("external-data-size-mismatch: not reported for an exact range", "[findings]") {
  testutil::TempDir dir;
  // Two [64, 64] float32 tensors, 16,384 bytes each, back to back: 32,768 bytes.
  testutil::write_bytes(dir.file("w.data"), std::string(32768, '\0'));
  testutil::save(external_model({external_tensor("w1", {64, 64}, "w.data", 0, 16384),
                                 external_tensor("w2", {64, 64}, "w.data", 16384, 16384)}),
                 dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  CHECK(with_rule(a, "external-data-size-mismatch").empty());
  CHECK(a.inventory.stored == 8192u);  // 2 x 4,096
}

// ---------------------------------------------------------------------------------------------
// external-data-outside-model-dir (a hard error: the audit stops)

TEST_CASE("external-data-outside-model-dir: the audit refuses with an InputError", "[findings]") {
  testutil::TempDir dir;
  std::string path = dir.file("model.onnx");
  auto refused = [&](const std::string& location) -> std::string {
    testutil::save(external_model({external_tensor("w", {64, 64}, location)}), path);
    try {
      audit_file(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(refused("../outside.data") ==
        "tensor 'w': external data location '../outside.data' contains '..'; refused, it must stay inside the model's "
        "folder");
  CHECK(refused("/etc/passwd") ==
        "tensor 'w': external data location '/etc/passwd' is an absolute path; refused, it must stay inside the "
        "model's folder");
  testutil::TempDir elsewhere;
  testutil::write_bytes(elsewhere.file("w.data"), std::string(16384, '\0'));
  REQUIRE(symlink(elsewhere.path.c_str(), dir.file("link").c_str()) == 0);
  std::string msg = refused("link/w.data");
  CHECK(msg ==
        "tensor 'w': external data location 'link/w.data' resolves through a symlink outside the model's folder; "
        "refused, it must stay inside the model's folder");
  CHECK_THAT(msg, Contains("refused"));
}

TEST_CASE("external-data-outside-model-dir: a location in a subfolder is accepted", "[findings]") {
  testutil::TempDir dir;
  std::filesystem::create_directory(dir.path / "data");
  testutil::write_bytes(dir.file("data/w.data"), std::string(16384, '\0'));
  testutil::save(external_model({external_tensor("w", {64, 64}, "data/w.data")}), dir.file("model.onnx"));
  Audit a = audit_file(dir.file("model.onnx"));
  CHECK(weight_named(a, "w").external_status() == ExternalStatus::Present);
  CHECK(with_rule(a, "external-data-outside-model-dir").empty());
  CHECK(a.findings.empty());
}

// ---------------------------------------------------------------------------------------------
// quantized-weights

TEST_CASE("quantized-weights: a MatMulNBits weight counts K x N, not its packed bytes", "[findings]") {
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  // com.microsoft MatMulNBits, bits 4, block_size 32: B is uint8 [N, K / block_size, block_size x 4 / 8]
  // = [64, 2, 16] = 2,048 bytes; scales [N x K / block_size] = [128].
  n.init("w.packed", {64, 2, 16}, onnx::TensorProto::UINT8);
  n.init("w.scales", {128});
  auto* mm = n.op("MatMulNBits", {"x", "w.packed", "w.scales"}, "y", "com.microsoft");
  testutil::attr_int(mm, "K", 64);
  testutil::attr_int(mm, "N", 64);
  testutil::attr_int(mm, "bits", 4);
  testutil::attr_int(mm, "block_size", 32);
  n.output("y");
  auto r = audited(n.m);
  const Audit& a = r->audit;
  const Weight& w = weight_named(a, "w.packed");
  // K x N = 64 x 64 = 4,096 parameters in 2,048 bytes.
  CHECK(w.elements == 4096u);
  CHECK(w.bytes == 2048u);
  CHECK(w.parameter);
  // Inventory: 4,096 for the blob + 128 scales = 4,224.
  CHECK(a.inventory.stored == 4224u);
  auto row = std::find_if(a.inventory.by_dtype.begin(), a.inventory.by_dtype.end(),
                          [](const Breakdown& b) { return b.key == "uint8"; });
  REQUIRE(row != a.inventory.by_dtype.end());
  CHECK(row->elements == 4096u);
  CHECK(row->bytes == 2048u);
  Finding f = only(a, "quantized-weights");
  CHECK(f.severity == Severity::Info);
  CHECK_FALSE(f.block.has_value());
  CHECK(f.message ==
        "1 MatMulNBits weights hold 4,096 parameters, counted as K × N from the operator attributes, not as the 2,048 "
        "bytes of their packed blobs");
}

TEST_CASE("quantized-weights: an int4 tensor holds two parameters per byte", "[findings]") {
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(21);  // int4 DequantizeLinear
  n.input("x", {1, 5, 64});
  onnx::TensorProto w4 = testutil::tensor("w.int4", {64, 64}, 22 /* INT4 */, true);
  w4.set_raw_data(std::string(2048, '\0'));  // 64 x 64 = 4,096 elements x 4 bits / 8 = 2,048 bytes
  *n.g->add_initializer() = w4;
  n.init("w.scale", {});
  n.op("DequantizeLinear", {"w.int4", "w.scale"}, "w");
  n.op("MatMul", {"x", "w"}, "y");
  n.output("y");
  auto r = audited(n.m);
  const Weight& w = weight_named(r->audit, "w.int4");
  CHECK(w.elements == 4096u);
  CHECK(w.bytes == 2048u);
  Finding f = only(r->audit, "quantized-weights");
  CHECK(f.message == "1 tensors are 4-bit (4,096 parameters, two per byte)");
}

TEST_CASE("quantized-weights: int8 QDQ weights count one parameter per element", "[findings]") {
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.init("w.int8", {64, 64}, onnx::TensorProto::INT8);
  n.init("w.scale", {});
  n.init("w.zero_point", {}, onnx::TensorProto::INT8);
  n.op("DequantizeLinear", {"w.int8", "w.scale", "w.zero_point"}, "w");
  n.op("MatMul", {"x", "w"}, "y");
  n.output("y");
  auto r = audited(n.m);
  const Weight& w = weight_named(r->audit, "w.int8");
  CHECK(w.elements == 4096u);  // 64 x 64
  CHECK(w.bytes == 4096u);     // one byte each
  Finding f = only(r->audit, "quantized-weights");
  CHECK(f.message ==
        "1 int8 weights behind DequantizeLinear hold 4,096 parameters, one per element; their scales and zero points "
        "are stored and counted too");
}

TEST_CASE("quantized-weights: not reported for a float model", "[findings]") {
  auto r = audited(layers_model({LayerSpec{}}));
  CHECK(with_rule(r->audit, "quantized-weights").empty());
}

// ---------------------------------------------------------------------------------------------
// the rule table and finding order

TEST_CASE("every rule in the table has a test (in this file, or where named)", "[findings]") {
  const std::set<std::string> tested = {
      "width-mismatch",        "heads-not-divisor",           "qk-dim-mismatch",
      "bias-inconsistent",     "grouped-kv",                  "per-head-projections",
      "shared-weights",        "duplicate-weights",           "unmatched-softmax",
      "external-data-missing", "external-data-size-mismatch", "external-data-outside-model-dir",
      "quantized-weights",     "config-mismatch" /* declared_test.cpp */,
      "latent-attention" /* samples_test.cpp */, "mixture-of-experts" /* experts_test.cpp */,
      "decoupled-head-size", "checkpoint-total-size" /* python/test_checkpoints.py */,
      "gguf-partial-blocks" /* gguf_wild_test.cpp */,
      "count-exceeds-tensors" /* counts_test.cpp */, "value-budget-spent" /* budget_test.cpp */};
  std::set<std::string> ids;
  for (const auto& r : rules()) {
    INFO(r.id);
    CHECK(tested.count(r.id) == 1);
    CHECK(find_rule(r.id) == &r);
    ids.insert(r.id);
  }
  CHECK(ids.size() == rules().size());  // ids are unique
  CHECK(ids == tested);
  CHECK(find_rule("no-such-rule") == nullptr);
}

TEST_CASE("findings are ordered errors, then warnings, then infos", "[findings]") {
  // Block 0: 4 x 8 on 64 (width-mismatch, a warning) with K bias-free (bias-inconsistent, an info).
  // Block 1: 6 x 10 on 64 (heads-not-divisor, an error, and width-mismatch, a warning).
  // The rules run block by block, so the error is produced after a warning and an info.
  LayerSpec b0;
  b0.head_dim = 8;
  b0.bias_k = false;
  LayerSpec b1;
  b1.heads = 6;
  b1.head_dim = 10;
  auto r = audited(layers_model({b0, b1}));
  const auto& fs = r->audit.findings;
  REQUIRE(fs.size() == 4);
  CHECK(fs[0].rule == "heads-not-divisor");
  CHECK(fs[0].severity == Severity::Error);
  CHECK(fs[1].rule == "width-mismatch");
  CHECK(fs[2].rule == "width-mismatch");
  // Equal severities keep the order the rules produced them: block 0 before block 1.
  REQUIRE(fs[1].block.has_value());
  REQUIRE(fs[2].block.has_value());
  CHECK(*fs[1].block == 0);
  CHECK(*fs[2].block == 1);
  CHECK(fs[3].rule == "bias-inconsistent");
  CHECK(fs[3].severity == Severity::Info);
  for (size_t i = 1; i < fs.size(); ++i) CHECK(fs[i - 1].severity >= fs[i].severity);
}
