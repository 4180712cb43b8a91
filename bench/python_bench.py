#!/usr/bin/python3
"""What the Python module costs: headcount.audit on a model already in memory (an
onnx.ModelProto), against the command line's own audit of the same file plus the serialization
the in-memory call must do.

For each size it builds bench/run_bench.py's weights model, saves it, and times (best of
--repeat, each after a warm-up, in one process with a warm page cache):
  cli        `headcount audit FILE --format json` as a child process
  serialize  proto.SerializeToString()
  in-memory  headcount.audit(proto)   (serialize + a private copy on disk + the audit)
  from path  headcount.audit(FILE)
and prints the ratio in-memory / (cli + serialize); the target is at most 1.0.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py --headcount build/headcount
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_bench  # noqa: E402  (the model builders)

import headcount  # noqa: E402


def best(fn, repeat):
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--headcount", default="build/headcount")
    ap.add_argument("--sizes", default="1M,10M,100M")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print("| model | CLI audit | serialize | audit(ModelProto) | audit(path) | in-memory / (CLI + serialize) |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for label in args.sizes.split(","):
            proto = run_bench.build_weights_model(run_bench.parse_size(label))
            path = os.path.join(work, f"weights_{label}.onnx")
            run_bench.save_model(proto, path)
            cli = best(lambda: subprocess.run([args.headcount, "audit", path, "--format", "json"], check=True,
                                              stdout=subprocess.DEVNULL), args.repeat)
            serialize = best(lambda: proto.SerializeToString(), args.repeat)
            memory = best(lambda: headcount.audit(proto), args.repeat)
            from_path = best(lambda: headcount.audit(path), args.repeat)
            assert headcount.audit(proto).parameters.stored == headcount.audit(path).parameters.stored
            print(f"| weights_{label} | {cli:.1f} ms | {serialize:.1f} ms | {memory:.1f} ms | {from_path:.1f} ms | "
                  f"{memory / (cli + serialize):.2f} |")


if __name__ == "__main__":
    main()
