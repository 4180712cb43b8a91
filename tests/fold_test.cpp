// fold_test.cpp: the reports a person reads (text, markdown, html) fold runs of identical
// consecutive blocks, expert layers and the findings they share into one row each; --all-blocks
// lists every one; json keeps every block and finding.
//
// Every count below is worked by hand from DOMAIN.md section 1: Q w·(h·d) + h·d, K and V
// w·(h_kv·d) + h_kv·d, O (h·d)·w + w; the standard 4w² + 4w.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../src/render/fold.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;
using testutil::LayerSpec;
using testutil::layers_model;
using Catch::Contains;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The lines of the text report's section `title`, up to the next blank line.
std::vector<std::string> section(const std::string& text, const std::string& title) {
  std::vector<std::string> all = lines_of(text), out;
  auto at = std::find(all.begin(), all.end(), title);
  if (at == all.end()) return out;
  for (++at; at != all.end() && !at->empty(); ++at) out.push_back(*at);
  return out;
}

// A model saved in a temporary folder, for the command line.
struct Saved {
  testutil::TempDir dir;
  std::string path;
  explicit Saved(const onnx::ModelProto& m) : path(dir.file("model.onnx")) { testutil::save(m, path); }
};

// 1,000 grouped-query layers of width 8: 4 query heads and 2 K/V heads of 4 features each.
//   Q 8·16 + 16 = 144, K = V 8·8 + 8 = 72, O 16·8 + 8 = 136: 424 per block, 424,000 in all;
//   the standard 4·8² + 4·8 = 288, so "of std" is 424/288 = 147.2%.
// Each block has two findings: width-mismatch (4 heads × 4 = 16 ≠ 8, a warning) and grouped-kv
// (4 query heads share 2 K/V heads, info): 2,000 findings.
const Saved& thousand_layers() {
  static const Saved saved([] {
    LayerSpec s;
    s.width = 8;
    s.heads = 4;
    s.kv_heads = 2;
    s.head_dim = 4;
    return layers_model(std::vector<LayerSpec>(1000, s));
  }());
  return saved;
}

}  // namespace

TEST_CASE("fold: names that differ by one number become a pattern", "[fold]") {
  auto pattern = [](std::vector<std::string> names) {
    std::vector<const std::string*> p;
    for (const auto& n : names) p.push_back(&n);
    return renderers::name_pattern(p);
  };
  CHECK(pattern({"layers.0.self_attn", "layers.1.self_attn", "layers.31.self_attn"}) == "layers.N.self_attn");
  CHECK(pattern({"h.9.attn", "h.10.attn"}) == "h.N.attn");
  // Two numbers that move, words that differ, a number against a word: the first name.
  CHECK(pattern({"enc.0.layer.0", "enc.1.layer.1"}) == "enc.0.layer.0");
  CHECK(pattern({"encoder.0.attn", "decoder.0.attn"}) == "encoder.0.attn");
  CHECK(pattern({"attn_1", "attn"}) == "attn_1");
  CHECK(pattern({"Attention", "Attention"}) == "Attention");
  // Runs: consecutive equal keys fold from two entries on; a gap in the indices breaks a run.
  std::vector<int> index = {0, 1, 2, 3, 5, 6, 7};
  std::vector<std::string> key = {"a", "a", "b", "a", "a", "a", "a"}, name(7, "x");
  auto runs = renderers::fold_runs(
      7, true, [&](size_t i) { return index[i]; }, [&](size_t i) -> const std::string& { return name[i]; },
      [&](size_t i) { return key[i]; });
  // By hand: {0,1} a a; {2} b; {3} a then index 5 is not 4: {3} alone; {5,6,7} a a a.
  REQUIRE(runs.size() == 4);
  CHECK(renderers::fold_cell(runs[0]) == "0–1 (2)");
  CHECK(renderers::fold_cell(runs[1]) == "2");
  CHECK(renderers::fold_cell(runs[2]) == "3");
  CHECK(renderers::fold_cell(runs[3]) == "5–7 (3)");
  CHECK(renderers::blocks_text({0, 1, 2, 5, 7, 8}) == "each of blocks 0–2, 5, 7–8");
  CHECK(renderers::blocks_text({4}) == "block 4");
}

