"""Does an export hold its checkpoint? `headcount diff model.onnx CHECKPOINT` and `headcount audit
model.onnx --checkpoint CHECKPOINT` on torch models exported here, with their state written as
safetensors by this suite's own writer (test_checkpoints.py): a faithful export, one with a weight
changed, one with a weight missing, a tied embedding stored twice, dtype conversions both ways, and
Q/K/V packed into one tensor as onnxruntime's fused Attention stores them.

Every expected figure comes from torch (sum(p.numel()), the tensors' values) or is worked in the
test's comment.
"""
import json
import os
import subprocess

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import TensorProto, helper, numpy_helper

from test_checkpoints import CONFIG, D, L, V, LlamaForCausalLM, state, write_safetensors

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("HEADCOUNT_BIN", os.path.join(REPO, "build", "headcount"))


def run(*args):
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)


def diff_json(export, checkpoint, *more):
    p = run("diff", export, checkpoint, "-f", "json", *more)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)["diff"]["checkpoint"], p.returncode


def export_and_save(folder, model, dtype=torch.float32):
    """The model's ONNX export and its state as save_pretrained writes it (a tied head once)."""
    folder.mkdir(exist_ok=True)
    write_safetensors(folder / "model.safetensors", state(model, dtype), {"format": "pt"})
    (folder / "config.json").write_text(json.dumps(CONFIG))
    torch.onnx.export(model.eval(), (torch.randint(0, V, (1, 5)),), str(folder / "model.onnx"), opset_version=14)
    return folder / "model.onnx", folder / "model.safetensors"


def by_name(f):
    return {t["name"]: t for t in f["tensors"]}


def test_a_faithful_export_holds_every_checkpoint_tensor(tmp_path):
    torch.manual_seed(0)
    model = LlamaForCausalLM()
    onnx_path, ck = export_and_save(tmp_path / "faithful", model)
    f, code = diff_json(onnx_path, ck, "--fail-on-change")
    names = [n for n, _ in model.named_parameters()]
    # embed, 3 layers of 9 (q, k, v, o, gate, up, down, two norms), the final norm and the head: 30.
    assert len(names) == len(f["tensors"]) == 30
    assert [t["verdict"] for t in f["tensors"]] == ["kept"] * 30
    assert (f["kept"], f["changed"], f["lost"], f["folded"], f["unknown"], f["added"]) == (30, 0, 0, 0, 0, [])
    # Every Linear weight without a bias is a MatMul's [in, out]: stored transposed; 3 · 7 + the head = 22.
    t = by_name(f)
    assert sum(x["held"][0]["layout"] == "transposed" for x in f["tensors"]) == 3 * 7 + 1
    assert t["model.embed_tokens.weight"]["held"][0]["layout"] == "as stored"
    # torch's own count on both sides: 34,272 (test_checkpoints.py works it).
    assert f["export_parameters"] == f["checkpoint_parameters"] == sum(p.numel() for p in model.parameters()) == 34_272
    assert f["outcome"] == "every one of the 30 checkpoint tensors is in the export"
    assert (code, f["failed"]) == (0, False)
    # The same as an audit gate: it passes, and the text report says so.
    p = run("audit", onnx_path, "--checkpoint", ck)
    assert p.returncode == 0, p.stderr
    assert "every one of the 30 checkpoint tensors is in the export" in p.stdout
    assert "gates: all passed" in p.stdout


def test_an_export_with_one_weight_changed(tmp_path):
    torch.manual_seed(1)
    model = LlamaForCausalLM()
    onnx_path, ck = export_and_save(tmp_path / "changed", model)
    # Layer 1's q_proj is [out, in] in torch and [in, out] in the export: find its initializer by
    # value, then set the element of row o = 5, column i = 7 (checkpoint order) to 2.0.
    q = model.model.layers[1].self_attn.q_proj.weight.detach().numpy()
    m = onnx.load(str(onnx_path))
    (init,) = [i for i in m.graph.initializer if numpy_helper.to_array(i).shape == q.T.shape
               and np.array_equal(numpy_helper.to_array(i), q.T)]
    a = numpy_helper.to_array(init).copy()
    a[7, 5] = 2.0
    init.CopyFrom(numpy_helper.from_array(a, init.name))
    onnx.save(m, str(onnx_path))
    f, code = diff_json(onnx_path, ck, "--fail-on-change")
    t = by_name(f)["model.layers.1.self_attn.q_proj.weight"]
    assert (t["verdict"], t["differing"], t["largest_at"], t["compared_as"]) == ("changed", 1, 5 * 32 + 7, "float32")
    assert t["held"] == [{"name": init.name, "layout": "transposed", "start": 0, "end": 0}]
    assert t["paired_by"] == "role"  # layer 1's block, its Q projection
    assert t["largest_difference"] == abs(2.0 - float(np.float32(q[5, 7])))
    assert (f["kept"], f["changed"], f["lost"]) == (29, 1, 0)
    assert (code, f["failed"]) == (1, True)
    assert f["outcome"].startswith("of the 30 checkpoint tensors, the export changed 1 "
                                   "(model.layers.1.self_attn.q_proj.weight: 1 element differs) and holds 29")
    # Without --fail-on-change the comparison is a report (exit 0); the audit gate fails it.
    assert run("diff", onnx_path, ck).returncode == 0
    p = run("audit", onnx_path, "--checkpoint", ck, "-f", "json")
    assert p.returncode == 1
    (gate,) = json.loads(p.stdout)["models"][0]["gates"]
    assert gate["gate"] == "checkpoint" and "changed 1" in gate["message"]
    # And from Python: the report's checkpoint, and check() failing its gate.
    import headcount
    r = headcount.audit(onnx_path, checkpoint=ck)
    assert (r.checkpoint.changed, r.checkpoint.lost, r.checkpoint.failed) == (1, 0, True)
    (failure,) = r.check()
    assert failure.gate == "checkpoint" and failure.message == r.checkpoint.outcome
    assert headcount.audit(onnx_path).checkpoint is None


