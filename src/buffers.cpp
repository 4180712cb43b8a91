// buffers.cpp: buffers found by their use and their values, merged copies found by the Identity
// nodes that re-create them, and the framework-comparable count.
#include "headcount/buffers.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <map>
#include <set>

#include "headcount/error.h"
#include "masks.h"
#include "payload.h"
#include "ops.h"

namespace headcount {
namespace {

constexpr uint64_t kMostValues = uint64_t{1} << 26;  // larger tensors are not read to classify them
constexpr uint64_t kMostHeadSlice = uint64_t{1} << 22;

// Operator inputs that are rotary cos/sin caches by the operator's own definition.
struct CacheSlots {
  const char* type;
  int cos, sin;
};
const CacheSlots kRotaryCaches[] = {
    {"RotaryEmbedding", 2, 3},
    {"GroupQueryAttention", 7, 8},
    {"SparseAttention", 9, 10},
    {"PagedAttention", 8, 9},
};

// Reads a tensor's values for the checks below: every element read spends from the audit's budget,
// and a read it cannot pay for ends the check, which then proves nothing (the tensor stays a
// parameter).
struct Reader {
  ValueBudget& budget;
  const char* analysis;
  template <typename F>
  bool each(const Weight& w, F f) const {
    return for_each_value(w, [&](uint64_t index, double v) { return budget.spend(analysis, ValueBudget::kElement) && f(index, v); });
  }
};

std::string node_label(const NodeRec& n) {
  return std::string(n.op_type()) + " '" + std::string(n.name().empty() ? output_of(n, 0) : n.name()) + "'";
}

// The reason a tensor is a rotary cache by the slot it feeds, or "".
std::string cache_slot(const Model& m, const Weight& w) {
  for (int ni : w.consumers) {
    const auto& n = *m.nodes[ni].rec;
    if (n.domain() != "com.microsoft") continue;
    for (const auto& c : kRotaryCaches) {
      if (n.op_type() != c.type) continue;
      if (input_of(n, c.cos) == w.name) return "the cos cache of " + node_label(n) + " (input " + std::to_string(c.cos) + ")";
      if (input_of(n, c.sin) == w.name) return "the sin cache of " + node_label(n) + " (input " + std::to_string(c.sin) + ")";
    }
  }
  return "";
}

// Consumers a buffer can have; a tensor fed to a MatMul, a norm or a convolution is a weight.
bool buffer_like_use(const Model& m, const Weight& w) {
  if (w.consumers.empty()) return false;
  for (int ni : w.consumers) {
    std::string_view op = m.nodes[ni].rec->op_type();
    if (!op_has(op, Trait::Arithmetic | Trait::Comparison | Trait::Logical | Trait::LayoutOnly | Trait::Repeats |
                        Trait::Selects | Trait::Cast | Trait::Merges)) {
      return false;
    }
  }
  return true;
}

// The last two dims when they are a square n x n, else 0.
int64_t square_side(const Weight& w) {
  size_t r = w.dims.size();
  return r >= 2 && w.dims[r - 1] == w.dims[r - 2] ? w.dims[r - 1] : 0;
}

std::string number(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// 0 where attention is allowed, -inf (or a large negative number) where it is not.
std::string additive_mask(const Weight& w, const Reader& r) {
  uint64_t zeros = 0, negatives = 0;
  double low = 0;
  bool ok = r.each(w, [&](uint64_t, double v) {
    if (v == 0) ++zeros;
    else if (v <= -1e4) {
      ++negatives;
      low = std::min(low, v);
    } else {
      return false;
    }
    return true;
  });
  if (!ok || zeros + negatives != w.elements || !zeros || !negatives) return "";
  if (!r.budget.spend(r.analysis, w.elements * ValueBudget::kElement)) return "";  // mask_window reads it again
  if (auto window = mask_window(w, true)) {
    return "a sliding-window mask: 0 where 0 ≤ i − j < " + std::to_string(*window) + ", " + number(low) +
           " elsewhere (each query sees its last " + std::to_string(*window) + " tokens)";
  }
  return "an additive mask: 0 and " + number(low);
}

// 0/1 (or bool-like) lower- or upper-triangular over the last two axes: a causal mask.
std::string triangle_mask(const Weight& w, const Reader& r) {
  int64_t n = square_side(w);
  if (n < 2) return "";
  uint64_t side = static_cast<uint64_t>(n);
  bool lower = true, upper = true, lower_strict = true, upper_strict = true;
  uint64_t seen = 0;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    if (v != 0 && v != 1) return false;
    uint64_t i = index / side % side, j = index % side;
    bool one = v == 1;
    lower = lower && one == (j <= i);
    upper = upper && one == (j >= i);
    lower_strict = lower_strict && one == (j < i);
    upper_strict = upper_strict && one == (j > i);
    ++seen;
    return lower || upper || lower_strict || upper_strict;
  });
  if (!ok || seen != w.elements || !(lower || upper || lower_strict || upper_strict)) return "";
  return std::string("a causal mask: 0/1 ") + (lower || lower_strict ? "lower" : "upper") + "-triangular over the last two axes";
}

// [.., h, ...] with one axis of h >= 2 heads before the rest: every head's slice is a slope
// times the same integer distances (ALiBi). Infinite entries (a mask folded in) must agree.
std::string alibi(const Weight& w, const Reader& r) {
  size_t axis = w.dims.size();
  for (size_t i = 0; i < w.dims.size(); ++i) {
    if (w.dims[i] > 1) {
      axis = i;
      break;
    }
  }
  if (axis + 1 >= w.dims.size() || w.dims[axis] < 2) return "";
  uint64_t heads = static_cast<uint64_t>(w.dims[axis]), slice = w.elements / heads;
  if (slice < 2 || slice > kMostHeadSlice || heads * slice != w.elements) return "";
  // Memory grows with the values read, never with the heads or the slice a file declares: head
  // 0's values, and the current head's scale (every head's must be positive).
  std::vector<double> first;
  uint64_t head = 0;
  double c = 0;
  bool positive = true;
  double unit = 0;  // the smallest nonzero |distance| of head 0
  bool ok = r.each(w, [&](uint64_t index, double v) {
    uint64_t h = index / slice, k = index % slice;
    if (h == 0) {
      first.push_back(v);
      if (std::isfinite(v) && v != 0 && (unit == 0 || std::fabs(v) < unit)) unit = std::fabs(v);
      return true;
    }
    if (h != head) {  // a new head: the one before it had a positive scale
      positive = positive && (head == 0 || c > 0);
      head = h;
      c = 0;
    }
    double f = first[static_cast<size_t>(k)];
    if (std::isinf(f) || std::isinf(v)) return std::isinf(f) && std::isinf(v) && (f < 0) == (v < 0);
    if (f == 0) return v == 0;
    if (c == 0) c = v / f;
    return std::fabs(v - c * f) <= 1e-5 * std::fabs(v) + 1e-30;
  });
  positive = positive && (head == 0 || c > 0);
  if (!ok || unit == 0 || first.size() != slice || head + 1 != heads || !positive) return "";
  for (double v : first) {  // the distances: whole multiples of the smallest one
    if (!std::isfinite(v)) continue;
    double q = v / unit;
    if (std::fabs(q - std::round(q)) > 1e-4) return "";
  }
  return "ALiBi position bias: for each of " + std::to_string(heads) + " heads, a slope times the same integer distances";
}

// ALiBi's per-head slopes stored on their own ([H] or [1, H, 1, 1]): r, r², ..., r^H with
// 0 < r < 1, the geometric sequence 2^(-8(i+1)/H) of the ALiBi paper when H is a power of two.
std::string alibi_slopes(const Weight& w, const Reader& r) {
  uint64_t longest = 0;
  for (int64_t d : w.dims) longest = std::max<uint64_t>(longest, static_cast<uint64_t>(d));
  if (w.elements < 2 || longest != w.elements) return "";  // one axis holds them all
  double first = 0, prev = 0;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    if (!(v > 0 && v < 1)) return false;
    if (index == 0) first = v;
    // Each is the one before times the first: r^(i+1) = r^i · r.
    else if (std::fabs(v - prev * first) > 1e-5 * v) return false;
    prev = v;
    return true;
  });
  if (!ok || first <= 0) return "";
  return "ALiBi slopes for " + std::to_string(w.elements) + " heads: r, r², r³ ... with r = " + number(first) +
         " (a geometric series)";
}

