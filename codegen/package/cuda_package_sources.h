// The host code of a CUDA package (`kiln compile MODEL -o DIR --target cuda`; the cuda target's
// package step, compiler/targets/cuda_package.h, writes and builds it): NAME_cuda.cpp, the
// counterpart of a cpu package's NAME_<isa>.cpp behind the same API (NAME.cpp,
// codegen/package/package_sources.h), made of
//   - the guards and output sizes of the compiled-artifact ABI exactly as the C++ backend prints
//     them (codegen/cpp/cpp_emitter.h: emit_cpp_guard_entry_points), renamed NAME_cuda_kiln_*;
//   - the CUDA side that runtime/ owns, pasted as text into an anonymous namespace: the slices of
//     runtime/cuda/driver_api.h and cublas_api.h, gemm_layout.inc, cublas_calls.inc and
//     package_cuda.inc (the driver and cuBLAS loaded with dlopen, the device state of a model);
//   - the launch plan as straight-line code (as AOTInductor's wrapper is): every buffer placed
//     (inputs copied in, parameters on the device since create, outputs and the workspace kept
//     across runs), each kernel launched with its grid over the shape symbols and its arguments,
//     each matrix product planned and called (cuBLAS, or cuBLASLt with its fused epilogue), each
//     fallback node run on the host (a round trip of its buffers), the outputs copied out and
//     the fault flags read;
//   - NAME_cuda_open / _close / _run_on, the device entries of NAME.cpp's table.
// The device code (the module's kernels built by nvcc or NVRTC) is .incbin'ed from the package
// folder's `spec.device_image_file`. Nothing of Kiln is included; nothing of CUDA is linked.
#pragma once

#include <string>
#include <vector>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/package/package_sources.h"
#include "codegen/schedule.h"

namespace kiln::codegen {

// The kernels the host code launches, each once, in first-launch order (the names it looks up
// in the device code).
std::vector<std::string> cuda_package_kernels(const cuda::CudaModule& module);

// NAME_cuda.cpp for `spec` (target "cuda"). A fallback node (an op the code generator does not
// lower) runs on the host: its buffers copied from the device, NAME.cpp's fallback handler
// (spec.fallback_handler: the portable kernels, as a cpu package's), the written buffers copied
// back, the stream synchronized around it.
std::string cuda_package_host_source(const PackageSpec& spec, const ScheduledProgram& scheduled,
                                     const cuda::CudaModule& module);

}  // namespace kiln::codegen
