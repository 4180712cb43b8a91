// gguf_writer.h: GGUF files written byte by byte for the reader's tests, as llama.cpp's gguf-py
// lays them out: header, key/value pairs, tensor infos, padding to the alignment, tensor data.
//
// The data section is left as a hole (the file is extended with resize_file), so a checkpoint of
// real dimensions costs no disk space and no time. Every field can also be written by hand
// (`kv_raw`, `info_raw`, the stated counts) to make the hostile files of the tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "headcount/checkpoint.h"

namespace gguf_test {

// GGUF's value types (gguf_type).
enum ValueType : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };
// ggml types the tests use, by number (ggml.h).
enum GgmlId : uint32_t { kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kBF16 = 30, kMXFP4 = 39 };

// The byte order every put_* writes numbers in: little-endian, unless a BigEndian guard lives
// (llama.cpp's gguf-convert-endian twin for big-endian hosts, every number byte-swapped). A
// writer's fields are put as they are added and its header() when written: the guard must span both.
inline bool& big_endian_output() {
  static bool big = false;
  return big;
}
struct BigEndian {
  BigEndian() { big_endian_output() = true; }
  ~BigEndian() { big_endian_output() = false; }
  BigEndian(const BigEndian&) = delete;
  BigEndian& operator=(const BigEndian&) = delete;
};
inline void put_n(std::string& s, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) {
    const int shift = 8 * (big_endian_output() ? bytes - 1 - k : k);
    s.push_back(static_cast<char>(v >> shift));
  }
}
inline void put_u8(std::string& s, uint8_t v) { s.push_back(static_cast<char>(v)); }
inline void put_u16(std::string& s, uint16_t v) { put_n(s, v, 2); }
inline void put_u32(std::string& s, uint32_t v) { put_n(s, v, 4); }
inline void put_u64(std::string& s, uint64_t v) { put_n(s, v, 8); }
inline void put_str(std::string& s, const std::string& v) {
  put_u64(s, v.size());
  s += v;
}

struct GgufWriter {
  uint32_t version = 3;
  uint64_t alignment = 32;  // where the data section and the automatic offsets align
  std::string kvs, infos;
  uint64_t kv_count = 0, tensor_count = 0;
  std::optional<uint64_t> stated_kv_count, stated_tensor_count;  // a header that lies
  uint64_t data_size = 0;  // the data section: every tensor placed so far

  GgufWriter& key(const std::string& k, uint32_t type) {
    put_str(kvs, k);
    put_u32(kvs, type);
    ++kv_count;
    return *this;
  }
  GgufWriter& u32(const std::string& k, uint32_t v) {
    key(k, U32);
    put_u32(kvs, v);
    return *this;
  }
  GgufWriter& u64(const std::string& k, uint64_t v) {
    key(k, U64);
    put_u64(kvs, v);
    return *this;
  }
  GgufWriter& u16(const std::string& k, uint16_t v) {
    key(k, U16);
    put_u16(kvs, v);
    return *this;
  }
  GgufWriter& i32(const std::string& k, int32_t v) {
    key(k, I32);
    put_u32(kvs, static_cast<uint32_t>(v));
    return *this;
  }
  GgufWriter& f32(const std::string& k, float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    key(k, F32);
    put_u32(kvs, bits);
    return *this;
  }
  GgufWriter& str(const std::string& k, const std::string& v) {
    key(k, STRING);
    put_str(kvs, v);
    return *this;
  }
  GgufWriter& boolean(const std::string& k, bool v) {
    key(k, BOOL);
    put_u8(kvs, v ? 1 : 0);
    return *this;
  }
  GgufWriter& array_i32(const std::string& k, const std::vector<int32_t>& v) {
    key(k, ARRAY);
    put_u32(kvs, I32);
    put_u64(kvs, v.size());
    for (int32_t x : v) put_u32(kvs, static_cast<uint32_t>(x));
    return *this;
  }
  GgufWriter& array_f32(const std::string& k, const std::vector<float>& v) {
    key(k, ARRAY);
    put_u32(kvs, F32);
    put_u64(kvs, v.size());
    for (float x : v) {
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      put_u32(kvs, bits);
    }
    return *this;
  }
  GgufWriter& array_str(const std::string& k, const std::vector<std::string>& v) {
    key(k, ARRAY);
    put_u32(kvs, STRING);
    put_u64(kvs, v.size());
    for (const auto& x : v) put_str(kvs, x);
    return *this;
  }
  // general.alignment, and the layout that follows it.
  GgufWriter& align(uint32_t a) {
    alignment = a;
    return u32("general.alignment", a);
  }
  // Raw bytes of one or more pairs, counted as `count`.
  GgufWriter& kv_raw(const std::string& bytes, uint64_t count = 1) {
    kvs += bytes;
    kv_count += count;
    return *this;
  }

  // A tensor with GGUF's ne (innermost first). Without `offset` it goes after the previous one at
  // the alignment, its size from the reader's own type table (the tests assert sizes by hand).
  GgufWriter& tensor(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type,
                     std::optional<uint64_t> offset = std::nullopt) {
    uint64_t bytes = 0;
    if (const auto* t = headcount::ggml_type(type)) {
      uint64_t elements = 1;
      for (uint64_t n : ne) elements *= n;
      bytes = elements / t->block_elements * t->block_bytes;
    }
    uint64_t at = offset ? *offset : (data_size + alignment - 1) / alignment * alignment;
    put_str(infos, name);
    put_u32(infos, static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) put_u64(infos, n);
    put_u32(infos, type);
    put_u64(infos, at);
    ++tensor_count;
    if (at + bytes > data_size) data_size = at + bytes;
    return *this;
  }
  GgufWriter& info_raw(const std::string& bytes, uint64_t count = 1) {
    infos += bytes;
    tensor_count += count;
    return *this;
  }

  std::string header() const {
    std::string s = "GGUF";
    put_u32(s, version);
    put_u64(s, stated_tensor_count.value_or(tensor_count));
    put_u64(s, stated_kv_count.value_or(kv_count));
    s += kvs;
    s += infos;
    s.resize((s.size() + alignment - 1) / alignment * alignment, '\0');
    return s;
  }
  uint64_t file_size() const { return header().size() + data_size; }

  // Writes the file: the header, then the data section as a hole up to `size` (the whole layout
  // unless stated).
  void write(const std::string& path, std::optional<uint64_t> size = std::nullopt) const {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << header();
    }
    std::filesystem::resize_file(path, size.value_or(file_size()));
  }
};

}  // namespace gguf_test
