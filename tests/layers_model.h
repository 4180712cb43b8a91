// layers_model.h: hand-built unfused self-attention layers (DOMAIN.md section 2) with every
// size settable, shared by the tests that need a model of given heads and sizes.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph_builder.h"
#include "test_util.h"

namespace testutil::layers {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

// One self-attention layer as the unfused pattern of DOMAIN.md section 2:
//   x -> MatMul (+ Add bias) -> Reshape [0, 0, h, d] -> Transpose -> MatMul(Q, Kᵀ) -> Div -> Softmax
//     -> MatMul(., V) -> Transpose -> Reshape [0, 0, h*d_v] -> MatMul (+ Add bias)
struct LayerSpec {
  int64_t width = 64;
  int64_t heads = 4;
  int64_t head_dim = 16;
  int64_t kv_heads = 0;    // 0: = heads; fewer K/V heads are tiled up to `heads` before the core
  int64_t v_head_dim = 0;  // 0: = head_dim
  bool bias_q = true, bias_k = true, bias_v = true, bias_o = true;
  std::string q_bias, k_bias;          // a bias tensor name to use instead of the layer's own
  std::vector<int64_t> k_first_reshape;  // K reshaped to this before the usual [0, 0, h_kv, d]
  std::vector<int64_t> k_reshape;        // K's head split instead of [0, 0, h_kv, d]
  bool per_head = false;               // Q, K and V as h separate projections, concatenated
  bool q_weight_is_input = false;      // the Q weight is a graph input, not a constant
};

// A graph under construction; node names equal their first output.
struct Net : testutil::GraphBuilder {
  // y = x W (+ b): W [in, out] and b [out] initializers p.weight / p.bias (or the named bias).
  std::string linear(const std::string& x, const std::string& p, int64_t in, int64_t out, bool bias = true,
                     const std::string& bias_name = "") {
    op("MatMul", {x, init(p + ".weight", {in, out})}, p + "/MatMul");
    if (!bias) return p + "/MatMul";
    std::string b = bias_name;
    if (b.empty()) b = init(p + ".bias", {out});
    else if (shared.insert(b).second) init(b, {out});
    op("Add", {p + "/MatMul", b}, p + "/Add");
    return p + "/Add";
  }
  // h projections x -> d, concatenated on the features: [B, S, h*d].
  std::string per_head(const std::string& x, const std::string& p, int64_t in, int64_t h, int64_t d, bool bias) {
    std::vector<std::string> heads;
    for (int64_t i = 0; i < h; ++i) heads.push_back(linear(x, p + ".head" + std::to_string(i), in, d, bias));
    testutil::attr_int(op("Concat", heads, p + "/Concat"), "axis", -1);
    return p + "/Concat";
  }

  // Adds one layer on x [1, 5, width]; returns its output [1, 5, width].
  std::string layer(const std::string& x, const std::string& p, const LayerSpec& s) {
    int64_t h = s.heads, d = s.head_dim, kv = s.kv_heads ? s.kv_heads : h, dv = s.v_head_dim ? s.v_head_dim : d;
    std::string q, k, v;
    if (s.per_head) {
      q = per_head(x, p + ".q", s.width, h, d, s.bias_q);
      k = per_head(x, p + ".k", s.width, kv, d, s.bias_k);
      v = per_head(x, p + ".v", s.width, kv, dv, s.bias_v);
    } else {
      if (s.q_weight_is_input) {
        input(p + ".q.weight", {s.width, h * d});
        op("MatMul", {x, p + ".q.weight"}, p + ".q/MatMul");
        q = p + ".q/MatMul";
      } else {
        q = linear(x, p + ".q", s.width, h * d, s.bias_q, s.q_bias);
      }
      k = linear(x, p + ".k", s.width, kv * d, s.bias_k, s.k_bias);
      v = linear(x, p + ".v", s.width, kv * dv, s.bias_v);
    }
    q = transpose(reshape(q, {0, 0, h, d}, p + "/q/Reshape"), {0, 2, 1, 3}, p + "/q/Transpose");
    if (!s.k_first_reshape.empty()) k = reshape(k, s.k_first_reshape, p + "/k/Reshape0");
    std::vector<int64_t> k_split = s.k_reshape.empty() ? std::vector<int64_t>{0, 0, kv, d} : s.k_reshape;
    k = transpose(reshape(k, k_split, p + "/k/Reshape"), {0, 2, 3, 1}, p + "/k/Transpose");
    v = transpose(reshape(v, {0, 0, kv, dv}, p + "/v/Reshape"), {0, 2, 1, 3}, p + "/v/Transpose");
    if (kv != h) {  // [1, kv, ., .] -> [1, h, ., .]: each K/V head serves h / kv query heads
      op("Tile", {k, ints({1, h / kv, 1, 1})}, p + "/k/Tile");
      op("Tile", {v, ints({1, h / kv, 1, 1})}, p + "/v/Tile");
      k = p + "/k/Tile";
      v = p + "/v/Tile";
    }
    op("MatMul", {q, k}, p + "/scores");
    if (shared.insert("sqrt_dk").second) init("sqrt_dk", {}, kFloat);
    op("Div", {p + "/scores", "sqrt_dk"}, p + "/scaled");
    testutil::attr_int(op("Softmax", {p + "/scaled"}, p + "/Softmax"), "axis", -1);
    op("MatMul", {p + "/Softmax", v}, p + "/context");
    std::string ctx = reshape(transpose(p + "/context", {0, 2, 1, 3}, p + "/context_t"), {0, 0, h * dv}, p + "/context_r");
    return linear(ctx, p + ".o", h * dv, s.width, s.bias_o);
  }
};

// One-layer (or more) model on x [1, 5, 64].
inline onnx::ModelProto layers_model(std::vector<LayerSpec> specs) {
  Net n;
  n.input("x", {1, 5, specs[0].width});
  std::string y = "x";
  for (size_t i = 0; i < specs.size(); ++i) y = n.layer(y, "layer" + std::to_string(i), specs[i]);
  n.output(y);
  return n.m;
}

}  // namespace testutil::layers
