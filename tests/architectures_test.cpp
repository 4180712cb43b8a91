// architectures_test.cpp: the attention of 2025-26 models in hand-built graphs: sliding windows
// (a band-shaped mask on the score path, onnxruntime's local_window_size) and what they do to the
// K/V cache. The torch exports of the same (QK-norm, decoupled head sizes, a declared config) are
// in tests/python/test_architectures.py.
//
// Every expected number is worked by hand in the comment beside it: a sliding layer keeps
// min(context, window) tokens, each of kv_heads x (d_k + d_v) elements.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "headcount/explain.h"
#include "headcount/audit.h"

using namespace headcount;
using testutil::GraphBuilder;
using testutil::LayerSpec;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

// A [1, 1, n, n] mask initializer whose element (i, j) is value(i, j).
onnx::TensorProto grid(const std::string& name, int64_t n, int32_t dtype, const std::function<double(int64_t, int64_t)>& value) {
  onnx::TensorProto t = testutil::tensor(name, {1, 1, n, n}, dtype, true);
  std::string raw;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double v = value(i, j);
      if (dtype == onnx::TensorProto::BOOL) {
        raw.push_back(v != 0 ? 1 : 0);
      } else {
        float f = static_cast<float>(v);
        raw.append(reinterpret_cast<const char*>(&f), 4);
      }
    }
  }
  t.set_raw_data(raw);
  return t;
}

// One self-attention layer (width 64, 4 heads of 16, on x [1, 8, 64]) whose scaled scores get
// `mask` added (LayerSpec::mask).
std::unique_ptr<testutil::Audited> layer_with_mask(const onnx::TensorProto& mask, const AuditOptions& options = {}) {
  LayerSpec s;
  s.mask = mask.name();
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  *n.g->add_initializer() = mask;
  n.output(n.layer("x", "layer0", s));
  return testutil::audited(n.m, options);
}

}  // namespace

TEST_CASE("a band-shaped additive mask gives its block a sliding window", "[architectures]") {
  // 0 where 0 <= i - j < 3 and -1e9 elsewhere over 8 positions: each query sees itself and the 2
  // before it, a window of 3. The cache at 4,096 tokens keeps 3 of them: K/V per token 4 heads x
  // (16 + 16) x 4 bytes = 512, so 512 x 3 = 1,536 bytes instead of 512 x 4,096 = 2,097,152:
  // 2,095,616 saved.
  auto r = layer_with_mask(grid("band", 8, kFloat, [](int64_t i, int64_t j) { return i - j >= 0 && i - j < 3 ? 0.0 : -1e9; }));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.window == 3);
  CHECK(b.window_from == "the band of the mask 'band' [1, 1, 8, 8] added to the scores: 0 where 0 ≤ i − j < 3, so each "
                         "query attends to itself and the 2 before it");
  CHECK(a.cost.kv_bytes_per_token == 512);
  CHECK(a.cost.kv_bytes_at_context == 1536);
  CHECK(a.cost.kv_window_saved_bytes == 2095616);
  // Scores against 3 cached tokens, not 4,096: 4 heads x (16 + 16) x 3 = 384.
  CHECK(a.cost.macs_attention_scores == 384);
  REQUIRE(a.framework.buffers.size() == 1);
  CHECK(a.framework.buffers[0].reason ==
        "a sliding-window mask: 0 where 0 ≤ i − j < 3, -1e+09 elsewhere (each query sees its last 3 tokens)");
  CHECK_THAT(explain_block(a, 0), Catch::Contains("window     3 tokens: the band of the mask 'band'"));
}

TEST_CASE("a causal mask, a band with a hole and a band read with --no-content are not windows", "[architectures]") {
  SECTION("causal: every j <= i allowed") {
    auto r = layer_with_mask(grid("causal", 8, kFloat, [](int64_t i, int64_t j) { return j <= i ? 0.0 : -1e9; }));
    CHECK_FALSE(r->audit.attention.blocks[0].window);
    CHECK_FALSE(r->audit.cost.kv_window_saved_bytes);
    CHECK(r->audit.cost.kv_bytes_at_context == 512ull * 4096);  // the whole context
  }
  SECTION("a band with a hole at i - j = 1") {
    auto r = layer_with_mask(grid("holed", 8, kFloat, [](int64_t i, int64_t j) {
      return (i - j == 0 || i - j == 2) ? 0.0 : -1e9;
    }));
    CHECK_FALSE(r->audit.attention.blocks[0].window);
  }
  SECTION("rows that disagree: a window of 2 in the first rows, 3 later") {
    auto r = layer_with_mask(grid("uneven", 8, kFloat, [](int64_t i, int64_t j) {
      int64_t w = i < 5 ? 2 : 3;
      return i - j >= 0 && i - j < w ? 0.0 : -1e9;
    }));
    CHECK_FALSE(r->audit.attention.blocks[0].window);
  }
  SECTION("--no-content reads no mask") {
    AuditOptions o;
    o.compare_content = false;
    auto r = layer_with_mask(grid("band", 8, kFloat, [](int64_t i, int64_t j) { return i - j >= 0 && i - j < 3 ? 0.0 : -1e9; }), o);
    CHECK_FALSE(r->audit.attention.blocks[0].window);
  }
}

