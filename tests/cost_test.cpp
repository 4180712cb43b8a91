// cost_test.cpp: the K/V cache and MACs per token, on graphs shaped like published models. Every
// expected number is worked by hand in the comment beside it from the layer shapes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "headcount/cost.h"
#include "headcount/audit.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;
using testutil::CliResult;
using testutil::cli;
using Json = nlohmann::json;

namespace {

constexpr int32_t kFp16 = onnx::TensorProto::FLOAT16;

// A decoder of `layers` unfused self-attention layers in LLaMA's shape: width 4096, 32 query
// heads of 128, `kv_heads` K/V heads repeated to 32 by Unsqueeze/Expand/Reshape, no biases,
// float16 weights in an external file that is not there: every count comes from the dims.
struct Llama : testutil::GraphBuilder {
  int64_t width = 4096, heads = 32, head_dim = 128;
  int64_t offset = 0;

  // A float16 weight [in, out] at the next offset of weights.bin, which is never written.
  std::string external_weight(const std::string& name, int64_t in, int64_t out) {
    onnx::TensorProto t = testutil::tensor(name, {in, out}, kFp16, /*no_data=*/true);
    testutil::set_external(t, "weights.bin", offset, in * out * 2);
    offset += in * out * 2;
    *g->add_initializer() = t;
    return name;
  }
  std::string matmul(const std::string& a, const std::string& b, const std::string& out) {
    op("MatMul", {a, b}, out);
    return out;
  }
  // Returns the layer's output.
  std::string layer(const std::string& x, int l, int64_t kv_heads) {
    std::string p = "layers." + std::to_string(l);
    std::string q = matmul(x, external_weight(p + ".q_proj.weight", width, heads * head_dim), p + "/q");
    q = transpose(reshape(q, {0, 0, heads, head_dim}, p + "/q4"), {0, 2, 1, 3}, p + "/qt");
    std::string kv[2];
    const char* names[] = {"k", "v"};
    for (int i = 0; i < 2; ++i) {
      std::string r = p + "/" + names[i];
      std::string y = matmul(x, external_weight(p + "." + names[i] + "_proj.weight", width, kv_heads * head_dim), r);
      y = transpose(reshape(y, {0, 0, kv_heads, head_dim}, r + "4"), {0, 2, 1, 3}, r + "t");
      if (kv_heads != heads) {
        op("Unsqueeze", {y, ints({2})}, r + "_u");
        op("Expand", {r + "_u", ints({1, 1, heads / kv_heads, 1, 1})}, r + "_e");
        y = reshape(r + "_e", {0, heads, -1, head_dim}, r + "_r");
      }
      kv[i] = y;
    }
    std::string kt = transpose(kv[0], {0, 1, 3, 2}, p + "/kT");
    std::string s = matmul(q, kt, p + "/scores");
    op("Div", {s, init(p + "/scale", {}, testutil::kFloat)}, p + "/scaled");
    testutil::attr_int(op("Softmax", {p + "/scaled"}, p + "/Softmax"), "axis", -1);
    std::string c = matmul(p + "/Softmax", kv[1], p + "/context");
    c = reshape(transpose(c, {0, 2, 1, 3}, p + "/ct"), {0, 0, heads * head_dim}, p + "/c");
    std::string o = matmul(c, external_weight(p + ".o_proj.weight", heads * head_dim, width), p + "/o");
    op("Add", {x, o}, p + "/residual");
    return p + "/residual";
  }
  Llama(int layers, int64_t kv_heads) {
    input("x", {1, -1, width}, kFp16);
    std::string x = "x";
    for (int l = 0; l < layers; ++l) x = layer(x, l, kv_heads);
    output(x);
  }
};

Json model_json(const CliResult& r) {
  Json doc = Json::parse(r.out);
  REQUIRE(doc["models"].size() == 1);
  return doc["models"][0];
}

}  // namespace

