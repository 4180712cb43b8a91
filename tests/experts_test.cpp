// experts_test.cpp: mixtures of experts found in the graph. The torch samples' numbers are
// PyTorch's own (samples/NAME.counts.tsv, read from the modules at export); the fused-operator
// graphs are built here and their numbers worked by hand in the comments.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "graph_builder.h"
#include "headcount/report.h"

using namespace headcount;

namespace {

using testutil::GraphBuilder;

struct TorchMoE {
  uint64_t total = 0;
  std::vector<std::map<std::string, uint64_t>> layers;  // the "moe" lines
};

TorchMoE read_moe(const std::string& name) {
  std::ifstream in(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".counts.tsv");
  REQUIRE(in);
  TorchMoE t;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind, field;
    fields >> kind;
    if (kind == "total") fields >> t.total;
    if (kind != "moe") continue;
    fields >> field;  // the layer's index
    std::map<std::string, uint64_t> layer;
    while (fields >> field) {
      size_t eq = field.find('=');
      layer[field.substr(0, eq)] = std::stoull(field.substr(eq + 1));
    }
    t.layers.push_back(layer);
  }
  return t;
}

void check_sample(const std::string& name) {
  INFO("sample " << name);
  TorchMoE t = read_moe(name);
  REQUIRE(t.layers.size() == 2);
  Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx");
  CHECK(a.framework.parameters == t.total);  // sum(p.numel() for p in model.parameters())
  REQUIRE(a.experts.layers.size() == t.layers.size());
  uint64_t idle = 0;
  for (size_t i = 0; i < t.layers.size(); ++i) {
    INFO("layer " << i);
    const ExpertLayer& l = a.experts.layers[i];
    auto& x = t.layers[i];
    CHECK(l.form == "routed");
    CHECK(l.experts == std::optional<int64_t>(static_cast<int64_t>(x["experts"])));
    CHECK(l.found == static_cast<int64_t>(x["experts"]));
    CHECK(l.top_k == std::optional<int64_t>(static_cast<int64_t>(x["top_k"])));
    CHECK(l.expert == std::optional<uint64_t>(x["expert"]));
    CHECK(l.routed == x["routed"]);
    CHECK(l.router == x["router"]);
    CHECK(l.shared == x["shared"]);
    CHECK(l.notes.empty());
    idle += x["active_per_token_idle"];
  }
  // Active per token: torch's total less (experts − k) · one expert in each layer.
  CHECK(a.active_parameters == std::optional<uint64_t>(t.total - idle));
  // The routers' Softmaxes are the routers, not unmatched attention; nothing above info.
  CHECK(a.attention.unmatched.empty());
  for (const auto& f : a.findings) CHECK(f.severity == Severity::Info);
  CHECK(std::any_of(a.findings.begin(), a.findings.end(), [](const Finding& f) { return f.rule == "mixture-of-experts"; }));
  CHECK(a.composition.routed_experts == 2 * t.layers[0]["routed"]);
}

// A fused com.microsoft MoE (or QMoE) fed by a router MatMul x [T, 32] · gate [32, 8].
GraphBuilder fused_moe(bool quantized, int64_t k) {
  GraphBuilder n;
  n.input("x", {15, 32});
  n.op("MatMul", {"x", n.init("gate.weight", {32, 8})}, "logits");
  onnx::NodeProto* moe;
  if (!quantized) {
    moe = n.op("MoE", {"x", "logits", n.init("fc1", {8, 32, 64}), n.init("fc1.bias", {8, 64}), n.init("fc2", {8, 64, 32}),
                       n.init("fc2.bias", {8, 32}), n.init("fc3", {8, 32, 64}), n.init("fc3.bias", {8, 64})},
               "y", "com.microsoft");
  } else {
    // 4-bit: two weights per byte along the output features.
    moe = n.op("QMoE", {"x", "logits", n.init("fc1", {8, 32, 32}, onnx::TensorProto::UINT8), n.init("fc1.scales", {8, 64}), "",
                        n.init("fc2", {8, 64, 16}, onnx::TensorProto::UINT8), n.init("fc2.scales", {8, 32})},
               "y", "com.microsoft");
    testutil::attr_int(moe, "expert_weight_bits", 4);
  }
  testutil::attr_int(moe, "k", k);
  n.output("y");
  return n;
}

}  // namespace

