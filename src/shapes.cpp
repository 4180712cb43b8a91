// shapes.cpp: integer evaluation of shape computations and dims tracking, one evaluator per op.
#include "shapes.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <unordered_map>

#include "ops.h"

namespace headcount::detail {
namespace {

constexpr int kMaxEvalDepth = 48;
constexpr size_t kMaxVector = 64;  // shape vectors are short; anything longer is not a shape
// The largest rank a dims record keeps: a shape vector's length, as above. A longer shape keeps
// only its last dim (the feature width), so no record grows with a rank the file states (a
// declared rank of 20,000, or a chain of Gathers that doubles it) and every record is small.
constexpr int kMaxRank = static_cast<int>(kMaxVector);

using Outputs = std::vector<Dims>;  // one entry per output; missing entries stay unknown
using DimsFn = Outputs (*)(const NodeView&);
using ValueFn = std::optional<IntVector> (*)(const NodeView&);

Int from_dim(const onnx::TensorShapeProto::Dimension& dim) {
  return dim.has_dim_value() && dim.dim_value() >= 0 ? Int(dim.dim_value()) : Int();
}

Dims from_type(const onnx::TypeProto& t) {
  Dims d;
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return d;
  const auto& shape = t.tensor_type().shape();
  if (shape.dim_size() > kMaxRank) {
    d.tail = from_dim(shape.dim(shape.dim_size() - 1));
    return d;
  }
  d.rank = shape.dim_size();
  for (const auto& dim : shape.dim()) d.d.push_back(from_dim(dim));
  return d;
}

Dims from_dims(Span<int64_t> v) {
  Dims d;
  if (v.size() > static_cast<size_t>(kMaxRank)) {
    d.tail = v[v.size() - 1];
    return d;
  }
  d.rank = static_cast<int>(v.size());
  for (auto x : v) d.d.push_back(x);
  return d;
}

// Keeps an evaluator's output within kMaxRank (its inputs are, but a Gather or an Unsqueeze adds
// to them).
void cap_rank(Dims& d) {
  if (d.rank <= kMaxRank) return;
  Int last = d.last();
  d = Dims();
  d.tail = last;
}

// No shape has a dim below 0: whatever an evaluator computed from hostile constants that is
// negative is unknown, so no stage reads a negative dim as known.
void drop_negative(Dims& d) {
  for (Int& x : d.d) {
    if (x && *x < 0) x = Int();
  }
  if (d.tail && *d.tail < 0) d.tail = Int();
}

Dims known_rank(int rank) {
  Dims d;
  d.rank = rank;
  d.d.assign(static_cast<size_t>(rank), Int());
  return d;
}

// An axis attribute normalized against a rank, or nullopt when it does not name an axis.
std::optional<size_t> norm_axis(Int axis, int rank) {
  if (rank < 0 || !axis) return std::nullopt;
  int64_t a = *axis < 0 ? *axis + rank : *axis;  // no overflow: rank is small and positive here
  if (*axis < -static_cast<int64_t>(rank) || a < 0 || a >= rank) return std::nullopt;
  return static_cast<size_t>(a);
}

// One dim of a broadcast, folded from the inputs' dims at that place (see broadcast()).
struct BroadcastDim {
  Int v;
  bool unknown = false, conflict = false;
  void fold(Int x) {
    if (!x) {
      unknown = true;
    } else if (*x != 1) {
      conflict = conflict || (v && *v != 1 && *v != *x);
      v = x;
    } else if (!v) {
      v = 1;
    }
  }
  Int result() const { return v && !conflict && (*v != 1 || !unknown) ? v : Int(); }
};

// Broadcast of elementwise inputs: a known dim > 1 wins, 1 yields to the other side. Two known
// dims that differ and are not 1 do not broadcast (the node is an error): that dim is unknown.
Dims broadcast(const std::vector<Dims>& in) {
  Dims out;
  if (in.empty()) return out;
  int rank = -1;
  bool all_ranks = true;
  for (const auto& d : in) {
    if (d.rank < 0) all_ranks = false;
    rank = std::max(rank, d.rank);
  }
  if (!all_ranks || rank < 0) {
    bool conflict = false;
    for (const auto& d : in) {  // rank unknown: still carry the feature width when some input knows it
      if (Int l = d.last(); l && *l > 1) {
        conflict = conflict || differ(out.tail, l);
        out.tail = l;
      }
    }
    if (conflict) out.tail = Int();
    return out;
  }
  out = known_rank(rank);
  for (int i = 0; i < rank; ++i) {
    BroadcastDim b;
    for (const auto& d : in) {
      const int j = i - (rank - d.rank);
      if (j >= 0) b.fold(d.d[static_cast<size_t>(j)]);
    }
    out.d[static_cast<size_t>(i)] = b.result();
  }
  return out;
}

// ---- shapes: one evaluator per op, outputs from the inputs' dims ----

Outputs dims_same(const NodeView& v) { return {v.dims(0)}; }

Outputs dims_broadcast(const NodeView& v) {
  std::vector<Dims> all;
  for (int i = 0; i < v.inputs(); ++i) all.push_back(v.dims(i));
  return {broadcast(all)};
}

// NumPy matmul of A and B's dims.
Dims matmul_dims(const Dims& a, const Dims& b) {
  Dims out;
  if (b.rank == 1) {  // NumPy: a 1-D B is [K, 1] with the 1 removed after: the last dim is A's second last
    if (a.rank >= 2) out.tail = a.d[static_cast<size_t>(a.rank - 2)];
    return out;
  }
  if (a.rank < 2 || b.rank < 2) {
    if (b.rank >= 2) out.tail = b.last();  // a B of unknown rank may be 1-D: its last dim says nothing
    return out;
  }
  // The batch dims (all but the last two of each, both ranks known) broadcast as broadcast()
  // does, without a copy of either; then A's rows and B's columns.
  const int batch_a = a.rank - 2, batch_b = b.rank - 2, batch = std::max(batch_a, batch_b);
  out = known_rank(batch + 2);
  for (int i = 0; i < batch; ++i) {
    BroadcastDim d;
    if (const int j = i - (batch - batch_a); j >= 0) d.fold(a.d[static_cast<size_t>(j)]);
    if (const int j = i - (batch - batch_b); j >= 0) d.fold(b.d[static_cast<size_t>(j)]);
    out.d[static_cast<size_t>(i)] = d.result();
  }
  out.d[static_cast<size_t>(batch)] = a.d[static_cast<size_t>(a.rank - 2)];
  out.d[static_cast<size_t>(batch) + 1] = b.d.back();
  return out;
}

Outputs dims_matmul(const NodeView& v) {
  // FusedMatMul's transposes of A, B or their batch dims move dims the oracle does not follow.
  for (const char* flag : {"transA", "transB", "transBatchA", "transBatchB"}) {
    if (attr_flag(v.n, flag)) return {Dims{}};
  }
  return {matmul_dims(v.dims(0), v.dims(1))};
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point): "the
// same as numpy.matmul" of a and b (ONNX Operators.md), inputs 0 and 3.
Outputs dims_qlinear_matmul(const NodeView& v) { return {matmul_dims(v.dims(0), v.dims(3))}; }

Outputs dims_matmul_nbits(const NodeView& v) {
  Dims out = v.dims(0);
  Int width = attr_int(v.n, "N");
  if (!width.positive()) width = Int();
  (out.rank > 0 ? out.d.back() : out.tail) = width;
  return {out};
}

Outputs dims_gemm(const NodeView& v) {
  Dims a = v.dims(0), b = v.dims(1), out = known_rank(2);
  if (a.rank == 2) out.d[0] = a.d[attr_flag(v.n, "transA") ? 1 : 0];
  if (b.rank == 2) out.d[1] = b.d[attr_flag(v.n, "transB") ? 0 : 1];
  return {out};
}

Outputs dims_transpose(const NodeView& v) {
  Dims a = v.dims(0);
  if (a.rank < 0) return {Dims{}};
  std::vector<int64_t> perm;
  if (auto p = attr_ints(v.n, "perm")) perm = *p;
  else for (int i = a.rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != a.rank) return {Dims{}};
  Dims out = known_rank(a.rank);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] >= 0 && perm[i] < a.rank) out.d[i] = a.d[static_cast<size_t>(perm[i])];
  }
  return {out};
}

