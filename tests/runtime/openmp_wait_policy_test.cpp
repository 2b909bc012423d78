// prefer_short_openmp_spins (runtime/cpu/openmp_wait_policy.h), each case in a forked child
// (the choice is made once per process, and it changes the environment): a short spin when nothing
// is set and libgomp is not loaded yet, as many pauses as make 0.1 ms on this CPU; the user's
// OMP_WAIT_POLICY or GOMP_SPINCOUNT left alone.
#include "runtime/cpu/openmp_wait_policy.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

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
    const std::string expected = std::to_string(openmp_spin_count(measured_pause_nanoseconds()));
    return set && value == expected && std::getenv("OMP_WAIT_POLICY") == nullptr &&
           prefer_short_openmp_spins() == OpenMPWaitPolicy::SetShortSpin;
  }));
}

// 0.1 ms of pauses: 2857 of a Zen 4's ~35 ns, 10638 of an Intel Xeon's ~9.4 ns; never fewer than
// libgomp's throttled 1000 nor more than its default 300000, and its default when unmeasurable.
TEST(OpenMPWaitPolicy, TheSpinIsATenthOfAMillisecondOfPauses) {
  EXPECT_EQ(openmp_spin_count(35.0), 2857);
  EXPECT_EQ(openmp_spin_count(9.4), 10638);
  EXPECT_EQ(openmp_spin_count(400.0), 1000);
  EXPECT_EQ(openmp_spin_count(0.1), 300000);
  EXPECT_EQ(openmp_spin_count(0.0), 300000);
  const double measured = measured_pause_nanoseconds();
  EXPECT_GT(measured, 0.0);
  EXPECT_LT(measured, 10000.0);  // a pause is nanoseconds long, never microseconds
  EXPECT_EQ(measured_pause_nanoseconds(), measured);  // measured once per process
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
