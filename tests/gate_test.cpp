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

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "headcount/cli.h"
#include "headcount/error.h"
#include "headcount/gate.h"
#include "test_util.h"

using namespace headcount;
using Catch::Matchers::Message;
namespace fs = std::filesystem;
using google::protobuf::Struct;
using google::protobuf::Value;

namespace {

// ----- helpers ------------------------------------------------------------------------------

using testutil::CliResult;
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

static Struct parse_json(const std::string& text) {
  Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  INFO(text.substr(0, 400));
  REQUIRE(status.ok());
  return s;
}

static const Value& get(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end()) FAIL("no field '" << key << "'");
  return it->second;
}

// Changes into `dir` and back again when the scope ends, also when a REQUIRE throws.
struct CwdGuard {
  fs::path saved = fs::current_path();
  explicit CwdGuard(const fs::path& dir) { fs::current_path(dir); }
  ~CwdGuard() {
    std::error_code ec;
    fs::current_path(saved, ec);
  }
};

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
  uint64_t absolute = 99;
  double fraction = 99.0;
  parse_tolerance("0.5%", &absolute, &fraction);
  CHECK(absolute == 0u);
  CHECK(fraction == Approx(0.005));  // 0.5 / 100
  parse_tolerance("5000", &absolute, &fraction);
  CHECK(absolute == 5000u);
  CHECK(fraction == 0.0);
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

TEST_CASE("gate: --baseline compares with an earlier JSON report", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny");
  const std::string base = dir.file("bert_tiny.json");
  CliResult r = cli({"audit", bert, "--format", "json", "-o", base});
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());

  // The same model against its own report.
  r = cli({"audit", bert, "--baseline", base});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("\ngates: all passed\n") != std::string::npos);

  // A single-document baseline applies whatever the file name: PyTorch's totals 20,928 (bert_tiny)
  // -> 29,184 (gpt2_tiny) is +8,256. Attention is 8,448 in both (2 x (4 x 32^2 + 4 x 32)), and
  // both have 2 blocks of 4 heads of width 32, so the parameters are the only change.
  r = cli({"audit", gpt2, "--baseline", base});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + gpt2 +
                     ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 0)\n");

  // The other way round the move is negative.
  const std::string gpt2_base = dir.file("gpt2_tiny.json");
  REQUIRE(cli({"audit", gpt2, "-f", "json", "-o", gpt2_base}).code == 0);
  r = cli({"audit", bert, "--baseline", gpt2_base});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + bert +
                     ": baseline: parameters moved from 29,184 to 20,928 (-8,256; tolerance 0)\n");

  SECTION("a tolerance lets the parameter move pass") {
    CHECK(cli({"audit", gpt2, "--baseline", base, "--tolerance", "10k"}).code == 0);
    CHECK(cli({"audit", gpt2, "--baseline", base, "--tolerance", "8256"}).code == 0);  // inclusive
    r = cli({"audit", gpt2, "--baseline", base, "--tolerance", "8255"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + gpt2 +
                       ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 8,255)\n");
    // A percentage is of the baseline's count: 0.5% of 20,928 = 104.64 -> 104; 40% = 8,371.2 -> 8,371.
    r = cli({"audit", gpt2, "--baseline", base, "--tolerance", "0.5%"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + gpt2 +
                       ": baseline: parameters moved from 20,928 to 29,184 (+8,256; tolerance 104)\n");
    CHECK(cli({"audit", gpt2, "--baseline", base, "--tolerance", "40%"}).code == 0);
  }

  SECTION("with a tolerance the blocks and heads are still compared") {
    // The same report with block 0 claiming 8 heads: only that block differs from gpt2_tiny's.
    std::string text = testutil::read_text(base);
    size_t at = text.find("\"heads\": 4,");
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string("\"heads\": 4,").size(), "\"heads\": 8,");
    const std::string edited = dir.file("edited.json");
    testutil::write_bytes(edited, text);
    r = cli({"audit", gpt2, "--baseline", edited, "--tolerance", "10k"});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + gpt2 + ": baseline: block 0 changed: heads 8 → 4\n");
  }
}

