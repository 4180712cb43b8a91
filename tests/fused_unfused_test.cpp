// fused_unfused_test.cpp: the same small attention layer built twice, written out op by op and as
// the fused com.microsoft operator onnxruntime's optimizer would emit, must give the same block:
// heads, K/V heads, head sizes, width and every projection's weight and bias.
//
// The layer: x [1, 5, 64], 4 query heads of 16; K/V heads 4 (MHA) or 2 (GQA). Projections with
// biases: Q 64 -> 64 (4,096 + 64), K and V 64 -> h_kv·16 (64 x 64 + 64 = 4,160, or with 2 K/V
// heads 64 x 32 + 32 = 2,080), O 64 -> 64 (4,160). DOMAIN.md section 1 gives each.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph_builder.h"

using namespace headcount;
using testutil::GraphBuilder;

namespace {

constexpr int64_t kWidth = 64, kHeads = 4, kHead = 16;

// Op by op: projections, head split, (K/V tiled up to the query heads), scores, Softmax, weighted
// sum, merge, output projection.
onnx::ModelProto unfused(int64_t kv) {
  GraphBuilder n;
  n.input("x", {1, 5, kWidth});
  std::string q = n.linear("x", "q", kWidth, kHeads * kHead);
  std::string k = n.linear("x", "k", kWidth, kv * kHead);
  std::string v = n.linear("x", "v", kWidth, kv * kHead);
  q = n.transpose(n.reshape(q, {0, 0, kHeads, kHead}, "q/split"), {0, 2, 1, 3}, "q/heads");
  k = n.transpose(n.reshape(k, {0, 0, kv, kHead}, "k/split"), {0, 2, 3, 1}, "k/heads");
  v = n.transpose(n.reshape(v, {0, 0, kv, kHead}, "v/split"), {0, 2, 1, 3}, "v/heads");
  if (kv != kHeads) {
    k = n.op("Tile", {k, n.ints({1, kHeads / kv, 1, 1})}, "k/tiled")->output(0);
    v = n.op("Tile", {v, n.ints({1, kHeads / kv, 1, 1})}, "v/tiled")->output(0);
  }
  n.op("MatMul", {q, k}, "scores");
  n.init("scale", {}, onnx::TensorProto::FLOAT);
  n.op("Mul", {"scores", "scale"}, "scaled");
  testutil::attr_int(n.op("Softmax", {"scaled"}, "probs"), "axis", -1);
  n.op("MatMul", {"probs", v}, "context");
  std::string merged = n.reshape(n.transpose("context", {0, 2, 1, 3}, "context_t"), {0, 0, kHeads * kHead}, "merged");
  n.output(n.linear(merged, "o", kHeads * kHead, kWidth));
  return n.m;
}

// The output projection after a fused op's output.
onnx::ModelProto finish(GraphBuilder& n, onnx::NodeProto* op) {
  op->set_name("attn");
  n.output(n.linear(op->output(0), "o", kHeads * kHead, kWidth));
  return n.m;
}

// com.microsoft Attention: the packed weight [64, 192] and bias [192] inside the op.
onnx::ModelProto fused_attention() {
  GraphBuilder n;
  n.input("x", {1, 5, kWidth});
  auto* a = n.op("Attention", {"x", n.init("qkv.weight", {kWidth, 3 * kHeads * kHead}), n.init("qkv.bias", {3 * kHeads * kHead})},
                 "attn_out", "com.microsoft");
  testutil::attr_int(a, "num_heads", kHeads);
  return finish(n, a);
}

// com.microsoft MultiHeadAttention over projections upstream; the biases either as Adds after
// them or packed into input 3; optionally with past K/V caches in inputs 6 and 7.
onnx::ModelProto fused_mha(bool packed_bias, bool past) {
  GraphBuilder n;
  n.input("x", {1, 5, kWidth});
  std::vector<std::string> in;
  for (const char* role : {"q", "k", "v"}) in.push_back(n.linear("x", role, kWidth, kHeads * kHead, !packed_bias));
  in.push_back(packed_bias ? n.init("qkv.bias", {3 * kHeads * kHead}) : "");
  if (past) {
    n.input("past_key", {1, kHeads, 7, kHead});
    n.input("past_value", {1, kHeads, 7, kHead});
    in.insert(in.end(), {"", "", "past_key", "past_value"});
  }
  auto* a = n.op("MultiHeadAttention", in, "attn_out", "com.microsoft");
  testutil::attr_int(a, "num_heads", kHeads);
  return finish(n, a);
}

// com.microsoft GroupQueryAttention: separate projections, or one packed [64, 64 + 2·32] query.
onnx::ModelProto fused_gqa(int64_t kv, bool packed_query) {
  GraphBuilder n;
  n.input("x", {1, 5, kWidth});
  n.input("past_key", {1, kv, 7, kHead});
  n.input("past_value", {1, kv, 7, kHead});
  n.input("seqlens_k", {1}, onnx::TensorProto::INT32);
  n.input("total_sequence_length", {}, onnx::TensorProto::INT32);
  std::vector<std::string> in;
  if (packed_query) {
    in = {n.linear("x", "qkv", kWidth, (kHeads + 2 * kv) * kHead), "", ""};
  } else {
    in = {n.linear("x", "q", kWidth, kHeads * kHead), n.linear("x", "k", kWidth, kv * kHead),
          n.linear("x", "v", kWidth, kv * kHead)};
  }
  in.insert(in.end(), {"past_key", "past_value", "seqlens_k", "total_sequence_length"});
  auto* a = n.op("GroupQueryAttention", in, "attn_out", "com.microsoft");
  testutil::attr_int(a, "num_heads", kHeads);
  testutil::attr_int(a, "kv_num_heads", kv);
  return finish(n, a);
}

// com.microsoft PackedAttention (tokens packed without padding: x [tokens, 64]) and QAttention
// (int8 input and weight with scales): the packed weight inside the op, like Attention.
onnx::ModelProto fused_packed_attention(const std::string& type) {
  GraphBuilder n;
  std::vector<std::string> in;
  if (type == "PackedAttention") {
    n.input("x", {-1, kWidth});
    n.input("token_offset", {1, 5}, onnx::TensorProto::INT32);
    n.input("cumulative_sequence_length", {2}, onnx::TensorProto::INT32);
    in = {"x", n.init("qkv.weight", {kWidth, 192}), n.init("qkv.bias", {192}), "token_offset", "cumulative_sequence_length"};
  } else {  // QAttention
    n.input("x", {1, 5, kWidth}, onnx::TensorProto::INT8);
    in = {"x", n.init("qkv.weight", {kWidth, 192}, onnx::TensorProto::INT8), n.init("qkv.bias", {192}),
          n.init("input_scale", {}), n.init("weight_scale", {})};
  }
  auto* a = n.op(type, in, "attn_out", "com.microsoft");
  testutil::attr_int(a, "num_heads", kHeads);
  return finish(n, a);
}

// Operators fed by projections upstream, with the biases as Adds after them: GQA's relatives
// (SparseAttention, PagedAttention), and the ONNX operator with 3-D inputs and head attributes.
onnx::ModelProto fused_upstream(const std::string& domain, const std::string& type, int64_t kv) {
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(23);
  n.input("x", {1, 5, kWidth});
  std::vector<std::string> in = {n.linear("x", "q", kWidth, kHeads * kHead), n.linear("x", "k", kWidth, kv * kHead),
                                 n.linear("x", "v", kWidth, kv * kHead)};
  if (type == "SparseAttention") {
    n.input("past_key", {1, kv, 16, kHead});
    n.input("past_value", {1, kv, 16, kHead});
    in.insert(in.end(), {"past_key", "past_value"});
  } else if (type == "PagedAttention") {
    n.input("key_cache", {8, 16, kv, kHead});
    n.input("value_cache", {8, 16, kv, kHead});
    in.insert(in.end(), {"key_cache", "value_cache"});
  }
  auto* a = n.op(type, in, "attn_out", domain);
  testutil::attr_int(a, domain.empty() ? "q_num_heads" : "num_heads", kHeads);
  testutil::attr_int(a, "kv_num_heads", kv);
  return finish(n, a);
}

// The ONNX operator with 4-D inputs and no head attributes: the heads are in the Reshapes upstream.
onnx::ModelProto fused_onnx_4d() {
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(23);
  n.input("x", {1, 5, kWidth});
  std::vector<std::string> in;
  for (const char* role : {"q", "k", "v"}) {
    std::string y = n.linear("x", role, kWidth, kHeads * kHead);
    in.push_back(n.transpose(n.reshape(y, {0, 0, kHeads, kHead}, std::string(role) + "/split"), {0, 2, 1, 3},
                             std::string(role) + "/heads"));
  }
  auto* a = n.op("Attention", in, "attn4");
  a->set_name("attn");
  std::string merged = n.reshape(n.transpose("attn4", {0, 2, 1, 3}, "attn_t"), {0, 0, kHeads * kHead}, "attn_out");
  n.output(n.linear(merged, "o", kHeads * kHead, kWidth));
  return n.m;
}

// com.microsoft DecoderMaskedMultiHeadAttention (packed bias in input 10) and
// PackedMultiHeadAttention (packed bias in input 3, tokens packed).
onnx::ModelProto fused_decoder_or_packed_mha(const std::string& type) {
  GraphBuilder n;
  bool packed = type == "PackedMultiHeadAttention";
  n.input("x", packed ? std::vector<int64_t>{-1, kWidth} : std::vector<int64_t>{1, 1, kWidth});
  std::vector<std::string> in;
  for (const char* role : {"q", "k", "v"}) in.push_back(n.linear("x", role, kWidth, kHeads * kHead, false));
  std::string bias = n.init("qkv.bias", {192});
  if (packed) {
    n.input("token_offset", {1, 5}, onnx::TensorProto::INT32);
    n.input("cumulative_sequence_length", {2}, onnx::TensorProto::INT32);
    in.insert(in.end(), {bias, "token_offset", "cumulative_sequence_length"});
  } else {
    in.insert(in.end(), {"", "", "", "", "", "", "", bias});
  }
  auto* a = n.op(type, in, "attn_out", "com.microsoft");
  testutil::attr_int(a, "num_heads", kHeads);
  return finish(n, a);
}

void same_block(const onnx::ModelProto& fused, const onnx::ModelProto& reference, int64_t kv) {
  auto f = testutil::matched(fused);
  auto u = testutil::matched(reference);
  REQUIRE(f->result.blocks.size() == 1);
  REQUIRE(u->result.blocks.size() == 1);
  const AttentionBlock& a = f->result.blocks[0];
  const AttentionBlock& b = u->result.blocks[0];
  CHECK(b.form == "unfused");
  CHECK(a.heads == kHeads);
  CHECK(b.heads == kHeads);
  CHECK(a.kv_heads == kv);
  CHECK(b.kv_heads == kv);
  CHECK(a.head_dim == kHead);
  CHECK(b.head_dim == kHead);
  CHECK(a.v_head_dim == kHead);
  CHECK(b.v_head_dim == kHead);
  CHECK(a.width == kWidth);
  CHECK(b.width == kWidth);
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    INFO("projection " << role_name(r));
    CHECK(a.projection(r).weight == b.projection(r).weight);
    CHECK(a.projection(r).bias == b.projection(r).bias);
  }
  // Q 4,096 + 64; K and V 64·(16·h_kv) + 16·h_kv each; O 4,096 + 64.
  uint64_t kv_width = static_cast<uint64_t>(kv * kHead);
  CHECK(a.q.total() == 4160);
  CHECK(a.k.total() == 64 * kv_width + kv_width);
  CHECK(a.v.total() == 64 * kv_width + kv_width);
  CHECK(a.o.total() == 4160);
  CHECK(a.total == b.total);
  CHECK(a.total == 2 * 4160 + 2 * (64 * kv_width + kv_width));
}

}  // namespace

