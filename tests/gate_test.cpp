// gate_test.cpp: CI gates, the config file, baselines, the CI output formats and batch runs, all
// through run_cli() the way a CI job calls the binary: exit codes, exact stderr lines, reports.
//
// Every expected number comes from an independent source named in a comment next to it: PyTorch's
// total in samples/NAME.counts.tsv (written at export time from the torch module), or arithmetic
// worked by hand from the shapes of the samples.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "headcount/cli.h"
#include "headcount/error.h"
#include "headcount/gate.h"
#include "test_util.h"

using namespace headcount;
using Catch::Matchers::Message;
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// ----- helpers ------------------------------------------------------------------------------

using testutil::CliResult;
using testutil::CwdGuard;
using testutil::cli;

static std::string sample(const std::string& name) { return std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx"; }

// The `total` line of samples/NAME.counts.tsv: PyTorch's sum(p.numel()) over the module.
static uint64_t pytorch_total(const std::string& name) {
  std::ifstream in(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".counts.tsv");
  REQUIRE(in.good());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("total\t", 0) == 0) return std::stoull(line.substr(6));
  }
  FAIL("no total line in " << name << ".counts.tsv");
  return 0;
}

// Copies samples/NAME.onnx to `to`, creating its folders.
static std::string copy_sample(const std::string& name, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(sample(name), to, fs::copy_options::overwrite_existing);
  return to.string();
}

static std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream s(text);
  std::string line;
  while (std::getline(s, line)) out.push_back(line);
  return out;
}

static size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Parses one JSON document; integers stay exact (nlohmann keeps uint64 as uint64).
static Json parse_json(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  INFO(text.substr(0, 400));
  REQUIRE(!j.is_discarded());
  return j;
}

static const Json& get(const Json& j, const std::string& key) {
  REQUIRE(j.is_object());
  auto it = j.find(key);
  if (it == j.end()) FAIL("no field '" << key << "'");
  return *it;
}

const char* const kCountError = "' is not a parameter count (examples: 350000, 350k, 110M, 1.5B)";
const char* const kBytesError = "' is not a size in bytes (examples: 500000000, 500MB, 476.8MiB, 2GiB)";
const char* const kToleranceError = "' is not a tolerance (examples: 0, 5000, 1k, 0.5%)";

}  // namespace

// ----- 1. parsing budgets -------------------------------------------------------------------

