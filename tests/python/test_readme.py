"""The README's Python examples, run as written: the notebook lines from the repository root, and
the pytest guard as a test file of its own."""
import os
import re
import subprocess
import sys

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))


def python_blocks():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_readme_has_both_examples():
    assert len(python_blocks()) == 2


def test_the_notebook_example_runs_and_prints_what_its_comments_say():
    code = python_blocks()[0]
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "29184"
    assert lines[1] == "[4, 4]"
    assert lines[2].startswith("[GateFailure(gate='max-params', message=")


def test_the_pytest_guard_passes(tmp_path):
    guard = tmp_path / "test_guard.py"
    guard.write_text(python_blocks()[1])
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore", str(guard)],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
