// explain_config_test.cpp: `headcount explain --config` on the public configs of models whose
// counts are published. Every expected integer is worked by hand in the comment from the config's
// numbers and the family's modules (Hugging Face transformers' modeling code, vLLM's for the
// multi-token-prediction modules); each must also agree with the published rounded figure at its
// precision. K/V caches are checked per token and at 4,096 and 32,768 tokens, sliding and chunked
// layers keeping at most their window.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "headcount/families.h"
#include "headcount/error.h"
#include "config_test_util.h"
#include "test_util.h"

using namespace headcount;
using namespace configtest;
using testutil::CliResult;
using testutil::cli;
using Json = nlohmann::json;
using Catch::Matchers::Message;

namespace {

FamilyCount count_of(const std::string& name) { return family_count_or_explain(read_model_config(config(name))); }

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
  SECTION("an unknown model_type whose architectures name no known class is estimated, and says so") {
    // Issue 38 item 4: not refused; read from the common field names as a LLaMA-style decoder,
    // which Llama-2-7B's numbers are: 6,738,415,616 as worked above.
    std::string edited = text;
    edited.replace(edited.find("\"llama\""), 7, "\"falcon\"");
    edited.replace(edited.find("LlamaForCausalLM"), 16, "FalconForCausalLM");
    testutil::write_bytes(dir.file("config.json"), edited);
    CliResult r = cli({"explain", "--config", dir.file("config.json")});
    CHECK(r.code == 0);
    CHECK(r.out.rfind("Estimate for model_type falcon, read as a LLaMA-style decoder (RMSNorms, gated feed-forward, grouped "
                      "K/V heads) (" + dir.file("config.json") + "): 6,738,415,616 parameters (6.74B), an estimate\n", 0) == 0);
    CHECK(r.out.find("note: an estimate: headcount does not know the model_type 'falcon'") != std::string::npos);
  }
  SECTION("an unknown model_type whose architectures name a known class is read as that class") {
    std::string edited = text;
    edited.replace(edited.find("\"llama\""), 7, "\"my_llama\"");
    testutil::write_bytes(dir.file("config.json"), edited);
    ModelConfig c = read_model_config(dir.file("config.json"));
    CHECK(c.family == "llama");
    CHECK(family_count_or_explain(c).total == 6738415616u);
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

TEST_CASE("explain --config: gpt-oss-20b is 20.9B with 3.6B active without the input embedding", "[families]") {
  // d 2880, 24 layers, 64 heads and 8 K/V heads of 64, biases on q/k/v/o, a sink per head:
  // q 2880·4096 + 4096 = 11,800,576; k and v 2·(2880·512 + 512) = 2,950,144; o 4096·2880 + 2880
  // = 11,799,360; sinks 64: 26,550,144 per layer · 24 = 637,203,456 (the card's 0.64B).
  // One expert: gate_up 2880·5760 + 5760 = 16,594,560, down 2880·2880 + 2880 = 8,297,280:
  // 24,891,840; 32 of them 796,538,880 + router 2880·32 + 32 = 92,192: 796,631,072 · 24
  // = 19,119,145,728 (the card's 19.12B). Norms 2·2880·24 + 2880 = 141,120. Embedding and the
  // untied LM head 2 · 201088·2880 = 1,158,266,880 (1.16B).
  // Total 637,203,456 + 19,119,145,728 + 141,120 + 1,158,266,880 = 20,914,757,184.
  // Active: less 24 · (32 − 4) · 24,891,840 = 16,727,316,480 -> 4,187,440,704; without the input
  // embedding 579,133,440: 3,608,307,264 (the card's 3.61B).
  FamilyCount f = count_of("gpt-oss-20b");
  CHECK(f.family == "gpt-oss");
  CHECK(f.total == 20914757184u);
  CHECK(agrees(f.total, 20.9, 1));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 4187440704u);
  REQUIRE(f.active_without_embedding.has_value());
  CHECK(*f.active_without_embedding == 3608307264u);
  CHECK(agrees(*f.active_without_embedding, 3.6, 1));
  CHECK(f.moe_layers == 24);
  CHECK(f.expert_size == 24891840u);
  // K/V: 8 heads · (64 + 64) = 1,024 elements per layer and token. The config declares no
  // torch_dtype, so float32: 24 · 1,024 · 4 = 98,304 bytes per token. layer_types alternate,
  // sliding first: 12 full layers and 12 that keep at most 128 tokens.
  CHECK(f.kv_bytes_per_token == 98304u);
  REQUIRE(f.kv_layers.size() == 2);
  CHECK((f.kv_layers[0].kind == "full" && f.kv_layers[0].layers == 12 && f.kv_layers[0].window == 0));
  CHECK((f.kv_layers[1].kind == "sliding" && f.kv_layers[1].layers == 12 && f.kv_layers[1].window == 128));
  // At 4,096 tokens, float32: 12 · 4,096 B · 4,096 + 12 · 4,096 B · 128 = 201,326,592 + 6,291,456
  // = 207,618,048. At 32,768: 12 · 4,096 · 32,768 = 1,610,612,736 + 6,291,456 = 1,616,904,192.
  CHECK(kv_at(f, 4096, 32) == 207618048u);
  CHECK(kv_at(f, 32768, 32) == 1616904192u);
  // In bfloat16, half: 103,809,024 and 808,452,096.
  CHECK(kv_at(f, 4096, 16) == 103809024u);
  CHECK(kv_at(f, 32768, 16) == 808452096u);
  CHECK(f.state_layers == 0);
  CHECK_FALSE(f.state_bytes.has_value());
}

TEST_CASE("explain --config: gpt-oss-120b is 116.83B with 5.13B active without the input embedding", "[families]") {
  // 36 layers of the same attention (26,550,144) and 128 experts of 24,891,840 = 3,186,155,520 +
  // router 2880·128 + 128 = 368,768: per layer 3,213,074,432 · 36 = 115,670,679,552; norms
  // 2·2880·36 + 2880 = 210,240; embedding and LM head 1,158,266,880. Total 116,829,156,672.
  // Active: less 36 · 124 · 24,891,840 = 111,117,173,760 -> 5,711,982,912, without the input
  // embedding 5,132,849,472 (the card: 116.83B and 5.13B).
  FamilyCount f = count_of("gpt-oss-120b");
  CHECK(f.total == 116829156672u);
  CHECK(agrees(f.total, 116.83, 2));
  REQUIRE(f.active_without_embedding.has_value());
  CHECK(*f.active == 5711982912u);
  CHECK(*f.active_without_embedding == 5132849472u);
  CHECK(agrees(*f.active_without_embedding, 5.13, 2));
  // K/V float32: 36 · 4,096 = 147,456 per token; at 4,096 tokens 18 · 4,096 · 4,096 + 18 · 4,096 ·
  // 128 = 301,989,888 + 9,437,184 = 311,427,072; at 32,768 2,415,919,104 + 9,437,184.
  CHECK(f.kv_bytes_per_token == 147456u);
  CHECK(kv_at(f, 4096, 32) == 311427072u);
  CHECK(kv_at(f, 32768, 32) == 2425356288u);
}

TEST_CASE("explain --config: Gemma 3 1B is 1.0B, five of six layers sliding over 512 tokens", "[families]") {
  // d 1152, 26 layers, 4 heads and 1 K/V head of 256 (head_dim, not 1152 / 4), no biases:
  // q 1152·1024 = 1,179,648, k and v 2·1152·256 = 589,824, o 1024·1152 = 1,179,648: 2,949,120 per
  // layer; gated MLP 3·1152·6912 = 23,887,872; four norms 4·1152 = 4,608 and q_norm, k_norm 2·256.
  // 26 · (2,949,120 + 23,887,872) = 697,761,792; norms 26·4,608 + 1,152 + 26·512 = 134,272;
  // embedding 262144·1152 = 301,989,888, the LM head tied to it. Total 999,885,952 (1.0B).
  FamilyCount f = count_of("gemma-3-1b-it");
  CHECK(f.family == "Gemma 3");
  CHECK(f.total == 999885952u);
  CHECK(agrees(f.total, 1.0, 1));
  CHECK_FALSE(f.active.has_value());
  // sliding_window_pattern 6: layer l is full when (l + 1) % 6 == 0 (5, 11, 17, 23): 4 full, 22
  // sliding over 512. K/V per layer 1 · 512 · 2 bytes (bfloat16) = 1,024: 26,624 per token. At
  // 4,096: 4 · 1,024 · 4,096 + 22 · 1,024 · 512 = 16,777,216 + 11,534,336 = 28,311,552. At 32,768:
  // 134,217,728 + 11,534,336 = 145,752,064.
  CHECK(f.kv_bytes_per_token == 26624u);
  REQUIRE(f.kv_layers.size() == 2);
  CHECK((f.kv_layers[0].layers == 4 && f.kv_layers[1].layers == 22 && f.kv_layers[1].window == 512));
  CHECK(kv_at(f, 4096, 16) == 28311552u);
  CHECK(kv_at(f, 32768, 16) == 145752064u);
}

TEST_CASE("explain --config: Gemma 2 2B is 2.6B, every other layer sliding over 4,096 tokens", "[families]") {
  // d 2304, 26 layers, 8 heads and 4 K/V heads of 256: q 2304·2048 = 4,718,592, k and v
  // 2·2304·1024 = 4,718,592, o 4,718,592: 14,155,776; MLP 3·2304·9216 = 63,700,992; four norms
  // 9,216 (no q/k norm; soft-capping has no weights). 26 · 77,865,984 = 2,024,515,584; final norm
  // 2,304; embedding 256000·2304 = 589,824,000, tied. Total 2,614,341,888 (2.6B).
  FamilyCount f = count_of("gemma-2-2b-it");
  CHECK(f.family == "Gemma 2");
  CHECK(f.total == 2614341888u);
  CHECK(agrees(f.total, 2.6, 1));
  // Even layers slide: 13 full, 13 sliding over 4,096. K/V per layer 4 · 512 · 2 = 4,096 bytes:
  // 106,496 per token. At 4,096 tokens the window holds them all: 26 · 4,096 · 4,096 = 436,207,616.
  // At 32,768: 13 · 4,096 · 32,768 + 13 · 4,096 · 4,096 = 1,744,830,464 + 218,103,808
  // = 1,962,934,272.
  CHECK(f.kv_bytes_per_token == 106496u);
  CHECK(kv_at(f, 4096, 16) == 436207616u);
  CHECK(kv_at(f, 32768, 16) == 1962934272u);
}

TEST_CASE("explain --config: Qwen3-Next-80B-A3B is 80B without its MTP module, 3B active", "[families]") {
  // d 2048, 48 layers, full_attention_interval 4: layers 3, 7, ... 47 are gated attention (12), the
  // other 36 Gated DeltaNet.
  // Gated attention: q (and its gate) 2048·2·16·256 = 16,777,216, k and v 2·2048·2·256 = 2,097,152,
  // o 16·256·2048 = 8,388,608: 27,262,976 · 12 = 327,155,712; q_norm, k_norm 12 · 2·256 = 6,144.
  // Gated DeltaNet (key 16·128 = 2,048, value 32·128 = 4,096): in_proj_qkvz 2048·(2·2,048 +
  // 2·4,096) = 25,165,824, in_proj_ba 2048·64 = 131,072, conv1d (2·2,048 + 4,096)·4 = 32,768,
  // dt_bias and A_log 2·32, norm 128, out_proj 4,096·2048 = 8,388,608: 33,718,464 · 36
  // = 1,213,864,704.
  // MoE in every layer: 512 experts of 3·2048·512 = 3,145,728 (1,610,612,736), a shared expert
  // 3,145,728 with its gate 2,048, router 2048·512 = 1,048,576: 1,614,809,088 · 48
  // = 77,510,836,224. Norms 48 · 2·2048 + 2048 + 6,144 = 204,800. Embedding and LM head
  // 2 · 151936·2048 = 622,329,856. Total 79,674,391,296 (80B; 79B without the embeddings).
  FamilyCount f = count_of("qwen3-next-80b-a3b-instruct");
  CHECK(f.family == "Qwen3-Next");
  CHECK(f.total == 79674391296u);
  CHECK(agrees(f.total, 80, 0));
  CHECK(agrees(f.total - 622329856u, 79, 0));
  // Active: less 48 · 502 · 3,145,728 = 75,799,461,888 -> 3,874,929,408; without the input
  // embedding 3,563,764,480; without the LM head too 3,252,599,552 (the published "3B").
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 3874929408u);
  CHECK(*f.active_without_embedding == 3563764480u);
  CHECK(agrees(*f.active_without_embedding - 311164928u, 3, 0));
  // MTP, apart: one full-attention MoE layer 27,262,976 + 1,610,612,736 + 3,147,776 + 1,048,576 +
  // norms 4,096 + 512 = 1,642,076,672, fc 2·2048·2048 = 8,388,608, three norms 6,144:
  // 1,650,471,424. The config does not say how many: the releases hold one (a note says so).
  CHECK(f.mtp_total == 1650471424u);
  CHECK(f.notes.size() == 1);
  // K/V: 12 attention layers · 2 · 512 · 2 bytes = 24,576 per token; at 4,096: 100,663,296; at
  // 32,768: 805,306,368.
  CHECK(f.kv_bytes_per_token == 24576u);
  CHECK(kv_at(f, 4096, 16) == 100663296u);
  CHECK(kv_at(f, 32768, 16) == 805306368u);
  // Recurrent state per Gated DeltaNet layer: conv 3 · 8,192 = 24,576, state 32·128·128 = 524,288:
  // 548,864 elements; 36 layers · 548,864 · 2 bytes = 39,518,208, whatever the context.
  CHECK(f.state_layers == 36);
  CHECK(f.state_elements == 548864u);
  CHECK(f.state_bytes == 39518208u);
}

