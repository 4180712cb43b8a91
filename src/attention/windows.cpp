// windows.cpp: sliding-window attention, read from what the graph states about a block: the
// local_window_size of onnxruntime's GroupQueryAttention, or a band-shaped mask on the score path
// (0 where 0 <= i - j < W and a large negative elsewhere, or its boolean form).
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "../masks.h"
#include "../payload.h"
#include "../ops.h"
#include "headcount/attention.h"
#include "headcount/checked.h"

namespace headcount {
namespace {


std::string label(const Model& m, int node) {
  const auto& n = *m.nodes[static_cast<size_t>(node)].rec;
  return std::string(n.op_type()) + " '" + std::string(n.name().empty() ? output_of(n, 0) : n.name()) + "'";
}

// The ops of one operand whose element the mask evaluator computes from input 0's (unary_at): a
// cast, Neg, Abs, Not and an Identity (Dropout is left out, as it always was).
bool mask_unary(std::string_view op) {
  if (op_has(op, Trait::Cast | Trait::SignChange)) return true;
  if (op_has(op, Trait::NoOp)) return op != "Dropout"sv;
  return op == "Not"sv;
}

// The element-wise ops of two broadcast operands it computes (binary_at): the arithmetic but Pow,
// the comparisons, And, Or and Xor.
bool mask_binary(std::string_view op) {
  if (op_has(op, Trait::Arithmetic)) return op != "Pow"sv;
  return op_has(op, Trait::Comparison | Trait::Logical) && op != "Not"sv;
}

// The stored tensor a mask operand comes from through slicing and shape steps, and whether a Not
// on the way inverts it; nullptr when it is computed (or reaches an input).
const Weight* mask_source(const Model& m, int g, Name value, bool* inverted) {
  for (int step = 0; step < 16 && !value.empty(); ++step) {
    if (const Weight* w = m.weight_for(g, value)) return w;
    int p = m.producer_of(g, value);
    if (p < 0) return nullptr;
    const auto& n = *m.nodes[static_cast<size_t>(p)].rec;
    std::string_view op = n.op_type();
    // The same mask in another shape, repeated, cast or sliced; not Transpose, which swaps a
    // mask's rows and columns, nor a Gather of rows by indices.
    const bool same_mask = op_has(op, Trait::LayoutOnly | Trait::Repeats | Trait::Cast) && op != "Transpose"sv;
    const bool sliced = op == "Slice"sv;
    if (op == "Not"sv) *inverted = !*inverted;
    else if (!same_mask && !sliced) return nullptr;
    value = input_of(n, 0);
  }
  return nullptr;
}

std::string window_words(int64_t w) { return w == 1 ? "itself" : "itself and the " + std::to_string(w - 1) + " before it"; }

// A mask computed in the graph from positions (a Range over the sequence, compared, combined and
// turned into a fill), evaluated element by element where the window shows: the sequence length
// a Shape reads is taken as kSeq, and only the points asked for are computed, never the grid.
// Ops outside those a mask is built from, or a budget spent, give nothing. The op lists in at()
// and compute_dims() are the ops this evaluator computes, one branch each (a dispatch, not a kind
// of op from the op table): a new op there needs its own branch.
constexpr int64_t kSeq = int64_t{1} << 20;     // the sequence length a computed mask is read at
constexpr int64_t kMostWindow = int64_t{1} << 17;  // a longer band is not told from a causal mask
constexpr size_t kMostValues = 1 << 16;         // constants read to evaluate a mask
// Integer constants are read up to this size: the loader kept int32/int64 payloads this small in
// memory, where a mask's evaluation found them, before it kept only what the shape stage reads.
constexpr uint64_t kMostIntegerBytes = 4096;
constexpr size_t kMostMemo = 1 << 18;           // index entries remembered while one element is evaluated
constexpr const char* kEvaluator = "the mask evaluator";  // as the budget names it

using Dims = std::optional<std::vector<int64_t>>;

// One per graph and audit: what it works out of a value (its dims, whether it holds integers, a
// Concat's part ends, an Unsqueeze's inserted axes) is kept for every mask that reads it, and
// every step spends from the audit's budget.
class MaskEval {
 public:
  MaskEval(const Model& m, int g, ValueBudget& budget) : m_(m), g_(g), budget_(budget) {}

  const Dims& dims(Name v, int depth = 0) {
    static const Dims none;
    if (v.empty() || depth > 48 || !spend(ValueBudget::kElement)) return none;
    auto memo = dims_.find(v);
    if (memo != dims_.end()) return memo->second;
    if (!spend(ValueBudget::kStep)) return none;
    Dims d = compute_dims(v, depth);
    return dims_[v] = std::move(d);
  }

  // One element of a mask, v at idx: the reads it repeats (a value two operands share) are
  // answered once.
  std::optional<double> element(Name v, const std::vector<int64_t>& idx) {
    memo_.clear();
    memo_entries_ = 0;
    return at(v, idx);
  }

 private:
  // The element of v at idx (one index per axis of dims(v)); every call spends, in proportion
  // to the index's length.
  std::optional<double> at(Name v, const std::vector<int64_t>& idx, int depth = 0) {
    if (depth > 48 || !spend(ValueBudget::kStep * (1 + idx.size() / 16))) return std::nullopt;
    auto key = std::make_pair(std::string_view(v), idx);
    auto hit = memo_.find(key);
    if (hit != memo_.end()) return hit->second;
    std::optional<double> x = compute_at(v, idx, depth);
    if (memo_entries_ + idx.size() + 1 <= kMostMemo) {  // memory bounded by the index entries kept, not the reads
      memo_entries_ += idx.size() + 1;
      memo_.emplace(std::move(key), x);
    }
    return x;
  }

