#!/usr/bin/python3
"""Benchmark `headcount audit` against the onnx.load() a user would otherwise write.

Run with Debian's interpreter (it has python3-onnx and numpy):

    /usr/bin/python3 bench/run_bench.py --headcount build/headcount
    /usr/bin/python3 bench/run_bench.py --sizes 1M,10M --markdown
    /usr/bin/python3 bench/run_bench.py --layers          # 1,000-layer encoder
    /usr/bin/python3 bench/run_bench.py --layers --full-layers   # whole layers, 16 tensors each

Not a pass/fail test: exits 0 whether or not the targets are met (exit 2 only
for usage errors such as a missing headcount binary).  Progress goes to
stderr, results to stdout.
"""

import argparse
import gc
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
MiB = 1 << 20

DEFAULT_SIZES = "1M,10M,100M,500M,1G"
OPSET = 13
TARGET_SPEEDUP = 20.0      # on the 500M model
TARGET_SPEEDUP_SIZE = "500M"
TARGET_RSS_MIB = 64.0      # headcount, every weights size (--sizes)

# What a user would write: load the model, sum element counts of initializers.
PY_COUNT_SRC = (
    "import math, sys, onnx\n"
    "m = onnx.load(sys.argv[1])\n"
    "print(sum(math.prod(t.dims) for t in m.graph.initializer))\n"
)
PY_IMPORT_ONLY_SRC = "import onnx\n"