TEST_CASE("parse_count reads counts with k/M/B suffixes exactly", "[gate]") {
  CHECK(parse_count("350k") == 350000u);      // 350 x 1,000
  CHECK(parse_count("110M") == 110000000u);   // 110 x 1,000,000
  CHECK(parse_count("1.5B") == 1500000000u);  // 1.5 x 1,000,000,000
  CHECK(parse_count("1234") == 1234u);
  CHECK(parse_count("2.5k") == 2500u);        // 2.5 x 1,000
  CHECK(parse_count("0.001k") == 1u);         // 1/1000 of a thousand is still whole
  for (std::string bad : {"abc", "1.5", "-5", "", "k", ".", "1.2.3", "5 k", "1.0001k"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_MATCHES(parse_count(bad), InputError, Message("'" + bad + kCountError));
  }
}

TEST_CASE("parse_bytes reads decimal and binary units", "[gate]") {
  CHECK(parse_bytes("500MB") == 500000000u);    // 500 x 10^6
  CHECK(parse_bytes("64MiB") == 67108864u);     // 64 x 2^20 = 64 x 1,048,576
  CHECK(parse_bytes("2GiB") == 2147483648u);    // 2 x 2^30 = 2 x 1,073,741,824
  CHECK(parse_bytes("1.5GB") == 1500000000u);   // 1.5 x 10^9
  CHECK(parse_bytes("10kB") == 10000u);
  CHECK(parse_bytes("500") == 500u);
  CHECK(parse_bytes("81.75KiB") == 83712u);     // 81.75 x 1,024 = 83,712
  // The example the error message itself gives: 476.8 x 1,048,576 = 499,961,036.8 bytes; a budget
  // of that many bytes admits 499,961,036 whole bytes.
  CHECK(parse_bytes("476.8MiB") == 499961036u);
  for (std::string bad : {"abc", "1.5", "-5", "", "MB", "5 MB", "5XB"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_MATCHES(parse_bytes(bad), InputError, Message("'" + bad + kBytesError));
  }
}

TEST_CASE("parse_tolerance reads a count or a percentage", "[gate]") {
  uint64_t absolute = 99, fraction = 99;
  parse_tolerance("0.5%", &absolute, &fraction);
  CHECK(absolute == 0u);
  CHECK(fraction == 5000000u);  // 0.5% = 0.005 = 5,000,000 parts per billion, exactly
  parse_tolerance("100%", &absolute, &fraction);
  CHECK(fraction == 1000000000u);
  parse_tolerance("0.0000001%", &absolute, &fraction);
  CHECK(fraction == 1u);  // 1e-9
  parse_tolerance("5000", &absolute, &fraction);
  CHECK(absolute == 5000u);
  CHECK(fraction == 0u);
  parse_tolerance("1k", &absolute, &fraction);
  CHECK(absolute == 1000u);
  for (std::string bad : {"%", "abc%", "-1%", "150%"}) {
    INFO("'" << bad << "'");
    CHECK_THROWS_MATCHES(parse_tolerance(bad, &absolute, &fraction), InputError, Message("'" + bad + kToleranceError));
  }
  CHECK_THROWS_MATCHES(parse_tolerance("abc", &absolute, &fraction), InputError, Message(std::string("'abc") + kCountError));
}

TEST_CASE("a bad budget on the command line is a usage error", "[gate]") {
  CliResult r = cli({"audit", sample("bert_tiny"), "--max-params", "1.5"});
  CHECK(r.code == 2);
  CHECK(r.err == std::string("headcount: error: '1.5") + kCountError + "\n");
  CHECK(r.out.empty());
  r = cli({"audit", sample("bert_tiny"), "--max-bytes", "lots"});
  CHECK(r.code == 2);
  CHECK(r.err == std::string("headcount: error: 'lots") + kBytesError + "\n");
  // --expect-heads 0 or -3 would otherwise switch the gate off without a word.
  for (const char* n : {"0", "-3"}) {
    r = cli({"audit", sample("bert_tiny"), "--expect-heads", n});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("headcount: error: --expect-heads", 0) == 0);
  }
}

// ----- 2. every gate, passing and failing ---------------------------------------------------

TEST_CASE("gate: every row of the gate table is an option, a config key and a [[budget]] key", "[gate]") {
  // A limit no model meets: 1 parameter, MAC or byte; 99 heads (gpt2_tiny has 4 in each block).
  // Each gate fails alone under its own name, whichever way the limit is given.
  testutil::TempDir dir;
  const std::string gpt2 = copy_sample("gpt2_tiny", dir.path / "gpt2_tiny.onnx");
  const std::string config = dir.file("headcount.toml");
  std::set<std::string> kinds;
  for (const auto& k : gate_kinds()) kinds.insert(k.id);
  for (const BudgetGate& g : budget_gates()) {
    INFO(g.id);
    CHECK(kinds.count(g.id) == 1);  // a SARIF rule of its own
    CHECK(find_budget_gate(g.id) == &g);
    CHECK(((g.measure != nullptr) != (g.expect != nullptr)));
    const std::string limit = g.unit == BudgetUnit::Heads ? "99" : "1";
    const std::string failed = "headcount: gate failed: " + gpt2 + ": " + g.id + ": ";
    CliResult r = cli({"audit", gpt2, "--top", "0", std::string("--") + g.id, limit});
    CHECK(r.code == 1);
    CHECK(r.err.rfind(failed, 0) == 0);
    CHECK(count_of(r.err, "\n") == 1);
    testutil::write_bytes(config, std::string(g.id) + " = " + limit + "\n");
    CliResult top = cli({"audit", gpt2, "--top", "0", "--config", config});
    CHECK(top.code == 1);
    CHECK(top.err == r.err);
    testutil::write_bytes(config, "[[budget]]\npath = \"*.onnx\"\n" + std::string(g.id) + " = " + limit + "\n");
    CliResult table = cli({"audit", gpt2, "--top", "0", "--config", config});
    CHECK(table.code == 1);
    CHECK(table.err == r.err);
  }
}


TEST_CASE("gate: --max-params gates parameters.unique, PyTorch's count", "[gate]") {
  const std::string gpt2 = sample("gpt2_tiny");
  // samples/gpt2_tiny.counts.tsv: total 29184 (the tied LM head counted once).
  REQUIRE(pytorch_total("gpt2_tiny") == 29184u);

  CliResult r = cli({"audit", gpt2, "--max-params", "30k"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("\ngates: all passed\n") != std::string::npos);

  // 29,184 - 25,000 = 4,184 over; 4,184 / 25,000 = 16.736% -> 16.7%
  r = cli({"audit", gpt2, "--max-params", "25k"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + gpt2 +
                     ": max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)\n");
  CHECK(r.out.find("\ngates: 1 failed\n  max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)\n") !=
        std::string::npos);

  // The budget is inclusive: exactly PyTorch's total passes, one less fails by 1 (1/29,183 = 0.003%).
  CHECK(cli({"audit", gpt2, "--max-params", "29184"}).code == 0);
  r = cli({"audit", gpt2, "--max-params", "29183"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + gpt2 +
                     ": max-params: parameters 29,184 exceed the budget of 29,183 by 1 (0.0%)\n");
}

TEST_CASE("gate: --max-attention-params gates the Q/K/V/O parameters", "[gate]") {
  const std::string bert = sample("bert_tiny");
  // bert_tiny: 2 layers x (4 x 32^2 weights + 4 x 32 biases) = 2 x (4,096 + 128) = 8,448.
  CHECK(cli({"audit", bert, "--max-attention-params", "8448"}).code == 0);
  // 8,448 - 8,000 = 448 over; 448 / 8,000 = 5.6%
  CliResult r = cli({"audit", bert, "--max-attention-params", "8k"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + bert +
                     ": max-attention-params: attention parameters 8,448 exceed the budget of 8,000 by 448 (5.6%)\n");
}

TEST_CASE("gate: --max-bytes gates the bytes of the stored parameters", "[gate]") {
  const std::string bert = sample("bert_tiny");
  // samples/bert_tiny.counts.tsv: total 20928, all float32 and stored once: 20,928 x 4 = 83,712 bytes.
  REQUIRE(pytorch_total("bert_tiny") == 20928u);
  CHECK(cli({"audit", bert, "--max-bytes", "83712"}).code == 0);
  CHECK(cli({"audit", bert, "--max-bytes", "81.75KiB"}).code == 0);  // 81.75 x 1,024 = 83,712 exactly
  CHECK(cli({"audit", bert, "--max-bytes", "1MB"}).code == 0);
  // 83,712 - 80,000 = 3,712 over; 3,712 / 80,000 = 4.64% -> 4.6%
  CliResult r = cli({"audit", bert, "--max-bytes", "80kB"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + bert +
                     ": max-bytes: parameter bytes 83,712 (83.7 kB) exceed the budget of 80,000 (80.0 kB) by "
                     "3,712 bytes (4.6%)\n");
  // 81.7 x 1,024 = 83,660.8 -> a budget of 83,660 whole bytes: 52 over (52 / 83,660 = 0.06% -> 0.1%)
  r = cli({"audit", bert, "--max-bytes", "81.7KiB"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + bert +
                     ": max-bytes: parameter bytes 83,712 (83.7 kB) exceed the budget of 83,660 (83.7 kB) by "
                     "52 bytes (0.1%)\n");
}

TEST_CASE("gate: --expect-heads passes on the right count and names the blocks that differ", "[gate]") {
  const std::string bert = sample("bert_tiny");
  // samples/bert_tiny.counts.tsv: both blocks heads=4.
  CHECK(cli({"audit", bert, "--expect-heads", "4"}).code == 0);
  CliResult r = cli({"audit", bert, "--expect-heads", "8"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + bert +
                     ": expect-heads: expected 8 heads in every block, but block 0 has 4; block 1 has 4\n");
  // A model without attention cannot have the heads it is expected to have.
  const std::string classifier = sample("classifier_softmax");
  r = cli({"audit", classifier, "--expect-heads", "4"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + classifier +
                     ": expect-heads: expected 4 heads in every block, but the model has no attention blocks\n");
}

TEST_CASE("gate: --fail-on gates findings by severity", "[gate]") {
  const std::string gpt2 = sample("gpt2_tiny");
  // gpt2_tiny stores the tied wte/LM head twice (counts.tsv: "the ONNX file holds it as 2
  // initializer(s)"): one duplicate-weights warning and nothing worse.
  CliResult r = cli({"audit", gpt2, "--fail-on", "warning"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + gpt2 + ": fail-on: 1 finding at or above warning (first: duplicate-weights)\n");
  r = cli({"audit", gpt2, "--fail-on", "info"});  // a warning is at or above info
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + gpt2 + ": fail-on: 1 finding at or above info (first: duplicate-weights)\n");
  r = cli({"audit", gpt2, "--fail-on", "error"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  r = cli({"audit", gpt2, "--fail-on", "fatal"});
  CHECK(r.code == 2);
}

TEST_CASE("gate: --baseline compares with an earlier JSON report of the same path", "[gate]") {
  testutil::TempDir dir;
  // One path, two models: the report is written for bert_tiny, then the file is replaced by
  // gpt2_tiny, the way a re-export replaces a model in a repository.
  const std::string model = copy_sample("bert_tiny", dir.path / "model.onnx");
  const std::string base = dir.file("base.json");
  CliResult r = cli({"audit", model, "--format", "json", "-o", base});
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());

  // The same model against its own report.
  r = cli({"audit", model, "--baseline", base});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("\ngates: all passed\n") != std::string::npos);

  // PyTorch's totals 20,928 (bert_tiny) -> 29,184 (gpt2_tiny) is +8,256. Attention is 8,448 in
  // both (2 x (4 x 32^2 + 4 x 32)), and both have 2 blocks of 4 heads of width 32, so the
  // parameters are the only change.
  copy_sample("gpt2_tiny", model);
  r = cli({"audit", model, "--baseline", base});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + model +
                     ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 0)\n");

  SECTION("the other way round the move is negative") {
    REQUIRE(cli({"audit", model, "-f", "json", "-o", base}).code == 0);
    copy_sample("bert_tiny", model);
    r = cli({"audit", model, "--baseline", base});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + model +
                       ": baseline: parameters moved from 29,184 to 20,928 (-8,256; tolerance 0)\n");
  }

  SECTION("a tolerance lets the parameter move pass") {
    CHECK(cli({"audit", model, "--baseline", base, "--tolerance", "10k"}).code == 0);
    CHECK(cli({"audit", model, "--baseline", base, "--tolerance", "8256"}).code == 0);  // inclusive
    r = cli({"audit", model, "--baseline", base, "--tolerance", "8255"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + model +
                       ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 8,255)\n");
    // A percentage is of the baseline's count: 0.5% of 20,928 = 104.64 -> 104; 40% = 8,371.2 -> 8,371.
    r = cli({"audit", model, "--baseline", base, "--tolerance", "0.5%"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + model +
                       ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 104)\n");
    CHECK(cli({"audit", model, "--baseline", base, "--tolerance", "40%"}).code == 0);
  }

  SECTION("with a tolerance the blocks and heads are still compared") {
    // The same report with block 0 claiming 8 heads: only that block differs.
    Json doc = parse_json(testutil::read_text(base));
    doc["models"][0]["attention_blocks"][0]["heads"] = 8;
    testutil::write_bytes(base, doc.dump());
    r = cli({"audit", model, "--baseline", base, "--tolerance", "10k"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + model + ": baseline: block 0 changed: heads 8 → 4\n");
  }

  SECTION("attention parameters are compared on their own") {
    // 8,448 in the report edited to 8,447: parameters within the tolerance, attention 1 off.
    Json doc = parse_json(testutil::read_text(base));
    doc["models"][0]["parameters"]["attention"] = 8447;
    testutil::write_bytes(base, doc.dump());
    r = cli({"audit", model, "--baseline", base, "--tolerance", "0.0001%"});
    CHECK(r.code == 1);
    // 0.0001% = 1,000 ppb: of 20,928 that is 0 (20,928 x 1,000 / 10^9 = 0.02); of 8,447 it is 0.
    CHECK(r.err == "headcount: gate failed: " + model +
                       ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 0)\n"
                       "headcount: gate failed: " + model +
                       ": baseline: attention parameters moved from 8,447 to 8,448 (+1; tolerance 0)\n");
  }
}

TEST_CASE("gate: --baseline reads counts above 2^53 exactly", "[gate]") {
  // A double cannot hold 2^53 + 1 = 9,007,199,254,740,993: a reader going through one sees
  // 2^53 on both sides and passes a move of 1. The tensor has dims only (no data), which the
  // loader counts from its shape.
  testutil::TempDir dir;
  auto m = testutil::model();
  *m.mutable_graph()->add_initializer() =
      testutil::tensor("big", {int64_t{9007199254740993}}, onnx::TensorProto::UINT8, /*no_data=*/true);
  const std::string model = dir.file("big.onnx"), base = dir.file("big.json");
  testutil::save(m, model);
  CliResult r = cli({"audit", model, "-f", "json", "-o", base});
  REQUIRE(r.code == 0);
  Json doc = parse_json(testutil::read_text(base));
  REQUIRE(get(get(doc["models"][0], "parameters"), "framework").get<uint64_t>() == 9007199254740993u);
  CHECK(cli({"audit", model, "--baseline", base}).code == 0);
  doc["models"][0]["parameters"]["framework"] = 9007199254740992u;  // 2^53
  testutil::write_bytes(base, doc.dump());
  r = cli({"audit", model, "--baseline", base});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + model +
                     ": baseline: parameters moved from 9,007,199,254,740,992 to 9,007,199,254,740,993 (+1; tolerance 0)\n");
}

TEST_CASE("gate: --baseline entries are matched by normalized path, in json and jsonl form", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = copy_sample("bert_tiny", dir.path / "y" / "z" / "bert_tiny.onnx");
  const std::string gpt2 = copy_sample("gpt2_tiny", dir.path / "x" / "gpt2_tiny.onnx");
  CwdGuard cwd(dir.path);
  REQUIRE(cli({"audit", "y/z/bert_tiny.onnx", "x/gpt2_tiny.onnx", "-f", "json", "-o", "base.json"}).code == 0);
  REQUIRE(cli({"audit", "y/z/bert_tiny.onnx", "x/gpt2_tiny.onnx", "-f", "jsonl", "-o", "base.jsonl"}).code == 0);
  CHECK(lines_of(testutil::read_text("base.jsonl")).size() == 2);

  for (const std::string baseline : {"base.json", "base.jsonl"}) {
    INFO(baseline);
    // The other order, and spelled differently: ./x/../x/gpt2_tiny.onnx and the absolute path of
    // bert_tiny (inside the current directory) are the same entries. Crossed over, 20,928 vs
    // 29,184 would fail.
    CliResult r = cli({"audit", "./x/../x/gpt2_tiny.onnx", bert, "--baseline", baseline});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(count_of(r.out, "\ngates: all passed\n") == 2);

    // The same file name in another folder is another model: no fallback on the name.
    const std::string other = copy_sample("gpt2_tiny", dir.path / "w" / "gpt2_tiny.onnx");
    r = cli({"audit", "w/gpt2_tiny.onnx", "--baseline", baseline});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: w/gpt2_tiny.onnx: baseline: the baseline '" + baseline +
                       "' has no entry for 'w/gpt2_tiny.onnx' (it holds: y/z/bert_tiny.onnx, x/gpt2_tiny.onnx); "
                       "write it again with this model in the run\n");
  }

  SECTION("a baseline written with --no-content is not compared with a run with content") {
    // With --no-content the tied head is not found: 32,384 stored and counted, not 29,184.
    REQUIRE(cli({"audit", "x/gpt2_tiny.onnx", "--no-content", "-f", "json", "-o", "fast.json"}).code == 0);
    CliResult r = cli({"audit", "x/gpt2_tiny.onnx", "--baseline", "fast.json"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: x/gpt2_tiny.onnx: baseline: the baseline was written with --no-content "
                   "and this run without it: their parameter counts are not comparable; run both the same way\n");
    CHECK(cli({"audit", "x/gpt2_tiny.onnx", "--no-content", "--baseline", "fast.json"}).code == 0);
  }

  SECTION("error records in a jsonl baseline are skipped") {
    testutil::write_bytes("bad.onnx", "hello\n");
    CliResult w = cli({"audit", "bad.onnx", "x/gpt2_tiny.onnx", "-f", "jsonl", "-o", "mixed.jsonl"});
    REQUIRE(w.code == 2);
    CHECK(cli({"audit", "x/gpt2_tiny.onnx", "--baseline", "mixed.jsonl"}).code == 0);
  }
}

TEST_CASE("a baseline that is missing or not a report is an input error", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = sample("bert_tiny");
  auto input_error = [&](const std::string& path, const std::string& message) {
    CliResult r = cli({"audit", bert, "--baseline", path});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: " + message + "\n");
    CHECK(r.out.empty());
  };
  const std::string missing = dir.file("nowhere.json");
  input_error(missing, "cannot read baseline '" + missing + "'");

  const std::string other = dir.file("other.json");
  testutil::write_bytes(other, "{\"name\": \"not a report\", \"parameters\": 5}\n");
  input_error(other, "baseline '" + other + "' is not a headcount/2 report (run 'headcount audit MODEL... --format json -o " +
                         other + "' to make one)");

  testutil::write_bytes(other, "{\"schema\": \"headcount/1\", \"file\": \"a.onnx\"}\n");
  input_error(other, "baseline '" + other + "' was written by an earlier headcount (headcount/1); write it again with "
                     "this version: headcount audit MODEL... --format json -o " + other);

  testutil::write_bytes(other, "");
  input_error(other, "baseline '" + other + "' is empty");

  // Not one JSON document, so read as JSON lines: line 1 is not JSON.
  testutil::write_bytes(other, "{\"schema\": ");
  input_error(other, "baseline '" + other + "' line 1 is not JSON");

  // A count that is not a whole number would compare as something else.
  testutil::write_bytes(other, "{\"schema\": \"headcount/2\", \"models\": [{\"file\": \"a.onnx\", \"parameters\": "
                               "{\"stored\": 1, \"unique\": 1, \"framework\": 1.5, \"attention\": 0, "
                               "\"content_compared\": true}, \"attention_blocks\": []}]}");
  input_error(other, "baseline '" + other + "', model 'a.onnx': 'framework' is missing or not a whole number");
  testutil::write_bytes(other, "{\"schema\": \"headcount/2\", \"models\": [{\"file\": \"a.onnx\", \"parameters\": "
                               "{\"stored\": 1, \"unique\": 1, \"framework\": -1, \"attention\": 0, "
                               "\"content_compared\": true}, \"attention_blocks\": []}]}");
  input_error(other, "baseline '" + other + "', model 'a.onnx': 'framework' is missing or not a whole number");
}

// ----- 3. bad input wins over gates ---------------------------------------------------------

TEST_CASE("an input error wins over a failed gate", "[gate]") {
  testutil::TempDir dir;
  const std::string missing = dir.file("missing.onnx"), gpt2 = sample("gpt2_tiny");
  CliResult r = cli({"audit", missing, gpt2, "--max-params", "25k"});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: " + missing + ": cannot open: No such file or directory\n"
                 "headcount: gate failed: " + gpt2 +
                     ": max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)\n");
  CHECK(r.out.find(testutil::version() + ": " + gpt2 + "\n") != std::string::npos);  // the good one is still reported
}

// ----- 4. the config file -------------------------------------------------------------------

TEST_CASE("gate: --config: a global budget and budget tables per path glob", "[gate]") {
  testutil::TempDir dir;
  const std::string gpt2 = copy_sample("gpt2_tiny", dir.path / "models" / "gpt2_tiny.onnx");
  const std::string bert = copy_sample("bert_tiny", dir.path / "models" / "bert_tiny.onnx");

  SECTION("the [[budget]] matching the path wins over the global budget") {
    const std::string config = dir.file("headcount.toml");
    testutil::write_bytes(config,
                          "max-params = \"25k\"\n\n"
                          "[[budget]]\npath = \"models/gpt2*\"\nmax-params = \"30k\"\n");
    // gpt2_tiny: 29,184 <= 30,000 (its own budget); bert_tiny: 20,928 <= 25,000 (the global one).
    CliResult r = cli({"audit", gpt2, bert, "--config", config});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(count_of(r.out, "config: " + config + "\n") == 2);  // above each model's report
    CHECK(r.out.rfind("config: " + config + "\n" + testutil::version() + ": " + gpt2 + "\n", 0) == 0);
    CHECK(count_of(r.out, "\ngates: all passed\n") == 2);

    // Without the [[budget]] table the global 25,000 applies to gpt2_tiny too: 4,184 over.
    const std::string global_only = dir.file("global.toml");
    testutil::write_bytes(global_only, "max-params = \"25k\"\n");
    r = cli({"audit", gpt2, bert, "--config", global_only});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + gpt2 +
                       ": max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)\n");

    // The JSON report names the config; without one the field is null.
    r = cli({"audit", bert, "--config", config, "-f", "json"});
    REQUIRE(r.code == 0);
    CHECK(get(parse_json(r.out), "config") == config);
    r = cli({"audit", bert, "-f", "json"});
    REQUIRE(r.code == 0);
    CHECK(get(parse_json(r.out), "config").is_null());
  }

  SECTION("a budget given on the command line beats every table of the config") {
    const std::string config = dir.file("headcount.toml");
    testutil::write_bytes(config, "[[budget]]\npath = \"models/*.onnx\"\nmax-params = \"30k\"\n");
    // Both pass their table's 30,000; --max-params 25k is meant for this run and wins: gpt2_tiny's
    // 29,184 is 4,184 over it.
    CHECK(cli({"audit", gpt2, bert, "--config", config}).code == 0);
    CliResult r = cli({"audit", gpt2, bert, "--config", config, "--max-params", "25k"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + gpt2 +
                       ": max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)\n");
  }

  SECTION("a glob is read against the config's folder, with ** for any depth") {
    fs::create_directories(dir.path / "ci");
    const std::string config = (dir.path / "ci" / "headcount.toml").string();
    // models/*.onnx next to the config is ci/models/*.onnx, which holds nothing: the table does
    // not apply and the global 20,000 fails both (20,928 and 29,184).
    testutil::write_bytes(config, "max-params = \"20k\"\n[[budget]]\npath = \"models/*.onnx\"\nmax-params = \"30k\"\n");
    CHECK(cli({"audit", gpt2, bert, "--config", config}).code == 1);
    // ../models/*.onnx reaches them; so does ../**/*_tiny.onnx, and **/bert* from the folder above.
    for (const char* glob : {"../models/*.onnx", "../**/*_tiny.onnx"}) {
      INFO(glob);
      testutil::write_bytes(config, std::string("max-params = \"20k\"\n[[budget]]\npath = \"") + glob +
                                        "\"\nmax-params = \"30k\"\n");
      CHECK(cli({"audit", gpt2, bert, "--config", config}).code == 0);
    }
    // * stays within one folder: ../* does not reach ../models/gpt2_tiny.onnx.
    testutil::write_bytes(config, "max-params = \"20k\"\n[[budget]]\npath = \"../*gpt2*\"\nmax-params = \"30k\"\n");
    CliResult r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 1);
  }

  SECTION("a file the config names is found from the config's folder") {
    fs::create_directories(dir.path / "ci");
    REQUIRE(cli({"audit", gpt2, "-f", "json", "-o", (dir.path / "ci" / "base.json").string()}).code == 0);
    const std::string config = (dir.path / "ci" / "headcount.toml").string();
    testutil::write_bytes(config, "baseline = \"base.json\"\n");
    // From another folder: ci/base.json, not ./base.json, which does not exist.
    CHECK(cli({"audit", gpt2, "--config", config}).code == 0);
    // The same report against bert_tiny's copy at gpt2_tiny's path: 29,184 -> 20,928.
    copy_sample("bert_tiny", gpt2);
    CliResult r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + gpt2 +
                       ": baseline: parameters moved from 29,184 to 20,928 (-8,256; tolerance 0)\n");
  }

  SECTION("models no [[budget]] matches get the global budget; the first matching table applies") {
    const std::string config = dir.file("tight.toml");
    testutil::write_bytes(config,
                          "max-params = \"20k\"\n\n"
                          "[[budget]]\npath = \"models/gpt2*\"\nmax-params = \"30k\"\n\n"
                          "[[budget]]\npath = \"models/bert*\"\nexpect-heads = 8\n\n"
                          "[[budget]]\npath = \"**\"\nmax-params = \"1\"\n");
    // bert_tiny keeps the global 20,000 (20,928 - 20,000 = 928 over; 928 / 20,000 = 4.64% -> 4.6%)
    // and gets expect-heads 8 from its table; gpt2_tiny's own 30,000 lets its 29,184 pass. The
    // last table matches both but comes after their own.
    CliResult r = cli({"audit", gpt2, bert, "--config", config});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + bert +
                       ": max-params: parameters 20,928 exceed the budget of 20,000 by 928 (4.6%)\n"
                       "headcount: gate failed: " + bert +
                       ": expect-heads: expected 8 heads in every block, but block 0 has 4; block 1 has 4\n");
  }

  SECTION("top-level keys set the options the command line leaves out") {
    const std::string config = dir.file("options.toml");
    testutil::write_bytes(config, "max-params = 25000\nformat = \"jsonl\"\n");
    CliResult r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 1);  // 29,184 > 25,000
    CHECK(lines_of(r.out).size() == 1);  // jsonl from the file
    CHECK(get(parse_json(r.out), "file") == gpt2);
    // The command line wins over the file.
    r = cli({"audit", gpt2, "--config", config, "--max-params", "30k", "-f", "json"});
    CHECK(r.code == 0);
    CHECK(get(parse_json(r.out), "config") == config);
    // A value the option refuses is an input error naming the file and line.
    testutil::write_bytes(config, "\nformat = \"yaml\"\n");
    r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("headcount: error: " + config + ":2: format: ", 0) == 0);
    CHECK(r.err.find("yaml") != std::string::npos);
  }

  SECTION("an unknown key, a table without a path or a bad value is an error with its line") {
    const std::string config = dir.file("bad.toml");
    auto input_error = [&](const std::string& text, const std::string& message) {
      testutil::write_bytes(config, text);
      CliResult r = cli({"audit", gpt2, "--config", config});
      CHECK(r.code == 2);
      CHECK(r.err == "headcount: error: " + config + message + "\n");
      CHECK(r.out.empty());
    };
    // A typo would otherwise switch the gate off: each is named with the key it resembles.
    input_error("[[budget]]\npath = \"*\"\nmax-parameters = \"30k\"\n",
                ":3: unknown key 'max-parameters' in a [[budget]] table (did you mean 'max-params'?)");
    input_error("max_params = \"30k\"\n", ":1: unknown key 'max_params' (did you mean 'max-params'?)");
    input_error("\n\nexpect-head = 12\n", ":3: unknown key 'expect-head' (did you mean 'expect-heads'?)");
    input_error("[gates]\nmax-params = 1\n", ":1: unknown key 'gates'");
    input_error("[[budget]]\nmax-params = \"30k\"\n", ":1: a [[budget]] table has no path");
    input_error("[[budget]]\npath = \"*\"\nmax-params = \"lots\"\n",
                std::string(":3: max-params: 'lots") + kCountError);
    input_error("[budget]\npath = \"*\"\n", ":1: 'budget' must be a list of tables: write [[budget]]");
    input_error("max-params = [1, 2]\n", ":1: 'max-params' must be a string, a whole number or true/false");
  }

  SECTION("invalid TOML and a byte-order mark are errors with their line") {
    const std::string config = dir.file("bad.toml");
    testutil::write_bytes(config, "max-params = \"25k\"\nmax-params = \"30k\"\n");  // a key twice
    CliResult r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("headcount: error: " + config + ":2:", 0) == 0);
    CHECK(r.err.find(": invalid TOML: ") != std::string::npos);
    testutil::write_bytes(config, "\xEF\xBB\xBFmax-params = \"25k\"\n");
    r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: " + config + ":1: the file starts with a byte-order mark; save it as UTF-8 without one\n");
    r = cli({"audit", gpt2, "--config", dir.file("none.toml")});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: cannot read config '" + dir.file("none.toml") + "'\n");
  }
}

TEST_CASE("gate: ./headcount.toml in the current directory is picked up without --config", "[gate]") {
  testutil::TempDir dir;
  const std::string gpt2 = sample("gpt2_tiny");
  testutil::write_bytes(dir.file("headcount.toml"), "max-params = \"25k\"\n");
  CliResult r;
  {
    CwdGuard cwd(dir.path);
    r = cli({"audit", gpt2});
  }
  // 29,184 against the file's 25,000: 4,184 over (16.7%).
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + gpt2 +
                     ": max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)\n");
  CHECK(r.out.rfind("config: headcount.toml\n" + testutil::version() + ": " + gpt2 + "\n", 0) == 0);
  // Back in the old directory (no headcount.toml there) the same command has no gate.
  REQUIRE(!fs::exists("headcount.toml"));
  r = cli({"audit", gpt2});
  CHECK(r.code == 0);
  CHECK(r.out.find("config: ") == std::string::npos);
}

