// cli_test.cpp: the command line as a new user meets it: mistyped subcommands, conflicting flags,
// '-o -', folders with upper-case extensions, the progress line, plurals and the alignment of
// text tables with multi-byte names.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "headcount/cli.h"
#include "headcount/numbers.h"
#include "headcount/runner.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;
namespace fs = std::filesystem;
using testutil::CliResult;
using testutil::CwdGuard;
using testutil::cli;

namespace {

std::string sample(const std::string& name) { return std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx"; }

// A model holding float tensors of the given names and lengths, used by nothing.
std::string tensors_model(const testutil::TempDir& dir, const std::string& file,
                          const std::vector<std::pair<std::string, int64_t>>& tensors) {
  auto m = testutil::model();
  for (const auto& [name, n] : tensors) *m.mutable_graph()->add_initializer() = testutil::tensor(name, {n});
  testutil::save(m, dir.file(file));
  return dir.file(file);
}

}  // namespace

TEST_CASE("cli: a mistyped subcommand gets a did-you-mean", "[cli]") {
  CliResult r = cli({"adit", "model.onnx"});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: 'adit' is not a subcommand (did you mean 'audit'?)\n"
                 "Run 'headcount --help' for usage.\n");
  r = cli({"explian", "width-mismatch"});
  CHECK(r.err.rfind("headcount: error: 'explian' is not a subcommand (did you mean 'explain'?)\n", 0) == 0);
  r = cli({"frobnicate"});
  CHECK(r.err.rfind("headcount: error: 'frobnicate' is not a subcommand (audit or explain)\n", 0) == 0);
}

TEST_CASE("cli: conflicting and out-of-range flags are usage errors", "[cli]") {
  CliResult r = cli({"-q", "-v", "audit", sample("bert_tiny")});
  CHECK(r.code == 2);
  CHECK(r.err.find("excludes") != std::string::npos);
  CHECK(r.out.empty());
  r = cli({"audit", sample("bert_tiny"), "--top", "-1"});
  CHECK(r.code == 2);
  CHECK(r.err.find("--top takes 0 or more (a count of tensors)") != std::string::npos);
  CHECK(cli({"audit", sample("bert_tiny"), "--top", "0"}).code == 0);
}

TEST_CASE("cli: '-o -' is stdout, not a file named '-'", "[cli]") {
  testutil::TempDir dir;
  CwdGuard cwd(dir.path);
  CliResult r = cli({"audit", sample("bert_tiny"), "-f", "jsonl", "-o", "-"});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("{\"schema\":\"headcount/2\",\"record\":\"model\"", 0) == 0);
  CHECK(!fs::exists(dir.path / "-"));
}

TEST_CASE("cli: a folder's .onnx files are found whatever the case of the extension", "[cli]") {
  testutil::TempDir dir;
  tensors_model(dir, "A.ONNX", {{"w", 10}});
  tensors_model(dir, "b.Onnx", {{"w", 20}});
  tensors_model(dir, "c.onnx", {{"w", 30}});
  testutil::write_bytes(dir.file("d.onnx.txt"), "not a model");
  CliResult r = cli({"audit", dir.path.string(), "-f", "jsonl"});
  CHECK(r.code == 0);
  std::istringstream lines(r.out);
  std::vector<std::string> files;
  for (std::string line; std::getline(lines, line);) {
    auto at = line.find("\"file\":\"");
    REQUIRE(at != std::string::npos);
    files.push_back(line.substr(at + 8, line.find('"', at + 8) - at - 8));
  }
  CHECK(files == std::vector<std::string>{dir.file("A.ONNX"), dir.file("b.Onnx"), dir.file("c.onnx")});
}

