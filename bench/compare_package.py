#!/usr/bin/env python3
"""A package against `kiln run`'s compiled model, side by side in one run (issue 15 item 9).

Compiles MODEL into a package in a scratch folder (`kiln compile MODEL -o DIR`), then times, in
alternating rounds so that both see the same machine, `kiln bench MODEL --target cpu` (the
compiled model behind Kiln's runtime) and `kiln bench DIR` (the package's own library, as an app
links it), and prints each one's median of medians, their ratio, and the package's sizes: its
weights file and its shared library (all instruction sets). Extra arguments go to both benches
(e.g. --dim s0=32 --threads 2). Only the standard library: no reference Python is needed.

  bench/compare_package.py samples/models/mlp.kiln --dim s0=64 --threads 2
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bench(kiln, target, extra, iters):
    command = [kiln, "bench", target, "--json", "-n", str(iters), "--warmup", "5"] + extra
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"compare_package: {' '.join(command)} failed: {result.stderr.strip()}")
    return json.loads(result.stdout)["median_ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--kiln", default="build/tools/kiln")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json", help="also write the results to this file")
    args, extra = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as scratch:
        package = os.path.join(scratch, "package")
        compiled = subprocess.run([args.kiln, "compile", args.model, "-o", package, "--name", "model"],
                                  capture_output=True, text=True)
        if compiled.returncode != 0:
            sys.exit(f"compare_package: kiln compile -o failed: {compiled.stderr.strip()}")
        model_ms, package_ms = [], []
        for _ in range(args.rounds):
            model_ms.append(bench(args.kiln, args.model, ["--target", "cpu"] + extra, args.iters))
            package_ms.append(bench(args.kiln, package, extra, args.iters))
        result = {
            "model": args.model,
            "arguments": extra,
            "kiln_run_median_ms": statistics.median(model_ms),
            "package_median_ms": statistics.median(package_ms),
            "package_over_kiln_run": statistics.median(package_ms) / statistics.median(model_ms),
            "rounds": {"kiln_run_ms": model_ms, "package_ms": package_ms},
            "weights_bytes": os.path.getsize(os.path.join(package, "model.safetensors")),
            "shared_library_bytes": os.path.getsize(os.path.join(package, "libmodel.so")),
        }
    print(f"{args.model}: kiln run (cpu) {result['kiln_run_median_ms']:.4f} ms, package {result['package_median_ms']:.4f} ms "
          f"(ratio {result['package_over_kiln_run']:.3f}); weights {result['weights_bytes']} bytes, "
          f"libmodel.so {result['shared_library_bytes']} bytes (all instruction sets)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
