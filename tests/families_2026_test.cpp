// families_2026_test.cpp: `headcount explain --config` on the families of 2026 (issue 38): each
// expected integer worked by hand in the comment from the config's numbers and the family's
// modules in Hugging Face transformers' modeling code, and agreeing with the published figure at
// its precision.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "headcount/error.h"
#include "headcount/families.h"
#include "config_test_util.h"
#include "test_util.h"

using namespace headcount;
using namespace configtest;
using Json = nlohmann::json;

TEST_CASE("explain --config: Nemotron-H-8B is 8.1B: Mamba-2, attention and feed-forward blocks", "[families][nemotron_h]") {
  // modeling_nemotron_h.py: each of the 52 layers is one NemotronHBlock (an RMSNorm of 4096, then
  // one mixer). hybrid_override_pattern: 24 M, 4 *, 24 -.
  // Mamba-2 (NemotronHMamba2Mixer): I = mamba_num_heads · mamba_head_dim = 128·64 = 8192, conv_dim
  // = I + 2·n_groups·ssm_state_size = 8192 + 2·8·128 = 10240. in_proj 4096·(8192 + 10240 + 128) =
  // 76,021,760; conv1d 10240·4 = 40,960 + bias 10,240; dt_bias, A_log, D 3·128 = 384; gated norm
  // 8,192; out_proj 8192·4096 = 33,554,432: 109,635,968 · 24 = 2,631,263,232.
  // Attention (no biases, head_dim 128): 4096·4096 + 2·4096·1024 + 4096·4096 = 41,943,040 · 4 =
  // 167,772,160. MLP (up, down; relu2): 2·4096·21504 = 176,160,768 · 24 = 4,227,858,432.
  // Norms 52·4096 + 4096 = 217,088. Embedding and LM head (untied) 2·131072·4096 = 1,073,741,824.
  // Total 8,100,852,736 ("8B").
  FamilyCount f = count_file(config("nemotron-h-8b-base-8k"));
  CHECK(f.family == "Nemotron-H");
  CHECK(f.total == 8100852736u);
  CHECK(agrees(f.total, 8, 0));
  CHECK_FALSE(f.active.has_value());
  // K/V: 4 attention layers · 8 · 2·128 · 2 bytes = 16,384 per token; 67,108,864 at 4,096.
  CHECK(f.kv_bytes_per_token == 16384u);
  CHECK(kv_at(f, 4096, 16) == 67108864u);
  // State per Mamba-2 layer: conv 3·10240 = 30,720 + 128·64·128 = 1,048,576 = 1,079,296 elements;
  // 24 · 1,079,296 · 2 bytes = 51,806,208.
  CHECK(f.state_layers == 24);
  CHECK(f.state_elements == 1079296u);
  CHECK(f.state_bytes == 51806208u);
}

TEST_CASE("explain --config: Nemotron 3 Nano is 31.6B with 3.6B active (3.2B without the embedding)", "[families][nemotron_h]") {
  // 52 layers: 23 M, 6 *, 23 E; width 2688.
  // Mamba-2: I = 64·64 = 4096 (expand · hidden_size would be 5376), conv_dim 4096 + 2·8·128 = 6144.
  // in_proj 2688·(4096 + 6144 + 64) = 27,697,152; conv1d 6144·4 + 6144 = 30,720; 3·64 = 192; norm
  // 4,096; out_proj 4096·2688 = 11,010,048: 38,742,208 · 23 = 891,070,784.
  // Attention: 2688·32·128 = 11,010,048 + 2·2688·2·128 = 1,376,256 + 32·128·2688 = 11,010,048:
  // 23,396,352 · 6 = 140,378,112.
  // NemotronHMoE: 128 experts of up and down 2·2688·1856 = 9,977,856 (1,277,165,568), the shared
  // expert 2·2688·3712 = 19,955,712, the router 2688·128 + 128 (e_score_correction_bias) = 344,192:
  // 1,297,465,472 · 23 = 29,841,705,856.
  // Norms 52·2688 + 2688 = 142,464. Embedding and LM head 2·131072·2688 = 704,643,072.
  // Total 31,577,940,288 (31.6B). Active: less 23 · (128 − 6) · 9,977,856 = 27,997,863,936 ->
  // 3,580,076,352 (3.6B); less the embedding 352,321,536 -> 3,227,754,816 (3.2B).
  FamilyCount f = count_file(config("nemotron-3-nano-30b-a3b"));
  CHECK(f.total == 31577940288u);
  CHECK(agrees(f.total, 31.6, 1));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 3580076352u);
  CHECK(agrees(*f.active, 3.6, 1));
  CHECK(f.active_without_embedding == 3227754816u);
  CHECK(agrees(*f.active_without_embedding, 3.2, 1));
  CHECK(f.moe_layers == 23);
  CHECK(f.expert_size == 9977856u);
  CHECK(has_note(f, "mamba_num_heads · mamba_head_dim = 64·64 = 4096 (not expand · hidden_size)"));
  // K/V: 6 · 2 · 2·128 · 2 bytes = 6,144 per token; 201,326,592 at 32,768.
  CHECK(f.kv_bytes_per_token == 6144u);
  CHECK(kv_at(f, 32768, 16) == 201326592u);
  // State: conv 3·6144 = 18,432 at bfloat16 + SSM 64·64·128 = 524,288 at mamba_ssm_cache_dtype
  // float32: 23 · (36,864 + 2,097,152) = 49,082,368 bytes.
  CHECK(f.state_elements == 542720u);
  CHECK(f.state_bytes == 49082368u);
}

