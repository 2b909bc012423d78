"""Writes the single-op .pt2 programs of the importer's op tests (tests/frontends/pt2_ops_test.cpp)
into tests/data/pt2/, each with eager PyTorch's results (committed: a few KB each; regenerate
with `$(scripts/python-env) scripts/make_pt2_op_programs.py`). They cover ATen ops whose OpInfo
samples once failed (tests/pt2_conformance/allowlist.txt), on inputs chosen to reach the hard
parts:

  pooling_indices.pt2   adaptive_max_pool{1,2,3}d with return_indices (windows of unequal
                        length; integer-valued inputs, so that ties pick the first maximum;
                        windows with NaNs, where the last NaN wins)
  searchsorted.pt2      searchsorted with n-d boundaries (left, right, side="right",
                        out_int32) and with a sorter; bucketize
  flash_attention.pt2   _scaled_dot_product_flash_attention_for_cpu's output and logsumexp,
                        causal and with a float mask
  empty_edges.pt2       native_group_norm over 0 elements, batch_norm of f32[0], scatter into
                        a 0-d self
  random_training.pt2   training-mode dropout2d, dropout3d, feature_alpha_dropout,
                        alpha_dropout, rrelu, rand_like, randn_like, bernoulli (per-element
                        probabilities, and bernoulli.p), a second rand_like: random, so the files hold
                        eager's results for their shapes and, computed here in NumPy from
                        PyTorch's formulas, what each element may be (random_training/
                        <op>_kept.npy and <op>_dropped.npy: the value of every element when its
                        mask keeps or drops it)
  int16_ops.pt2         torch.int16: an int16 buffer (a weight), int16 inputs, to(int16) of
                        floats, wrapping arithmetic, floor division and remainder, sum (int64),
                        bitwise ops, promotion with uint8 and float, full(dtype=int16), to(int8)
  recurrent.pt2         nn.LSTM (two bidirectional layers, batch first, h0 and c0 given; with
                        proj_size; an unbatched sequence), nn.GRU, nn.RNN (tanh and relu), and
                        the cells LSTMCell, GRUCell, RNNCell: aten.lstm / gru / rnn_*.input
                        and *_cell
  selection.pt2         topk (largest and smallest), sort (descending; stable on ties),
                        argsort (stable), msort, kthvalue, median (a row with a NaN, and the
                        whole tensor), an integer sort
  rearrange.pt2         pixel_shuffle / pixel_unshuffle, channel_shuffle, tile (fewer and more
                        counts than dims), repeat_interleave by a count (along a dim and
                        flattened), rot90 (k = 1, 2, 3, -1)
  composites.pt2        one_hot, nn.Unfold (im2col), nn.ConvTranspose1d, tensordot (a contracted
                        dim of size 1 against one of 3), bilinear, cosine_similarity (broadcast),
                        pairwise_distance, trace of a wide matrix
  sampling.pt2          affine_grid (2-d; 3-d with a size-1 dim and aligned corners) and
                        grid_sample (bilinear / zeros, nearest / border, bicubic / zeros,
                        bilinear / reflection, 3-d bicubic), as a spatial transformer uses them
  weight_norm.pt2       nn.utils.parametrizations.weight_norm on a Linear (dim 0), a grouped
                        Conv1d (dim 2, as wav2vec 2.0's positional convolution) and a Linear
                        over the whole weight (dim None): aten._weight_norm
  scans.pt2             cumprod (a zero, negatives; integers), cummax with NaNs, cummin of
                        integers with ties (the later index wins), logcumsumexp with infinities
  unpool_and_more.pt2   max_unpool2d of max_pool2d's indices (SegNet's decoder), take_along_dim
                        (negative indices along a dim), nanmean, isclose (equal_nan),
                        sum_to_size, logaddexp2, ldexp
  embedding_bag.pt2     nn.EmbeddingBag: a 2-d input in mean mode with padding_idx, 1-d indices
                        with offsets in max mode (an empty bag), sum with per_sample_weights and
                        include_last_offset
Each <name>.pt2 comes with <name>/expected_<i>.npy (the outputs, in order). With names as
arguments, only those programs are written.
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "pt2")
WANTED = set()  # the programs named on the command line; all when empty
ALPHA = 1.7580993408473766  # SELU's alpha over its scale: alpha dropout's saturation value


class PoolingIndices(nn.Module):
    def forward(self, seq, image, volume, with_nans):
        p1, i1 = F.adaptive_max_pool1d(seq, 4, return_indices=True)
        p2, i2 = F.adaptive_max_pool2d(image, (3, 4), return_indices=True)
        p3, i3 = F.adaptive_max_pool3d(volume, (3, 2, 4), return_indices=True)
        unbatched, unbatched_i = F.adaptive_max_pool2d(image[0], (2, 5), return_indices=True)
        nan_i = F.adaptive_max_pool1d(with_nans, 3, return_indices=True)[1]  # the last NaN of a window
        return p1, i1, p2, i2, p3, i3, unbatched, unbatched_i, nan_i


class SearchSorted(nn.Module):
    def forward(self, boundaries, values, unsorted, sorter, flat_values, edges):
        return (
            torch.searchsorted(boundaries, values),
            torch.searchsorted(boundaries, values, right=True, out_int32=True),
            torch.searchsorted(boundaries, values, side="right"),
            torch.searchsorted(unsorted, flat_values, sorter=sorter),
            torch.bucketize(values, edges),
        )


class FlashAttention(nn.Module):
    def forward(self, q, k, v, mask):
        attention = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
        causal, causal_lse = attention(q, k, v, 0.0, True)
        masked, masked_lse = attention(q, k, v, attn_mask=mask, scale=0.3)
        return causal, causal_lse, masked, masked_lse


class EmptyEdges(nn.Module):
    def forward(self, no_rows, empty, empty_mean, empty_var, scalar, scalar_index, scalar_src):
        out, mean, rstd = torch.ops.aten.native_group_norm(no_rows, None, None, 0, 4, 3, 2, 1e-5)
        normalized = F.batch_norm(empty, empty_mean, empty_var, training=False)
        scattered = torch.scatter(scalar, 0, scalar_index, scalar_src, reduce="add")
        written = torch.scatter(scalar, -1, scalar_index, scalar_src)
        return out, mean, rstd, normalized, scattered, written


class RandomTraining(nn.Module):
    def forward(self, image, volume, features, flat, rows, probabilities):
        return (
            F.dropout2d(image, 0.5, training=True),
            F.dropout3d(volume, 0.25, training=True),
            F.feature_alpha_dropout(features, 0.5, training=True),
            F.alpha_dropout(flat, 0.2, training=True),
            F.rrelu(flat, 0.1, 0.3, training=True),
            torch.rand_like(rows),
            torch.randn_like(rows),
            torch.bernoulli(probabilities),
            torch.ops.aten.bernoulli.p(rows, 0.3),
            torch.rand_like(rows),  # a second draw of output 5's shape: other numbers
        )


class Int16Ops(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.tensor([-32768, -300, 0, 7, 32767], dtype=torch.int16))

    def forward(self, x, s, u):
        return (
            x.to(torch.int16),  # truncates, wraps past 32767
            s + self.table,  # wraps
            s * 3,
            s // 7,
            s % -7,
            s.sum(),  # int64
            s.amax(0),
            s & self.table,
            s >> 3,
            s + u,  # uint8 with int16: int16
            s.float() * x,
            torch.full((2, 5), 12345, dtype=torch.int16) - s,
            s.to(torch.int8),
            s.abs(),
        )


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        self.projected = nn.LSTM(6, 7, proj_size=3)
        self.gru = nn.GRU(6, 4, num_layers=2)
        self.rnn_tanh = nn.RNN(6, 4, batch_first=True)
        self.rnn_relu = nn.RNN(6, 4, nonlinearity="relu", bidirectional=True)
        self.lstm_cell, self.gru_cell, self.rnn_cell = nn.LSTMCell(6, 5), nn.GRUCell(6, 4), nn.RNNCell(6, 4, bias=False)

    def forward(self, x, h0, c0, sequence):
        y, (h, c) = self.lstm(x, (h0, c0))
        projected, (projected_h, _) = self.projected(x.transpose(0, 1))
        unbatched = self.projected(sequence)[0]
        gru, gru_h = self.gru(x.transpose(0, 1))
        rnn_tanh = self.rnn_tanh(x)[0]
        rnn_relu, rnn_relu_h = self.rnn_relu(x.transpose(0, 1))
        cell_h, cell_c = self.lstm_cell(x[:, 0], (h0[0], c0[0]))
        return (y, h, c, projected, projected_h, unbatched, gru, gru_h, rnn_tanh, rnn_relu, rnn_relu_h, cell_h, cell_c,
                self.gru_cell(x[:, 1]), self.rnn_cell(x[:, 2], h0[1, :, :4]))


class Selection(nn.Module):
    def forward(self, x, ties, with_nan, ints):
        largest = torch.topk(x, 3)
        smallest = torch.topk(x, 2, dim=1, largest=False)
        descending = torch.sort(x, dim=1, descending=True)
        stable = torch.sort(ties, stable=True)
        stable_descending = torch.sort(ties, dim=0, stable=True, descending=True)
        kth = torch.kthvalue(x, 2, dim=-1, keepdim=True)
        median = torch.median(with_nan, dim=1)
        return (largest.values, largest.indices, smallest.values, smallest.indices, descending.values,
                descending.indices, stable.values, stable.indices, stable_descending.indices,
                torch.argsort(ties, dim=-1, stable=True), torch.msort(x), kth.values, kth.indices, median.values,
                median.indices, torch.median(x), torch.sort(ints, descending=True).values)


class Rearrange(nn.Module):
    def forward(self, image, x):
        return (F.pixel_shuffle(image, 2), F.pixel_unshuffle(image, 2), F.channel_shuffle(image, 4),
                x.tile(2), x.tile(2, 1, 1, 3), x.repeat_interleave(3, dim=1), x.repeat_interleave(2),
                torch.rot90(image, 1, (2, 3)), torch.rot90(image, 2, (1, 3)), torch.rot90(image, 3, (3, 2)),
                torch.rot90(x, -1, (0, 2)))


class Composites(nn.Module):
    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold((2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
        self.transposed = nn.ConvTranspose1d(4, 3, 3, stride=2, output_padding=1)
        self.bilinear = nn.Bilinear(5, 4, 3)

    def forward(self, labels, image, seq, a, b, x1, x2):
        return (F.one_hot(labels, 6), self.unfold(image), self.transposed(seq),
                torch.tensordot(a, b, dims=([1, 2], [0, 2])), self.bilinear(x1, x2[..., :4]),
                F.cosine_similarity(x1, x2[:1], dim=-1), F.pairwise_distance(x1, x2, p=3.0), torch.trace(a[0]))


class Sampling(nn.Module):
    def forward(self, image, theta, grid, volume, theta3, grid3):
        warped = F.grid_sample(image, F.affine_grid(theta, [2, 3, 5, 6], align_corners=False), align_corners=False)
        return (warped, F.grid_sample(image, grid, mode="nearest", padding_mode="border", align_corners=True),
                F.grid_sample(image, grid, mode="bicubic"), F.grid_sample(image, grid, padding_mode="reflection"),
                F.affine_grid(theta3, [1, 2, 1, 4, 5], align_corners=True), F.grid_sample(volume, grid3, mode="bicubic"))


class WeightNorm(nn.Module):
    def __init__(self):
        super().__init__()
        norm = nn.utils.parametrizations.weight_norm
        self.linear = norm(nn.Linear(6, 4))
        self.conv = norm(nn.Conv1d(4, 4, 5, padding=2, groups=2), dim=2)
        self.whole = norm(nn.Linear(4, 3), dim=None)
        with torch.no_grad():  # g starts as |v|, which would make the weight v itself
            for module in (self.linear, self.conv, self.whole):
                g = module.parametrizations.weight.original0
                g.mul_(torch.rand(g.shape) + 0.5)

    def forward(self, x):
        y = self.linear(x)
        return y, self.conv(y.transpose(1, 2)), self.whole(y)


class Scans(nn.Module):
    def forward(self, x, with_nans, ints, infinities):
        running_max = torch.cummax(with_nans, 0)
        running_min = torch.cummin(ints, 1)
        return (torch.cumprod(x, 1), torch.cumprod(ints, 0), running_max.values, running_max.indices,
                running_min.values, running_min.indices, torch.logcumsumexp(infinities, 0), torch.logcumsumexp(x, -1))


class UnpoolAndMore(nn.Module):
    def forward(self, image, x, order, with_nans, near):
        pooled, indices = F.max_pool2d(image, 2, return_indices=True)
        return (F.max_unpool2d(pooled, indices, 2, output_size=image.shape[-2:]), torch.take_along_dim(x, order, dim=1),
                torch.nanmean(with_nans, 1), torch.isclose(x, near, rtol=1e-3, equal_nan=True),
                x.sum_to_size(1, 6), torch.logaddexp2(x, near), torch.ldexp(x, order[:, :1].expand(3, 6)))


class EmbeddingBags(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean = nn.EmbeddingBag(10, 4, mode="mean", padding_idx=2)
        self.max = nn.EmbeddingBag(10, 4, mode="max")
        self.sum = nn.EmbeddingBag(10, 4, mode="sum", include_last_offset=True)

    def forward(self, rows, flat, offsets, weights):
        return self.mean(rows), self.max(flat, offsets), self.sum(flat, offsets, per_sample_weights=weights)


def dropout_maps(x, p):
    """(kept, dropped) values of plain dropout: x / (1 - p) and 0."""
    return x / np.float32(1 - p), np.zeros_like(x)


def alpha_dropout_maps(x, p):
    """(kept, dropped) values of alpha dropout (PyTorch's _dropout_impl): with
    a = 1 / sqrt((alpha^2 p + 1)(1 - p)), kept x * a + alpha a p, dropped alpha a p - alpha a."""
    a = 1.0 / np.sqrt((ALPHA * ALPHA * p + 1) * (1 - p))
    kept = x.astype(np.float64) * a + ALPHA * a * p
    dropped = np.full(x.shape, ALPHA * a * p - ALPHA * a)
    return kept.astype(np.float32), dropped.astype(np.float32)


def save(name, module, inputs, extra=None):
    if WANTED and name not in WANTED:
        return
    torch.export.save(torch.export.export(module, inputs), os.path.join(OUT, name + ".pt2"))
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    for file in os.listdir(folder):
        os.remove(os.path.join(folder, file))
    with torch.no_grad():
        outputs = module(*[t.clone() for t in inputs])
    for i, value in enumerate(outputs):
        np.save(os.path.join(folder, f"expected_{i}.npy"), np.array(value.numpy(), order="C"))
    for key, value in (extra or {}).items():
        np.save(os.path.join(folder, key + ".npy"), np.array(value, order="C"))


def main():
    os.makedirs(OUT, exist_ok=True)
    WANTED.update(sys.argv[1:])
    torch.manual_seed(0)
    # Integer-valued, so that windows hold ties.
    seq = torch.randint(0, 4, (2, 3, 7)).float()
    image = torch.randint(0, 5, (2, 3, 5, 7)).float()
    volume = torch.randint(0, 6, (2, 2, 4, 3, 5)).float()
    nan = float("nan")
    with_nans = torch.tensor([[[nan, 1.0, nan, 4.0, 2.0, 4.0, 0.5, nan, 3.0]]])
    save("pooling_indices", PoolingIndices(), (seq, image, volume, with_nans))

    boundaries = torch.randn(2, 3, 6).sort(-1).values
    values = torch.cat([torch.randn(2, 3, 4), boundaries[..., 1:3]], -1)  # some equal to a boundary
    unsorted = torch.randn(2, 6)
    flat_values = torch.cat([torch.randn(2, 3), unsorted[:, :2]], -1)
    edges = torch.linspace(-1.5, 1.5, 7)
    save("searchsorted", SearchSorted(), (boundaries, values, unsorted, unsorted.argsort(-1), flat_values, edges))

    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    save("flash_attention", FlashAttention(), (q, k, v, torch.randn(5, 7)))

    save("empty_edges", EmptyEdges(), (torch.randn(0, 4, 3), torch.randn(0), torch.randn(0), torch.rand(0),
                                       torch.tensor(2.5), torch.tensor(0), torch.tensor(-1.25)))

    probabilities = torch.cat([torch.zeros(100), torch.ones(100), torch.rand(800)])  # 0 and 1 are certain
    inputs = (torch.randn(4, 16, 3, 3), torch.randn(2, 8, 2, 3, 3), torch.randn(4, 16, 3, 3), torch.randn(400),
              torch.randn(20, 50), probabilities)
    image, volume, features, flat = (t.numpy() for t in inputs[:4])
    maps = {}
    for op, (kept, dropped) in {"dropout2d": dropout_maps(image, 0.5), "dropout3d": dropout_maps(volume, 0.25),
                                "feature_alpha_dropout": alpha_dropout_maps(features, 0.5),
                                "alpha_dropout": alpha_dropout_maps(flat, 0.2)}.items():
        maps[op + "_kept"], maps[op + "_dropped"] = kept, dropped
    save("random_training", RandomTraining(), inputs, maps)

    shorts = torch.randint(-32768, 32768, (2, 5), dtype=torch.int16)
    save("int16_ops", Int16Ops(), (torch.randn(2, 5) * 30000, shorts, torch.randint(0, 256, (5,), dtype=torch.uint8)))

    torch.manual_seed(1)
    save("recurrent", Recurrent().eval(), (torch.randn(2, 7, 6), torch.randn(4, 2, 5), torch.randn(4, 2, 5),
                                           torch.randn(5, 6)))
    ties = torch.randint(0, 3, (4, 9)).float()  # equal values in every row and column
    with_nan = torch.randn(3, 6)
    with_nan[1, 4] = float("nan")
    save("selection", Selection(), (torch.randn(4, 6), ties, with_nan, torch.randint(-50, 50, (3, 8))))
    save("rearrange", Rearrange(), (torch.randn(2, 8, 4, 6), torch.randn(3, 2, 4)))
    save("composites", Composites().eval(), (torch.randint(0, 6, (3, 4)), torch.randn(2, 3, 5, 7), torch.randn(2, 4, 6),
                                             torch.randn(2, 3, 1), torch.randn(3, 4, 3), torch.randn(2, 5), torch.randn(2, 5)))
    save("sampling", Sampling(), (torch.randn(2, 3, 7, 8), torch.randn(2, 2, 3) * 0.5, torch.randn(2, 4, 5, 2) * 1.2,
                                  torch.randn(1, 2, 3, 4, 5), torch.randn(1, 3, 4), torch.randn(1, 2, 3, 4, 3)))
    save("weight_norm", WeightNorm().eval(), (torch.randn(2, 7, 6),))
    x = torch.randn(3, 6)
    x[1, 2] = 0.0
    nan, inf = float("nan"), float("inf")
    save("scans", Scans(), (x, torch.tensor([1.0, nan, 2.0, nan, 5.0]), torch.tensor([[3, 1, 1, 2, 1], [-2, 0, -2, -5, 4]]),
                            torch.tensor([-inf, -inf, 1.0, inf, inf])))
    x = torch.randn(3, 6)
    near = x + torch.tensor([0.0, 1e-5, 1e-2, 0.0, -1e-5, 1.0])
    near[0, 0] = x[0, 0] = float("nan")
    with_nans = torch.randn(3, 5)
    with_nans[0, 1] = with_nans[2, :] = float("nan")
    save("unpool_and_more", UnpoolAndMore(), (torch.randn(2, 3, 6, 8), x, torch.randint(-6, 6, (3, 4)), with_nans, near))
    rows = torch.tensor([[1, 2, 4, 5], [2, 2, 2, 2], [9, 0, 3, 2]])  # a bag of padding only: 0
    save("embedding_bag", EmbeddingBags().eval(), (rows, torch.tensor([3, 1, 4, 1, 5, 9, 2, 6]),
                                                     torch.tensor([0, 3, 3, 8]), torch.rand(8)))
    print("wrote", ", ".join(sorted(WANTED)) if WANTED else "pooling_indices, searchsorted, flash_attention, "
          "empty_edges, random_training, int16_ops, recurrent, selection, rearrange, composites, sampling, weight_norm, scans, unpool_and_more, embedding_bag", "into", OUT)


if __name__ == "__main__":
    sys.exit(main())