Outputs dims_reshape(const NodeView& v) {
  Dims a = v.dims(0);
  auto target = v.value(1);
  if (!target) return {Dims{}};
  bool allowzero = attr_flag(v.n, "allowzero");
  Dims out = known_rank(static_cast<int>(target->size()));
  for (size_t i = 0; i < target->size(); ++i) {
    Int t = (*target)[i];
    if (t.positive()) out.d[i] = t;
    else if (t.is(0) && !allowzero && a.rank > static_cast<int>(i)) out.d[i] = a.d[i];  // 0 copies the input's dim
  }
  return {out};
}

// Flatten: [d0 · ... · d(axis-1), d(axis) · ... · d(r-1)], axis in [-r, r] (default 1, negative
// counts from the back); an empty product is 1 (axis 0 gives [1, all]).
Outputs dims_flatten(const NodeView& v) {
  Dims a = v.dims(0);
  Int axis = attr_int(v.n, "axis").value_or(1);
  if (a.rank < 0 || !axis || *axis < -static_cast<int64_t>(a.rank) || *axis > a.rank) return {Dims{}};
  size_t cut = static_cast<size_t>(*axis < 0 ? *axis + a.rank : *axis);
  Dims out = known_rank(2);
  out.d[0] = 1;
  out.d[1] = 1;
  for (size_t i = 0; i < a.d.size(); ++i) out.d[i < cut ? 0 : 1] = out.d[i < cut ? 0 : 1] * a.d[i];
  return {out};
}

