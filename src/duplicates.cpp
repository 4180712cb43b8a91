// duplicates.cpp: content comparison of candidate tensor pairs, reading payloads in bounded chunks.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "headcount/duplicates.h"
#include "payload.h"

namespace headcount {
namespace {

// Bytes of one tensor held at a time per thread by the full comparison.
constexpr uint64_t kBand = 2u << 20;
constexpr int kSamples = 16;  // sampled elements per tensor for the fingerprint
constexpr uint64_t kHeld = 64u << 10;  // a tensor up to this size is read once for its fingerprint

bool transposed_shapes(const Weight& a, const Weight& b) {
  return a.dims.size() == 2 && b.dims.size() == 2 && a.dims[0] == b.dims[1] && a.dims[1] == b.dims[0] &&
         a.dims[0] != a.dims[1];
}

// Element e of a tensor in a canonical orientation (model.h), so a tensor and its transposed copy
// give the same samples.
uint64_t canonical_position(const Weight& w, uint64_t e) { return headcount::canonical_position(w.dims, w.elements, e); }
bool canonical_element(const PayloadReader& r, const Weight& w, size_t es, uint64_t e, char* out) {
  return r.read(canonical_position(w, e) * es, es, out);
}

// kSamples elements spread over the tensor in the canonical orientation. Returns nothing when
// they are all one value: zeros and ones (untrained biases, norms) are equal by coincidence, not
// copies, and the framework counts each of them.
std::optional<std::string> fingerprint(const PayloadReader& r, const Weight& w, size_t es) {
  std::string out, x(es, '\0'), first;
  bool uniform = true;
  for (int s = 0; s < kSamples; ++s) {
    uint64_t e = w.elements <= 1 ? 0 : (w.elements - 1) * static_cast<uint64_t>(s) / (kSamples - 1);
    if (!canonical_element(r, w, es, e, x.data())) return std::nullopt;
    if (s == 0) first = x;
    else if (x != first) uniform = false;
    out += x;
  }
  if (uniform) return std::nullopt;
  return out;
}

// Same bytes, in chunks read once each.
bool same_plain(const PayloadReader& ra, const PayloadReader& rb, uint64_t bytes) {
  std::vector<char> x(static_cast<size_t>(std::min<uint64_t>(kBand, bytes))), y(x.size());
  for (uint64_t at = 0; at < bytes; at += kBand) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kBand, bytes - at));
    if (!ra.read(at, n, x.data()) || !rb.read(at, n, y.data()) || std::memcmp(x.data(), y.data(), n) != 0) return false;
  }
  return true;
}