TEST_CASE("explain --config: Llama 4 Maverick's text model is 400B with 17B active", "[families]") {
  // text_config: d 5120, 48 layers, 40 heads and 8 K/V heads of 128: attention 5120·5120 +
  // 2·5120·1024 + 5120·5120 = 62,914,560 · 48 = 3,019,898,880 (its q/k norm has no weights).
  // interleave_moe_layer_step 2: layers 1, 3, ... 47 are MoE (24): 128 experts of 3·5120·8192
  // = 125,829,120 (16,106,127,360), a shared expert 125,829,120, router 5120·128 = 655,360:
  // 16,232,611,840 · 24 = 389,582,684,160. The 24 dense layers: 3·5120·16384 = 251,658,240 · 24
  // = 6,039,797,760. Norms 48 · 2·5120 + 5120 = 496,640. Embedding and LM head 2 · 202048·5120
  // = 2,068,971,520. Total 400,711,848,960 (400B).
  // Active: less 24 · 127 · 125,829,120 = 383,527,157,760 -> 17,184,691,200 (17B).
  FamilyCount f = count_of("llama-4-maverick-17b-128e-instruct");
  CHECK(f.family == "Llama 4");
  CHECK(f.total == 400711848960u);
  CHECK(agrees(f.total, 400, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 17184691200u);
  CHECK(agrees(*f.active, 17, 0));
  CHECK(f.moe_layers == 24);
  // Chunked attention: no_rope_layers' default makes every fourth layer a full (NoPE) one: 12
  // full, 36 within chunks of 8,192. K/V 8 · 256 · 2 = 4,096 bytes per layer: 196,608 per token.
  // At 4,096 every layer keeps 4,096 tokens: 48 · 4,096 · 4,096 = 805,306,368. At 32,768:
  // 12 · 4,096 · 32,768 + 36 · 4,096 · 8,192 = 1,610,612,736 + 1,207,959,552 = 2,818,572,288.
  CHECK(f.kv_bytes_per_token == 196608u);
  REQUIRE(f.kv_layers.size() == 2);
  CHECK((f.kv_layers[1].kind == "chunked" && f.kv_layers[1].layers == 36 && f.kv_layers[1].window == 8192));
  CHECK(kv_at(f, 4096, 16) == 805306368u);
  CHECK(kv_at(f, 32768, 16) == 2818572288u);
}

TEST_CASE("explain --config: Jamba v0.1 is 52B with 12B active, 28 Mamba layers of state", "[families]") {
  // d 4096, 32 layers: attention in layers l % 8 == 4 (4 of them), Mamba in the other 28; experts
  // in l % 2 == 1 (16), a dense MLP in the others.
  // Attention (no biases): 4096·4096 + 2·4096·1024 + 4096·4096 = 41,943,040 · 4 = 167,772,160.
  // Mamba (inner 2·4096 = 8,192, N 16, conv 4, dt_rank 256): in_proj 4096·16384 = 67,108,864,
  // conv1d 8192·4 + 8192 = 40,960, x_proj 8192·(256 + 32) = 2,359,296, dt_proj 256·8192 + 8192
  // = 2,105,344, A_log 8192·16 = 131,072, D 8,192, out_proj 8192·4096 = 33,554,432, dt/B/C norms
  // 256 + 32 = 288: 105,308,448 · 28 = 2,948,636,544.
  // MLP 3·4096·14336 = 176,160,768: 16 dense layers 2,818,572,288; 16 MoE layers of 16 experts
  // and a router 4096·16: 16 · (2,818,572,288 + 65,536) = 45,098,205,184. Norms 32 · 2·4096 +
  // 4096 = 266,240. Embedding and LM head 2 · 65536·4096 = 536,870,912. Total 51,570,323,328.
  // Active: less 16 · 14 · 176,160,768 = 39,460,012,032 -> 12,110,311,296 (52B and 12B).
  FamilyCount f = count_of("jamba-v0.1");
  CHECK(f.family == "Jamba");
  CHECK(f.total == 51570323328u);
  CHECK(agrees(f.total, 52, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 12110311296u);
  CHECK(agrees(*f.active, 12, 0));
  // K/V: 4 attention layers · 8 · 256 · 2 bytes = 16,384 per token; 67,108,864 at 4,096 and
  // 536,870,912 at 32,768. State per Mamba layer: conv 3 · 8,192 + 8,192 · 16 = 155,648 elements;
  // 28 · 155,648 · 2 bytes = 8,716,288.
  CHECK(f.kv_bytes_per_token == 16384u);
  CHECK(kv_at(f, 4096, 16) == 67108864u);
  CHECK(kv_at(f, 32768, 16) == 536870912u);
  CHECK(f.state_layers == 28);
  CHECK(f.state_elements == 155648u);
  CHECK(f.state_bytes == 8716288u);
}

TEST_CASE("explain --config: Phi-3-mini is 3.8B, every layer sliding over 2,047 tokens", "[families]") {
  // d 3072, 32 layers, 32 heads of 96, no biases: qkv_proj 3072·(32 + 2·32)·96 = 28,311,552, o
  // 3072·3072 = 9,437,184: 37,748,736; gate_up_proj 3072·16384 + down 8192·3072 = 75,497,472;
  // norms 6,144: 113,252,352 · 32 = 3,624,075,264; final norm 3,072; embedding and LM head
  // 2 · 32064·3072 = 197,001,216. Total 3,821,079,552 (3.8B).
  FamilyCount f = count_of("phi-3-mini-4k-instruct");
  CHECK(f.family == "Phi-3");
  CHECK(f.total == 3821079552u);
  CHECK(agrees(f.total, 3.8, 1));
  // K/V 32 · 192 · 2 = 12,288 bytes per layer: 393,216 per token; every layer keeps at most 2,047
  // tokens: 32 · 12,288 · 2,047 = 804,913,152 at 4,096 and at 32,768 alike.
  CHECK(f.kv_bytes_per_token == 393216u);
  CHECK(kv_at(f, 4096, 16) == 804913152u);
  CHECK(kv_at(f, 32768, 16) == 804913152u);
}

TEST_CASE("explain --config: Kimi K2 is DeepSeek-V3's architecture by name, 1T with 32B active", "[families]") {
  // model_type kimi_k2, architectures DeepseekV3ForCausalLM: counted as deepseek_v3.
  // MLA with 64 heads: q_a 7168·1536 + 1536, q_b 1536·64·192 = 18,874,368, kv_a 7168·576 =
  // 4,128,768 + 512, kv_b 512·64·256 = 8,388,608, o 64·128·7168 = 58,720,256: 101,124,096 · 61
  // = 6,168,569,856. One dense layer 3·7168·18432 = 396,361,728. 60 MoE layers: 385 experts (384
  // routed, 1 shared) of 3·7168·2048 = 44,040,192 = 16,955,473,920 + router 7168·384 + 384
  // = 2,752,896: 16,958,226,816 · 60 = 1,017,493,608,960. Norms 61 · 2·7168 + 7168 = 881,664.
  // Embedding and LM head 2 · 163840·7168 = 2,348,810,240. Total 1,026,408,232,448 (1T).
  // Active: less 60 · 376 · 44,040,192 = 993,546,731,520 -> 32,861,500,928 (32B).
  ModelConfig c = read_model_config(config("kimi-k2-instruct"));
  CHECK(c.family == "deepseek_v3");
  CHECK(c.read_as == "read as deepseek_v3 by its architectures DeepseekV3ForCausalLM");
  FamilyCount f = family_count_or_explain(c);
  CHECK(f.family == "DeepSeek-V3");
  CHECK(f.total == 1026408232448u);
  CHECK(agrees(f.total, 1000, -2));  // "1T": to the nearest hundred billion
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 32861500928u);
  CHECK(agrees(*f.active, 32, 0));
  CHECK(f.mtp_total == 0);  // num_nextn_predict_layers 0
  // K/V: 61 · (512 + 64) · 2 bytes = 70,272 per token; 287,834,112 at 4,096; 2,302,672,896 at 32,768.
  CHECK(f.kv_bytes_per_token == 70272u);
  CHECK(kv_at(f, 4096, 16) == 287834112u);
  CHECK(kv_at(f, 32768, 16) == 2302672896u);
}

TEST_CASE("explain --config: what a new family's formula does not read is an error naming it", "[families]") {
  testutil::TempDir dir;
  auto unread = [](const std::string& file, const std::string& key, const std::string& formula) {
    return "model config '" + file + "': '" + key + "' changes the parameter count, and headcount's " + formula +
           " formula does not read it; counting without it would be a guess";
  };
  std::string p = edited(dir, "gpt-oss-20b", [](Json& j) { j["mlp_bias"] = true; });
  CHECK(error_of(p) == unread(p, "mlp_bias", "gpt_oss"));
  p = edited(dir, "gemma-3-1b-it", [](Json& j) { j["num_local_experts"] = 4; });
  CHECK(error_of(p) == unread(p, "num_local_experts", "gemma3_text"));
  p = edited(dir, "gemma-2-2b-it", [](Json& j) { j["use_qk_norm"] = true; });
  CHECK(error_of(p) == unread(p, "use_qk_norm", "gemma2"));
  p = edited(dir, "qwen3-next-80b-a3b-instruct", [](Json& j) { j["first_k_dense_replace"] = 1; });
  CHECK(error_of(p) == unread(p, "first_k_dense_replace", "qwen3_next"));
  p = edited(dir, "llama-4-maverick-17b-128e-instruct", [](Json& j) { j["text_config"]["moe_intermediate_size"] = 1024; });
  CHECK(error_of(p) == unread(p, "moe_intermediate_size", "llama4_text (model_type llama4)"));
  p = edited(dir, "jamba-v0.1", [](Json& j) { j["attention_bias"] = true; });
  CHECK(error_of(p) == unread(p, "attention_bias", "jamba"));
  p = edited(dir, "phi-3-mini-4k-instruct", [](Json& j) { j["num_local_experts"] = 16; });
  CHECK(error_of(p) == unread(p, "num_local_experts", "phi3"));
  p = edited(dir, "kimi-k2-instruct", [](Json& j) { j["linear_num_value_heads"] = 8; });
  CHECK(error_of(p) == unread(p, "linear_num_value_heads", "deepseek_v3 (model_type kimi_k2)"));
  // A family that used to ignore windows reads them now; LLaMA's does not.
  p = edited(dir, "llama-2-7b", [](Json& j) { j["sliding_window"] = 4096; });
  CHECK(error_of(p) == unread(p, "sliding_window", "llama"));
}

TEST_CASE("explain --config: layers, sizes and wrappers the table cannot read are errors naming the field", "[families]") {
  testutil::TempDir dir;
  auto start = [](const std::string& file) { return "model config '" + file + "': "; };
  std::string p = edited(dir, "gpt-oss-20b", [](Json& j) { j["layer_types"][1] = "linear_attention"; });
  CHECK(error_of(p) == start(p) + "layer_types[1] is 'linear_attention', a layer headcount's gpt_oss formula does not know");
  p = edited(dir, "gpt-oss-20b", [](Json& j) { j["layer_types"].erase(0); });
  CHECK(error_of(p) == start(p) + "layer_types names 23 layers, and num_hidden_layers is 24");
  p = edited(dir, "gemma-2-2b-it", [](Json& j) { j.erase("head_dim"); });  // 2304 / 8 would be a guess
  CHECK(error_of(p) == start(p) + "the gemma2 formula needs a number the config does not give (head_dim)");
  // Gemma 3's configuration class has a head_dim default (256), which transformers uses; the count
  // uses it too and says so (issue 38: gemma-3-4b-it's published text_config leaves it out).
  p = edited(dir, "gemma-3-1b-it", [](Json& j) { j.erase("head_dim"); });
  FamilyCount defaulted = family_count_or_explain(read_model_config(p));
  CHECK(defaulted.total == 999885952u);
  CHECK(defaulted.notes.back() == "not in the config, so Gemma3TextConfig's defaults: head_dim 256");
  p = edited(dir, "qwen3-next-80b-a3b-instruct", [](Json& j) { j.erase("linear_num_value_heads"); });
  CHECK(error_of(p) == start(p) + "the qwen3_next formula needs a number the config does not give (linear_num_value_heads)");
  p = edited(dir, "jamba-v0.1", [](Json& j) { j["mamba_dt_rank"] = "wide"; });
  CHECK(error_of(p) == start(p) + "the jamba formula needs a number the config does not give (mamba_dt_rank)");
  p = edited(dir, "llama-4-maverick-17b-128e-instruct", [](Json& j) { j["text_config"]["no_rope_layers"] = Json::array({1, 0}); });
  CHECK(error_of(p) == start(p) + "no_rope_layers has 2 entries, and num_hidden_layers is 48");
  p = edited(dir, "llama-4-maverick-17b-128e-instruct", [](Json& j) { j.erase("text_config"); });
  CHECK(error_of(p) == start(p) + "a llama4 config without a text_config object");
  p = edited(dir, "llama-4-maverick-17b-128e-instruct", [](Json& j) { j["text_config"]["num_hidden_layers"] = 2000000; });
  CHECK(error_of(p) == start(p) + "num_hidden_layers is 2000000, more layers than headcount reads (1,048,576)");
}

TEST_CASE("explain --config: what a config leaves out, the family's defaults say, and the count notes it", "[families]") {
  testutil::TempDir dir;
  // Jamba's dt_rank "auto" is ceil(4096 / 16) = 256, as Hugging Face computes it: the same count.
  std::string p = edited(dir, "jamba-v0.1", [](Json& j) { j["mamba_dt_rank"] = "auto"; });
  FamilyCount f = family_count_or_explain(read_model_config(p));
  CHECK(f.total == 51570323328u);
  CHECK(f.notes == std::vector<std::string>{"mamba_dt_rank \"auto\" is ceil(4096 / 16) = 256"});
  // Gemma 3 without layer_types or sliding_window_pattern: the pattern's default 6, the same layers;
  // with an explicit layer_types of the same pattern, the same again.
  p = edited(dir, "gemma-3-1b-it", [](Json& j) { j.erase("sliding_window_pattern"); });
  f = family_count_or_explain(read_model_config(p));
  CHECK(kv_at(f, 4096, 16) == 28311552u);
  p = edited(dir, "gemma-3-1b-it", [](Json& j) {
    j.erase("sliding_window_pattern");
    j["layer_types"] = Json::array();
    for (int l = 0; l < 26; ++l) j["layer_types"].push_back((l + 1) % 6 == 0 ? "full_attention" : "sliding_attention");
  });
  f = family_count_or_explain(read_model_config(p));
  CHECK(kv_at(f, 4096, 16) == 28311552u);
  // Gemma 3's multimodal config holds the same text model in text_config: the same count, the
  // vision tower not counted (and said so).
  {
    Json j = {{"architectures", {"Gemma3ForConditionalGeneration"}}, {"model_type", "gemma3"},
              {"text_config", Json::parse(testutil::read_text(config("gemma-3-1b-it")))}};
    p = dir.file("gemma3.config.json");
    testutil::write_bytes(p, j.dump());
    ModelConfig c = read_model_config(p);
    CHECK(c.read_as == "its text_config (gemma3_text) counted, not the vision encoder");
    CHECK(family_count_or_explain(c).total == 999885952u);
  }
  // A sliding layer without a window attends to everything: Phi-3 with sliding_window null keeps
  // 32 · 12,288 · 4,096 = 1,610,612,736 bytes at 4,096 tokens.
  p = edited(dir, "phi-3-mini-4k-instruct", [](Json& j) { j["sliding_window"] = nullptr; });
  f = family_count_or_explain(read_model_config(p));
  CHECK(kv_at(f, 4096, 16) == 1610612736u);
  // Qwen3-MoE slides only with use_sliding_window, from max_window_layers on: 48 layers, 40 of
  // them full, 8 over 4,096 tokens: 4 · 256 · 2 = 2,048 bytes per layer; at 32,768 tokens
  // 40 · 2,048 · 32,768 + 8 · 2,048 · 4,096 = 2,684,354,560 + 67,108,864 = 2,751,463,424.
  p = edited(dir, "qwen3-30b-a3b", [](Json& j) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = 4096;
    j["max_window_layers"] = 40;
  });
  f = family_count_or_explain(read_model_config(p));
  CHECK(f.total == 30532122624u);
  CHECK(kv_at(f, 32768, 16) == 2751463424u);
  // As published (use_sliding_window false), every layer keeps the whole context: 48 · 2,048 ·
  // 32,768 = 3,221,225,472.
  CHECK(kv_at(count_of("qwen3-30b-a3b"), 32768, 16) == 3221225472u);
}

