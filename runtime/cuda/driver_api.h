// The slice of the CUDA driver API (cuda.h) that Kiln calls, declared here so that Kiln builds
// without the CUDA toolkit and links no CUDA library: the driver is dlopen'ed at run time
// (runtime/cuda/cuda_driver.h). Names, values and signatures are the toolkit's; where the
// toolkit is found at build time, runtime/cuda/cuda_abi_check.cpp checks them against its headers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_NOT_READY = 600;

// CUdevice_attribute values.
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;      // kHz
inline constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;  // bits
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

inline constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;

// The driver's entry points, by the exported symbol each is resolved from (the toolkit's
// headers map cuMemAlloc to cuMemAlloc_v2 and so on).
struct DriverFunctions {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);                       // _v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);                              // _v2
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemGetInfo)(size_t* free_bytes, size_t* total_bytes);                   // _v2
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes);                          // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                                          // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr to, const void* from, size_t bytes, CUstream stream);  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* to, CUdeviceptr from, size_t bytes, CUstream stream);        // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr to, CUdeviceptr from, size_t bytes, CUstream stream);  // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr to, unsigned char value, size_t bytes, CUstream stream);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);                                        // _v2
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventCreate)(CUevent* event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);                                           // _v2
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float* milliseconds, CUevent start, CUevent end);
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr* pointer, size_t* bytes, CUmodule module, const char* name);  // _v2
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                             unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                             CUstream stream, void** arguments, void** extra);
};

}  // namespace kiln::cuda
