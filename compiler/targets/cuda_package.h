// The cuda target's package step (compiler/package_writer.h): the same kind of folder as a cpu
// package (compiler/targets/cpu_package.h) behind the same API (NAME.h, NAME.cpp:
// codegen/package/package_sources.h), with the CUDA module's source (NAME_kernels.cu), its host
// side (NAME_cuda.cpp: codegen/package/cuda_package_sources.h) and its device code, built here:
//   - with nvcc when one is found ($KILN_NVCC, else $CUDA_HOME/bin, $CUDA_PATH/bin,
//     /usr/local/cuda/bin, then the PATH): NAME.fatbin, a cubin for the target architecture
//     (--sm, else the GPU's, else sm_80) plus its PTX, which the driver compiles for newer GPUs;
//   - else ($KILN_NVCC=none, or no nvcc) with NVRTC, as the cuda target's artifacts are: NAME.cubin
//     (or NAME.ptx where NVRTC cannot make a cubin for the architecture);
// then libNAME.so and libNAME.a with the system C++ compiler. Nothing of CUDA is linked: the
// library loads the driver and cuBLAS when a model is created, so packages build, and create
// reports KILN_NO_DEVICE, on machines without a GPU.
#pragma once

#include <optional>
#include <string>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/schedule.h"
#include "compiler/package_writer.h"

namespace kiln::compiler {

// What the cuda emitter made, as the package needs it.
struct CudaPackageCode {
  const codegen::ScheduledProgram* scheduled = nullptr;
  const codegen::cuda::CudaModule* module = nullptr;
  int sm = 80;  // the architecture the device code is built for
  size_t kernel_count = 0;
};

PackageResult write_cuda_package(const CudaPackageCode& code, const ir::Graph& graph, const PackageOptions& options);

// The nvcc a package's device code is built with (see above); std::nullopt when there is none,
// or $KILN_NVCC is "none".
std::optional<std::string> find_nvcc();

}  // namespace kiln::compiler
