// See runtime/cpu/openblas_core_type.h.
#include "runtime/cpu/openblas_core_type.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace kiln {

namespace {

CpuVendor host_vendor() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return CpuVendor::other;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  if (std::strcmp(vendor, "GenuineIntel") == 0) return CpuVendor::intel;
  if (std::strcmp(vendor, "AuthenticAMD") == 0) return CpuVendor::amd;
#endif
  return CpuVendor::other;
}

// A handle on the BLAS library already loaded in this process (OpenBLAS under either of Debian's
// names), for the caller to dlclose; null when none is.
void* loaded_blas() {
  for (const char* name : {"libopenblas.so.0", "libblas.so.3"})
    if (void* library = dlopen(name, RTLD_LAZY | RTLD_NOLOAD)) return library;
  return nullptr;
}

bool openblas_loaded() {
  void* library = loaded_blas();
  if (library) dlclose(library);
  return library != nullptr;
}

}  // namespace

std::string openblas_core_type_for(Isa isa, CpuVendor vendor) {
  if (isa == Isa::avx512) return "SkylakeX";
  if (isa == Isa::avx2 && vendor == CpuVendor::intel) return "Haswell";
  if (isa == Isa::avx2 && vendor == CpuVendor::amd) return "Zen";
  return "";
}

OpenBlasCoreTypeChoice choose_openblas_core_type() {
  static std::once_flag once;
  static OpenBlasCoreTypeChoice result = OpenBlasCoreTypeChoice::UserSetting;
  std::call_once(once, [] {
    if (std::getenv("OPENBLAS_CORETYPE") != nullptr) {
      result = OpenBlasCoreTypeChoice::UserSetting;
    } else if (openblas_loaded()) {
      result = OpenBlasCoreTypeChoice::AlreadyLoaded;
    } else if (const std::string core = openblas_core_type_for(host_isa(), host_vendor()); core.empty()) {
      result = OpenBlasCoreTypeChoice::NoneFits;
    } else {
      setenv("OPENBLAS_CORETYPE", core.c_str(), /*overwrite=*/0);
      result = OpenBlasCoreTypeChoice::Set;
    }
  });
  return result;
}

std::string loaded_openblas_core() {
  void* library = loaded_blas();
  if (library == nullptr) return "";
  std::string core;
  if (auto corename = reinterpret_cast<const char* (*)()>(dlsym(library, "openblas_get_corename")))
    if (const char* name = corename()) core = name;
  dlclose(library);
  return core;
}

}  // namespace kiln
