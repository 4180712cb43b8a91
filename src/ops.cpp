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
    {"MatMulNBits", Trait::MatrixProduct | Trait::PackedWeights, ShapeRule::MatMulNBits, {1, 5}},
    {"MatMulInteger", Trait::MatrixProduct, ShapeRule::MatMul, {1, -1}},
    {"QLinearMatMul", Trait::MatrixProduct, ShapeRule::QLinearMatMul, {3, -1}},
    {"DynamicQuantizeMatMul", Trait::MatrixProduct, ShapeRule::MatMul, {1, 4}},
    {"MatMulIntegerToFloat", Trait::MatrixProduct, ShapeRule::MatMul, {1, 5}},
    {"Softmax", Trait::Softmax, ShapeRule::SameShape},
    {"LogSoftmax", Trait::Softmax, ShapeRule::SameShape},
    // No rule: writes into a cache or buffer, which no stage reads dims of.
    {"Scatter", Trait::Scatter, ShapeRule::None},
    // No rule: writes into a cache or buffer, which no stage reads dims of.
    {"ScatterElements", Trait::Scatter, ShapeRule::None},
    // No rule: writes into a cache or buffer, which no stage reads dims of.
    {"ScatterND", Trait::Scatter, ShapeRule::None},
    // Rows for their trait or their shape rule alone: no trait of the ones above fits them.
    {"Rsqrt", Trait::InverseOrRoot, ShapeRule::None},  // no rule: written by converters, not ai.onnx; left as it was
    // No rule: pads images and caches, not on a path whose dims are read.
    {"Pad", Trait::ShapeOperands, ShapeRule::None},
    {"Split", Trait::Cuts | Trait::ShapeOperands, ShapeRule::Split},
    {"Concat", Trait::Merges, ShapeRule::Concat},
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
    // The kinds of the traits ops.h lists after Affine, in its order.
    {"ReduceMean", Trait::NormStep | Trait::NormReduce, ShapeRule::Reduce},
    // No rule: the oracle never knew its output. The Reduce rule would fit it, a change of
    // behaviour left for its own test.
    {"ReduceL2", Trait::NormReduce, ShapeRule::None},
    // No rule: as ReduceL2.
    {"ReduceSumSquare", Trait::NormReduce, ShapeRule::None},
    // No rule: its outputs come from its body, a subgraph the oracle does not evaluate.
    {"Loop", Trait::Iterates, ShapeRule::None},
    // No rule: as Loop.
    {"Scan", Trait::Iterates, ShapeRule::None},
    // No rule: the oracle never knew its output (the spec keeps input 0's shape; a rule is a change
    // of behaviour left for its own test). The mixers read its axis, input 1, by the oracle's values.
    {"CumSum", Trait::WindowSum, ShapeRule::None},
    // No rule: the mixers read its weight's dims (depthwise_conv1d), not its output's.
    {"Conv", Trait::WindowSum, ShapeRule::None},
    {"Shape", Trait::ReadsDims, ShapeRule::Shape},
    // No rule: a count of elements, which no stage reads as a shape.
    {"Size", Trait::ReadsDims, ShapeRule::None},
    // No rule: the expert stage reads its weights' dims (experts.cpp), not its outputs'.
    {"MoE", Trait::FusedExperts, ShapeRule::None},
    // No rule: as MoE.
    {"QMoE", Trait::FusedExperts | Trait::PackedWeights, ShapeRule::None},
    // Rows without a trait or a rule, so that tests/house/op_lists.py knows their names: ops the code
    // names one at a time, each in a role of its own (tests/ops_test.cpp lists them).
    // parse_einsum (src/shapes.cpp) reads its equation: a product for some equations only. No rule:
    // the walks read its operands' dims.
    {"Einsum", Trait::None, ShapeRule::None},
    // A weight: load.cpp reads its value attribute, and the oracle answers its dims as a weight's.
    {"Constant", Trait::None, ShapeRule::None},
    // Read by the mask walk (src/attention/windows.cpp), which evaluates its dims and values itself.
    {"ConstantOfShape", Trait::None, ShapeRule::None},
    // As ConstantOfShape.
    {"Range", Trait::None, ShapeRule::None},
    // As ConstantOfShape; buffers.cpp also reads it: a filled constant that only Trilu cuts is a
    // mask built in forward (trilu_fill).
    {"Trilu", Trait::None, ShapeRule::None},
    // A router's choice of experts (src/experts.cpp). No rule: the stage reads its k, input 1, by
    // the oracle's values, not its outputs' dims.
    {"TopK", Trait::None, ShapeRule::None},
    // The attention ops fused into one (com.microsoft; Attention also ai.onnx's since opset 23):
    // kFusedOps (src/attention/fused.cpp) gives each one's slots. No rule: the attention stage
    // reads their weights' dims and heads attributes, not their outputs'.
    {"Attention", Trait::None, ShapeRule::None},
    {"PackedAttention", Trait::None, ShapeRule::None},
    {"QAttention", Trait::None, ShapeRule::None},
    {"LongformerAttention", Trait::None, ShapeRule::None},
    {"MultiHeadAttention", Trait::None, ShapeRule::None},
    {"PackedMultiHeadAttention", Trait::None, ShapeRule::None},
    {"DecoderMaskedMultiHeadAttention", Trait::None, ShapeRule::None},
    {"GroupQueryAttention", Trait::None, ShapeRule::None},
    {"SparseAttention", Trait::None, ShapeRule::None},
    {"PagedAttention", Trait::None, ShapeRule::None},
};

// The rows by op type in an open-addressing table, made at compile time (ops_detail::slot).
// Each op type is in kRows once (tests/ops_test.cpp checks).
constexpr std::array<ops_detail::Slot, ops_detail::kSlots> place_rows() {
  std::array<ops_detail::Slot, ops_detail::kSlots> t{};
  for (const Row& r : kRows) {
    size_t i = ops_detail::slot(r.op);
    while (t[i].size != 0) i = (i + 1) & ops_detail::kMask;
    t[i] = {r.op.data(), static_cast<uint64_t>(r.traits), static_cast<uint16_t>(r.op.size()), r.shape,
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

// How many slots past its own a row lies, at most (4 for the 130 rows): a lookup probes that many
// more at worst. A new row that makes it more asks for more slots (ops.h).
constexpr size_t kMostProbes = 4;
constexpr bool rows_near_their_slots() {
  for (const Row& r : kRows) {
    size_t i = ops_detail::slot(r.op), probes = 0;
    while (std::string_view(ops_detail::kSlotTable[i].name, ops_detail::kSlotTable[i].size) != r.op) {
      i = (i + 1) & ops_detail::kMask;
      if (++probes > kMostProbes) return false;
    }
  }
  return true;
}
static_assert(rows_near_their_slots(), "a row lies at most kMostProbes slots past its own");

std::vector<OpTraitsRow> op_trait_rows() {
  std::vector<OpTraitsRow> out;
  for (const Row& r : kRows) out.push_back({r.op, static_cast<uint64_t>(r.traits), r.shape});
  return out;
}

bool is_float_dtype(int32_t dtype) {
  using T = onnx::TensorProto;
  return dtype == T::FLOAT || dtype == T::FLOAT16 || dtype == T::BFLOAT16 || dtype == T::DOUBLE;
}

}  // namespace headcount