TEST_CASE("explain --config: Nemotron-H's layers_block_type is the pattern's other spelling", "[families][nemotron_h]") {
  testutil::TempDir dir;
  std::string p = edited(dir, "nemotron-3-nano-30b-a3b", [](Json& j) {
    Json blocks = Json::array();
    for (char ch : j["hybrid_override_pattern"].get<std::string>()) {
      blocks.push_back(ch == 'M' ? "mamba" : ch == '*' ? "attention" : ch == 'E' ? "moe" : "mlp");
    }
    j.erase("hybrid_override_pattern");
    j["layers_block_type"] = blocks;
  });
  CHECK(count_file(p).total == 31577940288u);
}

TEST_CASE("explain --config: a Nemotron-H pattern that does not fit the layers is an error", "[families][nemotron_h]") {
  testutil::TempDir dir;
  const std::string start = "model config '";
  std::string p = edited(dir, "nemotron-h-8b-base-8k", [](Json& j) { j["num_hidden_layers"] = 51; });
  CHECK(error_of(p) == start + p + "': hybrid_override_pattern names 52 layers, and num_hidden_layers is 51");
  p = edited(dir, "nemotron-h-8b-base-8k", [](Json& j) { j["hybrid_override_pattern"] = std::string(51, 'M') + "G"; });
  CHECK(error_of(p) == start + p +
                           "': hybrid_override_pattern[51] is a layer headcount's nemotron_h formula does not know (it knows "
                           "M, *, - and E; mamba, attention, mlp and moe)");
  p = edited(dir, "nemotron-h-8b-base-8k", [](Json& j) { j.erase("hybrid_override_pattern"); });
  CHECK(error_of(p) == start + p + "': the nemotron_h formula needs a number the config does not give (hybrid_override_pattern)");
  p = edited(dir, "nemotron-h-8b-base-8k", [](Json& j) { j.erase("mamba_num_heads"); });
  CHECK(error_of(p) == start + p + "': the nemotron_h formula needs a number the config does not give (mamba_num_heads)");
  // A latent projection around the experts is not in the formula: refused, not ignored.
  p = edited(dir, "nemotron-3-nano-30b-a3b", [](Json& j) { j["moe_latent_size"] = 1024; });
  CHECK(error_of(p) == start + p +
                           "': 'moe_latent_size' changes the parameter count, and headcount's nemotron_h formula does not read "
                           "it; counting without it would be a guess");
  // Hostile numbers: a product past 64 bits is an error, not a wrapped count.
  p = edited(dir, "nemotron-h-8b-base-8k", [](Json& j) { j["mamba_num_heads"] = INT64_MAX; });
  CHECK(error_of(p).find("does not fit in 64 bits") != std::string::npos);
}

namespace {

// Llama-3.1-8B's numbers under a model_type headcount does not know, with one field of its own.
const char* kUnknownDense = R"({"model_type": "brand_new", "architectures": ["BrandNewForCausalLM"],
  "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
  "intermediate_size": 14336, "vocab_size": 128256, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "torch_dtype": "bfloat16", "tie_word_embeddings": false, "max_position_embeddings": 131072,
  "bos_token_id": 128000, "fancy_gate_rank": 64})";

}  // namespace

