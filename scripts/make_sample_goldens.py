#!/usr/bin/env python3
"""Writes the bundled sample models' weights, fixed inputs and expected outputs.

For each sample in samples/models/ (the graph itself is the hand-written NAME.kiln), this
builds the same computation in PyTorch, with weights from a fixed seed, and writes:
  samples/models/NAME.safetensors              the weights, by the get_attr targets of NAME.kiln
  samples/models/NAME_data/inputs/INPUT.npy    fixed inputs
  samples/models/NAME_data/expected/OUTPUT.npy PyTorch's outputs (the golden data)
Run it with the reference environment:  $(scripts/python-env) scripts/make_sample_goldens.py
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "samples", "models")


def write_safetensors(path, tensors, metadata=None):
    """The Hugging Face safetensors layout: u64 header length, JSON header (with string
    `metadata` first when given), raw little-endian data."""
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int8: "I8", torch.bool: "BOOL"}
    header, blobs, offset = ({"__metadata__": metadata} if metadata is not None else {}), [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def write_case(name, weights, inputs, outputs):
    write_safetensors(os.path.join(ROOT, name + ".safetensors"), weights)
    for kind, values in (("inputs", inputs), ("expected", outputs)):
        folder = os.path.join(ROOT, name + "_data", kind)
        os.makedirs(folder, exist_ok=True)
        for key, value in values.items():
            np.save(os.path.join(folder, key + ".npy"), value.detach().numpy())


def mlp():
    torch.manual_seed(1)
    fc1, fc2 = torch.nn.Linear(784, 128), torch.nn.Linear(128, 10)
    x = torch.randn(3, 784)
    with torch.no_grad():
        hidden = torch.relu(x @ fc1.weight.t() + fc1.bias)
        probs = torch.softmax(F.linear(hidden, fc2.weight, fc2.bias), dim=1)
    weights = {"fc1.weight": fc1.weight, "fc1.bias": fc1.bias, "fc2.weight": fc2.weight, "fc2.bias": fc2.bias}
    write_case("mlp", weights, {"x": x}, {"probs": probs})


def cnn():
    torch.manual_seed(2)
    conv1, conv2 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 16, 3, padding=1)
    bn, fc = torch.nn.BatchNorm2d(8).eval(), torch.nn.Linear(16, 10)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
        bn.running_mean.uniform_(-0.2, 0.2)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        y = F.max_pool2d(torch.relu(bn(conv1(x))), 2, 2)
        y = F.adaptive_avg_pool2d(torch.relu(conv2(y)), (1, 1))
        logits = fc(torch.flatten(y, 1))
    weights = {"conv1.weight": conv1.weight, "conv1.bias": conv1.bias, "conv2.weight": conv2.weight,
               "conv2.bias": conv2.bias, "bn.weight": bn.weight, "bn.bias": bn.bias,
               "bn.running_mean": bn.running_mean, "bn.running_var": bn.running_var,
               "fc.weight": fc.weight, "fc.bias": fc.bias}
    write_case("cnn", weights, {"x": x}, {"logits": logits})


def attention():
    torch.manual_seed(3)
    dim, heads, seq, batch = 32, 2, 8, 2
    head_dim = dim // heads
    ln1, ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
    with torch.no_grad():
        for ln in (ln1, ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    qkv, proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
    fc1, fc2 = torch.nn.Linear(dim, 2 * dim), torch.nn.Linear(2 * dim, dim)
    x = torch.randn(batch, seq, dim)
    with torch.no_grad():
        h = qkv(ln1(x)).reshape(batch, seq, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = h[0], h[1], h[2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        causal = torch.arange(seq).unsqueeze(1) >= torch.arange(seq).unsqueeze(0)
        scores = torch.where(causal, scores, float("-inf"))
        attended = (torch.softmax(scores, dim=-1) @ v).permute(0, 2, 1, 3).reshape(batch, seq, dim)
        y = x + proj(attended)
        out = y + fc2(F.gelu(fc1(ln2(y))))
    weights = {"ln1.weight": ln1.weight, "ln1.bias": ln1.bias, "qkv.weight": qkv.weight, "qkv.bias": qkv.bias,
               "proj.weight": proj.weight, "proj.bias": proj.bias, "ln2.weight": ln2.weight,
               "ln2.bias": ln2.bias, "fc1.weight": fc1.weight, "fc1.bias": fc1.bias,
               "fc2.weight": fc2.weight, "fc2.bias": fc2.bias}
    write_case("attention", weights, {"x": x}, {"out": out})


def inplace():
    torch.manual_seed(4)
    x = torch.randn(4, 6)
    bias = torch.randn(6)
    with torch.no_grad():
        clone = x.clone()
        clone.mul_(2.0)
        clone[:, 0:3].add_(1.0)
        transposed = clone.transpose(0, 1)
        transposed[2].sub_(0.5)
        transposed.relu_()
        clone[3].fill_(0.5)
        added = clone + bias
        total = added.sum(dim=1)
    write_case("inplace", {"bias": bias}, {"x": x}, {"add": added, "sum_1": total})


def classifier():
    """A training sample: a 2-16-3 classifier whose output is a scalar loss (cross-entropy)."""
    torch.manual_seed(5)
    fc1, fc2 = torch.nn.Linear(2, 16), torch.nn.Linear(16, 3)
    x = torch.randn(6, 2)
    labels = torch.tensor([0, 2, 1, 1, 0, 2])
    with torch.no_grad():
        loss = F.cross_entropy(F.linear(torch.relu(F.linear(x, fc1.weight, fc1.bias)), fc2.weight, fc2.bias), labels)
    weights = {"fc1.weight": fc1.weight, "fc1.bias": fc1.bias, "fc2.weight": fc2.weight, "fc2.bias": fc2.bias}
    write_case("classifier", weights, {"x": x, "labels": labels}, {"loss": loss})


if __name__ == "__main__":
    torch.set_num_threads(1)
    for make in (mlp, cnn, attention, inplace, classifier):
        make()
        print("wrote", make.__name__)