TEST_CASE("cost: a LLaMA-2-7B-shaped decoder keeps 524,288 K/V bytes per token", "[cost]") {
  testutil::TempDir dir;
  testutil::save(Llama(32, 32).m, dir.file("llama.onnx"));
  CliResult r = cli({"audit", dir.file("llama.onnx"), "-f", "json", "--context", "4096"});
  CHECK(r.code == 0);
  Json m = model_json(r);
  REQUIRE(m["attention_blocks"].size() == 32);
  const Json& c = m["cost"];
  // Per layer: 32 K/V heads x (128 + 128) features x 2 bytes (float16) = 16,384 bytes;
  // 32 layers: 524,288 (512 KiB). At 4,096 tokens: 524,288 x 4,096 = 2,147,483,648 (2 GiB).
  CHECK(c["kv"]["bytes_per_token"] == 524288u);
  CHECK(c["kv"]["bytes_at_context"] == 2147483648u);
  CHECK(c["kv"]["lower_bound"] == false);
  CHECK(c["kv"]["full_mha_bytes_per_token"].is_null());  // not grouped
  CHECK(c["blocks"][0]["dtype"] == "float16");
  // Projections: 4 x 4096 x 4096 = 67,108,864 MACs per layer and token; 32 layers: 2,147,483,648.
  CHECK(c["macs"]["attention_projections"] == 2147483648u);
  // Scores and the weighted sum: 32 heads x (128 + 128) x 4,096 = 33,554,432 per layer;
  // 32 layers: 1,073,741,824.
  CHECK(c["macs"]["attention_scores"] == 1073741824u);
  CHECK(c["macs"]["per_token"] == 3221225472u);  // 2,147,483,648 + 1,073,741,824
  // The weights were never read: they are not even there.
  CHECK(m["parameters"]["stored"] == 2147483680u);  // 32 x 4 x 4096^2, and the 32 scalar scales

  // The text report says the same.
  r = cli({"audit", dir.file("llama.onnx"), "--context", "4096"});
  INFO(r.out.substr(r.out.find("inference cost"), 400));
  CHECK(r.out.find("  K/V cache   524,288 bytes per token (512.0 KiB), 2,147,483,648 at 4,096 tokens (2.0 GiB); elements\n"
                   "              of float16\n") != std::string::npos);

  SECTION("--batch multiplies the cache, --kv-dtype sets its element size") {
    r = cli({"audit", dir.file("llama.onnx"), "-f", "json", "--context", "4096", "--batch", "2", "--kv-dtype", "int4"});
    CHECK(r.code == 0);
    const Json c2 = model_json(r)["cost"];
    // int4: 32 layers x 32 heads x 256 features x 4 bits / 8 = 131,072; x 4,096 x 2 = 1,073,741,824.
    CHECK(c2["kv"]["bytes_per_token"] == 131072u);
    CHECK(c2["kv"]["bytes_at_context"] == 1073741824u);
    CHECK(c2["blocks"][0]["dtype_from"] == "--kv-dtype");
  }
}

TEST_CASE("cost: grouped and multi-query K/V heads, and what they saved", "[cost]") {
  testutil::TempDir dir;
  SECTION("8 K/V heads: 131,072 bytes per token, 4x less") {
    testutil::save(Llama(32, 8).m, dir.file("gqa.onnx"));
    CliResult r = cli({"audit", dir.file("gqa.onnx"), "-f", "json"});
    CHECK(r.code == 0);
    Json m = model_json(r);
    REQUIRE(m["attention_blocks"][0]["kv_heads"] == 8);
    const Json& c = m["cost"];
    // 8 x (128 + 128) x 2 = 4,096 bytes per layer; x 32 = 131,072. Full: 524,288 (4x).
    CHECK(c["kv"]["bytes_per_token"] == 131072u);
    CHECK(c["kv"]["full_mha_bytes_per_token"] == 524288u);
    // K and V weights: 2 x 4096 x 1024 = 8,388,608 per layer; full: 2 x 4096 x 4096 = 33,554,432;
    // saved 25,165,824 per layer, x 32 = 805,306,368.
    CHECK(c["kv"]["parameters_saved"] == 805306368u);
    r = cli({"audit", dir.file("gqa.onnx")});
    CHECK(r.out.find("  grouped K/V 131,072 per token instead of 524,288 with full multi-head attention: 4x smaller") !=
          std::string::npos);
  }
  SECTION("1 K/V head: 16,384 bytes per token, 32x less") {
    testutil::save(Llama(32, 1).m, dir.file("mqa.onnx"));
    CliResult r = cli({"audit", dir.file("mqa.onnx"), "-f", "json"});
    Json m = model_json(r);
    REQUIRE(m["attention_blocks"][0]["kv_heads"] == 1);
    // 1 x 256 x 2 = 512 bytes per layer; x 32 = 16,384. Full: 524,288 = 32 x 16,384.
    CHECK(m["cost"]["kv"]["bytes_per_token"] == 16384u);
    CHECK(m["cost"]["kv"]["full_mha_bytes_per_token"] == 524288u);
    r = cli({"audit", dir.file("mqa.onnx")});
    CHECK(r.out.find("32x smaller") != std::string::npos);
  }
}

