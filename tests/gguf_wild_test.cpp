// gguf_wild_test.cpp: checkpoint files as they are found in the wild (issue 37, items 2 to 5):
// safetensors integer and 0-d tensors, a big-endian GGUF and its little-endian twin, a Q8_0
// tensor whose rows are not whole blocks, and the K/V cache an all-F32 GGUF runs with. Every
// figure is worked by hand in the comments, from the shapes the test writes.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gguf_writer.h"
#include "headcount/audit.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "test_util.h"

using namespace headcount;
using namespace gguf_test;

namespace {

std::vector<const Finding*> with_rule(const Audit& a, const std::string& rule) {
  std::vector<const Finding*> out;
  for (const auto& f : a.findings) {
    if (f.rule == rule) out.push_back(&f);
  }
  return out;
}

const BufferTensor* buffer_named(const Audit& a, const std::string& name) {
  for (const auto& b : a.framework.buffers) {
    if (a.model.weights[static_cast<size_t>(b.weight)].name == name) return &b;
  }
  return nullptr;
}

// A llama-style GGUF of two blocks, width 64, 4 heads of 16, 2 K/V heads, feed-forward 128, a
// vocabulary of 100, in F32, F16 and Q8_0, with metadata of every width (u16, u32, u64, i32, f32,
// f64 arrays), so that a byte-swapped twin exercises each number the reader reads.
GgufWriter twin_writer() {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .str("general.name", "twin")
      .u32("llama.block_count", 2)
      .u64("llama.context_length", 2048)
      .u32("llama.embedding_length", 64)
      .u32("llama.feed_forward_length", 128)
      .u32("llama.attention.head_count", 4)
      .u32("llama.attention.head_count_kv", 2)
      .u16("test.u16", 0x1234)
      .i32("test.i32", -5)
      .f32("llama.rope.freq_base", 10000.0f)
      .array_i32("test.array_i32", {1, -2, 300000})
      .array_f32("test.array_f32", {0.5f, -1.25f})
      .array_str("tokenizer.ggml.tokens", {"<s>", "</s>", "a"});
  w.tensor("token_embd.weight", {64, 100}, kF16);
  for (int b = 0; b < 2; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    w.tensor(p + "attn_norm.weight", {64}, kF32)
        .tensor(p + "attn_q.weight", {64, 64}, kQ8_0)
        .tensor(p + "attn_k.weight", {64, 32}, kQ8_0)
        .tensor(p + "attn_v.weight", {64, 32}, kF16)
        .tensor(p + "attn_output.weight", {64, 64}, kQ8_0)
        .tensor(p + "ffn_norm.weight", {64}, kF32)
        .tensor(p + "ffn_gate.weight", {64, 128}, kQ8_0)
        .tensor(p + "ffn_up.weight", {64, 128}, kQ8_0)
        .tensor(p + "ffn_down.weight", {128, 64}, kQ8_0);
  }
  w.tensor("output_norm.weight", {64}, kF32).tensor("output.weight", {64, 100}, kF16);
  return w;
}

}  // namespace

