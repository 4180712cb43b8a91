#!/usr/bin/env python3
"""Writes the regression files of the attention and mixture matching of issue 37 (items 7, 10 and
12): stacked experts gathered by the router's TopK, linear attention in a model without norms, and
dynamically quantized attention whose weights are graph inputs. Run with /usr/bin/python3; the
output is deterministic, into tests/fuzz/regressions/.

Each file was read wrong before its fix (0 blocks, or no mixture, its parameters in "everything
else"); tests/fuzz_replay_test.cpp replays each under the hostile-file bound, and the figures are
checked by hand-worked tests (each function's docstring names its test).
"""
import os
import struct

import onnx
from onnx import TensorProto as T
from onnx import helper as h

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "regressions")


def save(m, name):
    data = m.SerializeToString()
    assert len(data) < 1 << 20, (name, len(data))
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def model(nodes, inits, inputs, output="y", opset=14):
    g = h.make_graph(nodes, "g", inputs, [h.make_tensor_value_info(output, T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="headcount-cases-match")


def weight(name, shape, dtype=T.FLOAT, seed=1):
    """A weight with deterministic small values (not all equal: no weight here is a mask)."""
    n = 1
    for d in shape:
        n *= d
    if dtype == T.FLOAT:
        values = [((i * 7919 + seed * 104729) % 97 - 48) / 1000.0 for i in range(n)]
        return h.make_tensor(name, T.FLOAT, shape, struct.pack("<%df" % n, *values), raw=True)
    values = [(i * 31 + seed) % 127 - 63 for i in range(n)]
    return h.make_tensor(name, dtype, shape, values)


def i64(name, values, shape=None):
    return h.make_tensor(name, T.INT64, [len(values)] if shape is None else shape, values)


def quantized_attention():
    """Item 12: one self-attention block quantized by onnxruntime's quantize_dynamic (IntegerOps),
    width 64, 4 heads of 16. x goes through one DynamicQuantizeLinear; Q, K and V are
    MatMulInteger(x_u8, W_s8, x_zp, W_zp) -> Cast -> Mul by x_scale · W_scale -> Add bias, whose
    int8 weights [64, 64], scales, zero points and biases are graph inputs; O is quantized the same
    way with its int8 weight stored. One block: 64 · 64 + 64 = 4,160 stored in it (O), 3 · 64 · 64
    = 12,288 weights fed at run time. Checked in tests/edges_test.cpp."""
    nodes, inits = [], [i64("heads_4d", [0, 0, 4, 16]), i64("merged_3d", [0, 0, 64])]
    inputs = [h.make_tensor_value_info("x", T.FLOAT, ["batch", "seq", 64])]
    nodes.append(h.make_node("DynamicQuantizeLinear", ["x"], ["x_u8", "x_scale", "x_zp"]))

    def product(src, r, stored):
        names = [r + "_weight", r + "_weight_scale", r + "_weight_zp", r + "_bias"]
        if stored:
            inits.extend([weight(names[0], [64, 64], T.INT8), weight(names[1], []), weight(names[2], [], T.INT8),
                          weight(names[3], [64])])
        else:
            inputs.extend([h.make_tensor_value_info(names[0], T.INT8, [64, 64]),
                           h.make_tensor_value_info(names[1], T.FLOAT, []),
                           h.make_tensor_value_info(names[2], T.INT8, []),
                           h.make_tensor_value_info(names[3], T.FLOAT, [64])])
        nodes.extend([
            h.make_node("MatMulInteger", [src + "_u8", names[0], src + "_zp", names[2]], [r + "_i32"]),
            h.make_node("Cast", [r + "_i32"], [r + "_f"], to=T.FLOAT),
            h.make_node("Mul", [src + "_scale", names[1]], [r + "_scale"]),
            h.make_node("Mul", [r + "_f", r + "_scale"], [r + "_mm"]),
            h.make_node("Add", [r + "_mm", names[3]], [r + "_add"])])
        return r + "_add"

    for r in ("q", "k", "v"):
        y = product("x", r, False)
        nodes.extend([h.make_node("Reshape", [y, "heads_4d"], [r + "_4d"]),
                      h.make_node("Transpose", [r + "_4d"], [r + "_t"], perm=[0, 2, 1, 3])])
    nodes.extend([
        h.make_node("Transpose", ["k_t"], ["k_T"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["q_t", "k_T"], ["scores"]),
        h.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        h.make_node("MatMul", ["probs", "v_t"], ["context"]),
        h.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["context_t", "merged_3d"], ["context_r"]),
        h.make_node("DynamicQuantizeLinear", ["context_r"], ["c_u8", "c_scale", "c_zp"])])
    y = product("c", "o", True)
    save(model(nodes, inits, inputs, output=y), "match-dynamic-quantized-attention.onnx")


def linear(nodes, inits, x, name, seed, width=32):
    """x · W [width, width] + b [width], stored: 1,056 parameters at width 32."""
    inits.extend([weight(name + ".weight", [width, width], seed=seed), weight(name + ".bias", [width], seed=seed + 1)])
    nodes.extend([h.make_node("MatMul", [x, name + ".weight"], [name + "/mm"]),
                  h.make_node("Add", [name + "/mm", name + ".bias"], [name + "/out"])])
    return name + "/out"


def linear_attention_without_norms():
    """Item 10: three causal linear-attention layers (phi = elu + 1, the state sum phi(k) v^T and
    its normaliser sum phi(k) as CumSums over the sequence, no Softmax) and one softmax-attention
    layer, width 32, 4 heads of 8, each x = x + layer(x): no norm, no MLP. Each layer has q, k, v
    and o of 32 · 32 + 32 = 1,056: 4,224 a layer, 16,896 in all; a linear layer's state is
    4 · 8 · 8 + 4 · 8 = 288 elements. Checked in tests/architectures_test.cpp."""
    # The scalars of the arithmetic as Constant nodes, as torch writes them (not parameters).
    nodes = [h.make_node("Constant", [], [name], value=h.make_tensor(name, T.FLOAT, [], [v]))
             for name, v in (("one", 1.0), ("eps", 1e-6), ("scale", 8 ** -0.5))]
    inits = [i64("heads_4d", [0, 0, 4, 8]), i64("merged_3d", [0, 0, 32]), i64("axis_seq", [1], []),
             i64("last", [-1]), i64("second_last", [-2])]
    x = "x"
    for layer in range(4):
        p = "layers.%d" % layer
        heads = {}
        for i, r in enumerate(("q", "k", "v")):
            y = linear(nodes, inits, x, "%s.%s_proj" % (p, r), seed=10 * layer + 2 * i)
            nodes.append(h.make_node("Reshape", [y, "heads_4d"], ["%s/%s_4d" % (p, r)]))
            heads[r] = "%s/%s_4d" % (p, r)
        if layer < 3:
            for r in ("q", "k"):
                nodes.extend([h.make_node("Elu", [heads[r]], ["%s/%s_elu" % (p, r)]),
                              h.make_node("Add", ["%s/%s_elu" % (p, r), "one"], ["%s/%s_phi" % (p, r)])])
            nodes.extend([
                h.make_node("Unsqueeze", [p + "/k_phi", "last"], [p + "/k_col"]),
                h.make_node("Unsqueeze", [heads["v"], "second_last"], [p + "/v_row"]),
                h.make_node("Mul", [p + "/k_col", p + "/v_row"], [p + "/kv_t"]),
                h.make_node("CumSum", [p + "/kv_t", "axis_seq"], [p + "/kv"]),
                h.make_node("CumSum", [p + "/k_phi", "axis_seq"], [p + "/z"]),
                h.make_node("Unsqueeze", [p + "/q_phi", "last"], [p + "/q_col"]),
                h.make_node("Mul", [p + "/q_col", p + "/kv"], [p + "/qkv"]),
                h.make_node("ReduceSum", [p + "/qkv"], [p + "/num"], axes=[-2], keepdims=0),
                h.make_node("Mul", [p + "/q_phi", p + "/z"], [p + "/qz"]),
                h.make_node("ReduceSum", [p + "/qz"], [p + "/den0"], axes=[-1], keepdims=1),
                h.make_node("Add", [p + "/den0", "eps"], [p + "/den"]),
                h.make_node("Div", [p + "/num", p + "/den"], [p + "/mixed"])])
        else:
            nodes.extend([
                h.make_node("Transpose", [heads["q"]], [p + "/q_t"], perm=[0, 2, 1, 3]),
                h.make_node("Transpose", [heads["k"]], [p + "/k_T"], perm=[0, 2, 3, 1]),
                h.make_node("Transpose", [heads["v"]], [p + "/v_t"], perm=[0, 2, 1, 3]),
                h.make_node("MatMul", [p + "/q_t", p + "/k_T"], [p + "/scores0"]),
                h.make_node("Mul", [p + "/scores0", "scale"], [p + "/scores"]),
                h.make_node("Softmax", [p + "/scores"], [p + "/probs"], axis=-1),
                h.make_node("MatMul", [p + "/probs", p + "/v_t"], [p + "/context"]),
                h.make_node("Transpose", [p + "/context"], [p + "/mixed"], perm=[0, 2, 1, 3])])
        nodes.append(h.make_node("Reshape", [p + "/mixed", "merged_3d"], [p + "/merged"]))
        o = linear(nodes, inits, p + "/merged", p + ".o_proj", seed=10 * layer + 6)
        out = "y" if layer == 3 else p + "/residual"
        nodes.append(h.make_node("Add", [x, o], [out]))
        x = out
    inputs = [h.make_tensor_value_info("x", T.FLOAT, [1, "seq", 32])]
    save(model(nodes, inits, inputs), "match-linear-attention-without-norms.onnx")


def gathered_stacked_experts():
    """Item 7: a mixture whose stacked experts are gathered by the router's choice. x [tokens, 32]
    · router [32, 4], Softmax, TopK k = 2; gate_up [4, 32, 32] and down [4, 16, 32] (gpt-oss's
    x @ W layout) gathered by the TopK's indices, one batched MatMul each with x as
    [tokens, 1, 1, 32], SiLU-gated halves, the k outputs weighted by the TopK's values and summed.
    One expert 32 · 32 + 16 · 32 = 1,536, routed 6,144, router 128: 6,272; a token runs 2 of 4:
    6,272 − 2 · 1,536 = 3,200. Checked in tests/experts_test.cpp (a graph of the same form)."""
    inits = [weight("router.weight", [32, 4], seed=1), weight("experts.gate_up_proj", [4, 32, 32], seed=2),
             weight("experts.down_proj", [4, 16, 32], seed=3), i64("k", [2]), i64("axes_12", [1, 2]),
             i64("halves", [16, 16]), i64("per_slot", [-1, 2, 32]), i64("axes_2", [2])]
    nodes = [
        h.make_node("MatMul", ["x", "router.weight"], ["logits"]),
        h.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        h.make_node("TopK", ["probs", "k"], ["top", "chosen"]),
        h.make_node("Unsqueeze", ["x", "axes_12"], ["x_u"]),
        h.make_node("Gather", ["experts.gate_up_proj", "chosen"], ["gate_up_w"], axis=0),
        h.make_node("MatMul", ["x_u", "gate_up_w"], ["gate_up"]),
        h.make_node("Split", ["gate_up", "halves"], ["gate", "up"], axis=-1),
        h.make_node("Sigmoid", ["gate"], ["gate_s"]),
        h.make_node("Mul", ["gate", "gate_s"], ["silu"]),
        h.make_node("Mul", ["silu", "up"], ["act"]),
        h.make_node("Gather", ["experts.down_proj", "chosen"], ["down_w"], axis=0),
        h.make_node("MatMul", ["act", "down_w"], ["down"]),
        h.make_node("Reshape", ["down", "per_slot"], ["down_r"]),
        h.make_node("Unsqueeze", ["top", "axes_2"], ["top_u"]),
        h.make_node("Mul", ["down_r", "top_u"], ["weighted"]),
        h.make_node("ReduceSum", ["weighted", "axis_1"], ["y"], keepdims=0)]
    inits.append(i64("axis_1", [1]))
    inputs = [h.make_tensor_value_info("x", T.FLOAT, ["tokens", 32])]
    save(model(nodes, inits, inputs), "match-gathered-stacked-experts.onnx")


if __name__ == "__main__":
    quantized_attention()
    linear_attention_without_norms()
    gathered_stacked_experts()
