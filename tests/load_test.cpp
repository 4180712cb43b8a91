// load_test.cpp: the loader on hand-made files: what it counts, what it leaves in the file, what
// it refuses and the exact words it uses, through load_model and through the CLI.
//
// Every expected number is worked out by hand in a comment next to it, from the tensor shapes
// or from the protobuf wire layout of the file the test writes.
#include <catch2/catch.hpp>

#include <google/protobuf/stubs/common.h>
#include <onnx/common/version.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "headcount/inventory.h"
#include "headcount/cli.h"
#include "headcount/error.h"
#include "headcount/load.h"
#include "headcount/model.h"
#include "headcount/run.h"
#include "payload.h"
#include "source.h"
#include "test_util.h"

using namespace headcount;
using Catch::Matchers::Message;
namespace fs = std::filesystem;
using T = onnx::TensorProto;

namespace {

// ----- helpers ------------------------------------------------------------------------------

const Weight& weight(const Model& m, const std::string& name) {
  for (const auto& w : m.weights) {
    if (w.name == name) return w;
  }
  FAIL("no weight named " << name);
  throw 0;  // not reached
}

const Breakdown& row(const std::vector<Breakdown>& rows, const std::string& key) {
  for (const auto& r : rows) {
    if (r.key == key) return r;
  }
  FAIL("no breakdown row " << key);
  throw 0;
}

std::vector<std::string> keys(const std::vector<Breakdown>& rows) {
  std::vector<std::string> k;
  for (const auto& r : rows) k.push_back(r.key);
  return k;
}

int node_named(const Model& m, const std::string& name) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    if (m.nodes[i].rec->name() == name) return static_cast<int>(i);
  }
  FAIL("no node named " << name);
  return -1;
}

// Wire-format pieces written with protobuf's own encoder.
std::string tag_and_length(int field, uint64_t length) {
  std::string s;
  {
    google::protobuf::io::StringOutputStream sink(&s);
    google::protobuf::io::CodedOutputStream out(&sink);
    out.WriteTag(static_cast<uint32_t>(field) << 3 | 2);  // wire type 2: length-delimited
    out.WriteVarint64(length);
  }
  return s;
}

std::string varint_field(int field, uint64_t v) {
  std::string s;
  {
    google::protobuf::io::StringOutputStream sink(&s);
    google::protobuf::io::CodedOutputStream out(&sink);
    out.WriteTag(static_cast<uint32_t>(field) << 3);  // wire type 0: varint
    out.WriteVarint64(v);
  }
  return s;
}

std::string delimited(int field, const std::string& body) { return tag_and_length(field, body.size()) + body; }

// A boolean graph input, as an If node's condition.
void bool_input(onnx::GraphProto* g, const std::string& name) {
  auto* in = g->add_input();
  in->set_name(name);
  in->mutable_type()->mutable_tensor_type()->set_elem_type(T::BOOL);
}

// The subgraph attribute `attribute` (then_branch, else_branch) of an If node, made empty.
onnx::GraphProto* branch(onnx::NodeProto* node, const std::string& attribute) {
  auto* a = node->add_attribute();
  a->set_name(attribute);
  a->set_type(onnx::AttributeProto::GRAPH);
  return a->mutable_g();
}

// A file whose main graph holds `levels` If nodes, each one's then_branch holding the next.
// Built from the inside out as prefixes (a nested message is always the last field of its
// parent), so neither the builder nor protobuf ever recurses: 5,000 levels are ~150 kB.
std::string nested_ifs(int levels) {
  const std::string inner = delimited(2, "g");  // GraphProto.name = "g"
  // AttributeProto: name=1, type=20 (GRAPH = 5), g=6; NodeProto: op_type=4, attribute=5;
  // GraphProto: node=1; ModelProto: ir_version=1, graph=7.
  const std::string attr_head = delimited(1, "then_branch") + varint_field(20, 5);
  const std::string node_head = delimited(4, "If");
  std::vector<std::string> prefixes;  // innermost first
  uint64_t graph_len = inner.size();
  for (int i = 0; i < levels; ++i) {
    std::string g = tag_and_length(6, graph_len);
    uint64_t attr_len = attr_head.size() + g.size() + graph_len;
    std::string a = tag_and_length(5, attr_len);
    uint64_t node_len = node_head.size() + a.size() + attr_len;
    std::string n = tag_and_length(1, node_len);
    prefixes.push_back(n + node_head + a + attr_head + g);
    graph_len = n.size() + node_len;
  }
  std::string file = varint_field(1, 8) + tag_and_length(7, graph_len);
  for (auto it = prefixes.rbegin(); it != prefixes.rend(); ++it) file += *it;
  return file + inner;
}

// A small valid model: y = x @ w with w float32 [4, 3].
std::string good_model(const testutil::TempDir& dir, const std::string& name = "good.onnx") {
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  *g->add_initializer() = testutil::tensor("w", {4, 3});
  testutil::node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  std::string path = dir.file(name);
  testutil::save(m, path);
  return path;
}

using testutil::CliResult;
using testutil::cli;

// `audit BAD GOOD`: one error line for BAD, GOOD still reported, exit code 2.
void check_bad_then_good(const std::string& bad, const std::string& message) {
  testutil::TempDir dir;
  std::string good = good_model(dir, "after-the-bad-one.onnx");
  CliResult r = cli({"audit", bad, good});
  CHECK(r.err == "headcount: error: " + bad + ": " + message + "\n");
  CHECK(r.out.find(testutil::version() + ": " + good + "\n") != std::string::npos);  // its report's first line
  CHECK(r.code == 2);
}

// A model with one initializer `w` whose data is external at `location`, offset 128, length 64:
// float32 [4, 4] is 16 elements * 4 bytes = 64 bytes, so the file must hold bytes 128..191.
std::string external_model(const testutil::TempDir& dir, const std::string& location, int64_t length = 64) {
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  T t = testutil::tensor("w", {4, 4}, T::FLOAT, /*no_data=*/true);
  testutil::set_external(t, location, 128, length);
  *g->add_initializer() = t;
  testutil::node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  std::string path = dir.file("model.onnx");
  testutil::save(m, path);
  return path;
}

std::string refused(const std::string& location, const std::string& why) {
  return "tensor 'w': external data location '" + location + "' " + why +
         "; refused, it must stay inside the model's folder";
}

