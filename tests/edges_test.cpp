// edges_test.cpp: the graphs of issue 30 that torch 1.13 does not write, rebuilt by hand as the
// exporters and test suites that wrote them do: paddle2onnx's packed Q/K/V picked by Slice +
// Squeeze, onnxruntime's attention test graph whose Q/K/V weights are graph inputs, and weightless
// GroupQueryAttention graphs. (The torch exports of the same issue are in tests/python/test_edges.py.)
//
// Every expected count is worked by hand in the comment beside it from DOMAIN.md section 1:
// Q: w x (h*d) + h*d, K: w x (h_kv*d) + h_kv*d, V: w x (h_kv*dv) + h_kv*dv, O: (h*dv) x w + w.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph_builder.h"
#include "headcount/explain.h"
#include "headcount/audit.h"

using namespace headcount;
using testutil::GraphBuilder;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

bool has_note(const AttentionBlock& b, const std::string& text) {
  for (const auto& n : b.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

// The scores, Softmax and weighted sum of one unfused core on [B, h, S, d] operands, the heads
// merged back to [B, S, width], and the output projection: returns the output projection's output.
std::string core_and_output(GraphBuilder& n, const std::string& q, const std::string& kt, const std::string& v,
                            int64_t width) {
  n.op("MatMul", {q, kt}, "scores");
  testutil::attr_int(n.op("Softmax", {"scores"}, "probs"), "axis", -1);
  n.op("MatMul", {"probs", v}, "context");
  std::string merged = n.reshape(n.transpose("context", {0, 2, 1, 3}, "context_t"), {0, 0, width}, "context_r");
  return n.linear(merged, "proj", width, width);
}

}  // namespace

TEST_CASE("paddle2onnx's packed Q/K/V picked by Slice + Squeeze splits the packed projection in thirds", "[edges]") {
  // PP-OCRv4's recognizer (SVTR neck): x [B, L, 120] -> qkv Linear(120, 360) -> Reshape
  // [0, ?, 3, 8, 15] (? = the sequence length, Shape -> Slice -> Cast to int32 and back) ->
  // Transpose [2, 0, 3, 1, 4] -> qkv[i] written as Slice(axis 0, i:i+1) + Squeeze(0). Each role
  // takes a third of the packed projection: weight 120 x 120 = 14,400, bias 120; heads: the
  // target's head size 15, 120 / 15 = 8.
  GraphBuilder n;
  n.input("x", {-1, -1, 120});
  std::string qkv = n.linear("x", "qkv", 120, 360);
  n.op("Shape", {"x"}, "x_shape");
  n.op("Slice", {"x_shape", n.ints({1}), n.ints({2}), n.ints({0})}, "seq");
  testutil::attr_int(n.op("Cast", {"seq"}, "seq_i32"), "to", onnx::TensorProto::INT32);
  testutil::attr_int(n.op("Cast", {"seq_i32"}, "seq_i64"), "to", onnx::TensorProto::INT64);
  testutil::attr_int(n.op("Concat", {n.ints({0}), "seq_i64", n.ints({3, 8, 15})}, "target"), "axis", 0);
  n.op("Reshape", {qkv, "target"}, "qkv5");
  n.transpose("qkv5", {2, 0, 3, 1, 4}, "qkv_t");
  const char* role[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::string s = std::string(role[i]) + "_slice";
    n.op("Slice", {"qkv_t", n.ints({i}), n.ints({i + 1}), n.ints({0})}, s);
    n.op("Squeeze", {s, n.ints({0})}, role[i]);
  }
  if (n.shared.insert("scale").second) n.init("scale", {}, kFloat);
  n.op("Mul", {"q", "scale"}, "q_scaled");
  n.transpose("k", {0, 1, 3, 2}, "k_t");
  n.output(core_and_output(n, "q_scaled", "k_t", "v", 120));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.heads == 8);
  CHECK(b.kv_heads == 8);
  CHECK(b.head_dim == 15);
  CHECK(b.heads_from == "head size 15 from Reshape 'qkv5' target [0, ?, 3, 8, 15] on the Q path; 120 / 15 = 8 heads");
  for (const Projection* p : {&b.q, &b.k, &b.v}) {
    CHECK(p->weight == 14400);  // 120 x 120, a third of 120 x 360
    CHECK(p->bias == 120);
  }
  CHECK(b.q.tensors[0].slice == "columns 0:120 of 360");
  CHECK(b.k.tensors[0].slice == "columns 120:240 of 360");
  CHECK(b.v.tensors[0].slice == "columns 240:360 of 360");
  CHECK(b.total == 58080);  // 4 x (14,400 + 120)
  CHECK(b.notes.empty());
}

