// payload.h: reading a tensor's bytes from the model file, an external data file or the
// skeleton, in bounded chunks (internal; used by the content comparison and buffer classification).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "headcount/model.h"

namespace headcount {

constexpr size_t kPayloadChunk = 1 << 20;  // bytes per read: memory stays flat whatever the tensor size

// Reads up to n bytes at `offset` of fd into out, retrying interrupted reads, until n bytes or
// the end of the file. Returns the bytes read, or -1 on an error.
ssize_t read_at(int fd, char* out, size_t n, uint64_t offset);
// The calls of read_at this thread made (for tests: which checks cost a read).
uint64_t payload_reads_on_this_thread();

// A read block of up to kScratchSize bytes, taken from this thread's cache and given back to
// it: a folder of small models touches the block's pages once per thread, not once per model
// (a first touch of a page costs microseconds on a virtual machine). Larger sizes are plain
// allocations.
class ScratchBlock {
 public:
  static constexpr size_t kScratchSize = 256u << 10;
  explicit ScratchBlock(size_t size);
  ~ScratchBlock();
  ScratchBlock(const ScratchBlock&) = delete;
  ScratchBlock& operator=(const ScratchBlock&) = delete;
  char* get() const { return data_.get(); }

 private:
  std::unique_ptr<char[]> data_;  // not zeroed
  bool cached_;
};

// The payload files of one model, each opened once however many tensors are read from it.
class PayloadFiles {
 public:
  PayloadFiles() = default;
  PayloadFiles(const PayloadFiles&) = delete;
  PayloadFiles& operator=(const PayloadFiles&) = delete;
  ~PayloadFiles();
  // An open descriptor for `file` (-1 when it cannot be opened, or is no longer the file the
  // loader found: reopen_regular in paths.h), kept open for the next tensor. Past kKept files (a
  // hostile model may name thousands) it is a new one the caller closes: *owned is then true.
  int fd(const PayloadFile& file, bool* owned);

 private:
  static constexpr size_t kKept = 64;
  std::unordered_map<std::string, int> open_;
};

// A window onto the payload files for many small reads close together (one element of each of
// thousands of tensors, visited in file order): a read inside the window costs no system call.
// The window is large only while reads come close together (within kClose of the last read the
// window did not hold); farther apart, each reads a page, as a system call costs about as much as
// copying a few pages: reads 26 KB apart (a bias in each half of a small layer) read 4 KiB each,
// not 256 KiB windows that copy the weights between them.
class ReadWindow {
 public:
  // n bytes at `offset` of the file `file` names (open as fd); false on a short read.
  bool read(const PayloadFile* file, int fd, uint64_t offset, size_t n, char* out);

 private:
  static constexpr size_t kSize = ScratchBlock::kScratchSize;
  static constexpr uint64_t kClose = 8u << 10;
  std::optional<ScratchBlock> buf_;  // taken at the first read
  uint64_t last_miss_ = 0;  // where the last read outside the window began
  const PayloadFile* file_ = nullptr;  // the model's one record of the file (Weight::payload_file)
  uint64_t start_ = 0;
  size_t filled_ = 0;
};

// Where a tensor's bytes can be read: from its file, or from a payload kept in the skeleton.
class PayloadReader {
 public:
  PayloadReader() = default;
  PayloadReader(const PayloadReader&) = delete;
  PayloadReader& operator=(const PayloadReader&) = delete;
  ~PayloadReader();
  // Prepares to read w's bytes; false when they are not available (stripped typed fields, a
  // missing or mismatched external file, a file replaced since the loader read it). With `files`,
  // the file is opened through it and stays open for the next tensor.
  bool open(const Weight& w, PayloadFiles* files = nullptr);
  // Reads `n` bytes at byte `at` of the tensor; false past its end or on a short read.
  bool read(uint64_t at, size_t n, char* out) const;
  // The same, through `window` when the bytes are in a file.
  bool read(uint64_t at, size_t n, char* out, ReadWindow& window) const;
  // Reads the whole tensor into memory once when it is at most `max_bytes`, so many small reads
  // that follow cost no system call each; false when that read fails (nothing is held then).
  bool hold(uint64_t max_bytes);

 private:
  std::vector<char> held_;
  const Weight* w_ = nullptr;
  const char* inline_ = nullptr;  // the kept payload, when the skeleton holds it
  int fd_ = -1;
  bool owns_fd_ = false;
};

// The floating-point types whose values can be read and compared (float32, float16, bfloat16,
// float64): their significand bits (23, 10, 7, 52), 0 for any other type.
int significand_bits(int32_t dtype);
// n elements of such a type at p, as doubles (exact: each of them is a double).
void decode_floats(int32_t dtype, const char* p, size_t n, double* out);
// v as the type would store it (rounded to nearest, ties to even): a value compared "at the
// narrower type" of two is first rounded to it.
double round_to(int32_t dtype, double v);

// While one lives on a thread, for_each_value there opens each payload file once (its files) and
// reads small tensors close together in one read (its window), instead of opening the file and
// reading for each tensor: an audit classifies thousands of biases and norms by their values.
// Scopes nest; the innermost is used.
class PayloadScope {
 public:
  PayloadScope();
  ~PayloadScope();
  PayloadScope(const PayloadScope&) = delete;
  PayloadScope& operator=(const PayloadScope&) = delete;
  static PayloadScope* current();
  PayloadFiles files;
  ReadWindow window;

 private:
  PayloadScope* outer_;
};

// Calls visit(index, value) for every element of a float32/float16/bfloat16/float64/int8/uint8/bool tensor in
// order, reading in bounded chunks (int32 and int64 too with `integers`: the values a loader
// keeps in memory only while they are small). True when every element was visited and accepted;
// false when visit returned false (it stops there), the payload cannot be read or the type is not
// one of those.
bool for_each_value(const Weight& w, const std::function<bool(uint64_t, double)>& visit, bool integers = false);

}  // namespace headcount
