#!/usr/bin/env python3
"""A package against `kiln run`'s compiled model, side by side in one run (issue 15 item 9).

Compiles MODEL into a package in a scratch folder (`kiln compile MODEL -o DIR`: where Kiln has
oneDNN, its libraries call oneDNN's convolutions as `kiln run --target cpu` does, and im2col +
GEMM ones ship beside them for CMake builds without oneDNN), and with --portable also a package
of the im2col + GEMM convolutions alone (`kiln compile --portable`, needing only a compiler,
OpenMP and BLAS), then times, in alternating rounds so that all see the same machine,
`kiln bench MODEL --target cpu` (the compiled model behind Kiln's runtime) and `kiln bench DIR`
for each package (the package's own library, as an app links it), and prints each one's median
of medians and its fastest run (the least disturbed by other load on a shared machine), their
ratios to `kiln run` (and the median of the rounds' own ratios), and the package's sizes: its weights file, its shared
library (all instruction sets), and each instruction set's kernels (text + data + bss of
NAME_<isa>.o in libNAME.a, `size`) besides the API's (NAME.o). Extra arguments go to every
bench (e.g. --dim s0=32 --threads 2). With --freeze the packages are compiled and `kiln run`
benched with frozen parameters. Only the standard library (and binutils' `size`).

  bench/compare_package.py samples/models/mlp.kiln --dim s0=64 --threads 2
  bench/compare_package.py model.onnx --freeze --input x=x.npy --threads 2
  bench/compare_package.py .cache/onnx-tests/resnet18/model.onnx --portable --threads 2 --rounds 5 --iters 10
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
    timing = json.loads(result.stdout)
    return timing["median_ms"], timing["min_ms"]


def object_sizes(archive):
    """text + data + bss of each member of a static library, by member name."""
    result = subprocess.run(["size", archive], capture_output=True, text=True, check=True)
    sizes = {}
    for line in result.stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 6:
            sizes[fields[5].split("(")[0].split(" ")[0]] = int(fields[3])
    return sizes


def compile_package(kiln, model, folder, extra):
    compiled = subprocess.run([kiln, "compile", model, "-o", folder, "--name", "model"] + extra, capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.exit(f"compare_package: kiln compile -o {' '.join(extra)} failed: {compiled.stderr.strip()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--kiln", default="build/tools/kiln")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--portable", action="store_true",
                        help="also time a package compiled with --portable (im2col + GEMM convolutions alone)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--freeze", action="store_true",
                        help="compile the packages with frozen parameters, and bench `kiln run` so")
    args, extra = parser.parse_known_args()
    frozen = ["--freeze"] if args.freeze else []
    with tempfile.TemporaryDirectory() as scratch:
        packages = {"package": os.path.join(scratch, "package")}
        compile_package(args.kiln, args.model, packages["package"], frozen)
        if args.portable:
            packages["package_portable"] = os.path.join(scratch, "package_portable")
            compile_package(args.kiln, args.model, packages["package_portable"], ["--portable"] + frozen)
        times = {"kiln_run": []}
        times.update({name: [] for name in packages})
        minimums = {name: [] for name in times}
        for _ in range(args.rounds):
            for name, target, flags in [("kiln_run", args.model, ["--target", "cpu"] + frozen)] + [(n, f, []) for n, f in packages.items()]:
                median, minimum = bench(args.kiln, target, flags + extra, args.iters)
                times[name].append(median)
                minimums[name].append(minimum)
        medians = {name: statistics.median(values) for name, values in times.items()}
        fastest = {name: min(values) for name, values in minimums.items()}
        result = {
            "model": args.model,
            "arguments": extra,
            "frozen": args.freeze,
            "medians_ms": medians,
            "over_kiln_run": {name: medians[name] / medians["kiln_run"] for name in packages},
            # Each round's ratio, then their median: a round's sides saw about the same load.
            "round_ratio_median": {name: statistics.median(p / k for p, k in zip(times[name], times["kiln_run"]))
                                   for name in packages},
            "fastest_ms": fastest,
            "fastest_over_kiln_run": {name: fastest[name] / fastest["kiln_run"] for name in packages},
            "rounds_ms": times,
            "rounds_fastest_ms": minimums,
            "weights_bytes": os.path.getsize(os.path.join(packages["package"], "model.safetensors")),
            "sizes": {},
        }
        for name, folder in packages.items():
            result["sizes"][name] = {
                "shared_library_bytes": os.path.getsize(os.path.join(folder, "libmodel.so")),
                "objects_text_data_bss": object_sizes(os.path.join(folder, "libmodel.a")),
            }
    line = f"{args.model}: kiln run (cpu) {medians['kiln_run']:.4f} ms"
    for name in packages:
        line += f", {name} {medians[name]:.4f} ms (x{result['over_kiln_run'][name]:.3f}, median of the rounds' ratios x{result['round_ratio_median'][name]:.3f})"
    print(line)
    line = f"fastest run: kiln run (cpu) {fastest['kiln_run']:.4f} ms"
    for name in packages:
        line += f", {name} {fastest[name]:.4f} ms (x{result['fastest_over_kiln_run'][name]:.3f})"
    print(line)
    print(f"weights {result['weights_bytes']} bytes")
    for name, sizes in result["sizes"].items():
        objects = ", ".join(f"{member} {size}" for member, size in sorted(sizes["objects_text_data_bss"].items()))
        print(f"{name}: libmodel.so {sizes['shared_library_bytes']} bytes (all instruction sets); per object: {objects}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
