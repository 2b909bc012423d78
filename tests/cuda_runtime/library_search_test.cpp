// Where the CUDA toolkit's libraries and headers are looked for, and the message when none loads.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "runtime/cuda/library_search.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

TEST(LibrarySearch, TheSystemPathFirstThenTheToolkitRoots) {
  ::unsetenv("KILN_TEST_LIBRARY");
  ::setenv("CUDA_HOME", "/opt/cuda-test", 1);
  std::vector<std::string> candidates = toolkit_library_candidates({"libx.so.2", "libx.so"}, "KILN_TEST_LIBRARY");
  ::unsetenv("CUDA_HOME");
  ASSERT_GE(candidates.size(), 6u);
  EXPECT_EQ(candidates[0], "libx.so.2");
  EXPECT_EQ(candidates[1], "libx.so");
  EXPECT_EQ(candidates[2], "/opt/cuda-test/lib64/libx.so.2");
  EXPECT_EQ(candidates.back(), "/usr/local/cuda/lib64/libx.so");
}

TEST(LibrarySearch, TheOverrideVariableIsTheOnlyCandidate) {
  ::setenv("KILN_TEST_LIBRARY", "/somewhere/libx.so", 1);
  EXPECT_EQ(toolkit_library_candidates({"libx.so"}, "KILN_TEST_LIBRARY"), std::vector<std::string>{"/somewhere/libx.so"});
  try {
    open_toolkit_library({"libx.so"}, "KILN_TEST_LIBRARY", "the X library");
    FAIL() << "loaded a library that does not exist";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("the X library was not found; install the CUDA toolkit or set $KILN_TEST_LIBRARY. Tried: ", 0), 0u)
        << message;
    EXPECT_NE(message.find("/somewhere/libx.so"), std::string::npos) << message;
  }
  ::unsetenv("KILN_TEST_LIBRARY");
}

TEST(LibrarySearch, TheIncludeDirectoryHoldsCudaFp16) {
  std::optional<std::string> include = toolkit_include_directory();
  if (!std::filesystem::exists("/usr/local/cuda/include/cuda_fp16.h")) {
    GTEST_SKIP() << "no CUDA toolkit in /usr/local/cuda";
  }
  ASSERT_TRUE(include.has_value());
  EXPECT_TRUE(std::filesystem::exists(*include + "/cuda_fp16.h"));
}

}  // namespace
}  // namespace kiln::cuda
