"""Attention as 2025-26 models write it, exported by torch 1.13 and audited with the module: sliding
windows, QK-norm and a head size apart from width / heads, declared in a config.json beside the
model. Counts are torch's own sum(p.numel()) or worked by hand in the comments.
"""
import io
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import headcount

REPO = os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "samples"))
from make_samples import RMSNorm, repeat_kv, rotate_half  # noqa: E402

D, H, KV, HD, S = 64, 4, 2, 32, 8  # width 64; 4 query heads, 2 K/V heads, head_dim 32 (4 x 32 = 128 != 64)


class Qwen3StyleAttention(nn.Module):
    """Qwen3/Gemma-3-style attention: q/k/v/o without biases, RMSNorm over head_dim on q and k after
    the head split (q_norm, k_norm), rotary, grouped K/V, and a causal mask buffer that is a band
    of `window` tokens (0 where 0 <= i - j < window, -1e9 elsewhere) or plain causal (window 0)."""

    def __init__(self, window):
        super().__init__()
        self.q_proj = nn.Linear(D, H * HD, bias=False)
        self.k_proj = nn.Linear(D, KV * HD, bias=False)
        self.v_proj = nn.Linear(D, KV * HD, bias=False)
        self.o_proj = nn.Linear(H * HD, D, bias=False)
        self.q_norm, self.k_norm = RMSNorm(HD), RMSNorm(HD)
        i, j = torch.arange(S)[:, None], torch.arange(S)[None, :]
        allowed = (j <= i) & (i - j < window) if window else (j <= i)
        self.register_buffer("mask", torch.where(allowed, 0.0, -1e9).view(1, 1, S, S))
        inv = 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD))
        emb = torch.cat([torch.outer(torch.arange(S).float(), inv)] * 2, -1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, s, H, HD)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, s, KV, HD)).transpose(1, 2)
        v = self.v_proj(x).view(b, s, KV, HD).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        k = k * self.cos + rotate_half(k) * self.sin
        k, v = repeat_kv(k, H // KV), repeat_kv(v, H // KV)
        w = F.softmax(q @ k.transpose(2, 3) / math.sqrt(HD) + self.mask, -1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(b, s, H * HD))


class Decoder(nn.Module):
    """Two sliding layers of 4 tokens and one full layer, as Gemma 3 interleaves them."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Qwen3StyleAttention(4), Qwen3StyleAttention(4), Qwen3StyleAttention(0)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def exported(module, *inputs):
    g = torch.Generator().manual_seed(1234)
    module.eval()
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    buf = io.BytesIO()
    torch.onnx.export(module, tuple(inputs), buf, opset_version=14)
    return buf.getvalue()


def test_windowed_gqa_decoder_with_qk_norm_and_a_declared_head_dim(tmp_path):
    model = Decoder()
    data = exported(model, torch.randn(1, S, D))
    (tmp_path / "model.onnx").write_bytes(data)
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "hidden_size": D, "num_attention_heads": H,
        "num_key_value_heads": KV, "head_dim": HD, "num_hidden_layers": 3, "sliding_window": 4}))
    r = headcount.audit(tmp_path / "model.onnx")
    per_layer = sum(p.numel() for p in model.layers[0].parameters())
    # q 64·128 + k 64·64 + v 64·64 + o 128·64 = 24,576, and q_norm, k_norm 32 each: 24,640.
    assert per_layer == 24_640
    assert r.parameters.framework == sum(p.numel() for p in model.parameters()) == 3 * 24_640
    blocks = r.attention_blocks
    assert [b.total for b in blocks] == [per_layer] * 3  # the norms are in the block
    assert [sorted(e.role for e in b.extras) for b in blocks] == [["k_norm", "q_norm"]] * 3
    assert [(b.heads, b.kv_heads, b.head_dim) for b in blocks] == [(4, 2, 32)] * 3
    assert [b.window for b in blocks] == [4, 4, None]
    assert r.parameters.composition.norms == 0
    # The cache at 4,096 tokens: per token and block 2 K/V heads x (32 + 32) x 4 bytes = 512; the
    # two sliding blocks keep 4 tokens, the full one 4,096: 2 x 512 x 4 + 512 x 4,096 = 2,101,248;
    # without windows 3 x 512 x 4,096 = 6,291,456, so 4,190,208 saved.
    assert r.cost.kv.bytes_per_token == 3 * 512
    assert r.cost.kv.bytes_at_context == 2_101_248
    assert r.cost.kv.window_saved_bytes == 4_190_208
    # The config states head_dim 32: 4 x 32 != 64 is the design, an info finding, no warning.
    rules = [f.rule for f in r.findings]
    assert "width-mismatch" not in rules
    assert "decoupled-head-size" in rules
    assert all(f.severity != "warning" for f in r.findings)
    (head,) = [f for f in r.declared.fields if f.field == "head size"]
    assert (head.declared, head.found, head.agreement) == (32, 32, "agrees")


def test_without_a_config_the_warning_names_both_readings(tmp_path):
    data = exported(Decoder(), torch.randn(1, S, D))
    r = headcount.audit(data)
    (w,) = [f for f in r.findings if f.rule == "width-mismatch"][:1]
    assert "Keras' MultiHeadAttention" in w.message
    assert "a head size chosen on purpose, as Gemma (256) and Qwen3 (128) do" in w.message


class GatedDeltaNet(nn.Module):
    """Qwen3-Next's Gated DeltaNet with its recurrence written out, as the reference's torch
    fallback does: in_proj_qkvz and in_proj_ba, a depthwise causal conv1d over q, k, v (kernel 4, no
    bias), l2-normed q and k, beta = sigmoid(b), the decay g = -exp(A_log) · softplus(a + dt_bias),
    the delta rule S ← S·exp(g) + k ⊗ β(v − Sᵀk) from a zero state [batch, heads, d_k, d_v], a
    gated RMSNorm (weight [d_v]) and out_proj. 2 key heads and 4 value heads of 8."""

    def __init__(self, width=32, hk=2, hv=4, dk=8, dv=8, conv=4):
        super().__init__()
        self.hk, self.hv, self.dk, self.dv = hk, hv, dk, dv
        self.key_dim, self.value_dim = hk * dk, hv * dv
        self.in_proj_qkvz = nn.Linear(width, 2 * self.key_dim + 2 * self.value_dim, bias=False)
        self.in_proj_ba = nn.Linear(width, 2 * hv, bias=False)
        self.conv_dim = 2 * self.key_dim + self.value_dim
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, conv, groups=self.conv_dim, padding=conv - 1, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(hv))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, hv + 1).float()))
        self.norm_weight = nn.Parameter(torch.ones(dv))
        self.out_proj = nn.Linear(self.value_dim, width, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        qkv, z = self.in_proj_qkvz(x).split([self.conv_dim, self.value_dim], -1)
        beta, a = self.in_proj_ba(x).split([self.hv, self.hv], -1)
        qkv = F.silu(self.conv1d(qkv.transpose(1, 2))[..., :s].transpose(1, 2))
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.value_dim], -1)
        q = q.reshape(b, s, self.hk, self.dk).repeat_interleave(self.hv // self.hk, 2)
        k = k.reshape(b, s, self.hk, self.dk).repeat_interleave(self.hv // self.hk, 2)
        v = v.reshape(b, s, self.hv, self.dv)
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        beta = torch.sigmoid(beta)
        g = -self.A_log.exp() * F.softplus(a + self.dt_bias)
        state = torch.zeros(b, self.hv, self.dk, self.dv)
        outs = []
        for t in range(s):
            state = state * g[:, t].exp()[:, :, None, None]
            delta = (v[:, t] - (state * k[:, t, :, :, None]).sum(-2)) * beta[:, t, :, None]
            state = state + k[:, t, :, :, None] * delta[:, :, None, :]
            outs.append((state * q[:, t, :, :, None]).sum(-2))
        o = torch.stack(outs, 1)
        o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm_weight * F.silu(z.reshape(b, s, self.hv, self.dv))
        return self.out_proj(o.reshape(b, s, self.value_dim))


class Residual(nn.Module):
    def __init__(self, mixer):
        super().__init__()
        self.norm, self.mixer = RMSNorm(32), mixer

    def forward(self, x):
        return x + self.mixer(self.norm(x))


def test_gated_deltanet_mixers_their_state_and_the_framework_count():
    model = nn.Sequential(Residual(GatedDeltaNet()), Residual(GatedDeltaNet()))
    data = exported(model, torch.randn(2, 5, 32))
    r = headcount.audit(data)
    per_mixer = sum(p.numel() for p in model[0].mixer.parameters())
    # in_proj_qkvz 32·(2·16 + 2·32) = 3,072, in_proj_ba 32·8 = 256, conv1d 64·1·4 = 256, dt_bias 4,
    # A_log 4, norm 8, out_proj 32·32 = 1,024: 4,624.
    assert per_mixer == 4_624
    assert r.parameters.framework == sum(p.numel() for p in model.parameters())  # the zero states are buffers
    assert [(m.kind, m.parameters) for m in r.mixers.layers] == [("delta_rule", per_mixer)] * 2
    roles = {}
    for t in r.mixers.layers[0].tensors:
        roles[t.role] = roles.get(t.role, 0) + t.elements
    assert roles == {"in_proj": 3_328, "conv1d": 256, "dt_bias": 4, "A_log": 4, "norm": 8, "out_proj": 1_024}
    # State per sequence: conv (4 - 1) x 64 = 192 and the delta state 4 heads x 8 x 8 = 256, float32.
    assert [m.state_elements for m in r.mixers.layers] == [448, 448]
    assert r.cost.state.bytes_per_sequence == 2 * 448 * 4
    assert r.parameters.composition.feed_forward == 0 and r.parameters.composition.other == 0


class ComputedMaskAttention(nn.Module):
    """Attention whose mask is computed in forward from positions over a dynamic sequence, as
    reference code writes a sliding window: 'compare' (j <= i) & (i - j < W) and masked_fill;
    'trilu' ones(s, s).tril().triu(-(W - 1)); 'mistral' Hugging Face Mistral's masked form
    (j > i) | (j <= i - W) turned into a -inf fill and added; 'causal' (j <= i) alone."""

    def __init__(self, form, window=4, width=32, heads=4):
        super().__init__()
        self.form, self.w, self.h, self.d = form, window, heads, width // heads
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        b, s, width = x.shape
        q = self.q(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k(x).view(b, s, self.h, self.d).transpose(1, 2)
        v = self.v(x).view(b, s, self.h, self.d).transpose(1, 2)
        w = q @ k.transpose(2, 3) / math.sqrt(self.d)
        pos = torch.arange(s)
        i, j = pos[:, None], pos[None, :]
        if self.form == "compare":
            w = w.masked_fill(~((j <= i) & (i - j < self.w)), float("-inf"))
        elif self.form == "trilu":
            w = w.masked_fill(~torch.ones(s, s).tril().triu(-(self.w - 1)).bool(), float("-inf"))
        elif self.form == "mistral":
            w = w + torch.where((j > i) | (j <= i - self.w), float("-inf"), 0.0)
        else:
            w = w.masked_fill(~(j <= i), float("-inf"))
        return self.o((F.softmax(w, -1) @ v).transpose(1, 2).reshape(b, s, width))


def test_a_window_computed_from_positions_in_forward():
    for form, window in (("compare", 4), ("trilu", 4), ("mistral", 4), ("compare", 64), ("causal", None)):
        model = ComputedMaskAttention(form, window or 4)
        buf = io.BytesIO()
        torch.onnx.export(model.eval(), (torch.randn(1, 8, 32),), buf, opset_version=14, input_names=["x"],
                          dynamic_axes={"x": {0: "batch", 1: "seq"}})
        r = headcount.audit(buf.getvalue())
        (b,) = r.attention_blocks
        assert b.window == window, form
        if window:
            assert b.window_from.startswith("a mask computed from positions on the score path")
            # 4 heads x (8 + 8) features x 4 bytes = 256 per token, min(4,096, window) tokens kept.
            assert r.cost.kv.bytes_at_context == 256 * window


class ChunkedAttention(nn.Module):
    """Llama 4's chunked attention: a query sees the earlier keys of its own chunk of C; the mask is
    computed from positions over a dynamic sequence, or stored as a buffer (a static export)."""

    def __init__(self, static, chunk=4, width=32, heads=4):
        super().__init__()
        self.static, self.c, self.h, self.d = static, chunk, heads, width // heads
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        if static:
            i, j = torch.arange(16)[:, None], torch.arange(16)[None, :]
            self.register_buffer("mask", torch.where((j <= i) & (i // chunk == j // chunk), 0.0, float("-inf")))

    def forward(self, x):
        b, s, width = x.shape
        q = self.q(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k(x).view(b, s, self.h, self.d).transpose(1, 2)
        v = self.v(x).view(b, s, self.h, self.d).transpose(1, 2)
        w = q @ k.transpose(2, 3) / math.sqrt(self.d)
        if self.static:
            w = w + self.mask[:s, :s]
        else:
            pos = torch.arange(s)
            i, j = pos[:, None], pos[None, :]
            same = torch.div(i, self.c, rounding_mode="floor") == torch.div(j, self.c, rounding_mode="floor")
            w = w.masked_fill(~((j <= i) & same), float("-inf"))
        return self.o((F.softmax(w, -1) @ v).transpose(1, 2).reshape(b, s, width))


def test_chunked_attention_is_a_window_of_one_chunk_for_the_cache():
    for static in (False, True):
        buf = io.BytesIO()
        axes = None if static else {"x": {0: "batch", 1: "seq"}}
        torch.onnx.export(ChunkedAttention(static).eval(), (torch.randn(1, 16, 32),), buf, opset_version=14,
                          input_names=["x"], dynamic_axes=axes)
        r = headcount.audit(buf.getvalue())
        (b,) = r.attention_blocks
        assert b.window == 4
        assert "chunks of 4 tokens" in b.window_from
        assert r.cost.kv.bytes_at_context == 256 * 4  # 4 heads x (8 + 8) x 4 bytes, one chunk kept


def test_group_query_attention_local_window_size_built_with_onnx_helper():
    """onnxruntime's fused decoder layer, written with onnx.helper as its optimizer emits it: one
    packed QKV MatMul (width 64 -> 4 query heads x 16 + 2 x 2 K/V heads x 16 = 128), a
    com.microsoft GroupQueryAttention with local_window_size, and the output MatMul 64 -> 64."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np

    def model(window):
        rng = np.random.default_rng(0)
        qkv = numpy_helper.from_array(rng.standard_normal((64, 128)).astype(np.float32), "qkv.weight")
        out = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "o.weight")
        nodes = [
            helper.make_node("MatMul", ["x", "qkv.weight"], ["qkv"], name="qkv_proj"),
            helper.make_node("Split", ["qkv", "split"], ["q", "k", "v"], axis=-1, name="split"),
            helper.make_node("GroupQueryAttention", ["q", "k", "v", "past_key", "past_value", "seqlens_k",
                                                    "total_sequence_length"],
                             ["attn", "present_key", "present_value"], domain="com.microsoft", name="gqa",
                             num_heads=4, kv_num_heads=2, local_window_size=window),
            helper.make_node("MatMul", ["attn", "o.weight"], ["y"], name="o_proj"),
        ]
        split = numpy_helper.from_array(np.array([64, 32, 32], dtype=np.int64), "split")
        graph = helper.make_graph(
            nodes, "gqa_window",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 64]),
             helper.make_tensor_value_info("past_key", TensorProto.FLOAT, ["batch", 2, "past", 16]),
             helper.make_tensor_value_info("past_value", TensorProto.FLOAT, ["batch", 2, "past", 16]),
             helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, ["batch"]),
             helper.make_tensor_value_info("total_sequence_length", TensorProto.INT32, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 64])],
            initializer=[qkv, out, split])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
        return headcount.audit(m.SerializeToString())

    r = model(127)
    (b,) = r.attention_blocks
    # Projections: the packed QKV 64 x 128 = 8,192 and the output 64 x 64 = 4,096: 12,288.
    assert (b.form, b.heads, b.kv_heads, b.head_dim, b.width) == ("GroupQueryAttention", 4, 2, 16, 64)
    assert b.total == 12_288
    # onnxruntime's kernel lets query i see keys i - 127 ... i: a window of 128 tokens.
    assert b.window == 128
    assert "local_window_size 127" in b.window_from
    # K/V per token: 2 K/V heads x (16 + 16) x 4 bytes = 256. At 4,096 tokens the window keeps 128:
    # 256 x 128 = 32,768 instead of 256 x 4,096 = 1,048,576, so 1,015,808 saved.
    assert r.cost.kv.bytes_per_token == 256
    assert r.cost.kv.bytes_at_context == 32_768
    assert r.cost.kv.window_saved_bytes == 1_015_808
    # local_window_size -1 (the attribute's default) is full attention: nothing capped.
    r = model(-1)
    (b,) = r.attention_blocks
    assert b.window is None
    assert r.cost.kv.bytes_at_context == 1_048_576
    assert r.cost.kv.window_saved_bytes is None  # null: no window to save anything