// ----- 5. formats ---------------------------------------------------------------------------

TEST_CASE("json: one headcount/2 document for the run, with models, errors and the gate verdict", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny"), missing = dir.file("missing.onnx");
  CliResult r = cli({"audit", bert, missing, gpt2, "-f", "json", "--max-params", "25k"});
  CHECK(r.code == 2);
  Json doc = parse_json(r.out);
  CHECK(get(doc, "schema") == "headcount/2");
  CHECK(get(get(doc, "tool"), "name") == "headcount");
  const Json& models = get(doc, "models");
  REQUIRE(models.size() == 2);
  CHECK(get(models[0], "file") == bert);
  CHECK(get(models[1], "file") == gpt2);
  // PyTorch's totals (counts.tsv): 20,928 and 29,184.
  CHECK(get(get(models[0], "parameters"), "framework").get<uint64_t>() == pytorch_total("bert_tiny"));
  CHECK(get(get(models[1], "parameters"), "framework").get<uint64_t>() == pytorch_total("gpt2_tiny"));
  const Json& errors = get(doc, "errors");
  REQUIRE(errors.size() == 1);
  CHECK(get(errors[0], "file") == missing);
  CHECK(get(errors[0], "message") == "cannot open: No such file or directory");
  const Json& gate = get(doc, "gate");
  CHECK(get(gate, "configured") == true);
  CHECK(get(gate, "passed") == false);
  CHECK(get(gate, "failures").get<uint64_t>() == 1);  // gpt2_tiny's max-params

  // Without gates, an unreadable model still fails the run: nothing was proven about it.
  Json no_gates = parse_json(cli({"audit", bert, missing, "-f", "json"}).out);
  CHECK(get(get(no_gates, "gate"), "configured") == false);
  CHECK(get(get(no_gates, "gate"), "failures").get<uint64_t>() == 0);
  CHECK(get(get(no_gates, "gate"), "passed") == false);
  Json good = parse_json(cli({"audit", bert, "-f", "json"}).out);
  CHECK(get(get(good, "gate"), "passed") == true);
  CHECK(get(good, "errors").empty());
}

