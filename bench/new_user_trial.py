#!/usr/bin/env python3
"""A new user's trial of Kiln on models this project never tuned for, as a user would write them
(bench/README.md, "Models a new user brings"), in three sets.

Set 1 (31 models, defined here): a T5 encoder layer with relative-position buckets, Whisper- and
Conformer-like blocks, a YOLO-like neck, torchvision's DeepLabv3-MobileNet-v3, FCN-ResNet-50,
ResNeXt-50, MobileNet-v3 large, AlexNet and VGG11-bn, a VAE decoder, a TCN, a linear-attention
state-space layer, GNN message passing, DLRM, a text CNN, ESPCN, a style-transfer net, MHA with masks,
a CLIP head, a Swin block, DGCNN, spatial transformers, detection post-processing (a boolean mask,
NMS) and models with a dynamic batch or sequence.

Set 2 (defined in new_user_trial_set2.py, same harness and helpers): video and 3-D models (r3d_18,
r2plus1d_18, a 3-D U-Net), classifiers of unusual structure (ShuffleNet-v2, DenseNet-121,
SqueezeNet, RegNetY, GoogLeNet), token mixers (MLP-Mixer, gMLP, FNet, a Perceiver), decoders (a DETR
decoder, a padded TransformerEncoder, GPT-2 and Llama decode steps with KV caches, ALiBi), a
sentence-embedding encoder, PointNet, NeRF, SIREN, WaveNet, a CRNN with a bidirectional LSTM, EDSR,
a 2-D U-Net, a DCGAN generator, GAT, FT-Transformer, Wide&Deep with EmbeddingBag offsets, and op
probes (einsum, sort/argsort, bicubic / nearest-exact interpolation, logsumexp, scans, unfold/fold),
variants around PyTorch's ONNX-export gaps, and single-op probes (probe_*) of the slow op kinds.

Set 3 (defined in new_user_trial_set3.py): torchvision's Inception-v3, EfficientNet-v2-S, MaxViT-T,
Swin-v2-T, RegNetX-800MF, LR-ASPP and RAFT-small; generative models (a Stable-Diffusion-like U-Net with
cross-attention, a DiT with adaLN-zero, RealNVP, PixelCNN); sequence models (a Mamba block with its scan as a
Python loop, a grouped-query Llama, nn.Transformer seq2seq with masks, a greedy GRU decoder, an LSTM with
projections, N-BEATS, Conv-TasNet); tabular and recommendation models (DCN-v2, TabNet's sparsemax, a KAN);
a capsule network, MobileViT and YOLOv8's head with box decoding:

  python3 bench/new_user_trial.py check [NAME ...]   export ONNX (and .pt2 where marked), run ONNX
                                                     Runtime and `kiln run --target cpu --freeze`,
                                                     compare with eager and with each other
  python3 bench/new_user_trial.py bench [NAME ...]   `kiln bench --freeze --threads 2` against ONNX
                                                     Runtime (2 threads), medians of 50 calls (after check)
  python3 bench/new_user_trial.py list

Options: --set 1|2|3|all (which models, when no NAME is given; default 1), --kiln PATH (default
build/tools/kiln), --work DIR (models, inputs and outputs; default ~/.cache/kiln-new-user-trial),
--json-out FILE (default bench/results/new_user_trial-DATE.json for set 1 and
bench/results/new_user_trialN-DATE.json for set N > 1: every model's results of this run, each model in
its set's file). Models are random-initialized with non-trivial normalization statistics, so that
their outputs depend on their inputs. A Kiln output counts as a match within 1e-3 of the largest
reference magnitude. Timings run one engine after the other (not interleaved): rough, on a shared
machine.
"""
import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import time
import warnings
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_python import reexecute_under_reference_python  # noqa: E402

reexecute_under_reference_python(__file__)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from onnx_engines import ort_call_times, ort_session  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
torch.set_num_threads(2)
KILN = os.path.join(REPO, "build", "tools", "kiln")  # --kiln
WORK = os.path.expanduser("~/.cache/kiln-new-user-trial")  # --work


def g(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)


def randomize_bn(m):
    """Non-trivial running stats / affine params for every BatchNorm / InstanceNorm(affine)."""
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm):
                mod.running_mean.copy_(torch.randn_like(mod.running_mean) * 0.1)
                mod.running_var.copy_(torch.rand_like(mod.running_var) * 0.5 + 0.75)
                if mod.affine:
                    mod.weight.copy_(1 + 0.1 * torch.randn_like(mod.weight))
                    mod.bias.copy_(0.1 * torch.randn_like(mod.bias))
            elif isinstance(mod, (nn.GroupNorm, nn.LayerNorm, nn.modules.instancenorm._InstanceNorm)) \
                    and getattr(mod, "weight", None) is not None:
                mod.weight.copy_(1 + 0.1 * torch.randn_like(mod.weight))
                if mod.bias is not None:
                    mod.bias.copy_(0.1 * torch.randn_like(mod.bias))
    return m


def f32(*shape):
    return np.random.randn(*shape).astype(np.float32)


