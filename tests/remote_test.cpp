// remote_test.cpp: Hub ids, the URLs made from them, the names a remote file gives, and a repo's
// file list read from a Hub-shaped tree that nginx serves on 127.0.0.1 (src/remote.h).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "remote.h"
#include "remote_servers.h"

using namespace headcount::remote;

namespace {

std::string parse_error(const std::string& s) {
  try {
    parse_hub_id(s);
  } catch (const headcount::InputError& e) {
    return e.what();
  }
  return "";
}

std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const headcount::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("remote: Hub ids", "[remote]") {
  CHECK(!parse_hub_id("model.onnx"));
  CHECK(!parse_hub_id("https://example.com/m.gguf"));
  CHECK(is_remote("hf://a/b"));
  CHECK(is_remote("https://example.com/m.gguf"));
  CHECK(is_remote("http://example.com/m.gguf"));
  CHECK(!is_remote("hf:/a/b"));
  CHECK(!is_remote("./hf://a"));

  auto id = parse_hub_id("hf://meta-llama/Llama-3.1-8B");
  REQUIRE(id);
  CHECK(id->org == "meta-llama");
  CHECK(id->repo == "Llama-3.1-8B");
  CHECK(id->revision == "main");
  CHECK(id->path.empty());

  id = parse_hub_id("hf://org/repo@v1.0/onnx/model.onnx");
  REQUIRE(id);
  CHECK(id->revision == "v1.0");
  CHECK(id->path == "onnx/model.onnx");

  id = parse_hub_id("hf://org/repo@refs%2Fpr%2F3/model.safetensors");
  REQUIRE(id);
  CHECK(id->revision == "refs/pr/3");
  CHECK(id->path == "model.safetensors");

  id = parse_hub_id("hf://org/repo/sub/x.gguf");
  REQUIRE(id);
  CHECK(id->revision == "main");
  CHECK(id->path == "sub/x.gguf");

  CHECK(parse_error("hf://org") == "'hf://org' is not a Hub id hf://ORG/REPO[@REVISION][/PATH]: it names no repository");
  CHECK(parse_error("hf://datasets/org/repo") ==
        "'hf://datasets/org/repo' is not a Hub id hf://ORG/REPO[@REVISION][/PATH]: only model repositories can be audited");
  CHECK(parse_error("hf://org/../x").find("an org or repo name") != std::string::npos);
  CHECK(parse_error("hf://org/repo/../../other/repo/x").find("the path is not a path inside") != std::string::npos);
  CHECK(parse_error("hf://org/repo/a//b").find("the path is not a path inside") != std::string::npos);
  CHECK(parse_error("hf://org/repo@../x").find("the revision is not") != std::string::npos);
  CHECK(parse_error("hf://org/repo@a%2F..%2Fb/x").find("the revision is not") != std::string::npos);
}

TEST_CASE("remote: URLs escape every segment; names stay in the repo", "[remote]") {
  Hub hub;
  hub.endpoint = "http://127.0.0.1:9";
  HubId id = *parse_hub_id("hf://org/repo@refs%2Fpr%2F3");
  CHECK(file_url(hub, id, "sub/model-00001-of-00002.safetensors") ==
        "http://127.0.0.1:9/org/repo/resolve/refs%2Fpr%2F3/sub/model-00001-of-00002.safetensors");
  CHECK(file_url(hub, id, "a b%2e.gguf") == "http://127.0.0.1:9/org/repo/resolve/refs%2Fpr%2F3/a%20b%252e.gguf");
  CHECK(tree_url(hub, id) == "http://127.0.0.1:9/api/models/org/repo/tree/refs%2Fpr%2F3?recursive=true");
  CHECK(thrown([&] { file_url(hub, id, "../x"); }) == "'../x' names a file outside the repository");

  CHECK(beside("sub/model.safetensors.index.json", "model-00001-of-00002.safetensors") ==
        "sub/model-00001-of-00002.safetensors");
  CHECK(beside("model.safetensors.index.json", "shard.safetensors") == "shard.safetensors");
  for (const char* hostile : {"../../other/repo/x.safetensors", "/etc/passwd", "https://evil.example/x", "a\\..\\b", "",
                              "a/../../b", "./x"}) {
    CAPTURE(hostile);
    CHECK(thrown([&] { beside("sub/index.json", hostile); }) ==
          std::string("names '") + hostile + "', which is not a file beside it in the repository");
  }
  // A percent-encoded '..' is a file name like any other: escaped, it names nothing above.
  CHECK(beside("index.json", "%2e%2e") == "%2e%2e");
  CHECK(file_url(hub, id, beside("index.json", "%2e%2e")) == "http://127.0.0.1:9/org/repo/resolve/refs%2Fpr%2F3/%252e%252e");
}

TEST_CASE("remote: the file to audit in a repo", "[remote]") {
  HubId id = *parse_hub_id("hf://org/repo");
  std::vector<RepoFile> files = {{"README.md", 10}, {"config.json", 600}, {"model.safetensors", 5000},
                                 {"model.safetensors.index.json", 900}};
  CHECK(choose_file(files, id) == "model.safetensors.index.json");
  files.pop_back();
  CHECK(choose_file(files, id) == "model.safetensors");
  std::vector<RepoFile> quants = {{"README.md", 10}, {"m-Q4_K_M.gguf", 4920000000}, {"m-Q8_0.gguf", 8540000000},
                                  {"onnx/model.onnx", 1200}};
  CHECK(thrown([&] { choose_file(quants, id); }) ==
        "hf://org/repo holds no model.safetensors or model.safetensors.index.json; name one of its 3 model files: "
        "hf://org/repo/m-Q4_K_M.gguf (4.9 GB), hf://org/repo/m-Q8_0.gguf (8.5 GB), hf://org/repo/onnx/model.onnx (1.2 KB)");
  CHECK(thrown([&] { choose_file({{"README.md", 10}}, id); }) ==
        "hf://org/repo holds no model file (.safetensors, .gguf or .onnx)");
}

TEST_CASE("remote: a repo's files from the model API, served by nginx", "[remote]") {
  testutil::TempDir www;
  std::filesystem::create_directories(www.path / "api/models/org/repo/tree");
  {
    std::ofstream(www.file("api/models/org/repo/tree/main"))
        << R"([{"type":"file","oid":"a","size":600,"path":"config.json"},)"
        << R"({"type":"directory","oid":"b","size":0,"path":"onnx"},)"
        << R"({"type":"file","oid":"c","size":1200,"path":"onnx/model.onnx"},)"
        << R"({"type":"file","oid":"d","size":7,"path":"../escape"},)"
        << R"({"type":"file","oid":"e","size":5000,"path":"model.safetensors"}])";
  }
  testutil::Nginx nginx(www.path);
  Hub hub;
  hub.endpoint = nginx.url("");
  HubId id = *parse_hub_id("hf://org/repo");
  headcount::http::Client client;
  std::vector<RepoFile> files = list_files(client, hub, id);
  REQUIRE(files.size() == 3);  // the directory and the path that climbs out are not files of it
  CHECK(files[0].path == "config.json");
  CHECK(files[0].size == 600);
  CHECK(files[1].path == "onnx/model.onnx");
  CHECK(files[2].path == "model.safetensors");
  CHECK(choose_file(files, id) == "model.safetensors");

  // A revision the Hub does not have: what the user reads.
  HubId other = *parse_hub_id("hf://org/repo@v9");
  try {
    list_files(client, hub, other);
    FAIL("no error");
  } catch (const headcount::http::HttpError& e) {
    CHECK(e.status() == 404);
    CHECK(hub_error(e, hub, other, "") == std::string(e.what()));  // nginx sends no X-Error-Code
  }
}

TEST_CASE("remote: the Hub's errors, worded", "[remote]") {
  Hub hub;
  HubId id = *parse_hub_id("hf://org/repo@v2/model.safetensors");
  using headcount::http::HttpError;
  CHECK(hub_error(HttpError("x", 404, "RepoNotFound"), hub, id, id.path) ==
        "no repository org/repo on the Hub (a private one needs HF_TOKEN)");
  CHECK(hub_error(HttpError("x", 404, "RevisionNotFound"), hub, id, id.path) == "no revision 'v2' in org/repo");
  CHECK(hub_error(HttpError("x", 404, "EntryNotFound"), hub, id, id.path) ==
        "no file 'model.safetensors' in org/repo at revision 'v2'");
  CHECK(hub_error(HttpError("x", 401, ""), hub, id, id.path) ==
        "HTTP 401: hf://org/repo@v2/model.safetensors is gated or private: set HF_TOKEN to a token that may read it, "
        "and accept the model's terms on the Hub");
  hub.token = "hf_secret";
  std::string gated = hub_error(HttpError("x", 403, "GatedRepo"), hub, id, id.path);
  CHECK(gated ==
        "HTTP 403: hf://org/repo@v2/model.safetensors is gated or private: the token in HF_TOKEN may not read it, "
        "and accept the model's terms on the Hub");
  CHECK(gated.find("hf_secret") == std::string::npos);
}

TEST_CASE("remote: the endpoint and the token from the environment", "[remote]") {
  testutil::TempDir home;
  { std::ofstream(home.file("token")) << "hf_from_file\n"; }
  setenv("HF_HOME", home.path.c_str(), 1);
  setenv("HF_ENDPOINT", "http://127.0.0.1:1234/", 1);
  unsetenv("HF_TOKEN");
  Hub hub = hub_from_environment();
  CHECK(hub.endpoint == "http://127.0.0.1:1234");
  CHECK(hub.token == "hf_from_file");
  setenv("HF_TOKEN", "hf_from_env", 1);
  CHECK(hub_from_environment().token == "hf_from_env");
  unsetenv("HF_TOKEN");
  unsetenv("HF_ENDPOINT");
  unsetenv("HF_HOME");
  CHECK(hub_from_environment().endpoint == "https://huggingface.co");
}

TEST_CASE("remote: a file list in pages is read to its end, within the Hub and its bounds", "[remote]") {
  testutil::FaultServer faults;
  Hub hub;
  hub.endpoint = faults.url("");
  headcount::http::Client client;
  auto list = [&](const std::string& repo) { return list_files(client, hub, *parse_hub_id("hf://org/" + repo)); };
  // Two pages; the repo's checkpoint is on the second.
  std::vector<RepoFile> paged = list("paged");
  REQUIRE(paged.size() == 2);
  CHECK(paged[1].path == "model.safetensors");
  CHECK(choose_file(paged, *parse_hub_id("hf://org/paged")) == "model.safetensors");
  const std::string tree = faults.url("/api/models/org/");
  // A page that names itself next is not asked for again; of pages without end, 200 are read.
  CHECK(thrown([&] { list("loop"); }) ==
        tree + "loop/tree/main?recursive=true: the Hub's file list does not end (1 page read)");
  CHECK(thrown([&] { list("endless"); }) ==
        tree + "endless/tree/main?recursive=true: the Hub's file list does not end (200 pages read)");
  CHECK(thrown([&] { list("elsewhere"); }) ==
        tree + "elsewhere/tree/main?recursive=true: the Hub's file list goes on at another address, which is not asked for");
  CHECK(thrown([&] { list("many"); }) ==
        tree + "many/tree/main?recursive=true: the Hub's file list holds more than 100000 files");
}
