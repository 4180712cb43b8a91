// adapter_test.cpp: LoRA adapters as PEFT, MLX and llama.cpp write them, and an adapter against
// its base. Each adapter is written here with the tools' own names and config keys; every figure is
// the factors' shapes multiplied out by hand in the comment beside it.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "headcount/audit.h"
#include "headcount/gate.h"
#include "test_util.h"

using namespace headcount;

namespace {

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
};

// A safetensors file of float32 tensors (zeros).
std::string f32_file(const std::vector<Tensor>& tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (const Tensor& t : tensors) {
    uint64_t n = 4;
    std::string shape;
    for (int64_t d : t.shape) {
      n *= static_cast<uint64_t>(d);
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    }
    header += (header.size() > 1 ? "," : "") + std::string("\"") + t.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + n) + "]}";
    offset += n;
  }
  header += "}";
  return testutil::safetensors_file(header, offset);
}

const AdapterTarget& target(const Adapter& a, const std::string& module) {
  for (const AdapterTarget& t : a.targets) {
    if (t.module == module) return t;
  }
  FAIL("no target " << module);
  throw;
}

Audit audit_folder(const testutil::TempDir& dir, const std::string& file, const std::string& base = "") {
  AuditOptions o;
  o.base = base;
  return audit_file(dir.file(file), o);
}

}  // namespace

TEST_CASE("adapter: PEFT LoRA with DoRA, rsLoRA, an embedding and a saved classifier head", "[adapter]") {
  testutil::TempDir dir;
  std::vector<Tensor> t;
  for (int l = 0; l < 2; ++l) {
    const std::string p = "base_model.model.model.layers." + std::to_string(l) + ".self_attn.";
    // q_proj 64 -> 64, rank 8: A [8, 64] 512 + B [64, 8] 512 + magnitude [64] 64 = 1,088 per layer.
    t.push_back({p + "q_proj.lora_A.weight", {8, 64}});
    t.push_back({p + "q_proj.lora_B.weight", {64, 8}});
    t.push_back({p + "q_proj.lora_magnitude_vector", {64}});
    // v_proj 64 -> 16, rank 8: A 512 + B [16, 8] 128 + magnitude [16] 16 = 656 per layer.
    t.push_back({p + "v_proj.lora_A.weight", {8, 64}});
    t.push_back({p + "v_proj.lora_B.weight", {16, 8}});
    t.push_back({p + "v_proj.lora_magnitude_vector", {16}});
  }
  // The embedding's factors: A [8, 1000] 8,000 + B [64, 8] 512 = 8,512 (vocabulary 1000 -> width 64).
  t.push_back({"base_model.model.model.embed_tokens.lora_embedding_A", {8, 1000}});
  t.push_back({"base_model.model.model.embed_tokens.lora_embedding_B", {64, 8}});
  // PEFT saves a sequence classifier's head whole: score [3, 64] = 192.
  t.push_back({"base_model.model.score.weight", {3, 64}});
  testutil::write_bytes(dir.file("adapter_model.safetensors"), f32_file(t));
  testutil::write_bytes(dir.file("adapter_config.json"),
                        R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "use_rslora": true, "use_dora": true,
                            "target_modules": ["q_proj", "v_proj", "embed_tokens"], "modules_to_save": null,
                            "base_model_name_or_path": "org/base", "task_type": "SEQ_CLS"})");
  Audit a = audit_folder(dir, "adapter_model.safetensors");
  REQUIRE(a.adapter);
  const Adapter& ad = *a.adapter;
  CHECK(ad.format == "PEFT");
  CHECK(ad.method == "DoRA");
  CHECK(ad.declared_rank == 8);
  CHECK(ad.alpha == 16.0);
  // rsLoRA: lora_alpha / sqrt(r) = 16 / sqrt(8) = 5.65685...
  REQUIRE(ad.scale);
  CHECK(std::abs(*ad.scale - 16.0 / std::sqrt(8.0)) < 1e-12);
  CHECK(ad.scale_from == "lora_alpha / sqrt(r) (rsLoRA)");
  CHECK(ad.base == "org/base");
  REQUIRE(ad.targets.size() == 3);
  CHECK(target(ad, "q_proj").layers == 2);
  CHECK(target(ad, "q_proj").ranks == std::vector<int64_t>{8});
  CHECK(target(ad, "q_proj").in == 64);
  CHECK(target(ad, "q_proj").out == 64);
  CHECK(target(ad, "q_proj").parameters == 2 * 1088);
  CHECK(target(ad, "q_proj").magnitudes == 2 * 64);
  CHECK(target(ad, "v_proj").out == 16);
  CHECK(target(ad, "v_proj").parameters == 2 * 656);
  CHECK(target(ad, "embed_tokens").layers == 0);
  CHECK(target(ad, "embed_tokens").in == 1000);
  CHECK(target(ad, "embed_tokens").out == 64);
  CHECK(target(ad, "embed_tokens").parameters == 8512);
  // Factors: 2 x (512 + 512 + 512 + 128) + 8,512 = 11,840; magnitudes 2 x (64 + 16) = 160; the head 192.
  CHECK(ad.lora == 11840);
  CHECK(ad.magnitudes == 160);
  CHECK(ad.saved == 192);
  CHECK(ad.total == 12192);
  CHECK(a.inventory.stored == 12192);
  CHECK(a.composition.adapter == 12000);  // the factors and magnitudes; the head is a module of its own
  CHECK(ad.notes.empty());
}

