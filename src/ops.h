// ops.h: what the stages know of each operator, as traits in one table (internal).
//
// The walks of every stage (attention, experts, mixers, composition, cost, buffers) step through
// the same kinds of ops: layout changes, casts, dequantization, element-wise arithmetic, norms,
// matrix products. They ask this table (`op_has(op, Trait::LayoutOnly | Trait::Cast)`) instead of
// keeping lists of their own, so a new op is one row of kRows in src/ops.cpp and every walk sees
// it. A walk that takes a deliberate subset says which ops it leaves out, and why, where it asks.
// The same row names the op's shape rule (ShapeRule: what the op does to shapes, which the shape
// oracle in src/shapes.cpp evaluates); a row without one says why it needs none.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace headcount {

// One bit per trait; an op may have several (Identity is layout-only and a no-op).
enum class Trait : uint64_t {
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
  // Adds or subtracts its two operands (a shift, a bias, a mask): Add, Sub.
  Shifts = 1u << 18,
  // Multiplies or divides its two operands (a scale, a gate): Mul, Div.
  Scales = 1u << 19,
  // A square root or an inverse, the denominator of a written-out norm: Sqrt, Reciprocal, Rsqrt.
  InverseOrRoot = 1u << 20,
  // The float products of ONNX proper, whose input 1 is a float matrix: MatMul, Gemm.
  PlainProduct = 1u << 21,
  // A batched product of two N-D tensors that may both be activations (how Q·Kᵀ and the scores'
  // product with V are written): MatMul, FusedMatMul.
  BatchedProduct = 1u << 22,
  // Takes parts of its input 0 along axes, by bounds or sizes: Slice, Split.
  Cuts = 1u << 23,
  // Its input 0 is the data and its other inputs are shapes, bounds, repeats or indices that
  // carry none of it: Reshape, Expand, Tile, Slice, Split, Squeeze, Unsqueeze, Gather, Pad.
  ShapeOperands = 1u << 24,
  // Its output's elements are its data operands' elements, chosen by a condition (Where, inputs 1
  // and 2) or laid side by side (Concat).
  Merges = 1u << 25,
  // Changes only the sign of each element: Neg, Abs.
  SignChange = 1u << 26,
  // Limits each element to a range or a bound: Clip, and Max and Min (with a constant).
  Clamp = 1u << 27,
  // A step of a norm written out: the mean (ReduceMean), x − mean (Sub), x² (Pow or Mul), + eps
  // (Add), the root or its inverse (Sqrt, Reciprocal), the division and the scale (Div, Mul), a
  // Cast to float32 between. Not CastLike or the converters' Rsqrt, which no written-out norm seen
  // uses.
  NormStep = 1u << 28,
  // The arithmetic formulas are written in, +, −, ·, ÷ and powers: Add, Sub, Mul, Div, Pow (not
  // the selections Max and Min or the remainder Mod).
  Algebraic = 1u << 29,
  // An activation fused with the bias added before it (com.microsoft): FastGelu, BiasGelu.
  BiasActivation = 1u << 30,
  // How a learned scale or bias is applied, x·γ and x + β: Mul, Add.
  Affine = 1u << 31,
  // The reduction a written-out norm takes its statistic with: the mean (ReduceMean), the L2 norm
  // (ReduceL2), the sum of squares (ReduceSumSquare). Not ReduceSum, ReduceMax or ReduceMin, which
  // no written-out norm seen uses.
  NormReduce = uint64_t{1} << 32,
  // Runs a subgraph (its body) once per iteration or per slice along an axis, as a recurrence
  // over the sequence is written: Loop, Scan. Not If, whose branches run once.
  Iterates = uint64_t{1} << 33,
  // Sums along an axis over a window of positions, as the token mixers that are no attention do:
  // CumSum (every position up to each one), Conv (a kernel's span around each). Not the other
  // convolutions (ConvTranspose, ConvInteger, QLinearConv), which no mixer seen uses.
  WindowSum = uint64_t{1} << 34,
  // Reads only its input's dims, never its values: Shape, Size.
  ReadsDims = uint64_t{1} << 35,
  // A mixture of experts fused into one op, its router's choice and the experts' products inside
  // (com.microsoft): MoE, QMoE.
  FusedExperts = uint64_t{1} << 36,
  // Reads weights packed several to a byte, whose count is in its attributes and not in the
  // stored bytes (com.microsoft): MatMulNBits, QMoE.
  PackedWeights = uint64_t{1} << 37,
};
// Trait has 64 bits, 38 of them taken.

