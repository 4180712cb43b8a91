// robustness_test.cpp: mutated real graphs never crash or hang the audit. The mutations are the
// fuzz harness's own (fuzz/model_mutator.h): edge integers, replaced names and op types, dropped
// and duplicated nodes and inputs, rewired inputs (including cycles), nested subgraphs. The audit
// either succeeds, and then its invariants hold, or throws InputError; nothing else is acceptable.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <random>

#include <google/protobuf/unknown_field_set.h>

#include "fuzz/model_mutator.h"
#include "headcount/error.h"
#include "headcount/load.h"
#include "headcount/numbers.h"
#include "headcount/audit.h"
#include "graph_builder.h"
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

// Tensor payloads are left in the file past 4,096 bytes; everything else of the skeleton must be
// what protobuf's own parser reads.
void clear_payload(onnx::TensorProto& t) {
  t.clear_raw_data();
  t.clear_float_data();
  t.clear_int32_data();
  t.clear_string_data();
  t.clear_int64_data();
  t.clear_double_data();
  t.clear_uint64_data();
}
void clear_payloads(onnx::GraphProto& g);
void clear_payloads(onnx::NodeProto& n) {
  for (auto& a : *n.mutable_attribute()) {
    if (a.has_t()) clear_payload(*a.mutable_t());
    for (auto& t : *a.mutable_tensors()) clear_payload(t);
    if (a.has_sparse_tensor()) {
      clear_payload(*a.mutable_sparse_tensor()->mutable_values());
      clear_payload(*a.mutable_sparse_tensor()->mutable_indices());
    }
    for (auto& s : *a.mutable_sparse_tensors()) {
      clear_payload(*s.mutable_values());
      clear_payload(*s.mutable_indices());
    }
    if (a.has_g()) clear_payloads(*a.mutable_g());
    for (auto& g : *a.mutable_graphs()) clear_payloads(g);
  }
}
void clear_payloads(onnx::GraphProto& g) {
  for (auto& t : *g.mutable_initializer()) clear_payload(t);
  for (auto& s : *g.mutable_sparse_initializer()) {
    clear_payload(*s.mutable_values());
    clear_payload(*s.mutable_indices());
  }
  for (auto& n : *g.mutable_node()) clear_payloads(n);
}
// A tensor's name, type, shape and external data entries, in protobuf's parse and in the loader's
// record (which payloads are kept is load_test's).
std::string tensor_text(const onnx::TensorProto& t) {
  std::string s = t.name() + " type=" + std::to_string(t.data_type()) +
                  " external=" + std::to_string(t.data_location() == onnx::TensorProto::EXTERNAL) + " dims=";
  for (int64_t d : t.dims()) s += std::to_string(d) + ",";
  for (const auto& kv : t.external_data()) s += " " + kv.key() + "=" + kv.value();
  return s + "\n";
}
std::string tensor_text(const TensorRec& t) {
  std::string s = std::string(t.name) + " type=" + std::to_string(t.data_type) + " external=" + std::to_string(t.external) +
                  " dims=";
  for (int64_t d : t.dims) s += std::to_string(d) + ",";
  for (const auto& [key, value] : t.external_data()) s += " " + std::string(key) + "=" + std::string(value);
  return s + "\n";
}
// protobuf's own parse of a node's attribute, as the loader's record of it keeps it.
std::string attribute_text(const onnx::AttributeProto& a) {
  std::string s = a.name() + " type=" + std::to_string(a.has_type() ? a.type() : 0) +
                  (a.has_i() ? " i=" + std::to_string(a.i()) : std::string()) + " f=" + std::to_string(a.f()) +
                  " s=" + a.s() + " ints=";
  for (int64_t v : a.ints()) s += std::to_string(v) + ",";
  s += " floats=";
  for (float v : a.floats()) s += std::to_string(v) + ",";
  if (a.has_t()) s += " t=" + tensor_text(a.t());
  s += " g=" + std::to_string(a.has_g()) + " graphs=" + std::to_string(a.graphs_size());
  return s;
}
std::string attribute_text(const Attribute& a) {
  std::string s = std::string(a.name) + " type=" + std::to_string(a.type) +
                  (a.has_i ? " i=" + std::to_string(a.i) : std::string()) + " f=" + std::to_string(a.f) +
                  " s=" + std::string(a.s()) + " ints=";
  for (int64_t v : a.ints) s += std::to_string(v) + ",";
  s += " floats=";
  for (float v : a.floats()) s += std::to_string(v) + ",";
  if (a.t) s += " t=" + tensor_text(*a.t);
  s += " g=" + std::to_string(a.g() != nullptr) + " graphs=" + std::to_string(a.graphs().size());
  return s;
}
// One line per node: what the stages read of it.
template <typename N>
std::string node_text(const N& n) {
  std::string s = std::string(n.op_type()) + " domain=" + std::string(n.domain()) + " name=" + std::string(n.name()) + " in=";
  for (int i = 0; i < n.input_size(); ++i) s += std::string(n.input(i)) + ",";
  s += " out=";
  for (int i = 0; i < n.output_size(); ++i) s += std::string(n.output(i)) + ",";
  for (const auto& a : n.attribute()) s += "\n  " + attribute_text(a);
  return s + "\n";
}
// protobuf's nodes and initializers in the loader's order: a graph's initializers, then each node
// followed by its subgraphs.
void flatten(const onnx::GraphProto& g, std::string& out, std::string& tensors);
void flatten(const onnx::NodeProto& n, std::string& out, std::string& tensors) {
  out += node_text(n);
  for (const auto& a : n.attribute()) {
    if (a.has_g()) flatten(a.g(), out, tensors);
    for (const auto& sub : a.graphs()) flatten(sub, out, tensors);
  }
}
void flatten(const onnx::GraphProto& g, std::string& out, std::string& tensors) {
  for (const auto& t : g.initializer()) tensors += tensor_text(t);
  for (const auto& n : g.node()) flatten(n, out, tensors);
}
// The skeleton of `bytes` as headcount's loader reads it, and as protobuf reads the whole file,
// payloads cleared in both (training graphs are not read by headcount): the model's messages
// (which hold no nodes in the loader's reading), then every node as the stages see it.
std::pair<std::string, std::string> both_readings(const std::string& path) {
  onnx::ModelProto full;
  REQUIRE(full.ParseFromString(testutil::read_text(path)));
  full.clear_training_info();
  Model m = load_model(path);
  std::string full_nodes, loaded_nodes, full_tensors, loaded_tensors;
  flatten(full.graph(), full_nodes, full_tensors);
  for (const auto& f : full.functions()) {
    for (const auto& n : f.node()) flatten(n, full_nodes, full_tensors);
  }
  for (const Node& n : m.nodes) loaded_nodes += node_text(*n.rec);
  for (const Weight& w : m.weights) {
    if (w.storage != Storage::ConstantNode && !w.sparse) loaded_tensors += tensor_text(*w.tensor);
  }
  onnx::ModelProto skeleton = *m.proto;
  for (auto* proto : {&full, &skeleton}) {
    clear_payloads(*proto->mutable_graph());
    proto->mutable_graph()->clear_node();
    proto->mutable_graph()->clear_initializer();
    for (auto& f : *proto->mutable_functions()) f.clear_node();
  }
  return {skeleton.SerializeAsString() + loaded_nodes + loaded_tensors, full.SerializeAsString() + full_nodes + full_tensors};
}

}  // namespace