// Relative distances between positions, j - i (or i - j, or |j - i|) over the last two axes of
// an n x n tensor whose other axes are 1: what ALiBi multiplies by its slopes.
std::string relative_distances(const Weight& w, const Reader& r) {
  int64_t n = square_side(w);
  if (n < 2 || static_cast<uint64_t>(n) * static_cast<uint64_t>(n) != w.elements) return "";
  uint64_t side = static_cast<uint64_t>(n);
  bool forward = true, backward = true, absolute = true, negative_absolute = true;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    double i = static_cast<double>(index / side), j = static_cast<double>(index % side);
    forward = forward && v == j - i;
    backward = backward && v == i - j;
    absolute = absolute && v == std::fabs(j - i);
    negative_absolute = negative_absolute && v == -std::fabs(j - i);
    return forward || backward || absolute || negative_absolute;
  });
  if (!ok) return "";
  const char* form = forward ? "j - i" : backward ? "i - j" : absolute ? "|j - i|" : "-|j - i|";
  return std::string("relative distances ") + form + " between " + std::to_string(n) + " positions (what ALiBi scales by its slopes)";
}

// A rotary cos or sin table: every value in [-1, 1], the first row all 1 (cos 0) or all 0 (sin 0).
std::string rotary_table(const Weight& w, const Reader& r) {
  if (w.dims.size() < 2 || w.dims.back() < 1) return "";
  uint64_t row = static_cast<uint64_t>(w.dims.back());
  if (w.elements < 2 * row) return "";
  bool ones = true, zeros = true, varied = false;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    if (!(std::fabs(v) <= 1.0 + 1e-6)) return false;
    if (index < row) {
      ones = ones && v == 1;
      zeros = zeros && v == 0;
      return ones || zeros;
    }
    varied = varied || (v != 0 && v != 1);
    return true;
  });
  if (!ok || !varied || !(ones || zeros)) return "";
  return std::string("a rotary ") + (ones ? "cos" : "sin") + " table: values in [-1, 1], " +
         (ones ? "cos(0) = 1" : "sin(0) = 0") + " in the first row";
}