TEST_CASE("experts: Mixtral-style dense routing, every count as PyTorch's", "[experts]") { check_sample("moe_dense"); }

TEST_CASE("experts: DeepSeek-style sparse routing with a shared expert, every count as PyTorch's", "[experts]") {
  check_sample("moe_sparse");
  Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/moe_sparse.onnx");
  CHECK(a.experts.layers[0].shared_experts == 1);
}

TEST_CASE("experts: a fused MoE counts its stacked experts and the router", "[experts]") {
  auto r = testutil::audited(fused_moe(false, 2).m);
  const Audit& a = r->audit;
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  // One expert: fc1 32·64 + 64, fc2 64·32 + 32, fc3 32·64 + 64 = 6,304; 8 of them 50,432.
  CHECK(l.form == "MoE");
  CHECK(l.experts == std::optional<int64_t>(8));
  CHECK(l.top_k == std::optional<int64_t>(2));
  CHECK(l.expert == std::optional<uint64_t>(6304));
  CHECK(l.routed == 50432u);
  CHECK(l.router == 256u);  // 32·8
  // Active: 50,432 + 256 stored, less (8 − 2)·6,304 = 37,824 idle: 12,864.
  CHECK(a.framework.parameters == 50688u);
  CHECK(a.active_parameters == std::optional<uint64_t>(12864));
  CHECK(a.composition.routed_experts == 50432u);
  CHECK(a.composition.routers == 256u);
  // MACs: only the 2 experts a token runs, 2·6,304, plus the router's 256.
  CHECK(a.cost.macs_experts == 12608u);
  for (const auto& f : a.findings) CHECK(f.severity == Severity::Info);
}

TEST_CASE("experts: an 8-bit QMoE counts one parameter per byte", "[experts]") {
  GraphBuilder n;
  n.input("x", {15, 32});
  n.op("MatMul", {"x", n.init("gate.weight", {32, 4})}, "logits");
  auto* moe = n.op("QMoE", {"x", "logits", n.init("fc1", {4, 32, 64}, onnx::TensorProto::UINT8), n.init("fc1.scales", {4, 64}),
                            "", n.init("fc2", {4, 64, 32}, onnx::TensorProto::UINT8), n.init("fc2.scales", {4, 32})},
                   "y", "com.microsoft");
  testutil::attr_int(moe, "expert_weight_bits", 8);
  testutil::attr_int(moe, "k", 2);
  n.output("y");
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.experts.layers.size() == 1);
  // One expert: 32·64 + 64·32 = 4,096 bytes and parameters; 4 of them 16,384.
  CHECK(a.experts.layers[0].expert == std::optional<uint64_t>(4096));
  CHECK(a.experts.layers[0].routed == 16384u);
  // Stored: 16,384 + scales 4·64 + 4·32 = 384 + router 128 = 16,896; (4 − 2)·4,096 idle: 8,704 active.
  CHECK(a.inventory.stored == 16896u);
  CHECK(a.active_parameters == std::optional<uint64_t>(8704));
  for (const auto& f : a.findings) CHECK(f.severity == Severity::Info);
}

TEST_CASE("experts: a 4-bit QMoE counts two parameters per byte, scales apart", "[experts]") {
  auto r = testutil::audited(fused_moe(true, 1).m);
  const Audit& a = r->audit;
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  // fc1 [8, 32, 32] bytes = 8,192 bytes → 16,384 weights; fc2 [8, 64, 16] → 16,384: one expert
  // 32·64 + 64·32 = 4,096, 8 of them 32,768.
  CHECK(l.form == "QMoE");
  CHECK(l.expert == std::optional<uint64_t>(4096));
  CHECK(l.routed == 32768u);
  // Stored: 32,768 weights + 8·64 + 8·32 = 768 scales + 256 router = 33,792; one of 8 experts runs:
  // 33,792 − 7·4,096 = 5,120.
  CHECK(a.inventory.stored == 33792u);
  CHECK(a.active_parameters == std::optional<uint64_t>(5120));
  for (const auto& f : a.findings) CHECK(f.severity == Severity::Info);
  bool said = false;
  for (const auto& f : a.findings) {
    said = said || f.message.find("2 4-bit QMoE expert weights hold 32,768 parameters, two per byte of their 16,384 bytes") !=
                       std::string::npos;
  }
  CHECK(said);
}