TEST_CASE("fold: the text report of a 1,000-layer model is under 100 lines and says how to list every block",
          "[fold][cli]") {
  auto r = testutil::cli({"audit", thousand_layers().path});
  REQUIRE(r.code == 0);
  std::vector<std::string> lines = lines_of(r.out);
  CHECK(lines.size() < 100);
  CHECK_THAT(r.out, Contains("424,000 in 1,000 blocks"));
  // One row for the 1,000 blocks, in both tables; the legend names the run and the option.
  std::vector<std::string> blocks = section(r.out, "attention blocks");
  REQUIRE(blocks.size() == 4);  // header, the run, the heads legend, the fold legend
  CHECK(blocks[1] == "  0–999 (1,000)  layerN  unfused  self    4/2      8    4         424  147.2%");
  CHECK(blocks[3] == "  0–999 (1,000): blocks 0 to 999, identical, in one row; --all-blocks lists each block.");
  std::vector<std::string> qkvo = section(r.out, "Q/K/V/O per block (weight + bias)");
  REQUIRE(qkvo.size() == 3);
  CHECK(qkvo[1] == "  0–999 (1,000)  144  72  72  136");
  // 2,000 findings, printed as two: each names every block it is about.
  CHECK(count(r.out, "[width-mismatch]") == 1);
  CHECK(count(r.out, "[grouped-kv]") == 1);
  CHECK_THAT(r.out, Contains("  warning [width-mismatch] each of blocks 0–999: Q/K project 8 → 16"));
  CHECK_THAT(r.out, Contains("  info [grouped-kv] each of blocks 0–999: 4 query heads share 2 K/V heads (groups of 2)"));
}

TEST_CASE("fold: --all-blocks lists every block and every finding", "[fold][cli]") {
  auto r = testutil::cli({"audit", thousand_layers().path, "--all-blocks"});
  REQUIRE(r.code == 0);
  std::vector<std::string> blocks = section(r.out, "attention blocks");
  REQUIRE(blocks.size() == 1 + 1000 + 1);  // header, 1,000 rows, the heads legend
  CHECK(blocks[1] == "    0  layer0    unfused  self    4/2      8    4         424  147.2%");
  CHECK(blocks[1000] == "  999  layer999  unfused  self    4/2      8    4         424  147.2%");
  CHECK(section(r.out, "Q/K/V/O per block (weight + bias)").size() == 1 + 1000 + 1);  // and the closing count line
  CHECK(count(r.out, "[width-mismatch] block ") == 1000);
  CHECK(count(r.out, "[grouped-kv] block ") == 1000);
  CHECK(r.out.find("--all-blocks") == std::string::npos);
}

TEST_CASE("fold: json keeps every block and every finding, with or without --all-blocks", "[fold][cli]") {
  auto folded = testutil::cli({"audit", thousand_layers().path, "-f", "json"});
  auto all = testutil::cli({"audit", thousand_layers().path, "-f", "json", "--all-blocks"});
  REQUIRE(folded.code == 0);
  CHECK(folded.out == all.out);
  auto j = nlohmann::json::parse(folded.out)["models"][0];
  CHECK(j["attention_blocks"].size() == 1000);
  CHECK(j["findings"].size() == 2000);
  for (const char* format : {"jsonl", "sarif", "github"}) {
    INFO(format);
    CHECK(testutil::cli({"audit", thousand_layers().path, "-f", format}).out ==
          testutil::cli({"audit", thousand_layers().path, "-f", format, "--all-blocks"}).out);
  }
}

