// fidelity.cpp: does an export hold its checkpoint (fidelity.h)? Each checkpoint tensor is looked
// for by its values in every export tensor of its size, then in packed export tensors; what is
// nowhere is paired by name, role or shape (a changed weight) or else reported lost.
//
// Reads stay bounded: 16 sampled elements of every tensor first (one small read each), then in
// full only the pairs whose samples agree, in bands of at most kBand elements per side.
#include "headcount/fidelity.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "checkpoint/model.h"
#include "headcount/results/audit.h"
#include "headcount/numbers.h"
#include "payload.h"

namespace headcount {
namespace {

constexpr int kSamples = 16;
constexpr uint64_t kBand = 256u << 10;   // elements of one side held at a time, as doubles
constexpr uint64_t kHeld = 4u << 20;     // a tensor up to this many bytes is read once, then sampled
constexpr size_t kCandidates = 64;       // tensors with one key (or of one size) compared with one tensor
constexpr uint64_t kPackedReads = 4u << 20;  // sampled reads of the whole packed-tensor search

std::vector<int64_t> squeezed(const Weight& w) {
  std::vector<int64_t> out;
  for (int64_t d : w.dims) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

// The k-th of kSamples positions spread over n elements, first and last included.
uint64_t sample_position(uint64_t n, int k) {
  if (n <= 1) return 0;
  const uint64_t last = n - 1, m = kSamples - 1, kk = static_cast<uint64_t>(k);
  return last / m * kk + last % m * kk / m;  // last · k / m without overflow
}

Holder holder(int weight, Layout layout, uint64_t start = 0, uint64_t end = 0) {
  Holder h;
  h.weight = weight;
  h.layout = layout;
  h.start = start;
  h.end = end;
  return h;
}

bool comparable(const Weight& w) {
  const uint64_t es = static_cast<uint64_t>(dtype_bits(w.dtype) / 8);
  return significand_bits(w.dtype) > 0 && w.payload_known && !w.sparse && !w.packed && w.elements > 0 &&
         w.bytes % es == 0 && w.bytes / es == w.elements;
}

// The narrower of two float types: the one with fewer significand bits.
int32_t narrower(int32_t a, int32_t b) { return significand_bits(a) <= significand_bits(b) ? a : b; }

bool same_value(double x, double y, int32_t as) {
  double rx = round_to(as, x), ry = round_to(as, y);
  return rx == ry || (std::isnan(rx) && std::isnan(ry));
}

// Elements of one tensor read as doubles, through a reader kept open.
class Values {
 public:
  // `hold`: a tensor of at most kHeld bytes is read whole at once, for many reads to follow.
  bool open(const Weight& w, PayloadFiles& files, bool hold = true) {
    w_ = &w;
    es_ = static_cast<uint64_t>(dtype_bits(w.dtype) / 8);
    if (!r_.open(w, &files)) return false;
    if (hold && w.bytes <= kHeld) r_.hold(kHeld);
    return true;
  }
  bool read(uint64_t first, uint64_t n, double* out) {
    if (first > w_->elements || n > w_->elements - first) return false;
    raw_.resize(static_cast<size_t>(n * es_));
    if (n > 0 && !r_.read(first * es_, raw_.size(), raw_.data())) return false;
    decode_floats(w_->dtype, raw_.data(), static_cast<size_t>(n), out);
    return true;
  }

 private:
  const Weight* w_ = nullptr;
  uint64_t es_ = 0;
  PayloadReader r_;
  std::vector<char> raw_;
};

// A 128-bit hash of a tensor's values rounded to a type, in its own element order or (a matrix) in
// its transpose's: a sum over its elements of a keyed mix of (position, value), so it is summed
// in the order the tensor is stored, whatever the order hashed. -0 is 0 and every NaN one NaN, as
// same_value has them. Equal values give equal hashes; unequal ones almost never do, and the keys
// are drawn per run, so a file cannot be written to collide. It only rules candidates out: a pair of
// equal hashes is still compared in full, so the verdicts never depend on it.
struct Hash128 {
  uint64_t a = 0, b = 0;
  bool operator==(const Hash128& o) const { return a == o.a && b == o.b; }
};

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

const std::array<uint64_t, 4>& hash_keys() {
  static const std::array<uint64_t, 4> keys = [] {
    std::random_device rd;
    std::array<uint64_t, 4> k{};
    for (auto& x : k) x = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    return k;
  }();
  return keys;
}

struct Samples {
  std::vector<double> direct, transposed;  // transposed: at the positions of this tensor's transpose
};

std::optional<Samples> take_samples(const Weight& w, PayloadFiles& files) {
  Values v;
  if (!v.open(w, files)) return std::nullopt;
  Samples s;
  s.direct.resize(kSamples);
  for (int k = 0; k < kSamples; ++k) {
    if (!v.read(sample_position(w.elements, k), 1, &s.direct[static_cast<size_t>(k)])) return std::nullopt;
  }
  std::vector<int64_t> d = squeezed(w);
  if (d.size() == 2) {  // w is [r, c]; its transpose A is [c, r]: A's element s is w[s % r][s / r]
    const uint64_t r = static_cast<uint64_t>(d[0]), c = static_cast<uint64_t>(d[1]);
    s.transposed.resize(kSamples);
    for (int k = 0; k < kSamples; ++k) {
      uint64_t p = sample_position(w.elements, k);
      if (!v.read((p % r) * c + p / r, 1, &s.transposed[static_cast<size_t>(k)])) return std::nullopt;
    }
  }
  return s;
}

std::optional<Hash128> content_hash(const Weight& w, PayloadFiles& files, int32_t as, bool transposed) {
  const std::vector<int64_t> d = squeezed(w);
  if (transposed && d.size() != 2) return std::nullopt;
  const uint64_t rows = transposed ? static_cast<uint64_t>(d[0]) : 1, cols = transposed ? static_cast<uint64_t>(d[1]) : w.elements;
  Values v;
  if (!v.open(w, files, false)) return std::nullopt;
  const auto& k = hash_keys();
  Hash128 h;
  std::vector<double> x;
  for (uint64_t e0 = 0; e0 < w.elements; e0 += kBand) {
    const uint64_t n = std::min(kBand, w.elements - e0);
    x.resize(static_cast<size_t>(n));
    if (!v.read(e0, n, x.data())) return std::nullopt;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t e = e0 + i, at = transposed ? (e % cols) * rows + e / cols : e;  // its place in the order hashed
      double r = round_to(as, x[static_cast<size_t>(i)]);
      if (r == 0) r = 0;  // -0 as 0
      uint64_t bits;
      std::memcpy(&bits, &r, sizeof bits);
      if (std::isnan(r)) bits = 0x7FF8000000000000ull;
      h.a += mix64(bits ^ mix64(at ^ k[0]) ^ k[1]);
      h.b += mix64((bits + k[2]) ^ mix64(at + k[3]));
    }
  }
  return h;
}

// The content hashes of one model's tensors, each made when first asked for (a tensor is hashed
// only when it meets more than one candidate of equal samples).
class Hashes {
 public:
  Hashes(const Model& m, PayloadFiles& files) : m_(m), files_(files) {}
  const std::optional<Hash128>& of(int tensor, int32_t as, bool transposed) {
    auto [it, fresh] = memo_.try_emplace({tensor, as, transposed});
    if (fresh) it->second = content_hash(m_.weights[static_cast<size_t>(tensor)], files_, as, transposed);
    return it->second;
  }

