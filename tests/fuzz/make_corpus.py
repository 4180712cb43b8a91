#!/usr/bin/env python3
"""Writes the fuzz seed corpus and the hand-made regression files (run with /usr/bin/python3).

corpus/       the samples with their weight payloads dropped (counts still come from dims, and
              the graph structure is what the fuzzers mutate), plus small edge cases;
regressions/  one file per hostile case that crashed or blew up an earlier build, rebuilt by hand.
              Crashes found by fuzzing are added here too, minimized, under the names libFuzzer
              gives them.

The output is deterministic: running it twice gives the same bytes.
"""
import glob
import json
import os
import struct

import onnx
from onnx import TensorProto as T
from onnx import helper as h

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "samples")
I64MIN, I64MAX = -(2**63), 2**63 - 1


def save(model, folder, name):
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(model.SerializeToString())


def model(nodes, inits, inputs=None, outputs=None):
    g = h.make_graph(nodes, "g", inputs or [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 32])],
                     outputs or [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 14), h.make_opsetid("com.microsoft", 1)],
                     producer_name="headcount-fuzz")
    return m


def ints(name, v):
    return h.make_tensor(name, T.INT64, [len(v)], v)


def zeros(name, shape):
    """A float32 weight with dims and no payload: counts come from dims, files stay small."""
    return onnx.TensorProto(name=name, data_type=T.FLOAT, dims=shape)


def slim(m):
    """Drops payloads over 64 bytes: weights keep their dims, shape constants their values."""
    def strip(t):
        if len(t.raw_data) > 64:
            t.ClearField("raw_data")
        if len(t.float_data) > 16:
            t.ClearField("float_data")

    def walk_graph(g):
        for t in g.initializer:
            strip(t)
        for n in g.node:
            for a in n.attribute:
                if a.HasField("t"):
                    strip(a.t)
                if a.HasField("g"):
                    walk_graph(a.g)
                for sg in a.graphs:
                    walk_graph(sg)
    walk_graph(m.graph)
    return m


