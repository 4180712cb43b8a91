// gguf.cpp: the GGUF reader (llama.cpp's checkpoints): the metadata and the tensor index, never
// the tensor bytes.
//
// A GGUF file (versions 2 and 3) is "GGUF", u32 version, u64 tensor count, u64
// key/value count, the key/value pairs, the tensor infos (name, dims, ggml type, offset), padding
// to general.alignment, then the tensor data. Every count in the header is checked against the
// bytes left in the file before anything is reserved for it, so a file cannot make the reader
// allocate more than it holds or loop longer than its length.
//
// Byte order: llama.cpp's gguf-convert-endian writes a big-endian twin of a file for big-endian
// hosts (every number of the header and the data byte-swapped). As @huggingface/gguf does, the
// version tells them apart: read little-endian, a real version (1 to 3) has its low 16 bits set,
// and a big-endian one reads 0x0N000000 (ggml's loader names the same test "a mismatch between
// the host and model endianness"). The header's numbers are then read big-endian.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "checkpoint/readers.h"
#include "headcount/checked.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"

namespace headcount {

namespace {


// Type numbers ggml gave up: a file that uses one was written by an old or patched converter.
const char* removed_ggml_type(uint32_t id) {
  switch (id) {
    case 4: return "Q4_2";
    case 5: return "Q4_3";
    case 31: return "Q4_0_4_4";
    case 32: return "Q4_0_4_8";
    case 33: return "Q4_0_8_8";
    case 36: return "IQ4_NL_4_4";
    case 37: return "IQ4_NL_4_8";
    case 38: return "IQ4_NL_8_8";
    default: return nullptr;
  }
}

// GGUF's metadata value types (gguf_type), in their numbering.
enum ValueType : uint32_t {
  kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64, kValueTypes
};
constexpr const char* kValueTypeNames[kValueTypes] = {"uint8", "int8",   "uint16", "int16",  "uint32",
                                                       "int32", "float32", "bool",  "string", "array",
                                                       "uint64", "int64", "float64"};
// The fewest bytes a value of each type takes: what a count of them is checked against.
constexpr uint64_t kValueMinBytes[kValueTypes] = {1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8};

constexpr uint64_t kMostDims = 8;           // ggml has 4; more is surely hostile
constexpr int kMostArrayNesting = 8;        // arrays of arrays: allowed, only counted
constexpr uint64_t kMostKeptString = 65536;  // bytes of a string value kept; the rest is skipped
constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
constexpr uint64_t kMostNameBytes = 65535;  // the GGUF spec's bound for keys (tensor names: 64)
constexpr uint64_t kFirstReserve = 4096;    // tensors reserved before they are read
// A tensor info takes at least a name length (8), n_dims (4), a type (4) and an offset (8); a
// key/value pair a key length (8), a value type (4) and a one-byte value.
constexpr uint64_t kMinTensorInfo = 24;
constexpr uint64_t kMinKeyValue = 13;
constexpr uint64_t kMostMetadata = 65536;

// The file, read front to back through a buffer of its own, filled from the source 64 KiB at a
// time (a skip past the buffer reads nothing). Every read is checked against the file's size
// first, so a length in the file is refused before anything is allocated for it.
class GgufFile {
 public:
  explicit GgufFile(const ByteSource& source) : source_(source), id_(source.identity()), size_(source.size()) {
    if (size_ == 0) throw InputError("file is empty");
    buffer_.resize(kBuffer);
  }

  uint64_t size() const { return size_; }
  const FileIdentity& identity() const { return id_; }
  uint64_t at() const { return at_; }
  uint64_t left() const { return size_ - at_; }