// A float32 [256, 1024] initializer `w` holding 1 MiB of raw data. Its layout, worked by hand
// (tags are one byte, the varint of n takes 3 bytes for 2^14 <= n < 2^21):
//   0..1    ir_version 8                        08 08
//   2..17   producer_name "headcount-test"      12 0e + 14 bytes
//   18      graph tag 3a, 19..21 its length 1,048,601 (3-byte varint), graph body from byte 22
//   graph:  name "test" (12 04 + 4 = 6 bytes), initializer tag 2a + 3-byte length 1,048,591
//   tensor: dims 256 (08 80 02), dims 1024 (08 80 08), data_type 1 (10 01), name "w" (42 01 77),
//           raw_data tag 4a + 3-byte length 1,048,576 = 15 header bytes, then the data
//   raw data starts at 22 + 6 + 4 + 15 = 47; tensor = 15 + 1,048,576 = 1,048,591;
//   graph = 6 + 4 + 1,048,591 = 1,048,601; then opset_import {version 14} (42 02 10 0e = 4 bytes)
//   and {domain "com.microsoft", version 1} (42 11 0a 0d + 13 + 10 01 = 19 bytes);
//   file = 22 + 1,048,601 + 4 + 19 = 1,048,646 bytes.
std::string mib_model(const testutil::TempDir& dir, const std::string& name) {
  auto m = testutil::model();
  *m.mutable_graph()->add_initializer() = testutil::tensor("w", {256, 1024});
  std::string path = dir.file(name);
  testutil::save(m, path);
  return path;
}

}  // namespace

// ----- 1. inventory -------------------------------------------------------------------------

TEST_CASE("inventory counts initializers, float Constant nodes, sparse and narrow types", "[load]") {
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  *g->add_initializer() = testutil::tensor("w", {4, 3});                 // 12 el, 48 B
  *g->add_initializer() = testutil::tensor("h", {4, 4}, T::FLOAT16);     // 16 el, 32 B
  *g->add_initializer() = testutil::tensor("q8", {3, 5}, T::INT8);       // 15 el, 15 B
  T q4 = testutil::tensor("q4", {3, 3}, 22, /*no_data=*/true);           // int4: 9 el * 4 bits
  q4.set_raw_data(std::string(5, '\x77'));                               //   = 36 bits -> 5 B
  *g->add_initializer() = q4;
  // Sparse [10, 10] with 3 float values at linear indices: dense 100 elements; stored bytes are
  // 3 values * 4 + 3 int64 indices * 8 = 12 + 24 = 36.
  auto* sp = g->add_sparse_initializer();
  sp->add_dims(10);
  sp->add_dims(10);
  *sp->mutable_values() = testutil::tensor("s", {3});
  *sp->mutable_indices() = testutil::ints("s_idx", {0, 11, 99});
  testutil::constant(g, "c", testutil::tensor("c_t", {2, 5}));           // 10 el, 40 B, parameter
  T scalar = testutil::tensor("k_t", {});                                // float scalar: 1 el, 4 B
  testutil::constant(g, "k", scalar);                                    //   not a parameter
  testutil::constant(g, "shape", testutil::ints("shape_t", {3, 4}));     // int64: not a parameter
  testutil::node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  std::string path = dir.file("inv.onnx");
  testutil::save(m, path);

  Model model = load_model(path);
  REQUIRE(model.weights.size() == 8);
  CHECK(weight(model, "c").storage == Storage::ConstantNode);
  CHECK(weight(model, "c").parameter);
  CHECK(weight(model, "c").elements == 10);
  CHECK_FALSE(weight(model, "k").parameter);
  CHECK(weight(model, "k").elements == 1);
  CHECK_FALSE(weight(model, "shape").parameter);
  CHECK(weight(model, "s").sparse);
  CHECK(weight(model, "s").elements == 100);
  CHECK(weight(model, "s").bytes == 36);
  CHECK(weight(model, "h").bytes == 32);   // 16 * 2
  CHECK(weight(model, "q8").bytes == 15);  // 15 * 1
  CHECK(weight(model, "q4").elements == 9);
  CHECK(weight(model, "q4").bytes == 5);   // ceil(9 * 4 / 8)
  CHECK(dtype_name(weight(model, "q4").dtype) == "int4");

  Inventory inv = take_inventory(model);
  // Parameters: w 12, c 10, h 16, q8 15, q4 9, s 100 -> 162 elements in 6 tensors;
  // bytes 48 + 40 + 32 + 15 + 5 + 36 = 176. Not parameters: the scalar k and the int64 shape.
  CHECK(inv.tensors == 6);
  CHECK(inv.stored == 162);
  CHECK(inv.bytes == 176);
  CHECK(inv.non_parameter_tensors == 2);
  // float32: w, c, s = 3 tensors, 12 + 10 + 100 = 122 elements, 48 + 40 + 36 = 124 bytes.
  // Rows sort by elements: float32 122, float16 16, int8 15, int4 9.
  CHECK(keys(inv.by_dtype) == std::vector<std::string>{"float32", "float16", "int8", "int4"});
  CHECK(row(inv.by_dtype, "float32").tensors == 3);
  CHECK(row(inv.by_dtype, "float32").elements == 122);
  CHECK(row(inv.by_dtype, "float32").bytes == 124);
  CHECK(row(inv.by_dtype, "int4").bytes == 5);
  // embedded: w, h, q8, q4, s = 5 tensors, 12 + 16 + 15 + 9 + 100 = 152 elements,
  // 48 + 32 + 15 + 5 + 36 = 136 bytes; constant-node: c alone, 10 elements, 40 bytes.
  CHECK(keys(inv.by_storage) == std::vector<std::string>{"embedded", "constant-node"});
  CHECK(row(inv.by_storage, "embedded").tensors == 5);
  CHECK(row(inv.by_storage, "embedded").elements == 152);
  CHECK(row(inv.by_storage, "embedded").bytes == 136);
  CHECK(row(inv.by_storage, "constant-node").tensors == 1);
  CHECK(row(inv.by_storage, "constant-node").elements == 10);
  CHECK(row(inv.by_storage, "constant-node").bytes == 40);
}

