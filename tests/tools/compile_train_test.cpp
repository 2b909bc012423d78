// `kiln compile MODEL --train [--loss NAME]` as a user meets it: the real executable on the MLP
// sample given a scalar loss output (its probabilities' mean) prints the partition's saved-bytes
// report and compiles the forward and the backward modules (-o writes each into its own folder;
// a second run finds both in the cache), and each user error about the loss is one clear line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "sample_models.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_user_error;
using ::testing::HasSubstr;
using ::testing::StartsWith;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class CompileTrain : public cli_test::KilnCliTest {
 protected:
  // The MLP sample returning (probs, loss = mean(probs)), with its weights beside it.
  std::string mlp_with_loss() const { return cli_test::write_mlp_with_loss(dir_); }
};

TEST_F(CompileTrain, CompilesTheForwardAndBackwardAfterTheSavedBytesReport) {
  const std::string model = mlp_with_loss();
  CliResult first = kiln("compile " + model + " --train -o " + (dir_ / "out").string());
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_THAT(first.out, StartsWith("# partition: saved "));
  EXPECT_THAT(first.out, HasSubstr("; saving every activation: "));
  const size_t forward_at = first.out.find("compiling the forward graph of " + model);
  const size_t backward_at = first.out.find("compiling the backward graph of " + model);
  ASSERT_NE(forward_at, std::string::npos) << first.out;
  ASSERT_NE(backward_at, std::string::npos) << first.out;
  EXPECT_LT(forward_at, backward_at);
  EXPECT_EQ(count(first.out, "compiled: key "), 2u) << first.out;
  for (const char* half : {"forward", "backward"}) {
    EXPECT_TRUE(fs::exists(dir_ / "out" / half / "module.so")) << half;
    EXPECT_TRUE(fs::exists(dir_ / "out" / half / "module.cpp")) << half;
  }
  // --loss names the same output; both modules come from the cache now.
  CliResult second = kiln("compile " + model + " --train --loss loss");
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(count(second.out, "cache hit: key "), 2u) << second.out;
  EXPECT_EQ(second.out.substr(0, second.out.find("compiling")), first.out.substr(0, forward_at))
      << "the same report";
}

TEST_F(CompileTrain, ALossOutputThatDoesNotExistIsNamedWithTheOutputs) {
  expect_user_error(kiln("compile " + mlp_with_loss() + " --train --loss nope"),
                    "--loss nope: the model has no output named 'nope' (outputs: probs f32[s0, 10], loss f32[])");
}

TEST_F(CompileTrain, AModelWithoutAScalarOutputAsksForALoss) {
  expect_user_error(kiln("compile " + cli_test::sample_model("mlp") + " --train"),
                    "the model has no floating scalar output to differentiate");
}

TEST_F(CompileTrain, LossWithoutTrainIsRefused) {
  expect_user_error(kiln("compile " + mlp_with_loss() + " --loss loss"), "--loss applies only with --train");
}

// The README's training commands, as written there, on the bundled training sample (its output
// is a scalar cross-entropy loss; the README named a model.kiln that did not exist).
TEST_F(CompileTrain, TheReadmesTrainingCommandsRunOnTheBundledClassifier) {
  const std::string model = cli_test::sample_model("classifier");
  CliResult joint = kiln("dump " + model + " --stage joint --loss loss");
  ASSERT_EQ(joint.status, 0) << joint.err;
  EXPECT_THAT(joint.out, HasSubstr("loss: LOSS_OUTPUT"));
  CliResult backward = kiln("dump " + model + " --stage backward");
  ASSERT_EQ(backward.status, 0) << backward.err;
  EXPECT_THAT(backward.out, StartsWith("# partition: saved "));
  CliResult compiled = kiln("compile " + model + " --train -o " + (dir_ / "out").string());
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  for (const char* half : {"forward", "backward"}) EXPECT_TRUE(fs::exists(dir_ / "out" / half / "module.so")) << half;
}

}  // namespace
}  // namespace kiln
