#!/usr/bin/env python3
"""Writes the regression files for the graph analyses that read values (issue 39, items 9-13):
the mask evaluator, buffers and folded constants, routers and mixers. Run with /usr/bin/python3;
the output is deterministic (the same bytes on every run), into tests/fuzz/regressions/.

Each file is under 1 MB and was, before its fix, slow (seconds to minutes), large (hundreds of
MB) or wrong (a false buffer); tests/fuzz_replay_test.cpp replays each under the hostile-file
bound, and tests/budget_test.cpp checks the wrong numbers.
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


def model(nodes, inits, inputs, opset=14):
    g = h.make_graph(nodes, "g", inputs, [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="headcount-cases-graph")


def dataless(name, shape, dtype=T.FLOAT):
    """A weight with dims and no payload: counts come from dims, the file stays small."""
    return onnx.TensorProto(name=name, data_type=dtype, dims=shape)


def floats(name, shape, values):
    return h.make_tensor(name, T.FLOAT, shape, struct.pack("<%df" % len(values), *values), raw=True)


def i64(name, values, shape=None):
    return h.make_tensor(name, T.INT64, [len(values)] if shape is None else shape, values)


def seq_input():
    return [h.make_tensor_value_info("x", T.FLOAT, [1, "seq", 32])]


def positions(prefix=""):
    """pos = Range(0, seq, 1) over the sequence a Shape of x reads (opset 11 and later)."""
    p = prefix
    nodes = [h.make_node("Shape", ["x"], [p + "shape"]),
             h.make_node("Gather", [p + "shape", "c_one"], [p + "seq"], axis=0),
             h.make_node("Range", ["c_zero", p + "seq", "c_one"], [p + "pos"])]
    return nodes, p + "pos"


POSITION_CONSTANTS = [i64("c_zero", [0], []), i64("c_one", [1], []), floats("f_zero", [], [0.0]),
                      floats("f_neg", [], [-1e9])]


def band(i, j, window, out, prefix=""):
    """out = 0 where 0 <= i - j < window, -1e9 elsewhere (i, j broadcast), with opset-11 ops."""
    p = prefix
    return [h.make_node("Sub", [i, j], [p + "diff"]),
            h.make_node("Less", [p + "diff", "c_zero"], [p + "before"]),
            h.make_node("Not", [p + "before"], [p + "after"]),
            h.make_node("Less", [p + "diff", p + "w"], [p + "near"]),
            h.make_node("And", [p + "after", p + "near"], [p + "allowed"]),
            h.make_node("Where", [p + "allowed", "f_zero", "f_neg"], [out])], [i64(p + "w", [window], [])]


def attention(mask, prefix="", x="x"):
    """An unfused attention core over x [1, seq, 32] whose scores get `mask` added."""
    p = prefix
    nodes = [h.make_node("MatMul", [x, p + "wq"], [p + "q"]), h.make_node("MatMul", [x, p + "wk"], [p + "k"]),
             h.make_node("MatMul", [x, p + "wv"], [p + "v"]),
             h.make_node("Transpose", [p + "k"], [p + "kt"], perm=[0, 2, 1]),
             h.make_node("MatMul", [p + "q", p + "kt"], [p + "s"]),
             h.make_node("Add", [p + "s", mask], [p + "sm"]),
             h.make_node("Softmax", [p + "sm"], [p + "pr"], axis=-1),
             h.make_node("MatMul", [p + "pr", p + "v"], [p + "ctx"]),
             h.make_node("MatMul", [p + "ctx", p + "wo"], [p + "out"])]
    inits = [dataless(p + n, [32, 32]) for n in ("wq", "wk", "wv", "wo")]
    return nodes, inits


def unsqueezed(pos, opset_attr=False):
    """i = pos[:, None], j = pos[None, :]."""
    if opset_attr:
        return [h.make_node("Unsqueeze", [pos], ["i"], axes=[1]), h.make_node("Unsqueeze", [pos], ["j"], axes=[0])], []
    return [h.make_node("Unsqueeze", [pos, "ax1"], ["i"]), h.make_node("Unsqueeze", [pos, "ax0"], ["j"])], \
        [i64("ax1", [1]), i64("ax0", [0])]


def finish(nodes, inits, out, opset=14, extra_out=()):
    nodes = nodes + [h.make_node("Identity", [out], ["y"])]
    return model(nodes, inits, seq_input(), opset)


def where_chain_under_div(links):
    """Item 9: `links` Where(true, p, p) over the positions, then a Div: the evaluator's test of
    whether the Div is an integer division followed both branches of every Where (2^links)."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS) + [h.make_tensor("c_true", T.BOOL, [], [True])]
    p = pos
    for k in range(links):
        nodes.append(h.make_node("Where", ["c_true", p, p], ["p%d" % k]))
        p = "p%d" % k
    more, axes = unsqueezed(p)
    nodes += more
    inits += axes
    nodes.append(h.make_node("Div", ["i", "c_one"], ["idiv"]))
    more, w = band("idiv", "j", 4, "mask")
    nodes += more
    inits += w
    core, weights = attention("mask")
    return finish(nodes + core, inits + weights, "out")