  // `what` names the field; the reader's context (the key or tensor being read) goes before it.
  void need(uint64_t n, const char* what) const {
    if (n > left()) {
      throw InputError("truncated: " + context + what + " at byte " + std::to_string(at_) + " needs " +
                       std::to_string(n) + " bytes but the file ends at byte " + std::to_string(size_));
    }
  }
  void read(void* out, size_t n, const char* what) {
    need(n, what);
    char* to = static_cast<char*>(out);
    while (n > 0) {
      if (pos_ == len_) fill();
      size_t take = std::min(n, len_ - pos_);
      std::memcpy(to, buffer_.data() + pos_, take);
      to += take;
      pos_ += take;
      at_ += take;
      n -= take;
    }
  }
  void skip(uint64_t n, const char* what) {
    need(n, what);
    uint64_t buffered = len_ - pos_;
    if (n <= buffered) {
      pos_ += n;
    } else {
      pos_ = len_ = 0;
    }
    at_ += n;
  }
  uint8_t u8(const char* what) {
    uint8_t b;
    read(&b, 1, what);
    return b;
  }
  uint16_t u16(const char* what) {
    unsigned char b[2];
    read(b, 2, what);
    if (big_endian) return static_cast<uint16_t>(b[0] << 8 | b[1]);
    return static_cast<uint16_t>(b[0] | b[1] << 8);
  }
  uint32_t u32(const char* what) {
    unsigned char b[4];
    read(b, 4, what);
    if (big_endian) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
    return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 | static_cast<uint32_t>(b[2]) << 16 |
           static_cast<uint32_t>(b[3]) << 24;
  }
  uint64_t u64(const char* what) {
    uint64_t first = u32(what);
    uint64_t second = u32(what);
    return big_endian ? first << 32 | second : second << 32 | first;
  }
  // A string whose length is checked against the file, and against `most` when it is a name.
  std::string string(const char* what, uint64_t most = UINT64_MAX) {
    uint64_t n = u64(what);
    if (n > most) {
      throw InputError(context + what + " is " + std::to_string(n) + " bytes long (at most " + std::to_string(most) +
                       " are read)");
    }
    need(n, what);
    std::string s(static_cast<size_t>(n), '\0');
    read(s.data(), s.size(), what);
    return s;
  }
  void skip_string(const char* what) { skip(u64(what), what); }
  // A string value, of which at most `keep` bytes are kept (a chat template, a license): what the
  // reader holds does not grow with a length in the file, sparse or not.
  std::string string_prefix(const char* what, uint64_t keep) {
    uint64_t n = u64(what);
    need(n, what);
    std::string s(static_cast<size_t>(std::min(n, keep)), '\0');
    read(s.data(), s.size(), what);
    skip(n - s.size(), what);
    return s;
  }

  std::string context;  // "metadata 'general.name': ", "tensor 'output.weight': "
  bool big_endian = false;  // the file's numbers are big-endian (read_version found it)

 private:
  static constexpr size_t kBuffer = 64 * 1024;
  // The next bytes from at_ on, as many as the buffer holds; need() has proven at least one left.
  void fill() {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buffer_.size(), size_ - at_));
    try {
      source_.read(at_, n, buffer_.data());
    } catch (const InputError&) {
      if (!id_.known) throw;  // not a local file: what went wrong (a network's error) says itself
      changed();  // need() checked the size found at the open: the file is not that size now
    }
    len_ = n;
    pos_ = 0;
  }
  [[noreturn]] void changed() const {
    throw InputError("truncated at byte " + std::to_string(at_) + " (the file changed while it was read)");
  }

  const ByteSource& source_;
  FileIdentity id_;
  uint64_t size_ = 0;
  uint64_t at_ = 0;  // the next byte the reader hands out
  std::vector<char> buffer_;
  size_t pos_ = 0, len_ = 0;
};

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

const char* value_type_name(uint32_t type) { return type < kValueTypes ? kValueTypeNames[type] : "?"; }

void check_value_type(const GgufFile& in, uint32_t type, const char* what) {
  if (type >= kValueTypes) {
    throw InputError(in.context + what + " " + std::to_string(type) + " is not a GGUF value type (0 to 12)");
  }
}

CheckpointValue::Type value_kind(uint32_t type) {
  switch (type) {
    case kU8: case kU16: case kU32: case kU64: return CheckpointValue::Type::Unsigned;
    case kI8: case kI16: case kI32: case kI64: return CheckpointValue::Type::Signed;
    case kF32: case kF64: return CheckpointValue::Type::Float;
    case kBool: return CheckpointValue::Type::Bool;
    case kString: return CheckpointValue::Type::String;
    default: return CheckpointValue::Type::Array;
  }
}

