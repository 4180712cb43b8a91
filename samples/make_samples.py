#!/usr/bin/python3
"""Make headcount's sample ONNX models and the counts PyTorch reports for them.

Run from the repository root with Debian's Python (python3-torch 1.13, python3-onnx 1.12):

    /usr/bin/python3 samples/make_samples.py

For every sample NAME it writes samples/NAME.onnx and samples/NAME.counts.tsv (the parameter
counts and the per-attention-block Q/K/V/O shares, all read from the torch objects at export
time), then samples/README.md. Everything is seeded: two runs give byte-identical files.
"""

import hashlib
import io
import json
import math
import os
import sys
import time
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 14

# Tiny shapes: width 32, 4 heads (head_dim 8), batch 3, sequence 5, memory/key sequence 7.
# Batch 3 (not 2) so that no shape constant is ambiguous: B*h = 12, d_k = 8, S = 5, L_kv = 7.
E, H = 32, 4
B, S, S_KV = 3, 5, 7
VOCAB = 100
MAX_POS = 16

warnings.filterwarnings("ignore")  # TracerWarnings about sizes turned into constants


# ----------------------------------------------------------------------------------------------
# Per-block Q/K/V/O shares, computed from the modules' parameter tensors.

BLOCK_KEYS = ("kind", "heads", "kv_heads", "width", "head_dim", "v_head_dim",
              "q_weight", "q_bias", "k_weight", "k_bias", "v_weight", "v_bias",
              "o_weight", "o_bias")


def _numel(t):
    return 0 if t is None else int(t.numel())


def _lin(mod):
    """(weight [out, in], bias or None) of an nn.Linear, a quantized Linear or a QuantLinear."""
    if isinstance(mod, QuantLinear):
        mod = mod.linear
    w = mod.weight() if callable(mod.weight) else mod.weight
    b = mod.bias() if callable(mod.bias) else mod.bias
    return w, b


def mha_block(m, kind):
    """nn.MultiheadAttention: packed in_proj_weight [3E, E] rows q|k|v, or q/k/v_proj_weight."""
    e = m.embed_dim
    if m._qkv_same_embed_dim:
        w = m.in_proj_weight
        qw, kw, vw = w[0:e], w[e:2 * e], w[2 * e:3 * e]
    else:
        qw, kw, vw = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
    b = m.in_proj_bias
    qb, kb, vb = (None, None, None) if b is None else (b[0:e], b[e:2 * e], b[2 * e:3 * e])
    ow, ob = m.out_proj.weight, m.out_proj.bias
    h = m.num_heads
    return dict(kind=kind, heads=h, kv_heads=h, width=qw.shape[1],
                head_dim=qw.shape[0] // h, v_head_dim=vw.shape[0] // h,
                q_weight=_numel(qw), q_bias=_numel(qb), k_weight=_numel(kw), k_bias=_numel(kb),
                v_weight=_numel(vw), v_bias=_numel(vb), o_weight=_numel(ow), o_bias=_numel(ob),
                extras=_numel(m.bias_k) + _numel(m.bias_v))


def linear_block(kind, heads, kv_heads, q, k, v, o):
    """Separate Q/K/V/O projections, each a Linear-like module ([out, in] weight)."""
    (qw, qb), (kw, kb), (vw, vb), (ow, ob) = _lin(q), _lin(k), _lin(v), _lin(o)
    d_k = qw.shape[0] // heads
    assert kw.shape[0] == kv_heads * d_k
    return dict(kind=kind, heads=heads, kv_heads=kv_heads, width=qw.shape[1],
                head_dim=d_k, v_head_dim=vw.shape[0] // kv_heads,
                q_weight=_numel(qw), q_bias=_numel(qb), k_weight=_numel(kw), k_bias=_numel(kb),
                v_weight=_numel(vw), v_bias=_numel(vb), o_weight=_numel(ow), o_bias=_numel(ob))


class AttentionBlock(nn.Module):
    """Base for hand-written attention modules; block() reports the Q/K/V/O shares."""
    kind = "self"

    def block(self):
        raise NotImplementedError


def record_blocks(model, inputs):
    """Run one forward and return the attention blocks in the order they are called."""
    calls = []

    def pre_hook(mod, args):
        if isinstance(mod, nn.MultiheadAttention):
            query, key = args[0], args[1]
            calls.append(mha_block(mod, "self" if query is key else "cross"))
        else:
            calls.append(mod.block())

    handles = [m.register_forward_pre_hook(pre_hook) for m in model.modules()
               if isinstance(m, (nn.MultiheadAttention, AttentionBlock))]
    model(*inputs)
    for hd in handles:
        hd.remove()
    return calls


# ----------------------------------------------------------------------------------------------
# nn.MultiheadAttention wrappers.

class SelfMHA(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.attn = nn.MultiheadAttention(E, H, **kw)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


class CrossMHA(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.attn = nn.MultiheadAttention(E, H, **kw)

    def forward(self, query, memory):
        return self.attn(query, memory, memory, need_weights=False)[0]


class ThreeInputMHA(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.attn = nn.MultiheadAttention(E, H, **kw)

    def forward(self, query, key, value):
        return self.attn(query, key, value, need_weights=False)[0]


def causal_float_mask(n):
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


class DecoderLayerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(E, H, 64)
        self.register_buffer("tgt_mask", causal_float_mask(S))

    def forward(self, tgt, memory):
        return self.layer(tgt, memory, tgt_mask=self.tgt_mask)


class TransformerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.Transformer(d_model=E, nhead=H, num_encoder_layers=1,
                                          num_decoder_layers=1, dim_feedforward=64)
        self.register_buffer("tgt_mask", causal_float_mask(S))

    def forward(self, src, tgt):
        return self.transformer(src, tgt, tgt_mask=self.tgt_mask)


# ----------------------------------------------------------------------------------------------
# BERT-style encoder (bert_tiny, bert_base_external, and with QuantLinear for qdq_int8).

class QuantLinear(nn.Module):
    """Eager-mode static quantization unit: QuantStub -> Linear -> DeQuantStub."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.linear = nn.Linear(n_in, n_out)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        return self.dequant(self.linear(self.quant(x)))


class BertSelfAttention(AttentionBlock):
    def __init__(self, hidden, heads, linear):
        super().__init__()
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.query = linear(hidden, hidden)
        self.key = linear(hidden, hidden)
        self.value = linear(hidden, hidden)
        self.dense = linear(hidden, hidden)

    def block(self):
        return linear_block("self", self.num_heads, self.num_heads,
                            self.query, self.key, self.value, self.dense)

    def split_heads(self, x):
        shape = x.size()[:-1] + (self.num_heads, self.head_dim)
        return x.view(shape).permute(0, 2, 1, 3)

    def forward(self, x, mask_add):
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + mask_add
        probs = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.num_heads * self.head_dim,))
        return self.dense(ctx)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, inter, linear):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads, linear)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = linear(hidden, inter)
        self.output = linear(inter, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, mask_add):
        x = self.attention_norm(x + self.attention(x, mask_add))
        return self.output_norm(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, inter, max_pos, type_vocab, pooler,
                 linear=nn.Linear):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.embeddings_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0))
        self.layers = nn.ModuleList(BertLayer(hidden, heads, inter, linear) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden) if pooler else None

    def forward(self, input_ids, attention_mask, token_type_ids):
        seq = input_ids.size(1)
        x = (self.word_embeddings(input_ids)
             + self.position_embeddings(self.position_ids[:, :seq])
             + self.token_type_embeddings(token_type_ids))
        x = self.embeddings_norm(x)
        mask_add = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_add)
        if self.pooler is None:
            return x
        return x, torch.tanh(self.pooler(x[:, 0]))


def bert_inputs(batch, seq, vocab):
    ids = torch.randint(0, vocab, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[0, -2:] = 0
    types = torch.zeros(batch, seq, dtype=torch.long)
    types[:, seq // 2:] = 1
    return ids, mask, types


# ----------------------------------------------------------------------------------------------
# GPT-2 style decoder with HF Conv1D projections and a tied LM head.

class Conv1D(nn.Module):
    """HF transformers Conv1D: a Linear whose weight is stored [in, out], computed with addmm."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(AttentionBlock):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.hidden = hidden
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.c_attn = Conv1D(3 * hidden, hidden)
        self.c_proj = Conv1D(hidden, hidden)
        self.register_buffer("bias", torch.tril(torch.ones((max_pos, max_pos), dtype=torch.bool))
                             .view(1, 1, max_pos, max_pos))

    def block(self):
        hd, h = self.hidden, self.num_heads
        w, b = self.c_attn.weight, self.c_attn.bias  # [in, 3*hidden]: columns q | k | v
        qw, kw, vw = w[:, 0:hd], w[:, hd:2 * hd], w[:, 2 * hd:3 * hd]
        qb, kb, vb = b[0:hd], b[hd:2 * hd], b[2 * hd:3 * hd]
        return dict(kind="self", heads=h, kv_heads=h, width=qw.shape[0],
                    head_dim=qw.shape[1] // h, v_head_dim=vw.shape[1] // h,
                    q_weight=_numel(qw), q_bias=_numel(qb), k_weight=_numel(kw), k_bias=_numel(kb),
                    v_weight=_numel(vw), v_bias=_numel(vb),
                    o_weight=_numel(self.c_proj.weight), o_bias=_numel(self.c_proj.bias))

    def split_heads(self, x):
        x = x.view(x.size()[:-1] + (self.num_heads, self.head_dim))
        return x.permute(0, 2, 1, 3)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        q_len, k_len = q.size(-2), k.size(-2)
        causal = self.bias[:, :, k_len - q_len:k_len, :k_len]
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
        w = torch.where(causal, w, mask_value)
        w = nn.functional.softmax(w, dim=-1)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        a = a.view(a.size()[:-2] + (self.hidden,))
        return self.c_proj(a)


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = GPT2Attention(hidden, heads, max_pos)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = Conv1D(4 * hidden, hidden)
        self.mlp_c_proj = Conv1D(hidden, 4 * hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp_c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2LM(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, max_pos):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.h = nn.ModuleList(GPT2Block(hidden, heads, max_pos) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied

    def forward(self, input_ids):
        pos = torch.arange(0, input_ids.size(-1), dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(pos.unsqueeze(0))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ----------------------------------------------------------------------------------------------
# Per-head projections (the seed's module), LLaMA-style GQA, a classifier.

class PerHeadAttention(AttentionBlock):
    """h separate nn.Linear(d_model, d_k) for each of Q, K, V; torch.cat of the heads."""

    def __init__(self, d_model=E, h=H):
        super().__init__()
        self.d_model, self.h, self.d_k = d_model, h, d_model // h
        self.query_linears = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(h)])
        self.key_linears = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(h)])
        self.value_linears = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(h)])
        self.projection_layer = nn.Linear(h * self.d_k, d_model)

    def block(self):
        def total(mods, attr):
            return sum(_numel(getattr(m, attr)) for m in mods)
        ql, vl = self.query_linears, self.value_linears
        ow, ob = self.projection_layer.weight, self.projection_layer.bias
        return dict(kind="self", heads=len(ql), kv_heads=len(self.key_linears),
                    width=ql[0].weight.shape[1], head_dim=ql[0].weight.shape[0],
                    v_head_dim=vl[0].weight.shape[0],
                    q_weight=total(ql, "weight"), q_bias=total(ql, "bias"),
                    k_weight=total(self.key_linears, "weight"),
                    k_bias=total(self.key_linears, "bias"),
                    v_weight=total(vl, "weight"), v_bias=total(vl, "bias"),
                    o_weight=_numel(ow), o_bias=_numel(ob))

    def forward(self, Q, K, V):
        n = Q.size(0)
        queries = torch.cat([lin(Q).view(n, 1, -1, self.d_k) for lin in self.query_linears], dim=1)
        keys = torch.cat([lin(K).view(n, 1, -1, self.d_k) for lin in self.key_linears], dim=1)
        values = torch.cat([lin(V).view(n, 1, -1, self.d_k) for lin in self.value_linears], dim=1)
        scores = torch.matmul(queries, keys.transpose(-2, -1)) / math.sqrt(self.d_k)
        x = torch.matmul(scores.softmax(dim=-1), values)
        x = x.transpose(1, 2).contiguous().view(n, -1, self.h * self.d_k)
        return self.projection_layer(x)


