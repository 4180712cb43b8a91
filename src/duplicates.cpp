// duplicates.cpp: content comparison of candidate tensor pairs, reading payloads in bounded chunks.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "headcount/findings.h"
#include "payload.h"

namespace headcount {
namespace {

constexpr size_t kChunk = kPayloadChunk;
constexpr int kSamples = 16;  // sampled elements per tensor for the fingerprint

bool transposed_shapes(const Weight& a, const Weight& b) {
  return a.dims.size() == 2 && b.dims.size() == 2 && a.dims[0] == b.dims[1] && a.dims[1] == b.dims[0] &&
         a.dims[0] != a.dims[1];
}

// Sampled elements in a canonical orientation: a 2-D tensor stored [M, m] with M > m is read as
// its transpose, so a tensor and its transposed copy give the same fingerprint. Returns nothing
// when the samples are all one value: zeros and ones (untrained biases, norms) are equal by
// coincidence, not copies, and the framework counts each of them.
std::optional<std::string> fingerprint(const PayloadReader& r, const Weight& w, size_t es) {
  bool flip = w.dims.size() == 2 && w.dims[0] > w.dims[1];
  uint64_t rows = w.dims.size() == 2 ? static_cast<uint64_t>(flip ? w.dims[1] : w.dims[0]) : 1;
  uint64_t cols = w.dims.size() == 2 ? static_cast<uint64_t>(flip ? w.dims[0] : w.dims[1]) : w.elements;
  std::string out, x(es, '\0'), first;
  bool uniform = true;
  for (int s = 0; s < kSamples; ++s) {
    uint64_t e = w.elements <= 1 ? 0 : (w.elements - 1) * static_cast<uint64_t>(s) / (kSamples - 1);
    uint64_t i = e / cols, j = e % cols;                          // canonical (i, j)
    uint64_t at = flip ? j * rows + i : e;                         // stored position
    if (!r.read(at * es, es, x.data())) return std::nullopt;
    if (s == 0) first = x;
    else if (x != first) uniform = false;
    out += x;
  }
  if (uniform) return std::nullopt;
  return out;
}

bool same_full(const PayloadReader& ra, const PayloadReader& rb, const Weight& a, bool transposed, size_t es) {
  if (!transposed) {
    std::vector<char> x(kChunk), y(kChunk);
    for (uint64_t at = 0; at < a.bytes; at += kChunk) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, a.bytes - at));
      if (!ra.read(at, n, x.data()) || !rb.read(at, n, y.data()) || std::memcmp(x.data(), y.data(), n) != 0) return false;
    }
    return true;
  }
  // a is [rows, cols]; b is [cols, rows]. A block of a's rows is a block of b's columns: read it
  // with one short read per row of b, so memory stays at two chunks.
  uint64_t rows = static_cast<uint64_t>(a.dims[0]), cols = static_cast<uint64_t>(a.dims[1]);
  uint64_t block = std::max<uint64_t>(1, kChunk / std::max<uint64_t>(1, cols * es));
  std::vector<char> x, y;
  for (uint64_t r0 = 0; r0 < rows; r0 += block) {
    uint64_t nr = std::min(block, rows - r0);
    x.resize(nr * cols * es);
    y.resize(nr * es);
    if (!ra.read(r0 * cols * es, x.size(), x.data())) return false;
    for (uint64_t c = 0; c < cols; ++c) {
      if (!rb.read((c * rows + r0) * es, y.size(), y.data())) return false;
      for (uint64_t i = 0; i < nr; ++i) {
        if (std::memcmp(&x[(i * cols + c) * es], &y[i * es], es) != 0) return false;
      }
    }
  }
  return true;
}

}  // namespace

std::vector<DuplicatePair> find_duplicates(const Model& model) {
  std::vector<DuplicatePair> out;
  // Candidates: parameter tensors with the same dtype, element count and shape up to transposition,
  // and the same sampled fingerprint. Tiny tensors are left out: equal small tensors are common
  // (merged biases) and are not what tied weights look like.
  std::map<std::tuple<int32_t, uint64_t, std::vector<int64_t>, std::string>, std::vector<int>> groups;
  for (size_t i = 0; i < model.weights.size(); ++i) {
    const Weight& w = model.weights[i];
    if (!w.parameter || w.sparse || w.packed || w.elements < 1024 || dtype_bits(w.dtype) < 8) continue;
    PayloadReader r;
    if (!r.open(w)) continue;
    auto f = fingerprint(r, w, static_cast<size_t>(dtype_bits(w.dtype) / 8));
    if (!f) continue;
    std::vector<int64_t> shape = w.dims;
    if (shape.size() == 2 && shape[0] > shape[1]) std::swap(shape[0], shape[1]);
    groups[{w.dtype, w.elements, shape, *f}].push_back(static_cast<int>(i));
  }
  std::vector<bool> is_copy(model.weights.size(), false);
  for (auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    size_t es = static_cast<size_t>(dtype_bits(std::get<0>(key)) / 8);
    for (size_t i = 0; i < members.size(); ++i) {
      if (is_copy[members[i]]) continue;
      const Weight& a = model.weights[members[i]];
      PayloadReader ra;
      if (!ra.open(a)) continue;
      for (size_t j = i + 1; j < members.size(); ++j) {
        if (is_copy[members[j]]) continue;
        const Weight& b = model.weights[members[j]];
        bool transposed = transposed_shapes(a, b);
        if (a.dims != b.dims && !transposed) continue;
        PayloadReader rb;
        if (!rb.open(b) || !same_full(ra, rb, a, transposed, es)) continue;
        is_copy[members[j]] = true;
        out.push_back({members[i], members[j], transposed});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const DuplicatePair& x, const DuplicatePair& y) { return x.copy < y.copy; });
  return out;
}

}  // namespace headcount
