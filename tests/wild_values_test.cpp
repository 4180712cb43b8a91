// wild_values_test.cpp: values real files hold that a strict reader refuses (issue 37): MLX's
// safetensors header with "__metadata__": null, and Python's Infinity and NaN in a config.json.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "checkpoint/readers.h"
#include "headcount/error.h"
#include "headcount/families.h"
#include "test_util.h"

using namespace headcount;

using testutil::le64;

namespace {

Checkpoint read(const std::string& header, size_t data) {
  std::string bytes = testutil::safetensors_file(header, data);
  MemorySource source(bytes.data(), bytes.size(), "x.safetensors");
  return read_safetensors(source);
}

std::string error_of(const std::string& header, size_t data) {
  try {
    read(header, data);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: \"__metadata__\": null is no metadata, as MLX writes it", "[checkpoint]") {
  // One F32 [2, 3] tensor: 6 elements, 24 bytes.
  Checkpoint c = read(R"({"__metadata__":null,"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", 24);
  REQUIRE(c.tensors.size() == 1);
  CHECK(c.tensors[0].elements == 6);
  CHECK(c.tensors[0].bytes == 24);
  CHECK(c.metadata.empty());
  // After the tensor, too.
  CHECK(read(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"__metadata__":null})", 24).tensors.size() == 1);
  // Still one metadata entry at most, and null nowhere else.
  CHECK(error_of(R"({"__metadata__":null,"__metadata__":{}})", 0) == "the header holds a second \"__metadata__\"");
  CHECK(error_of(R"({"w":null})", 0).find("a null value where the format has none") != std::string::npos);
}

TEST_CASE("config.json: Python's Infinity and NaN are read as null, strings are left alone", "[families]") {
  // Nemotron-H's config holds "time_step_limit": [0.0, Infinity].
  ModelConfig c = parse_model_config(R"({"model_type": "llama", "hidden_size": 32, "num_attention_heads": 4,
      "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 100,
      "time_step_limit": [0.0, Infinity], "floor": -Infinity, "x": NaN, "name": "NaN, Infinity"})",
                                     "config.json");
  CHECK(c.hidden.opt() == 32);
  CHECK(c.values.at("name").text == "NaN, Infinity");
  CHECK(c.values.at("time_step_limit").items.size() == 2);
  CHECK(c.values.at("time_step_limit").items[1].kind == ConfigValue::Kind::Null);
  CHECK(c.heads.opt() == 4);
  CHECK(c.kv_heads.opt() == 2);
  CHECK(c.layers.opt() == 2);
  // Inside a string, after an escaped quote too, the words are text.
  ModelConfig quoted = parse_model_config(R"({"model_type": "llama", "num_attention_heads": 4,
      "note": "a \" NaN, Infinity \" b", "heads": NaN})",
                                          "config.json");
  CHECK(quoted.heads.opt() == 4);
  REQUIRE(quoted.values.count("note"));
  CHECK(quoted.values.at("note").text == "a \" NaN, Infinity \" b");
  CHECK(quoted.values.at("heads").kind == ConfigValue::Kind::Null);  // the bare NaN after it
  // A word that is not one of the three is still not JSON.
  CHECK_THROWS_WITH(parse_model_config(R"({"model_type": "llama", "x": Infinit})", "config.json"),
                    "model config 'config.json' is not valid JSON");
  CHECK_THROWS_WITH(parse_model_config(R"({"model_type": "llama", "x": NaNa})", "config.json"),
                    "model config 'config.json' is not valid JSON");
}
