// shapes.h: the shape oracle: what is known of every value's dims and small integer values (internal).
//
// Exported graphs compute head counts at run time: Reshape targets are Concats of Shape/Gather
// pieces with the head size as a constant inside a Div or Mul. ShapeOracle evaluates such integer
// expressions and tracks what is known of every value's dims, from graph input types, weight dims
// and the nodes between them. Every number is an `Int` (headcount/checked.h), so a hostile dim or
// constant makes a result unknown instead of wrapping or trapping.
//
// What each operator does to shapes and to integer values is one row of a table in shapes.cpp
// (`op_table()`): a small evaluator per op, written against NodeView. A new op is one row.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "headcount/checked.h"
#include "headcount/model.h"
#include "headcount/small_vector.h"

namespace headcount::detail {

// A 0-D/1-D integer tensor, element by element; a shape is one too, and four dims fit in place.
using IntVector = SmallVector<Int, 4>;

// Shape of a value: rank when known, and whatever dims are known.
struct Dims {
  int rank = -1;
  IntVector d;  // size == rank when rank >= 0
  Int tail;     // the last dimension when the rank is unknown
  Int last() const { return rank > 0 ? d.back() : rank < 0 ? tail : Int(); }
};

// Attributes of a node. Absent attributes read as unknown (or nullopt); the file's numbers are
// returned as they are, for the caller to check.
const Attribute* find_attr(const NodeRec& n, std::string_view name);
Int attr_int(const NodeRec& n, std::string_view name);
bool attr_flag(const NodeRec& n, std::string_view name);  // an int attribute that is set and nonzero
std::optional<std::vector<int64_t>> attr_ints(const NodeRec& n, std::string_view name);

class ShapeOracle {
 public:
  explicit ShapeOracle(const Model& model);

  // Integer values of a value computed from constants and shapes (Reshape targets, Slice bounds).
  // Elements that cannot be known are unknown; nullopt when not even the length is known.
  std::optional<IntVector> eval(int g, Name value, int depth = 0);
  // What is known of a value's shape (computed once for every value, in topological order).
  Dims dims(int g, Name value) const;
  // The feature width (last dimension) when known.
  Int last_dim(int g, Name value) const { return dims(g, value).last(); }

  const Model& model() const { return m_; }
  // How many oracles this thread has built: one per audit (tests/ops_test.cpp checks it).
  static uint64_t built_on_this_thread();

 private:
  const Model& m_;
  // Declared and propagated dims, and evaluated values, by value id (Model::values): an index
  // into known_ / evaluated_, or -1. Declared names of the main graph that no node uses are kept
  // by name, in an ordered map: the file chooses those names, and no choice of them makes its
  // lookups slow.
  std::vector<int> dims_at_, eval_at_;
  std::vector<Dims> known_;  // entries shared by values of equal dims (keep()), never changed in place
  static constexpr size_t kRecent = 8;
  int recent_[kRecent] = {-1, -1, -1, -1, -1, -1, -1, -1};  // the entries kept last, compared first
  size_t next_recent_ = 0;
  int keep(Dims d);
  std::vector<std::optional<IntVector>> evaluated_;
  std::map<std::string_view, Dims> declared_unused_;
  void declare(std::string_view name, Dims d);
  void propagate(int g, const NodeRec& n);
};

// The audit's one shape oracle, built when a stage first asks for it and then shared: the attention
// matcher asks at once, the expert and mixer stages only when they read a shape (a TopK's k, a
// CumSum's axis). The pipeline (audit_loaded, src/audit.cpp) makes one per audit and hands it to
// each stage (src/stages.h), so a graph's dims are propagated once.
class SharedShapes {
 public:
  explicit SharedShapes(const Model& model) : m_(model), budget_(model) {}
  ShapeOracle& get() {
    if (!oracle_) oracle_.emplace(m_);
    return *oracle_;
  }
  const Model& model() const { return m_; }
  // Frees the oracle once no later stage will ask (get() would build it again).
  void release() { oracle_.reset(); }
  // The audit's one allowance for the analyses that read values (routers, buffers, the mask
  // evaluator, mixers): each spends from it, in the order the audit runs them.
  ValueBudget& budget() { return budget_; }

 private:
  const Model& m_;
  std::optional<ShapeOracle> oracle_;
  ValueBudget budget_;
};

// What one evaluator sees of its node: the inputs' dims and integer values, and the attributes.
class NodeView {
 public:
  NodeView(ShapeOracle& shapes, int g, const NodeRec& node, int depth)
      : s_(shapes), g_(g), depth_(depth), n(node) {}
  bool has(int i) const { return i >= 0 && i < n.input_size() && !input_of(n, i).empty(); }
  int inputs() const { return n.input_size(); }
  int outputs() const { return n.output_size(); }
  Dims dims(int i) const;
  std::optional<IntVector> value(int i) const;
  // A list that older opsets give as attribute `attr` and newer ones as constant input `input`
  // (Squeeze axes, Split sizes, Reduce axes); nullopt unless every element is known.
  std::optional<std::vector<int64_t>> list(const char* attr, int input) const;
  // The node producing input i, or nullptr (a graph input or a weight).
  const NodeRec* producer(int i) const;
  const ShapeOracle& shapes() const { return s_; }
  int graph() const { return g_; }

 private:
  ShapeOracle& s_;
  int g_;
  int depth_;

 public:
  const NodeRec& n;
};

// The lengths a Split gives its outputs along an axis of `axis_size`, as the ONNX spec has them:
// its `split` list (input 1, or the attribute before opset 13), each length >= 0 and all adding
// up to the axis; else equal parts, which opset 18's `num_outputs` allows to be uneven
// (ceil(axis / n) each and a smaller last one). One entry per output, unknown where the list
// stops short or where the axis size is needed and unknown. nullopt when the node breaks the
// spec (a negative length, lengths that do not add up, a list and num_outputs both, parts that
// cannot be equal), so that it splits nothing.
std::optional<IntVector> split_sizes(const NodeView& v, Int axis_size);

// The op table's rows by op type: whether each has a dims and a value evaluator (for the test
// that every row is tested, tests/shapes_test.cpp).
struct OpRow {
  std::string_view op;
  bool dims = false, value = false;
};
std::vector<OpRow> op_rows();

// "[0, 0, 4, 8]" with "?" for unknown entries.
std::string format_ints(const IntVector& v);
// Whether every element is known.
bool all_known(const IntVector& v);

// A two-operand Einsum equation such as "abc,cde->abde": one subscript per input and the output's.
// Equations with ellipses, repeated letters in one operand or other than two inputs are refused.
struct EinsumEquation {
  std::string in[2];
  std::string out;
};
std::optional<EinsumEquation> parse_einsum(const NodeRec& n);

}  // namespace headcount::detail
