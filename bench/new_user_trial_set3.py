"""The third set of models of bench/new_user_trial.py (`--set 3`): families neither earlier set has got,
written as a user would write them. Model definitions only; the harness (export, ONNX Runtime, `kiln run`,
`kiln bench`, comparisons) and the helpers g, f32, randomize_bn and tv are new_user_trial.py's. Each entry
of MODELS is dict(fn=..., pt2=..., opset=..., bench_n=..., dynamic=...) as in the other sets: fn() returns
(module, OrderedDict of numpy inputs)."""
import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from new_user_trial import f32, g, randomize_bn, tv  # noqa: F401  (one set of helpers for every set)


def ids(high, *shape):
    return np.random.randint(1, high, size=shape).astype(np.int64)


class First(nn.Module):
    """A model that returns a dict or a list, reduced to the tensor a user keeps."""

    def __init__(self, m, pick):
        super().__init__()
        self.m, self.pick = m, pick

    def forward(self, x):
        return self.pick(self.m(x))


# ----------------------------------------------------------------------------- torchvision, unseen kinds
def m_inception_v3():
    import torchvision
    m = torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    return randomize_bn(m), OrderedDict(x=f32(1, 3, 299, 299))


def m_lraspp():
    import torchvision
    m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
    return First(randomize_bn(m), lambda out: out["out"]), OrderedDict(x=f32(1, 3, 256, 256))


