#!/usr/bin/env python3
"""Writes the regression files of issue 39's counting cases (run with /usr/bin/python3):
counts that the file cannot hold, experts that do not add up, overflow and its reason.

regressions/counts-*.onnx|.safetensors   single files, replayed by tests/fuzz_replay_test.cpp;
regressions-gguf/counts-*.gguf           GGUF headers, replayed by tests/fuzz_replay_test.cpp;
regressions-cases/counts-*/              a checkpoint with its config.json, replayed by
                                         tests/hostile_cases_test.cpp.

Every weight is stored without its values (ONNX) or is empty (safetensors): the files stay small,
and the counts come from the dims, which is what these cases attack. The output is deterministic.
"""
import os
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper as h

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_corpus import safetensors  # noqa: E402  (the one safetensors writer of the corpus scripts)
from make_gguf_corpus import gguf, STRING, U32  # noqa: E402


def save_onnx(nodes, inits, name, inputs=None):
    g = h.make_graph(nodes, "g", inputs or [h.make_tensor_value_info("x", T.FLOAT, [15, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 14), h.make_opsetid("com.microsoft", 1)],
                     producer_name="headcount-fuzz")
    with open(os.path.join(HERE, "regressions", name), "wb") as f:
        f.write(m.SerializeToString())


def zeros(name, shape):
    """A float32 weight with dims and no payload."""
    return onnx.TensorProto(name=name, data_type=T.FLOAT, dims=shape)


def empty_tensors():
    """Item 8: tensors with a 0 dim and another near 2^63 store nothing; no block may hold more."""
    qkv = {"model.layers.0.self_attn.qkv_proj.weight": ("F32", [3 * 2**61, 0], 4)}
    with open(os.path.join(HERE, "regressions", "counts-empty-qkv-proj-3x2-61.safetensors"), "wb") as f:
        f.write(safetensors(qkv))
    # Latent attention: q_b [2^62, 0] and kv_b [2^63 - 2, 0] empty, kv_a [2, 1] and its norm [2]
    # store 4 elements; the config says 2 heads.
    p = "model.layers.0.self_attn."
    latent = {p + "q_b_proj.weight": ("F32", [2**62, 0], 4), p + "kv_b_proj.weight": ("F32", [2**63 - 2, 0], 4),
              p + "kv_a_proj_with_mqa.weight": ("F32", [2, 1], 4), p + "kv_a_layernorm.weight": ("F32", [2], 4)}
    folder = os.path.join(HERE, "regressions-cases", "counts-empty-latent-tensors")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(safetensors(latent))
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write('{"model_type": "deepseek_v3", "num_attention_heads": 2, "kv_lora_rank": 2}\n')
    with open(os.path.join(folder, "args"), "w") as f:
        f.write("audit model.safetensors\n")
    # Before: K 9,223,372,036,854,775,810 and V 9,223,372,036,854,775,804 (2^64 − 4 with the rest).
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("exit 0\nstdout: attention   4 in 1 block\nstdout-not: 9,223,372,036,854,775,8\n")
    # The ONNX path: a fused Attention whose packed weight is [0, 3·2^61], a MatMul by one.
    save_onnx([h.make_node("Attention", ["x", "w"], ["y"], domain="com.microsoft", num_heads=2)],
              [zeros("w", [0, 3 * 2**61])], "counts-empty-packed-attention-weight.onnx",
              inputs=[h.make_tensor_value_info("x", T.FLOAT, [1, 4, 0])])
    save_onnx([h.make_node("MatMul", ["x", "w"], ["qkv"]),
               h.make_node("Split", ["qkv"], ["q", "k", "v"], axis=-1),
               h.make_node("Transpose", ["k"], ["kt"], perm=[1, 0]),
               h.make_node("MatMul", ["q", "kt"], ["s"]), h.make_node("Softmax", ["s"], ["p"], axis=-1),
               h.make_node("MatMul", ["p", "v"], ["y"])],
              [zeros("w", [0, 3 * 2**61])], "counts-empty-packed-matmul-weight.onnx",
              inputs=[h.make_tensor_value_info("x", T.FLOAT, [4, 0])])


def fused_moe(name, k, fc1, fc2, fc3=None, gate=(8, 4)):
    """A com.microsoft MoE fed by a router MatMul x [15, 8] · gate; k as given."""
    inits = [zeros("gate", list(gate))]
    names = {}
    for slot, shape in (("fc1", fc1), ("fc2", fc2), ("fc3", fc3)):
        if shape is None:
            continue
        if isinstance(shape, str):  # another slot's tensor
            names[slot] = names[shape]
            continue
        inits.append(zeros(slot, list(shape)))
        names[slot] = slot
    ins = ["x", "logits", names["fc1"], "", names["fc2"], "", names.get("fc3", ""), ""]
    if fc3 == "fc1" and fc2 == "fc1":  # one tensor in every slot, biases too
        ins = ["x", "logits"] + [names["fc1"]] * 6
    moe = h.make_node("MoE", ins, ["y"], domain="com.microsoft")
    if k is not None:
        moe.attribute.append(h.make_attribute("k", k))
    save_onnx([h.make_node("MatMul", ["x", "gate"], ["logits"]), moe], inits, name)


def experts():
    """Item 14: k outside 1..experts, and one tensor in all six slots."""
    # 4 experts of 8·16 + 16·8 = 256 parameters: routed 1,024.
    fused_moe("counts-moe-k-1000-of-4.onnx", 1000, (4, 8, 16), (4, 16, 8))
    fused_moe("counts-moe-k-minus-5.onnx", -5, (4, 8, 16), (4, 16, 8))
    fused_moe("counts-moe-k-0.onnx", 0, (4, 8, 16), (4, 16, 8))
    # One [4, 8, 16] tensor (512) as fc1, fc2, fc3 and their biases; the router 8·4 = 32: 544 stored.
    fused_moe("counts-moe-one-tensor-six-slots.onnx", 2, (4, 8, 16), "fc1", "fc1")
    # A routed layer (TopK over a router's Softmax) whose k = 9 exceeds its 4 experts.
    nodes = [h.make_node("MatMul", ["x", "router"], ["logits"]), h.make_node("Softmax", ["logits"], ["scores"], axis=-1),
             h.make_node("TopK", ["scores", "k"], ["topv", "topi"], axis=-1)]
    inits = [zeros("router", [8, 4]), h.make_tensor("k", T.INT64, [1], [9])]
    outs = []
    for e in range(4):
        nodes += [h.make_node("MatMul", ["x", f"up{e}"], [f"u{e}"]), h.make_node("Relu", [f"u{e}"], [f"a{e}"]),
                  h.make_node("MatMul", [f"a{e}", f"down{e}"], [f"d{e}"]),
                  h.make_node("Gather", ["topv", f"i{e}"], [f"g{e}"], axis=1),
                  h.make_node("Unsqueeze", [f"g{e}", "ax"], [f"gu{e}"]),
                  h.make_node("Mul", [f"d{e}", f"gu{e}"], [f"o{e}"])]
        inits += [zeros(f"up{e}", [8, 16]), zeros(f"down{e}", [16, 8]), h.make_tensor(f"i{e}", T.INT64, [], [0])]
        outs.append(f"o{e}")
    inits.append(h.make_tensor("ax", T.INT64, [1], [1]))
    nodes.append(h.make_node("Sum", outs, ["y"]))
    save_onnx(nodes, inits, "counts-routed-topk-9-of-4.onnx")


def gguf_cases():
    """Items 8 and 14 in GGUF: empty latent tensors with head_count 2 in the metadata, and an
    expert_used_count above expert_count (llama.cpp's ne are innermost first: [in, out])."""
    kvs = [("general.architecture", STRING, "deepseek2"), ("deepseek2.block_count", U32, 1),
           ("deepseek2.attention.head_count", U32, 2)]
    tensors = [("blk.0.attn_q_b.weight", [0, 2**62], "F32"), ("blk.0.attn_kv_b.weight", [0, 2**63 - 2], "F32"),
               ("blk.0.attn_kv_a_mqa.weight", [1, 2], "F32"), ("blk.0.attn_kv_a_norm.weight", [2], "F32")]
    with open(os.path.join(HERE, "regressions-gguf", "counts-empty-latent-tensors.gguf"), "wb") as f:
        f.write(gguf(kvs, tensors))
    kvs = [("general.architecture", STRING, "qwen2moe"), ("qwen2moe.block_count", U32, 1),
           ("qwen2moe.expert_count", U32, 4), ("qwen2moe.expert_used_count", U32, 9)]
    tensors = [("blk.0.ffn_gate_inp.weight", [8, 4], "F32"), ("blk.0.ffn_up_exps.weight", [8, 16, 4], "F32"),
               ("blk.0.ffn_down_exps.weight", [16, 8, 4], "F32")]
    with open(os.path.join(HERE, "regressions-gguf", "counts-expert-used-count-9-of-4.gguf"), "wb") as f:
        f.write(gguf(kvs, tensors))


def overflow():
    """Item 15: the Concat of two declared [1, 2^62] tensors: as graph inputs, and as stored tensors
    (dims, no values) whose Concat is the mask added to an attention block's scores, where the
    mask evaluator sums their dims."""
    save_onnx([h.make_node("Concat", ["a", "b"], ["y"], axis=1)], [], "counts-concat-two-2-62.onnx",
              inputs=[h.make_tensor_value_info("a", T.FLOAT, [1, 2**62]), h.make_tensor_value_info("b", T.FLOAT, [1, 2**62])])
    core = [h.make_node("MatMul", ["x", "wq"], ["q"]), h.make_node("MatMul", ["x", "wk"], ["k"]),
            h.make_node("MatMul", ["x", "wv"], ["v"]), h.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
            h.make_node("MatMul", ["q", "kt"], ["s"]), h.make_node("Concat", ["a", "b"], ["mask"], axis=1),
            h.make_node("Add", ["s", "mask"], ["sm"]), h.make_node("Softmax", ["sm"], ["p"], axis=-1),
            h.make_node("MatMul", ["p", "v"], ["y"])]
    save_onnx(core, [zeros("wq", [32, 32]), zeros("wk", [32, 32]), zeros("wv", [32, 32]),
                     onnx.TensorProto(name="a", data_type=T.BOOL, dims=[1, 2**62]),
                     onnx.TensorProto(name="b", data_type=T.BOOL, dims=[1, 2**62])], "counts-mask-concat-two-2-62.onnx",
              inputs=[h.make_tensor_value_info("x", T.FLOAT, [1, 4, 32])])


if __name__ == "__main__":
    empty_tensors()
    experts()
    gguf_cases()
    overflow()