TEST_CASE("jsonl: one compact record per model and per error, in input order", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny"), missing = dir.file("missing.onnx");
  CliResult r = cli({"audit", bert, missing, gpt2, "-f", "jsonl"});
  CHECK(r.code == 2);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 3);
  CHECK(r.out.back() == '\n');
  const std::string files[] = {bert, missing, gpt2};
  const char* records[] = {"model", "error", "model"};
  for (size_t i = 0; i < 3; ++i) {
    Json doc = parse_json(lines[i]);
    CHECK(get(doc, "schema") == "headcount/2");
    CHECK(get(doc, "record") == records[i]);
    CHECK(get(doc, "file") == files[i]);
  }
  CHECK(get(get(parse_json(lines[0]), "parameters"), "framework").get<uint64_t>() == pytorch_total("bert_tiny"));  // 20,928
  CHECK(get(parse_json(lines[1]), "message") == "cannot open: No such file or directory");
  CHECK(get(get(parse_json(lines[2]), "parameters"), "framework").get<uint64_t>() == pytorch_total("gpt2_tiny"));  // 29,184
}

TEST_CASE("markdown: the summary table has a header row and one row per model", "[gate]") {
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny");
  CliResult r = cli({"audit", bert, gpt2, "-f", "markdown"});
  CHECK(r.code == 0);
  auto lines = lines_of(r.out);
  auto header = std::find(lines.begin(), lines.end(), "| model | parameters | stored | attention | blocks | heads | findings |");
  REQUIRE(header != lines.end());
  REQUIRE(lines.end() - header >= 4);
  CHECK(header[1] == "|---|---:|---:|---:|---:|---|---|");
  // bert_tiny: 20,928 (counts.tsv) stored once, 8,448 attention in 2 blocks of 4 heads;
  // gpt2_tiny: 29,184 (counts.tsv), stored 29,184 + 3,200 (the tied head again, 100 x 32) = 32,384.
  CHECK(header[2] == "| `" + bert + "` | 20,928 | 20,928 | 8,448 | 2 | 4 | none |");
  CHECK(header[3] == "| `" + gpt2 + "` | 29,184 | 32,384 | 8,448 | 2 | 4 | 1 warning |");
  CHECK((header + 4 == lines.end() || header[4].empty()));

  // With gates the table grows a gates column.
  r = cli({"audit", bert, gpt2, "-f", "markdown", "--max-params", "25k"});
  CHECK(r.code == 1);
  CHECK(r.out.find("| model | parameters | stored | attention | blocks | heads | findings | gates |\n") != std::string::npos);
  CHECK(r.out.find("| `" + bert + "` | 20,928 | 20,928 | 8,448 | 2 | 4 | none | passed |\n") != std::string::npos);
  CHECK(r.out.find("| `" + gpt2 + "` | 29,184 | 32,384 | 8,448 | 2 | 4 | 1 warning | **1 failed** |\n") != std::string::npos);
}

