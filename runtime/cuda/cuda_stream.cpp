// Streams and events. See runtime/cuda/cuda_stream.h.
#include "runtime/cuda/cuda_stream.h"

#include "kiln/error.h"

namespace kiln::cuda {

namespace {
const DriverFunctions& api_of(const CudaContext& context) { return context.driver().api(); }
}  // namespace

CudaStream::CudaStream(const CudaContext& context) : context_(context) {
  context_.make_current();
  context_.driver().check(api_of(context_).cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}

CudaStream::~CudaStream() {
  if (stream_ != nullptr) api_of(context_).cuStreamDestroy(stream_);
}

void CudaStream::upload(CUdeviceptr to, const void* from, size_t bytes) {
  if (bytes == 0) return;
  context_.make_current();
  context_.driver().check(api_of(context_).cuMemcpyHtoDAsync(to, from, bytes, stream_), "copy to the device");
}

void CudaStream::download(void* to, CUdeviceptr from, size_t bytes) {
  if (bytes == 0) return;
  context_.make_current();
  context_.driver().check(api_of(context_).cuMemcpyDtoHAsync(to, from, bytes, stream_), "copy from the device");
}

void CudaStream::copy(CUdeviceptr to, CUdeviceptr from, size_t bytes) {
  if (bytes == 0) return;
  context_.make_current();
  context_.driver().check(api_of(context_).cuMemcpyDtoDAsync(to, from, bytes, stream_), "copy on the device");
}

void CudaStream::memset(CUdeviceptr to, unsigned char value, size_t bytes) {
  if (bytes == 0) return;
  context_.make_current();
  context_.driver().check(api_of(context_).cuMemsetD8Async(to, value, bytes, stream_), "memset on the device");
}

void CudaStream::launch(CUfunction function, const LaunchConfig& config, KernelArguments& arguments) {
  for (int i = 0; i < 3; ++i) {
    if (config.grid[size_t(i)] == 0 || config.block[size_t(i)] == 0) return;  // an empty launch does nothing
  }
  context_.make_current();
  context_.driver().check(api_of(context_).cuLaunchKernel(function, config.grid[0], config.grid[1], config.grid[2],
                                                          config.block[0], config.block[1], config.block[2],
                                                          config.shared_bytes, stream_, arguments.pointers(), nullptr),
                          "cuLaunchKernel");
}

void CudaStream::wait(const CudaEvent& event) {
  context_.make_current();
  context_.driver().check(api_of(context_).cuStreamWaitEvent(stream_, event.handle(), 0), "cuStreamWaitEvent");
}

void CudaStream::synchronize() {
  context_.make_current();
  context_.driver().check(api_of(context_).cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

CudaEvent::CudaEvent(const CudaContext& context, bool timing) : context_(context) {
  context_.make_current();
  context_.driver().check(api_of(context_).cuEventCreate(&event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                          "cuEventCreate");
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) api_of(context_).cuEventDestroy(event_);
}

void CudaEvent::record(const CudaStream& stream) {
  context_.make_current();
  context_.driver().check(api_of(context_).cuEventRecord(event_, stream.handle()), "cuEventRecord");
}

bool CudaEvent::done() const {
  CUresult result = api_of(context_).cuEventQuery(event_);
  if (result == CUDA_ERROR_NOT_READY) return false;
  context_.driver().check(result, "cuEventQuery");
  return true;
}

void CudaEvent::synchronize() const {
  context_.driver().check(api_of(context_).cuEventSynchronize(event_), "cuEventSynchronize");
}

float CudaEvent::elapsed_milliseconds_since(const CudaEvent& start) const {
  float milliseconds = 0;
  context_.driver().check(api_of(context_).cuEventElapsedTime(&milliseconds, start.event_, event_), "cuEventElapsedTime");
  return milliseconds;
}

}  // namespace kiln::cuda
