// Standalone CUDA kernel headers (`kiln kernel --target cuda`): some kernels of a scheduled program
// (all of an expression's, or one of a model's) as one self-contained .cuh that nvcc and NVRTC
// both accept. It holds the CUDA backend's own module
// (codegen/cuda/cuda_emitter.h: prelude, op layer, block reductions and `__global__` kernels)
// inside a namespace of the entry's name, each kernel renamed <name>_<kernel>; under NVRTC
// (__CUDACC_RTC__) the kernels are `extern "C"` (found by those names), under nvcc `static`, so
// several headers and translation units link into one program. For nvcc it adds a host launch
// helper, <name>(pointers..., sizes..., [workspace,] stream), which launches the kernels in
// order on the stream, and <name>_workspace_bytes(sizes...) where the program needs scratch
// memory. The pointers and the workspace are those of codegen/kernel_interface.h (the values made
// and read only inside the selection, then the split reductions' scratch area). The comment
// block documents the signature as the C++ header's does.
#pragma once

#include <string>
#include <vector>

#include "codegen/schedule.h"

namespace kiln::codegen::cuda {

struct CudaKernelHeaderOptions {
  std::string name;                       // the launch helper: a C identifier
  std::vector<int> kernels;               // indices into scheduled.kernels, in order; empty: every kernel
  std::vector<std::string> description;   // the first comment's lines
  std::vector<std::string> output_names;  // the helper's names for the graph outputs, by position
};

// Throws kiln::Error for a program a header cannot hold: a library call (cuBLAS GEMM or a
// fallback node), which the host runs outside any kernel.
std::string emit_cuda_kernel_header(const ScheduledProgram& scheduled, const CudaKernelHeaderOptions& options);

}  // namespace kiln::codegen::cuda