# ----------------------------------------------------------------------------- models
# 1. T5 encoder layer with relative position buckets
class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def t5_bucket(relpos, num_buckets=32, max_distance=128):
    num_buckets //= 2
    ret = (relpos > 0).to(torch.long) * num_buckets
    n = torch.abs(relpos)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(max_distance / max_exact)
                         * (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return ret + torch.where(is_small, n, large)


class T5Layer(nn.Module):
    def __init__(self, d=256, h=4, dff=1024):
        super().__init__()
        self.h, self.dk = h, d // h
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.rel = nn.Embedding(32, h)
        self.ln1, self.ln2 = T5LayerNorm(d), T5LayerNorm(d)
        self.wi, self.wo = nn.Linear(d, dff, bias=False), nn.Linear(dff, d, bias=False)

    def forward(self, x):
        B, L, D = x.shape
        ctx = torch.arange(L, dtype=torch.long)[:, None]
        mem = torch.arange(L, dtype=torch.long)[None, :]
        bias = self.rel(t5_bucket(mem - ctx)).permute(2, 0, 1).unsqueeze(0)
        hN = self.ln1(x)
        q = self.q(hN).view(B, L, self.h, self.dk).transpose(1, 2)
        k = self.k(hN).view(B, L, self.h, self.dk).transpose(1, 2)
        v = self.v(hN).view(B, L, self.h, self.dk).transpose(1, 2)
        s = q @ k.transpose(-1, -2) + bias
        a = F.softmax(s.float(), dim=-1).type_as(s)
        o = (a @ v).transpose(1, 2).reshape(B, L, D)
        x = x + self.o(o)
        return x + self.wo(F.relu(self.wi(self.ln2(x))))


def m_t5():
    return T5Layer(), OrderedDict(x=f32(1, 64, 256))


# 2. Whisper-like encoder
def sinusoids(length, channels, max_timescale=10000):
    inc = math.log(max_timescale) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class WBlock(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, L, D)
        x = x + self.out(a)
        return x + self.mlp(self.ln2(x))


class WhisperEnc(nn.Module):
    def __init__(self, n_mels=80, d=256, h=4, n_ctx=150):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("pos", sinusoids(n_ctx, d))
        self.blocks = nn.ModuleList([WBlock(d, h) for _ in range(2)])
        self.ln_post = nn.LayerNorm(d)

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        x = x + self.pos
        for b in self.blocks:
            x = b(x)
        return self.ln_post(x)


def m_whisper():
    return randomize_bn(WhisperEnc()), OrderedDict(mel=f32(1, 80, 300))


# 3. Conformer block
class FF(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(0.1), nn.Linear(4 * d, d))

    def forward(self, x):
        return self.net(x)


class ConvModule(nn.Module):
    def __init__(self, d, k=31):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)

    def forward(self, x):
        y = self.ln(x).transpose(1, 2)
        y = F.glu(self.pw1(y), dim=1)
        y = F.silu(self.bn(self.dw(y)))
        return self.pw2(y).transpose(1, 2)


class Conformer(nn.Module):
    def __init__(self, d=144, h=4):
        super().__init__()
        self.ff1, self.ff2 = FF(d), FF(d)
        self.ln_att = nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, h, batch_first=True)
        self.conv = ConvModule(d)
        self.ln_out = nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        y = self.ln_att(x)
        x = x + self.att(y, y, y, need_weights=False)[0]
        x = x + self.conv(x)
        x = x + 0.5 * self.ff2(x)
        return self.ln_out(x)


def m_conformer():
    return randomize_bn(Conformer()), OrderedDict(x=f32(2, 100, 144))