TEST_CASE("adapter: MLX's transposed factors and its config, GPT-2's packed c_attn", "[adapter]") {
  testutil::TempDir dir;
  std::vector<Tensor> t;
  for (int l = 0; l < 3; ++l) {
    // MLX: lora_a [in, r], lora_b [r, out]. c_attn 48 -> 144 (Q, K and V of width 48), rank 2:
    // a [48, 2] 96 + b [2, 144] 288 = 384 per layer, 1,152 in all.
    const std::string p = "transformer.h." + std::to_string(l) + ".attn.c_attn.";
    t.push_back({p + "lora_a", {48, 2}});
    t.push_back({p + "lora_b", {2, 144}});
  }
  testutil::write_bytes(dir.file("adapters.safetensors"), f32_file(t));
  testutil::write_bytes(dir.file("adapter_config.json"),
                        R"({"fine_tune_type": "lora", "num_layers": 3, "model": "org/gpt2",
                            "lora_parameters": {"rank": 2, "scale": 20.0, "dropout": 0.0, "keys": ["attn.c_attn"]}})");
  Audit a = audit_folder(dir, "adapters.safetensors");
  REQUIRE(a.adapter);
  const Adapter& ad = *a.adapter;
  CHECK(ad.format == "MLX");
  CHECK(ad.method == "LoRA");
  CHECK(ad.scale == 20.0);
  CHECK(ad.scale_from == "lora_parameters.scale");
  CHECK(ad.base == "org/gpt2");
  REQUIRE(ad.targets.size() == 1);
  CHECK(ad.targets[0].module == "c_attn");
  CHECK(ad.targets[0].reaches == "Q, K and V");
  CHECK(ad.targets[0].in == 48);
  CHECK(ad.targets[0].out == 144);
  CHECK(ad.targets[0].ranks == std::vector<int64_t>{2});
  CHECK(ad.total == 1152);
  CHECK(ad.notes.empty());
}

TEST_CASE("adapter: llama.cpp's GGUF adapter, its alpha from the metadata", "[adapter]") {
  testutil::TempDir dir;
  gguf_test::GgufWriter w;
  w.str("general.architecture", "llama").str("general.type", "adapter").str("adapter.type", "lora");
  w.f32("adapter.lora.alpha", 32.0f);
  // GGUF's ne is innermost first: lora_a ne [64, 16] is [16, 64] (A [r, in]), lora_b ne [16, 64] is
  // [64, 16] (B [out, r]). Rank 16, 64 -> 64: 1,024 + 1,024 = 2,048 per module, 2 modules, 2 layers.
  for (int l = 0; l < 2; ++l) {
    for (const char* m : {"attn_q", "attn_v"}) {
      const std::string p = "blk." + std::to_string(l) + "." + m + ".weight.";
      w.tensor(p + "lora_a", {64, 16}, 0);
      w.tensor(p + "lora_b", {16, 64}, 0);
    }
  }
  w.write(dir.file("lora.gguf"));
  Audit a = audit_folder(dir, "lora.gguf");
  REQUIRE(a.adapter);
  const Adapter& ad = *a.adapter;
  CHECK(ad.format == "GGUF");
  CHECK(ad.config == "GGUF metadata");
  CHECK(ad.alpha == 32.0);
  CHECK(ad.scale == 2.0);  // adapter.lora.alpha / rank = 32 / 16
  REQUIRE(ad.targets.size() == 2);
  CHECK(target(ad, "attn_q").ranks == std::vector<int64_t>{16});
  CHECK(target(ad, "attn_q").layers == 2);
  CHECK(target(ad, "attn_v").parameters == 4096);
  CHECK(ad.total == 8192);
}