class PerHeadLoopAttention(PerHeadAttention):
    """The tutorial spelling: each head's attention computed on its own, with its own softmax;
    the heads are concatenated only for the output projection."""

    def forward(self, Q, K, V):
        heads = []
        for ql, kl, vl in zip(self.query_linears, self.key_linears, self.value_linears):
            q, k, v = ql(Q), kl(K), vl(V)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
            heads.append(torch.matmul(scores.softmax(dim=-1), v))
        return self.projection_layer(torch.cat(heads, dim=-1))


class PerHeadLoopModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = PerHeadLoopAttention()

    def forward(self, x):
        return self.mha(x, x, x)


class PerHeadModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = PerHeadAttention()

    def forward(self, x):
        return self.mha(x, x, x)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep,
                                                           slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class LlamaAttention(AttentionBlock):
    def __init__(self, hidden=E, heads=H, kv_heads=2, max_pos=MAX_POS, theta=10000.0):
        super().__init__()
        self.num_heads, self.num_key_value_heads = heads, kv_heads
        self.head_dim = hidden // heads
        self.num_key_value_groups = heads // kv_heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        inv_freq = 1.0 / (theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(max_pos).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())
        self.register_buffer("causal_mask", torch.triu(
            torch.full((max_pos, max_pos), torch.finfo(torch.float32).min), diagonal=1))

    def block(self):
        return linear_block("self", self.num_heads, self.num_key_value_heads,
                            self.q_proj, self.k_proj, self.v_proj, self.o_proj)

    def forward(self, x):
        bsz, q_len, _ = x.size()
        q = self.q_proj(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos_cached[:q_len], self.sin_cached[:q_len]
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        w = w + self.causal_mask[:q_len, :q_len]
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous()
        out = out.reshape(bsz, q_len, self.num_heads * self.head_dim)
        return self.o_proj(out)


class RMSNorm(nn.Module):
    def __init__(self, hidden=E, eps=1e-6):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class LlamaMLP(nn.Module):
    def __init__(self, hidden=E, inter=2 * E):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(), RMSNorm()
        self.self_attn, self.mlp = LlamaAttention(), LlamaMLP()

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaForCausalLM(nn.Module):
    """A two-layer LLaMA in the layout of Hugging Face's LlamaForCausalLM: token embedding, decoder
    layers (RMSNorm, GQA attention with rotary tables, RMSNorm, SwiGLU MLP), final RMSNorm and an
    untied LM head. config() is the Hugging Face config.json that describes it."""

    def __init__(self, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, E)
        self.layers = nn.ModuleList([LlamaDecoderLayer() for _ in range(layers)])
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(E, VOCAB, bias=False)

    def config(self):
        attn, mlp = self.layers[0].self_attn, self.layers[0].mlp
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": E,
                "num_hidden_layers": len(self.layers), "num_attention_heads": attn.num_heads,
                "num_key_value_heads": attn.num_key_value_heads, "head_dim": attn.head_dim,
                "intermediate_size": mlp.gate_proj.out_features, "vocab_size": VOCAB,
                "max_position_embeddings": MAX_POS, "tie_word_embeddings": False,
                "attention_bias": False, "mlp_bias": False, "rms_norm_eps": 1e-6,
                "rope_theta": 10000.0, "hidden_act": "silu"}

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return torch.softmax(self.fc2(torch.relu(self.fc1(x))), dim=-1)


# ----------------------------------------------------------------------------------------------
# Hand-written attention variants for the findings and the decoder/T5/ViT samples.

class SplitHeadsAttention(AttentionBlock):
    """Separate query/key/value/output Linears, view(B,S,h,d)+transpose, Div by sqrt(d_k).

    Subclasses only decide how wide the projections are (that is where the framework mistakes
    live); num_heads and head_dim are the module's own attributes, read back by block().
    """

    def block(self):
        return linear_block("self", self.num_heads, self.num_heads,
                            self.query, self.key, self.value, self.output)

    def forward(self, x):
        bsz, seq, _ = x.size()
        h, d = self.num_heads, self.head_dim
        q = self.query(x).view(bsz, seq, h, d).transpose(1, 2)
        k = self.key(x).view(bsz, seq, h, d).transpose(1, 2)
        v = self.value(x).view(bsz, seq, h, d).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        w = nn.functional.softmax(w, dim=-1)
        out = torch.matmul(w, v).transpose(1, 2).reshape(bsz, seq, h * d)
        return self.output(out)


class MatlabLikeSelfAttention(SplitHeadsAttention):
    """MATLAB selfAttentionLayer(numHeads, numKeyChannels): numKeyChannels is the TOTAL over heads.

    Used wrongly: a user who meant 32 channels per head on a 64-wide input typed 32, so each head
    gets 32 / 4 = 8 channels and h * d_k = 32 != 64.
    """

    def __init__(self, width=64, num_heads=4, num_key_channels=32):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = num_key_channels // num_heads
        self.query = nn.Linear(width, num_key_channels)
        self.key = nn.Linear(width, num_key_channels)
        self.value = nn.Linear(width, num_key_channels)
        self.output = nn.Linear(num_key_channels, width)


class KerasLikeMHA(SplitHeadsAttention):
    """Keras MultiHeadAttention(num_heads, key_dim): key_dim is PER HEAD (keras#18373 mistake:
    key_dim = width, so every projection is h times wider than the model)."""

    def __init__(self, width=E, num_heads=H, key_dim=E):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = key_dim
        self.query = nn.Linear(width, num_heads * key_dim)
        self.key = nn.Linear(width, num_heads * key_dim)
        self.value = nn.Linear(width, num_heads * key_dim)
        self.output = nn.Linear(num_heads * key_dim, width)


class WhisperAttention(AttentionBlock):
    """openai/whisper MultiHeadAttention: the key Linear has no bias; q and k are each scaled by
    d_k^-0.25 (Mul) and k is permuted straight to [B, h, d, S]."""

    def __init__(self, n_state=E, n_head=H):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)
        self.out = nn.Linear(n_state, n_state)

    def block(self):
        return linear_block("self", self.n_head, self.n_head,
                            self.query, self.key, self.value, self.out)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        w = F.softmax((q @ k).float(), dim=-1).to(q.dtype)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))


class MultiQueryAttention(AttentionBlock):
    """Multi-query attention: h query heads share one K/V head (k/v Linear(width, d_k)); K and V
    are expanded to h heads before the scores. No biases."""

    def __init__(self, hidden=E, heads=H):
        super().__init__()
        self.num_heads, self.num_kv_heads = heads, 1
        self.head_dim = hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def block(self):
        return linear_block("self", self.num_heads, self.num_kv_heads,
                            self.q_proj, self.k_proj, self.v_proj, self.o_proj)

    def forward(self, x):
        bsz, q_len, _ = x.size()
        h, d = self.num_heads, self.head_dim
        q = self.q_proj(x).view(bsz, q_len, h, d).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, self.num_kv_heads, d).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, self.num_kv_heads, d).transpose(1, 2)
        k = k.expand(bsz, h, q_len, d)
        v = v.expand(bsz, h, q_len, d)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        w = nn.functional.softmax(w, dim=-1)
        out = torch.matmul(w, v).transpose(1, 2).reshape(bsz, q_len, h * d)
        return self.o_proj(out)


