"""The Python module (import headcount), run by pytest from ctest.

Counts come from PyTorch itself (sum(p.numel()) at export time), from the command line's own JSON
(the module must give the same report), or are worked by hand in the comments. Environment:
HEADCOUNT_BIN (the CLI), HEADCOUNT_REPO (the source tree); PYTHONPATH holds build/python.
"""
import io
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import headcount

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("HEADCOUNT_BIN", os.path.join(REPO, "build", "headcount"))
SAMPLES = os.path.join(REPO, "samples")
sys.path.insert(0, SAMPLES)
import make_samples as ms  # noqa: E402  (the samples' torch modules)


def exported(module, *inputs):
    """The module exported by torch 1.13 into memory, after seeded noise on every parameter (a
    fresh module's equal tensors would be merged by the exporter, as a trained model's are not)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1234)
    module.eval()
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    buf = io.BytesIO()
    torch.onnx.export(module, tuple(inputs), buf, opset_version=14, do_constant_folding=True)
    return buf.getvalue(), sum(p.numel() for p in module.parameters())


def test_encoder_layer_in_memory():
    layer = nn.TransformerEncoderLayer(32, 4, 64)
    data, torch_total = exported(layer, torch.randn(5, 3, 32))
    r = headcount.audit(data)
    # No buffers and no tied tensors: every stored parameter is one of torch's.
    assert r.parameters.unique == torch_total == 8_544  # 4·32² + 4·32 + 2·32·64 + 64 + 32 + 2·2·32
    assert r.parameters.framework == torch_total
    assert len(r.attention_blocks) == 1
    assert r.attention_blocks[0].heads == 4
    assert r.attention_blocks[0].total == 4 * 32 * 32 + 4 * 32
    assert r.file == "<memory>"


def test_gpt2_with_tied_embeddings_in_memory():
    model = ms.GPT2LM(ms.VOCAB, ms.E, 2, ms.H, ms.MAX_POS)
    data, torch_total = exported(model, torch.randint(0, ms.VOCAB, (3, 5)))
    r = headcount.audit(data, name="gpt2.onnx")
    # The tied LM head is stored twice (the embedding and its transposed copy): unique counts it
    # once. The causal-mask buffers are stored too: framework leaves them out, as torch does.
    assert r.parameters.framework == torch_total
    assert r.parameters.unique == r.parameters.stored - ms.VOCAB * ms.E
    assert [d.transposed for d in r.duplicates] == [True]
    assert [b.heads for b in r.attention_blocks] == [4, 4]
    assert r.file == "gpt2.onnx"


def test_gqa_block_in_memory():
    block = ms.LlamaAttention()
    data, torch_total = exported(block, torch.randn(3, 5, ms.E))
    r = headcount.audit(data)
    assert r.parameters.framework == torch_total == 3_072  # q 32·32, k and v 32·16, o 32·32
    (b,) = r.attention_blocks
    assert (b.heads, b.kv_heads, b.head_dim) == (4, 2, 8)
    assert b.projections.k.weight == 32 * 16


def test_a_modelproto_is_serialized_once_and_audited():
    import onnx
    proto = onnx.load(os.path.join(SAMPLES, "bert_tiny.onnx"))
    assert headcount.audit(proto).parameters.stored == headcount.audit(os.path.join(SAMPLES, "bert_tiny.onnx")).parameters.stored


def samples():
    return sorted(f for f in os.listdir(SAMPLES) if f.endswith(".onnx"))


@pytest.mark.parametrize("name", samples())
def test_to_dict_is_the_cli_json(name):
    path = os.path.join("samples", name)
    cli = subprocess.run([BIN, "audit", path, "-f", "json"], cwd=REPO, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)["models"][0]
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        report = headcount.audit(path)
    finally:
        os.chdir(cwd)
    assert report.to_dict() == expected
    assert report.parameters.stored == expected["parameters"]["stored"]


def test_hostile_files_raise_input_error_and_never_crash():
    folder = os.path.join(REPO, "tests", "fuzz", "regressions")
    names = sorted(os.listdir(folder))
    assert names
    outcomes = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            outcomes.append(headcount.audit(path))
        except headcount.InputError as e:
            assert str(e).startswith(path + ": ")
            outcomes.append(e)
        with open(path, "rb") as f:
            try:
                headcount.audit(f.read())
            except headcount.InputError:
                pass
    # Each file gave a report or an InputError, and the interpreter is still here.
    assert len(outcomes) == len(names)
    assert all(isinstance(o, (headcount.Report, headcount.InputError)) for o in outcomes)
    assert issubclass(headcount.InputError, ValueError)


def test_unreadable_inputs_raise_the_cli_message(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(headcount.InputError, match="empty.onnx: file is empty"):
        headcount.audit(empty)
    with pytest.raises(headcount.InputError, match="missing.onnx: cannot open"):
        headcount.audit(tmp_path / "missing.onnx")
    with pytest.raises(headcount.InputError, match="<memory>: "):
        headcount.audit(b"not a model")
    with pytest.raises(TypeError):
        headcount.audit(42)


def test_external_data_may_not_leave_base_dir(tmp_path):
    from onnx import TensorProto, helper
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend([4, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "../../etc/passwd"), ("offset", "0"), ("length", "64")):
        e = t.external_data.add()
        e.key, e.value = k, v
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [t])
    with pytest.raises(headcount.InputError, match="refused"):
        headcount.audit(helper.make_model(graph), base_dir=str(tmp_path))


def test_audit_many_on_four_threads_equals_one_by_one():
    paths = [os.path.join(SAMPLES, n) for n in samples()]
    parallel = headcount.audit_many(paths, jobs=4)
    assert [r.to_dict() for r in parallel] == [headcount.audit(p).to_dict() for p in paths]
    with pytest.raises(headcount.InputError, match="nothere.onnx"):
        headcount.audit_many(paths[:1] + [os.path.join(SAMPLES, "nothere.onnx")], jobs=2)


def test_check_gates():
    r = headcount.audit(os.path.join(SAMPLES, "gpt2_tiny.onnx"))
    # gpt2_tiny: 29,184 parameters (torch's count, samples/gpt2_tiny.counts.tsv), 4 heads.
    assert r.check(max_params="110M", expect_heads=4) == []
    (failure,) = r.check(max_params=25_000)
    assert failure.gate == "max-params"
    assert "exceed the budget of 25,000 by 4,184" in failure.message
    assert [f.gate for f in r.check(expect_heads=12)] == ["expect-heads"]
    with pytest.raises(headcount.InputError):
        r.check(fail_on="sometimes")
    with pytest.raises(TypeError, match="max_param"):
        r.check(max_param=1)  # a typo is an error, never a gate switched off
    with pytest.raises(headcount.InputError, match="expect_heads must be 1 or more"):
        r.check(expect_heads=0)


def test_check_keywords_are_the_budget_gates():
    # One keyword per budget gate (the gate table in src/gate.cpp), as the command line's options
    # and the type stub name them.
    import ast
    from headcount import _headcount
    keywords = _headcount.budget_keywords()
    options = subprocess.run([BIN, "audit", "--help"], capture_output=True, text=True).stdout
    assert keywords and all(f"--{k.replace('_', '-')} " in options for k in keywords)
    stub = ast.parse(open(os.path.join(REPO, "python", "headcount", "__init__.pyi")).read())
    (check,) = [f for f in ast.walk(stub) if isinstance(f, ast.FunctionDef) and f.name == "check"]
    assert [a.arg for a in check.args.kwonlyargs] == keywords + ["fail_on"]
    # Each keyword is its gate: a limit gpt2_tiny cannot meet (1, or 99 heads) fails it alone.
    r = headcount.audit(os.path.join(SAMPLES, "gpt2_tiny.onnx"))
    for k in keywords:
        assert [f.gate for f in r.check(**{k: 99 if k == "expect_heads" else 1})] == [k.replace("_", "-")]


def test_explain_calculator():
    c = headcount.explain(768, 12)
    # BERT-base: 4·768² + 4·768 = 2,362,368; Q is 768 × (12 × 64) + 12 × 64 = 590,592.
    assert c.total == c.standard == 2_362_368
    assert [p.role for p in c.projections] == ["Q", "K", "V", "O"]
    assert c.projections[0].weight + c.projections[0].bias == 590_592
    # Keras' per-head key_dim = 768 with 12 heads: Q/K/V project to 12 · 768 = 9,216.
    assert headcount.explain(768, 12, head_dim=768).projections[0].weight == 768 * 9_216
    with pytest.raises(headcount.InputError):
        headcount.explain(0, 12)
    # The same text as `headcount explain --width 768 --heads 12 --convention keras`.
    keras = headcount.explain(768, 12, convention="keras")
    cli = subprocess.run([BIN, "explain", "--width", "768", "--heads", "12", "--convention", "keras"], capture_output=True, text=True)
    assert keras.explanation == cli.stdout
    with pytest.raises(headcount.InputError, match="not one of"):
        headcount.explain(768, 12, convention="caffe")


def test_explain_config():
    r = headcount.explain_config(os.path.join(REPO, "tests", "configs", "mixtral-8x7b.config.json"))
    # Mistral's published figures: 46.7B in all, 12.9B per token (tests/explain_config_test.cpp works them).
    assert r.total == 46_702_792_704
    assert r.active == 12_879_925_248


def test_report_reads_like_the_json():
    r = headcount.audit(os.path.join(SAMPLES, "bert_tiny.onnx"))
    assert r["parameters"]["stored"] == r.parameters.stored
    with pytest.raises(AttributeError, match="no field"):
        r.not_a_field
    with pytest.raises(AttributeError):
        r.parameters.stored = 1
    assert "attention_blocks" in dir(r)
    assert r.explain_block(0).startswith("block 0 of ")
    cli = subprocess.run([BIN, "audit", os.path.join(SAMPLES, "bert_tiny.onnx"), "-f", "html"], capture_output=True, text=True)
    assert r._repr_html_() == cli.stdout