TEST_CASE("a boolean band that selects the scores gives a window, read either way round", "[architectures]") {
  // Where(allowed, scores, -inf) with allowed = 0 <= i - j < 5, and Where(forbidden, -inf, scores)
  // with forbidden its negation: both a window of 5.
  for (bool forbids : {false, true}) {
    INFO((forbids ? "Where(forbidden, -inf, scores)" : "Where(allowed, scores, -inf)"));
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    *n.g->add_initializer() = grid("band", 8, onnx::TensorProto::BOOL, [&](int64_t i, int64_t j) {
      bool allowed = i - j >= 0 && i - j < 5;
      return allowed != forbids ? 1.0 : 0.0;
    });
    n.init("neg_inf", {}, kFloat);
    std::string q = n.split_heads(n.linear("x", "q", 64, 64), "q", 4, 16, {0, 2, 1, 3});
    std::string k = n.split_heads(n.linear("x", "k", 64, 64), "k", 4, 16, {0, 2, 3, 1});
    std::string v = n.split_heads(n.linear("x", "v", 64, 64), "v", 4, 16, {0, 2, 1, 3});
    n.op("MatMul", {q, k}, "scores");
    if (forbids) n.op("Where", {"band", "neg_inf", "scores"}, "masked");
    else n.op("Where", {"band", "scores", "neg_inf"}, "masked");
    testutil::attr_int(n.op("Softmax", {"masked"}, "probs"), "axis", -1);
    n.op("MatMul", {"probs", v}, "context");
    n.output(n.linear(n.reshape(n.transpose("context", {0, 2, 1, 3}, "context_t"), {0, 0, 64}, "context_r"), "o", 64, 64));
    auto r = testutil::audited(n.m);
    REQUIRE(r->audit.attention.blocks.size() == 1);
    CHECK(r->audit.attention.blocks[0].window == 5);
    CHECK(r->audit.cost.kv_bytes_at_context == 512 * 5);  // 512 bytes per token, 5 kept
  }
}

TEST_CASE("GroupQueryAttention's local_window_size is its window: the token and that many before it", "[architectures]") {
  // onnxruntime's kernel lets query i see keys i - local_window_size ... i: local_window_size 8
  // is a window of 9 tokens. num_heads 4, kv_num_heads 2, head size 16, float32: K/V per token
  // 2 x (16 + 16) x 4 = 256 bytes; at 4,096 tokens 256 x 9 = 2,304; without the window
  // 256 x 4,096 = 1,048,576: 1,046,272 saved. And local_window_size -1 is no window.
  for (int64_t lws : {int64_t{8}, int64_t{-1}}) {
    INFO("local_window_size " << lws);
    GraphBuilder n;
    n.input("query", {-1, -1, 64});
    n.input("key", {-1, -1, 32});
    n.input("value", {-1, -1, 32});
    n.input("seqlens_k", {-1}, onnx::TensorProto::INT32);
    n.input("total_sequence_length", {}, onnx::TensorProto::INT32);
    auto* gqa = testutil::node(n.g, "GroupQueryAttention", {"query", "key", "value", "", "", "seqlens_k", "total_sequence_length"},
                               {"out"}, "gqa", "com.microsoft");
    testutil::attr_int(gqa, "num_heads", 4);
    testutil::attr_int(gqa, "kv_num_heads", 2);
    testutil::attr_int(gqa, "local_window_size", lws);
    n.output("out");
    auto r = testutil::audited(n.m);
    const Audit& a = r->audit;
    REQUIRE(a.attention.blocks.size() == 1);
    const AttentionBlock& b = a.attention.blocks[0];
    if (lws < 0) {
      CHECK_FALSE(b.window);
      CHECK(a.cost.kv_bytes_at_context == 1048576);
      continue;
    }
    CHECK(b.window == 9);
    CHECK(b.window_from ==
          "attribute local_window_size 8 of GroupQueryAttention 'gqa': each query attends to itself and the 8 before it");
    CHECK(a.cost.kv_bytes_at_context == 2304);
    CHECK(a.cost.kv_window_saved_bytes == 1046272);
  }
}