def max_chain(links):
    """Item 9: `links` Max(p, p) over the positions (the positions again): the evaluator followed
    both operands of every link for every element read (2^links)."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS)
    p = pos
    for k in range(links):
        nodes.append(h.make_node("Max", [p, p], ["p%d" % k]))
        p = "p%d" % k
    more, axes = unsqueezed(p)
    nodes += more
    inits += axes
    more, w = band("i", "j", 4, "mask")
    nodes += more
    inits += w
    core, weights = attention("mask")
    return finish(nodes + core, inits + weights, "out")


def concat_of_parts(parts, window):
    """Item 10: a mask Concat of `parts` parts along the rows, all but the last empty: every
    element read walked every part before it and copied its dims."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS)
    more, axes = unsqueezed(pos)
    nodes += more
    inits += axes
    more, w = band("i", "j", window, "real")
    nodes += more
    inits += w
    inits.append(dataless("e", [0, 1 << 20]))
    nodes.append(h.make_node("Concat", ["e"] * (parts - 1) + ["real"], ["mask"], axis=0))
    core, weights = attention("mask")
    return finish(nodes + core, inits + weights, "out")


def unsqueeze_axes(count):
    """Item 10: the band mask unsqueezed by `count` attribute axes (opset 11): each element read
    scanned every axis for every output axis, count^2."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS)
    more, _ = unsqueezed(pos, opset_attr=True)
    nodes += more
    more, w = band("i", "j", 4, "real")
    nodes += more
    inits += w
    nodes.append(h.make_node("Unsqueeze", ["real"], ["mask"], axes=list(range(count))))
    core, weights = attention("mask")
    return finish(nodes + core, inits + weights, "out", opset=11)


def shared_concat(masks, parts):
    """Item 10: `masks` blocks, each with a mask of its own (a Neg of a Neg) over one shared
    Concat of `parts` parts (the band first, then empty parts): the Concat's dims were worked out
    again for every mask."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS)
    more, axes = unsqueezed(pos)
    nodes += more
    inits += axes
    more, w = band("i", "j", 4, "real")
    nodes += more
    inits += w
    inits.append(dataless("e", [0, 1 << 20]))
    nodes.append(h.make_node("Concat", ["real"] + ["e"] * (parts - 1), ["shared"], axis=0))
    for b in range(masks):
        p = "b%d_" % b
        nodes += [h.make_node("Neg", ["shared"], [p + "n"]), h.make_node("Neg", [p + "n"], [p + "mask"])]
        core, weights = attention(p + "mask", p)
        nodes += core
        inits += weights
    nodes.append(h.make_node("Concat", ["b%d_out" % b for b in range(masks)], ["all"], axis=0))
    return finish(nodes, inits, "all")