// Whether a 4 x 4 block of 32-bit elements of x (rows i..i+3, columns c..c+3) equals the same
// block of y transposed, bit for bit. With SSE2 (every x86-64) the block is transposed in
// registers and compared 4 elements at a time.
#if defined(__SSE2__)
inline __m128i block4_diff(const char* xp, const char* yp, uint64_t nr, uint64_t cols, uint64_t i, uint64_t c) {
  auto load = [](const char* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  const char* x0 = xp + (i * cols + c) * 4;
  const uint64_t row = cols * 4;
  __m128i r0 = load(x0), r1 = load(x0 + row), r2 = load(x0 + 2 * row), r3 = load(x0 + 3 * row);
  __m128i a0 = _mm_unpacklo_epi32(r0, r1), a1 = _mm_unpacklo_epi32(r2, r3);
  __m128i a2 = _mm_unpackhi_epi32(r0, r1), a3 = _mm_unpackhi_epi32(r2, r3);
  const char* y0 = yp + (c * nr + i) * 4;  // column c of the band: rows i..i+3
  const uint64_t col = nr * 4;
  __m128i d = _mm_xor_si128(_mm_unpacklo_epi64(a0, a1), load(y0));
  d = _mm_or_si128(d, _mm_xor_si128(_mm_unpackhi_epi64(a0, a1), load(y0 + col)));
  d = _mm_or_si128(d, _mm_xor_si128(_mm_unpacklo_epi64(a2, a3), load(y0 + 2 * col)));
  return _mm_or_si128(d, _mm_xor_si128(_mm_unpackhi_epi64(a2, a3), load(y0 + 3 * col)));
}
#endif

// x is a band of nr rows of a ([nr, cols], row-major); y holds the same rows of b's columns
// ([cols, nr]: y[c][i] = b[c][r0 + i]). Compared in 64 x 64 tiles, so both stay in cache.
template <typename U>
bool band_equal(const char* xp, const char* yp, uint64_t nr, uint64_t cols) {
  constexpr uint64_t kTile = 64;
  auto scalar = [&](uint64_t i0, uint64_t i1, uint64_t c0, uint64_t c1) {
    U diff = 0;  // no branch per element: the differences are OR-ed and checked once
    for (uint64_t c = c0; c < c1; ++c) {
      const char* yc = yp + c * nr * sizeof(U);
      for (uint64_t i = i0; i < i1; ++i) {
        U u, v;
        std::memcpy(&u, xp + (i * cols + c) * sizeof(U), sizeof(U));
        std::memcpy(&v, yc + i * sizeof(U), sizeof(U));
        diff |= static_cast<U>(u ^ v);
      }
    }
    return diff == 0;
  };
  for (uint64_t i0 = 0; i0 < nr; i0 += kTile) {
    uint64_t i1 = std::min(nr, i0 + kTile);
    for (uint64_t c0 = 0; c0 < cols; c0 += kTile) {
      uint64_t c1 = std::min(cols, c0 + kTile);
#if defined(__SSE2__)
      if constexpr (sizeof(U) == 4) {
        const uint64_t i4 = i0 + (i1 - i0) / 4 * 4, c4 = c0 + (c1 - c0) / 4 * 4;  // whole 4 x 4 blocks
        __m128i d = _mm_setzero_si128();
        for (uint64_t i = i0; i < i4; i += 4) {
          for (uint64_t c = c0; c < c4; c += 4) d = _mm_or_si128(d, block4_diff(xp, yp, nr, cols, i, c));
        }
        if (_mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) != 0xFFFF) return false;
        if (!scalar(i4, i1, c0, c1) || !scalar(i0, i4, c4, c1)) return false;  // the edges
        continue;
      }
#endif
      if (!scalar(i0, i1, c0, c1)) return false;
    }
  }
  return true;
}

bool band_equal(const char* x, const char* y, uint64_t nr, uint64_t cols, size_t es) {
  switch (es) {
    case 1: return band_equal<uint8_t>(x, y, nr, cols);
    case 2: return band_equal<uint16_t>(x, y, nr, cols);
    case 4: return band_equal<uint32_t>(x, y, nr, cols);
    default: return band_equal<uint64_t>(x, y, nr, cols);
  }
}

// a is [rows, cols] and b is [cols, rows]; a is the one with more rows, so a band of a's rows is
// one contiguous read and b's side of it is one short read in each of b's `cols` rows. Bands are
// shared out to a few threads; memory stays at two band buffers per thread whatever the tensor
// size. (Mapping the files instead saves the copy but, with pages released after each band to
// keep memory flat, faults cost more than the reads.)
bool same_transposed(const PayloadReader& ra, const PayloadReader& rb, uint64_t rows, uint64_t cols, size_t es) {
  const uint64_t row_bytes = cols * es;
  const uint64_t band = std::max<uint64_t>(1, kBand / std::max<uint64_t>(1, row_bytes));  // rows of a per band
  const uint64_t bands = (rows + band - 1) / band;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> differs{false};
  auto worker = [&] {
    std::vector<char> x, y;
    for (uint64_t k = next++; k < bands && !differs; k = next++) {
      uint64_t r0 = k * band, nr = std::min(band, rows - r0);
      x.resize(nr * row_bytes);
      y.resize(nr * row_bytes);
      bool ok = ra.read(r0 * row_bytes, x.size(), x.data());
      for (uint64_t c = 0; ok && c < cols; ++c) ok = rb.read((c * rows + r0) * es, nr * es, y.data() + c * nr * es);
      if (!ok || !band_equal(x.data(), y.data(), nr, cols, es)) differs = true;
    }
  };
  unsigned threads = static_cast<unsigned>(std::min<uint64_t>(bands, std::min(4u, std::max(1u, std::thread::hardware_concurrency()))));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return !differs;
}

