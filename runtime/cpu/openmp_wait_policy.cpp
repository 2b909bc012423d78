// See runtime/cpu/openmp_wait_policy.h.
#include "runtime/cpu/openmp_wait_policy.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>

namespace kiln {

namespace {

// libgomp's cpu_relax: the step of its spin loop.
inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

}  // namespace

int64_t openmp_spin_count(double pause_nanoseconds) {
  constexpr int64_t kFewest = 1000, kMost = 300000;
  if (!(pause_nanoseconds > 0)) return kMost;
  const double count = std::round(kKilnOpenMPSpinMicroseconds * 1000.0 / pause_nanoseconds);
  return int64_t(std::clamp(count, double(kFewest), double(kMost)));
}

double measured_pause_nanoseconds() {
  static const double measured = [] {
    // 2000 pauses take 20-70 us; the fastest of five runs is the one the OS did not interrupt.
    constexpr int kPauses = 2000;
    double fastest = 0;
    for (int run = 0; run < 5; ++run) {
      const auto begin = std::chrono::steady_clock::now();
      for (int i = 0; i < kPauses; ++i) spin_pause();
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count();
      if (run == 0 || ns < fastest) fastest = ns;
    }
    return fastest / kPauses;
  }();
  return measured;
}

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
      const std::string count = std::to_string(openmp_spin_count(measured_pause_nanoseconds()));
      setenv("GOMP_SPINCOUNT", count.c_str(), /*overwrite=*/0);
      result = OpenMPWaitPolicy::SetShortSpin;
    }
  });
  return result;
}

}  // namespace kiln