// What an op does to shapes: the shape oracle's evaluator of its output dims and, for shape
// arithmetic, of its output's integer values (src/shapes.cpp maps each rule to them). Each row of
// kRows names one; None says the oracle knows nothing of the op's outputs (the row says why).
enum class ShapeRule : uint8_t {
  None = 0,
  SameShape,      // output 0 has input 0's dims
  SameValues,     // input 0's dims and its integer values (Identity, Floor, Ceil, Round)
  Cast,           // input 0's dims; its values as the target type holds them
  Broadcast,      // the inputs' dims broadcast (NumPy rules)
  BroadcastAdd,   // broadcast dims; integer values added
  BroadcastSub,   // ... subtracted
  BroadcastMul,   // ... multiplied
  BroadcastDiv,   // ... divided, truncating toward zero
  MatMul,         // NumPy matmul of inputs 0 and 1 (FusedMatMul's transposes: unknown)
  QLinearMatMul,  // NumPy matmul of inputs 0 and 3 (a and b; the others are scales and zero points)
  MatMulNBits,    // input 0's dims with the last replaced by attribute N
  Gemm,           // [M, N] of 2-D A and B with transA, transB
  Transpose,
  Reshape,
  Flatten,        // [product of dims before axis, product of the rest]
  Unsqueeze,      // dims and integer values (values pass through)
  Squeeze,        // dims and integer values (values pass through)
  Concat,         // dims and integer values
  Split,
  Slice,          // dims and integer values
  Gather,         // dims and integer values
  Expand,
  Tile,
  Reduce,         // ReduceMean, ReduceSum, ReduceMax, ReduceMin with keepdims
  Shape,          // a 1-D tensor of the selected dims, and their values
  Count_,         // the number of rules (not a rule)
};

constexpr Trait operator|(Trait a, Trait b) { return static_cast<Trait>(static_cast<uint64_t>(a) | static_cast<uint64_t>(b)); }

// Where a matrix product's operands are (ONNX and com.microsoft specs): the input that holds its
// matrix B (the weight of a projection; -1 for an op that is no product), its bias input (-1:
// none), whether it reads transB (a B stored [N, K]) and whether it has a transA (Gemm's), which a
// projection of an activation A never sets.
struct ProductOperands {
  int8_t weight = -1;
  int8_t bias = -1;
  bool trans_b = false;
  bool trans_a = false;
};

namespace ops_detail {
// ProductOperands in one byte of a slot: weight + 1 (3 bits), bias + 1 (3 bits), the two flags.
// Inputs -1 to 6 fit; src/ops.cpp checks at compile time that every row's comes back the same.
constexpr uint8_t pack(ProductOperands p) {
  return static_cast<uint8_t>((p.weight + 1) | (p.bias + 1) << 3 | (p.trans_b ? 1 : 0) << 6 | (p.trans_a ? 1 : 0) << 7);
}
constexpr ProductOperands unpack(uint8_t b) {
  return {static_cast<int8_t>((b & 7) - 1), static_cast<int8_t>(((b >> 3) & 7) - 1), ((b >> 6) & 1) != 0,
          ((b >> 7) & 1) != 0};
}
}  // namespace ops_detail

// An op type, its traits and its shape rule (op_trait_rows).
struct OpTraitsRow {
  std::string_view op;
  uint64_t traits = 0;
  ShapeRule shape = ShapeRule::None;
};

