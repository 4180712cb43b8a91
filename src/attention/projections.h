// projections.h: walking from an attention input back to the projection that made it, and
// from an attention output forward to the output projection (internal to the attention stage).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../shapes.h"

namespace headcount::detail {

// A weight operand, found through Identity/Cast/Transpose/DequantizeLinear/Reshape/Slice.
struct WeightRef {
  int weight = -1;           // index into Model::weights
  bool transposed = false;   // stored [out, in]
  bool quantized = false;    // behind DequantizeLinear
  std::optional<std::pair<int64_t, int64_t>> rows;  // a Slice of the stored tensor: [begin, end) on axis 0
  std::string via;           // how it was reached, for notes ("DequantizeLinear", "Slice")
};

// Which output features of a packed projection a path selects.
struct Part {
  Int offset, length;  // exact, in output features
  Int index;           // i-th of `count` equal parts
  Int count;
};

// A projection found by a walk.
struct ProjectionHit {
  int node = -1;                  // the MatMul/Gemm (or -1 when not found)
  WeightRef weight;
  int bias = -1;                  // bias weight index
  std::optional<std::pair<int64_t, int64_t>> bias_range;  // a Slice of the bias tensor
  Int in, out;                    // full weight: input and output features
  uint64_t logical_elements = 0;  // in * out (MatMulNBits: from attributes, not bytes)
  std::string input;              // activation fed into the projection
  Part part;
  bool selected = false;          // the walk passed a Split, Slice or Gather that takes part of it
  std::vector<ProjectionHit> per_head;  // h separate projections concatenated
  // The head-splitting Reshape nearest the projection on the way to the core, if any.
  std::optional<IntVector> reshape;
  // Only the end of that target is known: a Concat whose earlier pieces are of unknown length (a
  // Slice of the Shape of a value of unknown rank) and whose last pieces are constants. `reshape`
  // then holds those last elements after one unknown element that stands for the rest.
  bool reshape_tail = false;
  std::string reshape_node;
  // An Einsum projection whose weight keeps heads as their own axes (Keras kernels [d, h, k]):
  // the sizes of the output letters, first the heads axis.
  std::vector<int64_t> einsum_out_dims;
  std::vector<int> extra_weights;  // weights concatenated onto it: add_bias_kv tokens
  // The scale (and bias) of a norm the walk passed between the projection and the core: a
  // LayerNormalization-like op, or RMSNorm/LayerNorm written out (QK-norm).
  std::vector<int> norm_weights;
  // The weight is this graph input (fed at run time, weight.weight is -1): nothing of it is
  // stored; in and out come from its declared shape.
  std::string weight_input;
  std::string bias_input;         // a bias added right after it that is a graph input [out]
  std::string failure;            // why nothing was found
  std::string from_input;         // the graph input the walk ended at, when it ended at one
  int from_weight = -1;           // the constant the walk ended at (through Expand, Tile...), if one
  bool found() const { return node >= 0 || !per_head.empty(); }
};

class ProjectionWalker {
 public:
  ProjectionWalker(ShapeOracle& shapes, VisitBudget& budget) : s_(shapes), m_(shapes.model()), budget_(budget) {}

  // Walks back from `value` (Q, K or V as the attention core sees it) to its projection.
  ProjectionHit back(int g, Name value);
  // Walks forward from the attention output to the output projection.
  ProjectionHit forward(int g, Name value);
  // The weight behind a value, if it is one.
  std::optional<WeightRef> weight_of(int g, Name value, int depth = 0);
  // "MatMul 'name'": a node as messages name it.
  std::string label(int node) const;
  // Builds a hit for a node that is a projection, or returns nullopt.
  std::optional<ProjectionHit> as_projection(int g, int node, Name activation);
  // A projection by `node` whose weight operand is a graph input declared [in, out] ([out, in]
  // when transposed): fed at run time, nothing stored. nullopt unless the declared shape proves it.
  std::optional<ProjectionHit> input_projection(int g, int node, Name activation, Name weight, bool transposed);

 private:
  ShapeOracle& s_;
  const Model& m_;
  VisitBudget& budget_;  // shared with the matcher: keeps branching walks linear
  std::optional<std::set<std::string_view>> inputs_;  // the main graph's declared inputs, once asked
  ProjectionHit back_impl(int g, Name value, int depth);
  ProjectionHit out_of_budget();
  Name rescaled(int g, Name value);
  // The steps of back_impl: one per kind of node the walk passes back through.
  struct Operands;  // what the walk found behind each operand of an elementwise op or Concat
  ProjectionHit from_leaf(int g, Name value);
  ProjectionHit back_reshape(int g, int node, int depth);
  std::optional<IntVector> target_tail(int g, Name target);
  ProjectionHit back_norm(int g, const NodeRec& n, int depth);
  ProjectionHit back_part(int g, const NodeRec& n, Name value, int depth);
  void split_part(int g, const NodeRec& n, Name value, ProjectionHit& r);
  ProjectionHit back_gather(int g, const NodeRec& n, int depth);
  ProjectionHit back_operands(int g, int node, int depth);
  Operands read_operands(int g, const NodeRec& n, int depth);
  void attach_bias(std::string_view op, Operands& o);
  bool attach_written_norm(int g, const NodeRec& n, Operands& o);
  void attach_bias_input(int g, std::string_view op, Operands& o);
  ProjectionHit merge_hits(int node, std::string_view op, Operands& o);
  bool is_graph_input(int g, std::string_view name);
  // Whether `value` is a value scaled by a statistic of itself: Mul or Div by something computed
  // through Sqrt or Reciprocal from a ReduceMean (a norm written out).
  bool normalized(int g, Name value);
  std::optional<ProjectionHit> einsum_projection(int g, int node, Name activation);
};

}  // namespace headcount::detail