// Rotary inverse frequencies: 1, r, r², ... with 0 < r < 1.
std::string inverse_frequencies(const Weight& w, const Reader& r) {
  uint64_t longest = 0;
  for (int64_t d : w.dims) longest = std::max<uint64_t>(longest, static_cast<uint64_t>(d));
  if (w.elements < 2 || longest != w.elements) return "";  // one axis holds them all
  double prev = 0, ratio = 0;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    if (index == 0) {
      prev = v;
      return v == 1;
    }
    if (!(v > 0 && v < prev)) return false;
    if (index == 1) ratio = v / prev;
    bool fits = std::fabs(v - prev * ratio) <= 1e-4 * v;
    prev = v;
    return fits;
  });
  if (!ok || ratio <= 0 || ratio >= 1) return "";
  return "rotary inverse frequencies: 1, " + number(ratio) + ", " + number(ratio * ratio) + " ... (a geometric series)";
}

// Positions 0, 1, 2, ... stored as floats.
std::string arange(const Weight& w, const Reader& r) {
  uint64_t longest = 0;
  for (int64_t d : w.dims) longest = std::max<uint64_t>(longest, static_cast<uint64_t>(d));
  if (w.elements < 2 || longest != w.elements) return "";
  bool ok = r.each(w, [&](uint64_t index, double v) { return v == static_cast<double>(index); });
  return ok ? "positions 0, 1, ..., " + std::to_string(w.elements - 1) + " (an arange)" : "";
}

// A tensor of one repeated value that Scatter ops write into (and nothing else reads): a
// zeros_like accumulator the exporter folded into a constant, as a traced loop over experts
// leaves one per index_add. Not learned.
std::string scatter_target(const Model& m, const Weight& w, const Reader& r) {
  if (w.consumers.empty() || w.elements > kMostValues) return "";
  for (int ni : w.consumers) {
    const auto& n = *m.nodes[ni].rec;
    if (!op_has(n.op_type(), Trait::Scatter) || input_of(n, 0) != w.name) return "";
    for (int i = 1; i < n.input_size(); ++i) {
      if (input_of(n, i) == w.name) return "";
    }
  }
  double first = 0;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    if (index == 0) first = v;
    return v == first;
  });
  return ok ? "a constant of " + number(first) + "s that a Scatter writes into (an accumulator the exporter folded)" : "";
}