TEST_CASE("cli: the progress counter only moves forward, and ends on a clean line", "[cli]") {
  testutil::TempDir dir;
  AuditRequest request;
  for (int i = 0; i < 12; ++i) request.inputs.push_back(tensors_model(dir, "m" + std::to_string(i) + ".onnx", {{"w", 8}}));
  request.jobs = 4;
  std::ostringstream progress;
  request.progress = &progress;
  Run run = run_audit(request);
  REQUIRE(run.files.size() == 12);
  // "\rheadcount: audited K/12\033[K" for K = 1..12 in order, then "\r\033[K".
  std::string expected;
  for (int k = 1; k <= 12; ++k) expected += "\rheadcount: audited " + std::to_string(k) + "/12\033[K";
  expected += "\r\033[K";
  CHECK(progress.str() == expected);
}

TEST_CASE("text: counts of one are singular", "[cli]") {
  testutil::TempDir dir;
  CliResult r = cli({"audit", tensors_model(dir, "one.onnx", {{"w", 7}})});
  CHECK(r.code == 0);
  // One graph with no node and one tensor of 7 float32 elements (28 bytes).
  CHECK(r.out.find("; 1 graph, 0 nodes\n") != std::string::npos);
  CHECK(r.out.find("  parameters  7 stored in 1 tensor (28 B)\n") != std::string::npos);
}

TEST_CASE("text: tables align names by display width, not bytes", "[cli]") {
  CHECK(display_width("…") == 1);          // 3 bytes, one column
  CHECK(display_width("héllo") == 5);      // é is 2 bytes
  CHECK(display_width("注意") == 4);        // wide CJK: two columns each
  CHECK(display_width("e\u0301") == 1);    // e + combining acute
  testutil::TempDir dir;
  // Two tensors of the same size so both appear in the largest-tensors table: the "[" of the
  // shape column must start at the same column on both rows.
  CliResult r = cli({"audit", tensors_model(dir, "names.onnx", {{"enc…w", 64}, {"encXXw", 64}})});
  CHECK(r.code == 0);
  std::istringstream lines(r.out);
  std::vector<size_t> columns;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  enc", 0) == 0) columns.push_back(display_width(line.substr(0, line.find('['))));
  }
  REQUIRE(columns.size() == 2);
  CHECK(columns[0] == columns[1]);
}

TEST_CASE("cli: --timings adds one stderr line per model and one for the run, and changes nothing else", "[cli]") {
  const std::string bert = sample("bert_tiny"), gpt2 = sample("gpt2_tiny");
  CliResult plain = cli({"audit", bert, gpt2, "-f", "json"});
  CliResult timed = cli({"audit", bert, gpt2, "-f", "json", "--timings"});
  CHECK(timed.code == plain.code);
  CHECK(timed.out == plain.out);
  std::istringstream lines(timed.err);
  std::vector<std::string> err;
  for (std::string line; std::getline(lines, line);) err.push_back(line);
  REQUIRE(err.size() == 3);
  CHECK(err[0].rfind("headcount: timings: " + bert + ": read ", 0) == 0);
  CHECK(err[1].rfind("headcount: timings: " + gpt2 + ": read ", 0) == 0);
  CHECK(err[2].rfind("headcount: timings: all models: read ", 0) == 0);
  for (const char* stage : {", shapes ", ", match ", ", content ", ", rules "}) {
    CHECK(err[0].find(stage) != std::string::npos);
    CHECK(err[2].find(stage) != std::string::npos);
  }
  CHECK(err[2].find("; render ") != std::string::npos);
  CHECK(err[2].substr(err[2].size() - 3) == " ms");
}

