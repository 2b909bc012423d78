// Device memory and events from the driver. See runtime/cuda/driver_memory_backend.h.
#include "runtime/cuda/driver_memory_backend.h"

namespace kiln::cuda {

DriverMemoryBackend::~DriverMemoryBackend() {
  const DriverFunctions& api = context_.driver().api();
  for (auto& [token, event] : recorded_) api.cuEventDestroy(event);
  for (CUevent event : idle_events_) api.cuEventDestroy(event);
}

DevicePointer DriverMemoryBackend::allocate(size_t bytes) {
  context_.make_current();
  CUdeviceptr pointer = 0;
  CUresult result = context_.driver().api().cuMemAlloc(&pointer, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) return 0;
  context_.driver().check(result, "cuMemAlloc");
  return pointer;
}

void DriverMemoryBackend::free(DevicePointer pointer) {
  context_.make_current();
  context_.driver().check(context_.driver().api().cuMemFree(pointer), "cuMemFree");
}

uint64_t DriverMemoryBackend::record_event(StreamId stream) {
  std::lock_guard lock(mutex_);
  const DriverFunctions& api = context_.driver().api();
  context_.make_current();
  CUevent event = nullptr;
  if (!idle_events_.empty()) {
    event = idle_events_.back();
    idle_events_.pop_back();
  } else {
    context_.driver().check(api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  }
  context_.driver().check(api.cuEventRecord(event, reinterpret_cast<CUstream>(stream)), "cuEventRecord");
  uint64_t token = next_token_++;
  recorded_[token] = event;
  return token;
}

bool DriverMemoryBackend::event_done(uint64_t token) {
  std::lock_guard lock(mutex_);
  auto it = recorded_.find(token);
  if (it == recorded_.end()) return true;
  CUresult result = context_.driver().api().cuEventQuery(it->second);
  if (result == CUDA_ERROR_NOT_READY) return false;
  context_.driver().check(result, "cuEventQuery");
  idle_events_.push_back(it->second);
  recorded_.erase(it);
  return true;
}

void DriverMemoryBackend::synchronize() { context_.synchronize(); }

}  // namespace kiln::cuda
