"""Graphs of issue 37 ("Truth in the wild"), items 8, 9 and 13, exported by torch 1.13 and audited
with the module. Every expected count is torch's own sum(p.numel()), or worked by hand in the
comment beside it. Environment as test_headcount.py: PYTHONPATH holds build/python.
"""
import io
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import headcount

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "samples"))
from make_samples import RMSNorm, rotate_half  # noqa: E402

D, H, HD, S = 64, 4, 16, 16  # width 64, 4 heads of 16, 16 positions


def exported(module, x, noise=lambda name: True, **kwargs):
    """Exported by torch 1.13 (opset 14) after seeded noise on the parameters `noise` names (equal
    tensors of a fresh module are merged by the exporter), and torch's own count."""
    g = torch.Generator().manual_seed(1234)
    module.eval()
    with torch.no_grad():
        for name, p in module.named_parameters():
            if noise(name):
                p.add_(torch.randn(p.shape, generator=g) * 0.02)
    buf = io.BytesIO()
    torch.onnx.export(module, (x,), buf, opset_version=14, **kwargs)
    return buf.getvalue(), sum(p.numel() for p in module.parameters())


class Qwen3StyleAttention(nn.Module):
    """q/k/v/o without biases, RMSNorm over the head size on q and k (q_norm, k_norm), rotary, and
    a causal mask made in forward from a filled buffer: torch.triu(full(-1e9), 1), or
    torch.ones(..).tril() turned into 0 / -1e9 by where."""

    def __init__(self, mask):
        super().__init__()
        self.q_proj, self.k_proj = nn.Linear(D, H * HD, bias=False), nn.Linear(D, H * HD, bias=False)
        self.v_proj, self.o_proj = nn.Linear(D, H * HD, bias=False), nn.Linear(H * HD, D, bias=False)
        self.q_norm, self.k_norm = RMSNorm(HD), RMSNorm(HD)
        self.mask = mask
        if mask == "triu":
            self.register_buffer("fill", torch.full((S, S), -1e9))
        else:
            self.register_buffer("fill", torch.ones(S, S))
        inv = 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD))
        emb = torch.cat([torch.outer(torch.arange(S).float(), inv)] * 2, -1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, s, H, HD)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, s, H, HD)).transpose(1, 2)
        v = self.v_proj(x).view(b, s, H, HD).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        if self.mask == "triu":
            mask = torch.triu(self.fill, 1)
        else:
            mask = torch.where(self.fill.tril().bool(), 0.0, -1e9)
        w = F.softmax(q @ k.transpose(2, 3) / math.sqrt(HD) + mask, -1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(b, s, H * HD))


