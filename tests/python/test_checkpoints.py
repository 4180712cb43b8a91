"""Checkpoints beside graphs: safetensors files written here from torch models (single and sharded,
float32, float16 and bfloat16) audited as a model, against torch's own sum(p.numel()), the sum of
the header's shape products computed here, and the same model's ONNX export.

The writer below follows the format's specification (an 8-byte little-endian header length, a JSON
header of {name: {dtype, shape, data_offsets}}, the tensors' bytes one after another); it is this
test's own, independent of headcount's reader.
"""
import io
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

import headcount

CODES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


def tensor_bytes(t):
    t = t.detach().contiguous().cpu()
    return t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        b = tensor_bytes(tensors[name])
        header[name] = {"dtype": CODES[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return sum(math.prod(t.shape) for t in tensors.values())  # the header's shape products


def write_sharded(folder, tensors, shards):
    """Tensors split over `shards` files in name order, with model.safetensors.index.json."""
    names = sorted(tensors)
    per = math.ceil(len(names) / shards)
    weight_map, total = {}, 0
    for i in range(shards):
        part = names[i * per:(i + 1) * per]
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(folder / file, {n: tensors[n] for n in part})
        for n in part:
            weight_map[n] = file
            total += len(tensor_bytes(tensors[n]))
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return total


# A LLaMA-style decoder whose parameter names are Hugging Face's (model.layers.N.self_attn.q_proj ...).
D, H, KV, HD, FF, V, L = 32, 4, 2, 8, 64, 100, 3


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj = nn.Linear(D, H * HD, bias=False)
        self.k_proj = nn.Linear(D, KV * HD, bias=False)
        self.v_proj = nn.Linear(D, KV * HD, bias=False)
        self.o_proj = nn.Linear(H * HD, D, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, H, HD).transpose(1, 2)
        k = self.k_proj(x).view(b, s, KV, HD).transpose(1, 2).repeat_interleave(H // KV, 1)
        v = self.v_proj(x).view(b, s, KV, HD).transpose(1, 2).repeat_interleave(H // KV, 1)
        w = F.softmax(q @ k.transpose(2, 3) / math.sqrt(HD), -1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(b, s, H * HD))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(D, FF, bias=False)
        self.up_proj = nn.Linear(D, FF, bias=False)
        self.down_proj = nn.Linear(FF, D, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.mlp = Attention(), MLP()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(D), RMSNorm(D)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, D)
        self.layers = nn.ModuleList(Layer() for _ in range(L))
        self.norm = RMSNorm(D)


class LlamaForCausalLM(nn.Module):
    def __init__(self, tied=False):
        super().__init__()
        self.model = Inner()
        self.lm_head = nn.Linear(D, V, bias=False)
        if tied:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids):
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x)
        return self.lm_head(self.model.norm(x))


CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": D, "num_attention_heads": H,
          "num_key_value_heads": KV, "num_hidden_layers": L, "intermediate_size": FF, "vocab_size": V}


def state(model, dtype):
    """The state dict as save_pretrained writes it: each tensor once (a tied head is not saved)."""
    seen, out = set(), {}
    for name, p in model.named_parameters():  # named_parameters lists a shared tensor once
        if id(p) not in seen:
            seen.add(id(p))
            out[name] = p.detach().to(dtype)
    return out


def exported_blocks(model):
    buf = io.BytesIO()
    torch.onnx.export(model.eval(), (torch.randint(0, V, (1, 5)),), buf, opset_version=14)
    return headcount.audit(buf.getvalue()).attention_blocks


def test_safetensors_in_each_dtype_is_the_model_torch_counts(tmp_path):
    torch.manual_seed(0)
    model = LlamaForCausalLM()
    torch_count = sum(p.numel() for p in model.parameters())
    # embed 100·32 + 3 · (q 32·32 + k 32·16 + v 32·16 + o 32·32 + mlp 3·32·64 + 2 norms of 32) + norm 32
    # + lm_head 100·32 = 3,200 + 3 · 9,280 + 32 + 3,200 = 34,272.
    assert torch_count == 34_272
    onnx_blocks = exported_blocks(model)
    for dtype, size in ((torch.float32, 4), (torch.float16, 2), (torch.bfloat16, 2)):
        folder = tmp_path / str(dtype).split(".")[1]
        folder.mkdir()
        header_count = write_safetensors(folder / "model.safetensors", state(model, dtype), {"format": "pt"})
        (folder / "config.json").write_text(json.dumps({**CONFIG, "tie_word_embeddings": False}))
        r = headcount.audit(folder / "model.safetensors")
        assert r.parameters.stored == header_count == torch_count
        assert r.parameters.framework == torch_count
        assert r.model.format == "safetensors"
        (row,) = r.by_dtype
        assert (row.dtype, row.bytes) == ({4: "float32", 2: "float16" if dtype == torch.float16 else "bfloat16"}[size],
                                          torch_count * size)
        # One block per layer, Q/K/V/O as the ONNX export of the same model has them.
        assert len(r.attention_blocks) == len(onnx_blocks) == L
        for b, o in zip(r.attention_blocks, onnx_blocks):
            assert [b.projections.q.total, b.projections.k.total, b.projections.v.total, b.projections.o.total] == \
                   [o.projections.q.total, o.projections.k.total, o.projections.v.total, o.projections.o.total] == \
                   [1_024, 512, 512, 1_024]
            assert (b.heads, b.kv_heads, b.head_dim) == (H, KV, HD)
        comp = r.parameters.composition
        # Feed-forward 3 · 3·32·64 = 18,432; norms 3 · 2·32 + 32 = 224; embeddings and LM head 3,200.
        assert (comp.attention, comp.feed_forward, comp.norms, comp.embeddings, comp.lm_head, comp.other) == \
               (3 * 3_072, 18_432, 224, 3_200, 3_200, 0)
        (tied,) = [f for f in r.declared.fields if f.field == "tied embeddings"]
        assert (tied.declared, tied.found, tied.agreement) == (0, 0, "agrees")
        # K/V per token: 3 layers · 2 K/V heads · (8 + 8) · the dtype's size.
        assert r.cost.kv.bytes_per_token == L * KV * 2 * HD * size


def test_a_sharded_checkpoint_and_its_total_size(tmp_path):
    torch.manual_seed(1)
    model = LlamaForCausalLM(tied=True)
    torch_count = sum(p.numel() for p in model.parameters())  # the tied table once: 34,272 - 3,200
    assert torch_count == 31_072
    total = write_sharded(tmp_path, state(model, torch.bfloat16), 3)
    (tmp_path / "config.json").write_text(json.dumps({**CONFIG, "tie_word_embeddings": True}))
    assert total == torch_count * 2
    for target in (tmp_path, tmp_path / "model.safetensors.index.json"):
        r = headcount.audit(target)
        assert r.parameters.framework == torch_count
        assert len(r.model.files) == 4  # the index and its 3 shards
        (tied,) = [f for f in r.declared.fields if f.field == "tied embeddings"]
        assert (tied.declared, tied.found, tied.agreement) == (1, 1, "agrees")


class GPT2Attention(nn.Module):
    """GPT-2's attention: c_attn and c_proj are Conv1D, weights stored [in, out]."""

    def __init__(self, d):
        super().__init__()
        self.c_attn = nn.Parameter(torch.randn(d, 3 * d)), nn.Parameter(torch.randn(3 * d))
        self.c_proj = nn.Parameter(torch.randn(d, d)), nn.Parameter(torch.randn(d))


def test_gpt2_packed_qkv_stored_transposed(tmp_path):
    d, layers = 48, 2
    tensors = {"wte.weight": torch.randn(50, d), "wpe.weight": torch.randn(16, d), "ln_f.weight": torch.ones(d),
               "ln_f.bias": torch.zeros(d)}
    for i in range(layers):
        p = f"h.{i}."
        tensors.update({p + "attn.c_attn.weight": torch.randn(d, 3 * d), p + "attn.c_attn.bias": torch.randn(3 * d),
                        p + "attn.c_proj.weight": torch.randn(d, d), p + "attn.c_proj.bias": torch.randn(d),
                        p + "mlp.c_fc.weight": torch.randn(d, 4 * d), p + "mlp.c_fc.bias": torch.randn(4 * d),
                        p + "mlp.c_proj.weight": torch.randn(4 * d, d), p + "mlp.c_proj.bias": torch.randn(d),
                        p + "ln_1.weight": torch.ones(d), p + "ln_1.bias": torch.zeros(d),
                        p + "ln_2.weight": torch.ones(d), p + "ln_2.bias": torch.zeros(d)})
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": d, "n_head": 4, "n_layer": layers,
                                                      "vocab_size": 50, "n_positions": 16}))
    r = headcount.audit(tmp_path / "model.safetensors")
    assert len(r.attention_blocks) == layers
    for b in r.attention_blocks:
        # c_attn [48, 144] split in three of 48 · 48 + 48 = 2,352; c_proj 48 · 48 + 48 = 2,352:
        # 4·48² + 4·48 = 9,408, the textbook block.
        assert [b.projections.q.total, b.projections.k.total, b.projections.v.total, b.projections.o.total] == [2_352] * 4
        assert b.total == b.standard == 9_408
        assert (b.heads, b.head_dim, b.width) == (4, 12, 48)
    comp = r.parameters.composition
    # Feed-forward per layer 48·192 + 192 + 192·48 + 48 = 18,672; embeddings 50·48 + 16·48 = 3,168.
    assert (comp.feed_forward, comp.embeddings, comp.other) == (2 * 18_672, 3_168, 0)


