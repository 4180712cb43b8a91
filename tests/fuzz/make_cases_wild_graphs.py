#!/usr/bin/env python3
"""Writes the regression files for the graph cases of issue 37 ("Truth in the wild"), items 8-14
of its graphs part. Run with /usr/bin/python3; the output is deterministic (the same bytes on every
run), into tests/fuzz/regressions/.

Each file is under 1 MB; tests/fuzz_replay_test.cpp replays each under the hostile-file bound.
"""
import os

from onnx import TensorProto as T
from onnx import helper as h

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "regressions")


def save(m, name):
    data = m.SerializeToString()
    assert len(data) < 1 << 20, (name, len(data))
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


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
    save(concat_read_by_fused(30000, 2000), "concat-30000-inputs-read-by-2000-fused.onnx")


if __name__ == "__main__":
    main()
