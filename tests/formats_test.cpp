// formats_test.cpp: the table of formats (src/checkpoint/formats.h): every row's name and kind,
// each recogniser on bytes and names made by hand, and a file of each format opened through its
// row. checkpoint_format() answers as the table does.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "checkpoint/formats.h"
#include "gguf_writer.h"
#include "headcount/checkpoint.h"
#include "test_util.h"

using namespace headcount;

using testutil::le64;

namespace {

const char* name_of_bytes(const std::string& head, uint64_t size) { return format_of_bytes(head.data(), size).name; }

}  // namespace

TEST_CASE("formats: one row per format, each with its name and kind", "[formats]") {
  const auto& rows = file_formats();
  REQUIRE(rows.size() == 3);
  CHECK(std::string(rows[0].name) == "onnx");
  CHECK(std::string(rows[1].name) == "gguf");
  CHECK(std::string(rows[2].name) == "safetensors");
  CHECK(rows[0].kind == FormatKind::Onnx);
  CHECK(rows[1].kind == FormatKind::Gguf);
  CHECK(rows[2].kind == FormatKind::Safetensors);
  CHECK_FALSE(rows[0].checkpoint);
  CHECK(rows[1].checkpoint);
  CHECK(rows[2].checkpoint);
  // Only ONNX is read from bytes in memory; the checkpoints from their files.
  CHECK(rows[0].open_bytes != nullptr);
  CHECK(rows[1].open_bytes == nullptr);
  CHECK(rows[2].open_bytes == nullptr);
  for (FormatKind k : {FormatKind::Onnx, FormatKind::Safetensors, FormatKind::Gguf}) CHECK(format_row(k).kind == k);
}

TEST_CASE("formats: recognised by name, without opening the file", "[formats]") {
  testutil::TempDir dir;  // none of these files exists: the name alone decides
  CHECK(std::string(format_of(dir.file("m.safetensors")).name) == "safetensors");
  CHECK(std::string(format_of(dir.file("model.safetensors.index.json")).name) == "safetensors");
  CHECK(std::string(format_of(dir.file("llama-q4.gguf")).name) == "gguf");
  CHECK(std::string(format_of(dir.file("model.onnx")).name) == "onnx");
  CHECK(std::string(format_of(dir.file("other.index.json")).name) == "onnx");  // not a safetensors index's name
  CHECK(checkpoint_format(dir.file("m.safetensors")) == "safetensors");
  CHECK(checkpoint_format(dir.file("llama-q4.gguf")) == "gguf");
  CHECK(checkpoint_format(dir.file("model.onnx")).empty());
}

TEST_CASE("formats: recognised by the first 9 bytes", "[formats]") {
  // GGUF: the magic "GGUF", whatever follows.
  CHECK(std::string(name_of_bytes(std::string("GGUF\x03\0\0\0\0", 9), 100)) == "gguf");
  // safetensors: a length n, 2 <= n <= size - 8, then '{'. n = 2 needs a file of 2 + 8 = 10 bytes.
  CHECK(std::string(name_of_bytes(le64(2) + "{", 10)) == "safetensors");
  CHECK(std::string(name_of_bytes(le64(2) + "{", 9)) == "onnx");    // 2 > 9 - 8
  CHECK(std::string(name_of_bytes(le64(1) + "{", 100)) == "onnx");  // shorter than "{}"
  CHECK(std::string(name_of_bytes(le64(2) + "[", 100)) == "onnx");  // not an object
  CHECK(std::string(name_of_bytes(le64(2) + "{", 8)) == "onnx");    // fewer than 9 bytes: no row asks
  // Both at once: "GGUF" then version 3 reads as n = 3 * 2^32 + 0x46554747 = 12,884,901,888 +
  // 1,179,993,927 = 14,064,895,815, and a tensor count of 123 puts '{' (0x7b) at byte 8. In a file
  // of n + 8 = 14,064,895,823 bytes both rows recognise it; GGUF's row is asked first.
  const std::string both = std::string("GGUF\x03\0\0\0", 8) + "{";
  const uint64_t size = 14064895823u;
  CHECK(format_row(FormatKind::Safetensors).by_bytes(both.data(), size));
  CHECK(format_row(FormatKind::Gguf).by_bytes(both.data(), size));
  CHECK(std::string(name_of_bytes(both, size)) == "gguf");
  CHECK(checkpoint_format_of(both.data(), size) == "gguf");
  CHECK(checkpoint_format_of("\x08\0\0\0\0\0\0\0{", 20) == "safetensors");  // n = 8 <= 20 - 8 = 12
  CHECK(checkpoint_format_of("\x08\0\0\0\0\0\0\0{", 15).empty());           // n = 8 > 15 - 8 = 7
}

