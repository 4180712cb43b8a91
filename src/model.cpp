// model.cpp: small facts about ONNX data types and the lookups the later stages share.
#include "headcount/model.h"

#include "headcount/checked.h"

#include "headcount/dtypes.h"

#include <sys/mman.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <random>
#include <utility>

namespace headcount {

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::Embedded: return "embedded";
    case Storage::External: return "external";
    case Storage::ConstantNode: return "constant-node";
  }
  return "?";
}

const char* external_status_name(ExternalStatus s) {
  switch (s) {
    case ExternalStatus::NotExternal: return "none";
    case ExternalStatus::Present: return "present";
    case ExternalStatus::Missing: return "missing";
    case ExternalStatus::SizeMismatch: return "size-mismatch";
    case ExternalStatus::NotChecked: return "not-checked";
  }
  return "?";
}

int dtype_bits(int32_t dtype) {
  using T = onnx::TensorProto;
  switch (dtype) {
    case T::FLOAT: case T::INT32: case T::UINT32: return 32;
    case T::UINT8: case T::INT8: case T::BOOL: return 8;
    case T::UINT16: case T::INT16: case T::FLOAT16: case T::BFLOAT16: return 16;
    case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 64;
    case T::COMPLEX128: return 128;
    case 17: case 18: case 19: case 20: return 8;  // float8 e4m3fn, e4m3fnuz, e5m2, e5m2fnuz
    case 21: case 22: case 23: return 4;            // uint4, int4, float4e2m1
    default: return 0;                              // undefined, string
  }
}

std::string dtype_name(int32_t dtype) {
  using T = onnx::TensorProto;
  switch (dtype) {
    case T::FLOAT: return "float32";
    case T::UINT8: return "uint8";
    case T::INT8: return "int8";
    case T::UINT16: return "uint16";
    case T::INT16: return "int16";
    case T::INT32: return "int32";
    case T::INT64: return "int64";
    case T::STRING: return "string";
    case T::BOOL: return "bool";
    case T::FLOAT16: return "float16";
    case T::DOUBLE: return "float64";
    case T::UINT32: return "uint32";
    case T::UINT64: return "uint64";
    case T::COMPLEX64: return "complex64";
    case T::COMPLEX128: return "complex128";
    case T::BFLOAT16: return "bfloat16";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default:
      if (dtype >= kGgmlDtype) {
        if (const GgmlType* t = ggml_type(static_cast<uint32_t>(dtype - kGgmlDtype))) return t->name;
      }
      return "dtype" + std::to_string(dtype);
  }
}

uint64_t canonical_position(Span<int64_t> dims, uint64_t elements, uint64_t e) {
  bool flip = dims.size() == 2 && dims[0] > dims[1];
  uint64_t rows = dims.size() == 2 ? static_cast<uint64_t>(flip ? dims[1] : dims[0]) : 1;
  uint64_t cols = dims.size() == 2 ? static_cast<uint64_t>(flip ? dims[0] : dims[1]) : elements;
  uint64_t i = e / cols, j = e % cols;  // canonical (i, j)
  return flip ? j * rows + i : e;       // stored position
}

bool dtype_is_parameter_type(int32_t dtype) {
  using T = onnx::TensorProto;
  switch (dtype) {
    case T::FLOAT: case T::FLOAT16: case T::DOUBLE: case T::BFLOAT16:
    case 17: case 18: case 19: case 20: case 23:               // float8, float4
    case T::UINT8: case T::INT8: case T::UINT16: case T::INT16:  // quantized weights
    case 21: case 22:                                           // uint4, int4
      return true;
    default:
      return dtype >= kGgmlDtype;  // a GGUF block-quantized type (the integer types map to ONNX's)  // int32/int64 shapes and indices, bool masks, strings, complex
  }
}

