// source_test.cpp: the byte sources under the checkpoint readers (src/source.h): a
// memory buffer and a local file read inside, refuse a read past the end, and hold zero bytes
// when empty; a local folder proves names inside it; and the readers, through a source that
// counts, take the reads and bytes worked out by hand: two reads per safetensors file, one per
// 64 KiB of GGUF header, nothing for what the GGUF reader skips.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "checkpoint/readers.h"
#include "gguf_writer.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "test_util.h"

using namespace headcount;

using testutil::le64;

namespace {

std::string read_error(const ByteSource& s, uint64_t offset, uint64_t length) {
  std::string out(static_cast<size_t>(std::min<uint64_t>(length, 64)), '\0');
  try {
    s.read(offset, length, out.data());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// What every source read: how many reads, how many bytes.
struct Counts {
  uint64_t reads = 0, bytes = 0;
};

class CountingSource : public ByteSource {
 public:
  CountingSource(std::unique_ptr<ByteSource> inner, Counts& counts) : inner_(std::move(inner)), counts_(counts) {}
  uint64_t size() const override { return inner_->size(); }
  void read(uint64_t offset, uint64_t length, void* out) const override {
    ++counts_.reads;
    counts_.bytes += length;
    inner_->read(offset, length, out);
  }
  const std::string& name() const override { return inner_->name(); }
  FileIdentity identity() const override { return inner_->identity(); }

 private:
  std::unique_ptr<ByteSource> inner_;
  Counts& counts_;
};

class CountingFolder : public SourceFolder {
 public:
  CountingFolder(const SourceFolder& inner, Counts& counts) : inner_(inner), counts_(counts) {}
  bool holds(const std::string& name) const override { return inner_.holds(name); }
  bool exists(const std::string& name) const override { return inner_.exists(name); }
  std::unique_ptr<ByteSource> open(const std::string& name, const char* directory) const override {
    return std::make_unique<CountingSource>(inner_.open(name, directory), counts_);
  }

 private:
  const SourceFolder& inner_;
  Counts& counts_;
};

}  // namespace

TEST_CASE("source: a memory buffer reads inside and refuses a read past its end", "[source]") {
  const std::string bytes = "0123456789";
  MemorySource s(bytes.data(), bytes.size(), "ten");
  CHECK(s.size() == 10);
  CHECK(s.name() == "ten");
  CHECK_FALSE(s.identity().known);
  char out[10] = {};
  s.read(2, 3, out);
  CHECK(std::string(out, 3) == "234");
  s.read(0, 10, out);
  CHECK(std::string(out, 10) == "0123456789");
  CHECK(read_error(s, 10, 0).empty());  // zero bytes at the end: inside
  CHECK(read_error(s, 8, 3) == "truncated: a read past the end of the file");  // bytes 8-10: one past
  CHECK(read_error(s, 11, 0) == "truncated: a read past the end of the file");
  CHECK(read_error(s, 5, UINT64_MAX) == "truncated: a read past the end of the file");  // 5 + 2^64-1 would wrap
  CHECK(read_error(s, UINT64_MAX, 2) == "truncated: a read past the end of the file");

  MemorySource empty(bytes.data(), 0, "empty");
  CHECK(empty.size() == 0);
  CHECK(read_error(empty, 0, 0).empty());
  CHECK(read_error(empty, 0, 1) == "truncated: a read past the end of the file");
}

TEST_CASE("source: a local file reads inside, refuses a read past its end, and may be empty", "[source]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("ten"), "0123456789");
  testutil::write_bytes(dir.file("empty"), "");
  FileSource s(dir.file("ten"));
  CHECK(s.size() == 10);
  CHECK(s.name() == dir.file("ten"));
  CHECK(s.identity().known);
  CHECK(s.identity().size == 10);
  char out[10] = {};
  s.read(7, 3, out);
  CHECK(std::string(out, 3) == "789");
  CHECK(read_error(s, 10, 0).empty());
  CHECK(read_error(s, 8, 3) == "truncated: a read past the end of the file");
  CHECK(read_error(s, UINT64_MAX, 2) == "truncated: a read past the end of the file");

  FileSource empty(dir.file("empty"));
  CHECK(empty.size() == 0);
  CHECK(read_error(empty, 0, 0).empty());
  CHECK(read_error(empty, 0, 1) == "truncated: a read past the end of the file");

  // Opened as every file is: a folder is refused with what the caller says of it.
  try {
    FileSource folder(dir.path.string(), "is a directory, not a GGUF file");
    FAIL("a folder opened as a file");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "is a directory, not a GGUF file");
  }
}

TEST_CASE("source: a local folder opens its files by name and proves each stays inside", "[source]") {
  testutil::TempDir dir, other;
  std::filesystem::create_directories(dir.path / "m");
  testutil::write_bytes((dir.path / "m" / "a.safetensors").string(), "abc");
  testutil::write_bytes(other.file("secret"), "s");
  std::filesystem::create_symlink(other.file("secret"), dir.path / "m" / "link");
  LocalFolder folder(dir.path / "m");
  CHECK(folder.holds("a.safetensors"));
  CHECK(folder.exists("a.safetensors"));
  CHECK_FALSE(folder.exists("b.safetensors"));
  CHECK_FALSE(folder.holds("../x"));
  CHECK_FALSE(folder.holds("/etc/passwd"));
  CHECK_FALSE(folder.holds("link"));  // a symlink out of the folder
  std::unique_ptr<ByteSource> a = folder.open("a.safetensors", nullptr);
  CHECK(a->name() == (dir.path / "m" / "a.safetensors").string());
  CHECK(a->size() == 3);
}

TEST_CASE("source: a sharded safetensors checkpoint read through a folder takes 1 read of the index and 2 per shard", "[source]") {
  // h1 = 5 ({"a":) + 15 ({"dtype":"F32",) + 14 ("shape":[2,2],) + 21 ("data_offsets":[0,16]) + 2 = 57
  // bytes; h2 = 5 + 15 + 12 ("shape":[3],) + 20 ("data_offsets":[0,6]) + 2 = 54 bytes; the index =
  // 15 ({"weight_map":{) + 2 x 38 ("a":"model-0000N-of-00002.safetensors") + 1 (,) + 2 (}}) = 94.
  const std::string h1 = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  const std::string h2 = R"({"b":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}})";
  const std::string index =
      R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})";
  REQUIRE(h1.size() == 57);
  REQUIRE(h2.size() == 54);
  REQUIRE(index.size() == 94);
  MemoryFolder memory;
  memory.files["model-00001-of-00002.safetensors"] = le64(h1.size()) + h1 + std::string(16, '\0');
  memory.files["model-00002-of-00002.safetensors"] = le64(h2.size()) + h2 + std::string(6, '\0');
  memory.files["model.safetensors.index.json"] = index;
  Counts counts;
  CountingFolder folder(memory, counts);
  Checkpoint c = read_safetensors_index(*folder.open("model.safetensors.index.json", nullptr), folder);
  REQUIRE(c.tensors.size() == 2);
  CHECK(c.kind == FormatKind::Safetensors);
  CHECK(c.files == std::vector<std::string>{"model.safetensors.index.json", "model-00001-of-00002.safetensors",
                                            "model-00002-of-00002.safetensors"});
  CHECK(c.file_sizes == std::vector<uint64_t>{94, 8 + 57 + 16, 8 + 54 + 6});
  CHECK(c.tensors[0].elements == 4);
  CHECK(c.tensors[0].offset == 8 + 57);  // its data begins after the length and the header
  CHECK(c.tensors[1].bytes == 6);        // F16 [3]: 3 x 2
  CHECK(c.tensors[1].file == 2);
  // The index whole (94), then per shard its length (8) and its header (57, 54): never the data.
  CHECK(counts.reads == 5);
  CHECK(counts.bytes == 94 + 8 + 57 + 8 + 54);

  // The readers' checks hold whatever the folder: a shard's name is a plain file name, and a
  // shard the folder does not hold cannot be opened.
  memory.files["model.safetensors.index.json"] = R"({"weight_map":{"a":"../model-00001-of-00002.safetensors"}})";
  try {
    read_safetensors_index(*folder.open("model.safetensors.index.json", nullptr), folder);
    FAIL("a shard outside the folder was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "the index names the shard '../model-00001-of-00002.safetensors', which is not a file name in its folder");
  }
  memory.files["model.safetensors.index.json"] = R"({"weight_map":{"a":"model-00003-of-00003.safetensors"}})";
  try {
    read_safetensors_index(*folder.open("model.safetensors.index.json", nullptr), folder);
    FAIL("a missing shard was read");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "shard model-00003-of-00003.safetensors: cannot open: No such file or directory");
  }
}