class Decoder(nn.Module):
    def __init__(self, mask, layers=2):
        super().__init__()
        self.layers = nn.ModuleList([Qwen3StyleAttention(mask) for _ in range(layers)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def test_a_mask_cut_by_trilu_from_a_filled_buffer_is_not_a_parameter():
    for mask in ("triu", "tril"):
        model = Decoder(mask)
        data, torch_total = exported(model, torch.randn(1, S, D))
        # Per layer: q, k, v, o 64·64 = 4,096 each, q_norm and k_norm 16 each: 16,416; two: 32,832.
        assert torch_total == 2 * (4 * 4096 + 2 * 16) == 32_832, mask
        r = headcount.audit(data)
        assert r.parameters.framework == torch_total, mask
        fills = [b for b in r.buffers if "Trilu" in b.reason]
        # The two layers' fill buffers [16, 16] are equal: the exporter stores one, 256 elements,
        # which the second layer reads through an Identity.
        assert [b.elements for b in fills] == [S * S], mask


def test_q_norm_and_k_norm_merged_by_the_exporter_are_two_extras_of_every_block():
    model = Decoder("triu", layers=3)
    # The norms keep their initial ones (no noise): the exporter stores one tensor of 16 for the six.
    data, torch_total = exported(model, torch.randn(1, S, D), noise=lambda name: "norm" not in name)
    assert torch_total == 3 * 16_416 == 49_248
    r = headcount.audit(data)
    assert r.parameters.framework == torch_total
    for b in r.attention_blocks:
        assert sorted(e.role for e in b.extras) == ["k_norm", "q_norm"]
        # 4 x 4,096 + q_norm 16 + k_norm 16, as sum(p.numel()) of the layer.
        assert b.total == sum(p.numel() for p in model.layers[0].parameters()) == 16_416


class DistilBertStyleAttention(nn.Module):
    """DistilBERT's MultiHeadSelfAttention, with the attention mask traced into the graph (a
    tensor of the module, not an input): q / sqrt(dim_per_head), (mask == 0) filled with the
    dtype's minimum."""

    def __init__(self):
        super().__init__()
        self.q_lin, self.k_lin = nn.Linear(D, D), nn.Linear(D, D)
        self.v_lin, self.out_lin = nn.Linear(D, D), nn.Linear(D, D)
        self.register_buffer("attention_mask", torch.tensor([[1.0, 1.0, 1.0, 0.0]]))
        self.register_buffer("divisor", torch.tensor([math.sqrt(HD)]))

    def forward(self, x):
        bs, q_length, _ = x.size()

        def shape(t):
            return t.view(bs, -1, H, HD).transpose(1, 2)

        q, k, v = shape(self.q_lin(x)), shape(self.k_lin(x)), shape(self.v_lin(x))
        q = q / self.divisor
        scores = q @ k.transpose(2, 3)
        mask = (self.attention_mask == 0).view(bs, 1, 1, -1).expand_as(scores)
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        w = F.softmax(scores, dim=-1)
        return self.out_lin((w @ v).transpose(1, 2).reshape(bs, -1, H * HD))


def test_a_compared_mask_and_a_one_element_divisor_are_not_parameters():
    model = DistilBertStyleAttention()
    # Without constant folding the exporter keeps `attention_mask == 0` as an Equal of the stored
    # mask [1, 4] (folded, it becomes a bool constant that is no parameter anyway).
    data, torch_total = exported(model, torch.randn(1, 4, D), do_constant_folding=False)
    assert torch_total == 4 * (64 * 64 + 64) == 16_640
    r = headcount.audit(data)
    # Stored: the four projections, the divisor [1] and the mask [1, 4]: 16,640 + 1 + 4 = 16,645.
    assert r.parameters.stored == 16_645
    assert r.parameters.framework == torch_total
    assert [c.name for c in r.constants] == ["divisor"]
    assert [(b.name, b.elements) for b in r.buffers if b.reason.startswith("only compared")] == [("attention_mask", 4)]


def test_a_mamba_hybrid_whose_attention_cuts_its_mask_from_a_filled_buffer():
    """Issue 37, item 8's second model: a Jamba-style hybrid (the hybrid_mamba sample's Mamba
    mixers and GQA attention, samples/make_samples.py) whose attention layers build their causal
    mask from torch.ones(S, S).tril(), as the issue's Mamba hybrid did; the filled buffer is not a
    parameter."""
    import make_samples as ms

    class FillMaskAttention(ms.LlamaAttention):
        def __init__(self):
            super().__init__()
            self.register_buffer("fill", torch.ones(ms.S, ms.S))

        def forward(self, x):
            bsz, q_len, _ = x.size()
            q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
            k = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
            v = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
            k = ms.repeat_kv(k, self.num_key_value_groups)
            v = ms.repeat_kv(v, self.num_key_value_groups)
            mask = torch.where(self.fill.tril().bool(), 0.0, -1e9)
            w = F.softmax(q @ k.transpose(2, 3) / math.sqrt(self.head_dim) + mask, -1)
            return self.o_proj((w @ v).transpose(1, 2).reshape(bsz, q_len, self.num_heads * self.head_dim))

    model = ms.HybridDecoder([ms.MambaMixer, FillMaskAttention, ms.MambaMixer, FillMaskAttention])
    data, torch_total = exported(model, torch.randint(0, ms.VOCAB, (ms.B, ms.S)))
    r = headcount.audit(data)
    assert r.parameters.framework == torch_total
    fills = [b for b in r.buffers if "Trilu" in b.reason]
    # The two layers' fills [5, 5] are equal: the exporter stores one of S x S = 25 elements.
    assert [b.elements for b in fills] == [ms.S * ms.S]