@torch.jit.script
def selective_scan(dt, A, Bm, Cm, xs, h):
    """Mamba's recurrence h = exp(dt A) h + dt B x, y = C h, as a scripted loop: a Loop in ONNX."""
    ys = []
    for t in range(dt.size(1)):
        h = torch.exp(dt[:, t, :, None] * A) * h + dt[:, t, :, None] * Bm[:, t, None, :] * xs[:, t, :, None]
        ys.append((h * Cm[:, t, None, :]).sum(-1))
    return torch.stack(ys, 1)


def test_a_mamba_recurrence_in_a_loop():
    """The Mamba mixer of samples/make_samples.py with its recurrence in a scripted loop, which the
    exporter writes as a Loop whose body reads dt, A, B, C and x from the graph around it; two
    such mixers and two GQA layers, exported untouched, so that the second mixer's A_log and D,
    equal to the first's, are stored once and copied by Identity nodes."""
    from make_samples import B, S as SEQ, VOCAB, HybridDecoder, LlamaAttention, MambaMixer

    class LoopMamba(MambaMixer):
        def forward(self, x):
            b, s, _ = x.shape
            xs, z = self.in_proj(x).chunk(2, dim=-1)
            xs = F.silu(self.conv1d(xs.transpose(1, 2))[..., :s].transpose(1, 2))
            dt, Bm, Cm = torch.split(self.x_proj(xs), [self.r, self.n, self.n], dim=-1)
            dt = F.softplus(self.dt_proj(dt))
            y = selective_scan(dt, -torch.exp(self.A_log), Bm, Cm, xs, torch.zeros(b, self.di, self.n)) + xs * self.D
            return self.out_proj(y * F.silu(z))

    torch.manual_seed(0)
    model = HybridDecoder([LoopMamba, LlamaAttention, LoopMamba, LlamaAttention]).eval()
    buf = io.BytesIO()
    torch.onnx.export(model, (torch.randint(0, VOCAB, (B, SEQ)),), buf, opset_version=14)
    r = headcount.audit(buf.getvalue())
    per_mixer = sum(p.numel() for p in model.layers[0]["mixer"].parameters())
    # in_proj 32·128 = 4,096, conv1d 64·4 + 64 = 320, x_proj 64·36 = 2,304, dt_proj 4·64 + 64 = 320,
    # A_log 64·16 = 1,024, D 64, out_proj 64·32 = 2,048: 10,176.
    assert per_mixer == 10_176
    # The zero initial state the exporter stored for the Loop is not a parameter.
    assert r.parameters.framework == sum(p.numel() for p in model.parameters())
    assert [(m.kind, m.parameters) for m in r.mixers.layers] == [("state_space", per_mixer)] * 2
    roles = {}
    for t in r.mixers.layers[1].tensors:
        roles[t.role] = roles.get(t.role, 0) + t.elements
    assert roles == {"in_proj": 4_096, "conv1d": 320, "x_proj": 2_304, "dt_proj": 320, "A_log": 1_024, "D": 64,
                     "out_proj": 2_048}
    assert all("its recurrence runs in Loop" in m.evidence for m in r.mixers.layers)
    # State per sequence: conv (4 - 1) x 64 = 192 and the SSM state 64 x 16 = 1,024.
    assert [m.state_elements for m in r.mixers.layers] == [1_216, 1_216]
    assert r.parameters.composition.other == 0