TEST_CASE("a shared tensor counts once; subgraph and function weights are found in their scope", "[load]") {
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  bool_input(g, "cond");
  *g->add_initializer() = testutil::tensor("w", {4, 4});   // 16 elements, used twice
  testutil::node(g, "MatMul", {"x", "w"}, {"a"}, "mm");
  testutil::node(g, "Add", {"a", "w"}, {"b"}, "add");
  auto* iff = testutil::node(g, "If", {"cond"}, {"out"}, "If_1");
  auto* then_g = branch(iff, "then_branch");
  then_g->set_name("then");
  *then_g->add_initializer() = testutil::tensor("tw", {2, 2});  // 4 elements
  testutil::node(then_g, "Identity", {"tw"}, {"t_out"}, "then_id");
  auto* else_g = branch(iff, "else_branch");
  else_g->set_name("else");
  testutil::constant(else_g, "ec", testutil::tensor("ec_t", {3}));  // 3 elements
  auto* fn = m.add_functions();
  fn->set_name("Block");
  fn->set_domain("local");
  fn->add_output("f_out");
  auto* fc = fn->add_node();
  fc->set_op_type("Constant");
  fc->add_output("f_out");
  auto* fa = fc->add_attribute();
  fa->set_name("value");
  fa->set_type(onnx::AttributeProto::TENSOR);
  *fa->mutable_t() = testutil::tensor("fc_t", {5});  // 5 elements
  std::string path = dir.file("scopes.onnx");
  testutil::save(m, path);

  Model model = load_model(path);
  const Weight& w = weight(model, "w");
  std::vector<int> consumers(w.consumers.begin(), w.consumers.end());
  std::sort(consumers.begin(), consumers.end());
  CHECK(consumers == std::vector<int>{node_named(model, "mm"), node_named(model, "add")});
  CHECK(model.scope_name(weight(model, "tw").graph) == "main/If_1:then_branch");
  const std::vector<int> then_reader{node_named(model, "then_id")};
  CHECK(weight(model, "tw").consumers == NodeSpan(then_reader));
  CHECK(model.scope_name(weight(model, "ec").graph) == "main/If_1:else_branch");
  CHECK(weight(model, "ec").storage == Storage::ConstantNode);
  CHECK(model.scope_name(weight(model, "f_out").graph) == "function:local.Block");
  CHECK(weight(model, "f_out").storage == Storage::ConstantNode);
  CHECK(weight(model, "f_out").parameter);

  // w 16 (once, not twice) + tw 4 + ec 3 + f_out 5 = 28 elements in 4 tensors.
  Inventory inv = take_inventory(model);
  CHECK(inv.tensors == 4);
  CHECK(inv.stored == 28);
}

TEST_CASE("a node's names carry their value ids, and lookups through them agree with lookups by name", "[load]") {
  // main: h = MatMul(x, w); If(cond) whose then branch reads h and w from main (outer names), and
  // whose else branch makes its own h (a Relu of x), hiding main's.
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  bool_input(g, "cond");
  *g->add_initializer() = testutil::tensor("w", {4, 4});
  testutil::node(g, "MatMul", {"x", "w"}, {"h"}, "outer_mm");
  auto* iff = testutil::node(g, "If", {"cond"}, {"out"}, "If_1");
  testutil::node(branch(iff, "then_branch"), "MatMul", {"h", "w"}, {"t"}, "then_mm");
  auto* else_body = branch(iff, "else_branch");
  testutil::node(else_body, "Relu", {"x"}, {"h"}, "else_relu");
  testutil::node(else_body, "Add", {"h", "", "w"}, {"e"}, "else_add");  // an omitted input
  std::string path = dir.file("names.onnx");
  testutil::save(m, path);

  Model model = load_model(path);
  const int outer_mm = node_named(model, "outer_mm"), else_relu = node_named(model, "else_relu");
  const NodeRec& then_mm = *model.nodes[static_cast<size_t>(node_named(model, "then_mm"))].rec;
  const NodeRec& else_add = *model.nodes[static_cast<size_t>(node_named(model, "else_add"))].rec;
  const int then_g = model.nodes[static_cast<size_t>(node_named(model, "then_mm"))].graph;
  const int else_g = model.nodes[static_cast<size_t>(node_named(model, "else_add"))].graph;
  // By hand: the then branch's h is main's MatMul output, the else branch's h its own Relu's.
  CHECK(model.producer_of(then_g, then_mm.input(0)) == outer_mm);
  CHECK(model.producer_of(else_g, else_add.input(0)) == else_relu);
  CHECK(model.weight_for(then_g, then_mm.input(1)) == &weight(model, "w"));
  CHECK(model.weight_for(else_g, else_add.input(2)) == &weight(model, "w"));
  CHECK(else_add.input(1).id == -1);  // the omitted input has no value
  // Every name of every node: its id is the value of that name in the node's scope, and each
  // lookup through it answers as the lookup by the name alone (a copy of the text, no id).
  for (size_t ni = 0; ni < model.nodes.size(); ++ni) {
    const int g = model.nodes[ni].graph;
    const NodeRec& n = *model.nodes[ni].rec;
    for (Names names : {n.input(), n.output()}) {
      for (Name name : names) {
        const std::string text(name);
        if (text.empty()) continue;
        REQUIRE(name.id >= 0);
        CHECK(model.values[static_cast<size_t>(name.id)].name == text);
        CHECK(model.values[static_cast<size_t>(name.id)].graph == g);
        CHECK(model.value_id(g, name) == model.value_id(g, text));
        CHECK(model.defining_value(g, name) == model.defining_value(g, text));
        CHECK(model.producer_of(g, name) == model.producer_of(g, text));
        CHECK(model.weight_for(g, name) == model.weight_for(g, text));
        CHECK(model.consumers_of(g, name) == model.consumers_of(g, text));
        // Asked from another scope, the id is not used: main's lookup of the then branch's t fails.
        if (g != 0) CHECK(model.value_id(0, name) == model.value_id(0, text));
      }
    }
  }
}

TEST_CASE("an integer tensor is a parameter when a DequantizeLinear reads it as data, in any scope", "[load]") {
  // QDQ models store int32 biases that DequantizeLinear turns into floats: those are learned
  // parameters. Its zero point (input 2) and an int64 shape are not. Here the DequantizeLinear is
  // in an If branch and reads main's tensors by name.
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  bool_input(g, "cond");
  *g->add_initializer() = testutil::tensor("b_q", {4}, T::INT32);
  *g->add_initializer() = testutil::tensor("scale", {4});
  *g->add_initializer() = testutil::tensor("zp", {4}, T::INT32);
  *g->add_initializer() = testutil::tensor("shape", {2}, T::INT64);
  testutil::node(g, "Reshape", {"x", "shape"}, {"r"}, "reshape");
  auto* iff = testutil::node(g, "If", {"cond"}, {"out"}, "If_1");
  testutil::node(branch(iff, "then_branch"), "DequantizeLinear", {"b_q", "scale", "zp"}, {"b"}, "dq");
  std::string path = dir.file("qdq_scope.onnx");
  testutil::save(m, path);

  Model model = load_model(path);
  CHECK(weight(model, "b_q").parameter);
  CHECK(weight(model, "scale").parameter);  // float: a parameter type of its own
  CHECK_FALSE(weight(model, "zp").parameter);
  CHECK_FALSE(weight(model, "shape").parameter);
}