TEST_CASE("Q/K/V weights fed as graph inputs: the block, its heads, and nothing stored for them", "[edges]") {
  // onnxruntime's attention test graph with past: x [B, S, 768]; Q, K and V are MatMul(x, W) +
  // b where W [768, 768] and b [768] are graph inputs; heads split by Reshape [0, 0, 12, 64]; K and
  // V appended to past_key/past_value [B, 12, P, 64]; the output projection o [768, 768] + [768]
  // is stored. Heads: 768 / 64 = 12. Stored: only O, 768 x 768 + 768 = 590,592.
  GraphBuilder n;
  n.input("x", {-1, -1, 768});
  n.input("past_key", {-1, 12, -1, 64});
  n.input("past_value", {-1, 12, -1, 64});
  for (std::string r : {"q", "k", "v"}) {
    n.input(r + "_weight", {768, 768});
    n.input(r + "_bias", {768});
    n.op("MatMul", {"x", r + "_weight"}, r + "_mm");
    n.op("Add", {r + "_mm", r + "_bias"}, r + "_add");
    n.transpose(n.reshape(r + "_add", {0, 0, 12, 64}, r + "_4d"), {0, 2, 1, 3}, r + "_t");
  }
  testutil::attr_int(n.op("Concat", {"past_key", "k_t"}, "k_all"), "axis", 2);
  testutil::attr_int(n.op("Concat", {"past_value", "v_t"}, "v_all"), "axis", 2);
  n.transpose("k_all", {0, 1, 3, 2}, "k_T");
  n.output(core_and_output(n, "q_t", "k_T", "v_all", 768));
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  CHECK(a.attention.unmatched.empty());
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.kind == "self");
  CHECK(b.heads == 12);
  CHECK(b.head_dim == 64);
  CHECK(b.width == 768);
  for (auto [p, name] : {std::pair<const Projection*, const char*>{&b.q, "q"}, {&b.k, "k"}, {&b.v, "v"}}) {
    INFO(name);
    CHECK(p->found);
    CHECK(p->total() == 0);  // nothing stored
    CHECK(p->weight_input == std::string(name) + "_weight");
    CHECK(p->bias_input == std::string(name) + "_bias");
    CHECK(p->in_width == 768);
    CHECK(p->out_width == 768);
  }
  CHECK(b.o.total() == 590592);  // 768 x 768 + 768
  CHECK(b.total == 590592);
  CHECK(has_note(b, "Q, K and V weights are fed at run time as the graph inputs 'q_weight', 'k_weight' and 'v_weight' "
                    "(Q 768 → 768, K 768 → 768, V 768 → 768; biases 'q_bias', 'k_bias' and 'v_bias'): nothing of them is "
                    "stored, so they add 0 here (1,769,472 weights by the declared shapes)"));  // 3 x 768 x 768
  // Biases fed as inputs are biases: every projection has one, so no bias rule fires.
  for (const auto& f : a.findings) CHECK(f.rule != "bias-inconsistent");
  // The MACs count the input weights all the same: 4 x 768 x 768 = 2,359,296 per token.
  CHECK(a.cost.macs_attention_projections == 2359296);
  // K/V per token: 768 + 768 features of float32 (the type of the input 'k_weight') = 6,144 bytes.
  CHECK(a.cost.kv_bytes_per_token == 6144);
}

