// remote_audit_test.cpp: a model audited where it is published. nginx on 127.0.0.1 serves a
// Hub-shaped tree (the model API's file lists, /ORG/REPO/resolve/REV/PATH with Range and ETag) made
// from the samples, HF_ENDPOINT points at it, and every remote report is compared with the local
// audit of the same files: the same figures exactly, only the paths and the remote block differ.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "headcount/audit.h"
#include "headcount/checkpoint_index.h"
#include "headcount/error.h"
#include "headcount/render.h"
#include "headcount/run.h"
#include "headcount/runner.h"
#include "hostile_run.h"
#include "onnx/onnx_pb.h"
#include "test_util.h"
#include "remote_servers.h"

using headcount::Audit;
using headcount::AuditOptions;
using headcount::InputError;

namespace fs = std::filesystem;

using testutil::le64;

namespace {

// A Hub of repos under `www`: put(repo, path, bytes) serves the file and lists it in the repo's tree.
struct Hub {
  testutil::TempDir www;
  std::map<std::string, nlohmann::json> trees;
  void put(const std::string& repo, const std::string& path, const std::string& bytes) {
    fs::path file = www.path / repo / "resolve" / "main" / path;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << bytes;
    list_only(repo, path, bytes.size());
  }
  // Lists `path` in the repo's tree with `size` bytes, and serves nothing there.
  void list_only(const std::string& repo, const std::string& path, uint64_t size) {
    trees[repo].push_back({{"type", "file"}, {"path", path}, {"size", size}});
    fs::path tree = www.path / "api" / "models" / repo / "tree" / "main";
    fs::create_directories(tree.parent_path());
    std::ofstream(tree) << trees[repo].dump();
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The JSON report of one audit, without what names where it was read.
nlohmann::json figures(Audit& a) {
  headcount::Run run;
  headcount::FileResult file;
  file.path = "model";
  file.audit.emplace(std::move(a));
  run.files.push_back(std::move(file));
  std::ostringstream out;
  headcount::RenderOptions o;
  o.format = headcount::Format::Json;
  headcount::render(run, o, out);
  a = std::move(*run.files[0].audit);  // back to the caller, who reads it on
  nlohmann::json m = nlohmann::json::parse(out.str())["models"][0];
  m["model"].erase("files");
  m.erase("remote");
  if (m["declared"].is_object()) m["declared"].erase("file");
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

struct Endpoint {
  explicit Endpoint(const std::string& url) { setenv("HF_ENDPOINT", url.c_str(), 1), unsetenv("HF_TOKEN"); }
  ~Endpoint() { unsetenv("HF_ENDPOINT"); }
};

}  // namespace

TEST_CASE("remote audit: a Hub repo's safetensors and config give the local audit's figures", "[remote]") {
  Hub hub;
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  hub.put("org/llama", "config.json", slurp(samples + "/llama_tiny.config.json"));
  hub.put("org/llama", "model.safetensors", slurp(samples + "/llama_tiny.safetensors"));
  testutil::Nginx nginx(hub.www.path);
  Endpoint endpoint(nginx.url(""));

  AuditOptions local;
  local.compare_content = false;  // a remote input fetches no tensor's values
  local.model_config = samples + "/llama_tiny.config.json";
  Audit here = headcount::audit_file(samples + "/llama_tiny.safetensors", local);
  Audit there = headcount::audit_file("hf://org/llama");
  CHECK(figures(there) == figures(here));
  CHECK(there.model.path == "hf://org/llama/model.safetensors");
  REQUIRE(there.remote);
  CHECK(there.remote->url == nginx.url("/org/llama/resolve/main/model.safetensors"));
  CHECK(there.remote->commit.empty());  // nginx is not the Hub: no X-Repo-Commit
  // The file list, the model's first 64 KiB window, the config: 3 requests.
  CHECK(there.remote->requests == 3);
  CHECK(!there.content_compared);
  // The llama_tiny.safetensors sample's stored count: 24,992 (samples/llama_tiny.counts.tsv).
  CHECK(there.inventory.stored == 24992);

  // Named by its path, and by its URL (whose folder holds the config.json too): the same model.
  Audit by_path = headcount::audit_file("hf://org/llama/model.safetensors");
  CHECK(figures(by_path) == figures(here));
  CHECK(by_path.remote->requests == 2);  // no file list: the path names the file
  Audit by_url = headcount::audit_file(nginx.url("/org/llama/resolve/main/model.safetensors"));
  CHECK(figures(by_url) == figures(here));

  // The export check reads a checkpoint's values, which a remote one's are not: an error, never a
  // verdict of nothing compared.
  headcount::DiffRequest d;
  d.a = samples + "/llama_tiny.onnx";
  d.b = "hf://org/llama";
  headcount::DiffRun diff = headcount::run_diff(d);
  CHECK(!diff.diff);
  CHECK(diff.error == "hf://org/llama: comparing an export with its checkpoint reads their weights, which a remote "
                      "model's are not: download it");
}

TEST_CASE("remote audit: a sharded index and its shards, a GGUF, and a repo that needs a choice", "[remote]") {
  Hub hub;
  // Shard 1: a [2, 2] F32 (16 bytes); shard 2: b [3] F16 (6 bytes); 7 parameters in all.
  hub.put("org/sharded", "model-00001-of-00002.safetensors",
          testutil::safetensors_file(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", 16));
  hub.put("org/sharded", "model-00002-of-00002.safetensors",
          testutil::safetensors_file(R"({"b":{"dtype":"F16","shape":[3],"data_offsets":[0,6]}})", 6));
  hub.put("org/sharded", "model.safetensors.index.json",
          R"({"metadata":{"total_size":22},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}})");
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  hub.put("org/quant", "tiny-Q8_0.gguf", slurp(samples + "/llama_tiny.gguf"));
  hub.put("org/quant", "tiny-copy.gguf", slurp(samples + "/llama_tiny.gguf"));
  testutil::Nginx nginx(hub.www.path);
  Endpoint endpoint(nginx.url(""));

  Audit sharded = headcount::audit_file("hf://org/sharded");
  CHECK(sharded.inventory.stored == 7);
  REQUIRE(sharded.model.checkpoint);
  CHECK(sharded.model.checkpoint->files.size() == 3);  // the index, then its shards
  // The list, the index (whole), and each shard's first window; no config is asked for, since the
  // list names none.
  CHECK(sharded.remote->requests == 4);

  AuditOptions local;
  local.compare_content = false;
  Audit here = headcount::audit_file(samples + "/llama_tiny.gguf", local);
  Audit there = headcount::audit_file("hf://org/quant/tiny-Q8_0.gguf");
  CHECK(figures(there) == figures(here));
  // A URL whose name says nothing: a GGUF by its first bytes.
  hub.put("org/quant", "blob", slurp(samples + "/llama_tiny.gguf"));
  Audit blob = headcount::audit_file(nginx.url("/org/quant/resolve/main/blob"));
  CHECK(figures(blob) == figures(here));
  // Its first window, read to learn the format, is the reader's first window too: as many requests
  // as the file named .gguf (its windows, then config.json and genai_config.json, not there).
  CHECK(blob.remote->requests == there.remote->requests);

  std::string choice = error_of([] { headcount::audit_file("hf://org/quant"); });
  CHECK(choice.rfind("hf://org/quant holds no model.safetensors or model.safetensors.index.json; name one of its 2 model "
                     "files: hf://org/quant/tiny-Q8_0.gguf (",
                     0) == 0);
  CHECK(choice.find(", hf://org/quant/tiny-copy.gguf (") != std::string::npos);
}

TEST_CASE("remote audit: names a remote file gives never leave its repo", "[remote]") {
  Hub hub;
  hub.put("org/hostile", "model.safetensors.index.json",
          R"({"weight_map":{"a":"../../other/repo/resolve/main/secret.safetensors"}})");
  hub.put("org/encoded", "model.safetensors.index.json", R"({"weight_map":{"a":"%2e%2e%2fsecret.safetensors"}})");
  hub.put("org/url", "model.safetensors.index.json", R"({"weight_map":{"a":"http://127.0.0.1:1/secret.safetensors"}})");
  hub.put("other/repo", "secret.safetensors", testutil::safetensors_file(R"({"s":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
  testutil::Nginx nginx(hub.www.path, true);
  Endpoint endpoint(nginx.url(""));
  CHECK(error_of([] { headcount::audit_file("hf://org/hostile"); }) ==
        "the index names the shard '../../other/repo/resolve/main/secret.safetensors', which is not a file name in its folder");
  CHECK(error_of([] { headcount::audit_file("hf://org/url"); }) ==
        "the index names the shard 'http://127.0.0.1:1/secret.safetensors', which is not a file name in its folder");
  // A percent-encoded '..' is a file name: escaped whole, it is asked for inside the repo, and missing.
  CHECK(error_of([] { headcount::audit_file("hf://org/encoded"); }) ==
        "shard %2e%2e%2fsecret.safetensors: " + nginx.url("/org/encoded/resolve/main/%252e%252e%252fsecret.safetensors") + ": HTTP 404 (not found)");
  for (const std::string& uri : nginx.requests()) {
    CAPTURE(uri);
    CHECK(uri.find("other/repo") == std::string::npos);
    CHECK(uri.find("/..") == std::string::npos);
  }
  CHECK(nginx.requests().size() == 7);  // each repo's list and index (2 x 3), and the encoded name's 404
}

TEST_CASE("remote audit: from the command line, each fault is one error line and the others are audited", "[remote]") {
  Hub hub;
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  hub.put("org/llama", "config.json", slurp(samples + "/llama_tiny.config.json"));
  hub.put("org/llama", "model.safetensors", slurp(samples + "/llama_tiny.safetensors"));
  testutil::Nginx nginx(hub.www.path);
  testutil::FaultServer faults;
  Endpoint endpoint(nginx.url(""));
  testutil::TempDir cwd;
  // 100 MB offered whatever Range asks; a body that stalls after 10 bytes; a file that is not there.
  const std::string ignores = faults.url("/ignore-range/100000000"), stalls = faults.url("/stall");
  hostile::Outcome o = hostile::run({"audit", "hf://org/llama", ignores, stalls, "hf://org/llama/missing.gguf",
                                     "--http-timeout", "1", "-j", "2", "--format", "jsonl"},
                                    cwd.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code == 2);
  CHECK(o.err == "headcount: error: " + ignores +  // a URL's error names it once
                     ": the server ignores Range requests (it sends more than the 65536 bytes asked for)\n"
                     "headcount: error: " + stalls + ": the transfer stalled (no data for 1 s)\n"
                     "headcount: error: hf://org/llama/missing.gguf: " +
                     nginx.url("/org/llama/resolve/main/missing.gguf") + ": HTTP 404 (not found)\n");
  // The good one is reported whole: its line of the jsonl names the stored count of the sample.
  CHECK(o.out.find("\"file\":\"hf://org/llama\"") != std::string::npos);
  CHECK(o.out.find("\"stored\":24992") != std::string::npos);
}

TEST_CASE("remote audit: a header that points at 90 MB stops at the fetch budget", "[remote]") {
  testutil::FaultServer faults;
  testutil::TempDir cwd;
  const std::string url = faults.url("/huge-header.safetensors");
  hostile::Outcome o = hostile::run({"audit", url, "--fetch-budget", "1MiB"}, cwd.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code == 2);
  CHECK(o.err == "headcount: error: " + url + ": the fetch budget of 1 MiB is spent\n");  // the URL once
}

namespace {

// An ONNX model of one MatMul whose weight `w` is float32 [256, 1024] (1 MiB) of embedded raw
// data, then a float32 [4] bias `b` (16 bytes): its bytes.
std::string large_embedded_model() {
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 256});
  *g->add_initializer() = testutil::tensor("w", {256, 1024});
  *g->add_initializer() = testutil::tensor("b", {4});
  testutil::node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  return m.SerializeAsString();
}

std::string external_status_of(const nlohmann::json& report) {
  std::string out;
  for (const auto& t : report["tensors"]) {
    if (t.contains("external")) out += t["external"]["status"].get<std::string>() + " ";
  }
  return out;
}

}  // namespace

TEST_CASE("remote audit: an ONNX file is read by range, its payloads skipped, never fetched", "[remote]") {
  Hub hub;
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  const std::string bytes = large_embedded_model();
  hub.put("org/onnx", "onnx/model.onnx", bytes);
  hub.put("org/llama", "onnx/model.onnx", slurp(samples + "/llama_tiny.onnx"));
  testutil::Nginx nginx(hub.www.path);
  Endpoint endpoint(nginx.url(""));
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("model.onnx"), bytes);

  AuditOptions local;
  local.compare_content = false;
  Audit here = headcount::audit_file(dir.file("model.onnx"), local);
  Audit there = headcount::audit_file("hf://org/onnx");  // the repo's one model file
  CHECK(figures(there) == figures(here));
  CHECK(there.model.path == "hf://org/onnx/onnx/model.onnx");
  // 256 * 1024 + 4 = 262,148 parameters.
  CHECK(there.inventory.stored == 262148);
  // The list; the first window (64 KiB: the graph and w's tag and length, then 1 MiB skipped); one
  // 16 KiB window after the jump (b and the rest); no config, which the list does not name. Of
  // the file's 1,048,6xx bytes, at most 64 + 16 KiB are fetched, with the list's few hundred bytes.
  CHECK(there.remote->requests == 3);
  CHECK(bytes.size() > (uint64_t{1} << 20));
  CHECK(there.remote->bytes < (uint64_t{81} << 10));

  Audit llama_here = headcount::audit_file(samples + "/llama_tiny.onnx", local);
  Audit llama = headcount::audit_file("hf://org/llama/onnx/model.onnx");
  CHECK(figures(llama) == figures(llama_here));

  // onnxruntime-genai's config beside the export, as a local one is read (declared_test.cpp): the
  // LLaMA sample's shape, with no feed-forward size to check.
  const std::string genai = R"({"model": {"type": "llama", "vocab_size": 100, "decoder": {"hidden_size": 32,
      "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "head_size": 8}}})";
  hub.put("org/genai", "onnx/model.onnx", slurp(samples + "/llama_tiny.onnx"));
  hub.put("org/genai", "onnx/genai_config.json", genai);
  testutil::TempDir genai_dir;
  testutil::write_bytes(genai_dir.file("model.onnx"), slurp(samples + "/llama_tiny.onnx"));
  testutil::write_bytes(genai_dir.file("genai_config.json"), genai);
  Audit genai_here = headcount::audit_file(genai_dir.file("model.onnx"), local);
  Audit genai_there = headcount::audit_file("hf://org/genai");
  REQUIRE(genai_there.declared.has_value());
  CHECK(genai_there.declared->config.format == "genai_config.json");
  CHECK(figures(genai_there) == figures(genai_here));
  // The list, the model's 134,021 bytes in two windows (64 KiB, then the next 128 KiB), and the
  // genai_config.json the list names; no config.json is asked for, since the list has none.
  CHECK(genai_there.remote->requests == 4);
}

TEST_CASE("remote audit: an ONNX file's external data is looked up in the repo's list, never fetched", "[remote]") {
  // bert_base_external.onnx: every tensor of 1 KiB or more lives in bert_base_external.onnx.data
  // (437,928,960 bytes, samples/bert_base_external.counts.tsv), which the samples do not hold.
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  const std::string onnx = slurp(samples + "/bert_base_external.onnx");
  const uint64_t data_size = 437928960;
  Hub hub;
  hub.put("org/bert", "onnx/model.onnx", onnx);
  hub.list_only("org/bert", "onnx/bert_base_external.onnx.data", data_size);  // listed, not served: a fetch would be a 404
  hub.put("org/short", "model.onnx", onnx);
  hub.list_only("org/short", "bert_base_external.onnx.data", data_size - 1);
  hub.put("org/none", "model.onnx", onnx);
  testutil::Nginx nginx(hub.www.path, true);
  Endpoint endpoint(nginx.url(""));

  // The same model beside a sparse data file of the size the list gives: every range present.
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("model.onnx"), onnx);
  {
    std::ofstream data(dir.file("bert_base_external.onnx.data"), std::ios::binary);
  }
  fs::resize_file(dir.file("bert_base_external.onnx.data"), data_size);
  AuditOptions local;
  local.compare_content = false;
  Audit here = headcount::audit_file(dir.file("model.onnx"), local);
  REQUIRE(here.model.path == dir.file("model.onnx"));
  Audit there = headcount::audit_file("hf://org/bert/onnx/model.onnx");
  nlohmann::json remote = figures(there), near = figures(here);
  CHECK(remote == near);
  CHECK(external_status_of(remote).find("missing") == std::string::npos);
  CHECK(external_status_of(remote).find("present") == 0);

  // Not in the list: missing, as the local model without its data file; one byte short: too short.
  fs::remove(dir.file("bert_base_external.onnx.data"));
  Audit here_missing = headcount::audit_file(dir.file("model.onnx"), local);
  Audit none = headcount::audit_file("hf://org/none/model.onnx");
  CHECK(figures(none) == figures(here_missing));
  CHECK(external_status_of(figures(none)).find("present") == std::string::npos);
  Audit shorter = headcount::audit_file("hf://org/short/model.onnx");
  CHECK(external_status_of(figures(shorter)).find("size-mismatch") != std::string::npos);

  // At a plain URL the folder is not listed: each external tensor is "not-checked", and no finding
  // says its data is missing.
  Audit url = headcount::audit_file(nginx.url("/org/bert/resolve/main/onnx/model.onnx"));
  const std::string statuses = external_status_of(figures(url));
  CHECK(statuses.find("not-checked") == 0);
  CHECK(statuses.find("present") == std::string::npos);
  CHECK(statuses.find("missing") == std::string::npos);
  for (const auto& f : url.findings) CHECK(f.rule.rfind("external-data", 0) != 0);

  for (const std::string& uri : nginx.requests()) {
    CAPTURE(uri);
    CHECK(uri.find(".data") == std::string::npos);  // the data file is never asked for
  }
}

TEST_CASE("remote audit: a file list whose entries have sizes or types of another kind", "[remote]") {
  // bert_base_external.onnx's data file listed with a size that is no byte count (-5, 1e30, "64"):
  // read as 0 bytes, it made every external tensor "too short", a claim nothing proved; the list is
  // refused. An entry whose type is a number (value("type", "") threw: an internal error) is not a file.
  const std::string onnx = slurp(std::string(HEADCOUNT_SAMPLES_DIR) + "/bert_base_external.onnx");
  Hub hub;
  for (const char* size : {"-5", "1e30", "\"64\""}) {
    const std::string repo = std::string("org/size") + std::to_string(hub.trees.size());
    hub.put(repo, "model.onnx", onnx);
    fs::path tree = hub.www.path / "api" / "models" / repo / "tree" / "main";
    std::ofstream(tree) << R"([{"type":"file","path":"model.onnx","size":)" << onnx.size()
                        << R"(},{"type":"file","path":"bert_base_external.onnx.data","size":)" << size << "}]";
  }
  hub.put("org/typed", "model.onnx", onnx);
  std::ofstream(hub.www.path / "api" / "models" / "org" / "typed" / "tree" / "main")
      << R"([{"type":5,"path":"x"},{"type":"file","path":"model.onnx","size":)" << onnx.size() << "}]";
  testutil::Nginx nginx(hub.www.path);
  Endpoint endpoint(nginx.url(""));
  for (int k = 0; k < 3; ++k) {
    const std::string repo = "org/size" + std::to_string(k);
    CHECK(error_of([&] { headcount::audit_file("hf://" + repo + "/model.onnx"); }) ==
          nginx.url("/api/models/" + repo + "/tree/main?recursive=true") +
              ": the Hub's file list gives 'bert_base_external.onnx.data' no size in bytes");
  }
  Audit typed = headcount::audit_file("hf://org/typed/model.onnx");
  CHECK(external_status_of(figures(typed)).find("missing") == 0);  // the data file is not in the list
}

TEST_CASE("remote audit: an ONNX file's external location that leaves its folder is refused as on disk", "[remote]") {
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  onnx::TensorProto t = testutil::tensor("w", {4, 4}, onnx::TensorProto::FLOAT, /*no_data=*/true);
  testutil::set_external(t, "../secret/w.bin", 0, 64);
  *g->add_initializer() = t;
  testutil::node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  Hub hub;
  hub.put("org/leave", "onnx/model.onnx", m.SerializeAsString());
  hub.list_only("org/leave", "secret/w.bin", 64);
  testutil::Nginx nginx(hub.www.path);
  Endpoint endpoint(nginx.url(""));
  CHECK(error_of([] { headcount::audit_file("hf://org/leave/onnx/model.onnx"); }) ==
        "tensor 'w': external data location '../secret/w.bin' contains '..'; refused, it must stay inside the "
        "model's folder");
}

TEST_CASE("remote audit: an ONNX file whose server claims any length, or whose header never ends", "[remote]") {
  // The fault server's /claims/N is a file of N bytes (as Content-Range says) that repeats an
  // opset_import record without end. 20 digits is past what a length can be read as (2^64-1 has
  // 20): no length. 3,000,000,000 is past protobuf's 2 GiB (2,147,483,647). 1,500,000,000 is read
  // field by field until the 1 MiB budget is spent. 0 is an empty file.
  testutil::FaultServer faults;
  testutil::TempDir cwd;
  const std::string max = faults.url("/claims/18446744073709551615/model.onnx"),
                    past = faults.url("/claims/3000000000/model.onnx"),
                    endless = faults.url("/claims/1500000000/model.onnx"), empty = faults.url("/claims/0/model.onnx");
  hostile::Outcome o = hostile::run({"audit", max, past, endless, empty, "--fetch-budget", "1MiB"}, cwd.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code == 2);
  CHECK(o.out.find("summary of 4 models") != std::string::npos);  // each of them an error in it
  CHECK(o.err == "headcount: error: " + max + ": the server does not say how long the file is\n" +
                     "headcount: error: " + past + ": file is 3000000000 bytes; an embedded model above protobuf's 2 GiB "
                     "limit cannot be read (models this large keep their weights in external data)\n" +
                     "headcount: error: " + endless + ": the fetch budget of 1 MiB is spent\n" +
                     "headcount: error: " + empty + ": file is empty\n");
}

TEST_CASE("remote audit: a GGUF whose metadata is larger than the budget, or counts more entries than are read", "[remote]") {
  // 65,536 entries of 36 bytes (an 8-byte key length, 8 bytes of key, the 4-byte type, an 8-byte
  // string length and 8 bytes of string) are 2,359,296 bytes of metadata: past a 1 MiB budget.
  // 10^9 entries are past the 65,536 the reader keeps, refused from the first window.
  testutil::FaultServer faults;
  testutil::TempDir cwd;
  const std::string long_one = faults.url("/endless-metadata/65536.gguf"),
                    many = faults.url("/endless-metadata/1000000000.gguf");
  hostile::Outcome o = hostile::run({"audit", long_one, many, "--fetch-budget", "1MiB"}, cwd.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code == 2);
  CHECK(o.err == "headcount: error: " + long_one + ": the fetch budget of 1 MiB is spent\n" +
                     "headcount: error: " + many +
                     ": the header states 1000000000 metadata entries; at most 65536 are read (llama.cpp's files "
                     "hold a few dozen)\n");
}

TEST_CASE("remote audit: a LoRA adapter on the Hub, its config beside it, against a local base", "[remote]") {
  // samples/lora_peft: 896 parameters in q_proj and v_proj of llama_tiny's 2 layers, rank 4, alpha
  // 8 (samples/make_adapter.py).
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  Hub hub;
  hub.put("org/lora", "adapter_model.safetensors", slurp(samples + "/lora_peft/adapter_model.safetensors"));
  hub.put("org/lora", "adapter_config.json", slurp(samples + "/lora_peft/adapter_config.json"));
  testutil::Nginx nginx(hub.www.path);
  Endpoint endpoint(nginx.url(""));
  AuditOptions o;
  o.compare_content = false;
  o.base = samples + "/llama_tiny.safetensors";
  Audit here = headcount::audit_file(samples + "/lora_peft", o);
  Audit there = headcount::audit_file("hf://org/lora", o);
  REQUIRE(there.adapter);
  CHECK(there.adapter->config == "hf://org/lora/adapter_config.json");
  CHECK(there.adapter->declared_rank == 4);
  CHECK(there.adapter->scale == 2.0);
  CHECK(there.adapter->total == 896);
  REQUIRE(there.adapter->fit);
  CHECK(there.adapter->fit->fitted == 4);
  nlohmann::json a = figures(there), b = figures(here);
  a["adapter"].erase("config");
  b["adapter"].erase("config");
  CHECK(a == b);
  // The list, the adapter's one window, its adapter_config.json; no config.json, which the list lacks.
  CHECK(there.remote->requests == 3);
}
