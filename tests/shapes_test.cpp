// shapes_test.cpp: the shape rules of the op table's rows (src/ops.cpp, evaluated by
// src/shapes.cpp), one small graph per row or per group of rows that share a rule.
//
// Each graph is built here, loaded from memory and given to a ShapeOracle; the expected dims and
// integer values are worked from the ONNX operator spec (https://onnx.ai/onnx/operators/) in the
// comment beside each check. Where the spec gives a number the oracle does not derive (a -1 in a
// Reshape target, a stepped Slice), the check says unknown and the comment says why: the oracle
// may know less than the spec, never something else. The hostile operands every file may carry
// (0, -1, INT64_MIN, INT64_MAX, axes out of range, products that overflow) give unknown dims or
// values, or are clamped as the spec clamps them.
//
// Dims read "[2, ?, 5]" (rank known, ? unknown), "[..., 5]" (rank unknown, last dim known) or
// "unknown"; values read "[0, 0, 4, 16]" or "none" (not even the length is known).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shapes.h"
#include "graph_builder.h"
#include "headcount/load.h"

using namespace headcount;
using headcount::detail::Dims;
using headcount::detail::IntVector;
using testutil::attr_int;
using testutil::attr_ints;
using testutil::GraphBuilder;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

// The rows tested as groups below.
const std::vector<const char*> kSameShape = {
    "Cast", "Identity", "Relu", "Gelu", "FastGelu", "BiasGelu", "Erf", "Sqrt", "Neg", "Softmax", "LogSoftmax",
    "Dropout", "Tanh", "Sigmoid", "LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization", "QuantizeLinear", "DequantizeLinear", "Abs", "Exp", "Log", "Not",
    "Reciprocal", "Floor", "Ceil", "Round", "HardSigmoid", "LeakyRelu", "Elu", "Selu", "Softplus", "Mish",
    "QuickGelu", "BiasAdd", "RotaryEmbedding", "CastLike", "Clip", "IsNaN", "IsInf", "Sign", "Sin", "Cos",
    "RMSNormalization", "Silu"};
const std::vector<const char*> kBroadcast = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal", "Less", "Greater",
                                             "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Max", "Min", "Mod",
                                             "PRelu", "BitShift", "Sum", "Mean"};
const std::vector<const char*> kMatMuls = {"MatMul", "MatMulInteger", "FusedMatMul", "MatMulIntegerToFloat",
                                           "DynamicQuantizeMatMul"};
const std::vector<const char*> kReduces = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"};
const std::vector<const char*> kValuePass = {"Identity", "Cast", "Floor", "Ceil", "Round"};

// A built graph loaded from memory, with the oracle over it.
struct Oracle {
  std::string bytes;  // the loaded model's payloads point into it
  Model model;
  std::optional<detail::ShapeOracle> shapes;  // holds a reference to `model`

  std::string dims(const std::string& value) const {
    Dims d = shapes->dims(0, value);
    if (d.rank >= 0) return detail::format_ints(d.d);
    return d.tail ? "[..., " + d.tail.str() + "]" : "unknown";
  }
  int rank(const std::string& value) const { return shapes->dims(0, value).rank; }
  std::string value(const std::string& value) {
    auto v = shapes->eval(0, value);
    return v ? detail::format_ints(*v) : "none";
  }
};

std::unique_ptr<Oracle> oracle(const GraphBuilder& n) {
  auto r = std::make_unique<Oracle>();
  REQUIRE(n.m.SerializeToString(&r->bytes));
  LoadOptions o;
  o.base_dir = testutil::kNoFolder;
  r->model = load_model_bytes(r->bytes.data(), r->bytes.size(), "shapes.onnx", o);
  r->shapes.emplace(r->model);
  return r;
}

// One node `op` on x, a float input of `x_dims` (-1 symbolic), and `more_inputs`, with output y.
// y is not declared as a graph output: a declaration with a shape would stand in for what the op
// gives (ShapeOracle::declare).
struct OneOp {
  GraphBuilder n;
  onnx::NodeProto* node = nullptr;
  OneOp(const std::string& op, std::vector<int64_t> x_dims, std::vector<std::string> more_inputs = {},
        const std::string& domain = "") {
    n.input("x", std::move(x_dims));
    more_inputs.insert(more_inputs.begin(), "x");
    node = n.op(op, std::move(more_inputs), "y", domain);
  }
  std::string dims() { return oracle(n)->dims("y"); }
};

// Split of x [x_dims] on `axis` into `outputs` outputs, by `sizes` (input 1) when given, with the
// opset 18 attribute num_outputs when given: the outputs' dims, space-separated.
std::string split(std::vector<int64_t> x, std::optional<std::vector<int64_t>> sizes, int64_t axis, int outputs,
                  std::optional<int64_t> num_outputs = std::nullopt) {
  GraphBuilder n;
  n.input("x", x);
  std::vector<std::string> out;
  for (int i = 0; i < outputs; ++i) out.push_back("y" + std::to_string(i));
  std::vector<std::string> in = {"x"};
  if (sizes) in.push_back(n.ints(*sizes));
  auto* node = testutil::node(n.g, "Split", in, out, "split");
  attr_int(node, "axis", axis);
  if (num_outputs) attr_int(node, "num_outputs", *num_outputs);
  auto o = oracle(n);
  std::string s;
  for (const auto& y : out) s += (s.empty() ? "" : " ") + o->dims(y);
  return s;
}

// x with no shape at all: its rank is unknown.
void input_without_shape(GraphBuilder& n, const std::string& name) {
  auto* vi = n.g->add_input();
  vi->set_name(name);
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(testutil::kFloat);
}

}  // namespace

TEST_CASE("shapes: a declared input, value_info and a weight give their dims", "[shapes]") {
  GraphBuilder n;
  n.input("x", {2, -1, 5});
  n.init("w", {5, 7});
  n.declare("h", {3, 4});
  n.op("Relu", {"x"}, "h");
  input_without_shape(n, "bare");
  auto o = oracle(n);
  CHECK(o->dims("x") == "[2, ?, 5]");  // dim_param "n": symbolic
  CHECK(o->dims("w") == "[5, 7]");
  CHECK(o->dims("h") == "[3, 4]");     // value_info wins over what Relu would give ([2, ?, 5])
  CHECK(o->dims("bare") == "unknown");
  CHECK(o->dims("no_such_value") == "unknown");
  CHECK(o->value("x") == "none");      // a graph input is a run-time value
}

TEST_CASE("shapes: a declared output or value_info without a shape hides nothing propagation finds", "[shapes]") {
  // A ValueInfoProto's TypeProto.Tensor may leave out `shape`: it then states the element type
  // and nothing of the dims. Relu's output has its input's shape, [2, ?, 5]; a declaration that
  // does state a shape still wins (the test above).
  GraphBuilder n;
  n.input("x", {2, -1, 5});
  auto typed = [&](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name) {
    auto* vi = list->Add();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(testutil::kFloat);  // no shape
  };
  for (const char* y : {"typed_output", "untyped_output", "typed_value_info", "shaped_output"}) n.op("Relu", {"x"}, y);
  typed(n.g->mutable_output(), "typed_output");
  n.output("untyped_output");  // no type at all
  typed(n.g->mutable_value_info(), "typed_value_info");
  n.declare("shaped_output", {2, 4, 5});
  typed(n.g->mutable_value_info(), "x");  // a second declaration of the input, without a shape
  auto o = oracle(n);
  CHECK(o->dims("typed_output") == "[2, ?, 5]");
  CHECK(o->dims("untyped_output") == "[2, ?, 5]");
  CHECK(o->dims("typed_value_info") == "[2, ?, 5]");
  CHECK(o->dims("shaped_output") == "[2, 4, 5]");  // declared with a shape: it wins
  CHECK(o->dims("x") == "[2, ?, 5]");              // the input's own shape stays
}

