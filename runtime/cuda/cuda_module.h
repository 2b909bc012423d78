// CudaModule: a cubin (or PTX) image loaded into a context with cuModuleLoadData, and the
// kernels looked up in it by name. Unloaded by the destructor.
#pragma once

#include <string>
#include <utility>

#include "runtime/cuda/cuda_context.h"

namespace kiln::cuda {

class CudaModule {
 public:
  // `image`: the bytes of a cubin or a NUL-terminated PTX text. `what` names it in errors
  // (e.g. the kernel source's name).
  CudaModule(const CudaContext& context, const std::string& image, const std::string& what);
  ~CudaModule();
  CudaModule(const CudaModule&) = delete;
  CudaModule& operator=(const CudaModule&) = delete;

  // The kernel `name` (its extern "C" name); kiln::Error naming the module when absent.
  CUfunction function(const std::string& name) const;
  // The address and size of the module's __device__ variable `name`; kiln::Error when absent.
  std::pair<CUdeviceptr, size_t> global(const std::string& name) const;

 private:
  const CudaContext& context_;
  std::string what_;
  CUmodule module_ = nullptr;
};

}  // namespace kiln::cuda