# 4. YOLO-like neck
class CBS(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = CBS(c, c, 3), CBS(c, c, 3)

    def forward(self, x):
        return x + self.cv2(self.cv1(x))


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, use_split=False):
        super().__init__()
        self.c = c2 // 2
        self.use_split = use_split
        self.cv1 = CBS(c1, 2 * self.c)
        self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))
        self.cv2 = CBS((2 + n) * self.c, c2)

    def forward(self, x):
        y = self.cv1(x)
        y = list(y.split((self.c, self.c), 1)) if self.use_split else list(y.chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.cv1 = CBS(c1, c1 // 2)
        self.cv2 = CBS(c1 // 2 * 4, c2)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YoloNeck(nn.Module):
    def __init__(self):
        super().__init__()
        self.sppf = SPPF(256, 256)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.c1 = C2f(256 + 128, 128)
        self.c2 = C2f(128 + 64, 64, use_split=True)
        self.down = CBS(64, 64, 3, 2)
        self.c3 = C2f(64 + 128, 128)

    def forward(self, p3, p4, p5):
        p5 = self.sppf(p5)
        x = self.c1(torch.cat([self.up(p5), p4], 1))
        x2 = self.c2(torch.cat([self.up(x), p3], 1))
        x3 = self.c3(torch.cat([self.down(x2), x], 1))
        return x2, x3


def m_yolo_neck():
    return randomize_bn(YoloNeck()), OrderedDict(p3=f32(1, 64, 40, 40), p4=f32(1, 128, 20, 20), p5=f32(1, 256, 10, 10))


# 5. torchvision segmentation
class OutOnly(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def m_deeplabv3_mbv3():
    import torchvision
    m = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)
    return randomize_bn(OutOnly(m)), OrderedDict(x=f32(1, 3, 224, 224))


def m_fcn_resnet50():
    import torchvision
    m = torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)
    return randomize_bn(OutOnly(m)), OrderedDict(x=f32(1, 3, 224, 224))


# 6. VAE-decoder-like
class ResnetBlock(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(32, c1), nn.Conv2d(c1, c2, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(32, c2), nn.Conv2d(c2, c2, 3, padding=1)
        self.skip = nn.Conv2d(c1, c2, 1) if c1 != c2 else nn.Identity()

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        h = self.c2(F.silu(self.n2(h)))
        return self.skip(x) + h


class AttnBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm = nn.GroupNorm(32, c)
        self.q, self.k, self.v, self.o = (nn.Conv2d(c, c, 1) for _ in range(4))

    def forward(self, x):
        B, C, H, W = x.shape
        h = self.norm(x)
        q = self.q(h).reshape(B, C, H * W).permute(0, 2, 1)
        k = self.k(h).reshape(B, C, H * W)
        v = self.v(h).reshape(B, C, H * W)
        w = torch.softmax(torch.bmm(q, k) * (C ** -0.5), dim=2)
        o = torch.bmm(v, w.permute(0, 2, 1)).reshape(B, C, H, W)
        return x + self.o(o)


class VAEDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(4, 128, 3, padding=1)
        self.mid1, self.attn, self.mid2 = ResnetBlock(128, 128), AttnBlock(128), ResnetBlock(128, 128)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.upc1 = nn.Conv2d(128, 128, 3, padding=1)
        self.r1 = ResnetBlock(128, 64)
        self.upc2 = nn.Conv2d(64, 64, 3, padding=1)
        self.norm_out = nn.GroupNorm(32, 64)
        self.conv_out = nn.Conv2d(64, 3, 3, padding=1)

    def forward(self, z):
        h = self.conv_in(z)
        h = self.mid2(self.attn(self.mid1(h)))
        h = self.upc1(self.up(h))
        h = self.r1(h)
        h = self.upc2(self.up(h))
        return self.conv_out(F.silu(self.norm_out(h)))


def m_vae_decoder():
    return randomize_bn(VAEDecoder()), OrderedDict(z=f32(1, 4, 32, 32))


# 7. TCN
class Chomp1d(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x[:, :, :-self.c].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, cin, cout, k, d):
        super().__init__()
        p = (k - 1) * d
        wn = torch.nn.utils.parametrizations.weight_norm
        self.net = nn.Sequential(wn(nn.Conv1d(cin, cout, k, padding=p, dilation=d)), Chomp1d(p), nn.ReLU(), nn.Dropout(0.2),
                                 wn(nn.Conv1d(cout, cout, k, padding=p, dilation=d)), Chomp1d(p), nn.ReLU(), nn.Dropout(0.2))
        self.down = nn.Conv1d(cin, cout, 1) if cin != cout else None

    def forward(self, x):
        res = x if self.down is None else self.down(x)
        return F.relu(self.net(x) + res)


class TCN(nn.Module):
    def __init__(self):
        super().__init__()
        ch = [16, 32, 64, 64, 64]
        self.blocks = nn.Sequential(*[TemporalBlock(ch[i], ch[i + 1], 3, 2 ** i) for i in range(4)])
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(self.blocks(x)[:, :, -1])


def m_tcn():
    return TCN(), OrderedDict(x=f32(2, 16, 200))


# 8. linear attention + SSM-like (cumsum, softplus, exp)
class LinAttnSSM(nn.Module):
    def __init__(self, d=128, h=4):
        super().__init__()
        self.h, self.dh = h, d // h
        self.qkv = nn.Linear(d, 3 * d)
        self.dt = nn.Linear(d, h)
        self.A_log = nn.Parameter(torch.log(torch.rand(h) * 0.5 + 0.5))
        self.u = nn.Linear(d, d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, self.h, self.dh).unbind(2)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        kv = torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)
        z = torch.cumsum(k, dim=1)
        num = (q.unsqueeze(-2) @ kv).squeeze(-2)
        den = (q * z).sum(-1, keepdim=True) + 1e-6
        y1 = (num / den).reshape(B, L, D)
        dt = F.softplus(self.dt(x))
        la = dt * -torch.exp(self.A_log)
        cs = torch.cumsum(la, dim=1)
        seg = cs.unsqueeze(2) - cs.unsqueeze(1)
        mask = torch.tril(torch.ones(L, L, dtype=torch.bool))
        Lm = torch.exp(seg.masked_fill(~mask[None, :, :, None], float("-inf")))
        u = self.u(x).view(B, L, self.h, self.dh)
        y2 = torch.einsum("btsh,bshd->bthd", Lm, u).reshape(B, L, D)
        return self.out(y1 * F.silu(y2))


def m_linattn_ssm():
    return LinAttnSSM(), OrderedDict(x=f32(2, 64, 128))


# 9. GNN with index_add_ / scatter_add_
class GNN(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.msg = nn.Linear(2 * d, d)
        self.upd = nn.Linear(2 * d, d)
        self.lin2 = nn.Linear(d, d)
        self.out = nn.Linear(d, 8)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        msg = F.relu(self.msg(torch.cat([x[src], x[dst]], -1)))
        agg = torch.zeros_like(x).index_add_(0, dst, msg)
        deg = torch.zeros_like(x[:, 0]).scatter_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
        agg = agg / deg.clamp(min=1).unsqueeze(-1)
        h = F.relu(self.upd(torch.cat([x, agg], -1)))
        idx = dst.unsqueeze(-1).expand(-1, h.shape[1])
        h2 = torch.zeros_like(h).scatter_add_(0, idx, self.lin2(h)[src])
        h = F.relu(h + h2)
        return self.out(h), h.mean(0)


def m_gnn():
    N, E = 200, 800
    ei = np.random.randint(0, N, size=(2, E)).astype(np.int64)
    return GNN(), OrderedDict(x=f32(N, 64), edge_index=ei)


# 10. DLRM-like
class DLRM(nn.Module):
    def __init__(self, n_tables=8, rows=1000, d=32):
        super().__init__()
        self.bot = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, d), nn.ReLU())
        self.embs = nn.ModuleList(nn.EmbeddingBag(rows, d, mode="sum") for _ in range(n_tables))
        n = n_tables + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)
        self.top = nn.Sequential(nn.Linear(d + n * (n - 1) // 2, 64), nn.ReLU(), nn.Linear(64, 1))

    def bag(self, table, ids):
        return table(ids)

    def forward(self, dense, sparse):
        b = self.bot(dense)
        T = torch.stack([b] + [self.bag(e, sparse[:, i, :]) for i, e in enumerate(self.embs)], 1)
        Z = torch.bmm(T, T.transpose(1, 2))
        zf = Z[:, self.li, self.lj]
        return torch.sigmoid(self.top(torch.cat([b, zf], 1)))


def m_dlrm():
    return DLRM(), OrderedDict(dense=f32(8, 13), sparse=np.random.randint(0, 1000, size=(8, 8, 3)).astype(np.int64))


class DLRMEmb(DLRM):
    """Same but plain nn.Embedding lookups summed over the bag (the usual workaround)."""

    def __init__(self):
        super().__init__()
        self.embs = nn.ModuleList(nn.Embedding(1000, 32) for _ in range(8))

    def bag(self, table, ids):
        return table(ids).sum(1)


def m_dlrm_emb():
    return DLRMEmb(), OrderedDict(dense=f32(8, 13), sparse=np.random.randint(0, 1000, size=(8, 8, 3)).astype(np.int64))


# 11. torchvision classifiers
def tv(name):
    def f():
        import torchvision
        return randomize_bn(getattr(torchvision.models, name)(weights=None)), OrderedDict(x=f32(1, 3, 224, 224))
    return f


# 12. text CNN
class TextCNN(nn.Module):
    def __init__(self, vocab=5000, d=128, nf=100, ncls=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.convs = nn.ModuleList(nn.Conv1d(d, nf, k) for k in (3, 4, 5))
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(3 * nf, ncls)

    def forward(self, tokens):
        e = self.emb(tokens).transpose(1, 2)
        hs = [F.relu(c(e)).max(dim=2).values for c in self.convs]
        return self.fc(self.drop(torch.cat(hs, 1)))


def m_textcnn():
    return TextCNN(), OrderedDict(tokens=np.random.randint(0, 5000, size=(4, 64)).astype(np.int64))


# 13. ESPCN + style transfer
class ESPCN(nn.Module):
    def __init__(self, r=3):
        super().__init__()
        self.c1 = nn.Conv2d(1, 64, 5, padding=2)
        self.c2 = nn.Conv2d(64, 32, 3, padding=1)
        self.c3 = nn.Conv2d(32, r * r, 3, padding=1)
        self.ps = nn.PixelShuffle(r)

    def forward(self, x):
        return torch.sigmoid(self.ps(self.c3(torch.tanh(self.c2(torch.tanh(self.c1(x)))))))


def m_espcn():
    return ESPCN(), OrderedDict(x=np.random.rand(1, 1, 64, 64).astype(np.float32))


class ConvLayer(nn.Module):
    def __init__(self, c1, c2, k, s):
        super().__init__()
        self.pad = nn.ReflectionPad2d(k // 2)
        self.conv = nn.Conv2d(c1, c2, k, s)

    def forward(self, x):
        return self.conv(self.pad(x))


class StyleRes(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.n1 = ConvLayer(c, c, 3, 1), nn.InstanceNorm2d(c, affine=True)
        self.c2, self.n2 = ConvLayer(c, c, 3, 1), nn.InstanceNorm2d(c, affine=True)

    def forward(self, x):
        return x + self.n2(self.c2(F.relu(self.n1(self.c1(x)))))


class StyleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(ConvLayer(3, 32, 9, 1), nn.InstanceNorm2d(32, affine=True), nn.ReLU(),
                                 ConvLayer(32, 64, 3, 2), nn.InstanceNorm2d(64, affine=True), nn.ReLU(),
                                 ConvLayer(64, 128, 3, 2), nn.InstanceNorm2d(128, affine=True), nn.ReLU())
        self.res = nn.Sequential(*[StyleRes(128) for _ in range(3)])
        self.up1 = nn.ConvTranspose2d(128, 64, 3, stride=2, padding=1, output_padding=1)
        self.n4 = nn.InstanceNorm2d(64, affine=True)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.c5 = ConvLayer(64, 32, 3, 1)
        self.n5 = nn.InstanceNorm2d(32, affine=True)
        self.c6 = ConvLayer(32, 3, 9, 1)

    def forward(self, x):
        y = self.res(self.enc(x))
        y = F.relu(self.n4(self.up1(y)))
        y = F.relu(self.n5(self.c5(self.up2(y))))
        return self.c6(y)


def m_style():
    return randomize_bn(StyleNet()), OrderedDict(x=f32(1, 3, 128, 128))


# 14. dynamic batch CNN
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                               nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.fc = nn.Linear(32 * 16, 10)

    def forward(self, x):
        h = self.f(x)
        return F.log_softmax(self.fc(h.view(h.size(0), -1)), dim=-1)


def m_dyn_batch():
    return randomize_bn(SmallCNN()), OrderedDict(x=f32(3, 3, 32, 32))


# 15. MHA with masks
class MHAMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(128, 4, batch_first=True)

    def forward(self, q, kv, attn_mask, key_padding_mask):
        out, w = self.mha(q, kv, kv, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=True)
        return out, w


def m_mha_mask():
    am = (np.random.randn(20, 30) * 0.5).astype(np.float32)
    am[:, 25:27] = -1e4
    kpm = np.zeros((2, 30), dtype=bool)
    kpm[0, 27:] = True
    kpm[1, 20:] = True
    return MHAMask(), OrderedDict(q=f32(2, 20, 128), kv=f32(2, 30, 128), attn_mask=am, key_padding_mask=kpm)


# 16a. CLIP head
class ClipHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.ip = nn.Linear(768, 512, bias=False)
        self.tp = nn.Linear(512, 512, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, img, txt):
        i = F.normalize(self.ip(img), dim=-1)
        t = self.tp(txt)
        t = t / t.norm(dim=-1, keepdim=True)
        lpi = self.logit_scale.exp() * i @ t.t()
        return lpi, lpi.t()


def m_clip_head():
    return ClipHead(), OrderedDict(img=f32(4, 768), txt=f32(6, 512))


# 16b. Swin-like shifted window block
def window_partition(x, w):
    B, H, W, C = x.shape
    x = x.view(B, H // w, w, W // w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, C)


def window_reverse(win, w, H, W):
    B = int(win.shape[0] / (H * W / w / w))
    x = win.view(B, H // w, W // w, w, w, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(B, H, W, -1)


class SwinBlock(nn.Module):
    def __init__(self, dim=64, heads=2, H=28, w=7, shift=3):
        super().__init__()
        self.dim, self.h, self.H, self.w, self.shift = dim, heads, H, w, shift
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * w - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
        self.register_buffer("rel_index", rel[..., 0] * (2 * w - 1) + rel[..., 1])
        img = torch.zeros(1, H, H, 1)
        cnt = 0
        for hs in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
            for ws in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
                img[:, hs, ws, :] = cnt
                cnt += 1
        mw = window_partition(img, w).view(-1, w * w)
        am = mw.unsqueeze(1) - mw.unsqueeze(2)
        self.register_buffer("mask", am.masked_fill(am != 0, -100.0).masked_fill(am == 0, 0.0))
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        B, H, W, C = x.shape
        sc = x
        x = torch.roll(self.n1(x), shifts=(-self.shift, -self.shift), dims=(1, 2))
        win = window_partition(x, self.w).view(-1, self.w * self.w, C)
        Bn, N, _ = win.shape
        qkv = self.qkv(win).reshape(Bn, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = (q * (C // self.h) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.rel_index.view(-1)].view(N, N, -1).permute(2, 0, 1)
        a = a + bias.unsqueeze(0)
        nW = self.mask.shape[0]
        a = a.view(Bn // nW, nW, self.h, N, N) + self.mask.unsqueeze(1).unsqueeze(0)
        a = a.view(-1, self.h, N, N).softmax(-1)
        o = self.proj((a @ v).transpose(1, 2).reshape(Bn, N, C))
        x = window_reverse(o.view(-1, self.w, self.w, C), self.w, H, W)
        x = sc + torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        return x + self.mlp(self.n2(x))


def m_swin_block():
    return SwinBlock(), OrderedDict(x=f32(1, 28, 28, 64))


# 16c. spatial transformer (affine_grid + grid_sample)
class STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 8, 7), nn.MaxPool2d(2), nn.ReLU(), nn.Conv2d(8, 10, 5), nn.MaxPool2d(2), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, 6))
        with torch.no_grad():
            self.fc[2].weight.mul_(0.1)
            self.fc[2].bias.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.cls = nn.Sequential(nn.Conv2d(1, 10, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(10 * 12 * 12, 10))

    def forward(self, x):
        theta = self.fc(self.loc(x).view(-1, 90)).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False)
        return self.cls(x)


def m_stn():
    return STN(), OrderedDict(x=f32(2, 1, 28, 28))


# 16d. DGCNN EdgeConv (pairwise dist, topk, gather)
class EdgeConv(nn.Module):
    def __init__(self, k=16):
        super().__init__()
        self.k = k
        self.conv1 = nn.Sequential(nn.Conv2d(6, 64, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2))
        self.conv2 = nn.Sequential(nn.Conv2d(128, 64, 1, bias=False), nn.BatchNorm2d(64), nn.LeakyReLU(0.2))
        self.head = nn.Linear(128, 10)

    def graph_feature(self, x):
        B, C, N = x.shape
        inner = -2 * torch.matmul(x.transpose(2, 1), x)
        xx = torch.sum(x ** 2, dim=1, keepdim=True)
        pd = -xx - inner - xx.transpose(2, 1)
        idx = pd.topk(k=self.k, dim=-1)[1]
        idx = (idx + torch.arange(B).view(-1, 1, 1) * N).view(-1)
        xt = x.transpose(2, 1).contiguous()
        feat = xt.view(B * N, -1)[idx, :].view(B, N, self.k, C)
        xr = xt.view(B, N, 1, C).repeat(1, 1, self.k, 1)
        return torch.cat((feat - xr, xr), dim=3).permute(0, 3, 1, 2).contiguous()

    def forward(self, pts):
        x1 = self.conv1(self.graph_feature(pts)).max(dim=-1)[0]
        x2 = self.conv2(self.graph_feature(x1)).max(dim=-1)[0]
        h = torch.cat([x1, x2], 1).amax(-1)
        return self.head(h)


def m_dgcnn():
    return randomize_bn(EdgeConv()), OrderedDict(pts=f32(2, 3, 256))


MODELS = OrderedDict([
    ("t5_layer", dict(fn=m_t5, pt2=True)),
    ("whisper_enc", dict(fn=m_whisper, pt2=True)),
    ("conformer", dict(fn=m_conformer, pt2=True)),
    ("yolo_neck", dict(fn=m_yolo_neck, pt2=True)),
    ("deeplabv3_mbv3", dict(fn=m_deeplabv3_mbv3)),
    ("fcn_resnet50", dict(fn=m_fcn_resnet50, bench_n=20)),
    ("vae_decoder", dict(fn=m_vae_decoder, pt2=True)),
    ("tcn", dict(fn=m_tcn, pt2=True)),
    ("linattn_ssm", dict(fn=m_linattn_ssm, pt2=True)),
    ("gnn_scatter", dict(fn=m_gnn, pt2=True)),
    ("dlrm_embbag", dict(fn=m_dlrm, pt2=True)),
    ("dlrm_emb", dict(fn=m_dlrm_emb, pt2=True)),
    ("resnext50_32x4d", dict(fn=tv("resnext50_32x4d"))),
    ("mobilenet_v3_large", dict(fn=tv("mobilenet_v3_large"))),
    ("alexnet", dict(fn=tv("alexnet"))),
    ("vgg11_bn", dict(fn=tv("vgg11_bn"))),
    ("textcnn", dict(fn=m_textcnn, pt2=True)),
    ("espcn", dict(fn=m_espcn, pt2=True)),
    ("style_transfer", dict(fn=m_style, pt2=True)),
    ("dyn_batch_cnn", dict(fn=m_dyn_batch, pt2=True, dynamic=True)),
    ("mha_masks", dict(fn=m_mha_mask, pt2=True)),
    ("clip_head", dict(fn=m_clip_head, pt2=True)),
    ("swin_block", dict(fn=m_swin_block, pt2=True)),
    ("stn_grid_sample", dict(fn=m_stn, pt2=True)),
    ("dgcnn_edgeconv", dict(fn=m_dgcnn, pt2=True)),
])


# ---- extra variants / probes
class GNNScatter(GNN):
    """The GNN with index_add_ replaced by scatter_add_ on an expanded index (ONNX-exportable)."""

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        msg = F.relu(self.msg(torch.cat([x[src], x[dst]], -1)))
        idx = dst.unsqueeze(-1).expand(-1, x.shape[1])
        agg = torch.zeros_like(x).scatter_add_(0, idx, msg)
        deg = torch.zeros_like(x[:, 0]).scatter_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
        agg = agg / deg.clamp(min=1).unsqueeze(-1)
        h = F.relu(self.upd(torch.cat([x, agg], -1)))
        h2 = torch.zeros_like(h).scatter_add_(0, idx, self.lin2(h)[src])
        h = F.relu(h + h2)
        return self.out(h), h.mean(0)


def m_gnn_scatter_only():
    N, E = 200, 800
    ei = np.random.randint(0, N, size=(2, E)).astype(np.int64)
    return GNNScatter(), OrderedDict(x=f32(N, 64), edge_index=ei)


class STNManual(STN):
    """affine_grid written by hand (base grid @ theta^T), then grid_sample (ONNX GridSample, opset 16)."""

    def __init__(self):
        super().__init__()
        lin = (torch.arange(28, dtype=torch.float) * 2 + 1) / 28 - 1
        yy, xx = torch.meshgrid(lin, lin, indexing="ij")
        self.register_buffer("base", torch.stack([xx, yy, torch.ones_like(xx)], -1).view(1, 28 * 28, 3))

    def forward(self, x):
        theta = self.fc(self.loc(x).view(-1, 90)).view(-1, 2, 3)
        grid = (self.base @ theta.transpose(1, 2)).view(-1, 28, 28, 2)
        return self.cls(F.grid_sample(x, grid, align_corners=False))


def m_stn_manual():
    g(0)
    m = STNManual()
    return m, OrderedDict(x=f32(2, 1, 28, 28))


class DetPost(nn.Module):
    """Detection-head post-processing: sigmoid scores, confidence filter by boolean mask, argmax class."""

    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(64, 4 + 20, 1)

    def forward(self, feat):
        p = self.head(feat).flatten(2).transpose(1, 2)[0]  # [HW, 24]
        boxes, scores = p[:, :4], torch.sigmoid(p[:, 4:])
        conf, cls = scores.max(-1)
        keep = conf > 0.9
        return boxes[keep], conf[keep], cls[keep]


def m_det_post():
    return DetPost(), OrderedDict(feat=f32(1, 64, 20, 20))


class NMSPost(nn.Module):
    def forward(self, boxes, scores):
        import torchvision
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        return boxes[keep], scores[keep]


def m_nms():
    xy = np.random.rand(100, 2).astype(np.float32) * 100
    wh = np.random.rand(100, 2).astype(np.float32) * 30 + 5
    return NMSPost(), OrderedDict(boxes=np.concatenate([xy, xy + wh], 1), scores=np.random.rand(100).astype(np.float32))


def m_t5_dyn():
    return T5Layer(), OrderedDict(x=f32(1, 64, 256))


MODELS.update([
    ("gnn_scatter_only", dict(fn=m_gnn_scatter_only, pt2=True)),
    ("stn_opset20", dict(fn=m_stn, opset=20)),
    ("stn_manual_grid", dict(fn=m_stn_manual, pt2=True)),
    ("t5_dyn_seq", dict(fn=m_t5_dyn, pt2=True, dynamic=dict(axes={"x": {1: "seq"}}, out={"y": {1: "seq"}},
                                                             alt=lambda i: OrderedDict(x=i["x"][:, :37].copy())))),
    ("det_postproc", dict(fn=m_det_post, pt2=True)),
    ("nms_postproc", dict(fn=m_nms, opset=17)),
])
MODELS["dyn_batch_cnn"]["dynamic"] = dict(axes={"x": {0: "batch"}}, out={"y": {0: "batch"}},
                                          alt=lambda i: OrderedDict((n, a[:1].copy()) for n, a in i.items()))

# ---- the second and third sets: model definitions in new_user_trial_set2.py and new_user_trial_set3.py, which import the helpers above from
# this module (registered under its module name when it runs as a script, so that it is not loaded twice).
sys.modules.setdefault("new_user_trial", sys.modules[__name__])
import new_user_trial_set2  # noqa: E402
import new_user_trial_set3  # noqa: E402

SETS = OrderedDict([("1", MODELS), ("2", new_user_trial_set2.MODELS), ("3", new_user_trial_set3.MODELS)])
assert sum(len(models) for models in SETS.values()) == len({n for models in SETS.values() for n in models}), \
    "a model name in two sets"
SET_OF = {name: k for k, models in SETS.items() for name in models}
ALL_MODELS = OrderedDict((name, spec) for models in SETS.values() for name, spec in models.items())


# ----------------------------------------------------------------------------- harness
def sh(cmd, timeout=600):
    t = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, OMP_NUM_THREADS="2"))
        return p.returncode, p.stdout, p.stderr, time.time() - t
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", f"TIMEOUT after {timeout}s", time.time() - t


def errs(ref, got):
    ref = np.asarray(ref)
    got = np.asarray(got)
    if ref.shape != got.shape:
        return dict(shape_mismatch=f"{ref.shape} vs {got.shape}", abs=float("inf"), rel=float("inf"))
    if ref.dtype == bool or np.issubdtype(ref.dtype, np.integer):
        d = float(np.max(np.abs(ref.astype(np.float64) - got.astype(np.float64)))) if ref.size else 0.0
        return dict(abs=d, rel=d)
    r, g_ = ref.astype(np.float64), got.astype(np.float64)
    fin = np.isfinite(r)
    if not np.array_equal(fin, np.isfinite(g_)):
        return dict(abs=float("nan"), rel=float("nan"), note="non-finite mismatch")
    a = float(np.max(np.abs(r[fin] - g_[fin]))) if fin.any() else 0.0
    m = float(np.max(np.abs(r[fin]))) if fin.any() else 0.0
    return dict(abs=a, rel=a / m if m > 0 else a)


def kiln_outputs(stdout, outdir):
    """Outputs in order, from the '<name>: dtype[shape] = ...' lines kiln run prints."""
    names = re.findall(r"^(\S+): \w+\[[^\]]*\]", stdout, re.M)
    return [np.load(f"{outdir}/{n}.npy") for n in names]


def run_kiln(model, inputs_files, outdir, target="cpu", freeze=True, extra=()):
    cmd = [KILN, "run", model, "--target", target] + (["--freeze"] if freeze else [])
    for n, f in inputs_files.items():
        cmd += ["--input", f"{n}={f}"]
    cmd += ["-o", outdir] + list(extra)
    if os.path.isdir(outdir):
        for f in os.listdir(outdir):
            os.remove(os.path.join(outdir, f))
    rc, out, err, dt = sh(cmd)
    res = dict(cmd=" ".join(cmd), rc=rc, secs=round(dt, 1))
    if rc != 0:
        res["error"] = (err + "\n" + out).strip()[-4000:]
        return res, None
    try:
        return res, kiln_outputs(out, outdir)
    except Exception as e:  # noqa: BLE001
        res["error"] = f"harness could not read outputs: {e}\n{out[-2000:]}"
        return res, None


def save_inputs(d, inputs, tag=""):
    files = OrderedDict()
    for n, a in inputs.items():
        files[n] = f"{d}/in{tag}_{n}.npy"
        np.save(files[n], a)
    return files


def eager(m, inputs):
    with torch.no_grad():
        o = m(*[torch.from_numpy(a) for a in inputs.values()])
    o = o if isinstance(o, (tuple, list)) else (o,)
    return [t.detach().numpy() for t in o]


def export_onnx(m, inputs, path, n_out, dynamic=None, opset=17):
    torch.backends.mha.set_fastpath_enabled(False)
    names = ["y"] if n_out == 1 else [f"y{i}" for i in range(n_out)]
    dyn = None
    if dynamic:
        dyn = dict(dynamic["axes"])
        dyn.update(dynamic["out"])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, tuple(torch.from_numpy(a) for a in inputs.values()), path, input_names=list(inputs),
                          output_names=names, opset_version=opset, dynamo=False, do_constant_folding=True,
                          dynamic_axes=dyn)


def compare_list(refs, gots):
    if gots is None:
        return None
    if len(refs) != len(gots):
        return dict(abs=float("inf"), rel=float("inf"), note=f"{len(gots)} outputs vs {len(refs)}")
    per = [errs(r, g_) for r, g_ in zip(refs, gots)]
    worst = max(per, key=lambda e: (e["rel"] if e["rel"] == e["rel"] else float("inf")))
    return dict(abs=max(e["abs"] for e in per), rel=worst["rel"], per_output=per)


def check(name):
    spec = ALL_MODELS[name]
    g(0)
    m, inputs = spec["fn"]()
    m = m.eval()
    d = f"{WORK}/{name}"
    os.makedirs(d, exist_ok=True)
    R = dict(name=name, input_shapes={n: list(a.shape) for n, a in inputs.items()})
    files = save_inputs(d, inputs)
    ref = eager(m, inputs)
    n_out = len(ref)
    onnx_path = f"{d}/{name}.onnx"
    # --- ONNX
    try:
        export_onnx(m, inputs, onnx_path, n_out, spec.get("dynamic"), spec.get("opset", 17))
        R["onnx_export"] = "ok"
    except Exception as e:  # noqa: BLE001
        R["onnx_export"] = f"FAILED: {type(e).__name__}: {str(e)[:800]}"
    if R["onnx_export"] == "ok":
        try:
            sess = ort_session(onnx_path, 2)
            ort_out = sess.run(None, {n: a for n, a in inputs.items()})
            R["ort_vs_eager"] = compare_list(ref, ort_out)
        except Exception as e:  # noqa: BLE001  (an export ONNX Runtime refuses: Kiln still runs it)
            sess = ort_out = None
            R["ort_error"] = f"{type(e).__name__}: {str(e)[:800]}"
        res, kout = run_kiln(onnx_path, files, f"{d}/out_onnx")
        R["kiln_onnx"] = res
        R["kiln_onnx_vs_ort"] = compare_list(ort_out, kout) if ort_out is not None else None
        R["kiln_onnx_vs_eager"] = compare_list(ref, kout)
        if spec.get("dynamic"):  # also the other size
            in1 = spec["dynamic"]["alt"](inputs)
            f1 = save_inputs(d, in1, "_b1")
            try:
                o1 = sess.run(None, dict(in1)) if sess is not None else None
            except Exception as e:  # noqa: BLE001  (an export that fixed the size: Kiln still runs it)
                o1, R["ort_b1_error"] = None, f"{type(e).__name__}: {str(e)[:800]}"
            res1, k1 = run_kiln(onnx_path, f1, f"{d}/out_onnx_b1")
            R["kiln_onnx_b1"] = res1
            R["kiln_onnx_b1_vs_ort"] = compare_list(o1, k1) if o1 is not None else None
            R["kiln_onnx_b1_vs_eager"] = compare_list(eager(m, in1), k1)
    # --- pt2
    if spec.get("pt2"):
        p2 = f"{d}/{name}.pt2"
        try:
            args = tuple(torch.from_numpy(a) for a in inputs.values())
            ds = None
            if spec.get("dynamic"):
                dims = {}
                ds = {n: {ax: dims.setdefault(sym, torch.export.Dim(sym, min=1, max=512)) for ax, sym in spec["dynamic"]["axes"].get(n, {}).items()} or None for n in inputs}
            ep = torch.export.export(m, args, dynamic_shapes=ds)
            torch.export.save(ep, p2)
            R["pt2_export"] = "ok"
        except Exception as e:  # noqa: BLE001
            R["pt2_export"] = f"FAILED: {type(e).__name__}: {str(e)[:800]}"
        if R["pt2_export"] == "ok":
            res, kout = run_kiln(p2, files, f"{d}/out_pt2")
            R["kiln_pt2"] = res
            R["kiln_pt2_vs_eager"] = compare_list(ref, kout)
            if spec.get("dynamic"):
                in1 = OrderedDict((n, np.load(f"{d}/in_b1_{n}.npy")) for n in inputs)
                f1 = OrderedDict((n, f"{d}/in_b1_{n}.npy") for n in inputs)
                res1, k1 = run_kiln(p2, f1, f"{d}/out_pt2_b1")
                R["kiln_pt2_b1"] = res1
                R["kiln_pt2_b1_vs_eager"] = compare_list(eager(m, in1), k1)
    return R


def summarize(R):
    def st(kres, cmp):
        if kres is None:
            return "-"
        if kres["rc"] != 0:
            return f"FAIL(rc={kres['rc']})"
        if cmp is None:
            return "FAIL"
        return "MISMATCH" if not (cmp["rel"] <= 1e-3) else "ok"
    onnx_cmp = R.get("kiln_onnx_vs_ort") if "ort_error" not in R else R.get("kiln_onnx_vs_eager")
    s = [R["name"], "onnx:", R.get("onnx_export"), "(ort: FAILED)" if "ort_error" in R else "",
         st(R.get("kiln_onnx"), onnx_cmp), (onnx_cmp or {}).get("rel"), "pt2:", R.get("pt2_export", "-"),
         st(R.get("kiln_pt2"), R.get("kiln_pt2_vs_eager")), (R.get("kiln_pt2_vs_eager") or {}).get("rel")]
    return " ".join(str(x) for x in s if x != "")


def bench(name, R):
    if R.get("onnx_export") != "ok":
        raise SkipBench("no ONNX export (" + str(R.get("onnx_export"))[:80] + ")")
    d = f"{WORK}/{name}"
    spec = ALL_MODELS[name]
    n = spec.get("bench_n", 50)
    onnx_path = f"{d}/{name}.onnx"
    inputs = OrderedDict((k, np.load(f"{d}/in_{k}.npy")) for k in R["input_shapes"])
    cmd = [KILN, "bench", onnx_path, "--freeze", "--threads", "2", "-n", str(n)]
    for k in inputs:
        cmd += ["--input", f"{k}={d}/in_{k}.npy"]
    rc, out, err, dt = sh(cmd)
    m = re.search(r"median\s+([\d.]+)\s*ms", out + err)
    B = dict(kiln_cmd=" ".join(cmd), kiln_rc=rc, kiln_out=(out + err)[-1500:], n=n)
    B["kiln_ms"] = float(m.group(1)) if m else None
    if rc != 0:
        B["kiln_error"] = (err or out).strip().splitlines()[-1][:300] if (err or out).strip() else f"exit {rc}"
    try:
        B["ort_ms"] = float(np.median(ort_call_times(ort_session(onnx_path, 2), dict(inputs), n)))
    except Exception as e:  # noqa: BLE001
        B["ort_ms"], B["ort_error"] = None, f"{type(e).__name__}: {str(e)[:300]}"
    R["bench"] = B
    return B


class SkipBench(Exception):
    """A model `bench` cannot time (its export failed)."""


def results_path(set_, json_out):
    if json_out:
        return json_out
    stem = "new_user_trial" if set_ == "1" else f"new_user_trial{set_}"
    return os.path.join(REPO, "bench", "results", f"{stem}-{datetime.date.today().isoformat()}.json")


def main():
    global KILN, WORK
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "bench", "list"])
    parser.add_argument("names", nargs="*", help="models (default: all of --set)")
    parser.add_argument("--set", default="1", choices=list(SETS) + ["all"], help="which set of models (default 1)")
    parser.add_argument("--kiln", default=KILN)
    parser.add_argument("--work", default=WORK)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    chosen = [name for k, models in SETS.items() if args.set in (k, "all") for name in models]
    if args.command == "list":
        print("\n".join(chosen))
        return
    KILN, WORK = os.path.abspath(args.kiln), os.path.abspath(args.work)
    if not os.access(KILN, os.X_OK):
        sys.exit(f"new_user_trial: {KILN} is not an executable (build Kiln first: scripts/setup)")
    unknown = [n for n in args.names if n not in ALL_MODELS]
    if unknown:
        sys.exit(f"new_user_trial: no model {', '.join(unknown)} (see: new_user_trial.py list --set all)")
    os.makedirs(WORK, exist_ok=True)
    # Results of earlier runs (a bench after a check) are kept and updated per model, in its set's file.
    files = {}

    def results_for(name):
        path = results_path(SET_OF[name], args.json_out)
        if path not in files:
            files[path] = json.load(open(path)) if os.path.exists(path) else {}
        return path, files[path]

    for name in args.names or chosen:
        t0 = time.time()
        path, results = results_for(name)
        try:
            if args.command == "check":
                results[name] = check(name)
                print(summarize(results[name]), f"[{time.time() - t0:.0f}s]", flush=True)
            else:
                if name not in results:
                    print(name, "not checked yet: run check first", flush=True)
                    continue
                b = bench(name, results[name])
                print(name, "kiln", b["kiln_ms"], "ort", b["ort_ms"] and round(b["ort_ms"], 3), f"[{time.time() - t0:.0f}s]",
                      flush=True)
        except SkipBench as skipped:
            print(name, "not timed:", skipped, flush=True)
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            print(name, "HARNESS ERROR", type(e).__name__, e, flush=True)
        with open(path, "w") as f:
            json.dump(results, f, indent=1, default=str)
    for path in files:
        print("wrote", os.path.relpath(path, REPO))


if __name__ == "__main__":
    main()
