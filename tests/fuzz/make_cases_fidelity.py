#!/usr/bin/env python3
"""Writes the export check's hostile case folders (run with /usr/bin/python3, with python3-onnx).

regressions-cases/gguf-q-*/  issue 39, item 1: a GGUF whose blk.0.attn_q.weight is not a matrix
    (one element, rank 1, rank 3), with llama.attention.head_count set, paired by name with an
    export initializer whose values differ. The rotary-row retry indexed the weight's dims as if
    it had two: one element crashed (SIGSEGV), rank 1 read past the dims and said "kept" though
    all 4 values differ, rank 3 compared 2 x 2 of its 8 elements and said "kept" with the last 4
    changed. Each must say "changed" and fail the gate (`diff --fail-on-change`, exit 1). One more
    folder keeps the rotary retry honest where it applies: a [4, 2] Q of one head of 4 rows in
    llama.cpp's order, one value changed, is "changed" in "rotary rows" with 1 element differing.

regressions/duplicate-search-900-look-alike-tensors.onnx  issue 39, item 6 (see look_alikes).

corpus-fidelity/*.pair  the seed corpus of the fuzz_fidelity harness (fidelity_target.h): each
    file is a 4-byte little-endian length N, an ONNX export of N bytes, then its checkpoint
    (safetensors or GGUF): samples/llama_tiny.onnx with llama_tiny.gguf and llama_tiny.safetensors,
    the case folders' pairs above, and small safetensors pairs in each layout the check pairs
    (as stored at ranks 0 to 4, transposed, reshaped, packed rows and columns), one value changed.

Every tensor is float32 and tiny; the output is deterministic (running twice gives the same bytes).
"""
import os
import shutil
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
U32, STR = 4, 8


def string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(tensors, heads=1, kv_heads=1):
    """A llama GGUF of one block: tensors [(name, float32 array in the model's own dims)], F32."""
    kvs = [("general.architecture", STR, "llama"), ("llama.block_count", U32, 1),
           ("llama.attention.head_count", U32, heads), ("llama.attention.head_count_kv", U32, kv_heads)]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        head += string(key) + struct.pack("<I", vtype) + (string(v) if vtype == STR else struct.pack("<I", v))
    data = b""
    for name, w in tensors:
        w = np.ascontiguousarray(w, dtype=np.float32)
        ne = list(reversed(w.shape))  # GGUF lists dims innermost first
        head += string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        head += struct.pack("<IQ", 0, len(data))  # F32 at this offset of the data section
        blob = w.tobytes()
        data += blob + b"\0" * (-len(blob) % 32)
    head += b"\0" * (-len(head) % 32)
    return head + data


def export(tensors):
    """An ONNX model whose initializers are `tensors`, each read by an Identity."""
    inits = [numpy_helper.from_array(np.asarray(w, dtype=np.float32), n) for n, w in tensors]
    nodes = [helper.make_node("Identity", [n], ["y%d" % i]) for i, (n, _) in enumerate(tensors)]
    outs = [helper.make_tensor_value_info("y%d" % i, TensorProto.FLOAT, None) for i in range(len(tensors))]
    model = helper.make_model(helper.make_graph(nodes, "g", [], outs, inits), producer_name="make_cases_fidelity",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def case(name, q_checkpoint, q_export, expect, heads=1, args="diff model.onnx ckpt.gguf --fail-on-change -f json"):
    """A folder: ckpt.gguf (Q, K, V, O of one block), model.onnx (the same, Q as q_export)."""
    shape = np.shape(q_checkpoint)
    others = [("blk.0.attn_k.weight", np.full(shape, 2.5)), ("blk.0.attn_v.weight", np.full(shape, 3.25)),
              ("blk.0.attn_output.weight", np.full(shape, 5.0))]
    folder = os.path.join(HERE, "regressions-cases", name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "ckpt.gguf"), "wb") as f:
        f.write(gguf([("blk.0.attn_q.weight", q_checkpoint)] + others, heads, heads))
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(export([("blk.0.attn_q.weight", q_export)] + others))
    with open(os.path.join(folder, "args"), "w") as f:
        f.write(args + "\n")
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("".join(line + "\n" for line in ["exit 1"] + expect))