TEST_CASE("source: a GGUF header is read 64 KiB at a time, and what the reader skips is not read", "[source]") {
  // "GGUF", version, tensor count, key count: 24 bytes. The key: its length (8), 25 bytes of
  // "tokenizer.ggml.token_type", its type (4), the element type (4) and count (8): 49 bytes, then
  // 300,000 int32 = 1,200,000 bytes, more than the 65,536 an array keeps: skipped. The tensor info
  // at 24 + 49 + 1,200,000 = 1,200,073: name (8 + 1), dims (4), ne (2 x 8), type (4), offset (8) = 41
  // bytes, ending at 1,200,114, aligned to 32: the data at 1,200,128; F32 [256, 1024] = 1,048,576
  // bytes: a file of 2,248,704 bytes.
  gguf_test::GgufWriter w;
  w.array_i32("tokenizer.ggml.token_type", std::vector<int32_t>(300000, 1)).tensor("w", {1024, 256}, gguf_test::kF32);
  std::string file = w.header();
  REQUIRE(file.size() == 1200128);
  file.resize(1200128 + 1048576, '\0');
  MemoryFolder memory;
  memory.files["m.gguf"] = file;
  Counts counts;
  CountingFolder folder(memory, counts);
  Checkpoint c = read_gguf(folder, "m.gguf");
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.kind == FormatKind::Gguf);
  CHECK(c.tensors[0].offset == 1200128);
  CHECK(c.tensors[0].bytes == 1048576);
  CHECK(c.metadata.at("tokenizer.ggml.token_type").count == 300000);
  // One buffer from byte 0 (the key and the array's start), none for the array's 1,200,000 bytes,
  // one buffer from byte 1,200,073 (the tensor info): 2 reads of 65,536 bytes.
  CHECK(counts.reads == 2);
  CHECK(counts.bytes == 2 * 65536);
}

