// robustness_test.cpp: mutated real graphs never crash or hang the audit. The mutations are the
// fuzz harness's own (fuzz/model_mutator.h): edge integers, replaced names and op types, dropped
// and duplicated nodes and inputs, rewired inputs (including cycles), nested subgraphs. The audit
// either succeeds, and then its invariants hold, or throws InputError; nothing else is acceptable.
#include <catch2/catch.hpp>

#include <random>

#include "fuzz/model_mutator.h"
#include "headcount/error.h"
#include "headcount/report.h"
#include "test_util.h"

using namespace headcount;

namespace {

#ifndef HEADCOUNT_ROBUSTNESS_ROUNDS
#define HEADCOUNT_ROBUSTNESS_ROUNDS 40
#endif
#ifndef HEADCOUNT_ROBUSTNESS_SEED
#define HEADCOUNT_ROBUSTNESS_SEED 12345
#endif
constexpr int kRounds = HEADCOUNT_ROBUSTNESS_ROUNDS;  // per sample; raise it (and change the seed) for a longer local run

}  // namespace

TEST_CASE("mutated sample graphs audit or fail cleanly", "[robustness]") {
  testutil::TempDir dir;
  std::mt19937_64 rng(HEADCOUNT_ROBUSTNESS_SEED);
  int audited = 0, refused = 0;
  for (const char* name : {"mha_self_bias", "mha_cross", "mha_kdim_vdim", "bert_tiny", "gpt2_tiny", "per_head", "gqa",
                           "qdq_int8", "transformer"}) {
    onnx::ModelProto original;
    REQUIRE(original.ParseFromString(testutil::read_text(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx")));
    for (int i = 0; i < kRounds; ++i) {
      onnx::ModelProto m = original;
      fuzz::mutate(m, rng, 1 + static_cast<int>(rng() % 4));
      std::string path = dir.file(std::string(name) + "-" + std::to_string(i) + ".onnx");
      testutil::save(m, path);
      try {
        Audit a = audit_file(path);
        ++audited;
        for (const auto& b : a.attention.blocks) {
          uint64_t sum = 0;
          for (Role r : {Role::Q, Role::K, Role::V, Role::O}) sum += b.projection(r).total();
          CHECK(sum == b.total);
        }
        CHECK(a.attention.parameters <= a.inventory.stored);
      } catch (const InputError&) {
        ++refused;  // a cycle, say: reported, not crashed
      }
    }
  }
  CHECK(audited + refused == 9 * kRounds);
  CHECK(audited > 0);
}

TEST_CASE("graphs built to blow up naive walks stay cheap", "[robustness]") {
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  // A doubling chain: each Add takes the previous value twice, so a walk without bounds would
  // visit 2^60 paths from the Softmax back to x.
  std::string v = "x";
  for (int i = 0; i < 60; ++i) {
    std::string next = "add" + std::to_string(i);
    testutil::node(g, "Add", {v, v}, {next}, next);
    v = next;
  }
  testutil::node(g, "Softmax", {v}, {"probs"}, "softmax");
  // A wide fan-out after the Softmax: 3,000 Casts, each feeding a Mul with itself.
  for (int i = 0; i < 3000; ++i) {
    std::string c = "cast" + std::to_string(i), mul = "mul" + std::to_string(i);
    testutil::node(g, "Cast", {"probs"}, {c}, c);
    testutil::node(g, "Mul", {c, c}, {mul}, mul);
  }
  std::string path = dir.file("wide.onnx");
  testutil::save(m, path);
  Audit a = audit_file(path);
  CHECK(a.attention.blocks.empty());
  REQUIRE(a.attention.unmatched.size() == 1);
  CHECK(a.attention.unmatched[0].reason == "no MatMul(Q, Kᵀ) of two activations before it");
}
