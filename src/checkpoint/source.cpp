// checkpoint/source.cpp: the byte sources under the checkpoint readers (source.h).
#include "checkpoint/source.h"

#include <cstring>

#include "checkpoint/files.h"
#include "headcount/error.h"

namespace headcount {

void MemorySource::read(uint64_t offset, uint64_t length, void* out) const {
  if (offset > size_ || length > size_ - offset) throw InputError("truncated: a read past the end of the file");
  if (length > 0) std::memcpy(out, data_ + offset, static_cast<size_t>(length));
}

LocalFolder::LocalFolder(std::filesystem::path folder)
    : folder_(std::move(folder)), root_(checkpoint::folder_root(folder_.empty() ? std::filesystem::path(".") : folder_)) {}

bool LocalFolder::holds(const std::string& name) const { return checkpoint::inside_root(root_, name); }

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
