#!/usr/bin/env python3
"""One-op models of the ops that models a new user brings leaned on (bench/README.md, "Models a new
user brings"), through Kiln and ONNX Runtime side by side:

  python3 bench/compare_op_probes.py [--kiln build/tools/kiln] [--baseline-kiln OTHER/tools/kiln]
                                     [--threads 2] [--iters 200] [--rounds 3] [--probes a,b]

Each probe is a PyTorch module of one op exported to ONNX (TorchScript exporter, opset 17, as
bench/onnx_engines.py exports): a running sum along a middle dim and over an outer product, a
top-k of rows, a gather of table rows by index, a scatter_add of edge features into nodes and a
grid_sample. Kiln runs `kiln bench PROBE.onnx --freeze` (and the baseline build, with its own
cache, when given), ONNX Runtime its CPU provider with every optimization, `--threads` threads
each, in interleaved rounds (each engine keeps its best round's median). Kiln's outputs are
checked against ONNX Runtime's in the same run (`kiln run --target cpu --freeze -o`). It prints a
table and writes bench/results/compare_op_probes-DATE.json.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_python import reexecute_under_reference_python  # noqa: E402

reexecute_under_reference_python(__file__)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from onnx_engines import export, ort_call_times, ort_session  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CumsumOverTime(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)


class CumsumOfOuterProducts(torch.nn.Module):
    """A linear attention's running state: the cumulative sum over time of k (x) v."""

    def forward(self, k, v):
        return torch.cumsum(k.unsqueeze(-1) * v.unsqueeze(-2), dim=1)


class TopKOfRows(torch.nn.Module):
    """A k-nearest-neighbour graph's selection (DGCNN): the 16 largest of each row."""

    def forward(self, d):
        return d.topk(16, dim=-1)[1]


class GatherRows(torch.nn.Module):
    def forward(self, table, idx):
        return table[idx]


class ScatterAddEdges(torch.nn.Module):
    """A message passing's aggregation: edge features summed into their destination nodes."""

    def forward(self, x, idx, src):
        return x + torch.zeros_like(x).scatter_add_(0, idx, src)


class GridSample(torch.nn.Module):
    def forward(self, x, grid):
        return F.grid_sample(x, grid, align_corners=False)


def probes(rng):
    destinations = rng.integers(0, 200, size=(800,)).astype(np.int64)
    return {
        "cumsum": (CumsumOverTime(), {"x": rng.standard_normal((2, 64, 4096)).astype(np.float32)}),
        "cumsum_outer": (CumsumOfOuterProducts(), {"k": rng.random((2, 64, 4, 32)).astype(np.float32),
                                                   "v": rng.standard_normal((2, 64, 4, 32)).astype(np.float32)}),
        "topk": (TopKOfRows(), {"d": rng.standard_normal((2, 256, 256)).astype(np.float32)}),
        "gather_rows": (GatherRows(), {"table": rng.standard_normal((512, 64)).astype(np.float32),
                                       "idx": rng.integers(0, 512, size=(8192,)).astype(np.int64)}),
        "scatter_add": (ScatterAddEdges(), {"x": rng.standard_normal((200, 64)).astype(np.float32),
                                            "idx": np.repeat(destinations[:, None], 64, 1),
                                            "src": rng.standard_normal((800, 64)).astype(np.float32)}),
        "grid_sample": (GridSample(), {"x": rng.standard_normal((2, 1, 28, 28)).astype(np.float32),
                                       "grid": (rng.random((2, 28, 28, 2)) * 2 - 1).astype(np.float32)}),
    }


