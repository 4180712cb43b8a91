// declared_test.cpp: a model's config (config.json or genai_config.json beside it, or
// --model-config) against what its graph holds, and the framework's count from the config.
//
// The LLaMA sample's config.json is written by samples/make_samples.py from the torch module
// itself; the totals compared below are PyTorch's sum(p.numel()) from the samples' sidecars, and
// each formula is worked by hand in the comment beside it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "headcount/declared.h"
#include "headcount/audit.h"
#include "test_util.h"

using namespace headcount;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return std::string(HEADCOUNT_SAMPLES_DIR) + "/" + name; }

// A folder holding a sample and a config file of the given name and text.
struct Folder {
  testutil::TempDir dir;
  std::string model;
  Folder(const std::string& name, const std::string& config_name, const std::string& config_text) {
    model = dir.file(name + ".onnx");
    fs::copy_file(sample(name + ".onnx"), model);
    if (!config_name.empty()) testutil::write_bytes(dir.file(config_name), config_text);
  }
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

std::vector<Finding> mismatches(const Audit& a) {
  std::vector<Finding> out;
  for (const auto& f : a.findings) {
    if (f.rule == "config-mismatch") out.push_back(f);
  }
  return out;
}

}  // namespace

TEST_CASE("declared: the LLaMA sample's own config.json agrees on every field", "[declared]") {
  Folder f("llama_tiny", "config.json", testutil::read_text(sample("llama_tiny.config.json")));
  Audit a = audit_file(f.model);
  REQUIRE(a.declared.has_value());
  REQUIRE(a.declared->fields.size() == 8);
  for (const auto& field : a.declared->fields) {
    INFO(field.label);
    CHECK(field.agreement == Agreement::Agrees);
  }
  CHECK(mismatches(a).empty());
  // LLaMA: 100·32 + 2·(32·4·8 + 2·32·2·8 + 4·8·32) + 2·3·32·64 + (2·2·32 + 32) + 100·32
  //      = 3,200 + 6,144 + 12,288 + 160 + 3,200 = 24,992, PyTorch's total in the sidecar.
  REQUIRE(a.declared->count.has_value());
  CHECK(a.declared->count->family == "LLaMA");
  CHECK(a.declared->count->total == 24992);
  CHECK(a.framework.parameters == 24992);
  CHECK(a.declared->count_note == "agrees with the graph's framework count");
}

TEST_CASE("declared: a wrong num_attention_heads is a config-mismatch error", "[declared]") {
  std::string config = replaced(testutil::read_text(sample("llama_tiny.config.json")), "\"num_attention_heads\": 4",
                                "\"num_attention_heads\": 8");
  Folder f("llama_tiny", "config.json", config);
  Audit a = audit_file(f.model);
  auto found = mismatches(a);
  REQUIRE(found.size() == 1);
  CHECK(found[0].severity == Severity::Error);
  CHECK(found[0].message == "config.json declares num_attention_heads = 8, but the graph holds 4 (the attention blocks' "
                            "query heads): the model and the description beside it disagree");
  // The same through the CLI, as a gate: --fail-on error fails the build.
  testutil::CliResult r = testutil::cli({"audit", f.model, "--fail-on", "error", "-f", "json"});
  CHECK(r.code == 1);
  CHECK(r.out.find("\"agreement\": \"differs\"") != std::string::npos);
}

TEST_CASE("declared: GPT-2 and BERT formulas, and a difference explained by a missing pooler", "[declared]") {
  // GPT-2 (n_inner unset: 4·32 = 128): 100·32 + 16·32 + 2·(32·3·32 + 3·32 + 32² + 32)
  //   + 2·(2·32·128 + 128 + 32) + 2·4·32 + 2·32 = 3,712 + 8,448 + 16,704 + 320 = 29,184.
  Folder g("gpt2_tiny", "config.json",
           R"({"model_type": "gpt2", "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 16, "vocab_size": 100})");
  Audit ga = audit_file(g.model);
  REQUIRE(ga.declared->count.has_value());
  CHECK(ga.declared->count->total == 29184);
  CHECK(ga.framework.parameters == 29184);
  CHECK(mismatches(ga).empty());
  for (const auto& field : ga.declared->fields) {
    if (field.label == "tied embeddings") CHECK(field.agreement == Agreement::Agrees);  // the LM head is a copy of wte
    if (field.label == "intermediate size") CHECK(field.derived_from == "4 · n_embd");
  }
  // BERT: 100·32 + 16·32 + 2·32 + 2·4·(32² + 32) + 2·(2·32·64 + 64 + 32) + 2·32 + 2·4·32 + 32² + 32
  //   = 3,776 + 8,448 + 8,384 + 320 + 1,056 (pooler) = 21,984; the sample has no pooler: 20,928.
  Folder b("bert_tiny", "config.json",
           R"({"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
               "intermediate_size": 64, "vocab_size": 100, "max_position_embeddings": 16, "type_vocab_size": 2})");
  Audit ba = audit_file(b.model);
  REQUIRE(ba.declared->count.has_value());
  CHECK(ba.declared->count->total == 21984);
  CHECK(ba.framework.parameters == 20928);
  CHECK(ba.declared->count_note ==
        "the graph's framework count 20,928 is 1,056 fewer: the size of the pooler, which the export does not hold");
}

TEST_CASE("declared: genai_config.json, --model-config, and a config.json that describes something else", "[declared]") {
  Folder f("llama_tiny", "genai_config.json",
           R"({"model": {"type": "llama", "vocab_size": 100, "decoder": {"hidden_size": 32, "num_attention_heads": 4,
               "num_key_value_heads": 2, "num_hidden_layers": 2, "head_size": 8}}})");
  Audit a = audit_file(f.model);
  REQUIRE(a.declared.has_value());
  CHECK(a.declared->config.format == "genai_config.json");
  for (const auto& field : a.declared->fields) {
    INFO(field.label);
    // genai_config.json has no feed-forward size; LLaMA's untied LM head is its family default.
    CHECK(field.agreement == (field.label == "intermediate size" ? Agreement::NotCheckable : Agreement::Agrees));
    if (field.label == "tied embeddings") CHECK(field.derived_from == "llama's default");
  }
  // A config.json beside a model that is not a model description is ignored, and said to be.
  Folder other("bert_tiny", "config.json", R"({"learning_rate": 0.001})");
  Audit o = audit_file(other.model);
  CHECK_FALSE(o.declared.has_value());
  CHECK(o.declared_error == "model config '" + other.dir.file("config.json") + "' has no model_type: not a Hugging Face config.json");
  // Given by hand, an unreadable config is a usage error.
  testutil::CliResult r = testutil::cli({"audit", sample("bert_tiny.onnx"), "--model-config", other.dir.file("missing.json")});
  CHECK(r.code == 2);
  CHECK(r.err == "headcount: error: model config '" + other.dir.file("missing.json") + "' cannot be opened\n");
}
