// ops.cpp: the op table's traits (see ops.h).
#include "ops.h"

#include <onnx/onnx_pb.h>

#include <array>

namespace headcount {
namespace {

// A row of the table as written: an op type, its traits and its shape rule.
struct Row {
  std::string_view op;
  Trait traits;
  ShapeRule shape;
  ProductOperands product = {};  // for the matrix products
};

// One row per op type; a new op is one row here: its traits and its shape rule (ops.h). In the
// order ops.h lists the traits. A row without a shape rule says why it needs none: the oracle
// then knows nothing of the op's outputs, which every stage reads as unknown.
constexpr Row kRows[] = {
    {"Reshape", Trait::LayoutOnly | Trait::ShapeOperands, ShapeRule::Reshape},
    {"Flatten", Trait::LayoutOnly, ShapeRule::Flatten},
    {"Squeeze", Trait::LayoutOnly | Trait::ShapeOperands, ShapeRule::Squeeze},
    {"Unsqueeze", Trait::LayoutOnly | Trait::ShapeOperands, ShapeRule::Unsqueeze},
    {"Transpose", Trait::LayoutOnly, ShapeRule::Transpose},
    {"Identity", Trait::LayoutOnly | Trait::NoOp, ShapeRule::SameValues},
    {"Dropout", Trait::NoOp, ShapeRule::SameShape},
    {"Expand", Trait::Repeats | Trait::ShapeOperands, ShapeRule::Expand},
    {"Tile", Trait::Repeats | Trait::ShapeOperands, ShapeRule::Tile},
    {"Slice", Trait::Selects | Trait::Cuts | Trait::ShapeOperands, ShapeRule::Slice},
    {"Gather", Trait::Selects | Trait::ShapeOperands, ShapeRule::Gather},
    // No rule: its output has its indices' shape, on no path whose dims a stage reads.
    {"GatherElements", Trait::Selects, ShapeRule::None},
    // No rule: its output's rank comes from its indices' values, on no path a stage reads.
    {"GatherND", Trait::Selects, ShapeRule::None},
    {"Cast", Trait::Cast | Trait::NormStep, ShapeRule::Cast},
    {"CastLike", Trait::Cast, ShapeRule::SameShape},
    {"QuantizeLinear", Trait::Quantize, ShapeRule::SameShape},
    // No rule: its y feeds a product whose own rule reads the float input.
    {"DynamicQuantizeLinear", Trait::Quantize, ShapeRule::None},
    {"DequantizeLinear", Trait::Dequantize, ShapeRule::SameShape},
    {"Add", Trait::Arithmetic | Trait::Shifts | Trait::NormStep | Trait::Algebraic | Trait::Affine, ShapeRule::BroadcastAdd},
    {"Sub", Trait::Arithmetic | Trait::Shifts | Trait::NormStep | Trait::Algebraic, ShapeRule::BroadcastSub},
    {"Mul", Trait::Arithmetic | Trait::Scales | Trait::NormStep | Trait::Algebraic | Trait::Affine, ShapeRule::BroadcastMul},
    {"Div", Trait::Arithmetic | Trait::Scales | Trait::NormStep | Trait::Algebraic, ShapeRule::BroadcastDiv},
    {"Pow", Trait::Arithmetic | Trait::NormStep | Trait::Algebraic, ShapeRule::Broadcast},
    {"Max", Trait::Arithmetic | Trait::Clamp, ShapeRule::Broadcast},
    {"Min", Trait::Arithmetic | Trait::Clamp, ShapeRule::Broadcast},
    {"Mod", Trait::Arithmetic, ShapeRule::Broadcast},
    {"Equal", Trait::Comparison, ShapeRule::Broadcast},
    {"Less", Trait::Comparison, ShapeRule::Broadcast},
    {"LessOrEqual", Trait::Comparison, ShapeRule::Broadcast},
    {"Greater", Trait::Comparison, ShapeRule::Broadcast},
    {"GreaterOrEqual", Trait::Comparison, ShapeRule::Broadcast},
    {"And", Trait::Logical, ShapeRule::Broadcast},
    {"Or", Trait::Logical, ShapeRule::Broadcast},
    {"Xor", Trait::Logical, ShapeRule::Broadcast},
    {"Not", Trait::Logical, ShapeRule::SameShape},
    {"Neg", Trait::UnaryMath | Trait::SignChange, ShapeRule::SameShape},
    {"Abs", Trait::UnaryMath | Trait::SignChange, ShapeRule::SameShape},
    {"Sqrt", Trait::UnaryMath | Trait::InverseOrRoot | Trait::NormStep, ShapeRule::SameShape},
    {"Reciprocal", Trait::UnaryMath | Trait::InverseOrRoot | Trait::NormStep, ShapeRule::SameShape},
    {"Exp", Trait::UnaryMath, ShapeRule::SameShape},
    {"Log", Trait::UnaryMath, ShapeRule::SameShape},
    {"Floor", Trait::UnaryMath, ShapeRule::SameValues},
    {"Ceil", Trait::UnaryMath, ShapeRule::SameValues},
    {"Round", Trait::UnaryMath, ShapeRule::SameValues},
    {"Sign", Trait::UnaryMath, ShapeRule::SameShape},
    {"Sin", Trait::UnaryMath, ShapeRule::SameShape},
    {"Cos", Trait::UnaryMath, ShapeRule::SameShape},
    {"Clip", Trait::UnaryMath | Trait::Clamp, ShapeRule::SameShape},
    {"Relu", Trait::Activation, ShapeRule::SameShape},
    {"Gelu", Trait::Activation, ShapeRule::SameShape},
    {"FastGelu", Trait::Activation | Trait::BiasActivation, ShapeRule::SameShape},
    {"BiasGelu", Trait::Activation | Trait::BiasActivation, ShapeRule::SameShape},
    {"QuickGelu", Trait::Activation, ShapeRule::SameShape},
    {"Erf", Trait::Activation, ShapeRule::SameShape},
    {"Tanh", Trait::Activation, ShapeRule::SameShape},
    {"Sigmoid", Trait::Activation, ShapeRule::SameShape},
    {"Silu", Trait::Activation, ShapeRule::SameShape},
    // No rule: not an ai.onnx or com.microsoft op the exporters write (they write Silu or x·Sigmoid).
    {"Swish", Trait::Activation, ShapeRule::None},
    {"Mish", Trait::Activation, ShapeRule::SameShape},
    {"Softplus", Trait::Activation, ShapeRule::SameShape},
    {"Elu", Trait::Activation, ShapeRule::SameShape},
    {"LeakyRelu", Trait::Activation, ShapeRule::SameShape},
    {"Selu", Trait::Activation, ShapeRule::SameShape},
    {"HardSigmoid", Trait::Activation, ShapeRule::SameShape},
    // No rule: in vision models' convolutions, not between a projection and a read shape.
    {"HardSwish", Trait::Activation, ShapeRule::None},
    {"LayerNormalization", Trait::Normalization | Trait::TokenNorm, ShapeRule::SameShape},
    {"SimplifiedLayerNormalization", Trait::Normalization | Trait::TokenNorm, ShapeRule::SameShape},
    {"RMSNormalization", Trait::Normalization | Trait::TokenNorm, ShapeRule::SameShape},
    {"SkipLayerNormalization", Trait::Normalization | Trait::TokenNorm | Trait::AddsSkip, ShapeRule::SameShape},
    {"SkipSimplifiedLayerNormalization", Trait::Normalization | Trait::TokenNorm | Trait::AddsSkip, ShapeRule::SameShape},
    // No rule: a convolution's norm, not on the paths whose dims the stages read.
    {"BatchNormalization", Trait::Normalization, ShapeRule::None},
    // No rule: a convolution's norm, not on the paths whose dims the stages read.
    {"GroupNormalization", Trait::Normalization, ShapeRule::None},
    // No rule: a convolution's norm, not on the paths whose dims the stages read.
    {"InstanceNormalization", Trait::Normalization, ShapeRule::None},
    // No rule: its outputs are the embeddings and a mask index, which the stages read by weight.
    {"EmbedLayerNormalization", Trait::Normalization, ShapeRule::None},
    {"MatMul", Trait::MatrixProduct | Trait::PlainProduct | Trait::BatchedProduct, ShapeRule::MatMul, {1, -1}},
    {"Gemm", Trait::MatrixProduct | Trait::PlainProduct, ShapeRule::Gemm, {1, 2, true, true}},
    {"FusedMatMul", Trait::MatrixProduct | Trait::BatchedProduct, ShapeRule::MatMul, {1, -1, true}},
    {"MatMulNBits", Trait::MatrixProduct, ShapeRule::MatMulNBits, {1, 5}},
    {"MatMulInteger", Trait::MatrixProduct, ShapeRule::MatMul, {1, -1}},
    {"QLinearMatMul", Trait::MatrixProduct, ShapeRule::QLinearMatMul, {3, -1}},
    {"DynamicQuantizeMatMul", Trait::MatrixProduct, ShapeRule::MatMul, {1, 4}},
    {"MatMulIntegerToFloat", Trait::MatrixProduct, ShapeRule::MatMul, {1, 5}},
    {"Softmax", Trait::Softmax, ShapeRule::SameShape},
    {"LogSoftmax", Trait::Softmax, ShapeRule::SameShape},
    // No rule: writes into a cache or buffer, which no stage reads dims of.
    {"Scatter", Trait::Scatter, ShapeRule::None},
    // No rule: writes into a cache or buffer, which no stage reads dims ofElements.
    {"ScatterElements", Trait::Scatter, ShapeRule::None},
    // No rule: writes into a cache or buffer, which no stage reads dims ofND.
    {"ScatterND", Trait::Scatter, ShapeRule::None},
    // Rows for their trait or their shape rule alone: no trait of the ones above fits them.
    {"Rsqrt", Trait::InverseOrRoot, ShapeRule::None},  // no rule: written by converters, not ai.onnx; left as it was
    // No rule: pads images and caches, not on a path whose dims are read.
    {"Pad", Trait::ShapeOperands, ShapeRule::None},
    {"Split", Trait::Cuts | Trait::ShapeOperands, ShapeRule::Split},
    {"Concat", Trait::Merges, ShapeRule::Concat},
    {"Shape", Trait::None, ShapeRule::Shape},
    {"ReduceMean", Trait::NormStep, ShapeRule::Reduce},
    {"ReduceSum", Trait::None, ShapeRule::Reduce},
    {"ReduceMax", Trait::None, ShapeRule::Reduce},
    {"ReduceMin", Trait::None, ShapeRule::Reduce},
    {"Where", Trait::Merges, ShapeRule::Broadcast},
    {"PRelu", Trait::None, ShapeRule::Broadcast},
    {"BitShift", Trait::None, ShapeRule::Broadcast},
    {"Sum", Trait::None, ShapeRule::Broadcast},
    {"Mean", Trait::None, ShapeRule::Broadcast},
    {"IsNaN", Trait::None, ShapeRule::SameShape},
    {"IsInf", Trait::None, ShapeRule::SameShape},
    {"BiasAdd", Trait::None, ShapeRule::SameShape},
    {"RotaryEmbedding", Trait::None, ShapeRule::SameShape},
};

// The rows by op type in an open-addressing table, made at compile time (ops_detail::slot).
// Each op type is in kRows once (tests/ops_test.cpp checks).
constexpr std::array<ops_detail::Slot, ops_detail::kSlots> place_rows() {
  std::array<ops_detail::Slot, ops_detail::kSlots> t{};
  for (const Row& r : kRows) {
    size_t i = ops_detail::slot(r.op);
    while (t[i].size != 0) i = (i + 1) & ops_detail::kMask;
    t[i] = {r.op.data(), static_cast<uint32_t>(r.traits), static_cast<uint16_t>(r.op.size()), r.shape,
            ops_detail::pack(r.product)};
  }
  return t;
}

}  // namespace

// Every row's product operands survive their packing into a slot's byte.
constexpr bool products_fit() {
  for (const Row& r : kRows) {
    ProductOperands p = ops_detail::unpack(ops_detail::pack(r.product));
    if (p.weight != r.product.weight || p.bias != r.product.bias || p.trans_b != r.product.trans_b ||
        p.trans_a != r.product.trans_a || r.product.weight < -1 || r.product.weight > 6 || r.product.bias < -1 ||
        r.product.bias > 6) {
      return false;
    }
  }
  return true;
}
static_assert(products_fit(), "a product's inputs are -1 to 6 (ops_detail::pack)");

namespace ops_detail {
constexpr std::array<Slot, kSlots> kSlotTable = place_rows();
}  // namespace ops_detail

std::vector<OpTraitsRow> op_trait_rows() {
  std::vector<OpTraitsRow> out;
  for (const Row& r : kRows) out.push_back({r.op, static_cast<uint32_t>(r.traits), r.shape});
  return out;
}

bool is_float_dtype(int32_t dtype) {
  using T = onnx::TensorProto;
  return dtype == T::FLOAT || dtype == T::FLOAT16 || dtype == T::BFLOAT16 || dtype == T::DOUBLE;
}

}  // namespace headcount
