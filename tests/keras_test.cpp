// keras_test.cpp: Keras MultiHeadAttention as tf2onnx writes it, with Einsum projections whose
// kernels keep heads as an axis. Expected numbers follow Keras' own layout: query/key/value kernels
// [d, h, key_dim] with biases [h, key_dim], output kernel [h, key_dim, d] with bias [d].
#include <catch2/catch.hpp>

#include "headcount/audit.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;

namespace {

onnx::NodeProto* einsum(onnx::GraphProto* g, const std::string& eq, std::vector<std::string> in, const std::string& out) {
  auto* n = testutil::node(g, "Einsum", std::move(in), {out}, out);
  auto* a = n->add_attribute();
  a->set_name("equation");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(eq);
  return n;
}

// One Keras MultiHeadAttention(num_heads=h, key_dim=k) on x [1, 5, d], self-attention.
onnx::ModelProto keras_mha(int64_t d, int64_t h, int64_t k) {
  testutil::GraphBuilder n;
  n.input("x", {1, 5, d});
  for (const char* role : {"query", "key", "value"}) {
    std::string r = role;
    n.init("mha/" + r + "/kernel", {d, h, k});
    n.init("mha/" + r + "/bias", {h, k});
    einsum(n.g, "abc,cde->abde", {"x", "mha/" + r + "/kernel"}, r + "_proj");
    testutil::node(n.g, "Add", {r + "_proj", "mha/" + r + "/bias"}, {r}, r + "_bias");
  }
  n.init("scale", {});
  n.op("Mul", {"query", "scale"}, "query_scaled");
  einsum(n.g, "aecd,abcd->acbe", {"key", "query_scaled"}, "scores");
  testutil::attr_int(testutil::node(n.g, "Softmax", {"scores"}, {"probs"}, "softmax"), "axis", -1);
  einsum(n.g, "acbe,aecd->abcd", {"probs", "value"}, "context");
  n.init("mha/attention_output/kernel", {h, k, d});
  n.init("mha/attention_output/bias", {d});
  einsum(n.g, "abcd,cde->abe", {"context", "mha/attention_output/kernel"}, "out_proj");
  testutil::node(n.g, "Add", {"out_proj", "mha/attention_output/bias"}, {"y"}, "out_bias");
  return n.m;
}

}  // namespace

TEST_CASE("Keras MultiHeadAttention with key_dim = width / heads is the standard block", "[keras]") {
  auto r = testutil::audited(keras_mha(64, 4, 16));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.kind == "self");
  CHECK(*b.heads == 4);
  CHECK(*b.head_dim == 16);
  CHECK(*b.v_head_dim == 16);
  CHECK(b.width == 64);
  // query kernel [64, 4, 16] = 4,096 and bias [4, 16] = 64; key and value the same
  for (Role role : {Role::Q, Role::K, Role::V}) {
    CHECK(b.projection(role).weight == 4096);
    CHECK(b.projection(role).bias == 64);
  }
  // output kernel [4, 16, 64] = 4,096, bias [64]
  CHECK(b.o.weight == 4096);
  CHECK(b.o.bias == 64);
  // 4 x 4,160 = 16,640 = 4·64² + 4·64
  CHECK(b.total == 16640);
  CHECK(b.standard == 16640);
  CHECK(b.heads_from == "the Q projection's Einsum weight keeps 4 heads × 16 as separate axes");
  for (const auto& f : a.findings) CHECK(f.rule != "width-mismatch");
}

TEST_CASE("Keras key_dim set to the width multiplies the block by the heads (keras#18373)", "[keras]") {
  auto r = testutil::audited(keras_mha(64, 4, 64));
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(*b.heads == 4);
  CHECK(*b.head_dim == 64);
  // query/key/value: kernel [64, 4, 64] = 16,384 + bias [4, 64] = 256 -> 16,640 each
  // output: kernel [4, 64, 64] = 16,384 + bias 64 = 16,448
  // total 3 x 16,640 + 16,448 = 66,368, against the standard 16,640 (398.8%)
  CHECK(b.q.total() == 16640);
  CHECK(b.o.total() == 16448);
  CHECK(b.total == 66368);
  bool flagged = false;
  for (const auto& f : a.findings) {
    if (f.rule != "width-mismatch") continue;
    flagged = true;
    CHECK_THAT(f.message, Catch::Contains("Q/K project 64 → 256 (4 heads × 64) instead of 64"));
    CHECK_THAT(f.message, Catch::Contains("66,368 parameters, 398.8% of the standard 16,640"));
    CHECK_THAT(f.message, Catch::Contains("key_dim = 64 / 4 = 16"));
  }
  CHECK(flagged);
}
