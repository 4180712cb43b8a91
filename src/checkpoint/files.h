// checkpoint/files.h: a checkpoint file opened for reads at offsets the reader has checked.
#pragma once

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>

#include "headcount/error.h"

namespace headcount::checkpoint {

// Whether `path` resolves (through symlinks) to a place inside `folder`: a file a checkpoint names
// (a shard, a split part) is read only there.
inline bool inside_folder(const std::filesystem::path& folder, const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path root = std::filesystem::weakly_canonical(std::filesystem::absolute(folder, ec), ec);
  if (ec) return false;
  std::filesystem::path target = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return false;
  auto [r, t] = std::mismatch(root.begin(), root.end(), target.begin(), target.end());
  return r == root.end();
}

class File {
 public:
  explicit File(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw InputError("cannot open: " + std::string(std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) throw InputError("not a regular file");
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) throw InputError("cannot open: " + std::string(std::strerror(errno)));
    size_ = static_cast<uint64_t>(st.st_size);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (f_) std::fclose(f_);
  }
  uint64_t size() const { return size_; }
  // Reads n bytes at offset; the caller has checked that they lie inside the file.
  void read(uint64_t offset, void* out, uint64_t n) {
    if (offset > size_ || n > size_ - offset) throw InputError("truncated: a read past the end of the file");
    if (fseeko(f_, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fread(out, 1, n, f_) != n) {
      throw InputError("cannot read " + std::to_string(n) + " bytes at offset " + std::to_string(offset));
    }
  }

 private:
  std::FILE* f_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace headcount::checkpoint
