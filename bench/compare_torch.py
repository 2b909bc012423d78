#!/usr/bin/env python3
"""Kiln's CPU backend against PyTorch eager and torch.compile (Inductor, CPU), side by side.

One run measures, with the same thread count for every side:
  1. STREAM triad bandwidth (bench/stream_triad.c, built here with cc -O3 -fopenmp -march=native);
  2. five workloads: a pointwise chain gelu(x*1.5+0.5)*sigmoid(x) over 16M floats, softmax and
     layer_norm over the last dim of 4096x1024, the MLP sample at batch 64 and the attention
     sample; for each the median latency of Kiln (`kiln bench --json`), eager and
     torch.compile, their ratios, the bandwidth of the memory-bound ones as a fraction of
     STREAM, and a check that Kiln's outputs agree with PyTorch's;
  3. cold and warm compile times of Kiln (`kiln compile` with an empty, then a filled
     KILN_CACHE_DIR) against torch.compile's (first call in a fresh process with an empty,
     then a filled TORCHINDUCTOR_CACHE_DIR, minus one eager call).
It prints tables and writes them as JSON (bench/results/compare_torch-DATE.json by default).

  python3 bench/compare_torch.py [--kiln build/tools/kiln] [--iters N] [--threads 2] [--quick]

It re-executes itself under the reference Python of scripts/python-env (torch and numpy from
PyPI). The models Kiln compiles for the chain, softmax and layer_norm are written at run time
into a temporary directory (.kiln text and .safetensors weights); the MLP and attention are the
bundled samples, rebuilt in PyTorch as scripts/make_sample_goldens.py builds them, with the
weights read from their .safetensors files.
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SAMPLES = os.path.join(REPO, "samples", "models")
STREAM_SOURCE = os.path.join(REPO, "bench", "stream_triad.c")
CHECK_TOLERANCE = 1e-4  # max |kiln - torch| / max |torch|, per output


def ensure_reference_python():
    """Re-executes this script under scripts/python-env's Python unless it already runs there."""
    marked = os.environ.get("KILN_BENCH_PYENV")
    if marked and os.path.abspath(sys.prefix) == marked:
        return  # a probe process started by this script, or the re-executed script itself
    python = subprocess.run([os.path.join(REPO, "scripts", "python-env")], check=True, capture_output=True,
                            text=True, cwd=REPO).stdout.strip().splitlines()[-1]
    python = os.path.join(REPO, python) if not os.path.isabs(python) else python
    env_dir = os.path.abspath(os.path.dirname(os.path.dirname(python)))
    if marked:
        sys.exit(f"compare_torch: re-executed under {python}, but sys.prefix is {sys.prefix}")
    os.environ["KILN_BENCH_PYENV"] = env_dir  # inherited by the probe processes: no second look-up
    if os.path.abspath(sys.prefix) == env_dir:
        return
    os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


if __name__ == "__main__":
    ensure_reference_python()