class WithPooler(LlamaForCausalLM):
    """A pooler the forward pass never uses: torch's exporter drops its weights."""

    def __init__(self):
        super().__init__()
        self.pooler = nn.Linear(D, D)


def test_an_export_with_a_weight_missing(tmp_path):
    torch.manual_seed(2)
    model = WithPooler()
    onnx_path, ck = export_and_save(tmp_path / "missing", model)
    f, code = diff_json(onnx_path, ck, "--fail-on-change")
    t = by_name(f)
    assert (t["pooler.weight"]["verdict"], t["pooler.bias"]["verdict"]) == ("lost", "lost")
    assert (f["kept"], f["lost"], f["changed"]) == (30, 2, 0)
    # The checkpoint counts torch's 34,272 + the pooler's 32·32 + 32 = 35,328; the export 1,056 fewer.
    assert f["checkpoint_parameters"] == sum(p.numel() for p in model.parameters()) == 35_328
    assert f["export_parameters"] == 34_272
    assert f["counts"] == ("the export's framework count, 34,272, is 1,056 fewer than the checkpoint's 35,328: "
                           "1,056 in lost tensors")
    assert code == 1


def test_a_tied_embedding_stored_twice(tmp_path):
    torch.manual_seed(3)
    model = LlamaForCausalLM(tied=True)
    onnx_path, ck = export_and_save(tmp_path / "tied", model)
    f, code = diff_json(onnx_path, ck, "--fail-on-change")
    e = by_name(f)["model.embed_tokens.weight"]
    # The Gather reads the table [100, 32]; the head's MatMul a transposed copy [32, 100].
    assert e["verdict"] == "kept"
    assert [h["layout"] for h in e["held"]] == ["as stored", "transposed"]
    assert f["duplicated"] == 1
    # 29 tensors (the head is the table); torch counts the shared table once: 34,272 − 3,200.
    assert f["export_parameters"] == f["checkpoint_parameters"] == sum(p.numel() for p in model.parameters()) == 31_072
    assert f["outcome"] == ("every one of the 29 checkpoint tensors is in the export; "
                            "model.embed_tokens.weight is stored twice")
    assert code == 0


def test_dtype_conversions_compare_at_the_narrower_type(tmp_path):
    torch.manual_seed(4)
    model = LlamaForCausalLM()
    # bfloat16 -> float32 is exact: a bf16 checkpoint, the model exported from its values in float32.
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    onnx_path, ck = export_and_save(tmp_path / "bf16", model, torch.bfloat16)
    f, _ = diff_json(onnx_path, ck)
    assert (f["kept"], f["changed"]) == (30, 0)
    assert {t["compared_as"] for t in f["tensors"]} == {None}  # kept tensors are found, not paired
    # float32 -> float16 narrows: a float32 checkpoint and an export whose initializers are float16
    # (numpy's rounding) holds every tensor at float16.
    torch.manual_seed(5)
    model = LlamaForCausalLM()
    onnx_path, ck = export_and_save(tmp_path / "f16", model)
    m = onnx.load(str(onnx_path))
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32 and a.size > 1:
            init.CopyFrom(numpy_helper.from_array(a.astype(np.float16), init.name))
    onnx.save(m, str(onnx_path))
    f, _ = diff_json(onnx_path, ck)
    assert (f["kept"], f["changed"], f["lost"]) == (30, 0, 0)
    # One float16 value moved by one step (2^-11 near 0.25..0.5): changed at float16, by that step.
    q = model.model.layers[0].self_attn.q_proj.weight.detach().numpy()
    m = onnx.load(str(onnx_path))
    (init,) = [i for i in m.graph.initializer if numpy_helper.to_array(i).shape == q.T.shape
               and np.array_equal(numpy_helper.to_array(i), q.T.astype(np.float16))]
    a = numpy_helper.to_array(init).copy()
    i, o = np.unravel_index(np.argmax(np.abs(a)), a.shape)
    a[i, o] = np.nextafter(a[i, o], np.float16(np.inf))
    init.CopyFrom(numpy_helper.from_array(a, init.name))
    onnx.save(m, str(onnx_path))
    f, _ = diff_json(onnx_path, ck)
    t = by_name(f)["model.layers.0.self_attn.q_proj.weight"]
    step = float(a[i, o]) - float(np.nextafter(a[i, o], np.float16(-np.inf)))
    assert (t["verdict"], t["differing"], t["compared_as"], t["largest_at"]) == ("changed", 1, "float16", o * 32 + i)
    assert t["largest_difference"] == step