TEST_CASE("shapes: ops whose output has their first input's shape", "[shapes]") {
  // Each of these is elementwise on its first input (or normalizes, quantizes or casts it): the
  // output's shape is the input's.
  for (const char* op : kSameShape) {
    INFO(op);
    CHECK(OneOp(op, {2, -1, 5}).dims() == "[2, ?, 5]");
    GraphBuilder n;
    input_without_shape(n, "x");
    n.op(op, {"x"}, "y");
    CHECK(oracle(n)->dims("y") == "unknown");
  }
}

TEST_CASE("shapes: elementwise ops broadcast their inputs (NumPy rules)", "[shapes]") {
  for (const char* op : kBroadcast) {
    INFO(op);
    GraphBuilder n;
    n.input("a", {2, 1, 5});
    n.input("b", {3, 1});
    n.op(op, {"a", "b"}, "y");
    CHECK(oracle(n)->dims("y") == "[2, 3, 5]");  // aligned right: [2, 1, 5] and [_, 3, 1]
  }
  auto broadcast = [](std::vector<std::vector<int64_t>> shapes) {
    GraphBuilder n;
    std::vector<std::string> in;
    for (size_t i = 0; i < shapes.size(); ++i) {
      in.push_back("in" + std::to_string(i));
      n.input(in.back(), shapes[i]);
    }
    n.op("Sum", in, "y");
    return oracle(n)->dims("y");
  };
  CHECK(broadcast({{2, 1, 1}, {1, 3, 1}, {1, 1, 5}}) == "[2, 3, 5]");
  CHECK(broadcast({{-1, 5}, {4, 5}}) == "[4, 5]");       // n broadcasts with 4 only as 1 or 4: 4
  CHECK(broadcast({{-1, 5}, {1, 5}}) == "[?, 5]");       // n with 1 is n
  CHECK(broadcast({{0, 5}, {1, 5}}) == "[0, 5]");        // 0 with 1 is 0
  CHECK(broadcast({{}, {2, 3}}) == "[2, 3]");            // a scalar
  CHECK(broadcast({{kMax, 1}, {1, 3}}) == "[9223372036854775807, 3]");  // a stated dim is kept as stated
  GraphBuilder n;
  input_without_shape(n, "a");
  n.input("b", {5});
  n.op("Add", {"a", "b"}, "y");
  CHECK(oracle(n)->dims("y") == "[..., 5]");  // rank unknown; the last dim is b's
}

TEST_CASE("shapes: MatMul and its quantized and fused forms (NumPy matmul)", "[shapes]") {
  for (const char* op : kMatMuls) {
    INFO(op);
    auto matmul = [&](std::vector<int64_t> a, std::vector<int64_t> b) {
      GraphBuilder n;
      n.input("a", a);
      n.input("b", b);
      n.op(op, {"a", "b"}, "y", std::string(op) == "MatMul" || std::string(op) == "MatMulInteger" ? "" : "com.microsoft");
      return oracle(n)->dims("y");
    };
    CHECK(matmul({2, 3, 4}, {4, 5}) == "[2, 3, 5]");
    CHECK(matmul({2, 1, 3, 4}, {6, 4, 5}) == "[2, 6, 3, 5]");  // batch [2, 1] and [6] broadcast to [2, 6]
    CHECK(matmul({-1, 3, 4}, {4, 5}) == "[?, 3, 5]");
    // A 1-D operand (the spec: [4] x [4, 5] = [5]): the rank is not derived, the last dim is.
    CHECK(matmul({4}, {4, 5}) == "[..., 5]");
  }
  // FusedMatMul with transB = 1 multiplies by Bᵀ: [2, 3, 4] x [5, 4]ᵀ = [2, 3, 5]; the oracle does
  // not read B transposed, so it knows nothing rather than a wrong width.
  OneOp t("FusedMatMul", {2, 3, 4}, {"b"}, "com.microsoft");
  t.n.input("b", {5, 4});
  attr_int(t.node, "transB", 1);
  CHECK(t.dims() == "unknown");
}

TEST_CASE("shapes: Flatten, RMSNormalization, Silu and QLinearMatMul", "[shapes]") {
  // Flatten (ONNX Operators.md): "the first dimension of the output tensor is (d_0 X d_1 ...
  // d_(axis-1)), and the second is (d_axis X d_(axis+1) ... X dn)"; axis in [-r, r], default 1,
  // negative counts from the back; an empty product is 1.
  auto flatten = [](std::vector<int64_t> x, std::optional<int64_t> axis) {
    OneOp f("Flatten", std::move(x));
    if (axis) attr_int(f.node, "axis", *axis);
    return f.dims();
  };
  CHECK(flatten({2, 3, 4, 5}, std::nullopt) == "[2, 60]");  // axis 1: [2, 3·4·5]
  CHECK(flatten({2, 3, 4, 5}, 2) == "[6, 20]");             // [2·3, 4·5]
  CHECK(flatten({2, 3, 4, 5}, 0) == "[1, 120]");            // [empty product, 2·3·4·5]
  CHECK(flatten({2, 3, 4, 5}, 4) == "[120, 1]");            // axis r: [all, empty product]
  CHECK(flatten({2, 3, 4, 5}, -1) == "[24, 5]");            // -1 is axis 3: [2·3·4, 5]
  CHECK(flatten({2, 3, 4, 5}, -4) == "[1, 120]");           // -r is axis 0
  CHECK(flatten({2, -1, 4, 5}, 2) == "[?, 20]");            // a symbolic dim: its side unknown
  CHECK(flatten({2, 3, 4, 5}, 5) == "unknown");             // past r: the node is an error
  CHECK(flatten({2, 3, 4, 5}, -5) == "unknown");
  CHECK(flatten({kMax, 2}, 2) == "[?, 1]");                 // 2^63-1 · 2 overflows: unknown, not wrapped
  GraphBuilder n;
  input_without_shape(n, "x");
  n.op("Flatten", {"x"}, "y");
  CHECK(oracle(n)->dims("y") == "unknown");  // rank unknown: so is which dims go to which side

  // RMSNormalization (ai.onnx 23): Y = Mul(Normalized, Scale), "the same shape as X"; the scale
  // of the last dim [5] does not change it. Silu (x·Sigmoid(x), element-wise): x's shape.
  OneOp rms("RMSNormalization", {2, -1, 5}, {"scale"});
  rms.n.init("scale", {5});
  CHECK(rms.dims() == "[2, ?, 5]");
  CHECK(OneOp("Silu", {2, 7, 3}, {}, "com.microsoft").dims() == "[2, 7, 3]");

  // QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
  // "behaves like numpy.matmul" of a (input 0) and b (input 3): [2, 3, 4] x [4, 5] = [2, 3, 5];
  // the scales and zero points (scalars here) are no operand of the product.
  auto qlinear = [](std::vector<int64_t> a, std::vector<int64_t> b) {
    GraphBuilder n;
    n.input("a", a);
    n.input("b", b);
    for (const char* s : {"sa", "za", "sb", "zb", "sy", "zy"}) n.init(s, {});
    n.op("QLinearMatMul", {"a", "sa", "za", "b", "sb", "zb", "sy", "zy"}, "y");
    return oracle(n)->dims("y");
  };
  CHECK(qlinear({2, 3, 4}, {4, 5}) == "[2, 3, 5]");
  CHECK(qlinear({2, 1, 3, 4}, {6, 4, 5}) == "[2, 6, 3, 5]");  // batch [2, 1] and [6] broadcast to [2, 6]
  CHECK(qlinear({-1, 3, 4}, {4, 7}) == "[?, 3, 7]");
}

