#!/usr/bin/env python3
"""Writes the hostile cases found attacking issue 38's adapter stage, its `--base` gate and
`explain --config` (run with /usr/bin/python3; standard library only; deterministic):

regressions-cases/adapter-*/   a LoRA adapter (adapter/: adapter_model.safetensors or a GGUF, and
                               its adapter_config.json), sometimes a base config (base.json), the
                               `args` headcount runs and the `expect`ed exit and lines.

The shapes, and what each must show (every figure from the shapes written here):
  adapter-targets-60000-by-1300-modules  target_modules lists 60,000 names, none a module of the
      adapter's 1,300 q_proj modules (rank 1, 1 -> 1): the targets were matched each against each
      (2.4 s); now ten are named and "the config targets 59990 more"
  adapter-config-values-of-other-types   base_model_name_or_path null (as PEFT writes it), use_dora
      "yes", use_rslora null, layers_to_transform an object: an internal error before; now read,
      the flags false, no base named
  adapter-config-target-patterns/-regex  target_modules "all-linear" (PEFT's every linear layer) and
      a regular expression: each was a target "no factor belongs to" and every module untargeted
  adapter-config-rank-pattern            r 4 with rank_pattern {"q_proj": 16}: q_proj's rank 16 was
      "not the config's rank"
  adapter-config-layers-to-transform     q_proj's factors in layers 0, 1 and 2 with layers_to_transform
      [0]: the key was not read; now a note names the first module outside and how many more
  adapter-factor-named-twice             q_proj's A as lora_A.weight and as lora_A: the second
      silently became a saved module; now a note
  adapter-gguf-alpha-a-string            a GGUF adapter whose adapter.lora.alpha is a string: read
      as alpha 0; now a note, no alpha
  adapter-gguf-alpha-nan-type-a-number   adapter.lora.alpha a float32 NaN (dropped silently) and
      adapter.type the uint32 7 (said to be ''): a note each
  adapter-base-config-layer-past         q_proj in layers 0 and 7 of llama_tiny's config (2 layers):
      the gate passed with layer 7 unchecked
  adapter-base-config-in-out-swapped     v_proj 16 -> 32 against a config's v_proj [16, 32] (out 16,
      in 32): the gate passed, comparing either way round
  adapter-base-config-ranks-disagree     q_proj A [4, 32], B [32, 8]: factors that make no matrix,
      passed
  adapter-base-two-towers-one-key        a base checkpoint holding layers.0.self_attn.q_proj twice, in
      its language model [32, 32] (first) and its vision tower [16, 16]; an adapter of the vision
      tower's, 32 -> 32: compared with the first tensor of that key, it passed
  adapter-base-two-stacks-not-told-apart  encoder.layers.0.self_attn.q_proj [32, 32] and decoder's [16, 16]
      in the base, an adapter's model.layers.0.self_attn.q_proj 32 -> 32: either may be it, so
      it is unchecked (and with nothing checked, the gate fails)
  adapter-base-config-embedding          PEFT's embed_tokens factors (A [4, 100], B [32, 4]) against
      llama_tiny's config: an embedding's weight is [vocabulary, width], so it fits
  adapter-base-config-gguf-names         the GGUF adapter above against that config: its llama.cpp
      names (blk.0.attn_q) are not the config's Hugging Face names; unchecked, not a misfit
  adapter-config-nested-120000-deep      lora_parameters.keys an object nested 120,000 deep: copied
      (recursively) to read it, a stack overflow (SIGSEGV); now read in place
  config-text-config-nested-60000-deep   explain --config of a gemma3 config whose text_config nests
      text_config 60,000 deep: copied to fill the class's defaults, a stack overflow (SIGSEGV); now
      refused, a config nesting more than 64 deep
  adapter-mlx-config-values-as-strings   an MLX adapter (q_proj A [32, 4], B [4, 32]) whose config gives
      lora_parameters.rank "8", scale "20.0" and keys 7: each silently dropped; now a note each
  adapter-base-gguf-for-a-peft-adapter   samples/lora_peft's kind of adapter (q_proj, v_proj of
      llama_tiny) against llama_tiny as GGUF (blk.0.attn_q ...): every module was "not in the base",
      a misfit the names of another tool do not prove; now unchecked (and the gate fails, nothing
      checked)
  adapter-dora-magnitude-alone           q_proj's factors and a DoRA magnitude [16] for v_proj, whose
      factors are absent: "v_proj has its B factor but not its A"; now said as it is
  adapter-base-checkpoint-in-out-swapped  v_proj 16 -> 32 (fan_in_fan_out false: the base's layers are
      [out, in]) against a checkpoint's v_proj [16, 32]: compared either way round, it passed; and
      GPT-2's c_attn 32 -> 96 with fan_in_fan_out true against its Conv1D [32, 96], which fits
  adapter-base-config-heads-overflow     a llama config of 2^40 - 1 heads of 2^40 - 1: q_proj's rows
      were their product, overflowed (undefined; shown as -2199023255551); now no matrix is known
  adapter-base-config-100000-layers      a llama config of 100,000 layers: 700,000 matrices made,
      160 MB; a config of more than 10,000 layers gives none (nothing is checked)
  adapter-base-quantized-bnb-4bit        q_proj 32 -> 32 against a base stored as bitsandbytes' 4-bit
      (q_proj.weight U8 [512, 1] beside q_proj.weight.absmax) and v_proj against GPTQ's v_proj.qweight
      (no v_proj.weight): "the adapter is 32 -> 32, the base's ... is [512, 1]" and "the base holds
      no tensor", misfits of a base that is the adapter's own; now unchecked
  adapter-base-tied-lm-head              q_proj and lm_head (A [4, 32], B [100, 4]) against a base whose
      LM head is tied to its embedding, so saved without lm_head.weight (as Llama 3.2 1B): lm_head
      was "not in the base", a misfit; now unchecked, q_proj fits and the gate passes
  adapter-base-gguf-tied-output          a GGUF adapter of blk.0.attn_q and output (ne {32, 4}, {4, 100})
      against a GGUF base that ties output to token_embd (no output.weight): unchecked, not a misfit
  adapter-base-gpt2-config               a q_proj adapter against a GPT-2 config (whose attention is
      c_attn): matched to LLaMA names the config does not have, passed
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "regressions-cases")

LLAMA_TINY = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 8, "num_hidden_layers": 2, "vocab_size": 100,
              "tie_word_embeddings": False}


def safetensors(path, tensors):
    """tensors: [(name, shape)] in float32, or [(name, shape, dtype)] (F32, I32 or U8); zeros."""
    header, offset = {}, 0
    for t in tensors:
        name, shape, dtype = t if len(t) == 3 else t + ("F32",)
        size = {"F32": 4, "I32": 4, "U8": 1}[dtype]
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(offset))


def factors(layer, module, a, b, where="self_attn"):
    prefix = "base_model.model.model.layers.%d.%s.%s." % (layer, where, module)
    return [(prefix + "lora_A.weight", a), (prefix + "lora_B.weight", b)]


def case(name, args, expect, tensors=None, config=None, raw_config=None, base=None, gguf=None, base_tensors=None):
    folder = os.path.join(CASES, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "adapter"))
    if tensors is not None:
        safetensors(os.path.join(folder, "adapter", "adapters.safetensors" if name.startswith("adapter-mlx") else "adapter_model.safetensors"), tensors)
    if gguf is not None:
        with open(os.path.join(folder, "adapter", "adapter.gguf"), "wb") as f:
            f.write(gguf)
    if config is not None:
        raw_config = json.dumps(config, separators=(",", ":"))
    if raw_config is not None:
        with open(os.path.join(folder, "adapter", "adapter_config.json"), "w") as f:
            f.write(raw_config)
    if base_tensors is not None:
        safetensors(os.path.join(folder, "base.safetensors"), base_tensors)
    if base is not None:
        with open(os.path.join(folder, "base.json"), "w") as f:
            json.dump(base, f)
    with open(os.path.join(folder, "args"), "w") as f:
        f.write(args + "\n")
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("\n".join(expect) + "\n")


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_file(kvs, tensors):
    """kvs: [(key, GGUF type, packed value)]; tensors: [(name, ne innermost first)], F32 zeros, 32-byte aligned."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        head += gguf_string(key) + struct.pack("<I", vtype) + v
    offset = 0
    for name, ne in tensors:
        head += gguf_string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", 0, offset)
        size = 4
        for n in ne:
            size *= n
        offset += (size + 31) // 32 * 32
    head += b"\0" * (-len(head) % 32)
    return head + b"\0" * offset


