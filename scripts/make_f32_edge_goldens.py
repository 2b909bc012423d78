#!/usr/bin/env python3
"""Writes PyTorch's results for Kiln's reductions and normalizations on rows that hold values at
the edges of f32's range (huge, 1e20 whose square overflows, tiny and subnormal, +-inf, NaN), the
golden data of tests/compiler/f32_edges_test.cpp and tests/cuda_codegen/f32_edges_test.cpp:

  tests/data/f32_edges/goldens.safetensors   per case NAME: NAME.x (the input), NAME.out0 (and
                                             NAME.out1 for var_mean's mean); metadata
                                             "case.NAME" = the op (see OPS below)
  tests/data/f32_edges/logsumexp.onnx        ReduceLogSumExp over the last axis (keepdims=0),
                                             compared with torch.logsumexp

Rows are 8, 16 or 32 long, and row 0 holds the edge values at positions 1, 4 and 7 (row 1 is
plain). There PyTorch's CPU kernels give the plain f32 result: statistics in f32, so a variance
past f32's range is inf, 1 / sqrt(inf) is 0 and the row normalizes to 0 (then * weight + bias).
With the overflowing value first in a vector chunk of a row (position 0, 24 of 32, ...) PyTorch's
layer_norm gives NaN instead, an artifact of how it folds a Welford state into an empty one; Kiln
gives the plain result wherever the value sits.
Run with the reference environment:  $(scripts/python-env) scripts/make_f32_edge_goldens.py
"""
import json
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "f32_edges")

EDGES = {
    "huge": [3e38],
    "huge_negative": [-3e38],
    "square_overflows": [1e21],
    "tiny": [1e-40, -1e-45, 1.2e-38],
    "pos_inf": [float("inf")],
    "neg_inf": [float("-inf")],
    "nan": [float("nan")],
    "plain": [],
}

# op name -> function of x (rows along the last dim, [2, N]) giving a tuple of outputs; the
# weights are fixed so that Kiln's graph (built in tests/support/f32_edge_cases.cpp) matches.
def weight(n):
    return torch.linspace(0.5, 1.5, n)


def bias(n):
    return torch.linspace(-0.25, 0.25, n)


OPS = {
    "softmax": lambda x: (torch.softmax(x, -1),),
    "log_softmax": lambda x: (torch.log_softmax(x, -1),),
    "layer_norm": lambda x: (F.layer_norm(x, [x.shape[-1]], weight(x.shape[-1]), bias(x.shape[-1]), 1e-5),),
    "rms_norm": lambda x: (F.rms_norm(x, [x.shape[-1]], weight(x.shape[-1])),),
    # [2, N] seen as [1, 2, N]: two channels of one group each... (groups=1: the whole sample)
    "group_norm": lambda x: (F.group_norm(x.reshape(1, 2, -1), 1, weight(2), bias(2), 1e-5).reshape(x.shape),),
    # [2, N] transposed to [N, 2]: two channels, N samples each
    "batch_norm": lambda x: (F.batch_norm(x.t(), None, None, weight(2), bias(2), True, 0.1, 1e-5).t().contiguous(),),
    "var": lambda x: (torch.var(x, -1),),
    "var_mean": lambda x: torch.var_mean(x, -1, correction=0),
    "sum": lambda x: (torch.sum(x, -1),),
    "mean": lambda x: (torch.mean(x, -1),),
    "amax": lambda x: (torch.amax(x, -1),),
    "amin": lambda x: (torch.amin(x, -1),),
    "logsumexp": lambda x: (torch.logsumexp(x, -1),),
}


def row(n, edge, generator):
    values = (torch.rand(n, generator=generator) * 4 - 2).tolist()
    for i, value in enumerate(EDGES[edge]):
        values[(3 * i + 1) % n] = value
    if edge == "tiny":
        values = [v * 1e-38 if abs(v) > 1e-30 else v for v in values]
    return values


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        data = tensors[name].contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_logsumexp_onnx(path):
    import onnx
    from onnx import TensorProto, helper
    node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[-1], keepdims=0)
    graph = helper.make_graph([node], "logsumexp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiln")
    model.ir_version = 8
    onnx.save(model, path)


def main():
    os.makedirs(OUT, exist_ok=True)
    generator = torch.Generator().manual_seed(16)
    tensors, metadata = {}, {}
    for op, function in OPS.items():
        for n in (8, 16, 32):
            for edge in EDGES:
                # Row 0 holds the edge values, row 1 is plain (a row's edge must not leak into another).
                x = torch.tensor([row(n, edge, generator), row(n, "plain", generator)], dtype=torch.float32)
                name = f"{op}.{edge}.{n}"
                with torch.no_grad():
                    outputs = function(x)
                tensors[name + ".x"] = x
                for i, output in enumerate(outputs):
                    tensors[f"{name}.out{i}"] = output
                metadata["case." + name] = op
    write_safetensors(os.path.join(OUT, "goldens.safetensors"), tensors, metadata)
    write_logsumexp_onnx(os.path.join(OUT, "logsumexp.onnx"))


if __name__ == "__main__":
    main()