TEST_CASE("cost: cross-attention K/V are counted once per decoder layer, per encoder token", "[cost]") {
  // Two decoder layers on x [B, T, 32], each with self-attention and cross-attention over the
  // encoder's output `memory` [B, S, 32]; 4 heads of 8, float32.
  testutil::GraphBuilder n;
  n.input("x", {1, -1, 32});
  n.input("memory", {1, -1, 32});
  auto attention = [&](const std::string& x, const std::string& kv_source, const std::string& p) {
    std::string q = n.split_heads(n.linear(x, p + ".q", 32, 32, false), p + "/q", 4, 8, {0, 2, 1, 3});
    std::string k = n.split_heads(n.linear(kv_source, p + ".k", 32, 32, false), p + "/k", 4, 8, {0, 2, 3, 1});
    std::string v = n.split_heads(n.linear(kv_source, p + ".v", 32, 32, false), p + "/v", 4, 8, {0, 2, 1, 3});
    std::string o = n.linear(n.core(q, k, v, p, 32), p + ".o", 32, 32, false);
    n.op("Add", {x, o}, p + "/residual");
    return p + "/residual";
  };
  std::string x = "x";
  for (int l = 0; l < 2; ++l) {
    x = attention(x, x, "dec" + std::to_string(l) + ".self");
    x = attention(x, "memory", "dec" + std::to_string(l) + ".cross");
  }
  n.output(x);
  testutil::TempDir dir;
  testutil::save(n.m, dir.file("decoder.onnx"));
  CliResult r = cli({"audit", dir.file("decoder.onnx"), "-f", "json"});
  CHECK(r.code == 0);
  Json doc = model_json(r);
  REQUIRE(doc["attention_blocks"].size() == 4);
  int cross = 0;
  for (const auto& b : doc["attention_blocks"]) cross += b["kind"] == "cross";
  REQUIRE(cross == 2);
  // Each block: (32 + 32) features x 4 bytes = 256. Self: 2 layers = 512 per decoder token;
  // cross: 2 layers = 512 per encoder token, kept apart.
  CHECK(doc["cost"]["kv"]["bytes_per_token"] == 512u);
  CHECK(doc["cost"]["kv"]["cross_bytes_per_encoder_token"] == 512u);
}

TEST_CASE("cost: projection MACs of every block equal its projection weights, on every sample", "[cost]") {
  for (const char* name : {"bert_tiny", "gpt2_tiny", "gqa", "mqa", "mha_cross", "mha_kdim_vdim", "per_head", "per_head_loop",
                           "t5_relative", "qdq_int8", "kv_cache_decoder", "llama_tiny", "transformer"}) {
    INFO(name);
    Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx");
    REQUIRE(a.cost.blocks.size() == a.attention.blocks.size());
    uint64_t sum = 0;
    for (size_t i = 0; i < a.cost.blocks.size(); ++i) {
      const AttentionBlock& b = a.attention.blocks[i];
      // One MAC per weight element per token: the four projections' weights (biases are adds).
      CHECK(a.cost.blocks[i].projection_macs == b.q.weight + b.k.weight + b.v.weight + b.o.weight);
      sum += a.cost.blocks[i].projection_macs;
    }
    CHECK(a.cost.macs_attention_projections == sum);
    CHECK(a.cost.macs_per_token == a.cost.macs_attention_projections + a.cost.macs_attention_scores +
                                       a.cost.macs_feed_forward + a.cost.macs_lm_head + a.cost.macs_other);
  }
}

TEST_CASE("cost: GPT-2's MACs per token, part by part", "[cost]") {
  // gpt2_tiny: 2 layers, width 32, 4 heads of 8, feed-forward 32 -> 128 -> 32, vocabulary 100,
  // the LM head a transposed copy of the embedding. At --context 16:
  //   projections  2 x 4 x 32 x 32        =  8,192
  //   scores       2 x 4 x (8 + 8) x 16   =  2,048
  //   feed-forward 2 x (32 x 128 + 128 x 32) = 16,384
  //   LM head      32 x 100               =  3,200
  //   total                                 29,824; a prompt of 16 tokens: 477,184
  Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/gpt2_tiny.onnx", [] {
    AuditOptions o;
    o.cost.context = 16;
    return o;
  }());
  CHECK(a.cost.macs_attention_projections == 8192u);
  CHECK(a.cost.macs_attention_scores == 2048u);
  CHECK(a.cost.macs_feed_forward == 16384u);
  CHECK(a.cost.macs_lm_head == 3200u);
  CHECK(a.cost.macs_other == 0u);
  CHECK(a.cost.macs_per_token == 29824u);
  CHECK(a.cost.prefill_macs == 477184u);
  // K/V: 2 layers x (32 + 32) x 4 bytes = 512 per token; x 16 = 8,192.
  CHECK(a.cost.kv_bytes_per_token == 512u);
  CHECK(a.cost.kv_bytes_at_context == 8192u);
}