# Fallback wrapper if measure.c cannot be compiled.  Same output format, but
# the child's ru_maxrss then includes this interpreter's pre-exec RSS (~10 MB).
PY_WRAPPER_SRC = r"""
import json, resource, subprocess, sys, time
out = sys.argv[1]
sink = subprocess.DEVNULL if out == "-" else open(out, "wb")
t0 = time.perf_counter()
rc = subprocess.call(sys.argv[2:], stdout=sink)
t1 = time.perf_counter()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc if rc >= 0 else 128 - rc, "wall": t1 - t0,
                  "maxrss_kb": ru.ru_maxrss}))
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Model generation
# --------------------------------------------------------------------------

def parse_size(label):
    m = re.fullmatch(r"\s*(\d+)\s*([KMG])i?B?\s*", label, re.IGNORECASE)
    if not m:
        raise ValueError(f"bad size {label!r} (expected e.g. 1M, 500M, 1G)")
    n, unit = int(m.group(1)), m.group(2).upper()
    return n * {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]


def build_weights_model(target_bytes, seed=0):
    """A MatMul+Add chain whose [d, d] float32 weights total ~target_bytes.

    Weights are embedded (raw_data).  d is 256/512/1024 depending on size so
    small models still have several tensors.  Returns the ModelProto.
    """
    if target_bytes >= 64 * MiB:
        d = 1024
    elif target_bytes >= 4 * MiB:
        d = 512
    else:
        d = 256
    n = max(1, round(target_bytes / (d * d * 4)))
    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    h = "input"
    for i in range(n):
        w = (rng.standard_normal((d, d), dtype=np.float32) * 0.02)
        inits.append(numpy_helper.from_array(w, f"blocks.{i}.weight"))
        del w
        inits.append(numpy_helper.from_array(np.zeros(d, np.float32), f"blocks.{i}.bias"))
        mm, out = f"/blocks.{i}/MatMul_output_0", ("output" if i == n - 1 else f"/blocks.{i}/Add_output_0")
        nodes.append(helper.make_node("MatMul", [h, f"blocks.{i}.weight"], [mm], name=f"/blocks.{i}/MatMul"))
        nodes.append(helper.make_node("Add", [mm, f"blocks.{i}.bias"], [out], name=f"/blocks.{i}/Add"))
        h = out
    graph = helper.make_graph(
        nodes, "weights_chain",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", d])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", d])],
        initializer=inits)
    return helper.make_model(graph, producer_name="headcount-bench",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def build_transformer_encoder(num_layers, d_model=64, num_heads=4, seed=0, full=False):
    """Synthetic N-layer self-attention encoder, unfused PyTorch-export style.

    Per layer: Q/K/V = MatMul+Add (width d_model); Reshape [0,0,H,Dh] +
    Transpose (K transposed to [0,2,3,1], i.e. K^T); MatMul(Q, K^T); Div by
    sqrt(Dh); Softmax(axis=-1); MatMul(., V); Transpose + Reshape [0,0,d_model];
    output MatMul+Add; residual Add.  Weights/biases are small embedded
    float32 initializers; shape and scale constants are Constant nodes (as
    torch.onnx.export emits them), so every initializer is a parameter.
    With full=True each layer is a whole post-norm encoder layer, as PyTorch's
    TransformerEncoderLayer exports at opset 17: the attention above, then
    LayerNormalization, a feed-forward MatMul+Add, Relu, MatMul+Add of width
    ffn = 4 * d_model, a residual Add and a second LayerNormalization: 16
    initializers per layer (8 weights and biases of attention, 4 of the
    feed-forward, 4 of the two norms).
    Returns the ModelProto.
    """
    head_dim = d_model // num_heads
    assert head_dim * num_heads == d_model
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def weight(name, shape):
        inits.append(numpy_helper.from_array(
            rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02), name))
        return name

    def node(op, inputs, name, **attrs):
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def const(name, arr):
        return node("Constant", [], name, value=numpy_helper.from_array(arr, f"{name}_value"))

    def linear(x, prefix, scope, d_in=d_model, d_out=d_model):
        y = node("MatMul", [x, weight(f"{prefix}.weight", (d_in, d_out))], f"{scope}/MatMul")
        return node("Add", [y, weight(f"{prefix}.bias", (d_out,))], f"{scope}/Add")

    def layer_norm(x, prefix, scope):
        return node("LayerNormalization", [x, weight(f"{prefix}.weight", (d_model,)), weight(f"{prefix}.bias", (d_model,))],
                    f"{scope}/LayerNormalization", axis=-1, epsilon=1e-5)

    x = "input"
    for l in range(num_layers):
        p, s = f"layers.{l}.self_attn", f"/layers.{l}/self_attn"
        heads = {}
        for proj, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            y = linear(x, f"{p}.{proj}_proj", f"{s}/{proj}_proj")
            shape = const(f"{s}/{proj}_Constant", np.array([0, 0, num_heads, head_dim], np.int64))
            y = node("Reshape", [y, shape], f"{s}/{proj}_Reshape")
            heads[proj] = node("Transpose", [y], f"{s}/{proj}_Transpose", perm=perm)
        scores = node("MatMul", [heads["q"], heads["k"]], f"{s}/MatMul")
        scale = const(f"{s}/Constant", np.array(math.sqrt(head_dim), np.float32))
        scores = node("Div", [scores, scale], f"{s}/Div")
        probs = node("Softmax", [scores], f"{s}/Softmax", axis=-1)
        ctx = node("MatMul", [probs, heads["v"]], f"{s}/MatMul_1")
        ctx = node("Transpose", [ctx], f"{s}/Transpose", perm=[0, 2, 1, 3])
        shape = const(f"{s}/Constant_1", np.array([0, 0, d_model], np.int64))
        ctx = node("Reshape", [ctx, shape], f"{s}/Reshape")
        y = linear(ctx, f"{p}.out_proj", f"{s}/out_proj")
        x = node("Add", [x, y], f"/layers.{l}/Add")
        if full:
            x = layer_norm(x, f"layers.{l}.norm1", f"/layers.{l}/norm1")
            ffn = 4 * d_model
            y = linear(x, f"layers.{l}.linear1", f"/layers.{l}/linear1", d_model, ffn)
            y = node("Relu", [y], f"/layers.{l}/Relu")
            y = linear(y, f"layers.{l}.linear2", f"/layers.{l}/linear2", ffn, d_model)
            x = node("Add", [x, y], f"/layers.{l}/Add_1")
            x = layer_norm(x, f"layers.{l}.norm2", f"/layers.{l}/norm2")
    nodes.append(helper.make_node("Identity", [x], ["output"], name="/Identity"))
    graph = helper.make_graph(
        nodes, f"encoder_{num_layers}L",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", "seq", d_model])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", "seq", d_model])],
        initializer=inits)
    return helper.make_model(graph, producer_name="headcount-bench",
                             opset_imports=[helper.make_opsetid("", 17 if full else OPSET)])


def build_tied_model(vocab=50265, d_model=768, seed=0):
    """A RoBERTa-base-shaped tied embedding and LM head, as torch.onnx.export writes them.

    The embedding [vocab, d_model] feeds a Gather; the LM head is a MatMul with the constant-folded
    transposed copy [d_model, vocab] plus a bias: the same values stored twice, one the transpose
    of the other (309 MB of float32 for the default sizes). Returns the ModelProto.
    """
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((vocab, d_model), dtype=np.float32) * np.float32(0.02)
    inits = [numpy_helper.from_array(emb, "roberta.embeddings.word_embeddings.weight"),
             numpy_helper.from_array(np.ascontiguousarray(emb.T), "onnx::MatMul_1"),
             numpy_helper.from_array(np.zeros(vocab, np.float32), "lm_head.bias")]
    del emb
    nodes = [
        helper.make_node("Gather", ["roberta.embeddings.word_embeddings.weight", "input_ids"], ["h"],
                         name="/roberta/embeddings/word_embeddings/Gather"),
        helper.make_node("MatMul", ["h", "onnx::MatMul_1"], ["logits0"], name="/lm_head/decoder/MatMul"),
        helper.make_node("Add", ["logits0", "lm_head.bias"], ["logits"], name="/lm_head/Add"),
    ]
    graph = helper.make_graph(
        nodes, "tied_lm",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", vocab])],
        initializer=inits)
    return helper.make_model(graph, producer_name="headcount-bench",
                             opset_imports=[helper.make_opsetid("", OPSET)])


def save_model(model, path):
    """Save with all weights embedded (raw_data, no external data)."""
    onnx.save(model, path)  # save_as_external_data=False is the default


def check_model_file(path):
    """onnx.checker by path (C++ reads the file; call after freeing the proto)."""
    onnx.checker.check_model(path)


# --------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------

class Runner:
    def __init__(self, workdir, cc):
        self.workdir = workdir
        self.prefix = None
        self.note = None
        src = os.path.join(HERE, "measure.c")
        exe = os.path.join(workdir, "measure")
        try:
            subprocess.run([cc, "-O2", "-o", exe, src], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.prefix = [exe]
        except (OSError, subprocess.CalledProcessError) as e:
            err = getattr(e, "stderr", b"") or b""
            log(f"warning: could not compile {src} with {cc!r} ({e}) {err.decode(errors='replace')}")
            self.prefix = [sys.executable, "-c", PY_WRAPPER_SRC]
            self.note = ("measure.c could not be compiled; RSS measured via a Python "
                         "wrapper, which adds a ~10 MB floor to every RSS figure")
        floor = self.run(["/bin/true"])
        self.floor_mib = floor["maxrss_kb"] / 1024.0

    def run(self, cmd, out="-"):
        """Run cmd once through the wrapper; returns {rc, wall, maxrss_kb}."""
        p = subprocess.run(self.prefix + [out] + list(cmd),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if p.returncode != 0:
            raise RuntimeError(f"measurement wrapper failed: {p.stderr.decode(errors='replace')}")
        res = json.loads(p.stdout.decode().strip().splitlines()[-1])
        res["stderr"] = p.stderr.decode(errors="replace").strip()
        return res


def measure_pair(runner, model_path, headcount, python, repeat):
    """Warm-up (untimed, output kept for verification) then `repeat` timed runs
    of each command, interleaved.  Returns a dict of results."""
    cmds = {
        "hc": [headcount, "audit", model_path, "--format", "json"],
        "py": [python, "-c", PY_COUNT_SRC, model_path],
    }
    res = {}
    for key, cmd in cmds.items():
        out = os.path.join(runner.workdir, f"{key}.out")
        warm = runner.run(cmd, out)
        with open(out, "rb") as f:
            text = f.read().decode(errors="replace")
        os.unlink(out)
        res[key] = {"walls": [], "rss_kb": [warm["maxrss_kb"]], "rc": warm["rc"],
                    "stdout": text, "stderr": warm["stderr"]}
    for _ in range(repeat):
        for key, cmd in cmds.items():
            r = runner.run(cmd)
            res[key]["walls"].append(r["wall"])
            res[key]["rss_kb"].append(r["maxrss_kb"])
            if r["rc"] != 0:
                res[key]["rc"] = r["rc"]
                res[key]["stderr"] = r["stderr"]
    for key in cmds:
        d = res[key]
        d["ms"] = min(d["walls"]) * 1000.0
        d["rss_mib"] = max(d["rss_kb"]) / 1024.0
    return res


def measure_cmds(runner, cmds, repeat):
    """Like measure_pair, for any named commands: warm-up, then `repeat` interleaved timed runs.
    Returns {name: {ms, rss_mib, rc, stdout, stderr}}."""
    res = {}
    for key, cmd in cmds.items():
        out = os.path.join(runner.workdir, f"{key}.out")
        warm = runner.run(cmd, out)
        with open(out, "rb") as f:
            text = f.read().decode(errors="replace")
        os.unlink(out)
        res[key] = {"walls": [], "rss_kb": [warm["maxrss_kb"]], "rc": warm["rc"], "stdout": text, "stderr": warm["stderr"]}
    for _ in range(repeat):
        for key, cmd in cmds.items():
            r = runner.run(cmd)
            res[key]["walls"].append(r["wall"])
            res[key]["rss_kb"].append(r["maxrss_kb"])
            if r["rc"] != 0:
                res[key]["rc"] = r["rc"]
                res[key]["stderr"] = r["stderr"]
    for d in res.values():
        d["ms"] = min(d["walls"]) * 1000.0
        d["rss_mib"] = max(d["rss_kb"]) / 1024.0
    return res


def verify(res):
    """Compare headcount's parameters.stored with the Python sum.
    Returns (status, message) with status in ok / MISMATCH / n/a / FAIL."""
    hc, py = res["hc"], res["py"]
    if py["rc"] != 0:
        return "FAIL", f"python/onnx.load exited {py['rc']}: {py['stderr'][-500:]}"
    try:
        py_sum = int(py["stdout"].strip())
    except ValueError:
        return "FAIL", f"could not parse python output {py['stdout'][:200]!r}"
    if hc["rc"] != 0:
        return "FAIL", f"headcount exited {hc['rc']}: {hc['stderr'][-500:]}"
    try:
        doc = json.loads(hc["stdout"])
    except ValueError as e:
        return "n/a", f"headcount output is not JSON ({e}); python sum = {py_sum:,}"
    # headcount/2: one document for the run, the model in models[0].
    models = doc.get("models") if isinstance(doc, dict) else None
    model = models[0] if isinstance(models, list) and models and isinstance(models[0], dict) else {}
    stored = model.get("parameters", {}).get("stored")
    if not isinstance(stored, int) or isinstance(stored, bool):
        return "n/a", f"headcount JSON has no integer parameters.stored; python sum = {py_sum:,}"
    if stored != py_sum:
        return "MISMATCH", f"headcount parameters.stored = {stored:,} but onnx.load sum = {py_sum:,}"
    return "ok", f"both count {py_sum:,} parameters"


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------

COLUMNS = ["model", "size MiB", "headcount ms", "onnx.load ms", "speedup",
           "headcount RSS MiB", "python RSS MiB", "params"]


def fmt_ratio(r):
    if r is None:
        return "-"
    return f"{r:.0f}x" if r >= 10 else f"{r:.1f}x"


def row_cells(row):
    return [row["name"], f"{row['size_mib']:.1f}", f"{row['hc_ms']:.1f}", f"{row['py_ms']:.1f}",
            fmt_ratio(row["ratio"]), f"{row['hc_rss']:.1f}", f"{row['py_rss']:.1f}", row["status"]]


def print_table(rows, markdown):
    cells = [row_cells(r) for r in rows]
    if markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "|".join(["---"] + ["---:"] * (len(COLUMNS) - 2) + [":---:"]) + "|")
        for c in cells:
            print("| " + " | ".join(c) + " |")
        return
    widths = [max(len(COLUMNS[i]), *(len(c[i]) for c in cells)) for i in range(len(COLUMNS))]
    fmt = lambda cs: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                               for i, (c, w) in enumerate(zip(cs, widths)))
    print(fmt(COLUMNS))
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print(fmt(c))


def make_row(name, path, res, status):
    hc_ms, py_ms = res["hc"]["ms"], res["py"]["ms"]
    return {"name": name, "size_mib": os.path.getsize(path) / MiB,
            "hc_ms": hc_ms, "py_ms": py_ms,
            "ratio": (py_ms / hc_ms) if hc_ms > 0 and res["hc"]["rc"] == 0 else None,
            "hc_rss": res["hc"]["rss_mib"], "py_rss": res["py"]["rss_mib"],
            "status": status, "hc_ok": res["hc"]["rc"] == 0}


def print_preamble(args, runner, import_ms):
    print(f"headcount: {args.headcount}")
    print(f"python:    {args.python} (onnx {onnx.__version__} in this interpreter)")
    print(f"method:    best wall time of {args.repeat} runs per command, each its own child "
          f"process; peak RSS = max ru_maxrss of the child over all runs.")
    print("           One untimed warm-up run of each command per model first, so both read "
          "from a warm page cache (dropping the cache is not possible here).")
    print(f"           Measurement floor: RSS {runner.floor_mib:.1f} MiB (/bin/true through the wrapper); "
          f"'{os.path.basename(args.python)} -c \"import onnx\"' alone takes {import_ms:.0f} ms "
          f"(included in the onnx.load column).")
    if runner.note:
        print(f"NOTE:      {runner.note}")
    print()


def print_notes(notes):
    for name, status, msg in notes:
        if status == "ok":
            continue
        if status in ("MISMATCH", "FAIL"):
            print(f"!!! {status} on {name}: {msg}")
        else:
            print(f"note: {name}: {msg}")


def print_targets(rows, by_label):
    print()
    print("Targets (informational, not a pass/fail test):")
    t = by_label.get(TARGET_SPEEDUP_SIZE)
    if t is None:
        print(f"  speed  >= {TARGET_SPEEDUP:.0f}x vs onnx.load on {TARGET_SPEEDUP_SIZE}: "
              f"NOT MEASURED (include {TARGET_SPEEDUP_SIZE} in --sizes)")
    else:
        met = t["hc_ok"] and t["ratio"] is not None and t["ratio"] >= TARGET_SPEEDUP
        why = "" if t["hc_ok"] else " (headcount failed)"
        print(f"  speed  >= {TARGET_SPEEDUP:.0f}x vs onnx.load on {TARGET_SPEEDUP_SIZE}: "
              f"{'MET' if met else 'MISSED'} ({fmt_ratio(t['ratio'])}){why}")
    print_rss_target(rows, "every size")


def print_rss_target(rows, what):
    over = [r for r in rows if r["hc_rss"] >= TARGET_RSS_MIB or not r["hc_ok"]]
    worst = max(r["hc_rss"] for r in rows)
    if over:
        print(f"  headcount peak RSS < {TARGET_RSS_MIB:.0f} MiB at {what}: MISSED on "
              + ", ".join(f"{r['name']} ({r['hc_rss']:.1f} MiB{'' if r['hc_ok'] else ', failed'})"
                          for r in over))
    else:
        print(f"  headcount peak RSS < {TARGET_RSS_MIB:.0f} MiB at {what}: MET (max {worst:.1f} MiB)")


# --------------------------------------------------------------------------
# Modes
# --------------------------------------------------------------------------

def run_sizes(args, runner, workdir):
    labels = [s.strip().upper() for s in args.sizes.split(",") if s.strip()]
    rows, notes, by_label = [], [], {}
    for label in labels:
        target = parse_size(label)
        path = os.path.join(workdir, f"weights_{label}.onnx")
        log(f"[{label}] generating {path} ...")
        model = build_weights_model(target, seed=args.seed)
        save_model(model, path)
        del model  # keep at most one model in memory
        gc.collect()
        if not args.no_check:
            check_model_file(path)
        log(f"[{label}] {os.path.getsize(path) / MiB:.1f} MiB; measuring ({args.repeat} runs + warm-up) ...")
        res = measure_pair(runner, path, args.headcount, args.python, args.repeat)
        status, msg = verify(res)
        if status in ("MISMATCH", "FAIL"):
            log(f"[{label}] !!! {status}: {msg}")
        row = make_row(f"weights_{label}", path, res, status)
        rows.append(row)
        by_label[label] = row
        notes.append((row["name"], status, msg))
        if not args.keep:
            os.unlink(path)
    print_table(rows, args.markdown)
    print()
    print_notes(notes)
    print_targets(rows, by_label)


def run_layers(args, runner, workdir):
    """N-layer encoders, one row each; the issue's targets at 1,000 layers and the growth from
    1,000 to 10,000 layers when both are measured."""
    rows, notes, shapes = [], [], []
    growth_paths = {}  # 1,000 and 10,000 layers, kept for the growth runs when both are asked for
    for n in args.layers:
        name = f"encoder_{n}L" + ("_full" if args.full_layers else "")
        path = os.path.join(workdir, f"{name}.onnx")
        log(f"[{name}] generating {path} ...")
        model = (build_transformer_encoder(n, d_model=32, seed=args.seed, full=True) if args.full_layers
                 else build_transformer_encoder(n, seed=args.seed))
        n_nodes, n_inits = len(model.graph.node), len(model.graph.initializer)
        save_model(model, path)
        del model
        gc.collect()
        if not args.no_check:
            check_model_file(path)
        log(f"[{name}] {n_nodes:,} nodes, {n_inits:,} initializers, "
            f"{os.path.getsize(path) / MiB:.1f} MiB; measuring ({args.repeat} runs + warm-up) ...")
        res = measure_pair(runner, path, args.headcount, args.python, args.repeat)
        status, msg = verify(res)
        row = make_row(name, path, res, status)
        row["layers"], row["nodes"] = n, n_nodes
        rows.append(row)
        notes.append((name, status, msg))
        shapes.append(f"{n} layers: {n_nodes:,} nodes, {n_inits:,} initializers")
        if n in (1000, 10000) and 1000 in args.layers and 10000 in args.layers:
            growth_paths[n] = path
        elif not args.keep:
            os.unlink(path)
    # The growth from 1,000 to 10,000 layers from runs of the two audits in turn, so a slow spell
    # of a shared machine falls on both and not on one row's runs alone.
    growth_ms = None
    if len(growth_paths) == 2:
        log(f"[growth] 1,000 and 10,000 layers, alternated ({args.repeat} runs each + warm-up) ...")
        g = measure_cmds(runner, {n: [args.headcount, "audit", p, "--format", "json"]
                                  for n, p in sorted(growth_paths.items())}, args.repeat)
        if g[1000]["rc"] == 0 and g[10000]["rc"] == 0 and g[1000]["ms"] > 0:
            growth_ms = (g[1000]["ms"], g[10000]["ms"])
        if not args.keep:
            for p in growth_paths.values():
                os.unlink(p)
    kind = ("whole encoder layers (attention, two LayerNorms, a feed-forward of 128; d_model 32, 4 heads)"
            if args.full_layers else "unfused self-attention encoders (d_model 64, 4 heads)")
    print(f"model:     {kind}: " + "; ".join(shapes))
    print()
    print_table(rows, args.markdown)
    print()
    print_notes(notes)
    print()
    print("Targets (informational, not a pass/fail test):")
    by_layers = {r["layers"]: r for r in rows}
    if 1000 in by_layers:
        r = by_layers[1000]
        met = r["hc_ok"] and r["ratio"] is not None and r["ratio"] >= 5.0
        print(f"  1,000 layers: >= 5x vs onnx.load: {'MET' if met else 'MISSED'} ({fmt_ratio(r['ratio'])})")
        print(f"  1,000 layers: headcount peak RSS < 32 MiB: {'MET' if r['hc_rss'] < 32.0 else 'MISSED'} "
              f"({r['hc_rss']:.1f} MiB)")
    if 1000 in by_layers and 10000 in by_layers:
        small, large = by_layers[1000], by_layers[10000]
        if small["hc_ok"] and large["hc_ok"] and growth_ms:
            growth = growth_ms[1] / growth_ms[0]
            memory = large["hc_rss"] / small["hc_rss"] if small["hc_rss"] > 0 else float("nan")
            print(f"  1,000 -> 10,000 layers (10x the nodes), audits run in turn: {growth_ms[0]:.1f} ms and "
                  f"{growth_ms[1]:.1f} ms, time x{growth:.1f}, peak RSS x{memory:.1f}; "
                  f"time at most x11: {'MET' if growth <= 11.0 else 'MISSED'}; "
                  f"peak RSS at most x11: {'MET' if memory <= 11.0 else 'MISSED'}")
        else:
            print("  1,000 -> 10,000 layers: growth not measured (an audit failed; see the notes above)")
    # (No fixed RSS bound here: a graph's records grow with its nodes. The 64 MiB bound is the
    # weights rows', whose payloads are never held.)


def run_tied(args, runner, workdir):
    """The tied embedding and LM head: the default audit (content compared) and --no-content,
    each against onnx.load in the same run."""
    name = "tied_50265x768"
    path = os.path.join(workdir, f"{name}.onnx")
    log(f"[{name}] generating {path} ...")
    model = build_tied_model(seed=args.seed)
    save_model(model, path)
    del model
    gc.collect()
    log(f"[{name}] {os.path.getsize(path) / MiB:.1f} MiB; measuring ({args.repeat} runs + warm-up) ...")
    res = measure_cmds(runner, {
        "hc": [args.headcount, "audit", path, "--format", "json"],
        "hc_fast": [args.headcount, "audit", path, "--format", "json", "--no-content"],
        "py": [args.python, "-c", PY_COUNT_SRC, path],
    }, args.repeat)
    status, msg = verify({"hc": res["hc"], "py": res["py"]})
    # The copy must be found: unique = stored - 50,265 x 768.
    try:
        params = json.loads(res["hc"]["stdout"])["models"][0]["parameters"]
        found = params["stored"] - params["unique"]
        if found != 50265 * 768:
            status, msg = "MISMATCH", f"the tied copy was not found: stored - unique = {found:,}, expected {50265 * 768:,}"
    except (ValueError, KeyError, IndexError) as e:
        status, msg = "FAIL", f"cannot read headcount's report: {e}"
    rows = [make_row(f"{name} (default)", path, {"hc": res["hc"], "py": res["py"]}, status),
            make_row(f"{name} (--no-content)", path, {"hc": res["hc_fast"], "py": res["py"]}, status)]
    print(f"model:     a tied embedding [50265, 768] and its transposed copy [768, 50265] in the LM head "
          f"(RoBERTa-base's vocabulary and width), embedded float32")
    print()
    print_table(rows, args.markdown)
    print()
    print_notes([(name, status, msg)])
    print()
    print("Targets (informational, not a pass/fail test):")
    for row, target in zip(rows, (20.0, 100.0)):
        met = row["hc_ok"] and row["ratio"] is not None and row["ratio"] >= target
        print(f"  {row['name']}: >= {target:.0f}x vs onnx.load: {'MET' if met else 'MISSED'} ({fmt_ratio(row['ratio'])})")
    if not args.keep:
        os.unlink(path)


def run_folder(args, runner, workdir):
    """A folder of small models: -j 1 against -j N (N = the cores), same output; and, as the
    machine's own ceiling for that ratio, N separate -j 1 processes started at once, each on 1/N
    of the files (no shared memory or locks between them: what the cores give, not headcount)."""
    n = args.folder
    folder = os.path.join(workdir, f"folder_{n}")
    os.makedirs(folder)
    log(f"[folder] generating {n} small encoders in {folder} ...")
    for i in range(n):
        model = build_transformer_encoder(4, seed=args.seed + i)
        save_model(model, os.path.join(folder, f"model_{i:04d}.onnx"))
    cores = os.cpu_count() or 1
    # The same files split into `cores` parts (hard links: no copy), for the separate processes.
    parts = [os.path.join(workdir, f"folder_{n}_part{k}") for k in range(cores)]
    for k, part in enumerate(parts):
        os.makedirs(part)
        for i in range(k, n, cores):
            name = f"model_{i:04d}.onnx"
            try:
                os.link(os.path.join(folder, name), os.path.join(part, name))
            except OSError:
                shutil.copyfile(os.path.join(folder, name), os.path.join(part, name))
    quoted = " ".join(shlex.quote(a) for a in [args.headcount, "audit"])
    at_once = " ".join(f"{quoted} {shlex.quote(p)} --format json -j 1 >/dev/null &" for p in parts) + " wait"
    res = measure_cmds(runner, {
        "j1": [args.headcount, "audit", folder, "--format", "json", "-j", "1"],
        "jn": [args.headcount, "audit", folder, "--format", "json", "-j", str(cores)],
        "par": ["/bin/sh", "-c", at_once],
    }, args.repeat)
    same = res["j1"]["stdout"] == res["jn"]["stdout"]
    ratio = res["j1"]["ms"] / res["jn"]["ms"] if res["jn"]["ms"] > 0 else None
    ceiling = res["j1"]["ms"] / res["par"]["ms"] if res["par"]["ms"] > 0 else None
    print(f"folder:    {n} four-layer encoders (d_model 64), {cores} cores")
    print()
    cols = ["run", "headcount ms", "peak RSS MiB"]
    rows = [("-j 1", res["j1"]), (f"-j {cores}", res["jn"]),
            (f"{cores} separate processes at once, 1/{cores} each", res["par"])]
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|---|---:|---:|")
        for label, r in rows:
            print(f"| {label} | {r['ms']:.1f} | {r['rss_mib']:.1f} |")
    else:
        for label, r in rows:
            print(f"  {label:42} {r['ms']:10.1f} ms  {r['rss_mib']:8.1f} MiB")
    print()
    print(f"speedup -j {cores} over -j 1: {f'{ratio:.2f}x' if ratio else '-'}; outputs {'identical' if same else 'DIFFER'}")
    print(f"the machine's ceiling, {cores} separate processes at once over -j 1: {f'{ceiling:.2f}x' if ceiling else '-'}")
    target = 0.8 * cores
    print(f"Target (informational): >= {target:.1f}x: {'MET' if ratio and ratio >= target and same else 'MISSED'}")
    if not args.keep:
        shutil.rmtree(folder)
        for part in parts:
            shutil.rmtree(part)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--headcount", default="build/headcount",
                    help="headcount binary (default: build/headcount, relative to cwd or repo root)")
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="interpreter with onnx for the onnx.load baseline (default: /usr/bin/python3)")
    ap.add_argument("--sizes", default=DEFAULT_SIZES,
                    help=f"comma-separated embedded-weight sizes (default: {DEFAULT_SIZES})")
    ap.add_argument("--layers", nargs="?", const="1000", default=None, metavar="N[,N...]",
                    help="instead of --sizes, time N-layer transformer encoders, one row each "
                         "(default N: 1000; e.g. 1000,10000 also checks that time grows linearly)")
    ap.add_argument("--full-layers", action="store_true",
                    help="with --layers: whole encoder layers (attention, two LayerNorms, a feed-forward; width 32, "
                         "16 initializers per layer; about 52 MB at 1,000 layers) instead of attention alone")
    ap.add_argument("--tied", action="store_true",
                    help="instead of --sizes, time a RoBERTa-shaped tied embedding and LM head (309 MB)")
    ap.add_argument("--folder", type=int, nargs="?", const=200, default=None, metavar="N",
                    help="instead of --sizes, time a folder of N small models at -j 1 and -j CORES (default N: 200)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per command (default: 3)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--keep", action="store_true", help="keep the generated models and temp dir")
    ap.add_argument("--tmpdir", default=None, help="parent of the temp dir (default: $TMPDIR or /tmp)")
    ap.add_argument("--seed", type=int, default=0, help="RNG seed for weights (default: 0)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler for measure.c")
    ap.add_argument("--no-check", action="store_true", help="skip onnx.checker on generated models")
    args = ap.parse_args(argv)

    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    if args.layers is not None:
        try:
            args.layers = [int(x) for x in args.layers.split(",") if x.strip()]
        except ValueError:
            ap.error("--layers takes layer counts separated by commas")
        if not args.layers or min(args.layers) < 1:
            ap.error("--layers must be >= 1")
    if args.full_layers and args.layers is None:
        ap.error("--full-layers goes with --layers")
    try:
        for s in args.sizes.split(","):
            if s.strip():
                parse_size(s)
    except ValueError as e:
        ap.error(str(e))
    hc = args.headcount
    if not os.path.exists(hc) and not os.path.isabs(hc) and os.path.exists(os.path.join(REPO_ROOT, hc)):
        hc = os.path.join(REPO_ROOT, hc)
    if not (os.path.isfile(hc) and os.access(hc, os.X_OK)):
        print(f"error: headcount binary not found or not executable: {args.headcount}", file=sys.stderr)
        return 2
    args.headcount = os.path.abspath(hc)

    workdir = tempfile.mkdtemp(prefix="headcount-bench-", dir=args.tmpdir)
    try:
        runner = Runner(workdir, args.cc)
        imp = [runner.run([args.python, "-c", PY_IMPORT_ONLY_SRC]) for _ in range(args.repeat)]
        if imp[0]["rc"] != 0:
            print(f"error: {args.python} cannot import onnx: {imp[0]['stderr']}", file=sys.stderr)
            return 2
        print_preamble(args, runner, min(r["wall"] for r in imp) * 1000.0)
        if args.layers is not None:
            run_layers(args, runner, workdir)
        elif args.tied:
            run_tied(args, runner, workdir)
        elif args.folder is not None:
            run_folder(args, runner, workdir)
        else:
            run_sizes(args, runner, workdir)
    finally:
        if args.keep:
            log(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