TEST_CASE("explain --config: --context caps the windows, --kv-dtype replaces the config's dtype", "[families]") {
  // gpt-oss-20b in bfloat16: 24 · 1,024 · 2 = 49,152 bytes per token; at 32,768 tokens 12 full
  // layers · 2,048 bytes · 32,768 + 12 sliding · 2,048 · 128 = 805,306,368 + 3,145,728.
  CliResult r = cli({"explain", "--config", config("gpt-oss-20b"), "--context", "32768", "--kv-dtype", "bfloat16"});
  CHECK(r.code == 0);
  CHECK(r.out.find("K/V cache per token 49,152 bytes (48.0 KiB): 24 layers · 1,024 K/V elements · 2 bytes (bfloat16,\n"
                   "    --kv-dtype)") != std::string::npos);
  CHECK(r.out.find("12 of the 24 attention layers slide over the last 128 tokens") != std::string::npos);
  CHECK(r.out.find("K/V cache at 32,768 tokens 808,452,096 bytes (771.0 MiB): 12 full layers · 2,048 bytes · 32,768 +\n"
                   "    12 sliding layers · 2,048 bytes · 128 (the window) = 808,452,096 bytes") != std::string::npos);
  CHECK(r.out.find("without the input embedding (a lookup, no multiply) 3,608,307,264") != std::string::npos);
  // Without --context, a model with windows shows the cache at 4,096 tokens; one without shows none.
  r = cli({"explain", "--config", config("gpt-oss-20b")});
  CHECK(r.out.find("K/V cache at 4,096 tokens 207,618,048 bytes") != std::string::npos);
  r = cli({"explain", "--config", config("llama-2-7b")});
  CHECK(r.out.find("K/V cache at") == std::string::npos);
  // With --context, every model: Llama-2-7B at 4,096 tokens 524,288 · 4,096 = 2 GiB.
  r = cli({"explain", "--config", config("llama-2-7b"), "--context", "4096"});
  CHECK(r.out.find("K/V cache at 4,096 tokens 2,147,483,648 bytes (2.0 GiB): 32 full layers · 16,384 bytes · 4,096 =") !=
        std::string::npos);
  // JSON: the hybrid's state, the alias, the windows.
  r = cli({"explain", "--config", config("jamba-v0.1"), "-f", "json", "--context", "32768"});
  CHECK(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["recurrent_state"]["layers"] == 28);
  CHECK(j["recurrent_state"]["elements_per_layer"] == 155648);
  CHECK(j["recurrent_state"]["bytes"] == 8716288);
  CHECK(j["kv_at_context"]["bytes"] == 536870912);
  CHECK(j["read_as"].is_null());
  r = cli({"explain", "--config", config("kimi-k2-instruct"), "-f", "json"});
  j = Json::parse(r.out);
  CHECK(j["read_as"] == "read as deepseek_v3 by its architectures DeepseekV3ForCausalLM");
  CHECK(j["kv_at_context"]["context"] == 4096);
  CHECK(j["kv_at_context"]["bytes"] == 287834112);  // 70,272 · 4,096
  CHECK(j["kv_layers"][0]["kind"] == "latent");
  r = cli({"explain", "--config", config("llama-4-maverick-17b-128e-instruct"), "-f", "json"});
  j = Json::parse(r.out);
  CHECK(j["read_as"] == "its text_config (llama4_text) counted, not the vision encoder");
  CHECK(j["kv_layers"][1]["window"] == 8192);
  CHECK(j["active_without_embedding"] == 16150205440u);  // 17,184,691,200 − 202048·5120
  // A context of 0 is refused as the calculator refuses it.
  r = cli({"explain", "--config", config("gpt-oss-20b"), "--context", "0"});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: --context: '0' is not a count of 1 or more (examples: 4096, 32k)\n");
}