Outputs dims_unsqueeze(const NodeView& v) {
  Dims a = v.dims(0), out;
  auto axes = v.list("axes", 1);
  if (a.rank < 0 || !axes) {
    // Rank unknown: the axes index an output of rank r + len(axes), so an axis past the first
    // len(axes) can be the last one (axis 1 of x [6] gives [6, 1]). When every axis is one of the
    // first len(axes), each once, they are all before the input's dims: its last dim stays last.
    if (axes) {
      std::vector<bool> seen(axes->size(), false);
      bool front = std::all_of(axes->begin(), axes->end(), [&](int64_t x) {
        if (x < 0 || static_cast<uint64_t>(x) >= seen.size() || seen[static_cast<size_t>(x)]) return false;
        seen[static_cast<size_t>(x)] = true;
        return true;
      });
      if (front) out.tail = a.last();
    }
    return {out};
  }
  if (axes->size() > kMaxVector) return {out};
  int rank = a.rank + static_cast<int>(axes->size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (auto x : *axes) {
    auto ax = norm_axis(x, rank);
    if (ax && inserted[*ax]) return {Dims{}};  // a repeated axis: the spec's error
    if (ax) inserted[*ax] = true;
  }
  out.rank = rank;
  size_t j = 0;
  for (int i = 0; i < rank; ++i) out.d.push_back(inserted[static_cast<size_t>(i)] ? Int(1) : j < a.d.size() ? a.d[j++] : Int());
  return {out};
}

Outputs dims_squeeze(const NodeView& v) {
  Dims a = v.dims(0), out;
  auto axes = v.list("axes", 1);
  if (a.rank < 0 || !axes) return {out};
  std::vector<bool> removed(static_cast<size_t>(a.rank), false);
  for (auto x : *axes) {
    if (auto ax = norm_axis(x, a.rank)) removed[*ax] = true;
  }
  out.rank = 0;
  for (int i = 0; i < a.rank; ++i) {
    if (removed[static_cast<size_t>(i)]) continue;
    out.d.push_back(a.d[static_cast<size_t>(i)]);
    ++out.rank;
  }
  return {out};
}

Outputs dims_concat(const NodeView& v) {
  std::vector<Dims> all;
  int rank = -1;
  for (int i = 0; i < v.inputs(); ++i) {
    all.push_back(v.dims(i));
    rank = std::max(rank, all.back().rank);
  }
  auto axis = norm_axis(attr_int(v.n, "axis").value_or(0), rank);
  if (rank < 0 || !axis) return {Dims{}};
  Dims out = known_rank(rank);
  Int sum = 0;
  for (auto& d : all) {
    sum = d.rank == rank ? sum + d.d[*axis] : Int();
    for (size_t i = 0; i < static_cast<size_t>(rank); ++i) {
      if (i != *axis && d.rank == rank && d.d[i]) out.d[i] = d.d[i];
    }
  }
  out.d[*axis] = sum;
  return {out};
}

Outputs dims_split(const NodeView& v) {
  Dims a = v.dims(0);
  auto axis = norm_axis(attr_int(v.n, "axis").value_or(0), a.rank);
  if (!axis) return {};
  auto sizes = split_sizes(v, a.d[*axis]);
  if (!sizes) return {};  // the node is an error: none of its outputs has a known shape
  Outputs out;
  for (Int size : *sizes) {
    Dims d = a;
    d.d[*axis] = size;
    out.push_back(std::move(d));
  }
  return out;
}

Outputs dims_slice(const NodeView& v) {
  Dims a = v.dims(0), out = a;
  if (a.rank < 0) return {Dims{}};
  auto starts = v.value(1), ends = v.value(2), steps = v.value(4);
  auto axes = v.value(3);
  if (!starts || !ends || starts->size() != ends->size() || (v.has(3) && !axes) ||
      (v.has(4) && (!steps || steps->size() != starts->size()))) {
    for (auto& d : out.d) d = Int();
    return {out};
  }
  if (!axes) {
    axes = IntVector();
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < starts->size() && i < axes->size(); ++i) {
    auto ax = norm_axis((*axes)[i], a.rank);
    if (!ax) continue;
    Int& dim = out.d[*ax];
    Int s = clamp_index((*starts)[i], dim), e = clamp_index((*ends)[i], dim);
    bool unit_step = !steps || (*steps)[i].is(1);
    dim = unit_step && s && e ? Int(std::max<int64_t>(0, *e - *s)) : Int();
  }
  return {out};
}

Outputs dims_gather(const NodeView& v) {
  Dims a = v.dims(0), idx = v.dims(1), out;
  auto axis = norm_axis(attr_int(v.n, "axis").value_or(0), a.rank);
  if (a.rank < 0 || idx.rank < 0 || !axis) {
    if (a.rank > 1 && axis && static_cast<int>(*axis) < a.rank - 1) out.tail = a.d.back();
    return {out};
  }
  out.rank = a.rank - 1 + idx.rank;
  out.d.assign(a.d.begin(), a.d.begin() + static_cast<long>(*axis));
  out.d.insert(out.d.end(), idx.d.begin(), idx.d.end());
  out.d.insert(out.d.end(), a.d.begin() + static_cast<long>(*axis) + 1, a.d.end());
  return {out};
}

Outputs dims_expand(const NodeView& v) {
  auto shape = v.value(1);
  // A shape entry below 0 broadcasts with nothing: the node is an error, its output unknown.
  if (!shape || std::any_of(shape->begin(), shape->end(), [](Int x) { return x && *x < 0; })) return {Dims{}};
  Dims target;
  target.rank = static_cast<int>(shape->size());
  target.d = *shape;
  return {broadcast({v.dims(0), target})};
}

Outputs dims_tile(const NodeView& v) {
  Dims a = v.dims(0);
  auto repeats = v.value(1);
  if (!repeats || a.rank != static_cast<int>(repeats->size())) return {Dims{}};
  // A repeat is a count of copies: one below 0 makes the node an error, its output unknown.
  if (std::any_of(repeats->begin(), repeats->end(), [](Int x) { return x && *x < 0; })) return {Dims{}};
  for (size_t i = 0; i < repeats->size(); ++i) a.d[i] = a.d[i] * (*repeats)[i];
  return {a};
}

Outputs dims_shape(const NodeView& v) {  // a 1-D tensor of the selected dims
  Dims in = v.dims(0), out = known_rank(1);
  if (in.rank < 0) return {out};
  Int start = clamp_index(attr_int(v.n, "start").value_or(0), in.rank);
  Int end = clamp_index(attr_int(v.n, "end").value_or(in.rank), in.rank);
  out.d[0] = std::max<int64_t>(0, *end - *start);
  return {out};
}

Outputs dims_reduce(const NodeView& v) {
  Dims a = v.dims(0);
  auto axes = v.list("axes", 1);
  // Empty or absent axes reduce every axis ([1, 1, 1] with keepdims, not derived here), or none
  // with noop_with_empty_axes (ReduceSum from opset 13, the others from 18).
  if ((axes && axes->empty()) || (!find_attr(v.n, "axes") && !v.has(1))) {
    return {attr_flag(v.n, "noop_with_empty_axes") ? a : Dims{}};
  }
  if (!attr_int(v.n, "keepdims").value_or(1) || a.rank < 0 || !axes) return {Dims{}};
  for (auto x : *axes) {
    if (auto ax = norm_axis(x, a.rank)) a.d[*ax] = 1;
  }
  return {a};
}

// ---- values: integer tensors computed from shapes and constants ----

std::optional<IntVector> value_pass(const NodeView& v) { return v.value(0); }  // Squeeze, Floor...: same values

// Whether the floating-point type with `digits` significant bits and largest finite value `max`
// holds x exactly.
bool float_holds(int64_t x, int digits, uint64_t max) {
  uint64_t m = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);  // |INT64_MIN| fits
  if (m > max) return false;
  while (m != 0 && m % 2 == 0) m /= 2;
  return m < (uint64_t{1} << digits);
}

