#!/usr/bin/env python3
"""Two builds of Kiln side by side, for a change that must not slow anything down.

Runs `kiln bench --json` on each model through build A's and build B's `kiln` in interleaved
rounds (A, B, A, B, ...: the machine's noise falls on both), keeps each side's best median, and
prints B/A per model with the geometric mean; then the same for the Google Benchmark executables
both builds have (kiln_vm_bench by default), by benchmark name.

  python3 bench/compare_builds.py --a OLD_BUILD --b NEW_BUILD [--rounds 3] [--iters 50]
      [--target cpu] [--threads 2] [--models M ...] [--gbench kiln_vm_bench ...] [--json-out F]
      [--a-env K=V ...] [--b-env K=V ...] [--freeze] [--dim-size 4]

Models default to the bundled samples (samples/models/*.kiln, random inputs, symbolic dims
--dim-size). --a-env/--b-env set variables for one side's runs: one build against itself with
another compiler (`--a B --b B --a-env KILN_CXX=c++`: the system compiler against the in-process one).
"""
import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print(f"compare_builds: {message}", file=sys.stderr)
    sys.exit(1)


def symbols_of(model):
    """The symbolic dims a .kiln model's placeholders use (s0, s1, ...)."""
    if not model.endswith(".kiln"):
        return []
    with open(model) as f:
        return sorted(set(re.findall(r"\bs\d+\b", f.read())))


def target_flag(kiln):
    """--target, or --backend for builds from before the target registry."""
    help_text = subprocess.run([kiln, "bench", "--help"], capture_output=True, text=True).stdout
    return "--target" if "--target" in help_text else "--backend"


def kiln_bench(kiln, model, args, env):
    command = [kiln, "bench", model, target_flag(kiln), args.target, "--json", "-n", str(args.iters),
               "--random-inputs", "1"]
    if args.threads:
        command += ["--threads", str(args.threads)]
    if args.freeze:
        command += ["--freeze"]
    for symbol in symbols_of(model):
        command += ["--dim", f"{symbol}={args.dim_size}"]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        fail(f"{' '.join(command)} failed:\n{done.stderr.strip()}")
    result = json.loads(done.stdout)
    for key in ("median_ms", "median_milliseconds", "median"):
        if key in result:
            return float(result[key])
    fail(f"`kiln bench --json` printed no median: {done.stdout.strip()}")


def gbench(executable, args):
    command = [executable, "--benchmark_format=json", f"--benchmark_repetitions={args.gbench_repetitions}",
               "--benchmark_report_aggregates_only=true"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{executable} failed:\n{done.stderr.strip()}")
    medians = {}
    for entry in json.loads(done.stdout)["benchmarks"]:
        if entry.get("aggregate_name") == "median":
            medians[entry["run_name"]] = float(entry["real_time"])
    return medians


def geomean(ratios):
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", required=True, help="build folder of the baseline")
    parser.add_argument("--b", required=True, help="build folder of the change")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="*")
    parser.add_argument("--gbench", nargs="*", default=["bench/kiln_vm_bench"],
                        help="Google Benchmark executables, relative to each build folder")
    parser.add_argument("--gbench-repetitions", type=int, default=5)
    parser.add_argument("--json-out")
    parser.add_argument("--a-env", nargs="*", default=[], help="KEY=VALUE variables of side A's runs")
    parser.add_argument("--b-env", nargs="*", default=[], help="KEY=VALUE variables of side B's runs")
    parser.add_argument("--freeze", action="store_true", help="kiln bench --freeze")
    parser.add_argument("--dim-size", type=int, default=4, help="the size of every symbolic dim")
    args = parser.parse_args()

    envs = {}
    for side in ("a", "b"):
        envs[side] = dict(os.environ)
        for item in getattr(args, f"{side}_env"):
            if "=" not in item:
                fail(f"--{side}-env takes KEY=VALUE, got {item!r}")
            key, value = item.split("=", 1)
            envs[side][key] = value

    kilns = {side: os.path.join(getattr(args, side), "tools", "kiln") for side in ("a", "b")}
    for side, kiln in kilns.items():
        if not os.access(kiln, os.X_OK):
            fail(f"no kiln executable at {kiln} (--{side})")
    models = args.models or sorted(glob.glob(os.path.join(ROOT, "samples", "models", "*.kiln")))
    if not models:
        fail("no models")

    best = {(side, model): float("inf") for side in kilns for model in models}
    for _ in range(args.rounds):
        for model in models:
            for side in ("a", "b"):
                best[side, model] = min(best[side, model], kiln_bench(kilns[side], model, args, envs[side]))

    report = {"target": args.target, "threads": args.threads, "rounds": args.rounds, "freeze": args.freeze,
              "a_env": args.a_env, "b_env": args.b_env, "models": {}, "gbench": {}}
    print(f"{'model':<28} {'A ms':>10} {'B ms':>10} {'B/A':>7}")
    ratios = []
    for model in models:
        a, b = best["a", model], best["b", model]
        ratios.append(b / a)
        name = os.path.relpath(model, ROOT)
        report["models"][name] = {"a_ms": a, "b_ms": b, "ratio": b / a}
        print(f"{name:<28} {a:>10.4f} {b:>10.4f} {b / a:>7.3f}")
    print(f"{'geometric mean':<28} {'':>10} {'':>10} {geomean(ratios):>7.3f}")

    for executable in args.gbench:
        paths = {side: os.path.join(getattr(args, side), executable) for side in ("a", "b")}
        if not all(os.access(path, os.X_OK) for path in paths.values()):
            print(f"({executable}: not in both builds, skipped)")
            continue
        runs = {"a": [], "b": []}
        for _ in range(args.rounds):
            for side in ("a", "b"):
                runs[side].append(gbench(paths[side], args))
        print(f"\n{executable:<52} {'A ns':>10} {'B ns':>10} {'B/A':>7}")
        bench_ratios = []
        for name in runs["a"][0]:
            if name not in runs["b"][0]:
                continue
            a = min(run[name] for run in runs["a"])
            b = min(run[name] for run in runs["b"])
            bench_ratios.append(b / a)
            report["gbench"][f"{executable}:{name}"] = {"a": a, "b": b, "ratio": b / a}
            print(f"{name:<52} {a:>10.1f} {b:>10.1f} {b / a:>7.3f}")
        print(f"{'geometric mean':<52} {'':>10} {'':>10} {geomean(bench_ratios):>7.3f}")

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
