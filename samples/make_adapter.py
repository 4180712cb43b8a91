#!/usr/bin/env python3
"""Writes samples/lora_peft/: a PEFT LoRA adapter for samples/llama_tiny.safetensors, as PEFT saves
one (adapter_model.safetensors and adapter_config.json), with zero weights.

llama_tiny: width 32, 4 heads and 2 K/V heads of 8, 2 layers. The adapter targets q_proj (32 -> 32)
and v_proj (32 -> 16) with rank 4, lora_alpha 8:
  q_proj: A [4, 32] = 128 and B [32, 4] = 128: 256 per layer
  v_proj: A [4, 32] = 128 and B [16, 4] =  64: 192 per layer
  2 layers x (256 + 192) = 896 parameters; scale lora_alpha / r = 2.

Python 3, standard library only.
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write_peft_adapter(folder, modules, layers=2, rank=4, width=32):
    """Writes folder/adapter_model.safetensors as PEFT saves it: for each of `layers` layers and each
    (module, out) of `modules`, self_attn.MODULE's lora_A [rank, width] and lora_B [out, rank] in
    float32 zeros. The tests write adapters for other bases with it."""
    os.makedirs(folder, exist_ok=True)
    header, offset = {}, 0
    for layer in range(layers):
        for module, out in modules:
            prefix = "base_model.model.model.layers.%d.self_attn.%s." % (layer, module)
            for name, shape in (("lora_A.weight", [rank, width]), ("lora_B.weight", [out, rank])):
                size = shape[0] * shape[1] * 4
                header[prefix + name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
                offset += size
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "adapter_model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(offset))


def main():
    folder = os.path.join(HERE, "lora_peft")
    write_peft_adapter(folder, [("q_proj", 32), ("v_proj", 16)])
    config = {"base_model_name_or_path": "samples/llama_tiny", "peft_type": "LORA", "task_type": "CAUSAL_LM",
              "r": 4, "lora_alpha": 8, "lora_dropout": 0.0, "target_modules": ["q_proj", "v_proj"],
              "modules_to_save": None, "use_dora": False, "use_rslora": False, "bias": "none"}
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
