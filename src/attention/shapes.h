// shapes.h: the little shape knowledge the matcher needs (internal to the attention stage).
//
// Exported graphs compute head counts at run time: Reshape targets are Concats of Shape/Gather
// pieces with the head size as a constant inside a Div or Mul. ShapeOracle evaluates such integer
// expressions and tracks the last dimension (feature width) of activations, from graph input
// types, weight dims and projections. Every lookup is memoized and depth-bounded, so a
// 1,000-layer model stays linear and hostile graphs cannot recurse without end.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headcount/model.h"

namespace headcount::detail {

using MaybeInt = std::optional<int64_t>;
using IntVector = std::vector<MaybeInt>;  // a 0-D/1-D integer tensor, element by element

// Shape of a value: rank when known, and whatever dims are known.
struct Dims {
  int rank = -1;
  IntVector d;    // size == rank when rank >= 0
  MaybeInt tail;  // the last dimension when the rank is unknown
  MaybeInt last() const { return rank > 0 ? d.back() : rank < 0 ? tail : std::nullopt; }
};

class ShapeOracle {
 public:
  explicit ShapeOracle(const Model& model);

  // Integer values of a value computed from constants and shapes (Reshape targets, Slice bounds).
  std::optional<IntVector> eval(int g, const std::string& value, int depth = 0);
  // What is known of a value's shape (computed once for every value, in topological order).
  Dims dims(int g, const std::string& value) const;
  // The feature width (last dimension) when known.
  MaybeInt last_dim(int g, const std::string& value) const { return dims(g, value).last(); }

  const Model& model() const { return m_; }
  // Integer attribute of a node, or fallback.
  static int64_t attr_int(const onnx::NodeProto& n, const char* name, int64_t fallback);
  static std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const char* name);
  static const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name);

 private:
  const Model& m_;
  // Declared and propagated dims per graph, keyed by names the model's skeleton owns.
  std::vector<std::unordered_map<std::string_view, Dims>> dims_;
  std::vector<std::unordered_map<std::string, std::optional<IntVector>>> eval_memo_;
  std::optional<IntVector> eval_node(int g, const onnx::NodeProto& n, const std::string& value, int depth);
  void propagate(int g, const onnx::NodeProto& n);
};

// "[0, 0, 4, 8]" with "?" for unknown entries.
std::string format_ints(const IntVector& v);

// A two-operand Einsum equation such as "abc,cde->abde": one subscript per input and the output's.
// Equations with ellipses, repeated letters in one operand or other than two inputs are refused.
struct EinsumEquation {
  std::string in[2];
  std::string out;
};
std::optional<EinsumEquation> parse_einsum(const onnx::NodeProto& n);

}  // namespace headcount::detail