def stored_mask(blocks, side):
    """Item 10: one stored boolean band mask [1, 1, side, side] that selects the scores in `blocks`
    blocks (Where(band, scores, -1e9)): it was read in full twice per block."""
    values = [0 <= i - j < 8 for i in range(side) for j in range(side)]
    band = onnx.TensorProto(name="band", data_type=T.BOOL, dims=[1, 1, side, side], raw_data=bytes(values))
    inits = [band, floats("f_neg", [], [-1e9])]
    nodes = []
    for b in range(blocks):
        p = "b%d_" % b
        core, weights = attention("band", p)
        for n in core:  # Add(scores, band) -> Where(band, scores, -1e9)
            if n.op_type == "Add":
                n.op_type = "Where"
                n.input[:] = ["band", p + "s", "f_neg"]
        nodes += core
        inits += weights
    nodes.append(h.make_node("Concat", ["b%d_out" % b for b in range(blocks)], ["all"], axis=0))
    return finish(nodes, inits, "all")


def long_window_from_positions(window):
    """The budget: a band of `window` keys computed from positions, read key by key over a row of
    2^20: more steps than the audit's value budget holds, so the evaluator stops and says so."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS)
    more, axes = unsqueezed(pos)
    nodes += more
    inits += axes
    more, w = band("i", "j", window, "mask")
    nodes += more
    inits += w
    core, weights = attention("mask")
    return finish(nodes + core, inits + weights, "out")


def causal_from_positions():
    """Item 10: one ordinary causal mask, j <= i, computed from positions."""
    nodes, pos = positions()
    inits = list(POSITION_CONSTANTS)
    more, axes = unsqueezed(pos)
    nodes += more
    inits += axes
    nodes += [h.make_node("Sub", ["i", "j"], ["diff"]), h.make_node("Less", ["diff", "c_zero"], ["before"]),
              h.make_node("Where", ["before", "f_neg", "f_zero"], ["mask"])]
    core, weights = attention("mask")
    return finish(nodes + core, inits + weights, "out")


def alibi_declared(count):
    """Item 11: `count` data-less initializers declared [2^25, 2] read by an Add: the ALiBi check
    zero-filled a vector of 2^25 heads for each before it read a value."""
    inits = [dataless("a%d" % k, [1 << 25, 2]) for k in range(count)]
    nodes = [h.make_node("Add", ["x", "a%d" % k], ["s%d" % k]) for k in range(count)]
    nodes.append(h.make_node("Concat", ["s%d" % k for k in range(count)], ["all"], axis=0))
    return finish(nodes, inits, "all")


def topks_over_products(topks, products):
    """Item 12: `topks` TopKs over one router and `products` products reading the router's input:
    every TopK looked up every product's down projection (cached lookups spent no budget)."""
    inits = [dataless("wr", [32, 8]), i64("k", [2])]
    nodes = [h.make_node("MatMul", ["x", "wr"], ["r"]), h.make_node("Softmax", ["r"], ["sm"], axis=-1)]
    for t in range(topks):
        nodes.append(h.make_node("TopK", ["sm", "k"], ["tv%d" % t, "ti%d" % t]))
    for p in range(products):
        inits.append(dataless("w%d" % p, [32, 4]))
        nodes.append(h.make_node("MatMul", ["x", "w%d" % p], ["u%d" % p]))
    nodes.append(h.make_node("Concat", ["u%d" % p for p in range(products)] + ["tv%d" % t for t in range(topks)],
                             ["all"], axis=-1))
    return finish(nodes, inits, "all")


def mixer_layers(layers, products):
    """Item 12: `layers` linear-attention layers (a CumSum of one input projection) whose sublayer
    holds `products` more products (one shared weight), each added to the layer's input (a residual
    exit of its own): the role of each product was a reachability walk to every exit."""
    inits = [i64("axis", [1], []), dataless("w", [32, 32]), dataless("ln", [32])]
    nodes = []
    x = "x"
    for l in range(layers):
        p = "%d" % l
        nodes += [h.make_node("LayerNormalization", [x, "ln"], [p + "n"], axis=-1),
                  h.make_node("MatMul", [p + "n", "w"], [p + "u"]), h.make_node("CumSum", [p + "u", "axis"], [p + "cs"]),
                  h.make_node("MatMul", [p + "cs", "w"], [p + "c"])]
        for k in range(products):  # each its own residual exit
            nodes += [h.make_node("MatMul", [p + "u", "w"], [p + "v%d" % k]),
                      h.make_node("Add", [x, p + "v%d" % k], [p + "e%d" % k])]
        nodes.append(h.make_node("Add", [x, p + "c"], [p + "res"]))
        x = p + "res"
    return finish(nodes, inits, x, opset=17)