TEST_CASE("a weightless GroupQueryAttention takes its width from its query's declared shape", "[edges]") {
  // com.microsoft GroupQueryAttention, num_heads 4, kv_num_heads 2, local_window_size 8, whose
  // query, key and value are graph inputs: query [B, S, 64], key and value [B, S, 32] (2 K/V heads
  // of 16); or one packed query [B, S, (4 + 2·2)·16 = 128]. Nothing is stored. GQA is causal
  // over the cache it extends: self-attention.
  for (bool packed : {false, true}) {
    INFO((packed ? "packed query [B, S, 128]" : "query [B, S, 64], key and value [B, S, 32]"));
    GraphBuilder n;
    n.input("query", {-1, -1, packed ? 128 : 64});
    if (!packed) {
      n.input("key", {-1, -1, 32});
      n.input("value", {-1, -1, 32});
    }
    n.input("past_key", {-1, 2, -1, 16});
    n.input("past_value", {-1, 2, -1, 16});
    n.input("seqlens_k", {-1}, onnx::TensorProto::INT32);
    n.input("total_sequence_length", {}, onnx::TensorProto::INT32);
    std::vector<std::string> in = {"query", packed ? "" : "key", packed ? "" : "value", "past_key", "past_value",
                                   "seqlens_k", "total_sequence_length"};
    auto* gqa = testutil::node(n.g, "GroupQueryAttention", in, {"out", "present_key", "present_value"}, "gqa", "com.microsoft");
    testutil::attr_int(gqa, "num_heads", 4);
    testutil::attr_int(gqa, "kv_num_heads", 2);
    testutil::attr_int(gqa, "local_window_size", 8);
    n.output("out");
    auto r = testutil::audited(n.m);
    const Audit& a = r->audit;
    REQUIRE(a.attention.blocks.size() == 1);
    const AttentionBlock& b = a.attention.blocks[0];
    CHECK(b.kind == "self");
    CHECK(b.heads == 4);
    CHECK(b.kv_heads == 2);
    CHECK(b.head_dim == 16);    // 64 / 4, or 128 / (4 + 2·2)
    CHECK(b.v_head_dim == 16);
    CHECK(b.width == 64);       // 4 heads x 16
    CHECK(b.total == 0);
    CHECK(b.standard == 0);     // nothing projected here to compare with 4·64²
    CHECK(has_note(b, packed ? "width 64 from the declared shape [?, ?, 128] of the query 'query' (4 heads × 16; it packs K "
                               "and V too): the operator holds no projection"
                             : "width 64 from the declared shape [?, ?, 64] of the query 'query': the operator holds no projection"));
    // K/V per token: 2 K/V heads x (16 + 16) features x 4 bytes = 256, in the decoder's cache.
    CHECK(a.cost.kv_bytes_per_token == 256);
    CHECK_FALSE(a.cost.kv_lower_bound);
    CHECK(a.cost.cross_kv_bytes_per_encoder_token == 0);
    std::string text = explain_block(a, 0);
    CHECK_THAT(text, Catch::Contains("width      64 (the query's width: no Q projection in this graph)"));
    CHECK_THAT(text, Catch::Contains("standard   not compared: none of Q, K, V and O is projected in this graph"));
  }
}

