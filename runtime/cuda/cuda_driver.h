// CudaDriver: the CUDA driver API (libcuda.so.1), dlopen'ed so that one build of Kiln runs on
// machines with and without a GPU. Loading resolves every entry point of DriverFunctions and
// calls cuInit; any failure on the way is one kiln::Error "no CUDA device: <reason>" (the
// library is missing, cuInit returned CUDA_ERROR_NO_DEVICE, the driver is a stub, ...).
// cuda_driver() is the process's driver, loaded on first use; a failed load is remembered, so
// every later attempt reports the same reason without retrying.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/cuda/driver_api.h"
#include "runtime/shared_library.h"

namespace kiln::cuda {

inline constexpr const char* kDriverLibrary = "libcuda.so.1";

struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int compute_major = 0, compute_minor = 0;  // compute capability: 9.0 on H100/H200
  int multiprocessors = 0;
  int memory_clock_khz = 0;  // 0 when the driver does not report it
  int memory_bus_width_bits = 0;
  size_t total_memory_bytes = 0;

  int sm() const { return compute_major * 10 + compute_minor; }  // 90 for compute capability 9.0
  // Peak DRAM bandwidth from the driver: memory clock x 2 (double data rate) x bus width;
  // 0 when either is unknown.
  double peak_bandwidth_bytes_per_second() const;
};

class CudaDriver {
 public:
  // Loads `library` (a file name searched on the system's library path, or a path), resolves the
  // entry points and calls cuInit(0). Throws kiln::Error "no CUDA device: ..." on any failure.
  static std::unique_ptr<CudaDriver> load(const std::string& library = kDriverLibrary);

  const DriverFunctions& api() const { return api_; }
  int version() const { return version_; }  // e.g. 13000 for CUDA 13.0
  int device_count() const;
  CudaDeviceInfo device_info(int ordinal) const;

  // Throws kiln::Error "CUDA error: <what>: CUDA_ERROR_X (<the driver's description>)" unless
  // `result` is CUDA_SUCCESS.
  void check(CUresult result, std::string_view what) const;
  // "CUDA_ERROR_NO_DEVICE" and so on, from the driver when it knows the code, else from Kiln's table.
  std::string error_name(CUresult result) const;

 private:
  CudaDriver() = default;
  SharedLibrary library_;
  DriverFunctions api_{};
  int version_ = 0;
};

// The name Kiln's own table gives a driver error code ("CUDA_ERROR_NO_DEVICE"), or
// "CUDA error <code>" for codes it does not list. Usable without a driver.
std::string driver_error_name(CUresult result);

// The process's driver: loaded (from kDriverLibrary) on the first call; throws the same
// "no CUDA device: ..." error on every call when that failed.
CudaDriver& cuda_driver();
// std::nullopt when cuda_driver() works; else the message it throws.
std::optional<std::string> cuda_unavailable_reason();

}  // namespace kiln::cuda