def attention_layer(split_sizes, tq, tk, extra_inits=()):
    """An unfused self-attention core fed by one packed [32, 96] projection and a Split."""
    nodes = [h.make_node("MatMul", ["x", "wqkv"], ["qkv"]),
             h.make_node("Split", ["qkv", "sp"], ["q", "k", "v"], axis=-1),
             h.make_node("Reshape", ["q", "tq"], ["q4"]), h.make_node("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]),
             h.make_node("Reshape", ["k", "tk"], ["k4"]), h.make_node("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
             h.make_node("Reshape", ["v", "tk"], ["v4"]), h.make_node("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
             h.make_node("MatMul", ["qt", "kt"], ["s"]), h.make_node("Softmax", ["s"], ["p"], axis=-1),
             h.make_node("MatMul", ["p", "vt"], ["y"])]
    return model(nodes, [zeros("wqkv", [32, 96]), ints("sp", split_sizes), ints("tq", tq), ints("tk", tk),
                         *extra_inits])


def regressions():
    # A Reshape target computed as INT64_MIN / -1: the floor division in the shape evaluator trapped.
    save(model([h.make_node("Div", ["a", "b"], ["t"]), h.make_node("Reshape", ["x", "t"], ["y"])],
               [ints("a", [I64MIN]), ints("b", [-1])]), "regressions", "div-int64-min-by-minus-one.onnx")
    # GroupQueryAttention with a packed query and kv_num_heads = INT64_MAX: 2 + 2·h_kv wrapped to 0
    # and was used as a divisor.
    save(model([h.make_node("MatMul", ["x", "w"], ["qkv"]),
                h.make_node("GroupQueryAttention", ["qkv", "", ""], ["y"], domain="com.microsoft", num_heads=2,
                            kv_num_heads=I64MAX)], [zeros("w", [32, 96])]), "regressions", "gqa-kv-heads-int64-max.onnx")
    # A Split that gives Q no features: the head size worked out to 0 and divided K's width.
    save(attention_layer([0, 48, 48], [0, 0, 4, -1], [0, 0, 4, -1]), "regressions", "head-size-zero.onnx")
    # A packed QKV Split with sizes [-32, 32, 96]: they add up to the axis, but read as offsets
    # they gave Q -32:0, K -32:0 and V 0:96 of the packed [32, 96] weight, shares that added up to
    # more than the tensor holds.
    save(attention_layer([-32, 32, 96], [0, 0, 4, 8], [0, 0, 4, 8]), "regressions", "split-sizes-negative.onnx")
    # Float shape constants far outside int64: the float-to-int cast was undefined behaviour.
    save(model([h.make_node("Reshape", ["x", "t"], ["y"])], [h.make_tensor("t", T.FLOAT, [2], [1e30, -1e30])]),
         "regressions", "float-shape-out-of-range.onnx")
    # Concat of two declared [INT64_MAX] inputs: the output dim overflowed when summed.
    save(model([h.make_node("Concat", ["a", "b"], ["y"], axis=0)], [],
               inputs=[h.make_tensor_value_info("a", T.FLOAT, [I64MAX]), h.make_tensor_value_info("b", T.FLOAT, [I64MAX])]),
         "regressions", "concat-sum-overflow.onnx")
    # Tile by INT64_MAX: the output dim overflowed when multiplied.
    save(model([h.make_node("Tile", ["a", "r"], ["y"])], [ints("r", [I64MAX])],
               inputs=[h.make_tensor_value_info("a", T.FLOAT, [4])]), "regressions", "tile-product-overflow.onnx")
    # Split sizes of INT64_MAX on a packed projection: their sum overflowed.
    save(attention_layer([I64MAX, I64MAX, I64MAX], [0, 0, 4, 8], [0, 0, 4, 8]), "regressions", "split-sizes-overflow.onnx")
    # A 4-bit Q weight [1, 2^31, 2^31, 2] kept as external data (dims only): its 2^63 elements
    # fit in 64 bits, but its output features, 2^31 · 2^31 · 2, overflowed int64 when multiplied.
    w = onnx.TensorProto(name="wbig", data_type=21, dims=[1, 2**31, 2**31, 2], data_location=T.EXTERNAL)
    w.external_data.add(key="location", value="absent.bin")
    core = [h.make_node("MatMul", ["x", "wbig"], ["q"]), h.make_node("MatMul", ["x", "wk"], ["k"]),
            h.make_node("MatMul", ["x", "wv"], ["v"]), h.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
            h.make_node("MatMul", ["q", "kt"], ["s"]), h.make_node("Softmax", ["s"], ["p"], axis=-1),
            h.make_node("MatMul", ["p", "v"], ["y"])]
    save(model(core, [w, zeros("wk", [32, 32]), zeros("wv", [32, 32])]), "regressions",
         "weight-output-product-overflow.onnx")
    # heads · d_v in the width rule: GroupQueryAttention with num_heads = 2^62 over one K/V head
    # of 32 features.
    gqa = [h.make_node("MatMul", ["x", "wq"], ["q"]), h.make_node("MatMul", ["x", "wk"], ["k"]),
           h.make_node("MatMul", ["x", "wv"], ["v"]),
           h.make_node("GroupQueryAttention", ["q", "k", "v"], ["y"], domain="com.microsoft", num_heads=2**62,
                       kv_num_heads=1)]
    save(model(gqa, [zeros("wq", [32, 32]), zeros("wk", [32, 32]), zeros("wv", [32, 32])]), "regressions",
         "heads-times-head-size-overflow.onnx")
    # 60 nested If subgraphs with 2,000-byte node names and 40,000 empty subgraphs at the bottom:
    # every scope copied its parent's path (4.8 GB, 14 s for a 200 KB file).
    name = "n" * 2000
    inner = h.make_node("Loop", [], ["o"], name=name)
    a = inner.attribute.add(name="bodies", type=onnx.AttributeProto.GRAPHS)
    for _ in range(40000):
        a.graphs.add()
    g = h.make_graph([inner], "g", [], [])
    for _ in range(60):
        n = h.make_node("If", ["c"], ["o"], name=name)
        at = n.attribute.add(name="then_branch", type=onnx.AttributeProto.GRAPH)
        at.g.CopyFrom(g)
        g = h.make_graph([n], "g", [], [])
    save(h.make_model(g, opset_imports=[h.make_opsetid("", 14)]), "regressions", "nested-subgraph-scopes.onnx")
    # 45,000 Softmaxes behind a 40-step doubling chain of Adds (1 MB): each looked 512 nodes back,
    # 2.7 s in all; the model-wide visit budget makes it linear.
    nodes, v = [], "x"
    for i in range(40):
        nodes.append(h.make_node("Add", [v, v], [f"a{i}"]))
        v = f"a{i}"
    nodes += [h.make_node("Softmax", [v], [f"s{i}"]) for i in range(45000)]
    save(model(nodes, []), "regressions", "softmax-fan-doubling-chain.onnx")
    # 30,000 MatMuls behind the same chain (770 kB): the feed-forward scan looked 256 nodes back
    # from each, 1.9 s in all.
    nodes = nodes[:40] + [h.make_node("MatMul", [v, "w"], [f"m{i}"]) for i in range(30000)]
    save(model(nodes, [zeros("w", [32, 32])]), "regressions", "matmul-fan-doubling-chain.onnx")
    hostile_shapes()


def hostile_shapes():
    """Small files that cost time or memory out of proportion to their size (issue 30): each is
    linear in the file now, and the README's bound is measured over them."""
    # An external-data location of 16,000 components (32 kB of "a/"): the path was rebuilt from
    # the folder component by component, 7.6 s.
    w = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[32, 32], data_location=T.EXTERNAL)
    w.external_data.add(key="location", value="a/" * 16000 + "w.bin")
    save(model([h.make_node("MatMul", ["x", "w"], ["y"])], [w]), "regressions",
         "external-location-16000-components.onnx")
    # A graph input of rank 20,000 (dims without values) read by 2,000 Relus (75 kB): each
    # output's dims record was a copy of the input's, 621 MiB.
    x = h.make_tensor_value_info("x", T.FLOAT, None)
    x.type.tensor_type.shape.dim.extend([onnx.TensorShapeProto.Dimension()] * 20000)
    save(model([h.make_node("Relu", ["x"], [f"r{i}"]) for i in range(2000)], [], inputs=[x]), "regressions",
         "rank-20000-input-2000-readers.onnx")
    # A weight of rank 20,000 read by 5,000 Relus (130 kB): its dims were rebuilt for every
    # reader and copied into every output's record, 1.5 GiB.
    save(model([h.make_node("Relu", ["w"], [f"r{i}"]) for i in range(5000)],
               [onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[1] * 20000)]), "regressions",
         "weight-rank-20000-5000-readers.onnx")
    # Gather(g, g) 40 times from a [2, 2] input (1 kB): each step doubled the rank, toward 2^40
    # dims, until memory ran out.
    nodes, v = [], "x"
    for i in range(40):
        nodes.append(h.make_node("Gather", [v, v], [f"g{i}"]))
        v = f"g{i}"
    save(model(nodes, [], inputs=[h.make_tensor_value_info("x", T.FLOAT, [2, 2])]), "regressions",
         "gather-rank-doubling-chain.onnx")
    # 3,000 Unsqueezes in a chain, each adding 64 axes (90 kB): ranks up to 192,000, 7.5 GiB.
    nodes, v = [], "x"
    for i in range(3000):
        nodes.append(h.make_node("Unsqueeze", [v, "ax"], [f"u{i}"]))
        v = f"u{i}"
    save(model(nodes, [ints("ax", list(range(64)))]), "regressions", "unsqueeze-rank-growth-chain.onnx")
    # A feed-forward MatMul whose output an Add lists 30,000 times (90 kB): the bias search read
    # the Add's 30,000 inputs once for each time it is listed, 2.3 s.
    ffn = [h.make_node("MatMul", ["x", "w1"], ["u"]), h.make_node("Relu", ["u"], ["r"]),
           h.make_node("MatMul", ["r", "w2"], ["m"])]
    save(model(ffn + [h.make_node("Add", ["m"] * 30000, ["y"])], [zeros("w1", [32, 64]), zeros("w2", [64, 32])]),
         "regressions", "add-lists-matmul-output-30000-times.onnx")
    # 20,000 feed-forward MatMuls summed by one Add that also lists the input 100,000 times
    # (870 kB): the same search read the Add's 120,000 inputs once for each of them.
    downs = [h.make_node("MatMul", ["r", "w2"], [f"{i:x}"]) for i in range(20000)]
    save(model(ffn[:2] + downs + [h.make_node("Add", [f"{i:x}" for i in range(20000)] + ["x"] * 100000, ["y"])],
               [zeros("w1", [32, 64]), zeros("w2", [64, 32])]), "regressions", "add-of-20000-feed-forward-outputs.onnx")
    # An Add that lists one weight 100,000 times, read by 20,000 MatMuls (760 kB): each MatMul's
    # upstream walk looked at all 100,000 inputs (weights are not followed, so they cost no visits).
    wide = [h.make_node("Add", ["b"] * 100000, ["a"])]
    wide += [h.make_node("MatMul", ["a", "w"], [f"m{i:x}"]) for i in range(20000)]
    save(model(wide, [zeros("b", [32]), zeros("w", [32, 32])]), "regressions", "add-lists-weight-100000-times.onnx")


def corpus():
    for path in sorted(glob.glob(os.path.join(SAMPLES, "*.onnx"))):
        m = onnx.load(path, load_external_data=False)
        save(slim(m), "corpus", "sample-" + os.path.basename(path))
    # Small edge cases the samples do not have.
    save(model([h.make_node("MatMul", ["x", "w"], ["qkv"]),
                h.make_node("GroupQueryAttention", ["qkv", "", ""], ["y"], domain="com.microsoft", num_heads=4,
                            kv_num_heads=2)], [zeros("w", [32, 64])]), "corpus", "gqa-packed.onnx")
    save(model([h.make_node("Attention", ["x", "w", "b"], ["a"], domain="com.microsoft", num_heads=4),
                h.make_node("MatMul", ["a", "wo"], ["y"])],
               [zeros("w", [32, 96]), zeros("b", [96]), zeros("wo", [32, 32])]), "corpus", "attention-fused.onnx")
    save(attention_layer([32, 32, 32], [0, 0, 4, 8], [0, 0, 4, 8]), "corpus", "attention-split.onnx")
    shape_nodes = [h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "i0"], ["b"], axis=0),
                   h.make_node("Unsqueeze", ["b", "ax"], ["bu"]),
                   h.make_node("Concat", ["bu", "rest"], ["t"], axis=0), h.make_node("Reshape", ["x", "t"], ["y"])]
    save(model(shape_nodes, [h.make_tensor("i0", T.INT64, [], [0]), ints("ax", [0]), ints("rest", [-1, 4, 8])]),
         "corpus", "runtime-shape.onnx")