TEST_CASE("explain --config: an unknown model_type is estimated, saying so and what it did not read", "[families][estimate]") {
  // Read as a LLaMA-style decoder: embedding 128256·4096 = 525,336,576; 32 · (attention 4096·32·128
  // + 2·4096·8·128 + 32·128·4096 = 41,943,040, feed-forward 3·4096·14336 = 176,160,768) =
  // 6,979,321,856; norms 32·2·4096 + 4096 = 266,240; LM head 525,336,576. Total 8,030,261,248:
  // Llama-3.1-8B's published 8.03B, as its numbers are.
  testutil::TempDir dir;
  std::string p = dir.file("config.json");
  testutil::write_bytes(p, kUnknownDense);
  FamilyCount f = count_file(p);
  CHECK(f.estimate);
  CHECK(f.total == 8030261248u);
  CHECK(agrees(f.total, 8.03, 2));
  CHECK(f.estimated_as == "a LLaMA-style decoder (RMSNorms, gated feed-forward, grouped K/V heads)");
  // Token ids, epsilons and RoPE's base leave the count alone; the field of its own is named.
  CHECK(f.not_understood == std::vector<std::string>{"fancy_gate_rank"});
  REQUIRE(f.notes.size() >= 2);
  CHECK(f.notes[0] == "an estimate: headcount does not know the model_type 'brand_new'; it read the config as a LLaMA-style "
                      "decoder (RMSNorms, gated feed-forward, grouped K/V heads) from the common field names");
  CHECK(f.notes[1] == "not understood (each may change the count, and the estimate leaves it out): fancy_gate_rank");
  // K/V: 32 · 8 · 2·128 · 2 bytes = 131,072 per token.
  CHECK(f.kv_bytes_per_token == 131072u);
  // The audit's declared-vs-found comparison never takes an estimate for a count.
  CHECK_FALSE(family_count(read_model_config(p)).has_value());

  testutil::CliResult r = testutil::cli({"explain", "--config", p});
  CHECK(r.code == 0);
  CHECK(r.out.rfind("Estimate for model_type brand_new, read as a LLaMA-style decoder (RMSNorms, gated feed-forward, grouped K/V "
                    "heads) (" + p + "): 8,030,261,248 parameters (8.03B), an estimate\n", 0) == 0);
  r = testutil::cli({"explain", "--config", p, "-f", "json"});
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["total"] == 8030261248u);
  CHECK(j["estimate"]["not_understood"] == Json::array({"fancy_gate_rank"}));
  // A known family has no estimate.
  r = testutil::cli({"explain", "--config", config("nemotron-h-8b-base-8k"), "-f", "json"});
  CHECK(Json::parse(r.out)["estimate"].is_null());
}

TEST_CASE("explain --config: an unknown model_type with latent attention and experts is estimated as DeepSeek's kind", "[families][estimate]") {
  // Kimi K2's config renamed, its architectures left out: the common fields (kv_lora_rank,
  // n_routed_experts, moe_intermediate_size, n_shared_experts, first_k_dense_replace, topk_method)
  // give the count worked in explain_config_test.cpp for Kimi K2: 1,026,408,232,448, 32,861,500,928
  // active. An untied config that does not say it is untied is read as untied, and said so.
  testutil::TempDir dir;
  std::string p = edited(dir, "kimi-k2-instruct", [](Json& j) {
    j["model_type"] = "mystery_moe";
    j.erase("architectures");
  });
  FamilyCount f = count_file(p);
  CHECK(f.estimate);
  CHECK(f.total == 1026408232448u);
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 32861500928u);
  CHECK(f.estimated_as.rfind("a DeepSeek-style decoder (multi-head latent attention), with experts of moe_intermediate_size", 0) == 0);
  // Without tie_word_embeddings the LM head is assumed untied, in words.
  p = edited(dir, "kimi-k2-instruct", [](Json& j) {
    j["model_type"] = "mystery_moe";
    j.erase("architectures");
    j.erase("tie_word_embeddings");
  });
  f = count_file(p);
  CHECK(f.total == 1026408232448u);
  CHECK(has_note(f, "with an untied LM head (tie_word_embeddings not given)"));
}

TEST_CASE("explain --config: an estimate missing a number says which, and hostile numbers stay errors", "[families][estimate]") {
  testutil::TempDir dir;
  std::string p = dir.file("config.json");
  testutil::write_bytes(p, R"({"model_type": "wrapped_vl", "text_config": {"hidden_size": 8}})");
  // A wrapper it does not know is read through its text_config, which lacks the numbers here.
  CHECK(error_of(p) == "model config '" + p +
                           "': the estimate's formula needs a number the config does not give (num_hidden_layers, "
                           "num_attention_heads, vocab_size, intermediate_size)");
  testutil::write_bytes(p, R"({"model_type": "huge", "hidden_size": 9223372036854775807, "num_hidden_layers": 2,
    "num_attention_heads": 1, "intermediate_size": 4, "vocab_size": 4})");
  CHECK(error_of(p).find("does not fit in 64 bits") != std::string::npos);
  testutil::write_bytes(p, R"({"model_type": "long", "hidden_size": 8, "num_hidden_layers": 9223372036854775807,
    "num_attention_heads": 1, "intermediate_size": 4, "vocab_size": 4})");
  CHECK(error_of(p).find("more layers than headcount reads") != std::string::npos);
}