TEST_CASE("dynamically quantized attention: MatMulInteger with weights fed as graph inputs is one block", "[edges]") {
  // onnxruntime's quantize_dynamic (IntegerOps) on the graph above at width 64, 4 heads of 16
  // (issue 37, item 12): x [B, S, 64] goes through one DynamicQuantizeLinear (u8, its scale and
  // zero point), each of Q, K and V is MatMulInteger(x_u8, W_s8, x_zp, W_zp) -> Cast to float ->
  // Mul by x_scale · W_scale -> Add bias, W [64, 64] int8 and its scale, zero point and the float
  // bias [64] being graph inputs. The attention output is quantized again for O, whose int8
  // weight [64, 64] (with its scale and zero point) and float bias [64] are stored.
  // Heads: 64 / 16 = 4. Stored in the block: only O, 64 · 64 + 64 = 4,160.
  GraphBuilder n;
  n.input("x", {-1, -1, 64});
  testutil::node(n.g, "DynamicQuantizeLinear", {"x"}, {"x_u8", "x_scale", "x_zp"}, "x_quant");
  auto integer_product = [&](const std::string& in, const std::string& in_scale, const std::string& in_zp,
                             const std::string& r, bool inputs) {
    if (inputs) {
      n.input(r + "_weight", {64, 64}, onnx::TensorProto::INT8);
      n.input(r + "_weight_scale", {}, kFloat);
      n.input(r + "_weight_zp", {}, onnx::TensorProto::INT8);
      n.input(r + "_bias", {64});
    } else {
      n.init(r + "_weight", {64, 64}, onnx::TensorProto::INT8);
      n.init(r + "_weight_scale", {}, kFloat);
      n.init(r + "_weight_zp", {}, onnx::TensorProto::INT8);
      n.init(r + "_bias", {64});
    }
    n.op("MatMulInteger", {in, r + "_weight", in_zp, r + "_weight_zp"}, r + "_i32");
    testutil::attr_int(n.op("Cast", {r + "_i32"}, r + "_f"), "to", kFloat);
    n.op("Mul", {in_scale, r + "_weight_scale"}, r + "_scale");
    n.op("Mul", {r + "_f", r + "_scale"}, r + "_mm");
    return n.op("Add", {r + "_mm", r + "_bias"}, r + "_add")->output(0);
  };
  for (std::string r : {"q", "k", "v"}) {
    std::string y = integer_product("x_u8", "x_scale", "x_zp", r, true);
    n.transpose(n.reshape(y, {0, 0, 4, 16}, r + "_4d"), {0, 2, 1, 3}, r + "_t");
  }
  n.transpose("k_t", {0, 1, 3, 2}, "k_T");
  n.op("MatMul", {"q_t", "k_T"}, "scores");
  testutil::attr_int(n.op("Softmax", {"scores"}, "probs"), "axis", -1);
  n.op("MatMul", {"probs", "v_t"}, "context");
  n.reshape(n.transpose("context", {0, 2, 1, 3}, "context_t"), {0, 0, 64}, "context_r");
  testutil::node(n.g, "DynamicQuantizeLinear", {"context_r"}, {"c_u8", "c_scale", "c_zp"}, "c_quant");
  n.output(integer_product("c_u8", "c_scale", "c_zp", "o", false));
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.attention.blocks.size() == 1);
  CHECK(a.attention.unmatched.empty());
  const AttentionBlock& b = a.attention.blocks[0];
  CHECK(b.kind == "self");
  CHECK(b.heads == 4);
  CHECK(b.head_dim == 16);
  CHECK(b.width == 64);
  for (auto [p, name] : {std::pair<const Projection*, const char*>{&b.q, "q"}, {&b.k, "k"}, {&b.v, "v"}}) {
    INFO(name);
    CHECK(p->found);
    CHECK(p->total() == 0);  // nothing stored
    CHECK(p->weight_input == std::string(name) + "_weight");
    CHECK(p->bias_input == std::string(name) + "_bias");
    CHECK(p->in_width == 64);
    CHECK(p->out_width == 64);
  }
  CHECK(b.o.found);
  CHECK(b.o.total() == 4160);  // 64 · 64 int8 weights + 64 float biases
  CHECK(b.total == 4160);
  CHECK(has_note(b, "Q, K and V weights are fed at run time as the graph inputs 'q_weight', 'k_weight' and 'v_weight' "
                    "(Q 64 → 64, K 64 → 64, V 64 → 64; biases 'q_bias', 'k_bias' and 'v_bias'): nothing of them is "
                    "stored, so they add 0 here (12,288 weights by the declared shapes)"));  // 3 · 64 · 64
  // O's weight scale and zero point go with its weight: attention 4,160 + 1 + 1 = 4,162, all stored.
  CHECK(a.framework.parameters == 4162u);
  CHECK(a.composition.attention == 4162u);
  CHECK(a.composition.other == 0u);
  // The MACs count the input weights all the same: 4 · 64 · 64 = 16,384 per token.
  CHECK(a.cost.macs_attention_projections == 16384);
}