TEST_CASE("fused = unfused: com.microsoft Attention", "[fused-unfused]") { same_block(fused_attention(), unfused(4), 4); }

TEST_CASE("fused = unfused: MultiHeadAttention with biases after the projections", "[fused-unfused]") {
  same_block(fused_mha(false, false), unfused(4), 4);
}

TEST_CASE("fused = unfused: MultiHeadAttention with the packed bias in input 3", "[fused-unfused]") {
  same_block(fused_mha(true, false), unfused(4), 4);
}

TEST_CASE("fused = unfused: MultiHeadAttention with a packed bias and past K/V", "[fused-unfused]") {
  same_block(fused_mha(true, true), unfused(4), 4);
}

TEST_CASE("fused = unfused: GroupQueryAttention, 4 heads over 2 K/V heads", "[fused-unfused]") {
  same_block(fused_gqa(2, false), unfused(2), 2);
}

TEST_CASE("fused = unfused: GroupQueryAttention with one packed query", "[fused-unfused]") {
  same_block(fused_gqa(2, true), unfused(2), 2);
}

TEST_CASE("fused = unfused: GroupQueryAttention as plain multi-head attention", "[fused-unfused]") {
  same_block(fused_gqa(4, false), unfused(4), 4);
}

TEST_CASE("fused = unfused: PackedAttention and QAttention", "[fused-unfused]") {
  same_block(fused_packed_attention("PackedAttention"), unfused(4), 4);
  same_block(fused_packed_attention("QAttention"), unfused(4), 4);
}

TEST_CASE("fused = unfused: DecoderMaskedMultiHeadAttention and PackedMultiHeadAttention", "[fused-unfused]") {
  same_block(fused_decoder_or_packed_mha("DecoderMaskedMultiHeadAttention"), unfused(4), 4);
  same_block(fused_decoder_or_packed_mha("PackedMultiHeadAttention"), unfused(4), 4);
}

TEST_CASE("fused = unfused: SparseAttention and PagedAttention", "[fused-unfused]") {
  same_block(fused_upstream("com.microsoft", "SparseAttention", 2), unfused(2), 2);
  same_block(fused_upstream("com.microsoft", "PagedAttention", 2), unfused(2), 2);
}

TEST_CASE("fused = unfused: ONNX Attention with 3-D inputs and head attributes, and with 4-D inputs", "[fused-unfused]") {
  same_block(fused_upstream("", "Attention", 2), unfused(2), 2);
  same_block(fused_upstream("", "Attention", 4), unfused(4), 4);
  same_block(fused_onnx_4d(), unfused(4), 4);
}