  bool spend(uint64_t units) {
    if (stopped_) return false;
    if (!budget_.spend(kEvaluator, units)) stopped_ = true;
    return !stopped_;
  }

  std::optional<double> compute_at(Name v, const std::vector<int64_t>& idx, int depth) {
    if (const Weight* w = m_.weight_for(g_, v)) return stored_at(*w, idx);
    int p = m_.producer_of(g_, v);
    if (p < 0) return std::nullopt;
    const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
    std::string_view op = n.op_type();
    const Dims& out = dims(v, depth);
    if (!out || out->size() != idx.size()) return std::nullopt;
    auto in = [&](int i) { return input_of(n, i); };
    if (op == "Shape"sv) {
      const Dims& d = dims(in(0), depth + 1);
      if (!d || idx.empty() || idx[0] < 0 || static_cast<size_t>(idx[0]) >= d->size()) return std::nullopt;
      return static_cast<double>((*d)[static_cast<size_t>(idx[0])]);
    }
    if (mask_unary(op)) return unary_at(n, op, idx, depth);
    if (mask_binary(op)) return binary_at(v, n, op, idx, depth);
    if (op == "Where"sv) {
      auto c = at(in(0), broadcast_index(in(0), idx, depth), depth + 1);
      if (!c) return std::nullopt;
      Name pick = *c != 0 ? in(1) : in(2);
      return at(pick, broadcast_index(pick, idx, depth), depth + 1);
    }
    if (op == "Expand"sv) return at(in(0), broadcast_index(in(0), idx, depth), depth + 1);
    if (op == "Range"sv) {
      auto start = scalar(in(0), depth), delta = scalar(in(2), depth);
      if (!start || !delta || idx.size() != 1) return std::nullopt;
      return *start + static_cast<double>(idx[0]) * *delta;
    }
    if (op == "Unsqueeze"sv) return unsqueeze_at(p, n, out->size(), idx, depth);
    // The same elements in row-major order: Squeeze and Reshape (Unsqueeze and Identity are asked
    // above; Flatten's dims are never read, so it returns before this).
    if (op_has(op, Trait::LayoutOnly) && op != "Transpose"sv) return reshape_at(n, *out, idx, depth);
    if (op == "Gather"sv) return gather_at(n, idx, depth);
    if (op == "Concat"sv) return concat_at(p, n, out->size(), idx, depth);
    if (op == "ConstantOfShape"sv) return constant_fill(n);
    if (op == "Trilu"sv) return trilu_at(n, idx, depth);
    return std::nullopt;
  }

  // The element of a stored tensor at idx.
  std::optional<double> stored_at(const Weight& w, const std::vector<int64_t>& idx) {
    const std::vector<double>* values = values_of(w);
    if (!values) return std::nullopt;
    auto flat = ravel(idx, std::vector<int64_t>(w.dims.begin(), w.dims.end()));
    if (!flat || *flat >= values->size()) return std::nullopt;
    return (*values)[static_cast<size_t>(*flat)];
  }

  // Identity, Cast, Not, Neg, Abs, CastLike: the element of input 0 at idx, changed.
  std::optional<double> unary_at(const NodeRec& n, std::string_view op, const std::vector<int64_t>& idx, int depth) {
    auto x = at(input_of(n, 0), idx, depth + 1);
    if (!x) return std::nullopt;
    if (op == "Not"sv) return *x == 0 ? 1.0 : 0.0;
    if (op == "Neg"sv) return -*x;
    if (op == "Abs"sv) return std::fabs(*x);
    if (op == "Cast"sv) {
      int64_t to = int_attr(n, "to", 0);
      if (to == onnx::TensorProto::BOOL) return *x != 0 ? 1.0 : 0.0;
      if (to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32) return std::trunc(*x);
    }
    return x;
  }

