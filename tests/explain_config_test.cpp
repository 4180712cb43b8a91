// explain_config_test.cpp: `headcount explain --config` on the public configs of four models whose
// counts are published. Every expected integer is worked by hand in the comment from the config's
// numbers and the family's modules (Hugging Face transformers' modeling code); each must also
// agree with the published rounded figure at its precision.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "headcount/families.h"
#include "headcount/error.h"
#include "test_util.h"

using namespace headcount;
using testutil::CliResult;
using testutil::cli;
using Json = nlohmann::json;
using Catch::Matchers::Message;

namespace {

std::string config(const std::string& name) { return std::string(HEADCOUNT_CONFIGS_DIR) + "/" + name + ".config.json"; }

FamilyCount count_of(const std::string& name) { return family_count_or_explain(read_model_config(config(name))); }

// A published figure in billions with `digits` decimals agrees when the exact count is within one
// unit of its last digit (publishers round or truncate).
bool agrees(uint64_t exact, double published_billions, int digits) {
  double unit = std::pow(10.0, -digits);
  return std::fabs(static_cast<double>(exact) / 1e9 - published_billions) < unit;
}

}  // namespace

TEST_CASE("explain --config: Llama-2-7B is 6,738,415,616 (6.74B)", "[families]") {
  // embeddings 32000·4096 = 131,072,000; per layer: attention 4·4096² = 67,108,864, feed-forward
  // 3·4096·11008 = 135,266,304, norms 2·4096 = 8,192: 202,383,360 · 32 = 6,476,267,520; final norm
  // 4,096; LM head (untied) 131,072,000. Total 6,738,415,616.
  FamilyCount f = count_of("llama-2-7b");
  CHECK(f.total == 6738415616u);
  CHECK(agrees(f.total, 6.74, 2));
  CHECK_FALSE(f.active.has_value());
  // K/V cache: 32 layers · 32 heads · (128 + 128) · 2 bytes (float16) = 524,288.
  CHECK(f.kv_bytes_per_token == 524288u);
}

TEST_CASE("explain --config: Mixtral-8x7B is 46.7B with 12.9B active", "[families]") {
  // Per layer: attention 4096·4096 + 2·4096·1024 + 4096·4096 = 41,943,040; 8 experts · 3·4096·14336
  // = 8 · 176,160,768 = 1,409,286,144; router 4096·8 = 32,768; norms 8,192: 1,451,270,144.
  // · 32 = 46,440,644,608; + embeddings and LM head 2 · 131,072,000 + final norm 4,096
  // = 46,702,792,704. Active: less 32 · (8 − 2) · 176,160,768 = 33,822,867,456 -> 12,879,925,248.
  FamilyCount f = count_of("mixtral-8x7b");
  CHECK(f.total == 46702792704u);
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 12879925248u);
  CHECK(agrees(f.total, 46.7, 1));
  CHECK(agrees(*f.active, 12.9, 1));
  CHECK(f.moe_layers == 32);
  CHECK(f.experts == 8);
  CHECK(f.experts_per_token == 2);
  CHECK(f.expert_size == 176160768u);
  // K/V: 32 · 8 · 256 · 2 (bfloat16) = 131,072.
  CHECK(f.kv_bytes_per_token == 131072u);
}

TEST_CASE("explain --config: Qwen3-30B-A3B is 30.5B with 3.3B active", "[families]") {
  // Per layer: attention 2048·4096 + 2·2048·512 + 4096·2048 = 18,874,368, q_norm and k_norm 2·128;
  // 128 experts · 3·2048·768 = 128 · 4,718,592 = 603,979,776; router 2048·128 = 262,144; norms
  // 4,096: 623,120,640 · 48 = 29,909,790,720; + 2 · 151936·2048 = 622,329,856 + final norm 2,048
  // = 30,532,122,624. Active: less 48 · 120 · 4,718,592 = 27,179,089,920 -> 3,353,032,704.
  FamilyCount f = count_of("qwen3-30b-a3b");
  CHECK(f.total == 30532122624u);
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 3353032704u);
  CHECK(agrees(f.total, 30.5, 1));
  CHECK(agrees(*f.active, 3.3, 1));
}