// Cast's values as the target type `to` holds them. Cast "may produce 1" from 36 to bool, and a
// value outside a narrower type's range changes: only what the type holds exactly is known; a
// string or another type gives nothing. Without `to` (required) the values pass as they are.
std::optional<IntVector> value_cast(const NodeView& v) {
  auto in = v.value(0);
  Int to = attr_int(v.n, "to");
  if (!in || !to) return in;
  using T = onnx::TensorProto;
  int64_t lo = INT64_MIN, hi = INT64_MAX;  // an integer type: its range
  int digits = 0;                          // a floating-point type: its significant bits ...
  uint64_t max = UINT64_MAX;               // ... and its largest finite value
  switch (*to) {
    case T::INT64: return in;
    case T::BOOL:
      for (Int& x : *in) x = x ? Int(*x != 0) : Int();
      return in;
    case T::INT32: lo = INT32_MIN, hi = INT32_MAX; break;
    case T::INT16: lo = INT16_MIN, hi = INT16_MAX; break;
    case T::INT8: lo = INT8_MIN, hi = INT8_MAX; break;
    case T::UINT64: lo = 0; break;
    case T::UINT32: lo = 0, hi = UINT32_MAX; break;
    case T::UINT16: lo = 0, hi = UINT16_MAX; break;
    case T::UINT8: lo = 0, hi = UINT8_MAX; break;
    case T::DOUBLE: digits = 53; break;
    case T::FLOAT: digits = 24; break;
    case T::BFLOAT16: digits = 8; break;
    case T::FLOAT16: digits = 11, max = 65504; break;
    default: return std::nullopt;
  }
  for (Int& x : *in) {
    if (x && !(digits ? float_holds(*x, digits, max) : *x >= lo && *x <= hi)) x = Int();
  }
  return in;
}

