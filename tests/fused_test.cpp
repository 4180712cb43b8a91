// fused_test.cpp: hand-built graphs around the fused attention operators (com.microsoft Attention,
// PackedAttention, MultiHeadAttention, GroupQueryAttention, MatMulNBits projections, ONNX Attention).
//
// Every expected number is worked out from DOMAIN.md section 1 (Q: w_q x (h*d_k) + h*d_k,
// K: w_k x (h_kv*d_k) + h_kv*d_k, V: w_v x (h_kv*d_v) + h_kv*d_v, O: (h*d_v) x d_out + d_out) and
// the operator specs of section 3, in the comment next to each assertion.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/load.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;

namespace {

using testutil::GraphBuilder;
using Run = testutil::Matched;

std::string wname(const Run& r, const TensorShare& t) { return std::string(r.model.weights[t.weight].name); }

// The packed-weight com.microsoft Attention graph shared by Attention and PackedAttention:
// x [B, S, 64] -> op(x, W [64, q+k+v], b [q+k+v]) -> MatMul W_o [v_hidden, 64] + Add b_o [64].
GraphBuilder packed_attention(const std::string& op_type, std::vector<int64_t> qkv_sizes, bool declare_sizes) {
  GraphBuilder n;
  int64_t total = qkv_sizes[0] + qkv_sizes[1] + qkv_sizes[2];
  std::vector<std::string> in = {"x", n.init("attn.qkv.weight", {64, total}), n.init("attn.qkv.bias", {total})};
  if (op_type == "PackedAttention") {
    n.input("x", {-1, 64});  // PackedAttention takes [token_count, hidden]
    n.input("token_offset", {1, 8}, onnx::TensorProto::INT32);
    n.input("cumulative_sequence_length", {2}, onnx::TensorProto::INT32);
    in.push_back("token_offset");
    in.push_back("cumulative_sequence_length");
  } else {
    n.input("x", {1, 8, 64});
  }
  auto* a = n.op(op_type, in, "attn_out", "com.microsoft");
  a->set_name("attn");
  testutil::attr_int(a, "num_heads", 4);
  if (declare_sizes) testutil::attr_ints(a, "qkv_hidden_sizes", qkv_sizes);
  n.linear("attn_out", "attn.o", qkv_sizes[2], 64);
  n.output("attn.o/Add");
  return n;
}

void check_standard_packed(const Run& r, const std::string& form) {
  REQUIRE(r.result.blocks.size() == 1);
  CHECK(r.result.unmatched.empty());
  const AttentionBlock& b = r.result.blocks[0];
  CHECK(b.form == form);
  CHECK(b.kind == "self");     // one input feeds the packed weight
  CHECK(b.heads == 4);         // num_heads attribute
  CHECK(b.kv_heads == 4);      // no kv_num_heads: h_kv = h
  CHECK(b.head_dim == 16);     // 64 / 4 = 16
  CHECK(b.v_head_dim == 16);   // 64 / 4 = 16
  CHECK(b.width == 64);        // W is [64, 192]: 64 input features
  CHECK(b.heads_from == "attribute num_heads of " + form + " 'attn'");
  const char* slices[] = {"columns 0:64 of 192", "columns 64:128 of 192", "columns 128:192 of 192"};
  const char* bias_slices[] = {"elements 0:64 of 192", "elements 64:128 of 192", "elements 128:192 of 192"};
  int i = 0;
  for (Role role : {Role::Q, Role::K, Role::V}) {
    const Projection& p = b.projection(role);
    INFO("role " << role_name(role));
    CHECK(p.found);
    CHECK(p.weight == 4096);   // 64 inputs x 64 outputs = 4,096 (a third of 64 x 192 = 12,288)
    CHECK(p.bias == 64);       // a third of the 192 bias elements
    CHECK(p.in_width == 64);
    CHECK(p.out_width == 64);  // 192 / 3 = 64
    REQUIRE(p.tensors.size() == 2);
    CHECK(wname(r, p.tensors[0]) == "attn.qkv.weight");
    CHECK(p.tensors[0].slice == slices[i]);          // stacked on the last axis: q, k, v in order
    CHECK(p.tensors[1].bias);
    CHECK(p.tensors[1].slice == bias_slices[i]);
    ++i;
  }
  CHECK(b.o.weight == 4096);  // (h * d_v) x d_out = 64 x 64 = 4,096
  CHECK(b.o.bias == 64);      // d_out = 64
  CHECK(b.o.tensors[0].slice.empty());
  CHECK(b.total == 16640);     // 4 x 4,096 + 4 x 64 = 16,384 + 256 = 16,640
  CHECK(b.standard == 16640);  // 4 x 64^2 + 4 x 64 = 16,640
  CHECK(b.has_bias);
  CHECK(b.notes.empty());
  // Tensors once: W 64 x 192 = 12,288 + b 192 + W_o 4,096 + b_o 64 = 16,640.
  CHECK(r.result.parameters == 16640);
}

}  // namespace