def m_raft_small():
    """RAFT (small) optical flow, 4 refinement steps: correlation pyramid, grid_sample lookups, a ConvGRU."""
    import torchvision

    class Raft(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = randomize_bn(torchvision.models.optical_flow.raft_small(weights=None))

        def forward(self, a, b):
            return self.m(a, b, num_flow_updates=4)[-1]

    return Raft(), OrderedDict(a=f32(1, 3, 128, 160), b=f32(1, 3, 128, 160))


# ----------------------------------------------------------------------------- generative
def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlockT(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.n1, self.n2 = nn.GroupNorm(8, cin), nn.GroupNorm(8, cout)
        self.c1, self.c2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.t = nn.Linear(tdim, cout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.t(F.silu(temb))[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return self.skip(x) + h


class SpatialTransformer(nn.Module):
    """Stable-Diffusion-style: GroupNorm, proj_in, self-attention, cross-attention to a context, GEGLU."""

    def __init__(self, c, ctx_dim, heads=4):
        super().__init__()
        self.norm = nn.GroupNorm(8, c)
        self.proj_in, self.proj_out = nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(c), nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn1 = nn.MultiheadAttention(c, heads, batch_first=True)
        self.q, self.k, self.v, self.o = nn.Linear(c, c, bias=False), nn.Linear(ctx_dim, c, bias=False), \
            nn.Linear(ctx_dim, c, bias=False), nn.Linear(c, c)
        self.heads = heads
        self.geglu, self.ff_out = nn.Linear(c, 8 * c), nn.Linear(4 * c, c)

    def forward(self, x, ctx):
        B, C, H, W = x.shape
        h = self.proj_in(self.norm(x)).flatten(2).transpose(1, 2)
        a = self.ln1(h)
        h = h + self.attn1(a, a, a, need_weights=False)[0]
        q = self.q(self.ln2(h)).view(B, -1, self.heads, C // self.heads).transpose(1, 2)
        k = self.k(ctx).view(B, -1, self.heads, C // self.heads).transpose(1, 2)
        v = self.v(ctx).view(B, -1, self.heads, C // self.heads).transpose(1, 2)
        h = h + self.o(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, -1, C))
        u, gate = self.geglu(self.ln3(h)).chunk(2, dim=-1)
        h = h + self.ff_out(u * F.gelu(gate))
        return x + self.proj_out(h.transpose(1, 2).reshape(B, C, H, W))


class TinySDUNet(nn.Module):
    def __init__(self, cin=4, c=(32, 64), ctx_dim=64):
        super().__init__()
        tdim = 4 * c[0]
        self.tmlp = nn.Sequential(nn.Linear(c[0], tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inp = nn.Conv2d(cin, c[0], 3, padding=1)
        self.r1 = ResBlockT(c[0], c[0], tdim)
        self.down = nn.Conv2d(c[0], c[0], 3, stride=2, padding=1)
        self.r2 = ResBlockT(c[0], c[1], tdim)
        self.st = SpatialTransformer(c[1], ctx_dim)
        self.r3 = ResBlockT(c[1], c[1], tdim)
        self.up = nn.Conv2d(c[1], c[1], 3, padding=1)
        self.r4 = ResBlockT(c[1] + c[0], c[0], tdim)
        self.out = nn.Sequential(nn.GroupNorm(8, c[0]), nn.SiLU(), nn.Conv2d(c[0], cin, 3, padding=1))
        self.c0 = c[0]

    def forward(self, x, t, ctx):
        temb = self.tmlp(timestep_embedding(t, self.c0))
        h1 = self.r1(self.inp(x), temb)
        h = self.r2(self.down(h1), temb)
        h = self.r3(self.st(h, ctx), temb)
        h = self.up(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.out(self.r4(torch.cat([h, h1], 1), temb))


def m_sd_unet():
    return TinySDUNet(), OrderedDict(x=f32(1, 4, 32, 32), t=np.array([321], dtype=np.int64), ctx=f32(1, 8, 64))


class DiTBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6), nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))
        self.ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 6 * d))

    def forward(self, x, c):
        sh1, sc1, g1, sh2, sc2, g2 = self.ada(c).unsqueeze(1).chunk(6, dim=-1)
        h = self.n1(x) * (1 + sc1) + sh1
        x = x + g1 * self.attn(h, h, h, need_weights=False)[0]
        return x + g2 * self.mlp(self.n2(x) * (1 + sc2) + sh2)


class DiT(nn.Module):
    """DiT-S-like on a 32x32x4 latent, patch 2: adaLN-zero modulation from a timestep and a class label."""

    def __init__(self, d=192, depth=4, heads=3, p=2, cin=4, classes=1000):
        super().__init__()
        self.p, self.cin = p, cin
        self.patch = nn.Conv2d(cin, d, p, stride=p)
        self.pos = nn.Parameter(torch.randn(1, 256, d) * 0.02)
        self.tmlp = nn.Sequential(nn.Linear(256, d), nn.SiLU(), nn.Linear(d, d))
        self.cls = nn.Embedding(classes + 1, d)
        self.blocks = nn.ModuleList(DiTBlock(d, heads) for _ in range(depth))
        self.final_norm = nn.LayerNorm(d, elementwise_affine=False, eps=1e-6)
        self.final_ada = nn.Sequential(nn.SiLU(), nn.Linear(d, 2 * d))
        self.final = nn.Linear(d, p * p * 2 * cin)

    def forward(self, x, t, label):
        B, _, H, W = x.shape
        h = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        c = self.tmlp(timestep_embedding(t, 256)) + self.cls(label)
        for blk in self.blocks:
            h = blk(h, c)
        shift, scale = self.final_ada(c).unsqueeze(1).chunk(2, dim=-1)
        h = self.final(self.final_norm(h) * (1 + scale) + shift)
        gh, gw = H // self.p, W // self.p
        h = h.reshape(B, gh, gw, self.p, self.p, 2 * self.cin).permute(0, 5, 1, 3, 2, 4)
        return h.reshape(B, 2 * self.cin, H, W)


def m_dit():
    return DiT(), OrderedDict(x=f32(2, 4, 32, 32), t=np.array([10, 500], dtype=np.int64), label=np.array([3, 207], dtype=np.int64))


class AffineCoupling(nn.Module):
    def __init__(self, d, mask, hidden=128):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 2 * d))

    def forward(self, x):
        xm = x * self.mask
        s, t = self.net(xm).chunk(2, dim=-1)
        s = torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        return xm + (1 - self.mask) * (x * torch.exp(s) + t), s.sum(-1)


class RealNVP(nn.Module):
    """A RealNVP flow's forward pass: alternating-mask affine couplings, the latent and log p(x)."""

    def __init__(self, d=64, layers=6):
        super().__init__()
        masks = [(torch.arange(d) % 2 == (i % 2)).float() for i in range(layers)]
        self.layers = nn.ModuleList(AffineCoupling(d, m) for m in masks)

    def forward(self, x):
        logdet = torch.zeros(x.shape[0])
        for layer in self.layers:
            x, ld = layer(x)
            logdet = logdet + ld
        logp = -0.5 * (x * x).sum(-1) - 0.5 * x.shape[-1] * math.log(2 * math.pi)
        return x, logp + logdet


def m_realnvp():
    return RealNVP(), OrderedDict(x=f32(256, 64))


class MaskedConv2d(nn.Conv2d):
    def __init__(self, kind, *args, **kwargs):
        super().__init__(*args, **kwargs)
        k = self.kernel_size[0]
        mask = torch.ones_like(self.weight)
        mask[:, :, k // 2, k // 2 + (kind == "B"):] = 0
        mask[:, :, k // 2 + 1:] = 0
        self.register_buffer("mask", mask)

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, self.stride, self.padding)


class PixelCNN(nn.Module):
    def __init__(self, c=64, layers=6, levels=16):
        super().__init__()
        self.inp = MaskedConv2d("A", 1, c, 7, padding=3)
        self.blocks = nn.ModuleList(nn.Sequential(nn.ReLU(), MaskedConv2d("B", c, c, 3, padding=1), nn.BatchNorm2d(c))
                                    for _ in range(layers))
        self.out = nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, 1), nn.ReLU(), nn.Conv2d(c, levels, 1))

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = h + b(h)
        return F.log_softmax(self.out(h), dim=1)


def m_pixelcnn():
    return randomize_bn(PixelCNN()), OrderedDict(x=f32(4, 1, 28, 28))


# ----------------------------------------------------------------------------- sequence models
class SelectiveSSM(nn.Module):
    """A Mamba block with its selective scan written as a Python loop over time (exported unrolled)."""

    def __init__(self, d=64, state=16, expand=2, conv=4):
        super().__init__()
        di = expand * d
        self.di, self.state = di, state
        self.inp = nn.Linear(d, 2 * di)
        self.conv = nn.Conv1d(di, di, conv, groups=di, padding=conv - 1)
        self.x_proj = nn.Linear(di, 8 + 2 * state, bias=False)
        self.dt_proj = nn.Linear(8, di)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state + 1).float()).repeat(di, 1))
        self.D = nn.Parameter(torch.ones(di))
        self.out = nn.Linear(di, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        B, L, _ = x.shape
        xz = self.inp(self.norm(x))
        u, z = xz.chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :L].transpose(1, 2))
        dt, Bm, Cm = self.x_proj(u).split([8, self.state, self.state], dim=-1)
        dt = F.softplus(self.dt_proj(dt))  # [B, L, di]
        A = -torch.exp(self.A_log)  # [di, state]
        h = torch.zeros(B, self.di, self.state)
        ys = []
        for t in range(L):
            dA = torch.exp(dt[:, t, :, None] * A)
            h = dA * h + dt[:, t, :, None] * Bm[:, t, None, :] * u[:, t, :, None]
            ys.append((h * Cm[:, t, None, :]).sum(-1))
        y = torch.stack(ys, 1) + u * self.D
        return x + self.out(y * F.silu(z))