TEST_CASE("experts: what cannot be known is said, not guessed", "[experts]") {
  // k larger than the experts: no active count.
  auto r = testutil::audited(fused_moe(false, 9).m);
  REQUIRE(r->audit.experts.layers.size() == 1);
  CHECK_FALSE(r->audit.active_parameters.has_value());
  CHECK_FALSE(r->audit.experts.layers[0].notes.empty());
  // A TopK over a run-time value that no router projection makes is not routing.
  GraphBuilder n;
  n.input("x", {15, 32});
  n.op("TopK", {"x", n.ints({2})}, "top");
  n.output("top");
  auto t = testutil::audited(n.m);
  CHECK(t->audit.experts.layers.empty());
  // Samples without experts have none.
  Audit dense = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/llama_tiny.onnx");
  CHECK(dense.experts.layers.empty());
  CHECK_FALSE(dense.active_parameters.has_value());
}

TEST_CASE("experts: an MLP beside a router is not a shared expert unless it meets the routed sum", "[experts]") {
  // Three TopKs over routers on x, and MLPs on x whose outputs no routing weight touches and that
  // join no routed expert: no routed experts are found, so no layer is claimed (and nothing as
  // shared); each TopK is named in a note instead.
  GraphBuilder n;
  n.input("x", {3, 8});
  n.init("gw", {8, 4});
  n.init("ew", {8, 8});
  for (int i = 0; i < 3; ++i) {
    std::string s = std::to_string(i);
    n.op("MatMul", {"x", "gw"}, "logits" + s);
    n.op("Softmax", {"logits" + s}, "scores" + s);
    n.op("TopK", {"scores" + s, n.ints({2})}, "top" + s);
    n.op("MatMul", {"x", "ew"}, "up" + s);
    n.op("Sigmoid", {"up" + s}, "act" + s);
    n.op("MatMul", {"act" + s, "ew"}, "down" + s);
    n.output("top" + s);
    n.output("down" + s);
  }
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  CHECK(a.experts.layers.empty());
  REQUIRE(a.experts.notes.size() == 3);
  CHECK(a.experts.notes[0] == "TopK 'top0' picks among the 4 outputs of MatMul 'logits0', but no expert MLP weighted by it "
                              "reads that projection's input: not read as a mixture of experts");
  CHECK_FALSE(a.active_parameters.has_value());
  CHECK(a.composition.routers == 0);  // the projections stay what they were
  for (const auto& f : a.findings) CHECK(f.rule != "mixture-of-experts");
}

TEST_CASE("experts: the --max-active-params gate", "[experts][gate]") {
  std::string moe = std::string(HEADCOUNT_SAMPLES_DIR) + "/moe_dense.onnx";
  // moe_dense: 62,112 − 2 · (4 − 2) · 6,144 = 37,536 active (torch's counts, samples/moe_dense.counts.tsv).
  CHECK(testutil::cli({"audit", moe, "--max-active-params", "37536"}).code == 0);
  auto r = testutil::cli({"audit", moe, "--max-active-params", "37535"});
  CHECK(r.code == 1);
  CHECK(r.err.find("max-active-params: active parameters 37,536 exceed the budget of 37,535 by 1") != std::string::npos);
  // Without experts every parameter runs: gpt2_tiny's 29,184.
  std::string dense = std::string(HEADCOUNT_SAMPLES_DIR) + "/gpt2_tiny.onnx";
  CHECK(testutil::cli({"audit", dense, "--max-active-params", "29184"}).code == 0);
  CHECK(testutil::cli({"audit", dense, "--max-active-params", "29183"}).code == 1);
  // Unknown active count (k above the experts): fails unless the whole model (50,688) is within.
  testutil::TempDir dir;
  std::string unknown = testutil::saved(fused_moe(false, 9).m, dir, "k9.onnx");
  auto u = testutil::cli({"audit", unknown, "--max-active-params", "50687"});
  CHECK(u.code == 1);
  CHECK(u.err.find("active parameters cannot be checked against the budget of 50,687") != std::string::npos);
  CHECK(testutil::cli({"audit", unknown, "--max-active-params", "50688"}).code == 0);
}
