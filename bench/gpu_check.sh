#!/usr/bin/env bash
# bench/gpu_check.sh: the CUDA check, for a machine with an NVIDIA GPU (issue 8). One run:
#   1. builds Kiln (CMake, Release) in $KILN_GPU_BUILD_DIR (default build-gpu/);
#   2. runs the CUDA test suites (kiln_cuda_runtime_tests, kiln_cuda_codegen_tests): on a GPU
#      their GPU tests run instead of skipping;
#   3. reads the device's peak DRAM bandwidth from the driver (memory clock x 2 x bus width,
#      through libcuda.so.1 with ctypes) and benchmarks the pointwise chain, softmax, layer_norm,
#      the MLP sample and the attention sample with `kiln bench --target cuda`, and with
#      torch.compile on the GPU when torch with CUDA is importable; it prints each one's median
#      device time (Kiln: its steps between two stream events, without the host-device copies of
#      inputs and outputs; torch: the call between two events) and, for the memory-bound ones, the achieved bandwidth and its fraction of the peak
#      (the goal: 80% or more for pointwise and row reductions).
# The chain/softmax/layer_norm models are the ones bench/compare_torch.py benchmarks on the CPU
# (their text is read from that file), written into a temporary directory.
#
#   bench/gpu_check.sh [--iters N] [--skip-build] [--skip-tests]
# Environment: KILN_GPU_BUILD_DIR, JOBS (default: nproc), PYTHON (default: python3; torch optional).
# Exits 1 when a test suite fails or a benchmark run fails; the benchmark table is printed anyway.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${KILN_GPU_BUILD_DIR:-$REPO/build-gpu}
JOBS=${JOBS:-$(nproc)}
PYTHON=${PYTHON:-python3}
ITERS=100
SKIP_BUILD=0
SKIP_TESTS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --iters) ITERS=$2; shift 2 ;;
    --skip-build) SKIP_BUILD=1; shift ;;
    --skip-tests) SKIP_TESTS=1; shift ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
  esac
done
status=0

echo "== device"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv,noheader || true
else
  echo "(no nvidia-smi)"
fi

if [ "$SKIP_BUILD" = 0 ]; then
  echo "== build ($BUILD, Release, -j$JOBS)"
  cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$BUILD.configure.log" 2>&1 || {
    tail -30 "$BUILD.configure.log"; echo "gpu_check: cmake failed"; exit 1; }
  targets=(kiln)
  for target in kiln_cuda_runtime_tests kiln_cuda_codegen_tests; do
    if cmake --build "$BUILD" --target help 2>/dev/null | grep -q "\b$target\b"; then targets+=("$target"); fi
  done
  cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" > "$BUILD.build.log" 2>&1 || {
    grep -E "error|Error" "$BUILD.build.log" | head -30; echo "gpu_check: build failed"; exit 1; }
  echo "built: ${targets[*]}"
fi
KILN="$BUILD/tools/kiln"

if [ "$SKIP_TESTS" = 0 ]; then
  for suite in cuda_runtime cuda_codegen; do
    binary="$BUILD/tests/kiln_${suite}_tests"
    [ -x "$binary" ] || { echo "== tests: $binary not built"; continue; }
    echo "== tests: kiln_${suite}_tests"
    "$binary" --gtest_brief=1 > "$BUILD/kiln_${suite}_tests.log" 2>&1
    rc=$?
    tail -25 "$BUILD/kiln_${suite}_tests.log"
    [ "$rc" = 0 ] || { echo "gpu_check: kiln_${suite}_tests failed (exit $rc)"; status=1; }
  done
fi

echo "== benchmarks"
"$PYTHON" - "$REPO" "$KILN" "$ITERS" <<'PY' || status=1
import array, ast, ctypes, json, os, random, statistics, subprocess, sys, tempfile

repo, kiln, iters = sys.argv[1], sys.argv[2], int(sys.argv[3])
samples = os.path.join(repo, "samples", "models")


