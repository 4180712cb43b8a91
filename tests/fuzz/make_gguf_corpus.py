#!/usr/bin/env python3
"""Writes the GGUF seed corpus of the fuzz_gguf harness (run with /usr/bin/python3).

corpus-gguf/  small valid GGUF files: a llama-style checkpoint in the Q4_K_M mix, a version 2
              file with every metadata type (nested and string arrays too), a mixture-of-experts
              layer, a file with general.alignment 64 and the newer types, and the first part
              of a split file. Tensor data is zeros and tensors are small: the fuzzer works on
              the headers.
regressions-gguf/  one file per hostile header of issue 29, each refused with one message:
              lengths and counts of 2^63 and 2^64 - 1, dims whose product overflows, offsets past
              the end, overlapping tensors, unknown types, arrays nested too deep. Crashes found
              by fuzzing are added here too, minimized, under the names libFuzzer gives them.

The GGUF layout is written by hand (struct), as llama.cpp's gguf-py lays it out. The output is
deterministic: running it twice gives the same bytes.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
          U64: "<Q", I64: "<q", F64: "<d"}
# ggml type: (elements per block, bytes per block), from ggml-common.h.
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
         "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210), "IQ2_XXS": (16, 256, 66),
         "BF16": (30, 1, 2), "TQ2_0": (35, 256, 66), "MXFP4": (39, 32, 17)}


def string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def value(vtype, v):
    if vtype == STRING:
        return string(v)
    if vtype == ARRAY:
        etype, items = v
        out = struct.pack("<IQ", etype, len(items))
        return out + b"".join(value(etype, x) for x in items)
    return struct.pack(SCALAR[vtype], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, ne innermost first, type name)]."""
    head = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        head += string(key) + struct.pack("<I", vtype) + value(vtype, v)
    data_size = 0
    for name, ne, tname in tensors:
        tid, block, size = TYPES[tname]
        elements = 1
        for n in ne:
            elements *= n
        head += string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        head += struct.pack("<IQ", tid, data_size)
        data_size += elements // block * size
        data_size = (data_size + alignment - 1) // alignment * alignment
    head += b"\0" * (-len(head) % alignment)
    return head + b"\0" * data_size


def save(name, data, folder="corpus-gguf"):
    with open(os.path.join(HERE, folder, name), "wb") as f:
        f.write(data)


def header(tensors, kvs, version=3):
    return b"GGUF" + struct.pack("<IQQ", version, tensors, kvs)


def info(name, ne, tid, offset):
    return string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", tid, offset)


def hostile():
    """The hostile headers, each padded to 4 KiB so a count is refused for what it states."""
    pad = lambda b: b + b"\0" * (4096 - len(b))
    kv = lambda key, vtype: string(key) + struct.pack("<I", vtype)
    nested = b"".join(struct.pack("<IQ", ARRAY, 1) for _ in range(40)) + struct.pack("<IQ", U8, 0)
    return {
        "key-length-2-63.gguf": pad(header(0, 1) + struct.pack("<Q", 2**63)),
        "string-length-2-63.gguf": pad(header(0, 1) + kv("general.name", STRING) + struct.pack("<Q", 2**63)),
        "array-of-2-64-uint32.gguf": pad(header(0, 1) + kv("a", ARRAY) + struct.pack("<IQ", U32, 2**64 - 1)),
        "array-of-2-62-strings.gguf": pad(header(0, 1) + kv("a", ARRAY) + struct.pack("<IQ", STRING, 2**62)),
        "arrays-nested-41-deep.gguf": pad(header(0, 1) + kv("a", ARRAY) + nested),
        "tensor-count-2-63.gguf": pad(header(2**63, 0)),
        "kv-count-2-64-1.gguf": pad(header(0, 2**64 - 1)),
        "dims-product-overflows.gguf": pad(header(1, 0) + info("x", [2**32, 2**32], 0, 0)),
        "dim-2-64-1.gguf": pad(header(1, 0) + info("x", [2**64 - 1, 0], 0, 0)),
        "bytes-overflow-f64.gguf": pad(header(1, 0) + info("x", [2**61, 2], 28, 0)),
        "offset-past-end.gguf": pad(header(1, 0) + info("x", [1024], 0, 0)),
        "offset-end-overflows.gguf": pad(header(1, 0) + info("x", [8], 0, 2**64 - 32)),
        "tensors-overlap.gguf": pad(header(2, 0) + info("a", [64], 0, 0) + info("b", [64], 0, 128)),
        "ggml-type-unknown.gguf": pad(header(1, 0) + info("x", [32], 2**32 - 1, 0)),
        "ggml-type-removed-q4_0_4_4.gguf": pad(header(1, 0) + info("x", [32], 31, 0)),
        "value-type-unknown.gguf": pad(header(0, 1) + kv("k", 13)),
        "dims-2-32-1.gguf": pad(header(1, 0) + string("x") + struct.pack("<I", 2**32 - 1)),
        "alignment-zero.gguf": pad(header(1, 1) + kv("general.alignment", U32) + struct.pack("<I", 0) +
                                   info("x", [8], 0, 0)),
        "big-endian-version-3.gguf": pad(b"GGUF" + struct.pack(">IQQ", 3, 0, 0)),
        "version-1-32-bit-counts.gguf": pad(b"GGUF" + struct.pack("<III", 1, 0, 0)),
    }