class CachedSelfAttention(AttentionBlock):
    """GPT-style decoder self-attention with a KV cache: past_key/past_value [B, h, P, d] are
    concatenated with the new K/V on the sequence axis before the scores and returned as
    present_key/present_value; causal mask computed from positions (queries sit at P..P+S-1)."""

    def __init__(self, hidden=E, heads=H):
        super().__init__()
        self.num_heads = heads
        self.head_dim = hidden // heads
        self.q_proj = nn.Linear(hidden, hidden)
        self.k_proj = nn.Linear(hidden, hidden)
        self.v_proj = nn.Linear(hidden, hidden)
        self.out_proj = nn.Linear(hidden, hidden)

    def block(self):
        return linear_block("self", self.num_heads, self.num_heads,
                            self.q_proj, self.k_proj, self.v_proj, self.out_proj)

    def forward(self, x, past_key, past_value):
        bsz, q_len, _ = x.size()
        h, d = self.num_heads, self.head_dim
        q = self.q_proj(x).view(bsz, q_len, h, d).transpose(1, 2)
        k = self.k_proj(x).view(bsz, q_len, h, d).transpose(1, 2)
        v = self.v_proj(x).view(bsz, q_len, h, d).transpose(1, 2)
        k = torch.cat((past_key, k), dim=2)
        v = torch.cat((past_value, v), dim=2)
        k_len = k.size(2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        q_pos = torch.arange(q_len, device=x.device) + (k_len - q_len)
        k_pos = torch.arange(k_len, device=x.device)
        causal = k_pos.unsqueeze(0) <= q_pos.unsqueeze(1)
        w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = nn.functional.softmax(w, dim=-1)
        out = torch.matmul(w, v).transpose(1, 2).reshape(bsz, q_len, h * d)
        return self.out_proj(out), k, v


class T5Attention(AttentionBlock):
    """T5 self-attention: q/k/v/o without biases, no 1/sqrt(d_k) scaling, and a learned relative
    position bias Embedding(num_buckets, heads) added to the scores. Buckets here are the clipped
    relative distance (key - query, clipped to [-4, 3], shifted by 4): simple arithmetic."""

    def __init__(self, d_model=E, n_heads=H, num_buckets=8):
        super().__init__()
        self.n_heads, self.key_value_proj_dim = n_heads, d_model // n_heads
        self.inner_dim = n_heads * self.key_value_proj_dim
        self.num_buckets = num_buckets
        self.q = nn.Linear(d_model, self.inner_dim, bias=False)
        self.k = nn.Linear(d_model, self.inner_dim, bias=False)
        self.v = nn.Linear(d_model, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, d_model, bias=False)
        self.relative_attention_bias = nn.Embedding(num_buckets, n_heads)

    def block(self):
        blk = linear_block("self", self.n_heads, self.n_heads, self.q, self.k, self.v, self.o)
        blk["extras"] = _numel(self.relative_attention_bias.weight)
        return blk

    def compute_bias(self, q_len, k_len, device):
        context = torch.arange(q_len, dtype=torch.long, device=device)[:, None]
        memory = torch.arange(k_len, dtype=torch.long, device=device)[None, :]
        half = self.num_buckets // 2
        buckets = torch.clamp(memory - context, -half, half - 1) + half
        values = self.relative_attention_bias(buckets)  # [q, k, heads]
        return values.permute(2, 0, 1).unsqueeze(0)     # [1, heads, q, k]

    def forward(self, x):
        bsz, seq, _ = x.size()
        h, d = self.n_heads, self.key_value_proj_dim
        q = self.q(x).view(bsz, -1, h, d).transpose(1, 2)
        k = self.k(x).view(bsz, -1, h, d).transpose(1, 2)
        v = self.v(x).view(bsz, -1, h, d).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(3, 2))
        scores = scores + self.compute_bias(seq, seq, x.device)
        w = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(bsz, -1, self.inner_dim)
        return self.o(out)


class ScorePathAttention(AttentionBlock):
    """Self-attention with q/k/v/o Linear(32, 32) and what current models put between Q·Kᵀ and the
    softmax. `form` picks one:
    - "softcap": Gemma-2 logit soft-capping tanh(s / 50) · 50, then a causal mask kept as a float
      buffer (0 above the diagonal... -inf) added to the scores;
    - "sinks": gpt-oss learned sinks, one logit per head (nn.Parameter [h]) concatenated as one
      more column of the scores, dropped again after the softmax;
    - "alibi": BLOOM/MPT ALiBi, slope_h · (j - i) with slopes 2^(-8(h+1)/H) as a buffer; the
      exporter folds the whole bias into one constant;
    - "temperature": a learned per-head temperature (nn.Parameter [1, h, 1, 1]) multiplying the
      scores."""

    def __init__(self, form):
        super().__init__()
        self.form, self.h, self.d = form, H, E // H
        self.q_proj, self.k_proj = nn.Linear(E, E), nn.Linear(E, E)
        self.v_proj, self.o_proj = nn.Linear(E, E), nn.Linear(E, E)
        if form == "softcap":
            self.register_buffer("causal_mask", torch.triu(torch.full((S, S), float("-inf")), 1).view(1, 1, S, S))
        elif form == "sinks":
            self.sinks = nn.Parameter(torch.zeros(H))
        elif form == "alibi":
            self.register_buffer("slopes", torch.tensor([2 ** (-8 * (i + 1) / H) for i in range(H)]))
        elif form == "temperature":
            self.temperature = nn.Parameter(torch.ones(1, H, 1, 1))

    def block(self):
        blk = linear_block("self", H, H, self.q_proj, self.k_proj, self.v_proj, self.o_proj)
        blk["extras"] = {"sinks": H, "temperature": H}.get(self.form, 0)
        return blk

    def forward(self, x):
        b, s, _ = x.size()
        q = self.q_proj(x).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.h, self.d).transpose(1, 2)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d)
        if self.form == "softcap":
            w = torch.tanh(w / 50.0) * 50.0
            w = w + self.causal_mask
        elif self.form == "alibi":
            pos = torch.arange(s)
            distance = (pos[None, :] - pos[:, None]).to(w.dtype)       # [s, s]: j - i
            w = w + (self.slopes[:, None, None] * distance[None]).unsqueeze(0)
        elif self.form == "temperature":
            w = w * self.temperature
        if self.form == "sinks":
            sink = self.sinks.reshape(1, H, 1, 1).expand(b, H, s, 1)
            w = torch.cat([w, sink], dim=-1)
            w = F.softmax(w, dim=-1)[..., :-1]
        else:
            w = F.softmax(w, dim=-1)
        out = torch.matmul(w, v).transpose(1, 2).reshape(b, s, E)
        return self.o_proj(out)


# ----------------------------------------------------------------------------------------------
# Quantization for qdq_int8.

def quantize_bert(model, inputs):
    """Eager-mode static int8 quantization of every QuantLinear (fbgemm, per-channel weights)."""
    torch.backends.quantized.engine = "onednn"
    model.eval()
    for m in model.modules():
        if isinstance(m, QuantLinear):
            m.qconfig = torch.ao.quantization.get_default_qconfig("onednn")
    torch.ao.quantization.prepare(model, inplace=True)
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        ids = torch.randint(0, VOCAB, (B, S), generator=g)
        model(ids, inputs[1], inputs[2])
    torch.ao.quantization.convert(model, inplace=True)
    return model


def quantized_params(model):
    """(name, numel) of the logical weights/biases held in quantized Linear packed params."""
    out = []
    for name, m in model.named_modules():
        if isinstance(m, torch.ao.nn.quantized.Linear):
            w, b = m.weight(), m.bias()
            out.append((name + ".weight", _numel(w)))
            if b is not None:
                out.append((name + ".bias", _numel(b)))
    return out


# ----------------------------------------------------------------------------------------------
# Export and sidecars.

def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def export(model, inputs, path, input_names, output_names, dynamic_axes=None):
    buf = io.BytesIO()
    torch.onnx.export(model, tuple(inputs), buf, opset_version=OPSET, do_constant_folding=True,
                      input_names=input_names, output_names=output_names,
                      dynamic_axes=dynamic_axes)
    proto = onnx.load_from_string(buf.getvalue())
    onnx.checker.check_model(proto)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return proto


# Samples whose checkpoint is written beside the export, as NAME.safetensors: the module's
# parameters (named as the module names them, each tensor once), float32, in name order.
CHECKPOINTS = {"llama_tiny"}


def write_safetensors(path, model):
    """The safetensors format: an 8-byte little-endian header length, the JSON header
    {name: {dtype, shape, data_offsets}} padded with spaces to 8 bytes, then the bytes."""
    tensors = dict(model.named_parameters())
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        b = tensors[name].detach().float().contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


# The same checkpoint as llama.cpp's converter writes it (convert_hf_to_gguf.py, --outtype q8_0):
# GGUF version 3, its tensor names, Q and K rows permuted into its rotary layout, the embedding in
# float16, norms in float32 and every matrix in Q8_0 (blocks of 32 weights: a float16 scale
# max|x| / 127, then 32 int8 values round(x / scale), as ggml's quantize_row_q8_0_ref).
GGUF_CHECKPOINTS = {"llama_tiny"}
GGUF_NAMES = {"embed_tokens": "token_embd", "norm": "output_norm", "lm_head": "output",
              "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
              "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}


def write_gguf(path, tensors, config, matrices="q8_0"):
    """tensors: {HF-style name: float32 array [out, in] or [n]}; config: the model's config.json;
    matrices: "q8_0" (the sample), "f16" or "f32" (as --outtype f16 / f32 writes them)."""
    import struct
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]

    def gname(name):
        parts = name.split(".")
        if parts[0] == "layers":
            return "blk.%s.%s.%s" % (parts[1], GGUF_NAMES[".".join(parts[2:-1])], parts[-1])
        return "%s.%s" % (GGUF_NAMES[".".join(parts[:-1])], parts[-1])

    def permute(w, n_head):  # convert_hf_to_gguf.py's LlamaModel.permute
        return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    def q8_0(w):
        blocks = w.astype(np.float32).reshape(-1, 32)
        out = bytearray()
        for b in blocks:
            d = float(np.abs(b).max()) / 127.0
            inv = 1.0 / d if d else 0.0
            q = np.clip(np.round(b * inv), -128, 127).astype(np.int8)
            out += np.float16(d).tobytes() + q.tobytes()
        return bytes(out)

    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    U32, F32, STR = 4, 6, 8
    kvs = [("general.architecture", STR, "llama"), ("general.name", STR, "llama_tiny"), ("general.file_type", U32, 7),
           ("llama.block_count", U32, config["num_hidden_layers"]),
           ("llama.context_length", U32, config["max_position_embeddings"]),
           ("llama.embedding_length", U32, config["hidden_size"]),
           ("llama.feed_forward_length", U32, config["intermediate_size"]),
           ("llama.attention.head_count", U32, heads), ("llama.attention.head_count_kv", U32, kv_heads),
           ("llama.attention.layer_norm_rms_epsilon", F32, config["rms_norm_eps"]),
           ("llama.rope.freq_base", F32, config["rope_theta"])]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        head += s(key) + struct.pack("<I", vtype) + (s(v) if vtype == STR else struct.pack("<I" if vtype == U32 else "<f", v))
    data = b""
    for name in sorted(tensors):
        w = np.asarray(tensors[name], dtype=np.float32)
        if name.endswith("q_proj.weight"):
            w = permute(w, heads)
        elif name.endswith("k_proj.weight"):
            w = permute(w, kv_heads)
        if w.ndim == 1 or (matrices == "f32" and not name.startswith("embed_tokens")):
            ggml_type, blob = 0, w.tobytes()                       # F32
        elif name.startswith("embed_tokens") or matrices == "f16":
            ggml_type, blob = 1, w.astype(np.float16).tobytes()    # F16
        else:
            ggml_type, blob = 8, q8_0(w)                            # Q8_0
        ne = list(reversed(w.shape))  # innermost first
        head += s(gname(name)) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        head += struct.pack("<IQ", ggml_type, len(data))
        data += blob + b"\0" * (-len(blob) % 32)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head + data)


