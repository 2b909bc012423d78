// The cuda target (compiler/target.h): CUDA C++ from codegen/cuda (with kiln_cuda_prelude.h and
// kiln_cuda_reductions.h at its top) and its launch steps, built by NVRTC into device.cubin
// beside launch_plan.json and kernels.cu, loaded by runtime/cuda/cuda_artifact.h.
//
// Building needs NVRTC but no GPU: the architecture is CompileOptions::sm, else the device's
// when one is present, else sm_80. The cache key hashes what the device code's key covers
// (runtime/cuda/device_code_cache.h: the source, NVRTC's version, the architecture, the NVRTC
// options, Kiln's version) and the launch plan: a cache entry is a whole artifact the loader
// runs, and two graphs may share their kernels' source but not their plan (a lone matmul has no
// kernel at all). Its package step (`kiln compile -o DIR --target cuda`) is
// compiler/targets/cuda_package.h.
#pragma once

#include <string>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/schedule.h"
#include "compiler/target.h"

namespace kiln::compiler {

const CodeTarget& cuda_target();

// The launch plan as JSON, what launch_plan.json holds (the format of runtime/cuda/launch_plan.h,
// version 2): the buffers with kinds, dtypes, shapes and workspace offsets; how each symbol is
// bound and the range it must lie in; the inputs, parameters, outputs and fallback nodes in order; the workspace and scratch
// sizes; every step in order with its operands (a fused GEMM as "library": "gemm_lt" with its
// epilogue, bias and output).
std::string launch_plan_json(const codegen::ScheduledProgram& scheduled, const codegen::cuda::CudaModule& module,
                             const std::string& architecture);

}  // namespace kiln::compiler
