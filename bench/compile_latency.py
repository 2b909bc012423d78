#!/usr/bin/env python3
"""Cold compile latency: the stage times `kiln compile MODEL --no-cache` prints, of one build or two side by side.

Each build gets its own empty compile cache (a temporary KILN_CACHE_DIR). The first compile in it
makes what a cache keeps for every model (the link stubs: stage "link stubs (once per cache)")
and is reported apart, as "first in a fresh cache" (with the precompiled prelude of the
in-process compiler, once per cache too); then every model is compiled `--rounds` times
with `--no-cache`, the builds interleaved (A, B, A, B, ...: the machine's noise falls on both),
and each stage's median is printed, with B/A when two builds are given. The CPU time the machine's
other processes used meanwhile is printed too (from /proc/stat): trust a row only when it is low.

  python3 bench/compile_latency.py --a BUILD [--b OTHER_BUILD] [--rounds 9] [--models M ...]
      [--dim s0=4] [--json-out F]

Models default to the MLP and attention samples (samples/models/{mlp,attention}.kiln).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGE_LINE = re.compile(r"^  (\S.*?)\s+(-?[0-9.]+) ms$")


def fail(message):
    print(f"compile_latency: {message}", file=sys.stderr)
    sys.exit(1)


def busy_jiffies():
    """Jiffies all CPUs spent busy (user, nice, system, irq, softirq, steal) so far."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]


def compile_stages(kiln, model, cache_dir, no_cache):
    """{stage: ms} as `kiln compile` printed them, in order, "total" last."""
    command = [kiln, "compile", model] + (["--no-cache"] if no_cache else [])
    env = dict(os.environ, KILN_CACHE_DIR=cache_dir)
    env.pop("KILN_LOG", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        fail(f"{' '.join(command)} failed (exit {done.returncode}): {done.stderr.strip()}")
    stages = {}
    for line in done.stdout.splitlines():
        match = STAGE_LINE.match(line)
        if match:
            stages[match.group(1)] = float(match.group(2))
    if "total" not in stages:
        fail(f"{' '.join(command)} printed no stage times: {done.stdout.strip()}")
    return stages


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--a", required=True, help="build folder (its tools/kiln is run)")
    parser.add_argument("--b", help="a second build folder, compared with --a")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--models", nargs="*")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.rounds < 1:
        fail("--rounds must be at least 1")

    sides = ["a", "b"] if args.b else ["a"]
    kilns = {side: os.path.join(getattr(args, side), "tools", "kiln") for side in sides}
    for side, kiln in kilns.items():
        if not os.access(kiln, os.X_OK):
            fail(f"no kiln executable at {kiln} (--{side})")
    models = args.models or [os.path.join(ROOT, "samples", "models", name) for name in ("mlp.kiln", "attention.kiln")]
    for model in models:
        if not os.path.exists(model):
            fail(f"no model file {model}")

    with tempfile.TemporaryDirectory(prefix="kiln-compile-latency-") as scratch:
        caches = {side: os.path.join(scratch, side) for side in sides}
        first = {side: compile_stages(kilns[side], models[0], caches[side], no_cache=True) for side in sides}
        runs = {(side, model): [] for side in sides for model in models}
        start_busy, start = busy_jiffies(), time.monotonic()
        own_seconds = 0.0
        for _ in range(args.rounds):
            for model in models:
                for side in sides:
                    before = os.times()
                    runs[side, model].append(compile_stages(kilns[side], model, caches[side], no_cache=True))
                    after = os.times()
                    own_seconds += (after.children_user - before.children_user) + (after.children_system - before.children_system)
        elapsed = time.monotonic() - start
        others = (busy_jiffies() - start_busy) / os.sysconf("SC_CLK_TCK") - own_seconds

    report = {"rounds": args.rounds, "others_cpu_per_second": others / elapsed, "first_in_fresh_cache": first, "models": {}}
    print(f"others: the machine's other processes used {others / elapsed:.2f} CPUs on average while this ran")
    for side in sides:
        once = [f"{stage} {ms:.1f} ms" for stage, ms in first[side].items() if "(once per" in stage]
        print(f"first compile in a fresh cache ({side.upper()}, {os.path.basename(models[0])}): total "
              f"{first[side]['total']:.1f} ms" + (f", of which {', '.join(once)}" if once else ""))
    for model in models:
        name = os.path.relpath(model, ROOT) if model.startswith(ROOT) else model
        # Every side's stages, in order (a stage only one build has, such as the in-process
        # compiler's load, goes before the next stage both have).
        stages = list(runs[sides[0], model][0])
        for side in sides[1:]:
            theirs = list(runs[side, model][0])
            for i, stage in enumerate(theirs):
                if stage in stages:
                    continue
                later = [s for s in theirs[i + 1:] if s in stages]
                stages.insert(stages.index(later[0]) if later else len(stages), stage)
        medians = {side: {stage: statistics.median(run.get(stage, 0.0) for run in runs[side, model]) for stage in stages}
                   for side in sides}
        report["models"][name] = medians
        print(f"\n{name} (median of {args.rounds} cold compiles, ms)")
        print(f"  {'stage':<28} " + " ".join(f"{side.upper():>9}" for side in sides) + ("   B/A" if args.b else ""))
        for stage in stages:
            line = f"  {stage:<28} " + " ".join(f"{medians[side][stage]:>9.1f}" for side in sides)
            if args.b and medians["a"][stage] > 0:
                line += f" {medians['b'][stage] / medians['a'][stage]:>6.2f}"
            print(line)

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