def write_counts(path, comments, total, params, buffers, blocks, moe=(), mixers=()):
    lines = ["# " + c for c in comments]
    lines.append("# made by torch %s, onnx %s, opset %d" % (torch.__version__, onnx.__version__,
                                                             OPSET))
    lines.append("total\t%d" % total)
    for name, n in params:
        lines.append("param\t%s\t%d" % (name, n))
    for name, n in buffers:
        lines.append("buffer\t%s\t%d" % (name, n))
    for i, blk in enumerate(blocks):
        lines.append("block\t%d\t" % i + "\t".join("%s=%s" % (k, blk[k]) for k in BLOCK_KEYS)
                     + "\textras=%d" % blk.get("extras", 0))
    for i, layer in enumerate(moe):
        lines.append("moe\t%d\t" % i + "\t".join("%s=%s" % (k, layer[k]) for k in MOE_KEYS))
    for i, mixer in enumerate(mixers):
        lines.append("mixer\t%d\t" % i + "\t".join("%s=%s" % (k, mixer[k]) for k in MIXER_KEYS))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def tied_copies(proto, weight):
    """Names of initializers whose content equals weight or its transpose."""
    w = weight.detach().numpy()
    names = []
    for init in proto.graph.initializer:
        if init.data_location == onnx.TensorProto.EXTERNAL:
            continue
        a = numpy_helper.to_array(init)
        if (a.shape == w.shape and np.array_equal(a, w)) or \
                (a.shape == w.T.shape and np.array_equal(a, w.T)):
            names.append(init.name)
    return names


SAMPLES = []


def sample(name, what, shows, axes, untrained=False):
    def deco(fn):
        SAMPLES.append(dict(name=name, what=what, shows=shows, axes=axes, make=fn,
                            untrained=untrained))
        return fn
    return deco


SEQ_BATCH = {0: "seq", 1: "batch"}      # (L, N, E) layout of nn.MultiheadAttention
BATCH_SEQ = {0: "batch", 1: "seq"}


@sample("mha_self_bias", "nn.MultiheadAttention(32, 4), self-attention q=k=v=x, (L, N, E)",
        "packed in_proj: one MatMul [32,96] + Add, then 3 Slices on the last axis with run-time "
        "bounds; h only in Div(E, 4) and Mul(batch, 4) feeding Concat shapes",
        "dynamic seq, batch")
def make_mha_self_bias():
    m = SelfMHA()
    x = torch.randn(S, B, E)
    return m, [x], ["x"], ["y"], {"x": SEQ_BATCH, "y": SEQ_BATCH}


@sample("mha_self_nobias", "nn.MultiheadAttention(32, 4, bias=False), self-attention",
        "packed in_proj without biases: MatMul [32,96] + 3 Slices, no Add; Reshape targets "
        "folded to [5, 12, 8] = [L, B*h, d_k]", "static")
def make_mha_self_nobias():
    m = SelfMHA(bias=False)
    return m, [torch.randn(S, B, E)], ["x"], ["y"], None


@sample("mha_cross", "nn.MultiheadAttention(32, 4), query input + key=value memory input",
        "cross-attention: Q [E, E] and packed KV [2E, E] sliced out of in_proj_weight at run time "
        "(Slice on the initializer, bounds from the query's shape), KV output then 2 Slices",
        "dynamic tgt_seq, src_seq, batch")
def make_mha_cross():
    m = CrossMHA()
    q, mem = torch.randn(S, B, E), torch.randn(S_KV, B, E)
    axes = {"query": {0: "tgt_seq", 1: "batch"}, "memory": {0: "src_seq", 1: "batch"},
            "y": {0: "tgt_seq", 1: "batch"}}
    return m, [q, mem], ["query", "memory"], ["y"], axes


@sample("mha_kdim_vdim", "nn.MultiheadAttention(32, 4, kdim=16, vdim=24), three inputs",
        "separate q/k/v_proj_weight [32,32] [32,16] [32,24]; widths differ per projection",
        "static")
def make_mha_kdim_vdim():
    m = ThreeInputMHA(kdim=16, vdim=24)
    q, k, v = torch.randn(S, B, E), torch.randn(S_KV, B, 16), torch.randn(S_KV, B, 24)
    return m, [q, k, v], ["query", "key", "value"], ["y"], None


@sample("mha_bias_kv", "nn.MultiheadAttention(32, 4, add_bias_kv=True), self-attention",
        "bias_k/bias_v [1,1,E] tokens appended to K/V (Tile+Concat): params, not projections",
        "static")
def make_mha_bias_kv():
    m = SelfMHA(add_bias_kv=True)
    return m, [torch.randn(S, B, E)], ["x"], ["y"], None


@sample("encoder", "nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64), num_layers=2)",
        "two stacked self-attention blocks (post-norm, ReLU FFN); default settings",
        "dynamic seq, batch")
def make_encoder():
    m = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, dim_feedforward=64), num_layers=2)
    return m, [torch.randn(S, B, E)], ["src"], ["y"], {"src": SEQ_BATCH, "y": SEQ_BATCH}


@sample("encoder_untrained", "encoder.onnx's module exported straight after construction "
        "(default init, not perturbed)",
        "untrained-model trap: TransformerEncoder deep-copies its layer, so both layers are "
        "equal and the exporter keeps layer 0's tensors and re-creates layer 1's (and the "
        "all-zero/all-one biases and LayerNorm weights) with Identity nodes",
        "dynamic seq, batch", untrained=True)
def make_encoder_untrained():
    return make_encoder()


@sample("decoder_layer", "nn.TransformerDecoderLayer(32, 4, 64), causal tgt_mask buffer",
        "self-attention with causal mask Add, then cross-attention on memory", "static")
def make_decoder_layer():
    m = DecoderLayerModel()
    return m, [torch.randn(S, B, E), torch.randn(S_KV, B, E)], ["tgt", "memory"], ["y"], None


@sample("transformer", "nn.Transformer(d_model=32, nhead=4, 1 encoder + 1 decoder layer, ff 64)",
        "encoder self, decoder self (causal), decoder cross; final encoder/decoder LayerNorms",
        "static")
def make_transformer():
    m = TransformerModel()
    return m, [torch.randn(S_KV, B, E), torch.randn(S, B, E)], ["src", "tgt"], ["y"], None


@sample("bert_tiny", "hand-written BERT encoder: 2 layers, width 32, 4 heads, vocab 100",
        "separate Q/K/V Linear, view(B,S,h,d)+permute, Div by sqrt(d_k), mask Add, GELU FFN",
        "dynamic batch, seq")
def make_bert_tiny():
    m = Bert(VOCAB, E, 2, H, 64, MAX_POS, 2, pooler=False)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: BATCH_SEQ for n in names + ["hidden"]}
    return m, list(bert_inputs(B, S, VOCAB)), names, ["hidden"], axes


@sample("gpt2_tiny", "GPT-2 style LM: Conv1D c_attn/c_proj (addmm), 2 layers, width 32, 4 heads,"
        " vocab 100, lm_head tied to wte",
        "packed [in, 3*hidden] Gemm (no transB) + Split [32,32,32]; scale is a run-time "
        "Pow(head_dim, 0.5); torch.where causal mask; tied LM head",
        "dynamic batch, seq")
def make_gpt2_tiny():
    m = GPT2LM(VOCAB, E, 2, H, MAX_POS)
    ids = torch.randint(0, VOCAB, (B, S))
    return m, [ids], ["input_ids"], ["logits"], {"input_ids": BATCH_SEQ, "logits": BATCH_SEQ}


@sample("per_head", "the seed's per-head module: 4 x nn.Linear(32, 8) for each of Q, K, V, "
        "torch.cat, nn.Linear(32, 32)",
        "per-head projections (12 small MatMuls) concatenated into heads", "static")
def make_per_head():
    return PerHeadModel(), [torch.randn(B, S, E)], ["x"], ["y"], None


@sample("gqa", "LLaMA-style attention: q_proj 32->32, k/v_proj 32->16 (4 q heads, 2 kv heads), "
        "no biases",
        "grouped K/V repeated with expand+reshape (repeat_kv); rotary Mul/Add/Slice/Concat; "
        "causal mask Add", "dynamic batch, seq")
def make_gqa():
    m = LlamaAttention()
    return m, [torch.randn(B, S, E)], ["x"], ["y"], {"x": BATCH_SEQ, "y": BATCH_SEQ}


@sample("llama_tiny", "a 2-layer LLaMA (LlamaForCausalLM layout): embedding [100, 32], GQA attention "
        "4 heads over 2 K/V heads with rotary tables, SwiGLU MLP 32 -> 64, RMSNorms, untied LM head",
        "a whole decoder-only model with its Hugging Face config.json (llama_tiny.config.json) "
        "written from the module: declared vs found, the LLaMA formula", "static")
def make_llama_tiny():
    m = LlamaForCausalLM()
    ids = torch.randint(0, VOCAB, (B, S), generator=torch.Generator().manual_seed(3))
    return m, [ids], ["input_ids"], ["logits"], None


@sample("qdq_int8", "bert_tiny code with every Linear in the layers statically int8-quantized "
        "(torch.ao.quantization eager mode, onednn backend, per-channel weights)",
        "int8 weights (in Constant nodes) -> DequantizeLinear(axis 0) -> Transpose -> MatMul, int32 "
        "bias -> DequantizeLinear -> Add; activations QuantizeLinear/DequantizeLinear",
        "static")
def make_qdq_int8():
    m = Bert(VOCAB, E, 2, H, 64, MAX_POS, 2, pooler=False, linear=QuantLinear)
    inputs = list(bert_inputs(B, S, VOCAB))
    return m, inputs, ["input_ids", "attention_mask", "token_type_ids"], ["hidden"], None


@sample("classifier_softmax", "MLP classifier: Linear 16->32, ReLU, Linear 32->10, Softmax",
        "a Softmax that is not attention (no attention blocks)", "static")
def make_classifier_softmax():
    return Classifier(), [torch.randn(B, 16)], ["x"], ["probs"], None


@sample("bert_base_external", "bert_tiny code at BERT-base size: 12 layers, width 768, 12 heads, "
        "ff 3072, vocab 30522, 512 positions, 2 token types, pooler Linear+tanh",
        "external data: every tensor >= 1 KiB lives in bert_base_external.onnx.data, "
        "which is deleted (counts must come from dims)", "static (batch 1, seq 8)")
def make_bert_base_external():
    m = Bert(30522, 768, 12, 12, 3072, 512, 2, pooler=True)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    return m, list(bert_inputs(1, 8, 30522)), names, ["hidden", "pooled"], None


@sample("width_mismatch_matlab", "hand-written MATLAB-like selfAttentionLayer(4 heads, "
        "NumKeyChannels=32) on a 64-wide input, used as if 32 were per head: q/k/v Linear(64, 32) "
        "with bias, output Linear(32, 64)",
        "width mismatch h * d_k = 4 x 8 = 32 != width 64 (the MATLAB total-vs-per-head mistake); "
        "view(B,S,4,8)+transpose, Div by sqrt(8)", "static")
