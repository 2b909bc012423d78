// Loaded device code. See runtime/cuda/cuda_module.h.
#include "runtime/cuda/cuda_module.h"

#include "kiln/error.h"
#include "runtime/cuda/cubin_elf.h"

namespace kiln::cuda {

CudaModule::CudaModule(const CudaContext& context, const std::string& image, const std::string& what)
    : context_(context), what_(what) {
  // A cubin for another architecture: the driver would say only "no kernel image is available".
  if (image.rfind("\x7f" "ELF", 0) == 0) {
    const CudaDeviceInfo& device = context_.info();
    int cubin_sm = read_cubin(image, what).sm;
    if (!cubin_runs_on(cubin_sm, device.sm()))
      fail("the device code of ", what, " was built for sm_", cubin_sm, ", and GPU ", device.ordinal, " (", device.name,
           ") is sm_", device.sm(), ": a cubin runs only on GPUs of its own major architecture; compile for this GPU (",
           "`--sm ", device.sm(), "`)");
  }
  context_.make_current();
  // PTX must be NUL-terminated; std::string's data() is.
  context_.driver().check(context_.driver().api().cuModuleLoadData(&module_, image.c_str()), "loading the device code of " + what);
}

CudaModule::~CudaModule() {
  if (module_ != nullptr) context_.driver().api().cuModuleUnload(module_);
}

CUfunction CudaModule::function(const std::string& name) const {
  CUfunction function = nullptr;
  context_.make_current();
  context_.driver().check(context_.driver().api().cuModuleGetFunction(&function, module_, name.c_str()),
                          "finding kernel '" + name + "' in " + what_);
  return function;
}

std::pair<CUdeviceptr, size_t> CudaModule::global(const std::string& name) const {
  CUdeviceptr pointer = 0;
  size_t bytes = 0;
  context_.make_current();
  context_.driver().check(context_.driver().api().cuModuleGetGlobal(&pointer, &bytes, module_, name.c_str()),
                          "finding device variable '" + name + "' in " + what_);
  return {pointer, bytes};
}

}  // namespace kiln::cuda
