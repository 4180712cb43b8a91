// unfused_test.cpp: hand-built unfused attention graphs, the core
//   MatMul(Q, Kᵀ) -> Div(sqrt(d_k)) -> [Add mask] -> Softmax -> MatMul(., V) -> Transpose -> Reshape -> O
// with the projection spellings of DOMAIN.md section 2, plus the invariants every block keeps and a
// 1,000-layer scale run.
//
// Every expected number is worked out from DOMAIN.md section 1 (Q: w_q x (h*d_k) + h*d_k,
// K: w_k x (h_kv*d_k) + h_kv*d_k, V: w_v x (h_kv*d_v) + h_kv*d_v, O: (h*d_v) x d_out + d_out) in the
// comment next to each assertion.
#include <catch2/catch.hpp>

#include <memory>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/load.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;

namespace {

using testutil::GraphBuilder;
using testutil::LayerSpec;
using testutil::Store;
using Run = testutil::Matched;

// A self-attention layer on a width of `width`: 4 heads of 16 (LayerSpec's), stored as `store`.
LayerSpec layer_spec(int64_t width, Store store = Store::Initializer) {
  LayerSpec s;
  s.width = width;
  s.store = store;
  return s;
}

std::string wname(const Run& r, const TensorShare& t) { return std::string(r.model.weights[t.weight].name); }

// The textbook block: width 64, 4 heads of 16, biases on every projection.
void check_standard(const AttentionBlock& b) {
  CHECK(b.form == "unfused");
  CHECK(b.kind == "self");
  CHECK(b.width == 64);
  CHECK(b.heads == 4);        // 64 / 16
  CHECK(b.kv_heads == 4);     // K is 64 wide: 64 / 16
  CHECK(b.head_dim == 16);    // Reshape [0, 0, 4, 16]
  CHECK(b.v_head_dim == 16);
  for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
    INFO("role " << role_name(role));
    CHECK(b.projection(role).found);
    CHECK(b.projection(role).weight == 4096);  // 64 x 64 = 4,096
    CHECK(b.projection(role).bias == 64);      // 64 outputs
  }
  CHECK(b.total == 16640);     // 4 x 4,096 + 4 x 64 = 16,640
  CHECK(b.standard == 16640);  // 4 x 64^2 + 4 x 64
  CHECK(b.notes.empty());
}

}  // namespace

TEST_CASE("unfused: MatMul + Add projections with initializers", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  n.input("mask", {1, 1, 8, 8});
  LayerSpec s = layer_spec(64);
  s.mask = "mask";
  n.layer("x", "enc", s);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  CHECK(r->result.unmatched.empty());
  const AttentionBlock& b = r->result.blocks[0];
  check_standard(b);
  CHECK(b.heads_from == "head size 16 from Reshape 'enc/q/Reshape' target [0, 0, 4, 16] on the Q path; "
                        "64 / 16 = 4 heads");
  CHECK(wname(*r, b.q.tensors[0]) == "enc.q.weight");
  CHECK(wname(*r, b.q.tensors[1]) == "enc.q.bias");
  CHECK(b.q.tensors[0].slice.empty());
  CHECK(b.name == "enc");  // common prefix of enc.{q,k,v,o}.weight
  CHECK(r->result.parameters == 16640);  // 8 distinct tensors: 4 x 4,096 + 4 x 64
}