TEST_CASE("explain --config: DeepSeek-V3.2 is DeepSeek-V3 with a lightning indexer in every layer, and its key cache", "[families][deepseek_v32]") {
  // modeling_deepseek_v32.py: DeepSeek-V3's layers (worked in explain_config_test.cpp: total
  // 671,026,419,200, active 37,552,297,472, MTP 11,610,068,224) and in each layer's attention a
  // DeepseekV32Indexer: wq_b q_lora_rank → index_n_heads·index_head_dim 1536·64·128 = 12,582,912, wk
  // 7168·128 = 917,504, k_norm (LayerNorm: weight and bias) 2·128 = 256, weights_proj 7168·64 =
  // 458,752: 13,959,424 a layer; 61 · 13,959,424 = 851,524,864.
  // Total 671,877,944,064; active 38,403,822,336 (the indexer runs for every token); the MTP layer
  // holds an indexer too: 11,624,027,648. DeepSeek calls the model 671B (V3's size class): agrees.
  FamilyCount f = count_file(config("deepseek-v3.2-exp"));
  CHECK(f.family == "DeepSeek-V3.2");
  CHECK(f.total == 671877944064u);
  CHECK(agrees(f.total, 671, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 38403822336u);
  CHECK(f.mtp_total == 11624027648u);
  // K/V per token: the latent and the RoPE key 61 · (512 + 64) · 2 = 70,272, and the indexer's key
  // 61 · 128 · 2 = 15,616: 85,888. At 32,768 tokens: 85,888 · 32,768 = 2,814,377,984.
  CHECK(f.kv_bytes_per_token == 85888u);
  CHECK(kv_at(f, 32768, 16) == 2814377984u);
  REQUIRE(f.kv_layers.size() == 2);
  CHECK(f.kv_layers[1].kind == "indexer");
  CHECK(f.kv_layers[1].elements == 128u);
  CHECK(has_note(f, "FP8 with a float32 scale per 128 elements: 132 bytes per layer and token"));
  // Without an indexer size the formula has a number missing, not a silent V3 count.
  testutil::TempDir dir;
  std::string p = edited(dir, "deepseek-v3.2-exp", [](Json& j) { j.erase("index_n_heads"); });
  CHECK(error_of(p) == "model config '" + p + "': the deepseek_v32 formula needs a number the config does not give (index_n_heads)");
  // A V3 config with an indexer is refused by the V3 row (its formula does not read it).
  p = edited(dir, "deepseek-v3", [](Json& j) { j["index_n_heads"] = 64; });
  CHECK(error_of(p) == "model config '" + p + "': 'index_n_heads' changes the parameter count, and headcount's deepseek_v3 "
                       "formula does not read it; counting without it would be a guess");
}

TEST_CASE("explain --config: GLM-4.5-Air is 106B with 12B active (without the embedding)", "[families][glm4_moe]") {
  // modeling_glm4_moe.py, width 4096, 46 layers, 96 heads and 8 K/V heads of 128:
  // Glm4MoeAttention: q 4096·12288 = 50,331,648, k and v 2·4096·1024 = 8,388,608, o 12288·4096 =
  // 50,331,648, biases on q, k, v (attention_bias) 12,288 + 2,048, none on o: 109,066,240 · 46 =
  // 5,017,047,040 (use_qk_norm false: no q/k norms).
  // Layer 0 dense (first_k_dense_replace 1): 3·4096·10944 = 134,479,872.
  // 45 MoE layers: 128 experts of 3·4096·1408 = 17,301,504 (2,214,592,512), one shared expert of
  // the same size, the router 4096·128 + 128 (e_score_correction_bias): 2,232,418,432 · 45 =
  // 100,458,829,440. Norms 46·2·4096 + 4096 = 380,928. Embedding and LM head 2·151552·4096 =
  // 1,241,513,984. Total 106,852,251,264 (Zhipu: 106B).
  // Active: less 45 · 120 · 17,301,504 = 93,428,121,600 -> 13,424,129,664; without the input
  // embedding 12,803,372,672 (Zhipu: 12B active).
  // MTP (num_nextn_predict_layers 1), apart: one MoE layer 109,066,240 + 2,232,418,432 + 2·4096 =
  // 2,341,492,864, eh_proj 2·4096·4096 = 33,554,432, 3 norms 12,288: 2,375,059,584.
  FamilyCount f = count_file(config("glm-4.5-air"));
  CHECK(f.family == "GLM-4.5");
  CHECK(f.total == 106852251264u);
  CHECK(agrees(f.total, 106, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 13424129664u);
  CHECK(f.active_without_embedding == 12803372672u);
  CHECK(agrees(*f.active_without_embedding, 12, 0));
  CHECK(f.mtp_total == 2375059584u);
  // K/V: 46 · 8 · 2·128 · 2 bytes = 188,416 per token.
  CHECK(f.kv_bytes_per_token == 188416u);
  // use_qk_norm adds q_norm and k_norm of 128 in each of the 46 layers: 46 · 256 = 11,776.
  testutil::TempDir dir;
  std::string p = edited(dir, "glm-4.5-air", [](Json& j) { j["use_qk_norm"] = true; });
  CHECK(count_file(p).total == 106852251264u + 11776u);
}

TEST_CASE("explain --config: OLMo-2-7B is 7.3B, its q/k norms over the whole width", "[families][olmo2]") {
  // modeling_olmo2.py, width 4096, 32 layers of 32 heads (32 K/V heads) of 128: attention 4·4096² =
  // 67,108,864; q_norm RMSNorm(32·128) 4,096 and k_norm RMSNorm(32·128) 4,096 (not head_dim's 2·128);
  // post_attention_layernorm and post_feedforward_layernorm 2·4096; MLP 3·4096·11008 = 135,266,304:
  // 202,391,552 · 32 = 6,476,529,664. Final norm 4,096; embedding and LM head (untied)
  // 2·100352·4096 = 822,083,584. Total 7,298,617,344 (the Hub's 7.3B).
  FamilyCount f = count_file(config("olmo-2-1124-7b"));
  CHECK(f.family == "OLMo 2");
  CHECK(f.total == 7298617344u);
  CHECK(agrees(f.total, 7.3, 1));
  // K/V: 32 · 32 · 2·128 · 2 bytes = 524,288 per token.
  CHECK(f.kv_bytes_per_token == 524288u);
  // Grouped K/V heads shrink k_norm with k_proj: 8 K/V heads -> k_norm 1,024; per layer less
  // 2·4096·(4096 − 1024) = 25,165,824 in k and v and 3,072 in k_norm: 32 · 25,168,896 = 805,404,672.
  testutil::TempDir dir;
  std::string p = edited(dir, "olmo-2-1124-7b", [](Json& j) { j["num_key_value_heads"] = 8; });
  CHECK(count_file(p).total == 7298617344u - 805404672u);
}

TEST_CASE("explain --config: MiniMax-M2 is 230B with 10B active", "[families][minimax_m2]") {
  // modeling_minimax_m2.py, width 3072, 62 layers, 48 heads and 8 K/V heads of 128:
  // MiniMaxM2Attention: q 3072·6144 = 18,874,368, k and v 2·3072·1024 = 6,291,456, o 6144·3072 =
  // 18,874,368, no biases: 44,040,192; q_norm RMSNorm(48·128) 6,144 and k_norm RMSNorm(8·128) 1,024.
  // MiniMaxM2SparseMoeBlock in every layer: 256 experts of gate_up 2·1536·3072 and down 3072·1536 =
  // 14,155,776 (3,623,878,656), the router 3072·256 = 786,432 and e_score_correction_bias 256.
  // 2 norms 6,144. Per layer 44,040,192 + 7,168 + 3,624,665,344 + 6,144 = 3,668,718,848; · 62 =
  // 227,460,568,576. Final norm 3,072; embedding and LM head 2·200064·3072 = 1,229,193,216.
  // Total 228,689,764,864 (MiniMax: "230B", to ten billion). Active: less 62 · 248 · 14,155,776 =
  // 217,659,211,776 -> 11,030,553,088; without the input embedding 10,415,956,480 ("10B").
  // The MTP modules (num_mtp_modules 3) are not in MiniMaxM2ForCausalLM: not counted.
  FamilyCount f = count_file(config("minimax-m2"));
  CHECK(f.family == "MiniMax-M2");
  CHECK(f.total == 228689764864u);
  CHECK(agrees(f.total, 230, -1));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 11030553088u);
  CHECK(f.active_without_embedding == 10415956480u);
  CHECK(agrees(*f.active_without_embedding, 10, 0));
  // K/V: 62 · 8 · 2·128 · 2 bytes = 253,952 per token.
  CHECK(f.kv_bytes_per_token == 253952u);
}

TEST_CASE("explain --config: Qwen3-VL-30B-A3B is its language model, its vision tower, and 31.1B together", "[families][qwen3_vl]") {
  // The language model (text_config, qwen3_vl_moe_text) is Qwen3-30B-A3B's: 30,532,122,624, worked in
  // explain_config_test.cpp. The vision tower (modeling_qwen3_vl.py's Qwen3VLVisionModel, width
  // 1152, MLP 4304, merged width 1152·2² = 4608, out 2048):
  // patch_embed Conv3d 1152·3·2·16·16 + 1152 = 1,770,624; pos_embed 2304·1152 = 2,654,208;
  // 27 blocks of norm1 and norm2 4·1152, qkv 1152·3456 + 3456, proj 1152² + 1152, linear_fc1
  // 1152·4304 + 4304, linear_fc2 4304·1152 + 1152: 15,239,504 · 27 = 411,466,608;
  // merger: LayerNorm(1152) 2,304, fc1 4608² + 4608 = 21,238,272, fc2 4608·2048 + 2048 = 9,439,232:
  // 30,679,808; 3 DeepStack mergers (deepstack_visual_indexes [8, 16, 24]): LayerNorm(4608) 9,216
  // + 21,238,272 + 9,439,232 = 30,686,720 · 3 = 92,060,160. Vision tower 538,631,408.
  // Together 31,070,754,032 (the Hub: 31B).
  FamilyCount f = count_file(config("qwen3-vl-30b-a3b-instruct"));
  CHECK(f.total == 30532122624u);
  CHECK(f.vision_total == 538631408u);
  REQUIRE(f.total_with_vision.has_value());
  CHECK(*f.total_with_vision == 31070754032u);
  CHECK(agrees(*f.total_with_vision, 31, 0));
  REQUIRE(f.vision_parts.size() == 5);
  CHECK(f.vision_parts[2].parameters == 411466608u);
  CHECK(f.vision_parts[4].parameters == 92060160u);
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 3353032704u);  // the language model's, as for Qwen3-30B-A3B

  testutil::CliResult r = testutil::cli({"explain", "--config", config("qwen3-vl-30b-a3b-instruct"), "-f", "json"});
  REQUIRE(r.code == 0);
  Json j = Json::parse(r.out);
  CHECK(j["vision"]["total"] == 538631408u);
  CHECK(j["vision"]["total_with_language_model"] == 31070754032u);

  testutil::TempDir dir;
  std::string p = edited(dir, "qwen3-vl-30b-a3b-instruct", [](Json& c) { c["vision_config"].erase("depth"); });
  CHECK(error_of(p) == "model config '" + p + "': the Qwen3-VL vision tower needs a number the config does not give "
                       "(vision_config.depth)");
  // Without a vision_config the language model alone is counted, and the first line says so.
  p = edited(dir, "qwen3-vl-30b-a3b-instruct", [](Json& c) { c.erase("vision_config"); });
  ModelConfig text_only = read_model_config(p);
  CHECK(text_only.read_as == "its text_config (qwen3_vl_moe_text) counted, not the vision encoder");
  CHECK_FALSE(family_count_or_explain(text_only).total_with_vision.has_value());
  p = edited(dir, "qwen3-vl-30b-a3b-instruct", [](Json& c) { c["vision_config"]["hidden_size"] = int64_t{1} << 40; });
  CHECK(error_of(p) == "model config '" + p + "': the vision tower's count does not fit in 64 bits");
}