def test_qkv_packed_into_one_tensor_is_folded(tmp_path):
    """onnxruntime's fused Attention stores Q, K and V as one [d, 3d] weight (each transposed into
    a run of 32 columns) and one [3d] bias; the checkpoint has them apart."""
    torch.manual_seed(6)
    q, k, v, o = (nn.Linear(D, D) for _ in range(4))
    ck = tmp_path / "model.safetensors"
    tensors = {}
    for name, lin in (("q_proj", q), ("k_proj", k), ("v_proj", v), ("o_proj", o)):
        tensors[f"model.layers.0.self_attn.{name}.weight"] = lin.weight.detach()
        tensors[f"model.layers.0.self_attn.{name}.bias"] = lin.bias.detach()
    write_safetensors(ck, tensors)
    t = lambda x: x.detach().numpy()  # noqa: E731
    w = np.concatenate([t(q.weight).T, t(k.weight).T, t(v.weight).T], axis=1)  # [32, 96]
    b = np.concatenate([t(q.bias), t(k.bias), t(v.bias)])                         # [96]
    graph = helper.make_graph(
        [helper.make_node("Attention", ["x", "qkv_weight", "qkv_bias"], ["a"], domain="com.microsoft", num_heads=4),
         helper.make_node("MatMul", ["a", "o_weight"], ["y0"]), helper.make_node("Add", ["y0", "o_bias"], ["y"])],
        "fused", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, D])],
        [numpy_helper.from_array(w, "qkv_weight"), numpy_helper.from_array(b, "qkv_bias"),
         numpy_helper.from_array(t(o.weight).T.copy(), "o_weight"), numpy_helper.from_array(t(o.bias), "o_bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, str(tmp_path / "fused.onnx"))
    f, code = diff_json(tmp_path / "fused.onnx", ck, "--fail-on-change")
    got = {n: (x["verdict"], [(h["name"], h["layout"], h["start"], h["end"]) for h in x["held"]]) for n, x in by_name(f).items()}
    p = "model.layers.0.self_attn."
    # Q is columns 0:32 of the packed weight, K 32:64, V 64:96; the biases elements of the packed bias.
    assert got[p + "q_proj.weight"] == ("folded", [("qkv_weight", "columns", 0, 32)])
    assert got[p + "k_proj.weight"] == ("folded", [("qkv_weight", "columns", 32, 64)])
    assert got[p + "v_proj.weight"] == ("folded", [("qkv_weight", "columns", 64, 96)])
    assert got[p + "q_proj.bias"] == ("folded", [("qkv_bias", "rows", 0, 32)])
    assert got[p + "v_proj.bias"] == ("folded", [("qkv_bias", "rows", 64, 96)])
    assert got[p + "o_proj.weight"] == ("kept", [("o_weight", "transposed", 0, 0)])
    assert (f["folded"], f["kept"], f["lost"], f["added"]) == (6, 2, 0, [])
    # 4 · (32·32 + 32) = 4,224 on both sides.
    assert f["export_parameters"] == f["checkpoint_parameters"] == 4_224
    assert code == 0


def test_checkpoint_errors_are_one_line(tmp_path):
    torch.manual_seed(7)
    onnx_path, ck = export_and_save(tmp_path / "e", LlamaForCausalLM())
    p = run("audit", onnx_path, "--checkpoint", tmp_path / "nothing.safetensors")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "headcount: error:" in p.stderr
    p = run("audit", onnx_path, "--checkpoint", ck, "--no-content")
    assert p.returncode == 2 and "--no-content" in p.stderr
    p = run("audit", ck, "--checkpoint", ck)
    assert p.returncode == 2 and "checkpoint itself" in p.stderr
    p = run("audit", onnx_path, onnx_path, "--checkpoint", ck)
    assert p.returncode == 2 and "one MODEL" in p.stderr


def test_many_tensors_of_one_size(tmp_path):
    """2,000 tensors of 4 elements on each side, all distinct: none pairs by name, role or closest
    values (random values share none of 16 samples), so each is lost and each export tensor added;
    then the same with all zeros: each checkpoint tensor kept, one export tensor each."""
    rng = np.random.default_rng(0)
    for case, make in (("distinct", lambda: rng.standard_normal(4)), ("zeros", lambda: np.zeros(4))):
        ck = {f"t{i}.weight": torch.tensor(make(), dtype=torch.float32) for i in range(2000)}
        write_safetensors(tmp_path / f"{case}.safetensors", ck)
        inits = [numpy_helper.from_array(make().astype(np.float32), f"e{i}") for i in range(2000)]
        graph = helper.make_graph([helper.make_node("Add", ["x", f"e{i}"], [f"y{i}"]) for i in range(2000)], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [4]) for i in range(2000)], inits)
        onnx.save(helper.make_model(graph), str(tmp_path / f"{case}.onnx"))
        f, code = diff_json(tmp_path / f"{case}.onnx", tmp_path / f"{case}.safetensors", "--fail-on-change")
        if case == "distinct":
            assert (f["lost"], len(f["added"]), f["kept"], code) == (2000, 2000, 0, 1)
        else:
            assert (f["kept"], f["duplicated"], f["shared"], f["lost"], f["added"], code) == (2000, 0, 0, 0, [], 0)