def device_peak():
    """Name and peak DRAM bytes/s of device 0, from the driver's attributes."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        sys.exit(f"gpu_check: no CUDA driver (libcuda.so.1): {e}")
    result = cuda.cuInit(0)
    if result != 0:
        sys.exit(f"gpu_check: cuInit returned {result}: no usable GPU")
    device = ctypes.c_int()
    cuda.cuDeviceGet(ctypes.byref(device), 0)
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 255, device)
    def attribute(number):
        value = ctypes.c_int()
        cuda.cuDeviceGetAttribute(ctypes.byref(value), number, device)
        return value.value
    clock_khz, bus_bits = attribute(36), attribute(37)  # MEMORY_CLOCK_RATE, GLOBAL_MEMORY_BUS_WIDTH
    return name.value.decode(), clock_khz, bus_bits, 2.0 * clock_khz * 1e3 * bus_bits / 8


def compare_torch_models():
    """CHAIN_KILN, SOFTMAX_KILN, LAYER_NORM_KILN and their sizes, evaluated from compare_torch.py's
    source (importing it would need torch)."""
    tree = ast.parse(open(os.path.join(repo, "bench", "compare_torch.py")).read())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target in ("CHAIN_N", "ROWS", "COLS", "CHAIN_KILN", "SOFTMAX_KILN", "LAYER_NORM_KILN"):
                names[target] = eval(compile(ast.Expression(node.value), "compare_torch.py", "eval"), {}, dict(names))
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            targets = [t.id for t in node.targets[0].elts]
            if targets == ["ROWS", "COLS"]:
                names["ROWS"], names["COLS"] = eval(compile(ast.Expression(node.value), "compare_torch.py", "eval"))
    return names


def write_safetensors(path, tensors):
    """1-D f32 tensors (lists of floats) in the safetensors layout: u64 header length, JSON, data."""
    header, blobs, offset = {}, [], 0
    for name, values in tensors.items():
        data = array.array("f", values).tobytes()
        header[name] = {"dtype": "F32", "shape": [len(values)], "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


name, clock_khz, bus_bits, peak = device_peak()
print(f"device: {name}, memory clock {clock_khz / 1e3:.0f} MHz x {bus_bits}-bit bus: peak {peak / 1e9:.0f} GB/s"
      if peak > 0 else f"device: {name}: the driver reports no memory clock; bandwidth fractions unavailable")

m = compare_torch_models()
work = tempfile.mkdtemp(prefix="kiln-gpu-check-")
rng = random.Random(20261129)
for file, text in (("pointwise_chain.kiln", m["CHAIN_KILN"]), ("softmax.kiln", m["SOFTMAX_KILN"]),
                   ("layer_norm.kiln", m["LAYER_NORM_KILN"])):
    open(os.path.join(work, file), "w").write(text)
cols, rows, chain_n = m["COLS"], m["ROWS"], m["CHAIN_N"]
write_safetensors(os.path.join(work, "layer_norm.safetensors"),
                  {"weight": [rng.random() + 0.5 for _ in range(cols)], "bias": [rng.random() - 0.5 for _ in range(cols)]})
f32 = 4
workloads = [  # name, model, extra kiln flags, bytes a memory-bound kernel moves (None: not memory-bound)
    ("chain", os.path.join(work, "pointwise_chain.kiln"), [], 2 * chain_n * f32),
    ("softmax", os.path.join(work, "softmax.kiln"), [], 2 * rows * cols * f32),
    ("layer_norm", os.path.join(work, "layer_norm.kiln"), [], (2 * rows * cols + 2 * cols) * f32),
    ("mlp", os.path.join(samples, "mlp.kiln"), ["--dim", "s0=64"], None),
    ("attention", os.path.join(samples, "attention.kiln"), [], None),
]

torch_side = None
try:
    import torch
    if torch.cuda.is_available():
        sys.path.insert(0, os.path.join(repo, "bench"))
        import compare_torch  # its modules and inputs, same shapes and weights as Kiln's
        torch_side = compare_torch
    else:
        print("torch: importable, but sees no CUDA device; Kiln only")
except ImportError:
    print("torch: not importable; Kiln only")


def torch_compiled_ms(workload_name):
    w = torch_side.make_workload(workload_name, work)
    module = w.module.cuda()
    inputs = [t.cuda() for t in w.inputs.values()]
    compiled = torch.compile(module)
    with torch.no_grad():
        for _ in range(5):
            compiled(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            compiled(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return float(statistics.median(times))


def kiln_ms(model, flags):
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache"))
    run = subprocess.run([kiln, "bench", model, "--target", "cuda", "--json", "--iters", str(iters), "--warmup", "10",
                          "--random-inputs", "1"] + flags, capture_output=True, text=True, env=env)
    if run.returncode != 0:
        return None, (run.stderr or run.stdout).strip().splitlines()[-1:] or ["failed"]
    data = json.loads(run.stdout.strip().splitlines()[-1])
    # The device time of the steps (no host-device copies of inputs and outputs) when reported.
    return data.get("device_median_ms", data["median_ms"]), None


def bandwidth(bytes_moved, ms):
    if bytes_moved is None or ms is None:
        return "-", "-"
    rate = bytes_moved / (ms * 1e-3)
    return f"{rate / 1e9:.0f}", (f"{100 * rate / peak:.0f}%" if peak > 0 else "-")


failed = False
print(f"{'workload':<11} {'kiln ms':>9} {'GB/s':>6} {'of peak':>8}   {'torch.compile ms':>16} {'GB/s':>6} {'of peak':>8}")
for name_, model, flags, bytes_moved in workloads:
    ms, error = kiln_ms(model, flags)
    if error:
        failed = True
    torch_ms = None
    if torch_side is not None:
        try:
            torch_ms = torch_compiled_ms(name_)
        except Exception as e:  # report and go on: one workload's failure is not the others'
            print(f"  torch.compile {name_}: {type(e).__name__}: {e}")
    kb, kf = bandwidth(bytes_moved, ms)
    tb, tf = bandwidth(bytes_moved, torch_ms)
    kiln_text = f"{ms:.4f}" if ms is not None else "FAILED"
    torch_text = f"{torch_ms:.4f}" if torch_ms is not None else "-"
    print(f"{name_:<11} {kiln_text:>9} {kb:>6} {kf:>8}   {torch_text:>16} {tb:>6} {tf:>8}")
    if error:
        print(f"  kiln: {' '.join(error)}")
sys.exit(1 if failed else 0)
PY
exit $status
