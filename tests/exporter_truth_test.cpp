// exporter_truth_test.cpp: attention as exporters and fusion tools nobody here wrote lay it out,
// each rebuilt by hand: a transposed key reshaped before the scores (PyTorch's scaled-dot-product
// path), a Reshape target folded from run-time pieces (paddle2onnx), one weight used by two
// projections, K/V read from a cache, a fused MultiHeadAttention with a packed bias and past K/V,
// the ONNX Attention operator with its shapes declared, and DecoderMaskedMultiHeadAttention.
//
// Every expected count is worked by hand in the comment beside it from DOMAIN.md section 1:
// Q: w x (h*d) + h*d, K: w x (h_kv*d) + h_kv*d, V: w x (h_kv*dv) + h_kv*dv, O: (h*dv) x w + w.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "headcount/explain.h"
#include "headcount/audit.h"

using namespace headcount;
using testutil::GraphBuilder;

namespace {

std::vector<Finding> with_rule(const Audit& a, const std::string& rule) {
  std::vector<Finding> out;
  std::copy_if(a.findings.begin(), a.findings.end(), std::back_inserter(out), [&](const Finding& f) { return f.rule == rule; });
  return out;
}

bool has_note(const AttentionBlock& b, const std::string& text) {
  return std::any_of(b.notes.begin(), b.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// The scores, Softmax and weighted sum of one unfused core, then the heads merged back ([B, h, S,
// d] -> [B, S, h·d], after a reshape to 4-D when the core ran on [B·h, S, d]) and the output
// projection: returns the output projection's output.
std::string core_and_output(GraphBuilder& n, const std::string& q, const std::string& k, const std::string& v,
                            std::vector<int64_t> merge, int64_t out_in, int64_t width,
                            std::vector<int64_t> context_4d = {}) {
  n.op("MatMul", {q, k}, "scores");
  if (n.shared.insert("scale").second) n.init("scale", {}, onnx::TensorProto::FLOAT);
  n.op("Mul", {"scores", "scale"}, "scaled");
  testutil::attr_int(n.op("Softmax", {"scaled"}, "probs"), "axis", -1);
  std::string context = n.op("MatMul", {"probs", v}, "context")->output(0);
  if (!context_4d.empty()) context = n.reshape(context, context_4d, "context_4d");
  std::string merged = n.reshape(n.transpose(context, {0, 2, 1, 3}, "context_t"), merge, "context_r");
  return n.linear(merged, "o", out_in, width);
}

}  // namespace

TEST_CASE("a transposed key reshaped before the scores is not a Q/K head-size mismatch", "[exporter]") {
  // PyTorch's scaled-dot-product export: x [1, 5, 64]; Q, K, V each 64 -> 64 with biases, split
  // into 4 heads of 16. K is transposed to Kᵀ [1, 4, 16, 5] and then reshaped, so the Reshape
  // nearest the scores ends in the sequence length 5, not the head size 16. MatMul(Q, Kᵀ)
  // contracts Q's last axis (16) with Kᵀ's second-to-last (16): the sizes agree.
  for (bool merged_batch : {true, false}) {
    INFO((merged_batch ? "Kᵀ reshaped to [B·h, d, L] = [4, 16, 5]" : "Kᵀ reshaped to [B, h, d, L] = [1, 4, 16, 5]"));
    GraphBuilder n;
    n.input("x", {1, 5, 64});
    auto split = [&](const std::string& role, std::vector<int64_t> perm) {
      return n.transpose(n.reshape(n.linear("x", role, 64, 64), {1, 5, 4, 16}, role + "/split"), perm, role + "/heads");
    };
    std::string q = split("q", {0, 2, 1, 3}), k = split("k", {0, 2, 3, 1}), v = split("v", {0, 2, 1, 3});
    if (merged_batch) {
      q = n.reshape(q, {4, 5, 16}, "q/bh");
      k = n.reshape(k, {4, 16, 5}, "k/bh");
      v = n.reshape(v, {4, 5, 16}, "v/bh");
    } else {
      k = n.reshape(k, {1, 4, 16, 5}, "k/again");
    }
    n.output(core_and_output(n, q, k, v, {1, 5, 64}, 64, 64,
                             merged_batch ? std::vector<int64_t>{1, 4, 5, 16} : std::vector<int64_t>{}));
    auto r = testutil::audited(n.m);
    REQUIRE(r->audit.attention.blocks.size() == 1);
    const AttentionBlock& b = r->audit.attention.blocks[0];
    CHECK(b.heads == 4);     // 64 / 16
    CHECK(b.head_dim == 16);
    CHECK(b.k_head_dim == 16);  // Kᵀ's second-to-last axis, where it meets Q
    CHECK(b.total == 16640);    // 4 x (64 x 64 + 64)
    CHECK(with_rule(r->audit, "qk-dim-mismatch").empty());
    CHECK(with_rule(r->audit, "width-mismatch").empty());
  }
}

TEST_CASE("a Reshape target folded from run-time pieces keeps its constant elements", "[exporter]") {
  // paddle2onnx: x [1, L, 120] -> packed Q/K/V [120, 360] + bias [360] -> Reshape to
  // [0, ?, 3, 8, 15], where ? is Cast(seq_len), a run-time [1] tensor -> Transpose to
  // [3, B, 8, L, 15] -> Gather 0, 1, 2 give Q, K, V. The target's last element 15 is the head size:
  // 120 / 15 = 8 heads. Each role takes a third: weight 120 x 120 = 14,400, bias 120.
  GraphBuilder n;
  n.input("x", {1, -1, 120});
  n.input("seq_len", {1}, onnx::TensorProto::INT32);
  std::string qkv = n.linear("x", "qkv", 120, 360);
  testutil::attr_int(n.op("Cast", {"seq_len"}, "seq_i64"), "to", onnx::TensorProto::INT64);
  testutil::attr_int(n.op("Concat", {n.ints({0}), "seq_i64", n.ints({3, 8, 15})}, "target"), "axis", 0);
  n.op("Reshape", {qkv, "target"}, "qkv5");
  n.transpose("qkv5", {2, 0, 3, 1, 4}, "qkv_t");
  for (int i = 0; i < 3; ++i) {
    const char* role[] = {"q", "k", "v"};
    testutil::attr_int(n.op("Gather", {"qkv_t", n.ints({i}, true)}, role[i]), "axis", 0);
  }
  n.transpose("k", {0, 1, 3, 2}, "k_t");
  std::string y = core_and_output(n, "q", "k_t", "v", {0, 0, 120}, 120, 120);
  n.output(y);
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.heads == 8);
  CHECK(b.head_dim == 15);
  CHECK(b.heads_from == "head size 15 from Reshape 'qkv5' target [0, ?, 3, 8, 15] on the Q path; 120 / 15 = 8 heads");
  CHECK(b.q.weight == 14400);  // 120 x 120: columns 0:120 of 360
  CHECK(b.q.bias == 120);
  CHECK(b.k.weight == 14400);
  CHECK(b.v.weight == 14400);
  CHECK(b.o.total() == 14520);  // 120 x 120 + 120
  CHECK(b.q.tensors[0].slice == "columns 0:120 of 360");
  CHECK(b.v.tensors[0].slice == "columns 240:360 of 360");
}

TEST_CASE("one weight used whole by Q and K is shared, not a packed tensor split in half", "[exporter]") {
  // Shared-QK attention: Q = x W and K = x W with the same W [64, 64] (two MatMul nodes), V = x
  // W_v, all without biases; 8 heads of 8. Each projection is 64 x 64 = 4,096; the block holds
  // 4 x 4,096 = 16,384, and the model's attention total counts W once: 3 x 4,096 = 12,288.
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.init("w_qk", {64, 64});
  n.op("MatMul", {"x", "w_qk"}, "q_proj");
  n.op("MatMul", {"x", "w_qk"}, "k_proj");
  std::string v = n.linear("x", "v", 64, 64, false);
  std::string q = n.transpose(n.reshape("q_proj", {0, 0, 8, 8}, "q/split"), {0, 2, 1, 3}, "q/heads");
  std::string k = n.transpose(n.reshape("k_proj", {0, 0, 8, 8}, "k/split"), {0, 2, 3, 1}, "k/heads");
  v = n.transpose(n.reshape(v, {0, 0, 8, 8}, "v/split"), {0, 2, 1, 3}, "v/heads");
  n.output(core_and_output(n, q, k, v, {0, 0, 64}, 64, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.heads == 8);  // 64 / 8, as the Reshape says (not 4 from half a tensor)
  CHECK(b.q.weight == 4096);
  CHECK(b.k.weight == 4096);
  CHECK(b.q.tensors[0].slice.empty());
  CHECK(b.k.tensors[0].slice.empty());
  CHECK(b.total == 16384 + 64);  // four projections of 4,096, plus the output projection's bias of 64
  CHECK(r->audit.attention.parameters == 12288 + 64);
  CHECK(has_note(b, "Q and K use the same weight tensor 'w_qk' whole"));
  CHECK(with_rule(r->audit, "width-mismatch").empty());
  CHECK(with_rule(r->audit, "bias-inconsistent").size() == 1);  // only O has a bias: true
  auto shared = with_rule(r->audit, "shared-weights");
  REQUIRE(shared.size() == 1);
  CHECK(shared[0].message == "tensor 'w_qk' (4,096 parameters) is used by several projections of block 0 and counted "
                             "once in the totals");
  CHECK_THAT(explain_block(r->audit, 0), Catch::Contains("Q and K use the same weight tensor 'w_qk' whole"));
}

TEST_CASE("cross-attention whose K and V come from a cache is still a block", "[exporter]") {
  // A decoder with past state: Q = x W_q + b_q [64 -> 64], K and V are the graph inputs
  // past_key / past_value [1, 4, 7, 16] (the encoder's cached K/V), O [64 -> 64] + b_o. Q and O
  // are counted (64 x 64 + 64 = 4,160 each: 8,320 for the block); K and V name their inputs.
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.input("past_key", {1, 4, 7, 16});
  n.input("past_value", {1, 4, 7, 16});
  std::string q = n.transpose(n.reshape(n.linear("x", "q", 64, 64), {0, 0, 4, 16}, "q/split"), {0, 2, 1, 3}, "q/heads");
  std::string k = n.transpose("past_key", {0, 1, 3, 2}, "k_t");
  n.output(core_and_output(n, q, k, "past_value", {0, 0, 64}, 64, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  CHECK(r->audit.attention.unmatched.empty());
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.kind == "cross");
  CHECK(b.q.total() == 4160);
  CHECK(b.o.total() == 4160);
  CHECK(b.total == 8320);
  CHECK(!b.k.found);
  CHECK(b.k.from_input == "past_key");
  CHECK(b.v.from_input == "past_value");
  CHECK(b.heads == 4);       // Q's Reshape [0, 0, 4, 16]
  CHECK(b.kv_heads == 4);    // axis 1 of past_key, where Q's axis 1 holds the 4 heads
  CHECK(b.head_dim == 16);
  CHECK(b.v_head_dim == 16);  // past_value's last axis
  CHECK(with_rule(r->audit, "bias-inconsistent").empty());  // K and V have no projection here to compare
  CHECK(with_rule(r->audit, "unmatched-softmax").empty());
  std::string derivation = explain_block(r->audit, 0);
  CHECK_THAT(derivation, Catch::Contains("K  from the graph input 'past_key': projected outside this graph"));
}

TEST_CASE("fused MultiHeadAttention with past K/V and a packed bias splits the bias onto Q, K and V", "[exporter]") {
  // onnxruntime's decoder cross-attention: Q = x W_q [64 -> 64] without bias, key and value are
  // the cached [1, 4, 7, 16] inputs, bias [192] = [q | k | v] of 64 each, num_heads 4, then O.
  // Q: 4,096 + 64; K: bias 64 (elements 64:128); V: bias 64 (128:192); O: 4,096 + 64.
  // Block: 4,160 + 64 + 64 + 4,160 = 8,448.
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.input("past_key", {1, 4, 7, 16});
  n.input("past_value", {1, 4, 7, 16});
  std::string q = n.linear("x", "q", 64, 64, false);
  auto* mha = n.op("MultiHeadAttention", {q, "past_key", "past_value", n.init("qkv_bias", {192})}, "attn", "com.microsoft");
  testutil::attr_int(mha, "num_heads", 4);
  n.output(n.linear("attn", "o", 64, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.q.weight == 4096);
  CHECK(b.q.bias == 64);
  CHECK(b.q.tensors[1].slice == "elements 0:64 of 192");
  CHECK(b.k.bias == 64);
  CHECK(b.k.from_input == "past_key");
  REQUIRE(b.k.tensors.size() == 1);
  CHECK(b.k.tensors[0].slice == "elements 64:128 of 192");
  CHECK(b.v.bias == 64);
  CHECK(b.v.tensors[0].slice == "elements 128:192 of 192");
  CHECK(b.total == 8448);
  CHECK(r->audit.attention.parameters == 8448);
  CHECK(b.heads == 4);
  CHECK(b.kv_heads == 4);
  CHECK(b.head_dim == 16);   // 64 / 4
  CHECK(b.v_head_dim == 16);  // the value input's shape [1, 4, 7, 16]
  CHECK(with_rule(r->audit, "bias-inconsistent").empty());
}

TEST_CASE("ONNX Attention without q_num_heads reads heads and head sizes from its inputs' declared shapes", "[exporter]") {
  // Opset 23 Attention with 4-D inputs whose head split upstream is computed at run time, but
  // whose shapes are declared: Q [1, 4, 5, 16], K [1, 2, 5, 16], V [1, 2, 5, 32]. So 4 heads of
  // 16, 2 K/V heads (GQA), V heads of 32. Q 64 -> 64, K 64 -> 32, V 64 -> 64 without biases;
  // O [4 x 32 = 128 -> 64] with bias. 4,096 + 2,048 + 4,096 + 8,192 + 64 = 18,496.
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(23);
  n.input("x", {1, 5, 64});
  n.input("target", {4}, onnx::TensorProto::INT64);  // a head split computed at run time
  const char* roles[] = {"q", "k", "v"};
  int64_t outs[] = {64, 32, 64};
  std::vector<std::vector<int64_t>> shapes = {{1, 4, 5, 16}, {1, 2, 5, 16}, {1, 2, 5, 32}};
  for (int i = 0; i < 3; ++i) {
    std::string r = roles[i];
    n.op("Reshape", {n.linear("x", r, 64, outs[i], false), "target"}, r + "/split");
    n.transpose(r + "/split", {0, 2, 1, 3}, r + "/heads");
    n.declare(r + "/heads", shapes[static_cast<size_t>(i)]);
  }
  n.op("Attention", {"q/heads", "k/heads", "v/heads"}, "attn4")->set_name("attn");
  n.output(n.linear(n.reshape(n.transpose("attn4", {0, 2, 1, 3}, "attn_t"), {0, 0, 128}, "attn_r"), "o", 128, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.heads == 4);
  CHECK(b.kv_heads == 2);
  CHECK(b.head_dim == 16);
  CHECK(b.v_head_dim == 32);
  CHECK(b.heads_from == "axis 1 of the shape [1, 4, 5, 16] of Attention 'attn''s query 'q/heads'");
  CHECK(b.total == 18496);
  auto gqa = with_rule(r->audit, "grouped-kv");
  REQUIRE(gqa.size() == 1);
  CHECK(gqa[0].message.find(" 0 ") == std::string::npos);  // no unknown shown as 0
}

TEST_CASE("ONNX Attention with 3-D inputs: head sizes follow from the widths and the head attributes", "[exporter]") {
  // q_num_heads 4, kv_num_heads 2: Q 64 -> 64 gives 64 / 4 = 16 per head; V 64 -> 32 gives
  // 32 / 2 = 16 per K/V head. The grouped-kv finding states the real widths: K and V project
  // 64 → 32 instead of 64.
  GraphBuilder n;
  n.m.mutable_opset_import(0)->set_version(23);
  n.input("x", {1, 5, 64});
  auto* a = n.op("Attention", {n.linear("x", "q", 64, 64), n.linear("x", "k", 64, 32), n.linear("x", "v", 64, 32)}, "attn");
  testutil::attr_int(a, "q_num_heads", 4);
  testutil::attr_int(a, "kv_num_heads", 2);
  n.output(n.linear("attn", "o", 64, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.head_dim == 16);
  CHECK(b.v_head_dim == 16);
  auto gqa = with_rule(r->audit, "grouped-kv");
  REQUIRE(gqa.size() == 1);
  CHECK_THAT(gqa[0].message, Catch::StartsWith("4 query heads share 2 K/V heads (groups of 2): K and V project 64 → 32 "
                                               "instead of 64"));
}

TEST_CASE("DecoderMaskedMultiHeadAttention takes its packed bias from input 10", "[exporter]") {
  // inputs: query, key, value, mask_index, attention_bias, past_key, past_value,
  // past_sequence_length, beam_width, cache_indirection, bias [192]. Q/K/V 64 -> 64 without
  // biases; the bias gives each 64. 3 x (4,096 + 64) + O (4,096 + 64) = 16,640.
  GraphBuilder n;
  n.input("x", {1, 1, 64});
  std::vector<std::string> in = {n.linear("x", "q", 64, 64, false), n.linear("x", "k", 64, 64, false),
                                 n.linear("x", "v", 64, 64, false), "", "", "", "", "", "", "", n.init("qkv_bias", {192})};
  testutil::attr_int(n.op("DecoderMaskedMultiHeadAttention", in, "attn", "com.microsoft"), "num_heads", 4);
  n.output(n.linear("attn", "o", 64, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  CHECK(b.q.bias == 64);
  CHECK(b.k.bias == 64);
  CHECK(b.v.bias == 64);
  CHECK(b.v.tensors[1].slice == "elements 128:192 of 192");
  CHECK(b.total == 16640);
  CHECK(with_rule(r->audit, "bias-inconsistent").empty());
}

TEST_CASE("the score path passes casts, masks, soft-capping and learned pieces, and names them", "[exporter]") {
  // x [1, 5, 64] -> Q, K, V 64 -> 64 without biases, 4 heads of 16; between MatMul(Q, Kᵀ) and the
  // Softmax: Div by √16, Div by 50 -> Tanh -> Mul by 50 (soft-capping), Mul by a learned [1, 4, 1, 1]
  // temperature, Where(mask, s, -inf), Cast to float32; after it a Cast back, then MatMul with V.
  // The block: 4 x 4,096 + O's bias 64 + the temperature's 4 = 16,452.
  GraphBuilder n;
  n.input("x", {1, 5, 64});
  n.input("mask", {1, 1, 5, 5}, onnx::TensorProto::BOOL);
  auto heads = [&](const std::string& r, std::vector<int64_t> perm) {
    return n.transpose(n.reshape(n.linear("x", r, 64, 64, false), {0, 0, 4, 16}, r + "/split"), perm, r + "/heads");
  };
  std::string q = heads("q", {0, 2, 1, 3}), k = heads("k", {0, 2, 3, 1}), v = heads("v", {0, 2, 1, 3});
  for (const char* c : {"sqrt_d", "cap", "minus_inf"}) n.init(c, {}, onnx::TensorProto::FLOAT);
  n.init("temperature", {1, 4, 1, 1});
  n.op("MatMul", {q, k}, "scores");
  n.op("Div", {"scores", "sqrt_d"}, "scaled");
  n.op("Div", {"scaled", "cap"}, "capped_in");
  n.op("Tanh", {"capped_in"}, "capped_t");
  n.op("Mul", {"capped_t", "cap"}, "capped");
  n.op("Mul", {"capped", "temperature"}, "tempered");
  n.op("Where", {"mask", "tempered", "minus_inf"}, "masked");
  testutil::attr_int(n.op("Cast", {"masked"}, "as_f32"), "to", onnx::TensorProto::FLOAT);
  testutil::attr_int(n.op("Softmax", {"as_f32"}, "probs"), "axis", -1);
  testutil::attr_int(n.op("Cast", {"probs"}, "probs_back"), "to", onnx::TensorProto::FLOAT);
  n.op("MatMul", {"probs_back", v}, "context");
  n.output(n.linear(n.reshape(n.transpose("context", {0, 2, 1, 3}, "context_t"), {0, 0, 64}, "merged"), "o", 64, 64));
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.attention.blocks.size() == 1);
  const AttentionBlock& b = r->audit.attention.blocks[0];
  std::vector<std::string> path = {"MatMul", "Div", "Div", "Tanh", "Mul", "Mul(head scale)", "Where(mask)", "Cast", "Softmax"};
  CHECK(b.score_path == path);
  REQUIRE(b.extras.size() == 1);
  CHECK(b.extras[0].role == ExtraRole::HeadScale);
  CHECK(b.extras[0].elements == 4);
  CHECK(b.total == 16452);
  CHECK(r->audit.attention.parameters == 16452);
  CHECK_THAT(explain_block(r->audit, 0),
             Catch::Contains("scores     MatMul → Div → Div → Tanh → Mul → Mul(head scale) → Where(mask) → Cast → Softmax"));
  CHECK_THAT(explain_block(r->audit, 0), Catch::Contains("extra  head_scale temperature [1, 4, 1, 1]: 4"));
}

TEST_CASE("the ONNX Attention operator's own forms: heads and head sizes from 3-D and 4-D shapes", "[exporter]") {
  // Conformance-style graphs: Q, K, V and the caches are graph inputs (no projections in the graph).
  auto attention = [](std::vector<std::vector<int64_t>> shapes, int64_t q_heads, int64_t kv_heads, bool past) {
    GraphBuilder n;
    n.m.mutable_opset_import(0)->set_version(23);
    std::vector<std::string> in = {"Q", "K", "V"};
    for (int i = 0; i < 3; ++i) n.input(in[static_cast<size_t>(i)], shapes[static_cast<size_t>(i)]);
    if (past) {
      n.input("attn_mask", {4, 11});
      n.input("past_key", shapes[3]);
      n.input("past_value", shapes[4]);
      in.insert(in.end(), {"attn_mask", "past_key", "past_value"});
    }
    auto* a = n.op("Attention", in, "Y");
    if (q_heads) testutil::attr_int(a, "q_num_heads", q_heads);
    if (kv_heads) testutil::attr_int(a, "kv_num_heads", kv_heads);
    n.output("Y");
    auto r = testutil::audited(n.m);
    REQUIRE(r->audit.attention.blocks.size() == 1);
    return std::make_pair(r->audit.attention.blocks[0], r->audit.findings);
  };
  SECTION("4-D, a V head size of its own, a mask and past K/V: [B, h, L, d] gives h and d") {
    // Q [2, 3, 4, 8], K [2, 3, 6, 8], V [2, 3, 6, 10], past [2, 3, 5, 8] and [2, 3, 5, 10].
    auto [b, findings] = attention({{2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 10}, {2, 3, 5, 8}, {2, 3, 5, 10}}, 0, 0, true);
    CHECK(b.heads == 3);
    CHECK(b.kv_heads == 3);
    CHECK(b.head_dim == 8);
    CHECK(b.v_head_dim == 10);
    CHECK(b.total == 0);  // nothing to count: Q, K and V are inputs
    CHECK(b.heads_from == "axis 1 of the shape [2, 3, 4, 8] of Attention 'Y''s query 'Q'");
  }
  SECTION("4-D grouped-query: 9 query heads over 3 K/V heads") {
    auto [b, findings] = attention({{2, 9, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 8}}, 0, 0, false);
    CHECK(b.heads == 9);
    CHECK(b.kv_heads == 3);
    CHECK(b.head_dim == 8);
    CHECK(b.v_head_dim == 8);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].message == "9 query heads share 3 K/V heads (groups of 3): K and V have fewer heads than Q; their "
                                 "projections are not in this graph. This is grouped-query attention (GQA), not a mismatch.");
  }
  SECTION("3-D with head attributes: head sizes are the widths over the heads") {
    // Q [2, 4, 24] with 3 heads: 24 / 3 = 8; V [2, 6, 30] over 3 K/V heads: 30 / 3 = 10.
    auto [b, findings] = attention({{2, 4, 24}, {2, 6, 24}, {2, 6, 30}}, 3, 3, false);
    CHECK(b.heads == 3);
    CHECK(b.kv_heads == 3);
    CHECK(b.head_dim == 8);
    CHECK(b.v_head_dim == 10);
    CHECK(b.heads_from == "attribute q_num_heads of Attention 'Y', kv_num_heads 3");
  }
  SECTION("3-D grouped-query with past K/V in 4-D") {
    // Q [2, 4, 48] with 6 heads of 8, K/V [2, 6, 16] over 2 K/V heads of 8; past [2, 2, 5, 8].
    auto [b, findings] = attention({{2, 4, 48}, {2, 6, 16}, {2, 6, 16}, {2, 2, 5, 8}, {2, 2, 5, 8}}, 6, 2, true);
    CHECK(b.heads == 6);
    CHECK(b.kv_heads == 2);
    CHECK(b.head_dim == 8);
    CHECK(b.v_head_dim == 8);
  }
}