class MambaLM(nn.Module):
    def __init__(self, vocab=1000, d=64, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(SelectiveSSM(d) for _ in range(layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, tokens):
        h = self.emb(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.norm(h) @ self.emb.weight.t()


def m_mamba_scan():
    return MambaLM(), OrderedDict(tokens=ids(1000, 2, 24))


class GQAAttention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.h, self.kv, self.dh = heads, kv_heads, d // heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.v = nn.Linear(d, kv_heads * self.dh, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        B, L, D = x.shape

        def rope(t):
            t1, t2 = t[..., : self.dh // 2], t[..., self.dh // 2:]
            return t * cos + torch.cat([-t2, t1], -1) * sin

        q = rope(self.q(x).view(B, L, self.h, self.dh).transpose(1, 2))
        k = rope(self.k(x).view(B, L, self.kv, self.dh).transpose(1, 2))
        v = self.v(x).view(B, L, self.kv, self.dh).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(B, L, D))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.w, self.eps = nn.Parameter(1 + 0.1 * torch.randn(d)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


class GQALlama(nn.Module):
    """A Llama-3-like decoder (grouped-query attention by repeat_interleave, SDPA is_causal) on a prompt."""

    def __init__(self, vocab=2000, d=256, heads=8, kv_heads=2, layers=2, ff=688):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(nn.ModuleDict(dict(n1=RMSNorm(d), att=GQAAttention(d, heads, kv_heads), n2=RMSNorm(d),
                                                       w1=nn.Linear(d, ff, bias=False), w3=nn.Linear(d, ff, bias=False),
                                                       w2=nn.Linear(ff, d, bias=False))) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.dh = d // heads

    def forward(self, tokens):
        L = tokens.shape[1]
        inv = 1.0 / (500000.0 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        ang = torch.arange(L).float()[:, None] * inv[None]
        ang = torch.cat([ang, ang], -1)
        cos, sin = ang.cos(), ang.sin()
        h = self.emb(tokens)
        for b in self.blocks:
            h = h + b["att"](b["n1"](h), cos, sin)
            n = b["n2"](h)
            h = h + b["w2"](F.silu(b["w1"](n)) * b["w3"](n))
        return self.head(self.norm(h)[:, -1])


def m_gqa_llama():
    return GQALlama(), OrderedDict(tokens=ids(2000, 1, 64))


class Seq2SeqTransformer(nn.Module):
    """nn.Transformer translation model: padding masks from the ids, a causal target mask."""

    def __init__(self, vocab=1000, d=128):
        super().__init__()
        self.src_emb, self.tgt_emb = nn.Embedding(vocab, d, padding_idx=0), nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(64, d) * 0.02)
        self.tf = nn.Transformer(d, 4, 2, 2, 256, dropout=0.0, batch_first=True)
        self.gen = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        S, T = src.shape[1], tgt.shape[1]
        s = self.src_emb(src) * math.sqrt(128) + self.pos[:S]
        t = self.tgt_emb(tgt) * math.sqrt(128) + self.pos[:T]
        tgt_mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        out = self.tf(s, t, tgt_mask=tgt_mask, src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0,
                      memory_key_padding_mask=src == 0)
        return self.gen(out)


def m_seq2seq_transformer():
    src, tgt = ids(1000, 2, 20), ids(1000, 2, 12)
    src[1, 15:] = 0
    tgt[1, 9:] = 0
    return Seq2SeqTransformer(), OrderedDict(src=src, tgt=tgt)


class GreedyGRUDecoder(nn.Module):
    """A GRU encoder and a Bahdanau-attention GRUCell decoder, 6 greedy steps (argmax fed back as the next input)."""

    def __init__(self, vocab=500, d=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * d, d)
        self.cell = nn.GRUCell(d + 2 * d, d)
        self.wa, self.ua, self.va = nn.Linear(d, d, bias=False), nn.Linear(2 * d, d), nn.Linear(d, 1, bias=False)
        self.out = nn.Linear(d, vocab)

    def forward(self, src):
        mem, hN = self.enc(self.emb(src))
        h = torch.tanh(self.bridge(torch.cat([hN[0], hN[1]], -1)))
        keys = self.ua(mem)
        tok = torch.ones(src.shape[0], dtype=torch.long)
        toks, logits = [], []
        for _ in range(6):
            score = self.va(torch.tanh(self.wa(h)[:, None] + keys)).squeeze(-1)
            ctx = (F.softmax(score, -1)[..., None] * mem).sum(1)
            h = self.cell(torch.cat([self.emb(tok), ctx], -1), h)
            lg = self.out(h)
            tok = lg.argmax(-1)
            toks.append(tok)
            logits.append(lg)
        return torch.stack(toks, 1), torch.stack(logits, 1)


def m_gru_greedy():
    return GreedyGRUDecoder(), OrderedDict(src=ids(500, 3, 16))


def m_lstm_proj():
    class LSTMProj(nn.Module):
        """A 2-layer LSTM with projections (proj_size) and a classifier on its last step."""

        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(64, 128, num_layers=2, proj_size=32, batch_first=True)
            self.fc = nn.Linear(32, 10)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.fc(y[:, -1])

    return LSTMProj(), OrderedDict(x=f32(4, 50, 64))


class NBeatsBlock(nn.Module):
    def __init__(self, lookback, horizon, basis=None, theta=8, hidden=256):
        super().__init__()
        self.fc = nn.Sequential(nn.Linear(lookback, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                nn.Linear(hidden, hidden), nn.ReLU())
        if basis is None:
            self.theta_b, self.theta_f = nn.Linear(hidden, lookback), nn.Linear(hidden, horizon)
            self.basis_b = self.basis_f = None
        else:
            bb, bf = basis
            self.theta_b, self.theta_f = nn.Linear(hidden, bb.shape[0], bias=False), nn.Linear(hidden, bf.shape[0], bias=False)
            self.register_buffer("basis_b", bb)
            self.register_buffer("basis_f", bf)

    def forward(self, x):
        h = self.fc(x)
        b, f = self.theta_b(h), self.theta_f(h)
        if self.basis_b is not None:
            b, f = b @ self.basis_b, f @ self.basis_f
        return b, f


class NBeats(nn.Module):
    """N-BEATS: generic, trend (polynomial basis) and seasonality (Fourier basis) stacks, doubly residual."""

    def __init__(self, lookback=48, horizon=12):
        super().__init__()
        tb = torch.arange(lookback).float() / lookback
        tf = torch.arange(horizon).float() / horizon
        trend = (torch.stack([tb ** p for p in range(4)]), torch.stack([tf ** p for p in range(4)]))
        fb = [torch.ones_like(tb)] + [f(2 * math.pi * k * tb) for k in range(1, 6) for f in (torch.cos, torch.sin)]
        ff = [torch.ones_like(tf)] + [f(2 * math.pi * k * tf) for k in range(1, 6) for f in (torch.cos, torch.sin)]
        season = (torch.stack(fb), torch.stack(ff))
        self.blocks = nn.ModuleList([NBeatsBlock(lookback, horizon), NBeatsBlock(lookback, horizon),
                                     NBeatsBlock(lookback, horizon, trend), NBeatsBlock(lookback, horizon, trend),
                                     NBeatsBlock(lookback, horizon, season), NBeatsBlock(lookback, horizon, season)])

    def forward(self, x):
        forecast = 0
        for b in self.blocks:
            back, f = b(x)
            x = x - back
            forecast = forecast + f
        return forecast


def m_nbeats():
    return NBeats(), OrderedDict(x=f32(32, 48))


class TCNBlock(nn.Module):
    def __init__(self, c, hidden, dilation):
        super().__init__()
        self.inp = nn.Conv1d(c, hidden, 1)
        self.a1, self.a2 = nn.PReLU(), nn.PReLU()
        self.n1, self.n2 = nn.GroupNorm(1, hidden, eps=1e-8), nn.GroupNorm(1, hidden, eps=1e-8)
        self.dw = nn.Conv1d(hidden, hidden, 3, padding=dilation, dilation=dilation, groups=hidden)
        self.res, self.skip = nn.Conv1d(hidden, c, 1), nn.Conv1d(hidden, c, 1)

    def forward(self, x):
        h = self.n2(self.a2(self.dw(self.n1(self.a1(self.inp(x))))))
        return x + self.res(h), self.skip(h)


class ConvTasNet(nn.Module):
    """Conv-TasNet speech separation: learned encoder, TCN separator (PReLU, global layer norm), 2 masks, decoder."""

    def __init__(self, N=128, B=64, H=128, blocks=6, spk=2):
        super().__init__()
        self.enc = nn.Conv1d(1, N, 16, stride=8, bias=False)
        self.ln = nn.GroupNorm(1, N, eps=1e-8)
        self.bottleneck = nn.Conv1d(N, B, 1)
        self.tcn = nn.ModuleList(TCNBlock(B, H, 2 ** (i % 4)) for i in range(blocks))
        self.mask = nn.Sequential(nn.PReLU(), nn.Conv1d(B, spk * N, 1))
        self.dec = nn.ConvTranspose1d(N, 1, 16, stride=8, bias=False)
        self.spk, self.N = spk, N

    def forward(self, wav):
        w = F.relu(self.enc(wav))
        h = self.bottleneck(self.ln(w))
        skip = 0
        for b in self.tcn:
            h, s = b(h)
            skip = skip + s
        m = torch.sigmoid(self.mask(skip)).view(wav.shape[0], self.spk, self.N, -1)
        est = (w[:, None] * m).view(wav.shape[0] * self.spk, self.N, -1)
        return self.dec(est).view(wav.shape[0], self.spk, -1)


def m_convtasnet():
    return ConvTasNet(), OrderedDict(wav=f32(1, 1, 8000))


# ----------------------------------------------------------------------------- tabular, recommendation
class DCNv2(nn.Module):
    """DCN-v2: 8 categorical embeddings and 13 dense features, a 3-layer cross network beside an MLP."""

    def __init__(self, vocab=1000, fields=8, emb=16, dense=13, layers=3):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(vocab, emb) for _ in range(fields))
        d = fields * emb + dense
        self.cross = nn.ModuleList(nn.Linear(d, d) for _ in range(layers))
        self.deep = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU())
        self.head = nn.Linear(d + 128, 1)

    def forward(self, cat, dense):
        x0 = torch.cat([e(cat[:, i]) for i, e in enumerate(self.embs)] + [torch.log1p(dense.clamp(min=0))], -1)
        x = x0
        for layer in self.cross:
            x = x0 * layer(x) + x
        return torch.sigmoid(self.head(torch.cat([x, self.deep(x0)], -1)))


def m_dcn_v2():
    return DCNv2(), OrderedDict(cat=ids(1000, 64, 8), dense=np.abs(f32(64, 13)) * 3)


def sparsemax(z, dim=-1):
    zs, _ = torch.sort(z, dim=dim, descending=True)
    k = torch.arange(1, z.shape[dim] + 1, dtype=z.dtype)
    cs = zs.cumsum(dim)
    support = (1 + k * zs) > cs
    kz = support.sum(dim=dim, keepdim=True)
    tau = (cs.gather(dim, kz - 1) - 1) / kz.to(z.dtype)
    return torch.clamp(z - tau, min=0)


class GLUBlock(nn.Module):
    def __init__(self, din, d):
        super().__init__()
        self.fc, self.bn = nn.Linear(din, 2 * d, bias=False), nn.BatchNorm1d(2 * d)

    def forward(self, x):
        return F.glu(self.bn(self.fc(x)), -1)


class TabNet(nn.Module):
    """TabNet's decision steps: sparsemax attentive masks with a prior, GLU feature transformers."""

    def __init__(self, features=32, d=16, steps=3, gamma=1.3, classes=4):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)
        self.shared = GLUBlock(features, 2 * d)
        self.steps = nn.ModuleList(GLUBlock(2 * d, 2 * d) for _ in range(steps + 1))
        self.att = nn.ModuleList(nn.Sequential(nn.Linear(d, features, bias=False), nn.BatchNorm1d(features)) for _ in range(steps))
        self.head = nn.Linear(d, classes)
        self.d, self.gamma = d, gamma

    def forward(self, x):
        x = self.bn(x)
        prior = torch.ones_like(x)
        h = self.steps[0](self.shared(x))
        a = h[:, self.d:]
        out = 0
        for i, att in enumerate(self.att):
            mask = sparsemax(att(a) * prior)
            prior = prior * (self.gamma - mask)
            h = self.steps[i + 1](self.shared(mask * x))
            out = out + F.relu(h[:, : self.d])
            a = h[:, self.d:]
        return self.head(out)


def m_tabnet():
    return randomize_bn(TabNet()), OrderedDict(x=f32(64, 32))


class KANLinear(nn.Module):
    """An efficient-KAN layer: cubic B-spline bases on a uniform grid (Cox-de Boor), plus a SiLU base branch."""

    def __init__(self, din, dout, grid=5, order=3):
        super().__init__()
        h = 2.0 / grid
        self.register_buffer("grid", (torch.arange(-order, grid + order + 1).float() * h - 1).expand(din, -1).contiguous())
        self.base = nn.Linear(din, dout)
        self.spline = nn.Parameter(torch.randn(dout, din, grid + order) * 0.1)
        self.order = order

    def forward(self, x):
        g_, xe = self.grid, x[..., None]
        b = ((xe >= g_[:, :-1]) & (xe < g_[:, 1:])).to(x.dtype)
        for k in range(1, self.order + 1):
            b = (xe - g_[:, : -(k + 1)]) / (g_[:, k:-1] - g_[:, : -(k + 1)]) * b[..., :-1] + \
                (g_[:, k + 1:] - xe) / (g_[:, k + 1:] - g_[:, 1:-k]) * b[..., 1:]
        return self.base(F.silu(x)) + torch.einsum("bik,oik->bo", b, self.spline)


def m_kan():
    class KAN(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = KANLinear(16, 64), KANLinear(64, 8)

        def forward(self, x):
            return self.l2(torch.tanh(self.l1(x)))

    return KAN(), OrderedDict(x=np.tanh(f32(128, 16)))


# ----------------------------------------------------------------------------- vision, unusual structure
def squash(s, dim=-1):
    n2 = (s * s).sum(dim, keepdim=True)
    return n2 / (1 + n2) * s / torch.sqrt(n2 + 1e-8)


class CapsNet(nn.Module):
    """Capsule network on MNIST-sized input: primary capsules, 3 iterations of dynamic routing."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 64, 9)
        self.prim = nn.Conv2d(64, 8 * 16, 9, stride=2)
        self.W = nn.Parameter(torch.randn(1, 16 * 6 * 6, 10, 16, 8) * 0.05)

    def forward(self, x):
        B = x.shape[0]
        u = F.relu(self.conv(x))
        u = self.prim(u).view(B, 8, 16 * 6 * 6).transpose(1, 2)
        u = squash(u)
        u_hat = (self.W @ u[:, :, None, :, None]).squeeze(-1)  # [B, 576, 10, 16]
        blog = torch.zeros(B, 16 * 6 * 6, 10)
        for it in range(3):
            c = F.softmax(blog, dim=2)
            v = squash((c[..., None] * u_hat).sum(1))  # [B, 10, 16]
            if it < 2:
                blog = blog + (u_hat * v[:, None]).sum(-1)
        return v.norm(dim=-1)


def m_capsnet():
    return CapsNet(), OrderedDict(x=f32(4, 1, 28, 28))


class MobileViTBlock(nn.Module):
    def __init__(self, c=64, d=96, layers=2, p=2):
        super().__init__()
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.SiLU(), nn.Conv2d(c, d, 1, bias=False))
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, activation=F.silu, batch_first=True, norm_first=True)
        self.tf = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Sequential(nn.Conv2d(d, c, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.fuse = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.p = p

    def forward(self, x):
        B, _, H, W = x.shape
        p = self.p
        y = self.local(x)
        D = y.shape[1]
        # unfold into p*p interleaved sequences of patches, run the transformer, fold back
        y = y.reshape(B, D, H // p, p, W // p, p).permute(0, 3, 5, 2, 4, 1).reshape(B * p * p, (H // p) * (W // p), D)
        y = self.norm(self.tf(y))
        y = y.reshape(B, p, p, H // p, W // p, D).permute(0, 5, 3, 1, 4, 2).reshape(B, D, H, W)
        return self.fuse(torch.cat([x, self.proj(y)], 1))


class MobileViTish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU(),
                                  nn.Conv2d(32, 64, 3, 2, 1, bias=False), nn.BatchNorm2d(64), nn.SiLU())
        self.b1 = MobileViTBlock(64, 96)
        self.down = nn.Sequential(nn.Conv2d(64, 96, 3, 2, 1, bias=False), nn.BatchNorm2d(96), nn.SiLU())
        self.b2 = MobileViTBlock(96, 128)
        self.head = nn.Linear(96, 100)

    def forward(self, x):
        h = self.b2(self.down(self.b1(self.stem(x))))
        return self.head(h.mean((2, 3)))


def m_mobilevit():
    return randomize_bn(MobileViTish()), OrderedDict(x=f32(1, 3, 128, 128))


class YoloV8Head(nn.Module):
    """YOLOv8's decoupled head and box decoding: DFL (softmax over 16 bins, expectation), anchors made from the
    feature shapes, dist2bbox, class sigmoids; three levels of a 256x256 image."""

    def __init__(self, chs=(64, 128, 256), nc=20, reg=16):
        super().__init__()
        c2, c3 = max(16, chs[0] // 4, reg * 4), max(chs[0], nc)

        def cbs(a, b):
            return nn.Sequential(nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.SiLU())

        self.box = nn.ModuleList(nn.Sequential(cbs(c, c2), cbs(c2, c2), nn.Conv2d(c2, 4 * reg, 1)) for c in chs)
        self.cls = nn.ModuleList(nn.Sequential(cbs(c, c3), cbs(c3, c3), nn.Conv2d(c3, nc, 1)) for c in chs)
        self.register_buffer("bins", torch.arange(reg).float())
        self.reg, self.strides = reg, (8, 16, 32)

    def forward(self, p3, p4, p5):
        boxes, scores, anchors, strides = [], [], [], []
        for i, x in enumerate((p3, p4, p5)):
            B, _, H, W = x.shape
            boxes.append(self.box[i](x).flatten(2))
            scores.append(self.cls[i](x).flatten(2))
            sy, sx = torch.meshgrid(torch.arange(H).float() + 0.5, torch.arange(W).float() + 0.5, indexing="ij")
            anchors.append(torch.stack([sx, sy], -1).view(-1, 2))
            strides.append(torch.full((H * W, 1), float(self.strides[i])))
        box = torch.cat(boxes, 2)
        B, _, A = box.shape
        dist = (box.view(B, 4, self.reg, A).softmax(2) * self.bins[None, None, :, None]).sum(2)  # [B, 4, A]
        anc = torch.cat(anchors).t()[None]
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = anc - lt, anc + rb
        xywh = torch.cat([(x1y1 + x2y2) / 2, x2y2 - x1y1], 1) * torch.cat(strides).t()[None]
        return torch.cat([xywh, torch.cat(scores, 2).sigmoid()], 1)


def m_yolov8_head():
    return randomize_bn(YoloV8Head()), OrderedDict(p3=f32(1, 64, 32, 32), p4=f32(1, 128, 16, 16), p5=f32(1, 256, 8, 8))


# ----------------------------------------------------------------------------- a GPT served at any length
class MaskedGptBlock(nn.Module):
    """GPT-2's attention as its older Hugging Face code writes it: a causal mask registered as a
    buffer of the whole context, sliced [:seq, :seq] per call."""

    def __init__(self, dim=128, heads=4, context=128):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.register_buffer("bias", torch.tril(torch.ones(context, context, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        scores = scores.masked_fill(~self.bias[:t, :t], float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class MaskedGpt(nn.Module):
    def __init__(self, vocab=1000, dim=128, layers=2, context=128):
        super().__init__()
        self.token, self.position = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(MaskedGptBlock(dim, 4, context) for _ in range(layers))
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.token(ids) + self.position(torch.arange(ids.shape[1]))[None]
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def m_gpt_masked_dyn():
    return MaskedGpt().eval(), OrderedDict(ids=np.random.randint(0, 1000, size=(2, 48)).astype(np.int64))


MODELS = OrderedDict([
    ("inception_v3", dict(fn=m_inception_v3, pt2=True, bench_n=20)),
    ("efficientnet_v2_s", dict(fn=tv("efficientnet_v2_s"), pt2=True, bench_n=20)),
    ("maxvit_t", dict(fn=tv("maxvit_t"), pt2=True, bench_n=10)),
    ("swin_v2_t", dict(fn=tv("swin_v2_t"), pt2=True, bench_n=10)),
    ("regnet_x_800mf", dict(fn=tv("regnet_x_800mf"), pt2=True, bench_n=20)),
    ("lraspp_mbv3", dict(fn=m_lraspp, pt2=True)),
    ("raft_small", dict(fn=m_raft_small, pt2=True, opset=17, bench_n=20)),
    ("sd_unet", dict(fn=m_sd_unet, pt2=True)),
    ("dit_s", dict(fn=m_dit, pt2=True)),
    ("realnvp", dict(fn=m_realnvp, pt2=True)),
    ("pixelcnn", dict(fn=m_pixelcnn, pt2=True)),
    ("mamba_scan", dict(fn=m_mamba_scan, pt2=True)),
    ("gqa_llama", dict(fn=m_gqa_llama, pt2=True)),
    ("seq2seq_transformer", dict(fn=m_seq2seq_transformer, pt2=True)),
    ("gru_greedy", dict(fn=m_gru_greedy, pt2=True)),
    ("lstm_proj", dict(fn=m_lstm_proj, pt2=True)),
    ("nbeats", dict(fn=m_nbeats, pt2=True)),
    ("convtasnet", dict(fn=m_convtasnet, pt2=True)),
    ("dcn_v2", dict(fn=m_dcn_v2, pt2=True)),
    ("tabnet", dict(fn=m_tabnet, pt2=True)),
    ("kan", dict(fn=m_kan, pt2=True)),
    ("capsnet", dict(fn=m_capsnet, pt2=True)),
    ("mobilevit", dict(fn=m_mobilevit, pt2=True)),
    ("yolov8_head", dict(fn=m_yolov8_head, pt2=True)),
    # exported with a dynamic batch and length; the other size is batch 1, 100 tokens
    ("gpt_masked_dyn", dict(fn=m_gpt_masked_dyn, pt2=True, dynamic=dict(
        axes={"ids": {0: "batch", 1: "seq"}}, out={"y": {0: "batch", 1: "seq"}},
        alt=lambda i: OrderedDict(ids=np.random.randint(0, 1000, size=(1, 100)).astype(np.int64))))),
])