// The nodes that read a tensor, directly or through the Identity nodes that re-create it (the
// exporter merged equal buffers of several layers into one), each with the name it reads it by.
// The Identity nodes themselves are not listed. Each node is visited once: linear in the graph.
std::vector<std::pair<int, Name>> readers(const Model& m, const Weight& w) {
  std::vector<std::pair<int, Name>> out;
  std::vector<Name> names = {w.name};
  std::set<int> identities;  // each once, whatever cycle a hostile graph draws
  for (size_t i = 0; i < names.size(); ++i) {
    for (int ni : m.consumers_of(w.graph, names[i])) {
      const auto& n = *m.nodes[static_cast<size_t>(ni)].rec;
      if (n.op_type() == "Identity"sv && n.output_size() == 1) {
        if (identities.insert(ni).second) names.push_back(output_of(n, 0));
      } else {
        out.emplace_back(ni, names[i]);
      }
    }
  }
  return out;
}

// A tensor of one repeated value that only Trilu reads (as its input 0; directly or through the
// Identity nodes that re-create it), filled with a mask's value: 1, or a large negative number or
// an infinity. torch.triu(torch.full((T, T), -1e9), 1) and torch.ones(T, T).tril() export as such
// a constant and the Trilu that cuts a triangle from it: a mask built in forward, not learned.
std::string trilu_fill(const Model& m, const Weight& w, const Reader& r) {
  if (w.consumers.empty() || w.elements < 4 || w.elements > kMostValues || w.dims.size() < 2) return "";
  if (w.dims[w.dims.size() - 1] < 2 || w.dims[w.dims.size() - 2] < 2) return "";
  const auto uses = readers(m, w);
  if (uses.empty()) return "";
  for (const auto& [ni, name] : uses) {
    const auto& n = *m.nodes[static_cast<size_t>(ni)].rec;
    if (n.op_type() != "Trilu"sv || input_of(n, 0) != name || input_of(n, 1) == name) return "";
  }
  double first = 0;
  bool ok = r.each(w, [&](uint64_t index, double v) {
    if (index == 0) first = v;
    return v == first;
  });
  if (!ok || !(first == 1 || first <= -1e4 || std::isinf(first))) return "";
  const auto& trilu = *m.nodes[static_cast<size_t>(uses[0].first)].rec;
  return "a constant of " + number(first) + "s that " + node_label(trilu) +
         " cuts a triangle from (a mask built in forward, as torch.triu or tril of a filled tensor exports)";
}

// A floating-point tensor that only comparisons read (Equal, Less, ...; directly or through
// Identity nodes): their output is boolean, so no gradient reaches it and no training changes it.
// A fixed operand (an attention mask traced into the graph, the 0 it is compared with), not a
// parameter.
std::string compared_only(const Model& m, const Weight& w) {
  if (w.consumers.empty() || !is_float_dtype(w.dtype)) return "";
  // A reader in the weight's own graph that neither compares nor passes it on (an Identity) is
  // one of readers()' uses: then not every use compares, and no name need be looked up.
  for (int ni : w.consumers) {
    const Node& node = m.nodes[static_cast<size_t>(ni)];
    const NodeRec& n = *node.rec;
    if (node.graph == w.graph && !op_has(n.op_type(), Trait::Comparison) &&
        !(n.op_type() == "Identity"sv && n.output_size() == 1)) {
      return "";
    }
  }
  const auto uses = readers(m, w);
  if (uses.empty()) return "";
  for (const auto& use : uses) {
    if (!op_has(m.nodes[static_cast<size_t>(use.first)].rec->op_type(), Trait::Comparison)) return "";
  }
  const auto& first = *m.nodes[static_cast<size_t>(uses[0].first)].rec;
  std::string more = uses.size() > 1 ? " and " + std::to_string(uses.size() - 1) + " more" : "";
  return "only compared, by " + node_label(first) + more +
         ": a comparison's boolean output passes no gradient, so training never changes it";
}