def make_width_mismatch_matlab():
    return MatlabLikeSelfAttention(), [torch.randn(B, S, 64)], ["x"], ["y"], None


@sample("width_mismatch_keras", "hand-written Keras-like MultiHeadAttention(num_heads=4, "
        "key_dim=32) on a 32-wide input: q/k/v Linear(32, 4*32=128) with bias, output "
        "Linear(128, 32)",
        "width mismatch h * d_k = 4 x 32 = 128 != width 32 (key_dim is per head, keras#18373): "
        "4x the parameters of the standard block", "static")
def make_width_mismatch_keras():
    return KerasLikeMHA(), [torch.randn(B, S, E)], ["x"], ["y"], None


@sample("whisper_kbias", "openai/whisper-style attention: query/value/out Linear(32, 32) with "
        "bias, key Linear(32, 32, bias=False), 4 heads",
        "K projection without bias next to biased Q/V/O; q and k each Mul-scaled by a run-time "
        "Pow(32 / 4, -0.25) computed from the query's Shape; "
        "k permuted straight to [B, h, d, S] (no separate transpose)", "dynamic batch, seq")
def make_whisper_kbias():
    m = WhisperAttention()
    return m, [torch.randn(B, S, E)], ["x"], ["y"], {"x": BATCH_SEQ, "y": BATCH_SEQ}


@sample("mqa", "multi-query attention: q_proj 32->32, k/v_proj 32->8 (4 query heads, 1 K/V "
        "head), no biases",
        "one K/V head viewed as [B, S, 1, 8], expanded to 4 heads (Expand) before the scores",
        "dynamic batch, seq")
def make_mqa():
    m = MultiQueryAttention()
    return m, [torch.randn(B, S, E)], ["x"], ["y"], {"x": BATCH_SEQ, "y": BATCH_SEQ}


@sample("kv_cache_decoder", "GPT-style decoder self-attention with a KV cache: q/k/v/out "
        "Linear(32, 32) with bias, 4 heads; inputs x [B, S, 32], past_key/past_value "
        "[B, 4, P, 8]; outputs y, present_key, present_value",
        "Concat(past_key, k) and Concat(past_value, v) on the sequence axis before the scores; "
        "causal mask from Range positions offset by P (Where)",
        "dynamic batch, seq, past_seq (export: B 3, S 5, P 6)")
def make_kv_cache_decoder():
    m = CachedSelfAttention()
    past = S_KV - 1  # 6: so that P + S = 11 is no other shape constant
    inputs = [torch.randn(B, S, E), torch.randn(B, H, past, E // H),
              torch.randn(B, H, past, E // H)]
    past_axes = {0: "batch", 2: "past_seq"}
    present_axes = {0: "batch", 2: "total_seq"}
    axes = {"x": BATCH_SEQ, "past_key": past_axes, "past_value": past_axes, "y": BATCH_SEQ,
            "present_key": present_axes, "present_value": present_axes}
    return (m, inputs, ["x", "past_key", "past_value"], ["y", "present_key", "present_value"],
            axes)


@sample("t5_relative", "T5-style attention: q/k/v/o Linear(32, 32, bias=False), 4 heads, no "
        "1/sqrt(d_k) scaling, relative position bias nn.Embedding(8 buckets, 4 heads)",
        "scores = Q Kᵀ (no Div/Mul) + Gather(relative_attention_bias, clipped Range differences) "
        "transposed to [1, h, S, S]; the bias table is a parameter outside Q/K/V/O",
        "dynamic batch, seq")
def make_t5_relative():
    m = T5Attention()
    return m, [torch.randn(B, S, E)], ["x"], ["y"], {"x": BATCH_SEQ, "y": BATCH_SEQ}


@sample("vit_batch_first", "nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, "
        "batch_first=True, norm_first=True), 1 layer, input [B, 5, 32]",
        "batch-first pre-norm encoder layer (ViT block): nn.MultiheadAttention transposes "
        "(B, S, E) to (S, B, E) around the packed in_proj", "dynamic batch")
def make_vit_batch_first():
    m = nn.TransformerEncoderLayer(d_model=E, nhead=H, dim_feedforward=64, batch_first=True,
                                   norm_first=True)
    axes = {"src": {0: "batch"}, "y": {0: "batch"}}
    return m, [torch.randn(B, S, E)], ["src"], ["y"], axes


@sample("per_head_loop", "the tutorial per-head module: 4 heads, each with its own nn.Linear(32, 8) "
        "for Q, K and V and its own softmax; torch.cat of the head outputs, nn.Linear(32, 32)",
        "attention computed head by head: 4 Softmax cores whose outputs meet in a Concat before the "
        "output projection, one block of 4 heads", "static")
def make_per_head_loop():
    return PerHeadLoopModel(), [torch.randn(B, S, E)], ["x"], ["y"], None


@sample("softcap", "self-attention, q/k/v/o Linear(32, 32), 4 heads, Gemma-2 logit soft-capping "
        "tanh(s / 50) · 50, causal mask as a float buffer [1, 1, 5, 5]",
        "score path MatMul → Div → Div → Tanh → Mul → Add(mask buffer) → Softmax; the mask is "
        "a buffer, not a parameter", "static")
def make_softcap():
    return ScorePathAttention("softcap"), [torch.randn(B, S, E)], ["x"], ["y"], None


@sample("sinks", "self-attention, q/k/v/o Linear(32, 32), 4 heads, gpt-oss learned sinks "
        "(nn.Parameter [4]) concatenated as a column of the scores",
        "Concat(scores, sinks) → Softmax → Slice drops the sink column → MatMul with V; the "
        "4 sinks are attention parameters beside Q/K/V/O", "static")
def make_sinks():
    return ScorePathAttention("sinks"), [torch.randn(B, S, E)], ["x"], ["y"], None


@sample("alibi", "self-attention, q/k/v/o Linear(32, 32), 4 heads, ALiBi slopes 2^(-8(h+1)/4) "
        "(a buffer) times j - i added to the scores",
        "the exporter folds slopes × distances into one [1, 4, 5, 5] constant added to the "
        "scores: a buffer", "static")
def make_alibi():
    return ScorePathAttention("alibi"), [torch.randn(B, S, E)], ["x"], ["y"], None


@sample("temperature", "self-attention, q/k/v/o Linear(32, 32), 4 heads, a learned per-head "
        "temperature nn.Parameter [1, 4, 1, 1] multiplying the scores",
        "Mul by a [1, 4, 1, 1] parameter on the score path: 4 attention parameters beside "
        "Q/K/V/O", "static")
def make_temperature():
    return ScorePathAttention("temperature"), [torch.randn(B, S, E)], ["x"], ["y"], None


class LatentAttention(AttentionBlock):
    """DeepSeek-V2's multi-head latent attention, written as its reference code writes it:
    q_a_proj -> RMSNorm -> q_b_proj; kv_a_proj_with_mqa split into the latent and a decoupled
    RoPE key -> RMSNorm -> kv_b_proj split per head into K and V; o_proj."""

    def __init__(self, hidden=E, heads=H, q_rank=16, kv_rank=8, nope=8, rope=4, v_dim=8):
        super().__init__()
        self.h, self.nope, self.rope, self.v_dim, self.kv_rank = heads, nope, rope, v_dim, kv_rank
        self.q_a_proj = nn.Linear(hidden, q_rank, bias=False)
        self.q_a_layernorm = RMSNorm(q_rank)
        self.q_b_proj = nn.Linear(q_rank, heads * (nope + rope), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(hidden, kv_rank + rope, bias=False)
        self.kv_a_layernorm = RMSNorm(kv_rank)
        self.kv_b_proj = nn.Linear(kv_rank, heads * (nope + v_dim), bias=False)
        self.o_proj = nn.Linear(heads * v_dim, hidden, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, rope, 2).float() / rope))
        freqs = torch.outer(torch.arange(MAX_POS).float(), inv)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def block(self):
        h, nope, v_dim, r = self.h, self.nope, self.v_dim, self.kv_rank
        kvb = self.kv_b_proj.weight.view(h, nope + v_dim, r)  # [out, in], out = per head [K | V]
        return dict(kind="self", heads=h, kv_heads=h, width=self.q_a_proj.in_features,
                    head_dim=nope + self.rope, v_head_dim=v_dim,
                    q_weight=_numel(self.q_a_proj.weight) + _numel(self.q_b_proj.weight), q_bias=0,
                    k_weight=_numel(self.kv_a_proj_with_mqa.weight) + _numel(kvb[:, :nope]), k_bias=0,
                    v_weight=_numel(kvb[:, nope:]), v_bias=0,
                    o_weight=_numel(self.o_proj.weight), o_bias=0,
                    extras=_numel(self.q_a_layernorm.weight) + _numel(self.kv_a_layernorm.weight))

    def forward(self, x):
        b, n, _ = x.size()
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        q = q.view(b, n, self.h, self.nope + self.rope).transpose(1, 2)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], dim=-1)
        latent, k_pe = torch.split(self.kv_a_proj_with_mqa(x), [self.kv_rank, self.rope], dim=-1)
        k_pe = k_pe.view(b, n, 1, self.rope).transpose(1, 2)
        kv = self.kv_b_proj(self.kv_a_layernorm(latent))
        kv = kv.view(b, n, self.h, self.nope + self.v_dim).transpose(1, 2)
        k_nope, v = torch.split(kv, [self.nope, self.v_dim], dim=-1)
        cos, sin = self.cos_cached[:n], self.sin_cached[:n]
        q_pe = q_pe * cos + rotate_half(q_pe) * sin
        k_pe = k_pe * cos + rotate_half(k_pe) * sin
        q = torch.cat([q_nope, q_pe], -1)
        k = torch.cat([k_nope, k_pe.expand(-1, self.h, -1, -1)], -1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.nope + self.rope)
        w = w + torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        o = torch.matmul(F.softmax(w, dim=-1), v).transpose(1, 2).reshape(b, n, self.h * self.v_dim)
        return self.o_proj(o)