// A 128-bit hash of a tensor's content in the canonical orientation (as canonical_position), so a
// tensor and its transposed copy hash alike: each canonical row is hashed on its own (a chain per
// row, two lanes) and the rows' hashes are chained in order. A stored [R, C] with R > C is read
// as stored, row by row, feeding its C columns' chains (its canonical rows) side by side, so the
// reads stay sequential and memory is C chains (C < sqrt of its elements). Equal hashes are
// only candidates: the pairs are still compared in full.
inline uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
struct Chain {
  uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull;
  void add(uint64_t v) {
    a = mix64(a + v + 0x9e3779b97f4a7c15ull);
    b = mix64((b ^ v) * 0xff51afd7ed558ccdull + 0xc4ceb9fe1a85ec53ull);
  }
};
std::optional<std::pair<uint64_t, uint64_t>> content_hash(const PayloadReader& r, const Weight& w, size_t es) {
  const bool flip = w.dims.size() == 2 && w.dims[0] > w.dims[1];
  const uint64_t cols = w.dims.size() == 2 ? static_cast<uint64_t>(w.dims[1]) : w.elements;  // as stored
  if (cols == 0 || es == 0 || es > 8 || w.elements % cols) return std::nullopt;
  std::vector<Chain> rows(flip ? static_cast<size_t>(cols) : 1);
  Chain all;
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(kBand / es * es, w.bytes)));
  for (uint64_t at = 0, e = 0; at < w.bytes; at += buf.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), w.bytes - at));
    if (!r.read(at, n, buf.data())) return std::nullopt;
    for (size_t k = 0; k + es <= n; k += es, ++e) {
      uint64_t v = 0;
      std::memcpy(&v, buf.data() + k, es);
      const uint64_t col = e % cols;
      if (flip) {
        rows[static_cast<size_t>(col)].add(v);
      } else {
        rows[0].add(v);
        if (col + 1 == cols) {  // the end of a canonical row
          all.add(rows[0].a);
          all.add(rows[0].b);
          rows[0] = Chain();
        }
      }
    }
  }
  for (size_t c = 0; flip && c < rows.size(); ++c) {
    all.add(rows[c].a);
    all.add(rows[c].b);
  }
  return std::make_pair(all.a, all.b);
}

bool same_full(const PayloadReader& ra, const PayloadReader& rb, const Weight& a, bool transposed, size_t es) {
  if (!transposed) return same_plain(ra, rb, a.bytes);
  uint64_t rows = static_cast<uint64_t>(a.dims[0]), cols = static_cast<uint64_t>(a.dims[1]);
  if (rows >= cols) return same_transposed(ra, rb, rows, cols, es);
  return same_transposed(rb, ra, cols, rows, es);  // b = [cols, rows] has more rows
}

// Every pair of `members` (in file order) compared in full; a copy is marked and compared no more.
void compare_members(const Model& model, std::vector<int> members, size_t es, PayloadFiles& files,
                     std::vector<bool>& is_copy, std::vector<DuplicatePair>& out) {
  std::sort(members.begin(), members.end());
  for (size_t i = 0; i < members.size(); ++i) {
    if (is_copy[static_cast<size_t>(members[i])]) continue;
    const Weight& a = model.weights[static_cast<size_t>(members[i])];
    PayloadReader ra;
    if (!ra.open(a, &files)) continue;
    for (size_t j = i + 1; j < members.size(); ++j) {
      if (is_copy[static_cast<size_t>(members[j])]) continue;
      const Weight& b = model.weights[static_cast<size_t>(members[j])];
      bool transposed = transposed_shapes(a, b);
      if (a.dims != b.dims && !transposed) continue;
      PayloadReader rb;
      if (!rb.open(b, &files) || !same_full(ra, rb, a, transposed, es)) continue;
      is_copy[static_cast<size_t>(members[j])] = true;
      out.push_back({members[i], members[j], transposed});
    }
  }
}

