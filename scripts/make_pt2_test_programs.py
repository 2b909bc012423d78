"""Writes the small .pt2 programs of the importer's unit tests (tests/frontends/pt2_*_test.cpp)
into tests/data/pt2/, each with eager PyTorch's results (committed: a few KB each; regenerate
with `$(scripts/python-env) scripts/make_pt2_test_programs.py`):

  cnn_train.pt2        conv2d, batch_norm in training mode (running statistics and
                       num_batches_tracked updated in place), relu_, mean, linear, a buffer, a
                       lifted constant, a dynamic batch Dim("b", min=1, max=1024), and an int
                       output (2 * batch); expected: outputs and the buffers after the step
  cnn_train_core.pt2   the same after run_decompositions(): the functional Core ATen program
                       (_native_batch_norm_legit_functional, buffer mutations as outputs)
  inplace_views.pt2    writes through views: view().add_(), slice assignment, masked_fill_,
                       index_put_, unsqueeze_ / transpose, alias, a mutated user input
  dynamic_mlp.pt2      a dynamic batch and derived sizes (flatten of [b, 4, 8], 2 * b), the
                       Python operators on sizes (sym_size, mul, floordiv)
  attention.pt2        scaled_dot_product_attention with a causal mask, layer_norm, gelu (tanh)
  mlp_loss.pt2         a model whose output is a scalar loss (cross_entropy): kiln compile --train
  core_backward.pt2    the backward ops of the Core ATen opset called directly (torch.ops.aten):
                       embedding_dense_backward, max_pool2d_with_indices_backward,
                       avg_pool2d_backward, _adaptive_avg_pool2d_backward,
                       native_layer_norm_backward, native_group_norm_backward, col2im
Each <name>.pt2 comes with <name>/expected_<i>.npy (the outputs, in order) and, where buffers or
inputs are mutated, <name>/after_<fqn or input>.npy.
"""

import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "pt2")


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 5)
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, 5))

    def forward(self, x):
        y = self.bn(self.conv(x)).relu_()
        y = y.mean((2, 3))
        return self.fc(y) + self.offset + torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), y.shape[0] * 2


class InplaceViews(nn.Module):
    def forward(self, x, y):
        a = x.clone()
        a.view(-1)[2:5].add_(1.0)            # a write through a view of a view
        a[:, 0] = 0.5                        # slice assignment (copy_ into a select)
        a.masked_fill_(a > 1.5, -1.0)
        b = a.t()                            # alias, then writes through the transpose
        b[1].mul_(2.0)
        idx = torch.tensor([0, 2])
        a.index_put_((idx,), torch.ones(2, a.shape[1]), accumulate=True)
        y.add_(a.sum(0))                     # a mutated user input
        return a, b.contiguous(), y * 1


class DynamicMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 16)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        b = x.shape[0]
        h = F.silu(self.fc1(x.flatten(1)))        # [b, 32] -> [b, 16]
        h = h.view(b, 2, 8).sum(1)
        z = self.fc2(torch.cat([h, h], dim=0))    # a derived size: 2 * b
        first = z[: z.shape[0] // 2]              # floordiv on a size
        return first + z.view(2, b, 3).mean(0), torch.full((b * 2,), 0.5).sum()


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, 2, 8).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.gelu(self.out(y.transpose(1, 2).reshape(b, t, d)), approximate="tanh")


class MlpLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x, labels):
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), labels)


class CoreBackward(nn.Module):
    """Each backward op of Core ATen on small inputs; the forward results it needs are inputs."""

    def forward(self, grad_rows, tokens, image, grad_max, max_indices, grad_avg, grad_adaptive, ln_x, ln_grad, gn_x, gn_grad, columns):
        aten = torch.ops.aten
        w = torch.linspace(0.5, 1.5, 5)
        ln_mean = ln_x.mean(-1, keepdim=True)
        ln_rstd = torch.rsqrt(ln_x.var(-1, unbiased=False, keepdim=True) + 1e-5)
        gn_groups = gn_x.view(2, 2, -1)
        gn_mean, gn_rstd = gn_groups.mean(-1), torch.rsqrt(gn_groups.var(-1, unbiased=False) + 1e-5)
        gn_w = torch.linspace(0.5, 1.5, 4)
        return (
            aten.embedding_dense_backward(grad_rows, tokens, 10, 2, True),
            aten.max_pool2d_with_indices_backward(grad_max, image, [3, 3], [2, 2], [1, 1], [1, 1], True, max_indices),
            aten.avg_pool2d_backward(grad_avg, image, [3, 3], [2, 2], [1, 1], True, False, None),
            aten._adaptive_avg_pool2d_backward(grad_adaptive, image),
            *aten.native_layer_norm_backward(ln_grad, ln_x, [5], ln_mean, ln_rstd, w, w, [True, True, True]),
            *aten.native_group_norm_backward(gn_grad, gn_x, gn_mean, gn_rstd, gn_w, 2, 4, 6, 2, [True, True, True]),
            aten.col2im(columns, [5, 6], [2, 3], [1, 1], [1, 0], [2, 1]),
        )


