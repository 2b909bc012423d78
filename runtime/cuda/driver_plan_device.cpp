// The GPU behind a launch plan's runs. See runtime/cuda/driver_plan_device.h.
#include "runtime/cuda/driver_plan_device.h"

#include "runtime/cuda/driver_memory_backend.h"

namespace kiln::cuda {

DriverPlanDevice::DriverPlanDevice(const std::string& image, const std::string& what)
    : context_(0), stream_(context_), allocator_(std::make_shared<DriverMemoryBackend>(context_)),
      module_(context_, image, what), steps_start_(context_, /*timing=*/true), steps_end_(context_, /*timing=*/true) {}

DriverPlanDevice::~DriverPlanDevice() = default;

CUdeviceptr DriverPlanDevice::allocate(size_t bytes) { return allocator_.allocate(bytes, stream_id()); }
void DriverPlanDevice::free(CUdeviceptr pointer) { allocator_.free(pointer); }
void DriverPlanDevice::upload(CUdeviceptr to, const void* from, size_t bytes) { stream_.upload(to, from, bytes); }
void DriverPlanDevice::download(void* to, CUdeviceptr from, size_t bytes) { stream_.download(to, from, bytes); }
void DriverPlanDevice::memset(CUdeviceptr to, unsigned char value, size_t bytes) { stream_.memset(to, value, bytes); }
void DriverPlanDevice::synchronize() { stream_.synchronize(); }

std::pair<CUdeviceptr, size_t> DriverPlanDevice::global(const std::string& name) { return module_.global(name); }

void DriverPlanDevice::launch(const std::string& kernel, const LaunchConfig& config, KernelArguments& arguments) {
  auto found = functions_.find(kernel);
  if (found == functions_.end()) found = functions_.emplace(kernel, module_.function(kernel)).first;
  stream_.launch(found->second, config, arguments);
}

void DriverPlanDevice::gemm(const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
                            GemmEpilogue epilogue, CUdeviceptr bias) {
  if (!cublas_) cublas_ = std::make_unique<Cublas>(context_);
  if (epilogue == GemmEpilogue::none) {
    cublas_->gemm(stream_, gemm, dtype, a, b, c);
  } else {
    cublas_->gemm_with_epilogue(stream_, gemm, dtype, a, b, c, epilogue, bias);
  }
}

void DriverPlanDevice::mark_steps_start() { steps_start_.record(stream_); }
void DriverPlanDevice::mark_steps_end() { steps_end_.record(stream_); }
double DriverPlanDevice::steps_milliseconds() { return steps_end_.elapsed_milliseconds_since(steps_start_); }

}  // namespace kiln::cuda