TEST_CASE("shapes: MatMul by a 1-D B, or a B of unknown rank, does not end in B's last dim", "[shapes]") {
  // NumPy matmul (the ONNX MatMul spec defers to it): a 1-D B [K] is promoted to [K, 1] and the
  // appended 1 removed afterwards, so [2, 3, 4] x [4] = [2, 3]: the last dim is A's second last.
  GraphBuilder n;
  n.input("a", {2, 3, 4});
  n.input("b", {4});
  n.op("MatMul", {"a", "b"}, "by_vector");
  // A B whose rank is unknown may be that 1-D B: [2, 3, 6] x [6] = [2, 3], [2, 3, 6] x [6, 6] =
  // [2, 3, 6]. Its last dim alone (6 here, from bare x [.., 4] times w [4, 6]) does not say which.
  input_without_shape(n, "bare");
  n.init("w", {4, 6});
  n.op("MatMul", {"bare", "w"}, "rank_unknown");
  n.input("a6", {2, 3, 6});
  n.op("MatMul", {"a6", "rank_unknown"}, "by_rank_unknown");
  auto o = oracle(n);
  CHECK(o->dims("by_vector") == "[..., 3]");  // the rank is not derived; the last dim is
  CHECK(o->dims("rank_unknown") == "[..., 6]");
  CHECK(o->dims("by_rank_unknown") == "unknown");
}

TEST_CASE("shapes: FusedMatMul with transA or a batch transpose gives nothing", "[shapes]") {
  // com.microsoft FusedMatMul: transA multiplies by Aᵀ, so [2, 4, 3] x [4, 5] = [2, 3, 5] (M is
  // A's last dim, not its second last); transBatchA and transBatchB move the batch dims. The
  // oracle reads none of them, so it knows nothing rather than a wrong dim.
  for (const char* flag : {"transA", "transBatchA", "transBatchB"}) {
    INFO(flag);
    OneOp t("FusedMatMul", {2, 4, 3}, {"b"}, "com.microsoft");
    t.n.input("b", {4, 5});
    attr_int(t.node, flag, 1);
    CHECK(t.dims() == "unknown");
  }
  OneOp t("FusedMatMul", {2, 4, 3}, {"b"}, "com.microsoft");  // the flags stated as 0 change nothing
  t.n.input("b", {3, 5});
  for (const char* flag : {"transA", "transB", "transBatchA", "transBatchB"}) attr_int(t.node, flag, 0);
  CHECK(t.dims() == "[2, 4, 5]");
}

TEST_CASE("shapes: MatMulNBits gives the last dim N", "[shapes]") {
  // com.microsoft MatMulNBits: A [..., K] -> Y [..., N] with N an attribute.
  auto nbits = [](std::optional<int64_t> n_attr) {
    OneOp t("MatMulNBits", {1, 5, 64}, {}, "com.microsoft");
    if (n_attr) attr_int(t.node, "N", *n_attr);
    return t.dims();
  };
  CHECK(nbits(32) == "[1, 5, 32]");
  CHECK(nbits(kMax) == "[1, 5, 9223372036854775807]");  // as stated
  CHECK(nbits(std::nullopt) == "[1, 5, ?]");
  for (int64_t hostile : {int64_t{0}, int64_t{-1}, kMin}) {
    INFO(hostile);
    CHECK(nbits(hostile) == "[1, 5, ?]");  // not a width
  }
}

TEST_CASE("shapes: Gemm is [M, N] from A and B, transposed as transA and transB say", "[shapes]") {
  auto gemm = [](std::vector<int64_t> a, std::vector<int64_t> b, int trans_a, int trans_b) {
    GraphBuilder n;
    n.input("a", a);
    n.input("b", b);
    auto* g = n.op("Gemm", {"a", "b"}, "y");
    if (trans_a) attr_int(g, "transA", trans_a);
    if (trans_b) attr_int(g, "transB", trans_b);
    return oracle(n)->dims("y");
  };
  CHECK(gemm({3, 4}, {4, 5}, 0, 0) == "[3, 5]");
  CHECK(gemm({4, 3}, {4, 5}, 1, 0) == "[3, 5]");  // Aᵀ [3, 4]
  CHECK(gemm({3, 4}, {5, 4}, 0, 1) == "[3, 5]");  // Bᵀ [4, 5]
  CHECK(gemm({4, 3}, {5, 4}, 1, 1) == "[3, 5]");
  CHECK(gemm({2, 3, 4}, {4, 5}, 0, 0) == "[?, 5]");  // A is not 2-D: M is not read from it
  CHECK(gemm({3, 4}, {4, 5}, 0, -1) == "[3, 4]");    // any nonzero transB transposes B
}

TEST_CASE("shapes: Transpose permutes the dims, reversed without perm", "[shapes]") {
  auto transpose = [](std::optional<std::vector<int64_t>> perm) {
    OneOp t("Transpose", {2, 3, 5});
    if (perm) attr_ints(t.node, "perm", *perm);
    return t.dims();
  };
  CHECK(transpose(std::vector<int64_t>{2, 0, 1}) == "[5, 2, 3]");  // output[i] = input[perm[i]]
  CHECK(transpose(std::nullopt) == "[5, 3, 2]");                 // the default reverses
  CHECK(transpose(std::vector<int64_t>{0, 1, 2}) == "[2, 3, 5]");
  // Entries that name no axis leave their dim unknown; a perm of another length, the whole shape.
  CHECK(transpose(std::vector<int64_t>{0, kMax, kMin}) == "[2, ?, ?]");
  CHECK(transpose(std::vector<int64_t>{0, -1, 1}) == "[2, ?, 3]");
  CHECK(transpose(std::vector<int64_t>{1, 0}) == "unknown");
  CHECK(transpose(std::vector<int64_t>{}) == "unknown");
}