TEST_CASE("github: workflow commands with escaped properties and data", "[gate]") {
  testutil::TempDir dir;
  const std::string prefix = dir.path.string();
  REQUIRE(prefix.find_first_of("%,:") == std::string::npos);
  const std::string gpt2 = copy_sample("gpt2_tiny", dir.path / "a,b:c%d.onnx");
  const std::string bad = dir.file("x:y.onnx");
  testutil::write_bytes(bad, "hello\n");
  // In properties '%' -> %25, ',' -> %2C, ':' -> %3A; in data only '%' (and CR/LF) are escaped.
  const std::string file = prefix + "/a%2Cb%3Ac%25d.onnx";
  CliResult r = cli({"audit", gpt2, bad, "-f", "github", "--max-params", "25k"});
  CHECK(r.code == 2);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);  // notice, duplicate warning, gate error for gpt2; one error for the bad file
  for (const auto& line : lines) {
    INFO(line);
    CHECK((line.rfind("::notice ", 0) == 0 || line.rfind("::warning ", 0) == 0 || line.rfind("::error ", 0) == 0));
  }
  // 29,184 parameters (PyTorch's total), 32,384 stored, 8,448 in 2 blocks of 4 heads.
  CHECK(lines[0] == "::notice file=" + file + ",title=headcount " + file +
                        "::29,184 parameters (32,384 stored), 8,448 in 2 attention blocks, heads 4");
  CHECK(lines[1].rfind("::warning file=" + file + ",title=headcount duplicate-weights::tensors 'wte.weight' [100, 32]", 0) == 0);
  CHECK(lines[2] == "::error file=" + file +
                        ",title=headcount gate max-params::parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%25)");
  CHECK(lines[3].rfind("::error file=" + prefix + "/x%3Ay.onnx,title=headcount::not a valid ONNX model", 0) == 0);
}

