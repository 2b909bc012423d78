// PlanDevice: what running a launch plan (runtime/cuda/plan_runner.h) asks of a device. The one
// runner serves the GPU (runtime/cuda/driver_plan_device.h: the driver API, one stream, the
// caching allocator, cuBLAS) and the CPU emulation of generated CUDA that the tests use
// (tests/cuda_codegen/emulated_model.h), as runtime/cuda/caching_allocator.h takes its
// DeviceMemoryBackend: the logic is the same, and is tested, without a GPU.
//
// Pointers are device addresses (CUdeviceptr). Copies, memsets, launches and GEMMs run in the
// order they are issued (one stream); an upload reads its host memory and a download writes
// its host memory at any time up to the next synchronize().
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "runtime/cuda/cuda_stream.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/gemm_plan.h"
#include "runtime/cuda/kernel_arguments.h"
#include "kiln/dtype.h"

namespace kiln::cuda {

class PlanDevice {
 public:
  virtual ~PlanDevice() = default;

  // At least 256-byte aligned, like cuMemAlloc's.
  virtual CUdeviceptr allocate(size_t bytes) = 0;
  virtual void free(CUdeviceptr pointer) = 0;
  virtual void upload(CUdeviceptr to, const void* from, size_t bytes) = 0;
  virtual void download(void* to, CUdeviceptr from, size_t bytes) = 0;
  virtual void memset(CUdeviceptr to, unsigned char value, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // The address and size of the module's __device__ variable `name`.
  virtual std::pair<CUdeviceptr, size_t> global(const std::string& name) = 0;
  // Launches the module's kernel `kernel` (its extern "C" name).
  virtual void launch(const std::string& kernel, const LaunchConfig& config, KernelArguments& arguments) = 0;
  // c = op(a) @ op(b), row-major (runtime/cuda/gemm_plan.h), with `epilogue` fused (bias: n
  // values of `dtype` at `bias`, 0 without one).
  virtual void gemm(const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                    GemmEpilogue epilogue, CUdeviceptr bias) = 0;

  // Marks where a run's steps start and end on the stream; steps_milliseconds() (after a
  // synchronize) is the time between them, negative where the device does not measure it.
  virtual void mark_steps_start() {}
  virtual void mark_steps_end() {}
  virtual double steps_milliseconds() { return -1; }
};

}  // namespace kiln::cuda
