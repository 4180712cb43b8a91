// wild_graphs_test.cpp: graphs as 2026's exporters write them that headcount miscounted (issue 37,
// items 8, 9, 11 and 13): a mask cut by Trilu from a filled constant, q_norm and k_norm merged
// into one initializer, a Reshape target made of Casts, and the small constants a DistilBERT-style
// graph compares and divides by. Every expected count is worked by hand in the comment beside it.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "headcount/audit.h"

using namespace headcount;
using testutil::GraphBuilder;

namespace {

// A Constant node [n] named `out` of int32 or float32 values (paddle2onnx writes its shape pieces
// as either, and casts them to int64).
std::string constant(GraphBuilder& n, const std::string& out, std::vector<int32_t> values, int32_t type) {
  onnx::TensorProto t;
  t.set_data_type(type);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int32_t v : values) {
    if (type == onnx::TensorProto::FLOAT) t.add_float_data(static_cast<float>(v));
    else t.add_int32_data(v);
  }
  testutil::constant(n.g, out, t);
  return out;
}

std::string cast(GraphBuilder& n, const std::string& x, const std::string& out, int32_t to = onnx::TensorProto::INT64) {
  testutil::attr_int(n.op("Cast", {x}, out), "to", to);
  return out;
}

// A float initializer of `dims` holding `values` (float32, raw).
std::string floats(GraphBuilder& n, const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
  onnx::TensorProto t = testutil::tensor(name, std::move(dims));
  REQUIRE(t.raw_data().size() == values.size() * 4);
  std::string raw(values.size() * 4, '\0');
  std::memcpy(&raw[0], values.data(), raw.size());
  t.set_raw_data(raw);
  *n.g->add_initializer() = t;
  return name;
}

// scores -> Mul(scale) -> Softmax -> MatMul(., v) -> Transpose -> Reshape [0, 0, width] -> the
// output projection o (width x width + width); returns its output.
std::string core_and_output(GraphBuilder& n, const std::string& q, const std::string& kt, const std::string& v, int64_t width) {
  n.op("MatMul", {q, kt}, "scores");
  n.init("scale", {}, onnx::TensorProto::FLOAT);
  n.op("Mul", {"scores", "scale"}, "scaled");
  testutil::attr_int(n.op("Softmax", {"scaled"}, "probs"), "axis", -1);
  n.op("MatMul", {"probs", v}, "context");
  std::string merged = n.reshape(n.transpose("context", {0, 2, 1, 3}, "context_t"), {0, 0, width}, "context_r");
  return n.linear(merged, "o", width, width);
}

}  // namespace

TEST_CASE("a Reshape target of Casts of constants and of the sequence length states the heads", "[wild]") {
  // paddle2onnx (issue 37, item 11): x [1, L, 120] -> packed Q/K/V [120, 360] + bias [360] ->
  // Reshape to Concat(Cast(Constant 0), Cast(Slice(Shape(x), 1, 2)), Cast(Constant 3),
  // Cast(Constant 8), Cast(Constant 15)) = [0, L, 3, 8, 15], the pieces int32 (or float) Constants
  // -> Transpose to [3, B, 8, L, 15] -> Slice [i, i + 1) of axis 0 + Squeeze give Q, K, V. The head
  // size is the target's last element, 15, whatever the length of Slice(Shape(x)): 120 / 15 = 8
  // heads. Each role takes a third: weight 120 x 120 = 14,400, bias 120; O 120 x 120 + 120.
  const int32_t type = GENERATE(onnx::TensorProto::INT32, onnx::TensorProto::FLOAT);
  const bool rank_known = GENERATE(true, false);
  INFO("the pieces are Constants of type " << type << "; x's rank " << (rank_known ? "declared" : "unknown"));
  GraphBuilder n;
  if (rank_known) {
    n.input("x", {1, -1, 120});
  } else {  // x declared without a shape: Shape(x), and so the Slice of it, has no known length
    auto* in = n.g->add_input();
    in->set_name("x");
    in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  std::string qkv = n.linear("x", "qkv", 120, 360);
  n.op("Shape", {"x"}, "shape");
  n.op("Slice", {"shape", n.ints({1}), n.ints({2}), n.ints({0})}, "seq");
  std::vector<std::string> pieces = {cast(n, constant(n, "c0", {0}, type), "c0_i64"), cast(n, "seq", "seq_i64"),
                                     cast(n, constant(n, "c3", {3}, type), "c3_i64"),
                                     cast(n, constant(n, "c8", {8}, type), "c8_i64"),
                                     cast(n, constant(n, "c15", {15}, type), "c15_i64")};
  testutil::attr_int(n.op("Concat", pieces, "target"), "axis", 0);
  n.op("Reshape", {qkv, "target"}, "qkv5");
  n.transpose("qkv5", {2, 0, 3, 1, 4}, "qkv_t");
  const char* role[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::string picked = std::string(role[i]) + "5";
    n.op("Slice", {"qkv_t", n.ints({i}), n.ints({i + 1}), n.ints({0})}, picked);
    n.op("Squeeze", {picked, n.ints({0})}, role[i]);
  }
  n.transpose("k", {0, 1, 3, 2}, "k_t");
  n.output(core_and_output(n, "q", "k_t", "v", 120));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.heads == 8);
  CHECK(b.head_dim == 15);
  CHECK(b.heads_from == std::string("head size 15 from Reshape 'qkv5' target ") +
                            (rank_known ? "[0, ?, 3, 8, 15]" : "[..., 3, 8, 15]") + " on the Q path; 120 / 15 = 8 heads");
  CHECK(b.q.weight == 14400);  // 120 x 120: a third of 360 columns
  CHECK(b.q.bias == 120);
  CHECK(b.k.weight == 14400);
  CHECK(b.v.weight == 14400);
  CHECK(b.o.total() == 14520);  // 120 x 120 + 120
  CHECK(b.total == 4 * 14520);
}