// ----- 2. payloads stay in the file ----------------------------------------------------------

TEST_CASE("the value table's hash is SipHash-2-4: the test vectors of its authors", "[load]") {
  // Key 00 01 .. 0f as two little-endian words. The paper (Aumasson and Bernstein, "SipHash: a fast
  // short-input PRF", appendix A) gives a129ca6149be45e5 for the 15 bytes 00 .. 0e; the reference
  // implementation's vectors.h gives 31 0e 0e dd 47 db 6f 72 for the empty message.
  const uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
  std::string fifteen;
  for (char c = 0; c < 15; ++c) fifteen += c;
  CHECK(siphash24(k0, k1, fifteen) == 0xa129ca6149be45e5ull);
  CHECK(siphash24(k0, k1, "") == 0x726fdb47dd0e0e31ull);
}

TEST_CASE("the value table's hash is SipHash-1-3: the reference implementation's values", "[load]") {
  // Under the all-zero key, the reference implementation (github.com/veorq/SipHash, built for
  // SipHash-1-3) gives d1fba762150c532c for the empty message and 68a914128e01e473 for the one
  // byte 00, as OCaml's runtime tests quote it (testsuite, hash sip13 test vectors).
  CHECK(siphash13(0, 0, "") == 0xd1fba762150c532cull);
  CHECK(siphash13(0, 0, std::string(1, '\0')) == 0x68a914128e01e473ull);
}

TEST_CASE("value ids follow first use, whatever the hash key: two loads of one file agree", "[load]") {
  // The key is drawn once per process, so this checks that ids, consumer lists and lookups come
  // from the order of the file and the names, not from where the table put them.
  Model a = load_model(std::string(HEADCOUNT_SAMPLES_DIR) + "/bert_tiny.onnx");
  Model b = load_model(std::string(HEADCOUNT_SAMPLES_DIR) + "/bert_tiny.onnx");
  REQUIRE(a.values.size() == b.values.size());
  REQUIRE(a.values.size() > 100);
  for (size_t i = 0; i < a.values.size(); ++i) {
    CHECK(a.values[i].name == b.values[i].name);
    CHECK(a.value_id(a.values[i].graph, std::string(a.values[i].name)) == static_cast<int>(i));
  }
  CHECK(a.consumer_list == b.consumer_list);
}

TEST_CASE("a 64 MB initializer is located, not read", "[load]") {
  testutil::TempDir dir;
  // float32 [4096, 4096] = 16,777,216 elements * 4 = 67,108,864 bytes = 2^26.
  const uint64_t n = 67108864;
  std::string raw(n, '\0');
  for (uint64_t i = 0; i < n; ++i) raw[i] = static_cast<char>(i % 251);  // 251: not a power of 2
  auto m = testutil::model();
  T t = testutil::tensor("w", {4096, 4096}, T::FLOAT, /*no_data=*/true);
  t.set_raw_data(raw);
  *m.mutable_graph()->add_initializer() = std::move(t);
  std::string path = dir.file("big.onnx");
  testutil::save(m, path);

  // Layout as in mib_model, with 4-byte varints (2^21 <= n < 2^28) for the three lengths:
  // graph body from 2 + 16 + 1 + 4 = 23; tensor header = dims 3 + 3, data_type 2, name 3,
  // raw tag 1 + length 4 = 16; raw data at 23 + 6 (graph name) + 5 (initializer tag and
  // length) + 16 = 50. File: tensor 16 + 2^26 = 67,108,880; graph 6 + 5 + 67,108,880 =
  // 67,108,891; file 23 + 67,108,891 + 4 + 19 (opset imports) = 67,108,937.
  Model model = load_model(path);
  CHECK(model.file_size == 67108937);
  CHECK(model.stripped_payload_bytes == 67108864);
  const Weight& w = weight(model, "w");
  CHECK(w.elements == 16777216);
  CHECK(w.bytes == 67108864);
  CHECK(w.tensor->raw_data.empty());
  REQUIRE(w.payload_known);
  CHECK(w.payload_file->path == path);
  CHECK(w.payload_offset == 50);
  CHECK(w.payload_length == 67108864);

  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(w.payload_offset));
  std::string back(w.payload_length, '\0');
  in.read(back.data(), static_cast<std::streamsize>(back.size()));
  CHECK(in.gcount() == static_cast<std::streamsize>(n));
  CHECK(back == raw);
}

TEST_CASE("payloads kept in memory: raw data before its type gets the type's limit once the type is read", "[load]") {
  // TensorProto fields written out of protobuf's order: dims (1), raw_data (9), then data_type (2)
  // and name (8). While raw_data is read the type is not known, so the int limit (512 bytes)
  // applies; after the message the type's own limit decides:
  //   "f": 17 float32s, 68 bytes > 64: not kept, read again from the file (17 values, the last 16);
  //   "i": 64 int64s, 512 bytes <= 512: kept, its values in memory (the last 63).
  auto tensor = [](const std::string& name, int32_t dtype, int64_t n, const std::string& raw) {
    return varint_field(1, static_cast<uint64_t>(n)) + delimited(9, raw) + varint_field(2, static_cast<uint64_t>(dtype)) +
           delimited(8, name);
  };
  std::string floats, ints;
  for (int64_t i = 0; i < 17; ++i) {
    const float f = static_cast<float>(i);
    floats += std::string(reinterpret_cast<const char*>(&f), 4);
  }
  for (int64_t i = 0; i < 64; ++i) ints += std::string(reinterpret_cast<const char*>(&i), 8);  // little-endian host
  const std::string graph = delimited(5, tensor("f", T::FLOAT, 17, floats)) + delimited(5, tensor("i", T::INT64, 64, ints));
  testutil::TempDir dir;
  const std::string path = dir.file("out_of_order.onnx");
  testutil::write_bytes(path, varint_field(1, 8) + delimited(7, graph));  // ir_version 8, the graph

  Model model = load_model(path);
  CHECK_FALSE(float_values(*weight(model, "f").tensor));
  CHECK(weight(model, "f").payload_known);
  CHECK(model.stripped_payload_bytes == 68);
  std::vector<double> read;
  CHECK(for_each_value(weight(model, "f"), [&](uint64_t, double v) {
    read.push_back(v);
    return true;
  }));
  REQUIRE(read.size() == 17);
  CHECK(read[16] == 16.0);
  auto i = int_values(*weight(model, "i").tensor);
  REQUIRE(i);
  CHECK(i->at(63) == 63);
}

