#!/usr/bin/env python3
"""Writes the explain --config hostile cases of the calculator's 2026 rows (olmo3, qwen3_5, gemma4, glm_moe_dsa, lfm2, granitemoehybrid) into
tests/fuzz/regressions-cases/ (deterministic; run from anywhere with /usr/bin/python3).

Each folder: config.json, args, expect. Each stays under the hostile-cases bound of 1 MB."""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "regressions-cases")
INT64_MAX = 2**63 - 1


def write_case(name, config, expect):
    folder = os.path.join(CASES, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, separators=(",", ":"))
    with open(os.path.join(folder, "args"), "w") as f:
        f.write("explain --config config.json\n")
    with open(os.path.join(folder, "expect"), "w") as f:
        f.write("\n".join(expect) + "\n")
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder))
    assert size < 1 << 20, (name, size)


def olmo3_many_layers():
    # 40,000 layers named one by one (the list read against num_hidden_layers, each layer's kind
    # counted once): a count in bounded time and memory, not a layer-by-layer blow-up.
    n = 40000
    layer_types = ["sliding_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
    return {"model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
            "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": n, "vocab_size": 1000,
            "sliding_window": INT64_MAX, "tie_word_embeddings": False, "layer_types": layer_types}


def qwen3_5_hostile():
    # Qwen3.5's dense wrapper: 36,000 layers named in its text_config, a Gated DeltaNet of 2^62
    # value heads and a vision tower 2^62 blocks deep: an error (does not fit in 64 bits), never a
    # wrapped count.
    n = 36000
    layer_types = ["linear_attention" if (i + 1) % 4 else "full_attention" for i in range(n)]
    text = {"model_type": "qwen3_5_text", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "num_hidden_layers": n, "vocab_size": 1000,
            "layer_types": layer_types, "linear_num_key_heads": 2, "linear_num_value_heads": 2**62,
            "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
            "mtp_num_hidden_layers": INT64_MAX}
    vision = {"depth": 2**62, "hidden_size": 16, "intermediate_size": 32, "in_channels": 3, "patch_size": 2,
              "temporal_patch_size": 2, "spatial_merge_size": 2, "out_hidden_size": 64, "num_position_embeddings": 4}
    return {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"], "text_config": text,
            "vision_config": vision}


def gemma4_hostile():
    # Gemma 4: 36,000 layers named in its text_config, every other one full with keys as values of
    # 2^62 K/V heads, a vision tower INT64_MAX layers deep: an error, never a wrapped count.
    n = 36000
    layer_types = ["full_attention" if i % 2 else "sliding_attention" for i in range(n)]  # the last full
    text = {"model_type": "gemma4_text", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32, "attention_k_eq_v": True,
            "num_global_key_value_heads": 2**62, "num_hidden_layers": n, "vocab_size": 1000, "sliding_window": 8,
            "layer_types": layer_types}
    vision = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": INT64_MAX, "num_attention_heads": 2,
              "num_key_value_heads": 2, "head_dim": 8, "patch_size": 2, "position_embedding_size": 4}
    return {"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "text_config": text,
            "vision_config": vision}


def glm_moe_dsa_hostile():
    # GLM-5's row: 30,000 layers with indexer_types and mlp_layer_types naming each, the schedule
    # keys at INT64_MAX, 2^40 routed experts: an error (does not fit in 64 bits), never a wrapped
    # count, in bounded time.
    n = 30000
    return {"model_type": "glm_moe_dsa", "architectures": ["GlmMoeDsaForCausalLM"], "hidden_size": 64,
            "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": n, "num_attention_heads": 4,
            "q_lora_rank": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8,
            "n_routed_experts": 2**40, "n_shared_experts": 1, "num_experts_per_tok": 2, "vocab_size": 1000,
            "index_n_heads": 2, "index_head_dim": 8, "index_topk_freq": INT64_MAX, "index_skip_topk_offset": INT64_MAX,
            "num_nextn_predict_layers": INT64_MAX,
            "indexer_types": ["full" if i % 3 == 0 else "shared" for i in range(n)],
            "mlp_layer_types": ["dense" if i < 3 else "sparse" for i in range(n)]}


