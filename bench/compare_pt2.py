#!/usr/bin/env python3
"""Whole models from .pt2 files through Kiln, against PyTorch eager, torch.compile and ONNX Runtime.

The models are the .pt2 programs of the test data (scripts/make-pt2-test-data; .cache/pt2-tests/
models/: torchvision classifiers, an nn.TransformerEncoder and a small causal GPT, random
weights, batch 1). For each model, with the same thread count on every side:
  kiln      `kiln bench static.pt2 --freeze --input ... --json` (CPU backend, parameters frozen
            as ONNX Runtime treats initializers: batch norm folded into convolutions, weights
            prepacked once; --no-freeze leaves them inputs; its compile time from an empty cache
            too), and a check that `kiln run --target cpu` (frozen likewise) matches eager within
            1e-4 of the output's magnitude;
  eager     the torch.nn.Module (rebuilt as scripts/make_pt2_models.py builds it: the same seed,
            the same weights), under torch.no_grad();
  compile   torch.compile of that module (Inductor, CPU, default mode), its first call's time as
            the compile time;
  ort       the same module through the ONNX exporter (TorchScript, opset 17) in ONNX Runtime (CPU
            provider, all graph optimizations, one inter-op thread).
Each side reports, after --warmup calls, the median of the medians of --rounds interleaved rounds of
--iters/--rounds calls (every side in turn each round), and each ratio is the median of the rounds' ratios, so load
from other processes of this shared machine reaches both sides of a ratio alike; the other load is
recorded per model. A side that fails is
reported with its error and the run goes on. It prints a table and writes the results as JSON
(bench/results/compare_pt2-DATE.json by default).

  python3 bench/compare_pt2.py [--kiln build/tools/kiln] [--threads 2] [--iters 20] [--models a,b] [--no-freeze]

It re-executes itself under the reference Python of scripts/python-env.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_python import reexecute_under_reference_python  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "scripts"))



if __name__ == "__main__":
    reexecute_under_reference_python(__file__)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import make_pt2_models  # noqa: E402
from compare_suite import geomean  # noqa: E402
from compare_torch import CHECK_TOLERANCE, OtherLoad, kiln_env, summarize  # noqa: E402


def models_folder():
    folder = os.path.join(os.environ.get("KILN_PT2_TEST_DATA", os.path.join(REPO, ".cache", "pt2-tests")), "models")
    if not os.path.exists(os.path.join(folder, "complete")):
        sys.exit(f"compare_pt2: no model data in {folder}: run scripts/make-pt2-test-data first")
    return folder


def python_timer(fn, warmup):
    """A side timed in this process: warm-up calls now, then timed(n) gives the median of n calls (ms)."""
    for _ in range(warmup):
        fn()

    def timed(n):
        times = []
        for _ in range(n):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return summarize(times)["median_ms"]
    return timed


def run_kiln(args, argv, cache_dir):
    result = subprocess.run([args.kiln] + argv, capture_output=True, text=True, env=kiln_env(cache_dir, args.threads))
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}")
    return result.stdout


def prepare_kiln(args, folder, input_name, expected, work, info):
    """Compiles the program (timed, empty cache), checks `kiln run` against eager, and returns a timer
    that runs `kiln bench` (cache warm) for n calls and gives their median (ms)."""
    program = os.path.join(folder, "static.pt2")
    flags = ["--input", f"{input_name}={os.path.join(folder, 'input_1.npy')}"]
    cache_dir = os.path.join(work, "cache")
    out_dir = os.path.join(work, "out")
    start = time.perf_counter()
    freeze = [] if args.no_freeze else ["--freeze"]
    run_kiln(args, ["compile", program] + freeze, cache_dir)
    info["compile_s"] = time.perf_counter() - start
    run_kiln(args, ["run", program, "--target", "cpu", "--threads", str(args.threads), "--out", out_dir] + flags + freeze, cache_dir)
    outputs = [f for f in os.listdir(out_dir) if f.endswith(".npy")]
    got = np.load(os.path.join(out_dir, outputs[0])).astype(np.float64)
    # Relative to the output's magnitude; absolute where eager's output is all zeros (ViT-B/16's
    # head is zero-initialized, so its random-weight logits are 0).
    magnitude = float(np.max(np.abs(expected))) or 1.0
    error = float(np.max(np.abs(got - expected))) / magnitude if got.shape == expected.shape else float("inf")
    info["err_over_magnitude"] = error
    info["ok"] = error <= CHECK_TOLERANCE

    def timed(n):
        data = json.loads(run_kiln(args, ["bench", program, "--target", "cpu", "--json", "--iters", str(n), "--warmup",
                                          str(args.warmup), "--threads", str(args.threads)] + flags + freeze,
                                   cache_dir).strip().splitlines()[-1])
        return data["median_ms"]
    return timed


def prepare_ort(args, module, x, work, info):
    import onnxruntime as ort

    path = os.path.join(work, "model.onnx")
    # Under no_grad, nn.TransformerEncoderLayer and nn.MultiheadAttention take PyTorch's fused
    # fast path (aten::_transformer_encoder_layer_fwd, _native_multi_head_attention), which the
    # ONNX exporter cannot export: export the plain modules' ops instead.
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, (x,), path, input_names=["x"], output_names=["y"], opset_version=17, dynamo=False)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    feed = {"x": x.numpy()}
    return python_timer(lambda: session.run(None, feed), args.warmup)


def prepare_compile(args, module, x, info):
    torch._dynamo.reset()
    compiled = torch.compile(module)
    start = time.perf_counter()
    compiled(x)
    info["compile_s"] = time.perf_counter() - start
    return python_timer(lambda: compiled(x), args.warmup)


def measure(name, args, folder):
    """Every side of one model, interleaved: each of --rounds rounds times every side for
    --iters/--rounds calls in turn, so a change in the shared machine's load reaches every side
    alike. A side's figure is the median of its rounds' medians; a ratio is the median of the rounds'
    ratios (Kiln's round median over the other side's, measured one right after the other)."""
    meta = json.load(open(os.path.join(folder, "meta.json")))
    row = {"model": name, "parameters": meta.get("parameters")}
    if meta.get("status") != "exported":
        row["error"] = "torch.export refused it: " + meta.get("reason", "")
        return row
    module, family = make_pt2_models.build(name, torch)
    module.eval()
    x = torch.from_numpy(np.load(os.path.join(folder, "input_1.npy")))
    expected = np.load(os.path.join(folder, "expected_1.npy")).astype(np.float64)
    input_name = "tokens" if name == "transformer_encoder" else "idx" if name == "gpt" else "x"
    per_round = max(1, args.iters // args.rounds)
    with tempfile.TemporaryDirectory(prefix=f"compare_pt2_{name}_") as work, OtherLoad() as load, torch.no_grad():
        timers, info = {}, {}
        for side, prepare in (("kiln", lambda i: prepare_kiln(args, folder, input_name, expected, work, i)),
                              ("eager", lambda i: python_timer(lambda: module(x), args.warmup)),
                              ("compile", lambda i: prepare_compile(args, module, x, i)),
                              ("ort", lambda i: prepare_ort(args, module, x, work, i))):
            if side not in args.sides:
                continue
            info[side] = {}
            try:
                timers[side] = prepare(info[side])
            except Exception as error:  # a side that fails is reported, the run goes on
                row[side] = {"error": (str(error).strip().splitlines() or [type(error).__name__])[0][:300]}
                print(f"  {name} {side}: {row[side]}", flush=True)
        round_medians = {side: [] for side in timers}
        for _ in range(args.rounds):
            for side, timed in list(timers.items()):
                # ONNX Runtime's and PyTorch's thread pools live in this process and spin for a
                # while after a call: started at once, `kiln bench` shared the 2 cores with them
                # (the encoder: 0.85 ms in such rounds, 0.22 ms alone). compare_suite.py pauses so too.
                time.sleep(0.2)
                try:
                    round_medians[side].append(timed(per_round))
                except Exception as error:
                    row[side] = {"error": (str(error).strip().splitlines() or [type(error).__name__])[0][:300]}
                    del timers[side]
    for side in timers:
        rounds = summarize(round_medians[side])
        row[side] = {"median_ms": rounds["median_ms"], "round_medians_ms": round_medians[side],
                     "calls": per_round * args.rounds, **info[side]}
        if side != "kiln" and "kiln" in timers:
            ratios = [k / o for k, o in zip(round_medians["kiln"], round_medians[side])]
            row[side]["kiln_ratio"] = summarize(ratios)["median_ms"]
            row[side]["kiln_ratio_range"] = [min(ratios), max(ratios)]
        print(f"  {name} {side}: {row[side]}", flush=True)
    row["other_load_cores"] = load.cores
    return row


def print_table(results):
    env = results["environment"]
    print(f"\n.pt2 models, batch 1, {env['threads']} threads, median of {env['iters']} calls in {env['rounds']} interleaved rounds (ms);"
          " kiln/X: median of the rounds' ratios")
    header = f"{'model':<22} {'kiln':>9} {'eager':>9} {'compile':>9} {'ort':>9} {'kiln/eager':>10} {'kiln/comp':>9} {'kiln/ort':>9}  check"
    print(header)
    print("-" * len(header))
    for row in results["models"]:
        def ms(side):
            value = row.get(side, {})
            return f"{value['median_ms']:.2f}" if "median_ms" in value else "fail" if "error" in value else "-"

        def ratio(side):
            value = row.get(side, {})
            return f"{value['kiln_ratio']:.2f}" if "kiln_ratio" in value else "-"

        kiln = row.get("kiln", {})
        check = "ok" if kiln.get("ok") else f"WRONG {kiln.get('err_over_magnitude', 0):.1e}" if "ok" in kiln else kiln.get("error", row.get("error", ""))[:60]
        print(f"{row['model']:<22} {ms('kiln'):>9} {ms('eager'):>9} {ms('compile'):>9} {ms('ort'):>9} {ratio('eager'):>10} "
              f"{ratio('compile'):>9} {ratio('ort'):>9}  {check}")
    for side in ("eager", "compile", "ort"):
        ratios = [row[side]["kiln_ratio"] for row in results["models"] if "kiln_ratio" in row.get(side, {})]
        if ratios:
            print(f"geometric mean of kiln/{side}: {geomean(ratios):.2f} over {len(ratios)} models")
    print("ratios below 1: Kiln is faster.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kiln", default=os.path.join(REPO, "build", "tools", "kiln"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; each side runs --iters/--rounds calls per round")
    parser.add_argument("--models", help="comma-separated subset of the generated models")
    parser.add_argument("--sides", default="kiln,eager,compile,ort")
    parser.add_argument("--no-freeze", action="store_true", help="Kiln without --freeze (parameters stay inputs)")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    args.sides = set(args.sides.split(","))
    torch.set_num_threads(args.threads)
    folder = models_folder()
    names = sorted(n for n in os.listdir(folder) if os.path.exists(os.path.join(folder, n, "meta.json")))
    if args.models:
        names = [n for n in names if n in args.models.split(",")]
    results = {"environment": {"threads": args.threads, "iters": args.iters, "warmup": args.warmup, "rounds": args.rounds,
                               "torch": torch.__version__, "date": datetime.datetime.now().isoformat(timespec="seconds"),
                               "load_before": os.getloadavg()[0], "kiln_freeze": not args.no_freeze},
               "models": []}
    for name in names:
        results["models"].append(measure(name, args, os.path.join(folder, name)))
    results["environment"]["load_after"] = os.getloadavg()[0]
    out = args.json_out or os.path.join(REPO, "bench", "results", f"compare_pt2-{datetime.date.today()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print_table(results)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