class NoNormLinearAttention(nn.Module):
    """Causal linear attention (elu + 1, the state and its normaliser as cumulative sums over the
    sequence, no Softmax), q/k/v/o Linear(32, 32) with biases, 4 heads of 8."""

    def __init__(self, width=32, heads=4):
        super().__init__()
        self.h, self.d = heads, width // heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        b, s, width = x.shape
        q = F.elu(self.q_proj(x).view(b, s, self.h, self.d)) + 1
        k = F.elu(self.k_proj(x).view(b, s, self.h, self.d)) + 1
        v = self.v_proj(x).view(b, s, self.h, self.d)
        kv = torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)
        z = torch.cumsum(k, dim=1)
        num = (q.unsqueeze(-2) @ kv).squeeze(-2)
        den = (q * z).sum(-1, keepdim=True) + 1e-6
        return self.o_proj((num / den).reshape(b, s, width))


class NoNormSoftmaxAttention(nn.Module):
    def __init__(self, width=32, heads=4):
        super().__init__()
        self.h, self.d = heads, width // heads
        self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        b, s, width = x.shape
        q, k, v = (p(x).view(b, s, self.h, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        w = F.softmax(q @ k.transpose(2, 3) / math.sqrt(self.d), dim=-1)
        return self.o_proj((w @ v).transpose(1, 2).reshape(b, s, width))


class NoNormHybrid(nn.Module):
    """Issue 37, item 10: an embedding, three linear-attention layers and one softmax layer, each
    x = x + layer(x): no norm, no MLP."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 32)
        self.layers = nn.ModuleList([NoNormLinearAttention() for _ in range(3)] + [NoNormSoftmaxAttention()])

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = x + layer(x)
        return x


def test_linear_attention_mixers_in_a_model_without_norms():
    model = NoNormHybrid()
    r = headcount.audit(exported(model, torch.randint(0, 64, (1, 8))))
    per_layer = [sum(p.numel() for p in l.parameters()) for l in model.layers]
    # Each layer: 4 · (32 · 32 + 32) = 4,224; embedding 64 · 32 = 2,048; 4 · 4,224 + 2,048 = 18,944.
    assert per_layer == [4_224] * 4
    assert r.parameters.framework == sum(p.numel() for p in model.parameters()) == 18_944
    assert [(m.kind, m.parameters) for m in r.mixers.layers] == [("linear_attention", 4_224)] * 3
    assert [b.total for b in r.attention_blocks] == [per_layer[3]]
    # State per sequence: 4 heads · 8 · 8 (the running k·vᵀ) + 4 · 8 (the normaliser) = 288, float32.
    assert [m.state_elements for m in r.mixers.layers] == [288] * 3
    assert r.cost.state.bytes_per_sequence == 3 * 288 * 4
    c = r.parameters.composition
    assert (c.feed_forward, c.other, c.embeddings) == (0, 0, 2_048)