 private:
  const Model& m_;
  PayloadFiles& files_;
  std::map<std::tuple<int, int32_t, bool>, std::optional<Hash128>> memo_;
};

// Whether a's values (in its own order) may be b's (in b's order, or its transpose's) at type
// `as`: false only when both hashes are known and differ.
bool may_hold(Hashes& ah, int a, Hashes& bh, int b, int32_t as, bool transposed) {
  const auto& x = ah.of(a, as, false);
  const auto& y = bh.of(b, as, transposed);
  return !x || !y || *x == *y;
}

int equal_samples(const std::vector<double>& a, const std::vector<double>& b, int32_t as) {
  int n = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) n += same_value(a[k], b[k], as) ? 1 : 0;
  return n;
}

struct Comparison {
  bool read = true;     // false: a payload could not be read
  bool applies = true;  // false: the layout does not fit a's shape (rotary rows of a 1-D tensor, say)
  uint64_t compared = 0;  // elements of a compared: all of them unless it stopped at a difference
  uint64_t differing = 0;
  double largest = 0;
  uint64_t at = 0;
  double a_value = 0, b_value = 0;
};

// Whether the comparison proves b holds every one of a's elements.
bool equal_whole(const Comparison& c) { return c.read && c.applies && c.differing == 0; }

void note(Comparison& out, double x, double y, uint64_t at, int32_t as) {
  ++out.compared;
  if (same_value(x, y, as)) return;
  ++out.differing;
  double d = std::fabs(round_to(as, x) - round_to(as, y));
  if (std::isnan(d)) d = INFINITY;
  if (out.differing == 1 || d > out.largest) {
    out.largest = d;
    out.at = at;
    out.a_value = x;
    out.b_value = y;
  }
}

// llama.cpp's rotary order of a head of `head` rows (even): its row 2j + t is the model's row
// t · head/2 + j, the two halves interleaved.
uint64_t model_row(uint64_t row, uint64_t head) {
  const uint64_t o = row % head;
  return row - o + (o % 2) * (head / 2) + o / 2;
}

// The two tensors of one comparison, open, and the type their values are compared at. With
// `first_only`, a comparison stops at the first difference.
struct Sides {
  Values a, b;
  int32_t as = 0;
  bool first_only = false;
};

// Rotary: A's row r against B's row model_row(r, head), row by row, in bands of a row.
void compare_rotary(Sides& s, uint64_t rows, uint64_t cols, uint64_t head, Comparison& out) {
  std::vector<double> x, y;
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c0 = 0; c0 < cols; c0 += kBand) {
      const uint64_t n = std::min(kBand, cols - c0);
      x.resize(static_cast<size_t>(n));
      y.resize(static_cast<size_t>(n));
      if (!s.a.read(r * cols + c0, n, x.data()) || !s.b.read(model_row(r, head) * cols + c0, n, y.data())) {
        out.read = false;
        return;
      }
      for (uint64_t i = 0; i < n; ++i) {
        note(out, x[i], y[i], r * cols + c0 + i, s.as);
        if (s.first_only && out.differing) return;
      }
    }
  }
}

// Same, Reshaped and Rows: A's element e against B's element start + e, in bands.
void compare_flat(Sides& s, uint64_t elements, uint64_t start, Comparison& out) {
  std::vector<double> x, y;
  for (uint64_t e = 0; e < elements; e += kBand) {
    uint64_t n = std::min(kBand, elements - e);
    x.resize(static_cast<size_t>(n));
    y.resize(static_cast<size_t>(n));
    if (!s.a.read(e, n, x.data()) || !s.b.read(start + e, n, y.data())) {
      out.read = false;
      return;
    }
    for (uint64_t i = 0; i < n; ++i) {
      note(out, x[i], y[i], e + i, s.as);
      if (s.first_only && out.differing) return;
    }
  }
}

// Columns, Transposed and RotaryTransposed: A, [rows, cols], against B's columns, B being
// [cols, stride] (A transposed: [cols, rows]).
void compare_tiled(Sides& s, Layout layout, uint64_t rows, uint64_t cols, uint64_t start, uint64_t stride,
                   uint64_t head, Comparison& out) {
  // In tiles of A's rows r0.. and columns c0.., at most kBand elements: A's rows are read a row
  // at a time (the whole band at once when a tile spans every column), B's a column run each.
  if (layout != Layout::Columns) stride = rows;  // B is A transposed, [C, R]
  const uint64_t nc_most = std::min(cols, kBand);
  uint64_t nr_most = std::max<uint64_t>(1, kBand / nc_most);
  // Rotary rows stay within their head: a tile of whole heads reads the same model rows.
  const bool rotary = layout == Layout::RotaryTransposed;
  if (rotary) nr_most = std::max<uint64_t>(1, nr_most / head) * head;
  std::vector<double> x, y;
  for (uint64_t r0 = 0; r0 < rows; r0 += nr_most) {
    const uint64_t nr = std::min(nr_most, rows - r0);
    for (uint64_t c0 = 0; c0 < cols; c0 += nc_most) {
      const uint64_t nc = std::min(nc_most, cols - c0);
      x.resize(static_cast<size_t>(nr * nc));
      y.resize(static_cast<size_t>(nr * nc));
      bool ok = nc == cols ? s.a.read(r0 * cols, nr * cols, x.data()) : true;
      for (uint64_t i = 0; ok && nc != cols && i < nr; ++i) ok = s.a.read((r0 + i) * cols + c0, nc, x.data() + i * nc);
      for (uint64_t j = 0; ok && j < nc; ++j) ok = s.b.read((c0 + j) * stride + start + r0, nr, y.data() + j * nr);
      if (!ok) {
        out.read = false;
        return;
      }
      for (uint64_t i = 0; i < nr; ++i) {
        const uint64_t yi = rotary ? model_row(r0 + i, head) - r0 : i;
        for (uint64_t j = 0; j < nc; ++j) {
          note(out, x[i * nc + j], y[j * nr + yi], (r0 + i) * cols + c0 + j, s.as);
          if (s.first_only && out.differing) return;
        }
      }
    }
  }
}

// A (checkpoint) against B (export) in `layout`: Same, Reshaped and Rows compare A's element e
// with B's element start + e; Columns reads A as [R, C] and compares A[i][j] with B[j][start + i],
// B being [C, stride]; Transposed is Columns of a B of [C, R]. Rotary and RotaryTransposed compare
// A's row r with the model's row model_row(r, head) of B, as stored or transposed. With
// `first_only`, stops at the first difference. The 2-D layouts need a of two dims (dims of 1
// aside) and the rotary ones rows in whole heads of an even size: any other shape does not apply.
Comparison compare_in(const Weight& a, const Weight& b, Layout layout, uint64_t start, uint64_t stride, int32_t as,
                      bool first_only, PayloadFiles& af, PayloadFiles& bf, uint64_t head) {
  Comparison out;
  const bool two_d = layout != Layout::Same && layout != Layout::Reshaped && layout != Layout::Rows;
  const std::vector<int64_t> d = squeezed(a);
  const bool rotary_layout = layout == Layout::Rotary || layout == Layout::RotaryTransposed;
  if (two_d && (d.size() != 2 || (rotary_layout && (head < 2 || head % 2 || static_cast<uint64_t>(d[0]) % head)))) {
    out.applies = false;
    return out;
  }
  Sides s;
  s.as = as;
  s.first_only = first_only;
  if (!s.a.open(a, af) || !s.b.open(b, bf)) {
    out.read = false;
    return out;
  }
  if (!two_d) {
    compare_flat(s, a.elements, start, out);
    return out;
  }
  const uint64_t rows = static_cast<uint64_t>(d[0]), cols = static_cast<uint64_t>(d[1]);
  if (layout == Layout::Rotary) compare_rotary(s, rows, cols, head, out);
  else compare_tiled(s, layout, rows, cols, start, stride, head, out);
  return out;
}

