// test_util.h: small builders for hand-made ONNX graphs and temporary files, shared by the tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "headcount/audit.h"
#include "headcount/cli.h"

namespace testutil {

// "headcount 0.2.0": how reports and --version name the tool.
inline std::string version() { return std::string("headcount ") + headcount::kVersion; }

// `n` as 8 bytes, little-endian: the length a safetensors file starts with.
inline std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A safetensors file of the JSON `header` as given and `data` bytes of zeros after it.
inline std::string safetensors_file(const std::string& header, size_t data) {
  return le64(header.size()) + header + std::string(data, '\0');
}

// A temporary directory removed when the test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "headcount-test-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    path = p ? p : tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

// Changes into `dir` and back again when the scope ends, also when a REQUIRE throws.
struct CwdGuard {
  std::filesystem::path saved = std::filesystem::current_path();
  explicit CwdGuard(const std::filesystem::path& dir) { std::filesystem::current_path(dir); }
  ~CwdGuard() {
    std::error_code ec;
    std::filesystem::current_path(saved, ec);
  }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A float32 tensor with the given dims and `raw_data` of the right size (zeros) unless `no_data`.
inline onnx::TensorProto tensor(const std::string& name, std::vector<int64_t> dims,
                                int32_t dtype = onnx::TensorProto::FLOAT, bool no_data = false) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(dtype);
  uint64_t n = 1;
  for (auto d : dims) {
    t.add_dims(d);
    n *= static_cast<uint64_t>(d < 0 ? 0 : d);
  }
  if (!no_data) {
    size_t width = dtype == onnx::TensorProto::FLOAT16 ? 2 : dtype == onnx::TensorProto::INT64 ? 8
                 : dtype == onnx::TensorProto::INT8 || dtype == onnx::TensorProto::UINT8 ? 1 : 4;
    t.set_raw_data(std::string(n * width, '\0'));
  }
  return t;
}

// Moves `t`'s data to the external file `location` (relative to the model's folder), with its
// offset and length when they are 0 or more; the file itself is the test's to write, or not.
inline void set_external(onnx::TensorProto& t, const std::string& location, int64_t offset = -1, int64_t length = -1) {
  t.clear_raw_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
}

// An int64 tensor holding `values` (shape constants, Reshape targets, Split sizes).
inline onnx::TensorProto ints(const std::string& name, std::vector<int64_t> values, bool scalar = false) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
  for (auto v : values) t.add_int64_data(v);
  return t;
}

// Adds a node; returns it so attributes can be set.
inline onnx::NodeProto* node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                             std::vector<std::string> out, const std::string& name = "",
                             const std::string& domain = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  if (!domain.empty()) n->set_domain(domain);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

inline void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void attr_ints(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

// A Constant node producing `t` under the name `out`.
inline onnx::NodeProto* constant(onnx::GraphProto* g, const std::string& out, onnx::TensorProto t) {
  auto* n = node(g, "Constant", {}, {out});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = std::move(t);
  return n;
}

// Declares a graph input with a float tensor type of the given dims (-1 = symbolic).
inline void input(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims) {
  auto* vi = g->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (auto d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("n");
  }
}

// A model shell with opset 14 (and com.microsoft 1).
inline onnx::ModelProto model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("headcount-test");
  auto* o = m.add_opset_import();
  o->set_version(14);
  auto* ms = m.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  m.mutable_graph()->set_name("test");
  return m;
}

inline void save(const onnx::ModelProto& m, const std::string& path) {
  std::string bytes;
  m.SerializeToString(&bytes);
  write_bytes(path, bytes);
}

// Saves `m` as dir/name and returns the path, for a test that needs the model as a file
// (graph_builder.h says which do; the others audit in memory).
inline std::string saved(const onnx::ModelProto& m, const TempDir& dir, const std::string& name = "model.onnx") {
  std::string path = dir.file(name);
  save(m, path);
  return path;
}

// What one in-process `headcount ARGS...` printed and returned.
struct CliResult {
  int code = -1;
  std::string out, err;
};

// Runs the CLI in-process with string streams (run_cli restores the default logger on return).
inline CliResult cli(std::vector<std::string> args) {
  args.insert(args.begin(), "headcount");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  CliResult r;
  r.code = headcount::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace testutil
