// prefer_short_openmp_spins (runtime/cpu/openmp_wait_policy.h), each case in a forked child
// (the choice is made once per process, and it changes the environment): a short spin when nothing
// is set and libgomp is not loaded yet, the user's OMP_WAIT_POLICY or GOMP_SPINCOUNT left alone.
#include "runtime/cpu/openmp_wait_policy.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "tests/support/process_settings.h"

namespace kiln {
namespace {

using test_support::in_child;

bool gomp_loaded() { return test_support::library_loaded("libgomp.so.1"); }

TEST(OpenMPWaitPolicy, AShortSpinWhenNothingIsSetAndOpenMPIsNotLoadedYet) {
  if (gomp_loaded()) GTEST_SKIP() << "this test binary has libgomp loaded already";
  EXPECT_TRUE(in_child([] {
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("GOMP_SPINCOUNT");
    const char* value = nullptr;
    bool set = prefer_short_openmp_spins() == OpenMPWaitPolicy::SetShortSpin && (value = std::getenv("GOMP_SPINCOUNT"));
    return set && std::strcmp(value, "3000") == 0 && std::getenv("OMP_WAIT_POLICY") == nullptr &&
           prefer_short_openmp_spins() == OpenMPWaitPolicy::SetShortSpin;
  }));
}

TEST(OpenMPWaitPolicy, TheUsersSettingsAreLeftAlone) {
  if (gomp_loaded()) GTEST_SKIP() << "this test binary has libgomp loaded already";
  EXPECT_TRUE(in_child([] {
    setenv("OMP_WAIT_POLICY", "active", 1);
    return prefer_short_openmp_spins() == OpenMPWaitPolicy::UserSetting &&
           std::strcmp(std::getenv("OMP_WAIT_POLICY"), "active") == 0;
  }));
  EXPECT_TRUE(in_child([] {
    unsetenv("OMP_WAIT_POLICY");
    setenv("GOMP_SPINCOUNT", "1000", 1);
    return prefer_short_openmp_spins() == OpenMPWaitPolicy::UserSetting && std::getenv("OMP_WAIT_POLICY") == nullptr &&
           std::strcmp(std::getenv("GOMP_SPINCOUNT"), "1000") == 0;
  }));
}

TEST(OpenMPWaitPolicy, NothingChangesOnceOpenMPIsLoaded) {
  EXPECT_TRUE(in_child([] {
    unsetenv("OMP_WAIT_POLICY");
    unsetenv("GOMP_SPINCOUNT");
    if (dlopen("libgomp.so.1", RTLD_NOW) == nullptr) return true;  // no libgomp on this system: nothing to check
    return prefer_short_openmp_spins() == OpenMPWaitPolicy::AlreadyLoaded && std::getenv("OMP_WAIT_POLICY") == nullptr &&
           std::getenv("GOMP_SPINCOUNT") == nullptr;
  }));
}

}  // namespace
}  // namespace kiln
