// CudaContext: a device's primary context (the one the CUDA runtime and cuBLAS use too),
// retained for the object's life and made current on the calling thread by make_current().
// Every object that calls the driver (streams, modules, memory) holds the context it was made in.
#pragma once

#include "runtime/cuda/cuda_driver.h"

namespace kiln::cuda {

class CudaContext {
 public:
  // Retains device `ordinal`'s primary context and makes it current on this thread. Throws the
  // "no CUDA device" kiln::Error without a driver or device.
  explicit CudaContext(int ordinal = 0);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  // Makes the context current on the calling thread (cheap when it already is).
  void make_current() const;
  void synchronize() const;

  CudaDriver& driver() const { return *driver_; }
  const CudaDeviceInfo& info() const { return info_; }
  CUcontext handle() const { return context_; }

 private:
  CudaDriver* driver_;
  CudaDeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

}  // namespace kiln::cuda