TEST_CASE("com.microsoft Attention: packed [64, 192] weight and bias split into Q, K, V", "[fused]") {
  GraphBuilder n = packed_attention("Attention", {64, 64, 64}, false);
  auto r = testutil::matched(n.m);
  check_standard_packed(*r, "Attention");
}

TEST_CASE("com.microsoft Attention: qkv_hidden_sizes splits the packed weight unequally", "[fused]") {
  SECTION("qkv_hidden_sizes [64, 32, 32], weight [64, 128]") {
    GraphBuilder n = packed_attention("Attention", {64, 32, 32}, true);
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK(b.q.weight == 4096);  // 64 x 64 = 4,096
    CHECK(b.k.weight == 2048);      // 64 x 32 = 2,048
    CHECK(b.v.weight == 2048);      // 64 x 32 = 2,048
    CHECK(b.q.bias == 64);
    CHECK(b.k.bias == 32);
    CHECK(b.v.bias == 32);
    CHECK(b.q.tensors[0].slice == "columns 0:64 of 128");    // 0 .. 64
    CHECK(b.k.tensors[0].slice == "columns 64:96 of 128");   // 64 .. 64+32
    CHECK(b.v.tensors[0].slice == "columns 96:128 of 128");  // 96 .. 96+32
    CHECK(b.q.tensors[1].slice == "elements 0:64 of 128");
    CHECK(b.k.tensors[1].slice == "elements 64:96 of 128");
    CHECK(b.v.tensors[1].slice == "elements 96:128 of 128");
    CHECK(b.heads == 4);
    CHECK(b.head_dim == 16);   // q hidden 64 / 4 heads
    CHECK(b.v_head_dim == 8);  // v hidden 32 / 4 heads
    CHECK(b.o.weight == 2048);  // O is (h * d_v) x d_out = 32 x 64 = 2,048
    CHECK(b.o.bias == 64);
    // 4,096+64 + 2,048+32 + 2,048+32 + 2,048+64 = 4,160 + 2,080 + 2,080 + 2,112 = 10,432
    CHECK(b.total == 10432);
    // W 64 x 128 = 8,192 + b 128 + W_o 2,048 + b_o 64 = 10,432
    CHECK(r->result.parameters == 10432);
  }
  SECTION("qkv_hidden_sizes [64, 64, 32] (onnxruntime requires q_hidden == k_hidden)") {
    GraphBuilder n = packed_attention("Attention", {64, 64, 32}, true);
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK(b.q.weight == 4096);  // 64 x 64
    CHECK(b.k.weight == 4096);  // 64 x 64
    CHECK(b.v.weight == 2048);  // 64 x 32
    CHECK(b.q.tensors[0].slice == "columns 0:64 of 160");    // 64 + 64 + 32 = 160
    CHECK(b.k.tensors[0].slice == "columns 64:128 of 160");
    CHECK(b.v.tensors[0].slice == "columns 128:160 of 160");
    CHECK(b.v.tensors[1].slice == "elements 128:160 of 160");
    CHECK(b.v_head_dim == 8);  // 32 / 4
    // 4,160 + 4,160 + 2,080 + (32 x 64 + 64 = 2,112) = 12,512
    CHECK(b.total == 12512);
  }
  SECTION("qkv_hidden_sizes [-32, 32, 96] (a hostile file): not a split, and no share larger than its tensor") {
    // The weight is [64, 96] (-32 + 32 + 96 = 96 columns): a negative size splits nothing, so
    // Q, K and V are not found and the block holds only O, 96 x 64 + 64 = 6,208.
    GraphBuilder n = packed_attention("Attention", {-32, 32, 96}, true);
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK_FALSE(b.q.found);
    CHECK_FALSE(b.k.found);
    CHECK_FALSE(b.v.found);
    CHECK(b.total == 6208);
    REQUIRE(b.notes.size() == 1);
    CHECK(b.notes[0] == "qkv_hidden_sizes [-32, 32, 96] do not split the 96 outputs of the packed weight");
  }
}

