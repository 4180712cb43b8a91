// families_2026b_test.cpp: `headcount explain --config` on more families of 2026 (issue 38, item 3):
// OLMo 3, Qwen3-VL's dense model, Qwen3.5's dense model. Each expected integer is worked by hand in
// the comment from the config's numbers and the family's modules in Hugging Face transformers'
// modeling code, and agrees with the published figure at its precision.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "headcount/error.h"
#include "headcount/families.h"
#include "config_test_util.h"
#include "test_util.h"

using namespace headcount;
using namespace configtest;
using Json = nlohmann::json;

TEST_CASE("explain --config: OLMo-3-7B is 7.30B, three of four layers sliding over 4,096 tokens", "[families][olmo3]") {
  // modular_olmo3.py: Olmo3DecoderLayer is Olmo2DecoderLayer; only the mask differs (layer_types:
  // sliding_attention, sliding_attention, sliding_attention, full_attention, eight times).
  // Width 4096, 32 layers of 32 heads (32 K/V heads) of 128: q, k, v, o 4·4096·4096 = 67,108,864;
  // q_norm RMSNorm(32·128) 4,096 and k_norm RMSNorm(32·128) 4,096; post_attention_layernorm and
  // post_feedforward_layernorm 2·4096 = 8,192; MLP gate, up, down 3·4096·11008 = 135,266,304:
  // 202,391,552 · 32 = 6,476,529,664. Final norm 4,096; embedding 100278·4096 = 410,738,688 and the
  // untied LM head the same. Total 7,298,011,136 (Ai2's "7B").
  FamilyCount f = count_file(config("olmo-3-1025-7b"));
  CHECK(f.family == "OLMo 3");
  CHECK(f.total == 7298011136u);
  CHECK(agrees(f.total, 7, 0));
  CHECK_FALSE(f.active.has_value());
  // K/V per token: 32 layers · 32 K/V heads · 2·128 · 2 bytes = 524,288. At 65,536 tokens the 8 full
  // layers keep every token and the 24 sliding ones 4,096: 8 · 16,384 · 65,536 + 24 · 16,384 · 4,096
  // = 8,589,934,592 + 1,610,612,736 = 10,200,547,328 bytes.
  CHECK(f.kv_bytes_per_token == 524288u);
  CHECK(kv_at(f, 65536, 16) == 10200547328u);
  REQUIRE(f.kv_layers.size() == 2);
  CHECK(f.kv_layers[0].kind == "full");
  CHECK(f.kv_layers[0].layers == 8);
  CHECK(f.kv_layers[1].kind == "sliding");
  CHECK(f.kv_layers[1].layers == 24);
  CHECK(f.kv_layers[1].window == 4096u);

  testutil::TempDir dir;
  // Without layer_types, Olmo3Config's rule: layer i slides unless (i + 1) % 4 == 0; the same split.
  std::string p = edited(dir, "olmo-3-1025-7b", [](Json& j) { j.erase("layer_types"); });
  CHECK(kv_at(count_file(p), 65536, 16) == 10200547328u);
  // Without sliding_window, Olmo3Config's default 4096, said so.
  p = edited(dir, "olmo-3-1025-7b", [](Json& j) {
    j.erase("layer_types");
    j.erase("sliding_window");
  });
  FamilyCount d = count_file(p);
  CHECK(kv_at(d, 65536, 16) == 10200547328u);
  CHECK(has_note(d, "not in the config, so Olmo3Config's defaults: sliding_window 4096"));
  // A layer_types list that does not fit the layers is an error, not a guess.
  p = edited(dir, "olmo-3-1025-7b", [](Json& j) { j["layer_types"].erase(0); });
  CHECK(error_of(p) == "model config '" + p + "': layer_types names 31 layers, and num_hidden_layers is 32");
  p = edited(dir, "olmo-3-1025-7b", [](Json& j) { j["layer_types"][5] = "linear_attention"; });
  CHECK(error_of(p) == "model config '" + p +
                           "': layer_types[5] is 'linear_attention', a layer headcount's olmo3 formula does not know");
}

