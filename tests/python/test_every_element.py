"""No count is dropped without a line (issue 37): for every sample export, the elements of every
tensor the file stores, summed here with python3-onnx's own reader (initializers, sparse
initializers' values, and Constant nodes' tensors, in every graph and function), equal the report's
stored total plus what it names as not parameters (`parameters.not_parameters`, the text report's
"not parameters" line: integer and bool shape data, indices and masks)."""
import glob
import math
import os

import onnx
import pytest

import headcount

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = sorted(glob.glob(os.path.join(REPO, "samples", "*.onnx")))


def graphs(model):
    """The main graph, every subgraph of an attribute, and every function's nodes."""
    todo = [model.graph.node]
    out = [model.graph]
    seen = list(model.graph.node) + [n for f in model.functions for n in f.node]
    while seen:
        node = seen.pop()
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                out.append(g)
                seen.extend(g.node)
    return out, [n for f in model.functions for n in f.node]


def elements(t):
    return math.prod(t.dims)  # 1 for a 0-d tensor


def stored_elements(path):
    model = onnx.load(path, load_external_data=False)
    total = 0
    gs, function_nodes = graphs(model)
    nodes = function_nodes[:]
    for g in gs:
        total += sum(elements(t) for t in g.initializer)
        total += sum(elements(s.values) for s in g.sparse_initializer)
        nodes.extend(g.node)
    for n in nodes:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            for a in n.attribute:
                if a.name == "value":
                    total += elements(a.t)
                elif a.name == "sparse_value":
                    total += elements(a.sparse_tensor.values)
                elif a.name in ("value_ints", "value_floats", "value_strings"):
                    total += len(a.ints) + len(a.floats) + len(a.strings)
                elif a.name in ("value_int", "value_float", "value_string"):
                    total += 1
    return total


@pytest.mark.parametrize("path", SAMPLES, ids=[os.path.basename(p) for p in SAMPLES])
def test_every_stored_element_is_counted_or_named(path):
    r = headcount.audit(path, content=False).to_dict()
    p = r["parameters"]
    assert p["stored"] + p["not_parameters"]["elements"] == stored_elements(path)
