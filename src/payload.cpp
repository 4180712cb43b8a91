// payload.cpp: reading tensor bytes in bounded chunks, and decoding them element by element.
#include "payload.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "paths.h"

namespace headcount {

namespace {
thread_local uint64_t reads_made = 0;
}  // namespace

uint64_t payload_reads_on_this_thread() { return reads_made; }

ssize_t read_at(int fd, char* out, size_t n, uint64_t offset) {
  ++reads_made;
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return static_cast<ssize_t>(done);
}

namespace {
// This thread's free blocks of kScratchSize bytes: two, as a model's read and its content
// comparison each hold one. A fixed array: giving a block back never allocates.
constexpr size_t kScratchKept = 2;
struct ScratchCache {
  std::unique_ptr<char[]> free[kScratchKept];
  size_t count = 0;
};
thread_local ScratchCache scratch_cache;
}  // namespace

ScratchBlock::ScratchBlock(size_t size) : cached_(size <= kScratchSize) {
  ScratchCache& cache = scratch_cache;
  if (cached_ && cache.count > 0) {
    data_ = std::move(cache.free[--cache.count]);
  } else {
    data_.reset(new char[cached_ ? kScratchSize : size]);
  }
}

ScratchBlock::~ScratchBlock() {
  ScratchCache& cache = scratch_cache;
  if (cached_ && cache.count < kScratchKept) cache.free[cache.count++] = std::move(data_);
}

PayloadFiles::~PayloadFiles() {
  for (auto& [path, fd] : open_) {
    if (fd >= 0) ::close(fd);
  }
}

int PayloadFiles::fd(const PayloadFile& file, bool* owned) {
  *owned = false;
  auto it = open_.find(file.path);
  if (it != open_.end()) return it->second;
  int fd = reopen_regular(file.path, file.identity);
  if (open_.size() >= kKept) {
    *owned = true;
    return fd;
  }
  open_.emplace(file.path, fd);
  return fd;
}

PayloadReader::~PayloadReader() {
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
}

bool PayloadReader::open(const Weight& w, PayloadFiles* files) {
  w_ = &w;
  if (w.tensor && !w.tensor->raw_data.empty() && w.tensor->raw_data.size() == w.bytes) {
    inline_ = w.tensor->raw_data.data();
    return true;
  }
  if (!w.payload_known || w.payload_length != w.bytes) return false;
  if (w.payload_memory) return true;
  if (files) {
    fd_ = files->fd(*w.payload_file, &owns_fd_);
  } else {
    fd_ = reopen_regular(w.payload_file->path, w.payload_file->identity);
    owns_fd_ = true;
  }
  return fd_ >= 0;
}

bool PayloadReader::hold(uint64_t max_bytes) {
  if (inline_ || !w_ || w_->payload_memory || w_->bytes > max_bytes) return true;
  std::vector<char> bytes(static_cast<size_t>(w_->bytes));
  if (!read(0, bytes.size(), bytes.data())) return false;
  held_ = std::move(bytes);
  inline_ = held_.data();
  return true;
}

bool ReadWindow::read(const PayloadFile* file, int fd, uint64_t offset, size_t n, char* out) {
  uint64_t end = 0;
  if (file != file_ || offset < start_ || add_overflows(offset, n, &end) || end > start_ + filled_) {
    if (n > kSize) return false;
    const bool close = file == file_ && offset > last_miss_ && offset - last_miss_ <= kClose;
    const size_t size = close ? kSize : std::max<size_t>(n, 4096);
    last_miss_ = offset;
    if (!buf_) buf_.emplace(kSize);
    ssize_t got = read_at(fd, buf_->get(), size, offset);
    file_ = nullptr;
    if (got < static_cast<ssize_t>(n)) return false;
    file_ = file;
    start_ = offset;
    filled_ = static_cast<size_t>(got);
  }
  std::memcpy(out, buf_->get() + (offset - start_), n);
  return true;
}

bool PayloadReader::read(uint64_t at, size_t n, char* out, ReadWindow& window) const {
  uint64_t end = 0;
  if (inline_ || w_->payload_memory || add_overflows(at, n, &end) || end > w_->bytes) return read(at, n, out);
  return window.read(w_->payload_file, fd_, w_->payload_offset + at, n, out);
}

bool PayloadReader::read(uint64_t at, size_t n, char* out) const {
  uint64_t end = 0;
  if (add_overflows(at, n, &end) || end > w_->bytes) return false;
  if (inline_) {
    std::memcpy(out, inline_ + at, n);
    return true;
  }
  if (w_->payload_memory) {
    std::memcpy(out, w_->payload_memory + at, n);
    return true;
  }
  return read_at(fd_, out, n, w_->payload_offset + at) == static_cast<ssize_t>(n);
}

int significand_bits(int32_t dtype) {
  using T = onnx::TensorProto;
  switch (dtype) {
    case T::FLOAT: return 23;
    case T::FLOAT16: return 10;
    case T::BFLOAT16: return 7;
    case T::DOUBLE: return 52;
    default: return 0;
  }
}

void decode_floats(int32_t dtype, const char* p, size_t n, double* out) {
  using T = onnx::TensorProto;
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case T::FLOAT: { float f; std::memcpy(&f, p + 4 * i, 4); out[i] = f; break; }
      case T::FLOAT16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); out[i] = half_to_double(h); break; }
      case T::BFLOAT16: {  // the upper half of a float32
        uint16_t h; std::memcpy(&h, p + 2 * i, 2);
        uint32_t bits = static_cast<uint32_t>(h) << 16;
        float f; std::memcpy(&f, &bits, 4); out[i] = f;
        break;
      }
      default: std::memcpy(&out[i], p + 8 * i, 8); break;
    }
  }
}