def core_backward_inputs():
    image = torch.randn(2, 3, 7, 7)
    pooled, indices = F.max_pool2d(image, 3, 2, 1, ceil_mode=True, return_indices=True)
    averaged = F.avg_pool2d(image, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    blocks = ((5 + 2 - 1 - 1) // 2 + 1) * ((6 + 0 - 2 - 1) // 1 + 1)
    return (torch.randn(3, 4, 8), torch.randint(0, 10, (3, 4)), image, torch.randn(pooled.shape), indices,
            torch.randn(averaged.shape), torch.randn(2, 3, 3, 2), torch.randn(4, 5), torch.randn(4, 5),
            torch.randn(2, 4, 2, 3), torch.randn(2, 4, 2, 3), torch.randn(2, 3 * 2 * 3, blocks))


def save_program(name, program):
    """Saved right after export: an ExportedProgram's state_dict shares the module's buffers,
    which running the module eagerly then updates."""
    torch.export.save(program, os.path.join(OUT, name + ".pt2"))


def save_results(name, outputs, after=None):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    for file in os.listdir(folder):
        os.remove(os.path.join(folder, file))
    for i, value in enumerate(outputs):
        array = value.detach().numpy() if isinstance(value, torch.Tensor) else np.array(value, dtype=np.int64)
        np.save(os.path.join(folder, f"expected_{i}.npy"), np.array(array, order="C"))
    for key, value in (after or {}).items():
        np.save(os.path.join(folder, f"after_{key}.npy"), value.detach().numpy())


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)

    cnn = Cnn()
    x = torch.randn(2, 3, 8, 8)
    batch = torch.export.Dim("b", min=1, max=1024)
    program = torch.export.export(cnn, (x,), dynamic_shapes={"x": {0: batch}})
    save_program("cnn_train", program)
    save_program("cnn_train_core", program.run_decompositions())
    with torch.no_grad():
        outputs = cnn(x)
    after = {name.replace(".", "_"): buffer.clone() for name, buffer in cnn.named_buffers()}
    save_results("cnn_train", outputs, after)
    save_results("cnn_train_core", outputs, after)

    x = torch.randn(4, 3)
    y = torch.randn(3)
    save_program("inplace_views", torch.export.export(InplaceViews(), (x.clone(), y.clone())))
    y_after = y.clone()
    outputs = InplaceViews()(x.clone(), y_after)
    save_results("inplace_views", outputs, {"y": y_after})

    mlp = DynamicMlp()
    x = torch.randn(5, 4, 8)
    save_program("dynamic_mlp", torch.export.export(mlp, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2, max=64)}}))
    with torch.no_grad():
        save_results("dynamic_mlp", mlp(x))

    attention = Attention()
    x = torch.randn(2, 6, 16)
    save_program("attention", torch.export.export(attention, (x,)))
    with torch.no_grad():
        save_results("attention", [attention(x)])

    model = MlpLoss()
    x, labels = torch.randn(4, 6), torch.tensor([0, 2, 1, 2])
    save_program("mlp_loss", torch.export.export(model, (x, labels)))
    with torch.no_grad():
        save_results("mlp_loss", [model(x, labels)])
    inputs = core_backward_inputs()
    save_program("core_backward", torch.export.export(CoreBackward(), inputs))
    with torch.no_grad():
        save_results("core_backward", CoreBackward()(*inputs))
    print("wrote", sorted(f for f in os.listdir(OUT) if f.endswith(".pt2")))


if __name__ == "__main__":
    sys.exit(main())