TEST_CASE("shapes: Reshape takes its target, 0 copying the input's dim", "[shapes]") {
  auto reshape = [](std::vector<int64_t> x, std::vector<int64_t> target, bool allowzero = false) {
    OneOp t("Reshape", std::move(x));
    t.node->add_input(t.n.ints(std::move(target)));
    if (allowzero) attr_int(t.node, "allowzero", 1);
    return t.dims();
  };
  CHECK(reshape({2, 3, 8}, {0, 0, 2, 4}) == "[2, 3, 2, 4]");
  CHECK(reshape({2, -1, 8}, {0, 0, 2, 4}) == "[2, ?, 2, 4]");  // 0 copies even an unknown dim
  CHECK(reshape({2, 3, 8}, {6, 8}) == "[6, 8]");
  // -1 is inferred by the spec (48 / 4 = 12); the oracle leaves it unknown.
  CHECK(reshape({2, 3, 8}, {-1, 4}) == "[?, 4]");
  // allowzero = 1: a 0 is a zero-sized dim, not a copy; the oracle leaves it unknown.
  CHECK(reshape({2, 3, 8}, {0, 48}, true) == "[?, 48]");
  CHECK(reshape({2}, {0, 0}) == "[2, ?]");  // a 0 past the input's rank copies nothing
  // Hostile targets: a negative other than -1 is unknown; INT64_MAX is the file's own statement.
  CHECK(reshape({2, 3, 8}, {kMin, -2, 4}) == "[?, ?, 4]");
  CHECK(reshape({2, 3, 8}, {kMax, 1}) == "[9223372036854775807, 1]");
  // A target computed at run time, or longer than any shape (65 entries), gives nothing.
  OneOp runtime("Reshape", {2, 3, 8}, {"target"});
  runtime.n.input("target", {4}, kInt64);
  CHECK(runtime.dims() == "unknown");
  CHECK(reshape({2, 3, 8}, std::vector<int64_t>(65, 1)) == "unknown");
}

TEST_CASE("shapes: Unsqueeze inserts 1s at the axes; values pass through", "[shapes]") {
  auto unsqueeze = [](std::vector<int64_t> x, std::vector<int64_t> axes, bool as_attribute = false) {
    OneOp t("Unsqueeze", std::move(x));
    if (as_attribute) attr_ints(t.node, "axes", axes);  // opset 1-12
    else t.node->add_input(t.n.ints(axes));             // opset 13 on
    return t.dims();
  };
  CHECK(unsqueeze({3, 4}, {0}) == "[1, 3, 4]");
  CHECK(unsqueeze({3, 4}, {-1}) == "[3, 4, 1]");      // -1 is the output's last axis (rank 3)
  CHECK(unsqueeze({3, 4}, {0, 3}) == "[1, 3, 4, 1]");
  CHECK(unsqueeze({3, 4}, {1}, true) == "[3, 1, 4]");
  // An axis outside the output's rank [-3, 2] inserts nothing known there; the rank still grows.
  OneOp hostile("Unsqueeze", {3, 4});
  hostile.node->add_input(hostile.n.ints({kMin}));
  CHECK(oracle(hostile.n)->rank("y") == 3);
  // Rank unknown: an axis counted from the front keeps the last dim; one from the back may not.
  for (int64_t axis : {int64_t{0}, int64_t{-1}}) {
    GraphBuilder n;
    n.init("w", {4, 6});
    input_without_shape(n, "b");
    n.op("MatMul", {"b", "w"}, "x");  // rank unknown, last dim 6
    n.op("Unsqueeze", {"x", n.ints({axis})}, "y");
    CHECK(oracle(n)->dims("y") == (axis == 0 ? "[..., 6]" : "unknown"));
  }
  GraphBuilder n;
  n.op("Unsqueeze", {n.ints({8}, true), n.ints({0})}, "y");
  CHECK(oracle(n)->value("y") == "[8]");
}

TEST_CASE("shapes: Unsqueeze of unknown rank keeps the last dim only when every axis comes before it", "[shapes]") {
  // Unsqueeze's axes index the output, of rank r + len(axes). With r unknown, axis 1 is the last
  // axis when r = 1 (x [6] -> [6, 1]: the last dim is 1, not 6); axes [0, 1] are the first two
  // of a rank of at least 3 whatever r is, so the last dim stays x's.
  auto unsqueeze = [](std::vector<int64_t> axes) {
    GraphBuilder n;
    n.init("w", {4, 6});
    input_without_shape(n, "b");
    n.op("MatMul", {"b", "w"}, "x");  // rank unknown, last dim 6
    n.op("Unsqueeze", {"x", n.ints(axes)}, "y");
    return oracle(n)->dims("y");
  };
  CHECK(unsqueeze({1}) == "unknown");
  CHECK(unsqueeze({2, 0}) == "unknown");  // x [6] -> [1, 6, 1]
  CHECK(unsqueeze({0, 1}) == "[..., 6]");
  CHECK(unsqueeze({1, 0}) == "[..., 6]");
  CHECK(unsqueeze({0, 0}) == "unknown");  // a repeated axis: the spec's error; nothing is known
}

TEST_CASE("shapes: Squeeze removes the axes named; values pass through", "[shapes]") {
  auto squeeze = [](std::vector<int64_t> x, std::optional<std::vector<int64_t>> axes) {
    OneOp t("Squeeze", std::move(x));
    if (axes) t.node->add_input(t.n.ints(*axes));
    return t.dims();
  };
  CHECK(squeeze({1, 3, 1, 4}, std::vector<int64_t>{0, 2}) == "[3, 4]");
  CHECK(squeeze({1, 3, 1, 4}, std::vector<int64_t>{-2}) == "[1, 3, 4]");
  // Without axes the spec removes every dim of 1 ([3, 4]); the oracle does not guess.
  CHECK(squeeze({1, 3, 1, 4}, std::nullopt) == "unknown");
  CHECK(squeeze({1, 3, 1, 4}, std::vector<int64_t>{kMax, kMin}) == "[1, 3, 1, 4]");  // no such axes
  GraphBuilder n;
  n.op("Squeeze", {n.ints({8}), n.ints({0})}, "y");
  CHECK(oracle(n)->value("y") == "[8]");
}

TEST_CASE("shapes: Concat adds the dims on its axis", "[shapes]") {
  auto concat = [](std::vector<int64_t> a, std::vector<int64_t> b, std::optional<int64_t> axis) {
    GraphBuilder n;
    n.input("a", a);
    n.input("b", b);
    auto* c = n.op("Concat", {"a", "b"}, "y");
    if (axis) attr_int(c, "axis", *axis);
    return oracle(n)->dims("y");
  };
  CHECK(concat({2, 3}, {2, 5}, 1) == "[2, 8]");
  CHECK(concat({2, 3}, {2, 5}, -1) == "[2, 8]");
  CHECK(concat({2, 3}, {4, 3}, 0) == "[6, 3]");
  CHECK(concat({-1, 3}, {2, 5}, 1) == "[2, 8]");   // the other inputs say dim 0 is 2
  CHECK(concat({2, -1}, {2, 5}, 1) == "[2, ?]");   // 5 + unknown
  CHECK(concat({2, kMax}, {2, 1}, 1) == "[2, ?]"); // 2^63 - 1 + 1 overflows
  CHECK(concat({2, 3}, {2, 5}, 2) == "unknown");   // no axis 2 in rank 2
  CHECK(concat({2, 3}, {2, 5}, kMin) == "unknown");
  CHECK(concat({2, 3}, {4, 3}, std::nullopt) == "[6, 3]");  // the attribute is required; read as 0
}

