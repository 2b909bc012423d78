"""The second set of models of bench/new_user_trial.py (`--set 2`): families the first set has not
got, written as a user would write them. This file holds model definitions only; the harness
(export, ONNX Runtime, `kiln run`, `kiln bench`, comparisons) is new_user_trial.py's, and so are the
helpers g, f32, randomize_bn and tv. Each entry of MODELS is dict(fn=..., pt2=..., opset=...,
bench_n=..., dynamic=...) as in the first set: fn() returns (module, OrderedDict of numpy inputs).
After the models come variants written around a PyTorch ONNX-export gap (so that Kiln's ONNX path
runs the same computation) and single-op probes (probe=True, named probe_*): the op kinds that made a
model slow, alone at that model's shape, to time the same way."""
import math
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from new_user_trial import f32, g, randomize_bn, tv  # noqa: F401  (one set of helpers for both sets)


def tvv(name, shape=(1, 3, 8, 64, 64)):
    """A torchvision video model (random init), on a small clip."""
    def f():
        import torchvision
        return randomize_bn(getattr(torchvision.models.video, name)(weights=None)), OrderedDict(x=f32(*shape))
    return f


def variant_of(base, cls):
    """A variant written around an export gap: `cls` with the weights of `base()`'s model, on its inputs."""
    m, inputs = base()
    variant = cls()
    variant.load_state_dict(m.state_dict())
    return variant, inputs


# ----------------------------------------------------------------------------- video / 3-D
class Block3d(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True),
                                 nn.Conv3d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.net(x)


class UNet3D(nn.Module):
    def __init__(self, cin=1, ncls=3, c=(8, 16, 32)):
        super().__init__()
        self.e1, self.e2, self.mid = Block3d(cin, c[0]), Block3d(c[0], c[1]), Block3d(c[1], c[2])
        self.pool = nn.MaxPool3d(2)
        self.up2 = nn.ConvTranspose3d(c[2], c[1], 2, stride=2)
        self.d2 = Block3d(2 * c[1], c[1])
        self.up1 = nn.ConvTranspose3d(c[1], c[0], 2, stride=2)
        self.d1 = Block3d(2 * c[0], c[0])
        self.head = nn.Conv3d(c[0], ncls, 1)
        self.deep = nn.Conv3d(c[2], ncls, 1)  # deep supervision from the bottleneck, upsampled trilinearly

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.d2(torch.cat([self.up2(m), e2], 1))
        d1 = self.d1(torch.cat([self.up1(d2), e1], 1))
        deep = F.interpolate(self.deep(m), size=x.shape[2:], mode="trilinear", align_corners=False)
        return self.head(d1) + deep


def m_unet3d():
    return randomize_bn(UNet3D()), OrderedDict(x=f32(1, 1, 16, 32, 32))


# ----------------------------------------------------------------------------- token mixing
class MixerBlock(nn.Module):
    def __init__(self, n, d, tok=256, ch=1024):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.tok = nn.Sequential(nn.Linear(n, tok), nn.GELU(), nn.Linear(tok, n))
        self.ch = nn.Sequential(nn.Linear(d, ch), nn.GELU(), nn.Linear(ch, d))

    def forward(self, x):
        x = x + self.tok(self.ln1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.ln2(x))