class PreNormDecoder(nn.Module):
    """Pre-norm decoder layers over an embedding: x + attn(norm1(x)), then x + ffn(norm2(x)), and
    an untied LM head. `attention` and `feed_forward` make each layer's modules; the feed-forward
    is registered under `ffn_name` (its parameters' names: layers.N.mlp... or layers.N.moe...)."""

    def __init__(self, attention, feed_forward, ffn_name, layers=2):
        super().__init__()
        self.ffn_name = ffn_name
        self.embed = nn.Embedding(VOCAB, E)
        self.layers = nn.ModuleList(nn.ModuleDict({
            "norm1": RMSNorm(), "attn": attention(), "norm2": RMSNorm(), ffn_name: feed_forward()})
            for _ in range(layers))
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(E, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = x + layer["attn"](layer["norm1"](x))
            x = x + layer[self.ffn_name](layer["norm2"](x))
        return self.lm_head(self.norm(x))


@sample("mla", "two decoder layers with DeepSeek-V2 multi-head latent attention: width 32, 4 heads, "
        "Q latent 16, K/V latent 8 + a 4-wide RoPE key, per head Q/K 8 + 4 and V 8; SwiGLU "
        "feed-forward, untied LM head",
        "q_a_proj → RMSNorm → q_b_proj; kv_a_proj_with_mqa → Split [8, 4] → RMSNorm → kv_b_proj "
        "→ per-head Split [8, 8] into K and V; the RoPE key is Expanded to every head and "
        "concatenated onto K; heads × head size (48) is not the width (32) by design",
        "dynamic batch, seq")
def make_mla():
    ids = torch.randint(0, VOCAB, (B, S))
    axes = {"ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    return PreNormDecoder(LatentAttention, LlamaMLP, "mlp"), [ids], ["ids"], ["logits"], axes


class WideSelfMHA(nn.Module):
    """nn.MultiheadAttention of a given width and heads, self-attention."""

    def __init__(self, width, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, heads)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


@sample("mha_heads4", "nn.MultiheadAttention(96, 4), self-attention, (L, N, E)",
        "the pair of mha_heads12: the same width in 4 heads of 24; headcount diff shows the count unchanged",
        "static")
def make_mha_heads4():
    return WideSelfMHA(96, 4), [torch.randn(S, B, 96)], ["x"], ["y"], None


@sample("mha_heads12", "nn.MultiheadAttention(96, 12), self-attention, (L, N, E)",
        "the pair of mha_heads4: the same width in 12 heads of 8; 4·96² + 4·96 parameters either way",
        "static")
def make_mha_heads12():
    return WideSelfMHA(96, 12), [torch.randn(S, B, 96)], ["x"], ["y"], None


class AbsorbedLatentAttention(nn.Module):
    """LatentAttention's weights run as inference engines rewrite MLA: kv_b_proj's K part
    absorbed into Q and its V part applied after the weighted sum, so the scores and the sum read
    the cached latent itself (einsums as in DeepSeek-V3's reference inference code)."""

    def __init__(self, hidden=E, heads=H, q_rank=16, kv_rank=8, nope=8, rope=4, v_dim=8):
        super().__init__()
        self.h, self.nope, self.rope, self.v_dim, self.kv_rank = heads, nope, rope, v_dim, kv_rank
        self.q_a_proj = nn.Linear(hidden, q_rank, bias=False)
        self.q_a_layernorm = RMSNorm(q_rank)
        self.q_b_proj = nn.Linear(q_rank, heads * (nope + rope), bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(hidden, kv_rank + rope, bias=False)
        self.kv_a_layernorm = RMSNorm(kv_rank)
        self.kv_b_proj = nn.Linear(kv_rank, heads * (nope + v_dim), bias=False)
        self.o_proj = nn.Linear(heads * v_dim, hidden, bias=False)

    def forward(self, x):
        b, n, _ = x.size()
        q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x))).view(b, n, self.h, self.nope + self.rope)
        q_nope, q_pe = torch.split(q, [self.nope, self.rope], dim=-1)
        latent, k_pe = torch.split(self.kv_a_proj_with_mqa(x), [self.kv_rank, self.rope], dim=-1)
        latent = self.kv_a_layernorm(latent)
        w = self.kv_b_proj.weight.view(self.h, self.nope + self.v_dim, self.kv_rank)
        q_nope = torch.einsum("bshd,hdc->bshc", q_nope, w[:, :self.nope])
        scores = (torch.einsum("bshc,btc->bsht", q_nope, latent) +
                  torch.einsum("bshr,btr->bsht", q_pe, k_pe)) / math.sqrt(self.nope + self.rope)
        o = torch.einsum("bsht,btc->bshc", scores.softmax(-1), latent)
        o = torch.einsum("bshc,hdc->bshd", o, w[:, -self.v_dim:])
        return self.o_proj(o.flatten(2))


@sample("mla_absorbed", "mla.onnx's attention (one layer, no RoPE rotation) run in the absorbed form: "
        "kv_b_proj's K part multiplied into Q, its V part after the weighted sum",
        "K and V at the core are one tensor, the normed latent: reported as unmatched with that reason, "
        "its parameters outside the attention total", "static")
def make_mla_absorbed():
    return AbsorbedLatentAttention(), [torch.randn(B, S, E)], ["x"], ["y"], None


MOE_KEYS = ("experts", "top_k", "expert", "routed", "router", "shared", "active_per_token_idle")


class MoELayer(nn.Module):
    """Base of the mixture-of-experts samples: moe_layer() reads the sizes from the modules."""

    def moe_layer(self):
        sizes = [sum(p.numel() for p in e.parameters()) for e in self.experts]
        assert len(set(sizes)) == 1
        shared = sum(p.numel() for p in self.shared.parameters()) if self.shared is not None else 0
        return dict(experts=len(self.experts), top_k=self.k, expert=sizes[0], routed=sum(sizes),
                    router=sum(p.numel() for p in self.gate.parameters()), shared=shared,
                    active_per_token_idle=(len(self.experts) - self.k) * sizes[0])


class DenseMoE(MoELayer):
    """Mixtral-style top-2 routing written densely: every expert runs on every token and its
    output is weighted by the routing mask (zero for the experts a token did not choose)."""

    def __init__(self, experts=4, k=2, inter=2 * E):
        super().__init__()
        self.k, self.shared = k, None
        self.gate = nn.Linear(E, experts, bias=False)
        self.experts = nn.ModuleList(LlamaMLP(E, inter) for _ in range(experts))

    def forward(self, x):
        probs = F.softmax(self.gate(x), dim=-1)
        weights, chosen = torch.topk(probs, self.k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        mask = torch.zeros_like(probs).scatter(-1, chosen, weights)
        out = 0
        for e, expert in enumerate(self.experts):
            out = out + expert(x) * mask[..., e:e + 1]
        return out


class SparseMoE(MoELayer):
    """DeepSeek-style sparse routing: each expert runs on the tokens that chose it (NonZero,
    Gather), its output weighted by the routing weight and added back by index (index_add); a
    shared expert runs on every token."""

    def __init__(self, experts=4, k=2, inter=E, shared_inter=2 * E):
        super().__init__()
        self.k = k
        self.gate = nn.Linear(E, experts, bias=False)
        self.experts = nn.ModuleList(LlamaMLP(E, inter) for _ in range(experts))
        self.shared = LlamaMLP(E, shared_inter)

    def forward(self, x):
        b, s, d = x.shape
        flat = x.reshape(-1, d)
        weights, chosen = torch.topk(F.softmax(self.gate(flat), dim=-1), self.k, dim=-1)
        out = self.shared(flat)
        for e, expert in enumerate(self.experts):
            token, slot = torch.nonzero(chosen == e, as_tuple=True)
            out = out.index_add(0, token, expert(flat[token]) * weights[token, slot].unsqueeze(-1))
        return out.reshape(b, s, d)


@sample("moe_dense", "two decoder layers (GQA attention 4/2 heads) whose feed-forward is a Mixtral-style "
        "mixture of 4 SwiGLU experts 32 -> 64, top-2, router Linear(32, 4)",
        "dense routing: Softmax → TopK → ScatterElements builds a [B, S, 4] mask; every expert runs and "
        "is multiplied by its column of the mask; 2 of 4 experts count per token", "static")
def make_moe_dense():
    return PreNormDecoder(LlamaAttention, DenseMoE, "moe"), [torch.randint(0, VOCAB, (B, S))], ["ids"], ["logits"], None


@sample("moe_sparse", "two decoder layers (GQA attention 4/2 heads) whose feed-forward is a DeepSeek-style "
        "mixture of 4 routed SwiGLU experts 32 -> 32, top-2, plus a shared expert 32 -> 64",
        "sparse routing: TopK, then per expert Equal → NonZero → Gather of its tokens, the expert, Mul by "
        "the gathered routing weight, ScatterElements back (index_add); the shared expert always runs",
        "static")
def make_moe_sparse():
    return PreNormDecoder(LlamaAttention, SparseMoE, "moe"), [torch.randint(0, VOCAB, (B, S))], ["ids"], ["logits"], None


def trained_like(model):
    """Perturb every parameter with seeded noise, as training would: no two tensors stay equal.

    Freshly built modules hold equal tensors (zero biases, unit LayerNorm weights, deep-copied
    layers) and torch's exporter merges those into one initializer plus Identity nodes. Only
    encoder_untrained keeps that; the other samples are exported with distinct values.
    """
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)


def merged_initializers(proto):
    """Identity nodes that re-create a tensor from an initializer (the exporter's merge)."""
    inits = {i.name for i in proto.graph.initializer}
    return [(n.output[0], n.input[0]) for n in proto.graph.node
            if n.op_type == "Identity" and n.input[0] in inits]