// compare_in, refusing a result that does not cover a: a layout that compared fewer elements than
// a holds, without a difference, proves nothing (it is reported as not applying).
Comparison compare(const Weight& a, const Weight& b, Layout layout, uint64_t start, uint64_t stride, int32_t as,
                   bool first_only, PayloadFiles& af, PayloadFiles& bf, uint64_t head = 0) {
  Comparison out = compare_in(a, b, layout, start, stride, as, first_only, af, bf, head);
  if (out.read && out.applies && (out.differing == 0 || !first_only) && out.compared != a.elements) out.applies = false;
  return out;
}

// The layouts in which export tensor b can hold checkpoint tensor a whole (same element count).
std::vector<Layout> whole_layouts(const Weight& a, const Weight& b) {
  std::vector<Layout> out;
  if (a.elements != b.elements) return out;
  std::vector<int64_t> da = squeezed(a), db = squeezed(b);
  if (da == db) out.push_back(Layout::Same);
  if (da.size() == 2 && db.size() == 2 && da[0] == db[1] && da[1] == db[0]) out.push_back(Layout::Transposed);
  if (da != db) out.push_back(Layout::Reshaped);
  return out;
}

// The whole layout in which b holds a's values exactly, among the transposed ones or the others;
// nothing when b holds them in none.
std::optional<Layout> held_whole(const Weight& a, const Weight& b, bool transposed, int32_t as, PayloadFiles& af,
                                 PayloadFiles& bf) {
  for (Layout l : whole_layouts(a, b)) {
    if ((l == Layout::Transposed) != transposed) continue;
    if (equal_whole(compare(a, b, l, 0, 0, as, true, af, bf))) return l;
  }
  return std::nullopt;
}

// The checkpoint tensor's samples against the export tensor's in a whole layout.
int equal_in(const Samples& a, const Samples& b, Layout l, int32_t as) {
  return equal_samples(a.direct, l == Layout::Transposed ? b.transposed : b.direct, as);
}

// A tensor's samples rounded to type `as`, with its element count and dtype: tensors whose
// samples are equal at that type have the same key. -0 is 0 and every NaN one NaN.
std::string sample_key(uint64_t elements, int32_t dtype, const std::vector<double>& samples, int32_t as) {
  std::string key(reinterpret_cast<const char*>(&elements), sizeof elements);
  key.append(reinterpret_cast<const char*>(&dtype), sizeof dtype);
  for (double v : samples) {
    double r = round_to(as, v);
    if (r == 0) r = 0;  // -0 as 0
    uint64_t bits;
    std::memcpy(&bits, &r, sizeof bits);
    if (std::isnan(r)) bits = 0x7FF8000000000000ull;
    key.append(reinterpret_cast<const char*>(&bits), sizeof bits);
  }
  return key;
}

// Names that pair by name: the same name, or it with a dotted prefix
// ("model.layers.0.q.weight" and "layers.0.q.weight"), each name indexed with its last few
// dotted suffixes, so a lookup costs a few hash probes, not a pass over every name.
class NameIndex {
 public:
  void add(std::string_view name, int id) {
    full_[name].push_back(id);
    size_t n = 0;
    for (size_t dot = name.find('.'); dot != std::string_view::npos && n < kSuffixes; dot = name.find('.', dot + 1), ++n) {
      suffix_[name.substr(dot + 1)].push_back(id);
    }
  }
  // The first id that `ok` accepts among names equal to `name`, ending with "." + name, or that
  // `name` ends with after a dot; -1 for none. At most kCandidates ids of each list are tried.
  template <typename Ok>
  int find(std::string_view name, Ok ok) const {
    auto first = [&](const auto& map, std::string_view key) {
      auto it = map.find(key);
      if (it == map.end()) return -1;
      for (size_t k = 0; k < it->second.size() && k < kCandidates; ++k) {
        if (ok(it->second[k])) return it->second[k];
      }
      return -1;
    };
    if (int id = first(full_, name); id >= 0) return id;
    if (int id = first(suffix_, name); id >= 0) return id;
    size_t n = 0;
    for (size_t dot = name.find('.'); dot != std::string_view::npos && n < kSuffixes; dot = name.find('.', dot + 1), ++n) {
      if (int id = first(full_, name.substr(dot + 1)); id >= 0) return id;
    }
    return -1;
  }

 private:
  static constexpr size_t kSuffixes = 8;
  std::unordered_map<std::string_view, std::vector<int>> full_, suffix_;
};

NamedShape named_shape(const Weight& w) {
  return {std::string(w.name), std::vector<int64_t>(w.dims.begin(), w.dims.end()), dtype_name(w.dtype), w.elements};
}

// A sorted list of (dim, export tensor) pairs, and the key of a tensor's rank and its dims after
// the first.
using Sorted = std::vector<std::pair<int64_t, int>>;

std::vector<int64_t> trailing_key(const std::vector<int64_t>& d) {
  std::vector<int64_t> key(d.begin() + 1, d.end());
  key.insert(key.begin(), static_cast<int64_t>(d.size()));
  return key;
}

// The packed-tensor search (step 4): export tensors by rank and the dims after the first, and 2-D
// ones by their first dim; each list sorted by the dim that must be larger than the checkpoint
// tensor's. The search reads at most kPackedReads sampled elements in all.
struct PackedSearch {
  std::map<std::vector<int64_t>, Sorted> by_trailing;
  std::map<int64_t, Sorted> by_rows;
  uint64_t reads = 0;
};

// Candidates for a checkpoint tensor of squeezed dims `da`: (export tensor, layout), at most
// kCandidates of each layout; `cut` is set when there were more.
std::vector<std::pair<int, Layout>> packed_candidates(const PackedSearch& search, const std::vector<int64_t>& da,
                                                      bool& cut) {
  std::vector<std::pair<int, Layout>> candidates;
  auto take = [&](const Sorted& sorted, int64_t above, Layout layout) {
    auto it = std::upper_bound(sorted.begin(), sorted.end(), std::make_pair(above, std::numeric_limits<int>::max()));
    for (size_t n = 0; it != sorted.end(); ++it, ++n) {
      if (n == kCandidates) {
        cut = true;
        break;
      }
      candidates.push_back({it->second, layout});
    }
  };
  if (auto it = search.by_trailing.find(trailing_key(da)); it != search.by_trailing.end()) take(it->second, da[0], Layout::Rows);
  if (da.size() == 2) {
    if (auto it = search.by_rows.find(da[1]); it != search.by_rows.end()) take(it->second, da[0], Layout::Columns);
  }
  return candidates;
}

// Where a run of `run` rows (or columns) of `total` is tried: at multiples of its own size from
// either end (Q at 0, then K and V, whatever their sizes), at most 64 from each.
std::set<uint64_t> run_starts(uint64_t run, uint64_t total) {
  std::set<uint64_t> starts;
  for (uint64_t s = 0; s + run <= total && starts.size() < 64; s += run) starts.insert(s);
  for (uint64_t s = total - run, k = 0; k < 64; s -= run, ++k) {
    starts.insert(s);
    if (s < run) break;
  }
  return starts;
}

// The last look (step 4b): export tensors keyed by their samples, as stored and transposed (an
// index per export dtype and narrower type, built when first needed), and a list of entries of
// equal samples split by their content hashes when first needed (nothing when a hash is unknown).
struct ExportIndex {
  using Entries = std::vector<std::pair<int, bool>>;  // (export tensor, transposed)
  std::set<int32_t> types;
  std::map<std::pair<int32_t, int32_t>, std::unordered_map<std::string, Entries>> by;
  std::map<const Entries*, std::optional<std::map<std::pair<uint64_t, uint64_t>, Entries>>> split;
  const Entries none{};
};

// The classes keyed by their samples (step 2): the checkpoint's dtypes, and an index per dtype and
// narrower type, built when first needed.
struct ClassIndex {
  std::set<int32_t> types;
  std::map<std::pair<int32_t, int32_t>, std::unordered_map<std::string, std::vector<int>>> by;
};