class MLPMixer(nn.Module):
    def __init__(self, img=128, p=16, d=256, depth=4, ncls=100):
        super().__init__()
        n = (img // p) ** 2
        self.stem = nn.Conv2d(3, d, p, stride=p)
        self.blocks = nn.Sequential(*[MixerBlock(n, d) for _ in range(depth)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, ncls)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.ln(self.blocks(x)).mean(1))


def m_mlp_mixer():
    return randomize_bn(MLPMixer()), OrderedDict(x=f32(1, 3, 128, 128))


class SGU(nn.Module):
    def __init__(self, dff, n):
        super().__init__()
        self.ln = nn.LayerNorm(dff // 2)
        self.proj = nn.Conv1d(n, n, 1)  # mixes along the sequence, as the gMLP paper's code does
        with torch.no_grad():
            self.proj.weight.mul_(0.1)
            self.proj.bias.fill_(1.0)

    def forward(self, x):
        u, v = x.chunk(2, dim=-1)
        return u * self.proj(self.ln(v))


class GMLPBlock(nn.Module):
    def __init__(self, d, dff, n):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, dff), nn.Linear(dff // 2, d)
        self.sgu = SGU(dff, n)

    def forward(self, x):
        return x + self.fc2(self.sgu(F.gelu(self.fc1(self.ln(x)))))


class GMLP(nn.Module):
    def __init__(self, vocab=1000, n=128, d=128, dff=512, depth=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.Sequential(*[GMLPBlock(d, dff, n) for _ in range(depth)])
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(self.blocks(self.emb(ids)))


def m_gmlp():
    return randomize_bn(GMLP()), OrderedDict(ids=np.random.randint(0, 1000, size=(2, 128)).astype(np.int64))


class FNetBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = self.ln1(x + torch.fft.fft2(x).real)  # the FNet token mixing: 2-D DFT over (seq, hidden), real part
        return self.ln2(x + self.ff(x))


class FNet(nn.Module):
    def __init__(self, d=128, depth=2):
        super().__init__()
        self.blocks = nn.Sequential(*[FNetBlock(d) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(x)


def m_fnet():
    return randomize_bn(FNet()), OrderedDict(x=f32(1, 64, 128))


class Perceiver(nn.Module):
    """Learned latents cross-attend to a long input array, then self-attend; class logits from the mean."""

    def __init__(self, cin=32, d=128, n_lat=64, h=4, ncls=10):
        super().__init__()
        self.latents = nn.Parameter(torch.randn(n_lat, d) * 0.5)
        self.inp = nn.Linear(cin, d)
        self.ln_x, self.ln_l = nn.LayerNorm(d), nn.LayerNorm(d)
        self.cross = nn.MultiheadAttention(d, 1, batch_first=True)
        self.self_layers = nn.ModuleList(nn.TransformerEncoderLayer(d, h, 2 * d, dropout=0.0, batch_first=True,
                                                                    norm_first=True) for _ in range(2))
        self.ff = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.head = nn.Linear(d, ncls)

    def forward(self, x):
        kv = self.ln_x(self.inp(x))
        lat = self.latents.unsqueeze(0).expand(x.shape[0], -1, -1)
        q = self.ln_l(lat)
        lat = lat + self.cross(q, kv, kv, need_weights=False)[0]
        lat = lat + self.ff(lat)
        for layer in self.self_layers:
            lat = layer(lat)
        return self.head(lat.mean(1))


def m_perceiver():
    return randomize_bn(Perceiver()), OrderedDict(x=f32(2, 1024, 32))


# ----------------------------------------------------------------------------- decoders / attention
class DETRHead(nn.Module):
    def __init__(self, d=128, h=4, nq=50, ncls=21, layers=2):
        super().__init__()
        self.query = nn.Embedding(nq, d)
        self.proj = nn.Conv2d(256, d, 1)
        self.row, self.col = nn.Embedding(32, d // 2), nn.Embedding(32, d // 2)
        dec = nn.TransformerDecoderLayer(d, h, 4 * d, dropout=0.0, batch_first=True)
        self.dec = nn.TransformerDecoder(dec, layers, norm=nn.LayerNorm(d))
        self.cls = nn.Linear(d, ncls + 1)
        self.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def forward(self, feat):
        B, _, H, W = feat.shape
        src = self.proj(feat)
        pos = torch.cat([self.col.weight[:W].unsqueeze(0).expand(H, -1, -1),
                         self.row.weight[:H].unsqueeze(1).expand(-1, W, -1)], -1).flatten(0, 1)
        mem = src.flatten(2).transpose(1, 2) + pos
        tgt = self.query.weight.unsqueeze(0).expand(B, -1, -1)
        hs = self.dec(tgt, mem)
        return self.cls(hs).softmax(-1), self.box(hs).sigmoid()


def m_detr_decoder():
    return randomize_bn(DETRHead()), OrderedDict(feat=f32(1, 256, 16, 20))


class PadMaskEncoder(nn.Module):
    def __init__(self, vocab=1000, d=128, h=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 5)

    def forward(self, ids, pad_mask):
        return self.head(self.enc(self.emb(ids), src_key_padding_mask=pad_mask))


def m_tx_encoder_padmask():
    mask = np.zeros((2, 48), dtype=bool)
    mask[0, 40:] = True
    mask[1, 29:] = True
    return randomize_bn(PadMaskEncoder()), OrderedDict(ids=np.random.randint(0, 1000, size=(2, 48)).astype(np.int64),
                                                       pad_mask=mask)


class GPT2Block(nn.Module):
    """One GPT-2 block, one decode step: the new token's k/v are appended to the past ones (returned as present)."""

    def __init__(self, d=256, h=4):
        super().__init__()
        self.h, self.dh = h, d // h
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x, past_k, past_v):
        B, T, D = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, self.h, self.dh).transpose(1, 2) for t in (q, k, v))
        k = torch.cat([past_k, k], dim=-2)
        v = torch.cat([past_v, v], dim=-2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.dh)
        a = torch.matmul(F.softmax(w, dim=-1), v).transpose(1, 2).reshape(B, T, D)
        x = x + self.c_proj(a)
        return x + self.mlp(self.ln_2(x)), k, v


def m_gpt2_past_kv():
    return randomize_bn(GPT2Block()), OrderedDict(x=f32(1, 1, 256), past_k=f32(1, 4, 63, 64), past_v=f32(1, 4, 63, 64))


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class LlamaDecode(nn.Module):
    """A Llama-style decode step: RMSNorm, RoPE at position `pos`, the new k/v written into a fixed-size KV
    cache at `pos` (index_copy_), a mask built in-graph from arange <= pos, SwiGLU MLP."""

    def __init__(self, d=256, h=4, max_len=128):
        super().__init__()
        self.h, self.dh, self.max_len = h, d // h, max_len
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3, self.w2 = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False), nn.Linear(2 * d, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.dh, 2).float() / self.dh))
        self.register_buffer("inv_freq", inv)

    def forward(self, x, pos, k_cache, v_cache):
        B, T, D = x.shape
        hN = self.norm1(x)
        q = self.wq(hN).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.wk(hN).view(B, T, self.h, self.dh).transpose(1, 2)
        v = self.wv(hN).view(B, T, self.h, self.dh).transpose(1, 2)
        ang = pos.float()[:, None] * self.inv_freq[None, :]  # [T, dh/2]
        emb = torch.cat([ang, ang], -1)
        q, k = rope(q, emb.cos(), emb.sin()), rope(k, emb.cos(), emb.sin())
        k_cache, v_cache = self.write_cache(k_cache, v_cache, pos, k, v)
        keep = torch.arange(self.max_len)[None, :] <= pos[:, None]  # [T, max_len]
        s = (q @ k_cache.transpose(-1, -2)) / math.sqrt(self.dh)
        s = s.masked_fill(~keep, float("-inf"))
        a = (F.softmax(s, -1) @ v_cache).transpose(1, 2).reshape(B, T, D)
        x = x + self.wo(a)
        y = self.norm2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y)), k_cache, v_cache

    def write_cache(self, k_cache, v_cache, pos, k, v):
        return k_cache.index_copy(2, pos, k), v_cache.index_copy(2, pos, v)


