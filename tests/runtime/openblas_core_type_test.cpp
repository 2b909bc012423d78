// choose_openblas_core_type (runtime/cpu/openblas_core_type.h), each case that changes the
// environment in a forked child (the choice is made once per process): the core type follows the
// host's instruction set when nothing is set and OpenBLAS is not loaded yet, and OpenBLAS then
// runs those kernels; the user's OPENBLAS_CORETYPE is left alone; nothing changes once OpenBLAS
// is loaded.
#include "runtime/cpu/openblas_core_type.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>
#include <cstring>

#include "tests/support/process_settings.h"

namespace kiln {
namespace {

using test_support::in_child;

bool openblas_loaded() { return test_support::library_loaded("libopenblas.so.0"); }

TEST(OpenBlasCoreType, TheKernelsOpenBlasPicksOnTheCpusItKnowsWithThatInstructionSet) {
  EXPECT_EQ(openblas_core_type_for(Isa::avx512, CpuVendor::intel), "SkylakeX");
  EXPECT_EQ(openblas_core_type_for(Isa::avx512, CpuVendor::amd), "SkylakeX");
  EXPECT_EQ(openblas_core_type_for(Isa::avx2, CpuVendor::intel), "Haswell");
  EXPECT_EQ(openblas_core_type_for(Isa::avx2, CpuVendor::amd), "Zen");
  EXPECT_EQ(openblas_core_type_for(Isa::avx2, CpuVendor::other), "");
  EXPECT_EQ(openblas_core_type_for(Isa::scalar, CpuVendor::intel), "");
}

TEST(OpenBlasCoreType, OpenBlasLoadedAfterwardsRunsTheChosenKernels) {
  if (openblas_loaded()) GTEST_SKIP() << "this test binary has OpenBLAS loaded already";
  if (host_isa() == Isa::scalar) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: no core type is chosen";
  EXPECT_TRUE(in_child([] {
    unsetenv("OPENBLAS_CORETYPE");
    const OpenBlasCoreTypeChoice choice = choose_openblas_core_type();
    const char* chosen = std::getenv("OPENBLAS_CORETYPE");
    if (choice == OpenBlasCoreTypeChoice::NoneFits) return chosen == nullptr;  // AVX2 of another vendor
    if (choice != OpenBlasCoreTypeChoice::Set || chosen == nullptr) return false;
    void* openblas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (openblas == nullptr) return true;  // no OpenBLAS on this system: nothing more to check
    auto corename = reinterpret_cast<const char* (*)()>(dlsym(openblas, "openblas_get_corename"));
    return corename != nullptr && strcasecmp(corename(), chosen) == 0;
  }));
}

TEST(OpenBlasCoreType, TheUsersSettingIsLeftAlone) {
  EXPECT_TRUE(in_child([] {
    setenv("OPENBLAS_CORETYPE", "Sandybridge", 1);
    return choose_openblas_core_type() == OpenBlasCoreTypeChoice::UserSetting &&
           std::strcmp(std::getenv("OPENBLAS_CORETYPE"), "Sandybridge") == 0;
  }));
}

TEST(OpenBlasCoreType, NothingChangesOnceOpenBlasIsLoaded) {
  EXPECT_TRUE(in_child([] {
    unsetenv("OPENBLAS_CORETYPE");
    if (dlopen("libopenblas.so.0", RTLD_NOW) == nullptr) return true;  // no OpenBLAS on this system: nothing to check
    return choose_openblas_core_type() == OpenBlasCoreTypeChoice::AlreadyLoaded &&
           std::getenv("OPENBLAS_CORETYPE") == nullptr;
  }));
}

}  // namespace
}  // namespace kiln
