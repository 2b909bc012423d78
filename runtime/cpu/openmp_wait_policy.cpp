// See runtime/cpu/openmp_wait_policy.h.
#include "runtime/cpu/openmp_wait_policy.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace kiln {

OpenMPWaitPolicy prefer_short_openmp_spins() {
  static std::once_flag once;
  static OpenMPWaitPolicy result = OpenMPWaitPolicy::UserSetting;
  std::call_once(once, [] {
    if (void* gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
      dlclose(gomp);
      result = OpenMPWaitPolicy::AlreadyLoaded;
    } else if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
      result = OpenMPWaitPolicy::UserSetting;
    } else {
      setenv("GOMP_SPINCOUNT", kKilnOpenMPSpinCount, /*overwrite=*/0);
      result = OpenMPWaitPolicy::SetShortSpin;
    }
  });
  return result;
}

}  // namespace kiln
