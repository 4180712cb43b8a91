#!/usr/bin/env python3
"""Measures the README's bound on hostile files: the time and peak memory of one audit.

    /usr/bin/python3 tests/fuzz/bounds.py build/headcount DIR_OR_FILE...

Runs `headcount audit FILE -f F` for every file under 1 MB and every format, one process
each, and prints the slowest runs and the largest peak RSS. A folder that holds an `args` file
is a hostile case (tests/fuzz/regressions-cases/NAME): its arguments run once, in a copy of the
folder; a folder of such folders runs each. Use it on a fuzzing campaign's corpus (see
tests/fuzz/README.md). It asserts nothing; the README quotes what it printed.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

FORMATS = ["text", "json", "jsonl", "markdown", "sarif", "github", "html"]


def files(args):
    for a in args:
        if os.path.isdir(a):
            for name in sorted(os.listdir(a)):
                path = os.path.join(a, name)
                if os.path.isfile(path):
                    yield path
        else:
            yield a


def cases(args):
    for a in args:
        if os.path.isfile(os.path.join(a, "args")):
            yield a
        elif os.path.isdir(a):
            for name in sorted(os.listdir(a)):
                if os.path.isfile(os.path.join(a, name, "args")):
                    yield os.path.join(a, name)


def case_bytes(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs
               if not os.path.islink(os.path.join(d, f)))


def timed(argv, cwd=None):
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, os.waitstatus_to_exitcode(status), usage.ru_maxrss



def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    folders = [c for c in cases(sys.argv[2:]) if case_bytes(c) < 1 << 20]
    plain = [a for a in sys.argv[2:] if not any(c == a or os.path.dirname(c) == a for c in folders)]
    paths = [p for p in files(plain) if os.path.getsize(p) < 1 << 20]
    worst_time, worst_rss, codes, runs = [], [], {}, 0

    def note(elapsed, code, rss, what, fmt, size):
        nonlocal runs
        codes[code] = codes.get(code, 0) + 1
        runs += 1
        worst_time.append((elapsed, what, fmt, size))
        worst_rss.append((rss, what, fmt, size))

    for path in paths:
        for fmt in FORMATS:
            elapsed, code, rss = timed([binary, "audit", path, "-f", fmt])
            note(elapsed, code, rss, path, fmt, os.path.getsize(path))
    for folder in folders:
        with open(os.path.join(folder, "args")) as f:
            argv = f.readline().split()
        with tempfile.TemporaryDirectory() as work:
            copy = os.path.join(work, "case")
            shutil.copytree(folder, copy, symlinks=True)
            elapsed, code, rss = timed([binary] + argv, cwd=copy)
        note(elapsed, code, rss, folder, "case", case_bytes(folder))
    worst_time.sort(reverse=True)
    worst_rss.sort(reverse=True)
    print(f"{len(paths)} files and {len(folders)} case folders under 1 MB, {runs} runs; exit codes: "
          + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
    for t, p, f, size in worst_time[:3]:
        print(f"  slowest  {t * 1000:8.1f} ms  {f:8s} {p} ({size:,} bytes)")
    for r, p, f, size in worst_rss[:3]:
        print(f"  largest  {r / 1024:8.1f} MiB {f:8s} {p} ({size:,} bytes)")
    return 1 if any(c < 0 or c > 2 for c in codes) else 0


if __name__ == "__main__":
    sys.exit(main())
