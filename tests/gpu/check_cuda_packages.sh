#!/usr/bin/env bash
# For a session lent a GPU: checks CUDA packages (`kiln compile MODEL -o DIR --target cuda`) on the
# GPU against the interpreter, with the tests that skip where there is none:
#   CudaPackage.OnAGpuEverySampleRunsAsTheInterpreterRunsTheModel  (tests/packages/cuda_package_test.cpp:
#     every sample's package, built for the GPU's architecture, run through its own library
#     by `kiln run DIR`, against `kiln run MODEL` on the interpreter)
#   CudaTargetTest.*  (tests/cuda_runtime/cuda_target_test.cpp: the cuda target's artifacts on
#     the GPU, symbol-range guards included), GpuTest.* (driver, cuBLAS, cuBLASLt)
# and the no-GPU ones of the same suites, which must pass there too.
# Usage: tests/gpu/check_cuda_packages.sh [BUILD_DIR]   (default build-gpu; configured and built
# here, Release, only the targets the tests need). Prints each test's result; exit status 0 when
# all passed. Needs the toolkit (nvcc, NVRTC, cuBLAS) under $CUDA_HOME or /usr/local/cuda.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} >/dev/null
cmake --build "$build" -j "$(nproc)" --target kiln kiln_package_tests kiln_cuda_runtime_tests
status=0
"$build/tests/kiln_package_tests" --gtest_filter='CudaPackage.*' --gtest_brief=0 || status=1
"$build/tests/kiln_cuda_runtime_tests" --gtest_filter='CudaTargetTest.*:GpuTest.*:NvccBuild.*' || status=1
# Say whether the GPU tests ran or skipped (a skip means the driver did not load: read why).
"$build/tests/kiln_package_tests" --gtest_filter='CudaPackage.OnAGpu*' 2>&1 | grep -E "SKIPPED|OK|FAILED" || true
exit $status