def build(spec):
    """Make, record, export one sample; return the README row data."""
    name = spec["name"]
    torch.manual_seed(0)
    model, inputs, in_names, out_names, axes = spec["make"]()
    model.eval()
    if not spec["untrained"]:
        trained_like(model)
    comments = ["%s.onnx: %s" % (name, spec["what"]),
                "shows: %s" % spec["shows"],
                "axes: %s" % spec["axes"]]
    params = [(n, int(p.numel())) for n, p in model.named_parameters()]
    buffers = [(n, int(b.numel())) for n, b in model.named_buffers()]
    total = sum(p.numel() for p in model.parameters())

    if name == "qdq_int8":
        quantize_bert(model, inputs)
        left = [(n, int(p.numel())) for n, p in model.named_parameters()]
        qparams = quantized_params(model)
        # The logical weights of the converted model are the float model's parameters.
        assert sorted(left + qparams) == sorted(params), (left + qparams, params)
        comments.append("after convert() the int8 weights are packed params, not nn.Parameters:"
                        " model.parameters() then gives %d; the param lines and total are the "
                        "float model's, equal (checked) to that plus the element counts of the "
                        "quantized Linears' weight() and bias()" % sum(n for _, n in left))

    blocks = record_blocks(model, inputs)
    path = os.path.join(HERE, name + ".onnx")
    proto = export(model, inputs, path, in_names, out_names, axes)

    notes = []
    merged = merged_initializers(proto)
    if merged:
        comments.append("the exporter merged equal tensors: %d Identity node(s) re-create a "
                        "tensor (parameter or buffer) from another initializer: %s" % (
                            len(merged), ", ".join("%s=%s" % m for m in merged)))
        if len(merged) <= 3:
            notes.append("Identity-merged: " + ", ".join("%s = %s" % m for m in merged))
        else:
            notes.append("%d tensors merged into others via Identity" % len(merged))
    if name == "gpt2_tiny":
        copies = tied_copies(proto, model.wte.weight)
        comments.append("tied: lm_head.weight is wte.weight (one nn.Parameter, counted once); "
                        "the ONNX file holds it as %d initializer(s): %s"
                        % (len(copies), ", ".join(copies)))
        notes.append("tied weight stored %d times in the file (%s)"
                     % (len(copies), ", ".join(copies)))

    if name == "bert_base_external":
        assert total == 109482240, total
        data_name = name + ".onnx.data"
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=data_name, size_threshold=1024)
        data_path = os.path.join(HERE, data_name)
        notes.append("data file (%d bytes) deleted" % os.path.getsize(data_path))
        comments.append("external data %s (%d bytes) was written and deleted"
                        % (data_name, os.path.getsize(data_path)))
        os.remove(data_path)

    moe = [m.moe_layer() for m in model.modules() if isinstance(m, MoELayer)]
    mixers = [m.mixer() for m in model.modules() if isinstance(m, TokenMixer)]
    write_counts(os.path.join(HERE, name + ".counts.tsv"), comments, total, params, buffers, blocks, moe, mixers)
    if name in CHECKPOINTS:
        write_safetensors(os.path.join(HERE, name + ".safetensors"), model)
    if name in GGUF_CHECKPOINTS:
        write_gguf(os.path.join(HERE, name + ".gguf"),
                   {n: p.detach().float().numpy() for n, p in model.named_parameters()}, model.config())
    if hasattr(model, "config"):
        with open(os.path.join(HERE, name + ".config.json"), "w") as f:
            f.write(json.dumps(model.config(), indent=2, sort_keys=True) + "\n")
    return dict(spec, total=total, blocks=len(blocks), size=os.path.getsize(path),
                note="; ".join(notes),
                sha=sha256(path))


README_HEAD = """\
# samples

Models that the README and the tests use. Every `NAME.onnx` comes with `NAME.counts.tsv`: the
counts PyTorch itself reports, written by the generator at export time (never typed by hand).

Regenerate (from the repository root; writes into `samples/`; about 15 s, peak ~2.5 GB RAM for the BERT-base export):

    /usr/bin/python3 samples/make_samples.py

Needs Debian bookworm's `python3-torch` (1.13) and `python3-onnx` (1.12) under `/usr/bin/python3`.
All models: `torch.onnx.export(..., opset_version={opset}, do_constant_folding=True)`, eval mode,
gradients enabled, `torch.manual_seed(0)` before each model; two runs give byte-identical files.
Made with torch {torch}, onnx {onnx} (Debian's python3-torch 1.13.1 reports its version as
1.13.0a0).

Shapes are tiny and chosen so that shape constants are distinguishable: width 32, 4 heads,
head_dim 8, batch 3, sequence 5, memory/key sequence 7 (so B*h = 12 in nn.MultiheadAttention
reshapes). Coincidences left, as the brief fixes the sizes: in `gqa.onnx` the kv head count
and the repeat factor are both 2; in `mqa.onnx` the repeat factor is the head count 4; in
`width_mismatch_keras.onnx` the per-head size is the width 32 (that is the mistake it shows).
`width_mismatch_matlab.onnx` is the one sample 64 wide (its 32 key channels are the total over
heads); `kv_cache_decoder.onnx` is exported with a 6-token past, so keys are 6 + 5 = 11 long.
"Dynamic" samples have symbolic batch/sequence axes: their head-split shapes are computed at run
time (Shape/Gather/Concat) and the head count survives only as a constant inside the Concat or a
Mul/Div; "static" samples have those shapes folded into constant Reshape targets.

## Sidecar format (`NAME.counts.tsv`, tab-separated)

```
# comment lines: what the model is, which torch made it
total	<sum(p.numel() for p in model.parameters())>   (tied weights counted once, as torch does)
param	<name from named_parameters()>	<numel>
block	<i>	kind=<self|cross>	heads=<h>	kv_heads=<hkv>	width=<Q input width>	head_dim=<d_k>	v_head_dim=<d_v>	q_weight=<n>	q_bias=<n>	k_weight=<n>	k_bias=<n>	v_weight=<n>	v_bias=<n>	o_weight=<n>	o_bias=<n>
moe	<i>	experts=<n>	top_k=<k>	expert=<one expert's numel>	routed=<all routed experts>	router=<n>	shared=<n>	active_per_token_idle=<(experts - k) * expert>
```

Blocks are numbered in the order the attention modules are called in forward (recorded with
forward pre-hooks). `kind=self` when the module is called with the query tensor as the key
tensor, else `cross` (so `mha_kdim_vdim`, with three separate inputs, is `cross`). Shares come from
the module's tensors: nn.MultiheadAttention's packed `in_proj_weight` rows [0:E] | [E:2E] | [2E:3E]
(or `q/k/v_proj_weight` with kdim/vdim), `out_proj` for O; Conv1D `c_attn` columns in thirds;
per-head modules sum their h Linears; quantized Linears report the element count of the logical
weight. `add_bias_kv`'s `bias_k`/`bias_v` are listed as params only. 0 means no bias.

## Samples

| file | made from (torch {torch}, opset {opset}) | axes | what it shows | torch params | blocks | size |
|---|---|---|---|---:|---:|---:|
"""

README_TAIL = """
## Notes

- `encoder.onnx`: exported from the default `nn.TransformerEncoder` (enable_nested_tensor left at
  its default). The 1.13 fast path (`_transformer_encoder_layer_fwd`, nested tensors) is only
  taken under `torch.no_grad()` or without parameters requiring grad, so exporting with gradients
  enabled traces the ordinary Python path; no padding mask was needed.
- `llama_tiny.safetensors`: the checkpoint `llama_tiny.onnx` was exported from, written beside
  it in the safetensors format (the module's parameters by their names, float32): the same
  24,992 parameters, read from the tensor names instead of a graph.
- `llama_tiny.gguf`: the same checkpoint as llama.cpp's converter writes it with `--outtype q8_0`
  (GGUF version 3, llama.cpp's names, Q and K rows permuted into its rotary layout, the
  embedding in float16, norms in float32, every matrix in Q8_0): 24,992 parameters in 30,024
  bytes of weights, 9.61 bits per weight.
- `gpt2_tiny.onnx`: `lm_head.weight` is `wte.weight`. torch counts it once (the `total`); the
  exporter stores it as the Gather table and again as the constant-folded transpose used by the
  LM head MatMul (see the table's note and the `# tied:` line of the sidecar). Only comparing
  content can prove that the two tensors are one parameter.
- The samples after `bert_base_external` are the findings and decoder/T5/ViT samples: hand-written
  modules (MATLAB-like, Keras-like, Whisper, MQA, KV-cache decoder, T5) and
  `nn.TransformerEncoderLayer(batch_first=True, norm_first=True)` for `vit_batch_first` (exported
  with gradients enabled, so through the Python path as `encoder.onnx`). Their causal mask
  (`kv_cache_decoder`) and relative-position buckets (`t5_relative`) are computed from `Range`
  at run time, so they store only the module's parameters: stored equals the torch total.
- Initializers that are not parameters: `position_ids` (BERT), the causal `bias` table (GPT-2),
  `cos_cached`/`sin_cached`/`causal_mask` (gqa), `tgt_mask` (decoder_layer, transformer; folded
  into a `[1, 5, 5]` Add constant), the tied copy in gpt2_tiny, plus
  shape constants. A counter that sums every initializer over-counts these files.
- Values: after construction every parameter gets seeded noise (`trained_like`), so no two
  parameter tensors are equal, as in a trained model. Freshly built modules are full of equal
  tensors (zero biases, unit LayerNorm weights, and `nn.TransformerEncoder` deep-copies one
  layer `num_layers` times) and torch's exporter merges equal tensors into one initializer plus
  `Identity` nodes named after the lost parameters. `encoder_untrained.onnx` (an extra sample,
  the same module as `encoder.onnx` without the noise) keeps that: all of layer 1 is Identity
  of layer 0. Its torch total is still the full count; the sidecar lists the merges.
- `qdq_int8.onnx`: {qdq_note}
- `bert_base_external.onnx`: every tensor of 1 KiB or more has `data_location = EXTERNAL` pointing
  at `bert_base_external.onnx.data`, which the generator deletes; the counts must come from dims.
  `samples/.gitignore` ignores `*.data` in case one is left behind.

## sha256 of this run

```
{shas}
```
"""

QDQ_NOTE = """eager-mode static quantization with torch.ao.quantization: every Linear of the
  encoder layers is wrapped QuantStub -> Linear -> DeQuantStub, prepared with the default
  `onednn` qconfig (per-channel symmetric int8 weights, HistogramObserver activations), calibrated
  on 4 batches, converted to `quantized::linear` and exported. Debian's torch has no FBGEMM
  (`supported_engines` = qnnpack, onednn), so the x86 engine `onednn` is used; `qnnpack` also
  works but gives per-tensor weights. The exporter puts the int8 weights `[out, in]` in
  `Constant` nodes (not initializers) feeding `DequantizeLinear(axis=0)` with per-channel float
  scales and int8 zero points, then `Transpose` and `MatMul`; the bias becomes an int32
  `Constant` behind its own `DequantizeLinear` (scale = input scale x weight scale, zero point
  from `ConstantOfShape` + `Cast`) and an `Add`. Activations pass QuantizeLinear -> Cast(uint8)
  -> DequantizeLinear around every Linear. Embeddings and LayerNorms stay float initializers.
  After `convert()` the int8 weights are packed params, not nn.Parameters, so
  `model.parameters()` no longer sees them: the sidecar's param lines and total are the float
  model's, checked equal to the converted model's remaining parameters plus the element counts of
  each quantized Linear's `weight()` and `bias()`."""


# ----------------------------------------------------------------------------------------------
# Attention as 2025-26 models write it: sliding windows, QK-norm, a head size apart from the width.

