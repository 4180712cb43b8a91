// gguf_test.cpp: the GGUF reader (read_gguf, ggml_type) on files written in the test: a llama-style
// checkpoint and a mixture-of-experts one at real dimensions (their data sections are holes), a
// split file, every metadata type, and the hostile headers issue 29 lists, each refused with its
// message word for word.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "headcount/audit.h"
#include "test_util.h"

using namespace headcount;
using namespace gguf_test;

namespace {

const CheckpointTensor& find(const Checkpoint& c, const std::string& name) {
  for (const auto& t : c.tensors) {
    if (t.name == name) return t;
  }
  FAIL("no tensor " << name);
  throw 0;
}

// The reader's message for a file, or "" when it reads.
std::string error_of(const std::string& path) {
  try {
    read_gguf(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A hostile header written into a file of 4,096 bytes (zeros after the header), so that counts are
// refused for what they state, not because the file is short.
std::string hostile(const testutil::TempDir& dir, const GgufWriter& w, uint64_t size = 4096) {
  const std::string path = dir.file("hostile.gguf");
  w.write(path, size);
  return error_of(path);
}

std::string bytes_u64(uint64_t v) {
  std::string s;
  put_u64(s, v);
  return s;
}
std::string bytes_u32(uint32_t v) {
  std::string s;
  put_u32(s, v);
  return s;
}

constexpr uint64_t kTwo63 = uint64_t{1} << 63;

// The llama-style checkpoint: d_model 4096, 32 heads and 8 KV heads of 128, ff 11008, vocab 32000,
// two blocks, in the mix llama.cpp's Q4_K_M makes (Q4_K weights, Q6_K for V, ffn_down and output).
GgufWriter llama_writer() {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .str("general.name", "tiny-llama-2-blocks")
      .u32("general.file_type", 15)
      .u32("llama.block_count", 2)
      .u32("llama.context_length", 4096)
      .u32("llama.embedding_length", 4096)
      .u32("llama.feed_forward_length", 11008)
      .u32("llama.attention.head_count", 32)
      .u32("llama.attention.head_count_kv", 8)
      .f32("llama.rope.freq_base", 10000.0f)
      .f32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .str("tokenizer.ggml.model", "llama")
      .array_str("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "hello"})
      .array_f32("tokenizer.ggml.scores", {0.0f, 0.0f, 0.0f, -1.5f});
  w.tensor("token_embd.weight", {4096, 32000}, kF16);
  for (int b = 0; b < 2; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    w.tensor(p + "attn_norm.weight", {4096}, kF32)
        .tensor(p + "attn_q.weight", {4096, 4096}, kQ4_K)
        .tensor(p + "attn_k.weight", {4096, 1024}, kQ4_K)
        .tensor(p + "attn_v.weight", {4096, 1024}, kQ6_K)
        .tensor(p + "attn_output.weight", {4096, 4096}, kQ4_K)
        .tensor(p + "ffn_norm.weight", {4096}, kF32)
        .tensor(p + "ffn_gate.weight", {4096, 11008}, kQ4_K)
        .tensor(p + "ffn_up.weight", {4096, 11008}, kQ4_K)
        .tensor(p + "ffn_down.weight", {11008, 4096}, kQ6_K);
  }
  w.tensor("output_norm.weight", {4096}, kF32).tensor("output.weight", {4096, 32000}, kQ6_K);
  return w;
}

}  // namespace

TEST_CASE("gguf: a llama-style checkpoint: shapes, element counts and bytes from the block sizes", "[gguf]") {
  testutil::TempDir dir;
  const std::string path = dir.file("llama.gguf");
  GgufWriter w = llama_writer();
  w.write(path);
  const uint64_t data = w.header().size();

  Checkpoint c = read_gguf(path);
  CHECK(c.format == "gguf");
  CHECK(c.gguf_version == 3);
  CHECK(c.alignment == 32);
  REQUIRE(c.files == std::vector<std::string>{path});
  CHECK(c.file_sizes == std::vector<uint64_t>{w.file_size()});
  REQUIRE(c.tensors.size() == 21);  // token_embd, 2 x 9 per block, output_norm, output

  // token_embd: ne [4096, 32000] read as [32000, 4096]; F16: 131,072,000 elements x 2 = 262,144,000 bytes.
  const auto& embd = find(c, "token_embd.weight");
  CHECK(embd.dtype == "F16");
  CHECK(embd.shape == std::vector<int64_t>{32000, 4096});
  CHECK(embd.elements == 131072000);
  CHECK(embd.bytes == 262144000);
  CHECK(embd.offset == data);
  CHECK(embd.file == 0);

  // attn_norm: [4096] F32: 4,096 x 4 = 16,384 bytes, right after the embedding.
  const auto& norm = find(c, "blk.0.attn_norm.weight");
  CHECK(norm.shape == std::vector<int64_t>{4096});
  CHECK(norm.bytes == 16384);
  CHECK(norm.offset == data + 262144000);

  // attn_q: [4096, 4096] Q4_K: 16,777,216 elements / 256 = 65,536 blocks x 144 = 9,437,184 bytes.
  const auto& q = find(c, "blk.0.attn_q.weight");
  CHECK(q.dtype == "Q4_K");
  CHECK(q.shape == std::vector<int64_t>{4096, 4096});
  CHECK(q.elements == 16777216);
  CHECK(q.bytes == 9437184);
  CHECK(q.offset == data + 262144000 + 16384);

  // attn_k: [1024, 4096] Q4_K (8 KV heads of 128): 4,194,304 / 256 = 16,384 blocks x 144 = 2,359,296.
  const auto& k = find(c, "blk.0.attn_k.weight");
  CHECK(k.shape == std::vector<int64_t>{1024, 4096});
  CHECK(k.elements == 4194304);
  CHECK(k.bytes == 2359296);

  // attn_v: [1024, 4096] Q6_K: 16,384 blocks x 210 = 3,440,640 bytes.
  const auto& v = find(c, "blk.1.attn_v.weight");
  CHECK(v.dtype == "Q6_K");
  CHECK(v.elements == 4194304);
  CHECK(v.bytes == 3440640);

  // ffn_gate: [11008, 4096] Q4_K: 45,088,768 / 256 = 176,128 blocks x 144 = 25,362,432 bytes.
  const auto& gate = find(c, "blk.1.ffn_gate.weight");
  CHECK(gate.shape == std::vector<int64_t>{11008, 4096});
  CHECK(gate.elements == 45088768);
  CHECK(gate.bytes == 25362432);

  // ffn_down: [4096, 11008] Q6_K (rows of 11,008 = 43 blocks of 256): 176,128 blocks x 210 = 36,986,880.
  const auto& down = find(c, "blk.1.ffn_down.weight");
  CHECK(down.shape == std::vector<int64_t>{4096, 11008});
  CHECK(down.bytes == 36986880);

  // output: [32000, 4096] Q6_K: 131,072,000 / 256 = 512,000 blocks x 210 = 107,520,000 bytes, last in the file.
  const auto& out = find(c, "output.weight");
  CHECK(out.bytes == 107520000);
  CHECK(out.offset + out.bytes == c.file_sizes[0]);

  // A block: 16,384 x 2 + 9,437,184 x 2 + 2,359,296 + 3,440,640 + 25,362,432 x 2 + 36,986,880 = 112,418,816
  // bytes; the file's data: 262,144,000 + 2 x 112,418,816 + 16,384 + 107,520,000 = 594,518,016.
  uint64_t bytes = 0, elements = 0;
  for (const auto& t : c.tensors) {
    bytes += t.bytes;
    elements += t.elements;
  }
  CHECK(bytes == 594518016);
  CHECK(c.file_sizes[0] == data + 594518016);  // every tensor's size is a multiple of 32: no padding between
  // Elements: 131,072,000 x 2 (embedding, output) + 4,096 + 2 x (4,096 x 2 + 16,777,216 x 2 + 4,194,304 x 2
  // + 45,088,768 x 3) = 616,583,168.
  CHECK(elements == 616583168);

  CHECK(c.metadata.at("general.architecture").s == "llama");
  CHECK(c.metadata.at("llama.block_count").type == CheckpointValue::Type::Unsigned);
  CHECK(c.metadata.at("llama.block_count").type_name == "uint32");
  CHECK(c.metadata.at("llama.block_count").u == 2);
  CHECK(c.metadata.at("llama.attention.head_count_kv").u == 8);
  CHECK(c.metadata.at("llama.rope.freq_base").f == 10000.0);
  const auto& tokens = c.metadata.at("tokenizer.ggml.tokens");
  CHECK(tokens.type == CheckpointValue::Type::Array);
  CHECK(tokens.type_name == "array[string]");
  CHECK(tokens.element == CheckpointValue::Type::String);
  CHECK(tokens.count == 4);
  CHECK(tokens.numbers.empty());  // strings arrays keep only their count
  const auto& scores = c.metadata.at("tokenizer.ggml.scores");
  CHECK(scores.type_name == "array[float32]");
  CHECK(scores.numbers == std::vector<double>{0, 0, 0, -1.5});
}

TEST_CASE("gguf: a mixture-of-experts checkpoint: stacked experts and the router", "[gguf]") {
  testutil::TempDir dir;
  const std::string path = dir.file("moe.gguf");
  // Mixtral's dimensions: d_model 4096, ff 14336, 8 experts, 2 used.
  GgufWriter w;
  w.str("general.architecture", "llama")
      .u32("llama.block_count", 1)
      .u32("llama.embedding_length", 4096)
      .u32("llama.feed_forward_length", 14336)
      .u32("llama.expert_count", 8)
      .u32("llama.expert_used_count", 2);
  w.tensor("blk.0.ffn_gate_inp.weight", {4096, 8}, kF32)
      .tensor("blk.0.ffn_gate_exps.weight", {4096, 14336, 8}, kQ4_K)
      .tensor("blk.0.ffn_up_exps.weight", {4096, 14336, 8}, kQ4_K)
      .tensor("blk.0.ffn_down_exps.weight", {14336, 4096, 8}, kQ6_K);
  w.write(path);
  Checkpoint c = read_gguf(path);
  REQUIRE(c.tensors.size() == 4);

  // The router: [8, 4096] F32: 32,768 elements x 4 = 131,072 bytes.
  const auto& router = find(c, "blk.0.ffn_gate_inp.weight");
  CHECK(router.shape == std::vector<int64_t>{8, 4096});
  CHECK(router.bytes == 131072);

  // ffn_gate_exps: ne [4096, 14336, 8] is [n_expert, ff, d] = [8, 14336, 4096]; Q4_K:
  // 469,762,048 elements / 256 = 1,835,008 blocks x 144 = 264,241,152 bytes.
  const auto& gate = find(c, "blk.0.ffn_gate_exps.weight");
  CHECK(gate.shape == std::vector<int64_t>{8, 14336, 4096});
  CHECK(gate.elements == 469762048);
  CHECK(gate.bytes == 264241152);
  CHECK(gate.offset == router.offset + 131072);

  // ffn_down_exps: [8, 4096, 14336] Q6_K: 1,835,008 blocks x 210 = 385,351,680 bytes.
  const auto& down = find(c, "blk.0.ffn_down_exps.weight");
  CHECK(down.shape == std::vector<int64_t>{8, 4096, 14336});
  CHECK(down.bytes == 385351680);
  CHECK(down.offset + down.bytes == c.file_sizes[0]);
  CHECK(c.metadata.at("llama.expert_count").u == 8);

  // Audited: one MoE layer of 8 stacked experts, 2 used (llama.expert_count, expert_used_count).
  // One expert: 3 x 14,336 x 4,096 = 176,160,768; the router 32,768; a token leaves 6 idle:
  // 32,768 + 3 x 469,762,048 - 6 x 176,160,768 = 352,354,304 active of 1,409,318,912.
  Audit a = audit_file(path);
  REQUIRE(a.experts.layers.size() == 1);
  const ExpertLayer& l = a.experts.layers[0];
  CHECK(l.experts == 8);
  CHECK(l.top_k == 2);
  CHECK(l.found == 8);
  CHECK(l.expert == 176160768u);
  CHECK(l.router == 32768u);
  CHECK(a.framework.parameters == 1409318912u);
  CHECK(a.active_parameters == 352354304u);
}

TEST_CASE("gguf: versions 2 and 3 read alike", "[gguf]") {
  testutil::TempDir dir;
  for (uint32_t version : {2u, 3u}) {
    GgufWriter w;
    w.version = version;
    w.u32("llama.block_count", 1).tensor("output_norm.weight", {64}, kF32).tensor("output.weight", {64, 100}, kQ8_0);
    const std::string path = dir.file("v" + std::to_string(version) + ".gguf");
    w.write(path);
    Checkpoint c = read_gguf(path);
    CHECK(c.gguf_version == version);
    REQUIRE(c.tensors.size() == 2);
    // output: [100, 64] Q8_0: 6,400 elements / 32 = 200 blocks x 34 = 6,800 bytes.
    CHECK(c.tensors[1].bytes == 6800);
    CHECK(c.tensors[1].shape == std::vector<int64_t>{100, 64});
  }
}

TEST_CASE("gguf: general.alignment moves the data section and the offsets", "[gguf]") {
  testutil::TempDir dir;
  GgufWriter w;
  w.align(256).tensor("a", {10}, kF32).tensor("b", {10}, kF32);
  const std::string path = dir.file("aligned.gguf");
  w.write(path);
  Checkpoint c = read_gguf(path);
  CHECK(c.alignment == 256);
  REQUIRE(c.tensors.size() == 2);
  CHECK(c.tensors[0].offset == 256);  // the header (a key, two tensor infos) fits in the first 256 bytes
  CHECK(c.tensors[1].offset == 512);  // a's 40 bytes, then the next multiple of 256
}

TEST_CASE("gguf: every metadata value type, kept and long arrays, nested arrays counted", "[gguf]") {
  testutil::TempDir dir;
  GgufWriter w;
  std::string raw;
  auto key = [&](const std::string& k, uint32_t type) {
    put_str(raw, k);
    put_u32(raw, type);
  };
  key("u8", U8), put_u8(raw, 200);
  key("i8", I8), put_u8(raw, 0xFE);
  key("u16", U16), put_u16(raw, 65535);
  key("i16", I16), put_u16(raw, 0x8000);
  key("i64", I64), put_u64(raw, static_cast<uint64_t>(-5));
  key("f64", F64), put_u64(raw, 0x3FF8000000000000);  // 1.5
  key("bool", BOOL), put_u8(raw, 1);
  // An array of two arrays of u8: only counted.
  key("nested", ARRAY), put_u32(raw, ARRAY), put_u64(raw, 2);
  put_u32(raw, U8), put_u64(raw, 3), raw += "abc";
  put_u32(raw, U8), put_u64(raw, 0);
  key("flags", ARRAY), put_u32(raw, BOOL), put_u64(raw, 3), raw += std::string("\1\0\1", 3);
  w.kv_raw(raw, 9);
  w.u64("u64", UINT64_MAX).i32("i32", -7).str("s", "text");
  std::vector<int32_t> kept(CheckpointValue::kMostKeptArray, 3), counted(CheckpointValue::kMostKeptArray + 1, 3);
  w.array_i32("kept", kept).array_i32("counted", counted);
  const std::string path = dir.file("types.gguf");
  w.write(path);

  Checkpoint c = read_gguf(path);
  const auto& m = c.metadata;
  CHECK(m.at("u8").u == 200);
  CHECK(m.at("u8").type_name == "uint8");
  CHECK(m.at("i8").i == -2);
  CHECK(m.at("i8").type == CheckpointValue::Type::Signed);
  CHECK(m.at("u16").u == 65535);
  CHECK(m.at("i16").i == -32768);
  CHECK(m.at("i64").i == -5);
  CHECK(m.at("f64").f == 1.5);
  CHECK(m.at("f64").type_name == "float64");
  CHECK(m.at("bool").b);
  CHECK(m.at("bool").type == CheckpointValue::Type::Bool);
  CHECK(m.at("u64").u == UINT64_MAX);
  CHECK(m.at("i32").i == -7);
  CHECK(m.at("s").s == "text");
  CHECK(m.at("nested").type_name == "array[array]");
  CHECK(m.at("nested").element == CheckpointValue::Type::Array);
  CHECK(m.at("nested").count == 2);
  CHECK(m.at("nested").numbers.empty());
  CHECK(m.at("flags").numbers == std::vector<double>{1, 0, 1});
  CHECK(m.at("kept").count == 65536);
  CHECK(m.at("kept").numbers.size() == 65536);
  CHECK(m.at("counted").count == 65537);
  CHECK(m.at("counted").numbers.empty());  // longer than kMostKeptArray: only the count
}

TEST_CASE("gguf: a tensor with a dimension of 0 holds no bytes and overlaps nothing", "[gguf]") {
  testutil::TempDir dir;
  GgufWriter w;
  w.tensor("a", {64}, kF32).tensor("empty", {0, 64}, kQ4_K, 0).tensor("b", {64}, kF32);
  const std::string path = dir.file("empty.gguf");
  w.write(path);
  Checkpoint c = read_gguf(path);
  CHECK(find(c, "empty").elements == 0);
  CHECK(find(c, "empty").bytes == 0);
  CHECK(find(c, "empty").shape == std::vector<int64_t>{64, 0});
}

TEST_CASE("gguf: a split file of 3 parts reads every part, whichever is named", "[gguf]") {
  testutil::TempDir dir;
  auto part = [&](int no) {
    GgufWriter w;
    w.u16("split.no", static_cast<uint16_t>(no)).u16("split.count", 3);
    if (no == 0) w.str("general.architecture", "llama").i32("split.tensors.count", 5).u32("llama.block_count", 2);
    if (no == 1) w.str("only.in.part.two", "x");
    return w;
  };
  GgufWriter p1 = part(0), p2 = part(1), p3 = part(2);
  p1.tensor("token_embd.weight", {64, 100}, kF16);
  p2.tensor("blk.0.attn_q.weight", {256, 256}, kQ4_K).tensor("blk.1.attn_q.weight", {256, 256}, kQ4_K);
  p3.tensor("output_norm.weight", {64}, kF32).tensor("output.weight", {64, 100}, kQ8_0);
  const std::string f1 = dir.file("model-00001-of-00003.gguf"), f2 = dir.file("model-00002-of-00003.gguf"),
                    f3 = dir.file("model-00003-of-00003.gguf");
  p1.write(f1);
  p2.write(f2);
  p3.write(f3);

  for (const auto& named : {f1, f2, f3}) {
    Checkpoint c = read_gguf(named);
    REQUIRE(c.files == std::vector<std::string>{f1, f2, f3});
    CHECK(c.file_sizes == std::vector<uint64_t>{p1.file_size(), p2.file_size(), p3.file_size()});
    REQUIRE(c.tensors.size() == 5);
    CHECK(c.tensors[0].name == "token_embd.weight");
    CHECK(c.tensors[0].file == 0);
    CHECK(c.tensors[1].file == 1);
    CHECK(c.tensors[2].file == 1);
    CHECK(c.tensors[3].file == 2);
    CHECK(c.tensors[4].file == 2);
    // blk.1.attn_q: [256, 256] Q4_K: 65,536 / 256 = 256 blocks x 144 = 36,864 bytes, after blk.0's in part 2.
    CHECK(c.tensors[2].bytes == 36864);
    CHECK(c.tensors[2].offset == p2.header().size() + 36864);
    CHECK(c.tensors[4].offset + c.tensors[4].bytes == p3.file_size());
    CHECK(c.metadata.at("llama.block_count").u == 2);  // the metadata of the first part
    CHECK(c.metadata.count("only.in.part.two") == 0);
  }

  std::filesystem::remove(f3);
  CHECK(error_of(f1) == "split part model-00003-of-00003.gguf: is missing (model-00001-of-00003.gguf is part 1 of 3)");
  part(7).tensor("output.weight", {64, 100}, kQ8_0).write(f3);
  CHECK(error_of(f1) ==
        "split part model-00003-of-00003.gguf: split.no is 7 but the file name says part 3 (split.no 2, counting "
        "from 0)");
  CHECK(error_of(f3) == "split.no is 7 but the file name says part 3 (split.no 2, counting from 0)");
  GgufWriter four;
  four.u16("split.no", 2).u16("split.count", 4).tensor("output.weight", {64, 100}, kQ8_0);
  four.write(f3);
  CHECK(error_of(f1) == "split part model-00003-of-00003.gguf: split.count is 4 but the file name says 3 parts");
  p3.write(f3);
  CHECK(error_of(f2) == "");

  // A part that is a symlink out of the folder is not read.
  testutil::TempDir elsewhere;
  p3.write(elsewhere.file("model-00003-of-00003.gguf"));
  std::filesystem::remove(f3);
  std::filesystem::create_symlink(elsewhere.file("model-00003-of-00003.gguf"), f3);
  CHECK(error_of(f1) == "split part model-00003-of-00003.gguf: resolves outside the folder of model-00001-of-00003.gguf");
  std::filesystem::remove(f3);
  p3.write(f3);

  // The first part's split.tensors.count against the tensors of all parts.
  GgufWriter lying = part(1);
  lying.tensor("blk.0.attn_q.weight", {256, 256}, kQ4_K);
  lying.write(f2);
  CHECK(error_of(f1) == "split.tensors.count is 5 but the 3 parts hold 4 tensors");
  // A tensor in two parts.
  lying = part(1);
  lying.tensor("blk.0.attn_q.weight", {256, 256}, kQ4_K).tensor("token_embd.weight", {64}, kF32);
  lying.write(f2);
  CHECK(error_of(f1) == "tensor 'token_embd.weight' appears twice (again in split part model-00002-of-00003.gguf)");

  // Names that cannot be a part, and a part renamed as a single file.
  CHECK(error_of(dir.file("model-00004-of-00003.gguf")) == "the file name says part 4 of 3");
  CHECK(error_of(dir.file("model-00000-of-00000.gguf")) == "the file name says part 0 of 0");
  const std::string renamed = dir.file("model.gguf");
  p1.write(renamed);
  CHECK(error_of(renamed) ==
        "split.count is 3, but the file name does not say which part this is (a split file is named "
        "NAME-00001-of-00003.gguf)");
}

TEST_CASE("gguf: hostile headers are refused with one clear message", "[gguf][hostile]") {
  testutil::TempDir dir;

  SECTION("a key length of 2^63") {
    GgufWriter w;
    w.kv_raw(bytes_u64(kTwo63));
    CHECK(hostile(dir, w) == "metadata entry 0: its key is 9223372036854775808 bytes long (at most 65535 are read)");
    GgufWriter cut;
    cut.kv_raw(bytes_u64(5000));  // within the bound for names, past the end of the file
    CHECK(hostile(dir, cut) ==
          "truncated: metadata entry 0: its key at byte 32 needs 5000 bytes but the file ends at byte 4096");
  }
  SECTION("a key or a tensor name longer than GGUF allows") {
    GgufWriter w;
    w.kv_raw(bytes_u64(65536) + std::string(65536, 'k'));
    CHECK(hostile(dir, w, 100000) == "metadata entry 0: its key is 65536 bytes long (at most 65535 are read)");
    GgufWriter t;
    t.info_raw(bytes_u64(kTwo63));
    CHECK(hostile(dir, t) == "tensor info 0: its name is 9223372036854775808 bytes long (at most 65535 are read)");
  }
  SECTION("a string value length of 2^63") {
    GgufWriter w;
    w.key("general.name", STRING).kv_raw(bytes_u64(kTwo63), 0);
    // 24 bytes of header, 8 + 12 of key, 4 of type: the length at byte 48, the string at 56.
    CHECK(hostile(dir, w) == "truncated: metadata 'general.name': a string value at byte 56 needs "
                             "9223372036854775808 bytes but the file ends at byte 4096");
  }
  SECTION("an array of 2^64 - 1 elements") {
    GgufWriter w;
    w.key("a", ARRAY).kv_raw(bytes_u32(U32) + bytes_u64(UINT64_MAX), 0);
    // The count ends at byte 24 + 9 + 4 + 4 + 8 = 49.
    CHECK(hostile(dir, w) ==
          "metadata 'a': an array of 18446744073709551615 uint32 values cannot fit in the 4047 bytes left in the file");
  }
  SECTION("an array of more strings than 8-byte lengths fit in the file") {
    GgufWriter w;
    w.key("a", ARRAY).kv_raw(bytes_u32(STRING) + bytes_u64(4047 / 8 + 1), 0);
    CHECK(hostile(dir, w) == "metadata 'a': an array of 506 string values cannot fit in the 4047 bytes left in the file");
  }
  SECTION("arrays nested more than 8 deep") {
    auto nested = [](int levels) {
      std::string s;
      for (int k = 1; k < levels; ++k) s += bytes_u32(ARRAY) + bytes_u64(1);
      return s + bytes_u32(U8) + bytes_u64(0);
    };
    GgufWriter ok;
    ok.key("a", ARRAY).kv_raw(nested(8), 0);
    CHECK(hostile(dir, ok) == "");
    GgufWriter deep;
    deep.key("a", ARRAY).kv_raw(nested(9), 0);
    CHECK(hostile(dir, deep) == "metadata 'a': arrays are nested more than 8 deep");
  }
  SECTION("a tensor count of 2^63") {
    GgufWriter w;
    w.stated_tensor_count = kTwo63;
    CHECK(hostile(dir, w) == "the header states 9223372036854775808 tensors, but the 4072 bytes left in the file "
                             "hold at most 169 tensor infos");
  }
  SECTION("a metadata count of 2^63") {
    GgufWriter w;
    w.stated_kv_count = kTwo63;
    CHECK(hostile(dir, w) == "the header states 9223372036854775808 metadata entries, but the 4072 bytes left in "
                             "the file hold at most 313 metadata entries");
  }
  SECTION("dims whose product overflows") {
    GgufWriter w;
    w.tensor("x", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32, 0);
    CHECK(hostile(dir, w) == "tensor 'x': the element count of its shape [4294967296, 4294967296] overflows 63 bits");
  }
  SECTION("a dimension above 2^63 - 1") {
    GgufWriter w;
    w.tensor("x", {UINT64_MAX}, kF32, 0);
    CHECK(hostile(dir, w) == "tensor 'x': the element count of its shape [18446744073709551615] overflows 63 bits");
  }
  SECTION("a byte count that overflows") {
    GgufWriter w;
    w.tensor("x", {uint64_t{1} << 61, 2}, 28 /* F64 */, 0);  // 2^62 elements x 8 bytes
    CHECK(hostile(dir, w) == "tensor 'x': its size in bytes overflows 64 bits");
  }
  SECTION("an offset past the end") {
    GgufWriter w;
    w.tensor("x", {1024}, kF32, 0);  // 4,096 bytes; the info (33 bytes) ends at byte 57, data at 64
    CHECK(hostile(dir, w) == "tensor 'x': its 4096 bytes at offset 0 of the data section (byte 64) lie past the end "
                             "of the file (4096 bytes)");
  }
  SECTION("an offset whose end overflows") {
    GgufWriter w;
    w.tensor("x", {8}, kF32, UINT64_MAX - 31);
    CHECK(hostile(dir, w) == "tensor 'x': its 32 bytes at offset 18446744073709551584 of the data section (byte 64) "
                             "lie past the end of the file (4096 bytes)");
  }
  SECTION("an offset off the alignment") {
    GgufWriter w;
    w.tensor("x", {8}, kF32, 5);
    CHECK(hostile(dir, w) == "tensor 'x': offset 5 is not a multiple of the alignment 32");
  }
  SECTION("overlapping tensors") {
    GgufWriter w;
    w.tensor("a", {64}, kF32, 0).tensor("b", {64}, kF32, 128);  // 256 bytes each
    const uint64_t data = w.header().size();
    const auto range = [&](uint64_t from) {
      return "[" + std::to_string(data + from) + ", " + std::to_string(data + from + 256) + ")";
    };
    CHECK(hostile(dir, w) == "tensors 'a' and 'b' overlap: bytes " + range(0) + " and " + range(128));
  }
  SECTION("duplicate tensor names") {
    GgufWriter w;
    w.tensor("a", {8}, kF32).tensor("a", {8}, kF32);
    CHECK(hostile(dir, w) == "tensor 'a' appears twice");
  }
  SECTION("duplicate keys") {
    GgufWriter w;
    w.u32("llama.block_count", 2).u32("llama.block_count", 3);
    CHECK(hostile(dir, w) == "metadata key 'llama.block_count' appears twice");
  }
  SECTION("an unknown value type") {
    GgufWriter w;
    w.key("k", 13);
    CHECK(hostile(dir, w) == "metadata 'k': its value type 13 is not a GGUF value type (0 to 12)");
  }
  SECTION("an unknown array element type") {
    GgufWriter w;
    w.key("k", ARRAY).kv_raw(bytes_u32(0xFFFFFFFF) + bytes_u64(1), 0);
    CHECK(hostile(dir, w) == "metadata 'k': an array's element type 4294967295 is not a GGUF value type (0 to 12)");
  }
  SECTION("an unknown ggml type, and the removed ones") {
    GgufWriter w;
    w.tensor("x", {32}, 99, 0);
    CHECK(hostile(dir, w) == "tensor 'x' has ggml type 99, which this reader does not know");
    const std::pair<uint32_t, const char*> removed[] = {{4, "Q4_2"},        {5, "Q4_3"},       {31, "Q4_0_4_4"},
                                                        {32, "Q4_0_4_8"},   {33, "Q4_0_8_8"},  {36, "IQ4_NL_4_4"},
                                                        {37, "IQ4_NL_4_8"}, {38, "IQ4_NL_8_8"}};
    for (const auto& [id, name] : removed) {
      GgufWriter r;
      r.tensor("blk.0.attn_q.weight", {32}, id, 0);
      CHECK(hostile(dir, r) ==
            "tensor 'blk.0.attn_q.weight' has ggml type " + std::to_string(id) + " (" + name + ", removed from ggml)");
    }
  }
  SECTION("more than 8 dimensions") {
    GgufWriter w;
    w.tensor("x", std::vector<uint64_t>(9, 1), kF32, 0);
    CHECK(hostile(dir, w) == "tensor 'x' has 9 dimensions (at most 8 are read; ggml has 4)");
  }
  SECTION("rows that are not whole blocks") {
    GgufWriter w;
    w.tensor("x", {100, 2}, kQ4_K, 0);
    // 200 elements: not whole blocks of 256 even packed across the tensor (gguf_wild_test.cpp reads
    // the packed form).
    CHECK(hostile(dir, w) == "tensor 'x' (Q4_K): its 200 elements, in rows of 100, are not a multiple of the type's "
                             "block of 256");
  }
  SECTION("an alignment of 0, of 48, or not a uint32") {
    GgufWriter zero;
    zero.u32("general.alignment", 0);
    CHECK(hostile(dir, zero) == "general.alignment is 0: it must be a nonzero power of two");
    GgufWriter odd;
    odd.u32("general.alignment", 48);
    CHECK(hostile(dir, odd) == "general.alignment is 48: it must be a nonzero power of two");
    GgufWriter wide;
    wide.u64("general.alignment", 64);
    CHECK(hostile(dir, wide) == "general.alignment is a uint64, not a uint32");
  }
  SECTION("version 1, a big-endian version 1, version 4") {
    GgufWriter v1;
    v1.version = 1;
    CHECK(hostile(dir, v1) == "GGUF version 1 (32-bit counts) is not supported: versions 2 and 3 are read");
    GgufWriter big;
    big.version = 0x01000000;  // 1 written big-endian (a big-endian version 3 is read: gguf_wild_test.cpp)
    CHECK(hostile(dir, big) == "GGUF version 1 (32-bit counts) is not supported (a big-endian file): versions 2 and "
                               "3 are read");
    GgufWriter v4;
    v4.version = 4;
    CHECK(hostile(dir, v4) == "GGUF version 4 is not supported: versions 2 and 3 are read");
  }
  SECTION("not GGUF, empty, cut in the header") {
    const std::string path = dir.file("short.gguf");
    testutil::write_bytes(path, "ONNX....");
    CHECK(error_of(path) == "not a GGUF file: it does not start with 'GGUF'");
    testutil::write_bytes(path, "");
    CHECK(error_of(path) == "file is empty");
    testutil::write_bytes(path, std::string("GGUF\3\0", 6));
    CHECK(error_of(path) == "truncated: the version at byte 4 needs 4 bytes but the file ends at byte 6");
    CHECK(error_of(dir.file("absent.gguf")) == "cannot open: No such file or directory");
    CHECK(error_of(dir.path.string()) == "is a directory, not a GGUF file");
  }
}

// The published table: llama.cpp's ggml/src/ggml-common.h, each block struct's size as its
// static_assert spells it (ggml_half = 2 bytes, QK_K = 256), with ggml.c's type_traits blck_size and
// the type numbers of ggml/include/ggml.h.
TEST_CASE("gguf: every ggml type's block size is the published one", "[gguf]") {
  struct Row {
    uint32_t id;
    const char* name;
    uint32_t block_elements, block_bytes;
  };
  constexpr uint32_t K = 256;
  const Row published[] = {
      {0, "F32", 1, 4},
      {1, "F16", 1, 2},
      {2, "Q4_0", 32, 2 + 32 / 2},
      {3, "Q4_1", 32, 2 * 2 + 32 / 2},
      {6, "Q5_0", 32, 2 + 4 + 32 / 2},
      {7, "Q5_1", 32, 2 * 2 + 4 + 32 / 2},
      {8, "Q8_0", 32, 2 + 32},
      {9, "Q8_1", 32, 2 * 2 + 32},
      {10, "Q2_K", K, 2 * 2 + K / 16 + K / 4},
      {11, "Q3_K", K, 2 + K / 4 + K / 8 + 12},
      {12, "Q4_K", K, 2 * 2 + 12 + K / 2},
      {13, "Q5_K", K, 2 * 2 + 12 + K / 2 + K / 8},
      {14, "Q6_K", K, 2 + K / 16 + 3 * K / 4},
      {15, "Q8_K", K, 4 + K + K / 16 * 2},
      {16, "IQ2_XXS", K, 2 + K / 8 * 2},
      {17, "IQ2_XS", K, 2 + K / 8 * 2 + K / 32},
      {18, "IQ3_XXS", K, 2 + 3 * (K / 8)},
      {19, "IQ1_S", K, 2 + K / 8 + K / 16},
      {20, "IQ4_NL", 32, 2 + 32 / 2},
      {21, "IQ3_S", K, 2 + 13 * (K / 32) + K / 64},
      {22, "IQ2_S", K, 2 + K / 4 + K / 16},
      {23, "IQ4_XS", K, 2 + 2 + K / 64 + K / 2},
      {24, "I8", 1, 1},
      {25, "I16", 1, 2},
      {26, "I32", 1, 4},
      {27, "I64", 1, 8},
      {28, "F64", 1, 8},
      {29, "IQ1_M", K, K / 8 + K / 16 + K / 32},
      {30, "BF16", 1, 2},
      {34, "TQ1_0", K, 2 + K / 64 + (K - 4 * K / 64) / 5},
      {35, "TQ2_0", K, 2 + K / 4},
      {39, "MXFP4", 32, 1 + 32 / 2},
      {40, "NVFP4", 64, 64 / 16 + 64 / 2},
      {41, "Q1_0", 128, 2 + 128 / 8},
      {42, "Q2_0", 64, 2 + 64 / 4},
  };
  std::vector<bool> listed(64, false);
  for (const Row& r : published) {
    INFO(r.name);
    const GgmlType* t = ggml_type(r.id);
    REQUIRE(t);
    CHECK(std::string(t->name) == r.name);
    CHECK(t->id == r.id);
    CHECK(t->block_elements == r.block_elements);
    CHECK(t->block_bytes == r.block_bytes);
    listed[r.id] = true;
  }
  // The removed numbers (4, 5, 31-33, 36-38) and anything past Q2_0 are unknown.
  for (uint32_t id = 0; id < 64; ++id) {
    INFO(id);
    CHECK((ggml_type(id) != nullptr) == listed[id]);
  }
  CHECK(ggml_type(UINT32_MAX) == nullptr);

  // @huggingface/gguf 0.4.6's GGML_QUANT_SIZES (dist/index.js, calcBPW(block, bytes)) agrees on every
  // type but Q8_1, where it keeps ggml's old block of two float32 scales: 4 + 4 + 32 = 40 bytes.
  const std::pair<uint32_t, uint32_t> huggingface[] = {
      {2, 2 + 16}, {3, 2 + 2 + 16}, {6, 2 + 4 + 16}, {7, 2 + 2 + 4 + 16}, {8, 2 + 32},
      {10, 2 + 2 + K / 16 + K / 4}, {11, 2 + K / 4 + K / 8 + 12}, {12, 2 + 2 + K / 2 + 12},
      {13, 2 + 2 + K / 2 + K / 8 + 12}, {14, 2 + K / 2 + K / 4 + K / 16}, {15, 4 + K + K / 8},
      {16, 2 + K / 4}, {17, 2 + K / 4 + K / 32}, {18, 2 + K / 4 + K / 8}, {19, 2 + K / 8 + K / 16},
      {20, 2 + 16}, {21, 2 + K / 4 + K / 8 + K / 32 + 4}, {22, 2 + K / 4 + K / 16},
      {23, 2 + 2 + K / 2 + K / 64}, {29, K / 8 + K / 16 + K / 32}, {34, 2 + 4 * 13}, {35, 2 + 64},
      {39, 1 + 16}, {40, 4 + 32}, {41, 2 + 16}, {42, 2 + 16},
  };
  for (const auto& [id, bytes] : huggingface) {
    INFO(id);
    CHECK(ggml_type(id)->block_bytes == bytes);
  }
  CHECK(ggml_type(9)->block_bytes == 40 - 4);  // Q8_1: ggml's two halves, not Hugging Face's two floats
}

TEST_CASE("gguf: the llama-style checkpoint audited: blocks by llama.cpp's names, heads from the metadata", "[gguf][checkpoint]") {
  testutil::TempDir dir;
  const std::string path = dir.file("llama.gguf");
  llama_writer().write(path);
  Audit a = audit_file(path);
  // Heads from llama.attention.head_count 32 and head_count_kv 8; head size 4,096 / 32 = 128.
  REQUIRE(a.attention.blocks.size() == 2);
  for (const AttentionBlock& b : a.attention.blocks) {
    CHECK(b.heads == 32);
    CHECK(b.kv_heads == 8);
    CHECK(b.head_dim == 128);
    CHECK(b.width == 4096);
    // attn_q and attn_output 4,096 x 4,096 = 16,777,216; attn_k and attn_v 1,024 x 4,096 = 4,194,304.
    CHECK(b.q.total() == 16777216);
    CHECK(b.k.total() == 4194304);
    CHECK(b.v.total() == 4194304);
    CHECK(b.o.total() == 16777216);
  }
  // Every tensor has a part by its name: token_embd 32,000 x 4,096 = 131,072,000, output the same;
  // feed-forward 2 x 3 x 11,008 x 4,096 = 270,532,608; norms 5 x 4,096 = 20,480; attention
  // 2 x 41,943,040 = 83,886,080: 616,583,168 in all, the elements of the reader's test above.
  CHECK(a.composition.embeddings == 131072000);
  CHECK(a.composition.lm_head == 131072000);
  CHECK(a.composition.feed_forward == 270532608);
  CHECK(a.composition.norms == 20480);
  CHECK(a.composition.attention == 83886080);
  CHECK(a.composition.other == 0);
  CHECK(a.framework.parameters == 616583168);
  CHECK(a.inventory.bytes == 594518016);
  // The K/V cache in llama.cpp's default f16: 2 layers x 8 K/V heads x (128 + 128) x 2 bytes = 8,192
  // per token; 33,554,432 at 4,096 tokens.
  CHECK(a.cost.kv_bytes_per_token == 8192);
  CHECK(a.cost.kv_bytes_at_context == 33554432);
  // --max-bytes gates what the weights take in the file, by each type's blocks (594,518,016 bytes),
  // not parameters x 2 (1,233,166,336): one byte less than the file's weights fails it.
  CHECK(testutil::cli({"audit", path, "--max-bytes", "594518016"}).code == 0);
  auto over = testutil::cli({"audit", path, "--max-bytes", "594518015"});
  CHECK(over.code == 1);
  CHECK(over.err.find("max-bytes: parameter bytes 594,518,016") != std::string::npos);
}

TEST_CASE("gguf: a long string value keeps its first 65,536 bytes, and the reader goes on after it", "[gguf]") {
  testutil::TempDir dir;
  const std::string path = dir.file("long.gguf");
  GgufWriter w;
  w.str("general.architecture", "llama").str("tokenizer.chat_template", std::string(100000, 'x')).u32("llama.block_count", 1);
  w.tensor("output_norm.weight", {8}, kF32);
  w.write(path);
  Checkpoint c = read_gguf(path);
  CHECK(c.metadata.at("tokenizer.chat_template").s.size() == 65536);
  CHECK(c.metadata.at("llama.block_count").u == 1);  // the key after it is read where it is
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].elements == 8);
}