def m_llama_kvcache():
    return LlamaDecode(), OrderedDict(x=f32(1, 1, 256), pos=np.array([37], dtype=np.int64),
                                      k_cache=f32(1, 4, 128, 64), v_cache=f32(1, 4, 128, 64))


class LlamaSliceAssign(LlamaDecode):
    """The same step with the cache written by slice assignment, as many hand-written decoders do."""

    def write_cache(self, k_cache, v_cache, pos, k, v):
        k_cache, v_cache = k_cache.clone(), v_cache.clone()
        k_cache[:, :, pos] = k
        v_cache[:, :, pos] = v
        return k_cache, v_cache


def m_llama_slice_assign():
    return variant_of(m_llama_kvcache, LlamaSliceAssign)


class LlamaPrefill(LlamaDecode):
    """Prefill of a prompt: causal mask from torch.triu of a -inf matrix, RoPE over arange(T)."""

    def forward(self, x):
        B, T, D = x.shape
        hN = self.norm1(x)
        q = self.wq(hN).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.wk(hN).view(B, T, self.h, self.dh).transpose(1, 2)
        v = self.wv(hN).view(B, T, self.h, self.dh).transpose(1, 2)
        ang = torch.arange(T, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat([ang, ang], -1)
        q, k = rope(q, emb.cos(), emb.sin()), rope(k, emb.cos(), emb.sin())
        mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh) + mask
        a = (F.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.wo(a)
        y = self.norm2(x)
        return x + self.w2(F.silu(self.w1(y)) * self.w3(y))


def m_llama_prefill():
    return LlamaPrefill(), OrderedDict(x=f32(1, 64, 256))


def alibi_slopes(h):
    start = 2 ** (-(2 ** -(math.log2(h) - 3)))
    return torch.tensor([start * start ** i for i in range(h)])


class ALiBiAttn(nn.Module):
    """BLOOM/MPT-style attention: a per-head linear distance bias instead of position embeddings, causal."""

    def __init__(self, d=256, h=8):
        super().__init__()
        self.h, self.dh = h, d // h
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln = nn.LayerNorm(d)
        self.register_buffer("slopes", alibi_slopes(h))

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(self.ln(x)).view(B, L, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        i = torch.arange(L)
        dist = (i[None, :] - i[:, None]).float()  # j - i, <= 0 on the causal side
        bias = self.slopes[:, None, None] * dist[None]
        bias = bias.masked_fill(i[None, :] > i[:, None], float("-inf"))
        s = q @ k.transpose(-1, -2) / math.sqrt(self.dh) + bias
        return x + self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(B, L, D))


def m_alibi_attn():
    return randomize_bn(ALiBiAttn()), OrderedDict(x=f32(2, 64, 256))


# ----------------------------------------------------------------------------- HF-style details
class SentenceEncoder(nn.Module):
    """RoBERTa-like: position ids from the cumsum of the attention mask (padding_idx 1), one encoder layer,
    masked mean pooling and F.normalize (a sentence-embedding model)."""

    def __init__(self, vocab=2000, d=128, h=4, max_pos=130):
        super().__init__()
        self.word = nn.Embedding(vocab, d, padding_idx=1)
        self.pos = nn.Embedding(max_pos, d, padding_idx=1)
        self.ln = nn.LayerNorm(d, eps=1e-5)
        self.layer = nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.0, activation="gelu", batch_first=True)

    def forward(self, input_ids, attention_mask):
        m = attention_mask.to(torch.int64)
        pos_ids = torch.cumsum(m, dim=1) * m + 1
        x = self.ln(self.word(input_ids) + self.pos(pos_ids))
        x = self.layer(x, src_key_padding_mask=attention_mask == 0)
        mf = attention_mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * mf).sum(1) / mf.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)


def m_sentence_embed():
    ids = np.random.randint(3, 2000, size=(3, 40)).astype(np.int64)
    am = np.ones((3, 40), dtype=np.int64)
    am[1, 25:] = 0
    am[2, 12:] = 0
    ids[am == 0] = 1
    return randomize_bn(SentenceEncoder()), OrderedDict(input_ids=ids, attention_mask=am)


# ----------------------------------------------------------------------------- point / implicit
class TNet(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.conv = nn.Sequential(nn.Conv1d(k, 64, 1), nn.BatchNorm1d(64), nn.ReLU(), nn.Conv1d(64, 128, 1),
                                  nn.BatchNorm1d(128), nn.ReLU(), nn.Conv1d(128, 512, 1), nn.BatchNorm1d(512), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, k * k))

    def forward(self, x):
        t = self.fc(self.conv(x).max(2)[0])
        return t.view(-1, self.k, self.k) + torch.eye(self.k)


class PointNet(nn.Module):
    def __init__(self, ncls=16):
        super().__init__()
        self.tnet = TNet(3)
        self.mlp1 = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(), nn.Conv1d(64, 64, 1),
                                  nn.BatchNorm1d(64), nn.ReLU())
        self.mlp2 = nn.Sequential(nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(), nn.Conv1d(128, 1024, 1),
                                  nn.BatchNorm1d(1024))
        self.head = nn.Sequential(nn.Linear(1024, 512), nn.BatchNorm1d(512), nn.ReLU(), nn.Linear(512, 256),
                                  nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, ncls))

    def forward(self, pts):
        x = torch.bmm(self.tnet(pts), pts)
        x = self.mlp2(self.mlp1(x))
        return F.log_softmax(self.head(torch.max(x, 2, keepdim=False)[0]), dim=1)


def m_pointnet():
    return randomize_bn(PointNet()), OrderedDict(pts=f32(2, 3, 1024))


def posenc(x, n):
    f = 2.0 ** torch.arange(n, dtype=torch.float32) * math.pi
    xb = x[..., None] * f  # [..., 3, n]
    return torch.cat([x, torch.sin(xb).flatten(-2), torch.cos(xb).flatten(-2)], -1)


