#!/usr/bin/python3
"""headcount's GGUF counts against an independent parser's, on the same files.

Usage: side_by_side.py HEADCOUNT NPM_PREFIX FILE.gguf...

NPM_PREFIX holds node_modules/@huggingface/gguf (./quickstart.sh test installs it there with npm).
For each file, the tensors and the sum of their element counts that Hugging Face's parser reads
must equal the tensors headcount lists in its JSON report and the sum of their elements. A missing
node or parser fails the test: it never skips.
"""
import json
import os
import subprocess
import sys


def main():
    headcount, prefix, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "count.mjs")
    if not os.path.isdir(os.path.join(prefix, "node_modules", "@huggingface", "gguf")):
        sys.exit(f"FAIL: @huggingface/gguf is not installed under {prefix} (./quickstart.sh test installs it)")
    env = dict(os.environ, NODE_PATH=os.path.join(prefix, "node_modules"))
    # Node resolves an ES module's imports from the script's folder up: run a copy beside node_modules.
    copy = os.path.join(prefix, "count.mjs")
    with open(script) as src, open(copy, "w") as dst:
        dst.write(src.read())
    out = subprocess.run(["node", copy, *files], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"FAIL: the independent parser failed: {out.stderr.strip()}")
    theirs = {r["path"]: r for r in map(json.loads, out.stdout.splitlines())}
    failures = 0
    for f in files:
        report = subprocess.run([headcount, "audit", f, "--format", "json"], capture_output=True, text=True)
        if report.returncode not in (0, 1):
            print(f"FAIL: {f}: headcount exited {report.returncode}: {report.stderr.strip()}")
            failures += 1
            continue
        model = json.loads(report.stdout)["models"][0]
        ours = (len(model["tensors"]), sum(t["elements"] for t in model["tensors"]))
        other = (theirs[f]["tensors"], int(theirs[f]["elements"]))
        status = "ok" if ours == other else "FAIL"
        failures += status == "FAIL"
        print(f"{status}: {os.path.basename(f)}: headcount {ours[0]} tensors, {ours[1]:,} elements; "
              f"@huggingface/gguf {other[0]} tensors, {other[1]:,} elements")
    if failures or not files:
        sys.exit(1)


if __name__ == "__main__":
    main()
