"""The edges of issue 30, each rebuilt as a torch 1.13 export in memory and audited with the module.

Every expected count is PyTorch's own sum(p.numel()) at export time, or worked by hand in the
comment beside it. Environment as test_headcount.py: PYTHONPATH holds build/python.
"""
import io
import math

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import numpy_helper

import headcount


def export(module, inputs, **kwargs):
    """The module exported by torch 1.13 (opset 14) into memory after seeded noise on every
    parameter (equal tensors of a fresh module would be merged by the exporter), and torch's own
    parameter count."""
    g = torch.Generator().manual_seed(1234)
    module.eval()
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    buf = io.BytesIO()
    torch.onnx.export(module, tuple(inputs), buf, opset_version=14, **kwargs)
    return buf.getvalue(), sum(p.numel() for p in module.parameters())


# ---- ALiBi as two registered buffers ------------------------------------------------------------

H, E, T = 4, 32, 16


class AlibiBuffersAttention(nn.Module):
    """ALiBi written with two registered buffers: the per-head slopes [1, H, 1, 1], 2^(-8(i+1)/H),
    and the relative distances [1, 1, T, T], j - i, sliced to the sequence and added to the scores
    as slopes · distances. With a dynamic sequence axis the exporter cannot fold the product, so
    both buffers stay initializers, stored once and re-created by Identity in later layers."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(E, E) for _ in range(4))
        self.register_buffer("slopes", torch.tensor([2 ** (-8 * (i + 1) / H) for i in range(H)]).view(1, H, 1, 1))
        pos = torch.arange(T)
        self.register_buffer("distance", (pos[None, :] - pos[:, None]).float().view(1, 1, T, T))

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, H, E // H).transpose(1, 2)
        k = self.k(x).view(b, s, H, E // H).transpose(1, 2)
        v = self.v(x).view(b, s, H, E // H).transpose(1, 2)
        w = q @ k.transpose(2, 3) / math.sqrt(E // H)
        w = F.softmax(w + self.slopes * self.distance[:, :, :s, :s], -1)
        return self.o((w @ v).transpose(1, 2).reshape(b, s, E))


class Stack(nn.Module):
    def __init__(self, make, n):
        super().__init__()
        self.layers = nn.ModuleList(make() for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def test_alibi_slopes_and_distances_are_buffers_and_their_merged_copies_too():
    data, torch_total = export(Stack(AlibiBuffersAttention, 3), [torch.randn(2, T, E)], input_names=["x"],
                               dynamic_axes={"x": {0: "batch", 1: "seq"}})
    r = headcount.audit(data)
    # Three blocks of q/k/v/o Linear(32, 32): 3 · 4 · (32·32 + 32) = 12,672, torch's count.
    assert torch_total == 12_672
    assert r.parameters.framework == torch_total
    # Stored: the 12,672 plus the slopes (4) and the distances (16 · 16 = 256), once each.
    assert r.parameters.stored == 12_672 + 4 + 256
    assert r.parameters.buffers == 4 + 256
    reasons = sorted(b.reason for b in r.buffers)
    assert reasons[0].startswith("ALiBi slopes for 4 heads: r, r², r³ ... with r = 0.25")  # 2^(-8/4)
    assert reasons[1] == "relative distances j - i between 16 positions (what ALiBi scales by its slopes)"
    # The Identity copies in layers 1 and 2 re-create buffers, not parameters.
    assert r.parameters.merged == 0
    assert [b.heads for b in r.attention_blocks] == [4, 4, 4]


# ---- scalar constants stored as initializers (torch 1.7) ----------------------------------------

def hoist_scalar_constants(data):
    """What torch 1.7's exporter did with the constants of a decomposed LayerNorm, GELU and the
    score scale: 0-d float tensors become initializers instead of Constant nodes. Returns the
    rewritten model and how many it moved."""
    model = onnx.load_from_string(data)
    keep, moved = [], 0
    for node in model.graph.node:
        t = node.attribute[0].t if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value" else None
        if t is not None and t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 0:
            t.name = node.output[0]
            model.graph.initializer.append(t)
            moved += 1
        else:
            keep.append(node)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    return model.SerializeToString(), moved


def test_scalar_constants_of_arithmetic_are_not_parameters():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 1)
    data, torch_total = export(encoder, [torch.randn(5, 2, 16)])
    data, moved = hoist_scalar_constants(data)
    # The export's 0-d floats: the score scale √8 and, per LayerNorm, Pow's exponent 2 and the
    # epsilon 1e-05: 1 + 2 · 2 = 5.
    assert moved == 5
    r = headcount.audit(data)
    # torch: attention 4·16² + 4·16 = 1,088; feed-forward 16·32 + 32 + 32·16 + 16 = 1,072; two
    # LayerNorms 2 · 32 = 64. 1,088 + 1,072 + 64 = 2,224.
    assert torch_total == 2_224
    assert r.parameters.stored == torch_total + 5
    assert r.parameters.constants == 5
    assert r.parameters.framework == torch_total
    values = sorted(c.reason.split(",")[0] for c in r.constants)
    assert values == ["a scalar constant 1e-05"] * 2 + ["a scalar constant 2"] * 2 + ["a scalar constant 2.82843"]


def test_gelu_constants_stored_as_initializers_are_not_parameters():
    # A DistilBERT-style feed-forward: Linear(16, 64) -> GELU (erf form) -> Linear(64, 16). torch
    # 1.13 writes GELU as x · 0.5 · (1 + erf(x / √2)) with three 0-d constants.
    ffn = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    data, torch_total = export(ffn, [torch.randn(3, 16)])
    data, moved = hoist_scalar_constants(data)
    assert moved == 3  # √2, 1 and 0.5
    r = headcount.audit(data)
    assert torch_total == 16 * 64 + 64 + 64 * 16 + 16 == 2_128
    assert r.parameters.constants == 3
    assert r.parameters.framework == torch_total


def test_a_learned_scalar_stays_a_parameter():
    class Gate(nn.Module):
        """ReZero: x + α · f(x) with a learned scalar α (noise makes it a trained-looking value)."""

        def __init__(self):
            super().__init__()
            self.f = nn.Linear(8, 8)
            self.alpha = nn.Parameter(torch.tensor(0.0))

        def forward(self, x):
            return x + self.alpha * self.f(x)

    data, torch_total = export(Gate(), [torch.randn(2, 8)])
    r = headcount.audit(data)
    assert torch_total == 8 * 8 + 8 + 1 == 73
    assert r.parameters.constants == 0
    assert r.parameters.framework == torch_total


# ---- heads that only the shapes say -------------------------------------------------------------

class SingleHead(nn.Module):
    """One head, no head split in the graph: q (x) · k (memory)ᵀ / √32 over the whole width."""

    def __init__(self):
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(E, E) for _ in range(4))

    def forward(self, x, memory):
        q, k, v = self.q(x), self.k(memory), self.v(memory)
        return self.o(F.softmax(q @ k.transpose(-1, -2) / math.sqrt(E), -1) @ v)


class SelfAndCross(nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn, self.cross_attn = SingleHead(), SingleHead()

    def forward(self, x, memory):
        x = x + self.self_attn(x, x)
        return x + self.cross_attn(x, memory)


def test_single_head_self_and_cross_attention_have_one_head():
    data, torch_total = export(SelfAndCross(), [torch.randn(2, 5, E), torch.randn(2, 7, E)])
    r = headcount.audit(data)
    assert r.parameters.framework == torch_total == 2 * 4 * (E * E + E)
    assert [b.kind for b in r.attention_blocks] == ["self", "cross"]
    assert [(b.heads, b.kv_heads, b.head_dim) for b in r.attention_blocks] == [(1, 1, 32), (1, 1, 32)]
    assert r.attention_blocks[1].heads_from == ("no Reshape splits Q, and MatMul(Q, Kᵀ) contracts all 32 features of "
                                                "the Q projection: one head")


class WhisperCrossWithPast(nn.Module):
    """Hugging Face Whisper's decoder cross-attention with its cache: K and V are the cached
    encoder K/V, graph inputs [B, 4, S, 16]; Q is projected, scaled, and the heads folded into the
    batch ([B·4, T, 16]) as the reference code does."""

    def __init__(self, width=64, heads=4):
        super().__init__()
        self.h, self.d = heads, width // heads
        self.q_proj, self.out_proj = nn.Linear(width, width), nn.Linear(width, width)

    def forward(self, x, past_key, past_value):
        bsz, tgt, width = x.size()
        q = (self.q_proj(x) * self.d ** -0.5).view(bsz, tgt, self.h, self.d).transpose(1, 2).contiguous()
        shape = (bsz * self.h, -1, self.d)
        q, k, v = q.view(*shape), past_key.reshape(*shape), past_value.reshape(*shape)
        w = torch.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        o = torch.bmm(w, v).view(bsz, self.h, tgt, self.d).transpose(1, 2).reshape(bsz, tgt, width)
        return self.out_proj(o)


def test_whisper_cross_attention_reads_its_kv_heads_from_the_cache_inputs():
    data, torch_total = export(WhisperCrossWithPast(), [torch.randn(2, 1, 64), torch.randn(2, 4, 7, 16), torch.randn(2, 4, 7, 16)],
                               input_names=["x", "past_key", "past_value"],
                               dynamic_axes={"x": {0: "batch", 1: "tgt"}, "past_key": {0: "batch", 2: "src"},
                                             "past_value": {0: "batch", 2: "src"}})
    r = headcount.audit(data)
    assert torch_total == 2 * (64 * 64 + 64) == 8_320
    (b,) = r.attention_blocks
    assert (b.kind, b.heads, b.kv_heads, b.head_dim, b.v_head_dim) == ("cross", 4, 4, 16, 16)
    assert b.heads_from.endswith("; K/V heads 4 from axis 1 of the declared shape [?, 4, ?, 16] of the graph input 'past_key'")
    # The cross K/V per encoder token: 4 heads · (16 + 16) features · 4 bytes (float32) = 512.
    assert r.cost.kv.cross_bytes_per_encoder_token == 512
    assert r.cost.kv.lower_bound is False


# ---- a shared expert that starts the sum --------------------------------------------------------

class Expert(nn.Module):
    def __init__(self, d, f):
        super().__init__()
        self.up, self.down = nn.Linear(d, f, bias=False), nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.up(x)))


class SharedFirstMoE(nn.Module):
    """Dense routing over 256 experts, top-8 by a sigmoid scorer; the shared expert's output
    starts the sum and every routed expert's weighted output is added to it in turn."""

    def __init__(self, d=8, experts=256, k=8):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, 4) for _ in range(experts))
        self.shared = Expert(d, 16)

    def forward(self, x):
        scores = torch.sigmoid(self.gate(x))
        w, chosen = torch.topk(scores, self.k, dim=-1)
        mask = torch.zeros_like(scores).scatter(-1, chosen, w / w.sum(-1, keepdim=True))
        y = self.shared(x)
        for e, expert in enumerate(self.experts):
            y = y + expert(x) * mask[..., e:e + 1]
        return y


def test_a_shared_expert_that_starts_the_routed_sum_is_found():
    moe = SharedFirstMoE()
    data, torch_total = export(moe, [torch.randn(2, 5, 8)])
    r = headcount.audit(data)
    one = sum(p.numel() for p in moe.experts[0].parameters())  # 8·4 + 4·8 = 64
    assert one == 64
    # router 8·256 = 2,048; routed 256 · 64 = 16,384; shared 8·16 + 16·8 = 256: 18,688.
    assert torch_total == 2_048 + 16_384 + 256 == 18_688
    (layer,) = r.experts.layers
    assert (layer.experts, layer.top_k, layer.found, layer.expert_parameters) == (256, 8, 256, 64)
    assert (layer.shared_experts, layer.shared_parameters, layer.router_parameters) == (1, 256, 2_048)
    # Per token: everything but the 256 - 8 idle experts: 18,688 - 248 · 64 = 2,816.
    assert r.experts.active_parameters == torch_total - (256 - 8) * one == 2_816