TEST_CASE("shapes: Concat's values, with run-time pieces as unknown elements", "[shapes]") {
  GraphBuilder n;
  n.input("seq", {}, kInt64);        // a scalar
  n.input("pair", {2}, kInt64);      // two elements
  n.input("some", {-1}, kInt64);     // a length the file does not state
  attr_int(n.op("Concat", {n.ints({0}), n.ints({0}), n.ints({4, 16})}, "target"), "axis", 0);
  attr_int(n.op("Concat", {n.ints({0}), "seq", n.ints({3, 8, 15})}, "folded"), "axis", 0);
  attr_int(n.op("Concat", {"pair", n.ints({kMin, kMax})}, "pair_and"), "axis", 0);
  attr_int(n.op("Concat", {n.ints({0}), "some"}, "open"), "axis", 0);
  n.op("Concat", {n.ints(std::vector<int64_t>(40, 1)), n.ints(std::vector<int64_t>(30, 2))}, "long");
  auto o = oracle(n);
  CHECK(o->value("target") == "[0, 0, 4, 16]");
  CHECK(o->value("folded") == "[0, ?, 3, 8, 15]");
  CHECK(o->value("pair_and") == "[?, ?, -9223372036854775808, 9223372036854775807]");
  CHECK(o->value("open") == "none");
  CHECK(o->value("long") == "none");  // 70 elements: longer than any shape
}

TEST_CASE("shapes: Split divides its axis by the sizes, or evenly", "[shapes]") {
  CHECK(split({2, 12}, std::vector<int64_t>{4, 8}, 1, 2) == "[2, 4] [2, 8]");
  CHECK(split({2, 12}, std::vector<int64_t>{4, 8}, -1, 2) == "[2, 4] [2, 8]");
  CHECK(split({2, 12}, std::nullopt, 1, 3) == "[2, 4] [2, 4] [2, 4]");  // 12 / 3 outputs
  CHECK(split({6, 12}, std::nullopt, 0, 2) == "[3, 12] [3, 12]");
  CHECK(split({2, -1}, std::nullopt, 1, 2) == "[2, ?] [2, ?]");
  CHECK(split({2, 12}, std::vector<int64_t>{4}, 1, 2) == "[2, 4] [2, ?]");  // no size for the second output
  CHECK(split({2, 12}, std::vector<int64_t>{4, 8}, kMin, 2) == "unknown unknown");
  CHECK(split({2, 12}, std::vector<int64_t>{4, 8}, 2, 2) == "unknown unknown");
  // The opset 11 attribute.
  GraphBuilder n;
  n.input("x", {2, 12});
  auto* s = testutil::node(n.g, "Split", {"x"}, {"a", "b"}, "split");
  attr_int(s, "axis", 1);
  attr_ints(s, "split", {5, 7});
  auto o = oracle(n);
  CHECK(o->dims("a") == "[2, 5]");
  CHECK(o->dims("b") == "[2, 7]");
}

TEST_CASE("shapes: Split sizes must be non-negative and add up to the axis", "[shapes]") {
  // The Split spec (opset 13 on): "split: length of each output. Values should be >= 0. Sum of
  // the values must be equal to the dim value at 'axis' specified." Sizes that break it split
  // nothing (onnxruntime refuses the node), so no output has a known shape.
  using V = std::vector<int64_t>;
  CHECK(split({2, 12}, V{-4, 16}, 1, 2) == "unknown unknown");  // sums to 12, but -4 is no length
  CHECK(split({2, 12}, V{kMin, 4}, 1, 2) == "unknown unknown");
  CHECK(split({2, 12}, V{4, 4}, 1, 2) == "unknown unknown");    // 8, not 12
  CHECK(split({2, 12}, V{4, 4, 4}, 1, 2) == "unknown unknown"); // three sizes for two outputs
  CHECK(split({2, -1}, V{4, 8}, 1, 2) == "[2, 4] [2, 8]");      // an axis of unknown size: as stated
  CHECK(split({2, -1}, V{-4, 8}, 1, 2) == "unknown unknown");
  CHECK(split({2, 12}, V{0, 12}, 1, 2) == "[2, 0] [2, 12]");    // 0 is a length
}

TEST_CASE("shapes: Split's num_outputs (opset 18) gives ceil-sized parts, the last one smaller", "[shapes]") {
  // Split-18: "If the tensor is not evenly splittable the last chunk will be smaller." The onnx
  // shape inference and reference implementation (reference/ops/op_split.py) make every part
  // ceil(dim / n) and the last one dim - (n - 1) * ceil(dim / n); the backend test
  // test_split_2d_uneven_split_opset18 splits [2, 8] into [2, 3], [2, 3] and [2, 2].
  using V = std::vector<int64_t>;
  CHECK(split({2, 8}, std::nullopt, 1, 3, 3) == "[2, 3] [2, 3] [2, 2]");
  CHECK(split({2, 12}, std::nullopt, 1, 3, 3) == "[2, 4] [2, 4] [2, 4]");  // even
  CHECK(split({7, 2}, std::nullopt, 0, 2, 2) == "[4, 2] [3, 2]");          // ceil(3.5) = 4, 7 - 4
  CHECK(split({6}, std::nullopt, 0, 4, 4) == "[2] [2] [2] [0]");           // ceil(1.5) = 2, 6 - 3 x 2
  // [5] in 4: parts of ceil(1.25) = 2 and a last one of 5 - 3 x 2 = -1; the rule has no answer
  // there (onnx/onnx#5766), so nothing is known.
  CHECK(split({5}, std::nullopt, 0, 4, 4) == "unknown unknown unknown unknown");
  CHECK(split({2, -1}, std::nullopt, 1, 3, 3) == "[2, ?] [2, ?] [2, ?]");
  // num_outputs other than the node's outputs, num_outputs with sizes: errors in the spec.
  CHECK(split({2, 8}, std::nullopt, 1, 3, 2) == "unknown unknown unknown");
  CHECK(split({2, 8}, V{4, 4}, 1, 2, 2) == "unknown unknown");
  // Before opset 18 (no num_outputs) the parts are equal or the node is an error: [2, 8] in 3
  // fails the opset 13 shape inference ("The input is not evenly splittable") and onnxruntime
  // ("Input cannot be split evenly on selected axis").
  CHECK(split({2, 8}, std::nullopt, 1, 3) == "unknown unknown unknown");
}