  // An elementwise op of two operands, each broadcast to idx; v is its output (integer Div
  // truncates).
  std::optional<double> binary_at(Name v, const NodeRec& n, std::string_view op, const std::vector<int64_t>& idx, int depth) {
    Name in0 = input_of(n, 0), in1 = input_of(n, 1);
    auto a = at(in0, broadcast_index(in0, idx, depth), depth + 1);
    auto b = a ? at(in1, broadcast_index(in1, idx, depth), depth + 1) : std::nullopt;
    if (!a || !b) return std::nullopt;
    double x = *a, y = *b;
    if (op == "Div"sv) {  // integer Div truncates toward zero (ONNX, as C)
      if (y == 0) return std::nullopt;
      return integral(v, depth) ? std::trunc(x / y) : x / y;
    }
    if (op == "Mod"sv) {  // fmod 0: the sign of the divisor (Python's %); fmod 1: C's fmod
      if (y == 0) return std::nullopt;
      double r = std::fmod(x, y);
      if (int_attr(n, "fmod", 0) == 0 && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
    return combine(op, x, y);
  }

  // The elementwise ops of two operands that need neither the node nor the output's type.
  static double combine(std::string_view op, double x, double y) {
    if (op == "Add"sv) return x + y;
    if (op == "Sub"sv) return x - y;
    if (op == "Mul"sv) return x * y;
    if (op == "Xor"sv) return ((x != 0) != (y != 0)) ? 1.0 : 0.0;
    if (op == "Less"sv) return x < y ? 1.0 : 0.0;
    if (op == "LessOrEqual"sv) return x <= y ? 1.0 : 0.0;
    if (op == "Greater"sv) return x > y ? 1.0 : 0.0;
    if (op == "GreaterOrEqual"sv) return x >= y ? 1.0 : 0.0;
    if (op == "Equal"sv) return x == y ? 1.0 : 0.0;
    if (op == "And"sv) return (x != 0 && y != 0) ? 1.0 : 0.0;
    if (op == "Or"sv) return (x != 0 || y != 0) ? 1.0 : 0.0;
    if (op == "Max"sv) return std::max(x, y);
    return std::min(x, y);
  }

  // An Unsqueeze's element: idx without the inserted axes, read from its input.
  std::optional<double> unsqueeze_at(int p, const NodeRec& n, size_t rank, const std::vector<int64_t>& idx, int depth) {
    const std::vector<char>* inserted = inserted_axes(p, n, rank, depth);
    if (!inserted) return std::nullopt;
    std::vector<int64_t> inner;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (!(*inserted)[k]) inner.push_back(idx[k]);
    }
    return at(input_of(n, 0), inner, depth + 1);
  }

  // A Squeeze's or Reshape's element: the same flat offset in its input of dims out.
  std::optional<double> reshape_at(const NodeRec& n, const std::vector<int64_t>& out, const std::vector<int64_t>& idx,
                                   int depth) {
    const Dims& from = dims(input_of(n, 0), depth + 1);
    if (!from) return std::nullopt;
    auto flat = ravel(idx, out);
    auto inner = flat ? unravel(*flat, *from) : std::nullopt;
    return inner ? at(input_of(n, 0), *inner, depth + 1) : std::nullopt;
  }

  // A Gather's element (axis 0): the row its index picks, read from the data.
  std::optional<double> gather_at(const NodeRec& n, const std::vector<int64_t>& idx, int depth) {
    const Dims& data = dims(input_of(n, 0), depth + 1);
    const Dims& ind = dims(input_of(n, 1), depth + 1);
    int64_t axis = int_attr(n, "axis", 0);
    if (!data || !ind || axis != 0 || data->empty()) return std::nullopt;
    std::vector<int64_t> ind_idx(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(ind->size()));
    auto k = at(input_of(n, 1), ind_idx, depth + 1);
    if (!k) return std::nullopt;
    auto whole_pick = Int::of_double(*k).opt();  // read from the file: NaN or 1e300 is no index
    if (!whole_pick) return std::nullopt;
    int64_t pick = *whole_pick;
    if (pick < 0) pick += (*data)[0];
    if (pick < 0 || pick >= (*data)[0]) return std::nullopt;
    std::vector<int64_t> data_idx{pick};
    data_idx.insert(data_idx.end(), idx.begin() + static_cast<std::ptrdiff_t>(ind->size()), idx.end());
    return at(input_of(n, 0), data_idx, depth + 1);
  }

  // A Concat's element: read from the part that holds idx along its axis.
  std::optional<double> concat_at(int p, const NodeRec& n, size_t rank, const std::vector<int64_t>& idx, int depth) {
    int64_t axis = int_attr(n, "axis", 0);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || static_cast<size_t>(axis) >= idx.size()) return std::nullopt;
    const std::vector<int64_t>* ends = part_ends(p, n, static_cast<size_t>(axis), idx.size(), depth);
    int64_t offset = idx[static_cast<size_t>(axis)];
    if (!ends || offset < 0) return std::nullopt;
    // The part holding the offset: the first whose end is past it.
    size_t k = static_cast<size_t>(std::upper_bound(ends->begin(), ends->end(), offset) - ends->begin());
    if (k >= ends->size()) return std::nullopt;
    std::vector<int64_t> inner = idx;
    inner[static_cast<size_t>(axis)] = offset - (k ? (*ends)[k - 1] : 0);
    return at(input_of(n, static_cast<int>(k)), inner, depth + 1);
  }

  // A ConstantOfShape's every element: its value attribute, 0 without one.
  static std::optional<double> constant_fill(const NodeRec& n) {
    for (const Attribute& a : n.attribute()) {
      if (a.name == "value"sv && a.t) {
        if (auto f = float_values(*a.t); f && f->size() == 1) return (*f)[0];
        if (auto i = int_values(*a.t); i && i->size() == 1) return static_cast<double>((*i)[0]);
        return std::nullopt;
      }
    }
    return 0.0;
  }

  // A Trilu's element: its input's where the triangle keeps it (k above the diagonal), else 0.
  std::optional<double> trilu_at(const NodeRec& n, const std::vector<int64_t>& idx, int depth) {
    if (idx.size() < 2) return std::nullopt;
    auto k = n.input_size() > 1 && !input_of(n, 1).empty() ? scalar(input_of(n, 1), depth) : std::optional<double>(0.0);
    if (!k) return std::nullopt;
    double diff = static_cast<double>(idx.back()) - static_cast<double>(idx[idx.size() - 2]);  // j - i
    bool keep = int_attr(n, "upper", 1) != 0 ? diff >= *k : diff <= *k;
    return keep ? at(input_of(n, 0), idx, depth + 1) : std::optional<double>(0.0);
  }

 private:
  const Model& m_;
  int g_;
  ValueBudget& budget_;
  bool stopped_ = false;
  std::map<std::string_view, Dims> dims_;
  std::map<const Weight*, std::optional<std::vector<double>>> values_;
  std::map<std::pair<std::string_view, std::vector<int64_t>>, std::optional<double>> memo_;  // one element's reads
  size_t memo_entries_ = 0;  // the index entries memo_ holds
  std::map<std::string_view, bool> integral_;
  std::map<int, std::optional<std::vector<int64_t>>> ends_;   // by Concat node
  std::map<int, std::optional<std::vector<char>>> inserted_;  // by Unsqueeze node