namespace {

// x [1, S, 64] -> one block of 4 heads of 16 with biases (4 x (64 x 64 + 64) = 16,640 parameters)
// whose scaled scores get `mask` added; the score scale sqrt_dk is a [1] tensor holding 4 = √16
// (a constant of arithmetic, not a parameter). Returns the audit.
std::unique_ptr<testutil::Audited> block_with_mask(GraphBuilder& n, int64_t seq, const std::string& mask) {
  n.input("x", {1, seq, 64});
  n.shared.insert("sqrt_dk");
  floats(n, "sqrt_dk", {1}, {4.0f});
  testutil::LayerSpec spec;
  spec.mask = mask;
  n.output(n.layer("x", "layer0", spec));
  return testutil::audited(n.m);
}

std::vector<std::string> buffer_names(const Audit& a) {
  std::vector<std::string> out;
  for (const auto& b : a.framework.buffers) out.emplace_back(a.model.weights[static_cast<size_t>(b.weight)].name);
  return out;
}

std::string scalar_constant_node(GraphBuilder& n, const std::string& out, float v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(v);
  testutil::constant(n.g, out, t);
  return out;
}

}  // namespace

TEST_CASE("a filled constant that Trilu cuts into a mask is a buffer, not a parameter", "[wild]") {
  // Issue 37, item 8. torch.triu(torch.full((5, 5), -1e9), 1) as a buffer: a [1, 1, 5, 5] constant
  // of -1e9 (25 elements) read by Trilu (upper, k = 1), added to the scores. The model stores the
  // block's 16,640, the scale's 1 and the fill's 25: 16,666; the framework counts 16,640.
  SECTION("torch.triu(torch.full(.., -1e9), 1)") {
    GraphBuilder n;
    floats(n, "fill", {1, 1, 5, 5}, std::vector<float>(25, -1e9f));
    n.op("Trilu", {"fill", n.ints({1}, true)}, "causal");
    auto r = block_with_mask(n, 5, "causal");
    const Audit& a = r->audit;
    CHECK(a.inventory.stored == 16666);
    CHECK(a.framework.parameters == 16640);
    REQUIRE(buffer_names(a) == std::vector<std::string>{"fill"});
    CHECK(a.framework.buffers[0].reason ==
          "a constant of -1e+09s that Trilu 'causal' cuts a triangle from (a mask built in forward, as torch.triu or tril "
          "of a filled tensor exports)");
  }
  SECTION("torch.where(torch.ones(5, 5).tril().bool(), 0, -1e9)") {
    // ones [5, 5] (25) -> Trilu (lower) -> Cast to bool -> Where(., 0, -1e9), both Constant nodes
    // of rank 0 (not parameters): stored 16,640 + 1 + 25 = 16,666, framework 16,640.
    GraphBuilder n;
    floats(n, "ones", {5, 5}, std::vector<float>(25, 1.0f));
    testutil::attr_int(n.op("Trilu", {"ones"}, "tril"), "upper", 0);
    cast(n, "tril", "allowed", onnx::TensorProto::BOOL);
    n.op("Where", {"allowed", scalar_constant_node(n, "zero", 0), scalar_constant_node(n, "neg", -1e9f)}, "causal");
    auto r = block_with_mask(n, 5, "causal");
    CHECK(r->audit.inventory.stored == 16666);
    CHECK(r->audit.framework.parameters == 16640);
    CHECK(buffer_names(r->audit) == std::vector<std::string>{"ones"});
  }
  SECTION("a filled tensor that is not a mask's value, or that a product also reads, stays a parameter") {
    // 0.02 everywhere (a learned matrix at its start) cut by Trilu: stored 16,666, all of them
    // parameters but the scale: 16,665.
    GraphBuilder n;
    floats(n, "fill", {1, 1, 5, 5}, std::vector<float>(25, 0.02f));
    n.op("Trilu", {"fill", n.ints({1}, true)}, "causal");
    auto r = block_with_mask(n, 5, "causal");
    CHECK(r->audit.framework.parameters == 16665);
    CHECK(r->audit.framework.buffers.empty());
  }
}