TEST_CASE("gguf: a big-endian file is read as its little-endian twin", "[gguf][checkpoint]") {
  testutil::TempDir dir;
  const std::string le = dir.file("twin-le.gguf"), be = dir.file("twin-be.gguf");
  twin_writer().write(le);
  {
    BigEndian guard;
    twin_writer().write(be);
  }
  // The BE file starts "GGUF" then 00 00 00 03: the version written big-endian.
  {
    std::ifstream in(be, std::ios::binary);
    std::string head(8, '\0');
    in.read(&head[0], 8);
    CHECK(head == std::string("GGUF\0\0\0\3", 8));
  }

  Checkpoint l = read_gguf(le), b = read_gguf(be);
  CHECK(!l.big_endian);
  CHECK(b.big_endian);
  CHECK(b.gguf_version == 3);
  REQUIRE(b.tensors.size() == 21);  // 1 + 2 x 9 + 2
  REQUIRE(l.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < l.tensors.size(); ++i) {
    INFO(l.tensors[i].name);
    CHECK(b.tensors[i].name == l.tensors[i].name);
    CHECK(b.tensors[i].shape == l.tensors[i].shape);
    CHECK(b.tensors[i].dtype == l.tensors[i].dtype);
    CHECK(b.tensors[i].elements == l.tensors[i].elements);
    CHECK(b.tensors[i].bytes == l.tensors[i].bytes);
    CHECK(b.tensors[i].offset == l.tensors[i].offset);
  }
  // Numbers of every width, read back as written.
  CHECK(b.metadata.at("test.u16").u == 0x1234);
  CHECK(b.metadata.at("test.i32").i == -5);
  CHECK(b.metadata.at("llama.context_length").u == 2048);
  CHECK(b.metadata.at("llama.rope.freq_base").f == 10000.0);
  CHECK(b.metadata.at("test.array_i32").numbers == std::vector<double>{1, -2, 300000});
  CHECK(b.metadata.at("test.array_f32").numbers == std::vector<double>{0.5, -1.25});
  CHECK(b.metadata.at("tokenizer.ggml.tokens").count == 3);

  Audit al = audit_file(le), ab = audit_file(be);
  // token_embd and output 64 x 100 = 6,400 each; a block: norms 2 x 64, q and o 64 x 64 = 4,096
  // each, k and v 32 x 64 = 2,048 each, gate, up and down 128 x 64 = 8,192 each: 36,992; two
  // blocks 73,984; output_norm 64. In all 6,400 + 73,984 + 64 + 6,400 = 86,848.
  for (const Audit* a : {&al, &ab}) {
    CHECK(a->inventory.stored == 86848);
    CHECK(a->framework.parameters == 86848);
    REQUIRE(a->attention.blocks.size() == 2);
    CHECK(a->attention.parameters == 2 * 12288);  // 4,096 + 2,048 + 2,048 + 4,096 per block
    CHECK(a->attention.blocks[0].heads == 4);
    CHECK(a->attention.blocks[0].kv_heads == 2);
    CHECK(a->composition.feed_forward == 2 * 3 * 8192);
    // f16 K/V: 2 layers x 2 K/V heads x (16 + 16) x 2 bytes = 256 per token.
    CHECK(a->cost.kv_bytes_per_token == 256);
  }
  CHECK(ab.inventory.bytes == al.inventory.bytes);
  CHECK(ab.findings.size() == al.findings.size());
}

TEST_CASE("gguf: a big-endian split part beside a little-endian one is refused", "[gguf][checkpoint]") {
  testutil::TempDir dir;
  GgufWriter one;
  one.u32("split.count", 2).u32("split.no", 0).tensor("a", {32}, kF32);
  one.write(dir.file("m-00001-of-00002.gguf"));
  {
    BigEndian guard;
    GgufWriter two;
    two.u32("split.count", 2).u32("split.no", 1).tensor("b", {32}, kF32);
    two.write(dir.file("m-00002-of-00002.gguf"));
  }
  CHECK_THROWS_WITH(read_gguf(dir.file("m-00001-of-00002.gguf")),
                    "split part m-00002-of-00002.gguf is big-endian, part 1 little-endian");
}

TEST_CASE("gguf: Q8_0 rows that are not whole blocks are counted, with a finding", "[gguf][checkpoint][findings]") {
  testutil::TempDir dir;
  const std::string path = dir.file("partial.gguf");
  GgufWriter w;
  w.version = 2;
  w.str("general.architecture", "llama").u32("llama.block_count", 1).u32("llama.embedding_length", 64);
  // ffn_down of 64 rows of 172 elements (ne = {172, 64}): 11,008 elements, 344 blocks of 32, each
  // 34 bytes: 11,696 bytes, packed across the tensor (a row is 5.375 blocks). The writer places
  // it by its own size, which the reader must then find: elements / 32 x 34.
  w.tensor("blk.0.ffn_down.weight", {172, 64}, kQ8_0);
  w.tensor("blk.0.ffn_norm.weight", {64}, kF32);
  w.write(path);

  Checkpoint c = read_gguf(path);
  REQUIRE(c.tensors.size() == 2);
  CHECK(c.tensors[0].elements == 11008);
  CHECK(c.tensors[0].bytes == 11696);
  CHECK(c.tensors[0].partial_rows);
  CHECK(c.tensors[0].shape == std::vector<int64_t>{64, 172});
  CHECK(!c.tensors[1].partial_rows);

  Audit a = audit_file(path);
  CHECK(a.inventory.stored == 11008 + 64);
  CHECK(a.inventory.bytes == 11696 + 256);
  CHECK(a.composition.feed_forward == 11008);
  auto f = with_rule(a, "gguf-partial-blocks");
  REQUIRE(f.size() == 1);
  CHECK(f[0]->severity == Severity::Error);
  CHECK(f[0]->message ==
        "tensor 'blk.0.ffn_down.weight' (Q8_0): its rows of 172 elements are not whole blocks of 32; its 11,008 "
        "elements are packed across the tensor in 344 blocks (11,696 bytes), which llama.cpp's loader refuses");

  // Not whole blocks even packed: 5 x 7 = 35 elements of Q8_0 is still refused.
  GgufWriter odd;
  odd.tensor("x", {5, 7}, kQ8_0, 0);
  odd.write(dir.file("odd.gguf"), 4096);
  CHECK_THROWS_WITH(read_gguf(dir.file("odd.gguf")),
                    "tensor 'x' (Q8_0): its 35 elements, in rows of 5, are not a multiple of the type's block of 32");
}

