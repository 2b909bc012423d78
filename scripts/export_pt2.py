#!/usr/bin/env python3
"""Exports a PyTorch model to a .pt2 file that `kiln compile` reads (torch.export.save).

  python3 scripts/export_pt2.py MODULE:ATTR --input 1x3x224x224 [--input ...] -o model.pt2

MODULE:ATTR names an nn.Module, or a function or class that returns one when called without
arguments ("torchvision.models:resnet18", "mypackage.model:Net", "model.py:net" for a file).
Each --input gives one positional input's shape, with an optional dtype after a colon
("8x128:int64" for token ids; float32 by default); the example inputs are random (seeded) and
are stored in the archive, where `kiln run model.pt2 --sample-inputs` finds them. --dynamic-batch
makes dim 0 of every input a symbol Dim("batch", min=1, max=MAX) (the example batch should then
be 2 or more: torch.export specializes sizes 0 and 1). The model is exported in eval mode unless
--train; --decompose writes the Core ATen program (run_decompositions()) instead of the training
IR. Run it with any Python that has torch (`$(scripts/python-env) scripts/export_pt2.py ...`).
"""

import argparse
import importlib
import importlib.util
import os
import sys


def resolve(spec):
    """MODULE:ATTR (a module path or a .py file, then an attribute path) -> the object."""
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        sys.exit(f"export_pt2: '{spec}' is not MODULE:ATTR (e.g. torchvision.models:resnet18)")
    if module_name.endswith(".py"):
        loader = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(module_name))[0], module_name)
        module = importlib.util.module_from_spec(loader)
        sys.path.insert(0, os.path.dirname(os.path.abspath(module_name)))
        loader.loader.exec_module(module)
    else:
        module = importlib.import_module(module_name)
    value = module
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def example_input(text, torch, generator):
    shape_text, _, dtype_name = text.partition(":")
    shape = [int(size) for size in shape_text.lower().split("x") if size]
    dtype = getattr(torch, dtype_name or "float32")
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, generator=generator) > 0.5
    return torch.randint(0, 10, shape, generator=generator, dtype=dtype)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="MODULE:ATTR of an nn.Module or of a function returning one")
    parser.add_argument("--input", action="append", required=True, help="an input's shape, e.g. 1x3x224x224 or 8x128:int64")
    parser.add_argument("-o", "--output", required=True, help="the .pt2 file to write")
    parser.add_argument("--dynamic-batch", type=int, metavar="MAX", help="make dim 0 dynamic, from 1 to MAX")
    parser.add_argument("--train", action="store_true", help="export in training mode (BatchNorm updates its statistics)")
    parser.add_argument("--decompose", action="store_true", help="write the Core ATen program (run_decompositions())")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    model = resolve(args.model)
    if not isinstance(model, torch.nn.Module):
        model = model()
    if not isinstance(model, torch.nn.Module):
        sys.exit(f"export_pt2: {args.model} is not an nn.Module and does not return one")
    model.train(args.train)
    generator = torch.Generator().manual_seed(args.seed)
    inputs = tuple(example_input(text, torch, generator) for text in args.input)
    dynamic_shapes = None
    if args.dynamic_batch:
        batch = torch.export.Dim("batch", min=1, max=args.dynamic_batch)
        dynamic_shapes = tuple({0: batch} for _ in inputs)
    program = torch.export.export(model, inputs, dynamic_shapes=dynamic_shapes)
    if args.decompose:
        program = program.run_decompositions()
    torch.export.save(program, args.output)
    print(f"wrote {args.output}: {len(program.graph.nodes)} nodes, inputs "
          f"{', '.join('x'.join(map(str, x.shape)) + ':' + str(x.dtype).replace('torch.', '') for x in inputs)}")


if __name__ == "__main__":
    main()
