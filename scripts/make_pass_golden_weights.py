#!/usr/bin/env python3
"""Writes the weights of the pass golden cases that read parameters (tests/passes/golden/):
GROUP/NAME.safetensors beside GROUP/NAME.kiln, one small tensor per get_attr target, with
plain values (the golden test compares each case's results before and after its passes, so
any values do; these are readable ones).
Run it with the reference environment:  $(scripts/python-env) scripts/make_pass_golden_weights.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample_goldens import write_safetensors  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "passes", "golden")

W_2X3 = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 2 - 1

CASES = {
    "cse/duplicate_get_attr": {"w": torch.tensor([0.5, -2.0])},
    "dce/dead_get_attr": {"w": torch.tensor([1.0, 2.0])},
    "constant_fold/parameters_kept_without_freeze": {"w": W_2X3},
    "constant_fold/parameters_with_freeze": {"w": W_2X3},
    "constant_fold/through_constant_tensor": {"mask": torch.tensor([1.0, 0.0, 1.0]),
                                              "w": torch.tensor([0.25, 0.5, 0.75])},
    "constant_fold/large_copy_folded": {"w": (torch.arange(4 * 128 * 160) % 251 - 125).to(torch.int8).reshape(4, 128, 160)},
    "conv_affine/batch_norm_chain": {"w": torch.arange(108, dtype=torch.float32).reshape(4, 3, 3, 3) / 50 - 1,
                                     "b": torch.tensor([0.1, -0.2, 0.3, 0.0]),
                                     "mean": torch.tensor([0.5, -1.0, 0.25, 2.0]).reshape(4, 1, 1),
                                     "rstd": torch.tensor([2.0, 0.5, 1.5, 0.75]).reshape(4, 1, 1),
                                     "gamma": torch.tensor([1.0, -1.0, 0.5, 2.0]).reshape(4, 1, 1),
                                     "beta": torch.tensor([0.0, 0.5, -0.5, 1.0]).reshape(4, 1, 1)},
    "conv_affine/without_bias": {"w": torch.arange(72, dtype=torch.float32).reshape(4, 2, 3, 3) / 36 - 1,
                                 "s": torch.tensor([2.0, -4.0, 0.5, 8.0]).reshape(1, 4, 1, 1),
                                 "k": torch.tensor([3.0])},
    "conv_affine/not_per_channel_kept": {"w": torch.tensor([1.0, -1.0, 0.5, 2.0]).reshape(2, 2, 1, 1),
                                         "rows": torch.tensor([1.0, 2.0, 3.0, 4.0]).reshape(4, 1),
                                         "t": torch.tensor([2.0, -3.0]).reshape(2, 1, 1),
                                         "zero": torch.tensor([1.0, 0.0]).reshape(2, 1, 1)},
    "conv_affine/kept_without_freeze": {"w": torch.arange(108, dtype=torch.float32).reshape(4, 3, 3, 3) / 50 - 1,
                                        "rstd": torch.tensor([2.0, 0.5, 1.5, 0.75]).reshape(4, 1, 1)},
}

for case, tensors in CASES.items():
    write_safetensors(os.path.join(ROOT, case + ".safetensors"), tensors)
    print("wrote", case + ".safetensors")