def llama():
    kvs = [("general.architecture", STRING, "llama"), ("general.file_type", U32, 15),
           ("llama.block_count", U32, 2), ("llama.embedding_length", U32, 256),
           ("llama.feed_forward_length", U32, 512), ("llama.attention.head_count", U32, 4),
           ("llama.attention.head_count_kv", U32, 2), ("llama.rope.freq_base", F32, 10000.0),
           ("tokenizer.ggml.tokens", ARRAY, (STRING, ["<unk>", "<s>", "</s>", "a", "b"])),
           ("tokenizer.ggml.scores", ARRAY, (F32, [0.0, 0.0, 0.0, -1.0, -2.0]))]
    tensors = [("token_embd.weight", [256, 5], "F16")]
    for b in range(2):
        p = "blk.%d." % b
        tensors += [(p + "attn_norm.weight", [256], "F32"), (p + "attn_q.weight", [256, 8], "Q4_K"),
                    (p + "attn_k.weight", [256, 4], "Q4_K"), (p + "attn_v.weight", [256, 4], "Q6_K"),
                    (p + "attn_output.weight", [256, 8], "Q4_K"), (p + "ffn_norm.weight", [256], "F32"),
                    (p + "ffn_gate.weight", [256, 8], "Q4_K"), (p + "ffn_up.weight", [256, 8], "Q4_K"),
                    (p + "ffn_down.weight", [512, 4], "Q6_K")]
    tensors += [("output_norm.weight", [256], "F32"), ("output.weight", [256, 5], "Q6_K")]
    return gguf(kvs, tensors)


def every_type():
    kvs = [("u8", U8, 200), ("i8", I8, -2), ("u16", U16, 65535), ("i16", I16, -32768),
           ("u32", U32, 7), ("i32", I32, -7), ("f32", F32, 1.5), ("bool", BOOL, True),
           ("string", STRING, "text"), ("u64", U64, 2**64 - 1), ("i64", I64, -(2**63)),
           ("f64", F64, 0.25), ("general.alignment", U32, 32),
           ("ints", ARRAY, (I32, [1, 2, 3])), ("flags", ARRAY, (BOOL, [True, False])),
           ("words", ARRAY, (STRING, ["x", "yz", ""])),
           ("nested", ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["q"]), (ARRAY, [(F64, [1.0])])]))]
    return gguf(kvs, [("t", [32, 2], "Q8_0"), ("u", [4], "BF16")], version=2)


def moe():
    kvs = [("general.architecture", STRING, "qwen2moe"), ("qwen2moe.block_count", U32, 1),
           ("qwen2moe.expert_count", U32, 4), ("qwen2moe.expert_used_count", U32, 2)]
    tensors = [("blk.0.ffn_gate_inp.weight", [256, 4], "F32"),
               ("blk.0.ffn_gate_exps.weight", [256, 2, 4], "Q4_K"),
               ("blk.0.ffn_up_exps.weight", [256, 2, 4], "Q4_K"),
               ("blk.0.ffn_down_exps.weight", [256, 1, 4], "Q6_K")]
    return gguf(kvs, tensors)


def aligned():
    kvs = [("general.architecture", STRING, "gpt-oss"), ("general.alignment", U32, 64)]
    tensors = [("a", [32, 3], "MXFP4"), ("b", [256, 2], "IQ2_XXS"), ("c", [256], "TQ2_0"),
               ("d", [64, 2], "Q4_0"), ("e", [0, 8], "F32")]
    return gguf(kvs, tensors, alignment=64)


def split_first():
    kvs = [("split.no", U16, 0), ("split.count", U16, 1), ("split.tensors.count", I32, 1),
           ("general.architecture", STRING, "llama")]
    return gguf(kvs, [("output.weight", [64, 4], "Q8_0")])


def main():
    os.makedirs(os.path.join(HERE, "corpus-gguf"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "regressions-gguf"), exist_ok=True)
    save("llama-q4_k_m.gguf", llama())
    save("every-metadata-type-v2.gguf", every_type())
    save("moe-experts.gguf", moe())
    save("alignment-64-new-types.gguf", aligned())
    save("split-00001-of-00001.gguf", split_first())
    for name, data in hostile().items():
        save(name, data, "regressions-gguf")


if __name__ == "__main__":
    main()