TEST_CASE("adapter: what does not agree is said", "[adapter]") {
  testutil::TempDir dir;
  // A without its B; A of rank 4 with a B of rank 8; k_proj targeted with no factor; rank 4
  // declared, 8 found on o_proj.
  testutil::write_bytes(dir.file("adapter_model.safetensors"),
                        f32_file({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {4, 32}},
                                  {"base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight", {4, 32}},
                                  {"base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight", {32, 8}},
                                  {"base_model.model.model.layers.0.self_attn.o_proj.lora_A.weight", {8, 32}},
                                  {"base_model.model.model.layers.0.self_attn.o_proj.lora_B.weight", {32, 8}}}));
  testutil::write_bytes(dir.file("adapter_config.json"), R"({"peft_type": "LORA", "r": 4, "lora_alpha": 4,
                                                              "target_modules": ["q_proj", "k_proj", "v_proj"]})");
  Audit a = audit_folder(dir, "adapter_model.safetensors");
  REQUIRE(a.adapter);
  const std::vector<std::string>& n = a.adapter->notes;
  auto has = [&](const std::string& s) { return std::find(n.begin(), n.end(), s) != n.end(); };
  CHECK(has("model.layers.0.self_attn.q_proj has its A factor but not its B"));
  CHECK(has("model.layers.0.self_attn.v_proj: A's rank 4 and B's 8 disagree"));
  CHECK(has("the config's rank is 4, but factors have rank 8"));
  CHECK(has("the config targets 'k_proj', which no factor belongs to"));
  CHECK(has("'o_proj' has factors, but the config does not target it"));
  CHECK(n.size() == 5);
}

TEST_CASE("adapter: --base, its share, and the gate when it is made for another base", "[adapter]") {
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  // samples/lora_peft: q_proj 32 -> 32 and v_proj 32 -> 16 of llama_tiny's 2 layers, 896 parameters
  // (samples/make_adapter.py); llama_tiny's framework count is 24,992 (llama_tiny.counts.tsv).
  AuditOptions o;
  o.base = samples + "/llama_tiny.safetensors";
  Audit a = audit_file(samples + "/lora_peft", o);
  REQUIRE(a.adapter);
  REQUIRE(a.adapter->fit);
  CHECK(a.adapter->total == 896);
  CHECK(a.adapter->fit->base_parameters == 24992);
  CHECK(a.adapter->fit->fitted == 4);
  CHECK(a.adapter->fit->misfits.empty());
  CHECK(check_gates(a, {}).empty());

  // Made for a model whose V is as wide as Q (no grouped K/V): v_proj 32 -> 32 against
  // llama_tiny's v_proj [16, 32], in both layers.
  testutil::TempDir dir;
  std::vector<Tensor> t;
  for (int l = 0; l < 2; ++l) {
    const std::string p = "base_model.model.model.layers." + std::to_string(l) + ".self_attn.v_proj.";
    t.push_back({p + "lora_A.weight", {4, 32}});
    t.push_back({p + "lora_B.weight", {32, 4}});
  }
  testutil::write_bytes(dir.file("adapter_model.safetensors"), f32_file(t));
  testutil::CliResult r = testutil::cli({"audit", dir.path.string(), "--base", samples + "/llama_tiny.safetensors"});
  CHECK(r.code == 1);
  CHECK(r.err == "headcount: gate failed: " + dir.path.string() + ": adapter-base: 2 of the adapter's modules do not fit the base '" +
                     samples + "/llama_tiny.safetensors': model.layers.0.self_attn.v_proj: the adapter is 32 -> 32, the "
                     "base's layers.0.self_attn.v_proj.weight is [16, 32]; ...\n");

  // An export whose names do not show the modules: nothing checked, which does not pass.
  Audit onnx = audit_file(samples + "/lora_peft", [&] {
    AuditOptions x;
    x.base = samples + "/bert_tiny.onnx";
    return x;
  }());
  REQUIRE(onnx.adapter->fit);
  CHECK(onnx.adapter->fit->fitted == 0);
  CHECK(onnx.adapter->fit->unchecked.size() == 4);
  std::vector<GateFailure> g = check_gates(onnx, {});
  REQUIRE(g.size() == 1);
  CHECK(g[0].gate == "adapter-base");

  // --base on a model that is not an adapter, and a base that cannot be read: errors.
  r = testutil::cli({"audit", samples + "/llama_tiny.safetensors", "--base", samples + "/llama_tiny.safetensors"});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: " + samples + "/llama_tiny.safetensors: --base checks an adapter against its base; '" +
                     samples + "/llama_tiny.safetensors' holds no LoRA adapter\n");
  r = testutil::cli({"audit", samples + "/lora_peft", "--base", dir.file("missing.safetensors")});
  CHECK(r.code == 2);
  CHECK(r.err.rfind("headcount: error: " + samples + "/lora_peft: the base '" + dir.file("missing.safetensors") + "': ", 0) == 0);
}

