// A device's primary context. See runtime/cuda/cuda_context.h.
#include "runtime/cuda/cuda_context.h"

namespace kiln::cuda {

CudaContext::CudaContext(int ordinal) : driver_(&cuda_driver()), info_(driver_->device_info(ordinal)) {
  const DriverFunctions& api = driver_->api();
  driver_->check(api.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  driver_->check(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  make_current();
}

CudaContext::~CudaContext() {
  if (context_ != nullptr) driver_->api().cuDevicePrimaryCtxRelease(device_);
}

void CudaContext::make_current() const { driver_->check(driver_->api().cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

void CudaContext::synchronize() const {
  make_current();
  driver_->check(driver_->api().cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace kiln::cuda