using ShapeKey = std::tuple<int32_t, uint64_t, std::vector<int64_t>>;  // dtype, elements, shape up to transposition
using ShapeGroups = std::map<ShapeKey, std::vector<int>>;
using FingerprintGroups = std::map<std::tuple<int32_t, uint64_t, std::vector<int64_t>, std::string>, std::vector<int>>;

// The first step: tensors by dtype, element count and shape up to transposition (no read). Tiny
// tensors are left out: equal small tensors are common (merged biases) and are not what tied
// weights look like.
ShapeGroups by_shape_of(const Model& model) {
  std::vector<int> candidates;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (!w.parameter || w.sparse || w.packed || w.elements < 1024 || dtype_bits(w.dtype) < 8) continue;
    candidates.push_back(static_cast<int>(i));
  }
  // Dim k of a weight's shape up to transposition (a 2-D shape with its smaller dim first).
  auto dim = [&](const Weight& w, size_t k) {
    const bool flip = w.dims.size() == 2 && w.dims[0] > w.dims[1];
    return w.dims[flip ? 1 - k : k];
  };
  // Sorted by key, each key's weights in index order: the groups a map of keys would hold, made
  // with one list per group rather than one per weight.
  auto less = [&](int x, int y) {
    const Weight& a = model.weights[static_cast<size_t>(x)];
    const Weight& b = model.weights[static_cast<size_t>(y)];
    if (a.dtype != b.dtype) return a.dtype < b.dtype;
    if (a.elements != b.elements) return a.elements < b.elements;
    for (size_t k = 0; k < a.dims.size() && k < b.dims.size(); ++k) {
      if (dim(a, k) != dim(b, k)) return dim(a, k) < dim(b, k);
    }
    return a.dims.size() < b.dims.size();
  };
  std::stable_sort(candidates.begin(), candidates.end(), less);
  ShapeGroups by_shape;
  for (size_t i = 0; i < candidates.size();) {
    size_t j = i + 1;
    while (j < candidates.size() && !less(candidates[i], candidates[j])) ++j;
    const Weight& w = model.weights[static_cast<size_t>(candidates[i])];
    std::vector<int64_t> shape;
    for (size_t k = 0; k < w.dims.size(); ++k) shape.push_back(dim(w, k));
    by_shape.emplace(ShapeKey{w.dtype, w.elements, std::move(shape)},
                     std::vector<int>(candidates.begin() + static_cast<long>(i), candidates.begin() + static_cast<long>(j)));
    i = j;
  }
  return by_shape;
}

// The second step's reads: the middle element of every tensor that shares its shape key, by
// weight index (none when unread).
std::vector<std::optional<std::string>> middles_of(const Model& model, const ShapeGroups& by_shape, PayloadFiles& files) {
  // The middle elements, read in file order through one window: neighbouring tensors share a read.
  std::vector<int> candidates;
  for (const auto& [shape_key, same_shape] : by_shape) {
    if (same_shape.size() >= 2) candidates.insert(candidates.end(), same_shape.begin(), same_shape.end());
  }
  std::sort(candidates.begin(), candidates.end(), [&](int x, int y) {
    const Weight& a = model.weights[static_cast<size_t>(x)];
    const Weight& b = model.weights[static_cast<size_t>(y)];
    return std::make_pair(a.payload_file, a.payload_offset) < std::make_pair(b.payload_file, b.payload_offset);
  });
  std::vector<std::optional<std::string>> middle_of(model.weights.size());
  ReadWindow window;
  for (int i : candidates) {
    const Weight& w = model.weights[static_cast<size_t>(i)];
    const size_t es = static_cast<size_t>(dtype_bits(w.dtype) / 8);
    if (w.tensor && w.tensor->middle_size == es && w.payload_file) {  // seen as the reader skipped it
      middle_of[static_cast<size_t>(i)] = std::string(reinterpret_cast<const char*>(&w.tensor->middle), es);
      continue;
    }
    PayloadReader r;
    std::string x(es, '\0');
    if (r.open(w, &files) && r.read(canonical_position(w, w.elements / 2) * es, es, x.data(), window)) middle_of[static_cast<size_t>(i)] = x;
  }
  return middle_of;
}