TEST_CASE("the reader keeps the middle element of a payload it skips, in the canonical orientation", "[load]") {
  // The content comparison reads the middle element of each candidate first (duplicates.cpp);
  // the reader keeps it as it skips the payload. Float32 values 0, 1, 2, ... in file order:
  //   [32, 40]: 1,280 elements, middle e = 640, no flip (32 <= 40): stored at 640, value 640.
  //   [40, 32]: stored [M, m] with M > m is read as its transpose [32, 40]: e = 640 is (i, j) =
  //             (640 / 40, 640 % 40) = (16, 0), stored at j * 32 + i = 16, value 16.
  //   [1000]:   fewer than 1,024 elements, not a candidate: nothing kept.
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  auto counting = [](const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    T t = testutil::tensor(name, dims, T::FLOAT, true);
    std::string bytes;
    for (int64_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(i);
      bytes += std::string(reinterpret_cast<const char*>(&f), 4);
    }
    t.set_raw_data(bytes);
    return t;
  };
  *g->add_initializer() = counting("wide", {32, 40});
  *g->add_initializer() = counting("tall", {40, 32});
  *g->add_initializer() = counting("short", {1000});
  std::string path = dir.file("middles.onnx");
  testutil::save(m, path);
  Model model = load_model(path);
  auto middle = [&](const std::string& name) -> std::optional<float> {
    const TensorRec& t = *weight(model, name).tensor;
    if (t.middle_size != 4) return std::nullopt;
    float f;
    std::memcpy(&f, &t.middle, 4);
    return f;
  };
  CHECK(middle("wide") == 640.0f);
  CHECK(middle("tall") == 16.0f);
  CHECK_FALSE(middle("short"));
}

TEST_CASE("the reader keeps a skipped payload's first 8 bytes; a value check that decides on them reads nothing",
          "[load]") {
  // "b": 100 float32s 0.5, 1.5, 2.5, ... (400 bytes > 64: skipped). Its first 8 bytes are the
  // floats 0.5 and 1.5, kept as the reader skips it (TensorRec::head). for_each_value visits
  // those two from memory; element 2 (2.5) on is read from the file, each index once, in order.
  // "h": 100 float16s of 1.0 (0x3C00): 8 bytes hold 4 of them.
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  T b = testutil::tensor("b", {100}, T::FLOAT, true);
  std::string bytes;
  for (int i = 0; i < 100; ++i) {
    const float f = static_cast<float>(i) + 0.5f;
    bytes += std::string(reinterpret_cast<const char*>(&f), 4);
  }
  b.set_raw_data(bytes);
  *g->add_initializer() = b;
  T h = testutil::tensor("h", {100}, T::FLOAT16, true);
  std::string halves;
  for (int i = 0; i < 100; ++i) halves += std::string("\x00\x3c", 2);  // 1.0 as float16, little-endian
  h.set_raw_data(halves);
  *g->add_initializer() = h;
  std::string path = dir.file("heads.onnx");
  testutil::save(m, path);
  Model model = load_model(path);
  const TensorRec& t = *weight(model, "b").tensor;
  REQUIRE(t.head_size == 8);
  CHECK(std::memcmp(&t.head, bytes.data(), 8) == 0);
  CHECK(weight(model, "h").tensor->head_size == 8);

  PayloadScope scope;  // as an audit reads values: through one window
  const uint64_t before = payload_reads_on_this_thread();
  std::vector<double> seen;
  auto until = [&](const Weight& w, uint64_t last) {
    seen.clear();
    return for_each_value(w, [&](uint64_t index, double v) {
      CHECK(index == seen.size());
      seen.push_back(v);
      return index < last;
    });
  };
  CHECK_FALSE(until(weight(model, "b"), 0));  // stops at element 0
  CHECK(seen == std::vector<double>{0.5});
  CHECK_FALSE(until(weight(model, "b"), 1));
  CHECK(seen == std::vector<double>{0.5, 1.5});
  CHECK_FALSE(until(weight(model, "h"), 3));
  CHECK(seen == std::vector<double>{1, 1, 1, 1});
  CHECK(payload_reads_on_this_thread() == before);  // all of it from the heads
  CHECK_FALSE(until(weight(model, "b"), 2));  // element 2 is past the head: one read
  CHECK(seen == std::vector<double>{0.5, 1.5, 2.5});
  CHECK(payload_reads_on_this_thread() == before + 1);
  CHECK(until(weight(model, "b"), 100));  // every element, each once
  REQUIRE(seen.size() == 100);
  CHECK(seen[99] == 99.5);
  CHECK(until(weight(model, "h"), 100));
  CHECK(seen == std::vector<double>(100, 1.0));
}