TEST_CASE("gguf: an all-F32 file runs with llama.cpp's f16 cache", "[gguf][cost]") {
  testutil::TempDir dir;
  const std::string path = dir.file("f32.gguf");
  GgufWriter w;
  w.str("general.architecture", "llama")
      .u32("llama.block_count", 1)
      .u32("llama.embedding_length", 32)
      .u32("llama.attention.head_count", 4)
      .u32("llama.attention.head_count_kv", 4);
  for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
    w.tensor(std::string("blk.0.") + t + ".weight", {32, 32}, kF32);
  }
  w.write(path);
  Audit a = audit_file(path);
  REQUIRE(a.cost.blocks.size() == 1);
  // 1 layer x 4 K/V heads x (8 + 8) x 2 bytes (f16) = 128 per token; the F32 weights would say 256.
  CHECK(a.cost.kv_bytes_per_token == 128);
  CHECK(a.cost.blocks[0].dtype == "float16");
  CHECK(a.cost.blocks[0].dtype_from.find("llama.cpp's default K/V cache type (f16)") == 0);
  // --kv-dtype still sets another.
  AuditOptions o;
  o.cost.kv_bits = 32;
  o.cost.kv_dtype = "float32";
  CHECK(audit_file(path, o).cost.kv_bytes_per_token == 256);
}

TEST_CASE("safetensors: integer and 0-d tensors are counted, and named as buffers", "[checkpoint][safetensors]") {
  testutil::TempDir dir;
  // One [2, 3] tensor of each dtype: 9 x 6 = 54 elements, in 6 + 12 + 24 + 6 + 12 + 24 + 12 + 24 +
  // 48 = 168 bytes.
  const char* dtypes[] = {"U8", "U16", "U32", "I8", "I16", "I32", "F16", "F32", "F64"};
  const int bytes[] = {1, 2, 4, 1, 2, 4, 2, 4, 8};
  std::string header = "{";
  uint64_t at = 0;
  for (int k = 0; k < 9; ++k) {
    const uint64_t end = at + 6 * static_cast<uint64_t>(bytes[k]);
    header += std::string(k ? "," : "") + "\"t_" + dtypes[k] + "\":{\"dtype\":\"" + dtypes[k] +
              "\",\"shape\":[2,3],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(end) + "]}";
    at = end;
  }
  header += "}";
  REQUIRE(at == 168);
  const std::string all = dir.file("dtypes.safetensors");
  testutil::write_bytes(all, testutil::safetensors_file(header, 168));
  Audit a = audit_file(all);
  CHECK(a.inventory.stored == 54);
  CHECK(a.inventory.bytes == 168);
  CHECK(a.inventory.tensors == 9);
  // The 32-bit integers are buffers (12 elements); the framework counts the other 42.
  CHECK(a.framework.buffer_elements == 12);
  CHECK(a.framework.parameters == 42);
  REQUIRE(buffer_named(a, "t_I32"));
  CHECK(buffer_named(a, "t_I32")->reason == "an integer tensor (int32): indices or a buffer, not a learned parameter");
  REQUIRE(buffer_named(a, "t_U32"));
  CHECK(buffer_named(a, "t_U32")->reason == "an integer tensor (uint32): indices or a buffer, not a learned parameter");
  CHECK(a.composition.buffers == 12);

  // Two BatchNorms, each weight, bias, running_mean, running_var [4] F32 and num_batches_tracked
  // [] I64: a 0-d tensor holds 1 element. 2 x (4 x 4 + 1) = 34 stored, 2 x (64 + 8) = 144 bytes.
  std::string bn = "{";
  at = 0;
  for (int l = 0; l < 2; ++l) {
    for (const char* f : {"weight", "bias", "running_mean", "running_var"}) {
      bn += std::string(at ? "," : "") + "\"bn" + std::to_string(l) + "." + f +
            "\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + 16) +
            "]}";
      at += 16;
    }
    bn += ",\"bn" + std::to_string(l) + ".num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[" +
          std::to_string(at) + "," + std::to_string(at + 8) + "]}";
    at += 8;
  }
  bn += "}";
  REQUIRE(at == 144);
  const std::string batchnorm = dir.file("bn.safetensors");
  testutil::write_bytes(batchnorm, testutil::safetensors_file(bn, 144));
  Audit b = audit_file(batchnorm);
  CHECK(b.inventory.stored == 34);
  CHECK(b.inventory.tensors == 10);
  REQUIRE(buffer_named(b, "bn0.num_batches_tracked"));
  CHECK(buffer_named(b, "bn0.num_batches_tracked")->reason == "a BatchNorm's batch counter (int64), not learned");
  REQUIRE(buffer_named(b, "bn1.num_batches_tracked"));
}