TEST_CASE("explain --config: Gemma 3 4B is 4.30B: the language model from Gemma3TextConfig's defaults and the SigLIP tower", "[families][gemma3]") {
  // google/gemma-3-4b-it's text_config names 6 keys; Gemma3TextConfig's defaults give the rest (8
  // heads, 4 K/V heads of 256, vocabulary 262,208, one layer in 6 full), each noted.
  // Language model (width 2560, 34 layers): attention 2560·2048 + 2·2560·1024 + 2048·2560 =
  // 15,728,640, q_norm and k_norm 2·256, MLP 3·2560·10240 = 78,643,200, 4 norms 10,240:
  // 94,382,592 · 34 = 3,209,008,128; final norm 2,560; embedding 262208·2560 = 671,252,480 (tied).
  // 3,880,263,168.
  // Vision (modeling_siglip.py, width 1152, MLP 4304, 27 layers, 896 / 14 = 64 patches a side):
  // patch_embedding 1152·3·14·14 + 1152 = 678,528; position_embedding 4096·1152 = 4,718,592;
  // per layer 2 LayerNorms 4,608, q/k/v/out_proj 4·(1152² + 1152) = 5,313,024, fc1 and fc2
  // 2·1152·4304 + 4304 + 1152 = 9,921,872: 15,239,504 · 27 = 411,466,608; post_layernorm 2,304.
  // Gemma3MultiModalProjector: mm_input_projection_weight 1152·2560 = 2,949,120 + mm_soft_emb_norm
  // 1,152. Vision 419,816,304. Together 4,300,079,472: Google's 4.30B (the Hub's 4.3B).
  FamilyCount f = count_file(config("gemma-3-4b-it"));
  CHECK(f.total == 3880263168u);
  CHECK(f.vision_total == 419816304u);
  REQUIRE(f.total_with_vision.has_value());
  CHECK(*f.total_with_vision == 4300079472u);
  CHECK(agrees(*f.total_with_vision, 4.30, 2));
  CHECK(has_note(f, "not in the config, so Gemma3TextConfig's defaults: vocab_size 262208, num_attention_heads 8, "
                    "num_key_value_heads 4, head_dim 256, sliding_window_pattern 6, max_position_embeddings 131072"));
  CHECK(has_note(f, "vision_config.num_channels is not given: SiglipVisionConfig's default 3"));
  // For the audit's declared-vs-found table a default is implied by the class, not declared.
  ModelConfig c = read_model_config(config("gemma-3-4b-it"));
  CHECK(c.derived_from.at("heads") == "Gemma3TextConfig's default 8");
  CHECK(c.derived_from.at("vocab") == "Gemma3TextConfig's default 262208");
  CHECK(c.derived_from.count("hidden") == 0);  // hidden_size 2560 is in the file
  // K/V: 34 · 4 · 2·256 · 2 bytes = 139,264 per token; 5 full layers and 29 over 1,024 tokens.
  CHECK(f.kv_bytes_per_token == 139264u);
  CHECK(kv_at(f, 4096, 16) == 5u * 4096u * 4096u + 29u * 4096u * 1024u);
  // A pooling head is not in Gemma 3's tower: refused, not ignored.
  testutil::TempDir dir;
  std::string p = edited(dir, "gemma-3-4b-it", [](Json& c) { c["vision_config"]["vision_use_head"] = true; });
  CHECK(error_of(p) == "model config '" + p + "': the Gemma 3 vision tower needs a number the config does not give "
                       "(vision_config.vision_use_head false (a pooling head is not in Gemma 3's tower))");
}

