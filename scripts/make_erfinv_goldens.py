#!/usr/bin/env python3
"""Writes tests/data/erfinv/erfinv_torch.safetensors: torch.erfinv on chosen inputs.

The interpreter's erfinv (ir/kernels/erfinv.h, tests/ir/erfinv_test.cpp) is checked against
PyTorch's on these values, one pair of tensors per input dtype:
  x_f64, erfinv_f64   float64 in, float64 out
  x_f32, erfinv_f32   float32 in, float32 out
  x_i64, erfinv_i64   int64 in, float32 out (integers promote like torch's unary float ops)
  x_bool, erfinv_bool bool in, float32 out
The float inputs are the edge values (+-0, +-1, beyond +-1, +-inf, NaN, subnormals, the floats
closest to +-1), an even grid over (-1, 1) and points crowding towards +-1.
Run it with the reference environment:  $(scripts/python-env) scripts/make_erfinv_goldens.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample_goldens import write_safetensors  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "erfinv")


def float_inputs(dtype):
    info = torch.finfo(dtype)
    one_below = 1.0 - info.eps / 2  # the largest value below 1
    edges = [0.0, -0.0, 1.0, -1.0, 1.5, -1.5, 2.0, -100.0, float("inf"), float("-inf"), float("nan"),
             info.tiny, -info.tiny, info.smallest_normal / 4, 1e-30, -1e-30, 0.5, -0.5, one_below, -one_below,
             1.0 + info.eps, -1.0 - info.eps]
    grid = torch.linspace(-0.999, 0.999, 201, dtype=torch.float64).tolist()
    crowd = [1.0 - 10.0 ** -k for k in range(1, 16 if dtype == torch.float64 else 8)]
    crowd += [-v for v in crowd]
    return torch.tensor(edges + grid + crowd, dtype=dtype)


def main():
    os.makedirs(OUT, exist_ok=True)
    tensors = {}
    for name, dtype in (("f64", torch.float64), ("f32", torch.float32)):
        x = float_inputs(dtype)
        tensors["x_" + name] = x
        tensors["erfinv_" + name] = torch.erfinv(x)
    x_int = torch.tensor([-3, -1, 0, 1, 2, 7], dtype=torch.int64)
    tensors["x_i64"], tensors["erfinv_i64"] = x_int, torch.erfinv(x_int)
    x_bool = torch.tensor([True, False, True])
    tensors["x_bool"], tensors["erfinv_bool"] = x_bool, torch.erfinv(x_bool)
    assert tensors["erfinv_i64"].dtype == torch.float32 and tensors["erfinv_bool"].dtype == torch.float32
    write_safetensors(os.path.join(OUT, "erfinv_torch.safetensors"), tensors,
                      {"torch": torch.__version__, "script": "scripts/make_erfinv_goldens.py"})


if __name__ == "__main__":
    main()
