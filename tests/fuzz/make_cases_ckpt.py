#!/usr/bin/env python3
"""Writes the checkpoint files of issue 37's wild classes (run with /usr/bin/python3), and counts
them side by side with headcount.

regressions/ckpt-*.safetensors      one tensor of each dtype (U8..F64, 6 elements each), two
                                    BatchNorms with 0-d I64 num_batches_tracked, an MLX header
                                    with "__metadata__": null;
regressions-gguf/ckpt-*.gguf        a llama-style file written big-endian (llama.cpp's
                                    gguf-convert-endian twin) and little-endian, a GGUF v2 Q8_0
                                    ffn_down of rows of 172 elements packed across the tensor, a
                                    Q8_0 tensor that is not whole blocks even packed, a big-endian
                                    version 1 and a big-endian count of 2^63, an all-F32 file;
corpus-gguf/, corpus/               the valid ones again, as seeds of the fuzz harnesses;
regressions-cases/ckpt-*/           the big-endian file beside its twin, the partial blocks under
                                    --fail-on error, the integer buffers, the f16 cache, run by
                                    the CLI with what their report must say.

The GGUF layout is written here by hand (struct), in either byte order, as gguf-py lays it out;
the data is zeros. The output is deterministic.

    make_cases_ckpt.py                   writes the files
    make_cases_ckpt.py --check BINARY    counts every element of every file this script writes
                                         and of the bundled samples (safetensors, GGUF) from the
                                         headers, by this script's own reader, and compares the
                                         sum with `BINARY audit --format json`'s parameters.stored
"""
import json
import os
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "..", "..", "samples")

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q",
       F64: "d"}
# ggml type: (id, elements per block, bytes per block), from ggml-common.h.
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q8_0": (8, 32, 34)}
SIZES = {0: (1, 4), 1: (1, 2), 8: (32, 34)}