// One scalar of a numeric or bool type, read into `v`'s field for its kind.
void read_scalar(GgufFile& in, uint32_t type, CheckpointValue& v) {
  const char* what = "a value";
  switch (type) {
    case kU8: v.u = in.u8(what); break;
    case kI8: v.i = static_cast<int8_t>(in.u8(what)); break;
    case kU16: v.u = in.u16(what); break;
    case kI16: v.i = static_cast<int16_t>(in.u16(what)); break;
    case kU32: v.u = in.u32(what); break;
    case kI32: v.i = static_cast<int32_t>(in.u32(what)); break;
    case kU64: v.u = in.u64(what); break;
    case kI64: v.i = static_cast<int64_t>(in.u64(what)); break;
    case kF32: {
      uint32_t bits = in.u32(what);
      float f;
      std::memcpy(&f, &bits, 4);
      v.f = f;
      break;
    }
    case kF64: {
      uint64_t bits = in.u64(what);
      std::memcpy(&v.f, &bits, 8);
      break;
    }
    case kBool: v.b = in.u8(what) != 0; break;
    default: break;
  }
}

double as_number(uint32_t type, const CheckpointValue& v) {
  switch (value_kind(type)) {
    case CheckpointValue::Type::Unsigned: return static_cast<double>(v.u);
    case CheckpointValue::Type::Signed: return static_cast<double>(v.i);
    case CheckpointValue::Type::Float: return v.f;
    default: return v.b ? 1 : 0;
  }
}

// An array's element type and count; the count is refused when its elements cannot fit in what
// is left of the file, before anything is read or reserved.
std::pair<uint32_t, uint64_t> array_header(GgufFile& in, int depth) {
  uint32_t element = in.u32("an array's element type");
  check_value_type(in, element, "an array's element type");
  uint64_t count = in.u64("an array's element count");
  if (count > in.left() / kValueMinBytes[element]) {
    throw InputError(in.context + "an array of " + std::to_string(count) + " " + value_type_name(element) +
                     " values cannot fit in the " + std::to_string(in.left()) + " bytes left in the file");
  }
  if (element == kArray && depth >= kMostArrayNesting) {
    throw InputError(in.context + "arrays are nested more than " + std::to_string(kMostArrayNesting) + " deep");
  }
  return {element, count};
}

// Skips `count` elements of an array: strings and nested arrays one by one, fixed-size values at once.
void skip_elements(GgufFile& in, uint32_t element, uint64_t count, int depth) {
  if (element == kString) {
    for (uint64_t k = 0; k < count; ++k) in.skip_string("a string of an array");
  } else if (element == kArray) {
    for (uint64_t k = 0; k < count; ++k) {
      auto [inner, n] = array_header(in, depth + 1);
      skip_elements(in, inner, n, depth + 1);
    }
  } else {
    in.skip(count * kValueMinBytes[element], "an array's values");  // no overflow: checked against left()
  }
}

CheckpointValue read_value(GgufFile& in, uint32_t type) {
  CheckpointValue v;
  v.type = value_kind(type);
  v.type_name = value_type_name(type);
  if (type == kString) {
    v.s = in.string_prefix("a string value", kMostKeptString);
  } else if (type != kArray) {
    read_scalar(in, type, v);
  } else {
    auto [element, count] = array_header(in, 1);
    v.element = value_kind(element);
    v.count = count;
    v.type_name = std::string("array[") + value_type_name(element) + "]";
    bool numeric = element != kString && element != kArray;
    if (numeric && count <= CheckpointValue::kMostKeptArray) {
      v.numbers.reserve(static_cast<size_t>(count));  // at most kMostKeptArray, and checked against the file
      CheckpointValue one;
      for (uint64_t k = 0; k < count; ++k) {
        read_scalar(in, element, one);
        v.numbers.push_back(as_number(element, one));
      }
    } else {
      skip_elements(in, element, count, 1);
    }
  }
  return v;
}