TEST_CASE("unfused: Gemm projections with transB = 1 (weights stored [out, in])", "[unfused]") {
  // 2-D activations, model width 48, attention width 64 = 4 heads x 16.
  GraphBuilder n;
  n.input("x", {8, 48});
  std::string qkv[3];
  const char* roles[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::string p = std::string("attn.") + roles[i];
    auto* gemm = n.op("Gemm", {"x", n.init(p + ".weight", {64, 48}), n.init(p + ".bias", {64})}, p + "/Gemm");
    testutil::attr_int(gemm, "transB", 1);
    qkv[i] = n.reshape(p + "/Gemm", {0, 4, 16}, p + "/Reshape");  // [S, 4, 16]
  }
  std::string q = n.transpose(qkv[0], {1, 0, 2}, "q_t");  // [4, S, 16]
  std::string k = n.transpose(qkv[1], {1, 2, 0}, "k_t");  // [4, 16, S]
  std::string v = n.transpose(qkv[2], {1, 0, 2}, "v_t");
  n.op("MatMul", {q, k}, "scores");
  n.op("Div", {"scores", n.init("sqrt_dk", {})}, "scaled");
  n.op("Softmax", {"scaled"}, "probs");
  n.op("MatMul", {"probs", v}, "context");                                         // [4, S, 16]
  n.reshape(n.transpose("context", {1, 0, 2}, "context_t"), {0, 64}, "context_r");  // [S, 64]
  auto* o = n.op("Gemm", {"context_r", n.init("attn.o.weight", {48, 64}), n.init("attn.o.bias", {48})}, "attn.o/Gemm");
  testutil::attr_int(o, "transB", 1);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.width == 48);
  CHECK(b.heads == 4);     // Reshape [0, 4, 16]: 64 / 16
  CHECK(b.head_dim == 16);
  for (Role role : {Role::Q, Role::K, Role::V}) {
    const Projection& p = b.projection(role);
    INFO("role " << role_name(role));
    CHECK(p.in_width == 48);   // stored [64, 48] = [out, in]
    CHECK(p.out_width == 64);
    CHECK(p.weight == 3072);   // 48 x 64 = 3,072
    CHECK(p.bias == 64);
    CHECK(p.tensors[0].slice.empty());
  }
  CHECK(b.o.in_width == 64);   // stored [48, 64] = [out, in]
  CHECK(b.o.out_width == 48);
  CHECK(b.o.weight == 3072);   // (h x d_v) x d_out = 64 x 48 = 3,072
  CHECK(b.o.bias == 48);       // d_out
  CHECK(b.total == 12528);     // 3 x (3,072 + 64) + 3,072 + 48 = 9,408 + 3,120
  CHECK(b.standard == 9408);   // 4 x 48^2 + 4 x 48 = 9,216 + 192: the width mismatch shows
  CHECK(r->result.parameters == 12528);
}

TEST_CASE("unfused: weights behind Transpose, DequantizeLinear (QDQ int8) and in Constant nodes", "[unfused]") {
  SECTION("Transpose of a weight stored [out, in], model width 48") {
    GraphBuilder n;
    n.input("x", {1, 8, 48});
    n.layer("x", "enc", layer_spec(48, Store::Transposed));
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK(b.width == 48);
    CHECK(b.heads == 4);
    CHECK(b.q.in_width == 48);  // stored [64, 48] then Transpose: [48, 64]
    CHECK(b.q.out_width == 64);
    CHECK(wname(*r, b.q.tensors[0]) == "enc.q.weight.stored");
    CHECK(b.q.weight == 3072);  // 48 x 64 = 3,072
    CHECK(b.k.weight == 3072);
    CHECK(b.v.weight == 3072);
    CHECK(b.o.weight == 3072);  // 64 x 48 = 3,072
    CHECK(b.o.bias == 48);
    CHECK(b.total == 12528);    // 3 x (3,072 + 64) + 3,072 + 48
  }
  SECTION("DequantizeLinear of int8 initializers") {
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    n.layer("x", "enc", layer_spec(64, Store::Quantized));
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    check_standard(b);
    CHECK(wname(*r, b.q.tensors[0]) == "enc.q.weight.int8");
    CHECK(r->model.weights[b.q.tensors[0].weight].dtype == onnx::TensorProto::INT8);
    // Scales and zero points are not projection parameters: 4 x 4,096 + 4 x 64.
    CHECK(r->result.parameters == 16640);
  }
  SECTION("Constant nodes instead of initializers") {
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    n.layer("x", "enc", layer_spec(64, Store::ConstantNode));
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    check_standard(b);
    CHECK(r->model.weights[b.q.tensors[0].weight].storage == Storage::ConstantNode);
    CHECK(r->model.weights[b.q.tensors[1].weight].storage == Storage::ConstantNode);
    CHECK(r->result.parameters == 16640);
  }
}

