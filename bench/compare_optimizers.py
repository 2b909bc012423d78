#!/usr/bin/env python3
"""Kiln's fused Adam step against PyTorch's Adam on CPU (foreach=True and fused=True), side by
side, with the STREAM triad measured in the same run.

  python3 bench/compare_optimizers.py --bench BUILD/bench/kiln_optimizer_bench [--threads 1,2]

Re-executes itself under scripts/python-env's Python (torch from PyPI). For ~1M and ~10M f32
parameters (eight parameters of odd sizes, as kiln_optimizer_bench lays them out), it reports
the median time of one step and the useful bandwidth: 7 x 4 bytes per parameter (read param,
grad, exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq) per step, and that as a
percentage of the STREAM triad (bench/stream_triad.c, the best of runs before and after);
`cpu ms` is the CPU time of one step, all threads together (on a busy machine it tells the
work from the waiting). The
`others` column is the CPU other processes used meanwhile, in cores (bench/README.md: trust a
row only when it is near 0).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def ensure_reference_python():
    """Re-executes this script under scripts/python-env's Python unless it already runs there."""
    python = subprocess.run([os.path.join(REPO, "scripts", "python-env")], check=True, capture_output=True,
                            text=True, cwd=REPO).stdout.strip().splitlines()[-1]
    python = python if os.path.isabs(python) else os.path.join(REPO, python)
    env_dir = os.path.abspath(os.path.dirname(os.path.dirname(python)))
    os.environ["KILN_BENCH_PYENV"] = env_dir  # compare_torch (imported below) then stays put
    if os.path.abspath(sys.prefix) != env_dir:
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


if __name__ == "__main__":
    ensure_reference_python()

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_torch import OtherLoad, measure_stream, wait_for_quiet  # noqa: E402

SIZES = [1 << 20, 10 << 20]
BYTES_PER_PARAMETER = 7 * 4


def torch_parameters(total):
    """Eight parameters of odd sizes, as kiln_optimizer_bench makes them."""
    generator = torch.Generator().manual_seed(0)
    sizes = [total // 8 + (3 if i % 2 == 0 else -3) for i in range(8)]
    params = [torch.nn.Parameter(torch.rand(size, generator=generator) * 2 - 1) for size in sizes]
    for p in params:
        p.grad = p.detach() * 0.01
    return params


def median(values):
    return sorted(values)[len(values) // 2]


def time_torch_adam(total, threads, mode, iters):
    torch.set_num_threads(threads)
    params = torch_parameters(total)
    optimizer = torch.optim.Adam(params, **{mode: True})
    optimizer.step()
    times, cpu_times = [], []
    with OtherLoad() as load:
        for _ in range(iters):
            start, cpu_start = time.perf_counter(), time.process_time()
            optimizer.step()
            times.append((time.perf_counter() - start) * 1e3)
            cpu_times.append((time.process_time() - cpu_start) * 1e3)
    return median(times), median(cpu_times), load.cores


def time_kiln_adam(bench, threads, min_time):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    with OtherLoad() as load:
        out = subprocess.run([bench, f"--benchmark_filter=fused_adam_step/params:.*/threads:{threads}/",
                              "--benchmark_format=json", f"--benchmark_min_time={min_time}"],
                             check=True, capture_output=True, text=True, env=env).stdout
    results = {}
    for entry in json.loads(out)["benchmarks"]:
        total = int(entry["name"].split("params:")[1].split("/")[0])
        results[total] = (entry["real_time"], entry["cpu_time"])  # ms (the benchmark's unit)
    return results, load.cores


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", required=True, help="the kiln_optimizer_bench executable")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per Kiln benchmark")
    parser.add_argument("--quiet-wait", type=float, default=30)
    args = parser.parse_args()
    print(f"torch {torch.__version__}; load average {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory() as work_dir:
        for thread_count in [int(t) for t in args.threads.split(",")]:
            stream_before = measure_stream(work_dir, thread_count, args.quiet_wait)
            wait_for_quiet(args.quiet_wait)
            kiln, kiln_others = time_kiln_adam(os.path.abspath(args.bench), thread_count, args.min_time)
            rows = []
            for total in SIZES:
                rows.append((total, "kiln fused", *kiln[total], kiln_others))
                for mode in ("foreach", "fused"):
                    wait_for_quiet(args.quiet_wait)
                    ms, cpu_ms, others = time_torch_adam(total, thread_count, mode, args.iters)
                    rows.append((total, f"torch {mode}", ms, cpu_ms, others))
            stream_after = measure_stream(work_dir, thread_count, args.quiet_wait)
            stream = max(stream_before["best_gbs"], stream_after["best_gbs"])
            print(f"\nthreads {thread_count}; STREAM triad best {stream:.1f} GB/s (before {stream_before['best_gbs']:.1f}, "
                  f"after {stream_after['best_gbs']:.1f}; others {stream_before['other_load_cores']:.2f}, "
                  f"{stream_after['other_load_cores']:.2f} cores)")
            print(f"{'params':>10} {'side':>14} {'ms':>9} {'cpu ms':>9} {'GB/s':>7} {'%STREAM':>8} {'others':>7}")
            for total, side, ms, cpu_ms, others in rows:
                gbs = BYTES_PER_PARAMETER * total / (ms * 1e-3) / 1e9
                print(f"{total:>10} {side:>14} {ms:>9.3f} {cpu_ms:>9.3f} {gbs:>7.1f} {100 * gbs / stream:>7.0f}% "
                      f"{others:>7.2f}", flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