// One file of a checkpoint: its header, metadata and tensors, checked against its size.
struct GgufPart {
  uint32_t version = 0;
  bool big_endian = false;
  uint64_t alignment = kDefaultAlignment;
  uint64_t size = 0;
  FileIdentity identity;
  std::map<std::string, CheckpointValue> metadata;
  std::vector<CheckpointTensor> tensors;
};

uint32_t read_version(GgufFile& in) {
  char magic[4];
  in.read(magic, 4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) throw InputError("not a GGUF file: it does not start with 'GGUF'");
  uint32_t version = in.u32("the version");
  if ((version & 0xFFFFu) == 0 && version != 0) {  // 0x0N000000: the version written big-endian
    in.big_endian = true;
    version = __builtin_bswap32(version);
  }
  if (version == 1) {
    throw InputError(std::string("GGUF version 1 (32-bit counts) is not supported") +
                     (in.big_endian ? " (a big-endian file)" : "") + ": versions 2 and 3 are read");
  }
  if (version != 2 && version != 3) {
    throw InputError("GGUF version " + std::to_string(version) + " is not supported" +
                     (in.big_endian ? " (read big-endian: its low 16 bits are 0)" : "") + ": versions 2 and 3 are read");
  }
  return version;
}

void read_metadata(GgufFile& in, GgufPart& part) {
  uint64_t count = in.u64("the metadata count");
  if (count > in.left() / kMinKeyValue) {
    throw InputError("the header states " + std::to_string(count) + " metadata entries, but the " +
                     std::to_string(in.left()) + " bytes left in the file hold at most " +
                     std::to_string(in.left() / kMinKeyValue) + " metadata entries");
  }
  // Each entry kept costs a few hundred bytes: a bound, so that a file of many gigabytes (a remote
  // one, whose bytes come by range) cannot make the reader keep millions of them.
  if (count > kMostMetadata) {
    throw InputError("the header states " + std::to_string(count) + " metadata entries; at most " +
                     std::to_string(kMostMetadata) + " are read (llama.cpp's files hold a few dozen)");
  }
  for (uint64_t k = 0; k < count; ++k) {
    in.context = "metadata entry " + std::to_string(k) + ": ";
    std::string key = in.string("its key", kMostNameBytes);
    in.context = "metadata " + in_quotes(key) + ": ";
    uint32_t type = in.u32("its value type");
    check_value_type(in, type, "its value type");
    CheckpointValue value = read_value(in, type);
    if (!part.metadata.emplace(key, std::move(value)).second) {
      throw InputError("metadata key " + in_quotes(key) + " appears twice");
    }
  }
  in.context.clear();
  auto alignment = part.metadata.find("general.alignment");
  if (alignment != part.metadata.end()) {
    if (alignment->second.type_name != "uint32") {
      throw InputError("general.alignment is a " + alignment->second.type_name + ", not a uint32");
    }
    uint64_t a = alignment->second.u;
    if (a == 0 || (a & (a - 1)) != 0) {
      throw InputError("general.alignment is " + std::to_string(a) + ": it must be a nonzero power of two");
    }
    part.alignment = a;
  }
}

std::string shape_text(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t d = ne.size(); d-- > 0;) s += std::to_string(ne[d]) + (d ? ", " : "");
  return s + "]";
}