TEST_CASE("gate: --baseline in JSON-array and JSON-lines form is matched by file name", "[gate]") {
  testutil::TempDir dir;
  const std::string array = dir.file("base.json"), jsonl = dir.file("base.jsonl");
  REQUIRE(cli({"audit", sample("bert_tiny"), sample("gpt2_tiny"), "-f", "json", "-o", array}).code == 0);
  REQUIRE(cli({"audit", sample("bert_tiny"), sample("gpt2_tiny"), "-f", "jsonl", "-o", jsonl}).code == 0);
  CHECK(testutil::read_text(array).substr(0, 2) == "[\n");
  CHECK(lines_of(testutil::read_text(jsonl)).size() == 2);

  // Copies elsewhere, in the other order: each must find its own report by file name (crossed
  // over, 20,928 vs 29,184 would fail).
  const std::string gpt2 = copy_sample("gpt2_tiny", dir.path / "x" / "gpt2_tiny.onnx");
  const std::string bert = copy_sample("bert_tiny", dir.path / "y" / "z" / "bert_tiny.onnx");
  for (const std::string& baseline : {array, jsonl}) {
    INFO(baseline);
    CliResult r = cli({"audit", gpt2, bert, "--baseline", baseline});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(count_of(r.out, "\ngates: all passed\n") == 2);
    // A model the baseline has no report for fails the gate.
    const std::string other = copy_sample("per_head", dir.path / "per_head.onnx");
    r = cli({"audit", other, "--baseline", baseline});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + other + ": baseline: the baseline has no report for '" + other + "'\n");
  }
}

TEST_CASE("a baseline that is missing or not a report is an input error", "[gate]") {
  testutil::TempDir dir;
  const std::string missing = dir.file("nowhere.json");
  CliResult r = cli({"audit", sample("bert_tiny"), "--baseline", missing});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: cannot read baseline '" + missing + "'\n");
  CHECK(r.out.empty());

  const std::string other = dir.file("other.json");
  testutil::write_bytes(other, "{\"name\": \"not a report\", \"parameters\": 5}\n");
  r = cli({"audit", sample("bert_tiny"), "--baseline", other});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: baseline '" + other +
                     "' is not a headcount/1 report (run 'headcount audit MODEL --format json' to make one)\n");
  CHECK(r.out.empty());

  const std::string broken = dir.file("broken.json");
  testutil::write_bytes(broken, "{\"schema\": ");
  r = cli({"audit", sample("bert_tiny"), "--baseline", broken});
  CHECK(r.code == 2);
  CHECK(r.err.rfind("headcount: error: baseline '" + broken + "' is not valid JSON: ", 0) == 0);
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
  CHECK(r.out.find("headcount 0.1.0: " + gpt2 + "\n") != std::string::npos);  // the good one is still reported
}

// ----- 4. the config file -------------------------------------------------------------------