def safetensors(tensors, dtype="F32"):
    """A safetensors file of float32 (or F16) tensors [(name, array)], in order."""
    import json
    header, data = {}, b""
    for name, w in tensors:
        blob = np.ascontiguousarray(w, dtype=np.float16 if dtype == "F16" else np.float32).tobytes()
        header[name] = {"dtype": dtype, "shape": list(np.shape(w)), "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def pair(model, checkpoint):
    return struct.pack("<I", len(model)) + model + checkpoint


def fidelity_look_alikes(count=220):
    """The export check's own look-alikes (issue 39, item 6, in the export check): `count` float16
    tensors a side, [32, 33] and [33, 32], all one random tensor but for element 1,054 (n - 2 of
    n = 1,056, set apart in each checkpoint tensor) and, in the export, element 1,053 changed too
    and the names changed (t0 is e0): no two equal, none pairing by name, every sample (16 spread
    over each tensor, first and last included) equal. Every checkpoint tensor met 64 export
    tensors of equal samples, each compared element by element up to the difference near the
    end, in three searches: 1.44 s of CPU for 220 a side; and with more than 64 candidates of
    equal samples each was "not compared", so the gate passed an export that holds none of them
    (exit 0). Content hashes rule the candidates out unread and settle the search: each is lost
    (none pairs: the names differ and all samples tie), and the gate fails."""
    rng = np.random.default_rng(6)
    n = 32 * 33
    base = rng.standard_normal(n).astype(np.float16)
    ck, ex = [], []
    for i in range(count):
        c = base.copy()
        c[n - 2] = np.float16(5 + i * 0.01)
        e = c.copy()
        e[n - 3] = np.float16(-7 - i * 0.01)
        shape = (32, 33) if i % 2 == 0 else (33, 32)
        ck.append(("t%d" % i, c.reshape(shape)))
        ex.append(numpy_helper.from_array(e.reshape(shape), "e%d" % i))
    folder = os.path.join(HERE, "regressions-cases", "export-check-%d-look-alike-tensors" % count)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "ckpt.safetensors"), "wb") as f:
        f.write(safetensors(ck, "F16"))
    nodes = [helper.make_node("Identity", ["e%d" % i], ["y%d" % i]) for i in range(count)]
    outs = [helper.make_tensor_value_info("y%d" % i, TensorProto.FLOAT16, None) for i in range(count)]
    model = helper.make_model(helper.make_graph(nodes, "g", [], outs, ex), producer_name="make_cases_fidelity",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    with open(os.path.join(folder, "args"), "w") as f:
        f.write("diff model.onnx ckpt.safetensors --fail-on-change -f json\n")
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("exit 1\nstdout: \"lost\": %d,\nstdout: \"unknown\": 0,\nstdout: \"kept\": 0,\n" % count)


def corpus_fidelity():
    folder = os.path.join(HERE, "corpus-fidelity")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)

    def save(name, data):
        with open(os.path.join(folder, name + ".pair"), "wb") as f:
            f.write(data)

    samples = os.path.join(HERE, "..", "..", "samples")
    read = lambda name: open(os.path.join(samples, name), "rb").read()
    save("llama_tiny-gguf", pair(read("llama_tiny.onnx"), read("llama_tiny.gguf")))
    save("llama_tiny-safetensors", pair(read("llama_tiny.onnx"), read("llama_tiny.safetensors")))
    cases = os.path.join(HERE, "regressions-cases")
    for name in sorted(os.listdir(cases)):
        if name.startswith("gguf-q-") and not name.endswith("audit-gate"):
            read_case = lambda f: open(os.path.join(cases, name, f), "rb").read()
            save(name, pair(read_case("model.onnx"), read_case("ckpt.gguf")))

    def iota(shape, offset=0.0):
        return (np.arange(int(np.prod(shape)), dtype=np.float32) + 1 + offset).reshape(shape)

    def changed(a):
        a = np.ascontiguousarray(a, dtype=np.float32).copy()
        a.reshape(-1)[-1] += 100
        return a

    for shape in ([], [5], [3, 4], [2, 3, 4], [2, 3, 2, 2]):
        w = iota(shape)
        save("as-stored-rank-%d" % len(shape), pair(export([("w", changed(w))]), safetensors([("w", w)])))
    w = iota([3, 4])
    save("transposed", pair(export([("w", changed(w.T))]), safetensors([("w", w)])))
    save("reshaped", pair(export([("w", changed(iota([2, 3, 4])).reshape(4, 6))]), safetensors([("w", iota([2, 3, 4]))])))
    q, k, v = iota([2, 3]), iota([2, 3], 100), iota([2, 3], 200)
    save("packed-rows", pair(export([("qkv", np.concatenate([q, k, v]))]), safetensors([("q", q), ("k", k), ("v", v)])))
    save("packed-columns", pair(export([("qkv", np.concatenate([q, k, v]).T)]), safetensors([("q", q), ("k", k), ("v", v)])))