// One tensor info: its name, dims, type and offset (relative to the data section until the
// section's start is known), with its element and byte counts checked.
CheckpointTensor read_tensor_info(GgufFile& in, uint64_t index) {
  CheckpointTensor t;
  in.context = "tensor info " + std::to_string(index) + ": ";
  t.name = in.string("its name", kMostNameBytes);
  in.context = "tensor " + in_quotes(t.name) + ": ";
  uint32_t dims = in.u32("its dimension count");
  if (dims > kMostDims) {
    throw InputError("tensor " + in_quotes(t.name) + " has " + std::to_string(dims) + " dimensions (at most " +
                     std::to_string(kMostDims) + " are read; ggml has 4)");
  }
  std::vector<uint64_t> ne(dims);
  for (auto& n : ne) n = in.u64("its dimensions");
  uint32_t type_id = in.u32("its type");
  t.offset = in.u64("its offset");
  in.context.clear();

  const GgmlType* type = ggml_type(type_id);
  if (!type) {
    const char* removed = removed_ggml_type(type_id);
    throw InputError("tensor " + in_quotes(t.name) + " has ggml type " + std::to_string(type_id) +
                     (removed ? std::string(" (") + removed + ", removed from ggml)"
                              : std::string(", which this reader does not know")));
  }
  t.dtype = type->name;
  bool empty = std::find(ne.begin(), ne.end(), 0) != ne.end();
  uint64_t elements = 1;
  for (uint64_t n : ne) {
    if (n > static_cast<uint64_t>(INT64_MAX) || (!empty && (mul_overflows(elements, n, &elements) ||
                                                            elements > static_cast<uint64_t>(INT64_MAX)))) {
      throw InputError("tensor " + in_quotes(t.name) + ": the element count of its shape " + shape_text(ne) +
                       " overflows 63 bits");
    }
  }
  t.elements = empty ? 0 : elements;
  uint64_t row = ne.empty() ? 1 : ne[0];
  if (row % type->block_elements != 0) {
    // Rows that are not whole blocks: counted when the blocks are packed across the whole tensor
    // (a GGUF v2 Q8_0 ffn_down of rows of 172 elements, 11,008 in 344 blocks), with a finding.
    if (t.elements % type->block_elements != 0) {
      throw InputError("tensor " + in_quotes(t.name) + " (" + type->name + "): its " + std::to_string(t.elements) +
                       " elements, in rows of " + std::to_string(row) + ", are not a multiple of the type's block of " +
                       std::to_string(type->block_elements));
    }
    t.partial_rows = true;
  }
  if (mul_overflows(t.elements / type->block_elements, type->block_bytes, &t.bytes)) {
    throw InputError("tensor " + in_quotes(t.name) + ": its size in bytes overflows 64 bits");
  }
  for (size_t d = ne.size(); d-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[d]));
  return t;
}

// Places each tensor in the file: its offset aligned, its bytes inside the file, no two overlapping.
void place_tensors(GgufPart& part, uint64_t data_start) {
  std::vector<const CheckpointTensor*> stored;
  for (auto& t : part.tensors) {
    if (t.offset % part.alignment != 0) {
      throw InputError("tensor " + in_quotes(t.name) + ": offset " + std::to_string(t.offset) +
                       " is not a multiple of the alignment " + std::to_string(part.alignment));
    }
    uint64_t start = 0, end = 0;
    if (add_overflows(data_start, t.offset, &start) || add_overflows(start, t.bytes, &end) || end > part.size) {
      throw InputError("tensor " + in_quotes(t.name) + ": its " + std::to_string(t.bytes) + " bytes at offset " +
                       std::to_string(t.offset) + " of the data section (byte " + std::to_string(data_start) +
                       ") lie past the end of the file (" + std::to_string(part.size) + " bytes)");
    }
    t.offset = start;
    if (t.bytes > 0) stored.push_back(&t);
  }
  std::sort(stored.begin(), stored.end(), [](const CheckpointTensor* a, const CheckpointTensor* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->bytes < b->bytes;
  });
  for (size_t k = 1; k < stored.size(); ++k) {
    const CheckpointTensor& a = *stored[k - 1];
    const CheckpointTensor& b = *stored[k];
    if (b.offset < a.offset + a.bytes) {
      throw InputError("tensors " + in_quotes(a.name) + " and " + in_quotes(b.name) + " overlap: bytes [" +
                       std::to_string(a.offset) + ", " + std::to_string(a.offset + a.bytes) + ") and [" +
                       std::to_string(b.offset) + ", " + std::to_string(b.offset + b.bytes) + ")");
    }
  }
}