std::string shape_string(Span<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Blocks of 64 KiB and more have their pages made present in one call: the arena fills every
// block it takes, and one madvise that maps 64 pages costs far less than 64 page faults. (The
// blocks stay ordinary heap memory, which leak checkers scan.) A kernel without
// MADV_POPULATE_WRITE (before Linux 5.14) refuses the call, and the pages fault in as they are used.
void* Skeleton::allocate_block(size_t size) {
  void* p = ::operator new(size);
#ifdef MADV_POPULATE_WRITE
  if (size >= (64u << 10)) {
    const uintptr_t page = 4096, begin = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1),
                    end = (reinterpret_cast<uintptr_t>(p) + size) & ~(page - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
  }
#endif
  return p;
}

void Skeleton::free_block(void* block, size_t) { ::operator delete(block); }

namespace {

// Little-endian fixed-width read from raw_data.
template <typename V>
V read_le(std::string_view raw, size_t i) {
  V v;
  std::memcpy(&v, raw.data() + i * sizeof(V), sizeof(V));
  return v;
}

// Whether t's dims, all checked, hold exactly n elements.
bool holds_shape(const TensorRec& t, size_t n) {
  uint64_t elements = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || mul_overflows(elements, static_cast<uint64_t>(d), &elements)) return false;
  }
  return elements == n;
}

}  // namespace

double half_to_double(uint16_t h) {
  int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(frac, -24);
  else if (exp == 31) v = frac ? std::numeric_limits<double>::quiet_NaN()
                               : std::numeric_limits<double>::infinity();
  else v = std::ldexp(frac + 1024, exp - 25);
  return sign ? -v : v;
}

std::optional<std::vector<int64_t>> int_values(const TensorRec& t) {
  using T = onnx::TensorProto;
  if (t.external) return std::nullopt;
  std::vector<int64_t> v;
  std::string_view raw = t.raw_data;
  switch (t.data_type) {
    case T::INT64:
      if (!raw.empty()) {
        if (raw.size() % 8) return std::nullopt;
        for (size_t i = 0; i < raw.size() / 8; ++i) v.push_back(read_le<int64_t>(raw, i));
      } else {
        v.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case T::INT32:
      if (!raw.empty()) {
        if (raw.size() % 4) return std::nullopt;
        for (size_t i = 0; i < raw.size() / 4; ++i) v.push_back(read_le<int32_t>(raw, i));
      } else {
        v.assign(t.int32_data().begin(), t.int32_data().end());
      }
      break;
    case T::INT8: case T::UINT8: case T::INT16: case T::UINT16: case T::BOOL:
      if (!raw.empty()) return std::nullopt;  // only shape-like types are read
      v.assign(t.int32_data().begin(), t.int32_data().end());
      break;
    default:
      return std::nullopt;
  }
  // A kept payload must match the declared shape; a stripped one reads as empty.
  if (!holds_shape(t, v.size())) return std::nullopt;
  return v;
}

std::optional<std::vector<double>> float_values(const TensorRec& t) {
  using T = onnx::TensorProto;
  if (t.external) return std::nullopt;
  std::vector<double> v;
  std::string_view raw = t.raw_data;
  switch (t.data_type) {
    case T::FLOAT:
      if (!raw.empty()) {
        if (raw.size() % 4) return std::nullopt;
        for (size_t i = 0; i < raw.size() / 4; ++i) v.push_back(read_le<float>(raw, i));
      } else {
        v.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case T::DOUBLE:
      if (!raw.empty()) {
        if (raw.size() % 8) return std::nullopt;
        for (size_t i = 0; i < raw.size() / 8; ++i) v.push_back(read_le<double>(raw, i));
      } else {
        v.assign(t.double_data().begin(), t.double_data().end());
      }
      break;
    case T::FLOAT16:
      if (!raw.empty()) {
        if (raw.size() % 2) return std::nullopt;
        for (size_t i = 0; i < raw.size() / 2; ++i) v.push_back(half_to_double(read_le<uint16_t>(raw, i)));
      } else {
        for (int32_t x : t.int32_data()) v.push_back(half_to_double(static_cast<uint16_t>(x)));
      }
      break;
    default: {
      auto ints = int_values(t);
      if (!ints) return std::nullopt;
      v.assign(ints->begin(), ints->end());
      return v;
    }
  }
  if (!holds_shape(t, v.size())) return std::nullopt;
  return v;
}

namespace {

uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  }
  void absorb(uint64_t m, int rounds) {
    v3 ^= m;
    for (int i = 0; i < rounds; ++i) round();
    v0 ^= m;
  }
};

uint64_t load_le64(const unsigned char* p, size_t n) {  // the last n < 8 bytes, little-endian
  uint64_t m = 0;
  for (size_t i = 0; i < n; ++i) m |= static_cast<uint64_t>(p[i]) << (8 * i);
  return m;
}

// The process's key for the value table, drawn once. Without a random device (it can throw), the
// clock and an address stand in: not secret, but not known to a file written in advance either.
const std::pair<uint64_t, uint64_t>& table_key() {
  static const std::pair<uint64_t, uint64_t> key = []() -> std::pair<uint64_t, uint64_t> {
    try {
      std::random_device rd;
      auto word = [&] { return (static_cast<uint64_t>(rd()) << 32) ^ rd(); };
      const uint64_t k0 = word();
      return {k0, word()};
    } catch (const std::exception&) {
      uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
      return {t * 0x9E3779B97F4A7C15ull, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&t)) ^ t};
    }
  }();
  return key;
}

}  // namespace