TEST_CASE("source: a split GGUF read through a folder in memory: every part, by its name", "[source]") {
  auto part = [](int no) {
    gguf_test::GgufWriter w;
    w.u16("split.no", static_cast<uint16_t>(no)).u16("split.count", 2);
    return w;
  };
  gguf_test::GgufWriter p1 = part(0), p2 = part(1);
  p1.tensor("token_embd.weight", {64, 100}, gguf_test::kF16);  // 6,400 x 2 = 12,800 bytes
  p2.tensor("output.weight", {64, 100}, gguf_test::kQ8_0);     // 6,400 / 32 = 200 blocks x 34 = 6,800 bytes
  MemoryFolder memory;
  memory.files["m-00001-of-00002.gguf"] = p1.header() + std::string(12800, '\0');
  memory.files["m-00002-of-00002.gguf"] = p2.header() + std::string(6800, '\0');
  for (const char* named : {"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"}) {
    Checkpoint c = read_gguf(memory, named);
    REQUIRE(c.files == std::vector<std::string>{"m-00001-of-00002.gguf", "m-00002-of-00002.gguf"});
    REQUIRE(c.tensors.size() == 2);
    CHECK(c.tensors[0].bytes == 12800);
    CHECK(c.tensors[1].bytes == 6800);
    CHECK(c.tensors[1].file == 1);
  }
  memory.files.erase("m-00002-of-00002.gguf");
  try {
    read_gguf(memory, "m-00001-of-00002.gguf");
    FAIL("a missing part was not missed");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "split part m-00002-of-00002.gguf: is missing (m-00001-of-00002.gguf is part 1 of 2)");
  }
}
