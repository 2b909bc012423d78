#!/usr/bin/env python3
"""Kiln's CPU backend against ONNX Runtime (CPU), side by side on ONNX models exported from PyTorch.

One run exports, into a temporary directory (TorchScript exporter, opset 17):
  mlp          784-128-10 (relu, softmax) with samples/models/mlp.safetensors' weights, batch 64;
  transformer  torch.nn.TransformerEncoderLayer, d_model 256, 4 heads, ff 1024, seq 128, batch 1;
  resnet18     torchvision's ResNet-18, random weights, batch 1, 3x224x224;
and for each: the median latency of Kiln (`kiln bench MODEL.onnx --json`) and of an ONNX Runtime
InferenceSession (CPU provider, all graph optimizations, the same intra-op thread count, one
inter-op thread) on the same inputs, their ratio, and a check that Kiln's outputs (`kiln run
--out`) agree with ONNX Runtime's within 1e-4 relative to magnitude. A model Kiln cannot import,
compile or run correctly is reported in the table with Kiln's error, and the run goes on.
It prints a table and writes the results as JSON (bench/results/compare_onnxruntime-DATE.json).

  python3 bench/compare_onnxruntime.py [--kiln build/tools/kiln] [--threads 2] [--iters 30]

It re-executes itself under the reference Python of scripts/python-env, and installs torchvision
there from PyPI when it is missing.
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

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def ensure_torchvision():
    """pip install torchvision into this (the reference) environment if it is missing, with
    torch pinned to the installed release so that pip never replaces it."""
    try:
        import torchvision  # noqa: F401
        return
    except ImportError:
        pass
    import torch
    release = torch.__version__.split("+")[0]
    print(f"compare_onnxruntime: installing torchvision (for torch {release}) from PyPI", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "torchvision", f"torch=={release}"], check=True)


if __name__ == "__main__":
    reexecute_under_reference_python(__file__)
    ensure_torchvision()

import numpy as np  # noqa: E402  (after the re-execution above)
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "bench"))
import compare_torch  # noqa: E402
from onnx_engines import export, ort_call_times, ort_session  # noqa: E402
from compare_torch import CHECK_TOLERANCE, OtherLoad, kiln_env, summarize, wait_for_quiet  # noqa: E402

MODELS = ["mlp", "transformer", "resnet18"]


class EncoderLayer(torch.nn.Module):
    """torch.nn.TransformerEncoderLayer with its mask arguments spelled out (the TorchScript
    exporter cannot trace the defaults), as scripts/make_onnx_test_models.py exports it."""

    def __init__(self, d_model=256, heads=4, feed_forward=1024):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(d_model=d_model, nhead=heads, dim_feedforward=feed_forward,
                                                      dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x, src_mask=None, is_causal=False)


def make_model(name):
    """(title, module, {input name: array}); deterministic weights and inputs."""
    torch.manual_seed(20261129)
    rng = np.random.default_rng(20261129)
    randn = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    if name == "mlp":
        module = compare_torch.Mlp()
        module.load_state_dict(compare_torch.read_safetensors(os.path.join(compare_torch.SAMPLES, "mlp.safetensors")))
        return "MLP 784-128-10, batch 64", module, {"x": randn(64, 784)}
    if name == "transformer":
        return "encoder layer d256 h4 ff1024, 1x128", EncoderLayer(), {"x": randn(1, 128, 256)}
    if name == "resnet18":
        module = torchvision.models.resnet18(weights=None)
        return "ResNet-18 (random), 1x3x224x224", module, {"image": randn(1, 3, 224, 224)}
    raise ValueError(f"unknown model {name}")


def time_ort(session, inputs, iters, warmup):
    """Latency of session.run as a caller sees it: fresh outputs per call, dropped before the clock stops."""
    return summarize(ort_call_times(session, inputs, iters, warmup))


class KilnFailure(Exception):
    """A kiln command that failed; the message is its own error text."""


def kiln(argv, cache_dir, threads):
    result = subprocess.run(argv, capture_output=True, text=True, env=kiln_env(cache_dir, threads))
    if result.returncode != 0:
        raise KilnFailure((result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}"))
    return result.stdout


def check_kiln(kiln_path, model_path, input_flags, expected, out_dir, cache_dir, threads):
    """Kiln's CPU outputs against ONNX Runtime's: max |kiln - ort| / max |ort| per output."""
    kiln([kiln_path, "run", model_path, "--target", "cpu", "--threads", str(threads), "--out", out_dir] + input_flags,
         cache_dir, threads)
    worst, details = 0.0, []
    for name, want in expected.items():
        file = os.path.join(out_dir, f"{name}.npy")
        if not os.path.exists(file):
            return {"ok": False, "error": f"kiln wrote no output {name}.npy (files: {sorted(os.listdir(out_dir))})"}
        got, want = np.load(file).astype(np.float64), want.astype(np.float64)
        if got.shape != want.shape:
            return {"ok": False, "error": f"output {name}: shape {got.shape}, ONNX Runtime's {want.shape}"}
        magnitude = float(np.max(np.abs(want)))
        max_abs = float(np.max(np.abs(got - want)))
        relative = max_abs / magnitude if magnitude > 0 else max_abs
        worst = max(worst, relative)
        details.append({"output": name, "max_abs_err": max_abs, "max_abs_ort": magnitude,
                        "err_over_magnitude": relative})
    return {"ok": worst <= CHECK_TOLERANCE, "err_over_magnitude": worst, "tolerance": CHECK_TOLERANCE,
            "outputs": details}


def kiln_bench(args, model_path, input_flags, cache_dir):
    data = json.loads(kiln([args.kiln, "bench", model_path, "--target", "cpu", "--json", "--iters", str(args.iters),
                            "--warmup", str(args.warmup), "--threads", str(args.threads)] + input_flags,
                           cache_dir, args.threads).strip().splitlines()[-1])
    return {key: data[key] for key in ("iters", "median_ms", "min_ms", "p10_ms", "p90_ms", "max_ms", "compile_ms",
                                       "cache_hit")}


def measure(name, args, work_dir):
    title, module, inputs = make_model(name)
    model_path = os.path.join(work_dir, f"{name}.onnx")
    export(module, inputs, model_path)
    input_flags = []
    for key, array in inputs.items():
        np.save(os.path.join(work_dir, f"{name}_{key}.npy"), array)
        input_flags += ["--input", f"{key}={os.path.join(work_dir, f'{name}_{key}.npy')}"]
    session = ort_session(model_path, args.threads)
    expected = dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs)))
    row = {"name": name, "title": title, "model_bytes": os.path.getsize(model_path)}
    cache_dir = os.path.join(work_dir, "kiln_cache")
    try:
        row["check"] = check_kiln(args.kiln, model_path, input_flags, expected, os.path.join(work_dir, f"{name}_out"),
                                  cache_dir, args.threads)
    except KilnFailure as failure:
        row["kiln_error"] = str(failure)
    # Interleaved rounds (ort, kiln; again; ...) so that a burst of load on the shared machine
    # hits both alike; each side reports its round with the lowest median.
    row["rounds"], row["other_load_cores"] = [], []
    for _ in range(args.rounds):
        wait_for_quiet(args.quiet_wait)
        with OtherLoad() as load:
            this_round = {"ort": time_ort(session, inputs, args.iters, args.warmup)}
            if "kiln_error" not in row:
                try:
                    this_round["kiln"] = kiln_bench(args, model_path, input_flags, cache_dir)
                except KilnFailure as failure:
                    row["kiln_error"] = str(failure)
        row["rounds"].append(this_round)
        row["other_load_cores"].append(load.cores)
    for side in ("ort", "kiln"):
        measured = [r[side] for r in row["rounds"] if side in r]
        if measured:
            row[side] = min(measured, key=lambda m: m["median_ms"])
    if "kiln" in row:
        row["kiln_over_ort"] = row["kiln"]["median_ms"] / row["ort"]["median_ms"]
    return row


def print_table(results):
    env = results["environment"]
    print(f"Kiln CPU vs ONNX Runtime {env['onnxruntime']} CPU, {env['threads']} threads, "
          f"best of {env['rounds']} rounds' "
          f"medians of {env['iters']} calls after {env['warmup']} warm-up;\n"
          f"load average {env['load_before']:.2f} -> {env['load_after']:.2f}")
    header = f"{'model':<38} {'kiln ms':>9} {'ort ms':>9} {'kiln/ort':>9} {'others':>7}  check"
    print(header)
    print("-" * len(header))
    for row in results["models"]:
        kiln_ms = f"{row['kiln']['median_ms']:.3f}" if "kiln" in row else "-"
        ratio = f"{row['kiln_over_ort']:.2f}" if "kiln_over_ort" in row else "-"
        if "kiln_error" in row:
            check = "KILN FAILED"
        elif not row["check"]["ok"]:
            check = f"WRONG ({row['check'].get('error') or format(row['check']['err_over_magnitude'], '.2e')})"
        else:
            check = f"ok ({row['check']['err_over_magnitude']:.1e})"
        print(f"{row['title']:<38} {kiln_ms:>9} {row['ort']['median_ms']:>9.3f} {ratio:>9} "
              f"{max(row['other_load_cores']):>7.2f}  {check}")
    for row in results["models"]:
        if "kiln_error" in row:
            print(f"\n{row['name']}: kiln failed:\n{row['kiln_error']}")
    print("\nkiln/ort below 1: Kiln is faster. others: CPU cores other processes used\n"
          "(the busiest round; trust a row only when it is near 0).")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated subset of " + ",".join(MODELS))
    parser.add_argument("--quiet-wait", type=float, default=30,
                        help="seconds each model may wait for other processes to use under 0.3 cores (0: none)")
    parser.add_argument("--json-out")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    args.kiln = os.path.abspath(args.kiln)
    if not os.access(args.kiln, os.X_OK):
        parser.error(f"no kiln executable at {args.kiln} (give --kiln BUILD/tools/kiln)")
    unknown = set(args.models.split(",")) - set(MODELS)
    if unknown:
        parser.error(f"unknown models {sorted(unknown)}; known: {MODELS}")
    return args


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    work_dir = tempfile.mkdtemp(prefix="kiln_vs_ort_")
    results = {"environment": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                               "kiln": args.kiln, "onnxruntime": ort.__version__, "torch": torch.__version__,
                               "torchvision": torchvision.__version__, "threads": args.threads,
                               "iters": args.iters, "warmup": args.warmup, "rounds": args.rounds,
                               "load_before": os.getloadavg()[0]},
               "models": []}
    try:
        for name in args.models.split(","):
            print(f"{name} ...", file=sys.stderr, flush=True)
            results["models"].append(measure(name, args, work_dir))
    finally:
        if args.keep:
            print(f"kept {work_dir}", file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", work_dir])
    results["environment"]["load_after"] = os.getloadavg()[0]
    print_table(results)
    out = args.json_out or os.path.join(REPO, "bench", "results",
                                        f"compare_onnxruntime-{datetime.date.today().isoformat()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print(f"wrote {out}")
    return 0 if all("kiln_error" not in r and r["check"]["ok"] for r in results["models"]) else 1


if __name__ == "__main__":
    sys.exit(main())