GgufPart read_part(const ByteSource& source) {
  GgufFile in(source);
  GgufPart part;
  part.size = in.size();
  part.identity = in.identity();
  part.version = read_version(in);
  part.big_endian = in.big_endian;
  uint64_t tensors = in.u64("the tensor count");
  read_metadata(in, part);
  if (tensors > in.left() / kMinTensorInfo) {
    throw InputError("the header states " + std::to_string(tensors) + " tensors, but the " +
                     std::to_string(in.left()) + " bytes left in the file hold at most " +
                     std::to_string(in.left() / kMinTensorInfo) + " tensor infos");
  }
  // A record takes several times the bytes of its info: grown as infos are read, not from the count.
  part.tensors.reserve(static_cast<size_t>(std::min(tensors, kFirstReserve)));
  std::unordered_set<std::string> names;
  for (uint64_t k = 0; k < tensors; ++k) {
    part.tensors.push_back(read_tensor_info(in, k));
    if (!names.insert(part.tensors.back().name).second) {
      throw InputError("tensor " + in_quotes(part.tensors.back().name) + " appears twice");
    }
  }
  uint64_t data_start = (in.at() + part.alignment - 1) / part.alignment * part.alignment;
  place_tensors(part, data_start);
  return part;
}

// A split file's name: PREFIX-0000N-of-0000M.gguf.
struct SplitName {
  std::string prefix;
  int part = 0, count = 0;
};

std::optional<SplitName> split_name(const std::string& file) {
  static const std::string kTail = ".gguf";
  constexpr size_t kNumbers = 1 + 5 + 4 + 5;  // -NNNNN-of-MMMMM
  if (file.size() < kNumbers + kTail.size() || file.compare(file.size() - kTail.size(), kTail.size(), kTail) != 0) {
    return std::nullopt;
  }
  size_t at = file.size() - kTail.size() - kNumbers;
  auto digits = [&](size_t from) {
    int n = 0;
    for (size_t k = from; k < from + 5; ++k) {
      if (file[k] < '0' || file[k] > '9') return -1;
      n = n * 10 + (file[k] - '0');
    }
    return n;
  };
  if (file[at] != '-' || file.compare(at + 6, 4, "-of-") != 0) return std::nullopt;
  SplitName s{file.substr(0, at), digits(at + 1), digits(at + 10)};
  if (s.part < 0 || s.count < 0) return std::nullopt;
  return s;
}

std::string part_file(const SplitName& s, int part) {
  char numbers[32];
  std::snprintf(numbers, sizeof numbers, "-%05d-of-%05d.gguf", part, s.count);
  return s.prefix + numbers;
}

// An integer metadata value (split.count, split.no), or nothing when the key is absent.
std::optional<int64_t> integer_key(const std::map<std::string, CheckpointValue>& metadata, const char* key) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return std::nullopt;
  const CheckpointValue& v = it->second;
  if (v.type == CheckpointValue::Type::Signed) return v.i;
  if (v.type == CheckpointValue::Type::Unsigned && v.u <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v.u);
  }
  throw InputError(std::string(key) + " is a " + v.type_name + ", not an integer");
}

// Part `index` (from 1) of a split file of `count` parts: its split keys, when present, must agree.
void check_split_keys(const GgufPart& part, int index, int count) {
  if (auto c = integer_key(part.metadata, "split.count"); c && *c != count) {
    throw InputError("split.count is " + std::to_string(*c) + " but the file name says " + std::to_string(count) +
                     " parts");
  }
  if (auto no = integer_key(part.metadata, "split.no"); no && *no != index - 1) {
    throw InputError("split.no is " + std::to_string(*no) + " but the file name says part " + std::to_string(index) +
                     " (split.no " + std::to_string(index - 1) + ", counting from 0)");
  }
}

