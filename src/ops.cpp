// ops.cpp: the op table's traits (see ops.h).
#include "ops.h"

#include <onnx/onnx_pb.h>

#include <array>

namespace headcount {
namespace {

// A row of the table as written: an op type and its traits.
struct Row {
  std::string_view op;
  Trait traits;
};

// One row per op type; a new op is one row here. In the order ops.h lists the traits.
constexpr Row kRows[] = {
    {"Reshape", Trait::LayoutOnly},
    {"Flatten", Trait::LayoutOnly},
    {"Squeeze", Trait::LayoutOnly},
    {"Unsqueeze", Trait::LayoutOnly},
    {"Transpose", Trait::LayoutOnly},
    {"Identity", Trait::LayoutOnly | Trait::NoOp},
    {"Dropout", Trait::NoOp},
    {"Expand", Trait::Repeats},
    {"Tile", Trait::Repeats},
    {"Slice", Trait::Selects},
    {"Gather", Trait::Selects},
    {"GatherElements", Trait::Selects},
    {"GatherND", Trait::Selects},
    {"Cast", Trait::Cast},
    {"CastLike", Trait::Cast},
    {"QuantizeLinear", Trait::Quantize},
    {"DynamicQuantizeLinear", Trait::Quantize},
    {"DequantizeLinear", Trait::Dequantize},
    {"Add", Trait::Arithmetic},
    {"Sub", Trait::Arithmetic},
    {"Mul", Trait::Arithmetic},
    {"Div", Trait::Arithmetic},
    {"Pow", Trait::Arithmetic},
    {"Max", Trait::Arithmetic},
    {"Min", Trait::Arithmetic},
    {"Mod", Trait::Arithmetic},
    {"Equal", Trait::Comparison},
    {"Less", Trait::Comparison},
    {"LessOrEqual", Trait::Comparison},
    {"Greater", Trait::Comparison},
    {"GreaterOrEqual", Trait::Comparison},
    {"And", Trait::Logical},
    {"Or", Trait::Logical},
    {"Xor", Trait::Logical},
    {"Not", Trait::Logical},
    {"Neg", Trait::UnaryMath},
    {"Abs", Trait::UnaryMath},
    {"Sqrt", Trait::UnaryMath},
    {"Reciprocal", Trait::UnaryMath},
    {"Exp", Trait::UnaryMath},
    {"Log", Trait::UnaryMath},
    {"Floor", Trait::UnaryMath},
    {"Ceil", Trait::UnaryMath},
    {"Round", Trait::UnaryMath},
    {"Sign", Trait::UnaryMath},
    {"Sin", Trait::UnaryMath},
    {"Cos", Trait::UnaryMath},
    {"Clip", Trait::UnaryMath},
    {"Relu", Trait::Activation},
    {"Gelu", Trait::Activation},
    {"FastGelu", Trait::Activation},
    {"BiasGelu", Trait::Activation},
    {"QuickGelu", Trait::Activation},
    {"Erf", Trait::Activation},
    {"Tanh", Trait::Activation},
    {"Sigmoid", Trait::Activation},
    {"Silu", Trait::Activation},
    {"Swish", Trait::Activation},
    {"Mish", Trait::Activation},
    {"Softplus", Trait::Activation},
    {"Elu", Trait::Activation},
    {"LeakyRelu", Trait::Activation},
    {"Selu", Trait::Activation},
    {"HardSigmoid", Trait::Activation},
    {"HardSwish", Trait::Activation},
    {"LayerNormalization", Trait::Normalization | Trait::TokenNorm},
    {"SimplifiedLayerNormalization", Trait::Normalization | Trait::TokenNorm},
    {"RMSNormalization", Trait::Normalization | Trait::TokenNorm},
    {"SkipLayerNormalization", Trait::Normalization | Trait::TokenNorm | Trait::AddsSkip},
    {"SkipSimplifiedLayerNormalization", Trait::Normalization | Trait::TokenNorm | Trait::AddsSkip},
    {"BatchNormalization", Trait::Normalization},
    {"GroupNormalization", Trait::Normalization},
    {"InstanceNormalization", Trait::Normalization},
    {"EmbedLayerNormalization", Trait::Normalization},
    {"MatMul", Trait::MatrixProduct},
    {"Gemm", Trait::MatrixProduct},
    {"FusedMatMul", Trait::MatrixProduct},
    {"MatMulNBits", Trait::MatrixProduct},
    {"MatMulInteger", Trait::MatrixProduct},
    {"QLinearMatMul", Trait::MatrixProduct},
    {"DynamicQuantizeMatMul", Trait::MatrixProduct},
    {"MatMulIntegerToFloat", Trait::MatrixProduct},
    {"Softmax", Trait::Softmax},
    {"LogSoftmax", Trait::Softmax},
    {"Scatter", Trait::Scatter},
    {"ScatterElements", Trait::Scatter},
    {"ScatterND", Trait::Scatter},
};

// The rows by op type in an open-addressing table, made at compile time (ops_detail::slot).
// Each op type is in kRows once (tests/ops_test.cpp checks).
constexpr std::array<ops_detail::Slot, ops_detail::kSlots> place_rows() {
  std::array<ops_detail::Slot, ops_detail::kSlots> t{};
  for (const Row& r : kRows) {
    size_t i = ops_detail::slot(r.op);
    while (t[i].size != 0) i = (i + 1) & ops_detail::kMask;
    t[i] = {r.op.data(), static_cast<uint32_t>(r.op.size()), static_cast<uint32_t>(r.traits)};
  }
  return t;
}

}  // namespace

namespace ops_detail {
constexpr std::array<Slot, kSlots> kSlotTable = place_rows();
}  // namespace ops_detail

std::vector<OpTraitsRow> op_trait_rows() {
  std::vector<OpTraitsRow> out;
  for (const Row& r : kRows) out.push_back({r.op, static_cast<uint32_t>(r.traits)});
  return out;
}

bool is_float_dtype(int32_t dtype) {
  using T = onnx::TensorProto;
  return dtype == T::FLOAT || dtype == T::FLOAT16 || dtype == T::BFLOAT16 || dtype == T::DOUBLE;
}

}  // namespace headcount
