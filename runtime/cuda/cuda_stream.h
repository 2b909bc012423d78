// CudaStream and CudaEvent: owned driver streams and events in a CudaContext. A stream orders
// copies, memsets and kernel launches (cuLaunchKernel with KernelArguments); events mark points
// on a stream, let another stream wait for them, and time what lies between two of them.
#pragma once

#include <array>
#include <cstddef>

#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/kernel_arguments.h"

namespace kiln::cuda {

struct LaunchConfig {
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned shared_bytes = 0;  // dynamic shared memory
};

class CudaEvent;

class CudaStream {
 public:
  // A new non-blocking stream (it does not synchronize with the legacy default stream).
  explicit CudaStream(const CudaContext& context);
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  CUstream handle() const { return stream_; }
  const CudaContext& context() const { return context_; }

  void upload(CUdeviceptr to, const void* from, size_t bytes);
  void download(void* to, CUdeviceptr from, size_t bytes);
  void copy(CUdeviceptr to, CUdeviceptr from, size_t bytes);
  void memset(CUdeviceptr to, unsigned char value, size_t bytes);
  void launch(CUfunction function, const LaunchConfig& config, KernelArguments& arguments);
  void wait(const CudaEvent& event);
  void synchronize();

 private:
  const CudaContext& context_;
  CUstream stream_ = nullptr;
};

class CudaEvent {
 public:
  // `timing`: the event can be used with elapsed_milliseconds (slightly slower to record).
  explicit CudaEvent(const CudaContext& context, bool timing = false);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  CUevent handle() const { return event_; }
  void record(const CudaStream& stream);
  bool done() const;  // all work before the record has finished
  void synchronize() const;
  // Milliseconds between `start`'s record and this one's; both need timing.
  float elapsed_milliseconds_since(const CudaEvent& start) const;

 private:
  const CudaContext& context_;
  CUevent event_ = nullptr;
};

}  // namespace kiln::cuda