TEST_CASE("constants the exporter computed in forward are not parameters: -exp(A_log), a 0/1 triangle", "[architectures][mixers]") {
  // A_log [4, 3] (12 elements, a parameter read by Exp), and beside it the stored constant
  // [1, 4, 3] holding -exp(A_log) element for element, as an exporter folds A = -exp(A_log); and
  // a 0/1 lower-triangular [5, 5] read by MatMul (a cumulative sum written as a product). Neither
  // constant is a second parameter: stored 12 + 12 + 25 + the projection 4 x 4 = 65, framework
  // 12 + 16 = 28.
  GraphBuilder n;
  n.input("x", {1, 5, 4});
  std::vector<float> a_log(12);
  for (size_t i = 0; i < a_log.size(); ++i) a_log[i] = 0.1f * static_cast<float>(i) - 0.3f;
  onnx::TensorProto a = testutil::tensor("A_log", {4, 3}, kFloat, true);
  a.set_raw_data(std::string(reinterpret_cast<const char*>(a_log.data()), a_log.size() * 4));
  *n.g->add_initializer() = a;
  std::vector<float> folded(12);
  for (size_t i = 0; i < folded.size(); ++i) folded[i] = -std::exp(a_log[i]);
  onnx::TensorProto f = testutil::tensor("A_folded", {1, 4, 3}, kFloat, true);
  f.set_raw_data(std::string(reinterpret_cast<const char*>(folded.data()), folded.size() * 4));
  *n.g->add_initializer() = f;
  *n.g->add_initializer() = grid("tri", 5, kFloat, [](int64_t i, int64_t j) { return j <= i ? 1.0 : 0.0; });
  n.g->mutable_initializer(n.g->initializer_size() - 1)->clear_dims();
  n.g->mutable_initializer(n.g->initializer_size() - 1)->add_dims(5);
  n.g->mutable_initializer(n.g->initializer_size() - 1)->add_dims(5);
  n.op("Exp", {"A_log"}, "A_exp");
  n.op("Mul", {"A_exp", "A_folded"}, "decay");
  std::string h = n.linear("x", "proj", 4, 4, false);
  n.op("MatMul", {"tri", h}, "cumulative");  // [5, 5] x [1, 5, 4]: the running sum over positions
  n.output("decay");
  n.output("cumulative");
  auto r = testutil::audited(n.m);
  const Audit& a_ = r->audit;
  CHECK(a_.inventory.stored == 65);
  CHECK(a_.framework.parameters == 28);
  std::map<std::string, std::string> reasons;
  for (const auto& b : a_.framework.buffers) reasons[std::string(a_.model.weights[static_cast<size_t>(b.weight)].name)] = b.reason;
  CHECK(reasons["A_folded"] == "a constant the exporter computed from the parameter 'A_log' (-exp of it, folded out of forward): "
                               "not a second parameter");
  CHECK(reasons["tri"] == "a causal mask: 0/1 lower-triangular over the last two axes");
}

TEST_CASE("linear attention in a model without norms: each x + layer(x) is a mixer of its own", "[architectures][mixers]") {
  // Issue 37, item 10 (tests/fuzz/make_cases_match.py): three causal linear-attention layers
  // (elu + 1, CumSums, no Softmax) and one softmax layer, width 32, 4 heads of 8, each
  // x = x + layer(x) with no norm and no MLP. Each layer's q, k, v and o are 32 · 32 + 32 = 1,056:
  // 4,224 a layer, 16,896 in all. A linear layer's state: 4 · 8 · 8 (Σ φ(k)vᵀ) + 4 · 8 (Σ φ(k)) =
  // 288 elements, 1,152 bytes of float32.
  Audit a = audit_file(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions/match-linear-attention-without-norms.onnx");
  CHECK(a.framework.parameters == 16896u);
  REQUIRE(a.attention.blocks.size() == 1);
  CHECK(a.attention.blocks[0].total == 4224u);
  CHECK(a.mixers.notes.empty());
  REQUIRE(a.mixers.mixers.size() == 3);
  for (const Mixer& mx : a.mixers.mixers) {
    INFO("mixer " << mx.index);
    CHECK(mx.kind == MixerKind::LinearAttention);
    CHECK(mx.total == 4224u);
    CHECK(mx.tensors.size() == 8);  // 4 weights and 4 biases
    CHECK(mx.state_elements == std::optional<uint64_t>(288));
  }
  CHECK(a.composition.mixers == 3 * 4224u);
  CHECK(a.composition.attention == 4224u);
  CHECK(a.composition.feed_forward == 0u);
  CHECK(a.composition.other == 0u);
  CHECK(a.cost.state_bytes == 3 * 1152u);  // --batch 1
}
