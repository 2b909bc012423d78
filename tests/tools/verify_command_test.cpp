// Tests of `kiln verify` through the real executable: every stage of a sound model agrees; a
// fault injected on purpose at one code-generation step (KILN_TESTING_INJECT_BUG,
// compiler/testing_fault_injection.h) is named by its stage, node and kernel; --minify writes a
// repro folder whose script shows the same divergence (and no divergence without the fault);
// and the one-line errors of bad flags.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_runner.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kModels = std::string(KILN_SOURCE_DIR) + "/samples/models/";

// The call_function nodes of an IR text.
int computed_nodes(const std::string& text) {
  int count = 0;
  for (size_t at = text.find("call_function["); at != std::string::npos; at = text.find("call_function[", at + 1)) ++count;
  return count;
}

class VerifyCommand : public cli_test::KilnCliTest {};

TEST_F(VerifyCommand, EveryStageOfASoundModelAgrees) {
  CliResult result = kiln("verify " + kModels + "mlp.kiln --dim s0=3");
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  for (const char* stage : {"functional", "decomposed", "simplified", "loops", "scheduled", "cpu"})
    EXPECT_THAT(result.out, HasSubstr("  " + std::string(stage))) << result.out;
  EXPECT_THAT(result.out, Not(HasSubstr("DIVERGES")));
  EXPECT_THAT(result.out, HasSubstr("every stage agrees with the interpreter"));
  EXPECT_EQ(result.err, "");
}

TEST_F(VerifyCommand, ALoweringFaultIsNamedByStageAndNode) {
  CliResult result = kiln("verify " + kModels + "mlp.kiln --dim s0=3 --target none", "KILN_TESTING_INJECT_BUG=lowering:relu");
  expect_user_error(result, "verify: stage loops disagrees with the interpreter");
  EXPECT_THAT(result.out, HasSubstr("first divergent stage: loops"));
  EXPECT_THAT(result.out, HasSubstr("first divergent node: %relu (relu)"));
  EXPECT_THAT(result.out, Not(HasSubstr("computed by kernel")));  // the loop IR has no kernels yet
}

TEST_F(VerifyCommand, AScheduleFaultIsNamedWithItsKernel) {
  CliResult result = kiln("verify " + kModels + "mlp.kiln --dim s0=3 --target none", "KILN_TESTING_INJECT_BUG=schedule:relu");
  expect_user_error(result, "verify: stage scheduled disagrees");
  EXPECT_THAT(result.out, HasSubstr("  loops       ok"));
  EXPECT_THAT(result.out, HasSubstr("first divergent stage: scheduled"));
  EXPECT_THAT(result.out, HasSubstr("first divergent node: %relu (relu)"));
  EXPECT_THAT(result.out, HasSubstr("computed by kernel kernel"));
}

TEST_F(VerifyCommand, ACodeFaultIsFoundInTheCompiledStageOnly) {
  CliResult result = kiln("verify " + kModels + "mlp.kiln --dim s0=3", "KILN_TESTING_INJECT_BUG=code:relu");
  expect_user_error(result, "verify: stage cpu disagrees");
  EXPECT_THAT(result.out, HasSubstr("  scheduled   ok"));
  EXPECT_THAT(result.out, HasSubstr("first divergent node: %relu (relu)"));
}

