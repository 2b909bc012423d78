// prefer_short_openmp_spins (runtime/cpu/openmp_wait_policy.h), each case in a forked child
// (the choice is made once per process, and it changes the environment): a short spin when nothing
// is set and libgomp is not loaded yet, the user's OMP_WAIT_POLICY or GOMP_SPINCOUNT left alone.
#include "runtime/cpu/openmp_wait_policy.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <functional>

namespace kiln {
namespace {

// Runs `check` in a child process; true when it returned true.
bool in_child(const std::function<bool()>& check) {
  pid_t pid = fork();
  if (pid == 0) _exit(check() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool gomp_loaded() {
  void* gomp = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (gomp) dlclose(gomp);
  return gomp != nullptr;
}

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
