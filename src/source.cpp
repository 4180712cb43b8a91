// source.cpp: the byte sources under every reader (source.h).
#include "source.h"

#include <cstring>

#include "headcount/error.h"

namespace headcount {
namespace {

// A folder as resolve_inside (paths.h) takes it: absolute and canonical; empty when it cannot be
// resolved. Computed once for all the files a model names beside it.
std::filesystem::path folder_root(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::path root = std::filesystem::weakly_canonical(std::filesystem::absolute(folder, ec), ec);
  return ec ? std::filesystem::path() : root;
}

}  // namespace

void MemorySource::read(uint64_t offset, uint64_t length, void* out) const {
  if (offset > size_ || length > size_ - offset) throw InputError("truncated: a read past the end of the file");
  if (length > 0) std::memcpy(out, data_ + offset, static_cast<size_t>(length));
}

LocalFolder::LocalFolder(std::filesystem::path folder)
    : folder_(std::move(folder)), root_(folder_root(folder_.empty() ? std::filesystem::path(".") : folder_)) {}

// Whether `name` resolves inside the folder, proven as an ONNX model's external data is: nothing
// outside it is touched.
bool LocalFolder::holds(const std::string& name) const {
  if (root_.empty()) return false;
  std::string why;
  resolve_inside(root_.native(), name, &why);
  return why.empty();
}

bool LocalFolder::exists(const std::string& name) const {
  std::error_code ec;
  return std::filesystem::exists(folder_ / name, ec);
}

std::unique_ptr<ByteSource> LocalFolder::open(const std::string& name, const char* directory) const {
  return std::make_unique<FileSource>((folder_ / name).string(), directory);
}

std::unique_ptr<ByteSource> MemoryFolder::open(const std::string& name, const char*) const {
  auto it = files.find(name);
  if (it == files.end()) throw InputError("cannot open: No such file or directory");
  return std::make_unique<MemorySource>(it->second.data(), it->second.size(), name);
}

}  // namespace headcount
