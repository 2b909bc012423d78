#!/usr/bin/env python3
"""Writes the PyTorch goldens of the module API tests (tests/training/).

For each model, built with torch.nn from a fixed seed, this writes two safetensors files in
tests/data/training/:
  NAME.weights.safetensors   the model's state_dict (PyTorch's names: fc1.weight, 0.running_mean, ...)
  NAME.io.safetensors        fixed inputs ("input.*") and PyTorch's results ("expected.*")
Models: an MLP (Linear, ReLU, Dropout, Linear) in eval mode; a CNN (Conv2d, BatchNorm2d, ReLU,
...) in eval mode and in training mode (with the running statistics after one training
forward); an attention block (Embedding, LayerNorm, MultiheadAttention with a causal mask and
a key padding mask, GELU MLP) with its averaged attention weights.
Run it with the reference environment:  $(scripts/python-env) scripts/make_training_goldens.py
"""
import os

import torch
import torch.nn as nn

from make_sample_goldens import write_safetensors

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "training")


def write_model(name, model, inputs, expected):
    write_safetensors(os.path.join(ROOT, name + ".weights.safetensors"), model.state_dict())
    io = {"input." + key: value for key, value in inputs.items()}
    io.update({"expected." + key: value for key, value in expected.items()})
    write_safetensors(os.path.join(ROOT, name + ".io.safetensors"), io)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


def mlp():
    torch.manual_seed(10)
    model = MLP().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        y = model(x)
    write_model("mlp", model, {"x": x}, {"y": y})


def cnn_model():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 4, 3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(4),
        nn.SiLU(),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 5),
    )


def cnn():
    torch.manual_seed(20)
    model = cnn_model()
    with torch.no_grad():  # non-trivial normalization parameters and statistics
        for index in (1, 4):
            bn = model[index]
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
            bn.running_mean.uniform_(-0.3, 0.3)
            bn.running_var.uniform_(0.5, 2.0)
            bn.num_batches_tracked.fill_(3)
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        y_eval = model.eval()(x)
    write_model("cnn", model, {"x": x}, {"y_eval": y_eval})
    # Training mode: batch statistics, and one update of the running statistics.
    with torch.no_grad():
        y_train = model.train()(x)
    expected = {"y_train": y_train}
    for index in (1, 4):
        for buffer in ("running_mean", "running_var", "num_batches_tracked"):
            expected[f"{index}.{buffer}"] = getattr(model[index], buffer)
    io = {"input.x": x}
    io.update({"expected." + key: value for key, value in expected.items()})
    write_safetensors(os.path.join(ROOT, "cnn_train.io.safetensors"), io)


class AttentionBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 16)
        self.ln1 = nn.LayerNorm(16)
        self.attn = nn.MultiheadAttention(16, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(32, 16)

    def forward(self, tokens, attn_mask, key_padding_mask):
        x = self.embed(tokens)
        h = self.ln1(x)
        attended, weights = self.attn(h, h, h, key_padding_mask=key_padding_mask, attn_mask=attn_mask)
        x = x + attended
        return x + self.fc2(self.act(self.fc1(self.ln2(x)))), weights


def attention():
    torch.manual_seed(30)
    model = AttentionBlock().eval()
    with torch.no_grad():  # PyTorch starts these at zero and one; make them matter
        model.attn.in_proj_bias.uniform_(-0.2, 0.2)
        model.attn.out_proj.bias.uniform_(-0.2, 0.2)
        model.ln1.weight.uniform_(0.5, 1.5)
        model.ln1.bias.uniform_(-0.2, 0.2)
    tokens = torch.randint(0, 20, (2, 5))
    length = tokens.shape[1]
    attn_mask = torch.triu(torch.ones(length, length, dtype=torch.bool), diagonal=1)
    key_padding_mask = torch.zeros(2, length, dtype=torch.bool)
    key_padding_mask[1, 4] = True
    with torch.no_grad():
        y, weights = model(tokens, attn_mask, key_padding_mask)
    write_model("attention", model,
                {"tokens": tokens, "attn_mask": attn_mask, "key_padding_mask": key_padding_mask},
                {"y": y, "weights": weights})


if __name__ == "__main__":
    os.makedirs(ROOT, exist_ok=True)
    mlp()
    cnn()
    attention()