TEST_CASE("shapes: Slice keeps end - start of each sliced axis, bounds clamped", "[shapes]") {
  // starts, ends, axes as given; steps only when `steps` is set.
  auto slice = [](std::vector<int64_t> x, std::vector<int64_t> starts, std::vector<int64_t> ends,
                  std::optional<std::vector<int64_t>> axes, std::optional<std::vector<int64_t>> steps = std::nullopt) {
    OneOp t("Slice", std::move(x));
    t.node->add_input(t.n.ints(starts));
    t.node->add_input(t.n.ints(ends));
    if (axes || steps) t.node->add_input(axes ? t.n.ints(*axes) : "");
    if (steps) t.node->add_input(t.n.ints(*steps));
    return t.dims();
  };
  using V = std::vector<int64_t>;
  CHECK(slice({10, 20}, {2}, {-1}, V{1}) == "[10, 17]");       // 2 .. 19 of 20
  CHECK(slice({10, 20}, {2}, {-1}, V{-1}) == "[10, 17]");      // axis -1 is axis 1
  CHECK(slice({10, 20}, {2}, {5}, std::nullopt) == "[3, 20]"); // no axes: the first len(starts) axes
  CHECK(slice({10, 20}, {1, 2}, {3, 4}, V{0, 1}) == "[2, 2]");
  CHECK(slice({10, 20}, {kMin}, {kMax}, V{0}) == "[10, 20]");  // clamped to [0, 10]
  CHECK(slice({10, 20}, {-100}, {100}, V{1}) == "[10, 20]");
  CHECK(slice({10, 20}, {5}, {2}, V{0}) == "[0, 20]");         // end before start: empty
  CHECK(slice({10, 20}, {0}, {10}, V{0}, V{1}) == "[10, 20]"); // step 1
  // A step other than 1 gives ceil((end - start) / step) in the spec (5 here); not derived.
  CHECK(slice({10, 20}, {0}, {10}, V{0}, V{2}) == "[?, 20]");
  CHECK(slice({10, 20}, {9}, {kMin}, V{0}, V{-1}) == "[?, 20]");
  CHECK(slice({10, 20}, {2}, {5}, V{kMax}) == "[10, 20]");     // no such axis: nothing sliced
  CHECK(slice({-1, 20}, {2}, {5}, V{0}) == "[?, 20]");         // the clamp needs the dim
  CHECK(slice({10, 20}, {1, 2}, {3}, V{0}) == "[?, ?]");       // starts and ends of different lengths
  OneOp runtime("Slice", {10, 20}, {"starts"});
  runtime.n.input("starts", {1}, kInt64);
  runtime.node->add_input(runtime.n.ints({5}));
  CHECK(runtime.dims() == "[?, ?]");  // bounds computed at run time: every dim may change
}

TEST_CASE("shapes: Slice's values, one axis, bounds clamped", "[shapes]") {
  GraphBuilder n;
  std::string data = n.ints({1, 2, 3, 4, 5});
  n.op("Slice", {data, n.ints({1}), n.ints({-1})}, "middle");
  n.op("Slice", {data, n.ints({kMin}), n.ints({kMax})}, "all");
  n.op("Slice", {data, n.ints({4}), n.ints({1})}, "empty");
  n.op("Slice", {data, n.ints({-2}), n.ints({kMax})}, "tail");
  n.op("Slice", {data, n.ints({0}), n.ints({5}), n.ints({0}), n.ints({2})}, "stepped");
  n.op("Slice", {data, n.ints({0, 1}), n.ints({5, 2})}, "two");
  auto o = oracle(n);
  CHECK(o->value("middle") == "[2, 3, 4]");
  CHECK(o->value("all") == "[1, 2, 3, 4, 5]");
  CHECK(o->value("empty") == "[]");
  CHECK(o->value("tail") == "[4, 5]");
  CHECK(o->value("stepped") == "none");  // [1, 3, 5] in the spec; steps are not evaluated
  CHECK(o->value("two") == "none");
}

TEST_CASE("shapes: Gather replaces the axis by the indices' dims", "[shapes]") {
  auto gather = [](std::vector<int64_t> data, std::vector<int64_t> indices, std::optional<int64_t> axis) {
    GraphBuilder n;
    n.input("data", data);
    n.input("indices", indices, kInt64);
    auto* g = n.op("Gather", {"data", "indices"}, "y");
    if (axis) attr_int(g, "axis", *axis);
    return oracle(n)->dims("y");
  };
  CHECK(gather({5, 6, 7}, {2, 3}, 1) == "[5, 2, 3, 7]");
  CHECK(gather({5, 6, 7}, {}, std::nullopt) == "[6, 7]");  // a scalar index on axis 0
  CHECK(gather({5, 6, 7}, {4}, -1) == "[5, 6, 4]");
  CHECK(gather({5, 6, 7}, {4}, 3) == "unknown");
  CHECK(gather({5, 6, 7}, {4}, kMin) == "unknown");
  GraphBuilder n;  // indices of unknown rank: the last dim survives a gather on an earlier axis
  n.input("data", {5, 6, 7});
  input_without_shape(n, "indices");
  n.op("Gather", {"data", "indices"}, "y");
  CHECK(oracle(n)->dims("y") == "[..., 7]");
}

TEST_CASE("shapes: Gather's value, one index into a constant or a shape", "[shapes]") {
  GraphBuilder n;
  std::string data = n.ints({10, 20, 30});
  auto at = [&](int64_t i, const std::string& out) { n.op("Gather", {data, n.ints({i}, true)}, out); };
  at(1, "second");
  at(-1, "last");
  at(-3, "first");
  at(3, "past");
  at(-4, "before");
  at(kMin, "min");
  at(kMax, "max");
  n.op("Gather", {data, n.ints({0, 1})}, "two");
  // Gather(Shape(x), -1) needs only x's last dim, even when x's rank is unknown.
  input_without_shape(n, "b");
  n.init("w", {4, 6});
  n.op("MatMul", {"b", "w"}, "x");
  n.op("Shape", {"x"}, "x_shape");
  n.op("Gather", {"x_shape", n.ints({-1}, true)}, "x_last");
  n.op("Gather", {"x_shape", n.ints({0}, true)}, "x_first");
  auto o = oracle(n);
  CHECK(o->value("second") == "[20]");
  CHECK(o->value("last") == "[30]");
  CHECK(o->value("first") == "[10]");
  for (const char* out : {"past", "before", "min", "max", "two", "x_first"}) {
    INFO(out);
    CHECK(o->value(out) == "none");
  }
  CHECK(o->value("x_last") == "[6]");
}

TEST_CASE("shapes: Expand broadcasts the input with the shape", "[shapes]") {
  auto expand = [](std::vector<int64_t> x, std::vector<int64_t> shape) {
    OneOp t("Expand", std::move(x));
    t.node->add_input(t.n.ints(std::move(shape)));
    return t.dims();
  };
  CHECK(expand({3, 1}, {2, 1, 4}) == "[2, 3, 4]");
  CHECK(expand({3, 1}, {1}) == "[3, 1]");    // the shape may be smaller: broadcast, not resize
  CHECK(expand({3, 1}, {3, 0}) == "[3, 0]"); // 1 with 0 is 0
  OneOp runtime("Expand", {3, 1}, {"shape"});
  runtime.n.input("shape", {2}, kInt64);
  CHECK(runtime.dims() == "unknown");
}

TEST_CASE("shapes: Tile multiplies each dim by its repeat", "[shapes]") {
  auto tile = [](std::vector<int64_t> x, std::vector<int64_t> repeats) {
    OneOp t("Tile", std::move(x));
    t.node->add_input(t.n.ints(std::move(repeats)));
    return t.dims();
  };
  CHECK(tile({2, 3}, {2, 2}) == "[4, 6]");
  CHECK(tile({2, 3}, {0, 1}) == "[0, 3]");
  CHECK(tile({-1, 3}, {2, 1}) == "[?, 3]");
  CHECK(tile({4611686018427387904, 3}, {2, 1}) == "[?, 3]");  // 2^62 x 2 = 2^63 overflows
  CHECK(tile({3037000500, 3}, {3037000500, 1}) == "[?, 3]");  // 9,223,372,037,000,250,000 > 2^63 - 1
  CHECK(tile({2, 3}, {2}) == "unknown");                      // one repeat per dim, or nothing
}

