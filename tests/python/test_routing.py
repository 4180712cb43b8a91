"""Mixture-of-experts routing as the 2025-26 families write it, exported by torch 1.13 and audited
with the module: gpt-oss (TopK on the router's raw logits, a Softmax over the k chosen, stacked
experts with biases and a fused gate_up read with strided slices), DeepSeek-V3 (sigmoid scores, a
correction bias for the choice only, group-limited choice, a shared expert), Mixtral-style stacked
gate_up chunked in two, and experts with biases. Every count is torch's own sum(p.numel()) or
computed from the module in the test, with the arithmetic in the comments.
"""
import io
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import headcount

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "samples"))
from make_samples import RMSNorm, repeat_kv  # noqa: E402

D, E, K, FF = 32, 4, 2, 16  # width, experts, top-k, one expert's inner width
T = 6                       # tokens of the [T, D] inputs


def exported(module, *inputs, tokens_axis=None):
    """The module's ONNX bytes; `tokens_axis`: the input axis exported as dynamic (the tokens), so
    an accumulator such as torch.zeros_like(x) stays a computed value, as in a real export."""
    g = torch.Generator().manual_seed(1234)
    module.eval()
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    buf = io.BytesIO()
    axes = None if tokens_axis is None else {"x": {tokens_axis: "tokens"}}
    torch.onnx.export(module, tuple(inputs), buf, opset_version=14, input_names=["x"], dynamic_axes=axes)
    return buf.getvalue()


def numel(module):
    return sum(p.numel() for p in module.parameters())


# ----------------------------------------------------------------------------------------------
# Experts: one MLP each.