namespace ops_detail {
// The table's rows placed by a cheap hash of the name (its length and three of its characters),
// probing on: every stage asks for each node it walks, so a lookup is a few instructions, as
// cheap as the lists of names it replaces, and the table (12 KiB, of which a graph's few dozen op
// types touch a few dozen lines) stays in the processor's cache beside a large graph's records.
// Made at compile time in src/ops.cpp, which checks how far a row is from its slot (kMostProbes).
struct Slot {
  const char* name = nullptr;
  uint64_t traits = 0;
  uint16_t size = 0;  // 0: an empty slot
  ShapeRule shape = ShapeRule::None;
  uint8_t product = 0;  // ProductOperands, packed (pack)
};
// 8 bytes of name, 8 of traits (64 bits since the 33rd trait), 4 of size, rule and product, and
// 4 of padding: 24 bytes a slot, 12 KiB a table.
static_assert(sizeof(Slot) <= 24, "a slot stays 24 bytes: the table stays 12 KiB");
// A power of two, more than twice the rows. With its 130 rows, a row is 0.2 probes past its slot
// on average and the lookup of an op the table does not know probes 0.4 slots more (256 slots
// would make that 0.4 and 1.2; with 105 rows they were 0.15 and 0.8).
constexpr size_t kSlots = 512;
constexpr size_t kMask = kSlots - 1;
constexpr size_t slot(std::string_view op) {
  size_t n = op.size();
  auto c = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(op[i])); };
  return n == 0 ? 0 : (n + c(0) * 31 + c(n / 2) + c(n - 1) * 13) & kMask;
}
extern const std::array<Slot, kSlots> kSlotTable;

// Whether n bytes at a and at b are the same, a word at a time: a name of 8 to 16 bytes is two
// loads a side (the last word overlaps the first), one of 4 to 7 two smaller ones.
inline bool same_bytes(const char* a, const char* b, size_t n) {
  auto word = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  auto half = [](const char* p) {
    uint32_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  };
  if (n < 4) {
    for (size_t k = 0; k < n; ++k) {
      if (a[k] != b[k]) return false;
    }
    return true;
  }
  if (n < 8) return half(a) == half(b) && half(a + n - 4) == half(b + n - 4);
  for (size_t k = 0; k + 8 < n; k += 8) {
    if (word(a + k) != word(b + k)) return false;
  }
  return word(a + n - 8) == word(b + n - 8);
}
}  // namespace ops_detail

// The table's slot of an op type, or its empty slot (traits 0, no shape rule) for an op the table
// does not know.
inline const ops_detail::Slot& op_slot(std::string_view op) {
  static constexpr ops_detail::Slot kEmpty{};
  if (op.empty()) return kEmpty;
  for (size_t i = ops_detail::slot(op);; i = (i + 1) & ops_detail::kMask) {
    const ops_detail::Slot& s = ops_detail::kSlotTable[i];
    if (s.size == op.size()) {
      if (ops_detail::same_bytes(s.name, op.data(), op.size())) return s;
    } else if (s.size == 0) {
      return s;
    }
  }
}
// The traits of an op type (0, Trait::None, for an op the table does not know or one it lists
// for its shape rule alone). Keyed by op type alone: the com.microsoft ops the stages know have
// names of their own.
inline uint64_t op_traits(std::string_view op) { return op_slot(op).traits; }
// The shape rule of an op type (ShapeRule::None for an op the table does not know).
inline ShapeRule op_shape_rule(std::string_view op) { return op_slot(op).shape; }
// Where a product's operands are (weight -1 for an op that is no matrix product).
inline ProductOperands op_product(std::string_view op) { return ops_detail::unpack(op_slot(op).product); }
// Whether an op has any of the traits.
inline bool op_has(std::string_view op, Trait any) { return (op_traits(op) & static_cast<uint64_t>(any)) != 0; }
// Whether traits (from op_traits) include any of these.
inline bool has(uint64_t traits, Trait any) { return (traits & static_cast<uint64_t>(any)) != 0; }

// Every row of the table, as written, for tests and docs.
std::vector<OpTraitsRow> op_trait_rows();

// Whether an ONNX element type is one a graph computes activations in: float32, float16,
// bfloat16, float64 (not the float8 and float4 storage types, which are dequantized first).
bool is_float_dtype(int32_t dtype);

}  // namespace headcount