TEST_CASE("shapes: Expand and Tile by negative constants give no dims", "[shapes]") {
  // Expand: "two corresponding dimensions must have the same value, or one of them is equal to
  // 1"; a shape entry of -1 is neither. Tile: repeats are counts of copies. A file can hold both;
  // no shape has a negative dim, so the output's shape is unknown.
  auto expand = [](std::vector<int64_t> x, std::vector<int64_t> shape) {
    OneOp t("Expand", std::move(x));
    t.node->add_input(t.n.ints(std::move(shape)));
    return t.dims();
  };
  auto tile = [](std::vector<int64_t> x, std::vector<int64_t> repeats) {
    OneOp t("Tile", std::move(x));
    t.node->add_input(t.n.ints(std::move(repeats)));
    return t.dims();
  };
  CHECK(expand({3, 4}, {-1, 4}) == "unknown");
  CHECK(expand({1, 4}, {-1, 4}) == "unknown");
  CHECK(expand({3, 1}, {kMin, 1}) == "unknown");
  CHECK(expand({3, 1}, {4, 1}) == "[?, 1]");  // 3 and 4 do not broadcast: that dim is not known
  CHECK(tile({2, 3}, {-1, 1}) == "unknown");
  CHECK(tile({2, 3}, {1, kMin}) == "unknown");
  CHECK(tile({-1, 3}, {-1, 1}) == "unknown");
}

TEST_CASE("shapes: Shape is a 1-D tensor of the selected dims", "[shapes]") {
  auto shape = [](std::vector<int64_t> x, std::optional<int64_t> start, std::optional<int64_t> end) {
    OneOp t("Shape", std::move(x));
    if (start) attr_int(t.node, "start", *start);
    if (end) attr_int(t.node, "end", *end);
    auto o = oracle(t.n);
    return o->dims("y") + " " + o->value("y");
  };
  CHECK(shape({2, 3, 5}, std::nullopt, std::nullopt) == "[3] [2, 3, 5]");
  CHECK(shape({2, -1, 5}, std::nullopt, std::nullopt) == "[3] [2, ?, 5]");
  CHECK(shape({2, 3, 5}, 1, std::nullopt) == "[2] [3, 5]");
  CHECK(shape({2, 3, 5}, -1, std::nullopt) == "[1] [5]");      // negative: from the end
  CHECK(shape({2, 3, 5}, std::nullopt, -1) == "[2] [2, 3]");
  CHECK(shape({2, 3, 5}, kMin, kMax) == "[3] [2, 3, 5]");      // clamped to [0, 3]
  CHECK(shape({2, 3, 5}, 2, 1) == "[0] []");                   // start after end: empty
  CHECK(shape({}, std::nullopt, std::nullopt) == "[0] []");    // a scalar's shape
  GraphBuilder n;
  input_without_shape(n, "x");
  n.op("Shape", {"x"}, "y");
  auto o = oracle(n);
  CHECK(o->dims("y") == "[?]");  // 1-D, of the unknown rank
  CHECK(o->value("y") == "none");
}

TEST_CASE("shapes: Reduce ops keep a 1 at each reduced axis (keepdims)", "[shapes]") {
  for (const char* op : kReduces) {
    INFO(op);
    auto reduce = [&](std::optional<std::vector<int64_t>> axes, std::optional<int64_t> keepdims, bool input) {
      OneOp t(op, {2, 3, 5});
      if (axes && input) t.node->add_input(t.n.ints(*axes));  // opset 13 on (ReduceSum), 18 on (the others)
      if (axes && !input) attr_ints(t.node, "axes", *axes);
      if (keepdims) attr_int(t.node, "keepdims", *keepdims);
      return t.dims();
    };
    using V = std::vector<int64_t>;
    CHECK(reduce(V{1}, std::nullopt, true) == "[2, 1, 5]");   // keepdims defaults to 1
    CHECK(reduce(V{1}, std::nullopt, false) == "[2, 1, 5]");
    CHECK(reduce(V{-1}, 1, true) == "[2, 3, 1]");
    CHECK(reduce(V{0, 2}, 1, true) == "[1, 3, 1]");
    CHECK(reduce(V{kMin, kMax}, 1, true) == "[2, 3, 5]");    // no such axes
    // keepdims = 0 drops the axes ([2, 5]); without axes every axis is reduced ([1, 1, 1]): the
    // oracle derives neither.
    CHECK(reduce(V{1}, 0, true) == "unknown");
    CHECK(reduce(std::nullopt, 1, true) == "unknown");
  }
}

TEST_CASE("shapes: Reduce ops with empty axes reduce every axis, or none with noop_with_empty_axes", "[shapes]") {
  // ReduceSum-13 and the others from 18: "noop_with_empty_axes: Defines behavior if 'axes' is
  // empty. Default behavior with 'false' is to reduce all axes. When axes is empty and this
  // attribute is set to true, input tensor will not be reduced". Reducing all axes with keepdims
  // gives [1, 1, 1], which the oracle leaves unknown (as for absent axes); the empty list does
  // not leave the shape as it is.
  for (const char* op : kReduces) {
    INFO(op);
    auto reduce = [&](bool empty_list, std::optional<int64_t> noop) {
      OneOp t(op, {2, 3, 5});
      if (empty_list) t.node->add_input(t.n.ints({}));
      if (noop) attr_int(t.node, "noop_with_empty_axes", *noop);
      return t.dims();
    };
    CHECK(reduce(true, std::nullopt) == "unknown");
    CHECK(reduce(true, 0) == "unknown");
    CHECK(reduce(true, 1) == "[2, 3, 5]");
    CHECK(reduce(false, 1) == "[2, 3, 5]");  // absent axes are empty
  }
}

TEST_CASE("shapes: Identity, Cast, Floor, Ceil and Round pass integer values through", "[shapes]") {
  for (const char* op : kValuePass) {
    INFO(op);
    GraphBuilder n;
    n.op(op, {n.ints({2, -3, kMin, kMax})}, "y");
    CHECK(oracle(n)->value("y") == "[2, -3, -9223372036854775808, 9223372036854775807]");
  }
  GraphBuilder n;  // an op without a value evaluator gives none
  n.op("Relu", {n.ints({2})}, "y");
  CHECK(oracle(n)->value("y") == "none");
}