TEST_CASE("explain --config: SmolLM3-3B is 3.08B; its layers without RoPE hold the same parameters", "[families][smollm3]") {
  // modeling_smollm3.py, width 2048, 36 layers of 16 heads (4 K/V heads) of 128: attention
  // 2048·2048 + 2·2048·512 + 2048·2048 = 10,485,760; MLP 3·2048·11008 = 67,633,152; 2 norms 4,096:
  // 78,123,008 · 36 = 2,812,428,288. Final norm 2,048; embedding 128256·2048 = 262,668,288, the LM
  // head tied. Total 3,075,098,624 ("3B"). no_rope_layer_interval 4 makes every 4th layer skip
  // RoPE, which has no parameters: read, and the count is unchanged.
  FamilyCount f = count_file(config("smollm3-3b"));
  CHECK(f.family == "SmolLM3");
  CHECK(f.total == 3075098624u);
  CHECK(agrees(f.total, 3, 0));
  // K/V: 36 · 4 · 2·128 · 2 bytes = 73,728 per token (use_sliding_window false: every layer full).
  CHECK(f.kv_bytes_per_token == 73728u);
  testutil::TempDir dir;
  std::string p = edited(dir, "smollm3-3b", [](Json& j) {
    j["no_rope_layers"] = Json::array();
    for (int l = 0; l < 36; ++l) j["no_rope_layers"].push_back((l + 1) % 4 == 0 ? 0 : 1);
  });
  CHECK(count_file(p).total == 3075098624u);
}

