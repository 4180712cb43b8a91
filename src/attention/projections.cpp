// projections.cpp: the walks from the attention core to the Q/K/V and O projections.
#include "projections.h"

#include <algorithm>
#include <climits>
#include <functional>

#include "../ops.h"

namespace headcount::detail {
namespace {

constexpr int kMaxWalk = 64;
constexpr int kWalkBudget = 512;

// Ops that carry Q/K/V unchanged in content between a projection and the attention core. Reshape
// is not one: the walk reads it for the heads (back_impl) before it asks this.
// RotaryEmbedding rotates pairs of features and Neg (rotate_half's) flips signs: each element
// stays in its head and position. Abs is left out, as it always was.
bool is_pass_through(std::string_view op) {
  if (op == "RotaryEmbedding"sv) return true;
  if (op_has(op, Trait::SignChange)) return op != "Abs"sv;
  return op_has(op, Trait::LayoutOnly | Trait::Repeats | Trait::NoOp | Trait::Cast | Trait::Quantize |
                        Trait::Dequantize) &&
         op != "Reshape"sv;
}

// Between a norm's mean and its root: + eps (an Add, or a Max with eps), 1 / root (a Div) and a
// Cast. Not Sub, Mul or Pow, which would be a statistic of another value. (A walk's own set, one
// op a line: no trait of the table is this set.)
bool between_mean_and_root(std::string_view op) {
  if (op == "Add"sv) return true;
  if (op == "Max"sv) return true;
  if (op == "Div"sv) return true;
  return op == "Cast"sv;
}

// A Slice of one axis with constant bounds: [begin, end) inside an axis of `size`, or nullopt
// when the bounds are not constants, name another axis (`axis_ok` says which ones count), step,
// or select nothing.
std::optional<std::pair<int64_t, int64_t>> slice_bounds(ShapeOracle& s, int g, const NodeRec& n, Int size,
                                                        const std::function<bool(Int)>& axis_ok) {
  NodeView v(s, g, n, 0);
  auto starts = v.value(1), ends = v.value(2), axes = v.value(3), steps = v.value(4);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  if (v.has(3) && (!axes || axes->size() != 1 || !axis_ok((*axes)[0]))) return std::nullopt;
  if (!v.has(3) && !axis_ok(0)) return std::nullopt;
  if (v.has(4) && (!steps || steps->size() != 1 || !(*steps)[0].is(1))) return std::nullopt;
  Int b = clamp_index((*starts)[0], size), e = clamp_index((*ends)[0], size);
  if (!b || !e || *e <= *b) return std::nullopt;
  return std::make_pair(*b, *e);
}

// The index a Slice takes when it keeps one element of one axis with constant bounds (a step of
// 1), or nullopt.
std::optional<int64_t> single_index(ShapeOracle& s, int g, const NodeRec& n) {
  NodeView v(s, g, n, 0);
  Dims d = s.dims(g, input_of(n, 0));
  Int axis = 0;
  if (v.has(3)) {
    auto axes = v.value(3);
    if (!axes || axes->size() != 1) return std::nullopt;
    axis = (*axes)[0];
  }
  if (d.rank <= 0 || !axis) return std::nullopt;
  if (*axis < 0) axis = axis + d.rank;
  if (!axis || *axis < 0 || *axis >= d.rank) return std::nullopt;
  Int size = d.d[static_cast<size_t>(*axis)];
  auto bounds = slice_bounds(s, g, n, size, [&](Int a) { return a.is(*axis) || a.is(*axis - d.rank); });
  if (!bounds || bounds->second - bounds->first != 1) return std::nullopt;
  return bounds->first;
}

}  // namespace

std::string ProjectionWalker::label(int node) const {
  const auto& n = *m_.nodes[node].rec;
  return std::string(n.op_type()) + " '" + std::string(n.name().empty() ? n.output_size() ? output_of(n, 0) : "?"sv : n.name()) + "'";
}

std::optional<WeightRef> ProjectionWalker::weight_of(int g, Name value, int depth) {
  if (value.empty() || depth > 16) return std::nullopt;
  if (const Weight* w = m_.weight_for(g, value)) {
    WeightRef r;
    r.weight = static_cast<int>(w - m_.weights.data());
    return r;
  }
  int p = m_.producer_of(g, value);
  if (p < 0) return std::nullopt;
  const auto& n = *m_.nodes[p].rec;
  std::string_view op = n.op_type();
  // Not Transpose: a transposed weight is a WeightRef of its own (below).
  if (op_has(op, Trait::LayoutOnly | Trait::Cast) && op != "Transpose"sv) {
    return weight_of(g, input_of(n, 0), depth + 1);
  }
  if (op == "DequantizeLinear"sv) {
    auto r = weight_of(g, input_of(n, 0), depth + 1);
    if (r) {
      r->quantized = true;
      r->via = "DequantizeLinear";
    }
    return r;
  }
  if (op == "Transpose"sv) {
    auto r = weight_of(g, input_of(n, 0), depth + 1);
    if (r) r->transposed = !r->transposed;
    return r;
  }
  if (op == "Slice"sv) {
    auto r = weight_of(g, input_of(n, 0), depth + 1);
    if (!r || r->rows || r->transposed) return std::nullopt;
    const Weight& w = m_.weights[r->weight];
    if (w.dims.empty()) return std::nullopt;
    auto rows = slice_bounds(s_, g, n, w.dims[0], [](Int axis) { return axis.is(0); });
    if (!rows) return std::nullopt;
    r->rows = rows;
    r->via = "Slice";
    return r;
  }
  return std::nullopt;
}

std::optional<ProjectionHit> ProjectionWalker::as_projection(int g, int node, Name activation) {
  const auto& n = *m_.nodes[node].rec;
  std::string_view op = n.op_type();
  if (op == "Einsum"sv) return einsum_projection(g, node, activation);
  // Where the product's weight and bias are, and its transposes: its row of the op table.
  const ProductOperands operands = op_product(op);
  const int weight_input = operands.weight, bias_input = operands.bias;
  if (weight_input < 0) return std::nullopt;
  const bool trans = operands.trans_b && attr_flag(n, "transB");
  if (operands.trans_a && attr_flag(n, "transA")) return std::nullopt;
  if (n.input_size() <= weight_input || input_of(n, 0) != activation) return std::nullopt;
  if (m_.weight_for(g, activation)) return std::nullopt;  // both operands constant: not a projection
  auto w = weight_of(g, input_of(n, weight_input));
  // A weight operand fed as a graph input, float or quantized (onnxruntime's dynamic quantizer
  // writes MatMulInteger on an int8 input): not the packed ones, whose declared shape is bytes.
  if (!w && !op_has(op, Trait::PackedWeights)) {
    return input_projection(g, node, activation, input_of(n, weight_input), trans);
  }
  if (!w) return std::nullopt;
  const Weight& tensor = m_.weights[w->weight];
  ProjectionHit hit;
  hit.node = node;
  hit.weight = *w;
  hit.input = activation;
  if (op == "MatMulNBits"sv) {
    hit.in = attr_int(n, "K");
    hit.out = attr_int(n, "N");
  } else {
    if (tensor.dims.size() < 2) return std::nullopt;
    if (w->transposed != trans) {  // stored [out, in]
      if (tensor.dims.size() != 2) return std::nullopt;
      hit.out = tensor.dims[0];
      hit.in = tensor.dims[1];
    } else {
      hit.in = tensor.dims[0];
      hit.out = 1;
      for (size_t i = 1; i < tensor.dims.size(); ++i) hit.out *= tensor.dims[i];
    }
    if (w->rows) {  // a row slice of the stored tensor: rows are outputs when stored [out, in]
      int64_t len = w->rows->second - w->rows->first;
      if (w->transposed != trans) hit.out = len;
      else hit.in = len;
    }
  }
  auto elements = (hit.in * hit.out).count();
  if (!hit.in.positive() || !hit.out.positive() || !elements) return std::nullopt;
  hit.logical_elements = *elements;
  if (bias_input >= 0 && n.input_size() > bias_input && !input_of(n, bias_input).empty()) {
    if (auto b = weight_of(g, input_of(n, bias_input))) {
      hit.bias = b->weight;
      hit.bias_range = b->rows;
    }
  }
  return hit;
}

// A product whose weight operand is a graph input declared [in, out] (fed at run time, as test
// graphs and some runtimes do): the projection is there, and nothing of its weight is stored.
// Only a declared 2-D shape with both sizes known proves it: an activation is not declared so.
std::optional<ProjectionHit> ProjectionWalker::input_projection(int g, int node, Name activation, Name weight,
                                                                bool transposed) {
  if (weight.empty() || m_.producer_of(g, weight) >= 0 || m_.weight_for(g, weight) || !is_graph_input(g, weight)) {
    return std::nullopt;
  }
  Dims d = s_.dims(g, weight);
  if (d.rank != 2 || !d.d[0].positive() || !d.d[1].positive()) return std::nullopt;
  ProjectionHit hit;
  hit.node = node;
  hit.input = activation;
  hit.weight_input = weight;
  hit.in = transposed ? d.d[1] : d.d[0];
  hit.out = transposed ? d.d[0] : d.d[1];
  auto elements = (hit.in * hit.out).count();
  if (!elements) return std::nullopt;
  hit.logical_elements = *elements;
  return hit;
}

bool ProjectionWalker::is_graph_input(int g, std::string_view name) {
  // The main graph's declared inputs (the only ones whose shapes the oracle reads), as seen from
  // g: a name something defines on the way is not one. A set made once: a file may declare many.
  if (!inputs_) {
    inputs_.emplace();
    for (const auto& in : m_.proto->graph().input()) inputs_->insert(in.name());
  }
  return inputs_->count(name) > 0 && m_.defining_value(g, Name(name)) < 0;
}

bool ProjectionWalker::normalized(int g, Name value) {
  int p = m_.producer_of(g, value);
  if (p < 0) return false;
  const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
  if (!op_has(n.op_type(), Trait::Scales)) return false;
  // One operand reaches a ReduceMean through Sqrt or Reciprocal within a few steps.
  for (const auto& in : n.input()) {
    Name v = in;
    bool root = false;
    for (int step = 0; step < 6 && budget_.spend(); ++step) {
      int q = m_.producer_of(g, v);
      if (q < 0) break;
      const auto& qn = *m_.nodes[static_cast<size_t>(q)].rec;
      std::string_view op = qn.op_type();
      if (op == "ReduceMean"sv && root) return true;
      if (op_has(op, Trait::InverseOrRoot)) root = true;
      else if (!between_mean_and_root(op)) break;
      // Div(1, Sqrt(..)) and Add(mean, eps): follow the operand that is not a constant.
      v = qn.input_size() > 1 && weight_of(g, input_of(qn, 0)) ? input_of(qn, 1) : input_of(qn, 0);
    }
  }
  return false;
}

// Einsum(x, W) with a constant W, as tf2onnx writes Keras' EinsumDense ("abc,cde->abde" with a
// kernel [d, h, k]). The weight's letters shared with x and absent from the output are its inputs;
// the letters kept in the output are its outputs (heads and head size stay separate axes).
std::optional<ProjectionHit> ProjectionWalker::einsum_projection(int g, int node, Name activation) {
  const auto& n = *m_.nodes[node].rec;
  auto eq = parse_einsum(n);
  if (!eq) return std::nullopt;
  int xi = input_of(n, 0) == activation ? 0 : input_of(n, 1) == activation ? 1 : -1;
  if (xi < 0 || m_.weight_for(g, activation)) return std::nullopt;
  auto w = weight_of(g, input_of(n, 1 - xi));
  if (!w || w->rows || w->transposed) return std::nullopt;
  const Weight& tensor = m_.weights[w->weight];
  std::string_view ws = eq->in[1 - xi];
  std::string_view xs = eq->in[xi];
  if (tensor.dims.size() != ws.size()) return std::nullopt;
  uint64_t in = 1, out = 1;
  std::vector<std::pair<size_t, int64_t>> kept;  // (position in the output, size)
  for (size_t i = 0; i < ws.size(); ++i) {
    char c = ws[i];
    int64_t d = tensor.dims[i];
    if (d <= 0) return std::nullopt;
    bool in_x = xs.find(c) != std::string::npos, in_out = eq->out.find(c) != std::string::npos;
    if (in_x && !in_out) {
      if (mul_overflows(in, static_cast<uint64_t>(d), &in)) return std::nullopt;
    } else if (!in_x && in_out) {
      if (mul_overflows(out, static_cast<uint64_t>(d), &out)) return std::nullopt;
      kept.push_back({eq->out.find(c), d});
    } else {
      return std::nullopt;  // a batch axis on the weight, or a weight axis summed away: not a projection
    }
  }
  if (kept.empty() || in > static_cast<uint64_t>(INT64_MAX) || out > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  ProjectionHit hit;
  hit.node = node;
  hit.weight = *w;
  hit.input = activation;
  hit.in = Int::of_unsigned(in);
  hit.out = Int::of_unsigned(out);
  if (mul_overflows(in, out, &hit.logical_elements)) return std::nullopt;
  std::sort(kept.begin(), kept.end());
  if (kept.size() > 1) {
    for (auto& k : kept) hit.einsum_out_dims.push_back(k.second);
  }
  return hit;
}

ProjectionHit ProjectionWalker::back(int g, Name value) {
  budget_.start_walk(kWalkBudget);
  return back_impl(g, value, 0);
}

// Why a walk stopped when its budget (the walk's or the graph's) ran out.
ProjectionHit ProjectionWalker::out_of_budget() {
  ProjectionHit fail;
  fail.failure = budget_.exhausted() ? "was not searched for: matching used up the node visits a graph of this size gets"
                                     : "was given up: the search for its projection visited more than " + std::to_string(kWalkBudget) + " nodes";
  return fail;
}

ProjectionHit ProjectionWalker::back_impl(int g, Name value, int depth) {
  ProjectionHit fail;
  if (!budget_.spend()) return out_of_budget();
  if (depth > kMaxWalk) {
    fail.failure = "the path to its projection is longer than " + std::to_string(kMaxWalk) + " nodes";
    return fail;
  }
  int p = m_.producer_of(g, value);
  if (p < 0) return from_leaf(g, value);
  const auto& n = *m_.nodes[p].rec;
  std::string_view op = n.op_type();
  if (auto hit = as_projection(g, p, n.input_size() ? input_of(n, 0) : "")) return *hit;

  if (op == "Reshape"sv) return back_reshape(g, p, depth);
  if (is_pass_through(op)) return back_impl(g, input_of(n, 0), depth + 1);
  if (op_has(op, Trait::TokenNorm) && !op_has(op, Trait::AddsSkip)) return back_norm(g, n, depth);
  if (op_has(op, Trait::Cuts)) return back_part(g, n, value, depth);
  if (op == "Gather"sv) return back_gather(g, n, depth);
  if (op_has(op, Trait::Shifts | Trait::Scales | Trait::Merges)) return back_operands(g, p, depth);
  if (op_has(op, Trait::MatrixProduct) || op == "Einsum"sv) {
    fail.failure = "comes from " + label(p) + ", a product of two activations";
    return fail;
  }
  fail.failure = "the walk to its projection stops at " + label(p);
  return fail;
}

// A value no node produces: a constant or a graph input, not a projection.
ProjectionHit ProjectionWalker::from_leaf(int g, Name value) {
  ProjectionHit fail;
  if (const Weight* w = m_.weight_for(g, value)) {
    fail.failure = "comes from the constant '" + std::string(value) + "', not a projection";
    fail.from_weight = static_cast<int>(w - m_.weights.data());
  }
  else fail.failure = "comes from the graph input '" + std::string(value) + "' without a projection";
  if (!m_.weight_for(g, value)) fail.from_input = value;
  return fail;
}

// The last elements of a Reshape target that is a Concat (axis 0) of pieces whose values are not
// all known: the trailing pieces whose values are, after one unknown element standing for the
// pieces before them, whose lengths are not known either (paddle2onnx's Concat(Cast(Constant 0),
// Cast(Slice(Shape(x))), Cast(Constant 3), ...) over an x of unknown rank). nullopt when no
// trailing piece is known.
std::optional<IntVector> ProjectionWalker::target_tail(int g, Name target) {
  int p = m_.producer_of(g, target);
  if (p < 0) return std::nullopt;
  const auto& n = *m_.nodes[static_cast<size_t>(p)].rec;
  Int axis = attr_int(n, "axis").value_or(0);
  if (n.op_type() != "Concat"sv || !(axis.is(0) || axis.is(-1))) return std::nullopt;
  IntVector tail;
  for (int i = n.input_size() - 1; i >= 0 && budget_.spend(); --i) {
    auto piece = s_.eval(g, input_of(n, i));
    if (!piece) break;
    tail.insert(tail.begin(), piece->begin(), piece->end());
    if (tail.size() > 64) return std::nullopt;  // a target of more dims than a tensor may have
  }
  if (tail.empty()) return std::nullopt;
  tail.insert(tail.begin(), Int());
  return tail;
}

ProjectionHit ProjectionWalker::back_reshape(int g, int node, int depth) {
  const auto& n = *m_.nodes[node].rec;
  ProjectionHit r = back_impl(g, input_of(n, 0), depth + 1);
  if (r.found() && n.input_size() > 1) {
    // Only a reshape that splits features into heads counts, not one that keeps the width.
    auto target = s_.eval(g, input_of(n, 1));
    bool tail = false;
    if (!target && (target = target_tail(g, input_of(n, 1)))) tail = true;
    bool keeps_width = target && !target->empty() && same(target->back(), r.out);
    if (target && !keeps_width) {
      if (!r.reshape) {  // the first on the way back up is the one nearest the projection
        r.reshape = target;
        r.reshape_tail = tail;
        r.reshape_node = label(node);
      }
    } else if (!target && !r.reshape && r.reshape_node.empty()) {
      r.reshape_node = label(node);  // a target computed at run time: named in "heads unknown"
    }
  }
  return r;
}

// A norm between projection and core (QK-norm): its scale and bias (inputs 1 and 2) are the
// block's.
ProjectionHit ProjectionWalker::back_norm(int g, const NodeRec& n, int depth) {
  ProjectionHit r = back_impl(g, input_of(n, 0), depth + 1);
  if (r.found() && r.per_head.empty()) {
    for (int i = 1; i < n.input_size() && i < 3; ++i) {
      if (auto w = weight_of(g, input_of(n, i)); w && !w->rows) r.norm_weights.push_back(w->weight);
    }
  }
  return r;
}

namespace {

// The columns a Slice of the projection's output takes. A Slice must name the last axis
// explicitly: the default axes start at 0.
void slice_part(ShapeOracle& s, int g, const NodeRec& n, const Dims& d, ProjectionHit& r) {
  auto last_axis = [&](Int axis) { return axis.is(-1) || (d.rank > 0 && axis.is(d.rank - 1)); };
  if (!NodeView(s, g, n, 0).has(3)) return;
  if (auto cols = slice_bounds(s, g, n, r.out, last_axis)) {
    r.part.offset = cols->first;
    r.part.length = cols->second - cols->first;
  }
}

}  // namespace

// A Split or Slice that takes part of the projection's output (or, after a head split, one of a
// packed Q, K and V).
ProjectionHit ProjectionWalker::back_part(int g, const NodeRec& n, Name value, int depth) {
  std::string_view op = n.op_type();
  ProjectionHit r = back_impl(g, input_of(n, 0), depth + 1);
  if (op == "Slice"sv && r.found() && r.reshape && !r.part.offset && !r.part.index && r.per_head.empty()) {
    // After a head split, a Slice of one element of one axis picks Q, K or V out of a packed
    // [3, B, h, L, d] as a Gather of that index does (paddle2onnx writes qkv[0] as Slice +
    // Squeeze).
    // One it cannot read (its input's rank unknown) still takes part of the packed tensor.
    r.selected = true;
    if (auto index = single_index(s_, g, n)) r.part.index = *index;
    return r;
  }
  if (!r.found() || r.reshape || r.part.offset || r.per_head.size()) return r;
  r.selected = true;
  Dims d = s_.dims(g, input_of(n, 0));
  if (op == "Split"sv) split_part(g, n, value, r);
  else slice_part(s_, g, n, d, r);
  return r;
}

// The features the output `value` of a Split takes of the projection's output.
void ProjectionWalker::split_part(int g, const NodeRec& n, Name value, ProjectionHit& r) {
  int which = 0;
  for (int o = 0; o < n.output_size(); ++o) {
    if (output_of(n, o) == value) which = o;
  }
  // The parts as the spec has them, of an axis as wide as the projection's output: lengths
  // that are negative or do not add up to it ([-64, 64, 192] of 192) take no part of it.
  auto sizes = split_sizes(NodeView(s_, g, n, 0), r.out);
  if (!sizes || !all_known(*sizes) || which >= static_cast<int>(sizes->size())) return;
  Int offset = 0, total = 0;
  for (size_t i = 0; i < sizes->size(); ++i) {
    if (i < static_cast<size_t>(which)) offset += (*sizes)[i];
    total += (*sizes)[i];
  }
  if (same(total, r.out) && offset) {
    r.part.offset = offset;
    r.part.length = (*sizes)[static_cast<size_t>(which)];
  }
}

ProjectionHit ProjectionWalker::back_gather(int g, const NodeRec& n, int depth) {
  if (m_.weight_for(g, input_of(n, 0))) {
    ProjectionHit fail;
    fail.failure = "comes from a lookup in the constant '" + std::string(input_of(n, 0)) + "', not a projection";
    return fail;
  }
  ProjectionHit r = back_impl(g, input_of(n, 0), depth + 1);
  r.selected = r.selected || r.found();
  auto idx = s_.eval(g, n.input_size() > 1 ? input_of(n, 1) : "");
  if (r.found() && !r.part.offset && !r.part.index && idx && idx->size() == 1 && (*idx)[0].non_negative()) {
    r.part.index = *(*idx)[0];
  }
  return r;
}

// What the walk found behind each operand of an Add, Sub, Mul, Div, Where or Concat.
struct ProjectionWalker::Operands {
  std::vector<ProjectionHit> hits;
  std::vector<int> constants;
  std::vector<std::string> from_inputs;  // operands that are graph inputs: a bias fed at run time?
  ProjectionHit first_failure;
  int bias = -1;
  std::optional<std::pair<int64_t, int64_t>> bias_range;
  bool cut = false;  // the budget ran out before every operand was read
};

// An elementwise op or Concat: walks back from each operand, then reads what met there (a bias,
// a norm written out, per-head projections concatenated).
ProjectionHit ProjectionWalker::back_operands(int g, int node, int depth) {
  const auto& n = *m_.nodes[node].rec;
  std::string_view op = n.op_type();
  Operands o = read_operands(g, n, depth);
  if (o.cut) return out_of_budget();  // operands left unread: what met here is not known
  attach_bias(op, o);
  if (attach_written_norm(g, n, o)) return o.hits[0];
  attach_bias_input(g, op, o);
  return merge_hits(node, op, o);
}

ProjectionWalker::Operands ProjectionWalker::read_operands(int g, const NodeRec& n, int depth) {
  std::string_view op = n.op_type();
  Operands o;
  for (int i = op == "Where"sv ? 1 : 0; i < n.input_size(); ++i) {
    Name in = input_of(n, i);
    if (in.empty()) continue;
    // Each operand is one visit, a constant too: a Concat of many inputs read by many walks
    // stops at the walk's budget instead of reading every input each time.
    if (!budget_.spend()) {
      o.cut = true;
      return o;
    }
    if (auto w = weight_of(g, in)) {
      o.constants.push_back(w->weight);
      if (op == "Add"sv && m_.weights[w->weight].dims.size() <= 2) {
        o.bias = w->weight;
        o.bias_range = w->rows;
      }
      continue;
    }
    ProjectionHit r = back_impl(g, in, depth + 1);
    if (r.found()) {
      o.hits.push_back(std::move(r));
    } else if (!r.from_input.empty() && m_.producer_of(g, in) < 0) {
      o.from_inputs.push_back(r.from_input);
      if (o.first_failure.failure.empty()) o.first_failure = std::move(r);
    } else if (op == "Concat"sv && r.from_weight >= 0) {
      o.constants.push_back(r.from_weight);  // a learned token expanded and tiled onto K or V
    } else if (o.first_failure.failure.empty()) {
      o.first_failure = std::move(r);
    }
  }
  return o;
}

// A constant added right after the projection is its bias.
void ProjectionWalker::attach_bias(std::string_view op, Operands& o) {
  auto& hits = o.hits;
  if (op == "Add"sv && hits.size() == 1 && o.bias >= 0 && hits[0].bias < 0 && !hits[0].reshape &&
      hits[0].per_head.empty()) {
    const Weight& b = m_.weights[o.bias];
    if (b.elements == hits[0].out.count() || o.bias_range) {
      hits[0].bias = o.bias;
      hits[0].bias_range = o.bias_range;
    }
  }
}

// A norm written out on the way: Mul(normalized, scale) and then Add(·, bias), 1-D tensors of
// the feature axis (QK-norm over head_dim or over the projection's width). True when the constant
// is one.
bool ProjectionWalker::attach_written_norm(int g, const NodeRec& n, Operands& o) {
  std::string_view op = n.op_type();
  auto& hits = o.hits;
  if (!(hits.size() == 1 && hits[0].per_head.empty() && o.constants.size() == 1 && op_has(op, Trait::Affine))) {
    return false;
  }
  const Weight& w = m_.weights[static_cast<size_t>(o.constants[0])];
  Name other = weight_of(g, input_of(n, 0)) ? input_of(n, 1) : input_of(n, 0);
  bool vector = w.dims.size() == 1 && w.elements > 1 && w.parameter && dtype_is_parameter_type(w.dtype);
  int producer = m_.producer_of(g, other);
  bool scaled = op == "Mul"sv && normalized(g, other);
  bool shifted = op == "Add"sv && !hits[0].norm_weights.empty() && producer >= 0 &&
                 m_.nodes[static_cast<size_t>(producer)].rec->op_type() == "Mul"sv &&
                 m_.weights[static_cast<size_t>(hits[0].norm_weights.back())].elements == w.elements;
  if (vector && (scaled || shifted) && same(s_.dims(g, other).last(), Int::of_unsigned(w.elements))) {
    hits[0].norm_weights.push_back(o.constants[0]);
    return true;
  }
  return false;
}

// A bias fed as a graph input [out], added right after the projection.
void ProjectionWalker::attach_bias_input(int g, std::string_view op, Operands& o) {
  auto& hits = o.hits;
  if (op == "Add"sv && hits.size() == 1 && hits[0].bias < 0 && hits[0].bias_input.empty() && o.from_inputs.size() == 1 &&
      !hits[0].reshape && hits[0].per_head.empty()) {
    Dims d = s_.dims(g, Name(o.from_inputs[0]));
    if (d.rank == 1 && same(d.d[0], hits[0].out)) hits[0].bias_input = o.from_inputs[0];
  }
}

// The projections the operands reached: one (branches that meet again), per-head projections a
// Concat joins, or a failure.
ProjectionHit ProjectionWalker::merge_hits(int node, std::string_view op, Operands& o) {
  ProjectionHit fail;
  if (o.hits.empty()) {
    if (o.first_failure.failure.empty()) o.first_failure.failure = "reaches only constants at " + label(node);
    return std::move(o.first_failure);
  }
  // Rotary and scaling branches meet again at the same projection.
  std::vector<ProjectionHit> distinct;
  for (auto& h : o.hits) {
    bool same = std::any_of(distinct.begin(), distinct.end(), [&](const ProjectionHit& d) {
      return d.node == h.node && d.per_head.empty() && h.per_head.empty();
    });
    if (!same) distinct.push_back(std::move(h));
  }
  if (distinct.size() == 1) {
    if (op == "Concat"sv) {
      for (auto& c : o.constants) distinct[0].extra_weights.push_back(c);
    }
    return distinct[0];
  }
  if (op == "Concat"sv) {
    ProjectionHit per_head;
    for (auto& d : distinct) {
      if (!d.per_head.empty()) {
        fail.failure = "per-head projections are nested at " + label(node);
        return fail;
      }
    }
    per_head.per_head = std::move(distinct);
    per_head.input = per_head.per_head[0].input;
    per_head.reshape = per_head.per_head[0].reshape;
    per_head.reshape_node = per_head.per_head[0].reshape_node;
    for (auto& c : o.constants) per_head.extra_weights.push_back(c);
    return per_head;
  }
  fail.failure = "two different projections meet at " + label(node);
  return fail;
}

// An integer product's output as float, where its bias is added: MatMulInteger's int32 output
// Cast to float and multiplied by the two scales (onnxruntime's dynamic quantizer), or the value
// itself when no Cast follows it alone.
Name ProjectionWalker::rescaled(int g, Name value) {
  for (int step = 0; step < 2; ++step) {
    const auto& users = m_.consumers_of(g, value);
    if (users.size() != 1 || !budget_.spend()) return value;
    const auto& n = *m_.nodes[users[0]].rec;
    std::string_view op = n.op_type();
    bool next = step == 0 ? op_has(op, Trait::Cast) : op_has(op, Trait::Scales) && op_has(op, Trait::Affine);  // Mul
    if (!next || n.output_size() < 1) return value;
    value = output_of(n, 0);
  }
  return value;
}

ProjectionHit ProjectionWalker::forward(int g, Name value) {
  ProjectionHit fail;
  budget_.start_walk(kWalkBudget);
  for (int step = 0; step < kMaxWalk; ++step) {
    std::vector<int> users;
    for (int c : m_.consumers_of(g, value)) {
      if (!budget_.spend()) {
        fail.failure = "the search for the output projection visited more than " + std::to_string(kWalkBudget) + " nodes";
        return fail;
      }
      std::string_view op = m_.nodes[c].rec->op_type();
      if (!op_has(op, Trait::ReadsDims)) users.push_back(c);
    }
    if (users.empty()) {
      fail.failure = "its output '" + std::string(value) + "' is not used by a projection";
      return fail;
    }
    if (users.size() > 1) {
      fail.failure = "its output '" + std::string(value) + "' feeds " + std::to_string(users.size()) + " nodes, not one projection";
      return fail;
    }
    int c = users[0];
    const auto& n = *m_.nodes[c].rec;
    if (auto hit = as_projection(g, c, value)) {
      if (hit->bias < 0 && n.output_size() > 0) {
        // Bias as a following Add, or folded into SkipLayerNormalization (input 4).
        for (int u : m_.consumers_of(g, rescaled(g, output_of(n, 0)))) {
          const auto& un = *m_.nodes[u].rec;
          if (un.op_type() == "Add"sv) {
            for (const auto& in : un.input()) {
              auto w = weight_of(g, in);
              if (w && m_.weights[w->weight].dims.size() == 1 && m_.weights[w->weight].elements == hit->out.count()) {
                hit->bias = w->weight;
              }
            }
          } else if (op_has(un.op_type(), Trait::AddsSkip)) {
            int bias_at = un.op_type() == "SkipLayerNormalization"sv ? 4 : 3;
            if (un.input_size() > bias_at && !input_of(un, bias_at).empty()) {
              if (auto w = weight_of(g, input_of(un, bias_at))) hit->bias = w->weight;
            }
          }
          break;
        }
      }
      return *hit;
    }
    if (op_has(n.op_type(), Trait::LayoutOnly | Trait::NoOp | Trait::Cast | Trait::Quantize | Trait::Dequantize)) {
      value = output_of(n, 0);
      continue;
    }
    fail.failure = "its output goes to " + label(c) + " instead of a projection";
    return fail;
  }
  fail.failure = "the path to the output projection is longer than " + std::to_string(kMaxWalk) + " nodes";
  return fail;
}

}  // namespace headcount::detail
