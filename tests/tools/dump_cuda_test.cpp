// `kiln dump --stage cuda` as a user meets it: the real executable prints the CUDA backend's
// launch plan as // comments, then the generated kernels (compiler/compile_driver.h), with no
// GPU and no NVRTC: every kernel the plan launches is defined in the source, the MLP's first
// layer shows as one cuBLASLt call with its bias and relu fused, the attention sample's exact
// GELU keeps its epilogue kernel; the text is what the library's dump_codegen_stage returns;
// --help lists the stage, --format json is refused in one line, and the library names the
// stages it knows when asked for another.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include "cli_runner.h"
#include "compiler/compile_driver.h"
#include "frontends/model_loader.h"
#include "kiln/error.h"
#include "sample_models.h"

namespace kiln {
namespace {

using cli_test::CliResult;
using cli_test::sample_model;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class DumpCuda : public cli_test::KilnCliTest {};

// The kernels the plan launches (`// launch NAME<<<...`) and those the source defines.
std::set<std::string> matches(const std::string& text, const std::regex& pattern) {
  std::set<std::string> names;
  for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) names.insert((*it)[1].str());
  return names;
}
std::set<std::string> launched(const std::string& dump) { return matches(dump, std::regex(R"(// launch (\w+)<<<)")); }
std::set<std::string> defined(const std::string& dump) {
  return matches(dump, std::regex(R"(extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\()"));
}

TEST_F(DumpCuda, TheMlpPrintsItsPlanThenItsKernelsWithTheFirstLayerFusedIntoCublasLt) {
  CliResult result = kiln("dump " + sample_model("mlp") + " --stage cuda");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_THAT(result.out, StartsWith("// launch plan\n// library call: loop node 0, cublasLt epilogue bias_relu, bias b"));
  EXPECT_THAT(result.out, HasSubstr("// workspace bytes: "));
  EXPECT_THAT(result.out, HasSubstr("// epilogue bias_relu: fused into the cuBLASLt call\n"));
  // The softmax row kernel is the only launch, and the source defines it.
  std::set<std::string> kernels = launched(result.out);
  ASSERT_EQ(kernels.size(), 1u) << result.out;
  EXPECT_EQ(defined(result.out), kernels);
  EXPECT_EQ(result.out, compiler::dump_codegen_stage(frontends::load_model(sample_model("mlp")), "cuda"));
}

TEST_F(DumpCuda, TheAttentionSamplesExactGeluKeepsItsEpilogueKernel) {
  CliResult result = kiln("dump " + sample_model("attention") + " --stage cuda");
  ASSERT_EQ(result.status, 0) << result.err;
  std::set<std::string> kernels = launched(result.out);
  EXPECT_EQ(defined(result.out), kernels);
  EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(),
                          [](const std::string& name) { return name.find("linear_2_matmul_epilogue") != std::string::npos; }))
      << result.out;
  // Its 1 + erf(x / sqrt 2), as one erfc (codegen/schedule_erf_complements.cpp).
  EXPECT_THAT(result.out, HasSubstr("kiln_one_plus_erf("));
  // Its qkv projection adds only a bias: fused.
  EXPECT_THAT(result.out, HasSubstr(", cublasLt epilogue bias, bias b"));
}

TEST_F(DumpCuda, HelpListsTheStageAndJsonIsRefused) {
  CliResult help = kiln("dump --help");
  ASSERT_EQ(help.status, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("cuda: the CUDA launch plan"));
  cli_test::expect_user_error(kiln("dump " + sample_model("mlp") + " --stage cuda --format json"),
                              "--stage cuda prints text only");
}

TEST_F(DumpCuda, TheLibraryNamesTheStagesItKnows) {
  try {
    compiler::dump_codegen_stage(frontends::load_model(sample_model("mlp")), "ptx");
    FAIL() << "dumped an unknown stage";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "unknown codegen stage 'ptx' (known: loops, scheduled, cpp, cuda)");
  }
}

}  // namespace
}  // namespace kiln