TEST_CASE("adapter: --base a config, its matrices from the config's numbers", "[adapter]") {
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  // llama_tiny.config.json: hidden 32, 4 heads of 8, 2 K/V heads, so q_proj [32, 32] and v_proj
  // [16, 32]; its family's count is llama_tiny's 24,992 (llama_tiny.counts.tsv).
  AuditOptions o;
  o.base = samples + "/llama_tiny.config.json";
  Audit a = audit_file(samples + "/lora_peft", o);
  REQUIRE(a.adapter->fit);
  CHECK(a.adapter->fit->fitted == 4);
  CHECK(a.adapter->fit->base_parameters == uint64_t{24992});
  CHECK(a.adapter->fit->misfits.empty());

  // The same numbers with 4 K/V heads: v_proj [32, 32], which the adapter's 32 -> 16 does not fit,
  // in both layers.
  testutil::TempDir dir;
  const std::string numbers = R"("hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 4,
                                 "num_hidden_layers": 2, "intermediate_size": 64, "vocab_size": 100})";
  testutil::write_bytes(dir.file("config.json"), R"({"model_type": "llama", )" + numbers);
  o.base = dir.file("config.json");
  Audit b = audit_file(samples + "/lora_peft", o);
  REQUIRE(b.adapter->fit);
  CHECK(b.adapter->fit->fitted == 2);
  REQUIRE(b.adapter->fit->misfits.size() == 2);
  CHECK(b.adapter->fit->misfits[0] ==
        "model.layers.0.self_attn.v_proj: the adapter is 32 -> 16, the base's model.layers.0.self_attn.v_proj.weight is [32, 32]");
  CHECK(check_gates(b, {}).size() == 1);

  // A model_type no family knows: its count is unknown, and so are its modules' names (GPT-2 calls
  // its attention c_attn, BERT query, Phi-3 qkv_proj): nothing is checked, and the gate does not pass.
  testutil::write_bytes(dir.file("config.json"), R"({"model_type": "somethingnew", )" + numbers);
  Audit c = audit_file(samples + "/lora_peft", o);
  REQUIRE(c.adapter->fit);
  CHECK(!c.adapter->fit->base_parameters);
  CHECK(c.adapter->fit->fitted == 0);
  CHECK(c.adapter->fit->misfits.empty());
  REQUIRE(c.adapter->fit->unchecked.size() == 4);
  CHECK(c.adapter->fit->unchecked[0] == "model.layers.0.self_attn.q_proj: the base's module names are not known");
  REQUIRE(check_gates(c, {}).size() == 1);
  CHECK(check_gates(c, {})[0].gate == "adapter-base");
}

TEST_CASE("adapter: an adapter_config.json that cannot be read says why", "[adapter]") {
  // A sparse config of 17 MiB, above the 16 MiB an adapter config is read to: the note said only
  // "is not a JSON object", the reason dropped.
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("adapter_model.safetensors"),
                        f32_file({{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", {4, 32}},
                                      {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", {32, 4}}}));
  { std::ofstream(dir.file("adapter_config.json")); }
  std::filesystem::resize_file(dir.file("adapter_config.json"), uint64_t{17} << 20);
  Audit a = audit_folder(dir, "adapter_model.safetensors");
  REQUIRE(a.adapter);
  REQUIRE(a.adapter->notes.size() == 1);
  CHECK(a.adapter->notes[0] ==
        dir.file("adapter_config.json") + " is not a JSON object (is larger than 16 MiB): the adapter's settings are not read");
}