// Whether a value is one that a graph's arithmetic uses as a constant, not one that training
// leaves: a whole number, a whole number's reciprocal, square root or reciprocal square root
// (2 as an exponent, 0.5, √2 of GELU, 8 = √64 or 1/√64 scaling scores), an epsilon (a power of
// ten below 1), the tanh GELU's 0.044715 and √(2/π), or the fill value of a mask. Zero is not:
// adding or multiplying by it does nothing, so a stored zero is more likely a learned gate at
// its start.
bool arithmetic_constant(double v) {
  if (std::isinf(v)) return true;
  if (!std::isfinite(v) || v == 0) return false;
  double a = std::fabs(v);
  // A positive whole number to float32's precision (a relative 1e-6, and never more than 1e-3
  // off), not merely something that rounds to 0: a trained value is almost never one.
  auto whole = [](double x) {
    return x >= 0.5 && x <= (1 << 24) && std::fabs(x - std::round(x)) <= std::min(1e-6 * x, 1e-3);
  };
  if (whole(a) || whole(1 / a) || whole(a * a) || whole(1 / (a * a))) return true;
  if (v <= -1e4) return true;  // a mask's large negative fill
  // An epsilon: a power of ten below 1 (1e-05, 1e-06, 1e-12), as float32 stores it.
  if (a < 1 && std::fabs(std::log10(a) - std::round(std::log10(a))) <= 1e-6) return true;
  for (double c : {0.044715, 0.7978845608028654}) {
    if (std::fabs(a - c) <= 1e-6 * c) return true;
  }
  return false;
}

// A one-element float tensor that only arithmetic reads, holding an arithmetic constant: the
// reason, or "".
std::string scalar_constant(const Model& m, const Weight& w, const Reader& r) {
  if (w.elements != 1 || w.consumers.empty()) return "";
  if (!is_float_dtype(w.dtype)) return "";
  for (int ni : w.consumers) {
    std::string_view op = m.nodes[ni].rec->op_type();
    if (!op_has(op, Trait::Arithmetic) && op != "Where"sv) return "";
  }
  double value = 0;
  bool ok = r.each(w, [&](uint64_t, double v) {
    value = v;
    return true;
  });
  if (!ok || !arithmetic_constant(value)) return "";
  const auto& first = *m.nodes[static_cast<size_t>(w.consumers[0])].rec;
  std::string role = first.op_type() == "Pow"sv && input_of(first, 1) == w.name ? "the exponent of " + node_label(first)
                                                                               : "an operand of " + node_label(first);
  if (w.consumers.size() > 1) role += " and " + std::to_string(w.consumers.size() - 1) + " more";
  return "a scalar constant " + number(value) + ", " + role;
}

// Whether x is an exp that an element test can tell: finite, and a normal float32 (an exp that
// overflows to +inf is within 1e-5·inf of any value; one that underflows to 0 of any zero).
bool telling(double x) { return std::isfinite(x) && x >= static_cast<double>(std::numeric_limits<float>::min()); }

// The tolerance of the test "v is ±exp(a)": relative to exp(a).
double exp_tolerance(double e) { return 1e-5 * e + 1e-30; }

// The parameters a folded constant may be, by (element count, |first value|): a source is
// compared only with those whose first value is ±exp of its own, never with every tensor of its
// size.
using FoldIndex = std::vector<std::tuple<uint64_t, double, int>>;

FoldIndex fold_candidates(const Model& m, const std::vector<char>& claimed, const Reader& r) {
  FoldIndex index;
  for (size_t i = 0; i < m.weights.size(); ++i) {
    const Weight& w = m.weights[i];
    if (!w.parameter || w.elements < 2 || w.elements > kMostHeadSlice || claimed[i]) continue;
    std::optional<double> first;
    r.each(w, [&](uint64_t, double v) {
      first = v;
      return false;  // the first value is all the index needs
    });
    if (first && std::isfinite(*first)) index.emplace_back(w.elements, std::fabs(*first), static_cast<int>(i));
  }
  std::sort(index.begin(), index.end());
  return index;
}

