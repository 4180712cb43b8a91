// ops.h: what the stages know of each operator, as traits in one table (internal).
//
// The walks of every stage (attention, experts, mixers, composition, cost, buffers) step through
// the same kinds of ops: layout changes, casts, dequantization, element-wise arithmetic, norms,
// matrix products. They ask this table (`op_has(op, Trait::LayoutOnly | Trait::Cast)`) instead of
// keeping lists of their own, so a new op is one row of `op_traits()` in src/ops.cpp and every
// walk sees it. A walk that takes a deliberate subset says which ops it leaves out, and why, where
// it asks. What an op does to shapes is the shape oracle's table (src/shapes.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace headcount {

// One bit per trait; an op may have several (Identity is layout-only and a no-op).
enum class Trait : uint32_t {
  None = 0,
  // The same elements in another shape or order: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
  // Identity.
  LayoutOnly = 1u << 0,
  // Each element repeated along new or grown axes: Expand, Tile.
  Repeats = 1u << 1,
  // Some of the elements, chosen by constant or run-time indices: Slice, Gather, GatherElements,
  // GatherND.
  Selects = 1u << 2,
  // Nothing at inference: Identity, Dropout.
  NoOp = 1u << 3,
  // The same values in another element type: Cast, CastLike.
  Cast = 1u << 4,
  // Float to a quantized integer type: QuantizeLinear, DynamicQuantizeLinear.
  Quantize = 1u << 5,
  // A quantized integer type back to float: DequantizeLinear.
  Dequantize = 1u << 6,
  // Element-wise arithmetic of two broadcast operands: Add, Sub, Mul, Div, Pow, Max, Min, Mod.
  Arithmetic = 1u << 7,
  // Element-wise comparison to a boolean: Equal, Less, LessOrEqual, Greater, GreaterOrEqual.
  Comparison = 1u << 8,
  // Element-wise boolean logic: And, Or, Xor, Not.
  Logical = 1u << 9,
  // Element-wise math of one operand that is not an activation: Neg, Abs, Sqrt, Reciprocal, Exp,
  // Log, Floor, Ceil, Round, Sign, Sin, Cos, Clip.
  UnaryMath = 1u << 10,
  // An activation function (element-wise, one operand; the com.microsoft fused ones with their
  // bias): Relu, Gelu, FastGelu, BiasGelu, QuickGelu, Erf, Tanh, Sigmoid, Silu, Swish, Mish,
  // Softplus, Elu, LeakyRelu, Selu, HardSigmoid, HardSwish.
  Activation = 1u << 11,
  // A normalization with learned scale (and bias): the layer, RMS, batch, group and instance
  // norms and the com.microsoft fused ones.
  Normalization = 1u << 12,
  // A norm over each token's features (input 0), not over a batch or groups of channels:
  // LayerNormalization, SimplifiedLayerNormalization, RMSNormalization and the Skip forms.
  TokenNorm = 1u << 13,
  // A norm that first adds a residual (its input 1, the skip): SkipLayerNormalization,
  // SkipSimplifiedLayerNormalization.
  AddsSkip = 1u << 14,
  // A matrix product of an activation and a (possibly quantized) matrix: MatMul, Gemm, FusedMatMul,
  // MatMulNBits, MatMulInteger, QLinearMatMul, DynamicQuantizeMatMul, MatMulIntegerToFloat.
  // Einsum is not one: it is a product only for some equations (parse_einsum decides).
  MatrixProduct = 1u << 15,
  // A normalized exponential along an axis: Softmax, LogSoftmax.
  Softmax = 1u << 16,
  // Writes updates into a copy of its input 0: Scatter, ScatterElements, ScatterND.
  Scatter = 1u << 17,
};

constexpr Trait operator|(Trait a, Trait b) { return static_cast<Trait>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b)); }

// An op type and its traits (op_trait_rows).
struct OpTraitsRow {
  std::string_view op;
  uint32_t traits = 0;
};

namespace ops_detail {
// The table's rows placed by a cheap hash of the name (its length and three of its characters),
// probing on: every stage asks for each node it walks, so a lookup is a few instructions, as
// cheap as the lists of names it replaces, and the table (4 KiB) stays in the processor's
// cache beside a large graph's records. Made at compile time in src/ops.cpp; no row is more than
// one probe from its slot.
struct Slot {
  const char* name = nullptr;
  uint32_t size = 0;  // 0: an empty slot
  uint32_t traits = 0;
};
constexpr size_t kSlots = 256;  // a power of two, about three times the rows
constexpr size_t kMask = kSlots - 1;
constexpr size_t slot(std::string_view op) {
  size_t n = op.size();
  auto c = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(op[i])); };
  return n == 0 ? 0 : (n + c(0) * 31 + c(n / 2) + c(n - 1) * 13) & kMask;
}
extern const std::array<Slot, kSlots> kSlotTable;
}  // namespace ops_detail

// The traits of an op type (0, Trait::None, for an op the table does not know). Keyed by op type
// alone: the com.microsoft ops the stages know have names of their own.
inline uint32_t op_traits(std::string_view op) {
  if (op.empty()) return 0;
  for (size_t i = ops_detail::slot(op);; i = (i + 1) & ops_detail::kMask) {
    const ops_detail::Slot& s = ops_detail::kSlotTable[i];
    if (s.size == op.size()) {
      size_t k = 0;
      while (k < op.size() && s.name[k] == op[k]) ++k;
      if (k == op.size()) return s.traits;
    } else if (s.size == 0) {
      return 0;
    }
  }
}
// Whether an op has any of the traits.
inline bool op_has(std::string_view op, Trait any) { return (op_traits(op) & static_cast<uint32_t>(any)) != 0; }
// Whether traits (from op_traits) include any of these.
inline bool has(uint32_t traits, Trait any) { return (traits & static_cast<uint32_t>(any)) != 0; }

// Every row of the table, as written, for tests and docs.
std::vector<OpTraitsRow> op_trait_rows();

// Whether an ONNX element type is one a graph computes activations in: float32, float16,
// bfloat16, float64 (not the float8 and float4 storage types, which are dequantized first).
bool is_float_dtype(int32_t dtype);

}  // namespace headcount