TEST_CASE("explain --config: Qwen3-VL-8B is 8,767,123,696: its language model and its vision tower", "[families][qwen3_vl]") {
  // Language model (modeling_qwen3_vl.py's Qwen3VLTextModel, as Qwen3's), width 4096, 36 layers of
  // 32 heads and 8 K/V heads of 128: q 4096·4096 = 16,777,216, k and v 2·4096·1024 = 8,388,608, o
  // 4096·4096 = 16,777,216 (41,943,040), q_norm and k_norm 2·128 = 256, MLP 3·4096·12288 =
  // 150,994,944, 2 norms 8,192: 192,946,432 · 36 = 6,946,071,552. Final norm 4,096; embedding
  // 151936·4096 = 622,329,856 and the untied LM head the same: 8,190,735,360.
  // Vision tower (Qwen3VLVisionModel, width 1152, MLP 4304, merged width 1152·2² = 4608, out 4096):
  // patch_embed 1152·3·2·16·16 + 1152 = 1,770,624; pos_embed 2304·1152 = 2,654,208; 27 blocks of
  // 15,239,504 (worked in families_2026_test.cpp's Qwen3-VL-30B case: the same blocks) =
  // 411,466,608; merger LayerNorm(1152) 2,304 + fc1 4608² + 4608 = 21,238,272 + fc2 4608·4096 + 4096
  // = 18,878,464: 40,119,040; 3 DeepStack mergers (LayerNorm(4608) 9,216 + 21,238,272 + 18,878,464)
  // · 3 = 120,377,856. Vision 576,388,336. Together 8,767,123,696: the sum of the 750 tensors'
  // elements of the release's four safetensors files as a public weight report lists them.
  FamilyCount f = count_file(config("qwen3-vl-8b-instruct"));
  CHECK(f.family == "Qwen3");
  CHECK(f.total == 8190735360u);
  CHECK(f.vision_total == 576388336u);
  REQUIRE(f.total_with_vision.has_value());
  CHECK(*f.total_with_vision == 8767123696u);
  REQUIRE(f.vision_parts.size() == 5);
  CHECK(f.vision_parts[3].parameters == 40119040u);
  CHECK(f.vision_parts[4].parameters == 120377856u);
  // K/V: 36 · 8 · 2·128 · 2 bytes (its text_config's dtype bfloat16) = 147,456 per token.
  CHECK(f.kv_bytes_per_token == 147456u);
  ModelConfig c = read_model_config(config("qwen3-vl-8b-instruct"));
  CHECK(c.read_as == "its text_config (qwen3_vl_text) and its vision_config counted");
}

TEST_CASE("explain --config: Qwen3.5's dense 27B is 27.36B with its vision tower; its MTP layer apart", "[families][qwen3_5]") {
  // modular_qwen3_5.py's Qwen3_5TextModel, width 5120, 64 layers (layer_types: 48 Gated DeltaNet, 16
  // gated attention), every layer a Qwen3_5MLP of 17408.
  // Gated DeltaNet (16 key heads, 48 value heads, both of 128): in_proj_qkv 5120·(2·16·128 + 48·128)
  // = 52,428,800; in_proj_z 5120·6144 = 31,457,280; in_proj_b and in_proj_a 2·5120·48 = 491,520;
  // conv1d (2·2048 + 6144)·4 = 40,960; dt_bias and A_log 2·48 = 96; norm 128; out_proj 6144·5120 =
  // 31,457,280: 115,876,064 · 48 = 5,562,051,072.
  // Attention (Qwen3NextAttention, attn_output_gate: q projects 2·24·256): 5120·12288 = 62,914,560,
  // k and v 2·5120·4·256 = 10,485,760, o 6144·5120 = 31,457,280: 104,857,600 · 16 = 1,677,721,600;
  // q_norm and k_norm 16 · 2·256 = 8,192.
  // MLP 3·5120·17408 = 267,386,880 · 64 = 17,112,760,320. Norms 64·2·5120 + 5120 = 660,480.
  // Embedding 248320·5120 = 1,271,398,400 and the untied LM head the same. Language model
  // 26,895,998,464.
  // Vision tower (Qwen3_5VisionModel: Qwen3-VL's without DeepStack mergers, out 5120): 1,770,624 +
  // 2,654,208 + 411,466,608 + merger 2,304 + 21,238,272 + 4608·5120 + 5120 = 44,838,656:
  // 460,730,096. Together 27,356,728,560 (Qwen: 27B).
  // The copy is Qwen3.6-27B's config.json, whose layout Qwen3.5-27B's card gives too (64 layers,
  // 24 Q and 4 K/V heads of 256, MLP 17,408, width 5,120).
  FamilyCount f = count_file(config("qwen3.6-27b"));
  CHECK(f.family == "Qwen3.5");
  CHECK(f.total == 26895998464u);
  CHECK(f.vision_total == 460730096u);
  REQUIRE(f.total_with_vision.has_value());
  CHECK(*f.total_with_vision == 27356728560u);
  CHECK(agrees(*f.total_with_vision, 27, 0));
  CHECK_FALSE(f.active.has_value());
  // MTP (mtp_num_hidden_layers 1), apart: one dense layer of gated attention 104,857,600, q/k norms
  // 512, MLP 267,386,880 and 2 norms 10,240 = 372,255,232; fc 2·5120·5120 = 52,428,800; 3 norms
  // 15,360: 424,699,392.
  CHECK(f.mtp_total == 424699392u);
  // K/V: 16 · 4 · 2·256 · 2 bytes = 65,536 per token.
  CHECK(f.kv_bytes_per_token == 65536u);
  // State per Gated DeltaNet layer: conv 3·10240 = 30,720 at bfloat16 and 48·128·128 = 786,432 at
  // mamba_ssm_dtype float32: 48 · (61,440 + 3,145,728) = 153,944,064 bytes.
  CHECK(f.state_layers == 48);
  CHECK(f.state_elements == 817152u);
  CHECK(f.state_bytes == 153944064u);

  testutil::TempDir dir;
  // A dense row declaring experts is refused, not counted without them.
  std::string p = edited(dir, "qwen3.6-27b", [](Json& j) { j["text_config"]["num_experts"] = 64; });
  CHECK(error_of(p) == "model config '" + p + "': 'num_experts' changes the parameter count, and headcount's qwen3_5_text "
                       "(model_type qwen3_5) formula does not read it; counting without it would be a guess");
  // A text_config of the MoE model inside a dense wrapper is not this row's.
  p = edited(dir, "qwen3.6-27b", [](Json& j) { j["text_config"]["model_type"] = "qwen3_5_moe_text"; });
  CHECK(error_of(p) == "model config '" + p + "': text_config's model_type is 'qwen3_5_moe_text', not qwen3_5_text");
}