def test_an_index_whose_total_size_the_shards_do_not_hold(tmp_path):
    tensors = {"a.weight": torch.zeros(4, 4), "b.weight": torch.zeros(8)}  # 64 + 32 bytes of float32
    total = write_sharded(tmp_path, tensors, 2)
    assert total == 96
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    index["metadata"]["total_size"] = 100
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    r = headcount.audit(tmp_path)
    (f,) = [f for f in r.findings if f.rule == "checkpoint-total-size"]
    assert f.severity == "error"
    assert f.message == "the index states a total_size of 100 bytes, but its 2 shards hold 96 bytes of tensors"


def test_a_mixture_of_experts_checkpoint_and_its_export(tmp_path):
    """samples/moe_sparse.onnx's module (two layers of 4 routed SwiGLU experts, top-2, and a shared
    expert) saved under Hugging Face's Qwen2-MoE names: experts, k and the active count by name and
    config agree with the export's."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.environ.get("HEADCOUNT_REPO", "."), "samples"))
    from make_samples import make_moe_sparse  # noqa: E402
    model = make_moe_sparse()[0]
    def hf_name(name):
        """The module's names as Qwen2-MoE's: model.layers.N.self_attn, mlp.gate, mlp.experts.N,
        mlp.shared_expert, input_layernorm, post_attention_layernorm, model.norm, lm_head."""
        if not name.startswith("layers."):
            return {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight"}.get(name, name)
        for a, b in ((".attn.", ".self_attn."), (".moe.shared.", ".mlp.shared_expert."), (".moe.", ".mlp."),
                     (".norm1.", ".input_layernorm."), (".norm2.", ".post_attention_layernorm.")):
            name = name.replace(a, b)
        return "model." + name

    tensors = {}
    for name, p in model.named_parameters():
        name = hf_name(name)
        tensors[name] = p.detach()
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "hidden_size": 32, "num_attention_heads": 4,
        "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100, "num_experts": 4, "num_experts_per_tok": 2}))
    torch_total = sum(p.numel() for p in model.parameters())
    # One expert: gate, up and down 32·32 = 3,072; a token leaves 2 of 4 idle in each of 2 layers:
    # 49,824 - 2 · (4 - 2) · 3,072 = 37,536.
    assert torch_total == 49_824
    r = headcount.audit(tmp_path / "model.safetensors")
    assert r.parameters.framework == torch_total
    assert [(l.experts, l.top_k, l.expert_parameters) for l in r.experts.layers] == [(4, 2, 3_072)] * 2
    assert r.experts.active_parameters == 37_536
    export = headcount.audit(os.path.join(os.environ.get("HEADCOUNT_REPO", "."), "samples", "moe_sparse.onnx"))
    assert export.experts.active_parameters == r.experts.active_parameters
    assert [l.top_k for l in export.experts.layers] == [l.top_k for l in r.experts.layers]
    comp = r.parameters.composition
    assert comp.other == 0
    assert comp.routed_experts == 2 * 4 * 3_072


def test_latent_attention_by_name(tmp_path):
    """samples/mla.onnx's module (DeepSeek-V2's latent attention, 2 layers) saved under Hugging
    Face's DeepSeek names: each layer is one latent block whose Q/K/V/O, latent sizes and K/V
    cache are the export's. Per block (make_samples.LatentAttention: width 32, 4 heads, q_rank 16,
    kv_rank 8, nope 8, rope 4, v 8): Q = 32·16 + 16·4·12 = 1,280; K = 32·(8 + 4) + 4·8·8 = 640
    (kv_a and kv_b's K rows); V = 4·8·8 = 256; O = 32·32 = 1,024."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.environ.get("HEADCOUNT_REPO", "."), "samples"))
    from make_samples import make_mla  # noqa: E402
    torch.manual_seed(0)
    model = make_mla()[0]
    tensors = {}
    for name, p in model.named_parameters():
        if name.startswith("layers."):
            name = "model." + name.replace(".attn.", ".self_attn.")
        tensors[name] = p.detach()
    write_safetensors(tmp_path / "model.safetensors", tensors)
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "deepseek_v2", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
        "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8}))
    r = headcount.audit(tmp_path / "model.safetensors")
    export = headcount.audit(os.path.join(os.environ.get("HEADCOUNT_REPO", "."), "samples", "mla.onnx"))
    assert len(r.attention_blocks) == len(export.attention_blocks) == 2
    for b, o in zip(r.attention_blocks, export.attention_blocks):
        p, q = b.projections, o.projections
        assert [p.q.total, p.k.total, p.v.total, p.o.total] == [q.q.total, q.k.total, q.v.total, q.o.total] == \
               [1_280, 640, 256, 1_024]
        assert (b.latent.q_rank, b.latent.kv_rank, b.latent.rope_dim, b.latent.qk_nope_dim, b.latent.v_head_dim) == \
               (o.latent.q_rank, o.latent.kv_rank, o.latent.rope_dim, o.latent.qk_nope_dim, o.latent.v_head_dim) == \
               (16, 8, 4, 8, 8)
        assert (b.heads, b.head_dim, b.v_head_dim, b.width) == (o.heads, o.head_dim, o.v_head_dim, o.width) == (4, 12, 8, 32)
        assert b.total == o.total  # the latent norms (16 + 8) are the block's extras on both sides
    # A decoder caches the latent and the RoPE key: 2 layers · (8 + 4) · 4 bytes, as the export says.
    assert r.cost.kv.bytes_per_token == export.cost.kv.bytes_per_token == 2 * 12 * 4
    # Without the config, the heads are unknown: kv_b is K's, with a note, and no latent sizes.
    (tmp_path / "config.json").unlink()
    r = headcount.audit(tmp_path / "model.safetensors")
    b = r.attention_blocks[0]
    assert b.latent is None and b.heads is None
    assert b.projections.k.total == 32 * 12 + 4 * 16 * 8 and b.projections.v.total == 0
    assert any("split between K and V is unknown" in n for n in b.notes)