TEST_CASE("payloads kept in memory: raw int data up to 512 bytes, other raw data up to 64, typed fields up to 4096",
          "[load]") {
  // LoadOptions: the shape stage reads at most 64 elements of a value (64 int64s = 512 bytes);
  // raw data of another type is kept up to 16 float32s (64 bytes); typed fields (int64_data),
  // which cannot be read again from the file, up to 4096 bytes (512 int64s). Past its limit a
  // raw payload is skipped, its place recorded for the content stage to read it again.
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {2, 6});
  *g->add_initializer() = testutil::ints("shape", {3, -1});  // packed int64_data
  testutil::node(g, "Reshape", {"x", "shape"}, {"y"}, "reshape");
  auto raw = [](const std::string& name, int32_t dtype, size_t width, int64_t n) {
    T t = testutil::tensor(name, {n}, dtype, true);
    std::string bytes;
    for (int64_t i = 0; i < n; ++i) {
      if (width == 8) bytes += std::string(reinterpret_cast<const char*>(&i), 8);  // little-endian host
      else {
        const float f = static_cast<float>(i);
        bytes += std::string(reinterpret_cast<const char*>(&f), 4);
      }
    }
    t.set_raw_data(bytes);
    return t;
  };
  *g->add_initializer() = raw("ints_kept", T::INT64, 8, 64);    // 512 bytes
  *g->add_initializer() = raw("ints_gone", T::INT64, 8, 65);    // 520 bytes
  *g->add_initializer() = raw("floats_kept", T::FLOAT, 4, 16);  // 64 bytes
  *g->add_initializer() = raw("floats_gone", T::FLOAT, 4, 17);  // 68 bytes
  // Packed int64_data of values from 2^56 to 2^63 - 1: 57 to 63 bits, 9 bytes of varint each.
  constexpr int64_t kBig = int64_t{1} << 56;
  std::vector<int64_t> typed(455);
  for (int64_t i = 0; i < 455; ++i) typed[static_cast<size_t>(i)] = kBig + i;
  *g->add_initializer() = testutil::ints("typed_kept", typed);  // 455 * 9 = 4095 bytes
  typed.push_back(kBig + 455);
  *g->add_initializer() = testutil::ints("typed_gone", typed);  // 456 * 9 = 4104 bytes
  std::string path = dir.file("shape.onnx");
  testutil::save(m, path);

  Model model = load_model(path);
  auto shape = int_values(*weight(model, "shape").tensor);
  REQUIRE(shape);
  CHECK(*shape == std::vector<int64_t>{3, -1});
  auto k = int_values(*weight(model, "ints_kept").tensor);
  REQUIRE(k);
  CHECK(k->size() == 64);
  CHECK(k->at(63) == 63);
  CHECK_FALSE(int_values(*weight(model, "ints_gone").tensor));
  auto f = float_values(*weight(model, "floats_kept").tensor);
  REQUIRE(f);
  CHECK(f->size() == 16);
  CHECK(f->at(15) == 15.0);
  CHECK_FALSE(float_values(*weight(model, "floats_gone").tensor));
  auto t = int_values(*weight(model, "typed_kept").tensor);
  REQUIRE(t);
  CHECK(t->size() == 455);
  CHECK(t->at(454) == kBig + 454);
  CHECK_FALSE(int_values(*weight(model, "typed_gone").tensor));
  // Skipped: 520 + 68 bytes of raw data and typed_gone's 4104 bytes of varints.
  CHECK(model.stripped_payload_bytes == 520 + 68 + 4104);
  // A raw payload skipped is still where the file has it: its values can be read again.
  CHECK(weight(model, "ints_gone").payload_known);
  CHECK(weight(model, "ints_gone").payload_length == 520);
  CHECK(weight(model, "floats_gone").payload_length == 68);
  CHECK_FALSE(weight(model, "typed_gone").payload_known);
  std::vector<double> read;
  CHECK(for_each_value(weight(model, "floats_gone"), [&](uint64_t, double v) {
    read.push_back(v);
    return true;
  }));
  REQUIRE(read.size() == 17);
  CHECK(read[16] == 16.0);
  read.clear();
  CHECK_FALSE(for_each_value(weight(model, "ints_gone"), [&](uint64_t, double v) {
    read.push_back(v);
    return true;
  }));  // int64 is read only when asked for
  CHECK(for_each_value(weight(model, "ints_gone"), [&](uint64_t, double v) {
    read.push_back(v);
    return true;
  }, /*integers=*/true));
  REQUIRE(read.size() == 65);
  CHECK(read[64] == 64.0);

  // A source whose bytes cannot be read again (a remote file's, here bytes in memory behind the
  // ByteSource interface) keeps every payload up to 4096 bytes, as it cannot read them later.
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Model unreadable = load_model(MemorySource(bytes.data(), bytes.size(), "shape.onnx"), LoadOptions());
  auto ints = int_values(*weight(unreadable, "ints_gone").tensor);
  REQUIRE(ints);
  CHECK(ints->at(64) == 64);
  auto floats = float_values(*weight(unreadable, "floats_gone").tensor);
  REQUIRE(floats);
  CHECK(floats->at(16) == 16.0);
  CHECK_FALSE(int_values(*weight(unreadable, "typed_gone").tensor));
  CHECK(unreadable.stripped_payload_bytes == 4104);
}

// ----- 3. external data ---------------------------------------------------------------------

TEST_CASE("external data: present, missing, too short", "[load]") {
  testutil::TempDir dir;
  std::string path = external_model(dir, "w.bin");
  std::string bin = (fs::weakly_canonical(dir.path) / "w.bin").string();

  SECTION("present: 128 + 64 = 192 bytes is exactly enough") {
    testutil::write_bytes(dir.file("w.bin"), std::string(192, 'x'));
    Model model = load_model(path);
    const Weight& w = weight(model, "w");
    CHECK(w.storage == Storage::External);
    CHECK(w.external_status() == ExternalStatus::Present);
    CHECK(w.external->location == "w.bin");
    CHECK(w.external->file_size == 192);
    CHECK(w.payload_known);
    CHECK(w.payload_file->path == bin);
    CHECK(w.payload_offset == 128);
    CHECK(w.payload_length == 64);
    CHECK(w.elements == 16);
  }
  SECTION("missing: counts come from dims") {
    Model model = load_model(path);
    const Weight& w = weight(model, "w");
    CHECK(w.external_status() == ExternalStatus::Missing);
    CHECK_FALSE(w.payload_known);
    CHECK(w.elements == 16);
    CHECK(take_inventory(model).stored == 16);
  }
  SECTION("191 bytes is one short of 128 + 64") {
    testutil::write_bytes(dir.file("w.bin"), std::string(191, 'x'));
    Model model = load_model(path);
    const Weight& w = weight(model, "w");
    CHECK(w.external_status() == ExternalStatus::SizeMismatch);
    CHECK(w.external->file_size == 191);
    CHECK_FALSE(w.payload_known);
  }
  SECTION("a length that is not the tensor's 64 bytes") {
    std::string p = external_model(dir, "w.bin", 60);
    testutil::write_bytes(dir.file("w.bin"), std::string(1000, 'x'));
    CHECK(weight(load_model(p), "w").external_status() == ExternalStatus::SizeMismatch);
  }
}