TEST_CASE("markdown: text from the file cannot become markup", "[gate]") {
  testutil::TempDir dir;
  // A path with a backtick and a pipe: a code span fenced by two backticks (one more than the
  // longest run inside), the pipe escaped for the table.
  const std::string odd = copy_sample("gpt2_tiny", dir.path / "a`b|c.onnx");
  CliResult r = cli({"audit", odd, "-f", "markdown"});
  CHECK(r.code == 0);
  const std::string cell = "``" + dir.path.string() + "/a`b\\|c.onnx``";
  CHECK(r.out.find("| " + cell + " | 29,184 | 32,384 | 8,448 | 2 | 4 | 1 warning |\n") != std::string::npos);
  // The finding's tensor names and shapes come from the file: brackets (links) and underscores
  // (emphasis) are escaped.
  CHECK(r.out.find("- " + cell + " warning `duplicate-weights`: tensors 'wte.weight' \\[100, 32\\] and "
                   "'onnx::MatMul\\_645' \\[32, 100\\] hold the same values") != std::string::npos);
}

TEST_CASE("github: at most 10 annotations of each type, and a line for the rest", "[gate]") {
  testutil::TempDir dir;
  std::vector<std::string> args = {"audit"};
  for (int i = 0; i < 12; ++i) args.push_back(copy_sample("gpt2_tiny", dir.path / ("m" + std::to_string(10 + i) + ".onnx")));
  args.insert(args.end(), {"-f", "github", "--max-params", "25k"});
  // Each copy: one notice (its counts), one warning (duplicate-weights), one error (max-params:
  // 29,184 > 25,000). GitHub shows 10 of each type per step.
  CliResult r = cli(args);
  CHECK(r.code == 1);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 30 + 3);
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("::notice ", 0) == 0; }) == 10);
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("::warning ", 0) == 0; }) == 10);
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("::error ", 0) == 0; }) == 10);
  const std::string tail = " not annotated (GitHub shows 10 of each type per step); every one is in --format text, markdown or sarif";
  CHECK(lines[30] == "headcount: 2 more errors" + tail);
  CHECK(lines[31] == "headcount: 2 more warnings" + tail);
  CHECK(lines[32] == "headcount: 2 more notices" + tail);
}