std::optional<IntVector> value_shape(const NodeView& v) {
  Dims d = v.dims(0);
  if (d.rank < 0) return std::nullopt;
  Int start = clamp_index(attr_int(v.n, "start").value_or(0), d.rank);
  Int end = clamp_index(attr_int(v.n, "end").value_or(d.rank), d.rank);
  if (*end <= *start) return IntVector{};
  return IntVector(d.d.begin() + *start, d.d.begin() + *end);
}

std::optional<IntVector> value_gather(const NodeView& v) {
  auto idx = v.value(1);
  if (!idx || idx->size() != 1 || !(*idx)[0]) return std::nullopt;
  Int i = (*idx)[0];
  // Gather(Shape(x), -1) needs only x's last dimension, even when x's rank is unknown.
  const NodeRec* p = v.producer(0);
  if (i.is(-1) && p && p->op_type() == "Shape"sv && !find_attr(*p, "start") && !find_attr(*p, "end")) {
    Int last = v.shapes().dims(v.graph(), input_of(*p, 0)).last();
    if (!last) return std::nullopt;
    return IntVector{last};
  }
  auto data = v.value(0);
  if (!data) return std::nullopt;
  Int size = static_cast<int64_t>(data->size());
  if (*i < -*size || *i >= *size) return std::nullopt;
  return IntVector{(*data)[static_cast<size_t>(*clamp_index(i, size))]};
}

// Folded element by element: a piece computed at run time becomes that many unknown elements
// when its length is known (a scalar, a 1-D tensor of known size, an Unsqueezed scalar), and the
// constant pieces around it stay readable: [0, ?, 3, 8, 15].
std::optional<IntVector> value_concat(const NodeView& v) {
  IntVector out;
  for (int i = 0; i < v.inputs(); ++i) {
    auto piece = v.value(i);
    if (!piece) {
      Dims d = v.dims(i);
      const NodeRec* p = v.producer(i);
      Int length = d.rank == 0 ? Int(1) : d.rank == 1 ? d.d[0] : p && p->op_type() == "Unsqueeze"sv ? Int(1) : Int();
      if (!length.non_negative() || *length > static_cast<int64_t>(kMaxVector)) return std::nullopt;
      piece = IntVector(static_cast<size_t>(*length), Int());
    }
    out.insert(out.end(), piece->begin(), piece->end());
    if (out.size() > kMaxVector) return std::nullopt;
  }
  return out;
}

