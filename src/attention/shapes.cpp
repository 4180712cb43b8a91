// shapes.cpp: integer evaluation of shape computations and last-dimension tracking.
#include "shapes.h"

#include <algorithm>
#include <cctype>

namespace headcount::detail {
namespace {

constexpr int kMaxEvalDepth = 48;
constexpr size_t kMaxVector = 64;  // shape vectors are short; anything longer is not a shape

Dims from_type(const onnx::TypeProto& t) {
  Dims d;
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return d;
  const auto& shape = t.tensor_type().shape();
  d.rank = shape.dim_size();
  for (const auto& dim : shape.dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) d.d.push_back(dim.dim_value());
    else d.d.push_back(std::nullopt);
  }
  return d;
}

Dims from_dims(const std::vector<int64_t>& v) {
  Dims d;
  d.rank = static_cast<int>(v.size());
  for (auto x : v) d.d.push_back(x);
  return d;
}

std::optional<int64_t> norm_axis(int64_t axis, int rank) {
  if (rank < 0) return std::nullopt;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return std::nullopt;
  return axis;
}

// Broadcast of elementwise inputs: a known dim > 1 wins, 1 yields to the other side.
Dims broadcast(const std::vector<Dims>& in) {
  Dims out;
  if (in.empty()) return out;
  int rank = -1;
  bool all_known = true;
  for (const auto& d : in) {
    if (d.rank < 0) all_known = false;
    rank = std::max(rank, d.rank);
  }
  if (!all_known || rank < 0) {
    // Rank unknown: still carry the feature width when some input knows it.
    for (const auto& d : in) {
      auto l = d.last();
      if (l && *l > 1) out.tail = l;
    }
    return out;
  }
  out.rank = rank;
  out.d.assign(static_cast<size_t>(rank), std::nullopt);
  for (int i = 0; i < rank; ++i) {
    MaybeInt v;
    bool unknown = false;
    for (const auto& d : in) {
      int j = i - (rank - d.rank);
      if (j < 0) continue;
      auto x = d.d[static_cast<size_t>(j)];
      if (!x) { unknown = true; continue; }
      if (*x != 1) v = x;
      else if (!v) v = 1;
    }
    if (v && (*v != 1 || !unknown)) out.d[static_cast<size_t>(i)] = v;
  }
  return out;
}

bool is_unary_same_shape(const std::string& op) {
  static const char* ops[] = {"Cast", "Identity", "Relu", "Gelu", "FastGelu", "BiasGelu", "Erf", "Sqrt", "Neg",
                              "Softmax", "LogSoftmax", "Dropout", "Tanh", "Sigmoid", "LayerNormalization",
                              "SimplifiedLayerNormalization", "SkipLayerNormalization",
                              "SkipSimplifiedLayerNormalization", "QuantizeLinear", "DequantizeLinear", "Abs",
                              "Exp", "Log", "Not", "Reciprocal", "Floor", "Ceil", "Round", "HardSigmoid",
                              "LeakyRelu", "Elu", "Selu", "Softplus", "Mish", "QuickGelu", "BiasAdd",
                              "RotaryEmbedding", "CastLike", "Clip", "IsNaN", "IsInf", "Sign", "Sin", "Cos"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

bool is_elementwise_binary(const std::string& op) {
  static const char* ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "Where", "Equal", "Less", "Greater",
                              "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Max", "Min", "Mod",
                              "PRelu", "BitShift", "Sum", "Mean"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

std::optional<int64_t> div_floor(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

std::optional<EinsumEquation> parse_einsum(const onnx::NodeProto& n) {
  if (n.op_type() != "Einsum" || n.input_size() != 2) return std::nullopt;
  const auto* a = ShapeOracle::attr(n, "equation");
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
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += v[i] ? std::to_string(*v[i]) : "?";
  }
  return s + "]";
}

const onnx::AttributeProto* ShapeOracle::attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t ShapeOracle::attr_int(const onnx::NodeProto& n, const char* name, int64_t fallback) {
  const auto* a = attr(n, name);
  return a && a->has_i() ? a->i() : fallback;
}

std::optional<std::vector<int64_t>> ShapeOracle::attr_ints(const onnx::NodeProto& n, const char* name) {
  const auto* a = attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

ShapeOracle::ShapeOracle(const Model& model) : m_(model) {
  dims_.resize(m_.graphs.size());
  eval_memo_.resize(m_.graphs.size());
  // Declared types of the main graph; subgraph and function types are rarely present.
  const auto& gp = m_.proto->graph();
  for (const auto& vi : gp.input()) dims_[0][vi.name()] = from_type(vi.type());
  for (const auto& vi : gp.value_info()) dims_[0][vi.name()] = from_type(vi.type());
  for (const auto& vi : gp.output()) dims_[0][vi.name()] = from_type(vi.type());
  for (size_t g = 0; g < m_.graphs.size(); ++g) {
    for (int ni : m_.graphs[g].nodes) propagate(static_cast<int>(g), *m_.nodes[ni].proto);
  }
}

Dims ShapeOracle::dims(int g, const std::string& value) const {
  for (int s = g; s >= 0; s = m_.graphs[s].parent) {
    auto it = dims_[s].find(value);
    if (it != dims_[s].end()) return it->second;
    auto w = m_.graphs[s].weight.find(value);
    if (w != m_.graphs[s].weight.end()) return from_dims(m_.weights[w->second].dims);
    if (m_.graphs[s].producer.count(value)) return Dims{};
  }
  return Dims{};
}

// Computes the output dims of one node from its inputs' (already computed) dims.
void ShapeOracle::propagate(int g, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (n.output_size() == 0) return;
  auto in = [&](int i) { return i < n.input_size() && !input_of(n, i).empty() ? dims(g, input_of(n, i)) : Dims{}; };
  auto set = [&](int i, Dims d) {
    if (i < n.output_size() && !output_of(n, i).empty() && !dims_[g].count(output_of(n, i))) dims_[g][output_of(n, i)] = std::move(d);
  };
  if (op == "Constant") return;  // a weight: dims() answers from the weight table
  if (is_unary_same_shape(op)) {
    set(0, in(0));
    return;
  }
  if (is_elementwise_binary(op)) {
    std::vector<Dims> all;
    for (int i = 0; i < n.input_size(); ++i) all.push_back(in(i));
    set(0, broadcast(all));
    return;
  }
  if (op == "MatMul" || op == "MatMulInteger" || op == "FusedMatMul" || op == "MatMulIntegerToFloat" ||
      op == "DynamicQuantizeMatMul") {
    Dims a = in(0), b = in(1), out;
    if (ShapeOracle::attr_int(n, "transB", 0)) b = Dims{};  // FusedMatMul with transposed B
    if (a.rank >= 2 && b.rank >= 2) {
      out.rank = std::max(a.rank, b.rank);
      out.d.assign(static_cast<size_t>(out.rank), std::nullopt);
      Dims batch_a = a, batch_b = b;
      batch_a.d.resize(static_cast<size_t>(a.rank - 2));
      batch_a.rank -= 2;
      batch_b.d.resize(static_cast<size_t>(b.rank - 2));
      batch_b.rank -= 2;
      Dims batch = broadcast({batch_a, batch_b});
      for (int i = 0; i < out.rank - 2; ++i) out.d[static_cast<size_t>(i)] = batch.d[static_cast<size_t>(i)];
      out.d[static_cast<size_t>(out.rank - 2)] = a.d[static_cast<size_t>(a.rank - 2)];
      out.d[static_cast<size_t>(out.rank - 1)] = b.d.back();
    } else {
      out.tail = b.last();
    }
    set(0, out);
    return;
  }
  if (op == "MatMulNBits") {
    Dims out = in(0);
    auto width = ShapeOracle::attr_int(n, "N", -1);
    if (out.rank > 0) out.d.back() = width > 0 ? MaybeInt(width) : std::nullopt;
    else out.tail = width > 0 ? MaybeInt(width) : std::nullopt;
    set(0, out);
    return;
  }
  if (op == "Gemm") {
    Dims a = in(0), b = in(1), out;
    bool ta = ShapeOracle::attr_int(n, "transA", 0), tb = ShapeOracle::attr_int(n, "transB", 0);
    out.rank = 2;
    out.d = {a.rank == 2 ? a.d[ta ? 1 : 0] : std::nullopt, b.rank == 2 ? b.d[tb ? 0 : 1] : std::nullopt};
    set(0, out);
    return;
  }
  if (op == "Transpose") {
    Dims a = in(0), out;
    if (a.rank < 0) {
      set(0, out);
      return;
    }
    auto perm = ShapeOracle::attr_ints(n, "perm");
    std::vector<int64_t> p;
    if (perm) p = *perm;
    else for (int i = a.rank - 1; i >= 0; --i) p.push_back(i);
    if (static_cast<int>(p.size()) != a.rank) {
      set(0, out);
      return;
    }
    out.rank = a.rank;
    for (auto i : p) out.d.push_back(i >= 0 && i < a.rank ? a.d[static_cast<size_t>(i)] : std::nullopt);
    set(0, out);
    return;
  }
  if (op == "Reshape") {
    Dims a = in(0), out;
    auto target = n.input_size() > 1 ? eval(g, input_of(n, 1)) : std::nullopt;
    if (!target) {
      set(0, out);
      return;
    }
    bool allowzero = ShapeOracle::attr_int(n, "allowzero", 0) != 0;
    out.rank = static_cast<int>(target->size());
    for (size_t i = 0; i < target->size(); ++i) {
      MaybeInt t = (*target)[i];
      if (t && *t > 0) out.d.push_back(t);
      else if (t && *t == 0 && !allowzero && a.rank > static_cast<int>(i)) out.d.push_back(a.d[i]);
      else out.d.push_back(std::nullopt);
    }
    set(0, out);
    return;
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    Dims a = in(0), out;
    std::optional<std::vector<int64_t>> axes = ShapeOracle::attr_ints(n, "axes");
    if (!axes && n.input_size() > 1) {
      auto v = eval(g, input_of(n, 1));
      if (v && std::all_of(v->begin(), v->end(), [](const MaybeInt& x) { return x.has_value(); })) {
        axes = std::vector<int64_t>();
        for (auto& x : *v) axes->push_back(*x);
      }
    }
    if (a.rank < 0 || !axes) {
      // Unsqueeze at an axis other than the last keeps the feature width.
      if (op == "Unsqueeze" && axes && std::all_of(axes->begin(), axes->end(), [](int64_t x) { return x >= 0; })) out.tail = a.last();
      set(0, out);
      return;
    }
    if (op == "Unsqueeze") {
      int rank = a.rank + static_cast<int>(axes->size());
      std::vector<bool> inserted(static_cast<size_t>(rank), false);
      for (auto x : *axes) {
        auto ax = norm_axis(x, rank);
        if (ax) inserted[static_cast<size_t>(*ax)] = true;
      }
      out.rank = rank;
      size_t j = 0;
      for (int i = 0; i < rank; ++i) {
        if (inserted[static_cast<size_t>(i)]) out.d.push_back(1);
        else out.d.push_back(j < a.d.size() ? a.d[j++] : std::nullopt);
      }
    } else {
      std::vector<bool> removed(static_cast<size_t>(a.rank), false);
      for (auto x : *axes) {
        auto ax = norm_axis(x, a.rank);
        if (ax) removed[static_cast<size_t>(*ax)] = true;
      }
      out.rank = 0;
      for (int i = 0; i < a.rank; ++i) {
        if (!removed[static_cast<size_t>(i)]) {
          out.d.push_back(a.d[static_cast<size_t>(i)]);
          ++out.rank;
        }
      }
    }
    set(0, out);
    return;
  }
  if (op == "Concat") {
    std::vector<Dims> all;
    for (int i = 0; i < n.input_size(); ++i) all.push_back(in(i));
    Dims out;
    int rank = -1;
    for (auto& d : all) rank = std::max(rank, d.rank);
    auto axis = norm_axis(ShapeOracle::attr_int(n, "axis", 0), rank);
    if (rank < 0 || !axis) {
      set(0, out);
      return;
    }
    out.rank = rank;
    out.d.assign(static_cast<size_t>(rank), std::nullopt);
    for (int i = 0; i < rank; ++i) {
      if (i == *axis) {
        int64_t sum = 0;
        bool known = true;
        for (auto& d : all) {
          if (d.rank != rank || !d.d[static_cast<size_t>(i)]) known = false;
          else sum += *d.d[static_cast<size_t>(i)];
        }
        if (known) out.d[static_cast<size_t>(i)] = sum;
      } else {
        for (auto& d : all) {
          if (d.rank == rank && d.d[static_cast<size_t>(i)]) out.d[static_cast<size_t>(i)] = d.d[static_cast<size_t>(i)];
        }
      }
    }
    set(0, out);
    return;
  }
  if (op == "Split") {
    Dims a = in(0);
    auto axis = norm_axis(ShapeOracle::attr_int(n, "axis", 0), a.rank);
    std::optional<std::vector<int64_t>> sizes = ShapeOracle::attr_ints(n, "split");
    if (!sizes && n.input_size() > 1 && !input_of(n, 1).empty()) {
      auto v = eval(g, input_of(n, 1));
      if (v && std::all_of(v->begin(), v->end(), [](const MaybeInt& x) { return x.has_value(); })) {
        sizes = std::vector<int64_t>();
        for (auto& x : *v) sizes->push_back(*x);
      }
    }
    for (int o = 0; o < n.output_size(); ++o) {
      Dims out = a;
      if (axis) {
        MaybeInt size;
        if (sizes && o < static_cast<int>(sizes->size())) size = (*sizes)[static_cast<size_t>(o)];
        else if (a.d[static_cast<size_t>(*axis)] && n.output_size() > 0) size = *a.d[static_cast<size_t>(*axis)] / n.output_size();
        out.d[static_cast<size_t>(*axis)] = size;
      } else {
        out = Dims{};
      }
      set(o, out);
    }
    return;
  }
  if (op == "Slice") {
    Dims a = in(0), out = a;
    if (a.rank < 0) {
      set(0, Dims{});
      return;
    }
    auto starts = n.input_size() > 1 ? eval(g, input_of(n, 1)) : std::nullopt;
    auto ends = n.input_size() > 2 ? eval(g, input_of(n, 2)) : std::nullopt;
    std::optional<IntVector> axes;
    if (n.input_size() > 3 && !input_of(n, 3).empty()) axes = eval(g, input_of(n, 3));
    if (!starts || !ends || starts->size() != ends->size()) {
      for (auto& d : out.d) d = std::nullopt;
      set(0, out);
      return;
    }
    if (!axes) {
      axes = IntVector();
      for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
    }
    for (size_t i = 0; i < starts->size() && i < axes->size(); ++i) {
      auto ax = (*axes)[i] ? norm_axis(*(*axes)[i], a.rank) : std::nullopt;
      if (!ax) continue;
      auto& dim = out.d[static_cast<size_t>(*ax)];
      if (!dim || !(*starts)[i] || !(*ends)[i]) {
        dim = std::nullopt;
        continue;
      }
      int64_t size = *dim, s = *(*starts)[i], e = *(*ends)[i];
      if (s < 0) s += size;
      if (e < 0) e += size;
      s = std::clamp<int64_t>(s, 0, size);
      e = std::clamp<int64_t>(e, 0, size);
      dim = std::max<int64_t>(0, e - s);
    }
    set(0, out);
    return;
  }
  if (op == "Gather") {
    Dims a = in(0), idx = in(1), out;
    auto axis = norm_axis(ShapeOracle::attr_int(n, "axis", 0), a.rank);
    if (a.rank < 0 || idx.rank < 0 || !axis) {
      if (a.rank > 1 && axis && *axis < a.rank - 1) out.tail = a.d.back();
      set(0, out);
      return;
    }
    out.rank = a.rank - 1 + idx.rank;
    for (int i = 0; i < *axis; ++i) out.d.push_back(a.d[static_cast<size_t>(i)]);
    for (auto& x : idx.d) out.d.push_back(x);
    for (int i = static_cast<int>(*axis) + 1; i < a.rank; ++i) out.d.push_back(a.d[static_cast<size_t>(i)]);
    set(0, out);
    return;
  }
  if (op == "Expand" || op == "Tile") {
    Dims a = in(0), out;
    auto shape = n.input_size() > 1 ? eval(g, input_of(n, 1)) : std::nullopt;
    if (shape && op == "Expand") {
      Dims target;
      target.rank = static_cast<int>(shape->size());
      target.d = *shape;
      out = broadcast({a, target});
    } else if (shape && op == "Tile" && a.rank == static_cast<int>(shape->size())) {
      out = a;
      for (size_t i = 0; i < shape->size(); ++i) {
        if (out.d[i] && (*shape)[i]) out.d[i] = *out.d[i] * *(*shape)[i];
        else out.d[i] = std::nullopt;
      }
    }
    set(0, out);
    return;
  }
  if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin") {
    Dims a = in(0), out;
    bool keep = ShapeOracle::attr_int(n, "keepdims", 1) != 0;
    auto axes = ShapeOracle::attr_ints(n, "axes");
    if (!axes && n.input_size() > 1) {
      auto v = eval(g, input_of(n, 1));
      if (v && std::all_of(v->begin(), v->end(), [](const MaybeInt& x) { return x.has_value(); })) {
        axes = std::vector<int64_t>();
        for (auto& x : *v) axes->push_back(*x);
      }
    }
    if (keep && a.rank >= 0 && axes) {
      out = a;
      for (auto x : *axes) {
        auto ax = norm_axis(x, a.rank);
        if (ax) out.d[static_cast<size_t>(*ax)] = 1;
      }
    }
    set(0, out);
    return;
  }
  // Unknown op: nothing is known of its outputs.
}

std::optional<IntVector> ShapeOracle::eval(int g, const std::string& value, int depth) {
  if (value.empty() || depth > kMaxEvalDepth) return std::nullopt;
  // Resolve the scope that defines the value, so memo entries are per defining graph.
  int s = g;
  for (; s >= 0; s = m_.graphs[s].parent) {
    if (m_.graphs[s].producer.count(value) || m_.graphs[s].weight.count(value)) break;
  }
  if (s < 0) return std::nullopt;  // a graph input: a run-time value
  auto memo = eval_memo_[s].find(value);
  if (memo != eval_memo_[s].end()) return memo->second;
  std::optional<IntVector> result;
  if (const Weight* w = m_.weight_for(s, value); w && w->proto) {
    if (auto ints = int_values(*w->proto)) {
      if (ints->size() <= kMaxVector) result = IntVector(ints->begin(), ints->end());
    } else if (auto floats = float_values(*w->proto)) {
      if (floats->size() <= kMaxVector) {
        IntVector v;
        bool integral = true;
        for (double f : *floats) {
          if (f != static_cast<double>(static_cast<int64_t>(f))) integral = false;
          v.push_back(static_cast<int64_t>(f));
        }
        if (integral) result = v;
      }
    }
  } else if (int p = m_.producer_of(s, value); p >= 0) {
    result = eval_node(s, *m_.nodes[p].proto, value, depth + 1);
  }
  eval_memo_[s][value] = result;
  return result;
}

std::optional<IntVector> ShapeOracle::eval_node(int g, const onnx::NodeProto& n, const std::string& value,
                                                int depth) {
  const std::string& op = n.op_type();
  auto arg = [&](int i) -> std::optional<IntVector> {
    if (i >= n.input_size() || input_of(n, i).empty()) return std::nullopt;
    return eval(g, input_of(n, i), depth);
  };
  if (op == "Shape") {
    Dims d = dims(g, input_of(n, 0));
    if (d.rank < 0) return std::nullopt;
    int64_t start = attr_int(n, "start", 0), end = attr_int(n, "end", d.rank);
    if (start < 0) start += d.rank;
    if (end < 0) end += d.rank;
    start = std::clamp<int64_t>(start, 0, d.rank);
    end = std::clamp<int64_t>(end, 0, d.rank);
    return IntVector(d.d.begin() + start, d.d.begin() + std::max(start, end));
  }
  if (op == "Identity" || op == "Cast" || op == "Floor" || op == "Ceil" || op == "Round") return arg(0);
  if (op == "Squeeze" || op == "Unsqueeze") {
    auto v = arg(0);
    return v;  // values of a 0-D/1-D shape tensor do not change
  }
  if (op == "Gather") {
    auto idx = arg(1);
    if (!idx || idx->size() != 1 || !(*idx)[0]) return std::nullopt;
    int64_t i = *(*idx)[0];
    // Gather(Shape(x), -1) needs only x's last dimension, even when x's rank is unknown.
    int p = m_.producer_of(g, input_of(n, 0));
    if (i == -1 && p >= 0 && m_.nodes[p].proto->op_type() == "Shape" && attr(*m_.nodes[p].proto, "start") == nullptr &&
        attr(*m_.nodes[p].proto, "end") == nullptr) {
      auto last = dims(g, input_of(*m_.nodes[p].proto, 0)).last();
      if (!last) return std::nullopt;
      return IntVector{last};
    }
    auto data = arg(0);
    if (!data) return std::nullopt;
    if (i < 0) i += static_cast<int64_t>(data->size());
    if (i < 0 || i >= static_cast<int64_t>(data->size())) return std::nullopt;
    return IntVector{(*data)[static_cast<size_t>(i)]};
  }
  if (op == "Concat") {
    IntVector out;
    for (int i = 0; i < n.input_size(); ++i) {
      auto v = arg(i);
      if (!v) {
        // An unknown piece of known length 1 (an Unsqueezed scalar) keeps the others readable.
        int p = m_.producer_of(g, input_of(n, i));
        if (p >= 0 && m_.nodes[p].proto->op_type() == "Unsqueeze") {
          out.push_back(std::nullopt);
          continue;
        }
        return std::nullopt;
      }
      out.insert(out.end(), v->begin(), v->end());
      if (out.size() > kMaxVector) return std::nullopt;
    }
    return out;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    auto a = arg(0), b = arg(1);
    if (!a || !b) return std::nullopt;
    size_t len = std::max(a->size(), b->size());
    if ((a->size() != len && a->size() != 1) || (b->size() != len && b->size() != 1)) return std::nullopt;
    IntVector out;
    for (size_t i = 0; i < len; ++i) {
      MaybeInt x = (*a)[a->size() == 1 ? 0 : i], y = (*b)[b->size() == 1 ? 0 : i];
      if (!x || !y) {
        out.push_back(std::nullopt);
        continue;
      }
      int64_t r = 0;
      bool overflow = false;
      if (op == "Add") overflow = __builtin_add_overflow(*x, *y, &r);
      else if (op == "Sub") overflow = __builtin_sub_overflow(*x, *y, &r);
      else if (op == "Mul") overflow = __builtin_mul_overflow(*x, *y, &r);
      else {
        auto q = div_floor(*x, *y);
        if (!q) overflow = true;
        else r = *q;
      }
      out.push_back(overflow ? MaybeInt() : MaybeInt(r));
    }
    return out;
  }
  if (op == "Slice") {
    auto data = arg(0), starts = arg(1), ends = arg(2);
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1 || !(*starts)[0] || !(*ends)[0]) {
      return std::nullopt;
    }
    int64_t size = static_cast<int64_t>(data->size()), s = *(*starts)[0], e = *(*ends)[0];
    if (s < 0) s += size;
    if (e < 0) e += size;
    s = std::clamp<int64_t>(s, 0, size);
    e = std::clamp<int64_t>(e, 0, size);
    if (e <= s) return IntVector{};
    return IntVector(data->begin() + s, data->begin() + e);
  }
  (void)value;
  return std::nullopt;
}

}  // namespace headcount::detail