  // A Concat's parts' ends along its axis (each part's offset plus its length), worked out once.
  const std::vector<int64_t>* part_ends(int node, const NodeRec& n, size_t axis, size_t rank, int depth) {
    auto it = ends_.find(node);
    if (it == ends_.end()) {
      std::optional<std::vector<int64_t>> ends(std::in_place);
      for (const auto& part : n.input()) {
        const Dims& d = dims(part, depth + 1);
        int64_t before = ends->empty() ? 0 : ends->back();  // at most kSeq
        if (!d || d->size() != rank || (*d)[axis] < 0 || (*d)[axis] > kSeq - before) {  // a file's dim: no overflow
          ends.reset();
          break;
        }
        ends->push_back(before + (*d)[axis]);
      }
      it = ends_.emplace(node, std::move(ends)).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  // An Unsqueeze's output axes, 1 where it inserts one, worked out once: every axis in range and
  // none twice.
  const std::vector<char>* inserted_axes(int node, const NodeRec& n, size_t rank, int depth) {
    auto it = inserted_.find(node);
    if (it == inserted_.end()) {
      std::optional<std::vector<char>> marks;
      if (auto axes = axes_of(n, rank, depth)) {
        marks.emplace(rank, 0);
        for (int64_t a : *axes) {
          if ((*marks)[static_cast<size_t>(a)]) {
            marks.reset();
            break;
          }
          (*marks)[static_cast<size_t>(a)] = 1;
        }
      }
      it = inserted_.emplace(node, std::move(marks)).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  // Whether a value holds integers (or booleans): integer Div truncates. From the types of its
  // constants, casts and the ops that keep them; worked out once per value.
  bool integral(Name v, int depth) {
    if (v.empty() || depth > 48 || !spend(ValueBudget::kStep)) return false;
    auto memo = integral_.find(v);
    if (memo != integral_.end()) return memo->second;
    bool x = compute_integral(v, depth);
    integral_.emplace(v, x);
    return x;
  }

  bool compute_integral(Name v, int depth) {
    if (const Weight* w = m_.weight_for(g_, v)) return !is_float_dtype(w->dtype);
    int p = m_.producer_of(g_, v);
    if (p < 0) return false;
    const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
    std::string_view op = n.op_type();
    if (op == "Shape"sv || op_has(op, Trait::Comparison | Trait::Logical)) return true;
    if (op == "Cast"sv) {
      int64_t to = int_attr(n, "to", 0);
      return !is_float_dtype(static_cast<int32_t>(to));
    }
    if (op_has(op, Trait::Arithmetic)) {
      return integral(input_of(n, 0), depth + 1) && integral(input_of(n, 1), depth + 1);
    }
    if (op == "Where"sv) return integral(input_of(n, 1), depth + 1) && integral(input_of(n, 2), depth + 1);
    // The type of input 0 (the start of a Range).
    // (Where is asked above: of Merges, only Concat reaches this.)
    if (op_has(op, Trait::LayoutOnly | Trait::Repeats | Trait::Selects | Trait::SignChange | Trait::Merges) ||
        op == "Range"sv) {
      return integral(input_of(n, 0), depth + 1);
    }
    return false;
  }

  static int64_t int_attr(const NodeRec& n, std::string_view name, int64_t otherwise) {
    for (const Attribute& a : n.attribute()) {
      if (a.name == name && a.has_i) return a.i;
    }
    return otherwise;
  }

  const std::vector<double>* values_of(const Weight& w) {
    auto it = values_.find(&w);
    if (it == values_.end()) {
      std::optional<std::vector<double>> v;
      if (w.elements <= kMostValues && !spend(w.elements * ValueBudget::kElement)) return nullptr;  // read once per audit
      if (w.elements <= kMostValues && w.tensor) {
        if (auto i = int_values(*w.tensor)) v = std::vector<double>(i->begin(), i->end());
        else if (auto f = float_values(*w.tensor)) v = f;
      }
      if (!v && w.elements <= kMostValues) {
        std::vector<double> read;
        if (for_each_value(w, [&](uint64_t, double x) {
              read.push_back(x);
              return true;
            }, /*integers=*/w.bytes <= kMostIntegerBytes)) {
          v = std::move(read);
        }
      }
      if (v && v->size() != w.elements) v.reset();
      it = values_.emplace(&w, std::move(v)).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  std::optional<double> scalar(Name v, int depth) {
    const Dims& d = dims(v, depth + 1);
    if (!d) return std::nullopt;
    for (int64_t x : *d) {
      if (x != 1) return std::nullopt;
    }
    return at(v, std::vector<int64_t>(d->size(), 0), depth + 1);
  }

  // The values of a small 1-D integer input (axes, a shape), whole.
  std::optional<std::vector<int64_t>> list(Name v, int depth) {
    const Dims& d = dims(v, depth + 1);
    if (!d || d->size() != 1 || (*d)[0] < 0 || (*d)[0] > 16) return std::nullopt;
    std::vector<int64_t> out;
    for (int64_t k = 0; k < (*d)[0]; ++k) {
      auto x = at(v, {k}, depth + 1);
      auto n = x ? Int::of_double(*x).opt() : std::nullopt;  // NaN or 2^63 is no axis
      if (!n) return std::nullopt;
      out.push_back(*n);
    }
    return out;
  }

  std::optional<std::vector<int64_t>> axes_of(const NodeRec& n, size_t out_rank, int depth) {
    std::optional<std::vector<int64_t>> axes;
    for (const Attribute& a : n.attribute()) {
      if (a.name == "axes"sv) axes = std::vector<int64_t>(a.ints.begin(), a.ints.end());
    }
    if (!axes && n.input_size() > 1) axes = list(input_of(n, 1), depth);
    if (!axes) return std::nullopt;
    for (auto& a : *axes) {
      if (a < 0) a += static_cast<int64_t>(out_rank);
      if (a < 0 || a >= static_cast<int64_t>(out_rank)) return std::nullopt;
    }
    return axes;
  }

  static std::optional<uint64_t> ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& d) {
    if (idx.size() != d.size()) return std::nullopt;
    uint64_t flat = 0;
    for (size_t k = 0; k < d.size(); ++k) {
      if (idx[k] < 0 || idx[k] >= d[k]) return std::nullopt;
      if (mul_overflows(flat, static_cast<uint64_t>(d[k]), &flat) || add_overflows(flat, static_cast<uint64_t>(idx[k]), &flat)) {
        return std::nullopt;
      }
    }
    return flat;
  }

  static std::optional<std::vector<int64_t>> unravel(uint64_t flat, const std::vector<int64_t>& d) {
    std::vector<int64_t> idx(d.size(), 0);
    for (size_t k = d.size(); k-- > 0;) {
      if (d[k] <= 0) return std::nullopt;
      idx[k] = static_cast<int64_t>(flat % static_cast<uint64_t>(d[k]));
      flat /= static_cast<uint64_t>(d[k]);
    }
    if (flat != 0) return std::nullopt;
    return idx;
  }

  // An output index mapped to an input that broadcasts to it (right-aligned, 1 repeats).
  std::vector<int64_t> broadcast_index(Name input, const std::vector<int64_t>& idx, int depth) {
    const Dims& d = dims(input, depth + 1);
    if (!d || d->size() > idx.size()) return {};
    std::vector<int64_t> inner(d->size(), 0);
    size_t shift = idx.size() - d->size();
    for (size_t k = 0; k < d->size(); ++k) inner[k] = (*d)[k] == 1 ? 0 : idx[k + shift];
    return inner;
  }

  std::optional<std::vector<int64_t>> broadcast(const std::vector<std::vector<int64_t>>& shapes) {
    size_t rank = 0;
    for (const auto& s : shapes) rank = std::max(rank, s.size());
    std::vector<int64_t> out(rank, 1);
    for (const auto& s : shapes) {
      for (size_t k = 0; k < s.size(); ++k) {
        int64_t& o = out[k + rank - s.size()];
        if (s[k] == 1) continue;
        if (o != 1 && o != s[k]) return std::nullopt;
        o = s[k];
      }
    }
    return out;
  }

  std::optional<std::vector<int64_t>> compute_dims(Name v, int depth) {
    if (const Weight* w = m_.weight_for(g_, v)) return std::vector<int64_t>(w->dims.begin(), w->dims.end());
    int p = m_.producer_of(g_, v);
    if (p < 0) return input_dims(v);
    const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
    std::string_view op = n.op_type();
    auto in = [&](int i) { return input_of(n, i); };
    if (op == "Shape"sv) {
      auto d = dims(in(0), depth + 1);
      if (!d) return std::nullopt;
      return std::vector<int64_t>{static_cast<int64_t>(d->size())};
    }
    if (mask_unary(op) || op == "Trilu"sv) return dims(in(0), depth + 1);
    if (mask_binary(op) || op == "Where"sv) return elementwise_dims(n, depth);
    if (op == "Range"sv) return range_dims(n, depth);
    if (op == "Unsqueeze"sv) return unsqueeze_dims(p, n, depth);
    if (op == "ConstantOfShape"sv) return shaped_dims(n, op, depth);
    if (op == "Expand"sv) return shaped_dims(n, op, depth);
    if (op == "Reshape"sv) return shaped_dims(n, op, depth);
    if (op == "Squeeze"sv) {
      auto d = dims(in(0), depth + 1);
      if (!d) return std::nullopt;
      std::vector<int64_t> out;
      for (int64_t x : *d) {
        if (x != 1) out.push_back(x);
      }
      return out;
    }
    if (op == "Gather"sv) {
      auto data = dims(in(0), depth + 1), ind = dims(in(1), depth + 1);
      if (!data || !ind || data->empty() || int_attr(n, "axis", 0) != 0) return std::nullopt;
      std::vector<int64_t> out = *ind;
      out.insert(out.end(), data->begin() + 1, data->end());
      return out;
    }
    if (op == "Concat"sv) return concat_dims(n, depth);
    return std::nullopt;
  }

  // A graph input: its declared shape, the sequence's unknown dims as kSeq.
  std::optional<std::vector<int64_t>> input_dims(Name v) const {
    for (const auto& in : m_.proto->graph().input()) {
      if (in.name() != v || !in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
      std::vector<int64_t> d;
      for (const auto& dim : in.type().tensor_type().shape().dim()) {
        d.push_back(dim.has_dim_value() && dim.dim_value() > 0 ? std::min<int64_t>(dim.dim_value(), kSeq) : kSeq);
      }
      return d;
    }
    return std::nullopt;
  }

  // An elementwise op's output: its inputs' dims broadcast together.
  std::optional<std::vector<int64_t>> elementwise_dims(const NodeRec& n, int depth) {
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& x : n.input()) {
      auto d = dims(x, depth + 1);
      if (!d) return std::nullopt;
      shapes.push_back(*d);
    }
    return broadcast(shapes);
  }

  // A Range's length, from its scalar start, limit and delta.
  std::optional<std::vector<int64_t>> range_dims(const NodeRec& n, int depth) {
    auto start = scalar(input_of(n, 0), depth), limit = scalar(input_of(n, 1), depth), delta = scalar(input_of(n, 2), depth);
    if (!start || !limit || !delta || *delta == 0) return std::nullopt;
    double count = std::ceil((*limit - *start) / *delta);
    if (!(count >= 0) || count > static_cast<double>(kSeq)) return std::nullopt;
    return std::vector<int64_t>{static_cast<int64_t>(count)};
  }

  // An Unsqueeze's output: its input's dims with a 1 at each inserted axis.
  std::optional<std::vector<int64_t>> unsqueeze_dims(int p, const NodeRec& n, int depth) {
    const Dims& d = dims(input_of(n, 0), depth + 1);
    if (!d) return std::nullopt;
    size_t count = 0;  // the axes it inserts
    for (const Attribute& a : n.attribute()) {
      if (a.name == "axes"sv) count = a.ints.size();
    }
    if (count == 0 && n.input_size() > 1) {
      const Dims& listed = dims(input_of(n, 1), depth + 1);
      if (!listed || listed->size() != 1 || (*listed)[0] < 0) return std::nullopt;
      count = static_cast<size_t>((*listed)[0]);
    }
    const std::vector<char>* inserted = inserted_axes(p, n, d->size() + count, depth);
    if (!inserted) return std::nullopt;
    std::vector<int64_t> out;
    size_t from = 0;
    for (char mark : *inserted) {
      if (mark) out.push_back(1);
      else if (from < d->size()) out.push_back((*d)[from++]);
      else return std::nullopt;
    }
    return out;
  }

  // ConstantOfShape, Expand, Reshape: the shape an input lists (broadcast with Expand's data,
  // its 0s and one -1 worked out for Reshape), every dim in [0, kSeq].
  std::optional<std::vector<int64_t>> shaped_dims(const NodeRec& n, std::string_view op, int depth) {
    auto shape = list(input_of(n, op == "ConstantOfShape"sv ? 0 : 1), depth);
    if (!shape) return std::nullopt;
    if (op == "Expand"sv) {
      auto d = dims(input_of(n, 0), depth + 1);
      if (!d) return std::nullopt;
      return broadcast({*d, *shape});
    }
    if (op == "Reshape"sv) {
      auto d = dims(input_of(n, 0), depth + 1);
      if (!d || !reshape_target(*d, *shape)) return std::nullopt;
    }
    for (int64_t x : *shape) {
      if (x < 0 || x > kSeq) return std::nullopt;
    }
    return shape;
  }

  // A Reshape's target shape with its 0s copied from d and its -1 inferred; false when it does
  // not hold d's elements.
  static bool reshape_target(const std::vector<int64_t>& d, std::vector<int64_t>& shape) {
    uint64_t total = 1, known = 1;
    for (int64_t x : d) {
      if (x < 0 || mul_overflows(total, static_cast<uint64_t>(x), &total)) return false;
    }
    int infer = -1;
    for (size_t k = 0; k < shape.size(); ++k) {
      int64_t& s = shape[k];
      if (s == 0 && k < d.size()) s = d[k];
      if (s == -1 && infer < 0) {
        infer = static_cast<int>(k);
        continue;
      }
      if (s <= 0 || mul_overflows(known, static_cast<uint64_t>(s), &known)) return false;
    }
    if (infer >= 0) {
      if (known == 0 || total % known) return false;
      shape[static_cast<size_t>(infer)] = static_cast<int64_t>(total / known);
    } else if (known != total) {
      return false;
    }
    return true;
  }

  // A Concat's output: its parts' dims, summed along its axis (at most kSeq).
  std::optional<std::vector<int64_t>> concat_dims(const NodeRec& n, int depth) {
    std::optional<std::vector<int64_t>> out;
    int64_t axis = int_attr(n, "axis", 0);
    for (const auto& part : n.input()) {
      const Dims& d = dims(part, depth + 1);
      if (!d) return std::nullopt;
      int64_t a = axis < 0 ? axis + static_cast<int64_t>(d->size()) : axis;
      if (a < 0 || static_cast<size_t>(a) >= d->size()) return std::nullopt;
      if (!out) {
        if ((*d)[static_cast<size_t>(a)] < 0 || (*d)[static_cast<size_t>(a)] > kSeq) return std::nullopt;
        out = d;
      } else if (out->size() != d->size() || (*d)[static_cast<size_t>(a)] < 0 ||
                 (*d)[static_cast<size_t>(a)] > kSeq - (*out)[static_cast<size_t>(a)]) {  // a file's dims: no overflow
        return std::nullopt;
      } else {
        Int sum = Int((*out)[static_cast<size_t>(a)]) + Int((*d)[static_cast<size_t>(a)]);  // two stored [1, 2^62]: past 64 bits
        if (!sum.known() || *sum > kSeq) return std::nullopt;
        (*out)[static_cast<size_t>(a)] = *sum;
      }
    }
    return out;
  }
};

// What a causal mask's rows show: a sliding window (each query sees its last W keys) or chunks
// (each query sees the keys of its chunk of C up to itself, Llama 4's chunked attention).
struct Band {
  int64_t window = 0;
  bool chunked = false;
};

// The band of a causal mask, read from a few rows: `allowed(i, j)` says whether query i may see
// key j. nullopt for a plain causal mask, a mask that is not causal, or one that says neither.
template <typename Allowed>
std::optional<Band> read_band(int64_t rows, int64_t columns, Allowed allowed) {
  // The keys row i sees: a run ending at the diagonal, nothing after it, nothing before it.
  auto run = [&](int64_t i) -> std::optional<int64_t> {
    if (i < 0 || i >= rows || i >= columns) return std::nullopt;
    if (i + 1 < columns) {
      auto ahead = allowed(i, i + 1);
      if (!ahead || *ahead) return std::nullopt;  // unknown, or not causal
    }
    if (i >= kMostWindow) {  // a key this far back seen: no window told from causal (one read, not a row)
      auto far = allowed(i, i - kMostWindow);
      if (!far || *far) return std::nullopt;
    }
    int64_t count = 0;
    for (int64_t j = i; j >= 0 && count <= kMostWindow; --j) {
      auto a = allowed(i, j);
      if (!a) return std::nullopt;
      if (!*a) break;
      ++count;
    }
    if (count == 0 || count > kMostWindow) return std::nullopt;
    for (int64_t j : {i - count, i - count - 7, int64_t{0}}) {  // before the run: nothing
      if (j < 0 || j > i - count) continue;
      auto a = allowed(i, j);
      if (!a || *a) return std::nullopt;
    }
    return count;
  };
  int64_t i = std::min(rows, columns) / 2;
  auto first = run(i), second = run(i + 3);
  if (!first || !second) return std::nullopt;
  if (*first == *second && *first < i + 1) return Band{*first, false};  // a sliding window
  // Chunks: row i's run starts its chunk at s; the row before s ends the chunk before, of C keys.
  int64_t start = i - *first + 1;
  if (start < 1) return std::nullopt;
  auto chunk = run(start - 1), opening = run(start);
  if (!chunk || !opening || *opening != 1 || *chunk < *first) return std::nullopt;
  int64_t c = *chunk;
  if (auto end = run(start + c - 1); end && *end != c) return std::nullopt;
  if (auto next = run(start + c); next && *next != 1) return std::nullopt;
  if (start - c < 0 || (start - c > 0 && run(start - c).value_or(0) != 1)) return std::nullopt;
  return Band{c, true};
}

}  // namespace


namespace {

// A block's window from a mask computed in the graph (`mask` the value on the score path,
// `allowed` what an element of it says), when its band shows.
void describe(AttentionBlock& b, const Band& band, const std::string& source) {
  b.window = band.window;
  b.window_from = source + (band.chunked ? ": chunks of " + std::to_string(band.window) +
                                               " tokens, each query attending to the earlier tokens of its chunk (at most " +
                                               std::to_string(band.window) + ")"
                                         : ": each query attends to " + window_words(band.window));
}

// A stored mask of chunks (its windows are read by mask_window): its grid read whole, then its rows.
std::optional<Band> stored_chunks(const Weight& w, bool additive, bool inverted) {
  size_t r = w.dims.size();
  if (r < 2 || w.dims[r - 1] != w.dims[r - 2] || w.dims[r - 1] < 4) return std::nullopt;
  uint64_t side = static_cast<uint64_t>(w.dims[r - 1]);
  if (side * side != w.elements || w.elements > kMostMaskValues) return std::nullopt;
  std::vector<int8_t> grid;  // 1 allowed, 0 forbidden; grows with the values read, not the dims declared
  bool ok = for_each_value(w, [&](uint64_t, double v) {
    if (additive) {
      if (v != 0 && v > -1e4) return false;
      grid.push_back(v == 0 ? 1 : 0);
    } else {
      if (v != 0 && v != 1) return false;
      grid.push_back((v == 1) != inverted ? 1 : 0);
    }
    return true;
  });
  if (!ok) return std::nullopt;
  auto band = read_band(static_cast<int64_t>(side), static_cast<int64_t>(side), [&](int64_t i, int64_t j) -> std::optional<bool> {
    return grid[static_cast<size_t>(i) * side + static_cast<size_t>(j)] != 0;
  });
  if (!band || !band->chunked) return std::nullopt;
  return band;
}

// One answer per mask value and reading of it: the layers of a model share one computed mask.
using WindowCache = std::map<std::tuple<int, std::string, int>, std::optional<int64_t>>;

// What the computed masks of one audit share: the answers, one evaluator per graph (what it
// worked out of a value serves every mask that reads it) and the budget they spend.
struct ComputedMasks {
  const Model& m;
  ValueBudget& budget;
  WindowCache cache;
  std::map<int, MaskEval> evals;
  MaskEval& eval(int g) { return evals.try_emplace(g, m, g, budget).first->second; }
};

template <typename Allowed>
void computed(ComputedMasks& masks, int g, AttentionBlock& b, Name mask, int reading, Allowed allowed_value) {
  if (b.window) return;
  auto key = std::make_tuple(g, std::string(mask), reading);
  auto hit = masks.cache.find(key);
  if (hit != masks.cache.end()) {
    if (hit->second) describe(b, Band{std::abs(*hit->second), *hit->second < 0}, "a mask computed from positions on the score path");
    return;
  }
  std::optional<int64_t>& answer = masks.cache[key];
  MaskEval& eval = masks.eval(g);
  Dims d = eval.dims(mask);
  if (!d || d->size() < 2) return;
  std::vector<int64_t> idx(d->size(), 0);
  auto allowed = [&](int64_t i, int64_t j) -> std::optional<bool> {
    idx[idx.size() - 2] = (*d)[d->size() - 2] == 1 ? 0 : i;
    idx[idx.size() - 1] = j;
    auto v = eval.element(mask, idx);
    if (!v) return std::nullopt;
    return allowed_value(*v);
  };
  if (auto band = read_band((*d)[d->size() - 2], (*d)[d->size() - 1], allowed)) {
    answer = band->chunked ? -band->window : band->window;  // cached with the chunking in the sign
    describe(b, *band, "a mask computed from positions on the score path");
  }
}

// What a stored mask's values show, read once however many blocks add it: chunks, or a window.
struct StoredBand {
  std::optional<Band> chunks;
  std::optional<int64_t> window;
};

using StoredCache = std::map<std::tuple<const Weight*, bool, bool>, StoredBand>;

// A stored mask's band, each element read at most twice per audit (once for chunks, once for a
// window), spending from the budget; nothing when the budget cannot pay for it.
const StoredBand& stored_band(const Weight& w, bool additive, bool inverted, StoredCache& cache, ValueBudget& budget) {
  auto key = std::make_tuple(&w, additive, inverted);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  StoredBand band;
  uint64_t reads = std::min<uint64_t>(w.elements, kMostMaskValues);
  if (budget.spend(kEvaluator, 2 * reads * ValueBudget::kElement)) {
    band.chunks = stored_chunks(w, additive, inverted);
    if (!band.chunks) band.window = mask_window(w, additive, inverted);
  }
  return cache.emplace(key, band).first->second;
}

}  // namespace

void find_windows(const Model& m, AttentionResult& attention, bool read_values, ValueBudget* audit_budget) {
  // Evaluating masks spends from the audit's one allowance: a file cannot make it slow.
  std::optional<ValueBudget> own;
  ValueBudget& budget = audit_budget ? *audit_budget : own.emplace(m);
  ComputedMasks masks{m, budget, {}, {}};
  StoredCache stored;
  for (AttentionBlock& b : attention.blocks) {
    if (b.core_node < 0) continue;
    const auto& core = *m.nodes[static_cast<size_t>(b.core_node)].rec;
    int g = m.nodes[static_cast<size_t>(b.core_node)].graph;
    if (b.form != "unfused") {
      // onnxruntime's GroupQueryAttention (and SparseAttention) attend to the token and the
      // local_window_size before it; -1 is no window.
      for (const Attribute& a : core.attribute()) {
        if (a.name != "local_window_size"sv || !a.has_i || a.i < 0 || a.i == INT64_MAX) continue;
        b.window = a.i + 1;
        b.window_from = "attribute local_window_size " + std::to_string(a.i) + " of " + label(m, b.core_node) +
                        ": each query attends to " + window_words(a.i + 1);
      }
      continue;
    }
    // The masks on the score path: Add(scores, mask) or Where(condition, scores, fill); a mask
    // stored is read only with the content (read_values), one computed from positions always.
    for (size_t s = 1; s < b.score_nodes.size() && !b.window; ++s) {
      int ni = b.score_nodes[s];
      const auto& n = *m.nodes[static_cast<size_t>(ni)].rec;
      std::string_view op = n.op_type();
      std::string on_path = std::string(output_of(*m.nodes[static_cast<size_t>(b.score_nodes[s - 1])].rec, 0));
      if (op == "Add"sv) {
        for (const auto& in : n.input()) {
          if (in == on_path) continue;
          bool inverted = false;
          const Weight* w = mask_source(m, g, in, &inverted);
          if (!w) {
            computed(masks, g, b, in, 0, [](double v) -> std::optional<bool> {
              if (v == 0) return true;
              if (v <= -1e4) return false;
              return std::nullopt;
            });
            continue;
          }
          if (inverted || !read_values) continue;
          const StoredBand& read = stored_band(*w, true, false, stored, budget);
          if (auto band = read.chunks) {
            describe(b, *band, "the mask '" + std::string(w->name) + "' " + shape_string(w->dims) + " added to the scores");
          } else if (auto win = read.window) {
            b.window = win;
            b.window_from = "the band of the mask '" + std::string(w->name) + "' " + shape_string(w->dims) +
                            " added to the scores: 0 where 0 ≤ i − j < " + std::to_string(*win) +
                            ", so each query attends to " + window_words(*win);
          }
        }
      } else if (op == "Where"sv && n.input_size() == 3) {
        // The scores on the true branch: the condition allows; on the false branch: it forbids.
        bool scores_if_true = input_of(n, 1) == on_path;
        if (!scores_if_true && input_of(n, 2) != on_path) continue;
        bool inverted = !scores_if_true;
        const Weight* w = mask_source(m, g, input_of(n, 0), &inverted);
        if (!w) {
          computed(masks, g, b, input_of(n, 0), scores_if_true ? 1 : 2, [scores_if_true](double v) -> std::optional<bool> {
            return (v != 0) == scores_if_true;
          });
          continue;
        }
        if (!read_values) continue;
        const StoredBand& read = stored_band(*w, false, inverted, stored, budget);
        if (auto band = read.chunks) {
          describe(b, *band, "the boolean mask '" + std::string(w->name) + "' " + shape_string(w->dims) + " that selects the scores");
        } else if (auto win = read.window) {
          b.window = win;
          b.window_from = "the band of the boolean mask '" + std::string(w->name) + "' " + shape_string(w->dims) +
                          " that selects the scores: each query attends to " + window_words(*win);
        }
      }
    }
  }
}

}  // namespace headcount