double round_to(int32_t dtype, double v) {
  using T = onnx::TensorProto;
  if (std::isnan(v) || dtype == T::DOUBLE) return v;
  const float f = static_cast<float>(v);  // to nearest, ties to even (the default rounding mode)
  if (dtype == T::FLOAT) return f;
  if (dtype == T::BFLOAT16) {
    uint32_t bits; std::memcpy(&bits, &f, 4);
    bits += 0x7FFFu + ((bits >> 16) & 1u);  // to nearest even in the upper half
    bits &= 0xFFFF0000u;
    float r; std::memcpy(&r, &bits, 4);
    return r;
  }
  if (dtype == T::FLOAT16) {
    // float16 has 10 significand bits and exponents from -14 (below: subnormals in steps of
    // 2^-24); past 65,504 a value rounds to infinity.
    const double a = std::fabs(v);
    if (std::isinf(a) || a >= 65520.0) return std::copysign(INFINITY, v);
    int e = 0;
    std::frexp(a, &e);  // a = m · 2^e, m in [0.5, 1)
    const int step = std::max(e - 11, -24);  // the spacing of float16 values near a is 2^step
    const double q = std::nearbyint(std::ldexp(a, -step));  // ties to even in the default mode
    return std::copysign(std::ldexp(q, step), v);
  }
  return v;
}

namespace {
thread_local PayloadScope* current_scope = nullptr;
constexpr size_t kWindowedRead = 16u << 10;  // larger reads go to the file directly
}  // namespace

PayloadScope::PayloadScope() : outer_(current_scope) { current_scope = this; }
PayloadScope::~PayloadScope() { current_scope = outer_; }
PayloadScope* PayloadScope::current() { return current_scope; }

bool for_each_value(const Weight& w, const std::function<bool(uint64_t, double)>& visit, bool integers) {
  using T = onnx::TensorProto;
  size_t es = 0;
  switch (w.dtype) {
    case T::INT32: es = integers ? 4 : 0; break;
    case T::INT64: es = integers ? 8 : 0; break;
    case T::FLOAT: es = 4; break;
    case T::FLOAT16: case T::BFLOAT16: es = 2; break;
    case T::DOUBLE: es = 8; break;
    case T::INT8: case T::UINT8: case T::BOOL: es = 1; break;
    default: return false;
  }
  if (es == 0) return false;
  PayloadReader r;
  PayloadScope* scope = PayloadScope::current();
  if (w.sparse || w.packed || !r.open(w, scope ? &scope->files : nullptr)) return false;
  // The elements in `n` bytes at `p`, from element `index` on.
  auto visit_bytes = [&](const char* p, size_t n, uint64_t& index) {
    for (size_t i = 0; i + es <= n; i += es, ++index) {
      double v = 0;
      switch (w.dtype) {
        case T::FLOAT: { float f; std::memcpy(&f, p + i, 4); v = f; break; }
        case T::FLOAT16: case T::BFLOAT16: case T::DOUBLE: decode_floats(w.dtype, p + i, 1, &v); break;
        case T::INT8: v = static_cast<int8_t>(p[i]); break;
        case T::INT32: { int32_t x; std::memcpy(&x, p + i, 4); v = x; break; }
        case T::INT64: { int64_t x; std::memcpy(&x, p + i, 8); v = static_cast<double>(x); break; }
        default: v = static_cast<uint8_t>(p[i]); break;
      }
      if (!visit(index, v)) return false;
    }
    return true;
  };
  // The first elements as the loader saw them skipping the payload (TensorRec::head): a check
  // that decides on them reads nothing, and the read after them starts past them.
  uint64_t index = 0, from = 0;
  const TensorRec* t = w.tensor;
  if (t && t->head_size >= es && w.storage == Storage::Embedded && !w.external && t->raw_offset >= 0 &&
      w.payload_offset == static_cast<uint64_t>(t->raw_offset) && w.payload_length == t->raw_length) {
    char head[sizeof t->head];
    std::memcpy(head, &t->head, sizeof head);
    from = std::min<uint64_t>(t->head_size / es * es, w.bytes);
    if (!visit_bytes(head, static_cast<size_t>(from), index)) return false;
  }
  std::vector<char> buf(static_cast<size_t>(std::min<uint64_t>(kPayloadChunk, w.bytes - from)));  // no bigger than the tensor
  for (uint64_t at = from; at < w.bytes; at += kPayloadChunk) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kPayloadChunk, w.bytes - at));
    // A small tensor through the scope's window: its neighbours in the file come in the same read.
    const bool windowed = scope && n <= kWindowedRead;
    if (!(windowed ? r.read(at, n, buf.data(), scope->window) : r.read(at, n, buf.data()))) return false;
    if (!visit_bytes(buf.data(), n, index)) return false;
  }
  return true;
}

}  // namespace headcount