TEST_CASE("sarif: a SARIF 2.1.0 log whose results name declared rules", "[gate]") {
  testutil::TempDir dir;
  // Inside the current directory: models/ and a missing file; the sample folder lies outside it.
  const std::string gpt2 = copy_sample("gpt2_tiny", dir.path / "models" / "gpt 2.onnx");
  CwdGuard cwd(dir.path);
  // Every sample, a missing file, a failing budget and every finding reported.
  CliResult r = cli({"audit", HEADCOUNT_SAMPLES_DIR, "missing.onnx", "models/gpt 2.onnx", "-f", "sarif", "--max-params",
                     "25k", "--fail-on", "info"});
  CHECK(r.code == 2);
  Json log = parse_json(r.out);
  CHECK(get(log, "version") == "2.1.0");
  const Json& runs = get(log, "runs");
  REQUIRE(runs.size() == 1);
  const Json& run = runs[0];
  const Json& driver = get(get(run, "tool"), "driver");
  CHECK(get(driver, "name") == "headcount");
  std::vector<std::string> rule_ids;
  for (const Json& rule : get(driver, "rules")) {
    const std::string id = get(rule, "id");
    CHECK(std::count(rule_ids.begin(), rule_ids.end(), id) == 0);  // declared once
    rule_ids.push_back(id);
    CHECK(!get(get(rule, "shortDescription"), "text").get<std::string>().empty());
    CHECK(!get(get(rule, "help"), "markdown").get<std::string>().empty());
  }
  for (const char* id : {"gate-max-params", "gate-fail-on", "gate-baseline", "input-error", "duplicate-weights"}) {
    CHECK(std::count(rule_ids.begin(), rule_ids.end(), id) == 1);
  }
  // A missing model: the run did not read every file.
  CHECK(get(get(run, "invocations")[0], "executionSuccessful") == false);

  const Json& results = get(run, "results");
  bool gate_seen = false, input_error_seen = false, warning_seen = false, block_seen = false;
  std::set<std::string> fingerprints;
  for (const Json& result : results) {
    const std::string rule_id = get(result, "ruleId");
    const std::string level = get(result, "level");
    const std::string text = get(get(result, "message"), "text");
    INFO(rule_id << ": " << text);
    REQUIRE(std::count(rule_ids.begin(), rule_ids.end(), rule_id) == 1);
    CHECK(rule_ids[get(result, "ruleIndex").get<size_t>()] == rule_id);
    CHECK((level == "error" || level == "warning" || level == "note"));
    CHECK(!text.empty());
    CHECK(fingerprints.insert(get(get(result, "partialFingerprints"), "headcount/v1")).second);  // one per result
    const Json& location = get(result, "locations")[0];
    const Json& artifact = get(get(location, "physicalLocation"), "artifactLocation");
    const std::string uri = get(artifact, "uri");
    CHECK(get(get(get(location, "physicalLocation"), "region"), "startLine") == 1);
    // Relative to the current directory, percent-encoded, under %SRCROOT%; outside it an absolute file: URI.
    if (uri.rfind("file://", 0) == 0) {
      CHECK(uri.rfind("file://" + fs::absolute(HEADCOUNT_SAMPLES_DIR).lexically_normal().generic_string(), 0) == 0);
      CHECK(artifact.find("uriBaseId") == artifact.end());
    } else {
      CHECK(get(artifact, "uriBaseId") == "%SRCROOT%");
    }
    if (rule_id == "gate-max-params" && uri == "models/gpt%202.onnx") {
      gate_seen = true;
      CHECK(level == "error");
      CHECK(text == "parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)");
    }
    if (rule_id == "input-error") {
      input_error_seen = true;
      CHECK(uri == "missing.onnx");
      CHECK(text == "cannot open: No such file or directory");
    }
    if (rule_id == "duplicate-weights" && uri == "models/gpt%202.onnx") warning_seen = level == "warning";
    if (location.contains("logicalLocations")) {
      block_seen = true;
      CHECK(text.rfind("block ", 0) == 0);
      CHECK(!get(get(location, "logicalLocations")[0], "name").get<std::string>().empty());
    }
  }
  CHECK(gate_seen);
  CHECK(input_error_seen);
  CHECK(warning_seen);
  CHECK(block_seen);

  // The same problems in another run have the same fingerprints: code scanning keeps the alerts.
  CliResult again = cli({"audit", "models/gpt 2.onnx", "-f", "sarif", "--max-params", "20k"});
  std::set<std::string> second;
  const Json again_log = parse_json(again.out);
  for (const Json& result : get(get(again_log, "runs")[0], "results")) {
    if (get(get(get(get(result, "locations")[0], "physicalLocation"), "artifactLocation"), "uri") == "models/gpt%202.onnx") {
      second.insert(get(get(result, "partialFingerprints"), "headcount/v1").get<std::string>());
    }
  }
  CHECK(second.size() == 2);  // duplicate-weights and gate-max-params, the budget's numbers changed
  for (const auto& fp : second) CHECK(fingerprints.count(fp) == 1);
}

