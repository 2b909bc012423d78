// Runs samples/compile_fn and checks what it prints: the explanation (two graphs, one break),
// the branch's results, and one variant serving the dynamic batch sizes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "tests/support/test_paths.h"

namespace {

using ::testing::HasSubstr;

TEST(CompileFnSample, PrintsTheExplanationTheBreaksAndTheVariants) {
  ASSERT_FALSE(KILN_COMPILE_FN_SAMPLE.empty()) << "this build did not make samples/compile_fn";
  std::string command = std::string("KILN_LOG=recompiles,dynamic,graph_breaks ") + KILN_COMPILE_FN_SAMPLE + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), int(buffer.size()), pipe) != nullptr) output += buffer.data();
  ASSERT_EQ(pclose(pipe), 0) << output;
  EXPECT_THAT(output, HasSubstr("2 graphs, 1 graph break"));
  EXPECT_THAT(output, HasSubstr("compile_fn.cpp:"));
  EXPECT_THAT(output, HasSubstr("normalize: 3 calls, 1 graph breaks per call, 3 graphs compiled"));
  EXPECT_THAT(output, HasSubstr("normalize_always: 6 calls, 3 traces, 3 variants"));
  EXPECT_THAT(output, HasSubstr("kiln[dynamic]: normalize_always: x.size(0) changed from 8 to 16: made dynamic"));
  EXPECT_THAT(output, HasSubstr("kiln[recompiles]: normalize_always: recompiling (variant 1): x.size(0) == 8 failed: it is 16"));
}

}  // namespace