// Elementwise arithmetic with a length-1 side broadcast; every step checked.
template <Int (*Op)(Int, Int)>
std::optional<IntVector> value_binary(const NodeView& v) {
  auto a = v.value(0), b = v.value(1);
  if (!a || !b) return std::nullopt;
  size_t len = std::max(a->size(), b->size());
  if ((a->size() != len && a->size() != 1) || (b->size() != len && b->size() != 1)) return std::nullopt;
  IntVector out;
  for (size_t i = 0; i < len; ++i) out.push_back(Op((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
  return out;
}
Int add(Int a, Int b) { return a + b; }
Int sub(Int a, Int b) { return a - b; }
Int mul(Int a, Int b) { return a * b; }
Int div(Int a, Int b) { return trunc_div(a, b); }  // ONNX integer Div truncates toward zero

std::optional<IntVector> value_slice(const NodeView& v) {
  auto data = v.value(0), starts = v.value(1), ends = v.value(2);
  if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1 || v.has(4)) return std::nullopt;
  Int size = static_cast<int64_t>(data->size());
  Int s = clamp_index((*starts)[0], size), e = clamp_index((*ends)[0], size);
  if (!s || !e) return std::nullopt;
  if (*e <= *s) return IntVector{};
  return IntVector(data->begin() + *s, data->begin() + *e);
}

// ---- the rules: each ShapeRule of the op table (src/ops.h) and its evaluators ----

struct OpShapes {
  DimsFn dims = nullptr;    // output dims from input dims
  ValueFn value = nullptr;  // output values from input values (shape arithmetic)
};

// Indexed by ShapeRule, in its order (the static_assert below keeps the two the same length).
constexpr OpShapes kRules[] = {
    {},                                          // None
    {dims_same},                                 // SameShape
    {dims_same, value_pass},                     // SameValues
    {dims_same, value_cast},                     // Cast
    {dims_broadcast},                            // Broadcast
    {dims_broadcast, value_binary<add>},         // BroadcastAdd
    {dims_broadcast, value_binary<sub>},         // BroadcastSub
    {dims_broadcast, value_binary<mul>},         // BroadcastMul
    {dims_broadcast, value_binary<div>},         // BroadcastDiv
    {dims_matmul},                               // MatMul
    {dims_qlinear_matmul},                       // QLinearMatMul
    {dims_matmul_nbits},                         // MatMulNBits
    {dims_gemm},                                 // Gemm
    {dims_transpose},                            // Transpose
    {dims_reshape},                              // Reshape
    {dims_flatten},                              // Flatten
    {dims_unsqueeze, value_pass},                // Unsqueeze
    {dims_squeeze, value_pass},                  // Squeeze
    {dims_concat, value_concat},                 // Concat
    {dims_split},                                // Split
    {dims_slice, value_slice},                   // Slice
    {dims_gather, value_gather},                 // Gather
    {dims_expand},                               // Expand
    {dims_tile},                                 // Tile
    {dims_reduce},                               // Reduce
    {dims_shape, value_shape},                   // Shape
};
static_assert(std::size(kRules) == static_cast<size_t>(ShapeRule::Count_), "one entry per ShapeRule");

// The evaluators of an op type: its row's shape rule, by the op table's slot lookup.
const OpShapes& op_shapes(std::string_view op) { return kRules[static_cast<size_t>(op_shape_rule(op))]; }

}  // namespace

std::vector<OpRow> op_rows() {
  std::vector<OpRow> rows;
  for (const auto& r : op_trait_rows()) {
    const OpShapes& s = kRules[static_cast<size_t>(r.shape)];
    if (s.dims || s.value) rows.push_back({r.op, s.dims != nullptr, s.value != nullptr});
  }
  return rows;
}

// ---- attributes ----

const Attribute* find_attr(const NodeRec& n, std::string_view name) {
  for (const Attribute& a : n.attribute()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Int attr_int(const NodeRec& n, std::string_view name) {
  const Attribute* a = find_attr(n, name);
  return a && a->has_i ? Int(a->i) : Int();
}

bool attr_flag(const NodeRec& n, std::string_view name) { return attr_int(n, name).value_or(0) != 0; }

std::optional<std::vector<int64_t>> attr_ints(const NodeRec& n, std::string_view name) {
  const Attribute* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints.begin(), a->ints.end());
}

// ---- NodeView ----

Dims NodeView::dims(int i) const { return has(i) ? s_.dims(g_, input_of(n, i)) : Dims{}; }

std::optional<IntVector> NodeView::value(int i) const {
  return has(i) ? s_.eval(g_, input_of(n, i), depth_) : std::nullopt;
}

std::optional<std::vector<int64_t>> NodeView::list(const char* attr, int input) const {
  if (auto a = attr_ints(n, attr)) return a;
  auto v = value(input);
  if (!v || !all_known(*v)) return std::nullopt;
  std::vector<int64_t> out;
  for (Int x : *v) out.push_back(*x);
  return out;
}

std::optional<IntVector> split_sizes(const NodeView& v, Int axis_size) {
  const int64_t n = v.outputs();
  const Int num_outputs = attr_int(v.n, "num_outputs");  // opset 18
  if (n <= 0) return std::nullopt;
  if (find_attr(v.n, "split") || v.has(1)) {
    if (num_outputs) return std::nullopt;  // "Either input 'split' or the attribute 'num_outputs'"
    auto sizes = v.list("split", 1);
    if (!sizes) return IntVector(static_cast<size_t>(n), Int());  // computed at run time
    if (static_cast<int64_t>(sizes->size()) > n) return std::nullopt;
    Int sum = 0;
    for (int64_t x : *sizes) {
      if (x < 0) return std::nullopt;
      sum = sum + x;
    }
    // A sum past INT64_MAX is no axis; a full list adds up to the axis, a short one stays within it.
    if (!sum) return std::nullopt;
    if (axis_size && (static_cast<int64_t>(sizes->size()) == n ? *sum != *axis_size : *sum > *axis_size)) {
      return std::nullopt;
    }
    IntVector out(sizes->begin(), sizes->end());
    out.resize(static_cast<size_t>(n), Int());
    return out;
  }
  if (num_outputs && !num_outputs.is(n)) return std::nullopt;
  if (!axis_size) return IntVector(static_cast<size_t>(n), Int());
  if (Int each = exact_div(axis_size, n); each.non_negative()) return IntVector(static_cast<size_t>(n), each);
  if (!num_outputs || *axis_size < 0) return std::nullopt;  // before opset 18 the parts are equal or an error
  // Not divisible: parts of ceil(axis / n) = floor(axis / n) + 1, the last one what remains. That
  // can be below 0 (5 in 4: 2, 2, 2, -1, onnx/onnx#5766): no split then.
  Int chunk = floor_div(axis_size, n) + 1;
  Int last = axis_size - chunk * (n - 1);
  if (!last.non_negative()) return std::nullopt;
  IntVector out(static_cast<size_t>(n), chunk);
  out.back() = last;
  return out;
}

const NodeRec* NodeView::producer(int i) const {
  int p = has(i) ? s_.model().producer_of(g_, input_of(n, i)) : -1;
  return p < 0 ? nullptr : s_.model().nodes[p].rec;
}

// ---- ShapeOracle ----

std::optional<EinsumEquation> parse_einsum(const NodeRec& n) {
  if (n.op_type() != "Einsum"sv || n.input_size() != 2) return std::nullopt;
  const auto* a = find_attr(n, "equation");
  if (!a || a->s().size() > 64) return std::nullopt;
  std::string eq;
  for (char c : a->s()) {
    if (c != ' ') eq += c;
  }
  size_t arrow = eq.find("->"), comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return std::nullopt;
  EinsumEquation e{{eq.substr(0, comma), eq.substr(comma + 1, arrow - comma - 1)}, eq.substr(arrow + 2)};
  for (const std::string* part : {&e.in[0], &e.in[1], &e.out}) {
    for (size_t i = 0; i < part->size(); ++i) {
      char c = (*part)[i];
      if (!std::isalpha(static_cast<unsigned char>(c)) || part->find(c, i + 1) != std::string::npos) return std::nullopt;
    }
  }
  return e;
}

std::string format_ints(const IntVector& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i].str();
  return s + "]";
}

bool all_known(const IntVector& v) {
  return std::all_of(v.begin(), v.end(), [](Int x) { return x.known(); });
}

namespace {
thread_local uint64_t oracles_built = 0;
}  // namespace

uint64_t ShapeOracle::built_on_this_thread() { return oracles_built; }

ShapeOracle::ShapeOracle(const Model& model)
    : m_(model), dims_at_(model.values.size(), -1), eval_at_(model.values.size(), -1) {
  ++oracles_built;
  // Declared shapes of the main graph; subgraph and function types are rarely present. A type
  // without a shape (or no type) states no dims, so it neither hides what propagation finds nor
  // replaces an earlier declaration's shape.
  const auto& gp = m_.proto->graph();
  for (const auto* list : {&gp.input(), &gp.value_info(), &gp.output()}) {
    for (const auto& vi : *list) {
      if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) declare(vi.name(), from_type(vi.type()));
    }
  }
  for (size_t g = 0; g < m_.graphs.size(); ++g) {
    for (int ni : m_.graphs[g].nodes) propagate(static_cast<int>(g), *m_.nodes[ni].rec);
  }
}