class SwiGLU(nn.Module):
    """gate_proj, up_proj, down_proj (Llama, DeepSeek-V3's DeepseekV3MLP), with or without biases."""

    def __init__(self, inner=FF, bias=False):
        super().__init__()
        self.gate_proj = nn.Linear(D, inner, bias=bias)
        self.up_proj = nn.Linear(D, inner, bias=bias)
        self.down_proj = nn.Linear(inner, D, bias=bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class ChunkedGateUp(nn.Module):
    """One Linear D -> 2·FF holding gate and up, chunked in two (Phi-3, the stacked Mixtral experts)."""

    def __init__(self, bias=True):
        super().__init__()
        self.gate_up_proj = nn.Linear(D, 2 * FF, bias=bias)
        self.down_proj = nn.Linear(FF, D, bias=bias)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


def gpt_oss_glu(gate_up, alpha=1.702, limit=7.0):
    """gpt-oss's activation: gate and up interleaved ([..., ::2], [..., 1::2]), clamped,
    gate · sigmoid(alpha · gate) · (up + 1)."""
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate = gate.clamp(min=None, max=limit)
    up = up.clamp(min=-limit, max=limit)
    return (up + 1) * (gate * torch.sigmoid(gate * alpha))


class StridedGateUp(nn.Module):
    """gpt-oss's expert as a Linear per expert: gate_up D -> 2·FF with its bias, strided apart."""

    def __init__(self):
        super().__init__()
        self.gate_up_proj = nn.Linear(D, 2 * FF)
        self.down_proj = nn.Linear(FF, D)

    def forward(self, x):
        return self.down_proj(gpt_oss_glu(self.gate_up_proj(x)))


# ----------------------------------------------------------------------------------------------
# Routers and layers.

class GptOssTopKRouter(nn.Module):
    """gpt-oss's router: F.linear with a bias, TopK on the raw logits, a Softmax over the k chosen,
    scattered back into a [T, E] routing matrix (zero off the k)."""

    def __init__(self, experts=E, k=K):
        super().__init__()
        self.k = k
        self.weight = nn.Parameter(torch.empty(experts, D).normal_(0, 0.02))
        self.bias = nn.Parameter(torch.zeros(experts))

    def forward(self, x):
        logits = F.linear(x.reshape(-1, D), self.weight, self.bias)
        top, chosen = torch.topk(logits, self.k, dim=-1)
        top = F.softmax(top, dim=1)
        return torch.zeros_like(logits).scatter(1, chosen, top), chosen, top


class MoE(nn.Module):
    """Base of the layers: the sizes torch sees. `experts` is a ModuleList or a module whose
    parameters are stacked [E, ...]."""

    def expert_numel(self):
        if isinstance(self.experts, nn.ModuleList):
            sizes = {numel(e) for e in self.experts}
            assert len(sizes) == 1
            return sizes.pop()
        assert all(p.shape[0] == self.n for p in self.experts.parameters())
        return numel(self.experts) // self.n

    def active(self):
        """Parameters a token runs: all, less the (E − k) experts it leaves idle."""
        return numel(self) - (self.n - self.k) * self.expert_numel()


class DenseTopKThenSoftmax(MoE):
    """gpt-oss's routing over experts written as modules, run densely: every expert runs on every
    token and is multiplied by its column of the routing matrix. The experts have biases and one
    gate_up Linear chunked in two."""

    def __init__(self):
        super().__init__()
        self.n, self.k = E, K
        self.router = GptOssTopKRouter()
        self.experts = nn.ModuleList(ChunkedGateUp() for _ in range(E))

    def forward(self, x):
        scores, _, _ = self.router(x)
        out = 0
        for e, expert in enumerate(self.experts):
            out = out + expert(x) * scores[:, e:e + 1]
        return out


class SparseTopKThenSoftmax(MoE):
    """The same router, each expert run on the tokens that chose it (NonZero, Gather) and weighted
    by the routing weight of its slot (gathered from the Softmax over the k), index_add back. The
    experts are gpt-oss's, one Linear each: strided gate_up, clamp, sigmoid-gated."""

    def __init__(self):
        super().__init__()
        self.n, self.k = E, K
        self.router = GptOssTopKRouter()
        self.experts = nn.ModuleList(StridedGateUp() for _ in range(E))

    def forward(self, x):
        _, chosen, weights = self.router(x)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = torch.nonzero(chosen == e, as_tuple=True)
            out = out.index_add(0, token, expert(x[token]) * weights[token, slot].unsqueeze(-1))
        return out


class GptOssExperts(nn.Module):
    """gpt-oss's experts: stacked parameters gate_up_proj [E, D, 2·FF], down_proj [E, FF, D] and
    their biases, run either all at once with a batched matmul over every expert (the inference
    path), or looped over the experts on the tokens that chose each (the training path)."""

    def __init__(self, looped):
        super().__init__()
        self.looped = looped
        self.gate_up_proj = nn.Parameter(torch.randn(E, D, 2 * FF) * 0.02)
        self.gate_up_proj_bias = nn.Parameter(torch.zeros(E, 2 * FF))
        self.down_proj = nn.Parameter(torch.randn(E, FF, D) * 0.02)
        self.down_proj_bias = nn.Parameter(torch.zeros(E, D))

    def forward(self, x, chosen, scores):
        if self.looped:
            out = torch.zeros_like(x)
            for e in range(E):
                token, _ = torch.where(chosen == e)
                h = x[token] @ self.gate_up_proj[e] + self.gate_up_proj_bias[e]
                h = gpt_oss_glu(h) @ self.down_proj[e] + self.down_proj_bias[e]
                out = out.index_add(0, token, h * scores[token, e, None])
            return out
        h = x.repeat(E, 1).view(E, -1, D)
        h = torch.bmm(h, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        h = torch.bmm(gpt_oss_glu(h), self.down_proj) + self.down_proj_bias[..., None, :]
        return (h * scores.transpose(0, 1)[..., None]).sum(dim=0)


class GptOssMLP(MoE):
    """gpt-oss's MoE block: GptOssTopKRouter and GptOssExperts."""

    def __init__(self, looped=False):
        super().__init__()
        self.n, self.k = E, K
        self.router = GptOssTopKRouter()
        self.experts = GptOssExperts(looped)

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, D)
        scores, chosen, _ = self.router(x)
        return self.experts(x, chosen, scores).reshape(shape)


class StackedChunkedExperts(nn.Module):
    """Mixtral's (and DeepSeek-V3's) experts in the current Hugging Face code: stacked
    gate_up_proj [E, 2·FF, D] and down_proj [E, D, FF], no biases; each expert run with F.linear on
    its slice, gate and up chunked in two."""

    def __init__(self, experts):
        super().__init__()
        self.n = experts
        self.gate_up_proj = nn.Parameter(torch.randn(experts, 2 * FF, D) * 0.02)
        self.down_proj = nn.Parameter(torch.randn(experts, D, FF) * 0.02)

    def forward(self, x, chosen, weights):
        out = torch.zeros_like(x)
        for e in range(self.n):
            token, slot = torch.where(chosen == e)
            gate, up = F.linear(x[token], self.gate_up_proj[e]).chunk(2, dim=-1)
            h = F.linear(F.silu(gate) * up, self.down_proj[e])
            out = out.index_add(0, token, h * weights[token, slot, None])
        return out


class MoEGate(nn.Module):
    """DeepSeek-V3's router (MoEGate, topk_method "noaux_tc"): a weight [E, D] without bias; sigmoid
    scores; the correction bias e_score_correction_bias (a parameter of the gate) added for the
    choice only; group-limited choice (the best `topk_group` of `n_group` groups by the sum of each
    group's top 2, the others masked out); the k weights gathered from the un-biased scores,
    renormalised and scaled by routed_scaling_factor."""

    def __init__(self, experts, k, n_group, topk_group):
        super().__init__()
        self.n, self.k, self.n_group, self.topk_group = experts, k, n_group, topk_group
        self.weight = nn.Parameter(torch.randn(experts, D) * 0.02)
        self.e_score_correction_bias = nn.Parameter(torch.linspace(-0.01, 0.01, experts))

    def forward(self, x):
        tokens = x.shape[0]
        scores = F.linear(x, self.weight).sigmoid()
        for_choice = scores + self.e_score_correction_bias.unsqueeze(0)
        group_scores = for_choice.view(tokens, self.n_group, -1).topk(2, dim=-1)[0].sum(dim=-1)
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores).scatter(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(tokens, self.n_group, self.n // self.n_group).reshape(tokens, -1)
        for_choice = for_choice.masked_fill(~score_mask.bool(), 0.0)
        chosen = torch.topk(for_choice, k=self.k, dim=-1, sorted=False)[1]
        weights = scores.gather(1, chosen)
        weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        return chosen, weights * 2.5


class DeepseekV3MoE(MoE):
    """DeepSeek-V3's MoE layer: MoEGate, routed experts run on the tokens that chose them, and a
    shared expert on every token. Experts as modules (DeepseekV3MLP) or stacked."""

    def __init__(self, experts=8, k=3, n_group=4, topk_group=2, stacked=False):
        super().__init__()
        self.n, self.k = experts, k
        self.gate = MoEGate(experts, k, n_group, topk_group)
        self.experts = StackedChunkedExperts(experts) if stacked else nn.ModuleList(SwiGLU() for _ in range(experts))
        self.shared_experts = SwiGLU(2 * FF)

    def forward(self, x):
        chosen, weights = self.gate(x)
        if isinstance(self.experts, nn.ModuleList):
            out = torch.zeros_like(x)
            for e, expert in enumerate(self.experts):
                token, slot = torch.where(chosen == e)
                out = out.index_add(0, token, expert(x[token]) * weights[token, slot, None])
        else:
            out = self.experts(x, chosen, weights)
        return out + self.shared_experts(x)


# ----------------------------------------------------------------------------------------------
# A gpt-oss-style decoder.

H, KV, HD, S, VOCAB, WINDOW = 4, 2, 8, 8, 64, 4  # 4 query heads, 2 K/V heads of 8; 8 tokens


class GptOssAttention(nn.Module):
    """gpt-oss's attention: q/k/v/o with biases, grouped K/V, rotary (halves), learned sinks (one
    logit per head, a column of the scores dropped after the Softmax) and, on sliding layers, a band
    mask buffer (0 where 0 <= i - j < window, -1e9 elsewhere); on full layers a causal one."""

    def __init__(self, window):
        super().__init__()
        self.q_proj = nn.Linear(D, H * HD)
        self.k_proj = nn.Linear(D, KV * HD)
        self.v_proj = nn.Linear(D, KV * HD)
        self.o_proj = nn.Linear(H * HD, D)
        self.sinks = nn.Parameter(torch.zeros(H))
        i, j = torch.arange(S)[:, None], torch.arange(S)[None, :]
        allowed = (j <= i) & (i - j < window) if window else (j <= i)
        self.register_buffer("mask", torch.where(allowed, 0.0, -1e9).view(1, 1, S, S))
        inv = 1.0 / (150000 ** (torch.arange(0, HD, 2).float() / HD))
        freqs = torch.outer(torch.arange(S).float(), inv)
        self.register_buffer("cos", freqs.cos())
        self.register_buffer("sin", freqs.sin())

    def rotary(self, x):
        first, second = torch.chunk(x, 2, dim=-1)
        return torch.cat((first * self.cos - second * self.sin, second * self.cos + first * self.sin), dim=-1)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.rotary(self.q_proj(x).view(b, s, H, HD).transpose(1, 2))
        k = self.rotary(self.k_proj(x).view(b, s, KV, HD).transpose(1, 2))
        v = self.v_proj(x).view(b, s, KV, HD).transpose(1, 2)
        k, v = repeat_kv(k, H // KV), repeat_kv(v, H // KV)
        w = q @ k.transpose(2, 3) * HD ** -0.5 + self.mask
        w = torch.cat([w, self.sinks.reshape(1, H, 1, 1).expand(b, H, s, 1)], dim=-1)
        w = w - w.max(dim=-1, keepdim=True).values
        w = F.softmax(w, dim=-1)[..., :-1]
        return self.o_proj((w @ v).transpose(1, 2).reshape(b, s, H * HD))


class GptOssDecoder(nn.Module):
    """Four gpt-oss layers over an embedding: sliding (4 tokens) and full attention alternating,
    each followed by gpt-oss's MoE (4 stacked experts with biases, top-2, TopK then Softmax); a
    final norm and an untied LM head."""

    def __init__(self, layers=4):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList(nn.ModuleDict({
            "input_layernorm": RMSNorm(D), "self_attn": GptOssAttention(WINDOW if i % 2 == 0 else 0),
            "post_attention_layernorm": RMSNorm(D), "mlp": GptOssMLP()}) for i in range(layers))
        self.norm = RMSNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = x + layer["self_attn"](layer["input_layernorm"](x))
            x = x + layer["mlp"](layer["post_attention_layernorm"](x))
        return self.lm_head(self.norm(x))


# ----------------------------------------------------------------------------------------------
# The tests.

def check_layer(layer, moe, router, shared=0, shared_experts=0):
    """One layer as torch's modules count it: experts, k, one expert, all routed, the router, the
    shared experts."""
    assert layer.form == "routed"
    assert (layer.experts, layer.top_k, layer.found) == (moe.n, moe.k, moe.n)
    assert layer.expert_parameters == moe.expert_numel()
    assert layer.routed_parameters == moe.n * moe.expert_numel()
    assert layer.router_parameters == numel(router)
    assert (layer.shared_parameters, layer.shared_experts) == (shared, shared_experts)
    assert layer.notes == []


def check_model(r, model):
    """The model's count and active count are torch's, its router Softmax is no unmatched attention
    Softmax, and nothing is said above info."""
    assert r.parameters.framework == numel(model)
    assert r.experts.active_parameters == model.active()
    assert r.experts.unexamined == 0
    assert r.unmatched == []
    assert all(f.severity == "info" for f in r.findings)
    assert "mixture-of-experts" in [f.rule for f in r.findings]


def test_topk_on_raw_logits_then_softmax_dense_experts_with_a_chunked_gate_up():
    model = DenseTopKThenSoftmax()
    r = headcount.audit(exported(model, torch.randn(T, D)))
    # One expert: gate_up 32·32 + 32 = 1,056, down 16·32 + 32 = 544: 1,600. Router 4·32 + 4 = 132.
    assert model.expert_numel() == 1_600 and numel(model.router) == 132
    # 4 experts 6,400 + router 132 = 6,532; a token runs 2: 6,532 − (4 − 2)·1,600 = 3,332.
    assert numel(model) == 6_532 and model.active() == 3_332
    (layer,) = r.experts.layers
    check_layer(layer, model, model.router)
    check_model(r, model)
    assert r.parameters.composition.routed_experts == 6_400
    assert r.parameters.composition.routers == 132


def test_topk_on_raw_logits_then_softmax_sparse_experts_with_a_strided_gate_up():
    model = SparseTopKThenSoftmax()
    r = headcount.audit(exported(model, torch.randn(T, D), tokens_axis=0))
    # One expert as above, its gate_up read as [..., ::2] and [..., 1::2], clamped: 1,600.
    assert model.expert_numel() == 1_600 and model.active() == 3_332
    (layer,) = r.experts.layers
    check_layer(layer, model, model.router)
    check_model(r, model)


def test_gpt_oss_stacked_experts_batched_over_every_expert():
    model = GptOssMLP(looped=False)
    r = headcount.audit(exported(model, torch.randn(T, D)))
    # Stacked: gate_up_proj [4, 32, 32] + bias [4, 32], down_proj [4, 16, 32] + bias [4, 32]:
    # 6,400, one tensor set for every expert; one expert is a quarter, 1,600.
    assert [tuple(p.shape) for p in model.experts.parameters()] == [(4, 32, 32), (4, 32), (4, 16, 32), (4, 32)]
    assert model.expert_numel() == 1_600 and numel(model) == 6_532 and model.active() == 3_332
    (layer,) = r.experts.layers
    check_layer(layer, model, model.router)
    check_model(r, model)
    assert r.parameters.composition.routed_experts == 6_400


def test_gpt_oss_stacked_experts_looped_over_the_experts():
    model = GptOssMLP(looped=True)
    r = headcount.audit(exported(model, torch.randn(T, D), tokens_axis=0))
    # Each expert's slices of the stacked parameters, exported one expert at a time: 1,600 each.
    assert model.expert_numel() == 1_600 and model.active() == 3_332
    (layer,) = r.experts.layers
    check_layer(layer, model, model.router)
    check_model(r, model)


@pytest.mark.parametrize("n_group, topk_group, stacked", [(4, 2, False), (1, 1, False), (4, 2, True)])
def test_deepseek_v3_sigmoid_scores_with_a_correction_bias_and_a_shared_expert(n_group, topk_group, stacked):
    model = DeepseekV3MoE(n_group=n_group, topk_group=topk_group, stacked=stacked)
    r = headcount.audit(exported(model, torch.randn(T, D), tokens_axis=0))
    # One routed expert: 3·32·16 = 1,536 (gate and up stacked as [8, 32, 32] and chunked, or
    # apart); 8 of them 12,288. Router: weight 8·32 + e_score_correction_bias 8 = 264. Shared
    # expert 3·32·32 = 3,072. Total 15,624; a token runs 3: 15,624 − (8 − 3)·1,536 = 7,944.
    assert model.expert_numel() == 1_536 and numel(model.gate) == 264
    assert numel(model) == 15_624 and model.active() == 7_944
    # The group choice (the top 2 within each group, then the best groups) is part of the routing,
    # not a layer of its own: one layer, k = 3.
    (layer,) = r.experts.layers
    check_layer(layer, model, model.gate, shared=numel(model.shared_experts), shared_experts=1)
    check_model(r, model)
    assert r.parameters.composition.routers == 264


def test_gpt_oss_style_decoder_with_sinks_alternating_windows_and_routed_experts():
    model = GptOssDecoder()
    r = headcount.audit(exported(model, torch.randint(0, VOCAB, (1, S))))
    attn, moe = model.layers[0]["self_attn"], model.layers[0]["mlp"]
    # Attention: q 32·32 + 32 = 1,056, k and v 32·16 + 16 = 528 each, o 1,056, sinks 4: 3,172.
    assert numel(attn) == 3_172
    # MoE: 4 experts of 1,600 and a router of 132: 6,532. Per layer with two norms of 32: 9,768;
    # 4 layers 39,072, embedding 64·32 = 2,048, final norm 32, LM head 2,048: 43,200.
    assert numel(moe) == 6_532 and numel(model) == 43_200
    # Active: 43,200 − 4 layers · (4 − 2) · 1,600 = 30,400.
    active = numel(model) - sum((l["mlp"].n - l["mlp"].k) * l["mlp"].expert_numel() for l in model.layers)
    assert active == 30_400
    assert r.parameters.framework == numel(model)
    assert r.experts.active_parameters == active
    assert len(r.experts.layers) == 4
    for layer, modules in zip(r.experts.layers, model.layers):
        check_layer(layer, modules["mlp"], modules["mlp"].router)
    blocks = r.attention_blocks
    assert [b.total for b in blocks] == [numel(l["self_attn"]) for l in model.layers]
    assert [[(e.role, e.elements) for e in b.extras] for b in blocks] == [[("sink", 4)]] * 4
    assert [(b.heads, b.kv_heads, b.head_dim) for b in blocks] == [(H, KV, HD)] * 4
    assert [b.window for b in blocks] == [4, None, 4, None]
    assert r.unmatched == []
    assert all(f.severity == "info" for f in r.findings)


class GatheredExperts(nn.Module):
    """Stacked experts that run only the chosen ones (issue 37, item 7): the k chosen experts'
    matrices gathered from gate_up_proj [E, D, 2·FF] and down_proj [E, FF, D] (and their biases)
    by the router's TopK indices, then one batched matmul per role; gate and up chunked in two."""

    def __init__(self):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.randn(E, D, 2 * FF) * 0.02)
        self.gate_up_proj_bias = nn.Parameter(torch.zeros(E, 2 * FF))
        self.down_proj = nn.Parameter(torch.randn(E, FF, D) * 0.02)
        self.down_proj_bias = nn.Parameter(torch.zeros(E, D))

    def forward(self, x, chosen, weights):
        h = x[:, None, None, :] @ self.gate_up_proj[chosen] + self.gate_up_proj_bias[chosen][:, :, None, :]
        gate, up = h.chunk(2, dim=-1)
        h = (F.silu(gate) * up) @ self.down_proj[chosen] + self.down_proj_bias[chosen][:, :, None, :]
        return (h.reshape(-1, K, D) * weights[..., None]).sum(dim=1)


class GatheredMoE(MoE):
    """A router Linear(D, E) without bias, Softmax, TopK, the k weights renormalised; GatheredExperts."""

    def __init__(self):
        super().__init__()
        self.n, self.k = E, K
        self.router = nn.Linear(D, E, bias=False)
        self.experts = GatheredExperts()

    def forward(self, x):
        weights, chosen = torch.topk(self.router(x).softmax(-1), K, dim=-1)
        return self.experts(x, chosen, weights / weights.sum(-1, keepdim=True))


def test_stacked_experts_gathered_by_the_routers_choice():
    model = GatheredMoE()
    r = headcount.audit(exported(model, torch.randn(T, D), tokens_axis=0))
    # gate_up [4, 32, 32] + bias [4, 32], down [4, 16, 32] + bias [4, 32]: 6,400; one expert a
    # quarter, 1,600. Router 32 · 4 = 128: 6,528; a token runs 2 of 4: 6,528 − 2 · 1,600 = 3,328.
    assert model.expert_numel() == 1_600 and numel(model.router) == 128
    assert numel(model) == 6_528 and model.active() == 3_328
    (layer,) = r.experts.layers
    check_layer(layer, model, model.router)
    check_model(r, model)
    assert r.parameters.composition.routed_experts == 6_400
    assert r.parameters.composition.other == 0
