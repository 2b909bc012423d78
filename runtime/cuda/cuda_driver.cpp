// The dlopen'ed CUDA driver. See runtime/cuda/cuda_driver.h.
#include "runtime/cuda/cuda_driver.h"

#include <mutex>
#include <type_traits>
#include <utility>

#include "kiln/error.h"

namespace kiln::cuda {

namespace {

[[noreturn]] void no_device(const std::string& reason) { fail("no CUDA device: ", reason); }

// Resolves each entry point from its exported symbol (the versioned one where cuda.h maps the
// plain name to it).
void resolve(const SharedLibrary& library, DriverFunctions& api) {
  auto bind = [&](auto& slot, const char* symbol) {
    void* address = library.find_symbol(symbol);
    if (address == nullptr) {
      no_device(std::string(library.path().string()) + " lacks " + symbol + " (a driver older than CUDA 11?)");
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  bind(api.cuInit, "cuInit");
  bind(api.cuDriverGetVersion, "cuDriverGetVersion");
  bind(api.cuGetErrorName, "cuGetErrorName");
  bind(api.cuGetErrorString, "cuGetErrorString");
  bind(api.cuDeviceGetCount, "cuDeviceGetCount");
  bind(api.cuDeviceGet, "cuDeviceGet");
  bind(api.cuDeviceGetName, "cuDeviceGetName");
  bind(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  bind(api.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  bind(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(api.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  bind(api.cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(api.cuCtxSynchronize, "cuCtxSynchronize");
  bind(api.cuMemGetInfo, "cuMemGetInfo_v2");
  bind(api.cuMemAlloc, "cuMemAlloc_v2");
  bind(api.cuMemFree, "cuMemFree_v2");
  bind(api.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  bind(api.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  bind(api.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  bind(api.cuMemsetD8Async, "cuMemsetD8Async");
  bind(api.cuStreamCreate, "cuStreamCreate");
  bind(api.cuStreamDestroy, "cuStreamDestroy_v2");
  bind(api.cuStreamSynchronize, "cuStreamSynchronize");
  bind(api.cuStreamWaitEvent, "cuStreamWaitEvent");
  bind(api.cuEventCreate, "cuEventCreate");
  bind(api.cuEventDestroy, "cuEventDestroy_v2");
  bind(api.cuEventRecord, "cuEventRecord");
  bind(api.cuEventQuery, "cuEventQuery");
  bind(api.cuEventSynchronize, "cuEventSynchronize");
  bind(api.cuEventElapsedTime, "cuEventElapsedTime");
  bind(api.cuModuleLoadData, "cuModuleLoadData");
  bind(api.cuModuleUnload, "cuModuleUnload");
  bind(api.cuModuleGetFunction, "cuModuleGetFunction");
  bind(api.cuModuleGetGlobal, "cuModuleGetGlobal_v2");
  bind(api.cuLaunchKernel, "cuLaunchKernel");
}

}  // namespace

double CudaDeviceInfo::peak_bandwidth_bytes_per_second() const {
  return 2.0 * double(memory_clock_khz) * 1e3 * double(memory_bus_width_bits) / 8.0;
}

std::string driver_error_name(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case 36: return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA error " + std::to_string(result);
  }
}

std::unique_ptr<CudaDriver> CudaDriver::load(const std::string& library) {
  std::unique_ptr<CudaDriver> driver(new CudaDriver());
  try {
    driver->library_ = SharedLibrary::open(library);
  } catch (const Error& e) {
    no_device(library + " not found or not loadable (" + e.what() + ")");
  }
  resolve(driver->library_, driver->api_);
  CUresult init = driver->api_.cuInit(0);
  if (init != CUDA_SUCCESS) no_device("cuInit returned " + driver->error_name(init));
  driver->check(driver->api_.cuDriverGetVersion(&driver->version_), "cuDriverGetVersion");
  if (driver->device_count() == 0) no_device("the driver sees no device (cuDeviceGetCount returned 0)");
  return driver;
}

std::string CudaDriver::error_name(CUresult result) const {
  const char* name = nullptr;
  if (api_.cuGetErrorName != nullptr && api_.cuGetErrorName(result, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return driver_error_name(result);
}

void CudaDriver::check(CUresult result, std::string_view what) const {
  if (result == CUDA_SUCCESS) return;
  const char* text = nullptr;
  std::string description;
  if (api_.cuGetErrorString(result, &text) == CUDA_SUCCESS && text != nullptr) description = std::string(" (") + text + ")";
  fail("CUDA error: ", what, ": ", error_name(result), description);
}

int CudaDriver::device_count() const {
  int count = 0;
  check(api_.cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

CudaDeviceInfo CudaDriver::device_info(int ordinal) const {
  int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    fail("no CUDA device cuda:", ordinal, " (this machine has ", count, " device", count == 1 ? "" : "s", ")");
  }
  CudaDeviceInfo info;
  info.ordinal = ordinal;
  CUdevice device = 0;
  check(api_.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  char name[256] = {};
  check(api_.cuDeviceGetName(name, sizeof name - 1, device), "cuDeviceGetName");
  info.name = name;
  auto attribute = [&](int which, const char* what) {
    int value = 0;
    check(api_.cuDeviceGetAttribute(&value, which, device), what);
    return value;
  };
  info.compute_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability (major)");
  info.compute_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability (minor)");
  info.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  info.memory_clock_khz = attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "memory clock rate");
  info.memory_bus_width_bits = attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "memory bus width");
  check(api_.cuDeviceTotalMem(&info.total_memory_bytes, device), "cuDeviceTotalMem");
  return info;
}

namespace {
struct ProcessDriver {
  std::once_flag once;
  std::unique_ptr<CudaDriver> driver;
  std::string failure;
};
ProcessDriver& process_driver() {
  static ProcessDriver state;
  std::call_once(state.once, [] {
    try {
      state.driver = CudaDriver::load();
    } catch (const Error& e) {
      state.failure = e.what();
    }
  });
  return state;
}
}  // namespace

CudaDriver& cuda_driver() {
  ProcessDriver& state = process_driver();
  if (!state.driver) throw Error(state.failure);
  return *state.driver;
}

std::optional<std::string> cuda_unavailable_reason() {
  ProcessDriver& state = process_driver();
  if (state.driver) return std::nullopt;
  return state.failure;
}

}  // namespace kiln::cuda