def gguf_adapter(hostile_type=False):
    """llama.cpp's adapter layout: general.type adapter, adapter.type lora, and adapter.lora.alpha
    written as a string (type 8) instead of a float32; blk.0.attn_q.weight.lora_a ne {32, 4} (A
    [4, 32]) and .lora_b ne {4, 32} (B [32, 4]), F32 zeros, 32-byte aligned."""
    kvs = [("general.architecture", 8, gguf_string("llama")), ("general.type", 8, gguf_string("adapter")),
           ("adapter.type", 8, gguf_string("lora")), ("adapter.lora.alpha", 8, gguf_string("16"))]
    if hostile_type:  # adapter.type a uint32 (type 4) 7, adapter.lora.alpha a float32 (type 6) NaN
        kvs[2:] = [("adapter.type", 4, struct.pack("<I", 7)), ("adapter.lora.alpha", 6, struct.pack("<f", float("nan")))]
    tensors = [("blk.0.attn_q.weight.lora_a", (32, 4)), ("blk.0.attn_q.weight.lora_b", (4, 32))]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        head += gguf_string(key) + struct.pack("<I", vtype) + v
    offset = 0
    for name, ne in tensors:
        head += gguf_string(name) + struct.pack("<I", 2) + struct.pack("<2Q", *ne) + struct.pack("<IQ", 0, offset)
        offset += ne[0] * ne[1] * 4
    head += b"\0" * (-len(head) % 32)
    return head + b"\0" * offset