class NeRF(nn.Module):
    def __init__(self, W=128, Lx=10, Ld=4):
        super().__init__()
        self.Lx, self.Ld = Lx, Ld
        cx, cd = 3 + 6 * Lx, 3 + 6 * Ld
        self.l1 = nn.ModuleList([nn.Linear(cx, W)] + [nn.Linear(W, W) for _ in range(3)])
        self.l2 = nn.ModuleList([nn.Linear(W + cx, W)] + [nn.Linear(W, W) for _ in range(3)])
        self.sigma, self.feat = nn.Linear(W, 1), nn.Linear(W, W)
        self.rgb = nn.Sequential(nn.Linear(W + cd, W // 2), nn.ReLU(), nn.Linear(W // 2, 3), nn.Sigmoid())

    def forward(self, xyz, dirs):
        ex = posenc(xyz, self.Lx)
        h = ex
        for lin in self.l1:
            h = F.relu(lin(h))
        h = torch.cat([h, ex], -1)  # the skip connection
        for lin in self.l2:
            h = F.relu(lin(h))
        d = F.normalize(dirs, dim=-1)
        return F.softplus(self.sigma(h)), self.rgb(torch.cat([self.feat(h), posenc(d, self.Ld)], -1))


def m_nerf():
    return NeRF(), OrderedDict(xyz=f32(4096, 3) * 0.5, dirs=f32(4096, 3))


class SineLayer(nn.Module):
    def __init__(self, cin, cout, first=False, w0=30.0):
        super().__init__()
        self.w0, self.lin = w0, nn.Linear(cin, cout)
        with torch.no_grad():
            b = 1 / cin if first else math.sqrt(6 / cin) / w0
            self.lin.weight.uniform_(-b, b)

    def forward(self, x):
        return torch.sin(self.w0 * self.lin(x))


class SIREN(nn.Module):
    def __init__(self, W=256):
        super().__init__()
        self.net = nn.Sequential(SineLayer(2, W, first=True), SineLayer(W, W), SineLayer(W, W), SineLayer(W, W),
                                 nn.Linear(W, 3))

    def forward(self, coords):
        return self.net(coords)


def m_siren():
    return SIREN(), OrderedDict(coords=np.random.uniform(-1, 1, size=(4096, 2)).astype(np.float32))


# ----------------------------------------------------------------------------- audio / sequence
class WaveNetLayer(nn.Module):
    def __init__(self, c, skip, dil):
        super().__init__()
        self.dil = dil
        self.conv = nn.Conv1d(c, 2 * c, 2, dilation=dil)
        self.res, self.skip = nn.Conv1d(c, c, 1), nn.Conv1d(c, skip, 1)

    def forward(self, x):
        h = self.conv(F.pad(x, (self.dil, 0)))  # causal: pad on the left only
        a, b = h.chunk(2, 1)
        z = torch.tanh(a) * torch.sigmoid(b)
        return x + self.res(z), self.skip(z)


class WaveNet(nn.Module):
    def __init__(self, cin=80, c=64, skip=128, q=256, layers=10):
        super().__init__()
        self.inp = nn.Conv1d(cin, c, 1)
        self.layers = nn.ModuleList(WaveNetLayer(c, skip, 2 ** (i % 10)) for i in range(layers))
        self.out = nn.Sequential(nn.ReLU(), nn.Conv1d(skip, skip, 1), nn.ReLU(), nn.Conv1d(skip, q, 1))

    def forward(self, x):
        x = self.inp(x)
        s = 0
        for layer in self.layers:
            x, sk = layer(x)
            s = s + sk
        return F.log_softmax(self.out(s), dim=1)


def m_wavenet():
    return WaveNet(), OrderedDict(x=f32(1, 80, 1024))


class CRNN(nn.Module):
    def __init__(self, nclass=37, nh=128):
        super().__init__()

        def cbr(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(True)]
        self.cnn = nn.Sequential(*cbr(1, 32), nn.MaxPool2d(2), *cbr(32, 64), nn.MaxPool2d(2), *cbr(64, 128),
                                 nn.MaxPool2d((2, 1)), *cbr(128, 128), nn.MaxPool2d((4, 1)))
        self.rnn = nn.LSTM(128, nh, num_layers=2, bidirectional=True, batch_first=False)
        self.fc = nn.Linear(2 * nh, nclass)

    def forward(self, x):
        f = self.cnn(x).squeeze(2).permute(2, 0, 1)  # [T, B, C]
        out, _ = self.rnn(f)
        return F.log_softmax(self.fc(out), dim=2)


def m_crnn():
    return randomize_bn(CRNN()), OrderedDict(x=f32(2, 1, 32, 128))


# ----------------------------------------------------------------------------- restoration / generation
class EDSRBlock(nn.Module):
    def __init__(self, c, scale=0.1):
        super().__init__()
        self.c1, self.c2, self.scale = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1), scale

    def forward(self, x):
        return x + self.c2(F.relu(self.c1(x))) * self.scale


class EDSR(nn.Module):
    def __init__(self, c=64, nb=8, r=2):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1))
        self.head = nn.Conv2d(3, c, 3, padding=1)
        self.body = nn.Sequential(*[EDSRBlock(c) for _ in range(nb)], nn.Conv2d(c, c, 3, padding=1))
        self.up = nn.Sequential(nn.Conv2d(c, c * r * r, 3, padding=1), nn.PixelShuffle(r), nn.Conv2d(c, 3, 3, padding=1))

    def forward(self, x):
        x = self.head(x - self.mean)
        return self.up(x + self.body(x)) + self.mean


def m_edsr():
    return EDSR(), OrderedDict(x=f32(1, 3, 48, 48))