namespace {
bool identical(const Int& a, const Int& b) { return a.known() == b.known() && (!a.known() || *a == *b); }
bool identical(const Dims& a, const Dims& b) {
  if (a.rank != b.rank || a.d.size() != b.d.size() || !identical(a.tail, b.tail)) return false;
  for (size_t i = 0; i < a.d.size(); ++i) {
    if (!identical(a.d[i], b.d[i])) return false;
  }
  return true;
}
}  // namespace

// The entry of known_ that holds d: one of the last kRecent entries when it equals d (an exported
// graph's values have a few distinct shapes, and neighbours share them), else a new one. The look
// is bounded, so no file can make it slow; a graph of distinct shapes only keeps one entry each.
int ShapeOracle::keep(Dims d) {
  for (int at : recent_) {
    if (at >= 0 && identical(known_[static_cast<size_t>(at)], d)) return at;
  }
  const int at = static_cast<int>(known_.size());
  known_.push_back(std::move(d));
  recent_[next_recent_++ % kRecent] = at;
  return at;
}

// A later declaration of the same name replaces an earlier one (in a new entry: others may share
// the earlier one).
void ShapeOracle::declare(std::string_view name, Dims d) {
  int id = m_.value_id(0, name);
  if (id < 0) {
    declared_unused_[name] = std::move(d);
  } else {
    dims_at_[static_cast<size_t>(id)] = keep(std::move(d));
  }
}