TEST_CASE("explain --config: Qwen3.5-35B-A3B's language model is Qwen3-Next's kind, 34.66B with 3.45B active", "[families][qwen3_5]") {
  // modeling_qwen3_5_moe.py's text model, width 2048, 40 layers: 30 Gated DeltaNet, 10 gated
  // attention (layer_types), every layer 256 experts of 512 and a gated shared expert of 512.
  // Gated DeltaNet: in_proj_qkv 2048·(2·16·128 + 32·128) + in_proj_z 2048·32·128 = 2048·12288 =
  // 25,165,824; in_proj_b and in_proj_a 2048·2·32 = 131,072; conv1d (2·16·128 + 32·128)·4 = 32,768;
  // dt_bias and A_log 64; norm 128; out_proj 4096·2048 = 8,388,608: 33,718,464 · 30 = 1,011,553,920.
  // Attention (attn_output_gate: q projects 2·16·256): 2048·8192 + 2·2048·512 + 4096·2048 =
  // 27,262,976 · 10 = 272,629,760; q_norm and k_norm 10·2·256 = 5,120.
  // Experts 40 · 256 · 3·2048·512 = 32,212,254,720; shared 40 · (3·2048·512 + 2048) = 125,911,040;
  // routers 40 · 2048·256 = 20,971,520. Norms 40·2·2048 + 2048 = 165,888. Embedding and LM head
  // 2·248320·2048 = 1,017,118,720. Total 34,660,610,688 (the vision tower, whose vision_config this
  // copy leaves out, makes Qwen's 35B). Active: less 40 · 248 · 3,145,728 = 31,205,621,760 ->
  // 3,454,988,928; without the embedding 2,946,429,568 ("A3B").
  FamilyCount f = count_file(config("qwen3.5-35b-a3b"));
  CHECK(f.family == "Qwen3.5-MoE");
  CHECK(f.total == 34660610688u);
  CHECK_FALSE(f.total_with_vision.has_value());
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 3454988928u);
  CHECK(agrees(*f.active_without_embedding, 3, 0));
  // MTP (mtp_num_hidden_layers 1), apart: one layer of gated attention 27,262,976, experts
  // 805,306,368, the shared expert and its gate 3,147,776, the router 524,288, 2 norms 4,096 and
  // q/k norms 512 = 836,246,016; fc 2·2048·2048 = 8,388,608; 3 norms 6,144: 844,640,768.
  CHECK(f.mtp_total == 844640768u);
  // State: conv 3·(2·16·128 + 32·128) = 24,576 at the dtype (float32: none declared) and
  // 32·128·128 = 524,288 at mamba_ssm_dtype float32: 30 · (98,304 + 2,097,152) = 65,863,680 bytes.
  CHECK(f.state_bytes == 65863680u);
  // Without the output gate, q projects 16·256: 10 · 2048·4096 = 83,886,080 fewer.
  testutil::TempDir dir;
  std::string p = edited(dir, "qwen3.5-35b-a3b", [](Json& j) { j["text_config"]["attn_output_gate"] = false; });
  CHECK(count_file(p).total == 34660610688u - 83886080u);
  // Its vision tower is Qwen3-VL's without the DeepStack mergers: with Qwen3-VL-30B-A3B's
  // vision_config numbers (worked in the Qwen3-VL case) 538,631,408 − 92,060,160 = 446,571,248.
  p = edited(dir, "qwen3.5-35b-a3b", [](Json& j) {
    j["vision_config"] = {{"depth", 27},      {"hidden_size", 1152}, {"intermediate_size", 4304}, {"in_channels", 3},
                          {"num_heads", 16},  {"patch_size", 16},    {"temporal_patch_size", 2},  {"spatial_merge_size", 2},
                          {"out_hidden_size", 2048}, {"num_position_embeddings", 2304}};
  });
  FamilyCount v = count_file(p);
  CHECK(v.vision_total == 446571248u);
  CHECK(v.total_with_vision == 34660610688u + 446571248u);
}