namespace {

// The sum of every tensor's shape product in a GGUF header, read here by a walker of its own
// (either byte order, as @huggingface/gguf tells them apart: a version with its low 16 bits 0
// was written big-endian), independent of headcount's reader.
uint64_t gguf_header_elements(const std::string& d) {
  const bool big = (static_cast<unsigned char>(d[4]) | static_cast<unsigned char>(d[5])) == 0;
  size_t at = 4;
  auto num = [&](int bytes) {
    uint64_t v = 0;
    for (int k = 0; k < bytes; ++k) {
      const uint64_t b = static_cast<unsigned char>(d.at(at + static_cast<size_t>(k)));
      v |= b << (8 * (big ? bytes - 1 - k : k));
    }
    at += static_cast<size_t>(bytes);
    return v;
  };
  const int width[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};  // by value type; 0: string, array
  std::function<void(uint64_t)> skip = [&](uint64_t type) {
    if (type == 8) {
      at += static_cast<size_t>(num(8));
    } else if (type == 9) {
      const uint64_t element = num(4), n = num(8);
      for (uint64_t k = 0; k < n; ++k) skip(element);
    } else {
      at += static_cast<size_t>(width[type]);
    }
  };
  num(4);  // the version
  const uint64_t tensors = num(8), kvs = num(8);
  for (uint64_t k = 0; k < kvs; ++k) {
    skip(8);
    skip(num(4));
  }
  uint64_t total = 0;
  for (uint64_t k = 0; k < tensors; ++k) {
    skip(8);
    const uint64_t dims = num(4);
    uint64_t n = 1;
    for (uint64_t i = 0; i < dims; ++i) n *= num(8);
    num(4);
    num(8);
    total += n;
  }
  return total;
}

// The same for a safetensors header, read with nlohmann-json's DOM: 1 for a 0-d shape.
uint64_t safetensors_header_elements(const std::string& d) {
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = n << 8 | static_cast<unsigned char>(d[static_cast<size_t>(k)]);
  const nlohmann::json header = nlohmann::json::parse(d.substr(8, static_cast<size_t>(n)));
  uint64_t total = 0;
  for (const auto& [name, t] : header.items()) {
    if (name == "__metadata__") continue;
    uint64_t e = 1;
    for (const auto& dim : t.at("shape")) e *= dim.get<uint64_t>();
    total += e;
  }
  return total;
}

}  // namespace

TEST_CASE("every stored element of every checkpoint sample is in the report's stored total", "[checkpoint][samples]") {
  // The bundled samples and this regression files that read: the stored total is the sum
  // of every tensor's shape product in the header, and every element has a part (buffers
  // included), so the composition adds up to it: nothing is dropped without a line.
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(HEADCOUNT_SAMPLES_DIR)) {
    const std::string p = e.path().string();
    if (p.size() > 5 && (p.substr(p.size() - 5) == ".gguf" || p.substr(p.size() - 12) == ".safetensors")) paths.push_back(p);
  }
  const std::string fuzz = HEADCOUNT_FUZZ_DIR;
  for (const char* f : {"/regressions/ckpt-dtypes-each-6.safetensors", "/regressions/ckpt-batchnorm-0d-i64.safetensors",
                        "/regressions/ckpt-metadata-null.safetensors", "/regressions-gguf/ckpt-llama-big-endian.gguf",
                        "/regressions-gguf/ckpt-llama-little-endian.gguf", "/regressions-gguf/ckpt-llama-all-f32.gguf",
                        "/regressions-gguf/ckpt-partial-blocks-q8_0-v2.gguf",
                        "/regressions-gguf/ckpt-partial-blocks-big-endian.gguf"}) {
    paths.push_back(fuzz + f);
  }
  REQUIRE(paths.size() >= 10);
  for (const std::string& path : paths) {
    INFO(path);
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool is_gguf = path.substr(path.size() - 5) == ".gguf";
    const uint64_t header = is_gguf ? gguf_header_elements(bytes) : safetensors_header_elements(bytes);
    Audit a = audit_file(path);
    CHECK(a.inventory.stored == header);
    const Composition& c = a.composition;
    CHECK(c.attention + c.embeddings + c.feed_forward + c.routed_experts + c.routers + c.norms + c.buffers + c.constants +
              c.lm_head + c.mixers + c.other ==
          header);
  }
}
