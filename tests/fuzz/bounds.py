#!/usr/bin/env python3
"""Measures the README's bound on hostile files: the time and peak memory of one audit.

    /usr/bin/python3 tests/fuzz/bounds.py build/headcount DIR_OR_FILE...

Runs `headcount audit FILE -f F` for every file under 1 MB and every format, one process
each, and prints the slowest runs and the largest peak RSS. Use it on a fuzzing campaign's corpus
(see tests/fuzz/README.md). It asserts nothing; the README quotes what it printed.
"""
import os
import subprocess
import sys
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



def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, paths = sys.argv[1], [p for p in files(sys.argv[2:]) if os.path.getsize(p) < 1 << 20]
    worst_time, worst_rss, codes, runs = [], [], {}, 0
    for path in paths:
        for fmt in FORMATS:
            start = time.perf_counter()
            proc = subprocess.Popen([binary, "audit", path, "-f", fmt], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - start
            code = os.waitstatus_to_exitcode(status)
            codes[code] = codes.get(code, 0) + 1
            runs += 1
            worst_time.append((elapsed, path, fmt))
            worst_rss.append((usage.ru_maxrss, path, fmt))
    worst_time.sort(reverse=True)
    worst_rss.sort(reverse=True)
    print(f"{len(paths)} files under 1 MB, {runs} runs; exit codes: "
          + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
    for t, p, f in worst_time[:3]:
        print(f"  slowest  {t * 1000:8.1f} ms  {f:8s} {p} ({os.path.getsize(p):,} bytes)")
    for r, p, f in worst_rss[:3]:
        print(f"  largest  {r / 1024:8.1f} MiB {f:8s} {p} ({os.path.getsize(p):,} bytes)")
    return 1 if any(c < 0 or c > 2 for c in codes) else 0


if __name__ == "__main__":
    sys.exit(main())
