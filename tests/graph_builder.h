// graph_builder.h: the one way tests build a graph, and audit or match it in memory.
//
// GraphBuilder makes an ONNX graph node by node (node names equal their first output) and adds
// whole unfused self-attention layers (DOMAIN.md section 2) from a LayerSpec; layers_model() is a
// model of such layers. audited() runs a built model through headcount::audit_bytes and matched()
// through load_model_bytes + match_attention, both from its serialized bytes, without a file, and
// both check the invariants every block keeps.
//
// A test keeps a file on disk only when the file is what it tests (saved(), or a TempDir):
//   - external data beside the model, present or checked to be missing by its folder (the
//     external-data rules and the duplicate comparisons read from a data file in findings_test;
//     load_test; cost_test's LLaMA-shaped decoders, whose weights.bin is absent);
//   - a config.json beside the model (declared_test, explain_config_test);
//   - a command-line run, in-process or as a process, which takes paths and prints them (cli_test,
//     gate_test, diff_test's CLI cases, cost_test, experts_test's gate case);
//   - the reader itself on files (load_test, robustness_test: the file window, protobuf's own parse
//     of the same file, mutated files).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "headcount/attention.h"
#include "headcount/load.h"
#include "headcount/audit.h"
#include "test_util.h"

namespace testutil {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

// How a projection's weight and bias are stored.
enum class Store {
  Initializer,   // initializers
  ConstantNode,  // Constant nodes
  Transposed,    // the weight stored [out, in] behind a Transpose; the bias an initializer
  Quantized,     // the weight int8 behind DequantizeLinear (scale, zero point); the bias an initializer
};

// One self-attention layer as the unfused pattern of DOMAIN.md section 2:
//   x -> MatMul (+ Add bias) -> Reshape [0, 0, h, d] -> Transpose -> MatMul(Q, Kᵀ) -> Div [-> Add mask]
//     -> Softmax -> MatMul(., V) -> Transpose -> Reshape [0, 0, h*d_v] -> MatMul (+ Add bias)
struct LayerSpec {
  int64_t width = 64;
  int64_t heads = 4;
  int64_t head_dim = 16;
  int64_t kv_heads = 0;    // 0: = heads; fewer K/V heads are tiled up to `heads` before the core
  int64_t v_head_dim = 0;  // 0: = head_dim
  bool bias_q = true, bias_k = true, bias_v = true, bias_o = true;
  Store store = Store::Initializer;      // every projection's weight and bias
  std::string shared_bias;               // one bias tensor for all four projections, made on first use
  std::string q_bias, k_bias;            // a bias tensor name to use instead of the layer's own
  std::string mask;                      // a value added to the scaled scores before the Softmax
  std::vector<int64_t> k_first_reshape;  // K reshaped to this before the usual [0, 0, h_kv, d]
  std::vector<int64_t> k_reshape;        // K's head split instead of [0, 0, h_kv, d]
  bool per_head = false;                 // Q, K and V as h separate projections, concatenated
  bool q_weight_is_input = false;        // the Q weight is a graph input, not a constant
};

// A graph under construction; node names equal their first output.
struct GraphBuilder {
  onnx::ModelProto m = model();
  onnx::GraphProto* g = m.mutable_graph();
  std::set<std::string> shared;  // tensors added once and reused (shared_init, ints)
  int32_t dtype = kFloat;        // of weights and biases made by init()