TEST_CASE("q_norm and k_norm merged into one initializer are two uses in each block", "[wild]") {
  // Issue 37, item 9. Two blocks, each x [1, 5, 64] -> Q, K, V, O of 64 x 64 + 64 (16,640), Q and K
  // split into 4 heads of 16 and normalized over head_dim by LayerNormalization whose scale is the
  // one initializer 'qk_norm' [16] of both norms of both blocks. Each block owns a q_norm and a
  // k_norm: extras 16 + 16 = 32, total 16,640 + 32 = 16,672. The file stores qk_norm once:
  // attention 2 x 16,640 + 16 = 33,296.
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.init("qk_norm", {16});
  std::string x = "x";
  for (const std::string p : {"layer0", "layer1"}) {
    auto normed = [&](const std::string& role, std::vector<int64_t> perm) {
      std::string split = n.reshape(n.linear(x, p + "." + role, 64, 64), {0, 0, 4, 16}, p + "/" + role + "/Reshape");
      testutil::attr_int(n.op("LayerNormalization", {split, "qk_norm"}, p + "/" + role + "_norm"), "axis", -1);
      return n.transpose(p + "/" + role + "_norm", std::move(perm), p + "/" + role + "/Transpose");
    };
    std::string q = normed("q", {0, 2, 1, 3}), k = normed("k", {0, 2, 3, 1});
    std::string v = n.split_heads(n.linear(x, p + ".v", 64, 64), p + "/v", 4, 16, {0, 2, 1, 3});
    x = n.linear(n.core(q, k, v, p, 64), p + ".o", 64, 64);
  }
  n.output(x);
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 2);
  for (const auto& b : a.attention.blocks) {
    INFO("block " << b.index);
    REQUIRE(b.extras.size() == 2);
    CHECK(b.extras[0].role == ExtraRole::QNorm);
    CHECK(b.extras[1].role == ExtraRole::KNorm);
    CHECK(b.extras[0].elements + b.extras[1].elements == 32);
    CHECK(b.total == 16672);
    CHECK(b.overclaimed.empty());
  }
  CHECK(a.attention.parameters == 33296);
}

TEST_CASE("a mask compared with 0 and a [1] divisor of a DistilBERT-style block are not parameters", "[wild]") {
  // Issue 37, item 13. x [1, 3, 64] -> one block of 16,640 (as above) whose scores are divided
  // by the [1] tensor sqrt_dk = 4 and masked as DistilBERT does: the attention mask [1, 3] (traced
  // into the graph as an initializer, 3 elements) == 0 (an initializer [], 1 element) -> Where(., -1e9,
  // 0) -> Reshape [1, 1, 1, 3] added to the scores. A comparison passes no gradient: the mask and
  // its 0 are not trained. Stored 16,640 + 1 + 3 + 1 = 16,645; buffers 3 + 1; the divisor a
  // constant; framework 16,640.
  GraphBuilder n;
  floats(n, "attention_mask", {1, 3}, {1.0f, 1.0f, 0.0f});
  floats(n, "zero", {}, {0.0f});
  n.op("Equal", {"attention_mask", "zero"}, "padding");
  n.op("Where", {"padding", scalar_constant_node(n, "neg", -1e9f), scalar_constant_node(n, "none", 0)}, "mask2d");
  n.reshape("mask2d", {1, 1, 1, 3}, "mask");
  auto r = block_with_mask(n, 3, "mask");
  const Audit& a = r->audit;
  CHECK(a.inventory.stored == 16645);
  CHECK(a.framework.parameters == 16640);
  REQUIRE(buffer_names(a) == std::vector<std::string>{"attention_mask", "zero"});
  CHECK(a.framework.buffers[0].reason ==
        "only compared, by Equal 'padding': a comparison's boolean output passes no gradient, so training never changes it");
  REQUIRE(a.framework.constants.size() == 1);
  CHECK(a.model.weights[static_cast<size_t>(a.framework.constants[0].weight)].name == "sqrt_dk");
}