def safetensors(tensors):
    """A safetensors file (an 8-byte header length, the JSON header, zeros for the data) of
    {name: (dtype, shape, bytes per element)}, in name order."""
    header, offset = {}, 0
    for name in sorted(tensors):
        dtype, shape, size = tensors[name]
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(offset)


def checkpoints():
    """Seeds for the checkpoint readers, which the harnesses reach by the files' first bytes."""
    layer = {}
    for i in range(2):
        p = f"model.layers.{i}."
        layer.update({p + "self_attn.q_proj.weight": ("BF16", [32, 32], 2), p + "self_attn.k_proj.weight": ("BF16", [16, 32], 2),
                      p + "self_attn.v_proj.weight": ("BF16", [16, 32], 2), p + "self_attn.o_proj.weight": ("BF16", [32, 32], 2),
                      p + "mlp.gate_proj.weight": ("F16", [64, 32], 2), p + "mlp.up_proj.weight": ("F16", [64, 32], 2),
                      p + "mlp.down_proj.weight": ("F16", [32, 64], 2), p + "input_layernorm.weight": ("F32", [32], 4)})
    layer.update({"model.embed_tokens.weight": ("F32", [100, 32], 4), "lm_head.weight": ("F32", [100, 32], 4)})
    with open(os.path.join(HERE, "corpus", "checkpoint-llama.safetensors"), "wb") as f:
        f.write(safetensors(layer))
    gpt2 = {"h.0.attn.c_attn.weight": ("F32", [16, 48], 4), "h.0.attn.c_attn.bias": ("F32", [48], 4),
            "h.0.attn.c_proj.weight": ("F32", [16, 16], 4), "wte.weight": ("F32", [10, 16], 4)}
    with open(os.path.join(HERE, "corpus", "checkpoint-gpt2.safetensors"), "wb") as f:
        f.write(safetensors(gpt2))


def hostile_safetensors():
    """One regression file per hostile safetensors header (issue 29's list), replayed by the suite."""
    def header(h, data=0):
        text = h.encode()
        return struct.pack("<Q", len(text)) + text + bytes(data)
    t = '"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
    cases = {
        "header-length-2-63": struct.pack("<Q", 2**63) + b"{}",
        "header-length-past-the-end": struct.pack("<Q", 100) + b"{}",
        "json-nested-a-million-deep": struct.pack("<Q", 1000005) + b'{"t":' + b"[" * 1000000,
        "offsets-past-the-end": header("{" + t + "}", 4),
        "overlapping-offsets": header('{"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
                                      '"u":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', 12),
        "unknown-dtype": header('{"t":{"dtype":"Q9","shape":[2],"data_offsets":[0,8]}}', 8),
        "dims-product-overflows": header('{"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}}', 8),
        "offset-2-64-minus-1": header('{"t":{"dtype":"F32","shape":[2],"data_offsets":[18446744073709551607,18446744073709551615]}}', 8),
    }
    for name, data in cases.items():
        with open(os.path.join(HERE, "regressions", "safetensors-" + name + ".safetensors"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    regressions()
    corpus()
    checkpoints()
    hostile_safetensors()
