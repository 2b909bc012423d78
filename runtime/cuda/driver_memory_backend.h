// DriverMemoryBackend: the caching allocator's device (runtime/cuda/caching_allocator.h) on a
// real GPU: cuMemAlloc/cuMemFree in a CudaContext, and driver events for stream-ordered reuse.
#pragma once

#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/cuda/cuda_context.h"

namespace kiln::cuda {

class DriverMemoryBackend final : public DeviceMemoryBackend {
 public:
  explicit DriverMemoryBackend(const CudaContext& context) : context_(context) {}
  ~DriverMemoryBackend() override;

  DevicePointer allocate(size_t bytes) override;  // 0 on CUDA_ERROR_OUT_OF_MEMORY
  void free(DevicePointer pointer) override;
  uint64_t record_event(StreamId stream) override;
  bool event_done(uint64_t token) override;
  void synchronize() override;

 private:
  const CudaContext& context_;
  std::mutex mutex_;
  uint64_t next_token_ = 1;
  std::unordered_map<uint64_t, CUevent> recorded_;
  std::vector<CUevent> idle_events_;  // created once, reused
};

}  // namespace kiln::cuda
