// shared_models_test.cpp: real exporter outputs in ../shared/models (onnxruntime's transformer
// optimizer and model builder), checked against what their README says a correct audit reports.
// Compiled in only when ../shared/models exists beside the checkout (it does in CI).
#include <catch2/catch.hpp>

#include "headcount/audit.h"

#ifdef HEADCOUNT_HAVE_SHARED_MODELS

using namespace headcount;

namespace {
Audit audit_shared(const std::string& rel) { return audit_file(std::string(HEADCOUNT_SHARED_MODELS_DIR) + "/" + rel); }
}  // namespace

TEST_CASE("shared: GPT-2 with fused com.microsoft Attention", "[shared]") {
  Audit a = audit_shared("gpt2-tiny-fused-attention-fp32.onnx");
  REQUIRE(a.attention.blocks.size() == 5);
  for (const auto& b : a.attention.blocks) {
    CHECK(b.form == "Attention");
    CHECK(*b.heads == 4);
    CHECK(b.width == 32);
    CHECK(*b.head_dim == 8);
    // packed [32, 96]: a third each, 32 x 32 = 1,024
    CHECK(b.q.weight == 1024);
    CHECK(b.k.weight == 1024);
    CHECK(b.v.weight == 1024);
    CHECK(b.o.weight == 1024);  // c_proj [32, 32]
  }
  // Each tensor once: 5 x (3,072 packed + 1,024 c_proj) + the one shared [96] QKV bias + the one
  // shared [32] tensor that SkipLayerNormalization takes as c_proj's folded bias = 20,608.
  CHECK(a.attention.parameters == 5 * (3072 + 1024) + 96 + 32);
  CHECK(a.attention.unmatched.empty());
}

TEST_CASE("shared: LLaMA with MultiHeadAttention and external data", "[shared]") {
  Audit a = audit_shared("llama-tiny-mha-fp16/model.onnx");
  REQUIRE(a.attention.blocks.size() == 2);
  for (const auto& b : a.attention.blocks) {
    CHECK(b.form == "MultiHeadAttention");
    CHECK(*b.heads == 1);
    CHECK(b.width == 16);
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      CHECK(b.projection(r).weight == 16 * 16);
      CHECK(b.projection(r).bias == 0);
    }
  }
  for (const auto& w : a.model.weights) {
    if (w.storage == Storage::External) {
      CHECK(w.external_status() == ExternalStatus::Present);
      CHECK(w.external->file_size == 2130080u);
    }
  }
}

TEST_CASE("shared: GroupQueryAttention with 2 KV heads is grouped, not a mismatch", "[shared]") {
  Audit a = audit_shared("gqa-synthetic-fp16.onnx");
  REQUIRE(a.attention.blocks.size() == 2);
  for (const auto& b : a.attention.blocks) {
    CHECK(b.form == "GroupQueryAttention");
    CHECK(*b.heads == 4);
    CHECK(*b.kv_heads == 2);
    CHECK(*b.head_dim == 16);
    CHECK(b.q.weight == 64 * 64);
    CHECK(b.k.weight == 64 * 32);
    CHECK(b.v.weight == 64 * 32);
    CHECK(b.o.weight == 64 * 64);
  }
}

#endif