class Qwen3StyleAttention(AttentionBlock):
    """Qwen3/Gemma-3-style attention: q/k/v/o without biases and a head size of 16 over a width of
    32 (4 heads x 16 = 64), RMSNorm over the head size on q and k after the head split (q_norm,
    k_norm), rotary, GQA 4/2, and a mask buffer that is causal (window 0) or a band of `window`
    tokens (0 where 0 <= i - j < window, -1e9 elsewhere)."""

    def __init__(self, window, hidden=E, heads=H, kv_heads=2, head_dim=16, max_pos=MAX_POS):
        super().__init__()
        self.num_heads, self.num_key_value_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(hidden, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, hidden, bias=False)
        self.q_norm, self.k_norm = RMSNorm(head_dim), RMSNorm(head_dim)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        emb = torch.cat([torch.outer(torch.arange(max_pos).float(), inv_freq)] * 2, dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())
        i, j = torch.arange(max_pos)[:, None], torch.arange(max_pos)[None, :]
        allowed = (j <= i) & (i - j < window) if window else (j <= i)
        self.register_buffer("mask", torch.where(allowed, 0.0, -1e9))

    def block(self):
        blk = linear_block("self", self.num_heads, self.num_key_value_heads, self.q_proj, self.k_proj, self.v_proj,
                           self.o_proj)
        blk["extras"] = 2 * self.head_dim  # q_norm and k_norm
        return blk

    def forward(self, x):
        b, s, _ = x.size()
        q = self.q_norm(self.q_proj(x).view(b, s, self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, s, self.num_key_value_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos_cached[:s], self.sin_cached[:s]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.num_heads // self.num_key_value_heads)
        v = repeat_kv(v, self.num_heads // self.num_key_value_heads)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + self.mask[:s, :s]
        w = nn.functional.softmax(w, dim=-1)
        return self.o_proj(torch.matmul(w, v).transpose(1, 2).reshape(b, s, self.num_heads * self.head_dim))


class SlidingDecoder(nn.Module):
    """Three Qwen3-style layers, two sliding over 4 tokens and one full (as Gemma 3 interleaves
    them), each with a SwiGLU MLP 32 -> 64, RMSNorms, an untied LM head; its config.json states
    head_dim 16."""

    def __init__(self, windows=(4, 4, 0)):
        super().__init__()
        self.embed_tokens = nn.Embedding(VOCAB, E)
        self.layers = nn.ModuleList(nn.ModuleDict({"input_layernorm": RMSNorm(), "self_attn": Qwen3StyleAttention(w),
                                                   "post_attention_layernorm": RMSNorm(), "mlp": LlamaMLP(E, 2 * E)})
                                    for w in windows)
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(E, VOCAB, bias=False)

    def config(self):
        attn, mlp = self.layers[0]["self_attn"], self.layers[0]["mlp"]
        return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": E,
                "num_hidden_layers": len(self.layers), "num_attention_heads": attn.num_heads,
                "num_key_value_heads": attn.num_key_value_heads, "head_dim": attn.head_dim,
                "intermediate_size": mlp.gate_proj.out_features, "vocab_size": VOCAB,
                "max_position_embeddings": MAX_POS, "tie_word_embeddings": False, "attention_bias": False,
                "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu"}

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = x + layer["self_attn"](layer["input_layernorm"](x))
            x = x + layer["mlp"](layer["post_attention_layernorm"](x))
        return self.lm_head(self.norm(x))


@sample("sliding_qknorm", "three Qwen3-style decoder layers: GQA 4/2 heads of 16 over a width of 32 with QK-norm, "
        "two layers sliding over 4 tokens and one full, SwiGLU MLP, untied LM head; config.json beside it "
        "states head_dim 16",
        "windows read from band-shaped mask buffers (the cache keeps 4 tokens in the sliding layers); q_norm and "
        "k_norm counted in their block; 4 x 16 != 32 is the config's design (decoupled-head-size), not a "
        "width-mismatch", "static")
def make_sliding_qknorm():
    return SlidingDecoder(), [torch.randint(0, VOCAB, (B, S))], ["ids"], ["logits"], None


# ----------------------------------------------------------------------------------------------
# Hybrids: token mixers that are not softmax attention beside attention layers.

MIXER_KEYS = ("kind", "parameters", "state")


class TokenMixer(nn.Module):
    """Base of the mixers: mixer() reports its kind, parameters and recurrent state per sequence
    (elements), read from the module itself."""

    def mixer(self):
        return dict(kind=self.kind, parameters=sum(p.numel() for p in self.parameters()), state=self.state())


class LinearAttentionMixer(TokenMixer):
    """Causal linear attention (Katharopoulos et al., 2020): q, k through the feature map elu + 1,
    the state S_t = sum_{i <= t} phi(k_i) v_i^T (heads x d x d) and its normaliser z_t = sum phi(k_i)
    (heads x d) as cumulative sums over the sequence; no Softmax."""
    kind = "linear_attention"

    def __init__(self, width=E, heads=H):
        super().__init__()
        self.h, self.d = heads, width // heads
        self.q_proj, self.k_proj = nn.Linear(width, width, bias=False), nn.Linear(width, width, bias=False)
        self.v_proj, self.o_proj = nn.Linear(width, width, bias=False), nn.Linear(width, width, bias=False)

    def state(self):
        return self.h * self.d * self.d + self.h * self.d

    def forward(self, x):
        b, s, w = x.shape
        q = F.elu(self.q_proj(x).view(b, s, self.h, self.d)) + 1
        k = F.elu(self.k_proj(x).view(b, s, self.h, self.d)) + 1
        v = self.v_proj(x).view(b, s, self.h, self.d)
        kv = torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)
        z = torch.cumsum(k, dim=1)
        num = (q.unsqueeze(-1) * kv).sum(-2)
        den = (q * z).sum(-1, keepdim=True) + 1e-6
        return self.o_proj((num / den).reshape(b, s, w))


class MambaMixer(TokenMixer):
    """A Mamba selective-scan mixer as the reference writes it (expand 2, state N 16, conv 4,
    dt rank 4): in_proj, a depthwise causal Conv1d, x_proj into dt, B and C, dt_proj, A = -exp(A_log),
    D, out_proj gated by silu(z); the recurrence h = exp(dt A) h + dt B x unrolled over the
    sequence from a zero state."""
    kind = "state_space"

    def __init__(self, width=E, expand=2, n=16, conv=4, dt_rank=4):
        super().__init__()
        self.di, self.n, self.r, self.k = expand * width, n, dt_rank, conv
        self.in_proj = nn.Linear(width, 2 * self.di, bias=False)
        self.conv1d = nn.Conv1d(self.di, self.di, conv, groups=self.di, padding=conv - 1)
        self.x_proj = nn.Linear(self.di, dt_rank + 2 * n, bias=False)
        self.dt_proj = nn.Linear(dt_rank, self.di)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1).float()).repeat(self.di, 1))
        self.D = nn.Parameter(torch.ones(self.di))
        self.out_proj = nn.Linear(self.di, width, bias=False)

    def state(self):
        return (self.k - 1) * self.di + self.di * self.n  # the conv state and the SSM state

    def forward(self, x):
        b, s, _ = x.shape
        xs, z = self.in_proj(x).chunk(2, dim=-1)
        xs = F.silu(self.conv1d(xs.transpose(1, 2))[..., :s].transpose(1, 2))
        dt, Bm, Cm = torch.split(self.x_proj(xs), [self.r, self.n, self.n], dim=-1)
        dt = F.softplus(self.dt_proj(dt))
        A = -torch.exp(self.A_log)
        h = torch.zeros(b, self.di, self.n)
        ys = []
        for t in range(s):
            h = torch.exp(dt[:, t, :, None] * A) * h + dt[:, t, :, None] * Bm[:, t, None, :] * xs[:, t, :, None]
            ys.append((h * Cm[:, t, None, :]).sum(-1))
        y = torch.stack(ys, 1) + xs * self.D
        return self.out_proj(y * F.silu(z))


class HybridDecoder(nn.Module):
    """Pre-norm layers x + mixer(norm(x)) over an embedding, each layer's mixer made by the next
    entry of `mixers` (a TokenMixer or an attention block), no feed-forward, and an untied LM head."""

    def __init__(self, mixers):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, E)
        self.layers = nn.ModuleList(nn.ModuleDict({"norm": RMSNorm(), "mixer": make()}) for make in mixers)
        self.norm = RMSNorm()
        self.lm_head = nn.Linear(E, VOCAB, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for layer in self.layers:
            x = x + layer["mixer"](layer["norm"](x))
        return self.lm_head(self.norm(x))


@sample("hybrid_linear", "four decoder layers: three causal linear-attention mixers (q/k/v/o Linear(32, 32), elu + 1, "
        "4 heads of 8) and one GQA softmax attention layer; RMSNorms, no feed-forward, untied LM head",
        "linear attention: no Softmax, cumulative sums of k·vᵀ and of k (CumSum) carry the state; a token "
        "mixer of its own with its recurrent state (4 x 8 x 8 + 4 x 8 elements per layer)", "static")
def make_hybrid_linear():
    return HybridDecoder([LinearAttentionMixer] * 3 + [LlamaAttention]), [torch.randint(0, VOCAB, (B, S))], ["ids"], ["logits"], None


@sample("hybrid_mamba", "Jamba-style: four decoder layers alternating Mamba selective-scan mixers (d_inner 64, N 16, "
        "conv 4, dt rank 4) and GQA softmax attention; RMSNorms, no feed-forward, untied LM head",
        "a depthwise causal Conv1d and A_log through Exp prove a state-space mixer; the recurrence is "
        "unrolled over the sequence from a zero state the exporter stores as a constant (a buffer, not "
        "a parameter); state (4 - 1) x 64 + 64 x 16 elements per mixer", "static")
def make_hybrid_mamba():
    return (HybridDecoder([MambaMixer, LlamaAttention, MambaMixer, LlamaAttention]), [torch.randint(0, VOCAB, (B, S))],
            ["ids"], ["logits"], None)


def main():
    t0 = time.time()
    only = set(sys.argv[1:])
    rows = []
    for spec in SAMPLES:
        if only and spec["name"] not in only:
            continue
        t = time.time()
        row = build(spec)
        rows.append(row)
        print("%-20s total=%-10d blocks=%d size=%-8d %5.1fs %s" % (
            row["name"], row["total"], row["blocks"], row["size"], time.time() - t, row["note"]))
    if only:
        return
    table = []
    for r in rows:
        shows = r["shows"] + ("; " + r["note"] if r["note"] else "")
        table.append("| `%s.onnx` | %s | %s | %s | %s | %d | %s |" % (
            r["name"], r["what"], r["axes"], shows, "{:,}".format(r["total"]), r["blocks"],
            "{:,} B".format(r["size"])))
    shas = "\n".join("%s  %s.onnx" % (r["sha"], r["name"]) for r in rows)
    fmt = dict(opset=OPSET, torch=torch.__version__, onnx=onnx.__version__)
    text = (README_HEAD.format(**fmt) + "\n".join(table) + "\n"
            + README_TAIL.format(qdq_note=QDQ_NOTE, shas=shas))
    with open(os.path.join(HERE, "README.md"), "w") as f:
        f.write(text)
    with open(os.path.join(HERE, ".gitignore"), "w") as f:
        f.write("*.data\n")
    print("done in %.1fs" % (time.time() - t0))


if __name__ == "__main__":
    main()
