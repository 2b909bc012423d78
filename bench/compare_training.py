#!/usr/bin/env python3
"""One training step (forward, backward, optimizer) of Kiln against PyTorch eager and torch.compile
on the CPU, side by side, with the same thread count on every side (2 by default).

Workloads (the same computation on each side; SGD with lr 0.01 and momentum 0.9):
  mlp        784-128-10 (fc1, ReLU, fc2), cross_entropy, batch 64
  attention  samples/models/attention.kiln's pre-LayerNorm causal attention block ([2, 8, 32],
             2 heads, GELU MLP of 64; compare_torch.Attention), mse_loss against a fixed target
Kiln: bench/training_step_bench.cpp (kiln::compile_training; `--json`), run as a subprocess.
PyTorch eager: zero_grad, loss, backward, step, loss.item(). torch.compile: the same with the
model and loss compiled (Inductor; AOTAutograd compiles the backward) and the optimizer's step
compiled too. Each side runs `--rounds` rounds, interleaved; a round's figure is the median
step time of `--iters` steps after `--warmup`; the reported figure is the median over rounds.

This machine is shared: before each round the script waits (at most --quiet-wait s) for the
1-minute load average to fall below --max-load, and it records the load average and the CPU
other processes used during each round (compare_torch.OtherLoad), so noisy figures show as such.

  python3 bench/compare_training.py --bench BUILD/bench/kiln_training_step_bench [--threads 2]
                                    [--iters 200] [--rounds 3] [--json OUT]

It re-executes itself under the reference Python of scripts/python-env (torch from PyPI).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)


sys.path.insert(0, BENCH_DIR)
from reference_python import reexecute_under_reference_python  # noqa: E402

if __name__ == "__main__":
    reexecute_under_reference_python(__file__)

import torch  # noqa: E402  (after the re-execution above)
import torch.nn.functional as F  # noqa: E402

from compare_torch import Attention, OtherLoad, summarize  # noqa: E402


class Mlp(torch.nn.Module):
    """The parity MLP (scripts/make_training_parity.py), 784-128-10."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(784, 128), torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def make_workload(name):
    """(module, loss function, input, target), as training_step_bench.cpp builds them."""
    generator = torch.Generator().manual_seed(0)
    if name == "mlp":
        return (Mlp(), F.cross_entropy, torch.randn(64, 784, generator=generator),
                torch.randint(0, 10, (64,), generator=generator))
    if name == "attention":
        return (Attention(), F.mse_loss, torch.randn(2, 8, 32, generator=generator),
                torch.randn(2, 8, 32, generator=generator))
    raise SystemExit(f"compare_training: unknown workload '{name}' (known: mlp, attention)")


def torch_step(name, compiled):
    """A function running one training step in PyTorch and returning the loss as a float."""
    torch.manual_seed(0)
    model, loss_fn, x, y = make_workload(name)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def loss_of(inputs, targets):
        return loss_fn(model(inputs), targets)

    update = optimizer.step
    if compiled:
        loss_of = torch.compile(loss_of)
        update = torch.compile(optimizer.step)

    def step():
        optimizer.zero_grad()
        loss = loss_of(x, y)
        loss.backward()
        update()
        return loss.item()

    return step


def time_step(step, iters, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return summarize(times)


def kiln_step_times(bench, name, iters, warmup, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    result = subprocess.run([bench, "--model", name, "--iters", str(iters), "--warmup", str(warmup), "--threads",
                             str(threads), "--json"], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{bench} exited {result.returncode}: {result.stdout}{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def wait_for_load(max_load, max_wait_s):
    """Waits until the 1-minute load average is below max_load (at most max_wait_s); returns it."""
    start = time.perf_counter()
    while os.getloadavg()[0] >= max_load and time.perf_counter() - start < max_wait_s:
        time.sleep(5)
    return os.getloadavg()[0]


def measure(args, name):
    sides = {"kiln": [], "eager": [], "compile": []}
    rounds = []
    steps = {"eager": torch_step(name, compiled=False), "compile": torch_step(name, compiled=True)}
    kiln_info = None
    for round_index in range(args.rounds):
        load_average = wait_for_load(args.max_load, args.quiet_wait)
        round_info = {"load_average_before": load_average}
        for side in ("kiln", "eager", "compile"):
            with OtherLoad() as other:
                if side == "kiln":
                    kiln_info = kiln_step_times(args.bench, name, args.iters, args.warmup, args.threads)
                    median = kiln_info["median_ms"]
                else:
                    median = time_step(steps[side], args.iters, args.warmup)["median_ms"]
            sides[side].append(median)
            round_info[side] = {"median_ms": median, "other_processes_cores": other.cores}
        rounds.append(round_info)
        print(f"  {name} round {round_index + 1}: load {load_average:.2f}; " +
              ", ".join(f"{side} {round_info[side]['median_ms']:.3f} ms (others {round_info[side]['other_processes_cores']:.2f} cores)"
                        for side in sides), flush=True)
    result = {"workload": name, "rounds": rounds}
    for side, medians in sides.items():
        result[f"{side}_ms"] = statistics.median(medians)
    result["kiln_saved_bytes"] = kiln_info["saved_bytes"]
    result["kiln_baseline_bytes"] = kiln_info["baseline_bytes"]
    result["kiln_compile_ms"] = kiln_info["compile_ms"]
    return result


def print_report(results, threads):
    print(f"\none training step (forward, backward, SGD momentum), CPU, {threads} threads; median over rounds")
    header = f"{'workload':<10} {'kiln ms':>9} {'eager ms':>9} {'compile ms':>10} {'kiln/eager':>10} {'kiln/compile':>12}  saved bytes (vs every activation)"
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r['workload']:<10} {r['kiln_ms']:>9.3f} {r['eager_ms']:>9.3f} {r['compile_ms']:>10.3f} "
              f"{r['kiln_ms'] / r['eager_ms']:>10.2f} {r['kiln_ms'] / r['compile_ms']:>12.2f}  "
              f"{r['kiln_saved_bytes']} ({100 * r['kiln_saved_bytes'] / r['kiln_baseline_bytes']:.1f}% of {r['kiln_baseline_bytes']})")
    print("(ratios below 1: Kiln is faster)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "kiln_training_step_bench"),
                        help="the kiln_training_step_bench binary")
    parser.add_argument("--workloads", default="mlp,attention")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-load", type=float, default=2.5, help="wait for a 1-minute load average below this")
    parser.add_argument("--quiet-wait", type=float, default=120, help="seconds to wait for it, at most, per round")
    parser.add_argument("--json", help="write the results here (default bench/results/compare_training-DATE.json)")
    args = parser.parse_args()
    args.bench = os.path.abspath(args.bench)
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"compare_training: no benchmark binary at {args.bench}: build kiln_training_step_bench and pass --bench PATH")
    torch.set_num_threads(args.threads)
    results = []
    for name in [n for n in args.workloads.split(",") if n]:
        print(f"{name}:", flush=True)
        results.append(measure(args, name))
    print_report(results, args.threads)
    out = args.json or os.path.join(BENCH_DIR, "results", f"compare_training-{datetime.date.today().isoformat()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"threads": args.threads, "iters": args.iters, "rounds": args.rounds, "torch": torch.__version__,
                   "load_average_end": os.getloadavg(), "results": results}, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