TEST_CASE("explain --config: Gemma-4-31B is 31,273,088,876: full layers whose keys serve as values, and its vision tower", "[families][gemma4]") {
  // modeling_gemma4.py, Gemma4TextModel, width 5376, 60 layers (layer_types: five sliding, one
  // full, ten times), 32 query heads; every layer four RMSNorms 4·5376 = 21,504, a layer_scalar of
  // 1 and Gemma4TextMLP gate, up, down 3·5376·21504 = 346,816,512.
  // Sliding layers (head_dim 256, 16 K/V heads): q 5376·8192 = 44,040,192, k and v 2·5376·4096 =
  // 44,040,192, o 8192·5376 = 44,040,192: 132,120,576 · 50 = 6,606,028,800; q_norm and k_norm 2·256.
  // Full layers (global_head_dim 512; attention_k_eq_v: num_global_key_value_heads 4 and no v_proj):
  // q 5376·16384 = 88,080,384, k 5376·2048 = 11,010,048, o 16384·5376 = 88,080,384: 187,170,816 ·
  // 10 = 1,871,708,160; q_norm and k_norm 2·512. v_norm has no weights.
  // MLPs 60 · 346,816,512 = 20,808,990,720. Norms 60·21,504 + 5,376 (final) + 50·512 + 10·1,024 +
  // 60 = 1,331,516. Embedding 262144·5376 = 1,409,286,144, the LM head tied. Language model
  // 30,697,345,340.
  // Vision (Gemma4VisionModel, width 1152, 27 layers of 16 heads of 72, MLP 4304): input_proj
  // 3·16²·1152 = 884,736; position_embedding_table 2·10240·1152 = 23,592,960; per layer 4 norms
  // 4,608, q, k, v, o 4·1152·1152 = 5,308,416, q_norm and k_norm 144, MLP 3·1152·4304 = 14,874,624:
  // 20,187,792 · 27 = 545,070,384; std_bias and std_scale 2,304; embed_vision's embedding_projection
  // 1152·5376 = 6,193,152. Vision 575,743,536. Together 31,273,088,876: the sum of the elements of
  // the 1,188 tensors of the release's two safetensors files as a public weight report lists them
  // (Google: 31B).
  FamilyCount f = count_file(config("gemma-4-31b-it"));
  CHECK(f.family == "Gemma 4");
  CHECK(f.total == 30697345340u);
  CHECK(f.vision_total == 575743536u);
  REQUIRE(f.total_with_vision.has_value());
  CHECK(*f.total_with_vision == 31273088876u);
  CHECK(agrees(*f.total_with_vision, 31, 0));
  REQUIRE(f.parts.size() >= 3);
  CHECK(f.parts[1].parameters == 6606028800u);
  CHECK(f.parts[2].part == "full attention");
  CHECK(f.parts[2].parameters == 1871708160u);
  // K/V per token at bfloat16: (50 · 16 · 2·256 + 10 · 4 · 2·512) · 2 = (409,600 + 40,960) · 2 =
  // 901,120 bytes; at 32,768 tokens the sliding layers keep 1,024: 10 · 8,192 · 32,768 + 50 ·
  // 16,384 · 1,024 = 2,684,354,560 + 838,860,800 = 3,523,215,360.
  CHECK(f.kv_bytes_per_token == 901120u);
  CHECK(kv_at(f, 32768, 16) == 3523215360u);
  CHECK(has_note(f, "their values are their keys before k_norm and RoPE, normed apart"));

  testutil::TempDir dir;
  const std::string start = "model config '";
  // Without attention_k_eq_v the full layers have v_proj and the sliding layers' 16 K/V heads:
  // 10 · (5376·32·512 + 2·5376·16·512 + 32·512·5376 − 187,170,816) = 10 · 77,070,336 more.
  std::string p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"]["attention_k_eq_v"] = false; });
  CHECK(count_file(p).total == 30697345340u + 770703360u);
  // Keys as values without their head count is a number missing, not a guess.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"].erase("num_global_key_value_heads"); });
  CHECK(error_of(p) == start + p + "': the gemma4_text (model_type gemma4) formula needs a number the config does not give "
                                   "(num_global_key_value_heads)");
  // Per-layer embeddings (the small models') are not in the formula: refused, not ignored.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"]["hidden_size_per_layer_input"] = 256; });
  CHECK(error_of(p) == start + p + "': 'hidden_size_per_layer_input' changes the parameter count, and headcount's gemma4_text "
                                   "(model_type gemma4) formula does not read it; counting without it would be a guess");
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"]["enable_moe_block"] = true; });
  CHECK(error_of(p).find("'enable_moe_block' changes the parameter count") != std::string::npos);
  // A sliding_window that is not positive would make the sliding layers count as full: refused.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"]["sliding_window"] = -1; });
  CHECK(error_of(p) == start + p + "': the gemma4_text (model_type gemma4) formula needs a number the config does not give "
                                   "(sliding_window)");
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["vision_config"]["use_clipped_linears"] = true; });
  CHECK(error_of(p) == start + p + "': the Gemma 4 vision tower needs a number the config does not give "
                                   "(vision_config.use_clipped_linears false (not in headcount's Gemma 4 tower))");
  // Without layer_types, Gemma4TextConfig's rule: every sixth layer full, and the last one full. 62
  // layers: 5, 11, …, 59 and 61 full; layer 60 one more sliding layer (132,120,576 + 512), layer 61
  // one more full layer (187,170,816 + 1,024), each with 346,838,017 of norms, layer_scalar and MLP:
  // 1,012,968,962 more.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) {
    j["text_config"].erase("layer_types");
    j["text_config"]["num_hidden_layers"] = 62;
  });
  CHECK(count_file(p).total == 30697345340u + 1012968962u);
  // A last layer that is not full is refused: Gemma4TextConfig would make it full.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"]["layer_types"][59] = "sliding_attention"; });
  CHECK(error_of(p) == start + p + "': layer_types' last layer is not full_attention, which Gemma4TextConfig forces it to be");
  // An audio tower is not counted, and the first line says so.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["audio_config"] = {{"model_type", "gemma4_audio"}}; });
  CHECK(read_model_config(p).read_as ==
        "its text_config (gemma4_text) and its vision_config counted; its audio_config (an audio tower) is not");
  // Hostile numbers: a product past 64 bits is an error, not a wrapped count.
  p = edited(dir, "gemma-4-31b-it", [](Json& j) { j["text_config"]["global_head_dim"] = INT64_MAX; });
  CHECK(error_of(p).find("does not fit in 64 bits") != std::string::npos);
}