  std::string init(const std::string& name, std::vector<int64_t> dims, int32_t type = -1) {
    *g->add_initializer() = tensor(name, std::move(dims), type < 0 ? dtype : type);
    return name;
  }
  // An initializer added on the first call with this name; later calls reuse it.
  std::string shared_init(const std::string& name, std::vector<int64_t> dims, int32_t type = -1) {
    if (shared.insert(name).second) init(name, std::move(dims), type);
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

  // The value of a weight used as MatMul's B operand [in, out], stored as `store` says.
  std::string weight(const std::string& name, int64_t in, int64_t out, Store store = Store::Initializer) {
    switch (store) {
      case Store::Initializer: return init(name, {in, out});
      case Store::ConstantNode: constant(g, name, tensor(name, {in, out}, dtype)); return name;
      case Store::Transposed: return transpose(init(name + ".stored", {out, in}), {1, 0}, name);
      case Store::Quantized: {
        std::string q = init(name + ".int8", {in, out}, onnx::TensorProto::INT8);
        std::string scale = init(name + ".scale", {}, kFloat);
        std::string zero = init(name + ".zero_point", {}, onnx::TensorProto::INT8);
        op("DequantizeLinear", {q, scale, zero}, name);
        return name;
      }
    }
    return name;
  }
  // A bias [out]: a Constant node for Store::ConstantNode, else an initializer.
  std::string bias(const std::string& name, int64_t out, Store store = Store::Initializer) {
    if (store == Store::ConstantNode) {
      constant(g, name, tensor(name, {out}, dtype));
      return name;
    }
    return init(name, {out});
  }
  // y = x W (+ b) as MatMul (+ Add): W [in, out] named p.weight and b [out] named p.bias, stored
  // as `store` says; or the bias `bias_name`, one tensor shared by every projection that names it
  // (an initializer made on its first use). Returns y's name.
  std::string linear(const std::string& x, const std::string& p, int64_t in, int64_t out, bool with_bias = true,
                     Store store = Store::Initializer, const std::string& bias_name = "") {
    std::string y = p + "/MatMul";
    op("MatMul", {x, weight(p + ".weight", in, out, store)}, y);
    if (!with_bias) return y;
    std::string b = bias_name.empty() ? bias(p + ".bias", out, store) : shared_init(bias_name, {out});
    op("Add", {y, b}, p + "/Add");
    return p + "/Add";
  }
  // h projections x -> d, p.head0 .. p.head{h-1}, concatenated on the features: [B, S, h*d].
  std::string per_head(const std::string& x, const std::string& p, int64_t in, int64_t h, int64_t d, bool with_bias = true,
                       Store store = Store::Initializer) {
    std::vector<std::string> heads;
    for (int64_t i = 0; i < h; ++i) heads.push_back(linear(x, p + ".head" + std::to_string(i), in, d, with_bias, store));
    attr_int(op("Concat", heads, p + "/Concat"), "axis", -1);
    return p + "/Concat";
  }
  // [B, S, h*d] -> Reshape [0, 0, h, d] (p/Reshape) -> Transpose perm (p/Transpose).
  std::string split_heads(const std::string& x, const std::string& p, int64_t h, int64_t d, std::vector<int64_t> perm) {
    return transpose(reshape(x, {0, 0, h, d}, p + "/Reshape"), std::move(perm), p + "/Transpose");
  }
  // q4 [B, h, S, d], kt [B, h, d, S], v4 [B, h, S, d_v] -> scores / sqrt_dk (+ mask) -> Softmax ->
  // context -> Transpose [0, 2, 1, 3] -> Reshape [0, 0, hd]. Returns the reshaped context.
  std::string core(const std::string& q4, const std::string& kt, const std::string& v4, const std::string& p,
                   int64_t hd, const std::string& mask = "") {
    op("MatMul", {q4, kt}, p + "/scores");
    shared_init("sqrt_dk", {}, kFloat);
    std::string s = p + "/scaled";
    op("Div", {p + "/scores", "sqrt_dk"}, s);
    if (!mask.empty()) {
      op("Add", {s, mask}, p + "/masked");
      s = p + "/masked";
    }
    attr_int(op("Softmax", {s}, p + "/Softmax"), "axis", -1);
    op("MatMul", {p + "/Softmax", v4}, p + "/context");
    return reshape(transpose(p + "/context", {0, 2, 1, 3}, p + "/context_t"), {0, 0, hd}, p + "/context_r");
  }
  // Adds one layer named p on x [B, S, width]; returns its output [B, S, width].
  std::string layer(const std::string& x, const std::string& p, const LayerSpec& s) {
    int64_t h = s.heads, d = s.head_dim, kv = s.kv_heads ? s.kv_heads : h, dv = s.v_head_dim ? s.v_head_dim : d;
    std::string q, k, v;
    if (s.per_head) {
      q = per_head(x, p + ".q", s.width, h, d, s.bias_q, s.store);
      k = per_head(x, p + ".k", s.width, kv, d, s.bias_k, s.store);
      v = per_head(x, p + ".v", s.width, kv, dv, s.bias_v, s.store);
    } else {
      if (s.q_weight_is_input) {
        input(p + ".q.weight", {s.width, h * d});
        op("MatMul", {x, p + ".q.weight"}, p + ".q/MatMul");
        q = p + ".q/MatMul";
      } else {
        q = linear(x, p + ".q", s.width, h * d, s.bias_q, s.store, s.q_bias.empty() ? s.shared_bias : s.q_bias);
      }
      k = linear(x, p + ".k", s.width, kv * d, s.bias_k, s.store, s.k_bias.empty() ? s.shared_bias : s.k_bias);
      v = linear(x, p + ".v", s.width, kv * dv, s.bias_v, s.store, s.shared_bias);
    }
    q = split_heads(q, p + "/q", h, d, {0, 2, 1, 3});
    if (!s.k_first_reshape.empty()) k = reshape(k, s.k_first_reshape, p + "/k/Reshape0");
    std::vector<int64_t> k_split = s.k_reshape.empty() ? std::vector<int64_t>{0, 0, kv, d} : s.k_reshape;
    k = transpose(reshape(k, k_split, p + "/k/Reshape"), {0, 2, 3, 1}, p + "/k/Transpose");
    v = split_heads(v, p + "/v", kv, dv, {0, 2, 1, 3});
    if (kv != h) {  // [1, kv, ., .] -> [1, h, ., .]: each K/V head serves h / kv query heads
      op("Tile", {k, ints({1, h / kv, 1, 1})}, p + "/k/Tile");
      op("Tile", {v, ints({1, h / kv, 1, 1})}, p + "/v/Tile");
      k = p + "/k/Tile";
      v = p + "/v/Tile";
    }
    std::string ctx = core(q, k, v, p, h * dv, s.mask);
    return linear(ctx, p + ".o", h * dv, s.width, s.bias_o, s.store, s.shared_bias);
  }

  // Declares the shape of an intermediate value (value_info), as exporters that run shape
  // inference do; -1 is a symbolic dim.
  void declare(const std::string& name, std::vector<int64_t> dims) {
    auto* vi = g->add_value_info();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(kFloat);
    auto* shape = tt->mutable_shape();
    for (auto d : dims) {
      if (d >= 0) shape->add_dim()->set_dim_value(d);
      else shape->add_dim()->set_dim_param("n");
    }
  }
  void input(const std::string& name, std::vector<int64_t> dims, int32_t type = kFloat) {
    testutil::input(g, name, std::move(dims));
    g->mutable_input(g->input_size() - 1)->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
  void output(const std::string& name) { g->add_output()->set_name(name); }
};

// A model of layers layer0, layer1, ... in a row on x [1, 5, width of the first].
inline onnx::ModelProto layers_model(std::vector<LayerSpec> specs) {
  GraphBuilder n;
  n.input("x", {1, 5, specs[0].width});
  std::string y = "x";
  for (size_t i = 0; i < specs.size(); ++i) y = n.layer(y, "layer" + std::to_string(i), specs[i]);
  n.output(y);
  return n.m;
}

// Invariants of every block: the total is the sum of the four projections and the extras, and
// each projection's weight and bias are the sums of its tensor shares.
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
    // No block holds more of a tensor than the tensor stores (headcount::bound_claims): a share
    // read by several projections counts once, as the attention total counts it.
    std::map<int, uint64_t> claimed;
    std::set<std::pair<int, std::string>> seen;
    for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(role).tensors) {
        if (seen.insert({t.weight, t.slice}).second) claimed[t.weight] += t.elements;
      }
    }
    for (const auto& e : b.extras) {
      if (seen.insert({e.weight, ""}).second) claimed[e.weight] += e.elements;
    }
    for (const auto& [wi, n] : claimed) {
      INFO("tensor '" << model.weights[static_cast<size_t>(wi)].name << "'");
      CHECK(n <= model.weights[static_cast<size_t>(wi)].elements);
    }
  }
}