TEST_CASE("gate: --config: a global budget and budget tables per path glob", "[gate]") {
  testutil::TempDir dir;
  const std::string gpt2 = sample("gpt2_tiny"), bert = sample("bert_tiny");

  SECTION("the [[budget]] matching the path wins over the global budget") {
    const std::string config = dir.file("headcount.toml");
    testutil::write_bytes(config,
                          "max-params = \"25k\"\n\n"
                          "[[budget]]\npath = \"*gpt2*\"\nmax-params = \"30k\"\n");
    // gpt2_tiny: 29,184 <= 30,000 (its own budget); bert_tiny: 20,928 <= 25,000 (the global one).
    CliResult r = cli({"audit", gpt2, bert, "--config", config});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(count_of(r.out, "config: " + config + "\n") == 2);  // above each model's report
    CHECK(r.out.rfind("config: " + config + "\nheadcount 0.1.0: " + gpt2 + "\n", 0) == 0);
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
    Struct doc = parse_json(r.out);
    CHECK(get(doc, "config").string_value() == config);
    r = cli({"audit", bert, "-f", "json"});
    REQUIRE(r.code == 0);
    CHECK(get(parse_json(r.out), "config").kind_case() == Value::kNullValue);
  }

  SECTION("models no [[budget]] matches get the global budget, field by field") {
    const std::string config = dir.file("tight.toml");
    testutil::write_bytes(config,
                          "max-params = \"20k\"\n\n"
                          "[[budget]]\npath = \"*gpt2*\"\nmax-params = \"30k\"\n\n"
                          "[[budget]]\npath = \"*bert*\"\nexpect-heads = 8\n");
    // bert_tiny keeps the global 20,000 (20,928 - 20,000 = 928 over; 928 / 20,000 = 4.64% -> 4.6%)
    // and gets expect-heads 8 from its table; gpt2_tiny's own 30,000 lets its 29,184 pass.
    CliResult r = cli({"audit", gpt2, bert, "--config", config});
    CHECK(r.code == 1);
    CHECK(r.err == "headcount: gate failed: " + bert +
                       ": max-params: parameters 20,928 exceed the budget of 20,000 by 928 (4.6%)\n"
                       "headcount: gate failed: " + bert +
                       ": expect-heads: expected 8 heads in every block, but block 0 has 4; block 1 has 4\n");
  }

  SECTION("top-level keys set the options the command line leaves out") {
    const std::string config = dir.file("options.toml");
    testutil::write_bytes(config, "max-params = 25000\nformat = \"jsonl\"\nunknown-key = 1\n");
    CliResult r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 1);  // 29,184 > 25,000
    CHECK(lines_of(r.out).size() == 1);  // jsonl from the file
    CHECK(get(parse_json(r.out), "config").string_value() == config);
    // The command line wins over the file.
    r = cli({"audit", gpt2, "--config", config, "--max-params", "30k", "-f", "json"});
    CHECK(r.code == 0);
    CHECK(r.out.rfind("{\n", 0) == 0);
    // A value the option refuses is an input error naming the file.
    testutil::write_bytes(config, "format = \"yaml\"\n");
    r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("headcount: error: " + config + ": --format: yaml not in ", 0) == 0);
  }

  SECTION("an unknown key or a table without a path is an input error") {
    const std::string config = dir.file("bad.toml");
    testutil::write_bytes(config, "[[budget]]\npath = \"*gpt2*\"\nmax-parameters = \"30k\"\n");
    CliResult r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: " + config + ": unknown key 'max-parameters' in a [[budget]] table\n");
    CHECK(r.out.empty());
    testutil::write_bytes(config, "[[budget]]\nmax-params = \"30k\"\n");
    r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: " + config + ": a [[budget]] table has no path\n");
    testutil::write_bytes(config, "[[budget]]\npath = \"*\"\nmax-params = \"lots\"\n");
    r = cli({"audit", gpt2, "--config", config});
    CHECK(r.code == 2);
    CHECK(r.err == std::string("headcount: error: 'lots") + kCountError + "\n");
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
  CHECK(r.out.rfind("config: headcount.toml\nheadcount 0.1.0: " + gpt2 + "\n", 0) == 0);
  // Back in the old directory (no headcount.toml there) the same command has no gate.
  REQUIRE(!fs::exists("headcount.toml"));
  r = cli({"audit", gpt2});
  CHECK(r.code == 0);
  CHECK(r.out.find("config: ") == std::string::npos);
}

// ----- 5. formats ---------------------------------------------------------------------------

