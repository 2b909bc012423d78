#!/usr/bin/env python3
"""Writes the GEMM chain that measures Kiln's product over panels at a few rows (bench/README.md,
"Kiln's product over panels on a CPU without AVX-512"): 32 steps of x = tanh(tanh(x @ W) @ V), W
[256, 1024] and V [1024, 256] frozen, as a recurrent layer's steps are, at batch 1, 4 and 8 (the
GEMMs' rows). Writes chain_bN.onnx and x_bN.npy into the folder given (default: the current one).

    "$(scripts/python-env)" bench/make_matmul_chain.py /tmp/chain
    kiln bench /tmp/chain/chain_b4.onnx --freeze --threads 2 --iters 100 -i x=/tmp/chain/x_b4.npy

Needs torch and numpy: the Python that scripts/python-env prints has them."""
import argparse
import os

import numpy as np
import torch


class Chain(torch.nn.Module):
    def __init__(self, width=256, hidden=1024, steps=32):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(width, hidden, generator=generator) * 0.05)
        self.v = torch.nn.Parameter(torch.randn(hidden, width, generator=generator) * 0.05)
        self.steps = steps

    def forward(self, x):
        for _ in range(self.steps):
            x = torch.tanh(torch.tanh(x @ self.w) @ self.v)
        return x


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", default=".")
    parser.add_argument("--batches", default="1,4,8")
    args = parser.parse_args()
    os.makedirs(args.folder, exist_ok=True)
    model = Chain().eval()
    for batch in (int(b) for b in args.batches.split(",")):
        x = torch.randn(batch, 256, generator=torch.Generator().manual_seed(batch))
        path = os.path.join(args.folder, f"chain_b{batch}.onnx")
        with torch.no_grad():
            torch.onnx.export(model, (x,), path, input_names=["x"], dynamo=False)
        np.save(os.path.join(args.folder, f"x_b{batch}.npy"), x.numpy())
        print("wrote", path)


if __name__ == "__main__":
    main()
