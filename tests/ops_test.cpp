// ops_test.cpp: the op table's traits (src/ops.cpp), checked against the ONNX operator spec
// (https://onnx.ai/onnx/operators/) and the com.microsoft contrib ops, and the audit's one shape
// oracle (SharedShapes, src/shapes.h).
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "headcount/attention.h"
#include "shapes.h"
#include "headcount/audit.h"
#include "headcount/experts.h"
#include "headcount/load.h"
#include "onnx/onnx_pb.h"
#include "ops.h"

using namespace headcount;

TEST_CASE("ops: layout ops keep every element, in another shape or order", "[ops]") {
  // Flatten, Reshape, Squeeze, Unsqueeze: "the same data" in a new shape; Transpose permutes axes;
  // Identity copies. Expand and Tile repeat elements; Slice and Gather select some.
  for (const char* op : {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Identity"}) {
    INFO(op);
    CHECK(op_has(op, Trait::LayoutOnly));
  }
  for (const char* op : {"Expand", "Tile", "Slice", "Gather", "Concat", "Cast", "Dropout"}) {
    INFO(op);
    CHECK_FALSE(op_has(op, Trait::LayoutOnly));
  }
  CHECK(op_has("Expand", Trait::Repeats));
  CHECK(op_has("GatherElements", Trait::Selects));
  // Dropout is the identity at inference (training_mode defaults to false), as Identity is.
  CHECK(op_has("Dropout", Trait::NoOp));
  CHECK(op_has("Identity", Trait::NoOp));
  CHECK(op_has("CastLike", Trait::Cast));
  CHECK(op_has("DequantizeLinear", Trait::Dequantize));
  CHECK_FALSE(op_has("DequantizeLinear", Trait::Cast));
}

TEST_CASE("ops: element-wise ops, activations and norms", "[ops]") {
  // Softmax normalizes along an axis: not element-wise, and no activation of the table.
  CHECK(op_traits("Softmax") == static_cast<uint64_t>(Trait::Softmax));
  CHECK(op_has("LogSoftmax", Trait::Softmax));
  CHECK_FALSE(op_has("Sigmoid", Trait::Softmax));
  CHECK(op_has("Sigmoid", Trait::Activation));
  CHECK(op_has("Pow", Trait::Arithmetic));
  CHECK_FALSE(op_has("Where", Trait::Arithmetic));
  CHECK(op_has("GreaterOrEqual", Trait::Comparison));
  CHECK(op_has("Not", Trait::Logical));
  CHECK(op_has("Reciprocal", Trait::UnaryMath));
  // A norm over each token's features, and the ones that add a residual first.
  CHECK(op_has("RMSNormalization", Trait::TokenNorm));
  CHECK(op_has("SkipSimplifiedLayerNormalization", Trait::AddsSkip));
  CHECK_FALSE(op_has("LayerNormalization", Trait::AddsSkip));
  CHECK(op_has("GroupNormalization", Trait::Normalization));
  CHECK_FALSE(op_has("GroupNormalization", Trait::TokenNorm));
}

TEST_CASE("ops: matrix products", "[ops]") {
  // Gemm is alpha·A·B + beta·C; the quantized and fused forms multiply by a matrix too.
  for (const char* op : {"MatMul", "Gemm", "FusedMatMul", "MatMulNBits", "MatMulInteger", "QLinearMatMul",
                         "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}) {
    INFO(op);
    CHECK(op_has(op, Trait::MatrixProduct));
  }
  // Einsum is a product only for some equations: the walks decide with parse_einsum.
  CHECK_FALSE(op_has("Einsum", Trait::MatrixProduct));
  CHECK_FALSE(op_has("Conv", Trait::MatrixProduct));
}

TEST_CASE("ops: the narrow kinds the walks ask for", "[ops]") {
  // Add and Sub shift by their operand; Mul and Div scale by it (the spec's element-wise binary
  // ops); Pow, Max, Min and Mod are arithmetic and neither.
  auto with = [](Trait t) {
    std::set<std::string> out;
    for (const auto& r : op_trait_rows()) {
      if (has(r.traits, t)) out.insert(std::string(r.op));
    }
    return out;
  };
  using S = std::set<std::string>;
  CHECK(with(Trait::Shifts) == S{"Add", "Sub"});
  CHECK(with(Trait::Scales) == S{"Mul", "Div"});
  // Sqrt, Reciprocal and the converters' Rsqrt: the denominator of x / sqrt(mean(x²) + eps).
  CHECK(with(Trait::InverseOrRoot) == S{"Sqrt", "Reciprocal", "Rsqrt"});
  // MatMul and Gemm take a float B; FusedMatMul (com.microsoft) is MatMul with transposes and alpha.
  CHECK(with(Trait::PlainProduct) == S{"MatMul", "Gemm"});
  CHECK(with(Trait::BatchedProduct) == S{"MatMul", "FusedMatMul"});
  // Slice takes [starts, ends) along axes; Split cuts input 0 into parts along one axis.
  CHECK(with(Trait::Cuts) == S{"Slice", "Split"});
  // Input 0 is data; Reshape's shape, Expand's shape, Tile's repeats, Slice's bounds, Split's
  // sizes, (Un)Squeeze's axes, Gather's indices and Pad's pads are not.
  CHECK(with(Trait::ShapeOperands) ==
        S{"Reshape", "Expand", "Tile", "Slice", "Split", "Squeeze", "Unsqueeze", "Gather", "Pad"});
  // Where's output elements are input 1's or 2's; Concat's are its inputs' side by side.
  CHECK(with(Trait::Merges) == S{"Where", "Concat"});
  // -x and |x| keep the magnitude; Clip(x, lo, hi), Max(x, lo) and Min(x, hi) bound it.
  CHECK(with(Trait::SignChange) == S{"Neg", "Abs"});
  CHECK(with(Trait::Clamp) == S{"Clip", "Max", "Min"});
  // LayerNorm written out: mean = ReduceMean(x); d = Sub(x, mean); var = ReduceMean(Pow(d, 2));
  // Div(d, Sqrt(Add(var, eps))), Mul by γ, Add β; RMSNorm: Mul(x, Reciprocal(Sqrt(...))); a Cast
  // to float32 around it.
  CHECK(with(Trait::NormStep) == S{"ReduceMean", "Sub", "Pow", "Div", "Sqrt", "Add", "Mul", "Reciprocal", "Cast"});
  CHECK(with(Trait::Algebraic) == S{"Add", "Sub", "Mul", "Div", "Pow"});
  // FastGelu(X, bias) and BiasGelu(A, B) add their input 1 before the GELU (com.microsoft).
  CHECK(with(Trait::BiasActivation) == S{"FastGelu", "BiasGelu"});
  CHECK(with(Trait::Affine) == S{"Mul", "Add"});
  // A norm's statistic: the mean, the L2 norm sqrt(sum(x²)) and the sum of squares sum(x²) (the
  // spec's ReduceMean, ReduceL2, ReduceSumSquare); ReduceSum, ReduceMax and ReduceMin are none.
  CHECK(with(Trait::NormReduce) == S{"ReduceMean", "ReduceL2", "ReduceSumSquare"});
  // Loop runs its body M times (or while cond), Scan once per slice along the scan axis; If runs
  // one branch once.
  CHECK(with(Trait::Iterates) == S{"Loop", "Scan"});
  CHECK_FALSE(op_has("If", Trait::Iterates));
  // CumSum: y[i] = x[0] + ... + x[i] along axis; Conv: each output a weighted sum of a kernel's
  // span of positions.
  CHECK(with(Trait::WindowSum) == S{"CumSum", "Conv"});
  // Shape's output is input 0's dims; Size's the product of them: neither reads an element.
  CHECK(with(Trait::ReadsDims) == S{"Shape", "Size"});
  // com.microsoft MoE(input, router_probs, fc1_experts_weights, ...) and QMoE (its quantized form)
  // route and run the experts in one op.
  CHECK(with(Trait::FusedExperts) == S{"MoE", "QMoE"});
  // MatMulNBits' B is uint8 [N, k_blocks, blob_size] holding `bits`-bit weights, K and N in its
  // attributes; QMoE's expert weights are uint8 holding weights of expert_weight_bits bits.
  CHECK(with(Trait::PackedWeights) == S{"MatMulNBits", "QMoE"});
}

TEST_CASE("ops: each row's shape rule, by the same lookup as its traits", "[ops][shapes]") {
  // The spec's output shapes: MatMul numpy.matmul; QLinearMatMul the same of inputs 0 and 3;
  // Flatten 2-D; Add broadcasts (and adds shape values); Identity passes values.
  CHECK(op_shape_rule("MatMul") == ShapeRule::MatMul);
  CHECK(op_shape_rule("QLinearMatMul") == ShapeRule::QLinearMatMul);
  CHECK(op_shape_rule("Flatten") == ShapeRule::Flatten);
  CHECK(op_shape_rule("Add") == ShapeRule::BroadcastAdd);
  CHECK(op_shape_rule("Where") == ShapeRule::Broadcast);
  CHECK(op_shape_rule("Identity") == ShapeRule::SameValues);
  CHECK(op_shape_rule("Relu") == ShapeRule::SameShape);
  CHECK(op_shape_rule("Concat") == ShapeRule::Concat);
  CHECK(op_shape_rule("Shape") == ShapeRule::Shape);
  CHECK(op_traits("ReduceSum") == 0);  // a row for its shape rule alone
  CHECK(op_shape_rule("ScatterND") == ShapeRule::None);
  // Where each product's B (weight) and bias are: MatMul(A, B); Gemm(A, B, C) with transA and
  // transB; FusedMatMul(A, B) with transB; QLinearMatMul(a, a_scale, a_zp, b, ...): b is input 3;
  // DynamicQuantizeMatMul(A, B, b_scale, b_zp, bias): 4; MatMulNBits(A, B, scales, zero_points,
  // g_idx, bias): 5. MatMulIntegerToFloat keeps the 5 the walk has always read, though the
  // contrib spec lists (A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias), which puts its
  // bias at 6: a change of behaviour left for its own fix and test.
  auto product = [](const char* op) {
    ProductOperands p = op_product(op);
    return std::to_string(p.weight) + " " + std::to_string(p.bias) + (p.trans_b ? " transB" : "") +
           (p.trans_a ? " transA" : "");
  };
  CHECK(product("MatMul") == "1 -1");
  CHECK(product("Gemm") == "1 2 transB transA");
  CHECK(product("FusedMatMul") == "1 -1 transB");
  CHECK(product("QLinearMatMul") == "3 -1");
  CHECK(product("MatMulInteger") == "1 -1");
  CHECK(product("DynamicQuantizeMatMul") == "1 4");
  CHECK(product("MatMulIntegerToFloat") == "1 5");
  CHECK(product("MatMulNBits") == "1 5");
  CHECK(product("Einsum") == "-1 -1");  // a row without traits: parse_einsum decides
  CHECK(product("Add") == "-1 -1");
  for (const auto& r : op_trait_rows()) {  // every matrix product says where its weight is
    INFO(std::string(r.op));
    CHECK(has(r.traits, Trait::MatrixProduct) == (op_product(r.op).weight >= 0));
  }
  CHECK(op_shape_rule("NoSuchOp") == ShapeRule::None);
  CHECK(op_shape_rule("") == ShapeRule::None);
}

TEST_CASE("ops: an op the table does not know has no traits, and every row names one op once", "[ops]") {
  // Every row gives its op a trait or a shape rule, but for the ops the code names one at a time
  // (each in a role of its own), which have rows so that tests/house/op_lists.py knows their names:
  // Einsum, the weight Constant, the mask walk's ConstantOfShape, Range and Trilu, the router's
  // TopK and the attention ops fused into one, whose slots src/attention/fused.cpp gives.
  CHECK(op_traits("NoSuchOp") == 0);
  CHECK(op_traits("") == 0);
  CHECK(op_traits("matmul") == 0);  // op types are case-sensitive
  std::set<std::string> seen, neither;
  for (const auto& r : op_trait_rows()) {
    INFO(std::string(r.op));
    CHECK(seen.insert(std::string(r.op)).second);
    if (r.traits == 0 && r.shape == ShapeRule::None) neither.insert(std::string(r.op));
  }
  CHECK(neither == std::set<std::string>{"Einsum", "Constant", "ConstantOfShape", "Range", "Trilu", "TopK", "Attention",
                                         "PackedAttention", "QAttention", "LongformerAttention", "MultiHeadAttention",
                                         "PackedMultiHeadAttention", "DecoderMaskedMultiHeadAttention",
                                         "GroupQueryAttention", "SparseAttention", "PagedAttention"});
  CHECK(seen.size() > 60);
  // Every row is found by its name, wherever probing placed it, and a name that differs from a
  // row's in one byte, wherever it is (the lookup compares words of 8 or 4 bytes), is none.
  size_t near_misses = 0;
  for (const auto& r : op_trait_rows()) {
    INFO(std::string(r.op));
    CHECK(op_slot(r.op).size == r.op.size());
    CHECK(op_traits(r.op) == r.traits);
    for (size_t k = 0; k < r.op.size(); ++k) {
      std::string other(r.op);
      other[k] = '\x01';
      INFO(k);
      CHECK(op_slot(other).size == 0);
      ++near_misses;
    }
    CHECK(op_slot(std::string(r.op) + "s").size == 0);
  }
  CHECK(near_misses > 1000);
}

TEST_CASE("ops: float types are the four a graph computes in", "[ops]") {
  using T = onnx::TensorProto;
  for (int t : {int{T::FLOAT}, int{T::FLOAT16}, int{T::BFLOAT16}, int{T::DOUBLE}}) CHECK(is_float_dtype(t));
  for (int t : {int{T::INT8}, int{T::UINT8}, int{T::INT64}, int{T::BOOL}, int{T::UNDEFINED}, 17, 23, -1, 1000}) {
    INFO(t);
    CHECK_FALSE(is_float_dtype(t));
  }
}

TEST_CASE("ops: an audit builds one shape oracle, shared by attention, experts and mixers", "[ops][shapes]") {
  // moe_dense reads a TopK's k (the expert stage), hybrid_linear a CumSum's axis (the mixers):
  // each stage used to build an oracle of its own.
  for (const char* name : {"moe_dense", "hybrid_linear", "encoder"}) {
    INFO(name);
    uint64_t before = detail::ShapeOracle::built_on_this_thread();
    Audit a = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name + ".onnx");
    CHECK(detail::ShapeOracle::built_on_this_thread() - before == 1);
    CHECK(!a.attention.blocks.empty());
  }
  // The stages on their own (the public match_* calls) each build one: the expert stage reads one.
  {
    Model m = load_model(std::string(HEADCOUNT_SAMPLES_DIR) + "/moe_dense.onnx");
    uint64_t before = detail::ShapeOracle::built_on_this_thread();
    AttentionResult attention = match_attention(m);
    match_experts(m, attention);
    CHECK(detail::ShapeOracle::built_on_this_thread() - before == 2);
  }
  Audit moe = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/moe_dense.onnx");
  REQUIRE(!moe.experts.layers.empty());
  CHECK(moe.experts.layers[0].top_k.has_value());  // the k the shared oracle evaluated
  Audit hybrid = audit_file(std::string(HEADCOUNT_SAMPLES_DIR) + "/hybrid_linear.onnx");
  CHECK(!hybrid.mixers.mixers.empty());
}