// The parts of a split file, `file` the one named, each opened through `folder` in order.
Checkpoint read_split(const SourceFolder& folder, const std::string& file, const SplitName& split) {
  if (split.count == 0 || split.part == 0 || split.part > split.count) {
    throw InputError("the file name says part " + std::to_string(split.part) + " of " + std::to_string(split.count));
  }
  Checkpoint c;
  c.kind = FormatKind::Gguf;
  c.format = "gguf";
  std::unordered_set<std::string> names;
  std::map<std::pair<uint64_t, uint64_t>, int> files;  // (device, inode) -> the part read from it
  for (int k = 1; k <= split.count; ++k) {
    const std::string name = part_file(split, k);
    std::unique_ptr<ByteSource> source;
    GgufPart part;
    try {
      if (k != split.part) {
        if (!folder.exists(name)) {
          throw InputError("is missing (" + file + " is part " + std::to_string(split.part) + " of " +
                           std::to_string(split.count) + ")");
        }
        // The other parts are read only inside the named part's folder, not through a symlink out.
        if (!folder.holds(name)) throw InputError("resolves outside the folder of " + file);
      }
      source = folder.open(name, "is a directory, not a GGUF file");
      part = read_part(*source);
      // A symlink or a hard link to an earlier part: its tensors are not counted twice. (A source
      // that is not a local file has no identity: its parts are told apart by their names.)
      if (part.identity.known) {
        auto [it, fresh] = files.try_emplace({part.identity.device, part.identity.inode}, static_cast<int>(c.files.size()));
        if (!fresh) {
          throw InputError("is the same file as split part " + part_file(split, it->second + 1) + ": one file under two names");
        }
      }
      check_split_keys(part, k, split.count);
    } catch (const InputError& e) {
      if (k == split.part) throw;
      throw InputError("split part " + name + ": " + e.what());
    }
    const int index = static_cast<int>(c.files.size());
    for (auto& t : part.tensors) {
      if (!names.insert(t.name).second) {
        throw InputError("tensor " + in_quotes(t.name) + " appears twice (again in split part " + name + ")");
      }
      t.file = index;
      c.tensors.push_back(std::move(t));
    }
    c.files.push_back(source->name());
    c.file_sizes.push_back(part.size);
    c.file_ids.push_back(part.identity);
    if (k > 1 && part.big_endian != c.big_endian) {
      throw InputError("split part " + name + " is " + (part.big_endian ? "big" : "little") + "-endian, part 1 " +
                       (c.big_endian ? "big" : "little") + "-endian");
    }
    if (k == 1) {
      c.big_endian = part.big_endian;
      c.gguf_version = part.version;
      c.alignment = part.alignment;
      c.metadata = std::move(part.metadata);
    }
  }
  if (auto total = integer_key(c.metadata, "split.tensors.count");
      total && *total != static_cast<int64_t>(c.tensors.size())) {
    throw InputError("split.tensors.count is " + std::to_string(*total) + " but the " + std::to_string(split.count) +
                     " parts hold " + std::to_string(c.tensors.size()) + " tensors");
  }
  return c;
}

}  // namespace


Checkpoint read_gguf(const SourceFolder& folder, const std::string& name) {
  if (auto split = split_name(name)) return read_split(folder, name, *split);
  return read_gguf(*folder.open(name, "is a directory, not a GGUF file"));
}

Checkpoint read_gguf(const std::string& path) {
  const std::filesystem::path named(path);
  // A split file's parts are found in its folder, by their names: "NAME-00002-of-00003.gguf"
  // beside "NAME-00001-of-00003.gguf" (no folder when the path names none).
  if (split_name(named.filename().string())) return read_gguf(LocalFolder(named.parent_path()), named.filename().string());
  return read_gguf(FileSource(path, "is a directory, not a GGUF file"));
}

Checkpoint read_gguf(const ByteSource& file) {
  GgufPart part = read_part(file);
  if (auto count = integer_key(part.metadata, "split.count"); count && *count > 1) {
    throw InputError("split.count is " + std::to_string(*count) +
                     ", but the file name does not say which part this is (a split file is named "
                     "NAME-00001-of-" + std::string(5 - std::min<size_t>(5, std::to_string(*count).size()), '0') +
                     std::to_string(*count) + ".gguf)");
  }
  Checkpoint c;
  c.kind = FormatKind::Gguf;
  c.format = "gguf";
  c.files = {file.name()};
  c.file_sizes = {part.size};
  c.file_ids = {part.identity};
  c.gguf_version = part.version;
  c.big_endian = part.big_endian;
  c.alignment = part.alignment;
  c.metadata = std::move(part.metadata);
  c.tensors = std::move(part.tensors);
  return c;
}

}  // namespace headcount
