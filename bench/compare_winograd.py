#!/usr/bin/env python3
"""Frozen 3x3 convolutions through Kiln, oneDNN's Winograd against its direct convolution.

For each shape (batch, in channels, out channels, side[, padding]) it writes a one-convolution ONNX
model (3x3, stride 1, padding 1 unless given, bias, random weights) and times `kiln bench MODEL --freeze --threads T
--json` with KILN_WINOGRAD=0 (every convolution direct) and unset (Kiln's choice:
kiln_winograd_suits in codegen/cpp/kiln_dnnl.h), in interleaved rounds, pinned with taskset where
it exists. The weights of one convolution stay in the caches between calls here, which a whole
model does not give them: the shapes with few output points (7x7 at batch 1) lose in a model
where they win here, so the rule also needs 64 points (see bench/README.md).

Prints one line per shape: the medians of both, their ratio, and whether Kiln chose Winograd
(the ratio is 1 within noise where it did not). Writes the results as JSON
(bench/results/compare_winograd-DATE.json by default).

  python3 bench/compare_winograd.py [--kiln build/tools/kiln] [--threads 2] [--rounds 3]
                                    [--shapes N,C,O,SIDE[,PAD] ...]

It re-executes itself under the reference Python of scripts/python-env (for `onnx`).
"""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_python import reexecute_under_reference_python  # noqa: E402

SHAPES = [  # batch, in channels, out channels, side: ResNet's, GoogLeNet's, EfficientNet-V2's, DenseNet's, and losers
    (1, 64, 64, 56), (1, 128, 128, 28), (1, 256, 256, 14), (1, 512, 512, 7), (8, 64, 64, 56),
    (8, 512, 512, 7), (1, 96, 128, 28), (1, 48, 192, 56), (1, 128, 32, 56), (1, 32, 32, 112),
    (1, 16, 64, 56), (1, 512, 512, 2)]


def write_model(path, batch, cin, cout, side, pad):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(cin * 1000 + cout)
    w = (rng.standard_normal((cout, cin, 3, 3)) * (2.0 / (cin * 9)) ** 0.5).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) * 0.1
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[pad] * 4)
    out = side + 2 * pad - 2
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, cout, out, out])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


def bench(kiln, model, threads, iters, winograd):
    env = dict(os.environ)
    if winograd:
        env.pop("KILN_WINOGRAD", None)
    else:
        env["KILN_WINOGRAD"] = "0"
    cpus = ",".join(str(c) for c in range(threads))
    command = [kiln, "bench", model, "--freeze", "--threads", str(threads), "--iters", str(iters),
               "--random-inputs", "1", "--json"]
    if shutil.which("taskset"):
        command = ["taskset", "-c", cpus] + command
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"kiln bench {model} failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)["median_ms"]


def chooses_winograd(batch, cin, cout, side, pad):
    """kiln_winograd_suits, restated for the report."""
    out = side + 2 * pad - 2
    points = batch * out * out
    return cin >= 48 and cout >= 48 and points >= 64 and points * cin * cout * 9 >= 1 << 24


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kiln", default=os.path.join(root, "build", "tools", "kiln"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--shapes", nargs="+", metavar="N,C,O,SIDE[,PAD]",
                        help="shapes to time instead of the default list (padding 1 unless given)")
    parser.add_argument("--json-out", default=os.path.join(
        root, "bench", "results", f"compare_winograd-{datetime.date.today().isoformat()}.json"))
    args = parser.parse_args()
    if not os.access(args.kiln, os.X_OK):
        raise SystemExit(f"compare_winograd: {args.kiln} is not an executable kiln (build it, or pass --kiln)")
    shapes = [tuple(s) + (1,) for s in SHAPES]
    if args.shapes:
        try:
            shapes = [tuple(int(v) for v in text.split(",")) for text in args.shapes]
            shapes = [s if len(s) == 5 else s + (1,) for s in shapes]
        except ValueError:
            shapes = []
        if not shapes or any(len(s) != 5 or min(s) < 0 or min(s[:4]) < 1 for s in shapes):
            raise SystemExit(f"compare_winograd: --shapes takes N,C,O,SIDE[,PAD] (positive sizes), got {args.shapes}")
    results = []
    print(f"frozen 3x3 convolutions, {args.threads} threads, median of {args.rounds} interleaved rounds")
    print(f"{'shape (N, C -> O, side)':28} {'direct ms':>10} {'kiln ms':>10} {'ratio':>7}  winograd")
    with tempfile.TemporaryDirectory() as folder:
        for batch, cin, cout, side, pad in shapes:
            model = os.path.join(folder, f"conv_{batch}_{cin}_{cout}_{side}_{pad}.onnx")
            write_model(model, batch, cin, cout, side, pad)
            direct, chosen = [], []
            for _ in range(args.rounds):
                direct.append(bench(args.kiln, model, args.threads, args.iters, False))
                chosen.append(bench(args.kiln, model, args.threads, args.iters, True))
            d, k = sorted(direct)[len(direct) // 2], sorted(chosen)[len(chosen) // 2]
            wino = chooses_winograd(batch, cin, cout, side, pad)
            label = f"{batch}, {cin} -> {cout}, {side}x{side}" + ("" if pad == 1 else f" pad {pad}")
            print(f"{label:28} {d:10.3f} {k:10.3f} {k / d:7.2f}  {'yes' if wino else 'no'}", flush=True)
            results.append({"batch": batch, "in_channels": cin, "out_channels": cout, "side": side, "padding": pad,
                            "direct_ms": d, "kiln_ms": k, "ratio": k / d, "winograd": wino,
                            "direct_rounds": direct, "kiln_rounds": chosen})
    os.makedirs(os.path.dirname(args.json_out), exist_ok=True)
    with open(args.json_out, "w") as f:
        json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "threads": args.threads,
                   "rounds": args.rounds, "iters": args.iters, "shapes": results}, f, indent=1)
    print(f"wrote {args.json_out}")


if __name__ == "__main__":
    reexecute_under_reference_python(os.path.abspath(__file__))
    main()