Dims ShapeOracle::dims(int g, Name value) const {
  for (int s = g; s >= 0; s = m_.graphs[s].parent) {
    int id = m_.value_id(s, value);
    if (id < 0) {
      if (s != 0) continue;
      auto it = declared_unused_.find(value);
      return it == declared_unused_.end() ? Dims{} : it->second;
    }
    if (int at = dims_at_[static_cast<size_t>(id)]; at >= 0) return known_[static_cast<size_t>(at)];
    const Value& v = m_.values[static_cast<size_t>(id)];
    if (v.weight >= 0) return from_dims(m_.weights[static_cast<size_t>(v.weight)].dims);
    if (v.producer >= 0) return Dims{};
  }
  return Dims{};
}

// Computes the output dims of one node from its inputs' (already computed) dims. A declared
// shape (value_info or a graph output's) wins over what propagation finds.
void ShapeOracle::propagate(int g, const NodeRec& n) {
  if (n.output_size() == 0 || n.op_type() == "Constant"sv) return;  // a Constant is a weight: dims() answers
  DimsFn dims = op_shapes(n.op_type()).dims;
  if (!dims) return;  // no shape rule: nothing is known of its outputs
  Outputs out = dims(NodeView(*this, g, n, 0));
  for (size_t i = 0; i < out.size() && i < static_cast<size_t>(n.output_size()); ++i) {
    Name name = output_of(n, static_cast<int>(i));
    if (name.empty()) continue;
    int& at = dims_at_[static_cast<size_t>(m_.value_id(g, name))];  // a node's output always has an id
    if (at >= 0) continue;
    cap_rank(out[i]);
    drop_negative(out[i]);
    at = keep(std::move(out[i]));
  }
}

std::optional<IntVector> ShapeOracle::eval(int g, Name value, int depth) {
  if (value.empty() || depth > kMaxEvalDepth) return std::nullopt;
  // Memo entries belong to the value's defining record, whichever scope asks.
  const int id = m_.defining_value(g, value);
  if (id < 0) return std::nullopt;  // a graph input: a run-time value
  if (int at = eval_at_[static_cast<size_t>(id)]; at >= 0) return evaluated_[static_cast<size_t>(at)];
  const Value& v = m_.values[static_cast<size_t>(id)];
  std::optional<IntVector> result;
  if (const Weight* w = v.weight >= 0 ? &m_.weights[static_cast<size_t>(v.weight)] : nullptr; w && w->tensor) {
    if (auto ints = int_values(*w->tensor)) {
      if (ints->size() <= kMaxVector) result = IntVector(ints->begin(), ints->end());
    } else if (auto floats = float_values(*w->tensor); floats && floats->size() <= kMaxVector) {
      IntVector iv;
      for (double f : *floats) iv.push_back(Int::of_double(f));
      if (all_known(iv)) result = iv;  // float constants used as shapes hold whole numbers
    }
  } else if (v.producer >= 0) {  // also a Constant whose value is not a tensor: its evaluator answers
    const NodeRec& n = *m_.nodes[static_cast<size_t>(v.producer)].rec;
    if (ValueFn value = op_shapes(n.op_type()).value) result = value(NodeView(*this, v.graph, n, depth + 1));
  }
  // The evaluation above may have grown evaluated_ (it recurses): index it only now.
  eval_at_[static_cast<size_t>(id)] = static_cast<int>(evaluated_.size());
  evaluated_.push_back(result);
  return result;
}

}  // namespace headcount::detail