def q_changed(differing, at, layout="as stored"):
    """The expect lines of Q changed (JSON): `differing` elements, the largest at element `at`, the
    other three tensors kept (their "differing" is 0, their "largest_at" null)."""
    return ['stdout: "verdict": "changed"', 'stdout: "differing": %d,' % differing, 'stdout: "largest_at": %d,' % at,
            'stdout: "layout": "%s"' % layout, 'stdout: "failed": true']


def look_alikes(count=900):
    """Issue 39, item 6: `count` U8 parameters, half [32, 33] and half [33, 32], every one with the
    same 17 elements where the duplicate search samples it (its middle element and 16 spread over
    it, read in the [32, 33] orientation) and the rest of it random: no two are equal, but all
    share one fingerprint, and the search compared every pair of the group in full."""
    rng = np.random.default_rng(39)
    n = 32 * 33
    sampled = sorted({n // 2} | {(n - 1) * s // 15 for s in range(16)})
    inits = []
    for i in range(count):
        c = rng.integers(0, 256, n, dtype=np.uint8)
        c[sampled] = np.arange(len(sampled), dtype=np.uint8) + 1
        c = c.reshape(32, 33)
        inits.append(numpy_helper.from_array(c if i % 2 == 0 else np.ascontiguousarray(c.T), "w%d" % i))
    nodes = [helper.make_node("Identity", ["w%d" % i], ["y%d" % i]) for i in range(count)]
    outs = [helper.make_tensor_value_info("y%d" % i, TensorProto.UINT8, None) for i in range(count)]
    model = helper.make_model(helper.make_graph(nodes, "g", [], outs, inits), producer_name="make_cases_fidelity",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(os.path.join(HERE, "regressions", "duplicate-search-%d-look-alike-tensors.onnx" % count), "wb") as f:
        f.write(model.SerializeToString())


def main():
    # One element: 1 in the checkpoint, -1 in the export. Was SIGSEGV (squeezed dims are empty).
    case("gguf-q-one-element-changed", np.array([1.0]), np.array([-1.0]),
         q_changed(1, 0))
    case("gguf-q-one-element-audit-gate", np.array([1.0]), np.array([-1.0]),
         ["stdout: gates: 1 failed", "stderr: 1 element differs"], args="audit model.onnx --checkpoint ckpt.gguf")
    # Rank 1, [1, 2, 3, 4] against its negation: all 4 differ. Was "4 kept" and exit 0.
    q = np.arange(1, 5, dtype=np.float32)
    case("gguf-q-rank-1-all-changed", q, -q, q_changed(4, 3))
    # Rank 3, [2, 2, 2] = 1..8; the export changes the last 4 (elements 4..7: 5..8 -> 50..80). The
    # old retry compared rows (2) x dims[1] (2) = 4 elements, the unchanged first half: "kept".
    q = np.arange(1, 9, dtype=np.float32).reshape(2, 2, 2)
    changed = q.copy()
    changed[1] *= 10
    case("gguf-q-rank-3-half-changed", q, changed, q_changed(4, 7))
    # A true matrix: Q [4, 2] of one head (4 rows, even). llama.cpp stores row 2j + t of a head as
    # the model's row t * 2 + j: GGUF rows 0, 1, 2, 3 are model rows 0, 2, 1, 3. The export holds
    # the model's order with model row 2, column 1 (GGUF row 1, column 1: element 1 * 2 + 1 = 3)
    # changed from 6 to 60: "rotary rows", 1 of 8 elements differ, the largest (54) at element 3.
    model_q = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    stored = model_q[[0, 2, 1, 3]]
    exported = model_q.copy()
    exported[2, 1] = 60
    case("gguf-q-rotary-one-changed", stored, exported,
         q_changed(1, 3, "rotary rows"))


if __name__ == "__main__":
    main()
    look_alikes()
    corpus_fidelity()
    fidelity_look_alikes()
