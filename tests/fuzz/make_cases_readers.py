#!/usr/bin/env python3
"""Writes the checkpoint readers' hostile case folders of issue 39 (run with /usr/bin/python3).

regressions-cases/index-naming-64000-shards/   an index (under 1 MB) whose weight_map names
    64,000 distinct shards, none present. Each entry was looked up in the shard list linearly:
    6.8 s. The first shard in name order is missing: one error line.
regressions-cases/one-shard-under-400-names/   one shard of 10,000 empty tensors listed by an
    index under 400 names, symlinks in the folder to it. Every name was parsed and kept before
    any check: 10.9 s, 1.1 GB. The first shard is checked before the next is read: it holds
    't1', which the index gives the second name.
regressions-cases/gguf-split-part-twice/   a GGUF split in 2 whose part 2 is a symlink to part 1:
    one file under two names, its tensors never counted twice.

The output is deterministic: running it twice gives the same bytes.
"""
import json
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "regressions-cases")
sys.path.insert(0, HERE)
from make_gguf_corpus import gguf, U16, I32, STRING  # noqa: E402

DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def short_name(i):
    """i in base 62, three digits: 238,328 distinct names of 3 bytes."""
    return DIGITS[i // 3844] + DIGITS[i // 62 % 62] + DIGITS[i % 62]


def case(name, args, expect, files, links=()):
    folder = os.path.join(CASES, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for fname, data in files.items():
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(data)
    for link, target in links:
        os.symlink(target, os.path.join(folder, link))
    with open(os.path.join(folder, "args"), "w") as f:
        f.write(args + "\n")
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("\n".join(expect) + "\n")


def compact(doc):
    return json.dumps(doc, separators=(",", ":")).encode()


def index_of_64000_shards():
    n = 64000
    weight_map = {short_name(i): short_name(i) for i in range(n)}
    first = min(weight_map.values())
    case("index-naming-64000-shards", "audit model.safetensors.index.json",
         ["exit 2",
          "stderr: headcount: error: model.safetensors.index.json: shard %s: cannot open: No such file or directory"
          % first],
         {"model.safetensors.index.json": compact({"weight_map": weight_map})})


def shard_under_400_names():
    names, tensors = 400, 10000
    header = compact({"t%d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}
                      for i in range(tensors)})
    header += b" " * (-len(header) % 8)
    weight_map = {"t%d" % i: "n%d.safetensors" % (i % names) for i in range(tensors)}
    case("one-shard-under-400-names", "audit model.safetensors.index.json",
         ["exit 2",
          "stderr: headcount: error: model.safetensors.index.json: tensor 't1' is in shard n0.safetensors, "
          "where the index says n1.safetensors"],
         {"shard.safetensors": struct.pack("<Q", len(header)) + header,
          "model.safetensors.index.json": compact({"weight_map": weight_map})},
         [("n%d.safetensors" % k, "shard.safetensors") for k in range(names)])


def split_part_twice():
    kvs = [("split.no", U16, 0), ("split.count", U16, 2), ("split.tensors.count", I32, 2),
           ("general.architecture", STRING, "llama")]
    case("gguf-split-part-twice", "audit m-00001-of-00002.gguf",
         ["exit 2",
          "stderr: headcount: error: m-00001-of-00002.gguf: split part m-00002-of-00002.gguf: is the same file as "
          "split part m-00001-of-00002.gguf: one file under two names"],
         {"m-00001-of-00002.gguf": gguf(kvs, [("output.weight", [64, 4], "Q8_0")])},
         [("m-00002-of-00002.gguf", "m-00001-of-00002.gguf")])


def main():
    index_of_64000_shards()
    shard_under_400_names()
    split_part_twice()


if __name__ == "__main__":
    main()