def gguf(kvs, tensors, version=3, big=False, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, ne innermost first, type name)]."""
    o = ">" if big else "<"
    s = lambda b: struct.pack(o + "Q", len(b.encode())) + b.encode()

    def value(t, v):
        if t == STRING:
            return s(v)
        if t == ARRAY:
            et, items = v
            return struct.pack(o + "IQ", et, len(items)) + b"".join(value(et, x) for x in items)
        return struct.pack(o + FMT[t], v)

    head = b"GGUF" + struct.pack(o + "IQQ", version, len(tensors), len(kvs))
    for key, t, v in kvs:
        head += s(key) + struct.pack(o + "I", t) + value(t, v)
    size = 0
    for name, ne, tname in tensors:
        tid, block, nbytes = TYPES[tname]
        elements = 1
        for n in ne:
            elements *= n
        head += s(name) + struct.pack(o + "I", len(ne)) + struct.pack(o + "%dQ" % len(ne), *ne)
        head += struct.pack(o + "IQ", tid, size)
        size += elements // block * nbytes
        size = (size + alignment - 1) // alignment * alignment
    head += b"\0" * (-len(head) % alignment)
    return head + b"\0" * size


def safetensors(tensors, metadata="absent"):
    """[(name, dtype, shape, bytes per element)] in order; metadata "absent", None or a dict."""
    header, offset = {}, 0
    if metadata != "absent":
        header["__metadata__"] = metadata
    for name, dtype, shape, size in tensors:
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(offset)


def llama(width=32, heads=4, kv=2, ff=64, vocab=50, types=("F16", "Q8_0", "F32")):
    emb, mat, norm = types
    kvs = [("general.architecture", STRING, "llama"), ("llama.block_count", U32, 1),
           ("llama.embedding_length", U32, width), ("llama.feed_forward_length", U32, ff),
           ("llama.attention.head_count", U32, heads), ("llama.attention.head_count_kv", U32, kv),
           ("llama.context_length", U64, 2048), ("llama.rope.freq_base", F32, 10000.0),
           ("test.i16", I16, -7), ("test.f64", F64, 0.125),
           ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<s>", "</s>", "a"])),
           ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, -1.0, -2.0]))]
    d = width // heads
    tensors = [("token_embd.weight", [width, vocab], emb),
               ("blk.0.attn_norm.weight", [width], norm), ("blk.0.attn_q.weight", [width, width], mat),
               ("blk.0.attn_k.weight", [width, kv * d], mat), ("blk.0.attn_v.weight", [width, kv * d], mat),
               ("blk.0.attn_output.weight", [width, width], mat), ("blk.0.ffn_norm.weight", [width], norm),
               ("blk.0.ffn_gate.weight", [width, ff], mat), ("blk.0.ffn_up.weight", [width, ff], mat),
               ("blk.0.ffn_down.weight", [ff, width], mat),
               ("output_norm.weight", [width], norm), ("output.weight", [width, vocab], emb)]
    return kvs, tensors


def files():
    """{relative path: bytes}."""
    out = {}
    kvs, tensors = llama()
    for folder in ("regressions-gguf", "corpus-gguf"):
        out[folder + "/ckpt-llama-big-endian.gguf"] = gguf(kvs, tensors, big=True)
        out[folder + "/ckpt-llama-little-endian.gguf"] = gguf(kvs, tensors)
    # A GGUF v2 Q8_0 ffn_down of rows of 172 (ne {172, 64}): 11,008 elements in 344 blocks, 11,696 bytes.
    partial = gguf([("general.architecture", STRING, "llama"), ("llama.block_count", U32, 1),
                    ("llama.embedding_length", U32, 64)],
                   [("blk.0.ffn_down.weight", [172, 64], "Q8_0"), ("blk.0.ffn_norm.weight", [64], "F32")], version=2)
    out["regressions-gguf/ckpt-partial-blocks-q8_0-v2.gguf"] = partial
    out["corpus-gguf/ckpt-partial-blocks-q8_0-v2.gguf"] = partial
    out["regressions-gguf/ckpt-partial-blocks-big-endian.gguf"] = gguf(
        [], [("blk.0.ffn_down.weight", [172, 64], "Q8_0")], version=2, big=True)
    # 5 x 7 = 35 elements of Q8_0: not whole blocks even packed (refused). The writer's own size
    # (35 // 32 blocks) is what the file holds; the reader refuses it before placing it.
    out["regressions-gguf/ckpt-partial-blocks-not-packed.gguf"] = gguf([], [("x", [5, 7], "Q8_0")])
    pad = lambda b: b + b"\0" * (4096 - len(b))
    out["regressions-gguf/ckpt-big-endian-version-1.gguf"] = pad(b"GGUF" + struct.pack(">III", 1, 0, 0))
    out["regressions-gguf/ckpt-big-endian-tensor-count-2-63.gguf"] = pad(b"GGUF" + struct.pack(">IQQ", 3, 2**63, 0))
    out["regressions-gguf/ckpt-big-endian-string-2-64-1.gguf"] = pad(
        b"GGUF" + struct.pack(">IQQ", 3, 0, 1) + struct.pack(">Q", 2**64 - 1))
    kvs, tensors = llama(types=("F32", "F32", "F32"))
    out["regressions-gguf/ckpt-llama-all-f32.gguf"] = gguf(kvs, tensors)
    # One [2, 3] tensor of each dtype: 54 elements; two BatchNorms with 0-d num_batches_tracked.
    each = [("t_" + d, d, [2, 3], n) for d, n in
            [("U8", 1), ("U16", 2), ("U32", 4), ("I8", 1), ("I16", 2), ("I32", 4), ("F16", 2), ("F32", 4), ("F64", 8)]]
    bn = []
    for layer in range(2):
        p = "bn%d." % layer
        bn += [(p + f, "F32", [4], 4) for f in ("weight", "bias", "running_mean", "running_var")]
        bn += [(p + "num_batches_tracked", "I64", [], 8)]
    for folder in ("regressions", "corpus"):
        out[folder + "/ckpt-dtypes-each-6.safetensors"] = safetensors(each)
        out[folder + "/ckpt-batchnorm-0d-i64.safetensors"] = safetensors(bn)
        out[folder + "/ckpt-metadata-null.safetensors"] = safetensors([("w", "F32", [2, 3], 4)], metadata=None)
    return out


# ---- the side-by-side count: this script's own header readers ----

def gguf_elements(data):
    """The sum of every tensor's shape product, read from the header in its byte order."""
    (v,) = struct.unpack_from("<I", data, 4)
    o = "<" if v & 0xFFFF else ">"
    version, tensors, kvs = struct.unpack_from(o + "IQQ", data, 4)
    at = 24

    def skip(t):
        nonlocal at
        if t == STRING:
            (n,) = struct.unpack_from(o + "Q", data, at)
            at += 8 + n
        elif t == ARRAY:
            et, n = struct.unpack_from(o + "IQ", data, at)
            at += 12
            for _ in range(n):
                skip(et)
        else:
            at += struct.calcsize(FMT[t])

    for _ in range(kvs):
        skip(STRING)
        (t,) = struct.unpack_from(o + "I", data, at)
        at += 4
        skip(t)
    total = 0
    for _ in range(tensors):
        skip(STRING)
        (dims,) = struct.unpack_from(o + "I", data, at)
        ne = struct.unpack_from(o + "%dQ" % dims, data, at + 4)
        at += 4 + 8 * dims + 12
        n = 1
        for d in ne:
            n *= d
        total += n
    return total


