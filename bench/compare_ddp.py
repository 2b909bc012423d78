#!/usr/bin/env python3
"""Data-parallel scaling of one training step: Kiln (compile_training with data_parallel, over MPI)
against PyTorch DDP (gloo), at 1 and 2 processes on this machine, 1 thread each, each process
pinned to its own core.

Workloads (bench/compare_training.py's models, SGD lr 0.01 momentum 0.9, the same per-rank batch
at every world size, so t1 / t2 is the weak-scaling efficiency, 1.0 ideal):
  mlp        784-128-10 (fc1, ReLU, fc2), cross_entropy, 64 samples per rank
  attention  samples/models/attention.kiln's block ([2, 8, 32] per rank), mse_loss
Both engines start from the same weights (PyTorch's, manual_seed(0), written to a .safetensors that
Kiln loads) and train on the same per-rank batches (a formula of the rank and the element's index,
bench/ddp_step_bench.cpp's local_batch, repeated here exactly).

Kiln: bench/ddp_step_bench.cpp under `mpirun -np N --bind-to core --map-by core`. PyTorch: N
processes of torch.multiprocessing.spawn, torch.distributed with gloo, DistributedDataParallel
(default buckets), each pinned with sched_setaffinity. Each engine measures, in the same job:
  step       the data-parallel step (median ms; the slowest rank's);
  local      the same step of a copy trained without communication, run at the same time by every
             rank (what the step costs without communication);
  allreduce  one all-reduce (average) of a flat f32 tensor as large as all the gradients, after a
             barrier (rank 0's median): a sequential average of every gradient;
and hidden = (allreduce + local - step) / allreduce at 2 ranks: the share of that all-reduce the
step hides behind computation (1: all of it; 0 or less: none; noisy when the all-reduce is short).

Correctness, checked in the same run: Kiln's ranks hold bit-identical weights after training;
Kiln's losses of the first --check-steps steps on every rank equal PyTorch DDP's within 1e-4
relative (same weights, same batches). The script exits 1 when either fails.

Engines and world sizes run in interleaved rounds (kiln 1, torch 1, kiln 2, torch 2, per workload,
per round); each figure is the median over rounds. The machine is shared: each round waits (at most
--quiet-wait s) for a 1-minute load average below --max-load and records the load average and the
CPU that other processes used during each job.

  python3 bench/compare_ddp.py [--bench BUILD/bench/kiln_ddp_step_bench] [--iters 200] [--rounds 3]
                               [--workloads mlp,attention] [--json OUT]

It re-executes itself under the reference Python of scripts/python-env (torch from PyPI). Results:
bench/results/compare_ddp-DATE.json (or --json).
"""
import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH_DIR)


sys.path.insert(0, BENCH_DIR)
from reference_python import reexecute_under_reference_python  # noqa: E402

if __name__ == "__main__":
    reexecute_under_reference_python(__file__)

import torch  # noqa: E402  (after the re-execution above)
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from compare_torch import Attention, OtherLoad  # noqa: E402
from compare_training import Mlp  # noqa: E402

INPUT_MULTIPLIER = 2654435761
TARGET_MULTIPLIER = 40503
CHECK_RELATIVE = 1e-4


def make_model(name):
    return Mlp() if name == "mlp" else Attention()


def grid_tensor(shape, first, multiplier):
    """ddp_step_bench.cpp's grid_tensor: ((index * multiplier) % 2000) / 1000 - 1 in double, then f32."""
    count = 1
    for size in shape:
        count *= size
    index = torch.arange(first, first + count, dtype=torch.int64)
    return ((index * multiplier) % 2000).double().div(1000.0).sub(1.0).float().reshape(shape)