TEST_CASE("the loader's skeleton is what protobuf reads, tensor payloads aside, in samples and mutated graphs", "[robustness]") {
  testutil::TempDir dir;
  std::mt19937_64 rng(HEADCOUNT_ROBUSTNESS_SEED + 1);
  int compared = 0;
  for (const auto& entry : std::filesystem::directory_iterator(HEADCOUNT_SAMPLES_DIR)) {
    if (entry.path().extension() != ".onnx") continue;
    INFO(entry.path().string());
    auto [skeleton, full] = both_readings(entry.path().string());
    CHECK(skeleton == full);
    onnx::ModelProto original;
    REQUIRE(original.ParseFromString(testutil::read_text(entry.path().string())));
    for (int i = 0; i < 4; ++i) {
      onnx::ModelProto mutated = original;
      fuzz::mutate(mutated, rng, 1 + static_cast<int>(rng() % 4));
      const std::string path = dir.file(entry.path().stem().string() + "-" + std::to_string(i) + ".onnx");
      testutil::save(mutated, path);
      try {
        auto [s, f] = both_readings(path);
        CHECK(s == f);
        ++compared;
      } catch (const InputError&) {
        // refused (a cycle, say): nothing to compare
      }
    }
  }
  CHECK(compared > 20);
}

TEST_CASE("attribute fields written packed, and an attribute type onnx.proto does not define, read as protobuf reads them", "[robustness]") {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* n = g->add_node();
  n->set_op_type("Custom");
  n->add_input("x");
  n->add_output("y");
  auto unknown = [](onnx::AttributeProto* a) { return a->GetReflection()->MutableUnknownFields(a); };
  // ints [1, 0, 2] packed (field 8, one length-delimited run of varints: 01 00 02), as protobuf
  // writes a [packed = true] field; onnx.proto's own writer leaves them unpacked.
  auto* perm = n->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  unknown(perm)->AddLengthDelimited(8, std::string("\x01\x00\x02", 3));
  // floats [1.5, -2.0] packed (field 7: two little-endian float32s), and f = 0.5.
  auto* scales = n->add_attribute();
  scales->set_name("scales");
  scales->set_type(onnx::AttributeProto::FLOATS);
  scales->set_f(0.5f);
  unknown(scales)->AddLengthDelimited(7, std::string("\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8));
  // type 99: not an AttributeType, so protobuf keeps it as an unknown field and has_type() is false.
  auto* odd = n->add_attribute();
  odd->set_name("odd");
  odd->set_i(-5);
  odd->set_s("bytes");
  unknown(odd)->AddVarint(20, 99);
  testutil::TempDir dir;
  const std::string path = dir.file("attributes.onnx");
  testutil::save(m, path);

  auto [skeleton, full] = both_readings(path);
  CHECK(skeleton == full);
  Model loaded = load_model(path);
  REQUIRE(loaded.nodes.size() == 1);
  const NodeRec& node = *loaded.nodes[0].rec;
  REQUIRE(node.attribute_size() == 3);
  const Attribute* a = node.attribute().begin();
  CHECK(std::vector<int64_t>(a[0].ints.begin(), a[0].ints.end()) == std::vector<int64_t>{1, 0, 2});
  CHECK(std::vector<float>(a[1].floats().begin(), a[1].floats().end()) == std::vector<float>{1.5f, -2.0f});
  CHECK(a[1].f == 0.5f);
  CHECK(a[2].type == 0);
  CHECK(a[2].has_i);
  CHECK(a[2].i == -5);
  CHECK(a[2].s() == "bytes");
}

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
          for (const auto& e : b.extras) sum += e.elements;
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
  testutil::GraphBuilder n;
  n.input("x", {1, 4});
  // A doubling chain: each Add takes the previous value twice, so a walk without bounds would
  // visit 2^60 paths from the Softmax back to x.
  std::string v = "x";
  for (int i = 0; i < 60; ++i) {
    std::string next = "add" + std::to_string(i);
    n.op("Add", {v, v}, next);
    v = next;
  }
  testutil::node(n.g, "Softmax", {v}, {"probs"}, "softmax");
  // A wide fan-out after the Softmax: 3,000 Casts, each feeding a Mul with itself.
  for (int i = 0; i < 3000; ++i) {
    std::string c = "cast" + std::to_string(i), mul = "mul" + std::to_string(i);
    n.op("Cast", {"probs"}, c);
    n.op("Mul", {c, c}, mul);
  }
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  CHECK(a.attention.blocks.empty());
  REQUIRE(a.attention.unmatched.size() == 1);
  CHECK(a.attention.unmatched[0].reason ==
        "no MatMul(Q, Kᵀ) of two activations before it: the walk back gave up after 17 steps at Add 'add42'");
}

TEST_CASE("a model that crashed earlier builds is reported beside good ones, in every format, with and without -j",
          "[robustness]") {
  namespace fs = std::filesystem;
  testutil::TempDir dir;
  const fs::path root = dir.path / "models";
  fs::create_directories(root);
  std::vector<std::string> good;
  for (const char* name : {"bert_tiny", "gqa", "mha_self_bias"}) {
    good.push_back((root / (std::string(name) + ".onnx")).string());
    fs::copy_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx", good.back());
  }
  // Died with SIGFPE before the checked arithmetic (kv_num_heads = INT64_MAX wrapped a divisor to 0).
  const std::string crasher = (root / "gqa-kv-heads-int64-max.onnx").string();
  fs::copy_file(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions/gqa-kv-heads-int64-max.onnx", crasher);
  // And one file that cannot be audited at all: the first 100 bytes of a model.
  const std::string truncated = (root / "truncated.onnx").string();
  testutil::write_bytes(truncated, testutil::read_text(good[0]).substr(0, 100));

  for (const char* format : {"text", "json", "jsonl", "markdown", "sarif", "github"}) {
    INFO(format);
    testutil::CliResult one = testutil::cli({"audit", root.string(), "-f", format, "-j", "1"});
    testutil::CliResult four = testutil::cli({"audit", root.string(), "-f", format, "-j", "4"});
    CHECK(one.code == 2);
    CHECK(four.out == one.out);
    CHECK(four.err == one.err);
    // One error line, for the truncated file only.
    CHECK(one.err.rfind("headcount: error: " + truncated + ": truncated", 0) == 0);
    CHECK(std::count(one.err.begin(), one.err.end(), '\n') == 1);
    // Every other model has its report (SARIF holds findings, not reports: a clean model has none).
    if (std::string(format) == "sarif") continue;
    for (const auto& f : good) CHECK(one.out.find(f) != std::string::npos);
    CHECK(one.out.find(crasher) != std::string::npos);
  }
}

TEST_CASE("the model-wide visit budget keeps matching linear and says which Softmaxes it left", "[robustness]") {
  testutil::GraphBuilder n;
  n.input("x", {1, 4});
  std::string v = "x";
  for (int i = 0; i < 40; ++i) {  // a doubling chain: a walk back from its end never runs out of paths
    std::string next = "add" + std::to_string(i);
    n.op("Add", {v, v}, next);
    v = next;
  }
  for (int i = 0; i < 3000; ++i) n.op("Softmax", {v}, "s" + std::to_string(i));
  auto r = testutil::audited(n.m);
  const Audit& a = r->audit;
  // 3,040 nodes give 65,536 + 64 · 3,040 = 260,096 visits; each Softmax's walk may spend 512, so
  // at least 260,096 / 512 = 508 are examined before the budget runs out.
  REQUIRE(a.attention.unmatched.size() == 3000);
  size_t not_examined = 0;
  for (const auto& u : a.attention.unmatched) not_examined += u.reason.rfind("not examined", 0) == 0;
  CHECK(not_examined > 0);
  CHECK(not_examined <= 3000 - 508);
  size_t findings = 0;
  for (const auto& f : a.findings) {
    if (f.rule == "unmatched-softmax") {
      ++findings;
      CHECK(f.message.rfind(with_commas(not_examined) + " Softmaxes, the first '", 0) == 0);
      CHECK(f.message.find("were not examined: matching used up the node visits a graph of this size gets (64 per node)") !=
            std::string::npos);
    }
  }
  CHECK(findings == 1);
}
