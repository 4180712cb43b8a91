#!/usr/bin/python3
"""The README and docs/ say what headcount does; this test holds them to it.

Usage: check_docs.py HEADCOUNT REPO_DIR

1. Every ```console block is run: a line starting with "$ " is a command (run by bash in a
   scratch folder holding a copy of samples/, with `headcount` on PATH), the lines after it are
   its output (the folder also holds tests/configs/, also as configs/). A line "..." stands for any
   number of lines. A trailing "# exit N" on the command
   says the exit code it must have (default 0).
2. Every ```toml block is a config headcount must accept (`--config` does not exit 2).
3. Every option of `headcount audit --help` and `headcount explain --help`, and every format, is
   in docs/usage.md; every rule id in docs/rules.md; every gate (the SARIF log's gate rules) in
   docs/ci.md; every field of docs/headcount.schema.json in docs/json.md.
4. Every relative link points to a file that exists, and every #anchor to a heading.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def markdown_files(repo):
    files = [os.path.join(repo, "README.md")]
    docs = os.path.join(repo, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


def blocks(text, lang):
    """(line number, body) of every fenced block of the language."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```" + lang:
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            out.append((start + 1, lines[start:j]))
            i = j
        i += 1
    return out


def matches(expected, actual):
    """Lines equal, with "..." matching any run of lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def anchor(heading):
    """GitHub's anchor for a heading."""
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def main():
    binary, repo = (os.path.abspath(a) for a in sys.argv[1:3])
    # The Python module's folder (build/python) when it was built: examples that import headcount
    # run with it on PYTHONPATH. Without it they are reported as not run (CI builds it).
    python_path = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
    skipped = 0
    failures = []
    work = tempfile.mkdtemp(prefix="headcount-docs-")
    try:
        shutil.copytree(os.path.join(repo, "samples"), os.path.join(work, "samples"))
        shutil.copytree(os.path.join(repo, "tests", "configs"), os.path.join(work, "configs"))
        shutil.copytree(os.path.join(repo, "tests", "configs"), os.path.join(work, "tests", "configs"))  # as the README names them
        bindir = os.path.join(work, ".bin")
        os.mkdir(bindir)
        os.symlink(binary, os.path.join(bindir, "headcount"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), COLUMNS="100")
        if python_path:
            env["PYTHONPATH"] = python_path
        env.pop("GITHUB_STEP_SUMMARY", None)
        ran = 0
        for path in markdown_files(repo):
            text = open(path, encoding="utf-8").read()
            name = os.path.relpath(path, repo)
            for line_no, body in blocks(text, "console"):
                k = 0
                while k < len(body):
                    if not body[k].startswith("$ "):
                        failures.append(f"{name}:{line_no + k}: a console block must start with '$ COMMAND'")
                        break
                    command = body[k][2:]
                    m = re.search(r"#\s*exit (\d+)\s*$", command)
                    want = int(m.group(1)) if m else 0
                    k += 1
                    expected = []
                    while k < len(body) and not body[k].startswith("$ "):
                        expected.append(body[k].rstrip())
                        k += 1
                    while expected and not expected[-1]:
                        expected.pop()
                    if "import headcount" in command and not python_path:
                        skipped += 1
                        continue
                    p = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True)
                    ran += 1
                    actual = [l.rstrip() for l in p.stdout.split("\n")]
                    while actual and not actual[-1]:
                        actual.pop()
                    where = f"{name}:{line_no}: $ {command}"
                    if p.returncode != want:
                        failures.append(f"{where}: exit {p.returncode}, the docs say {want}; stderr: {p.stderr[:300]}")
                    elif not matches(expected, actual):
                        first = next((i for i, (e, a) in enumerate(zip(expected, actual)) if e != a and e != "..."), None)
                        hint = f" (first difference at output line {first + 1}: docs {expected[first]!r}, tool {actual[first]!r})" if first is not None else ""
                        failures.append(f"{where}: the output differs from the docs{hint}")
            for line_no, body in blocks(text, "toml"):
                config = os.path.join(work, "example.toml")
                with open(config, "w") as f:
                    f.write("\n".join(body) + "\n")
                p = subprocess.run([binary, "audit", "samples/bert_tiny.onnx", "--config", config, "-f", "json"], cwd=work,
                                   capture_output=True, text=True)
                ran += 1
                if p.returncode == 2:
                    failures.append(f"{name}:{line_no}: headcount refuses this config: {p.stderr.strip()[:300]}")
            # Links.
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"^[a-z]+:", target):
                    continue
                file, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
                if not os.path.exists(dest):
                    failures.append(f"{name}: link to {target}: no such file")
                elif frag and dest.endswith(".md"):
                    headings = [anchor(h) for h in re.findall(r"^#+ (.*)$", open(dest, encoding="utf-8").read(), re.M)]
                    if frag not in headings:
                        failures.append(f"{name}: link to {target}: no such heading")

        # Completeness.
        def doc(rel):
            return open(os.path.join(repo, rel), encoding="utf-8").read()

        usage, rules_md, ci, json_md = doc("docs/usage.md"), doc("docs/rules.md"), doc("docs/ci.md"), doc("docs/json.md")
        for sub in ("audit", "explain"):
            help_text = subprocess.run([binary, sub, "--help"], capture_output=True, text=True).stdout
            for option in sorted(set(re.findall(r"(--[a-z][a-z0-9-]+)", help_text.split("Rules:")[0]))):
                if option != "--help" and not re.search(r"`[^`]*(?<![\w-])" + re.escape(option) + r"(?![\w-])", usage):
                    failures.append(f"docs/usage.md does not describe {sub} {option}")
        help_text = subprocess.run([binary, "explain", "--help"], capture_output=True, text=True).stdout
        rule_ids = re.findall(r"^  ([a-z0-9-]+) \((?:error|warning|info)\):", help_text, re.M)
        if len(rule_ids) < 10:
            failures.append(f"found only {len(rule_ids)} rules in 'headcount explain --help'")
        for rule in rule_ids:
            if f"`{rule}`" not in rules_md:
                failures.append(f"docs/rules.md does not describe the rule {rule}")
        for fmt in ("text", "json", "jsonl", "markdown", "sarif", "github"):
            if f"`{fmt}`" not in usage:
                failures.append(f"docs/usage.md does not describe the format {fmt}")
        # Every gate: the SARIF log declares one rule per gate (gate-ID), from the gate table.
        sarif = json.loads(subprocess.run([binary, "audit", os.path.join(repo, "samples", "bert_tiny.onnx"), "-f", "sarif"],
                                          capture_output=True, text=True).stdout)
        gates = [r["id"][len("gate-"):] for r in sarif["runs"][0]["tool"]["driver"]["rules"] if r["id"].startswith("gate-")]
        if len(gates) < 9:
            failures.append(f"found only {len(gates)} gates in the SARIF log's rules")
        for gate in gates:
            if f"`{gate}`" not in ci and f"`--{gate}" not in ci:
                failures.append(f"docs/ci.md does not describe the gate {gate}")
        # Every row of the checkpoint name tables, with its role, in docs/names.md.
        names_md = doc("docs/names.md")
        names_text = subprocess.run([binary, "explain", "--names"], capture_output=True, text=True).stdout
        name_rows = re.findall(r"^  (\w+) +(\S+) +(\w+)$", names_text, re.M)
        name_rows = [r for r in name_rows if r[0] != "family"]
        if len(name_rows) < 100:
            failures.append(f"found only {len(name_rows)} rows in 'headcount explain --names'")
        for family, path, role in name_rows:
            if f"| `{path}` | `{role}` |" not in names_md:
                failures.append(f"docs/names.md does not list the {family} row {path} ({role})")
        schema = json.load(open(os.path.join(repo, "docs", "headcount.schema.json")))
        fields = set()

        def walk(node):
            if isinstance(node, dict):
                for k, v in node.get("properties", {}).items():
                    fields.add(k)
                    walk(v)
                for v in node.values():
                    if isinstance(v, (dict, list)):
                        walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)

        walk(schema)
        for field in sorted(fields):
            if f"`{field}`" not in json_md and f".{field}`" not in json_md and f"`{field}[]" not in json_md and f".{field}[]" not in json_md:
                failures.append(f"docs/json.md does not describe the field {field}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"ran {ran} documented examples")
    if skipped:
        print(f"not run: {skipped} Python examples (the module was not built: configure with -DHEADCOUNT_PYTHON=ON)")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
