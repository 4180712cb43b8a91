// payload.h: reading a tensor's bytes from the model file, an external data file or the
// skeleton, in bounded chunks (internal; used by the content comparison and buffer classification).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>

#include "headcount/model.h"

namespace headcount {

constexpr size_t kPayloadChunk = 1 << 20;  // bytes per read: memory stays flat whatever the tensor size

// The payload files of one model, each opened once however many tensors are read from it.
class PayloadFiles {
 public:
  PayloadFiles() = default;
  PayloadFiles(const PayloadFiles&) = delete;
  PayloadFiles& operator=(const PayloadFiles&) = delete;
  ~PayloadFiles();
  // An open descriptor for `path` (-1 when it cannot be opened), kept open for the next tensor.
  // Past kKept files (a hostile model may name thousands) it is a new one the caller closes:
  // *owned is then true.
  int fd(const std::string& path, bool* owned);

 private:
  static constexpr size_t kKept = 64;
  std::unordered_map<std::string, int> open_;
};

// Where a tensor's bytes can be read: from its file, or from a payload kept in the skeleton.
class PayloadReader {
 public:
  PayloadReader() = default;
  PayloadReader(const PayloadReader&) = delete;
  PayloadReader& operator=(const PayloadReader&) = delete;
  ~PayloadReader();
  // Prepares to read w's bytes; false when they are not available (stripped typed fields, a
  // missing or mismatched external file). With `files`, the file is opened through it and stays
  // open for the next tensor.
  bool open(const Weight& w, PayloadFiles* files = nullptr);
  // Reads `n` bytes at byte `at` of the tensor; false past its end or on a short read.
  bool read(uint64_t at, size_t n, char* out) const;

 private:
  const Weight* w_ = nullptr;
  const char* inline_ = nullptr;  // the kept payload, when the skeleton holds it
  int fd_ = -1;
  bool owns_fd_ = false;
};

// Calls visit(index, value) for every element of a float32/float16/float64/int8/uint8 tensor in
// order, reading in bounded chunks. True when every element was visited and accepted; false when
// visit returned false (it stops there), the payload cannot be read or the type is not one of those.
bool for_each_value(const Weight& w, const std::function<bool(uint64_t, double)>& visit);

}  // namespace headcount