def local_batch(name, rank):
    """(input, target, loss function) of `rank`, as ddp_step_bench.cpp's make_workload builds them."""
    if name == "mlp":
        batch = 64
        labels = torch.tensor([(rank * batch + b) * 7 % 10 for b in range(batch)], dtype=torch.int64)
        return grid_tensor((batch, 784), rank * batch * 784, INPUT_MULTIPLIER), labels, F.cross_entropy
    count = 2 * 8 * 32
    return (grid_tensor((2, 8, 32), rank * count, INPUT_MULTIPLIER),
            grid_tensor((2, 8, 32), rank * count, TARGET_MULTIPLIER), F.mse_loss)


def write_safetensors(path, tensors):
    """The module's f32 parameters as a .safetensors file (the format is small enough to write here)."""
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        data = tensor.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def median(values):
    return sorted(values)[len(values) // 2]


def pin_to_core(rank):
    try:
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
    except (AttributeError, OSError):
        pass


def torch_worker(rank, world, port, name, state, args, out_dir):
    """One rank of the PyTorch DDP job: the same phases as ddp_step_bench.cpp; writes rank-R.json."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    pin_to_core(rank)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    model = make_model(name)
    model.load_state_dict(state)
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_bytes / 2**20)
    local = make_model(name)
    local.load_state_dict(state)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    local_optimizer = torch.optim.SGD(local.parameters(), lr=0.01, momentum=0.9)
    x, y, loss_fn = local_batch(name, rank)

    def step(module, opt):
        opt.zero_grad()
        loss = loss_fn(module(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    check_losses = [step(ddp, optimizer) for _ in range(args.check_steps)]
    for _ in range(args.warmup):
        step(ddp, optimizer)
        step(local, local_optimizer)
    step_ms, local_ms, last_loss = [], [], 0.0
    while len(step_ms) < args.iters:
        dist.barrier()
        for _ in range(min(args.block, args.iters - len(local_ms))):
            start = time.perf_counter()
            step(local, local_optimizer)
            local_ms.append((time.perf_counter() - start) * 1e3)
        dist.barrier()
        for _ in range(min(args.block, args.iters - len(step_ms))):
            start = time.perf_counter()
            last_loss = step(ddp, optimizer)
            step_ms.append((time.perf_counter() - start) * 1e3)
    elements = sum(p.numel() for p in model.parameters())
    flat = torch.full((elements,), 0.5)
    allreduce_ms = []
    for _ in range(max(args.iters // 2, 10)):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(flat)
        flat.div_(world)
        allreduce_ms.append((time.perf_counter() - start) * 1e3)
    identical = True
    for p in model.parameters():
        gathered = [torch.empty_like(p) for _ in range(world)]
        dist.all_gather(gathered, p.detach().contiguous())
        identical = identical and all(torch.equal(g, gathered[0]) for g in gathered)
    result = {"rank": rank, "world": world, "model": name, "step_ms": median(step_ms), "local_ms": median(local_ms),
              "allreduce_ms": median(allreduce_ms), "gradient_elements": elements, "last_loss": last_loss,
              "weights_identical": identical, "check_losses": check_losses}
    with open(os.path.join(out_dir, f"rank-{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torch(name, world, state, args):
    # gloo now and then aborts a rank here ("terminate called without an active exception": about
    # one job in ten with the default buckets, more with small ones): such a job is run again, on a
    # fresh port, up to twice.
    attempts = 3
    for attempt in range(1, attempts + 1):
        with tempfile.TemporaryDirectory(prefix="compare_ddp_torch_") as out_dir:
            try:
                mp.spawn(torch_worker, args=(world, free_port(), name, state, args, out_dir), nprocs=world, join=True)
            except mp.ProcessExitedException as crash:
                if attempt == attempts:
                    raise
                print(f"  (PyTorch's {world}-rank job crashed: {crash}; running it again)", flush=True)
                continue
            return [json.load(open(os.path.join(out_dir, f"rank-{r}.json"))) for r in range(world)]


def run_kiln(name, world, weights, args):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    command = [args.mpirun, "-np", str(world), "--bind-to", "core", "--map-by", "core", args.bench, "--model", name,
               "--weights", weights, "--iters", str(args.iters), "--warmup", str(args.warmup), "--threads", "1",
               "--check-steps", str(args.check_steps), "--block", str(args.block), "--bucket-bytes", str(args.bucket_bytes),
               "--overlap", args.overlap]
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    ranks = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    if len(ranks) != world:
        raise RuntimeError(f"expected {world} JSON lines from {args.bench}, got:\n{result.stdout}{result.stderr}")
    return sorted(ranks, key=lambda r: r["rank"])


def wait_for_load(max_load, max_wait_s):
    start = time.perf_counter()
    while os.getloadavg()[0] >= max_load and time.perf_counter() - start < max_wait_s:
        time.sleep(5)
    return os.getloadavg()[0]


def summarize_job(ranks):
    """The job's figures: the slowest rank's step and local medians, rank 0's all-reduce."""
    return {"step_ms": max(r["step_ms"] for r in ranks), "local_ms": max(r["local_ms"] for r in ranks),
            "allreduce_ms": ranks[0]["allreduce_ms"]}


def check_losses(kiln_ranks, torch_ranks):
    """The largest relative difference of Kiln's check losses from PyTorch's, over ranks and steps."""
    worst = 0.0
    for k, t in zip(kiln_ranks, torch_ranks):
        for a, b in zip(k["check_losses"], t["check_losses"]):
            worst = max(worst, abs(a - b) / max(abs(b), 1e-12))
    return worst


def measure(name, args, workdir):
    torch.manual_seed(0)
    state = {k: v.detach().clone() for k, v in make_model(name).state_dict().items()}
    weights = os.path.join(workdir, f"{name}.safetensors")
    write_safetensors(weights, state)
    jobs = {(engine, world): [] for engine in ("kiln", "torch") for world in (1, 2)}
    rounds, failures = [], []
    for round_index in range(args.rounds):
        load = wait_for_load(args.max_load, args.quiet_wait)
        info = {"load_average_before": load}
        outputs = {}
        for world in (1, 2):
            for engine in ("kiln", "torch"):
                with OtherLoad() as other:
                    ranks = (run_kiln(name, world, weights, args) if engine == "kiln"
                             else run_torch(name, world, state, args))
                outputs[(engine, world)] = ranks
                job = summarize_job(ranks)
                job["other_processes_cores"] = other.cores
                job["ranks"] = ranks
                jobs[(engine, world)].append(job)
                info[f"{engine}_{world}"] = job
        for world in (1, 2):
            kiln_ranks, torch_ranks = outputs[("kiln", world)], outputs[("torch", world)]
            difference = check_losses(kiln_ranks, torch_ranks)
            info[f"check_loss_difference_{world}"] = difference
            if not all(r["weights_identical"] for r in kiln_ranks):
                failures.append(f"{name} round {round_index + 1}: kiln's ranks hold different weights at {world} ranks")
            if difference > CHECK_RELATIVE:
                failures.append(f"{name} round {round_index + 1}: kiln's first losses differ from PyTorch DDP's by "
                                f"{difference:.2e} relative at {world} ranks")
        rounds.append(info)
        print(f"  {name} round {round_index + 1}: load {load:.2f}; " + ", ".join(
            f"{engine}x{world} {info[f'{engine}_{world}']['step_ms']:.3f} ms "
            f"(others {info[f'{engine}_{world}']['other_processes_cores']:.2f} cores)"
            for world in (1, 2) for engine in ("kiln", "torch")) +
            f"; loss check {info['check_loss_difference_1']:.1e}/{info['check_loss_difference_2']:.1e}", flush=True)
    result = {"workload": name, "rounds": rounds, "failures": failures}
    for (engine, world), values in jobs.items():
        for key in ("step_ms", "local_ms", "allreduce_ms"):
            result[f"{engine}_{world}_{key}"] = statistics.median(v[key] for v in values)
    for engine in ("kiln", "torch"):
        t1, t2 = result[f"{engine}_1_step_ms"], result[f"{engine}_2_step_ms"]
        allreduce, local = result[f"{engine}_2_allreduce_ms"], result[f"{engine}_2_local_ms"]
        result[f"{engine}_efficiency"] = t1 / t2
        result[f"{engine}_hidden"] = (allreduce + local - t2) / allreduce if allreduce > 0 else float("nan")
    return result


def print_report(results):
    print("\ndata-parallel training step, CPU, 1 thread per rank, ranks pinned to cores; medians over rounds (ms)")
    header = (f"{'workload':<10} {'engine':<6} {'t1':>8} {'t2':>8} {'t1/t2':>6} {'local2':>8} {'allreduce2':>10} "
              f"{'hidden':>7}")
    print(header)
    print("-" * len(header))
    for r in results:
        for engine in ("kiln", "torch"):
            print(f"{r['workload']:<10} {engine:<6} {r[f'{engine}_1_step_ms']:>8.3f} {r[f'{engine}_2_step_ms']:>8.3f} "
                  f"{r[f'{engine}_efficiency']:>6.2f} {r[f'{engine}_2_local_ms']:>8.3f} "
                  f"{r[f'{engine}_2_allreduce_ms']:>10.3f} {100 * r[f'{engine}_hidden']:>6.0f}%")
    print("t1, t2: step at 1 and 2 ranks (same per-rank batch); t1/t2: scaling efficiency (1 is ideal); local2: the "
          "step without communication, 2 ranks running; allreduce2: one all-reduce of all gradients at 2 ranks; "
          "hidden = (allreduce2 + local2 - t2) / allreduce2")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", default=os.path.join(REPO, "build", "bench", "kiln_ddp_step_bench"),
                        help="the kiln_ddp_step_bench binary")
    parser.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    parser.add_argument("--workloads", default="mlp,attention")
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--block", type=int, default=10, help="steps per block (local and data-parallel alternate)")
    parser.add_argument("--check-steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bucket-bytes", type=int, default=25 << 20,
                        help="gradient bucket size of both engines (Kiln's gradient_bucket_bytes, DDP's bucket_cap_mb); "
                             "smaller buckets give the backward more stages to overlap")
    parser.add_argument("--overlap", default="automatic", choices=["automatic", "always", "never"],
                        help="Kiln's TrainingOptions::overlap_communication (automatic: only where a rank has a core "
                             "to spare for the communication thread, which --bind-to core leaves none)")
    parser.add_argument("--max-load", type=float, default=1.5, help="wait for a 1-minute load average below this")
    parser.add_argument("--quiet-wait", type=float, default=60, help="seconds to wait for it, at most, per round")
    parser.add_argument("--json", help="write the results here (default bench/results/compare_ddp-DATE.json)")
    args = parser.parse_args()
    args.bench = os.path.abspath(args.bench)
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"compare_ddp: no benchmark binary at {args.bench}: build kiln_ddp_step_bench and pass --bench PATH")
    torch.set_num_threads(1)
    results = []
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="compare_ddp_") as workdir:
        for name in [n for n in args.workloads.split(",") if n]:
            if name not in ("mlp", "attention"):
                sys.exit(f"compare_ddp: unknown workload '{name}' (known: mlp, attention)")
            print(f"{name}:", flush=True)
            results.append(measure(name, args, workdir))
    print_report(results)
    failures = [f for r in results for f in r["failures"]]
    for failure in failures:
        print(f"FAILED: {failure}")
    if not failures:
        print(f"correctness: kiln's ranks bit-identical; first {args.check_steps} losses within {CHECK_RELATIVE:g} of "
              "PyTorch DDP's on every rank, every round")
    out = args.json or os.path.join(BENCH_DIR, "results", f"compare_ddp-{datetime.date.today().isoformat()}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"iters": args.iters, "warmup": args.warmup, "rounds": args.rounds, "block": args.block,
                   "bucket_bytes": args.bucket_bytes, "overlap": args.overlap,
                   "torch": torch.__version__, "cpus": os.cpu_count(), "load_average_start": load_start,
                   "load_average_end": os.getloadavg(), "results": results}, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