TEST_CASE("jsonl: one compact headcount/1 document per model and line", "[gate]") {
  testutil::TempDir dir;
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny"), missing = dir.file("missing.onnx");
  CliResult r = cli({"audit", bert, missing, gpt2, "-f", "jsonl"});
  CHECK(r.code == 2);
  auto lines = lines_of(r.out);
  REQUIRE(lines.size() == 2);  // the missing model has no report, only its error line
  CHECK(r.out.back() == '\n');
  const std::string files[] = {bert, gpt2};
  const uint64_t totals[] = {pytorch_total("bert_tiny"), pytorch_total("gpt2_tiny")};  // 20,928 and 29,184
  for (size_t i = 0; i < 2; ++i) {
    Struct doc = parse_json(lines[i]);
    CHECK(get(doc, "schema").string_value() == "headcount/1");
    CHECK(get(doc, "file").string_value() == files[i]);
    CHECK(get(get(doc, "parameters").struct_value(), "unique").number_value() == static_cast<double>(totals[i]));
  }
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

TEST_CASE("sarif: a SARIF 2.1.0 log whose results name declared rules", "[gate]") {
  testutil::TempDir dir;
  const std::string missing = dir.file("missing.onnx"), gpt2 = sample("gpt2_tiny");
  // Every sample, a missing file, a failing budget and every finding reported.
  CliResult r = cli({"audit", HEADCOUNT_SAMPLES_DIR, missing, "-f", "sarif", "--max-params", "25k", "--fail-on", "info"});
  CHECK(r.code == 2);
  Struct log = parse_json(r.out);
  CHECK(get(log, "version").string_value() == "2.1.0");
  REQUIRE(get(log, "runs").has_list_value());
  const auto& runs = get(log, "runs").list_value();
  REQUIRE(runs.values_size() == 1);
  const Struct& run = runs.values(0).struct_value();
  const Struct& driver = get(get(run, "tool").struct_value(), "driver").struct_value();
  CHECK(get(driver, "name").string_value() == "headcount");
  std::set<std::string> rule_ids;
  for (const auto& rule : get(driver, "rules").list_value().values()) {
    const std::string id = get(rule.struct_value(), "id").string_value();
    CHECK(!id.empty());
    CHECK(rule_ids.insert(id).second);  // declared once
  }
  CHECK(rule_ids.count("gate") == 1);
  CHECK(rule_ids.count("input-error") == 1);
  REQUIRE(get(run, "results").has_list_value());
  const auto& results = get(run, "results").list_value();
  CHECK(results.values_size() > 3);
  bool gate_seen = false, input_error_seen = false, warning_seen = false;
  for (const auto& v : results.values()) {
    const Struct& result = v.struct_value();
    const std::string rule_id = get(result, "ruleId").string_value();
    const std::string level = get(result, "level").string_value();
    const std::string text = get(get(result, "message").struct_value(), "text").string_value();
    INFO(rule_id << ": " << text);
    CHECK(rule_ids.count(rule_id) == 1);
    CHECK((level == "error" || level == "warning" || level == "note"));
    CHECK(!text.empty());
    const auto& location = get(result, "locations").list_value().values(0).struct_value();
    const std::string uri = get(get(get(location, "physicalLocation").struct_value(), "artifactLocation").struct_value(), "uri")
                                .string_value();
    if (rule_id == "gate" && uri == gpt2 && text.rfind("max-params: ", 0) == 0) {
      gate_seen = true;
      CHECK(level == "error");
      CHECK(text == "max-params: parameters 29,184 exceed the budget of 25,000 by 4,184 (16.7%)");
    }
    if (rule_id == "input-error") {
      input_error_seen = true;
      CHECK(uri == missing);
      CHECK(text == "cannot open: No such file or directory");
    }
    if (rule_id == "duplicate-weights" && uri == gpt2) warning_seen = level == "warning";
  }
  CHECK(gate_seen);
  CHECK(input_error_seen);
  CHECK(warning_seen);
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
  CHECK(count_of(text.out, "headcount 0.1.0: ") == 4);
  CHECK(text.out.rfind("headcount 0.1.0: " + gpt2 + "\n", 0) == 0);
  CHECK(text.out.find("\nsummary of 5 models\n") != std::string::npos);
  CHECK(text.out.find(bad + " ") != std::string::npos);  // its summary row
  CHECK(text.err == md.err);

  // jsonl: one line per good model, in order; PyTorch's totals where the file stores the module.
  CliResult jsonl = cli({"audit", root.string(), "-f", "jsonl"});
  CHECK(jsonl.code == 2);
  auto docs = lines_of(jsonl.out);
  REQUIRE(docs.size() == 4);
  const std::vector<std::string> good = {gpt2, bert, gqa, per_head};
  for (size_t i = 0; i < 4; ++i) CHECK(get(parse_json(docs[i]), "file").string_value() == good[i]);
  CHECK(get(get(parse_json(docs[0]), "parameters").struct_value(), "unique").number_value() == 29184.0);  // gpt2 tsv
  CHECK(get(get(parse_json(docs[1]), "parameters").struct_value(), "unique").number_value() == 20928.0);  // bert tsv

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
  CHECK(lines_of(r.out).size() == 1);
}
