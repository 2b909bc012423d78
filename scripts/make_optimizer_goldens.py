#!/usr/bin/env python3
"""Writes the golden data of Kiln's fused optimizers (tests/optimizers/) from PyTorch.

For each case below, PyTorch's optimizer (torch.optim.SGD / Adam / AdamW, CPU, default
single-tensor implementation) runs a few steps on a few parameters of odd sizes with
gradients from a fixed seed. One file per case, tests/data/optimizers/CASE.safetensors, holds:
  param.NAME            the initial value of parameter NAME
  grad.STEP.NAME        the gradient given before step STEP (1-based)
  param.STEP.NAME       PyTorch's parameter after step STEP
  state.STATE.NAME      PyTorch's optimizer state STATE (exp_avg, ...) after the last step
and, as string metadata: optimizer (sgd|adam|adamw), steps, params (NAME:DTYPE:SHAPE,...), lrs
(the learning rate of each step, comma separated) and every other hyperparameter by its
PyTorch name (momentum, dampening, weight_decay, nesterov, betas, eps, amsgrad, maximize).
Run it with the reference environment:  $(scripts/python-env) scripts/make_optimizer_goldens.py
"""
import os
import sys
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample_goldens import write_safetensors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "optimizers")
STEPS = 5

# Odd sizes, so no parameter fills a whole vector register or a whole cache line.
F32_PARAMS = [("w0", torch.float32, (7, 3)), ("b0", torch.float32, (13,)), ("w1", torch.float32, (5, 1, 3)),
              ("s", torch.float32, ())]
MIXED_PARAMS = [("w0", torch.float32, (7, 3)), ("d0", torch.float64, (11,)), ("b0", torch.float32, (5,)),
                ("d1", torch.float64, (2, 3))]

CASES = {
    "sgd_plain": ("sgd", F32_PARAMS, {"lr": 0.1}),
    "sgd_momentum": ("sgd", F32_PARAMS, {"lr": 0.05, "momentum": 0.9}),
    "sgd_momentum_dampening_decay": ("sgd", F32_PARAMS,
                                     {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01}),
    "sgd_nesterov_decay": ("sgd", F32_PARAMS, {"lr": 0.02, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    "sgd_maximize_lr_schedule": ("sgd", F32_PARAMS,
                                 {"lr": 0.1, "momentum": 0.5, "maximize": True, "lrs": [0.1, 0.1, 0.05, 0.05, 0.01]}),
    "adam_default": ("adam", F32_PARAMS, {}),
    "adam_decay_betas": ("adam", F32_PARAMS, {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1}),
    "adam_amsgrad": ("adam", F32_PARAMS, {"lr": 0.01, "amsgrad": True}),
    "adam_beta1_zero_lr_schedule": ("adam", F32_PARAMS,
                                    {"lr": 0.01, "betas": (0.0, 0.9), "lrs": [0.01, 0.02, 0.02, 0.005, 0.001]}),
    "adam_maximize": ("adam", F32_PARAMS, {"lr": 0.003, "maximize": True}),
    "adamw_default": ("adamw", F32_PARAMS, {}),
    "adamw_decay_amsgrad": ("adamw", F32_PARAMS, {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True}),
    "sgd_mixed_dtypes": ("sgd", MIXED_PARAMS, {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
    "adam_mixed_dtypes": ("adam", MIXED_PARAMS, {"lr": 0.01, "weight_decay": 0.01}),
}

STATE_NAMES = {"sgd": ["momentum_buffer"], "adam": ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"],
               "adamw": ["exp_avg", "exp_avg_sq", "max_exp_avg_sq"]}
TORCH_DTYPE_NAMES = {torch.float32: "f32", torch.float64: "f64"}


def make_optimizer(kind, params, options):
    torch_options = {k: v for k, v in options.items() if k != "lrs"}
    if kind == "sgd":
        return torch.optim.SGD(params, **torch_options)
    if kind == "adam":
        return torch.optim.Adam(params, **torch_options)
    return torch.optim.AdamW(params, **torch_options)


def run_case(name, kind, specs, options, seed):
    generator = torch.Generator().manual_seed(seed)
    params = [torch.randn(shape, generator=generator, dtype=dtype).requires_grad_() for _, dtype, shape in specs]
    names = [spec[0] for spec in specs]
    tensors = {f"param.{n}": p.detach().clone() for n, p in zip(names, params)}
    optimizer = make_optimizer(kind, params, options)
    lrs = options.get("lrs", [optimizer.param_groups[0]["lr"]] * STEPS)
    for step in range(1, STEPS + 1):
        optimizer.param_groups[0]["lr"] = lrs[step - 1]
        for n, p in zip(names, params):
            p.grad = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            tensors[f"grad.{step}.{n}"] = p.grad.clone()
        optimizer.step()
        for n, p in zip(names, params):
            tensors[f"param.{step}.{n}"] = p.detach().clone()
    for n, p in zip(names, params):
        for state_name, value in optimizer.state[p].items():
            if state_name in STATE_NAMES[kind]:
                tensors[f"state.{state_name}.{n}"] = value.clone()
    group = optimizer.param_groups[0]
    metadata = {"optimizer": kind, "steps": str(STEPS), "lrs": ",".join(repr(float(lr)) for lr in lrs),
                "params": ",".join(f"{n}:{TORCH_DTYPE_NAMES[d]}:{'x'.join(map(str, s))}" for n, d, s in specs)}
    for key in ("momentum", "dampening", "weight_decay", "nesterov", "eps", "amsgrad", "maximize"):
        if key in group:
            metadata[key] = repr(group[key])
    if "betas" in group:
        metadata["betas"] = ",".join(repr(float(b)) for b in group["betas"])
    write_safetensors(os.path.join(OUT, name + ".safetensors"), tensors, metadata)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (kind, specs, options) in sorted(CASES.items()):
        run_case(name, kind, specs, options, seed=zlib.crc32(name.encode()))  # a case's data never moves
        print("wrote", name)


if __name__ == "__main__":
    main()