TEST_CASE("shapes: Cast's values are what the target type holds", "[shapes]") {
  // Cast: "converting an integer 36 to Boolean may produce 1", and a value outside a narrower
  // type's range changes ("precision loss and value change caused by range difference"). Values
  // the target type holds exactly pass; the others are unknown, as is a cast to string.
  auto cast = [](std::vector<int64_t> v, int32_t to) {
    GraphBuilder n;
    attr_int(n.op("Cast", {n.ints(std::move(v))}, "y"), "to", to);
    return oracle(n)->value("y");
  };
  using T = onnx::TensorProto;
  CHECK(cast({2, -3, kMin, kMax}, T::INT64) == "[2, -3, -9223372036854775808, 9223372036854775807]");
  CHECK(cast({36, 0, -1}, T::BOOL) == "[1, 0, 1]");
  CHECK(cast({2147483647, -2147483648, 2147483648}, T::INT32) == "[2147483647, -2147483648, ?]");
  CHECK(cast({127, 128, -128, -129}, T::INT8) == "[127, ?, -128, ?]");
  CHECK(cast({255, 256, -1}, T::UINT8) == "[255, ?, ?]");
  CHECK(cast({65535, 65536}, T::UINT16) == "[65535, ?]");
  CHECK(cast({4294967295, -1}, T::UINT32) == "[4294967295, ?]");
  CHECK(cast({kMax, -1}, T::UINT64) == "[9223372036854775807, ?]");
  CHECK(cast({16777216, 16777217, -16777216}, T::FLOAT) == "[16777216, ?, -16777216]");  // 2^24 + 1 has no float
  CHECK(cast({9007199254740992, 9007199254740993}, T::DOUBLE) == "[9007199254740992, ?]");  // 2^53 + 1
  CHECK(cast({2048, 2049}, T::FLOAT16) == "[2048, ?]");  // 11 significant bits
  CHECK(cast({256, 257}, T::BFLOAT16) == "[256, ?]");    // 8 significant bits
  CHECK(cast({1}, T::STRING) == "none");
  CHECK(cast({1}, 999) == "none");  // no such type
}

TEST_CASE("shapes: Div of negative integers truncates toward zero (ONNX Div)", "[shapes]") {
  // ONNX integer Div rounds toward zero: the onnx reference implementation (reference/ops/
  // op_div.py, "Truncate toward zero for integer division (C++-style)") and onnxruntime agree.
  // -7 / 2 = -3.5 -> -3; 7 / -2 -> -3; -7 / -2 = 3.5 -> 3; -1 / 2 = -0.5 -> 0.
  GraphBuilder n;
  n.op("Div", {n.ints({-7, 7, -7, -1, 7}), n.ints({2, -2, -2, 2, 2})}, "q");
  // A value computed before the division: (0 - 50) / 4 = -12.5 -> -12 (floor would give -13).
  n.op("Sub", {n.ints({0}), n.ints({50})}, "minus50");
  n.op("Div", {"minus50", n.ints({4})}, "t");
  auto o = oracle(n);
  CHECK(o->value("q") == "[-3, -3, 3, 0, 3]");
  CHECK(o->value("t") == "[-12]");
}

TEST_CASE("shapes: Add, Sub, Mul and Div of integer values, checked", "[shapes]") {
  GraphBuilder n;
  auto binary = [&](const char* op, std::vector<int64_t> a, std::vector<int64_t> b) {
    std::string out = std::string(op) + std::to_string(n.g->node_size());
    n.op(op, {n.ints(std::move(a)), n.ints(std::move(b))}, out);
    return out;
  };
  std::string add = binary("Add", {1, 2, 3}, {10}), add_over = binary("Add", {kMax, kMin}, {1, -1});
  std::string sub = binary("Sub", {10, 0}, {3, kMax}), sub_over = binary("Sub", {kMin, 0}, {1, kMin});
  std::string mul = binary("Mul", {64}, {2, 3}), mul_over = binary("Mul", {kMax, kMin, 3037000500}, {2, -1, 3037000500});
  // Div of non-negative integers: 48 / 4 = 12, 50 / 4 = 12.5 -> 12, 0 / 7 = 0.
  std::string div = binary("Div", {48, 50, 0}, {4, 4, 7});
  std::string div_bad = binary("Div", {5, kMin, 0}, {0, -1, 0});
  std::string mismatched = binary("Add", {1, 2}, {1, 2, 3});
  auto o = oracle(n);
  CHECK(o->value(add) == "[11, 12, 13]");  // the length-1 side broadcasts
  CHECK(o->value(add_over) == "[?, ?]");    // 2^63; -2^63 - 1
  CHECK(o->value(sub) == "[7, -9223372036854775807]");
  CHECK(o->value(sub_over) == "[?, ?]");    // -2^63 - 1; 0 - (-2^63) = 2^63
  CHECK(o->value(mul) == "[128, 192]");
  CHECK(o->value(mul_over) == "[?, ?, ?]"); // 2^64 - 2; 2^63; 9,223,372,037,000,250,000
  CHECK(o->value(div) == "[12, 12, 0]");
  CHECK(o->value(div_bad) == "[?, ?, ?]");  // zero divisors; -2^63 / -1 = 2^63
  CHECK(o->value(mismatched) == "none");    // lengths 2 and 3 do not broadcast
}

TEST_CASE("shapes: a weight's integer and whole float values, and the evaluation limits", "[shapes]") {
  GraphBuilder n;
  onnx::TensorProto f;
  f.set_name("whole");
  f.set_data_type(testutil::kFloat);
  f.add_dims(2);
  f.add_float_data(4.0f);
  f.add_float_data(16.0f);
  *n.g->add_initializer() = f;
  onnx::TensorProto half = f;
  half.set_name("half");
  half.set_float_data(1, 1.5f);
  *n.g->add_initializer() = half;
  *n.g->add_initializer() = testutil::ints("long64", std::vector<int64_t>(64, 7));
  *n.g->add_initializer() = testutil::ints("long65", std::vector<int64_t>(65, 7));
  // A chain of 60 Identity nodes: evaluation stops past 48 levels rather than recurse without bound.
  std::string v = n.ints({9});
  for (int i = 0; i < 60; ++i) {
    n.op("Identity", {v}, "id" + std::to_string(i));
    v = "id" + std::to_string(i);
  }
  auto o = oracle(n);
  CHECK(o->value("whole") == "[4, 16]");  // float constants used as shapes hold whole numbers
  CHECK(o->value("half") == "none");      // 1.5 is not one
  CHECK(o->value("long64").size() == 2 + 64 * 3 - 2);  // "[7, 7, ..., 7]": a shape may be 64 long
  CHECK(o->value("long65") == "none");                 // one more is not a shape
  CHECK(o->value("id10") == "[9]");
  CHECK(o->value("id59") == "none");
}

TEST_CASE("shapes: every row of the op table has a test here", "[shapes]") {
  std::map<std::string, std::pair<bool, bool>> tested;  // op -> (its dims tested, its values tested)
  for (const auto* ops : {&kSameShape, &kBroadcast, &kMatMuls, &kReduces}) {
    for (const char* op : *ops) tested[op].first = true;
  }
  for (const char* op : {"MatMulNBits", "Gemm", "Transpose", "Reshape", "Unsqueeze", "Squeeze", "Concat", "Split",
                         "Slice", "Gather", "Expand", "Tile", "Shape", "Flatten", "QLinearMatMul"}) {
    tested[op].first = true;
  }
  for (const char* op : kValuePass) tested[op].second = true;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Unsqueeze", "Squeeze", "Concat", "Slice", "Gather", "Shape"}) {
    tested[op].second = true;
  }
  auto rows = detail::op_rows();
  for (const auto& row : rows) {
    INFO(row.op);
    auto it = tested.find(std::string(row.op));
    REQUIRE(it != tested.end());
    CHECK(it->second.first == row.dims);
    CHECK(it->second.second == row.value);
  }
  CHECK(rows.size() == tested.size());
}