def test_a_wide_matrix_is_compared_in_tiles(tmp_path):
    """A [3, 300,001] weight against its transpose: wider than the 262,144 elements the comparison
    holds of a side at once, so it goes tile by tile; one element changed at row 2, column
    300,000 is found there, at element 2 · 300,001 + 300,000 = 900,002."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((3, 300_001)).astype(np.float32)
    write_safetensors(tmp_path / "wide.safetensors", {"proj.weight": torch.from_numpy(w)})

    def export(a, name):
        graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 300_001])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
                                  [numpy_helper.from_array(a, "w")])
        onnx.save(helper.make_model(graph), str(tmp_path / name))
        return tmp_path / name

    f, code = diff_json(export(np.ascontiguousarray(w.T), "same.onnx"), tmp_path / "wide.safetensors", "--fail-on-change")
    (t,) = f["tensors"]
    assert (t["verdict"], t["held"][0]["layout"], code) == ("kept", "transposed", 0)
    changed = np.ascontiguousarray(w.T)
    changed[300_000, 2] += 1.0
    f, code = diff_json(export(changed, "changed.onnx"), tmp_path / "wide.safetensors", "--fail-on-change")
    (t,) = f["tensors"]
    assert (t["verdict"], t["differing"], t["largest_at"], code) == ("changed", 1, 900_002, 1)
    assert t["largest_difference"] == float(np.float32(w[2, 300_000] + np.float32(1.0))) - float(w[2, 300_000])


def test_a_gguf_in_llama_cpps_rotary_row_order(tmp_path):
    """llama.cpp's converter reorders each head's rows of Q and K for its rotary layout
    (samples/make_samples.py's write_gguf does as convert_hf_to_gguf.py's permute): an f32 GGUF
    of the model holds every weight of the export, Q and K in 'rotary rows, transposed' (3 layers ·
    2), nothing changed; in f16 the same at float16."""
    import sys
    sys.path.insert(0, os.path.join(REPO, "samples"))
    from make_samples import write_gguf  # noqa: E402
    torch.manual_seed(8)
    model = LlamaForCausalLM()
    onnx_path, _ = export_and_save(tmp_path / "gguf", model)
    tensors = {n[len("model."):] if n.startswith("model.") else n: p.detach().numpy() for n, p in model.named_parameters()}
    config = {**CONFIG, "num_key_value_heads": 2, "max_position_embeddings": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    for matrices, as_type in (("f32", None), ("f16", "float16")):
        path = tmp_path / f"model-{matrices}.gguf"
        write_gguf(str(path), tensors, config, matrices)
        f, code = diff_json(onnx_path, path, "--fail-on-change")
        assert (f["kept"], f["changed"], f["lost"], f["unknown"], code) == (30, 0, 0, 0, 0), f["outcome"]
        rotary = [t["name"] for t in f["tensors"] if t["held"][0]["layout"] == "rotary rows, transposed"]
        assert sorted(rotary) == sorted(f"blk.{n}.attn_{r}.weight" for n in range(L) for r in ("q", "k"))
        if as_type:
            assert {t["compared_as"] for t in f["tensors"] if t["name"] in rotary} == {as_type}