TEST_CASE("com.microsoft PackedAttention: weight and bias in inputs 1 and 2", "[fused]") {
  GraphBuilder n = packed_attention("PackedAttention", {64, 64, 64}, false);
  auto r = testutil::matched(n.m);
  check_standard_packed(*r, "PackedAttention");
}

TEST_CASE("com.microsoft MultiHeadAttention: upstream projections, packed bias input 3", "[fused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::string q = n.linear("x", "mha.q", 64, 64, false);
  std::string k = n.linear("x", "mha.k", 64, 64, false);
  std::string v = n.linear("x", "mha.v", 64, 64, false);
  auto* a = n.op("MultiHeadAttention", {q, k, v, n.init("mha.qkv_bias", {192})}, "mha_out", "com.microsoft");
  a->set_name("mha");
  testutil::attr_int(a, "num_heads", 4);
  n.linear("mha_out", "mha.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.form == "MultiHeadAttention");
  CHECK(b.kind == "self");  // query, key and value projections all read x
  CHECK(b.heads == 4);
  CHECK(b.head_dim == 16);  // 64 / 4
  const char* bias_slices[] = {"elements 0:64 of 192", "elements 64:128 of 192", "elements 128:192 of 192"};
  int i = 0;
  for (Role role : {Role::Q, Role::K, Role::V}) {
    const Projection& p = b.projection(role);
    INFO("role " << role_name(role));
    CHECK(p.weight == 4096);  // 64 x 64
    CHECK(p.bias == 64);      // [q + k + v] = [64 + 64 + 64]: 64 each
    REQUIRE(p.tensors.size() == 2);
    CHECK(p.tensors[0].slice.empty());  // a whole [64, 64] MatMul weight
    CHECK(wname(*r, p.tensors[1]) == "mha.qkv_bias");
    CHECK(p.tensors[1].slice == bias_slices[i++]);
  }
  CHECK(b.o.total() == 4160);  // 64 x 64 + 64
  CHECK(b.total == 16640);     // 4 x 4,096 + 4 x 64
  CHECK(b.standard == 16640);
  // 3 x 4,096 + 192 + 4,096 + 64 = 16,640
  CHECK(r->result.parameters == 16640);
  CHECK(b.notes.empty());
}

TEST_CASE("com.microsoft GroupQueryAttention: separate Q [64,64], K/V [64,32], 4 heads over 2 kv heads",
          "[fused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  n.input("seqlens_k", {1}, onnx::TensorProto::INT32);
  n.input("total_sequence_length", {}, onnx::TensorProto::INT32);
  std::string q = n.linear("x", "gqa.q", 64, 64, false);
  std::string k = n.linear("x", "gqa.k", 64, 32, false);
  std::string v = n.linear("x", "gqa.v", 64, 32, false);
  auto* a = n.op("GroupQueryAttention", {q, k, v, "", "", "seqlens_k", "total_sequence_length"}, "gqa_out",
                 "com.microsoft");
  a->set_name("gqa");
  testutil::attr_int(a, "num_heads", 4);
  testutil::attr_int(a, "kv_num_heads", 2);
  n.linear("gqa_out", "gqa.o", 64, 64, false);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.form == "GroupQueryAttention");
  CHECK(b.heads == 4);
  CHECK(b.kv_heads == 2);
  CHECK(b.head_dim == 16);    // q: 64 = 4 heads x 16
  CHECK(b.v_head_dim == 16);  // v: 32 = 2 kv heads x 16
  CHECK(b.heads_from == "attribute num_heads of GroupQueryAttention 'gqa', kv_num_heads 2");
  CHECK(b.q.weight == 4096);  // 64 x (4 x 16) = 4,096
  CHECK(b.k.weight == 2048);  // 64 x (2 x 16) = 2,048
  CHECK(b.v.weight == 2048);  // 64 x (2 x 16) = 2,048
  CHECK(b.o.weight == 4096);  // (4 x 16) x 64 = 4,096
  CHECK_FALSE(b.has_bias);
  CHECK(b.total == 12288);     // 4,096 + 2,048 + 2,048 + 4,096
  CHECK(b.standard == 16384);  // 4 x 64^2, no biases
  CHECK(r->result.parameters == 12288);
}

