// paths.h: opening the files headcount reads (internal): the one opener every reader uses, which
// never blocks on a FIFO and reads only regular files; and proving that a path a file names stays
// inside a folder.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "headcount/file_identity.h"

namespace headcount {

// A file open for reading, proven a regular file before a byte of it is read. The open uses
// O_NONBLOCK, so that a FIFO with no writer (or a symlink to one) returns at once instead of
// hanging the audit; the descriptor's own fstat, not the name's, decides; then O_NONBLOCK is
// cleared. Every reader opens through it: a model, its external data, a checkpoint, a shard, an
// index, a split part, a config, a baseline.
class RegularFile {
 public:
  // Throws InputError: "cannot open: <reason>", "is a FIFO, not a regular file" (a socket, a
  // device ...), and for a directory `directory` ("is a directory" when not given).
  explicit RegularFile(const std::string& path, const char* directory = nullptr);
  RegularFile(RegularFile&& o) noexcept : fd_(o.fd_), id_(o.id_) { o.fd_ = -1; }
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  RegularFile& operator=(RegularFile&&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return id_.size; }
  const FileIdentity& identity() const { return id_; }
  // Hands the descriptor to the caller, who closes it.
  int release();
  // n bytes at `offset`: InputError past the size found at the open, or on a short read (a file
  // that shrank since).
  void read(uint64_t offset, void* out, uint64_t n) const;
  // The whole file (its size as opened): the caller has checked that size against its bound.
  std::string read_all() const;

 private:
  int fd_ = -1;
  FileIdentity id_;
};

// The whole of a file the user named on the command line (`what`: "config", "baseline"), opened
// as every file is (a FIFO is refused, not waited on). Throws InputError "cannot read WHAT 'PATH'",
// followed by ": it <reason>" unless the reason is that it cannot be opened.
std::string read_named_file(const std::string& path, const std::string& what);

// Opens `path` again for reading, through the same checks, when it is still the file `expected`
// names (same device, inode and size, when known); -1 otherwise (missing, replaced, a FIFO now,
// grown or shrunk): what was read of it before may not be compared with what is there now.
int reopen_regular(const std::string& path, const FileIdentity& expected);

// Resolves `location` (relative, '/' or '\\' separated) below the folder `root` (already
// canonical) without touching anything outside it: only paths inside the folder are lstat'ed, and
// symlinks are followed by reading them. Returns the resolved path, or sets `why` (what is wrong
// with the location: "is an absolute path", "contains '..'", "resolves through a symlink outside
// the model's folder" ...) and returns an empty path. One pass over the components: a location of
// 16,000 components costs 16,000 steps, not 16,000 rebuilt paths.
std::filesystem::path resolve_inside(const std::string& root, const std::string& location, std::string* why);

// `location` as a '/'-separated path below its folder, checked as resolve_inside checks it but
// without touching a file (a folder that is not on this machine: a remote repo's): "." and empty
// components dropped; "" with `why` set when it is absolute, holds '..' or a NUL, or names no file.
std::string relative_inside(const std::string& location, std::string* why);

// Whether `s` ends with `tail` (a file's extension: ".gguf", ".safetensors.index.json").
inline bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// `s` with every byte outside RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~) written as
// %XX, and '/' kept when `keep_slashes`: a path in a URI (SARIF's artifact locations), or one
// segment of a URL, where '/' cannot add a segment and '%' is itself escaped.
std::string percent_encoded(const std::string& s, bool keep_slashes);

}  // namespace headcount