// What the pairing (step 5) pairs by: the free export tensors by size and by name, the
// checkpoint's roles and attention layers (blocks_align: one per block of the export), and a
// GGUF's Q and K weights with their head counts.
struct Pairing {
  std::unordered_map<uint64_t, std::vector<int>> by_size;  // what is left free is compacted as it is walked
  NameIndex names;
  std::vector<NamedTensor> roles;
  std::vector<int> attention_layers;
  bool blocks_align = false;
  std::map<int, int64_t> rotary_heads;
};

// The layers that hold a checkpoint tensor of an attention role, sorted, each once.
std::vector<int> attention_layers(const std::vector<int>& cks, const std::vector<NamedTensor>& roles) {
  std::vector<int> layers;
  for (int i : cks) {
    const NamedTensor& n = roles[static_cast<size_t>(i)];
    if (n.layer >= 0 && (n.role == "q" || n.role == "k" || n.role == "v" || n.role == "o" || n.role == "qkv")) {
      layers.push_back(n.layer);
    }
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  return layers;
}

// A GGUF's Q and K weights, with their head counts: llama.cpp stores them in its rotary order.
std::map<int, int64_t> rotary_heads(const Audit& checkpoint) {
  std::map<int, int64_t> heads;
  const Model& C = checkpoint.model;
  if (!C.checkpoint || C.checkpoint->kind != FormatKind::Gguf) return heads;
  for (const AttentionBlock& b : checkpoint.attention.blocks) {
    for (const auto& [p, n] : {std::make_pair(&b.q, b.heads), std::make_pair(&b.k, b.kv_heads)}) {
      if (!n || *n <= 0) continue;
      for (const TensorShare& s : p->tensors) {
        if (!s.bias && s.slice.empty()) heads[s.weight] = *n;
      }
    }
  }
  return heads;
}

// The state check_fidelity's steps share: the two audits and their payload files, the tensors
// compared and their samples and content hashes, the classes of equal checkpoint tensors and the
// export tensors that hold them, and the result the steps fill in. The caller runs the steps in
// their order, each reading what the ones before wrote.
class Comparer {
 public:
  Comparer(const Audit& exported, const Audit& checkpoint, Fidelity& f);
  void form_classes();
  void find_class_holders();
  void make_entries();
  void assign_within_classes();
  void find_packed();
  void look_everywhere();
  void pair_the_rest();
  void find_added();
  void name_holders();

 private:
  const Weight& cw(int i) const { return C_.weights[static_cast<size_t>(i)]; }
  const Weight& ew(int j) const { return E_.weights[static_cast<size_t>(j)]; }
  const std::optional<Samples>& cs(int i) const { return csamples_[static_cast<size_t>(i)]; }
  const std::optional<Samples>& es(int j) const { return esamples_[static_cast<size_t>(j)]; }
  TensorFidelity& entry(int i) { return f_.tensors[static_cast<size_t>(entry_of_[static_cast<size_t>(i)])]; }
  bool free_tensor(int j) const { return !holds_[static_cast<size_t>(j)] && !paired_[static_cast<size_t>(j)]; }

  const std::unordered_map<std::string, std::vector<int>>& classes_by(ClassIndex& index, int32_t type, int32_t as);
  void hold_class(int j, ClassIndex& index);
  void assign_class(const std::vector<int>& members, const std::vector<Holder>& holders);
  PackedSearch packed_search();
  bool fold_into(TensorFidelity& t, const std::vector<int64_t>& da, int j, Layout layout, uint64_t& reads);
  const std::unordered_map<std::string, ExportIndex::Entries>& exports_by(ExportIndex& index, int32_t type, int32_t as);
  const ExportIndex::Entries* with_hash_of(ExportIndex& index, const ExportIndex::Entries& all, int i, int32_t as);
  void look_again(TensorFidelity& t, ExportIndex& index);
  Pairing pairing();
  int by_role(const Pairing& p, int i) const;
  int pick_pair(TensorFidelity& t, Pairing& p);
  std::vector<int> free_of_size(Pairing& p, uint64_t elements, bool& more);
  int closest(int i, const std::vector<int>& free) const;
  void leave_unpaired(TensorFidelity& t) const;
  Layout best_whole_layout(int i, int j, int32_t as) const;
  void judge_pair(TensorFidelity& t, int pick, const std::map<int, int64_t>& rotary_heads);
  bool kept_in_rotary_order(TensorFidelity& t, int pick, int64_t heads, Layout best, int32_t as, Comparison& cmp);

  const Audit& exported_;
  const Audit& checkpoint_;
  const Model& E_;
  const Model& C_;
  Fidelity& f_;
  PayloadFiles efiles_, cfiles_;
  std::vector<int> cks_, exs_;  // the checkpoint's parameter tensors; every export tensor that could hold one
  std::vector<std::optional<Samples>> csamples_, esamples_;  // by tensor index: none when not comparable
  Hashes chashes_, ehashes_;  // ruling out look-alikes whose samples agree
  std::vector<std::vector<int>> classes_;  // checkpoint tensors, the first is the class's representative
  std::vector<std::vector<Holder>> class_holders_;
  std::vector<bool> holds_;  // export tensors that hold a checkpoint tensor
  std::vector<int> entry_of_;  // checkpoint tensor -> its place in f_.tensors
  std::vector<bool> unfinished_;  // checkpoint tensors whose search stopped before it was done
  std::vector<bool> paired_;  // export tensors paired with a tensor held nowhere
};

// The checkpoint's parameter tensors, and every export tensor that could hold one, each sampled.
Comparer::Comparer(const Audit& exported, const Audit& checkpoint, Fidelity& f)
    : exported_(exported),
      checkpoint_(checkpoint),
      E_(exported.model),
      C_(checkpoint.model),
      f_(f),
      csamples_(C_.weights.size()),
      esamples_(E_.weights.size()),
      chashes_(C_, cfiles_),
      ehashes_(E_, efiles_),
      holds_(E_.weights.size(), false),
      entry_of_(C_.weights.size(), -1),
      unfinished_(C_.weights.size(), false),
      paired_(E_.weights.size(), false) {
  for (size_t i = 0; i < C_.weights.size(); ++i) {
    const Weight& w = C_.weights[i];
    // A checkpoint's integer tensors (a num_batches_tracked, position ids) are buffers: an export
    // need not hold them. (An ONNX model's integer parameters, a QDQ model's int32 biases, stay.)
    const bool integers = C_.checkpoint && w.dtype != 0 && !dtype_is_parameter_type(w.dtype);
    if (w.parameter && w.elements > 0 && !integers) {
      cks_.push_back(static_cast<int>(i));
    }
  }
  for (size_t j = 0; j < E_.weights.size(); ++j) {
    if (E_.weights[j].elements > 0 && !E_.weights[j].sparse) exs_.push_back(static_cast<int>(j));
  }
  for (int i : cks_) {
    if (comparable(cw(i))) csamples_[static_cast<size_t>(i)] = take_samples(cw(i), cfiles_);
  }
  for (int j : exs_) {
    if (comparable(ew(j))) esamples_[static_cast<size_t>(j)] = take_samples(ew(j), efiles_);
  }
}

// 1. Checkpoint tensors with equal values form one class (equal untrained norms, say), so each
// export tensor is compared in full with one tensor of a class, not with all of them. Tensors
// of one dtype with equal values have equal samples, bit for bit: the samples are the key.
void Comparer::form_classes() {
  std::vector<int> class_of(C_.weights.size(), -1);
  std::unordered_map<std::string, std::vector<int>> reps;
  for (int i : cks_) {
    if (!cs(i)) continue;
    auto& same = reps[sample_key(cw(i).elements, cw(i).dtype, cs(i)->direct, cw(i).dtype)];
    for (size_t k = 0; k < same.size() && k < kCandidates; ++k) {
      const int c = same[k], r = classes_[static_cast<size_t>(c)][0];
      if (same.size() > 1 && !may_hold(chashes_, i, chashes_, r, cw(i).dtype, false)) continue;
      if (equal_whole(compare(cw(i), cw(r), Layout::Reshaped, 0, 0, cw(i).dtype, true, cfiles_, cfiles_))) {
        class_of[static_cast<size_t>(i)] = c;
        classes_[static_cast<size_t>(c)].push_back(i);
        break;
      }
    }
    if (class_of[static_cast<size_t>(i)] < 0) {
      class_of[static_cast<size_t>(i)] = static_cast<int>(classes_.size());
      same.push_back(static_cast<int>(classes_.size()));
      classes_.push_back({i});
    }
  }
}

// 2. Each export tensor against the classes whose samples equal its own, as stored or
// transposed, at the narrower of the two types: the classes are keyed by their samples rounded
// to that type (an index per checkpoint dtype and narrower type, built when first needed).
void Comparer::find_class_holders() {
  class_holders_.resize(classes_.size());
  ClassIndex index;
  for (const auto& c : classes_) index.types.insert(cw(c[0]).dtype);
  for (int j : exs_) {
    if (es(j)) hold_class(j, index);
  }
}

// The classes of checkpoint dtype `type` keyed by their samples rounded to type `as`.
const std::unordered_map<std::string, std::vector<int>>& Comparer::classes_by(ClassIndex& index, int32_t type,
                                                                                int32_t as) {
  auto [it, fresh] = index.by.try_emplace({type, as});
  if (fresh) {
    for (size_t c = 0; c < classes_.size(); ++c) {
      const int r = classes_[c][0];
      if (cw(r).dtype == type) it->second[sample_key(cw(r).elements, type, cs(r)->direct, as)].push_back(static_cast<int>(c));
    }
  }
  return it->second;
}

// Export tensor j becomes a holder of the first class it holds whole, if any.
void Comparer::hold_class(int j, ClassIndex& index) {
  const Weight& b = ew(j);
  for (int32_t type : index.types) {
    const int32_t as = narrower(type, b.dtype);
    const auto& by_key = classes_by(index, type, as);
    for (bool transposed : {false, true}) {
      const std::vector<double>& samples = transposed ? es(j)->transposed : es(j)->direct;
      if (samples.empty()) continue;
      auto it = by_key.find(sample_key(b.elements, type, samples, as));
      if (it == by_key.end()) continue;
      for (size_t k = 0; k < it->second.size() && k < kCandidates; ++k) {
        const int c = it->second[k], r = classes_[static_cast<size_t>(c)][0];
        if (it->second.size() > 1 && !may_hold(chashes_, r, ehashes_, j, as, transposed)) continue;
        if (auto l = held_whole(cw(r), b, transposed, as, cfiles_, efiles_)) {
          class_holders_[static_cast<size_t>(c)].push_back(holder(j, *l));
          holds_[static_cast<size_t>(j)] = true;
          return;
        }
      }
    }
  }
}

// One entry per checkpoint parameter tensor, in its order, lost until it is found.
void Comparer::make_entries() {
  f_.tensors.reserve(cks_.size());
  for (int i : cks_) {
    entry_of_[static_cast<size_t>(i)] = static_cast<int>(f_.tensors.size());
    TensorFidelity t;
    t.tensor = i;
    t.what = named_shape(cw(i));
    f_.tensors.push_back(t);
  }
}

// 3. Within a class, export tensors go one to one to its checkpoint tensors, by name first; a
// tensor left over is a second copy (of the class's first tensor), a checkpoint tensor left
// over shares an export tensor with an equal one (an exporter merges equal initializers).
void Comparer::assign_within_classes() {
  for (size_t c = 0; c < classes_.size(); ++c) {
    if (!class_holders_[c].empty()) assign_class(classes_[c], class_holders_[c]);
  }
}

// One class: its holders to its members, by name first, then in order.
void Comparer::assign_class(const std::vector<int>& members, const std::vector<Holder>& holders) {
  std::vector<bool> used(holders.size(), false);
  NameIndex names;
  for (size_t h = 0; h < holders.size(); ++h) names.add(ew(holders[h].weight).name, static_cast<int>(h));
  std::vector<int> unassigned;
  for (int i : members) {
    int pick = names.find(cw(i).name, [&](int h) { return !used[static_cast<size_t>(h)]; });
    if (pick < 0) {
      unassigned.push_back(i);
      continue;
    }
    used[static_cast<size_t>(pick)] = true;
    entry(i).held.push_back(holders[static_cast<size_t>(pick)]);
  }
  size_t next = 0;
  for (int i : unassigned) {
    while (next < holders.size() && used[next]) ++next;
    if (next == holders.size()) break;
    used[next] = true;
    entry(i).held.push_back(holders[next]);
  }
  for (size_t h = 0; h < holders.size(); ++h) {
    if (!used[h]) entry(members[0]).held.push_back(holders[h]);
  }
  for (int i : members) {
    TensorFidelity& t = entry(i);
    t.verdict = Verdict::Kept;
    if (t.held.empty()) {
      t.held.push_back(holders[0]);
      t.shared = true;
    }
  }
}

// 4. Packed: a checkpoint tensor whose values are a run of rows of a larger export tensor with
// the same trailing dimensions ([3·out, in], a bias [3·out]), or, transposed, a run of columns
// of an [in, k·out] one. Runs are tried at multiples of the tensor's own size from either end
// (Q at 0, then K and V, whatever their sizes). The search reads at most kPackedReads sampled
// elements in all; a tensor it could not finish is not called lost.
void Comparer::find_packed() {
  PackedSearch search = packed_search();
  for (TensorFidelity& t : f_.tensors) {
    if (t.verdict != Verdict::Lost || !cs(t.tensor)) continue;
    std::vector<int64_t> da = squeezed(cw(t.tensor));
    if (da.empty()) continue;
    bool cut = false;
    for (auto [j, layout] : packed_candidates(search, da, cut)) {
      if (holds_[static_cast<size_t>(j)]) continue;  // it holds a whole checkpoint tensor
      if (fold_into(t, da, j, layout, search.reads)) break;
    }
    if (t.verdict != Verdict::Folded && (cut || search.reads >= kPackedReads)) unfinished_[static_cast<size_t>(t.tensor)] = true;
  }
  for (const TensorFidelity& t : f_.tensors) {
    if (t.verdict == Verdict::Folded) holds_[static_cast<size_t>(t.held[0].weight)] = true;
  }
}

// The export tensors the packed search looks in (every one with samples), indexed.
PackedSearch Comparer::packed_search() {
  PackedSearch search;
  for (int j : exs_) {
    if (!es(j)) continue;
    std::vector<int64_t> db = squeezed(ew(j));
    if (db.empty()) continue;
    search.by_trailing[trailing_key(db)].push_back({db[0], j});
    if (db.size() == 2) search.by_rows[db[0]].push_back({db[1], j});
  }
  for (auto& [k, v] : search.by_trailing) std::sort(v.begin(), v.end());
  for (auto& [k, v] : search.by_rows) std::sort(v.begin(), v.end());
  return search;
}

// Whether t's tensor (squeezed dims da) is a run of export tensor j's rows or columns (`layout`),
// its samples first, then in full; if so, t is folded into it. `reads` counts the reads made.
bool Comparer::fold_into(TensorFidelity& t, const std::vector<int64_t>& da, int j, Layout layout, uint64_t& reads) {
  const Weight& a = cw(t.tensor);
  const Weight& b = ew(j);
  std::vector<int64_t> db = squeezed(b);
  const int32_t as = narrower(a.dtype, b.dtype);
  const uint64_t run = static_cast<uint64_t>(da[0]);
  const uint64_t total = static_cast<uint64_t>(layout == Layout::Rows ? db[0] : db[1]);
  const uint64_t unit = a.elements / run;  // Rows: elements per row
  const std::set<uint64_t> starts = run_starts(run, total);
  Values vb;
  if (!vb.open(b, efiles_, false)) return false;  // a few reads per run: not worth reading it whole
  for (uint64_t s : starts) {
    if (reads >= kPackedReads) break;
    // The samples first: a's k-th sample against b at the same place of the run.
    int equal = 0;
    for (int k = 0; k < kSamples; ++k) {
      const uint64_t p = sample_position(a.elements, k), cols = static_cast<uint64_t>(da.size() == 2 ? da[1] : 1);
      const uint64_t q = layout == Layout::Rows ? s * unit + p : (p % cols) * total + s + p / cols;
      double y = 0;
      ++reads;
      if (!vb.read(q, 1, &y) || !same_value(cs(t.tensor)->direct[static_cast<size_t>(k)], y, as)) break;
      ++equal;
    }
    if (equal != kSamples) continue;
    reads += a.elements;  // the whole comparison counts against the same budget
    Comparison cmp = layout == Layout::Rows ? compare(a, b, Layout::Rows, s * unit, 0, as, true, cfiles_, efiles_)
                                            : compare(a, b, Layout::Columns, s, total, as, true, cfiles_, efiles_);
    if (!equal_whole(cmp)) continue;
    t.verdict = Verdict::Folded;
    t.held.push_back(holder(j, layout, s, s + run));
    return true;
  }
  return false;
}

// 4b. A last look for each tensor still nowhere, among every export tensor, held or not: its
// values may be in one an equal tensor claimed first (classes are formed from a bounded number
// of comparisons). Held, it shares that tensor. When more tensors share its samples than are
// compared, they are split by their content hashes first; when more than that still may hold it,
// it is not called lost: it is unknown.
void Comparer::look_everywhere() {
  ExportIndex index;
  for (int j : exs_) {
    if (es(j)) index.types.insert(ew(j).dtype);
  }
  for (TensorFidelity& t : f_.tensors) {
    if (t.verdict == Verdict::Lost && cs(t.tensor)) look_again(t, index);
  }
}

// The export tensors of dtype `type`, as stored and transposed, keyed by their samples rounded to
// type `as`.
const std::unordered_map<std::string, ExportIndex::Entries>& Comparer::exports_by(ExportIndex& index, int32_t type,
                                                                                    int32_t as) {
  auto [it, fresh] = index.by.try_emplace({type, as});
  if (fresh) {
    for (int j : exs_) {
      if (!es(j) || ew(j).dtype != type) continue;
      const Samples& sj = *es(j);
      it->second[sample_key(ew(j).elements, type, sj.direct, as)].push_back({j, false});
      if (!sj.transposed.empty()) it->second[sample_key(ew(j).elements, type, sj.transposed, as)].push_back({j, true});
    }
  }
  return it->second;
}

// Of `all`, the entries whose content hash at type `as` is checkpoint tensor i's; `all` itself
// when a hash is unknown.
const ExportIndex::Entries* Comparer::with_hash_of(ExportIndex& index, const ExportIndex::Entries& all, int i,
                                                   int32_t as) {
  const auto& ha = chashes_.of(i, as, false);
  auto [it, fresh] = index.split.try_emplace(&all);
  if (fresh) {
    std::map<std::pair<uint64_t, uint64_t>, ExportIndex::Entries> by_hash;
    bool known = true;
    for (size_t k = 0; k < all.size() && known; ++k) {
      const auto& h = ehashes_.of(all[k].first, as, all[k].second);
      known = h.has_value();
      if (known) by_hash[{h->a, h->b}].push_back(all[k]);
    }
    if (known) it->second = std::move(by_hash);
  }
  if (const auto& parts = it->second; ha && parts) {
    auto p = parts->find({ha->a, ha->b});
    return p == parts->end() ? &index.none : &p->second;
  }
  return &all;
}

// The last look for one tensor: among the export tensors of each dtype whose samples equal its
// own, the first that holds it whole.
void Comparer::look_again(TensorFidelity& t, ExportIndex& index) {
  const Weight& a = cw(t.tensor);
  for (int32_t type : index.types) {
    const int32_t as = narrower(a.dtype, type);
    const auto& by_key = exports_by(index, type, as);
    auto it = by_key.find(sample_key(a.elements, type, cs(t.tensor)->direct, as));
    if (it == by_key.end()) continue;
    const ExportIndex::Entries* candidates = &it->second;
    if (candidates->size() > kCandidates) candidates = with_hash_of(index, *candidates, t.tensor, as);
    if (candidates->size() > kCandidates) unfinished_[static_cast<size_t>(t.tensor)] = true;
    for (size_t k = 0; k < candidates->size() && k < kCandidates && t.verdict == Verdict::Lost; ++k) {
      const auto [j, transposed] = (*candidates)[k];
      if (candidates->size() > 1 && !may_hold(chashes_, t.tensor, ehashes_, j, as, transposed)) continue;
      if (auto l = held_whole(a, ew(j), transposed, as, cfiles_, efiles_)) {
        t.verdict = Verdict::Kept;
        t.held.push_back(holder(j, *l));
        t.shared = holds_[static_cast<size_t>(j)];
        holds_[static_cast<size_t>(j)] = true;
      }
    }
    if (t.verdict != Verdict::Lost) return;
  }
}

// 5. What is still nowhere is paired with an export tensor of its size that holds nothing: by
// name, by its role in the layer's attention block, by the closest samples, or as the only one.
void Comparer::pair_the_rest() {
  Pairing p = pairing();
  for (TensorFidelity& t : f_.tensors) {
    if (t.verdict != Verdict::Lost) continue;
    const int pick = pick_pair(t, p);
    if (pick < 0) {
      leave_unpaired(t);
      continue;
    }
    paired_[static_cast<size_t>(pick)] = true;
    judge_pair(t, pick, p.rotary_heads);
  }
}

// What the pairing starts from: the export tensors free before it, and the checkpoint's roles.
Pairing Comparer::pairing() {
  Pairing p;
  for (int j : exs_) {
    if (!free_tensor(j)) continue;
    p.by_size[ew(j).elements].push_back(j);
    p.names.add(ew(j).name, j);
  }
  p.roles = name_roles(C_);
  p.attention_layers = attention_layers(cks_, p.roles);
  p.blocks_align = !p.attention_layers.empty() && p.attention_layers.size() == exported_.attention.blocks.size();
  p.rotary_heads = rotary_heads(checkpoint_);
  return p;
}

// The export tensor that holds checkpoint tensor i's role (its layer's Q, K, V or O weight or
// bias) in the export's block of the same rank; -1 for none.
int Comparer::by_role(const Pairing& p, int i) const {
  const NamedTensor& n = p.roles[static_cast<size_t>(i)];
  const std::vector<int>& layers = p.attention_layers;
  if (!p.blocks_align || n.layer < 0) return -1;
  auto rank = std::lower_bound(layers.begin(), layers.end(), n.layer) - layers.begin();
  if (rank >= static_cast<long>(layers.size()) || layers[static_cast<size_t>(rank)] != n.layer) return -1;
  const AttentionBlock& b = exported_.attention.blocks[static_cast<size_t>(rank)];
  const Projection* q = n.role == "q" || n.role == "qkv" ? &b.q : n.role == "k" ? &b.k : n.role == "v" ? &b.v : n.role == "o" ? &b.o : nullptr;
  if (!q) return -1;
  for (const TensorShare& s : q->tensors) {
    if (s.bias == n.bias && s.slice.empty()) return s.weight;
  }
  return -1;
}

// The free export tensor of its size that t pairs with (t.paired_by says how), or -1 for none.
int Comparer::pick_pair(TensorFidelity& t, Pairing& p) {
  const Weight& a = cw(t.tensor);
  int pick = p.names.find(a.name, [&](int j) { return free_tensor(j) && ew(j).elements == a.elements; });
  if (pick >= 0) {
    t.paired_by = "name";
    return pick;
  }
  const int j = by_role(p, t.tensor);
  if (j >= 0 && !ew(j).sparse && free_tensor(j) && ew(j).elements == a.elements) {
    t.paired_by = "role";
    return j;
  }
  bool more = false;  // more free tensors of its size than `free` holds
  const std::vector<int> free = free_of_size(p, a.elements, more);
  if (cs(t.tensor)) {
    pick = closest(t.tensor, free);
    if (pick >= 0) {
      t.paired_by = "closest values";
      return pick;
    }
  }
  if (free.size() == 1 && !more) {
    t.paired_by = "only one of its size";
    return free[0];
  }
  return -1;
}

// The free tensors of a size, at most kCandidates of them; the held ones met on the way are
// dropped from the list for good, so the lists shrink as the pairs are made.
std::vector<int> Comparer::free_of_size(Pairing& p, uint64_t elements, bool& more) {
  std::vector<int> free;
  auto& same = p.by_size[elements];
  for (size_t k = 0; k < same.size();) {
    if (!free_tensor(same[k])) {
      same[k] = same.back();
      same.pop_back();
      continue;
    }
    if (free.size() == kCandidates) {
      more = true;
      break;
    }
    free.push_back(same[k++]);
  }
  return free;
}

// Of `free`, the tensor whose samples agree most with checkpoint tensor i's in a whole layout,
// when half of them or more agree and no other tensor agrees as much; -1 else.
int Comparer::closest(int i, const std::vector<int>& free) const {
  const Weight& a = cw(i);
  int best = -1, best_equal = -1;
  bool tie = false;
  for (int j : free) {
    if (!es(j)) continue;
    for (Layout l : whole_layouts(a, ew(j))) {
      int n = equal_in(*cs(i), *es(j), l, narrower(a.dtype, ew(j).dtype));
      if (n > best_equal) {
        best = j;
        best_equal = n;
        tie = false;
      } else if (n == best_equal && j != best) {
        tie = true;
      }
    }
  }
  return best >= 0 && best_equal >= kSamples / 2 && !tie ? best : -1;
}

// A tensor paired with nothing is lost, unless its values were not read or the search for it
// stopped early: then it is unknown, and says why.
void Comparer::leave_unpaired(TensorFidelity& t) const {
  const Weight& a = cw(t.tensor);
  if (!cs(t.tensor)) {
    t.verdict = Verdict::Unknown;
    t.why = "stored as " + dtype_name(a.dtype) + ", not read; no export tensor pairs with it by name, role or size";
  } else if (unfinished_[static_cast<size_t>(t.tensor)]) {
    t.verdict = Verdict::Unknown;
    t.why = "not compared with every export tensor that could hold it (the search stops at " + with_commas(kCandidates) +
            " candidates of one shape or of equal samples, and at " + with_commas(kPackedReads) + " sampled reads in all)";
  }
}

// The whole layout of export tensor j in which its samples agree most with checkpoint tensor
// i's (a square matrix may be stored either way).
Layout Comparer::best_whole_layout(int i, int j, int32_t as) const {
  Layout best = Layout::Same;
  int best_equal = -1;
  for (Layout l : whole_layouts(cw(i), ew(j))) {
    int n = equal_in(*cs(i), *es(j), l, as);
    if (n > best_equal) {
      best = l;
      best_equal = n;
    }
  }
  return best;
}

// Checkpoint tensor t against the export tensor it is paired with, in full: kept after all,
// changed (by how many elements, the largest difference and where), or unknown when not read.
void Comparer::judge_pair(TensorFidelity& t, int pick, const std::map<int, int64_t>& rotary_heads) {
  const Weight& a = cw(t.tensor);
  const Weight& b = ew(pick);
  const bool a_readable = cs(t.tensor).has_value();
  if (!a_readable || !es(pick)) {
    t.verdict = Verdict::Unknown;
    t.held.push_back(holder(pick, Layout::Same));
    t.why = !a_readable ? "the checkpoint stores it as " + dtype_name(a.dtype) + ", whose values are not read"
                        : "the export stores it as " + dtype_name(b.dtype) + ", whose values are not read";
    return;
  }
  const int32_t as = narrower(a.dtype, b.dtype);
  const Layout best = best_whole_layout(t.tensor, pick, as);
  Comparison cmp = compare(a, b, best, 0, 0, as, false, cfiles_, efiles_);
  t.held.push_back(holder(pick, best));
  t.compared_as = as;
  if (!cmp.read || !cmp.applies) {
    t.verdict = Verdict::Unknown;
    t.why = !cmp.read ? "a payload could not be read" : std::string("not every element could be compared ") + layout_name(best);
    return;
  }
  if (cmp.differing == 0) {  // equal after all (a class key missed by a NaN, say): kept
    t.verdict = Verdict::Kept;
    holds_[static_cast<size_t>(pick)] = true;
    return;
  }
  if (const auto rh = rotary_heads.find(t.tensor); rh != rotary_heads.end() && (best == Layout::Same || best == Layout::Transposed)) {
    if (kept_in_rotary_order(t, pick, rh->second, best, as, cmp)) return;
  }
  t.verdict = Verdict::Changed;
  t.differing = cmp.differing;
  t.largest = cmp.largest;
  t.largest_at = cmp.at;
  t.checkpoint_value = cmp.a_value;
  t.export_value = cmp.b_value;
}

// A GGUF's Q or K in llama.cpp's rotary row order: the same weights, rows reordered per head.
// Only a matrix (two dims, dims of 1 aside) whose rows split into its heads, of an even size.
// Whether t is kept so; `cmp` becomes the rotary comparison when that differs in fewer elements.
bool Comparer::kept_in_rotary_order(TensorFidelity& t, int pick, int64_t heads, Layout best, int32_t as,
                                    Comparison& cmp) {
  const Weight& a = cw(t.tensor);
  const std::vector<int64_t> da = squeezed(a);
  const uint64_t heads_n = static_cast<uint64_t>(heads);
  const uint64_t out_rows = da.size() == 2 ? static_cast<uint64_t>(da[0]) : 0;
  if (out_rows == 0 || heads_n == 0 || out_rows % heads_n != 0 || (out_rows / heads_n) % 2 != 0) return false;
  const Layout rotary = best == Layout::Same ? Layout::Rotary : Layout::RotaryTransposed;
  Comparison again = compare(a, ew(pick), rotary, 0, 0, as, false, cfiles_, efiles_, out_rows / heads_n);
  if (again.read && again.applies && again.differing < cmp.differing) {
    cmp = again;
    t.held.back().layout = rotary;
  }
  if (!equal_whole(again)) return false;
  t.verdict = Verdict::Kept;
  holds_[static_cast<size_t>(pick)] = true;
  return true;
}

// 6. Export parameters that hold nothing of the checkpoint (buffers and constants of arithmetic
// are not parameters of the framework's count, and are left out).
void Comparer::find_added() {
  std::vector<bool> not_counted(E_.weights.size(), false);
  for (const BufferTensor& b : exported_.framework.buffers) not_counted[static_cast<size_t>(b.weight)] = true;
  for (const BufferTensor& b : exported_.framework.constants) not_counted[static_cast<size_t>(b.weight)] = true;
  std::set<uint64_t> uncompared_sizes;  // checkpoint tensors not compared and paired with nothing
  for (const TensorFidelity& t : f_.tensors) {
    if (t.verdict == Verdict::Unknown && t.held.empty()) uncompared_sizes.insert(t.what.elements);
  }
  for (int j : exs_) {
    if (ew(j).parameter && !holds_[static_cast<size_t>(j)] && !paired_[static_cast<size_t>(j)] && !not_counted[static_cast<size_t>(j)]) {
      if (uncompared_sizes.count(ew(j).elements)) {
        f_.unpaired.push_back(named_shape(ew(j)));
      } else {
        f_.added.push_back(named_shape(ew(j)));
        f_.added_elements += ew(j).elements;
      }
    }
  }
}

// Each holder's name, from the export tensor it points into.
void Comparer::name_holders() {
  for (TensorFidelity& t : f_.tensors) {
    for (Holder& h : t.held) h.name = std::string(ew(h.weight).name);
  }
}

// The first tensor of each verdict the sentence names.
struct FirstOf {
  const TensorFidelity* lost = nullptr;
  const TensorFidelity* changed = nullptr;
  const TensorFidelity* duplicated = nullptr;
};

// 7. The tallies, the two counts and the sentence: first the tallies.
FirstOf tally(Fidelity& f, const Model& C) {
  FirstOf first;
  for (const TensorFidelity& t : f.tensors) {
    switch (t.verdict) {
      case Verdict::Kept:
        ++f.kept;
        if (t.held.size() > 1) {
          ++f.duplicated;
          if (!first.duplicated) first.duplicated = &t;
        }
        if (t.shared) ++f.shared;
        break;
      case Verdict::Folded: ++f.folded; break;
      case Verdict::Changed:
        ++f.changed;
        if (!first.changed) first.changed = &t;
        break;
      case Verdict::Lost:
        ++f.lost;
        f.lost_elements += C.weights[static_cast<size_t>(t.tensor)].elements;
        if (!first.lost) first.lost = &t;
        break;
      default: ++f.unknown; break;
    }
  }
  return first;
}

// The two framework counts: equal, or how far apart and what of the gap the tensors account for.
std::string counts_sentence(const Fidelity& f) {
  if (f.export_parameters == f.checkpoint_parameters) {
    return "the export's framework count equals the checkpoint's: " + with_commas(f.checkpoint_parameters);
  }
  const bool more = f.export_parameters > f.checkpoint_parameters;
  const uint64_t gap = more ? f.export_parameters - f.checkpoint_parameters : f.checkpoint_parameters - f.export_parameters;
  std::string counts = "the export's framework count, " + with_commas(f.export_parameters) + ", is " + with_commas(gap) +
                       (more ? " more" : " fewer") + " than the checkpoint's " + with_commas(f.checkpoint_parameters);
  const int64_t explained = static_cast<int64_t>(f.added_elements) - static_cast<int64_t>(f.lost_elements);
  const int64_t delta = static_cast<int64_t>(f.export_parameters) - static_cast<int64_t>(f.checkpoint_parameters);
  std::string parts;
  if (f.lost_elements) parts += with_commas(f.lost_elements) + " in lost tensors";
  if (f.added_elements) parts += std::string(parts.empty() ? "" : " and ") + with_commas(f.added_elements) + " in added ones";
  if (explained == delta && !parts.empty()) counts += ": " + parts;
  else if (!parts.empty()) counts += "; the tensors compared account for " + parts + ", not all of it";
  else counts += "; no tensor compared accounts for it";
  return counts;
}

std::string name_of(const Model& C, const TensorFidelity* t) {
  return std::string(C.weights[static_cast<size_t>(t->tensor)].name);
}

// The sentence's first clause: every tensor is in the export, or what the export lost, changed
// and holds of them, and how many were not compared.
std::string tensors_clause(const Fidelity& f, const Model& C, const FirstOf& first) {
  const uint64_t n = f.tensors.size();
  if (f.lost == 0 && f.changed == 0 && f.unknown == 0) {
    std::string s = n == 1 ? "the checkpoint's one tensor is in the export" : "every one of the " + with_commas(n) + " checkpoint tensors is in the export";
    if (f.folded) s += " (" + with_commas(f.folded) + " packed into larger tensors)";
    return s;
  }
  std::string s = "of the " + count_of(n, "checkpoint tensor", "checkpoint tensors");
  std::vector<std::string> what;
  if (f.lost) what.push_back("lost " + with_commas(f.lost) + " (" + name_of(C, first.lost) + (f.lost > 1 ? ", …)" : ")"));
  if (f.changed) {
    what.push_back("changed " + with_commas(f.changed) + " (" + name_of(C, first.changed) + ": " +
                   count_of(first.changed->differing, "element differs", "elements differ") + (f.changed > 1 ? ", …)" : ")"));
  }
  if (f.kept || f.folded) what.push_back("holds " + with_commas(f.kept + f.folded));
  if (!what.empty()) s += ", the export";
  for (size_t k = 0; k < what.size(); ++k) s += (k == 0 ? " " : k + 1 == what.size() ? " and " : ", ") + what[k];
  if (f.unknown) s += (what.empty() ? ", " : "; ") + with_commas(f.unknown) + " not compared";
  return s;
}

// The result in one sentence: the tensors, the ones stored more than once, the added ones and
// the ones that pair with none.
std::string outcome_sentence(const Fidelity& f, const Model& C, const FirstOf& first) {
  std::vector<std::string> clauses{tensors_clause(f, C, first)};
  if (f.duplicated == 1) {
    const size_t copies = first.duplicated->held.size();
    clauses.push_back(name_of(C, first.duplicated) + " is stored " + (copies == 2 ? std::string("twice") : with_commas(copies) + " times"));
  } else if (f.duplicated > 1) {
    clauses.push_back(with_commas(f.duplicated) + " are stored more than once");
  }
  if (!f.added.empty()) clauses.push_back("it adds " + count_of(f.added.size(), "tensor", "tensors") + " of " + with_commas(f.added_elements));
  if (!f.unpaired.empty()) {
    clauses.push_back(count_of(f.unpaired.size(), "export tensor", "export tensors") +
                      " of the sizes of those not compared pair with none");
  }
  std::string outcome;
  for (size_t k = 0; k < clauses.size(); ++k) outcome += (k ? "; " : "") + clauses[k];
  return outcome;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Kept: return "kept";
    case Verdict::Folded: return "folded";
    case Verdict::Changed: return "changed";
    case Verdict::Lost: return "lost";
    default: return "unknown";
  }
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Same: return "as stored";
    case Layout::Transposed: return "transposed";
    case Layout::Reshaped: return "reshaped";
    case Layout::Rows: return "rows";
    case Layout::Rotary: return "rotary rows";
    case Layout::RotaryTransposed: return "rotary rows, transposed";
    default: return "columns";
  }
}

Fidelity check_fidelity(const Audit& exported, const std::string& export_path, const Audit& checkpoint,
                        const std::string& checkpoint_path) {
  Fidelity f;
  f.export_path = export_path;
  f.checkpoint_path = checkpoint_path;
  f.export_parameters = exported.framework.parameters;
  f.checkpoint_parameters = checkpoint.framework.parameters;
  Comparer steps(exported, checkpoint, f);
  steps.form_classes();           // 1. equal checkpoint tensors, one class each
  steps.find_class_holders();     // 2. the export tensors that hold a class whole
  steps.make_entries();
  steps.assign_within_classes();  // 3. a class's holders one to one to its tensors
  steps.find_packed();            // 4. runs of rows or columns of a packed tensor
  steps.look_everywhere();        // 4b. a last look among every export tensor
  steps.pair_the_rest();          // 5. the rest paired by name, role, values or size
  steps.find_added();             // 6. export parameters that hold nothing
  steps.name_holders();
  const FirstOf first = tally(f, checkpoint.model);  // 7. the tallies, the counts, the sentence
  f.counts = counts_sentence(f);
  f.outcome = outcome_sentence(f, checkpoint.model, first);
  return f;
}

}  // namespace headcount