TEST_CASE("com.microsoft GroupQueryAttention: packed query from one MatMul [64, 128]", "[fused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  n.input("seqlens_k", {1}, onnx::TensorProto::INT32);
  n.input("total_sequence_length", {}, onnx::TensorProto::INT32);
  std::string qkv = n.linear("x", "gqa.qkv", 64, 128, false);
  auto* a = n.op("GroupQueryAttention", {qkv, "", "", "", "", "seqlens_k", "total_sequence_length"}, "gqa_out",
                 "com.microsoft");
  a->set_name("gqa");
  testutil::attr_int(a, "num_heads", 4);
  testutil::attr_int(a, "kv_num_heads", 2);
  n.linear("gqa_out", "gqa.o", 64, 64, false);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  // d = 128 / (h + 2 h_kv) = 128 / (4 + 2 x 2) = 16
  CHECK(b.head_dim == 16);
  CHECK(b.heads == 4);
  CHECK(b.kv_heads == 2);
  CHECK(b.kind == "self");
  CHECK(b.q.weight == 4096);  // 64 x (4 x 16) = 4,096
  CHECK(b.k.weight == 2048);  // 64 x (2 x 16) = 2,048
  CHECK(b.v.weight == 2048);  // 64 x (2 x 16) = 2,048
  CHECK(b.q.tensors[0].slice == "columns 0:64 of 128");    // q: 0 .. 4 x 16
  CHECK(b.k.tensors[0].slice == "columns 64:96 of 128");   // k: 64 .. 64 + 2 x 16
  CHECK(b.v.tensors[0].slice == "columns 96:128 of 128");  // v: 96 .. 96 + 2 x 16
  CHECK(b.total == 12288);  // 4,096 + 2,048 + 2,048 + 4,096 (O 64 x 64)
  // W_qkv 64 x 128 = 8,192 once + W_o 4,096 = 12,288
  CHECK(r->result.parameters == 12288);
}