TEST_CASE("explain --config: a wrapper headcount does not know is read through its text_config", "[families][estimate]") {
  // Llama-2-7B's config as the text_config of an unknown multimodal wrapper: its own row counts it
  // exactly (6,738,415,616, worked in explain_config_test.cpp), and the first line says the rest of
  // the wrapper is not counted.
  testutil::TempDir dir;
  Json j = {{"model_type", "new_vl"}, {"architectures", {"NewVLForConditionalGeneration"}},
            {"text_config", Json::parse(testutil::read_text(config("llama-2-7b")))},
            {"vision_config", {{"hidden_size", 1024}, {"num_hidden_layers", 24}}}};
  std::string p = dir.file("config.json");
  testutil::write_bytes(p, j.dump());
  ModelConfig c = read_model_config(p);
  CHECK(c.family == "llama");
  CHECK(c.read_as == "its text_config (llama) counted; the rest of the new_vl config (a vision or audio tower) is not");
  FamilyCount f = family_count_or_explain(c);
  CHECK_FALSE(f.estimate);
  CHECK(f.total == 6738415616u);
  // An unknown text model_type inside it is estimated from the text_config's fields.
  j["text_config"]["model_type"] = "new_vl_text";
  testutil::write_bytes(p, j.dump());
  f = count_file(p);
  CHECK(f.estimate);
  CHECK(f.total == 6738415616u);
}