TEST_CASE("a tensor compared and also added to stays a parameter", "[wild]") {
  // The same block, but the mask [1, 3] is also added to the scores (a gradient reaches it):
  // stored 16,640 + 1 + 3 = 16,644; only the divisor is set aside: framework 16,643.
  GraphBuilder n;
  floats(n, "attention_mask", {1, 3}, {1.0f, 1.0f, 0.0f});
  n.op("Equal", {"attention_mask", n.ints({0})}, "padding");  // an int64 0: no parameter
  n.op("Add", {"attention_mask", "attention_mask"}, "twice");
  n.reshape("twice", {1, 1, 1, 3}, "mask");
  auto r = block_with_mask(n, 3, "mask");
  CHECK(r->audit.inventory.stored == 16644);
  CHECK(r->audit.framework.parameters == 16643);
  CHECK(r->audit.framework.buffers.empty());
}

namespace {

Audit regression(const std::string& name) {
  return audit_file(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions/" + name, AuditOptions());
}

}  // namespace

TEST_CASE("the regression files of issue 37's graphs count as their writer works them out", "[wild]") {
  // tests/fuzz/make_cases_wild_graphs.py writes each; its docstrings work the figures by hand.
  SECTION("item 8: a [8, 8] fill of -1e9 cut by Trilu, added in two blocks of 4,224") {
    Audit a = regression("wild-trilu-of-a-filled-mask.onnx");
    CHECK(a.inventory.stored == 8513);
    CHECK(a.framework.parameters == 8448);
    CHECK(buffer_names(a) == std::vector<std::string>{"mask_fill"});
    CHECK(a.framework.buffer_elements == 64);
  }
  SECTION("item 9: one qk_norm [8] read by both norms of two blocks") {
    Audit a = regression("wild-q-and-k-norm-merged.onnx");
    CHECK(a.inventory.stored == 8457);
    CHECK(a.framework.parameters == 8480);
    REQUIRE(a.attention.blocks.size() == 2);
    for (const auto& b : a.attention.blocks) {
      REQUIRE(b.extras.size() == 2);
      CHECK(b.extras[0].elements + b.extras[1].elements == 16);
      CHECK(b.total == 4240);
    }
    CHECK(a.attention.parameters == 8456);  // 2 x 4,224 + the one stored qk_norm
  }
  SECTION("item 11: paddle2onnx's target of Casts over an x of unknown rank") {
    Audit a = regression("wild-reshape-target-of-casts.onnx");
    REQUIRE(a.attention.blocks.size() == 1);
    const AttentionBlock& b = a.attention.blocks[0];
    CHECK(b.heads == 8);
    CHECK(b.heads_from == "head size 15 from Reshape 'qkv5' target [..., 3, 8, 15] on the Q path; 120 / 15 = 8 heads");
    CHECK(b.total == 58080);
  }
  SECTION("item 13: a traced attention mask compared with 0, and a [1] divisor") {
    Audit a = regression("wild-compared-mask-and-divisor.onnx");
    CHECK(a.inventory.stored == 4234);
    CHECK(a.framework.parameters == 4224);
    CHECK(buffer_names(a) == std::vector<std::string>{"attention_mask", "zero"});
    REQUIRE(a.framework.constants.size() == 1);
    CHECK(a.model.weights[static_cast<size_t>(a.framework.constants[0].weight)].name == "scale");
  }
  SECTION("item 14: a Concat of 30,000 inputs read by 2,000 MultiHeadAttention nodes") {
    // Each walk from a fused node stops at its budget of 512 visits inside the Concat, and says so;
    // once the graph's own allowance (2^16 + 64 per node) is spent, the rest are not searched.
    Audit a = regression("concat-30000-inputs-read-by-2000-fused.onnx");
    REQUIRE(a.attention.blocks.size() == 2000);
    const auto& first = a.attention.blocks.front().notes;
    REQUIRE_FALSE(first.empty());
    CHECK(first[0] == "Q projection not found: it was given up: the search for its projection visited more than 512 nodes");
    CHECK(a.attention.blocks.back().notes[0] ==
          "Q projection not found: it was not searched for: matching used up the node visits a graph of this size gets");
  }
}