TEST_CASE("fold: a model whose layers differ in the middle folds into the runs worked by hand", "[fold][cli]") {
  // Ten layers of width 8 (A A A A B C C A C A):
  //   A: 4 heads × 2, every bias: Q = K = V = O = 8·8 + 8 = 72, 288 = the standard 4·8² + 4·8 (100.0%);
  //   B: 2 heads × 4: the same counts, 2 heads and d_k 4;
  //   C: A without O's bias: O = 8·8 = 64, 280 (280/288 = 97.2%), and a bias-inconsistent finding.
  // Runs: 0–3 (four A), 4 (B), 5–6 (two C), 7 (A), 8 (C), 9 (A): a block alone is not a run, and
  // block 7 is not folded with 0–3, which block 4 separates.
  LayerSpec a, b, c;
  a.width = b.width = c.width = 8;
  a.heads = c.heads = 4;
  a.head_dim = c.head_dim = 2;
  b.heads = 2;
  b.head_dim = 4;
  c.bias_o = false;
  Saved saved(layers_model({a, a, a, a, b, c, c, a, c, a}));
  auto r = testutil::cli({"audit", saved.path});
  REQUIRE(r.code == 0);
  std::vector<std::string> blocks = section(r.out, "attention blocks");
  REQUIRE(blocks.size() == 1 + 6 + 2);
  CHECK(blocks[1] == "  0–3 (4)  layerN  unfused  self      4      8    2         288  100.0%");
  CHECK(blocks[2] == "        4  layer4  unfused  self      2      8    4         288  100.0%");
  CHECK(blocks[3] == "  5–6 (2)  layerN  unfused  self      4      8    2         280   97.2%");
  CHECK(blocks[4] == "        7  layer7  unfused  self      4      8    2         288  100.0%");
  CHECK(blocks[5] == "        8  layer8  unfused  self      4      8    2         280   97.2%");
  CHECK(blocks[6] == "        9  layer9  unfused  self      4      8    2         288  100.0%");
  CHECK(blocks[8] == "  0–3 (4): blocks 0 to 3, identical, in one row; --all-blocks lists each block.");
  std::vector<std::string> qkvo = section(r.out, "Q/K/V/O per block (weight + bias)");
  REQUIRE(qkvo.size() == 1 + 6 + 1);
  CHECK(qkvo[1] == "  0–3 (4)  72  72  72  72");
  CHECK(qkvo[3] == "  5–6 (2)  72  72  72  64");
  CHECK(qkvo[5] == "        8  72  72  72  64");
  // Blocks 5, 6 and 8 share one bias-inconsistent finding, written once.
  CHECK(count(r.out, "[bias-inconsistent]") == 1);
  CHECK_THAT(r.out, Contains("  info [bias-inconsistent] each of blocks 5–6, 8: Q, K and V have biases, O has none"));
}

TEST_CASE("fold: findings fold when no row does, and say how to list them apart", "[fold][cli]") {
  // A C A C (A and C as above): no two neighbours alike, so four rows; blocks 1 and 3 share one
  // bias-inconsistent finding, written once with the option that lists it per block.
  LayerSpec a, c;
  a.width = c.width = 8;
  a.heads = c.heads = 4;
  a.head_dim = c.head_dim = 2;
  c.bias_o = false;
  Saved saved(layers_model({a, c, a, c}));
  auto r = testutil::cli({"audit", saved.path});
  REQUIRE(r.code == 0);
  CHECK(section(r.out, "attention blocks").size() == 1 + 4 + 1);
  CHECK_THAT(r.out, Contains("  info [bias-inconsistent] each of blocks 1, 3: Q, K and V have biases, O has none"));
  CHECK_THAT(r.out, Contains("\n  (--all-blocks lists the findings of each block apart)\n"));
  auto all = testutil::cli({"audit", saved.path, "--all-blocks"});
  CHECK(count(all.out, "[bias-inconsistent] block ") == 2);
}

TEST_CASE("fold: markdown lists a finding of many blocks once", "[fold][cli]") {
  auto r = testutil::cli({"audit", thousand_layers().path, "-f", "markdown"});
  REQUIRE(r.code == 0);
  // The summary counts every finding (as the json does); the details name the blocks once.
  CHECK_THAT(r.out, Contains("| 1,000 warnings, 1,000 info |"));
  CHECK(count(r.out, "`width-mismatch`") == 1);
  CHECK_THAT(r.out, Contains(" warning `width-mismatch` (each of blocks 0–999): Q/K project 8 → 16"));
  CHECK_THAT(r.out, Contains("`--all-blocks` lists each block's apart"));
  auto all = testutil::cli({"audit", thousand_layers().path, "-f", "markdown", "--all-blocks"});
  CHECK(count(all.out, "`width-mismatch` (block ") == 1000);
}

