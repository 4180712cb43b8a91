// explain_test.cpp: the calculator (headcount::calculate, explain_calculation), rule documentation,
// per-block derivations, and the `explain` subcommand through run_cli.
//
// Every expected number is worked out by hand from the DOMAIN.md section 1 table in the comment
// next to its assertion:
//   Q: w x (h*d_k) + h*d_k   K: w x (h_kv*d_k) + h_kv*d_k   V: w x (h_kv*d_v) + h_kv*d_v
//   O: (h*d_v) x d_out + d_out   standard: 4d^2 (+ 4d)
#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "headcount/cli.h"
#include "headcount/error.h"
#include "headcount/explain.h"
#include "test_util.h"
#include "headcount/audit.h"

using namespace headcount;
using Catch::Contains;
using Catch::StartsWith;

namespace {

BlockSpec spec(int64_t width, int64_t heads, bool bias = true) {
  BlockSpec s;
  s.width = width;
  s.heads = heads;
  s.bias = bias;
  return s;
}

// The InputError message calculate() throws, or "(no error)".
std::string calc_error(const BlockSpec& s) {
  try {
    calculate(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

const ProjectionCount& role(const Calculation& c, const std::string& r) {
  for (const auto& p : c.projections) {
    if (p.role == r) return p;
  }
  FAIL("no projection " << r);
  throw std::logic_error("unreachable");
}

using testutil::CliResult;
using testutil::cli;

std::string sample(const std::string& name) { return std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx"; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// calculate

TEST_CASE("calculate: the standard 512 x 8 block with and without biases", "[explain]") {
  Calculation c = calculate(spec(512, 8));
  CHECK(c.head_dim == 64);  // 512 / 8
  CHECK(c.v_head_dim == 64);
  CHECK(c.kv_heads == 8);
  REQUIRE(c.projections.size() == 4);
  // Q = K = V: 512 x (8 x 64) + 512 = 262,144 + 512 = 262,656.
  for (const char* r : {"Q", "K", "V"}) {
    INFO(r);
    CHECK(role(c, r).in == 512);
    CHECK(role(c, r).out == 512);
    CHECK(role(c, r).weight == 262144u);
    CHECK(role(c, r).bias == 512u);
  }
  CHECK(role(c, "Q").formula == "512 × (8 × 64) + (8 × 64) = 262,656");
  // O: (8 x 64) x 512 + 512 = 262,656.
  CHECK(role(c, "O").weight == 262144u);
  CHECK(role(c, "O").bias == 512u);
  // 4 x 512^2 + 4 x 512 = 4 x 262,144 + 2,048 = 1,048,576 + 2,048 = 1,050,624.
  CHECK(c.total == 1050624u);
  CHECK(c.standard == 1050624u);

  Calculation nb = calculate(spec(512, 8, false));
  // 4 x 512^2 = 1,048,576.
  CHECK(nb.total == 1048576u);
  CHECK(nb.standard == 1048576u);
  CHECK(role(nb, "K").bias == 0u);
}

TEST_CASE("calculate: heads do not change the standard count", "[explain]") {
  // 4 x 512^2 + 4 x 512 = 1,050,624 for any h dividing 512.
  for (int64_t h : {1, 2, 4, 16, 64}) {
    INFO(h);
    CHECK(calculate(spec(512, h)).total == 1050624u);
  }
}

TEST_CASE("calculate: MATLAB NumKeyChannels on a 3136-channel input", "[explain]") {
  BlockSpec s = spec(3136, 4);
  s.key_channels = 784;
  Calculation c = calculate(s);
  CHECK(c.head_dim == 196);  // 784 / 4
  // 3136 x 784 = 2,458,624 (3136 x 800 - 3136 x 16 = 2,508,800 - 50,176).
  // Q = K = V: 3136 x (4 x 196) + 784 = 2,458,624 + 784 = 2,459,408.
  CHECK(role(c, "Q").weight == 2458624u);
  CHECK(role(c, "V").weight + role(c, "V").bias == 2459408u);
  // O: (4 x 196) x 3136 + 3136 = 2,458,624 + 3,136 = 2,461,760.
  CHECK(role(c, "O").weight + role(c, "O").bias == 2461760u);
  // Total 4 x 3136 x 784 + 3 x 784 + 3136 = 9,834,496 + 2,352 + 3,136 = 9,839,984.
  CHECK(c.total == 9839984u);
  // Standard: 3136^2 = 9,834,496 (3,100^2 + 2 x 3,100 x 36 + 36^2 = 9,610,000 + 223,200 + 1,296);
  // 4 x 9,834,496 + 4 x 3136 = 39,337,984 + 12,544 = 39,350,528.
  CHECK(c.standard == 39350528u);

  BlockSpec s8 = spec(3136, 8);
  s8.key_channels = 392;
  Calculation c8 = calculate(s8);
  CHECK(c8.head_dim == 49);  // 392 / 8
  // 3136 x 392 = 1,229,312 (half of 2,458,624). Total 4 x 1,229,312 + 3 x 392 + 3136
  // = 4,917,248 + 1,176 + 3,136 = 4,921,560.
  CHECK(c8.total == 4921560u);
  CHECK(c8.standard == 39350528u);
}

TEST_CASE("calculate: Keras key_dim = width multiplies the block by the heads", "[explain]") {
  BlockSpec s = spec(64, 8);
  s.head_dim = 64;
  Calculation c = calculate(s);
  // Q = K = V: 64 x (8 x 64) + 512 = 32,768 + 512 = 33,280.
  CHECK(role(c, "Q").weight + role(c, "Q").bias == 33280u);
  CHECK(role(c, "K").weight + role(c, "K").bias == 33280u);
  CHECK(role(c, "V").weight + role(c, "V").bias == 33280u);
  // O: (8 x 64) x 64 + 64 = 32,768 + 64 = 32,832.
  CHECK(role(c, "O").in == 512);
  CHECK(role(c, "O").out == 64);
  CHECK(role(c, "O").weight + role(c, "O").bias == 32832u);
  // Total 3 x 33,280 + 32,832 = 99,840 + 32,832 = 132,672; standard 4 x 64^2 + 4 x 64 = 16,640.
  CHECK(c.total == 132672u);
  CHECK(c.standard == 16640u);
}

TEST_CASE("explain_calculation: under Keras the count grows with heads", "[explain]") {
  BlockSpec s = spec(64, 8);
  s.head_dim = 64;
  std::string text = explain_calculation(s, Convention::Keras);
  CHECK_THAT(text, Contains("key_dim and value_dim are PER HEAD"));
  CHECK_THAT(text, Contains("MultiHeadAttention(num_heads=8, key_dim=64)"));
  // key_dim 64 held fixed:
  //   4 heads: Q = K = V = 64 x 256 + 256 = 16,640; O = 256 x 64 + 64 = 16,448; 3 x 16,640 + 16,448 = 66,368.
  //   16 heads: Q = K = V = 64 x 1,024 + 1,024 = 66,560; O = 1,024 x 64 + 64 = 65,600;
  //             3 x 66,560 + 65,600 = 199,680 + 65,600 = 265,280.
  CHECK_THAT(text, Contains("the per-head size stays 64 when heads change, so the count grows with heads: "
                            "4 heads → 66,368, 8 heads → 132,672, 16 heads → 265,280"));
  // 132,672 - 16,640 = 116,032 above the standard block.
  CHECK_THAT(text, Contains("this block has 132,672 (+116,032)"));
}

TEST_CASE("explain_calculation: under PyTorch the standard count does not depend on heads", "[explain]") {
  std::string text = explain_calculation(spec(512, 8), Convention::PyTorch);
  CHECK_THAT(text, Contains("  total  1,050,624"));
  CHECK_THAT(text, Contains("this block is the standard one"));
  CHECK_THAT(text, Contains("nn.MultiheadAttention(embed_dim=512, num_heads=8)"));
  // 1,050,624 at 4, 8 and 16 heads alike.
  CHECK_THAT(text, Contains("4 heads → 1,050,624, 8 heads → 1,050,624, 16 heads → 1,050,624"));
}

TEST_CASE("calculate: grouped K/V, LLaMA-2-70B-like 4096 x 32 heads over 8 K/V heads", "[explain]") {
  BlockSpec s = spec(4096, 32, false);
  s.kv_heads = 8;
  Calculation c = calculate(s);
  CHECK(c.head_dim == 128);  // 4096 / 32
  // q: 4096 x (32 x 128) = 4096 x 4096 = 16,777,216
  CHECK(role(c, "Q").weight == 16777216u);
  // k = v: 4096 x (8 x 128) = 4096 x 1024 = 4,194,304
  CHECK(role(c, "K").out == 1024);
  CHECK(role(c, "K").weight == 4194304u);
  CHECK(role(c, "V").weight == 4194304u);
  // o: (32 x 128) x 4096 = 16,777,216
  CHECK(role(c, "O").weight == 16777216u);
  for (const auto& p : c.projections) CHECK(p.bias == 0u);
  // 2 x 16,777,216 + 2 x 4,194,304 = 33,554,432 + 8,388,608 = 41,943,040; standard 4 x 4096^2 = 67,108,864.
  CHECK(c.total == 41943040u);
  CHECK(c.standard == 67108864u);
}

TEST_CASE("calculate: Gemma-7B-like head_dim 256 on a width of 3072", "[explain]") {
  BlockSpec s = spec(3072, 16, false);
  s.head_dim = 256;  // 16 x 256 = 4096 != 3072
  Calculation c = calculate(s);
  // q = k = v: 3072 x (16 x 256) = 3072 x 4096 = 12,582,912
  for (const char* r : {"Q", "K", "V"}) {
    INFO(r);
    CHECK(role(c, r).in == 3072);
    CHECK(role(c, r).out == 4096);
    CHECK(role(c, r).weight == 12582912u);
  }
  // o: (16 x 256) x 3072 = 12,582,912
  CHECK(role(c, "O").in == 4096);
  CHECK(role(c, "O").out == 3072);
  CHECK(role(c, "O").weight == 12582912u);
  // 4 x 12,582,912 = 50,331,648; standard 4 x 3072^2 = 4 x 9,437,184 = 37,748,736.
  CHECK(c.total == 50331648u);
  CHECK(c.standard == 37748736u);
}

TEST_CASE("calculate: impossible specs are InputErrors", "[explain]") {
  // 100 = 3 x 33 + 1: no per-head split without --head-dim.
  CHECK(calc_error(spec(100, 3)) == "width 100 is not divisible by 3 heads; give --head-dim to set the per-head size");
  CHECK(calc_error(spec(512, 0)) == "--heads must be a positive number");
  CHECK(calc_error(spec(0, 8)) == "--width must be a positive number");
  BlockSpec both = spec(512, 8);
  both.head_dim = 64;
  both.key_channels = 512;
  CHECK(calc_error(both) == "give --head-dim (per head) or --key-channels (total), not both");
  BlockSpec channels = spec(512, 3);
  channels.key_channels = 100;  // 100 / 3 is not whole
  CHECK(calc_error(channels) == "--key-channels 100 is not divisible by 3 heads");
  // Width 2^31 = 2,147,483,648 with 8 heads: each projection is 2^31 x 2^31 = 2^62 weights plus biases,
  // and four of them exceed 2^64.
  CHECK(calc_error(spec(int64_t{1} << 31, 8)) == "the numbers are too large: the count overflows 64 bits");
  CHECK_THROWS_AS(calculate(spec(int64_t{1} << 31, 8)), InputError);
  // Beyond 2^31 the sizes themselves are refused: 2^31 + 1 = 2,147,483,649.
  CHECK(calc_error(spec((int64_t{1} << 31) + 1, 1)) == "the numbers are too large: 2,147,483,649");
  CHECK_THROWS_AS(calculate(spec(int64_t{1} << 40, 1)), InputError);
}

// ---------------------------------------------------------------------------------------------
// explain_rule and explain_block

TEST_CASE("explain_rule: id, severity, summary, then the documentation", "[explain]") {
  const Rule* r = find_rule("grouped-kv");
  REQUIRE(r != nullptr);
  std::string text = explain_rule(*r);
  CHECK_THAT(text, StartsWith("grouped-kv (info): "));
  CHECK(text == std::string("grouped-kv (info): ") + r->summary + "\n\n" + r->doc + "\n");
  CHECK_THAT(explain_rule(*find_rule("heads-not-divisor")), StartsWith("heads-not-divisor (error): "));
}

TEST_CASE("explain_block: gpt2_tiny block 1 from its packed c_attn tensor", "[explain]") {
  Audit a = audit_file(sample("gpt2_tiny"));
  std::string text = explain_block(a, 1);
  // Q is the first third of c_attn.weight [32, 96]: columns 0:32, 32 x 32 = 1,024 + bias 32.
  CHECK_THAT(text, Contains("columns 0:32 of 96"));
  CHECK_THAT(text, Contains("= 1,024 + 32 = 1,056"));
  // Each projection 32 x 32 + 32 = 1,056; the block 4 x 1,056 = 4,224 = 4 x 32^2 + 4 x 32.
  CHECK_THAT(text, Contains("= 4,224"));
  CHECK_THAT(text, Contains("1,056 + 1,056 + 1,056 + 1,056 = 4,224"));
  CHECK_THAT(text, Contains("(this block matches it)"));
}

TEST_CASE("explain_block: a block index the model does not have", "[explain]") {
  Audit a = audit_file(sample("gpt2_tiny"));
  REQUIRE(a.attention.blocks.size() == 2);
  try {
    explain_block(a, 99);
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "there is no block 99 (the model has 2 attention blocks)");
  }
  CHECK_THROWS_AS(explain_block(a, -1), InputError);
}

// ---------------------------------------------------------------------------------------------
// the explain subcommand

TEST_CASE("cli explain: the calculator", "[explain]") {
  CliResult r = cli({"explain", "--width", "512", "--heads", "8"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("1,050,624"));  // 4 x 512^2 + 4 x 512
  CHECK(r.err.empty());
  CliResult nb = cli({"explain", "--width", "512", "--heads", "8", "--no-bias"});
  CHECK(nb.code == 0);
  CHECK_THAT(nb.out, Contains("1,048,576"));  // 4 x 512^2
  CliResult bad = cli({"explain", "--width", "100", "--heads", "3"});
  CHECK(bad.code == 2);
  CHECK(bad.err == "headcount: error: width 100 is not divisible by 3 heads; give --head-dim to set the per-head size\n");
}

TEST_CASE("cli explain: a rule id", "[explain]") {
  CliResult r = cli({"explain", "grouped-kv"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, StartsWith("grouped-kv (info): "));
}

TEST_CASE("cli explain: an unknown word is a one-line error with exit code 2", "[explain]") {
  CliResult r = cli({"explain", "nonsense"});
  CHECK(r.code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, StartsWith("headcount: error: "));
  CHECK_THAT(r.err, Contains("nonsense"));
  REQUIRE_FALSE(r.err.empty());
  CHECK(r.err.back() == '\n');
  CHECK(r.err.find('\n') == r.err.size() - 1);  // exactly one line
}

TEST_CASE("cli explain: one block of a model", "[explain]") {
  CliResult r = cli({"explain", sample("gpt2_tiny"), "--block", "1"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("columns 0:32 of 96"));
  CHECK_THAT(r.out, Contains("= 4,224"));  // 4 x (32 x 32 + 32)
  CliResult missing = cli({"explain", sample("gpt2_tiny"), "--block", "99"});
  CHECK(missing.code == 2);
  CHECK_THAT(missing.err, Contains("there is no block 99 (the model has 2 attention blocks)"));
}

TEST_CASE("explain suggests rule ids for a mistyped one", "[explain]") {
  // One edit from "width-mismatch" once hyphens are ignored.
  auto r = cli({"explain", "widthmismatch"});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: 'widthmismatch' is not a rule id; for a model give --block N (did you mean "
                 "'width-mismatch'?)\n");
  // A word three rule ids contain lists them in table order.
  r = cli({"explain", "mismatch"});
  CHECK(r.err == "headcount: error: 'mismatch' is not a rule id; for a model give --block N (did you mean "
                 "'width-mismatch', 'qk-dim-mismatch' or 'external-data-size-mismatch'?)\n");
  // Nothing close: no suggestion.
  r = cli({"explain", "nonsense"});
  CHECK(r.err == "headcount: error: 'nonsense' is not a rule id; for a model give --block N\n");
}

TEST_CASE("calculator: --window and --sliding A:B cap the sliding layers' K/V and scores", "[explain]") {
  CostSpec cost;
  cost.layers = 32;
  cost.window = 4096;
  // A sliding layers, then B full, repeating from layer 0: 32 layers of 3:1 are 8 periods, 24
  // sliding; 7 of 5:1 are one period (5) and a sliding remainder (1): 6; 3 of 1:1: layers 0 and 2.
  cost.sliding = 3, cost.full = 1;
  CHECK(sliding_layers(cost) == 24);
  cost.layers = 7, cost.sliding = 5, cost.full = 1;
  CHECK(sliding_layers(cost) == 6);
  cost.layers = 3, cost.sliding = 1, cost.full = 1;
  CHECK(sliding_layers(cost) == 2);
  cost.sliding = 0, cost.full = 1;
  CHECK(sliding_layers(cost) == 0);
  cost.sliding = 0, cost.full = 0;  // a window without a pattern: every layer
  CHECK(sliding_layers(cost) == 3);
  cost.window = 0;  // no window: no layer slides, whatever the pattern
  cost.sliding = 1, cost.full = 1;
  CHECK(sliding_layers(cost) == 0);

  // Gemma 3 1B's attention (width 1152, 4 heads and 1 K/V head of 256, no biases), 26 layers, 5:1
  // over 512 tokens, bfloat16, 32,768 tokens of context. Sliding: 4 periods · 5 + min(2, 5) = 22,
  // full 4. One layer keeps 1 · (256 + 256) · 2 = 1,024 bytes per token: 4 · 1,024 · 32,768 +
  // 22 · 1,024 · 512 = 134,217,728 + 11,534,336 = 145,752,064 (the figure explain --config gives
  // from gemma-3-1b-it's config). Weights per layer 1152·1024 + 2·1152·256 + 1024·1152 = 2,949,120;
  // scores 4 · 512 · 32,768 = 67,108,864 in a full layer, 4 · 512 · 512 = 1,048,576 in a sliding
  // one: 4 · 70,057,984 + 22 · 3,997,696 = 280,231,936 + 87,949,312 = 368,181,248 MACs.
  BlockSpec s = spec(1152, 4, false);
  s.head_dim = 256;
  s.kv_heads = 1;
  CostSpec gemma;
  gemma.layers = 26;
  gemma.context = 32768;
  gemma.window = 512;
  gemma.sliding = 5, gemma.full = 1;
  gemma.kv_dtype = "bfloat16";
  std::string text = explain_cost(s, gemma);
  CHECK_THAT(text, Contains("  sliding layers    22 of 26 (5 sliding, then 1 full, repeating) keep at most 512 tokens of K/V"));
  CHECK_THAT(text, Contains("  at 32,768 tokens  4 full × 1,024 bytes × 32,768 + 22 sliding × 1,024 bytes × 512 = 145,752,064 bytes"));
  CHECK_THAT(text, Contains(" = 368,181,248 (attention only"));
  // At 4,096 tokens: 4 · 1,024 · 4,096 + 22 · 1,024 · 512 = 16,777,216 + 11,534,336 = 28,311,552.
  gemma.context = 4096;
  CHECK_THAT(explain_cost(s, gemma), Contains("= 28,311,552 bytes"));
  // A window wider than the context keeps the context: 26 · 1,024 · 4,096 = 109,051,904.
  gemma.window = 8192;
  CHECK_THAT(explain_cost(s, gemma), Contains("4 full × 1,024 bytes × 4,096 + 22 sliding × 1,024 bytes × 4,096 = 109,051,904 bytes"));
}

TEST_CASE("calculator: --window and --sliding on the command line, and what they refuse", "[explain]") {
  // Every layer sliding over 4,096 tokens (no --sliding): 32 · 4,096 bytes · 4,096 = 536,870,912.
  CliResult r = cli({"explain", "--width", "4096", "--heads", "32", "--kv-heads", "8", "--no-bias", "--layers", "32",
                     "--window", "4k"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("  sliding layers    32 of 32 keep at most 4,000 tokens of K/V"));
  CHECK_THAT(r.out, Contains("  at 4,096 tokens  32 sliding × 4,096 bytes × 4,000 = 524,288,000 bytes"));
  auto error = [](std::vector<std::string> args) {
    std::vector<std::string> all = {"explain", "--width", "512", "--heads", "8"};
    all.insert(all.end(), args.begin(), args.end());
    CliResult r = cli(all);
    CHECK(r.code == 2);
    return r.err;
  };
  CHECK(error({"--layers", "4", "--sliding", "1:1"}) == "headcount: error: --sliding needs --window: the tokens a sliding layer keeps\n");
  CHECK(error({"--window", "128"}) == "headcount: error: --window needs --layers: the calculator's cost of L such blocks\n");
  for (const char* bad : {"5", "a:1", "1:", "0:0", "-1:2", "1:2:3", "99999999:1"}) {
    CHECK(error({"--layers", "4", "--window", "128", "--sliding", bad}) ==
          "headcount: error: --sliding: '" + std::string(bad) + "' is not A:B, two counts of layers (examples: 5:1, 1:1, 3:1)\n");
  }
  CHECK(error({"--layers", "4", "--window", "0"}) ==
        "headcount: error: --window: '0' is not a count of 1 or more (examples: 4096, 32k)\n");
  CHECK(cli({"explain", "--config", "x.json", "--window", "128"}).err ==
        "headcount: error: give --config alone, without TARGET or calculator options\n");
}