def safetensors_elements(data):
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    total = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        e = 1
        for d in t["shape"]:
            e *= d
        total += e
    return total


# Files whose header this reader walks but that the format refuses: Q8_0 elements that are not
# whole blocks even packed, and GGUF version 1 (32-bit counts).
REFUSED = {"ckpt-partial-blocks-not-packed.gguf", "ckpt-big-endian-version-1.gguf"}


def check(binary):
    paths = sorted(os.path.join(HERE, p) for p in files() if not p.startswith("corpus"))
    paths += sorted(os.path.join(SAMPLES, f) for f in os.listdir(SAMPLES) if f.endswith((".gguf", ".safetensors")))
    bad = 0
    for path in paths:
        data = open(path, "rb").read()
        try:
            mine = gguf_elements(data) if path.endswith(".gguf") else safetensors_elements(data)
        except (struct.error, OverflowError, MemoryError, ValueError):
            mine = "unreadable"  # a hostile header: headcount must refuse it too
        r = subprocess.run([binary, "audit", "--format", "json", path], capture_output=True, text=True)
        try:
            stored = json.loads(r.stdout)["models"][0]["parameters"]["stored"]
        except (ValueError, KeyError, IndexError):
            stored = "refused: " + r.stderr.strip()
        refused = isinstance(stored, str)
        if mine == "unreadable" or os.path.basename(path) in REFUSED:
            same = refused  # a header no reader takes: refused, with one line
        else:
            same = stored == mine
        bad += not same
        print("%-7s %-50s header %12s  headcount %s" % ("same" if same else "DIFF", os.path.relpath(path, HERE), mine, stored))
    return bad


def cases(written):
    """Folders of regressions-cases/: (files, args, expect lines)."""
    g = lambda name: written["regressions-gguf/" + name]
    return {
        "ckpt-big-endian-beside-its-twin": (
            {"be.gguf": g("ckpt-llama-big-endian.gguf"), "le.gguf": g("ckpt-llama-little-endian.gguf")},
            "audit be.gguf le.gguf",
            ["exit 0", "stdout: checkpoint  gguf v3 big-endian", "stdout: 12,512 stored in 12 tensors",
             "stderr-not: error"]),
        "ckpt-partial-blocks-fail-on-error": (
            {"partial.gguf": g("ckpt-partial-blocks-q8_0-v2.gguf")},
            "audit partial.gguf --fail-on error",
            ["exit 1", "stdout: error [gguf-partial-blocks]: tensor 'blk.0.ffn_down.weight' (Q8_0)",
             "stdout: 11,072 stored in 2 tensors"]),
        "ckpt-integer-tensors-are-buffers": (
            {"dtypes.safetensors": written["regressions/ckpt-dtypes-each-6.safetensors"]},
            "audit dtypes.safetensors",
            ["exit 0", "stdout: 54 stored in 9 tensors", "stdout: an integer tensor (int32)"]),
        "ckpt-all-f32-gguf-f16-cache": (
            {"f32.gguf": g("ckpt-llama-all-f32.gguf")},
            "audit f32.gguf --format json",
            ["exit 0", "stdout: llama.cpp's default K/V cache type (f16)"]),
    }


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(1 if check(sys.argv[2]) else 0)
    written = files()
    for rel, data in written.items():
        with open(os.path.join(HERE, rel), "wb") as f:
            f.write(data)
    for folder, (inputs, args, expect) in cases(written).items():
        path = os.path.join(HERE, "regressions-cases", folder)
        os.makedirs(path, exist_ok=True)
        for name, data in inputs.items():
            with open(os.path.join(path, name), "wb") as f:
                f.write(data)
        with open(os.path.join(path, "args"), "w") as f:
            f.write(args + "\n")
        with open(os.path.join(path, "expect"), "w") as f:
            f.write("\n".join(expect) + "\n")


if __name__ == "__main__":
    main()