TEST_CASE("cli: control characters in a file's names are made visible in the text report and explain, never printed raw",
          "[cli][hostile]") {
  // A tensor named "q<LF>headcount: error: forged<ESC>[31m" would otherwise print a line of its own
  // that a script reads as headcount's error, and send an escape sequence to the terminal. The
  // producer name carries a CR, the node name a BEL and a C1 control (U+009B, C2 9B in UTF-8), and
  // a valid UTF-8 'é' (C3 A9), which stays as it is.
  testutil::TempDir dir;
  onnx::ModelProto m = testutil::layers_model({testutil::LayerSpec{}});
  m.set_producer_name("evil\r\nheadcount: error: forged producer");
  auto* g = m.mutable_graph();
  const std::string old_name = g->initializer(0).name();
  const std::string bad = "q\nheadcount: error: forged\x1b[31m";
  g->mutable_initializer(0)->set_name(bad);
  for (auto& n : *g->mutable_node()) {
    for (auto& in : *n.mutable_input()) {
      if (in == old_name) in = bad;
    }
  }
  g->mutable_node(0)->set_name("node\x07\xc2\x9b\xc3\xa9");
  const std::string path = testutil::saved(m, dir);

  auto check = [&](const std::string& out) {
    for (unsigned char c : out) {
      INFO("byte " << static_cast<int>(c));
      CHECK((c >= 0x20 || c == '\n'));  // no control character but the report's own line ends
    }
    CHECK(out.find("\xc2\x9b") == std::string::npos);
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) CHECK(line.rfind("headcount: error", 0) != 0);
  };
  CliResult audit = cli({"audit", path, "--all-blocks", "--top", "100"});
  REQUIRE(audit.code == 0);
  check(audit.out);
  CHECK(audit.out.find("evil\\r\\nheadcount: error: forged producer") != std::string::npos);
  CHECK(audit.out.find("q\\nheadcount: error: forged\\x1b[31m") != std::string::npos);
  CliResult explain = cli({"explain", path, "--block", "0"});
  REQUIRE(explain.code == 0);
  check(explain.out);
  CHECK(explain.out.find("q\\nheadcount: error: forged\\x1b[31m") != std::string::npos);
  // The JSON keeps the exact name, escaped as JSON escapes it.
  CliResult json = cli({"audit", path, "--format", "json"});
  REQUIRE(json.code == 0);
  CHECK(json.out.find("q\\nheadcount: error: forged\\u001b[31m") != std::string::npos);
}

TEST_CASE("cli: control characters in names are shown, not sent on, in the markdown and GitHub formats", "[cli][hostile]") {
  // Two 32x32 float32 tensors of the same values (0, 1, ..., 1023) make the duplicate-weights
  // warning, which quotes both names: one holds an LF and an ESC sequence, the other a BEL.
  // Markdown turns a line end into a space (a table row stays one line) and shows the others as
  // \xNN; the GitHub format sends LF as %0A (its escape) and shows the others as \xNN, so no
  // escape sequence reaches the job's log.
  testutil::TempDir dir;
  onnx::ModelProto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 32});
  onnx::TensorProto a = testutil::tensor("w\nheadcount: error: forged\x1b[31m", {32, 32});
  std::string bytes;
  for (int i = 0; i < 1024; ++i) {
    const float f = static_cast<float>(i);
    bytes += std::string(reinterpret_cast<const char*>(&f), 4);
  }
  a.set_raw_data(bytes);
  onnx::TensorProto b = a;
  b.set_name("dup\x07");
  *g->add_initializer() = a;
  *g->add_initializer() = b;
  testutil::node(g, "MatMul", {"x", a.name()}, {"y"}, "first");
  testutil::node(g, "MatMul", {"y", b.name()}, {"z"}, "second");
  const std::string path = testutil::saved(m, dir);
  for (const std::string format : {"markdown", "github"}) {
    INFO(format);
    CliResult r = cli({"audit", path, "--format", format});
    REQUIRE(r.code == 0);
    for (unsigned char c : r.out) CHECK((c >= 0x20 || c == '\n'));
    CHECK(r.out.find("dup\\x07") != std::string::npos);
    CHECK(r.out.find("\\x1b") != std::string::npos);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) CHECK(line.rfind("headcount: error", 0) != 0);
  }
}

TEST_CASE("cli: an error line's text has no control character a terminal acts on", "[cli][hostile]") {
  // LF, DEL and U+009B (CSI as a C1 control, C2 9B in UTF-8) each become '?'; é (C3 A9) stays.
  CHECK(one_line("a\nb\x7f" "c\xc2\x9b" "d\xc3\xa9") == "a?b?c?d\xc3\xa9");
  CHECK(one_line("\xc2") == "\xc2");  // a lone lead byte is no control: left as it is
}
