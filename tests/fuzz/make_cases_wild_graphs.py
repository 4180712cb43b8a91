#!/usr/bin/env python3
"""Writes the regression files for the graph cases of issue 37 ("Truth in the wild"), items 8, 9,
11, 13 and 14. Run with /usr/bin/python3; the output is deterministic (the same bytes on every run),
into tests/fuzz/regressions/.

Each file is under 1 MB; tests/fuzz_replay_test.cpp replays each under the hostile-file bound
through every format and gate, and tests/wild_graphs_test.cpp checks the counts of the files of
items 8-13 (worked by hand in the docstrings here).
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


OPSETS = [h.make_opsetid("", 17)]


def floats(name, shape, values):
    return h.make_tensor(name, T.FLOAT, shape, struct.pack("<%df" % len(values), *values), raw=True)


def dataless(name, shape):
    """A weight with dims and no payload: counts come from dims, the file stays small."""
    return onnx.TensorProto(name=name, data_type=T.FLOAT, dims=shape)


def i64(name, values, shape=None):
    return h.make_tensor(name, T.INT64, [len(values)] if shape is None else shape, values)


def weights(name, rows, cols, seed):
    """A [rows, cols] float tensor of small varied values (a trained-looking weight)."""
    return floats(name, [rows, cols], [((seed * 7919 + i * 104729) % 2001 - 1000) * 1e-5 for i in range(rows * cols)])


def linear(x, p, rows, cols, seed, inits):
    """x W + b: W [rows, cols], b [cols] (rows x cols + cols parameters)."""
    inits += [weights(p + ".weight", rows, cols, seed), weights(p + ".bias", 1, cols, seed + 1)]
    inits[-1].dims[:] = [cols]
    return [h.make_node("MatMul", [x, p + ".weight"], [p + "/mm"]), h.make_node("Add", [p + "/mm", p + ".bias"], [p + "/out"])]


def block(x, p, inits, mask=None, q_norm=None, k_norm=None, scale="scale"):
    """One attention block on x [1, 8, 32]: Q, K, V, O of 32 x 32 + 32 (1,056 each, 4,224), 4
    heads of 8; an optional LayerNormalization over head_dim on Q and K (q_norm, k_norm: its
    scale), the scores divided by `scale` and `mask` added. Returns (nodes, output)."""
    nodes = []
    heads = {}
    for i, role in enumerate("qkvo"[:3]):
        nodes += linear(x, "%s.%s" % (p, role), 32, 32, 10 * i + sum(map(ord, p)), inits)
        nodes.append(h.make_node("Reshape", ["%s.%s/out" % (p, role), "split"], ["%s/%s4" % (p, role)]))
        value = "%s/%s4" % (p, role)
        norm = {"q": q_norm, "k": k_norm}.get(role)
        if norm:
            nodes.append(h.make_node("LayerNormalization", [value, norm], ["%s/%s_norm" % (p, role)], axis=-1))
            value = "%s/%s_norm" % (p, role)
        perm = [0, 2, 3, 1] if role == "k" else [0, 2, 1, 3]
        nodes.append(h.make_node("Transpose", [value], ["%s/%sh" % (p, role)], perm=perm))
        heads[role] = "%s/%sh" % (p, role)
    nodes += [h.make_node("MatMul", [heads["q"], heads["k"]], [p + "/scores"]),
              h.make_node("Div", [p + "/scores", scale], [p + "/scaled"])]
    scores = p + "/scaled"
    if mask:
        nodes.append(h.make_node("Add", [scores, mask], [p + "/masked"]))
        scores = p + "/masked"
    nodes += [h.make_node("Softmax", [scores], [p + "/probs"], axis=-1),
              h.make_node("MatMul", [p + "/probs", heads["v"]], [p + "/ctx"]),
              h.make_node("Transpose", [p + "/ctx"], [p + "/ctx_t"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", [p + "/ctx_t", "merge"], [p + "/ctx_r"])]
    nodes += linear(p + "/ctx_r", p + ".o", 32, 32, 40 + sum(map(ord, p)), inits)
    return nodes, p + ".o/out"


def decoder(layers, inits, before=(), **kw):
    inits += [i64("split", [0, 0, 4, 8]), i64("merge", [0, 0, 32])]
    nodes, x = list(before), "x"
    for i in range(layers):
        more, x = block(x, "layers.%d" % i, inits, **kw)
        nodes += more
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 32])],
                     [h.make_tensor_value_info(x, T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=OPSETS, producer_name="headcount-cases-wild-graphs")


def trilu_masks():
    """Item 8: two blocks (2 x 4,224 = 8,448) whose scores get torch.triu(torch.full((8, 8), -1e9), 1)
    added, the fill a [8, 8] buffer (64) read by Trilu; the score scale a [] 2.828427 = sqrt(8) (1).
    Stored 8,448 + 64 + 1 = 8,513; the framework counts 8,448."""
    inits = [floats("mask_fill", [8, 8], [-1e9] * 64), i64("one", [1], []), floats("scale", [], [8 ** 0.5])]
    before = [h.make_node("Trilu", ["mask_fill", "one"], ["causal"], upper=1)]
    return decoder(2, inits, before, mask="causal")


def merged_qk_norms():
    """Item 9: two blocks whose q_norm and k_norm (LayerNormalization over head_dim 8, scale only)
    all read the one initializer 'qk_norm' [8] of ones, as torch's exporter merges equal
    parameters: layers.0's q_norm directly, the other three through an Identity each. Each block:
    4,224 + 8 (q_norm) + 8 (k_norm) = 4,240. Stored 2 x 4,224 + 8 + 1 (the scale) = 8,457; the
    framework counts 2 x 4,240 = 8,480 (the scale is no parameter, the three copies are)."""
    inits = [floats("qk_norm", [8], [1.0] * 8), floats("scale", [], [8 ** 0.5])]
    before = [h.make_node("Identity", ["qk_norm"], ["qk_norm_%d" % i]) for i in range(1, 4)]
    model = decoder(2, inits, before, q_norm="qk_norm", k_norm="qk_norm_1")
    uses = iter(["qk_norm", "qk_norm_1", "qk_norm_2", "qk_norm_3"])
    for n in model.graph.node:
        if n.op_type == "LayerNormalization":
            n.input[1] = next(uses)
    return model


def distilbert_small_constants():
    """Item 13: one block (4,224) whose scores are divided by a [1] tensor sqrt(8) (1) and masked as
    DistilBERT does: an attention mask [1, 8] traced into the graph (8) == 0 (a [] tensor, 1) ->
    Where(., -1e9, 0) -> Reshape [1, 1, 1, 8] added. Stored 4,224 + 1 + 8 + 1 = 4,234; the
    framework counts 4,224."""
    inits = [floats("scale", [1], [8 ** 0.5]), floats("attention_mask", [1, 8], [1.0] * 6 + [0.0] * 2),
             floats("zero", [], [0.0]), i64("mask_shape", [1, 1, 1, 8])]
    before = [h.make_node("Equal", ["attention_mask", "zero"], ["padding"]),
              h.make_node("Constant", [], ["neg"], value=floats("neg_value", [], [-1e9])),
              h.make_node("Constant", [], ["none"], value=floats("none_value", [], [0.0])),
              h.make_node("Where", ["padding", "neg", "none"], ["mask2d"]),
              h.make_node("Reshape", ["mask2d", "mask_shape"], ["mask"])]
    return decoder(1, inits, before, mask="mask")


def paddle_reshape_of_casts():
    """Item 11: x (declared without a shape) -> packed Q/K/V [120, 360] + [360] -> Reshape to
    Concat(Cast(Constant 0), Cast(Slice(Shape(x), 1, 2)), Cast(Constant 3), Cast(Constant 8),
    Cast(Constant 15)), int32 Constants -> Transpose [2, 0, 3, 1, 4] -> Slice + Squeeze pick Q, K
    and V -> scores, Softmax -> Reshape [0, 0, 120] -> O [120, 120] + [120]. Heads 120 / 15 = 8;
    Q, K, V, O 14,520 each: 58,080."""
    inits = [dataless("qkv.weight", [120, 360]), dataless("qkv.bias", [360]), dataless("o.weight", [120, 120]),
             dataless("o.bias", [120]),
             floats("scale", [], [0.25]), i64("from", [1]), i64("to", [2]), i64("axis0", [0]),
             i64("merge", [0, 0, 120])]

    def const(name, v):
        return h.make_node("Constant", [], [name], value=h.make_tensor(name + "_value", T.INT32, [1], [v]))
    nodes = [h.make_node("MatMul", ["x", "qkv.weight"], ["qkv_mm"]), h.make_node("Add", ["qkv_mm", "qkv.bias"], ["qkv"]),
             h.make_node("Shape", ["x"], ["shape"]), h.make_node("Slice", ["shape", "from", "to", "axis0"], ["seq"]),
             const("c0", 0), const("c3", 3), const("c8", 8), const("c15", 15)]
    pieces = ["c0", "seq", "c3", "c8", "c15"]
    nodes += [h.make_node("Cast", [p], [p + "_i64"], to=T.INT64) for p in pieces]
    nodes += [h.make_node("Concat", [p + "_i64" for p in pieces], ["target"], axis=0),
              h.make_node("Reshape", ["qkv", "target"], ["qkv5"]),
              h.make_node("Transpose", ["qkv5"], ["qkv_t"], perm=[2, 0, 3, 1, 4])]
    for i, r in enumerate("qkv"):
        inits += [i64(r + "_from", [i]), i64(r + "_to", [i + 1])]
        nodes += [h.make_node("Slice", ["qkv_t", r + "_from", r + "_to", "axis0"], [r + "5"]),
                  h.make_node("Squeeze", [r + "5", "axis0"], [r])]
    nodes += [h.make_node("Transpose", ["k"], ["k_t"], perm=[0, 1, 3, 2]), h.make_node("MatMul", ["q", "k_t"], ["s"]),
              h.make_node("Mul", ["s", "scale"], ["ss"]), h.make_node("Softmax", ["ss"], ["p"], axis=-1),
              h.make_node("MatMul", ["p", "v"], ["c"]), h.make_node("Transpose", ["c"], ["ct"], perm=[0, 2, 1, 3]),
              h.make_node("Reshape", ["ct", "merge"], ["cr"]), h.make_node("MatMul", ["cr", "o.weight"], ["om"]),
              h.make_node("Add", ["om", "o.bias"], ["y"])]
    x = h.make_tensor_value_info("x", T.FLOAT, None)
    x.type.tensor_type.ClearField("shape")
    g = h.make_graph(nodes, "g", [x], [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=OPSETS, producer_name="headcount-cases-wild-graphs")


def concat_read_by_fused(parts, readers):
    """Item 14: one Concat of `parts` inputs (the graph input x again and again) that `readers`
    MultiHeadAttention nodes take as query, key and value. Each walk back from a fused node went
    through every input of the Concat, building a failure message for each: parts x readers x 3
    steps and strings."""
    nodes = [h.make_node("Concat", ["x"] * parts, ["c"], axis=-1)]
    for r in range(readers):
        nodes.append(h.make_node("MultiHeadAttention", ["c", "c", "c"], ["o%d" % r], domain="com.microsoft",
                                 num_heads=2))
    g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 2])],
                     [h.make_tensor_value_info("o0", T.FLOAT, None)])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.microsoft", 1)],
                        producer_name="headcount-cases-wild-graphs")


def main():
    save(trilu_masks(), "wild-trilu-of-a-filled-mask.onnx")
    save(merged_qk_norms(), "wild-q-and-k-norm-merged.onnx")
    save(paddle_reshape_of_casts(), "wild-reshape-target-of-casts.onnx")
    save(distilbert_small_constants(), "wild-compared-mask-and-divisor.onnx")
    save(concat_read_by_fused(30000, 2000), "concat-30000-inputs-read-by-2000-fused.onnx")


if __name__ == "__main__":
    main()