TEST_CASE("ONNX Attention (opset 23): q_num_heads / kv_num_heads with upstream projections", "[fused]") {
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(23);
  n.input("x", {1, 8, 64});
  std::string q = n.linear("x", "attn.q", 64, 64);
  std::string k = n.linear("x", "attn.k", 64, 32);
  std::string v = n.linear("x", "attn.v", 64, 32);
  auto* a = n.op("Attention", {q, k, v}, "attn_out");
  a->set_name("attn");
  testutil::attr_int(a, "q_num_heads", 4);
  testutil::attr_int(a, "kv_num_heads", 2);
  n.linear("attn_out", "attn.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.form == "Attention");
  CHECK(b.kind == "self");
  CHECK(b.heads == 4);
  CHECK(b.kv_heads == 2);
  CHECK(b.heads_from == "attribute q_num_heads of Attention 'attn', kv_num_heads 2");
  CHECK(b.head_dim == 16);    // 64 / 4
  CHECK(b.v_head_dim == 16);  // 32 / 2
  CHECK(b.q.total() == 4160);  // 64 x 64 + 64
  CHECK(b.k.total() == 2080);  // 64 x 32 + 32
  CHECK(b.v.total() == 2080);  // 64 x 32 + 32
  CHECK(b.o.total() == 4160);  // 64 x 64 + 64
  CHECK(b.total == 12480);     // 4,160 + 2,080 + 2,080 + 4,160
  CHECK(r->result.parameters == 12480);
  CHECK(b.notes.empty());
}

TEST_CASE("ONNX Attention with 4-D inputs and no head attributes reads heads from the Q reshape", "[fused]") {
  // Q/K/V [1, 8, 64] -> Reshape [0, 0, 4, 16] -> Transpose [0, 2, 1, 3] -> Attention(4-D inputs):
  // the op has no q_num_heads; the head split upstream says 64 / 16 = 4 heads.
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(23);
  n.input("x", {1, 8, 64});
  std::string q4, k4, v4;
  for (const char* role : {"q", "k", "v"}) {
    std::string p = std::string("attn.") + role;
    std::string y = n.linear("x", p, 64, 64);
    std::string t = n.transpose(n.reshape(y, {0, 0, 4, 16}, p + "/Reshape"), {0, 2, 1, 3}, p + "/Transpose");
    (role[0] == 'q' ? q4 : role[0] == 'k' ? k4 : v4) = t;
  }
  n.op("Attention", {q4, k4, v4}, "attn_out4")->set_name("attn");
  std::string merged = n.reshape(n.transpose("attn_out4", {0, 2, 1, 3}, "attn_out_t"), {0, 0, 64}, "attn_out");
  n.linear(merged, "attn.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.form == "Attention");
  REQUIRE(b.heads.has_value());
  CHECK(*b.heads == 4);
  CHECK(*b.head_dim == 16);
  CHECK(b.heads_from.find("head size 16 from Reshape") == 0);
  CHECK(b.total == 16640);  // 4 x (64 x 64 + 64)
}

TEST_CASE("com.microsoft LongformerAttention counts both packed Q/K/V sets", "[fused]") {
  // inputs: input, weight [64, 192], bias [192], mask, global_weight [64, 192], global_bias [192],
  // global: q, k and v each get a third of both sets: 2 x (64 x 64) weight + 2 x 64 bias = 8,320.
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  n.input("mask", {1, 8});
  n.input("global", {1, 8}, onnx::TensorProto::INT32);
  auto* a = n.op("LongformerAttention",
                 {"x", n.init("attn.w", {64, 192}), n.init("attn.b", {192}), "mask", n.init("attn.gw", {64, 192}),
                  n.init("attn.gb", {192}), "global"},
                 "attn_out", "com.microsoft");
  a->set_name("attn");
  testutil::attr_int(a, "num_heads", 4);
  testutil::attr_int(a, "window", 2);
  n.linear("attn_out", "attn.o", 64, 64);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  CHECK(b.form == "LongformerAttention");
  for (Role role : {Role::Q, Role::K, Role::V}) {
    INFO(role_name(role));
    CHECK(b.projection(role).weight == 8192);  // 2 x 64 x 64
    CHECK(b.projection(role).bias == 128);     // 2 x 64
    CHECK(b.projection(role).tensors.size() == 4);
  }
  CHECK(b.o.total() == 4160);               // 64 x 64 + 64
  CHECK(b.total == 3 * 8320 + 4160);        // 29,120
  CHECK(r->result.parameters == 2 * (64 * 192 + 192) + 4160);  // each tensor once: 29,120
  REQUIRE(b.notes.size() == 1);
  CHECK(b.notes[0] == "Q, K and V include the global-attention weights 'attn.gw' (inputs 4 and 5)");
}

TEST_CASE("fused op whose weights are not constants: the block is kept and the notes say why", "[fused]") {
  SECTION("com.microsoft Attention with the packed weight as a graph input of unknown shape") {
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    n.input("w", {64, -1});  // a symbolic dim: nothing proves it is the packed [64, 192] weight
    auto* a = n.op("Attention", {"x", "w", n.init("attn.qkv.bias", {192})}, "attn_out", "com.microsoft");
    a->set_name("attn");
    testutil::attr_int(a, "num_heads", 4);
    n.linear("attn_out", "attn.o", 64, 64);
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK(b.form == "Attention");
    CHECK(b.heads == 4);  // still known from num_heads
    CHECK_FALSE(b.q.found);
    CHECK_FALSE(b.k.found);
    CHECK_FALSE(b.v.found);
    CHECK(b.o.found);
    REQUIRE(b.notes.size() == 1);
    CHECK(b.notes[0] == "Attention weight input 'w' is not a constant");
    CHECK(b.total == 4160);  // only O: 64 x 64 + 64
    CHECK(r->result.parameters == 4160);
  }
  SECTION("com.microsoft Attention with the packed weight as a graph input declared [64, 192]") {
    // The packed weight is fed at run time: Q, K and V are found, a third of it each (64 -> 64),
    // nothing of it stored. The bias [192] is stored, a third each: 64. Total: 3 x 64 + O
    // (64 x 64 + 64 = 4,160) = 4,352.
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    n.input("w", {64, 192});
    auto* a = n.op("Attention", {"x", "w", n.init("attn.qkv.bias", {192})}, "attn_out", "com.microsoft");
    a->set_name("attn");
    testutil::attr_int(a, "num_heads", 4);
    n.linear("attn_out", "attn.o", 64, 64);
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK(b.head_dim == 16);  // 64 / 4
    for (const Projection* p : {&b.q, &b.k, &b.v}) {
      CHECK(p->found);
      CHECK(p->weight_input == "w");
      CHECK(p->weight == 0);
      CHECK(p->bias == 64);
      CHECK(p->out_width == 64);
    }
    REQUIRE(b.notes.size() == 1);
    CHECK(b.notes[0] == "Q, K and V weights are fed at run time as the graph input 'w' (Q 64 → 64, K 64 → 64, V 64 → 64): "
                        "nothing of them is stored, so they add 0 here (12,288 weights by the declared shape)");
    CHECK(b.total == 4352);
  }
  SECTION("MultiHeadAttention whose query is a graph input") {
    GraphBuilder n;
    n.input("x", {1, 8, 64});
    n.input("query", {1, 8, 64});
    std::string k = n.linear("x", "mha.k", 64, 64);
    std::string v = n.linear("x", "mha.v", 64, 64);
    auto* a = n.op("MultiHeadAttention", {"query", k, v}, "mha_out", "com.microsoft");
    testutil::attr_int(a, "num_heads", 4);
    n.linear("mha_out", "mha.o", 64, 64);
    auto r = testutil::matched(n.m);
    REQUIRE(r->result.blocks.size() == 1);
    const AttentionBlock& b = r->result.blocks[0];
    CHECK_FALSE(b.q.found);
    CHECK(b.k.total() == 4160);  // 64 x 64 + 64
    REQUIRE(b.notes.size() == 1);
    CHECK(b.notes[0] == "Q projection not found: it comes from the graph input 'query' without a projection");
    CHECK(b.total == 3 * 4160);  // K, V and O: 3 x (4,096 + 64) = 12,480
  }
}

TEST_CASE("MatMulNBits projections count K x N logical elements, not packed bytes", "[fused]") {
  GraphBuilder n;
  n.input("x", {1, 8, 64});
  std::vector<std::string> qkv;
  for (const char* role : {"q", "k", "v"}) {
    std::string p = std::string("mha.") + role;
    // MatMulNBits B is [N, n_blocks, blob]: N = 64, K / block_size = 64 / 64 = 1 block,
    // blob = block_size x bits / 8 = 64 x 4 / 8 = 32 bytes; scales [N x n_blocks] = [64].
    auto* mm = n.op("MatMulNBits", {"x", n.init(p + ".qweight", {64, 1, 32}, onnx::TensorProto::UINT8),
                                    n.init(p + ".scales", {64})},
                    p + "/MatMulNBits", "com.microsoft");
    testutil::attr_int(mm, "K", 64);
    testutil::attr_int(mm, "N", 64);
    testutil::attr_int(mm, "bits", 4);
    testutil::attr_int(mm, "block_size", 64);
    qkv.push_back(p + "/MatMulNBits");
  }
  auto* a = n.op("MultiHeadAttention", qkv, "mha_out", "com.microsoft");
  testutil::attr_int(a, "num_heads", 4);
  n.linear("mha_out", "mha.o", 64, 64, false);
  auto r = testutil::matched(n.m);
  REQUIRE(r->result.blocks.size() == 1);
  const AttentionBlock& b = r->result.blocks[0];
  for (Role role : {Role::Q, Role::K, Role::V}) {
    const Projection& p = b.projection(role);
    INFO("role " << role_name(role));
    CHECK(p.weight == 4096);  // K x N = 64 x 64 = 4,096 logical elements (stored: 64 x 1 x 32 = 2,048 bytes)
    CHECK(p.in_width == 64);   // K
    CHECK(p.out_width == 64);  // N
    REQUIRE(p.tensors.size() == 1);
    CHECK(p.tensors[0].elements == 4096);
    CHECK(r->model.weights[p.tensors[0].weight].bytes == 2048);  // 64 x 1 x 32 uint8
    CHECK(p.tensors[0].slice == "logical K x N from attributes (packed 2048 stored elements)");
  }
  CHECK(b.heads == 4);
  CHECK(b.head_dim == 16);  // 64 / 4
  CHECK(b.total == 16384);  // 3 x 4,096 + O 64 x 64 = 16,384
  CHECK(r->result.parameters == 16384);
}