// The third step: within a shape key, tensors with the same middle element grouped by their
// kSamples-element fingerprint.
FingerprintGroups fingerprint_groups(const Model& model, const ShapeGroups& by_shape,
                                     const std::vector<std::optional<std::string>>& middle_of, PayloadFiles& files) {
  FingerprintGroups groups;
  for (const auto& [shape_key, same_shape] : by_shape) {
    if (same_shape.size() < 2) continue;
    const size_t es = static_cast<size_t>(dtype_bits(std::get<0>(shape_key)) / 8);
    std::map<std::string, std::vector<int>> by_middle;
    for (int i : same_shape) {
      if (middle_of[static_cast<size_t>(i)]) by_middle[*middle_of[static_cast<size_t>(i)]].push_back(i);
    }
    for (const auto& [middle, same_middle] : by_middle) {
      if (same_middle.size() < 2) continue;
      for (int i : same_middle) {
        const Weight& w = model.weights[static_cast<size_t>(i)];
        PayloadReader r;
        if (!r.open(w, &files) || !r.hold(kHeld)) continue;
        auto f = fingerprint(r, w, es);
        if (f) groups[std::tuple_cat(shape_key, std::make_tuple(*f))].push_back(i);
      }
    }
  }
  return groups;
}

// The groups compared in full. A group of more than two is split by a hash of each member's whole
// content first, so only tensors whose hashes agree are compared (look-alikes whose samples agree
// no longer cost a comparison per pair); a member that cannot be hashed is compared with every
// other as before.
void compare_groups(const Model& model, FingerprintGroups& groups, PayloadFiles& files, std::vector<DuplicatePair>& out) {
  std::vector<bool> is_copy(model.weights.size(), false);
  for (auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    const size_t es = static_cast<size_t>(dtype_bits(std::get<0>(key)) / 8);
    if (members.size() == 2) {
      compare_members(model, members, es, files, is_copy, out);
      continue;
    }
    std::map<std::optional<std::pair<uint64_t, uint64_t>>, std::vector<int>> by_hash;
    for (int i : members) {
      PayloadReader r;
      std::optional<std::pair<uint64_t, uint64_t>> h;
      if (r.open(model.weights[static_cast<size_t>(i)], &files)) h = content_hash(r, model.weights[static_cast<size_t>(i)], es);
      by_hash[h].push_back(i);
    }
    std::vector<int> unhashed = by_hash[std::nullopt];
    for (auto& [h, same] : by_hash) {
      if (!h) continue;
      same.insert(same.end(), unhashed.begin(), unhashed.end());
      compare_members(model, same, es, files, is_copy, out);
    }
    if (!unhashed.empty()) compare_members(model, unhashed, es, files, is_copy, out);
  }
}

}  // namespace

std::vector<DuplicatePair> find_duplicates(const Model& model) {
  std::vector<DuplicatePair> out;
  // Candidates narrow in three steps, each reading less than the next: tensors with the same
  // dtype, element count and shape up to transposition (no read); then the same middle element
  // (one read); then the same kSamples-element fingerprint. Only pairs left after all three are
  // compared in full.
  PayloadFiles files;
  ShapeGroups by_shape = by_shape_of(model);
  std::vector<std::optional<std::string>> middle_of = middles_of(model, by_shape, files);
  FingerprintGroups groups = fingerprint_groups(model, by_shape, middle_of, files);
  compare_groups(model, groups, files, out);
  std::sort(out.begin(), out.end(), [](const DuplicatePair& x, const DuplicatePair& y) { return x.copy < y.copy; });
  return out;
}

}  // namespace headcount