TEST_CASE("gate: --max-kv-bytes-per-token and --max-macs-per-token", "[cost][gate]") {
  testutil::TempDir dir;
  testutil::save(Llama(32, 32).m, dir.file("llama.onnx"));
  const std::string model = dir.file("llama.onnx");
  // 524,288 bytes per token is exactly 512 KiB: the budget is inclusive.
  CHECK(cli({"audit", model, "--max-kv-bytes-per-token", "512KiB"}).code == 0);
  CliResult r = cli({"audit", model, "--max-kv-bytes-per-token", "256KiB"});
  CHECK(r.code == 1);
  // 524,288 - 262,144 = 262,144 over, 100.0% of the budget.
  CHECK(r.err == "headcount: gate failed: " + model +
                     ": max-kv-bytes-per-token: K/V cache bytes per token 524,288 (524.3 kB) exceed the budget of 262,144 "
                     "(262.1 kB) by 262,144 bytes (100.0%)\n");
  // 3,221,225,472 MACs per token at 4,096 (above); at --context 1024 the scores are a quarter:
  // 2,147,483,648 + 268,435,456 = 2,415,919,104.
  CHECK(cli({"audit", model, "--max-macs-per-token", "3221225472"}).code == 0);
  r = cli({"audit", model, "--max-macs-per-token", "2.5B", "--context", "1024"});
  CHECK(r.code == 0);
  r = cli({"audit", model, "--max-macs-per-token", "2.4B", "--context", "1024"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + model +
                     ": max-macs-per-token: MACs per token 2,415,919,104 exceed the budget of 2,400,000,000 by "
                     "15,919,104 (0.7%)\n");
  SECTION("an unknown K/V size fails the gate instead of passing it") {
    // The K projection's weight is int8 with no dequantizing scale: the type K is computed in is
    // not in the graph.
    onnx::ModelProto m = Llama(1, 32).m;
    for (auto& t : *m.mutable_graph()->mutable_initializer()) {
      if (t.name() == "layers.0.k_proj.weight") t.set_data_type(onnx::TensorProto::INT8);
    }
    for (auto& n : *m.mutable_graph()->mutable_node()) {
      if (n.name() == "layers.0/k") n.set_op_type("MatMulInteger");
    }
    testutil::save(m, dir.file("int8k.onnx"));
    r = cli({"audit", dir.file("int8k.onnx"), "--max-kv-bytes-per-token", "1MiB", "-f", "json"});
    CHECK(r.code == 1);
    CHECK(r.err.find(": max-kv-bytes-per-token: K/V cache bytes per token cannot be checked against the budget of "
                     "1,048,576: block 0: unknown: the K projection's weight 'layers.0.k_proj.weight' is int8") !=
          std::string::npos);
    CHECK(model_json(r)["cost"]["kv"]["lower_bound"] == true);
    // With the element size given, it is known: 32 x 256 x 2 = 16,384.
    CHECK(cli({"audit", dir.file("int8k.onnx"), "--max-kv-bytes-per-token", "1MiB", "--kv-dtype", "fp16"}).code == 0);
  }
}

TEST_CASE("explain: the calculator's K/V cache and MACs for L layers", "[cost][explain]") {
  CliResult r = cli({"explain", "--width", "4096", "--heads", "32", "--kv-heads", "8", "--no-bias", "--layers", "32",
                     "--context", "4096"});
  CHECK(r.code == 0);
  // 32 x 8 x (128 + 128) x 2 = 131,072; x 4,096 = 536,870,912; full: 32 x 32 x 256 x 2 = 524,288.
  CHECK(r.out.find("  K/V per token     32 layers × 8 K/V heads × (128 + 128) × 2 bytes = 131,072 bytes (128.0 KiB)\n") !=
        std::string::npos);
  CHECK(r.out.find("131,072 × 4,096 = 536,870,912 bytes (512.0 MiB)\n") != std::string::npos);
  CHECK(r.out.find("= 524,288 bytes per token: grouping K/V into 8 heads keeps 4x less\n") != std::string::npos);
  r = cli({"explain", "--width", "4096", "--heads", "32", "--layers", "32", "--kv-dtype", "fp64"});
  CHECK(r.code == 2);
}