TEST_CASE("explain --config: DeepSeek-V3 is 671B with 37B active, its MTP module apart", "[families]") {
  // MLA per layer: q_a 7168·1536 = 11,010,048 + q_a norm 1,536 + q_b 1536·128·192 = 37,748,736 +
  // kv_a 7168·576 = 4,128,768 + kv_a norm 512 + kv_b 512·128·256 = 16,777,216 + o 128·128·7168 =
  // 117,440,512: 187,107,328. Norms 2·7168 = 14,336 per layer.
  // 3 dense layers: 187,107,328 + 3·7168·18432 (396,361,728) + 14,336 = 583,483,392 · 3
  // = 1,750,450,176.
  // 58 MoE layers: 187,107,328 + 256 · 44,040,192 (3·7168·2048) + 1 shared 44,040,192 + router
  // 7168·256 = 1,835,008 + score bias 256 + 14,336 = 11,507,286,272 · 58 = 667,422,603,776.
  // Embeddings and LM head 2 · 129280·7168 = 1,853,358,080, final norm 7,168.
  // Total 671,026,419,200. Active: less 58 · 248 · 44,040,192 = 633,474,121,728 -> 37,552,297,472.
  FamilyCount f = count_of("deepseek-v3");
  CHECK(f.total == 671026419200u);
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 37552297472u);
  CHECK(agrees(f.total, 671, 0));
  CHECK(agrees(*f.active, 37, 0));
  CHECK(f.moe_layers == 58);
  // MTP: one more MoE layer 11,507,286,272 + eh_proj 2·7168·7168 = 102,760,448 + 3 norms 21,504
  // = 11,610,068,224, not in the total.
  CHECK(f.mtp_total == 11610068224u);
  // K/V cache: the latent and the RoPE key, 61 · (512 + 64) · 2 bytes = 70,272.
  CHECK(f.kv_bytes_per_token == 70272u);
}

TEST_CASE("explain --config: the command line, in text and JSON", "[families]") {
  CliResult r = cli({"explain", "--config", config("mixtral-8x7b")});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("Mixtral (model_type mixtral, " + config("mixtral-8x7b") + "): 46,702,792,704 parameters (46.70B)\n", 0) == 0);
  // One expert per layer: 46,702,792,704 − 32 · 7 · 176,160,768 = 7,242,780,672; 8 copies:
  // 57,942,245,376, where "8x7B" suggests 56B and the model holds 46.7B.
  CHECK(r.out.find("has 7,242,780,672 (7.24B); 8 copies of it\n  would be 57.94B, but the total is 46.70B.") !=
        std::string::npos);
  r = cli({"explain", "--config", config("qwen3-30b-a3b"), "-f", "json"});
  CHECK(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["total"] == 30532122624u);
  CHECK(j["active"] == 3353032704u);
  CHECK(j["experts"]["per_token"] == 8);
  CHECK(j["kv_bytes_per_token"] == 98304u);  // 48 · 4 · 256 · 2
}

TEST_CASE("explain --config: what headcount does not know is an error, never a guess", "[families]") {
  testutil::TempDir dir;
  std::string text = testutil::read_text(config("llama-2-7b"));
  SECTION("a field that changes the count and that the family's formula does not read") {
    std::string edited = text;
    edited.insert(edited.rfind('}'), ",\n  \"num_local_experts\": 8\n");
    testutil::write_bytes(dir.file("config.json"), edited);
    CliResult r = cli({"explain", "--config", dir.file("config.json")});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: model config '" + dir.file("config.json") + "': 'num_local_experts' changes the "
                   "parameter count, and headcount's llama formula does not read it; counting without it would be a guess\n");
  }
  SECTION("an unknown model_type") {
    std::string edited = text;
    edited.replace(edited.find("\"llama\""), 7, "\"falcon\"");
    testutil::write_bytes(dir.file("config.json"), edited);
    CliResult r = cli({"explain", "--config", dir.file("config.json")});
    CHECK(r.code == 2);
    CHECK(r.err.rfind("headcount: error: model config '" + dir.file("config.json") +
                      "': headcount does not know the model_type 'falcon' (it knows bert, ", 0) == 0);
  }
  SECTION("a missing number") {
    std::string edited = text;
    edited.replace(edited.find("\"vocab_size\": 32000"), 19, "\"vocab\": 32000");
    testutil::write_bytes(dir.file("config.json"), edited);
    CliResult r = cli({"explain", "--config", dir.file("config.json")});
    CHECK(r.code == 2);
    CHECK(r.err == "headcount: error: model config '" + dir.file("config.json") +
                       "': the llama formula needs a number the config does not give (vocab_size)\n");
  }
  SECTION("null or false values change nothing") {
    std::string edited = text;
    edited.insert(edited.rfind('}'), ",\n  \"num_local_experts\": null,\n  \"mlp_bias\": false\n");
    testutil::write_bytes(dir.file("config.json"), edited);
    CHECK(family_count_or_explain(read_model_config(dir.file("config.json"))).total == 6738415616u);
  }
}