// The folder a model in memory resolves external data against: none, so every external tensor
// of a built graph reads as missing (a test that needs the data file keeps a file).
inline const char* const kNoFolder = "/nonexistent/headcount-test";

// A built model audited whole (inventory, matching, content, rules) from memory.
struct Audited {
  std::string bytes;  // the serialized model; weights' payloads point into it during the audit
  headcount::Audit audit;
};

// Serializes `m` and runs headcount::audit_bytes on it as `name`, with the block invariants checked.
inline std::unique_ptr<Audited> audited(const onnx::ModelProto& m, const headcount::AuditOptions& options = {},
                                        const std::string& name = "model.onnx") {
  auto r = std::make_unique<Audited>();
  REQUIRE(m.SerializeToString(&r->bytes));
  headcount::AuditOptions o = options;
  if (o.load.base_dir.empty()) o.load.base_dir = kNoFolder;
  r->audit = headcount::audit_bytes(r->bytes.data(), r->bytes.size(), name, o);
  check_block_invariants(r->audit.model, r->audit.attention);
  return r;
}

// A built model loaded from memory and matched (no inventory or rules).
struct Matched {
  std::string bytes;  // the serialized model; the loaded weights' payloads point into it
  headcount::Model model;
  headcount::AttentionResult result;
};

// Serializes `m`, loads it with load_model_bytes and matches its attention, invariants checked.
inline std::unique_ptr<Matched> matched(const onnx::ModelProto& m) {
  auto r = std::make_unique<Matched>();
  REQUIRE(m.SerializeToString(&r->bytes));
  headcount::LoadOptions o;
  o.base_dir = kNoFolder;
  r->model = headcount::load_model_bytes(r->bytes.data(), r->bytes.size(), "model.onnx", o);
  r->result = headcount::match_attention(r->model);
  check_block_invariants(r->model, r->result);
  return r;
}

}  // namespace testutil