TEST_CASE("external data locations outside the model's folder are refused", "[load]") {
  testutil::TempDir dir, outside;
  testutil::write_bytes(outside.file("outside.bin"), std::string(192, 'o'));
  const std::string abs_note = "is an absolute path", dots = "contains '..'",
                    via_link = "resolves through a symlink outside the model's folder";

  SECTION("absolute") {
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "/etc/passwd")), InputError,
                         Message(refused("/etc/passwd", abs_note)));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "/no/such/file.bin")), InputError,
                         Message(refused("/no/such/file.bin", abs_note)));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "C:\\weights.bin")), InputError,
                         Message(refused("C:\\weights.bin", abs_note)));
  }
  SECTION("a NUL byte, which would cut the path short") {
    // "x.bin\0/../../etc/passwd": the file system would see only "x.bin"; refused before any '..'.
    CHECK_THROWS_MATCHES(load_model(external_model(dir, std::string("x.bin\0/../../etc/passwd", 23))), InputError,
                         Message(refused("x.bin?/../../etc/passwd", "contains a NUL byte")));
  }
  SECTION("dot-dot") {
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "../outside.bin")), InputError,
                         Message(refused("../outside.bin", dots)));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "sub/../../x.bin")), InputError,
                         Message(refused("sub/../../x.bin", dots)));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "sub\\..\\..\\x.bin")), InputError,
                         Message(refused("sub\\..\\..\\x.bin", dots)));
  }
  SECTION("a symlink to a file outside, existing or not") {
    fs::create_symlink(outside.file("outside.bin"), dir.file("link.bin"));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "link.bin")), InputError,
                         Message(refused("link.bin", via_link)));
    fs::create_symlink(outside.file("does-not-exist.bin"), dir.file("dangling.bin"));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "dangling.bin")), InputError,
                         Message(refused("dangling.bin", via_link)));
    fs::create_symlink(fs::path("..") / outside.path.filename() / "outside.bin", dir.file("rel.bin"));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "rel.bin")), InputError,
                         Message(refused("rel.bin", via_link)));
  }
  SECTION("a symlink out, reached through a missing folder and '..' in a link's target") {
    // link.bin -> "none/../out.bin": the resolver stops asking the file system below the missing
    // "none", and must ask again once '..' comes back above it, or it would not see out.bin
    // leading outside.
    fs::create_symlink("none/../out.bin", dir.file("link.bin"));
    fs::create_symlink(outside.file("outside.bin"), dir.file("out.bin"));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "link.bin")), InputError,
                         Message(refused("link.bin", via_link)));
  }
  SECTION("a deep location below a missing folder is not escaping") {
    // 16,000 components (the regression file external-location-16000-components.onnx): missing,
    // not refused, and cheap.
    std::string deep;
    for (int i = 0; i < 16000; ++i) deep += "a/";
    Model model = load_model(external_model(dir, deep + "w.bin"));
    CHECK(weight(model, "w").external_status() == ExternalStatus::Missing);
  }
  SECTION("a symlinked folder leading outside") {
    fs::create_directory_symlink(outside.path, dir.file("sub"));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "sub/outside.bin")), InputError,
                         Message(refused("sub/outside.bin", via_link)));
  }
  SECTION("a symlink loop") {
    fs::create_symlink("loop.bin", dir.file("loop.bin"));
    CHECK_THROWS_MATCHES(load_model(external_model(dir, "loop.bin")), InputError,
                         Message(refused("loop.bin", "has too many symlinks")));
  }
  SECTION("symlinks that stay inside are followed") {
    testutil::write_bytes(dir.file("w.bin"), std::string(192, 'x'));
    fs::create_directory(dir.file("sub"));
    fs::create_symlink("../w.bin", dir.file("sub/up.bin"));         // relative, via sub/..
    fs::create_symlink(dir.file("w.bin"), dir.file("absolute.bin"));  // absolute, inside
    std::string bin = (fs::weakly_canonical(dir.path) / "w.bin").string();
    for (const std::string location : {"sub/up.bin", "absolute.bin", "./w.bin"}) {
      INFO(location);
      Model model = load_model(external_model(dir, location));
      const Weight& w = weight(model, "w");
      CHECK(w.external_status() == ExternalStatus::Present);
      CHECK(w.payload_file->path == bin);
    }
  }
}

// ----- 4. bad input through the CLI ---------------------------------------------------------

TEST_CASE("bad files: one error line each, the next file is still audited, exit 2", "[load]") {
  testutil::TempDir dir;

  SECTION("missing") { check_bad_then_good(dir.file("nope.onnx"), "cannot open: No such file or directory"); }
  SECTION("a directory with no .onnx files in it") {
    std::string folder = dir.file("folder.onnx");
    fs::create_directory(folder);
    CHECK_THROWS_MATCHES(load_model(folder), InputError, Message("is a directory with no .onnx files in it"));
    check_bad_then_good(folder, "is a directory with no .onnx files in it");
  }
  SECTION("empty") {
    testutil::write_bytes(dir.file("empty.onnx"), "");
    check_bad_then_good(dir.file("empty.onnx"), "file is empty");
  }
  SECTION("a PNG") {
    // 89 50 is the varint 0x09 + 0x50 * 128 = 10249: field 1281, wire type 1 (fixed64), which
    // skips the 8 bytes 4e 47 0d 0a 1a 0a 00 00 (bytes 2..9). Byte 10 is 00, tag 0, read at
    // byte 10 and ending the message at byte 11 while the file goes on: malformed at byte 11.
    std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89", 33);
    testutil::write_bytes(dir.file("picture.onnx"), png);
    check_bad_then_good(dir.file("picture.onnx"), "not a valid ONNX model: malformed protobuf at byte 11");
  }
  SECTION("valid protobuf without a graph") {
    testutil::write_bytes(dir.file("nograph.onnx"), std::string("\x08\x08", 2));  // ir_version 8 only
    check_bad_then_good(dir.file("nograph.onnx"), "not an ONNX model: no graph found");
  }
  SECTION("a valid model cut in the middle of its 1 MiB tensor") {
    // mib_model: the graph body starts at byte 22 and is 1,048,601 bytes long; the raw data runs
    // from 47 to 1,048,623. Cut at 524,288: the first length that no longer fits is the graph's.
    std::string path = mib_model(dir, "cut.onnx");
    REQUIRE(fs::file_size(path) == 1048646);
    fs::resize_file(path, 524288);
    check_bad_then_good(path, "truncated: GraphProto at byte 22 needs 1048601 bytes but the file ends at byte 524288");
  }
  SECTION("tensor data longer than the file") {
    // Outer lengths match the file; only raw_data claims 1 MiB of which 1,000 bytes are there.
    // tensor header: 08 80 02, 08 80 08, 10 01, 42 01 77, 4a 80 80 40 = 3 + 3 + 2 + 3 + 4 = 15;
    // tensor = 15 + 1000 = 1015 (2-byte varint); graph = 1 + 2 + 1015 = 1018 (2-byte varint);
    // graph body from 1 + 2 = 3, tensor body from 3 + 3 = 6, raw data from 6 + 15 = 21;
    // file = 3 + 1018 = 1021 bytes.
    std::string header = varint_field(1, 256) + varint_field(1, 1024) + varint_field(2, T::FLOAT) +
                         delimited(8, "w") + tag_and_length(9, 1048576);
    REQUIRE(header.size() == 15);
    std::string tensor = header + std::string(1000, '\0');
    std::string file = delimited(7, delimited(5, tensor));
    REQUIRE(file.size() == 1021);
    testutil::write_bytes(dir.file("short.onnx"), file);
    check_bad_then_good(dir.file("short.onnx"),
                        "truncated: tensor data at byte 21 needs 1048576 bytes but the file ends at byte 1021");
  }
  SECTION("a negative dimension") {
    auto m = testutil::model();
    *m.mutable_graph()->add_initializer() = testutil::tensor("neg", {-3, 4}, T::FLOAT, true);
    testutil::save(m, dir.file("neg.onnx"));
    check_bad_then_good(dir.file("neg.onnx"), "tensor 'neg' has a negative dimension (-3)");
  }
  SECTION("an element count past 64 bits") {
    auto m = testutil::model();  // 2^32 * 2^32 = 2^64
    *m.mutable_graph()->add_initializer() = testutil::tensor("huge", {4294967296, 4294967296}, T::FLOAT, true);
    testutil::save(m, dir.file("huge.onnx"));
    check_bad_then_good(dir.file("huge.onnx"), "tensor 'huge': the element count of its shape overflows 64 bits");
  }
  SECTION("a byte size past 64 bits") {
    auto m = testutil::model();  // 2^62 float32 elements * 4 bytes = 2^64 bytes
    *m.mutable_graph()->add_initializer() = testutil::tensor("wide", {int64_t{1} << 62}, T::FLOAT, true);
    testutil::save(m, dir.file("wide.onnx"));
    check_bad_then_good(dir.file("wide.onnx"), "tensor 'wide': its size in bytes overflows 64 bits");
  }
  SECTION("an embedded model above 2 GiB") {
    // 2^31 = 2,147,483,648 bytes, one more than protobuf's INT_MAX limit; sparse, no disk used.
    std::string path = dir.file("huge-file.onnx");
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 2147483648) == 0);
    close(fd);
    check_bad_then_good(path,
                        "file is 2147483648 bytes; an embedded model above protobuf's 2 GiB limit cannot be "
                        "read (models this large keep their weights in external data)");
  }
  SECTION("If subgraphs nested 5,000 deep") {
    testutil::write_bytes(dir.file("deep.onnx"), nested_ifs(5000));
    check_bad_then_good(dir.file("deep.onnx"), "subgraphs are nested more than 64 levels deep");
  }
  SECTION("a cycle") {
    auto m = testutil::model();
    auto* g = m.mutable_graph();
    testutil::input(g, "x", {1, 4});
    testutil::node(g, "Add", {"x", "b"}, {"a"}, "add_a");  // needs b
    testutil::node(g, "Add", {"x", "a"}, {"b"}, "add_b");  // needs a
    testutil::save(m, dir.file("cycle.onnx"));
    check_bad_then_good(dir.file("cycle.onnx"), "graph 'main' has a cycle through node 'add_a' (Add)");
  }
}