TEST_CASE("formats: a file with no telling name is recognised by its bytes; a folder by what it holds", "[formats]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("weights.bin"), le64(2) + "{}");          // n = 2 = 10 - 8
  testutil::write_bytes(dir.file("quant.bin"), std::string("GGUF\x03\0\0\0\0\0", 10));
  testutil::write_bytes(dir.file("short.bin"), "GGUF\x03");                  // 5 bytes: fewer than 9
  CHECK(std::string(format_of(dir.file("weights.bin")).name) == "safetensors");
  CHECK(std::string(format_of(dir.file("quant.bin")).name) == "gguf");
  CHECK(std::string(format_of(dir.file("short.bin")).name) == "onnx");
  CHECK(std::string(format_of(dir.file("missing.bin")).name) == "onnx");  // the loader says it is missing

  std::filesystem::create_directories(dir.path / "a");
  std::filesystem::create_directories(dir.path / "b");
  std::filesystem::create_directories(dir.path / "c");
  testutil::write_bytes((dir.path / "a" / "model.safetensors").string(), "");
  testutil::write_bytes((dir.path / "b" / "x.safetensors.index.json").string(), "");
  testutil::write_bytes((dir.path / "c" / "x.gguf").string(), "");  // no row reads a folder of GGUF files
  CHECK(std::string(format_of((dir.path / "a").string()).name) == "safetensors");
  CHECK(std::string(format_of((dir.path / "b").string()).name) == "safetensors");
  CHECK(std::string(format_of((dir.path / "c").string()).name) == "onnx");
}

TEST_CASE("formats: a file of each format opened through its row", "[formats]") {
  testutil::TempDir dir;
  // safetensors: one F32 [2, 3] tensor, 6 elements x 4 bytes = 24 data bytes.
  const std::string header = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  testutil::write_bytes(dir.file("m.safetensors"), le64(header.size()) + header + std::string(24, '\0'));
  Model st = format_of(dir.file("m.safetensors")).open(dir.file("m.safetensors"), {});
  REQUIRE(st.checkpoint);
  CHECK(st.checkpoint->kind == FormatKind::Safetensors);
  CHECK(st.checkpoint->format == "safetensors");
  REQUIRE(st.weights.size() == 1);
  CHECK(st.weights[0].elements == 6);
  CHECK(st.weights[0].bytes == 24);

  // GGUF: one F32 tensor of ne {3, 2}: shape [2, 3] outermost first, 6 elements, 24 bytes.
  gguf_test::GgufWriter w;
  w.str("general.architecture", "llama").tensor("w", {3, 2}, gguf_test::kF32);
  w.write(dir.file("m.gguf"));
  Model gg = format_of(dir.file("m.gguf")).open(dir.file("m.gguf"), {});
  REQUIRE(gg.checkpoint);
  CHECK(gg.checkpoint->kind == FormatKind::Gguf);
  CHECK(gg.checkpoint->format == "gguf");
  REQUIRE(gg.weights.size() == 1);
  CHECK(gg.weights[0].elements == 6);
  CHECK(gg.weights[0].bytes == 24);

  // ONNX: the BERT sample, a graph and no checkpoint.
  const std::string bert = std::string(HEADCOUNT_SAMPLES_DIR) + "/bert_tiny.onnx";
  const FormatRow& row = format_of(bert);
  CHECK(row.kind == FormatKind::Onnx);
  Model onnx = row.open(bert, {});
  CHECK_FALSE(onnx.checkpoint);
  CHECK_FALSE(onnx.nodes.empty());
}