def main():
    base_config = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"]}

    # 1,300 layers of q_proj factors of rank 1 and 60,000 declared targets t0 .. t59999.
    many = []
    for layer in range(1300):
        many += factors(layer, "q_proj", [1, 1], [1, 1])
    case("adapter-targets-60000-by-1300-modules", "audit adapter",
         ["exit 0", "stdout: q_proj    1300     1     1 -> 1       2,600",
          "stdout: note: the config targets 59990 more modules which no factor belongs to",
          "stdout: note: 'q_proj' has factors, but the config does not target it"],
         tensors=many, config={"r": 1, "lora_alpha": 1, "target_modules": ["t%d" % i for i in range(60000)]})

    # q_proj 32 -> 32 of rank 4 in layer 0: A [4, 32] + B [32, 4] = 256.
    q = factors(0, "q_proj", [4, 32], [32, 4])
    case("adapter-config-values-of-other-types", "audit adapter",
         ["exit 0", "stdout: LoRA adapter, rank 4, alpha 8, scale 2 (lora_alpha / r), read from",
          "stdout-not: DoRA", "stdout-not: rsLoRA", "stderr-not: internal error"],
         tensors=q, config=dict(base_config, target_modules=["q_proj"], base_model_name_or_path=None,
                                use_dora="yes", use_rslora=None, layers_to_transform={"a": [1]},
                                layers_pattern=5, fine_tune_type=5, model=None))
    case("adapter-config-target-patterns", "audit adapter",
         ["exit 0", "stdout-not: which no factor belongs to", "stdout-not: the config does not target it"],
         tensors=q, config=dict(base_config, target_modules="all-linear"))
    case("adapter-config-target-regex", "audit adapter",
         ["exit 0", "stdout: the pattern '.*\\.(q|v)_proj'", "stdout-not: which no factor belongs to",
          "stdout-not: the config does not target it"],
         tensors=q, config=dict(base_config, target_modules=".*\\.(q|v)_proj"))
    # q_proj of rank 16 (rank_pattern) and v_proj 32 -> 16 of rank 4 (r).
    case("adapter-config-rank-pattern", "audit adapter",
         ["exit 0", "stdout: q_proj       1    16   32 -> 32       1,024", "stdout-not: but factors have rank"],
         tensors=factors(0, "q_proj", [16, 32], [32, 16]) + factors(0, "v_proj", [4, 32], [16, 4]),
         config=dict(base_config, rank_pattern={"q_proj": 16}, alpha_pattern={"q_proj": 32}))
    case("adapter-config-layers-to-transform", "audit adapter",
         ["exit 0", "stdout: note: model.layers.1.self_attn.q_proj and 1 more modules have factors in a layer"],
         tensors=q + factors(1, "q_proj", [4, 32], [32, 4]) + factors(2, "q_proj", [4, 32], [32, 4]),
         config=dict(base_config, target_modules=["q_proj"], layers_to_transform=[0]))
    # q_proj's factors (256) and a second A [4, 32] (128) under PEFT's other name: 384 in all.
    case("adapter-factor-named-twice", "audit adapter",
         ["exit 0", "stdout: total 384: factors 256, whole modules saved beside them 128",
          "stdout: note: model.layers.0.self_attn.q_proj has a second A factor"],
         tensors=q + [("base_model.model.model.layers.0.self_attn.q_proj.lora_A", [4, 32])], config=base_config)
    case("adapter-gguf-alpha-a-string", "audit adapter/adapter.gguf",
         ["exit 0", "stdout: note: adapter.lora.alpha is of type string, not a number", "stdout-not: alpha 0"],
         gguf=gguf_adapter())

    case("adapter-gguf-alpha-nan-type-a-number", "audit adapter/adapter.gguf",
         ["exit 0", "stdout: note: adapter.lora.alpha is NaN: the alpha is not read",
          "stdout: note: adapter.type is of type uint32, not the string lora"],
         gguf=gguf_adapter(hostile_type=True))

    # Against llama_tiny's config (2 layers; q_proj [32, 32], v_proj [16, 32]).
    case("adapter-base-config-layer-past", "audit adapter --base base.json",
         ["exit 1", "stderr: adapter-base: 1 of the adapter's modules do not fit the base 'base.json': "
                    "model.layers.7.self_attn.q_proj: the base holds no tensor layers.7.self_attn.q_proj.weight"],
         tensors=q + factors(7, "q_proj", [4, 32], [32, 4]), config=dict(base_config, target_modules=["q_proj"]),
         base=LLAMA_TINY)
    case("adapter-base-config-in-out-swapped", "audit adapter --base base.json",
         ["exit 1", "stderr: model.layers.0.self_attn.v_proj: the adapter is 16 -> 32, the base's "
                    "model.layers.0.self_attn.v_proj.weight is [16, 32]"],
         tensors=q + factors(0, "v_proj", [4, 16], [32, 4]), config=base_config, base=LLAMA_TINY)
    case("adapter-base-config-ranks-disagree", "audit adapter --base base.json",
         ["exit 1", "stderr: model.layers.0.self_attn.q_proj: A's rank 4 and B's 8 disagree"],
         tensors=factors(0, "q_proj", [4, 32], [32, 8]), config=dict(base_config, target_modules=["q_proj"]),
         base=LLAMA_TINY)
    tower = [("base_model.model.model.vision_tower.layers.0.self_attn.q_proj.lora_" + f, shape)
             for f, shape in (("A.weight", [4, 32]), ("B.weight", [32, 4]))]
    case("adapter-base-two-towers-one-key", "audit adapter --base base.safetensors",
         ["exit 1", "stderr: model.vision_tower.layers.0.self_attn.q_proj: the adapter is 32 -> 32, the base's "
                    "model.vision_tower.layers.0.self_attn.q_proj.weight is [16, 16]"],
         tensors=tower, config=dict(base_config, target_modules=["q_proj"]),
         base_tensors=[("model.language_model.layers.0.self_attn.q_proj.weight", [32, 32]),
                       ("model.vision_tower.layers.0.self_attn.q_proj.weight", [16, 16])])
    case("adapter-base-two-stacks-not-told-apart", "audit adapter --base base.safetensors",
         ["exit 1", "stdout: not checked: model.layers.0.self_attn.q_proj: the base holds 2 tensors",
          "stderr: adapter-base: none of the adapter's modules could be checked"],
         tensors=q, config=dict(base_config, target_modules=["q_proj"]),
         base_tensors=[("encoder.layers.0.self_attn.q_proj.weight", [32, 32]),
                       ("decoder.layers.0.self_attn.q_proj.weight", [16, 16])])
    case("adapter-base-config-embedding", "audit adapter --base base.json",
         ["exit 0", "stdout: 1 of its 1 modules fit"],
         tensors=[("base_model.model.model.embed_tokens.lora_embedding_A", [4, 100]),
                  ("base_model.model.model.embed_tokens.lora_embedding_B", [32, 4])],
         config=dict(base_config, target_modules=["embed_tokens"]), base=LLAMA_TINY)
    case("adapter-base-config-gguf-names", "audit adapter/adapter.gguf --base base.json",
         ["exit 1", "stdout: not checked: blk.0.attn_q", "stdout-not: does not fit"],
         gguf=gguf_adapter(), base=LLAMA_TINY)
    case("adapter-config-nested-120000-deep", "audit adapter",
         ["exit 0", "stdout: q_proj       1     4   32 -> 32         256"],
         tensors=q, raw_config='{"r":4,"lora_parameters":{"keys":' + '{"a":' * 120000 + '1' + '}' * 120000 + '}}')
    folder = os.path.join(CASES, "config-text-config-nested-60000-deep")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        f.write('{"model_type":"gemma3","vision_config":{"hidden_size":1},"text_config":' + '{"text_config":' * 60000 +
                '{}' + '}' * 60000 + '}')
    with open(os.path.join(folder, "args"), "w") as f:
        f.write("explain --config config.json\n")
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("exit 2\nstderr: headcount: error: model config 'config.json' nests 60002 deep, above the 64 a model config can\n")
    mlx = [("model.layers.0.self_attn.q_proj.lora_a", [32, 4]), ("model.layers.0.self_attn.q_proj.lora_b", [4, 32])]
    case("adapter-mlx-config-values-as-strings", "audit adapter",
         ["exit 0", "stdout: MLX LoRA adapter, read from", "stdout: q_proj       1     4   32 -> 32         256",
          "stdout: note: the config's lora_parameters.rank is \"8\", not what it must be (a number): it is not read",
          "stdout: note: the config's lora_parameters.scale is \"20.0\"",
          "stdout: note: the config's lora_parameters.keys is 7"],
         tensors=mlx, raw_config='{"fine_tune_type": 5, "num_layers": "x", "lora_parameters": {"rank": "8", '
                                 '"scale": "20.0", "keys": 7}, "model": null}')
    case("adapter-base-gguf-for-a-peft-adapter", "audit adapter --base base.gguf",
         ["exit 1", "stdout: not checked: model.layers.0.self_attn.q_proj: the base holds no tensor",
          "stdout-not: does not fit", "stderr: none of the adapter's modules could be checked"],
         tensors=q + factors(0, "v_proj", [4, 32], [16, 4]), config=base_config)
    shutil.copy(os.path.join(HERE, "..", "..", "samples", "llama_tiny.gguf"),
                os.path.join(CASES, "adapter-base-gguf-for-a-peft-adapter", "base.gguf"))
    case("adapter-dora-magnitude-alone", "audit adapter",
         ["exit 0", "stdout: note: model.layers.0.self_attn.v_proj has a magnitude vector but neither factor",
          "stdout-not: has its B factor but not its A"],
         tensors=q + [("base_model.model.model.layers.0.self_attn.v_proj.lora_magnitude_vector.weight", [16])],
         config=dict(base_config, use_dora=True))
    llama_layer = [("model.layers.0.self_attn.q_proj.weight", [32, 32]), ("model.layers.0.self_attn.v_proj.weight", [16, 32])]
    case("adapter-base-checkpoint-in-out-swapped", "audit adapter --base base.safetensors",
         ["exit 1", "stderr: model.layers.0.self_attn.v_proj: the adapter is 16 -> 32, the base's "
                    "model.layers.0.self_attn.v_proj.weight is [16, 32]"],
         tensors=q + factors(0, "v_proj", [4, 16], [32, 4]), config=dict(base_config, fan_in_fan_out=False),
         base_tensors=llama_layer)
    c_attn = [("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight", [4, 32]),
              ("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight", [96, 4])]
    case("adapter-base-checkpoint-conv1d-fits", "audit adapter --base base.safetensors",
         ["exit 0", "stdout: 1 of its 1 modules fit"],
         tensors=c_attn, config=dict(base_config, target_modules=["c_attn"], fan_in_fan_out=True),
         base_tensors=[("h.0.attn.c_attn.weight", [32, 96])])
    case("adapter-base-config-heads-overflow", "audit adapter --base base.json",
         ["exit 1", "stdout: not checked: model.layers.0.self_attn.q_proj: the base's module names are not known",
          "stdout-not: -2199023255551"],
         tensors=q, config=dict(base_config, target_modules=["q_proj"]),
         base=dict(LLAMA_TINY, num_attention_heads=2**40 - 1, head_dim=2**40 - 1))
    case("adapter-base-config-100000-layers", "audit adapter --base base.json",
         ["exit 1", "stdout: not checked: model.layers.0.self_attn.q_proj: the base's module names are not known"],
         tensors=q, config=dict(base_config, target_modules=["q_proj"]), base=dict(LLAMA_TINY, num_hidden_layers=100000))
    p = "model.layers.0.self_attn."
    case("adapter-base-quantized-bnb-4bit", "audit adapter --base base.safetensors",
         ["exit 1", "stdout: not checked: model.layers.0.self_attn.q_proj: the base stores",
          "stdout: not checked: model.layers.0.self_attn.v_proj: the base stores", "stdout-not: does not fit"],
         tensors=q + factors(0, "v_proj", [4, 32], [16, 4]), config=base_config,
         base_tensors=[(p + "q_proj.weight", [512, 1], "U8"), (p + "q_proj.weight.absmax", [16]),
                       (p + "q_proj.weight.quant_state.bitsandbytes__nf4", [64], "U8"),
                       (p + "v_proj.qweight", [4, 16], "I32"), (p + "v_proj.scales", [1, 16]), (p + "v_proj.qzeros", [1, 2], "I32")])
    case("adapter-base-tied-lm-head", "audit adapter --base base.safetensors",
         ["exit 0", "stdout: not checked: lm_head: the base holds no tensor lm_head.weight", "stdout-not: does not fit"],
         tensors=q + [("base_model.model.lm_head.lora_A.weight", [4, 32]), ("base_model.model.lm_head.lora_B.weight", [100, 4])],
         config=dict(base_config, target_modules=["q_proj", "lm_head"]),
         base_tensors=[("model.embed_tokens.weight", [100, 32])] + llama_layer)
    adapter_kv = [("general.architecture", 8, gguf_string("llama")), ("general.type", 8, gguf_string("adapter")),
                  ("adapter.type", 8, gguf_string("lora"))]
    case("adapter-base-gguf-tied-output", "audit adapter/adapter.gguf --base base.gguf",
         ["exit 0", "stdout: not checked: output: the base holds no tensor output.weight", "stdout-not: does not fit"],
         gguf=gguf_file(adapter_kv, [("blk.0.attn_q.weight.lora_a", (32, 4)), ("blk.0.attn_q.weight.lora_b", (4, 32)),
                                     ("output.weight.lora_a", (32, 4)), ("output.weight.lora_b", (4, 100))]))
    with open(os.path.join(CASES, "adapter-base-gguf-tied-output", "base.gguf"), "wb") as f:
        f.write(gguf_file([("general.architecture", 8, gguf_string("llama"))],
                          [("token_embd.weight", (32, 100)), ("blk.0.attn_q.weight", (32, 32))]))
    case("adapter-base-gpt2-config", "audit adapter --base base.json",
         ["exit 1", "stderr: adapter-base: none of the adapter's modules could be checked against the base 'base.json'"],
         tensors=q, config=dict(base_config, target_modules=["q_proj"]),
         base={"model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_layer": 2, "vocab_size": 100, "n_positions": 16})


if __name__ == "__main__":
    main()