TEST_CASE("the 2 GiB limit is exact and the depth limit is 64 graphs", "[load]") {
  testutil::TempDir dir;
  SECTION("INT_MAX = 2,147,483,647 bytes is read (and is zeros: tag 0 at byte 0 ends at byte 1)") {
    std::string path = dir.file("max.onnx");
    int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, 2147483647) == 0);
    close(fd);
    CHECK_THROWS_MATCHES(load_model(path), InputError, Message("not a valid ONNX model: malformed protobuf at byte 1"));
  }
  SECTION("main + 63 nested graphs = 64 levels load; one more is refused") {
    testutil::write_bytes(dir.file("63.onnx"), nested_ifs(63));
    Model model = load_model(dir.file("63.onnx"));
    CHECK(model.graphs.size() == 64);
    CHECK(model.nodes.size() == 63);
    CHECK(model.scope_name(2) == "main/If#0:then_branch/If#1:then_branch");
    // 63 levels below main: the first 2 and the last 3 are named, 63 - 2 - 3 = 58 are counted.
    CHECK(model.scope_name(63) == "main/If#0:then_branch/If#1:then_branch/(58 more levels)/If#60:then_branch/"
                                  "If#61:then_branch/If#62:then_branch");
    testutil::write_bytes(dir.file("64.onnx"), nested_ifs(64));
    CHECK_THROWS_MATCHES(load_model(dir.file("64.onnx")), InputError,
                         Message("subgraphs are nested more than 64 levels deep"));
  }
}

TEST_CASE("a byte size that fits 64 bits is not called an overflow", "[load]") {
  // 2^60 float32 elements = 2^62 bytes: fits, although 2^60 * 32 bits does not.
  testutil::TempDir dir;
  auto m = testutil::model();
  *m.mutable_graph()->add_initializer() = testutil::tensor("vast", {int64_t{1} << 60}, T::FLOAT, true);
  testutil::save(m, dir.file("vast.onnx"));
  Model model = load_model(dir.file("vast.onnx"));
  CHECK(weight(model, "vast").elements == uint64_t{1} << 60);
  CHECK(weight(model, "vast").bytes == uint64_t{1} << 62);
}

TEST_CASE("json for two models is one document", "[load]") {
  // One JSON object for the run (headcount/2), the models in its "models" list: a consumer parses
  // the output once, whatever the number of models.
  testutil::TempDir dir;
  CliResult r = cli({"audit", "--format", "json", good_model(dir, "a.onnx"), good_model(dir, "b.onnx")});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.substr(0, 2) == "{\n");
  REQUIRE(r.out.size() >= 2);
  CHECK(r.out.substr(r.out.size() - 2) == "}\n");
  CHECK(r.out.find("\n  \"models\": [\n") != std::string::npos);
}

// ----- 5. command line ----------------------------------------------------------------------

TEST_CASE("command line: version, usage errors", "[load]") {
  SECTION("--version") {
    CliResult r = cli({"--version"});
    // "headcount VERSION (git REV)", then the ONNX and protobuf versions of the headers it was built
    // with (onnx/common/version.h, GOOGLE_PROTOBUF_VERSION 3021012 = 3.21.12).
    int pb = GOOGLE_PROTOBUF_VERSION;
    std::string libraries = std::string("ONNX ") + onnx::LAST_RELEASE_VERSION + ", protobuf " +
                            std::to_string(pb / 1000000) + "." + std::to_string(pb / 1000 % 1000) + "." + std::to_string(pb % 1000);
    CHECK(r.out.rfind(testutil::version() + " (git ", 0) == 0);
    CHECK(r.out.find(")\n" + libraries + "\n") != std::string::npos);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
    CHECK(r.err.empty());
    CHECK(r.code == 0);
  }
  SECTION("audit without a model") {
    CliResult r = cli({"audit"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("headcount: error: ", 0) == 0);
    CHECK(r.err.find("MODEL") != std::string::npos);
    CHECK(r.err.find("Run 'headcount --help' for usage.\n") != std::string::npos);
  }
  SECTION("an unknown format") {
    testutil::TempDir dir;
    CliResult r = cli({"audit", "--format", "xml", good_model(dir)});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("headcount: error: ", 0) == 0);
    CHECK(r.err.find("xml") != std::string::npos);
  }
}
