// budget_test.cpp: the analyses that read values (the mask evaluator, buffers, folded constants,
// routers, mixers) share one budget per audit (ValueBudget), and the report says when it runs out;
// the regression files of issue 39's items 9-13 (tests/fuzz/make_cases_graph.py) still give the
// numbers their graphs state. Their time and memory are bounded by fuzz_replay_test.cpp.
#include <catch2/catch.hpp>

#include <string>

#include "headcount/audit.h"
#include "headcount/findings.h"

using namespace headcount;

namespace {

Audit regression(const std::string& name) {
  return audit_file(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions/" + name, AuditOptions());
}

std::vector<Finding> with_rule(const Audit& a, const std::string& rule) {
  std::vector<Finding> out;
  for (const auto& f : a.findings) {
    if (f.rule == rule) out.push_back(f);
  }
  return out;
}

}  // namespace

TEST_CASE("ValueBudget: spends until it is out, then names each analysis that stopped once, in order", "[budget]") {
  ValueBudget b(10);
  CHECK(b.spend("the mask evaluator", 8));
  CHECK_FALSE(b.spent());
  CHECK_FALSE(b.spend("buffers", 3));  // 2 left: not enough, and nothing is left after it
  CHECK(b.spent());
  CHECK_FALSE(b.spend("routers", 1));
  CHECK_FALSE(b.spend("buffers", 1));
  CHECK(b.stopped() == std::vector<std::string>{"buffers", "routers"});
  CHECK(b.total() == 10);
  REQUIRE(value_budget_finding(b));
  CHECK(value_budget_finding(b)->severity == Severity::Warning);
  CHECK(!value_budget_finding(ValueBudget(1)));  // nothing spent, nothing stopped
}

TEST_CASE("a mask read key by key past the value budget: no window, and a finding names the mask evaluator", "[budget]") {
  // A band of 131,071 keys computed from positions, read at row 2^19 of a 2^20 sequence: each
  // key is some twenty evaluator steps of 8 units, 131,071 keys > 16.7 million units. The budget
  // is 2^24 + 256 per node + 4 per stored byte: 21 nodes (Shape, Gather, Range, 2 Unsqueeze, Sub,
  // 2 Less, Not, And, Where, 5 MatMul for Q, K, V, scores, context, Transpose, Add, Softmax, the
  // output MatMul and Identity), and 8 stored bytes (the raw float32 scalars 0 and -1e9; the int64
  // constants are in typed fields, not a payload): 16,777,216 + 5,376 + 32 = 16,782,624.
  Audit a = regression("mask-window-131071-spends-the-budget.onnx");
  REQUIRE(a.attention.blocks.size() == 1);
  CHECK_FALSE(a.attention.blocks[0].window);
  auto f = with_rule(a, "value-budget-spent");
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::Warning);
  CHECK(f[0].message ==
        "the analyses that read values used up this audit's budget of 16,782,624 units and stopped early: the mask "
        "evaluator. What they did not finish is left unproven: a window not read is not reported, a tensor not proven a "
        "buffer counts as a parameter, a TopK not examined is counted as such");
}

TEST_CASE("the mask regressions still read the windows their graphs state, within the budget", "[budget]") {
  // make_cases_graph.py's bands: 0 <= i - j < W allowed, so each query sees W keys.
  struct Case {
    const char* file;
    size_t blocks;
    int64_t window;
  };
  for (const Case& c : {Case{"mask-where-chain-24-under-div.onnx", 1, 4},  // i / 1 - j < 4
                        Case{"mask-max-chain-30.onnx", 1, 4},              // max(p, p) = p, 30 times
                        Case{"mask-concat-131072-parts.onnx", 1, 256},      // the last part: W = 256
                        Case{"mask-unsqueeze-16000-axes.onnx", 1, 4},
                        Case{"mask-shared-concat-700-masks.onnx", 700, 4},  // -(-band): the band
                        Case{"mask-stored-750-blocks.onnx", 750, 8}}) {     // stored 0 <= i - j < 8
    INFO(c.file);
    Audit a = regression(c.file);
    REQUIRE(a.attention.blocks.size() == c.blocks);
    for (const auto& b : a.attention.blocks) CHECK(b.window == c.window);
    CHECK(with_rule(a, "value-budget-spent").empty());
  }
  // j <= i alone: causal, no window.
  Audit causal = regression("mask-causal-from-positions.onnx");
  REQUIRE(causal.attention.blocks.size() == 1);
  CHECK_FALSE(causal.attention.blocks[0].window);
  CHECK(with_rule(causal, "value-budget-spent").empty());
}

TEST_CASE("an A_log whose exp overflows proves no folded constant: the real weights beside it stay parameters", "[budget][buffers]") {
  // A_log [64, 64] of 1000s (exp(1000) = +inf in a double) read by Exp, and two MLP weights
  // [64, 64] of finite values read by MatMul. "v is ±exp(a) within 1e-5·exp(a)" cannot tell when
  // exp(a) is +inf, so nothing is proven: the framework counts 3 x 64 x 64 = 12,288, all stored.
  Audit a = regression("a-log-overflow-mlp-weights.onnx");
  CHECK(a.inventory.stored == 12288);
  CHECK(a.framework.buffers.empty());
  CHECK(a.framework.parameters == 12288);
}

TEST_CASE("data-less tensors declared [2^25, 2] are no ALiBi bias and no buffer", "[budget][buffers]") {
  // 200 initializers with dims and no values, each read by an Add: nothing to read proves
  // nothing; their 200 x 2^26 = 13,421,772,800 elements stay parameters.
  Audit a = regression("alibi-declared-200-of-2-25-heads.onnx");
  CHECK(a.framework.buffers.empty());
  CHECK(a.framework.parameters == 13421772800ull);
}

TEST_CASE("look-alikes of a folded exp spend the budget: the search stops, and every tensor stays a parameter", "[budget][buffers]") {
  // 8,000 Exp-read parameters [0.5, k] and 8,000 tensors [exp(0.5), -1]: each tensor's first value
  // is exp of every source's first, so each source is compared with all 8,000 (2 reads each), and
  // 8,000 x 8,000 x 2 = 128 million reads exceed the budget: 2^24 + 256 x 16,001 nodes (8,000 Exp,
  // 8,000 Mul, an Identity) + 4 x 16,000 x 8 stored bytes = 16,777,216 + 4,096,256 + 512,000 =
  // 21,385,472. No tensor is -exp or exp of a source (the second values differ), and none is proven
  // anything: all 16,000 x 2 = 32,000 elements stay parameters.
  Audit a = regression("exp-read-8000-sources-8000-look-alikes.onnx");
  CHECK(a.framework.buffers.empty());
  CHECK(a.framework.parameters == 32000);
  auto f = with_rule(a, "value-budget-spent");
  REQUIRE(f.size() == 1);
  CHECK_THAT(f[0].message, Catch::StartsWith("the analyses that read values used up this audit's budget of 21,385,472 units "
                                             "and stopped early: folded constants and buffers."));
}
