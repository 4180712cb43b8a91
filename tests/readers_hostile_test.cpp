// readers_hostile_test.cpp: the inputs of issue 39 that a committed folder cannot hold, for the
// readers and the file opener (paths.h): FIFOs wherever a reader opens a file, a checkpoint
// swapped for a FIFO (or another file) after it was parsed, a sparse 512 MiB config.json. Each
// runs the binary (hostile::run) or library code in a child (hostile::in_child) under the
// hostile-file bound, with the wall guard that turns a hang into a failure.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "headcount/audit.h"
#include "headcount/duplicates.h"
#include "headcount/fidelity.h"
#include "headcount/load.h"
#include "hostile_run.h"
#include "payload.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace headcount;

namespace {

// A safetensors file of F32 tensors: {name, shape, values}, laid out one after another.
struct StTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

std::string safetensors(const std::vector<StTensor>& tensors) {
  std::string header = "{", data;
  for (const StTensor& t : tensors) {
    std::string shape;
    for (int64_t d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
    const size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
    header += std::string(header.size() > 1 ? "," : "") + "\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);  // little-endian, as the hosts this runs on
  return out + header + data;
}

std::vector<float> iota(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

void fifo(const std::string& path) { REQUIRE(mkfifo(path.c_str(), 0600) == 0); }

// Part 1 of a GGUF split in 2: one Q8_0 tensor, the split keys.
std::string split_part_one() {
  gguf_test::GgufWriter w;
  w.u16("split.no", 0).u16("split.count", 2).i32("split.tensors.count", 2).str("general.architecture", "llama");
  w.tensor("output.weight", {64, 4}, gguf_test::kQ8_0);
  testutil::TempDir tmp;
  w.write(tmp.file("p.gguf"));
  return hostile::slurp(tmp.file("p.gguf"));
}

}  // namespace

TEST_CASE("a FIFO wherever a reader opens a file is refused with one error line, never waited on",
          "[readers][hostile][fifo]") {
  testutil::TempDir dir;
  const std::string good = safetensors({{"model.layers.0.self_attn.q_proj.weight", {4, 4}, iota(16, 1)}});
  testutil::write_bytes(dir.file("good.safetensors"), good);
  fifo(dir.file("x.gguf"));
  fifo(dir.file("x.onnx"));
  fifo(dir.file("x.safetensors"));
  fifo(dir.file("noext"));  // format sniffing opens it
  // A split GGUF whose part 2 is a FIFO, and one whose part 2 is a symlink in the folder to one.
  testutil::write_bytes(dir.file("p-00001-of-00002.gguf"), split_part_one());
  fifo(dir.file("p-00002-of-00002.gguf"));
  testutil::write_bytes(dir.file("q-00001-of-00002.gguf"), split_part_one());
  fifo(dir.file("pipe"));
  fs::create_symlink("pipe", dir.path / "q-00002-of-00002.gguf");
  // An index whose shard is a FIFO; a folder given as the model whose model.safetensors is one.
  fs::create_directory(dir.path / "idx");
  testutil::write_bytes(dir.file("idx/model.safetensors.index.json"), R"({"weight_map":{"a":"shard.safetensors"}})");
  fifo(dir.file("idx/shard.safetensors"));
  fs::create_directory(dir.path / "folder");
  fifo(dir.file("folder/model.safetensors"));
  fifo(dir.file("config.fifo.json"));
  fifo(dir.file("hc.toml"));  // not headcount.toml: that one is found by itself
  fifo(dir.file("baseline.json"));

  struct Case {
    std::vector<std::string> args;
    std::string error;  // the one error line
  };
  const std::string fifo_line = "is a FIFO, not a regular file";
  const std::vector<Case> cases = {
      {{"audit", "x.gguf", "good.safetensors"}, "x.gguf: " + fifo_line},
      {{"audit", "x.onnx", "good.safetensors"}, "x.onnx: " + fifo_line},
      {{"audit", "x.safetensors", "good.safetensors"}, "x.safetensors: " + fifo_line},
      {{"audit", "noext", "good.safetensors"}, "noext: " + fifo_line},
      {{"audit", "p-00001-of-00002.gguf", "good.safetensors"}, "p-00001-of-00002.gguf: split part p-00002-of-00002.gguf: " + fifo_line},
      {{"audit", "q-00001-of-00002.gguf", "good.safetensors"}, "q-00001-of-00002.gguf: split part q-00002-of-00002.gguf: " + fifo_line},
      {{"audit", "idx/model.safetensors.index.json", "good.safetensors"},
       "idx/model.safetensors.index.json: shard shard.safetensors: " + fifo_line},
      {{"audit", "folder", "good.safetensors"}, "folder: model.safetensors: " + fifo_line},
      {{"audit", "good.safetensors", "--model-config", "config.fifo.json"},
       "model config 'config.fifo.json' " + fifo_line},
      {{"audit", "good.safetensors", "--config", "hc.toml"}, "cannot read config 'hc.toml': it " + fifo_line},
      {{"audit", "good.safetensors", "--baseline", "baseline.json"}, "cannot read baseline 'baseline.json': it " + fifo_line},
  };
  for (const Case& c : cases) {
    INFO("headcount " << c.args[0] << " " << c.args[1] << " " << c.args[2]);
    hostile::Outcome o = hostile::run(c.args, dir.path.string());
    INFO("stderr:\n" << o.err);
    hostile::check_bound(o);
    CHECK(o.exit_code == 2);
    CHECK(o.err.find("headcount: error: " + c.error + "\n") != std::string::npos);
    // One error line, the only stderr line; the good file beside a bad one is still audited.
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    if (c.args[2] == "good.safetensors") CHECK(o.out.find("good.safetensors") != std::string::npos);
  }
}

TEST_CASE("a config.json beside a checkpoint that is a FIFO is not read; the report says why", "[readers][hostile][fifo]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("model.safetensors"),
                        safetensors({{"model.layers.0.self_attn.q_proj.weight", {4, 4}, iota(16, 1)}}));
  fifo(dir.file("config.json"));
  hostile::Outcome o = hostile::run({"audit", "model.safetensors"}, dir.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code == 0);  // the weights are audited
  CHECK(o.out.find("16 stored in 1 tensor") != std::string::npos);
  CHECK(o.out.find("model config 'config.json' is a FIFO, not a regular file") != std::string::npos);
}

TEST_CASE("ONNX external data that is a FIFO is missing, and no read waits on it", "[readers][hostile][fifo]") {
  using T = onnx::TensorProto;
  testutil::TempDir dir;
  auto m = testutil::model();
  auto* g = m.mutable_graph();
  testutil::input(g, "x", {1, 4});
  T t = testutil::tensor("w", {4, 4}, T::FLOAT, /*no_data=*/true);
  t.set_data_location(T::EXTERNAL);
  auto* e = t.add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  *g->add_initializer() = t;
  testutil::node(g, "MatMul", {"x", "w"}, {"y"}, "mm");
  testutil::save(m, dir.file("model.onnx"));
  fifo(dir.file("w.bin"));
  hostile::Outcome o = hostile::run({"audit", "model.onnx"}, dir.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code <= 1);  // audited: the data is missing, which a finding says
  CHECK(o.out.find("model.onnx") != std::string::npos);

  // Present at load, then swapped for a FIFO: the bytes are not read, and nothing waits.
  fs::remove(dir.path / "w.bin");
  testutil::write_bytes(dir.file("w.bin"), std::string(64, '\0'));
  Model model = load_model(dir.file("model.onnx"));
  REQUIRE(model.weights.size() == 1);
  REQUIRE(model.weights[0].external_status() == ExternalStatus::Present);
  fs::rename(dir.path / "w.bin", dir.path / "w.old");
  fifo(dir.file("w.bin"));
  hostile::Outcome read = hostile::in_child([&] { return for_each_value(model.weights[0], [](uint64_t, double) { return true; }) ? 1 : 0; });
  hostile::check_bound(read, false);
  CHECK(read.exit_code == 0);  // for_each_value said the bytes could not be read
}

TEST_CASE("a checkpoint swapped after it was parsed is not read: no hang, no verdict from another file",
          "[readers][hostile][swap]") {
  testutil::TempDir dir;
  const std::string path = dir.file("model.safetensors");
  // 'b' is a copy of 'a' (the same 1,024 values: the duplicate search skips smaller tensors), 'c'
  // holds other values: one duplicate pair.
  const std::vector<int64_t> shape = {32, 32};
  testutil::write_bytes(path, safetensors({{"a", shape, iota(1024, 1)}, {"b", shape, iota(1024, 1)}, {"c", shape, iota(1024, 5000)}}));
  AuditOptions o;
  o.compare_content = false;
  Audit a = audit_file(path, o);
  REQUIRE(a.model.weights.size() == 3);
  REQUIRE(find_duplicates(a.model).size() == 1);  // read as parsed: b is a's copy

  SECTION("swapped for a FIFO") {
    fs::rename(path, dir.file("model.old"));
    fifo(path);
  }
  SECTION("swapped for another file of the same size, where 'c' is a's copy too") {
    fs::rename(path, dir.file("model.old"));  // kept: the new file cannot take its inode
    testutil::write_bytes(path, safetensors({{"a", shape, iota(1024, 1)}, {"b", shape, iota(1024, 1)}, {"c", shape, iota(1024, 1)}}));
  }
  // Nothing is read from what is there now: no duplicate is claimed (read, 'c' would make 3).
  hostile::Outcome dup = hostile::in_child([&] { return static_cast<int>(find_duplicates(a.model).size()); });
  hostile::check_bound(dup, false);
  CHECK(dup.exit_code == 0);
}

TEST_CASE("an export's checkpoint swapped for a FIFO after it was parsed: no tensor is called kept",
          "[readers][hostile][swap]") {
  testutil::TempDir dir;
  const std::string samples = HEADCOUNT_SAMPLES_DIR;
  fs::copy_file(samples + "/llama_tiny.onnx", dir.file("llama_tiny.onnx"));
  fs::copy_file(samples + "/llama_tiny.safetensors", dir.file("llama_tiny.safetensors"));
  AuditOptions o;
  o.compare_content = false;
  Audit e = audit_file(dir.file("llama_tiny.onnx"), o);
  Audit c = audit_file(dir.file("llama_tiny.safetensors"), o);
  // As parsed: the checkpoint is the export's module (samples/make_samples.py), its 21 tensors
  // (per layer 4 attention, 3 feed-forward, 2 norms: 2 layers; the embedding, the final norm and
  // the LM head) each held by the export.
  Fidelity before = check_fidelity(e, "llama_tiny.onnx", c, "llama_tiny.safetensors");
  REQUIRE(before.tensors.size() == 21);
  CHECK(before.kept + before.folded == 21);

  fs::rename(dir.file("llama_tiny.safetensors"), dir.file("llama_tiny.old"));
  fifo(dir.file("llama_tiny.safetensors"));
  hostile::Outcome after = hostile::in_child([&] {
    Fidelity f = check_fidelity(e, "llama_tiny.onnx", c, "llama_tiny.safetensors");
    // Nothing was read: nothing is held, changed or lost; all 21 are unknown.
    return f.unknown == 21 && f.kept + f.folded + f.changed + f.lost == 0 ? 0 : 1;
  });
  hostile::check_bound(after, false);
  CHECK(after.exit_code == 0);
}

TEST_CASE("a sparse 512 MiB config.json beside a checkpoint is refused unread; the weights are audited",
          "[readers][hostile][config]") {
  testutil::TempDir dir;
  testutil::write_bytes(dir.file("model.safetensors"),
                        safetensors({{"model.layers.0.self_attn.q_proj.weight", {4, 4}, iota(16, 1)}}));
  testutil::write_bytes(dir.file("config.json"), "{\"model_type\": \"llama\"");
  fs::resize_file(dir.path / "config.json", uint64_t{512} << 20);  // a hole: 4 kB on disk
  hostile::Outcome o = hostile::run({"audit", "model.safetensors"}, dir.path.string());
  hostile::check_bound(o);
  CHECK(o.exit_code == 0);
  CHECK(o.out.find("16 stored in 1 tensor") != std::string::npos);  // 4 x 4
  // 512 MiB = 536,870,912 bytes; the bound is 16 MiB = 16,777,216. Said beside what the config
  // declares, and ignored.
  CHECK(o.out.find("model config 'config.json' is 536870912 bytes, above the 16777216") != std::string::npos);
  // Named by hand, the same config stops the audit with one error line.
  hostile::Outcome named = hostile::run({"audit", "model.safetensors", "--model-config", "config.json"}, dir.path.string());
  hostile::check_bound(named);
  CHECK(named.exit_code == 2);
  CHECK(named.err == "headcount: error: model config 'config.json' is 536870912 bytes, above the 16777216 "
                     "a model config can be\n");
}
