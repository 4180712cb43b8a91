#!/usr/bin/env python3
"""Writes the regression files of the attention and mixture matching of issue 37 (items 7, 10 and
12): stacked experts gathered by the router's TopK, linear attention in a model without norms, and
dynamically quantized attention whose weights are graph inputs. Run with /usr/bin/python3; the
output is deterministic, into tests/fuzz/regressions/.

Each file was read wrong before its fix (0 blocks, or no mixture, its parameters in "everything
else"); tests/fuzz_replay_test.cpp replays each under the hostile-file bound, and the figures are
checked by hand-worked tests: tests/experts_test.cpp (item 7), tests/mixers_test.cpp... see each
function's docstring for its test.
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


if __name__ == "__main__":
    quantized_attention()
