// render_test.cpp: number formatting and JSON string escaping used by every renderer.
#include <catch2/catch.hpp>

#include <sstream>

#include "../src/render/json_writer.h"
#include "headcount/numbers.h"
#include "headcount/report.h"

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