class DoubleConv(nn.Sequential):
    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet2D(nn.Module):
    def __init__(self, cin=3, ncls=2, c=(16, 32, 64, 128)):
        super().__init__()
        self.downs = nn.ModuleList()
        prev = cin
        for ch in c:
            self.downs.append(DoubleConv(prev, ch))
            prev = ch
        self.bott = DoubleConv(c[-1], 2 * c[-1])
        self.ups, self.dcs = nn.ModuleList(), nn.ModuleList()
        prev = 2 * c[-1]
        for ch in reversed(c):
            self.ups.append(nn.ConvTranspose2d(prev, ch, 2, stride=2))
            self.dcs.append(DoubleConv(2 * ch, ch))
            prev = ch
        self.out = nn.Conv2d(c[0], ncls, 1)

    def forward(self, x):
        skips = []
        for d in self.downs:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bott(x)
        for up, dc, s in zip(self.ups, self.dcs, reversed(skips)):
            x = dc(torch.cat([s, up(x)], 1))
        return self.out(x)


def m_unet2d():
    return randomize_bn(UNet2D()), OrderedDict(x=f32(1, 3, 128, 128))


class DCGANGen(nn.Module):
    def __init__(self, nz=100, ngf=64):
        super().__init__()

        def up(cin, cout, s=2, p=1):
            return [nn.ConvTranspose2d(cin, cout, 4, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]
        self.net = nn.Sequential(*up(nz, ngf * 8, 1, 0), *up(ngf * 8, ngf * 4), *up(ngf * 4, ngf * 2), *up(ngf * 2, ngf),
                                 nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, z):
        return self.net(z)


def m_dcgan():
    return randomize_bn(DCGANGen()), OrderedDict(z=f32(4, 100, 1, 1))


# ----------------------------------------------------------------------------- graph / tabular / recsys
class GATLayer(nn.Module):
    """GAT: per-edge attention logits, a softmax over each node's incoming edges by scatter_reduce('amax') and
    scatter_add, messages summed with index_add_."""

    def __init__(self, cin, cout, h=4):
        super().__init__()
        self.h, self.c = h, cout
        self.lin = nn.Linear(cin, h * cout, bias=False)
        self.a_src, self.a_dst = nn.Parameter(torch.randn(1, h, cout) * 0.3), nn.Parameter(torch.randn(1, h, cout) * 0.3)
        self.bias = nn.Parameter(torch.zeros(h * cout))

    def forward(self, x, src, dst):
        N = x.shape[0]
        hx = self.lin(x).view(N, self.h, self.c)
        e = F.leaky_relu((hx * self.a_src).sum(-1)[src] + (hx * self.a_dst).sum(-1)[dst], 0.2)  # [E, h]
        idx = dst.unsqueeze(-1).expand(-1, self.h)
        emax = torch.full((N, self.h), -1e9).scatter_reduce(0, idx, e, reduce="amax", include_self=True)
        p = torch.exp(e - emax[dst])
        den = torch.zeros(N, self.h).scatter_add(0, idx, p)
        alpha = p / den[dst].clamp(min=1e-16)
        out = torch.zeros(N, self.h, self.c).index_add(0, dst, hx[src] * alpha.unsqueeze(-1))
        return out.reshape(N, self.h * self.c) + self.bias


class GAT(nn.Module):
    def __init__(self, cin=64, hid=32, ncls=7):
        super().__init__()
        self.g1, self.g2 = GATLayer(cin, hid, 4), GATLayer(4 * hid, ncls, 1)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        return F.log_softmax(self.g2(F.elu(self.g1(x, src, dst)), src, dst), -1)


def m_gat():
    N, E = 300, 1200
    ei = np.random.randint(0, N, size=(2, E)).astype(np.int64)
    ei = np.concatenate([ei, np.stack([np.arange(N), np.arange(N)])], 1)  # self loops
    return GAT(), OrderedDict(x=f32(N, 64), edge_index=ei)


class FTTransformer(nn.Module):
    def __init__(self, n_num=8, cards=(10, 20, 5, 50), d=64, h=4, layers=2):
        super().__init__()
        self.num_w, self.num_b = nn.Parameter(torch.randn(n_num, d) * 0.5), nn.Parameter(torch.randn(n_num, d) * 0.1)
        self.register_buffer("offsets", torch.tensor([0] + list(np.cumsum(cards)[:-1]), dtype=torch.long))
        self.cat = nn.Embedding(sum(cards), d)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.5)
        layer = nn.TransformerEncoderLayer(d, h, 2 * d, dropout=0.0, activation="relu", batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, x_num, x_cat):
        tok = torch.cat([x_num.unsqueeze(-1) * self.num_w + self.num_b, self.cat(x_cat + self.offsets)], 1)
        tok = torch.cat([self.cls.expand(x_num.shape[0], -1, -1), tok], 1)
        return self.head(self.enc(tok)[:, 0])


def m_ft_transformer():
    cat = np.stack([np.random.randint(0, c, size=32) for c in (10, 20, 5, 50)], 1).astype(np.int64)
    return randomize_bn(FTTransformer()), OrderedDict(x_num=f32(32, 8), x_cat=cat)


