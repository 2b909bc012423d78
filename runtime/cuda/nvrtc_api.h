// The slice of NVRTC's C API (nvrtc.h) that Kiln calls, declared here so that Kiln builds
// without the CUDA toolkit; libnvrtc is dlopen'ed at run time (runtime/cuda/nvrtc.h). Checked
// against the toolkit's header by runtime/cuda/cuda_abi_check.cpp where it is found.
#pragma once

#include <cstddef>

namespace kiln::cuda {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;

struct NvrtcFunctions {
  const char* (*nvrtcGetErrorString)(nvrtcResult result);
  nvrtcResult (*nvrtcVersion)(int* major, int* minor);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int* count);
  nvrtcResult (*nvrtcGetSupportedArchs)(int* architectures);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram* program, const char* source, const char* name, int header_count,
                                    const char* const* headers, const char* const* include_names);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram* program);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int option_count, const char* const* options);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char* log);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char* cubin);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram program, size_t* size);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram program, char* ptx);
};

}  // namespace kiln::cuda