TEST_CASE("gate: --output writes the report to the file and nothing to stdout", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny");
  for (const char* format : {"text", "json", "jsonl", "markdown", "sarif", "github"}) {
    INFO(format);
    const std::string file = dir.file(std::string("report.") + format);
    CliResult to_file = cli({"audit", bert, gpt2, "-f", format, "--max-params", "25k", "-o", file});
    CliResult to_stdout = cli({"audit", bert, gpt2, "-f", format, "--max-params", "25k"});
    CHECK(to_file.code == 1);  // gpt2_tiny's 29,184 > 25,000
    CHECK(to_file.out.empty());
    CHECK(to_file.err == to_stdout.err);
    CHECK(testutil::read_text(file) == to_stdout.out);
    CHECK(!to_stdout.out.empty());
  }
  CliResult r = cli({"audit", bert, "-o", dir.file("no/such/dir/report.txt")});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: cannot write '" + dir.file("no/such/dir/report.txt") + "'\n");
}

// ----- 6. batch mode ------------------------------------------------------------------------

TEST_CASE("a directory is searched recursively, in sorted order, and -j does not change the output", "[gate]") {
  testutil::TempDir dir;
  const fs::path root = dir.path / "models";
  const std::string bert = copy_sample("bert_tiny", root / "a" / "bert_tiny.onnx");
  const std::string gpt2 = copy_sample("gpt2_tiny", root / "a" / "b" / "gpt2_tiny.onnx");
  const std::string gqa = copy_sample("gqa", root / "c" / "gqa.onnx");
  const std::string per_head = copy_sample("per_head", root / "per_head.onnx");
  const std::string bad = (root / "c" / "bad.onnx").string();
  testutil::write_bytes(bad, "hello\n");  // a text file, renamed
  testutil::write_bytes((root / "c" / "notes.txt").string(), "not a model, not .onnx: skipped\n");

  // Sorted as strings: "a/b/..." < "a/bert..." because '/' (0x2F) < 'e' (0x65); then c/bad < c/gqa
  // < per_head.
  const std::vector<std::string> order = {gpt2, bert, bad, gqa, per_head};

  CliResult md = cli({"audit", root.string(), "-f", "markdown"});
  CHECK(md.code == 2);
  auto lines = lines_of(md.err);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("headcount: error: " + bad + ": not a valid ONNX model", 0) == 0);
  size_t at = 0;
  for (const auto& f : order) {
    size_t next = md.out.find("| `" + f + "` |", at);
    INFO(f);
    CHECK(next != std::string::npos);
    at = next == std::string::npos ? at : next;
  }

  // text: four reports in order, then a summary of all five.
  CliResult text = cli({"audit", root.string()});
  CHECK(text.code == 2);
  CHECK(count_of(text.out, testutil::version() + ": ") == 4);
  CHECK(text.out.rfind(testutil::version() + ": " + gpt2 + "\n", 0) == 0);
  CHECK(text.out.find("\nsummary of 5 models\n") != std::string::npos);
  CHECK(text.out.find(bad + " ") != std::string::npos);  // its summary row
  CHECK(text.err == md.err);

  // jsonl: one record per file, in order, the bad one as an error record; PyTorch's totals where
  // the file stores the module.
  CliResult jsonl = cli({"audit", root.string(), "-f", "jsonl"});
  CHECK(jsonl.code == 2);
  auto docs = lines_of(jsonl.out);
  REQUIRE(docs.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(get(parse_json(docs[i]), "file") == order[i]);
    CHECK(get(parse_json(docs[i]), "record") == (order[i] == bad ? "error" : "model"));
  }
  CHECK(get(get(parse_json(docs[0]), "parameters"), "framework").get<uint64_t>() == 29184u);  // gpt2 tsv
  CHECK(get(get(parse_json(docs[1]), "parameters"), "framework").get<uint64_t>() == 20928u);  // bert tsv

  for (const char* format : {"text", "json", "jsonl", "markdown", "sarif", "github"}) {
    INFO(format);
    CliResult one = cli({"audit", root.string(), "-f", format, "-j", "1", "--max-params", "25k"});
    CliResult three = cli({"audit", root.string(), "-f", format, "-j", "3", "--max-params", "25k"});
    CHECK(one.code == 2);
    CHECK(three.code == 2);
    CHECK(three.out == one.out);
    CHECK(three.err == one.err);
  }
}

TEST_CASE("a directory without .onnx files is an input error", "[gate]") {
  testutil::TempDir dir;
  const fs::path empty = dir.path / "empty";
  fs::create_directories(empty / "sub");
  testutil::write_bytes((empty / "sub" / "model.txt").string(), "no models here\n");
  CliResult r = cli({"audit", empty.string()});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: " + empty.string() + ": is a directory with no .onnx files in it\n");
  // With a good model next to it, the good one is still reported.
  r = cli({"audit", empty.string(), sample("bert_tiny"), "-f", "jsonl"});
  CHECK(r.code == 2);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(get(parse_json(lines[0]), "record") == "error");
  CHECK(get(parse_json(lines[1]), "file") == sample("bert_tiny"));
}
