// graph_builder.h: a small builder for hand-made attention graphs, shared by the tests that build
// whole layers (unfused_test, findings_test). Node names equal their first output.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <memory>

#include "headcount/attention.h"
#include "headcount/load.h"
#include "headcount/report.h"
#include "test_util.h"

namespace testutil {

struct GraphBuilder {
  onnx::ModelProto m = model();
  onnx::GraphProto* g = m.mutable_graph();
  std::set<std::string> shared;              // constants added once and reused
  int32_t dtype = onnx::TensorProto::FLOAT;  // of weights and biases made by init()

  std::string init(const std::string& name, std::vector<int64_t> dims, int32_t type = -1) {
    *g->add_initializer() = tensor(name, std::move(dims), type < 0 ? dtype : type);
    return name;
  }
  // A shared int64 constant ("ints_0_0_4_16"), created on first use.
  std::string ints(std::vector<int64_t> values, bool scalar = false) {
    std::string name = scalar ? "scalar" : "ints";
    for (auto v : values) name += "_" + std::to_string(v);
    if (shared.insert(name).second) *g->add_initializer() = testutil::ints(name, values, scalar);
    return name;
  }
  onnx::NodeProto* op(const std::string& type, std::vector<std::string> in, const std::string& out,
                      const std::string& domain = "") {
    return node(g, type, std::move(in), {out}, out, domain);
  }
  std::string transpose(const std::string& x, std::vector<int64_t> perm, const std::string& out) {
    attr_ints(op("Transpose", {x}, out), "perm", std::move(perm));
    return out;
  }
  std::string reshape(const std::string& x, std::vector<int64_t> target, const std::string& out) {
    op("Reshape", {x, ints(std::move(target))}, out);
    return out;
  }
  // y = x W (+ b), W [in, out] and b [out] as initializers p.weight / p.bias; returns y's name.
  std::string linear(const std::string& x, const std::string& p, int64_t in, int64_t out, bool bias = true) {
    op("MatMul", {x, init(p + ".weight", {in, out})}, p + "/MatMul");
    if (!bias) return p + "/MatMul";
    op("Add", {p + "/MatMul", init(p + ".bias", {out})}, p + "/Add");
    return p + "/Add";
  }
  // Declares the shape of an intermediate value (value_info), as exporters that run shape
  // inference do; -1 is a symbolic dim.
  void declare(const std::string& name, std::vector<int64_t> dims) {
    auto* vi = g->add_value_info();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = tt->mutable_shape();
    for (auto d : dims) {
      if (d >= 0) shape->add_dim()->set_dim_value(d);
      else shape->add_dim()->set_dim_param("n");
    }
  }
  void input(const std::string& name, std::vector<int64_t> dims, int32_t type = onnx::TensorProto::FLOAT) {
    testutil::input(g, name, std::move(dims));
    g->mutable_input(g->input_size() - 1)->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
};

// Invariants of every block: the total is the sum of the four projections, and each projection's
// weight and bias are the sums of its tensor shares.
inline void check_block_invariants(const headcount::Model& model, const headcount::AttentionResult& result) {
  using headcount::Role;
  for (const auto& b : result.blocks) {
    INFO("block " << b.index << " '" << b.name << "'");
    uint64_t sum = 0;
    for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
      const headcount::Projection& p = b.projection(role);
      uint64_t w = 0, bias = 0;
      for (const auto& t : p.tensors) {
        REQUIRE(t.weight >= 0);
        REQUIRE(t.weight < static_cast<int>(model.weights.size()));
        (t.bias ? bias : w) += t.elements;
      }
      INFO("projection " << headcount::role_name(role));
      CHECK(p.weight == w);
      CHECK(p.bias == bias);
      CHECK(p.total() == w + bias);
      sum += p.total();
    }
    for (const auto& e : b.extras) {
      REQUIRE(e.weight >= 0);
      CHECK(e.elements == model.weights[static_cast<size_t>(e.weight)].elements);
      sum += e.elements;
    }
    CHECK(b.total == sum);
  }
}

// A built graph saved, loaded and matched, with the block invariants checked.
struct Matched {
  TempDir dir;
  headcount::Model model;
  headcount::AttentionResult result;
};

// A built graph saved and audited whole (inventory, matching, rules), invariants checked.
struct Audited {
  TempDir dir;
  headcount::Audit audit;
};

inline std::unique_ptr<Audited> audit_saved(const onnx::ModelProto& m) {
  auto r = std::make_unique<Audited>();
  std::string path = r->dir.file("model.onnx");
  save(m, path);
  r->audit = headcount::audit_file(path);
  check_block_invariants(r->audit.model, r->audit.attention);
  return r;
}

inline std::unique_ptr<Matched> match_saved(const onnx::ModelProto& m) {
  auto r = std::make_unique<Matched>();
  std::string path = r->dir.file("model.onnx");
  save(m, path);
  r->model = headcount::load_model(path);
  r->result = headcount::match_attention(r->model);
  check_block_invariants(r->model, r->result);
  return r;
}

}  // namespace testutil