namespace {

// SipHash-c-d: c rounds per 8-byte block, d to finish.
uint64_t siphash(uint64_t k0, uint64_t k1, std::string_view data, int c, int d) {
  SipState s{0x736f6d6570736575ull ^ k0, 0x646f72616e646f6dull ^ k1, 0x6c7967656e657261ull ^ k0,
             0x7465646279746573ull ^ k1};
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t whole = data.size() / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m;
    std::memcpy(&m, p + i, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    m = __builtin_bswap64(m);
#endif
    s.absorb(m, c);
  }
  s.absorb(load_le64(p + whole, data.size() - whole) | (static_cast<uint64_t>(data.size()) << 56), c);
  s.v2 ^= 0xff;
  for (int i = 0; i < d; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

}  // namespace

uint64_t siphash24(uint64_t k0, uint64_t k1, std::string_view data) { return siphash(k0, k1, data, 2, 4); }

uint64_t siphash13(uint64_t k0, uint64_t k1, std::string_view data) { return siphash(k0, k1, data, 1, 3); }

uint64_t keyed_hash(std::string_view data) {
  const auto& [k0, k1] = table_key();
  return siphash13(k0, k1, data);
}

uint64_t ValueIndex::scope_hash(uint64_t name_hash, int g) {
  // The scope is mixed into the name's keyed hash, so the same name in two scopes lands apart
  // (splitmix64's finalizer spreads every bit of both). Colliding keys still need colliding
  // keyed hashes, which a file cannot choose.
  uint64_t h = name_hash ^ ((static_cast<uint64_t>(static_cast<uint32_t>(g)) + 1) * 0x9E3779B97F4A7C15ull);
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return h ^ (h >> 31);
}

int ValueIndex::find(const std::vector<Value>& values, int g, std::string_view name) const {
  return slots_.empty() ? -1 : find_hashed(values, g, name, scope_hash(keyed_hash(name), g));
}

// A slot holds the high half of the key's hash and the id; the high half also picks the home
// slot, so growing the table moves slots without hashing any name again.
int ValueIndex::find_hashed(const std::vector<Value>& values, int g, std::string_view name, uint64_t h) const {
  const uint64_t tag = h >> 32 << 32, mask = slots_.size() - 1;
  for (uint64_t i = (h >> 32) & mask;; i = (i + 1) & mask) {
    const uint64_t s = slots_[i];
    if (s == 0) return -1;
    if ((s & ~0xFFFFFFFFull) != tag) continue;
    const Value& v = values[static_cast<size_t>((s & 0xFFFFFFFFull) - 1)];
    if (v.graph == g && v.name == name) return static_cast<int>((s & 0xFFFFFFFFull) - 1);
  }
}

int ValueIndex::intern(std::vector<Value>& values, int g, std::string_view name) {
  return intern_hashed(values, g, name, keyed_hash(name));
}

int ValueIndex::intern_hashed(std::vector<Value>& values, int g, std::string_view name, uint64_t name_hash) {
  const uint64_t h = scope_hash(name_hash, g);
  if (!slots_.empty()) {
    if (int id = find_hashed(values, g, name, h); id >= 0) return id;
  }
  if ((values.size() + 1) * 3 > slots_.size() * 2) grow();  // at most 2/3 full: short probes
  const int id = static_cast<int>(values.size());
  Value v;
  v.name = name;
  v.graph = g;
  values.push_back(v);
  const uint64_t mask = slots_.size() - 1;
  uint64_t i = (h >> 32) & mask;
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = (h >> 32 << 32) | static_cast<uint64_t>(id + 1);
  return id;
}

void ValueIndex::reserve(size_t names) {
  size_t n = 64;
  while (n * 2 < names * 3) n *= 2;  // the size the growth series would reach, made at once
  if (slots_.empty()) slots_.assign(n, 0);
}

void ValueIndex::grow() {
  std::vector<uint64_t> old = std::move(slots_);
  slots_.assign(std::max<size_t>(64, old.size() * 2), 0);
  const uint64_t mask = slots_.size() - 1;
  for (uint64_t s : old) {
    if (s == 0) continue;
    uint64_t i = (s >> 32) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

ValueBudget::ValueBudget(const Model& m) {
  // Each term saturates: a model's size never wraps its allowance around to a small one.
  uint64_t stored = 0;
  for (const Weight& w : m.weights) {
    if (w.payload_known && add_overflows(stored, w.payload_length, &stored)) stored = UINT64_MAX;
  }
  uint64_t units = kFloor, more = 0;
  if (mul_overflows(static_cast<uint64_t>(m.nodes.size()), kPerNode, &more) || add_overflows(units, more, &units)) units = UINT64_MAX;
  if (mul_overflows(stored, kPerStoredByte, &more) || add_overflows(units, more, &units)) units = UINT64_MAX;
  left_ = total_ = units;
}

int Model::defining_value_by_name(int g, const Name& name) const {
  for (; g >= 0; g = graphs[static_cast<size_t>(g)].parent) {
    int id = value_index.find(values, g, name);
    if (id < 0) continue;
    const Value& v = values[static_cast<size_t>(id)];
    if (v.producer >= 0 || v.weight >= 0) return id;
  }
  return -1;
}

namespace {

// One level of a scope path, cut to a readable length: names in hostile files can be megabytes.
std::string shortened(std::string_view s, size_t most = 48) {
  if (s.size() <= most) return std::string(s);
  return std::string(s.substr(0, most - 3)) + "...";
}

}  // namespace

std::string Model::scope_name(int g) const {
  if (graphs[g].parent < 0 && graphs[g].function.empty()) return "main";  // nearly every tensor's
  constexpr size_t kHead = 2, kTail = 3;  // levels kept at each end of a deep path
  std::vector<int> chain;                 // outermost first; the loader bounds the depth
  for (int s = g; s >= 0; s = graphs[s].parent) chain.insert(chain.begin(), s);
  const Graph& root = graphs[chain[0]];
  std::string out = root.function.empty() ? "main" : "function:" + shortened(root.function);
  size_t levels = chain.size() - 1;
  for (size_t i = 1; i < chain.size(); ++i) {
    if (levels > kHead + kTail && i == 1 + kHead) {
      out += "/(" + std::to_string(levels - kHead - kTail) + " more levels)";
      i = chain.size() - kTail - 1;
      continue;
    }
    const Graph& graph = graphs[chain[i]];
    const auto& n = *nodes[graph.owner].rec;
    out += "/" + shortened(n.name().empty() ? std::string(n.op_type()) + "#" + std::to_string(graph.owner) : std::string(n.name())) + ":" +
           shortened(graph.attribute);
    if (graph.list_index >= 0) out += "[" + std::to_string(graph.list_index) + "]";
  }
  return out;
}

}  // namespace headcount
