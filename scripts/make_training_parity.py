#!/usr/bin/env python3
"""Writes PyTorch's reference for Kiln's training parity tests into tests/data/training_parity/.

For two fixed models, an MLP (784-128-10) and a small CNN (1x16x16 images), on fixed synthetic
data (10 classes, each a random prototype plus noise), this trains 20 steps with SGD and,
from the same initial weights, 20 steps with Adam, and writes per model:
  <model>/init.safetensors   the initial weights, named by module path (fc1.weight, ...)
  <model>/x.npy, <model>/y.npy  the batches: x [steps, batch, ...] f32, y [steps, batch] i64
  <model>/losses.json        the loss of each step (computed before that step's update, as
                             Kiln's step(batch) returns it), the optimizers' settings, and
  <model>/final_<opt>.safetensors  the weights after the 20 steps.
The loss is cross_entropy (mean). Everything runs in f32 on one thread, deterministically.
Run it with the reference environment:  $(scripts/python-env) scripts/make_training_parity.py
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_sample_goldens import write_safetensors  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "training_parity")
STEPS = 20
CLASSES = 10
OPTIMIZERS = {
    "sgd": {"kind": "sgd", "lr": 0.01, "momentum": 0.9, "dampening": 0.0, "nesterov": False, "weight_decay": 1e-4},
    "adam": {"kind": "adam", "lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0},
}


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def make_data(rng, sample_shape, batch, noise_scale):
    """Each class is a random prototype; a sample is its prototype plus noise."""
    prototypes = rng.standard_normal((CLASSES,) + sample_shape).astype(np.float32)
    y = rng.integers(0, CLASSES, size=(STEPS, batch)).astype(np.int64)
    noise = rng.standard_normal((STEPS, batch) + sample_shape).astype(np.float32)
    x = (prototypes[y] + noise_scale * noise).astype(np.float32)
    return x, y


def make_optimizer(params, settings):
    if settings["kind"] == "sgd":
        return torch.optim.SGD(params, lr=settings["lr"], momentum=settings["momentum"],
                               dampening=settings["dampening"], nesterov=settings["nesterov"],
                               weight_decay=settings["weight_decay"])
    return torch.optim.Adam(params, lr=settings["lr"], betas=tuple(settings["betas"]), eps=settings["eps"],
                            weight_decay=settings["weight_decay"])


def train(model, init, x, y, settings):
    model.load_state_dict(init)
    optimizer = make_optimizer(model.parameters(), settings)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(torch.from_numpy(x[step])), torch.from_numpy(y[step]))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, {name: t.detach().clone() for name, t in model.state_dict().items()}


def write_model(name, model, sample_shape, batch, noise_scale, seed):
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    folder = os.path.join(ROOT, name)
    os.makedirs(folder, exist_ok=True)
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    x, y = make_data(rng, sample_shape, batch, noise_scale)
    write_safetensors(os.path.join(folder, "init.safetensors"), init)
    np.save(os.path.join(folder, "x.npy"), x)
    np.save(os.path.join(folder, "y.npy"), y)
    report = {"steps": STEPS, "batch": batch, "loss": "cross_entropy (mean)", "optimizers": OPTIMIZERS, "losses": {}}
    for opt_name, settings in OPTIMIZERS.items():
        losses, final = train(model, init, x, y, settings)
        report["losses"][opt_name] = losses
        write_safetensors(os.path.join(folder, f"final_{opt_name}.safetensors"), final)
        print(f"{name} {opt_name}: loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    with open(os.path.join(folder, "losses.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")


def main():
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(0)
    write_model("mlp", Mlp(), (784,), 16, 4.0, 20261129)
    torch.manual_seed(1)
    write_model("cnn", SmallCnn(), (1, 16, 16), 16, 0.5, 20261130)


if __name__ == "__main__":
    main()
