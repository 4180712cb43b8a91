// diff_test.cpp: `headcount diff` on hand-built pairs whose numbers are worked by hand from
// DOMAIN.md section 1 (Q: w × (h·d) + h·d, K and V alike, O: (h·d) × w + w; standard 4w² + 4w).
// Each hand-built model also stores its √d_k divisor as a one-element float constant, which the
// model's parameter count includes (+1) and the attention count does not.
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <sstream>

#include "headcount/diff.h"
#include "headcount/render.h"
#include "headcount/audit.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;
using testutil::LayerSpec;
using testutil::layers_model;

namespace {

// A layer of the given width, heads and head size; every other setting as LayerSpec has it.
LayerSpec spec(int64_t width, int64_t heads, int64_t head_dim) {
  LayerSpec s;
  s.width = width;
  s.heads = heads;
  s.head_dim = head_dim;
  return s;
}

// Two one-layer models audited in memory and compared, as `headcount diff a.onnx b.onnx` would.
struct Compared {
  std::unique_ptr<testutil::Audited> a, b;  // the audits the diff points into
  Diff diff;
};

Compared compared(LayerSpec a, LayerSpec b) {
  Compared c;
  c.a = testutil::audited(layers_model({a}), {}, "a.onnx");
  c.b = testutil::audited(layers_model({b}), {}, "b.onnx");
  c.diff = compare_sides(diff_side("a.onnx", c.a->audit), diff_side("b.onnx", c.b->audit));
  return c;
}

// A one-layer model saved as dir/name, for the command line.
std::string saved(const testutil::TempDir& dir, const std::string& name, LayerSpec spec) {
  return testutil::saved(layers_model({spec}), dir, name);
}

}  // namespace

TEST_CASE("diff: 4 heads and 12 heads of the same width hold the same parameters", "[diff]") {
  // Width 96: 4 heads × 24 or 12 heads × 8, both 96 × 96 projections: 4·96² + 4·96 = 37,248.
  Compared c = compared(spec(96, 4, 24), spec(96, 12, 8));
  const Diff& d = c.diff;
  CHECK(d.outcome == "heads 4 → 12; attention parameters unchanged (each projection is still 96 × 96); "
                     "parameters unchanged (37,249)");
  CHECK_FALSE(d.counts_changed);
  REQUIRE(d.blocks.size() == 1);
  CHECK(d.blocks[0].changes.size() == 4);  // heads, kv_heads, head_dim, v_head_dim; no count moved
  for (const auto& c : d.blocks[0].changes) CHECK((c.what == "heads" || c.what == "kv_heads" || c.what == "head_dim" || c.what == "v_head_dim"));
}

TEST_CASE("diff: MATLAB-style 8 × 392 against 4 × 784 says which projections grew, by how much", "[diff]") {
  // NumKeyChannels is the total over heads, on a 3136-wide input:
  //   8 heads × 49 = 392: Q, K, V 3136·392 + 392 = 1,229,704 each; O 392·3136 + 3136 = 1,232,448;
  //                        4,921,560 in all;
  //   4 heads × 196 = 784: Q, K, V 3136·784 + 784 = 2,459,408 each; O 784·3136 + 3136 = 2,461,760;
  //                        9,839,984 in all.
  Compared c = compared(spec(3136, 8, 49), spec(3136, 4, 196));
  const Diff& d = c.diff;
  CHECK(d.counts_changed);
  // 9,839,984 − 4,921,560 = 4,918,424 (+99.9%); Q, K, V grew by 1,229,704 each, O by 1,229,312.
  CHECK(d.outcome ==
        "heads 8 → 4; attention parameters 4,921,560 → 9,839,984 (+4,918,424, +99.9%): Q grew by 1,229,704, K grew by "
        "1,229,704, V grew by 1,229,704, O grew by 1,229,312; parameters 4,921,561 → 9,839,985 (+4,918,424, +99.9%)");
}

TEST_CASE("diff: formats, a baseline as B, --fail-on-change and unreadable inputs", "[diff]") {
  testutil::TempDir dir;
  std::string a = saved(dir, "a.onnx", spec(64, 4, 16));
  std::string b = saved(dir, "b.onnx", spec(64, 4, 32));
  auto r = testutil::cli({"diff", a, b});
  CHECK(r.code == 0);
  // A: 4·64² + 4·64 = 16,640. B, 4 heads × 32: Q, K, V 64·128 + 128 = 8,320 each, O 128·64 + 64 = 8,256:
  // 33,216.
  CHECK(r.out.find("outcome: attention parameters 16,640 → 33,216 (+16,576, +99.6%)") != std::string::npos);
  CHECK(testutil::cli({"diff", a, b, "--fail-on-change"}).code == 1);
  CHECK(testutil::cli({"diff", a, a, "--fail-on-change"}).code == 0);
  for (const char* f : {"json", "markdown", "html"}) {
    auto out = testutil::cli({"diff", a, b, "-f", f});
    INFO(f);
    CHECK(out.code == 0);
    CHECK(out.out.find("16,640") != std::string::npos);
  }
  auto json = testutil::cli({"diff", a, b, "-f", "json"});
  CHECK(json.out.find("\"counts_changed\": true") != std::string::npos);
  // B as a baseline report of one model: what it states is compared, nothing else.
  std::string report = dir.file("a.json");
  REQUIRE(testutil::cli({"audit", a, "-f", "json", "-o", report}).code == 0);
  auto same = testutil::cli({"diff", a, report, "--fail-on-change"});
  CHECK(same.code == 0);
  CHECK(same.out.find("parameters unchanged (16,641)") != std::string::npos);
  auto missing = testutil::cli({"diff", a, dir.file("missing.onnx")});
  CHECK(missing.code == 2);
  CHECK(missing.err.rfind("headcount: error: " + dir.file("missing.onnx") + ": cannot open", 0) == 0);
}

TEST_CASE("diff: the torch pair nn.MultiheadAttention(96, 4) and (96, 12)", "[diff]") {
  // samples/mha_heads{4,12}.counts.tsv: torch counts 37,248 for both, 4·96² + 4·96.
  std::string a = std::string(HEADCOUNT_SAMPLES_DIR) + "/mha_heads4.onnx";
  std::string b = std::string(HEADCOUNT_SAMPLES_DIR) + "/mha_heads12.onnx";
  Audit x = audit_file(a), y = audit_file(b);
  Diff d = compare_sides(diff_side(a, x), diff_side(b, y));
  CHECK(d.outcome == "heads 4 → 12; attention parameters unchanged (each projection is still 96 × 96); "
                     "parameters unchanged (37,248)");
  CHECK_FALSE(d.counts_changed);
}