def exp_read_parameters(count):
    """Item 12: `count` two-element parameters each read by an Exp: each was compared with every
    other parameter of two elements."""
    inits, nodes = [], []
    for k in range(count):
        inits.append(floats("a%d" % k, [2], [0.5 + k * 1e-3, 0.25]))
        nodes.append(h.make_node("Exp", ["a%d" % k], ["e%d" % k]))
    return finish(nodes, inits, "e0")


def exp_read_look_alikes(count):
    """The budget: `count` Exp-read parameters [0.5, k] and `count` tensors [exp(0.5), -1] that
    start as a folded exp would and differ after: every pair is a candidate the index cannot
    tell apart, so the comparisons spend the budget, and the folded-constant search stops."""
    e = 1.6487212707001282  # exp(0.5)
    inits, nodes = [], []
    for k in range(count):
        inits += [floats("a%d" % k, [2], [0.5, float(k)]), floats("t%d" % k, [2], [e, -1.0])]
        nodes += [h.make_node("Exp", ["a%d" % k], ["e%d" % k]), h.make_node("Mul", ["e%d" % k, "t%d" % k], ["m%d" % k])]
    return finish(nodes, inits, "m0")


def a_log_overflow():
    """Item 13: A_log [64, 64] of 1000s read by an Exp (exp overflows to +inf), and two real MLP
    weights [64, 64]: the test "computed from A_log" held for any tensor when exp was +inf."""
    def weights(seed):
        return [((i * 7919 + seed * 104729) % 2001 - 1000) / 10000.0 for i in range(64 * 64)]
    inits = [floats("A_log", [64, 64], [1000.0] * (64 * 64)), floats("mlp.up", [64, 64], weights(1)),
             floats("mlp.down", [64, 64], weights(2))]
    nodes = [h.make_node("Exp", ["A_log"], ["A"]), h.make_node("MatMul", ["x", "mlp.up"], ["u"]),
             h.make_node("Relu", ["u"], ["r"]), h.make_node("MatMul", ["r", "mlp.down"], ["d"]),
             h.make_node("MatMul", ["d", "A"], ["out"])]
    g = h.make_graph(nodes + [h.make_node("Identity", ["out"], ["y"])], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 64])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 14)], producer_name="headcount-cases-graph")


def main():
    save(where_chain_under_div(24), "mask-where-chain-24-under-div.onnx")
    save(max_chain(30), "mask-max-chain-30.onnx")
    save(concat_of_parts(131072, 256), "mask-concat-131072-parts.onnx")
    save(unsqueeze_axes(16000), "mask-unsqueeze-16000-axes.onnx")
    save(shared_concat(700, 150000), "mask-shared-concat-700-masks.onnx")
    save(stored_mask(750, 800), "mask-stored-750-blocks.onnx")
    save(causal_from_positions(), "mask-causal-from-positions.onnx")
    save(long_window_from_positions(131071), "mask-window-131071-spends-the-budget.onnx")
    save(alibi_declared(200), "alibi-declared-200-of-2-25-heads.onnx")
    save(topks_over_products(10000, 10000), "router-10000-topks-10000-products.onnx")
    save(mixer_layers(2, 8000), "mixer-2-layers-8000-products.onnx")
    save(exp_read_parameters(20000), "exp-read-20000-parameters.onnx")
    save(exp_read_look_alikes(8000), "exp-read-8000-sources-8000-look-alikes.onnx")
    save(a_log_overflow(), "a-log-overflow-mlp-weights.onnx")


if __name__ == "__main__":
    main()