TEST_F(VerifyCommand, MinifyWritesARepro) {
  const std::string fault = "KILN_TESTING_INJECT_BUG=lowering:relu";
  fs::path repro = dir_ / "repro";
  CliResult result = kiln("verify " + kModels + "cnn.kiln --target none --minify " + repro.string(), fault);
  expect_user_error(result, "stage loops disagrees");
  std::smatch counts;
  std::string out = result.out;
  ASSERT_TRUE(std::regex_search(out, counts, std::regex("minified: (\\d+) of (\\d+) nodes left"))) << out;
  EXPECT_EQ(counts[1], "1") << out;  // the relu alone, on an input
  EXPECT_GT(std::stoi(counts[2]), 3);
  std::string text = cli_test::read_file(repro / "repro.kiln");
  EXPECT_EQ(computed_nodes(text), 1) << text;
  EXPECT_THAT(text, HasSubstr("target=relu"));
  // Every element diverges, so each static dim of the relu's input (cnn's [2, 8, 8, 8] max pool
  // output: the pool runs before the relu once simplified) is halved down to 1, and the graph is
  // typed for that.
  EXPECT_THAT(out, HasSubstr("repro inputs: max_pool_1_in f32[1, 1, 1, 1]"));
  EXPECT_THAT(text, HasSubstr("f32[1, 1, 1, 1]"));
  ASSERT_TRUE(fs::exists(repro / "repro.sh"));

  // The script shows the divergence with the fault, and none without it.
  const std::string script = "sh " + (repro / "repro.sh").string() + " >" + (dir_ / "script.out").string() + " 2>&1";
  const std::string with_kiln = "KILN=" + std::string(KILN_EXECUTABLE) + " KILN_CACHE_DIR=" + (dir_ / "cache").string();
  int faulty = std::system((with_kiln + " " + fault + " " + script).c_str());
  EXPECT_EQ(WEXITSTATUS(faulty), 1) << cli_test::read_file(dir_ / "script.out");
  EXPECT_THAT(cli_test::read_file(dir_ / "script.out"), HasSubstr("first divergent stage: loops"));
  int sound = std::system((with_kiln + " " + script).c_str());
  EXPECT_EQ(WEXITSTATUS(sound), 0) << cli_test::read_file(dir_ / "script.out");
}

TEST_F(VerifyCommand, MinifyACompiledStageFault) {
  fs::path repro = dir_ / "repro";
  CliResult result = kiln("verify " + kModels + "mlp.kiln --dim s0=2 --minify " + repro.string(), "KILN_TESTING_INJECT_BUG=code:relu");
  expect_user_error(result, "stage cpu disagrees");
  std::string text = cli_test::read_file(repro / "repro.kiln");
  EXPECT_EQ(computed_nodes(text), 1) << result.out << text;
  EXPECT_THAT(cli_test::read_file(repro / "repro.sh"), HasSubstr("--target cpu"));
  // The batch is the symbol s0: bound smaller (2 -> 1) with the graph unchanged; the static 128 halved to 1.
  EXPECT_THAT(result.out, HasSubstr("repro inputs: add_in f32[1, 1]"));
  EXPECT_THAT(text, HasSubstr("f32[s0, 1]"));
}

TEST_F(VerifyCommand, BadFlagsAreOneLineErrors) {
  expect_user_error(kiln("verify " + kModels + "mlp.kiln --dim s0=2 --target interp"), "interp");
  expect_user_error(kiln("verify " + kModels + "mlp.kiln --dim s0=2 --target none --minify " + (dir_ / "r").string()),
                    "no stage diverges");
  expect_user_error(kiln("verify " + kModels + "mlp.kiln --dim s0=2 --max-tests 3"), "--minify");
  fs::create_directories(dir_ / "full");
  std::ofstream(dir_ / "full" / "x.txt") << "x";
  expect_user_error(kiln("verify " + kModels + "mlp.kiln --dim s0=2 --target none --minify " + (dir_ / "full").string(),
                         "KILN_TESTING_INJECT_BUG=lowering:relu"),
                    "not empty");
  expect_user_error(kiln("verify " + kModels + "mlp.kiln --dim s0=2", "KILN_TESTING_INJECT_BUG=relu"), "POINT:OP");
  expect_user_error(kiln("verify " + kModels + "mlp.kiln --dim s0=2", "KILN_TESTING_INJECT_BUG=emit:relu"), "unknown point");
  expect_user_error(kiln("verify " + kModels + "missing.kiln"), "missing.kiln");
}

}  // namespace
}  // namespace kiln
