// DriverPlanDevice: the GPU behind a launch plan's runs (runtime/cuda/plan_device.h): device 0's
// primary context, one non-blocking stream, the caching device allocator, the model's device
// code loaded as a module (its kernels looked up once each), cuBLAS/cuBLASLt made at the first
// GEMM, and a pair of timing events around the steps. Making one needs a device: without one
// the constructor throws the runtime's "no CUDA device: <reason>" error.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/cuda_stream.h"
#include "runtime/cuda/plan_device.h"

namespace kiln::cuda {

class DriverPlanDevice final : public PlanDevice {
 public:
  // `image`: a cubin or PTX (runtime/cuda/cuda_module.h); `what` names it in errors.
  DriverPlanDevice(const std::string& image, const std::string& what);
  ~DriverPlanDevice() override;

  // Makes the context current on the calling thread (each run starts with it).
  void make_current() const { context_.make_current(); }

  CUdeviceptr allocate(size_t bytes) override;
  void free(CUdeviceptr pointer) override;
  void upload(CUdeviceptr to, const void* from, size_t bytes) override;
  void download(void* to, CUdeviceptr from, size_t bytes) override;
  void memset(CUdeviceptr to, unsigned char value, size_t bytes) override;
  void synchronize() override;
  std::pair<CUdeviceptr, size_t> global(const std::string& name) override;
  void launch(const std::string& kernel, const LaunchConfig& config, KernelArguments& arguments) override;
  void gemm(const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, GemmEpilogue epilogue,
            CUdeviceptr bias) override;
  void mark_steps_start() override;
  void mark_steps_end() override;
  double steps_milliseconds() override;

 private:
  StreamId stream_id() const { return StreamId(stream_.handle()); }

  CudaContext context_;
  CudaStream stream_;
  CachingDeviceAllocator allocator_;
  CudaModule module_;
  std::unique_ptr<Cublas> cublas_;  // made at the first GEMM
  std::map<std::string, CUfunction> functions_;
  CudaEvent steps_start_, steps_end_;
};

}  // namespace kiln::cuda