TEST_CASE("fold: the html page draws one block per run, with its range and count", "[fold][cli]") {
  auto r = testutil::cli({"audit", thousand_layers().path, "-f", "html"});
  REQUIRE(r.code == 0);
  CHECK(count(r.out, "<section class='block'") == 1);
  CHECK_THAT(r.out, Contains("data-first='0' data-last='999' data-blocks='1000'><h4>blocks 0–999 (1,000 identical): layerN</h4>"));
  CHECK(count(r.out, "<g class='run'") == 1);
  CHECK(count(r.out, "<li class='finding") == 2);
  CHECK_THAT(r.out, Contains("<a href='#m0-block-0'>each of blocks 0–999</a>"));
  CHECK_THAT(r.out, Contains("<code>--all-blocks</code> draws every block"));
  CHECK_THAT(r.out, Contains("<td class='n'>0 errors, 1,000 warnings, 1,000 info</td>"));
  auto all = testutil::cli({"audit", thousand_layers().path, "-f", "html", "--all-blocks"});
  CHECK(count(all.out, "<section class='block'") == 1000);
  CHECK(count(all.out, "<g class='run'") == 1000);
  CHECK(count(all.out, "<li class='finding") == 2000);
}

TEST_CASE("fold: expert layers fold as blocks do", "[fold][cli]") {
  // Four fused MoE layers on x [15, 32], each a router 32·8 = 256 and 8 experts of
  // fc1 32·64 + 64, fc2 64·32 + 32 = 4,192 (33,536 routed); layers 0–2 run k = 2, layer 3 k = 1.
  testutil::GraphBuilder n;
  n.input("x", {15, 32});
  std::string x = "x";
  for (int i = 0; i < 4; ++i) {
    std::string p = "moe" + std::to_string(i);
    n.op("MatMul", {x, n.init(p + ".gate", {32, 8})}, p + ".logits");
    auto* moe = n.op("MoE", {x, p + ".logits", n.init(p + ".fc1", {8, 32, 64}), n.init(p + ".fc1.bias", {8, 64}),
                             n.init(p + ".fc2", {8, 64, 32}), n.init(p + ".fc2.bias", {8, 32})},
                     p + ".y", "com.microsoft");
    testutil::attr_int(moe, "k", i < 3 ? 2 : 1);
    x = p + ".y";
  }
  n.output(x);
  Saved saved(n.m);
  auto r = testutil::cli({"audit", saved.path});
  REQUIRE(r.code == 0);
  std::vector<std::string> layers = section(r.out, "mixture of experts (4 layers)");
  REQUIRE(layers.size() >= 4);
  CHECK(layers[1] == "  0–2 (3)  moeN  MoE         8      2       4,192  33,536     256       0");
  CHECK(layers[2].rfind("        3  moe3  MoE         8      1", 0) == 0);
  CHECK_THAT(r.out, Contains("0–2 (3): layers 0 to 2, identical, in one row; --all-blocks lists each layer."));
  auto all = testutil::cli({"audit", saved.path, "--all-blocks"});
  std::vector<std::string> each = section(all.out, "mixture of experts (4 layers)");
  REQUIRE(each.size() >= 5);
  for (int i = 0; i < 4; ++i) CHECK(each[1 + i].rfind("  " + std::to_string(i) + "  moe" + std::to_string(i) + "  MoE", 0) == 0);
}

TEST_CASE("fold: all-blocks is a key of headcount.toml", "[fold][cli][config]") {
  testutil::TempDir dir;
  std::string toml = dir.file("headcount.toml");
  testutil::write_bytes(toml, "all-blocks = true\n");
  auto r = testutil::cli({"audit", thousand_layers().path, "--config", toml});
  REQUIRE(r.code == 0);
  CHECK(section(r.out, "attention blocks").size() == 1 + 1000 + 1);
  testutil::write_bytes(toml, "all_blocks = true\n");
  auto typo = testutil::cli({"audit", thousand_layers().path, "--config", toml});
  CHECK(typo.code == 2);
  CHECK_THAT(typo.err, Contains("unknown key 'all_blocks' (did you mean 'all-blocks'?)"));
}
