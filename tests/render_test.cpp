// render_test.cpp: number formatting and JSON string escaping used by every renderer, and the
// count words of the reports.
#include <catch2/catch.hpp>

#include <sstream>

#include "../src/render/json_writer.h"
#include "headcount/numbers.h"
#include "headcount/audit.h"
#include "graph_builder.h"
#include "test_util.h"

using namespace headcount;

TEST_CASE("with_commas groups thousands", "[render]") {
  CHECK(with_commas(0) == "0");
  CHECK(with_commas(999) == "999");
  CHECK(with_commas(1000) == "1,000");
  CHECK(with_commas(109482240) == "109,482,240");
  CHECK(with_commas(18446744073709551615ull) == "18,446,744,073,709,551,615");
}

TEST_CASE("human_bytes uses decimal units", "[render]") {
  CHECK(human_bytes(999) == "999 B");
  CHECK(human_bytes(437928960) == "437.9 MB");
}

TEST_CASE("JSON strings are escaped per RFC 8259", "[render]") {
  CHECK(JsonWriter::escape("a\"b\\c\n\t\x01") == "a\\\"b\\\\c\\n\\t\\u0001");
  std::ostringstream out;
  JsonWriter j(out);
  j.begin_object().field("n", uint64_t{18446744073709551615ull}).key("shape").int_array(std::vector<int64_t>{2, 3}).end_object();
  CHECK(out.str() == "{\n  \"n\": 18446744073709551615,\n  \"shape\": [2, 3]\n}");
}

TEST_CASE("JSON strings: a byte that needs escaping is found at every place of a long name", "[render]") {
  // The writer copies a run of plain bytes at once (16 at a time where it can); each byte that
  // RFC 8259 escapes, or that is not ASCII, is put at each place of a name of 1 to 41 bytes, and the
  // written value must be the name with that one byte escaped:
  //   '"' -> \"   '\\' -> \\\\   0x1F -> \u001f   0x7F -> \u007f   0xC3 0xA9 (é, valid UTF-8) as is
  //   0xFF (never valid UTF-8) -> U+FFFD (EF BF BD)
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"", "\\\""}, {"\\", "\\\\"}, {"\x1f", "\\u001f"}, {"\x7f", "\\u007f"},
      {"\xc3\xa9", "\xc3\xa9"}, {"\xff", "\xef\xbf\xbd"}};
  // Names of other lengths too: shorter than one block of 16, one block, a block and a tail.
  for (const auto& [byte, escaped] : cases) {
    for (size_t plain : {size_t{0}, size_t{1}, size_t{7}, size_t{14}, size_t{15}, size_t{16}, size_t{30}, size_t{40}}) {
      for (size_t at = 0; at <= plain; ++at) {
        const std::string name = std::string(at, 'a') + byte + std::string(plain - at, 'b');
        std::ostringstream out;
        {
          JsonWriter j(out, -1);
          j.value(name);
        }
        CHECK(out.str() == "\"" + std::string(at, 'a') + escaped + std::string(plain - at, 'b') + "\"");
      }
    }
  }
  std::ostringstream out;
  {
    JsonWriter j(out, -1);
    j.value(std::string(100, 'x'));  // plain throughout: copied as it is
  }
  CHECK(out.str() == "\"" + std::string(100, 'x') + "\"");
}

TEST_CASE("count words agree with their count in every summary", "[render][cli]") {
  // One layer of 4 heads × 4 features on width 8: 16 ≠ 8 is one width-mismatch warning, and
  // nothing else above info.
  testutil::LayerSpec s;
  s.width = 8;
  s.heads = 4;
  s.head_dim = 4;
  testutil::TempDir dir;
  std::string path = dir.file("model.onnx");
  testutil::save(testutil::layers_model({s}), path);
  auto html = testutil::cli({"audit", path, "-f", "html"});
  REQUIRE(html.code == 0);
  CHECK_THAT(html.out, Catch::Contains("<td class='n'>0 errors, 1 warning, 0 info</td>"));
  CHECK(html.out.find("1 warnings") == std::string::npos);
  // Q: 4 heads × 4 in the figure's caption, plural; the page never writes "1 parameters".
  CHECK_THAT(html.out, Catch::Contains("Q 8 × 16: 4 heads × 4</figcaption>"));
  CHECK(html.out.find(" 1 parameters") == std::string::npos);
  auto md = testutil::cli({"audit", path, "-f", "markdown"});
  CHECK_THAT(md.out, Catch::Contains("| 1 warning |"));
  auto text = testutil::cli({"audit", path});
  CHECK_THAT(text.out, Catch::Contains(" in 1 block ("));
  CHECK_THAT(text.out, Catch::Contains("  1 attention block; every softmax is accounted for\n"));
}