def kiln(binary, argv, cache_dir, threads):
    env = dict(os.environ, KILN_CACHE_DIR=cache_dir, OMP_NUM_THREADS=str(threads))
    result = subprocess.run([binary] + argv, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join([binary] + argv)}: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def kiln_median(binary, model, flags, cache_dir, args):
    out = kiln(binary, ["bench", model, "--target", "cpu", "--freeze", "--json", "--iters", str(args.iters),
                        "--threads", str(args.threads)] + flags, cache_dir, args.threads)
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def ort_median(session, inputs, iters):
    return float(np.median(ort_call_times(session, inputs, iters)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln"))
    parser.add_argument("--baseline-kiln", help="another build of Kiln, timed as one more engine")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--probes", help="comma-separated names (default: all)")
    parser.add_argument("--json-out", help="default: bench/results/compare_op_probes-DATE.json")
    args = parser.parse_args()
    for binary in filter(None, [args.kiln, args.baseline_kiln]):
        if not os.access(binary, os.X_OK):
            sys.exit(f"compare_op_probes: {binary} is not an executable (build Kiln first: scripts/setup)")
    torch.set_num_threads(args.threads)
    chosen = probes(np.random.default_rng(20261207))
    if args.probes:
        unknown = sorted(set(args.probes.split(",")) - set(chosen))
        if unknown:
            sys.exit(f"compare_op_probes: no probe {', '.join(unknown)} (probes: {', '.join(chosen)})")
        chosen = {name: chosen[name] for name in args.probes.split(",")}
    rows = []
    with tempfile.TemporaryDirectory() as work:
        caches = {"kiln": os.path.join(work, "cache"), "base": os.path.join(work, "cache-base")}
        for name, (module, inputs) in chosen.items():
            model = os.path.join(work, f"{name}.onnx")
            export(module, inputs, model)
            flags = []
            for input_name, array in inputs.items():
                path = os.path.join(work, f"{name}_{input_name}.npy")
                np.save(path, array)
                flags += ["--input", f"{input_name}={path}"]
            session = ort_session(model, args.threads)
            expected = session.run(None, inputs)[0]
            out_dir = os.path.join(work, f"{name}_out")
            kiln(args.kiln, ["run", model, "--target", "cpu", "--freeze", "-o", out_dir] + flags, caches["kiln"],
                 args.threads)
            got = np.load(os.path.join(out_dir, "y.npy"))
            scale = max(float(np.max(np.abs(expected))), 1e-30)
            error = float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64)))) / scale
            engines = {"kiln": lambda: kiln_median(args.kiln, model, flags, caches["kiln"], args),
                       "ort": lambda: ort_median(session, inputs, args.iters)}
            if args.baseline_kiln:
                engines["base"] = lambda: kiln_median(args.baseline_kiln, model, flags, caches["base"], args)
            best = {engine: float("inf") for engine in engines}
            for _ in range(args.rounds):
                for engine, measure in engines.items():
                    best[engine] = min(best[engine], measure())
            row = {"probe": name, "inputs": {k: list(v.shape) for k, v in inputs.items()}, "max_rel_error": error}
            row.update({f"{engine}_ms": value for engine, value in best.items()})
            row["kiln_over_ort"] = best["kiln"] / best["ort"]
            if "base" in best:
                row["kiln_over_base"] = best["kiln"] / best["base"]
            rows.append(row)
            base = f"  base {best['base']:.4f} ms  kiln/base {row['kiln_over_base']:.2f}" if "base" in best else ""
            print(f"{name:14s} kiln {best['kiln']:.4f} ms  ort {best['ort']:.4f} ms  kiln/ort {row['kiln_over_ort']:.2f}"
                  f"{base}  max rel error {error:.1e}", flush=True)
    path = args.json_out or os.path.join(REPO, "bench", "results",
                                         f"compare_op_probes-{datetime.date.today().isoformat()}.json")
    with open(path, "w") as f:
        json.dump({"threads": args.threads, "iters": args.iters, "rounds": args.rounds, "probes": rows}, f, indent=1)
    print("wrote", os.path.relpath(path, REPO))
    bad = [row["probe"] for row in rows if row["max_rel_error"] > 1e-5]
    if bad:
        sys.exit(f"compare_op_probes: Kiln's outputs differ from ONNX Runtime's: {', '.join(bad)}")


if __name__ == "__main__":
    main()