import numpy as np  # noqa: E402  (after the re-execution above)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load_goldens_module():
    """scripts/make_sample_goldens.py, for its safetensors writer."""
    spec = importlib.util.spec_from_file_location("make_sample_goldens",
                                                  os.path.join(REPO, "scripts", "make_sample_goldens.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_safetensors(path):
    """The Hugging Face safetensors layout (u64 header length, JSON header, raw data) as torch tensors."""
    dtypes = {"F32": np.float32, "I64": np.int64, "BOOL": np.bool_}
    with open(path, "rb") as f:
        blob = f.read()
    length = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + length])
    base = 8 + length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(blob[base + begin:base + end], dtype=dtypes[entry["dtype"]]).reshape(entry["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    return tensors


# ---------------------------------------------------------------------------------------------
# The workloads: each is a PyTorch module, the Kiln model file of the same computation, inputs,
# and the bytes a memory-bound kernel must move (inputs read once + outputs written once).

CHAIN_N = 16 * 1024 * 1024
ROWS, COLS = 4096, 1024


class PointwiseChain(torch.nn.Module):
    def forward(self, x):
        return F.gelu(x * 1.5 + 0.5) * torch.sigmoid(x)  # gelu: the exact erf form


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Mlp(torch.nn.Module):
    """samples/models/mlp.kiln, as make_sample_goldens.mlp() computes it."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(784, 128), torch.nn.Linear(128, 10)

    def forward(self, x):
        hidden = torch.relu(x @ self.fc1.weight.t() + self.fc1.bias)
        return torch.softmax(F.linear(hidden, self.fc2.weight, self.fc2.bias), dim=1)


class Attention(torch.nn.Module):
    """samples/models/attention.kiln, as make_sample_goldens.attention() computes it."""

    def __init__(self, dim=32, heads=2):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(dim), torch.nn.LayerNorm(dim)
        self.qkv, self.proj = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim)
        self.fc1, self.fc2 = torch.nn.Linear(dim, 2 * dim), torch.nn.Linear(2 * dim, dim)

    def forward(self, x):
        batch, seq, dim = x.shape
        h = self.qkv(self.ln1(x)).reshape(batch, seq, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = h[0], h[1], h[2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        causal = torch.arange(seq, device=x.device).unsqueeze(1) >= torch.arange(seq, device=x.device).unsqueeze(0)
        scores = torch.where(causal, scores, float("-inf"))
        attended = (torch.softmax(scores, dim=-1) @ v).permute(0, 2, 1, 3).reshape(batch, seq, dim)
        y = x + self.proj(attended)
        return y + self.fc2(F.gelu(self.fc1(self.ln2(y))))


CHAIN_KILN = f"""graph():
    %x : f32[{CHAIN_N}] [num_users=2] = placeholder[target=x]
    %mul : f32[{CHAIN_N}] [num_users=1] = call_function[target=mul](args = (%x, 1.5), kwargs = {{}})
    %add : f32[{CHAIN_N}] [num_users=1] = call_function[target=add](args = (%mul, 0.5), kwargs = {{}})
    %gelu : f32[{CHAIN_N}] [num_users=1] = call_function[target=gelu](args = (%add,), kwargs = {{}})
    %sigmoid : f32[{CHAIN_N}] [num_users=1] = call_function[target=sigmoid](args = (%x,), kwargs = {{}})
    %out : f32[{CHAIN_N}] [num_users=1] = call_function[target=mul](args = (%gelu, %sigmoid), kwargs = {{}})
    return (out,)
"""

SOFTMAX_KILN = f"""graph():
    %x : f32[{ROWS}, {COLS}] [num_users=1] = placeholder[target=x]
    %out : f32[{ROWS}, {COLS}] [num_users=1] = call_function[target=softmax](args = (%x, -1), kwargs = {{}})
    return (out,)
"""

LAYER_NORM_KILN = f"""graph():
    %x : f32[{ROWS}, {COLS}] [num_users=1] = placeholder[target=x]
    %weight : f32[{COLS}] [num_users=1] = get_attr[target=weight]
    %bias : f32[{COLS}] [num_users=1] = get_attr[target=bias]
    %out : f32[{ROWS}, {COLS}] [num_users=1] = call_function[target=layer_norm](args = (%x, [{COLS}], %weight, %bias, 1e-05), kwargs = {{}})
    return (out,)
"""


class Workload:
    def __init__(self, name, title, module, inputs, model_path, bytes_moved=None):
        self.name, self.title, self.module, self.inputs = name, title, module.eval(), inputs
        self.model_path, self.bytes_moved = model_path, bytes_moved


def make_workload(name, model_dir):
    """Builds one workload; writes its Kiln model into model_dir when it is not a bundled sample.
    Deterministic: the same name gives the same weights and inputs in every process."""
    generator = torch.Generator().manual_seed(20261129)
    randn = lambda *shape: torch.randn(*shape, generator=generator)  # noqa: E731
    f32 = 4
    if name == "chain":
        path = os.path.join(model_dir, "pointwise_chain.kiln")
        write_text(path, CHAIN_KILN)
        return Workload(name, "pointwise chain 16M", PointwiseChain(), {"x": randn(CHAIN_N)}, path,
                        bytes_moved=2 * CHAIN_N * f32)
    if name == "softmax":
        path = os.path.join(model_dir, "softmax.kiln")
        write_text(path, SOFTMAX_KILN)
        return Workload(name, "softmax 4096x1024", Softmax(), {"x": randn(ROWS, COLS)}, path,
                        bytes_moved=2 * ROWS * COLS * f32)
    if name == "layer_norm":
        path = os.path.join(model_dir, "layer_norm.kiln")
        write_text(path, LAYER_NORM_KILN)
        module = torch.nn.LayerNorm(COLS)
        with torch.no_grad():
            module.weight.copy_(torch.rand(COLS, generator=generator) + 0.5)
            module.bias.copy_(torch.rand(COLS, generator=generator) - 0.5)
        weights_path = os.path.join(model_dir, "layer_norm.safetensors")
        if not os.path.exists(weights_path):
            load_goldens_module().write_safetensors(weights_path, {"weight": module.weight, "bias": module.bias})
        return Workload(name, "layer_norm 4096x1024", module, {"x": randn(ROWS, COLS)}, path,
                        bytes_moved=(2 * ROWS * COLS + 2 * COLS) * f32)
    if name == "mlp":
        module = Mlp()
        module.load_state_dict(read_safetensors(os.path.join(SAMPLES, "mlp.safetensors")))
        return Workload(name, "MLP sample, batch 64", module, {"x": randn(64, 784)},
                        os.path.join(SAMPLES, "mlp.kiln"))  # s0 = 64, bound from the input
    if name == "attention":
        module = Attention()
        module.load_state_dict(read_safetensors(os.path.join(SAMPLES, "attention.safetensors")))
        return Workload(name, "attention sample 2x8x32", module, {"x": randn(2, 8, 32)},
                        os.path.join(SAMPLES, "attention.kiln"))
    raise ValueError(f"unknown workload {name}")


WORKLOADS = ["chain", "softmax", "layer_norm", "mlp", "attention"]


def write_text(path, text):
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(text)


# ---------------------------------------------------------------------------------------------
# Measuring

def summarize(times_ms):
    ordered = sorted(times_ms)

    def percentile(p):
        position = p * (len(ordered) - 1)
        low = int(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return {"iters": len(ordered), "median_ms": percentile(0.5), "min_ms": ordered[0], "p10_ms": percentile(0.1),
            "p90_ms": percentile(0.9), "max_ms": ordered[-1]}


def time_torch(fn, inputs, iters, warmup):
    """Latency of fn(*inputs) as a caller sees it: a fresh output per call, freed before the clock stops."""
    args = list(inputs.values())
    with torch.no_grad():
        for _ in range(warmup):
            fn(*args)
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            fn(*args)  # the result is dropped (freed) before the clock is read, as in kiln bench
            times.append((time.perf_counter() - start) * 1e3)
    return summarize(times)


def run_command(argv, env=None, check=True):
    result = subprocess.run(argv, capture_output=True, text=True, env=env)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}{result.stderr}".strip())
    return result


class OtherLoad:
    """CPU time that other processes of this shared machine use while a measurement runs, in cores
    (1.0: one core kept busy all along): all CPUs' busy time from /proc/stat minus this process's
    and its finished children's."""

    @staticmethod
    def sample():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        busy_s = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")
        own = os.times()
        return time.perf_counter(), busy_s, own.user + own.system + own.children_user + own.children_system

    def __enter__(self):
        self.start = self.sample()
        return self

    def __exit__(self, *exc):
        end = self.sample()
        wall = end[0] - self.start[0]
        others = (end[1] - self.start[1]) - (end[2] - self.start[2])
        self.cores = max(0.0, others / wall) if wall > 0 else 0.0
        return False


def wait_for_quiet(max_wait_s, threshold_cores=0.3):
    """Waits (at most max_wait_s) until other processes use less than threshold_cores over 1 s;
    returns the seconds waited and the last reading."""
    start = time.perf_counter()
    while True:
        with OtherLoad() as load:
            time.sleep(1.0)
        waited = time.perf_counter() - start
        if load.cores < threshold_cores or waited >= max_wait_s:
            return waited, load.cores


def kiln_env(cache_dir, threads):
    env = dict(os.environ)
    env["KILN_CACHE_DIR"] = cache_dir
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def write_inputs(workload, directory):
    flags = []
    for key, value in workload.inputs.items():
        path = os.path.join(directory, f"{workload.name}_{key}.npy")
        if not os.path.exists(path):
            np.save(path, value.numpy())
        flags += ["--input", f"{key}={path}"]
    return flags


def check_kiln_outputs(kiln, workload, input_flags, work_dir, cache_dir, threads):
    """Runs the model through Kiln's CPU backend on the workload's inputs and compares each output
    with PyTorch eager: max |kiln - torch| / max |torch| must stay within CHECK_TOLERANCE."""
    out_dir = os.path.join(work_dir, f"{workload.name}_kiln_out")
    shutil.rmtree(out_dir, ignore_errors=True)
    run_command([kiln, "run", workload.model_path, "--target", "cpu", "--threads", str(threads), "--out", out_dir]
                + input_flags, env=kiln_env(cache_dir, threads))
    with torch.no_grad():
        expected = workload.module(*workload.inputs.values())
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    files = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy"))
    if len(files) != len(expected) or len(files) != 1:  # every workload has one output: no order to match
        return {"ok": False, "error": f"kiln wrote {len(files)} outputs, PyTorch has {len(expected)}"}
    worst = 0.0
    details = []
    for file, want in zip(files, expected):
        got = np.load(os.path.join(out_dir, file)).astype(np.float64)
        want = want.numpy().astype(np.float64)
        if got.shape != want.shape:
            return {"ok": False, "error": f"{file}: shape {got.shape}, PyTorch's {want.shape}"}
        magnitude = float(np.max(np.abs(want)))
        max_abs = float(np.max(np.abs(got - want)))
        relative = max_abs / magnitude if magnitude > 0 else max_abs
        worst = max(worst, relative)
        details.append({"output": file[:-4], "max_abs_err": max_abs, "max_abs_torch": magnitude,
                        "err_over_magnitude": relative})
    return {"ok": worst <= CHECK_TOLERANCE, "err_over_magnitude": worst, "tolerance": CHECK_TOLERANCE,
            "outputs": details}


def kiln_bench(kiln, workload, input_flags, cache_dir, threads, iters, warmup):
    result = run_command([kiln, "bench", workload.model_path, "--target", "cpu", "--json", "--iters", str(iters),
                          "--warmup", str(warmup), "--threads", str(threads)] + input_flags,
                         env=kiln_env(cache_dir, threads))
    data = json.loads(result.stdout.strip().splitlines()[-1])
    return {key: data[key] for key in ("iters", "median_ms", "min_ms", "p10_ms", "p90_ms", "max_ms",
                                       "compile_ms", "cache_hit")}


def kiln_compile(kiln, model_path, cache_dir, threads):
    """`kiln compile`: its stages and their in-process total, the process's wall time, the ISA."""
    start = time.perf_counter()
    result = run_command([kiln, "compile", model_path], env=kiln_env(cache_dir, threads))
    wall_ms = (time.perf_counter() - start) * 1e3
    stages = {}
    for line in result.stdout.splitlines():
        match = re.match(r"\s+(\S[^\d]*?)\s+([\d.]+) ms$", line)
        if match:
            stages[match.group(1)] = float(match.group(2))
    isa = re.search(r"isa (\w+)", result.stdout)
    return {"total_ms": stages.pop("total", None), "wall_ms": wall_ms, "stages_ms": stages,
            "cache_hit": "cache hit" in result.stdout, "isa": isa.group(1) if isa else None}


# The numpy dtypes of the compiled-artifact ABI's dtype codes (kiln/dtype.h order).
ABI_DTYPES = [("f32", np.float32), ("f16", np.float16), ("bf16", None), ("f64", np.float64), ("i64", np.int64),
              ("i32", np.int32), ("i8", np.int8), ("u8", np.uint8), ("bool", np.bool_)]


def probe_kernel(artifact_dir, weights_path, input_flags, iters, warmup, threads, expect_path=None):
    """Kiln's generated code alone: loads the artifact's module.so through its C ABI
    (runtime/compiled_abi.h) and times kiln_run into one preallocated, already touched output
    and workspace, reused by every call; checks the output against `kiln run`'s (expect_path).
    Prints one JSON object. Runs in its own process, so that the module's OpenMP runtime never
    alternates with torch's."""
    import ctypes

    class TensorDesc(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("sizes", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32)]

    class RunArgs(ctypes.Structure):
        _fields_ = [("inputs", ctypes.POINTER(TensorDesc)), ("outputs", ctypes.POINTER(ctypes.c_void_p)),
                    ("parameters", ctypes.POINTER(ctypes.c_void_p)), ("workspace", ctypes.c_void_p),
                    ("symbols", ctypes.POINTER(ctypes.c_int64)), ("fallback", ctypes.c_void_p),
                    ("fallback_state", ctypes.c_void_p), ("error", ctypes.c_char_p),
                    ("error_capacity", ctypes.c_int64), ("num_threads", ctypes.c_int32)]

    with open(os.path.join(artifact_dir, "manifest.json")) as f:
        manifest = json.load(f)
    if manifest["abi"] != 1 or manifest["fallbacks"]:
        sys.exit(f"probe-kernel: needs ABI 1 and no fallbacks, the manifest has abi {manifest['abi']}, "
                 f"fallbacks {manifest['fallbacks']}")
    codes = {name: code for code, (name, _) in enumerate(ABI_DTYPES)}
    numpy_of = dict(ABI_DTYPES)
    lib = ctypes.CDLL(os.path.join(artifact_dir, manifest["library"]))
    lib.kiln_bind.restype = lib.kiln_run.restype = ctypes.c_int32
    lib.kiln_workspace_bytes.restype = ctypes.c_int64
    error = ctypes.create_string_buffer(4096)

    files = dict(flag.split("=", 1) for flag in input_flags)
    arrays = [np.ascontiguousarray(np.load(files[entry["name"]])) for entry in manifest["inputs"]]
    keep = []  # the sizes and strides arrays the descriptors point into
    descs = (TensorDesc * max(1, len(arrays)))()
    for desc, array, entry in zip(descs, arrays, manifest["inputs"]):
        sizes = np.array(array.shape, dtype=np.int64)
        strides = np.array([st // array.itemsize for st in array.strides], dtype=np.int64)
        keep += [sizes, strides]
        desc.data = array.ctypes.data
        desc.sizes = sizes.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
        desc.strides = strides.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
        desc.dtype, desc.rank = codes[entry["dtype"]], array.ndim
    symbols = np.zeros(len(manifest["symbols"]) + 1, dtype=np.int64)
    symbol_ptr = symbols.ctypes.data_as(ctypes.POINTER(ctypes.c_int64))
    if lib.kiln_bind(descs, ctypes.c_int64(len(arrays)), symbol_ptr, error, ctypes.c_int64(len(error))) != 0:
        sys.exit("probe-kernel: " + error.value.decode())
    sizes = np.zeros(max(1, sum(entry["rank"] for entry in manifest["outputs"])), dtype=np.int64)
    lib.kiln_output_sizes(symbol_ptr, sizes.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)))
    outputs, next_size = [], 0
    for entry in manifest["outputs"]:
        shape = tuple(int(v) for v in sizes[next_size:next_size + entry["rank"]])
        next_size += entry["rank"]
        outputs.append(np.zeros(shape, dtype=numpy_of[entry["dtype"]]))  # zeros: every page touched
    weights = read_safetensors(weights_path) if manifest["parameters"] else {}
    parameters = [np.ascontiguousarray(weights[entry["name"]].numpy()) for entry in manifest["parameters"]]
    workspace_bytes = int(lib.kiln_workspace_bytes(symbol_ptr))
    workspace = np.ones(workspace_bytes + 64, dtype=np.uint8)
    args = RunArgs()
    args.inputs = descs
    args.outputs = (ctypes.c_void_p * max(1, len(outputs)))(*[o.ctypes.data for o in outputs])
    args.parameters = (ctypes.c_void_p * max(1, len(parameters)))(*[p.ctypes.data for p in parameters])
    args.workspace = workspace.ctypes.data + (-workspace.ctypes.data) % 64
    args.symbols = symbol_ptr
    args.error, args.error_capacity, args.num_threads = ctypes.cast(error, ctypes.c_char_p), len(error), threads
    times = []
    for i in range(warmup + iters):
        start = time.perf_counter()
        status = lib.kiln_run(ctypes.byref(args))
        elapsed = (time.perf_counter() - start) * 1e3
        if status != 0:
            sys.exit("probe-kernel: kiln_run failed: " + error.value.decode())
        if i >= warmup:
            times.append(elapsed)
    summary = summarize(times)
    if expect_path:  # the same module through `kiln run`: the ctypes call must give the same numbers
        summary["max_abs_diff_vs_kiln_run"] = float(np.max(np.abs(outputs[0] - np.load(expect_path))))
        if summary["max_abs_diff_vs_kiln_run"] != 0:
            sys.exit(f"probe-kernel: output differs from {expect_path} by {summary['max_abs_diff_vs_kiln_run']}")
    print(json.dumps(summary))


def kiln_kernel_only(kiln, workload, input_flags, work_dir, cache_dir, threads, iters, warmup):
    """kiln_run alone, into a preallocated output: see probe_kernel."""
    artifact = os.path.join(work_dir, f"{workload.name}_artifact")
    run_command([kiln, "compile", workload.model_path, "-o", artifact, "--force"], env=kiln_env(cache_dir, threads))
    weights = os.path.splitext(workload.model_path)[0] + ".safetensors"
    files = [flag for flag in input_flags if flag != "--input"]
    expect = os.path.join(work_dir, f"{workload.name}_kiln_out", "out.npy")
    result = run_command([sys.executable, os.path.abspath(__file__), "--probe-kernel", artifact, "--weights", weights,
                          "--expect", expect, "--iters", str(iters), "--warmup", str(warmup),
                          "--threads", str(threads)] + files,
                         env=kiln_env(cache_dir, threads))
    return json.loads(result.stdout.strip().splitlines()[-1])


def measure_stream(work_dir, threads, quiet_wait):
    binary = os.path.join(work_dir, "stream_triad")
    if not os.path.exists(binary):
        run_command(["cc", "-O3", "-fopenmp", "-march=native", STREAM_SOURCE, "-o", binary])
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    wait_for_quiet(quiet_wait)
    with OtherLoad() as load:
        result = json.loads(run_command([binary, str(CHAIN_N), "20"], env=env).stdout)
    result["other_load_cores"] = load.cores
    return result


def probe_compile(name, model_dir, threads):
    """In a fresh process (this script with --probe-compile): one eager call, then the first
    torch.compile call, and a second. Prints one JSON object."""
    torch.set_num_threads(threads)
    workload = make_workload(name, model_dir)
    args = list(workload.inputs.values())
    with torch.no_grad():
        workload.module(*args)  # the first eager call loads kernels: keep it out of the eager figure
        eager_ms = math.inf
        for _ in range(3):  # the least disturbed of three calls stands for "one eager call"
            start = time.perf_counter()
            workload.module(*args)
            eager_ms = min(eager_ms, (time.perf_counter() - start) * 1e3)
        compiled = torch.compile(workload.module)
        start = time.perf_counter()
        compiled(*args)
        first_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        compiled(*args)
        second_ms = (time.perf_counter() - start) * 1e3
    print(json.dumps({"eager_call_ms": eager_ms, "first_compiled_call_ms": first_ms,
                      "compile_ms": first_ms - eager_ms, "second_compiled_call_ms": second_ms}))


def torch_compile_times(name, model_dir, cache_dir, threads):
    """torch.compile cold (empty TORCHINDUCTOR_CACHE_DIR) and warm (the same dir, filled), each in
    a fresh process."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, OMP_NUM_THREADS=str(threads))
    runs = {}
    for kind in ("cold", "warm"):
        result = run_command([sys.executable, os.path.abspath(__file__), "--probe-compile", name, "--model-dir",
                              model_dir, "--threads", str(threads)], env=env)
        runs[kind] = json.loads(result.stdout.strip().splitlines()[-1])
    return runs


# ---------------------------------------------------------------------------------------------
# Reporting

def environment(args, kiln_isa):
    def cpu_flags():
        with open("/proc/cpuinfo") as f:
            text = f.read()
        model = re.search(r"model name\s*:\s*(.*)", text)
        flags = re.search(r"flags\s*:\s*(.*)", text)
        simd = sorted({flag for flag in (flags.group(1).split() if flags else []) if re.match(r"avx|fma", flag)})
        return (model.group(1) if model else platform.processor()), simd

    model, simd = cpu_flags()
    openblas = run_command([sys.executable, "-c", "import ctypes; lib = ctypes.CDLL('libopenblas.so.0'); "
                            "lib.openblas_get_corename.restype = ctypes.c_char_p; "
                            "print(lib.openblas_get_corename().decode())"], check=False)
    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu": model, "cpu_simd_flags": simd, "logical_cpus": os.cpu_count(),
        "threads": args.threads,
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
        "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE", "(unset)"),
        "openblas_corename_for_kiln_gemms": openblas.stdout.strip() or f"(unknown: {openblas.stderr.strip()[-200:]})",
        "kiln_isa": kiln_isa,
        "torch": torch.__version__, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_blas": "MKL" if torch.backends.mkl.is_available() else "other",
        "kiln": args.kiln,
    }


TIMING_NOTES = [
    "Latency: every side is timed per call as a caller sees it, a fresh output allocated and freed inside the",
    "timed region; medians over the same number of calls; inputs fixed. Sides interleave in rounds; each keeps",
    "its round with the lowest median. 'others': cores the machine's other processes kept busy meanwhile",
    "(the most over the kept rounds; with 2 threads on 2 cores, any of it can stall a parallel region).",
    "  kiln    `kiln bench --json`: CompiledModel::run per call - guard checks, a fresh output tensor (aligned_alloc),",
    "          the generated kernels, the workspace reused across calls; compile/load excluded.",
    "  eager   module(*inputs) under torch.no_grad() from Python: Python and dispatcher overhead, a fresh",
    "          tensor for every intermediate and the output (the chain: 5 tensors of 64 MiB per call).",
    "  compile torch.compile(module) (Inductor, CPU, default mode), called the same way: Dynamo guards, the",
    "          Inductor kernels, a fresh output.",
    "  Large fresh buffers come from mmap and page-fault on first touch (STREAM line: cost per 64 MiB).",
    "Bandwidth: (inputs read once + outputs written once) / median time, and as % of the STREAM triad best.",
    "  kiln kernel (and 'kernel ms'): kiln_run of the compiled module.so alone (C ABI via ctypes, own process), into one",
    "          preallocated, already touched output reused by every call: the generated code without the",
    "          runtime's per-call output allocation. Not used in the latency ratios.",
]


def fmt(value, spec=".3f", missing="-"):
    return missing if value is None else format(value, spec)


def print_report(results):
    env, stream = results["environment"], results["stream"]
    print()
    print(f"Kiln vs PyTorch {env['torch']} on {env['cpu']} ({env['logical_cpus']} cpus), {env['threads']} threads for all")
    print(f"  kiln isa {env['kiln_isa']}; torch cpu capability {env['torch_cpu_capability']}, BLAS {env['torch_blas']}; "
          f"OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} (Kiln's GEMMs: OpenBLAS core {env['openblas_corename_for_kiln_gemms']})")
    load = lambda values: "/".join(format(v, ".1f") for v in values)  # noqa: E731
    print(f"  load average (1/5/15 min) before {load(results['load_before'])}, after {load(results['load_after'])}"
          " (shared machine)")
    print(f"STREAM triad ({stream['bytes_per_array'] >> 20} MiB arrays, plain stores, best of "
          f"{stream['reps']} x {len(stream['runs'])} runs, before and after): best {stream['best_gbs']:.1f} GB/s "
          f"(medians: {', '.join(format(r['median_gbs'], '.1f') for r in stream['runs'])}; others' load "
          f"{', '.join(format(r['other_load_cores'], '.2f') for r in stream['runs'])} cores); "
          f"first touch of a fresh 64 MiB buffer {stream['first_touch_ms_per_64mib']:.0f} ms")

    def ms(side):
        return fmt(side["median_ms"]) if side and "median_ms" in side else "FAIL"

    print()
    header = (f"{'workload':<26}{'iters':>6}{'kiln ms':>10}{'eager ms':>10}{'compile ms':>11}{'kiln/eager':>11}"
              f"{'kiln/compile':>13}{'others':>8}  check vs eager")
    print(header)
    print("-" * len(header))
    for w in results["workloads"]:
        check = w["check"]
        check_text = (("ok " if check["ok"] else "FAIL ") + fmt(check.get("err_over_magnitude"), ".1e")
                      if "err_over_magnitude" in check else "FAIL " + check.get("error", "")[:60])
        print(f"{w['title']:<26}{str(w['iters']) + 'x' + str(w['rounds']):>6}{ms(w.get('kiln')):>10}{ms(w.get('eager')):>10}{ms(w.get('compile')):>11}"
              f"{fmt(w.get('kiln_over_eager'), '.2f'):>11}{fmt(w.get('kiln_over_compile'), '.2f'):>13}"
              f"{fmt(w.get('other_load_cores'), '.2f'):>8}  {check_text}")
    memory_bound = [w for w in results["workloads"] if w.get("bytes_moved")]
    if memory_bound:
        print()
        sides = ("kiln", "kiln_kernel", "eager", "compile")
        header = (f"{'GB/s (% of STREAM)':<26}{'MB moved':>9}{'kernel ms':>11}"
                  + "".join(f"{s.replace('_', ' '):>15}" for s in sides))
        print(header)
        print("-" * len(header))
        for w in memory_bound:
            cells = []
            for side in sides:
                data = w.get(side) or {}
                cells.append(f"{data['gbs']:.1f} ({data['stream_fraction'] * 100:.0f}%)" if "gbs" in data else "FAIL")
            print(f"{w['title']:<26}{w['bytes_moved'] / 1e6:>9.1f}{ms(w.get('kiln_kernel')):>11}"
                  + "".join(f"{c:>15}" for c in cells))
    for note in TIMING_NOTES:
        print("  " + note)
    print(f"  check: kiln run --target cpu on the same inputs; max |kiln - torch eager| / max |torch eager| per output,"
          f" pass <= {CHECK_TOLERANCE:g}")
    for w in results["workloads"]:
        for side in ("kiln", "kiln_kernel", "eager", "compile"):
            if w.get(side) and "error" in w[side]:
                print(f"  {w['title']} {side} FAILED: {w[side]['error'][:400]}")
    if results["compile_times"]:
        print()
        header = (f"{'compile time':<24}{'kiln cold ms':>13}{'kiln warm ms':>13}{'torch cold ms':>15}"
                  f"{'torch warm ms':>15}{'cold k/t':>10}{'warm k/t':>10}")
        print(header)
        print("-" * len(header))
        for entry in results["compile_times"]:
            kc, kw, tc, tw = (entry.get(key) for key in ("kiln_cold_ms", "kiln_warm_ms", "torch_cold_ms", "torch_warm_ms"))
            ratio = lambda a, b: fmt(a / b if a is not None and b else None, ".3f")  # noqa: E731
            print(f"{entry['title']:<24}{fmt(kc, '.1f'):>13}{fmt(kw, '.1f'):>13}{fmt(tc, '.0f'):>15}{fmt(tw, '.0f'):>15}"
                  f"{ratio(kc, tc):>10}{ratio(kw, tw):>10}")
            if "error" in entry:
                print(f"  FAILED: {entry['error'][:400]}")
            elif not entry["kiln_warm_was_cache_hit"]:
                print("  the warm kiln compile missed the cache: the warm figure is a second cold compile")
        print("  kiln: the 'total' `kiln compile` prints (in-process: passes, lowering, scheduling, C++ generation, the")
        print("        C++ compiler, cache store, dlopen); cold with an empty KILN_CACHE_DIR, warm a second compile from")
        print("        the filled cache (key, checksum, dlopen). Process wall times are in the JSON (kiln_*_wall_ms).")
        print("  torch: first torch.compile call in a fresh process minus one (warm) eager call; cold with an empty")
        print("        TORCHINDUCTOR_CACHE_DIR, warm in a second fresh process with the same dir. Includes importing")
        print("        Dynamo/Inductor on first use, tracing and guards; excludes `import torch`.")


# ---------------------------------------------------------------------------------------------

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kiln", default=os.environ.get("KILN", os.path.join(REPO, "build", "tools", "kiln")),
                        help="the kiln binary (default: $KILN, else build/tools/kiln)")
    parser.add_argument("--iters", type=int, default=30, help="timed calls per side and workload (at most; "
                        "capped so that one side spends about --budget seconds)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per workload; each side reports "
                        "its round with the lowest median")
    parser.add_argument("--budget", type=float, default=8.0, help="seconds one side may spend on one workload "
                        "(all rounds)")
    parser.add_argument("--quiet-wait", type=float, default=30.0, help="seconds each round may wait for the "
                        "machine's other processes to use under 0.3 cores (0: do not wait)")
    parser.add_argument("--threads", type=int, default=2, help="threads for every side (torch.set_num_threads, "
                        "OMP_NUM_THREADS, kiln --threads)")
    parser.add_argument("--quick", action="store_true", help="10 iterations, 2 rounds; compile times of the MLP and "
                        "softmax only")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset of " + ",".join(WORKLOADS))
    parser.add_argument("--json-out", help="where to write the JSON (default bench/results/compare_torch-DATE.json)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (models, inputs, caches)")
    parser.add_argument("--probe-compile", help=argparse.SUPPRESS)
    parser.add_argument("--model-dir", help=argparse.SUPPRESS)
    parser.add_argument("--probe-kernel", help=argparse.SUPPRESS)
    parser.add_argument("--weights", help=argparse.SUPPRESS)
    parser.add_argument("--expect", help=argparse.SUPPRESS)
    parser.add_argument("probe_inputs", nargs="*", help=argparse.SUPPRESS)
    return parser.parse_args()


def main():
    args = parse_args()
    if args.probe_compile:
        probe_compile(args.probe_compile, args.model_dir, args.threads)
        return 0
    if args.probe_kernel:
        probe_kernel(args.probe_kernel, args.weights, args.probe_inputs, args.iters, args.warmup, args.threads,
                     args.expect)
        return 0
    args.kiln = os.path.abspath(args.kiln)
    if not os.access(args.kiln, os.X_OK):
        sys.exit(f"compare_torch: no kiln binary at {args.kiln}: build it (make kiln) and pass --kiln PATH")
    names = [n for n in args.workloads.split(",") if n]
    for n in names:
        if n not in WORKLOADS:
            sys.exit(f"compare_torch: unknown workload '{n}' (known: {', '.join(WORKLOADS)})")
    if args.quick:
        args.iters, args.rounds = min(args.iters, 10), min(args.rounds, 2)
    compile_names = [n for n in names if not args.quick or n in ("mlp", "softmax")]

    torch.set_num_threads(args.threads)
    work_dir = tempfile.mkdtemp(prefix="kiln-compare-torch-")
    model_dir = os.path.join(work_dir, "models")
    os.makedirs(model_dir)
    results = {"load_before": os.getloadavg(), "workloads": [], "compile_times": []}
    try:
        print(f"working in {work_dir}; load average {results['load_before']}", flush=True)
        stream_runs = [measure_stream(work_dir, args.threads, args.quiet_wait)]
        print(f"STREAM triad: {stream_runs[0]['best_gbs']:.1f} GB/s", flush=True)

        # Compile times first: the warm Inductor cache of each workload then serves the runtime part.
        kiln_isa = None
        inductor_dirs = {}
        for name in compile_names:
            workload = make_workload(name, model_dir)
            entry = {"workload": name, "title": workload.title}
            wait_for_quiet(args.quiet_wait)
            try:
                cache = os.path.join(work_dir, f"kiln-cache-cold-{name}")
                cold = kiln_compile(args.kiln, workload.model_path, cache, args.threads)
                warm = kiln_compile(args.kiln, workload.model_path, cache, args.threads)
                kiln_isa = kiln_isa or cold["isa"]
                entry.update(kiln_cold_ms=cold["total_ms"], kiln_cold_wall_ms=cold["wall_ms"],
                             kiln_cold_stages_ms=cold["stages_ms"], kiln_warm_ms=warm["total_ms"],
                             kiln_warm_wall_ms=warm["wall_ms"], kiln_warm_was_cache_hit=warm["cache_hit"])
                inductor_dirs[name] = os.path.join(work_dir, f"inductor-{name}")
                torch_runs = torch_compile_times(name, model_dir, inductor_dirs[name], args.threads)
                entry.update(torch_cold_ms=torch_runs["cold"]["compile_ms"], torch_warm_ms=torch_runs["warm"]["compile_ms"],
                             torch_runs=torch_runs)
            except Exception as error:  # report and go on with the other workloads
                entry["error"] = str(error)
            results["compile_times"].append(entry)
            print(f"compile times of {name}: " + ", ".join(f"{k} {v:.1f} ms" for k, v in entry.items()
                                                           if k.endswith("_ms") and isinstance(v, float)), flush=True)

        kiln_cache = os.path.join(work_dir, "kiln-cache")
        for name in names:
            workload = make_workload(name, model_dir)
            entry = {"workload": name, "title": workload.title, "bytes_moved": workload.bytes_moved}
            input_flags = write_inputs(workload, work_dir)
            try:
                entry["check"] = check_kiln_outputs(args.kiln, workload, input_flags, work_dir, kiln_cache, args.threads)
            except Exception as error:
                entry["check"] = {"ok": False, "error": str(error)}
            # One eager call sizes the iteration count: the slowest side gets about --budget seconds.
            with torch.no_grad():
                workload.module(*workload.inputs.values())
                start = time.perf_counter()
                workload.module(*workload.inputs.values())
                one_call_s = time.perf_counter() - start
            iters = max(5, min(args.iters, int(args.budget / args.rounds / max(one_call_s, 1e-9))))
            entry["iters"], entry["rounds"] = iters, args.rounds
            try:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_dirs.get(name, os.path.join(work_dir, "inductor-main"))
                compiled = torch.compile(workload.module)
                with torch.no_grad():
                    compiled(*workload.inputs.values())
            except Exception as error:
                compiled, compile_error = None, str(error)
            measure = {
                "kiln": lambda: kiln_bench(args.kiln, workload, input_flags, kiln_cache, args.threads, iters, args.warmup),
                "eager": lambda: time_torch(workload.module, workload.inputs, iters, args.warmup),
                "compile": lambda: (time_torch(compiled, workload.inputs, iters, args.warmup) if compiled is not None
                                    else {"error": compile_error}),
            }
            if workload.bytes_moved:
                measure["kiln_kernel"] = lambda: kiln_kernel_only(args.kiln, workload, input_flags, work_dir, kiln_cache,
                                                                  args.threads, max(iters, 20), args.warmup)
            # Rounds interleave the sides, so that a burst of load on the shared machine hits them alike;
            # each side keeps its least disturbed round (the lowest median).
            # Each round waits (--quiet-wait seconds at most) for the other processes to calm down, and
            # records how much CPU they took while each side ran.
            rounds = {side: [] for side in measure}
            for _ in range(args.rounds):
                waited, _ = wait_for_quiet(args.quiet_wait)
                for side, run in measure.items():
                    with OtherLoad() as load:
                        try:
                            summary = run()
                        except Exception as error:
                            summary = {"error": str(error)}
                    summary["other_load_cores"], summary["waited_for_quiet_s"] = load.cores, waited
                    rounds[side].append(summary)
            for side, summaries in rounds.items():
                good = [r for r in summaries if "median_ms" in r]
                entry[side] = dict(min(good, key=lambda r: r["median_ms"])) if good else summaries[-1]
                entry[side]["round_medians_ms"] = [r.get("median_ms") for r in summaries]
                entry[side]["round_other_load_cores"] = [round(r["other_load_cores"], 2) for r in summaries]
            entry["other_load_cores"] = max(entry[side]["other_load_cores"] for side in measure)
            for side in ("kiln", "kiln_kernel", "eager", "compile"):
                if workload.bytes_moved and "median_ms" in entry.get(side, {}):
                    gbs = workload.bytes_moved / (entry[side]["median_ms"] * 1e-3) / 1e9
                    entry[side]["gbs"] = gbs
            for other in ("eager", "compile"):
                if "median_ms" in entry["kiln"] and "median_ms" in entry[other]:
                    entry[f"kiln_over_{other}"] = entry["kiln"]["median_ms"] / entry[other]["median_ms"]
            results["workloads"].append(entry)
            print(f"{name}: kiln {fmt(entry['kiln'].get('median_ms'))} ms, eager {fmt(entry['eager'].get('median_ms'))} ms, "
                  f"compile {fmt(entry['compile'].get('median_ms'))} ms, check "
                  f"{'ok' if entry['check']['ok'] else 'FAIL'}", flush=True)

        stream_runs.append(measure_stream(work_dir, args.threads, args.quiet_wait))
        results["load_after"] = os.getloadavg()
        stream = dict(stream_runs[0])
        stream["best_gbs"] = max(run["best_gbs"] for run in stream_runs)
        stream["first_touch_ms_per_64mib"] = statistics.median(run["first_touch_ms_per_64mib"] for run in stream_runs)
        stream["runs"] = stream_runs
        results["stream"] = stream
        for entry in results["workloads"]:
            for side in ("kiln", "kiln_kernel", "eager", "compile"):
                if "gbs" in entry.get(side, {}):
                    entry[side]["stream_fraction"] = entry[side]["gbs"] / stream["best_gbs"]
        if kiln_isa is None:
            kiln_isa = kiln_compile(args.kiln, make_workload(names[0], model_dir).model_path, kiln_cache, args.threads)["isa"]
        results["environment"] = environment(args, kiln_isa)
        results["timing_notes"] = TIMING_NOTES
        print_report(results)

        out = args.json_out or os.path.join(REPO, "bench", "results",
                                            f"compare_torch-{datetime.date.today().isoformat()}.json")
        os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
        print(f"\nwrote {out}")
    finally:
        if args.keep:
            print(f"kept {work_dir}")
        else:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 0 if all(w["check"]["ok"] for w in results["workloads"]) else 1


if __name__ == "__main__":
    sys.exit(main())
