#!/usr/bin/python3
"""Every JSON, JSON-lines and SARIF report headcount writes validates against its schema.

Usage: validate.py HEADCOUNT SAMPLES_DIR REPO_DIR

Runs the binary the way CI jobs do (every sample; a missing, a truncated and a text file beside
good ones; gates, a baseline, a config, --no-content; one model failing every gate of the gate
table at once, each of which must appear failed) and checks each report with python3-jsonschema:
--format json and jsonl against docs/headcount.schema.json (draft 2020-12), --format sarif against
the OASIS SARIF 2.1.0 schema in tests/sarif/. The schemas are first shown to reject a report with
a field they do not describe, so a schema that accepts anything fails this test.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import jsonschema  # python3-jsonschema; a missing module fails the test, it never skips


def every_gate_run(binary, samples, work):
    """The arguments of one audit that fails every gate of the gate table: gates/model.onnx is
    samples/llama_tiny.onnx (2 blocks of 4 query heads, findings at info), audited with each budget
    at 1, --expect-heads 3, --fail-on info, a --baseline made from gpt2_tiny.onnx at the same path
    (other counts), and a --checkpoint whose embed_tokens.weight has every value negated."""
    folder = os.path.join(work, "gates")
    os.mkdir(folder)
    model = os.path.join(folder, "model.onnx")
    shutil.copyfile(os.path.join(samples, "gpt2_tiny.onnx"), model)
    subprocess.run([binary, "audit", "gates/model.onnx", "-f", "json", "-o", "gates/baseline.json"], cwd=work,
                   capture_output=True)
    shutil.copyfile(os.path.join(samples, "llama_tiny.onnx"), model)
    # safetensors: an 8-byte little-endian header length, the JSON header, then the data.
    data = bytearray(open(os.path.join(samples, "llama_tiny.safetensors"), "rb").read())
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    tensor = header["embed_tokens.weight"]
    assert tensor["dtype"] == "F32", tensor
    begin, end = (8 + size + o for o in tensor["data_offsets"])
    for sign in range(begin + 3, end, 4):  # the sign bit of each little-endian float32
        data[sign] ^= 0x80
    with open(os.path.join(folder, "changed.safetensors"), "wb") as f:
        f.write(data)
    budgets = []
    for option, limit in (("--max-params", "1"), ("--max-attention-params", "1"), ("--max-bytes", "1"),
                          ("--expect-heads", "3"), ("--max-kv-bytes-per-token", "1"), ("--max-macs-per-token", "1"),
                          ("--max-active-params", "1")):
        budgets += [option, limit]
    return ["gates/model.onnx", *budgets, "--fail-on", "info", "--baseline", "gates/baseline.json",
            "--checkpoint", "gates/changed.safetensors"]


def adapter_gate_run(folder, samples):
    """A PEFT adapter for a model like llama_tiny (width 32, 4 heads, 2 K/V heads of 8) but whose
    v_proj is 32 -> 32, as for a model without grouped K/V: llama_tiny's v_proj is [16, 32], so
    --base models/llama_tiny.safetensors fails the adapter-base gate."""
    sys.path.insert(0, samples)
    from make_adapter import write_peft_adapter
    write_peft_adapter(os.path.join(folder, "adapter"), [("q_proj", 32), ("v_proj", 32)])
    with open(os.path.join(folder, "adapter", "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}, f)
    return ["models/adapter", "--base", "models/llama_tiny.safetensors"]


def every_gate_failed(binary, runs, work):
    """Every gate the binary declares (its SARIF log's gate-ID rules, made from the gate table)
    failed in the json reports of `runs` (which the caller validates against the schema)."""
    sarif = subprocess.run([binary, "audit", *runs[0], "-f", "sarif"], cwd=work, capture_output=True, text=True)
    rules = json.loads(sarif.stdout)["runs"][0]["tool"]["driver"]["rules"]
    declared = {r["id"][len("gate-"):] for r in rules if r["id"].startswith("gate-")}
    failed, out = set(), []
    for args in runs:
        p = subprocess.run([binary, "audit", *args, "-f", "json"], cwd=work, capture_output=True, text=True)
        what = f"headcount audit {' '.join(args)} -f json (exit {p.returncode})"
        doc = json.loads(p.stdout)
        failed |= {g["gate"] for m in doc["models"] for g in m["gates"]}
        if p.returncode != 1 or doc["errors"]:
            out.append(f"{what}: expected exit 1 and no error; stderr: {p.stderr[:300]}")
    what = " and ".join(f"headcount audit {' '.join(args)}" for args in runs)
    if len(declared) < 11:  # 7 budget gates, fail-on, checkpoint, adapter-base, baseline
        out.append(f"the SARIF log declares only {len(declared)} gates: {sorted(declared)}")
    if declared - failed:
        out.append(f"{what}: these gates did not fail: {sorted(declared - failed)}")
    if failed - declared:
        out.append(f"{what}: these gates failed but the SARIF log does not declare them: {sorted(failed - declared)}")
    return out


def main():
    binary, samples, repo = (os.path.abspath(a) for a in sys.argv[1:4])
    report_schema = json.load(open(os.path.join(repo, "docs", "headcount.schema.json")))
    sarif_schema = json.load(open(os.path.join(repo, "tests", "sarif", "sarif-schema-2.1.0.json")))
    jsonschema.Draft202012Validator.check_schema(report_schema)
    jsonschema.Draft7Validator.check_schema(sarif_schema)
    report = jsonschema.Draft202012Validator(report_schema)
    sarif = jsonschema.Draft7Validator(sarif_schema)

    failures = []

    def check(validator, doc, what):
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        for e in errors[:3]:
            failures.append(f"{what}: {'/'.join(str(p) for p in e.path)}: {e.message[:300]}")
        return not errors

    work = tempfile.mkdtemp(prefix="headcount-schema-")
    try:
        folder = os.path.join(work, "models")
        shutil.copytree(samples, folder)
        # Files that cannot be audited, beside the good ones.
        with open(os.path.join(samples, "gpt2_tiny.onnx"), "rb") as f:
            head = f.read(1000)
        with open(os.path.join(folder, "truncated.onnx"), "wb") as f:
            f.write(head)
        with open(os.path.join(folder, "notes.onnx"), "w") as f:
            f.write("not a model\n")
        with open(os.path.join(work, "headcount.toml"), "w") as f:
            f.write('max-params = "25k"\n[[budget]]\npath = "models/bert*"\nexpect-heads = 8\n')

        runs = [
            ["models"],
            ["models", "missing.onnx", "--max-params", "25k", "--fail-on", "info"],
            ["models", "--no-content"],
            ["models/gpt2_tiny.onnx", "--config", "headcount.toml"],
            ["models/bert_tiny.onnx", "models/gpt2_tiny.onnx", "--expect-heads", "8", "--max-bytes", "1kB"],
            # Every budget gate failing at once, on a mixture of experts (the active count).
            ["models/moe_sparse.onnx", "--max-params", "1", "--max-attention-params", "1", "--max-bytes", "1",
             "--expect-heads", "3", "--max-kv-bytes-per-token", "1", "--max-active-params", "1",
             "--max-macs-per-token", "1"],
            # A checkpoint, and a GGUF file, read by their names.
            ["models/llama_tiny.safetensors", "--model-config", "models/llama_tiny.config.json"],
            [os.path.join(repo, "tests", "fuzz", "corpus-gguf", "llama-q4_k_m.gguf")],
        ]
        checked = {"json": 0, "jsonl": 0, "sarif": 0}
        baseline = os.path.join(work, "baseline.json")
        subprocess.run([binary, "audit", "models", "-f", "json", "-o", baseline], cwd=work, capture_output=True)
        runs.append(["models", "--baseline", baseline, "--tolerance", "1%"])
        every_gate = [every_gate_run(binary, samples, work), adapter_gate_run(folder, samples)]
        runs += every_gate
        for args in runs:
            for fmt in ("json", "jsonl", "sarif"):
                p = subprocess.run([binary, "audit", *args, "-f", fmt], cwd=work, capture_output=True, text=True)
                what = f"headcount audit {' '.join(args)} -f {fmt} (exit {p.returncode})"
                if p.returncode not in (0, 1, 2) or not p.stdout:
                    failures.append(f"{what}: no report; stderr: {p.stderr[:300]}")
                    continue
                if fmt == "jsonl":
                    for n, line in enumerate(p.stdout.splitlines(), 1):
                        check(report, json.loads(line), f"{what}, line {n}")
                        checked[fmt] += 1
                else:
                    check(report if fmt == "json" else sarif, json.loads(p.stdout), what)
                    checked[fmt] += 1

        failures += every_gate_failed(binary, every_gate, work)

        # The schemas are strict: an undescribed field or a wrong type is caught.
        p = subprocess.run([binary, "audit", "models/gpt2_tiny.onnx", "-f", "json"], cwd=work, capture_output=True, text=True)
        doc = json.loads(p.stdout)
        doc["models"][0]["parameters"]["surprise"] = 1
        if report.is_valid(doc):
            failures.append("docs/headcount.schema.json accepts a field it does not describe")
        doc = json.loads(p.stdout)
        doc["models"][0]["attention_blocks"][0]["heads"] = "4"
        if report.is_valid(doc):
            failures.append("docs/headcount.schema.json accepts heads as a string")
        p = subprocess.run([binary, "audit", "models/gpt2_tiny.onnx", "-f", "sarif"], cwd=work, capture_output=True, text=True)
        doc = json.loads(p.stdout)
        doc["runs"][0]["results"][0]["level"] = "fatal"
        if sarif.is_valid(doc):
            failures.append("the SARIF schema accepts level 'fatal'")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"validated {checked['json']} json documents, {checked['jsonl']} jsonl records and {checked['sarif']} SARIF logs")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