TEST_CASE("explain --config: GLM-5 is 743.9B with 40.8B active: DeepSeek-V3.2's layers, its indexers and their keys", "[families][glm_moe_dsa]") {
  // modular_glm_moe_dsa.py: GlmMoeDsaAttention is DeepseekV3Attention (MLA) with a GlmMoeDsaIndexer
  // (DeepseekV32Indexer's modules) in each layer whose indexer_types entry is "full" (every layer by
  // default: index_topk_freq 1); the decoder layers are DeepSeek-V3.2's. Width 6144, 78 layers, 64
  // heads.
  // MLA: q_a 6144·2048 = 12,582,912, q_a_layernorm 2,048, q_b 2048·64·(192 + 64) = 33,554,432,
  // kv_a 6144·(512 + 64) = 3,538,944, kv_a_layernorm 512, kv_b 512·64·(192 + 256) = 14,680,064, o
  // 64·256·6144 = 100,663,296: 165,022,208. Indexer: wq_b 2048·32·128 = 8,388,608, wk 6144·128 =
  // 786,432, k_norm (LayerNorm) 2·128 = 256, weights_proj 6144·32 = 196,608: 9,371,904. 78 ·
  // 174,394,112 = 13,602,740,736.
  // 3 dense layers 3 · 3·6144·12288 = 679,477,248. 75 MoE layers: 256 experts of 3·6144·2048 =
  // 37,748,736 (724,775,731,200), one shared expert (2,831,155,200), the router 6144·256 + 256
  // (e_score_correction_bias) (117,984,000). Norms 78·2·6144 + 6144 = 964,608. Embedding and the
  // untied LM head 2·154880·6144 = 1,903,165,440. Total 743,911,218,432 (Z.ai: 744B).
  // Active: less 75 · (256 − 8) · 37,748,736 = 702,126,489,600 -> 41,784,728,832; without the input
  // embedding 40,833,146,112 (Z.ai: 40B active).
  // MTP (num_nextn_predict_layers 1, model.layers.78), apart: one MoE layer 174,394,112 +
  // 9,663,676,416 + 37,748,736 + 1,573,120 + 2 norms 12,288 = 9,877,404,672, eh_proj 2·6144·6144 =
  // 75,497,472, 3 norms 18,432: 9,952,920,576.
  FamilyCount f = count_file(config("glm-5"));
  CHECK(f.family == "GLM-5");
  CHECK(f.total == 743911218432u);
  CHECK(agrees(f.total, 744, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 41784728832u);
  CHECK(f.active_without_embedding == 40833146112u);
  CHECK(agrees(*f.active_without_embedding, 40, 0));
  CHECK(f.mtp_total == 9952920576u);
  // K/V per token at bfloat16: the latent and the RoPE key 78 · (512 + 64) · 2 = 89,856 and the
  // indexer's key 78 · 128 · 2 = 19,968: 109,824.
  CHECK(f.kv_bytes_per_token == 109824u);

  testutil::TempDir dir;
  const std::string start = "model config '";
  // GLM-5.2's index sharing (index_topk_freq 4, index_skip_topk_offset 3): layer i runs its indexer
  // when max(i − 2, 0) % 4 == 0: layers 0, 1, 2, then 6, 10, …, 74 (18): 21 of 78. The other 57 hold
  // none: 57 · 9,371,904 = 534,198,528 fewer; their keys are not kept: 78 · 576 · 2 + 21 · 128 · 2 =
  // 89,856 + 5,376 = 95,232 bytes per token. The MTP layer keeps its indexer.
  std::string p = edited(dir, "glm-5", [](Json& j) {
    j["index_topk_freq"] = 4;
    j["index_skip_topk_offset"] = 3;
  });
  FamilyCount s = count_file(p);
  CHECK(s.total == 743911218432u - 534198528u);
  CHECK(s.kv_bytes_per_token == 95232u);
  CHECK(s.mtp_total == 9952920576u);
  REQUIRE(s.kv_layers.size() == 2);
  CHECK(s.kv_layers[1].kind == "indexer");
  CHECK(s.kv_layers[1].layers == 21);
  // index_skip_topk_offset 0, index_topk_freq 2: layer i is full when (i + 1) % 2 == 0: 39 of 78,
  // 39 · 9,371,904 = 365,504,256 fewer. An offset past the last layer makes every layer full.
  p = edited(dir, "glm-5", [](Json& j) {
    j["index_topk_freq"] = 2;
    j["index_skip_topk_offset"] = 0;
  });
  CHECK(count_file(p).total == 743911218432u - 365504256u);
  p = edited(dir, "glm-5", [](Json& j) {
    j["index_topk_freq"] = 4;
    j["index_skip_topk_offset"] = 100;
  });
  CHECK(count_file(p).total == 743911218432u);
  // The same schedule as indexer_types, and mlp_layer_types naming the 3 dense layers: the same count.
  p = edited(dir, "glm-5", [](Json& j) {
    j["indexer_types"] = Json::array();
    j["mlp_layer_types"] = Json::array();
    for (int l = 0; l < 78; ++l) {
      j["indexer_types"].push_back(std::max(l - 2, 0) % 4 == 0 ? "full" : "shared");
      j["mlp_layer_types"].push_back(l < 3 ? "dense" : "sparse");
    }
    j.erase("first_k_dense_replace");
  });
  CHECK(count_file(p).total == 743911218432u - 534198528u);
  // mlp_layer_types decides: a fourth dense layer replaces one MoE layer (9,702,998,272, its experts,
  // shared expert and router) with a dense one (226,492,416).
  p = edited(dir, "glm-5", [](Json& j) {
    j["mlp_layer_types"] = Json::array();
    for (int l = 0; l < 78; ++l) j["mlp_layer_types"].push_back(l < 4 ? "dense" : "sparse");
  });
  CHECK(count_file(p).total == 743911218432u - 9702998272u + 226492416u);
  // Lists that do not fit the layers, or name what the formula does not know, are errors.
  p = edited(dir, "glm-5", [](Json& j) { j["indexer_types"] = Json::array({"full", "shared"}); });
  CHECK(error_of(p) == start + p + "': indexer_types names 2 layers, and num_hidden_layers is 78");
  p = edited(dir, "glm-5", [](Json& j) { j["index_topk_pattern"] = std::string(77, 'F') + "X"; });
  CHECK(error_of(p) == start + p + "': index_topk_pattern[77] is neither F nor S");
  p = edited(dir, "glm-5", [](Json& j) { j["mlp_layer_types"] = Json::array({"dense"}); });
  CHECK(error_of(p) == start + p + "': mlp_layer_types names 1 layers, and num_hidden_layers is 78");
  // MTP layers whose count does not fit in 64 bits are said so, never given as 0 (before: "= 0").
  p = edited(dir, "glm-5", [](Json& j) { j["num_nextn_predict_layers"] = INT64_MAX; });
  FamilyCount m = count_file(p);
  CHECK(m.total == 743911218432u);
  CHECK(m.mtp.empty());
  CHECK(has_note(m, "num_nextn_predict_layers is 9223372036854775807: the multi-token-prediction modules' count does not "
                    "fit in 64 bits, and is not given"));
  // DeepSeek-V3.2's row does not read index sharing: refused there, not counted without it.
  p = edited(dir, "deepseek-v3.2-exp", [](Json& j) { j["index_topk_freq"] = 4; });
  CHECK(error_of(p) == start + p + "': 'index_topk_freq' changes the parameter count, and headcount's deepseek_v32 "
                                   "formula does not read it; counting without it would be a guess");
}

TEST_CASE("explain --config: GLM-4.5 is 352.8B as Glm4MoeForCausalLM builds it; its MTP module makes the Hub's 358B", "[families][glm4_moe]") {
  // Issue 38 asks why the calculator gives 352.8B for zai-org/GLM-4.5's config when Z.ai says 355B.
  // GLM-4.5's architecture (its config: GLM-4.5-Air's keys with width 5120, 92 layers, 96 heads of
  // 128 and 8 K/V heads, MLP 12288, 160 experts of 1536, 3 dense layers, use_qk_norm true), worked
  // from modeling_glm4_moe.py:
  // Attention: q 5120·12288 = 62,914,560, k and v 2·5120·1024 = 10,485,760, o 12288·5120 =
  // 62,914,560, q/k/v biases 12,288 + 2,048, q_norm and k_norm 2·128: 136,329,472 · 92 =
  // 12,542,311,424. Dense layers 3 · 3·5120·12288 = 566,231,040. 89 MoE layers: 160 experts of
  // 3·5120·1536 = 23,592,960 (3,774,873,600), the shared expert 23,592,960, the router 5120·160 +
  // 160: 3,799,285,920 · 89 = 338,136,446,880. Norms 92·2·5120 + 5120 = 947,200. Embedding and LM
  // head 2·151552·5120 = 1,551,892,480. Total 352,797,829,024: the model Glm4MoeForCausalLM builds
  // (it leaves out model.layers.92, the MTP layer). Active without the embedding: less 89 · 152 ·
  // 23,592,960 and 775,946,240 = 32,856,319,904 (Z.ai: 32B active).
  // The MTP layer, apart: 136,329,472 + 3,799,285,920 + 2 norms 10,240 = 3,935,625,632, eh_proj
  // 2·5120·5120 = 52,428,800, enorm, hnorm and shared_head.norm 15,360: 3,988,069,792. The release's
  // checkpoint also stores the MTP module's own embed_tokens and shared_head.head (vLLM loads them
  // from model.layers.92 for GLM-4.5, not for GLM-4.6): 2 · 775,946,240 = 1,551,892,480. All the
  // tensors: 352,797,829,024 + 3,988,069,792 + 1,551,892,480 = 358,337,791,296, the Hub's 358B.
  // Z.ai's "355B" is none of these sums: it lies between the model (352.8B) and the model with its
  // MTP layer (356.8B); no term of the modeling code is missing from the 352.8B.
  testutil::TempDir dir;
  std::string p = edited(dir, "glm-4.5-air", [](Json& j) {
    j["hidden_size"] = 5120;
    j["num_hidden_layers"] = 92;
    j["intermediate_size"] = 12288;
    j["moe_intermediate_size"] = 1536;
    j["n_routed_experts"] = 160;
    j["first_k_dense_replace"] = 3;
    j["use_qk_norm"] = true;
  });
  FamilyCount f = count_file(p);
  CHECK(f.total == 352797829024u);
  CHECK(f.active_without_embedding == 32856319904u);
  CHECK(agrees(*f.active_without_embedding, 32, 0));
  CHECK(f.mtp_total == 3988069792u);
  const uint64_t copies = 2ull * 151552ull * 5120ull;
  CHECK(f.total + f.mtp_total + copies == 358337791296u);
  CHECK(agrees(f.total + f.mtp_total + copies, 358, 0));
  CHECK_FALSE(agrees(f.total, 355, 0));
  CHECK_FALSE(agrees(f.total + f.mtp_total, 355, 0));
}

TEST_CASE("explain --config: ERNIE-4.5-21B-A3B is 21.8B with 3.35B active", "[families][ernie4_5_moe]") {
  // modular_ernie4_5_moe.py, width 2560, 28 layers of 20 heads and 4 K/V heads of 128, no biases
  // (use_bias false): attention 2560·2560 + 2·2560·512 + 2560·2560 = 15,728,640 · 28 = 440,401,920.
  // Layer 0 dense (moe_layer_start_index 1): 3·2560·12288 = 94,371,840. Layers 1..27
  // (moe_layer_end_index 27, moe_layer_interval 1): 64 experts of 3·2560·1536 = 11,796,480
  // (754,974,720), the shared MLP of 2·1536 (23,592,960), the router 2560·64 and moe_statics'
  // e_score_correction_bias 64 (163,904): 778,731,584 · 27 = 21,025,752,768. Norms 28·2·2560 + 2560
  // = 145,920. Embedding 103424·2560 = 264,765,440, the LM head tied. Total 21,825,437,888 (Baidu:
  // 21B). Active: less 27 · (64 − 6) · 11,796,480 = 18,473,287,680 -> 3,352,150,208 (Baidu: A3B).
  FamilyCount f = count_file(config("ernie-4.5-21b-a3b-pt"));
  CHECK(f.family == "ERNIE 4.5 MoE");
  CHECK(f.total == 21825437888u);
  CHECK(agrees(f.total, 21, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 3352150208u);
  CHECK(agrees(*f.active, 3, 0));
  CHECK(f.moe_layers == 27);
  // K/V: 28 · 4 · 2·128 · 2 bytes = 57,344 per token.
  CHECK(f.kv_bytes_per_token == 57344u);

  testutil::TempDir dir;
  const std::string start = "model config '";
  // moe_layer_end_index 13 keeps layers 14..27 dense: 14 · (778,731,584 − 94,371,840) fewer.
  std::string p = edited(dir, "ernie-4.5-21b-a3b-pt", [](Json& j) { j["moe_layer_end_index"] = 13; });
  CHECK(count_file(p).total == 21825437888u - 14ull * (778731584ull - 94371840ull));
  // moe_layer_interval 2: layers 1, 3, …, 27 (14) hold experts, the other 13 of 1..27 are dense.
  p = edited(dir, "ernie-4.5-21b-a3b-pt", [](Json& j) { j["moe_layer_interval"] = 2; });
  CHECK(count_file(p).total == 21825437888u - 13ull * (778731584ull - 94371840ull));
  // The checkpoint's MTP layers are not built by the class: read, not counted, said so.
  p = edited(dir, "ernie-4.5-21b-a3b-pt", [](Json& j) { j["num_nextn_predict_layers"] = 1; });
  FamilyCount m = count_file(p);
  CHECK(m.total == 21825437888u);
  CHECK(has_note(m, "not built by Ernie4_5_MoeForCausalLM"));
  // Biases on every projection and the LM head are not in the formula: refused.
  p = edited(dir, "ernie-4.5-21b-a3b-pt", [](Json& j) { j["use_bias"] = true; });
  CHECK(error_of(p) == start + p + "': 'use_bias' changes the parameter count, and headcount's ernie4_5_moe formula does not "
                                   "read it; counting without it would be a guess");
  // ERNIE-VL's per-modality lists where a layer number belongs are not read as 0.
  p = edited(dir, "ernie-4.5-21b-a3b-pt", [](Json& j) { j["moe_layer_start_index"] = Json::array({1, 1}); });
  CHECK(error_of(p) == start + p + "': moe_layer_start_index is not a number");
}

TEST_CASE("explain --config: LFM2-1.2B is 1.17B: short convolutions, six attention layers, and their state", "[families][lfm2]") {
  // modeling_lfm2.py, width 2048, 16 layers; full_attn_idxs [2, 5, 8, 10, 12, 14] attend, the other
  // 10 are Lfm2ShortConv. Attention (32 heads and 8 K/V heads of 64, no biases): q 2048·2048, k and
  // v 2·2048·512, out_proj 2048·2048 = 10,485,760 · 6 = 62,914,560; q_layernorm and k_layernorm
  // 6 · 2·64 = 768. Short convolution (conv_bias false): in_proj 2048·6144 = 12,582,912, conv1d
  // 2048·3 = 6,144, out_proj 2048·2048 = 4,194,304: 16,783,360 · 10 = 167,833,600. Lfm2MLP:
  // block_ff_dim 12288 -> int(2·12288 / 3) = 8192, a multiple of 256: w1, w3, w2 3·2048·8192 =
  // 50,331,648 · 16 = 805,306,368. operator_norm and ffn_norm 16·2·2048 + embedding_norm 2048 =
  // 67,584. Embedding 65536·2048 = 134,217,728, tied (tie_embedding). Total 1,170,340,608 (Liquid:
  // 1.17B).
  FamilyCount f = count_file(config("lfm2-1.2b"));
  CHECK(f.family == "LFM2");
  CHECK(f.total == 1170340608u);
  CHECK(agrees(f.total, 1.17, 2));
  // K/V: 6 · 8 · 2·64 · 2 bytes = 12,288 per token. State: each conv layer keeps conv_L_cache inputs
  // of its 2048 channels: 10 · 2048·3 · 2 bytes = 122,880 bytes per sequence.
  CHECK(f.kv_bytes_per_token == 12288u);
  CHECK(f.state_layers == 10);
  CHECK(f.state_elements == 6144u);
  CHECK(f.state_bytes == 122880u);

  testutil::TempDir dir;
  const std::string start = "model config '";
  // layer_types says the same as full_attn_idxs.
  std::string p = edited(dir, "lfm2-1.2b", [](Json& j) {
    j.erase("full_attn_idxs");
    j["layer_types"] = Json::array();
    for (int l = 0; l < 16; ++l) {
      const bool attn = l == 2 || l == 5 || l == 8 || l == 10 || l == 12 || l == 14;
      j["layer_types"].push_back(attn ? "full_attention" : "conv");
    }
  });
  CHECK(count_file(p).total == 1170340608u);
  // Neither: Lfm2Config makes every layer attend: 10 · (10,485,760 + 128 − 16,783,360) fewer.
  p = edited(dir, "lfm2-1.2b", [](Json& j) { j.erase("full_attn_idxs"); });
  CHECK(count_file(p).total == 1170340608ull - 10ull * (16783360ull - 10485888ull));
  // LFM2-350M's numbers (width 1024, 16 heads, block_ff_dim 6656 -> int(13312 / 3) = 4437 -> 4608):
  // 67,108,864 + 6 · 3,145,856 + 10 · (3,145,728 + 3,072 + 1,048,576) + 16 · 3·1024·4608 + 16·2048
  // + 1024 = 354,483,968 (Liquid: 354M).
  p = edited(dir, "lfm2-1.2b", [](Json& j) {
    j["hidden_size"] = 1024;
    j["block_dim"] = 1024;
    j["conv_dim"] = 1024;
    j["num_attention_heads"] = 16;
    j["block_ff_dim"] = 6656;
  });
  CHECK(count_file(p).total == 354483968u);
  // conv_bias: 3·2048 + 2048 + 2048 more in each of the 10 conv layers.
  p = edited(dir, "lfm2-1.2b", [](Json& j) { j["conv_bias"] = true; });
  CHECK(count_file(p).total == 1170340608u + 10u * 5u * 2048u);
  // A multiplier Python would round is refused, not approximated.
  p = edited(dir, "lfm2-1.2b", [](Json& j) { j["block_ffn_dim_multiplier"] = 1.5; });
  CHECK(error_of(p) == start + p + "': block_ffn_dim_multiplier is not a whole number headcount can multiply by exactly");
  p = edited(dir, "lfm2-1.2b", [](Json& j) { j["layer_types"] = Json::array({"conv", "mamba"}); });
  CHECK(error_of(p) == start + p + "': layer_types names 2 layers, and num_hidden_layers is 16");
  p = edited(dir, "lfm2-1.2b", [](Json& j) { j["conv_L_cache"] = INT64_MAX; });
  CHECK(error_of(p).find("does not fit in 64 bits") != std::string::npos);
}

TEST_CASE("explain --config: Granite-4.0-H-Tiny is 6.94B with 1.47B active: Mamba-2 and attention, a shared MLP and experts", "[families][granitemoehybrid]") {
  // modular_granitemoehybrid.py, width 1536, 40 layers (layer_types: 36 mamba, 4 attention), each
  // with input_layernorm and post_attention_layernorm, a shared MLP and experts.
  // Attention (GraniteMoeSharedAttention, 12 heads and 4 K/V heads of 128, attention_bias false):
  // 1536·1536 + 2·1536·512 + 1536·1536 = 6,291,456 · 4 = 25,165,824.
  // Mamba-2 (BambaMixer): width mamba_expand · 1536 = 3072 = 48 heads · 64; conv_dim 3072 + 2·1·128
  // = 3328; in_proj 1536·(3072 + 3328 + 48) = 9,904,128, conv1d 3328·4 + 3328 (mamba_conv_bias) =
  // 16,640, dt_bias, A_log, D 3·48 = 144, gated norm 3072, out_proj 3072·1536 = 4,718,592:
  // 14,642,576 · 36 = 527,132,736.
  // Every layer: 64 experts (input_linear 1536 → 2·512, output_linear 512 → 1536) of 2,359,296
  // (150,994,944), the shared MLP 3·1536·1024 = 4,718,592, the router 1536·64 = 98,304:
  // 155,811,840 · 40 = 6,232,473,600. Norms 40·2·1536 + 1536 = 124,416. Embedding 100352·1536 =
  // 154,140,672, tied. Total 6,939,037,248 (IBM: 7B). Active: less 40 · (64 − 6) · 2,359,296 =
  // 5,473,566,720 -> 1,465,470,528 (IBM: 1B active).
  FamilyCount f = count_file(config("granite-4.0-h-tiny"));
  CHECK(f.family == "Granite 4.0 hybrid");
  CHECK(f.total == 6939037248u);
  CHECK(agrees(f.total, 7, 0));
  REQUIRE(f.active.has_value());
  CHECK(*f.active == 1465470528u);
  CHECK(agrees(*f.active, 1, 0));
  // K/V: 4 · 4 · 2·128 · 2 bytes = 8,192 per token. State: conv 3·3328 = 9,984 and 48·64·128 =
  // 393,216 elements a Mamba layer: 36 · 403,200 · 2 bytes = 29,030,400.
  CHECK(f.kv_bytes_per_token == 8192u);
  CHECK(f.state_layers == 36);
  CHECK(f.state_elements == 403200u);
  CHECK(f.state_bytes == 29030400u);
  CHECK(has_note(f, "the Mamba-2 width is mamba_expand · hidden_size = 2·1536 = mamba_n_heads · mamba_d_head = 48·64"));

  testutil::TempDir dir;
  const std::string start = "model config '";
  // Without experts (Granite-4.0-H-1B's kind) the shared MLP is the layer's feed-forward: less the
  // experts and routers, 40 · (150,994,944 + 98,304).
  std::string p = edited(dir, "granite-4.0-h-tiny", [](Json& j) {
    j["num_local_experts"] = 0;
    j["num_experts_per_tok"] = 0;
  });
  FamilyCount d = count_file(p);
  CHECK(d.total == 6939037248ull - 40ull * (150994944ull + 98304ull));
  CHECK_FALSE(d.active.has_value());
  // mamba_d_head "auto" is the width over the heads: the same count.
  p = edited(dir, "granite-4.0-h-tiny", [](Json& j) { j["mamba_d_head"] = "auto"; });
  CHECK(count_file(p).total == 6939037248u);
  // Without layer_types every layer is Mamba-2: 4 · (14,642,576 − 6,291,456) more.
  p = edited(dir, "granite-4.0-h-tiny", [](Json& j) { j.erase("layer_types"); });
  CHECK(count_file(p).total == 6939037248u + 4u * (14642576u - 6291456u));
  // Heads that do not fill the width, and a layer name the formula does not know, are errors.
  p = edited(dir, "granite-4.0-h-tiny", [](Json& j) { j["mamba_d_head"] = 32; });
  CHECK(error_of(p) == start + p + "': mamba_n_heads · mamba_d_head is not mamba_expand · hidden_size (2·1536)");
  p = edited(dir, "granite-4.0-h-tiny", [](Json& j) { j["layer_types"][0] = "conv"; });
  CHECK(error_of(p) == start + p + "': layer_types[0] is 'conv', a layer headcount's granitemoehybrid formula does not know");
  p = edited(dir, "granite-4.0-h-tiny", [](Json& j) { j["mamba_n_heads"] = INT64_MAX; });
  CHECK(error_of(p).find("mamba_n_heads · mamba_d_head is not mamba_expand · hidden_size") != std::string::npos);
}