// Whether the tensor `ti` holds -exp (sign -1) or exp (+1) of `values`, element for element, each
// a test that can tell; 0 when not.
int exp_of(const Weight& t, const std::vector<double>& values, const Reader& r) {
  int sign = 0;  // -1: -exp, +1: exp, 0: not yet seen
  bool ok = r.each(t, [&](uint64_t index, double v) {
    double e = std::exp(values[static_cast<size_t>(index)]);
    if (!telling(e) || !std::isfinite(v)) return false;  // proves nothing
    double tol = exp_tolerance(e);
    int s = std::fabs(v + e) <= tol ? -1 : std::fabs(v - e) <= tol ? 1 : 0;
    if (s == 0 || (sign != 0 && s != sign)) return false;
    sign = s;
    return true;
  });
  return ok ? sign : 0;
}

// Constants the exporter computed in forward from a parameter and stored beside it: a tensor of
// a parameter's element count whose values are -exp (or exp) of that parameter's, as Mamba's
// A = -exp(A_log) folds. By weight index, with the reason. Only parameters read by Exp are
// sources, and only tensors of the same element count and a matching first value are compared.
std::map<int, std::string> folded_from_parameters(const Model& m, const std::vector<char>& claimed, const Reader& r) {
  std::map<int, std::string> out;
  FoldIndex index;
  bool indexed = false;
  for (size_t si = 0; si < m.weights.size(); ++si) {
    const Weight& src = m.weights[si];
    if (!src.parameter || src.elements < 2 || src.elements > kMostHeadSlice) continue;
    bool exp_read = std::any_of(src.consumers.begin(), src.consumers.end(), [&](int ni) {
      return m.nodes[static_cast<size_t>(ni)].rec->op_type() == "Exp"sv;
    });
    if (!exp_read) continue;
    if (!indexed) {
      index = fold_candidates(m, claimed, r);
      indexed = true;
    }
    std::vector<double> values;  // grows with the values read, not the elements declared
    if (!r.each(src, [&](uint64_t, double v) {
          values.push_back(v);
          return true;
        }) || values.size() != src.elements) {
      continue;
    }
    double e = std::exp(values[0]);
    if (!telling(e)) continue;
    auto from = std::lower_bound(index.begin(), index.end(), std::make_tuple(src.elements, e - exp_tolerance(e), INT_MIN));
    auto to = std::upper_bound(index.begin(), index.end(), std::make_tuple(src.elements, e + exp_tolerance(e), INT_MAX));
    for (auto it = from; it != to; ++it) {
      int ti = std::get<2>(*it);
      if (ti == static_cast<int>(si) || out.count(ti)) continue;
      if (int sign = exp_of(m.weights[static_cast<size_t>(ti)], values, r)) {
        out[ti] = std::string("a constant the exporter computed from the parameter '") + std::string(src.name) + "' (" +
                  (sign < 0 ? "-exp" : "exp") + " of it, folded out of forward): not a second parameter";
      }
    }
  }
  return out;
}

std::string by_values(const Weight& w, const Reader& r) {
  if (w.elements > kMostValues) return "";
  for (auto check : {additive_mask, triangle_mask, alibi, alibi_slopes, relative_distances, rotary_table,
                     inverse_frequencies, arange}) {
    std::string why = check(w, r);
    if (!why.empty()) return why;
  }
  return "";
}

// A checkpoint's integer or bool tensor (I32, I64, U32, U64, BOOL): stored, and counted in the
// stored total, but never a learned parameter (torch's sum(p.numel()) over parameters() leaves
// out BatchNorm's 0-d num_batches_tracked, position ids, index tables). An ONNX graph's are its
// shape constants, not stored parameters at all.
std::string stored_integers(const Model& model, const Weight& w) {
  if (!model.checkpoint || w.dtype == 0 || dtype_is_parameter_type(w.dtype)) return "";
  static const std::string kCounter = "num_batches_tracked";
  const std::string_view name = w.name;
  const std::string type = dtype_name(w.dtype);
  if (name.size() >= kCounter.size() && name.substr(name.size() - kCounter.size()) == kCounter) {
    return "a BatchNorm's batch counter (" + type + "), not learned";
  }
  if (type == "bool") return "a bool tensor (a mask), not learned";
  return "an integer tensor (" + type + "): indices or a buffer, not a learned parameter";
}

}  // namespace