class WideDeep(nn.Module):
    """Wide & Deep: a wide linear part on cross features, a deep part on EmbeddingBag(mode='sum') of
    variable-length id lists given as 1-D ids + offsets."""

    def __init__(self, n_ids=5000, d=32, n_dense=10, n_wide=200):
        super().__init__()
        self.bag = nn.EmbeddingBag(n_ids, d, mode="sum")
        self.wide = nn.Linear(n_wide, 1)
        self.deep = nn.Sequential(nn.Linear(d + n_dense, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, ids, offsets, dense, wide_x):
        e = self.bag(ids, offsets)
        return torch.sigmoid(self.wide(wide_x) + self.deep(torch.cat([e, dense], 1)))


def m_wide_deep():
    lens = np.random.randint(1, 12, size=16)
    ids = np.random.randint(0, 5000, size=int(lens.sum())).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    return WideDeep(), OrderedDict(ids=ids, offsets=offsets, dense=f32(16, 10),
                                   wide_x=(np.random.rand(16, 200) < 0.05).astype(np.float32))


# ----------------------------------------------------------------------------- ops a user reaches for
class EinsumBilinear(nn.Module):
    """Attention written with torch.einsum, a bilinear interaction einsum('bnd,de,bme->bnm') and nn.Bilinear."""

    def __init__(self, d=128, h=4):
        super().__init__()
        self.h, self.dh = h, d // h
        self.wq, self.wk, self.wv = (nn.Parameter(torch.randn(d, h, d // h) / math.sqrt(d)) for _ in range(3))
        self.W = nn.Parameter(torch.randn(d, d) / d)
        self.bil = nn.Bilinear(d, d, 16)

    def forward(self, x, y):
        q = torch.einsum("bnd,dhk->bhnk", x, self.wq)
        k = torch.einsum("bmd,dhk->bhmk", y, self.wk)
        v = torch.einsum("bmd,dhk->bhmk", y, self.wv)
        a = torch.einsum("bhnk,bhmk->bhnm", q, k).div(math.sqrt(self.dh)).softmax(-1)
        o = torch.einsum("bhnm,bhmk->bnhk", a, v).flatten(2)
        inter = torch.einsum("bnd,de,bme->bnm", x, self.W, y)
        return o + inter.softmax(-1) @ y, self.bil(o.mean(1), y.mean(1))


def m_einsum_bilinear():
    return EinsumBilinear(), OrderedDict(x=f32(2, 64, 128), y=f32(2, 96, 128))


class RankHead(nn.Module):
    """A ranking head: scores from an MLP, then torch.sort (descending), argsort and the rank of each item."""

    def __init__(self, d=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, items):
        s = self.mlp(items).squeeze(-1)  # [B, N]
        vals, order = torch.sort(s, dim=-1, descending=True)
        ranks = torch.argsort(order, dim=-1)
        top = torch.gather(items, 1, order[:, :10, None].expand(-1, -1, items.shape[-1]))
        return vals, order, ranks, top


def m_sort_rank():
    return RankHead(), OrderedDict(items=f32(4, 200, 32))


class InterpModes(nn.Module):
    """Bicubic and nearest-exact upsampling (and an antialias-free bilinear downscale) around convolutions."""

    def __init__(self):
        super().__init__()
        self.c1, self.c2, self.c3 = nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(32, 3, 3, padding=1)

    def forward(self, x):
        h = F.relu(self.c1(x))
        a = F.interpolate(h, scale_factor=2, mode="bicubic", align_corners=False)
        b = F.interpolate(self.c2(h), scale_factor=2, mode="nearest-exact")
        y = self.c3(torch.cat([a, b], 1))
        return y, F.interpolate(x, size=(45, 45), mode="bicubic", align_corners=True)


def m_interp_modes():
    return InterpModes(), OrderedDict(x=f32(1, 3, 64, 64))


class LogHeads(nn.Module):
    """Log-space heads: log_softmax, logsumexp (a mixture / CTC-style normalizer) and a logit-space mixture."""

    def __init__(self, d=128, k=8, v=500):
        super().__init__()
        self.proj, self.mix = nn.Linear(d, k * v), nn.Linear(d, k)
        self.k, self.v = k, v

    def forward(self, x):
        B, T, _ = x.shape
        comp = F.log_softmax(self.proj(x).view(B, T, self.k, self.v), -1)
        w = F.log_softmax(self.mix(x), -1).unsqueeze(-1)
        lp = torch.logsumexp(comp + w, dim=2)  # mixture of softmaxes, [B, T, V]
        return lp, torch.logsumexp(lp, dim=(1, 2))


def m_log_heads():
    return LogHeads(), OrderedDict(x=f32(2, 16, 128))


class CumOps(nn.Module):
    """Scans: cumsum, cummax (a running max, e.g. drawdown) and logcumsumexp (a log-space prefix sum)."""

    def forward(self, x):
        run_max = torch.cummax(x, dim=1).values
        return torch.cumsum(x, 1), x - run_max, torch.logcumsumexp(x, dim=1)


def m_cum_ops():
    return CumOps(), OrderedDict(x=f32(8, 512))


class LogCumSumExpManual(nn.Module):
    """The fallback a user writes when logcumsumexp has no export: max-shifted exp, cumsum, log."""

    def forward(self, x):
        cs = torch.cumsum(x, 1)
        return cs, torch.log(torch.cumsum(torch.exp(x - x.max(1, keepdim=True).values), 1)) + x.max(1, keepdim=True).values


def m_logcumsumexp_manual():
    return LogCumSumExpManual(), OrderedDict(x=f32(8, 512))


class UnfoldFold(nn.Module):
    """im2col by F.unfold, a per-patch linear map, col2im back by F.fold (overlapping patches, averaged)."""

    def __init__(self, c=8, k=4, s=2):
        super().__init__()
        self.k, self.s = k, s
        self.lin = nn.Linear(c * k * k, c * k * k)
        self.conv = nn.Conv2d(3, c, 3, padding=1)

    def forward(self, x):
        h = self.conv(x)
        H, W = h.shape[-2:]
        p = F.unfold(h, self.k, stride=self.s)  # [B, C*k*k, L]
        p = self.lin(p.transpose(1, 2)).transpose(1, 2)
        y = F.fold(p, (H, W), self.k, stride=self.s)
        ones = F.fold(torch.ones_like(p), (H, W), self.k, stride=self.s)
        return y / ones


def m_unfold_fold():
    return UnfoldFold(), OrderedDict(x=f32(2, 3, 32, 32))


MODELS = OrderedDict([
    ("r3d_18", dict(fn=tvv("r3d_18"), pt2=True, bench_n=10)),
    ("r2plus1d_18", dict(fn=tvv("r2plus1d_18"), pt2=True, bench_n=10)),
    ("unet3d", dict(fn=m_unet3d, pt2=True)),
    ("shufflenet_v2_x1_0", dict(fn=tv("shufflenet_v2_x1_0"), pt2=True)),
    ("densenet121", dict(fn=tv("densenet121"), pt2=True, bench_n=20)),
    ("squeezenet1_1", dict(fn=tv("squeezenet1_1"), pt2=True)),
    ("regnet_y_400mf", dict(fn=tv("regnet_y_400mf"), pt2=True)),
    ("googlenet", dict(fn=tv("googlenet"), pt2=True, bench_n=20)),
    ("mlp_mixer", dict(fn=m_mlp_mixer, pt2=True)),
    ("gmlp", dict(fn=m_gmlp, pt2=True)),
    ("fnet_fft2", dict(fn=m_fnet, pt2=True, opset=17)),
    ("perceiver", dict(fn=m_perceiver, pt2=True)),
    ("detr_decoder", dict(fn=m_detr_decoder, pt2=True)),
    ("tx_encoder_padmask", dict(fn=m_tx_encoder_padmask, pt2=True)),
    ("gpt2_past_kv", dict(fn=m_gpt2_past_kv, pt2=True)),
    # the same step at any past length (a decode loop's cache grows by one per call)
    ("gpt2_past_kv_dyn", dict(fn=m_gpt2_past_kv, pt2=True, dynamic=dict(
        axes={"past_k": {2: "past"}, "past_v": {2: "past"}}, out={"y1": {2: "total"}, "y2": {2: "total"}},
        alt=lambda i: OrderedDict((n, a[:, :, :9].copy() if n != "x" else a) for n, a in i.items())))),
    ("llama_kvcache", dict(fn=m_llama_kvcache, pt2=True)),
    ("llama_slice_assign", dict(fn=m_llama_slice_assign, pt2=True)),
    ("llama_prefill", dict(fn=m_llama_prefill, pt2=True)),
    ("alibi_attn", dict(fn=m_alibi_attn, pt2=True)),
    ("sentence_embed", dict(fn=m_sentence_embed, pt2=True)),
    # the same served at any batch and length
    ("sentence_embed_dyn", dict(fn=m_sentence_embed, pt2=True, dynamic=dict(
        axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}, out={"y": {0: "batch"}},
        alt=lambda i: OrderedDict((n, a[1:, :30].copy()) for n, a in i.items())))),
    ("pointnet", dict(fn=m_pointnet, pt2=True)),
    ("nerf_mlp", dict(fn=m_nerf, pt2=True)),
    ("siren", dict(fn=m_siren, pt2=True)),
    ("wavenet", dict(fn=m_wavenet, pt2=True)),
    ("crnn_bilstm", dict(fn=m_crnn, pt2=True)),
    ("edsr", dict(fn=m_edsr, pt2=True)),
    ("unet2d", dict(fn=m_unet2d, pt2=True)),
    ("dcgan_gen", dict(fn=m_dcgan, pt2=True)),
    ("gat", dict(fn=m_gat, pt2=True, opset=18)),
    ("ft_transformer", dict(fn=m_ft_transformer, pt2=True)),
    ("wide_deep_embbag", dict(fn=m_wide_deep, pt2=True)),
    ("einsum_bilinear", dict(fn=m_einsum_bilinear, pt2=True)),
    ("sort_rank", dict(fn=m_sort_rank, pt2=True)),
    ("interp_modes", dict(fn=m_interp_modes, pt2=True)),
    ("log_heads", dict(fn=m_log_heads, pt2=True)),
    ("cum_ops", dict(fn=m_cum_ops, pt2=True)),
    ("logcumsumexp_manual", dict(fn=m_logcumsumexp_manual, pt2=True)),
    ("unfold_fold", dict(fn=m_unfold_fold, pt2=True, opset=18)),
])


# ---- variants: the same computations written around a PyTorch ONNX-export gap, so that Kiln's ONNX path runs
class GATLayerScatterAdd(GATLayer):
    """The GAT layer with index_add replaced by scatter_add on an expanded index (the TorchScript exporter writes
    index_add as a ScatterElements without reduction: wrong where an index repeats)."""

    def forward(self, x, src, dst):
        N = x.shape[0]
        hx = self.lin(x).view(N, self.h, self.c)
        e = F.leaky_relu((hx * self.a_src).sum(-1)[src] + (hx * self.a_dst).sum(-1)[dst], 0.2)
        idx = dst.unsqueeze(-1).expand(-1, self.h)
        emax = torch.full((N, self.h), -1e9).scatter_reduce(0, idx, e, reduce="amax", include_self=True)
        p = torch.exp(e - emax[dst])
        den = torch.zeros(N, self.h).scatter_add(0, idx, p)
        alpha = p / den[dst].clamp(min=1e-16)
        idx3 = dst[:, None, None].expand(-1, self.h, self.c)
        out = torch.zeros(N, self.h, self.c).scatter_add(0, idx3, hx[src] * alpha.unsqueeze(-1))
        return out.reshape(N, self.h * self.c) + self.bias


class GATScatterAdd(GAT):
    def __init__(self, cin=64, hid=32, ncls=7):
        super().__init__(cin, hid, ncls)
        self.g1, self.g2 = GATLayerScatterAdd(cin, hid, 4), GATLayerScatterAdd(4 * hid, ncls, 1)


def m_gat_scatter_add():
    return variant_of(m_gat, GATScatterAdd)


class EinsumNoBilinear(EinsumBilinear):
    """nn.Bilinear (no ONNX export) written as einsum('bi,oij,bj->bo') with the same weights."""

    def forward(self, x, y):
        q = torch.einsum("bnd,dhk->bhnk", x, self.wq)
        k = torch.einsum("bmd,dhk->bhmk", y, self.wk)
        v = torch.einsum("bmd,dhk->bhmk", y, self.wv)
        a = torch.einsum("bhnk,bhmk->bhnm", q, k).div(math.sqrt(self.dh)).softmax(-1)
        o = torch.einsum("bhnm,bhmk->bnhk", a, v).flatten(2)
        inter = torch.einsum("bnd,de,bme->bnm", x, self.W, y)
        bil = torch.einsum("bi,oij,bj->bo", o.mean(1), self.bil.weight, y.mean(1)) + self.bil.bias
        return o + inter.softmax(-1) @ y, bil


def m_einsum_attn():
    g(0)
    return variant_of(m_einsum_bilinear, EinsumNoBilinear)


class InterpBicubic(InterpModes):
    """The same with mode='nearest' in place of 'nearest-exact' (no ONNX export)."""

    def forward(self, x):
        h = F.relu(self.c1(x))
        a = F.interpolate(h, scale_factor=2, mode="bicubic", align_corners=False)
        b = F.interpolate(self.c2(h), scale_factor=2, mode="nearest")
        y = self.c3(torch.cat([a, b], 1))
        return y, F.interpolate(x, size=(45, 45), mode="bicubic", align_corners=True)


def m_interp_bicubic():
    return variant_of(m_interp_modes, InterpBicubic)


class LogCumSumExp(nn.Module):
    """cumsum and logcumsumexp without cummax (no ONNX export)."""

    def forward(self, x):
        return torch.cumsum(x, 1), torch.logcumsumexp(x, dim=1)


def m_logcumsumexp():
    return LogCumSumExp(), OrderedDict(x=f32(8, 512))


class UnfoldFoldStatic(UnfoldFold):
    """F.fold with a literal output size (the exporter's col2im needs a constant one)."""

    def forward(self, x):
        h = self.conv(x)
        p = F.unfold(h, self.k, stride=self.s)
        p = self.lin(p.transpose(1, 2)).transpose(1, 2)
        y = F.fold(p, (32, 32), self.k, stride=self.s)
        ones = F.fold(torch.ones_like(p), (32, 32), self.k, stride=self.s)
        return y / ones


def m_unfold_fold_static():
    return variant_of(m_unfold_fold, UnfoldFoldStatic)


MODELS.update([
    ("gat_scatter_add", dict(fn=m_gat_scatter_add, pt2=True, opset=18)),
    ("einsum_attn", dict(fn=m_einsum_attn, pt2=True)),
    ("interp_bicubic", dict(fn=m_interp_bicubic, pt2=True)),
    ("logcumsumexp", dict(fn=m_logcumsumexp, pt2=True)),
    ("unfold_fold_static", dict(fn=m_unfold_fold_static, pt2=True, opset=18)),
])


# ---- single-op probes: the op kinds that made a model above slow or wrong, alone at that model's shape
class Op(nn.Module):
    def __init__(self, fn, *mods):
        super().__init__()
        self.fn, self.mods = fn, nn.ModuleList(mods)

    def forward(self, x):  # one input, named x in the .pt2 too
        return self.fn(self.mods, x)


def probe(fn, mods, **inputs):
    """fn(modules, x) with modules = mods() (made after the harness seeds the RNG), on random inputs of the given shapes."""
    return lambda: (Op(fn, *mods()), OrderedDict((n, f32(*s)) for n, s in inputs.items()))


def conv(*a, **k):
    return lambda: [nn.Conv3d(*a, **k)]


MODELS.update([
    # unet3d, r3d_18: Conv3d (im2col "columns" kernels + OpenBLAS sgemm)
    ("probe_conv3d_unet3d", dict(fn=probe(lambda m, x: m[0](x), conv(16, 8, 3, padding=1), x=(1, 16, 16, 32, 32)),
                                 pt2=True, probe=True)),
    ("probe_conv3d_r3d", dict(fn=probe(lambda m, x: m[0](x), conv(64, 64, 3, padding=1, bias=False), x=(1, 64, 8, 32, 32)),
                              pt2=True, probe=True, bench_n=10)),
    # dcgan_gen: ConvTranspose2d 4x4 stride 2 ("phases" kernels + OpenBLAS sgemm)
    ("probe_convtranspose2d", dict(fn=probe(lambda m, x: m[0](x), lambda: [nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False)],
                                            x=(4, 128, 16, 16)), pt2=True, probe=True)),
    # log_heads: logsumexp over a middle axis, alone and after a log_softmax over the last axis
    ("probe_logsumexp_mid", dict(fn=probe(lambda m, x: torch.logsumexp(x, dim=2), list, x=(2, 16, 8, 500)),
                                 pt2=True, probe=True)),
    ("probe_logsoftmax_logsumexp", dict(fn=probe(lambda m, x: torch.logsumexp(F.log_softmax(x, -1), dim=2), list,
                                                 x=(2, 16, 8, 500)), pt2=True, probe=True)),
    # detr_decoder, tx_encoder_padmask, llama_*, sentence_embed: small GEMMs and attention at 2 threads
    ("probe_linear_small", dict(fn=probe(lambda m, x: m[0](x), lambda: [nn.Linear(128, 512)], x=(1, 50, 128)),
                                pt2=True, probe=True)),
    ("probe_mha_small", dict(fn=probe(lambda m, x: m[0](x, x, x, need_weights=False)[0],
                                      lambda: [nn.MultiheadAttention(128, 4, batch_first=True)], x=(1, 50, 128)),
                             pt2=True, probe=True)),
])
