// The safetensors reader: the format as its specification writes it (an 8-byte little-endian
// header length, a JSON header of {name: {dtype, shape, data_offsets}} and "__metadata__", the
// bytes tensor after tensor), sharded checkpoints with their index, and every hostile header:
// each is one InputError that says what is wrong, with memory bounded by the header's bytes.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "headcount/audit.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "test_util.h"

using namespace headcount;
namespace fs = std::filesystem;

using testutil::le64;

namespace {

// A scratch folder, removed with everything in it.
struct Scratch {
  fs::path dir;
  Scratch() {
    char tmpl[] = "/tmp/headcount-st-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  }
};

// A file of the given header and `data` bytes after it.
std::string file(const std::string& header, size_t data) { return testutil::safetensors_file(header, data); }

std::string error_of(const std::string& path) {
  try {
    read_safetensors(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: tensors, dtypes and byte sizes from the header", "[checkpoint]") {
  Scratch s;
  // F32 [4, 8]: 32 elements x 4 bytes = 128 (bytes 0-128); BF16 [8]: 8 x 2 = 16 (128-144); F16
  // [2, 3]: 6 x 2 = 12 (144-156); I64 [1]: 8 (156-164). 164 data bytes.
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a.weight":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]},)"
      R"("b":{"dtype":"BF16","shape":[8],"data_offsets":[128,144]},"c":{"dtype":"F16","shape":[2,3],"data_offsets":[144,156]},)"
      R"("d":{"dtype":"I64","shape":[1],"data_offsets":[156,164]}})";
  Checkpoint c = read_safetensors(s.write("model.safetensors", file(header, 164)));
  REQUIRE(c.tensors.size() == 4);
  CHECK(c.format == "safetensors");
  CHECK(c.tensors[0].name == "a.weight");
  CHECK(c.tensors[0].elements == 32);
  CHECK(c.tensors[0].bytes == 128);
  CHECK(c.tensors[0].offset == 8 + header.size());
  CHECK(c.tensors[1].dtype == "BF16");
  CHECK(c.tensors[1].bytes == 16);
  CHECK(c.tensors[2].shape == std::vector<int64_t>{2, 3});
  CHECK(c.metadata.at("format").s == "pt");
  // The audit: 32 + 8 + 6 float elements and the I64's 1 are stored (47); the I64 is a buffer,
  // not a parameter: the framework counts 46.
  Audit a = audit_file((s.dir / "model.safetensors").string());
  CHECK(a.inventory.stored == 47);
  CHECK(a.framework.buffer_elements == 1);
  CHECK(a.framework.parameters == 46);
  CHECK(a.model.checkpoint);
}

TEST_CASE("safetensors: hostile headers are one error each", "[checkpoint][hostile]") {
  Scratch s;
  const std::string ok_tensor = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  struct Case {
    const char* what;
    std::string bytes;
    const char* error;
  };
  std::string deep(1000000, '[');
  std::string deep_obj;
  for (int i = 0; i < 100000; ++i) deep_obj += "{\"t\":";
  const Case cases[] = {
      {"empty file", "", "truncated: 0 bytes, fewer than the 8 of the header length"},
      {"a header length of 2^63", le64(uint64_t{1} << 63) + "{}",
       "the header length 9223372036854775808 runs past the end of the file (10 bytes)"},
      {"a header length past the end", le64(100) + "{}", "the header length 100 runs past the end of the file (10 bytes)"},
      {"not JSON", file("{\"t\":", 0),
       "the header is not valid JSON at byte 6: syntax error while parsing value - unexpected end of input; expected '[', '{', or a literal"},
      {"an array nested a million deep", le64(deep.size() + 5) + "{\"t\":" + deep, "the header holds an array where the format has none"},
      {"objects nested 100,000 deep", file("{\"__metadata__\":" + deep_obj, 0), "the header holds an object nested deeper than the format allows"},
      {"offsets past the end", file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
       "tensor 't': its data ends at byte 8 of the data, past its end (4 bytes)"},
      {"overlapping tensors", file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"u":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12),
       "tensor 'u' overlaps the tensor before it in the data"},
      {"a hole", file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "the data has a hole of 4 bytes before tensor 't'"},
      {"bytes after the last tensor", file("{" + ok_tensor + "}", 9), "the data holds 1 bytes after its last tensor that no tensor describes"},
      {"an unknown dtype", file(R"({"t":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8),
       "tensor 't' has the dtype 'Q4', which headcount does not know"},
      {"dims whose product overflows", file(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "tensor 't': the element count of its shape overflows 64 bits"},
      {"bytes that overflow", file(R"({"t":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8),
       "tensor 't': its size in bytes overflows 64 bits"},
      {"offsets that disagree with the shape", file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "tensor 't': its data offsets span 8 bytes, but 3 elements of F32 take 12"},
      {"reversed offsets", file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8),
       "tensor 't': its data offsets end (0) before they begin (8)"},
      {"a negative dimension", file(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", 8),
       "the header holds a negative number (-1) where a size or offset belongs"},
      {"a field the format does not define", file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8),
       "tensor 't' has the field 'x', which the format does not define"},
      {"a tensor named twice", file("{" + ok_tensor + "," + ok_tensor + "}", 8), "tensor 't' named twice"},
      {"three data offsets", file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}})", 8),
       "tensor 't' with more than 2 data offsets"},
      {"no shape", file(R"({"t":{"dtype":"F32","data_offsets":[0,8]}})", 8), "tensor 't' lacks \"shape\""},
      {"a rank of 17", file(R"({"t":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})", 8),
       "tensor 't' with more than 16 dimensions"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    CHECK(error_of(s.write("x.safetensors", c.bytes)) == c.error);
  }
}

TEST_CASE("safetensors: a sharded checkpoint is one model, its index checked against the shards", "[checkpoint]") {
  Scratch s;
  // Shard 1: a [2, 2] F32 (16 bytes); shard 2: b [3] F16 (6 bytes). total_size 22.
  s.write("model-00001-of-00002.safetensors", file(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", 16));
  s.write("model-00002-of-00002.safetensors", file(R"({"b":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}})", 6));
  std::string index = s.write("model.safetensors.index.json",
                              R"({"metadata":{"total_size":22},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
  Checkpoint c = read_safetensors(index);
  REQUIRE(c.tensors.size() == 2);
  CHECK(c.files.size() == 3);  // the index, then its shards
  CHECK(c.declared_total_size == 22u);
  CHECK(c.tensors[1].file == 2);
  // The folder names the same checkpoint.
  CHECK(read_safetensors(s.dir.string()).tensors.size() == 2);
  Audit a = audit_file(s.dir.string());
  CHECK(a.inventory.stored == 7);

  SECTION("a shard outside the folder") {
    s.write("model.safetensors.index.json", R"({"weight_map":{"a":"../model-00001-of-00002.safetensors"}})");
    CHECK(error_of(index) == "the index names the shard '../model-00001-of-00002.safetensors', which is not a file name in its folder");
  }
  SECTION("a shard that is a symlink out of the folder") {
    Scratch other;
    std::string outside = other.write("secret.safetensors", file(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", 16));
    fs::create_symlink(outside, s.dir / "link.safetensors");
    s.write("model.safetensors.index.json", R"({"weight_map":{"a":"link.safetensors"}})");
    CHECK(error_of(index) == "the index names the shard 'link.safetensors', which resolves outside its folder");
  }
  SECTION("a tensor the index does not list") {
    s.write("model.safetensors.index.json", R"({"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors"}})");
    CHECK(error_of(index) == "the index maps 'b' to model-00001-of-00002.safetensors, which does not hold it");
  }
  SECTION("a missing shard") {
    s.write("model.safetensors.index.json", R"({"weight_map":{"a":"model-00003-of-00003.safetensors"}})");
    CHECK(error_of(index) == "shard model-00003-of-00003.safetensors: cannot open: No such file or directory");
  }
  SECTION("a key the index does not define") {
    s.write("model.safetensors.index.json", R"({"weight_map":{},"extra":1})");
    CHECK(error_of(index) == "the index has the key 'extra', which headcount does not know");
  }
  SECTION("an index nested deeper than an index") {
    s.write("model.safetensors.index.json", R"({"weight_map":{"a":[[[[[[1]]]]]]}})");
    CHECK(error_of(index) == "the index nests deeper than an index does");
  }
}

TEST_CASE("safetensors: a config's hostile head counts leave the heads unknown", "[checkpoint][hostile]") {
  // A packed qkv_proj [96, 32] (F32: 3,072 elements, 12,288 bytes) beside a config whose heads are
  // 0, -3 or 2^40: no division by them; the split falls back to thirds (96 = 3 x 32).
  Scratch s;
  s.write("model.safetensors",
          file(R"({"model.layers.0.self_attn.qkv_proj.weight":{"dtype":"F32","shape":[96,32],"data_offsets":[0,12288]}})", 12288));
  for (const char* heads : {"0", "-3", "1099511627776"}) {
    INFO(heads);
    s.write("config.json", std::string(R"({"model_type":"phi3","hidden_size":32,"num_hidden_layers":1,"num_attention_heads":)") +
                               heads + R"(,"num_key_value_heads":)" + heads + "}");
    Audit a = audit_file((s.dir / "model.safetensors").string());
    REQUIRE(a.attention.blocks.size() == 1);
    const AttentionBlock& b = a.attention.blocks[0];
    CHECK_FALSE(b.heads);
    CHECK(b.q.total() == 1024);  // a third of 3,072
    CHECK(b.k.total() == 1024);
    CHECK(b.v.total() == 1024);
  }
}