void add_buffers(FrameworkView& view, const std::vector<BufferTensor>& more, const Model& model) {
  for (const auto& b : more) {
    uint64_t n = model.weights[static_cast<size_t>(b.weight)].elements;
    view.buffers.push_back(b);
    view.buffer_elements += n;
    view.parameters = view.parameters >= n ? view.parameters - n : 0;
  }
}

FrameworkView framework_view(const Model& model, const AttentionResult& attention,
                             const std::vector<DuplicatePair>& duplicates, uint64_t unique, bool read_values,
                             ValueBudget* audit_budget) {
  std::optional<ValueBudget> own;
  ValueBudget& budget = audit_budget ? *audit_budget : own.emplace(model);
  const Reader buffers{budget, "buffers"}, folded_reader{budget, "folded constants"};
  FrameworkView v;
  v.values_read = read_values;
  std::vector<char> claimed(model.weights.size(), 0);  // by weight: attention weights and extras, duplicate copies: not buffers
  auto claim = [&](int wi) {
    if (wi >= 0 && static_cast<size_t>(wi) < claimed.size()) claimed[static_cast<size_t>(wi)] = 1;
  };
  for (const auto& b : attention.blocks) {
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(r).tensors) claim(t.weight);
    }
    for (const auto& e : b.extras) claim(e.weight);
  }
  for (const auto& d : duplicates) claim(d.copy);

  std::map<int, std::string> folded = read_values ? folded_from_parameters(model, claimed, folded_reader) : std::map<int, std::string>();
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (!w.parameter || claimed[i] || w.elements < 1) continue;
    std::string why = stored_integers(model, w);
    if (why.empty()) why = cache_slot(model, w);
    if (why.empty() && read_values && buffer_like_use(model, w)) why = by_values(w, buffers);
    // A 0/1 triangle is a cumulative sum written as a product (or a mask), whatever reads it: a
    // learned weight is never exactly that.
    if (why.empty() && read_values && w.elements <= kMostValues) why = triangle_mask(w, buffers);
    if (why.empty()) {
      auto it = folded.find(static_cast<int>(i));
      if (it != folded.end()) why = it->second;
    }
    if (why.empty() && read_values) why = scatter_target(model, w, buffers);
    if (why.empty() && read_values) why = trilu_fill(model, w, buffers);
    if (why.empty()) why = compared_only(model, w);
    if (why.empty() && read_values && w.elements == 1) {
      if (std::string c = scalar_constant(model, w, buffers); !c.empty()) {
        v.constants.push_back({static_cast<int>(i), c});
        v.constant_elements += w.elements;
        continue;
      }
    }
    if (why.empty()) continue;
    v.buffers.push_back({static_cast<int>(i), why});
    v.buffer_elements += w.elements;  // each a parameter tensor: their sum is at most stored
  }

  // Identity nodes re-creating a parameter tensor: each use beyond the first is one more
  // parameter in the framework (the exporter stored equal tensors once).
  std::vector<char> buffer_set(model.weights.size(), 0);  // by weight
  for (const auto& b : v.buffers) buffer_set[static_cast<size_t>(b.weight)] = 1;
  for (const auto& c : v.constants) buffer_set[static_cast<size_t>(c.weight)] = 1;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (!w.parameter || buffer_set[i]) continue;
    std::vector<int> identities;
    bool direct = false;
    for (int ni : w.consumers) {
      const auto& n = *model.nodes[ni].rec;
      if (n.op_type() == "Identity"sv && input_of(n, 0) == w.name) identities.push_back(ni);
      else direct = true;
    }
    for (size_t k = direct ? 0 : 1; k < identities.size(); ++k) {
      v.merged.push_back({static_cast<int>(i), identities[k]});
      if (add_overflows(v.merged_elements, w.elements, &v.merged_elements)) {
        throw InputError("the parameters re-created by Identity nodes overflow 64 bits");
      }
    }
  }
  uint64_t set_aside = v.buffer_elements + v.constant_elements;  // each at most stored: no overflow
  uint64_t without_buffers = unique >= set_aside ? unique - set_aside : 0;
  if (add_overflows(without_buffers, v.merged_elements, &v.parameters)) {
    throw InputError("the framework's parameter count overflows 64 bits");
  }
  return v;
}

}  // namespace headcount