def lfm2_hostile():
    # LFM2: 60,000 full_attn_idxs entries (duplicates, INT64_MAX, layers past the count) over 40,000
    # layers of INT64_MAX-tap convolutions: an error, never a wrapped count.
    n = 40000
    idxs = [i % n for i in range(0, 3 * n, 2)] + [INT64_MAX] * 100
    return {"model_type": "lfm2", "architectures": ["Lfm2ForCausalLM"], "hidden_size": 64, "block_ff_dim": 192,
            "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": n, "vocab_size": 1000,
            "conv_L_cache": INT64_MAX, "full_attn_idxs": idxs}


def granite_hybrid_hostile():
    # Granite 4.0's hybrid: 40,000 layers named in layer_types, a Mamba-2 width of 2^40 · the width
    # in 2^40 heads, 2^40 experts: an error, never a wrapped count.
    n = 40000
    return {"model_type": "granitemoehybrid", "architectures": ["GraniteMoeHybridForCausalLM"], "hidden_size": 64,
            "intermediate_size": 32, "shared_intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "num_hidden_layers": n, "vocab_size": 1000, "num_local_experts": 2**40, "num_experts_per_tok": 2,
            "mamba_expand": 2**40, "mamba_n_heads": 2**40, "mamba_d_head": 64, "mamba_d_state": 16,
            "mamba_n_groups": 1, "mamba_d_conv": 4,
            "layer_types": ["attention" if i % 7 == 0 else "mamba" for i in range(n)]}


def glm_moe_dsa_no_experts_many_layers():
    # GLM-5's row without experts and 2^62 layers: the indexer schedule is counted, not walked layer
    # by layer (before: a loop of 2^62 steps, killed by the bound).
    return {"model_type": "glm_moe_dsa", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2**62,
            "num_attention_heads": 4, "q_lora_rank": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8,
            "qk_rope_head_dim": 8, "v_head_dim": 8, "vocab_size": 100, "index_n_heads": 2, "index_head_dim": 8,
            "index_topk_freq": 3}


def main():
    write_case("config-olmo3-40000-layer-types", olmo3_many_layers(),
               ["exit 0", "stdout: OLMo 3 (model_type olmo3", "stdout: 30000 of the 40000 attention layers slide"])
    write_case("config-qwen3-5-hostile-widths", qwen3_5_hostile(),
               ["exit 2", "stderr: headcount: error: ", "stderr: does not fit in 64 bits"])
    write_case("config-glm-moe-dsa-hostile-schedules", glm_moe_dsa_hostile(),
               ["exit 2", "stderr: headcount: error: ", "stderr: does not fit in 64 bits"])
    # The same with 4 experts: counted; its INT64_MAX MTP layers are said not to fit, never "= 0".
    valid = glm_moe_dsa_hostile()
    valid["n_routed_experts"] = 4
    write_case("config-glm-moe-dsa-mtp-overflow", valid,
               ["exit 0", "stdout: 10000 indexer layers", "stdout: does not fit in 64 bits, and is not given",
                "stdout-not: = 0 (it shares"])
    write_case("config-lfm2-hostile-conv", lfm2_hostile(),
               ["exit 2", "stderr: headcount: error: ", "stderr: does not fit in 64 bits"])
    write_case("config-granite-hybrid-hostile-widths", granite_hybrid_hostile(),
               ["exit 2", "stderr: headcount: error: "])
    write_case("config-glm-moe-dsa-2-62-layers", glm_moe_dsa_no_experts_many_layers(),
               ["exit 2", "stderr: headcount: error: ", "stderr: does not fit in 64 bits"])
    write_case("config-gemma4-hostile-full-layers", gemma4_hostile(),
               ["exit 2", "stderr: headcount: error: ", "stderr: does not fit in 64 bits"])


if __name__ == "__main__":
    main()