TEST_CASE("unfused: packed QKV [64, 192] + Split with sizes as an input", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::string qkv = n.linear("x", "attn.c_attn", 64, 192);
  testutil::attr_int(testutil::node(n.g, "Split", {qkv, n.ints({64, 64, 64})}, {"q", "k", "v"}, "split"), "axis", -1);
  std::string q = n.split_heads("q", "q", 4, 16, {0, 2, 1, 3});
  std::string k = n.split_heads("k", "k", 4, 16, {0, 2, 3, 1});
  std::string v = n.split_heads("v", "v", 4, 16, {0, 2, 1, 3});
  n.linear(n.core(q, k, v, "attn", 64), "attn.c_proj", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  check_standard(b);
  const char* slices[] = {"columns 0:64 of 192", "columns 64:128 of 192", "columns 128:192 of 192"};
  const char* bias_slices[] = {"elements 0:64 of 192", "elements 64:128 of 192", "elements 128:192 of 192"};
  int i = 0;
  for (Role role : {Role::Q, Role::K, Role::V}) {
    const Projection& p = b.projection(role);
    INFO("role " << role_name(role));
    REQUIRE(p.tensors.size() == 2);
    CHECK(wname(*r, p.tensors[0]) == "attn.c_attn.weight");
    CHECK(p.tensors[0].elements == 4096);  // 64 x 64 of the 64 x 192
    CHECK(p.tensors[0].slice == slices[i]);
    CHECK(p.tensors[1].elements == 64);
    CHECK(p.tensors[1].slice == bias_slices[i]);
    ++i;
  }
  // Each tensor once: 64 x 192 = 12,288 + 192 + 4,096 + 64 = 16,640.
  CHECK(r->result.parameters == 16640);
}

TEST_CASE("unfused: packed QKV Split with negative sizes [-64, 64, 192] takes no more than its tensors", "[unfused]") {
  // The ONNX Split spec: "split: length of each output. Values should be >= 0. Sum of the values
  // must be equal to the dim value at 'axis' specified." [-64, 64, 192] sums to 192 but is no
  // split at all (onnxruntime refuses it). Read as offsets it gave Q -64:0, K -64:0 and V 0:192
  // of the packed [64, 192] weight: Q 0, K 4,160, V 12,480, a block of 20,800 from tensors that
  // hold 64 x 192 + 192 = 12,480 plus the O projection's 64 x 64 + 64 = 4,160.
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::string qkv = n.linear("x", "attn.c_attn", 64, 192);
  testutil::attr_int(testutil::node(n.g, "Split", {qkv, n.ints({-64, 64, 192})}, {"q", "k", "v"}, "split"), "axis", -1);
  std::string q = n.split_heads("q", "q", 4, 16, {0, 2, 1, 3});
  std::string k = n.split_heads("k", "k", 4, 16, {0, 2, 3, 1});
  std::string v = n.split_heads("v", "v", 4, 16, {0, 2, 1, 3});
  n.linear(n.core(q, k, v, "attn", 64), "attn.c_proj", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  uint64_t packed = 0;  // what Q, K and V take of the packed weight and bias together
  for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
    INFO("role " << role_name(role));
    for (const TensorShare& t : b.projection(role).tensors) {
      INFO(wname(*r, t));
      CHECK(t.elements <= r->model.weights[t.weight].elements);  // no share larger than its tensor
      if (role != Role::O) packed += t.elements;
    }
  }
  CHECK(packed <= 12480);                // 64 x 192 + 192
  CHECK(b.o.total() == 4160);            // 64 x 64 + 64
  CHECK(b.total <= 12480 + 4160);        // 16,640
  CHECK(r->result.parameters == 16640);  // each tensor once
}

TEST_CASE("unfused: Paddle-style packed QKV, Reshape [0,0,3,4,16] + Transpose + Gather", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::string qkv = n.linear("x", "attn.qkv", 64, 192);
  n.reshape(qkv, {0, 0, 3, 4, 16}, "qkv_r");          // [B, S, 3, h, d]
  n.transpose("qkv_r", {2, 0, 3, 1, 4}, "qkv_t");     // [3, B, h, S, d]
  std::string parts[3];
  for (int i = 0; i < 3; ++i) {
    parts[i] = "part" + std::to_string(i);
    testutil::attr_int(n.op("Gather", {"qkv_t", n.ints({i}, true)}, parts[i]), "axis", 0);  // [B, h, S, d]
  }
  std::string kt = n.transpose(parts[1], {0, 1, 3, 2}, "k_t");
  n.linear(n.core(parts[0], kt, parts[2], "attn", 64), "attn.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  check_standard(b);  // each role a third: 64 x 192 / 3 = 4,096 weights, 192 / 3 = 64 biases
  CHECK(b.q.tensors[0].slice == "columns 0:64 of 192");     // index 0 of 3 on the packed axis
  CHECK(b.k.tensors[0].slice == "columns 64:128 of 192");   // index 1
  CHECK(b.v.tensors[0].slice == "columns 128:192 of 192");  // index 2
  CHECK(b.k.tensors[1].slice == "elements 64:128 of 192");
  CHECK(r->result.parameters == 16640);  // 12,288 + 192 + 4,096 + 64
}

TEST_CASE("unfused: per-head projections, 4 MatMuls [64, 16] per role concatenated", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::string roles[3];
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> heads;
    for (int h = 0; h < 4; ++h) {
      heads.push_back(n.linear("x", std::string("attn.") + names[i] + ".h" + std::to_string(h), 64, 16));
    }
    testutil::attr_int(n.op("Concat", heads, std::string(names[i]) + "_cat"), "axis", -1);  // [B, S, 64]
    roles[i] = std::string(names[i]) + "_cat";
  }
  std::string q = n.split_heads(roles[0], "q", 4, 16, {0, 2, 1, 3});
  std::string k = n.split_heads(roles[1], "k", 4, 16, {0, 2, 3, 1});
  std::string v = n.split_heads(roles[2], "v", 4, 16, {0, 2, 1, 3});
  n.linear(n.core(q, k, v, "attn", 64), "attn.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  check_standard(b);  // 4 heads x (64 x 16) = 4,096 weights, 4 x 16 = 64 biases per role
  CHECK(b.heads_from == "4 per-head Q projections concatenated");
  CHECK(b.q.tensors.size() == 8);  // 4 weights + 4 biases
  CHECK(b.q.tensors[0].elements == 1024);  // 64 x 16 = 1,024
  CHECK(b.q.tensors[1].elements == 16);
  CHECK(r->result.parameters == 16640);  // 12 x (1,024 + 16) + 4,096 + 64
}

TEST_CASE("unfused: cross-attention, K/V from a different input", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  n.input("memory", {1, 10, 48});
  std::string q = n.split_heads(n.linear("x", "cross.q", 64, 64), "q", 4, 16, {0, 2, 1, 3});
  std::string k = n.split_heads(n.linear("memory", "cross.k", 48, 64), "k", 4, 16, {0, 2, 3, 1});
  std::string v = n.split_heads(n.linear("memory", "cross.v", 48, 64), "v", 4, 16, {0, 2, 1, 3});
  n.linear(n.core(q, k, v, "cross", 64), "cross.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.kind == "cross");
  CHECK(b.width == 64);       // Q's input width
  CHECK(b.heads == 4);
  CHECK(b.k.in_width == 48);  // w_k = 48
  CHECK(b.k.weight == 3072);  // w_k x (h x d_k) = 48 x 64 = 3,072
  CHECK(b.v.weight == 3072);  // w_v x (h x d_v) = 48 x 64 = 3,072
  CHECK(b.q.weight == 4096);  // 64 x 64
  CHECK(b.total == 14592);    // (4,096 + 64) + 2 x (3,072 + 64) + (4,096 + 64) = 4,160 + 6,272 + 4,160
}

TEST_CASE("unfused: KV cache, K = Concat(past_key, k) still finds the K projection", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 1, 64});
  n.input("past_key", {1, 4, -1, 16});
  n.input("past_value", {1, 4, -1, 16});
  std::string q = n.split_heads(n.linear("x", "dec.q", 64, 64), "q", 4, 16, {0, 2, 1, 3});
  std::string k = n.split_heads(n.linear("x", "dec.k", 64, 64), "k", 4, 16, {0, 2, 1, 3});
  std::string v = n.split_heads(n.linear("x", "dec.v", 64, 64), "v", 4, 16, {0, 2, 1, 3});
  testutil::attr_int(n.op("Concat", {"past_key", k}, "present_key"), "axis", 2);
  testutil::attr_int(n.op("Concat", {"past_value", v}, "present_value"), "axis", 2);
  std::string kt = n.transpose("present_key", {0, 1, 3, 2}, "k_t");
  n.linear(n.core(q, kt, "present_value", "dec", 64), "dec.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  check_standard(b);
  CHECK(wname(*r, b.k.tensors[0]) == "dec.k.weight");
  CHECK(wname(*r, b.v.tensors[0]) == "dec.v.weight");
}

TEST_CASE("unfused: grouped K/V, 2 kv heads repeated to 4 by Unsqueeze/Expand/Reshape", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::string q = n.split_heads(n.linear("x", "gqa.q", 64, 64), "q", 4, 16, {0, 2, 1, 3});
  std::string kv[2];
  const char* names[] = {"k", "v"};
  for (int i = 0; i < 2; ++i) {
    std::string p = names[i];
    std::string x4 = n.split_heads(n.linear("x", "gqa." + p, 64, 32), p, 2, 16, {0, 2, 1, 3});  // [B, 2, S, 16]
    n.op("Unsqueeze", {x4, n.ints({2})}, p + "/Unsqueeze");                                   // [B, 2, 1, S, 16]
    n.op("Expand", {p + "/Unsqueeze", n.ints({1, 1, 2, 1, 1})}, p + "/Expand");               // [B, 2, 2, S, 16]
    kv[i] = n.reshape(p + "/Expand", {0, 4, -1, 16}, p + "/Repeat");                          // [B, 4, S, 16]
  }
  std::string kt = n.transpose(kv[0], {0, 1, 3, 2}, "k_t");
  n.linear(n.core(q, kt, kv[1], "gqa", 64), "gqa.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.heads == 4);        // 64 / 16
  CHECK(b.kv_heads == 2);     // K is 32 wide: 32 / 16
  CHECK(b.head_dim == 16);
  CHECK(b.v_head_dim == 16);
  CHECK(b.q.total() == 4160);  // 64 x (4 x 16) + 64
  CHECK(b.k.total() == 2080);  // 64 x (2 x 16) + 32
  CHECK(b.v.total() == 2080);  // 64 x (2 x 16) + 32
  CHECK(b.o.total() == 4160);  // (4 x 16) x 64 + 64
  CHECK(b.total == 12480);     // 4,160 + 2,080 + 2,080 + 4,160
  CHECK(b.standard == 16640);  // the textbook 4 x 64^2 + 4 x 64 ignores grouping
}

TEST_CASE("unfused: heads unknown when the Q Reshape target is not constant", "[unfused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  n.input("q_shape", {4}, onnx::TensorProto::INT64);
  n.op("Reshape", {n.linear("x", "attn.q", 64, 64), "q_shape"}, "q/Reshape");
  std::string q = n.transpose("q/Reshape", {0, 2, 1, 3}, "q/Transpose");
  std::string k = n.split_heads(n.linear("x", "attn.k", 64, 64), "k", 4, 16, {0, 2, 3, 1});
  std::string v = n.split_heads(n.linear("x", "attn.v", 64, 64), "v", 4, 16, {0, 2, 1, 3});
  n.linear(n.core(q, k, v, "attn", 64), "attn.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK_FALSE(b.heads.has_value());
  CHECK_FALSE(b.head_dim.has_value());
  CHECK(b.heads_from.rfind("unknown:", 0) == 0);
  CHECK(b.heads_from == "unknown: the target of Reshape 'q/Reshape' on the Q path is computed at run time");
  CHECK(b.total == 16640);  // the counts do not need the heads: 4 x 4,096 + 4 x 64
}

TEST_CASE("unfused: Softmax that is not attention is listed in unmatched with the reason", "[unfused]") {
  SECTION("a classifier Softmax after a MatMul with a weight") {
    GraphBuilder n;
    n.input("x", {1, 64});
    n.op("Softmax", {n.linear("x", "classifier", 64, 10)}, "probs");
    n.input("logits", {1, 10});
    n.op("Softmax", {"logits"}, "probs2");
    auto r = testutil::matched(n.m);
    CHECK(r->result.blocks.empty());
    REQUIRE(r->result.unmatched.size() == 2);
    std::map<std::string, std::string> reasons;  // the reason names where the walk back stopped
    for (const auto& u : r->result.unmatched) reasons[u.name] = u.reason;
    CHECK(reasons == std::map<std::string, std::string>{
                         {"probs", "no MatMul(Q, Kᵀ) of two activations before it: MatMul 'classifier/MatMul' multiplies "
                                   "by a constant: a projection or a classifier, not Q·Kᵀ"},
                         {"probs2", "no MatMul(Q, Kᵀ) of two activations before it: it reaches the graph input 'logits'"}});
    CHECK(r->result.parameters == 0);
  }
  SECTION("an attention core whose Q is a graph input without a projection") {
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    n.input("q_in", {1, 4, 8, 16});
    std::string k = n.split_heads(n.linear("x", "attn.k", 64, 64), "k", 4, 16, {0, 2, 3, 1});
    std::string v = n.split_heads(n.linear("x", "attn.v", 64, 64), "v", 4, 16, {0, 2, 1, 3});
    n.linear(n.core("q_in", k, v, "attn", 64), "attn.o", 64, 64);
    auto r = testutil::matched(n.m);
    CHECK(r->result.blocks.empty());
    REQUIRE(r->result.unmatched.size() == 1);
    CHECK(r->result.unmatched[0].name == "attn/Softmax");
    CHECK_THAT(r->result.unmatched[0].reason, Catch::Contains("without a projection"));
    CHECK_THAT(r->result.unmatched[0].reason, Catch::Contains("'q_in'"));
  }
}

TEST_CASE("unfused: a tensor shared by several projections and blocks is counted once", "[unfused]") {
  // Two layers whose eight bias Adds all read one zero bias [64] (exporters merge equal tensors).
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  LayerSpec s = layer_spec(64);
  s.shared_bias = "shared.zero_bias";
  n.layer(n.layer("x", "layer0", s), "layer1", s);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 2);
  for (const auto& b : r->result.blocks) {
    check_standard(b);  // each block still reports its own 4 x 4,096 + 4 x 64 = 16,640
    CHECK(wname(*r, b.o.tensors[1]) == "shared.zero_bias");
  }
  // 8 weights x 4,096 = 32,768, plus the one bias tensor of 64: 32,832.
  CHECK(r->result.parameters == 32832);
}

TEST_CASE("scale: a 1,000-layer unfused encoder", "[unfused][scale]") {
  constexpr int kLayers = 1000;
  GraphBuilder n;
  n.dtype = onnx::TensorProto::FLOAT16;  // halves the file; counts come from dims
  n.input("x", {1, 8, 64});
  std::string h = "x";
  for (int i = 0; i < kLayers; ++i) h = n.layer(h, "layers." + std::to_string(i) + ".attn", layer_spec(64));
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == kLayers);
  CHECK(r->result.unmatched.empty());
  int with_four_heads = 0;
  uint64_t sum = 0;
  for (const auto& b : r->result.blocks) {
    if (b.heads == 4 && b.kv_heads == 4 && b.head_dim == 16) ++with_four_heads;
    sum += b.total;
  }
  CHECK(with_four_heads == kLayers);
  // 1,000 x (4 x 64 x 64 + 4 x 64) = 1,000 x 16,640 = 16,640,000
  CHECK(sum == 16640000u);
  CHECK(r->result.parameters == 16640000u);
}
