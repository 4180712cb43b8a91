// experts_test.cpp: mixtures of experts found in the graph. The torch samples' numbers are
// PyTorch's own (samples/NAME.counts.tsv, read from the modules at export); the fused-operator
// graphs are built here and their numbers worked by hand in the comments.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>

#include "graph_builder.h"
#include "headcount/audit.h"

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

// gpt-oss's MoE layer on x [6, 16]: a router Gemm with a bias, TopK on the raw logits, a Softmax
// over the k chosen scattered into a [6, 4] routing matrix; the experts stacked, gate_up
// [4, 16, 16] and down [4, 8, 16] with biases [4, 1, ·], run over every expert at once (x tiled
// per expert), gate and up read as the strided halves [..., ::2] and [..., 1::2].
GraphBuilder gpt_oss_layer() {
  GraphBuilder n;
  n.input("x", {6, 16});
  auto* gemm = n.op("Gemm", {"x", n.init("router.weight", {4, 16}), n.init("router.bias", {4})}, "logits");
  testutil::attr_int(gemm, "transB", 1);
  testutil::node(n.g, "TopK", {"logits", n.ints({2})}, {"top", "chosen"}, "topk");
  testutil::attr_int(n.op("Softmax", {"top"}, "weights"), "axis", 1);
  n.op("ConstantOfShape", {n.ints({6, 4})}, "zeros");
  testutil::attr_int(n.op("ScatterElements", {"zeros", "chosen", "weights"}, "scores"), "axis", 1);
  n.op("Tile", {"x", n.ints({4, 1})}, "tiled");
  n.reshape("tiled", {4, -1, 16}, "per_expert");
  n.op("MatMul", {"per_expert", n.init("experts.gate_up_proj", {4, 16, 16})}, "gate_up");
  n.op("Add", {"gate_up", n.init("experts.gate_up_proj_bias", {4, 1, 16})}, "gate_up_b");
  n.op("Slice", {"gate_up_b", n.ints({0}), n.ints({16}), n.ints({2}), n.ints({2})}, "gate");
  n.op("Slice", {"gate_up_b", n.ints({1}), n.ints({16}), n.ints({2}), n.ints({2})}, "up");
  n.op("Clip", {"gate"}, "gate_c");
  n.op("Clip", {"up"}, "up_c");
  n.op("Sigmoid", {"gate_c"}, "gate_s");
  n.op("Mul", {"gate_c", "gate_s"}, "glu");
  n.op("Mul", {"up_c", "glu"}, "act");
  n.op("MatMul", {"act", n.init("experts.down_proj", {4, 8, 16})}, "down");
  n.op("Add", {"down", n.init("experts.down_proj_bias", {4, 1, 16})}, "down_b");
  n.transpose("scores", {1, 0}, "scores_t");
  n.op("Unsqueeze", {"scores_t", n.ints({2})}, "scores_u");
  n.op("Mul", {"down_b", "scores_u"}, "weighted");
  testutil::attr_int(n.op("ReduceSum", {"weighted", n.ints({0})}, "y"), "keepdims", 0);
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

TEST_CASE("experts: gpt-oss's stacked experts, chosen by a TopK on the raw logits", "[experts]") {
  auto r = testutil::audited(gpt_oss_layer().m);
  const Audit& a = r->audit;
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  // The stacked tensors hold every expert: gate_up 4·16·16 = 1,024 + bias 4·16 = 64, down
  // 4·8·16 = 512 + bias 64: 1,664, one expert a quarter, 416 (16·16 + 16 + 8·16 + 16).
  CHECK(l.form == "routed");
  CHECK(l.experts == std::optional<int64_t>(4));
  CHECK(l.top_k == std::optional<int64_t>(2));
  CHECK(l.found == 4);
  CHECK(l.expert == std::optional<uint64_t>(416));
  CHECK(l.routed == 1664u);
  CHECK(l.router == 68u);  // 4·16 + 4
  CHECK(l.notes.empty());
  // 1,664 + 68 = 1,732 stored; a token runs 2 of 4: 1,732 − 2·416 = 900.
  CHECK(a.framework.parameters == 1732u);
  CHECK(a.active_parameters == std::optional<uint64_t>(900));
  CHECK(a.composition.routed_experts == 1664u);
  CHECK(a.composition.routers == 68u);
  // The Softmax over the k chosen is the router's, not an unmatched attention Softmax.
  CHECK(a.attention.unmatched.empty());
  for (const auto& f : a.findings) CHECK(f.severity == Severity::Info);
}

TEST_CASE("experts: stacked tensors whose first axis is not the router's count are not all the experts", "[experts]") {
  // The same layer with a router of 8 outputs: the stacked [4, ...] tensors are one group of
  // unknown share, so only one expert is found of 8, and nothing is guessed.
  GraphBuilder n = gpt_oss_layer();
  for (auto& t : *n.g->mutable_initializer()) {
    if (t.name() == "router.weight") t = testutil::tensor("router.weight", {8, 16});
    if (t.name() == "router.bias") t = testutil::tensor("router.bias", {8});
  }
  auto r = testutil::audited(n.m);
  REQUIRE(r->audit.experts.layers.size() == 1);
  const ExpertLayer& l = r->audit.experts.layers[0];
  CHECK(l.experts == std::optional<int64_t>(8));
  CHECK(l.found == 1);
  CHECK_FALSE(l.expert.has_value());
  REQUIRE(l.notes.size() == 1);
  CHECK(l.notes[0] == "found 1 of the 8 experts the router scores: the size of one expert and the active count are unknown");
  CHECK_FALSE(r->audit.active_parameters.has_value());
}

TEST_CASE("experts: DeepSeek-V3's group-limited choice is one layer, its k the last TopK's", "[experts]") {
  // x [6, 16] · gate [16, 8], Sigmoid, + a correction bias [8] for the choice. The groups: the
  // scores as [6, 4, 2], the top 2 of each group summed, the best 2 groups (TopK k = 2) kept by
  // masking the others (Where with 0), then TopK k = 3 over the 8 experts. The weights are
  // gathered from the un-biased scores. 8 dense experts (16 → 8 → 16, no bias), each weighted by
  // its column of the routing matrix.
  GraphBuilder n;
  n.input("x", {6, 16});
  n.op("MatMul", {"x", n.init("gate.weight", {16, 8})}, "logits");
  n.op("Sigmoid", {"logits"}, "scores");
  n.op("Add", {"scores", n.init("gate.e_score_correction_bias", {8})}, "for_choice");
  n.reshape("for_choice", {6, 4, 2}, "grouped");
  testutil::node(n.g, "TopK", {"grouped", n.ints({2})}, {"group_top", "group_top_i"}, "group_topk");
  testutil::attr_int(n.op("ReduceSum", {"group_top", n.ints({2})}, "group_scores"), "keepdims", 0);
  testutil::node(n.g, "TopK", {"group_scores", n.ints({2})}, {"best", "best_groups"}, "best_topk");
  n.op("ConstantOfShape", {n.ints({6, 4})}, "no_groups");
  testutil::attr_int(n.op("ScatterElements", {"no_groups", "best_groups", "best"}, "group_mask"), "axis", 1);
  n.op("Unsqueeze", {"group_mask", n.ints({2})}, "group_mask_u");
  n.op("Expand", {"group_mask_u", n.ints({6, 4, 2})}, "expert_mask_3");
  n.reshape("expert_mask_3", {6, 8}, "expert_mask");
  testutil::attr_int(n.op("Cast", {"expert_mask"}, "keep"), "to", onnx::TensorProto::BOOL);
  testutil::constant(n.g, "zero", testutil::tensor("zero", {}));
  n.op("Where", {"keep", "for_choice", "zero"}, "masked");
  testutil::node(n.g, "TopK", {"masked", n.ints({3})}, {"chosen_v", "chosen"}, "topk");
  testutil::attr_int(n.op("GatherElements", {"scores", "chosen"}, "weights"), "axis", 1);
  n.op("ConstantOfShape", {n.ints({6, 8})}, "zeros");
  testutil::attr_int(n.op("ScatterElements", {"zeros", "chosen", "weights"}, "routing"), "axis", 1);
  std::string y;
  for (int e = 0; e < 8; ++e) {
    std::string p = "experts." + std::to_string(e);
    n.op("MatMul", {"x", n.init(p + ".up", {16, 8})}, p + "/up");
    n.op("Relu", {p + "/up"}, p + "/act");
    n.op("MatMul", {p + "/act", n.init(p + ".down", {8, 16})}, p + "/down");
    n.op("Slice", {"routing", n.ints({e}), n.ints({e + 1}), n.ints({1})}, p + "/w");
    n.op("Mul", {p + "/down", p + "/w"}, p + "/out");
    if (y.empty()) {
      y = p + "/out";
    } else {
      n.op("Add", {y, p + "/out"}, p + "/sum");
      y = p + "/sum";
    }
  }
  n.output(y);
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  // The TopKs over the groups feed the last one: not layers of their own.
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  CHECK(a.model.nodes[static_cast<size_t>(l.node)].rec->name() == "topk");
  CHECK(l.experts == std::optional<int64_t>(8));
  CHECK(l.top_k == std::optional<int64_t>(3));
  CHECK(l.found == 8);
  CHECK(l.expert == std::optional<uint64_t>(256));  // 16·8 + 8·16
  CHECK(l.routed == 2048u);
  CHECK(l.router == 136u);  // the weight 16·8 and the correction bias 8
  CHECK(l.notes.empty());
  CHECK(a.experts.notes.empty());
  // 2,048 + 136 = 2,184; a token runs 3 of 8: 2,184 − 5·256 = 904.
  CHECK(a.framework.parameters == 2184u);
  CHECK(a.active_parameters == std::optional<uint64_t>(904));
  CHECK(a.composition.routers == 136u);
}

TEST_CASE("experts: one expert's slice of stacked tensors, a traced loop exported without folding", "[experts]") {
  // x [6, 16] · router [16, 4], Softmax, TopK k = 2. Each expert e runs on its tokens (Equal,
  // NonZero, Gather) with Gather(stacked, e) of gate_up [4, 16, 16] and its bias [4, 16] (split
  // in two halves), down [4, 8, 16] and its bias [4, 16]; its output is weighted by the TopK's
  // values for e and put back by ScatterND.
  GraphBuilder n;
  n.input("x", {6, 16});
  n.op("MatMul", {"x", n.init("router.weight", {16, 4})}, "logits");
  n.op("Softmax", {"logits"}, "probs");
  testutil::node(n.g, "TopK", {"probs", n.ints({2})}, {"top", "chosen"}, "topk");
  n.init("experts.gate_up_proj", {4, 16, 16});
  n.init("experts.gate_up_proj_bias", {4, 16});
  n.init("experts.down_proj", {4, 8, 16});
  n.init("experts.down_proj_bias", {4, 16});
  n.op("ConstantOfShape", {n.ints({6, 16})}, "y0");
  std::string y = "y0";
  for (int e = 0; e < 4; ++e) {
    std::string p = "e" + std::to_string(e) + "/", index = n.ints({e}, true);
    n.op("Equal", {"chosen", index}, p + "mine");
    n.op("NonZero", {p + "mine"}, p + "where");
    testutil::node(n.g, "Split", {p + "where"}, {p + "rows", p + "slots"}, p + "split");
    n.op("Squeeze", {p + "rows", n.ints({0})}, p + "tokens");
    n.op("Gather", {"x", p + "tokens"}, p + "x");
    n.op("Gather", {"experts.gate_up_proj", index}, p + "gate_up_w");
    n.op("Gather", {"experts.gate_up_proj_bias", index}, p + "gate_up_b");
    n.op("Gather", {"experts.down_proj", index}, p + "down_w");
    n.op("Gather", {"experts.down_proj_bias", index}, p + "down_b");
    n.op("MatMul", {p + "x", p + "gate_up_w"}, p + "gate_up");
    n.op("Add", {p + "gate_up", p + "gate_up_b"}, p + "gate_up_biased");
    testutil::node(n.g, "Split", {p + "gate_up_biased", n.ints({8, 8})}, {p + "gate", p + "up"}, p + "halves");
    n.op("Sigmoid", {p + "gate"}, p + "gate_s");
    n.op("Mul", {p + "gate", p + "gate_s"}, p + "silu");
    n.op("Mul", {p + "silu", p + "up"}, p + "act");
    n.op("MatMul", {p + "act", p + "down_w"}, p + "down");
    n.op("Add", {p + "down", p + "down_b"}, p + "out");
    testutil::attr_int(n.op("Cast", {p + "mine"}, p + "mine_f"), "to", onnx::TensorProto::FLOAT);
    n.op("Mul", {"top", p + "mine_f"}, p + "top_mine");
    n.op("ReduceSum", {p + "top_mine", n.ints({1})}, p + "weight");
    n.op("Gather", {p + "weight", p + "tokens"}, p + "weight_rows");
    n.op("Mul", {p + "out", p + "weight_rows"}, p + "weighted");
    n.op("Unsqueeze", {p + "tokens", n.ints({1})}, p + "at");
    n.op("ScatterND", {y, p + "at", p + "weighted"}, p + "y");
    y = p + "y";
  }
  n.output(y);
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  // Each expert reads a quarter of every stacked tensor: gate_up 16·16 + 16, down 8·16 + 16 =
  // 416; the four tensors, 1,664, are counted once.
  CHECK(l.experts == std::optional<int64_t>(4));
  CHECK(l.top_k == std::optional<int64_t>(2));
  CHECK(l.found == 4);
  CHECK(l.expert == std::optional<uint64_t>(416));
  CHECK(l.routed == 1664u);
  CHECK(l.router == 64u);
  CHECK(l.notes.empty());
  // 1,664 + 64 = 1,728; a token runs 2 of 4: 1,728 − 2·416 = 896.
  CHECK(a.framework.parameters == 1728u);
  CHECK(a.active_parameters == std::optional<uint64_t>(896));
  CHECK(a.composition.routed_experts == 1664u);
}

namespace {

// A layer whose experts are stacked and gathered by the router's choice (issue 37, item 7): x
// [6, 16] · router [16, 4], Softmax, TopK k = 2 (`chosen` [6, 2]). The chosen experts' matrices
// are gathered from the stacked tensors by `chosen` (Gather on axis 0: [6, 2, ...]) and multiplied
// in one batched MatMul with x as [6, 1, 1, 16]: gate_up [4, 16, 16] (x @ W, gpt-oss's layout; or
// [4, 16, 16] stored [E, out, in] and transposed after the Gather, as F.linear reads it) with its
// bias [4, 16], split in halves, SiLU-gated; down [4, 8, 16] with its bias [4, 16]; the k outputs
// weighted by the TopK's values and summed. `indices`: the value the matrices are gathered by.
GraphBuilder gathered_layer(bool transposed, const std::string& indices = "chosen") {
  GraphBuilder n;
  n.input("x", {6, 16});
  n.input("ids", {6, 2}, onnx::TensorProto::INT64);
  n.op("MatMul", {"x", n.init("router.weight", {16, 4})}, "logits");
  n.op("Softmax", {"logits"}, "probs");
  testutil::node(n.g, "TopK", {"probs", n.ints({2})}, {"top", "chosen"}, "topk");
  n.op("Unsqueeze", {"x", n.ints({1, 2})}, "x_u");
  n.op("Gather", {n.init("experts.gate_up_proj", {4, 16, 16}), indices}, "gate_up_w");
  std::string w = "gate_up_w";
  if (transposed) w = n.transpose(w, {0, 1, 3, 2}, "gate_up_wt");
  n.op("MatMul", {"x_u", w}, "gate_up");
  n.op("Gather", {n.init("experts.gate_up_proj_bias", {4, 16}), indices}, "gate_up_b");
  n.op("Unsqueeze", {"gate_up_b", n.ints({2})}, "gate_up_bu");
  n.op("Add", {"gate_up", "gate_up_bu"}, "gate_up_biased");
  testutil::node(n.g, "Split", {"gate_up_biased", n.ints({8, 8})}, {"gate", "up"}, "halves");
  n.op("Sigmoid", {"gate"}, "gate_s");
  n.op("Mul", {"gate", "gate_s"}, "silu");
  n.op("Mul", {"silu", "up"}, "act");
  n.op("Gather", {n.init("experts.down_proj", {4, 8, 16}), indices}, "down_w");
  n.op("MatMul", {"act", "down_w"}, "down");
  n.op("Gather", {n.init("experts.down_proj_bias", {4, 16}), indices}, "down_b");
  n.op("Unsqueeze", {"down_b", n.ints({2})}, "down_bu");
  n.op("Add", {"down", "down_bu"}, "down_biased");
  n.reshape("down_biased", {6, 2, 16}, "per_slot");
  n.op("Unsqueeze", {"top", n.ints({2})}, "top_u");
  n.op("Mul", {"per_slot", "top_u"}, "weighted");
  testutil::attr_int(n.op("ReduceSum", {"weighted", n.ints({1})}, "y"), "keepdims", 0);
  n.output("y");
  return n;
}

}  // namespace

TEST_CASE("experts: stacked experts gathered by the router's TopK, then one batched product", "[experts]") {
  for (bool transposed : {false, true}) {
    INFO("gate_up stored [E, out, in] and transposed: " << transposed);
    auto r = testutil::audited(gathered_layer(transposed).m);
    const Audit& a = r->audit;
    REQUIRE(a.experts.layers.size() == 1);
    const ExpertLayer& l = a.experts.layers[0];
    // The gathered tensors hold every expert: gate_up 4·16·16 = 1,024 + bias 4·16 = 64, down
    // 4·8·16 = 512 + bias 64: 1,664; one expert a quarter, 416 (16·16 + 16 + 8·16 + 16).
    CHECK(l.form == "routed");
    CHECK(l.experts == std::optional<int64_t>(4));
    CHECK(l.top_k == std::optional<int64_t>(2));
    CHECK(l.found == 4);
    CHECK(l.expert == std::optional<uint64_t>(416));
    CHECK(l.routed == 1664u);
    CHECK(l.router == 64u);  // 16·4
    CHECK(l.notes.empty());
    // 1,664 + 64 = 1,728 stored; a token runs 2 of 4: 1,728 − 2·416 = 896.
    CHECK(a.framework.parameters == 1728u);
    CHECK(a.active_parameters == std::optional<uint64_t>(896));
    CHECK(a.composition.routed_experts == 1664u);
    CHECK(a.composition.routers == 64u);
    CHECK(a.attention.unmatched.empty());
    for (const auto& f : a.findings) CHECK(f.severity == Severity::Info);
  }
}

TEST_CASE("experts: stacked tensors gathered by indices no TopK chose are not read as experts", "[experts]") {
  // The same layer, its matrices gathered by a graph input: nothing proves the indices are the
  // router's choice, so no layer is claimed and the TopK is said not to be read as a mixture.
  auto r = testutil::audited(gathered_layer(false, "ids").m);
  const Audit& a = r->audit;
  CHECK(a.experts.layers.empty());
  REQUIRE(a.experts.notes.size() == 1);
  CHECK(a.experts.notes[0].find("no expert MLP weighted by it reads that projection's input") != std::string::npos);
  CHECK(a.composition.routed_experts == 0u);
  CHECK_FALSE(a.active_parameters.has_value());
}
