// checkpoint/files.h: a checkpoint file opened for reads at offsets the reader has checked.
#pragma once

#include <cerrno>
#include <filesystem>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>

#include "headcount/error.h"
#include "paths.h"

namespace headcount::checkpoint {

// Whether the file `name` of `folder` (a shard, a split part) resolves inside that folder, proven
// as an ONNX model's external data is (paths.h): nothing outside the folder is touched.
inline bool inside_folder(const std::filesystem::path& folder, const std::string& name) {
  std::error_code ec;
  std::filesystem::path root = std::filesystem::weakly_canonical(std::filesystem::absolute(folder, ec), ec);
  if (ec) return false;
  std::string why;
  resolve_inside(root.native(), name, &why);
  return why.empty();
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
