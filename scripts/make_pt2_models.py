"""Exports whole models with torch.export for Kiln's .pt2 model tests (tests/pt2_conformance/,
Pt2Models.*) and the benchmark (bench/compare_pt2.py). Called by scripts/make-pt2-test-data;
writes, per model:

  OUT/<model>/static.pt2        exported at batch 1 (every size static)
  OUT/<model>/dynamic.pt2       exported with a dynamic batch dim (Dim("batch", min=1, max=64))
  OUT/<model>/input_<b>.npy     inputs at batch 1 and 3 (token ids for the language models)
  OUT/<model>/expected_<b>.npy  eager PyTorch's output on them
  OUT/<model>/meta.json         the model's family, parameter count, export times, or why
                                torch.export refused it

The models: torchvision's classifiers (random weights from a fixed seed, batch norms given the
statistics of their own activations and zero weights drawn small (trained_like), eval mode, 224x224
images; 299x299 for inception_v3), an nn.TransformerEncoder and a small causal GPT built from
torch.nn (dynamic sequence length too). A model's folder is written to OUT/<model>.partial and
renamed when complete, so an interrupted run resumes; models already present are skipped.
"""

import argparse
import json
import os
import shutil
import sys
import time
import traceback
import warnings

# torchvision classifiers: one or two of each family, smallest first. `--all` takes every
# classification model torchvision lists instead.
CLASSIFIERS = [
    "resnet18", "resnet50", "resnext50_32x4d", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
    "efficientnet_b0", "efficientnet_v2_s", "regnet_x_400mf", "regnet_y_400mf", "squeezenet1_1",
    "shufflenet_v2_x1_0", "mnasnet0_5", "densenet121", "googlenet", "inception_v3", "convnext_tiny",
    "vit_b_16", "swin_t", "swin_v2_t", "maxvit_t",
]
LANGUAGE_MODELS = ["transformer_encoder", "gpt"]


def transformer_encoder(torch):
    nn = torch.nn

    class Encoder(nn.Module):
        """Two nn.TransformerEncoderLayer (d 128, 4 heads, GELU, pre-norm) over embedded tokens."""

        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(1000, 128)
            layer = nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(128, 10)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)).mean(dim=1))

    return Encoder()


def gpt(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        """A 4-layer causal transformer (d 128, 4 heads, vocabulary 1000, context 128), tied head."""

        def __init__(self):
            super().__init__()
            self.tokens, self.positions = nn.Embedding(1000, 128), nn.Embedding(128, 128)
            self.blocks = nn.ModuleList(Block(128, 4) for _ in range(4))
            self.ln = nn.LayerNorm(128)

        def forward(self, idx):
            x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            return self.ln(x) @ self.tokens.weight.t()

    return GPT()


def build(name, torch):
    import torchvision

    torch.manual_seed(0)
    if name == "transformer_encoder":
        return transformer_encoder(torch), "language"
    if name == "gpt":
        return gpt(torch), "language"
    kwargs = {"weights": None}
    if name in ("googlenet", "inception_v3"):
        kwargs["aux_logits"] = False
        kwargs["init_weights"] = True
    return trained_like(torchvision.models.get_model(name, **kwargs), name, torch), "classifier"


def trained_like(model, name, torch, rounds=2, batch=4):
    """A fresh classifier made to compute something that depends on its input, as a trained one does:
    weights it leaves at zero (ViT's head) drawn small, and its batch norms given the running
    statistics of their own inputs over random images (a plain average: momentum None). Fresh,
    GoogLeNet's activations faded through its layers to its classifier's bias and ViT's output was
    zero whatever the image, so their tests compared nothing of the network. The statistics are those of
    `rounds` batches of `batch` images (bench/compare_suite.py takes more)."""
    generator = torch.Generator().manual_seed(11)
    size = 299 if name == "inception_v3" else 224
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() >= 2 and not parameter.any():
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.02)
        norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        for norm in norms:
            norm.reset_running_stats()
            norm.momentum = None
        if norms:
            model.train()
            for _ in range(rounds):
                model(torch.randn((batch, 3, size, size), generator=generator))
    return model.eval()


def example(name, family, batch, torch):
    generator = torch.Generator().manual_seed(batch)
    if family == "language":
        return torch.randint(0, 1000, (batch, 32), generator=generator)
    size = 299 if name == "inception_v3" else 224
    return torch.randn(batch, 3, size, size, generator=generator)


def export_model(name, out):
    import numpy as np
    import torch

    torch.set_num_threads(2)
    final = os.path.join(out, name)
    partial = final + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    meta = {"model": name}
    try:
        model, family = build(name, torch)
        model.eval()
        meta["family"] = family
        meta["parameters"] = sum(p.numel() for p in model.parameters())
        with torch.no_grad():
            for batch in (1, 3):
                x = example(name, family, batch, torch)
                np.save(os.path.join(partial, f"input_{batch}.npy"), x.numpy())
                np.save(os.path.join(partial, f"expected_{batch}.npy"), model(x).numpy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.time()
            program = torch.export.export(model, (example(name, family, 1, torch),))
            torch.export.save(program, os.path.join(partial, "static.pt2"))
            meta["static_export_seconds"] = round(time.time() - start, 1)
            start = time.time()
            batch = torch.export.Dim("batch", min=1, max=64)
            program = torch.export.export(model, (example(name, family, 2, torch),), dynamic_shapes=({0: batch},))
            torch.export.save(program, os.path.join(partial, "dynamic.pt2"))
            meta["dynamic_export_seconds"] = round(time.time() - start, 1)
        meta["status"] = "exported"
    except Exception as error:
        meta["status"] = "export_refused"
        meta["reason"] = type(error).__name__ + ": " + (str(error).splitlines() or [""])[0][:400]
        meta["traceback"] = traceback.format_exc().splitlines()[-3:]
    with open(os.path.join(partial, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(partial, final)
    return meta


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--all", action="store_true", help="every torchvision classification model")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    names = CLASSIFIERS + LANGUAGE_MODELS
    if args.all:
        import torchvision

        names = sorted(torchvision.models.list_models(module=torchvision.models)) + LANGUAGE_MODELS
    if args.only:
        names = [name for name in names if name in args.only]
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    for name in names:
        if not args.only and os.path.exists(os.path.join(args.out, name, "meta.json")):
            continue
        begin = time.time()
        meta = export_model(name, args.out)
        print(f"  {name}: {meta['status']} ({time.time() - begin:.0f} s)", flush=True)
    with open(os.path.join(args.out, "index.json"), "w") as f:
        json.dump({"models": names}, f, indent=1)
    print(f"make_pt2_models: done in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
