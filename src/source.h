// source.h: the bytes under every reader. A reader asks a ByteSource for `length` bytes at
// `offset` and never learns where they come from: a local file (FileSource, through the one opener
// of paths.h), a buffer in memory (MemorySource) or a remote file (remote.h). The files a model
// names beside its first (an index's shards, a split GGUF's parts) are opened through a
// SourceFolder the caller gives: a local folder proves each name stays inside it, as an ONNX
// model's external data is proven.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "headcount/file_identity.h"
#include "paths.h"

namespace headcount {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // `length` bytes at `offset` into `out`. Throws InputError for a read that ends past size()
  // ("truncated: a read past the end of the file"), or when the bytes cannot be had.
  virtual void read(uint64_t offset, uint64_t length, void* out) const = 0;
  // The name a report shows: a file's path as given.
  virtual const std::string& name() const = 0;
  // The file it read, when it is a local file (a later content comparison opens it again only
  // when it is still that file); not known otherwise.
  virtual FileIdentity identity() const { return {}; }
};

// A local file, opened through RegularFile (paths.h): a FIFO or a device is refused before a
// byte is read, and a read is one pread.
class FileSource : public ByteSource {
 public:
  // Throws InputError as RegularFile does; `directory` is what to say of a folder.
  explicit FileSource(const std::string& path, const char* directory = nullptr) : file_(path, directory), name_(path) {}
  uint64_t size() const override { return file_.size(); }
  void read(uint64_t offset, uint64_t length, void* out) const override { file_.read(offset, out, length); }
  const std::string& name() const override { return name_; }
  FileIdentity identity() const override { return file_.identity(); }

 private:
  RegularFile file_;
  std::string name_;
};

// Bytes in memory, which the caller keeps alive as long as the source.
class MemorySource : public ByteSource {
 public:
  MemorySource(const char* data, uint64_t size, std::string name) : data_(data), size_(size), name_(std::move(name)) {}
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, uint64_t length, void* out) const override;
  const std::string& name() const override { return name_; }

 private:
  const char* data_;
  uint64_t size_;
  std::string name_;
};

// Where the files a checkpoint names beside its first one are found, by the name the checkpoint
// gives (a plain file name: the readers refuse a name with a separator before they ask).
class SourceFolder {
 public:
  virtual ~SourceFolder() = default;
  // Whether `name` stays inside the folder (not through a symlink out of it).
  virtual bool holds(const std::string& name) const = 0;
  virtual bool exists(const std::string& name) const = 0;
  // Opens it; throws InputError as FileSource does (`directory`: what to say of a folder).
  virtual std::unique_ptr<ByteSource> open(const std::string& name, const char* directory) const = 0;
  // The sizes of the folder's files by '/'-separated path relative to it, when its host lists them
  // without a byte of them being read (a remote repo's tree); false when it gives no list.
  virtual bool list(std::map<std::string, uint64_t>* sizes) const {
    (void)sizes;
    return false;
  }
};

// A local folder: a file's name is `folder / name` (a path as the user gave it, "" for the current
// folder), and holds() proves it with resolve_inside (paths.h) below the folder's canonical root.
class LocalFolder : public SourceFolder {
 public:
  explicit LocalFolder(std::filesystem::path folder);
  bool holds(const std::string& name) const override;
  bool exists(const std::string& name) const override;
  std::unique_ptr<ByteSource> open(const std::string& name, const char* directory) const override;

 private:
  std::filesystem::path folder_, root_;
};

// Files held in memory by name (a test's folder; the files a remote reader fetched). Nothing is
// outside it: a name it does not hold cannot be opened, as a missing file.
class MemoryFolder : public SourceFolder {
 public:
  std::map<std::string, std::string> files;
  bool holds(const std::string&) const override { return true; }
  bool exists(const std::string& name) const override { return files.count(name) != 0; }
  std::unique_ptr<ByteSource> open(const std::string& name, const char* directory) const override;
};

}  // namespace headcount
