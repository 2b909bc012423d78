// `kiln dump --stage joint|forward|backward [--loss NAME]` as a user meets it: the real
// executable on the MLP sample given a scalar loss output (its probabilities' mean): the
// joint graph, the forward and backward halves headed by the saved-bytes report as comments
// (the dump still reads back in), the report on stderr beside JSON, and each user error
// about the loss as one clear line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "sample_models.h"

namespace kiln {
namespace {

using cli_test::CliResult;
using cli_test::expect_user_error;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The text after the report's comment lines.
std::string without_comment_header(const std::string& text) {
  size_t start = 0;
  while (text.compare(start, 1, "#") == 0) start = text.find('\n', start) + 1;
  return text.substr(start);
}

class DumpTraining : public cli_test::KilnCliTest {
 protected:
  std::string mlp_with(const std::string& name, const std::string& extra_nodes, const std::string& outputs) const {
    return cli_test::write_mlp_with(dir_, name, extra_nodes, outputs);
  }
  std::string mlp_with_loss() const { return cli_test::write_mlp_with_loss(dir_); }
  std::string write_model(const std::string& name, const std::string& text) const {
    return cli_test::write_mlp_model(dir_, name, text);
  }
};

TEST_F(DumpTraining, JointGraphReturnsTheForwardOutputsThenEveryParameterGradient) {
  CliResult joint = kiln("dump " + mlp_with_loss() + " --stage joint");
  ASSERT_EQ(joint.status, 0) << joint.err;
  EXPECT_THAT(joint.out, StartsWith("graph():"));
  // probs, loss, then the gradients of fc1.weight, fc1.bias, fc2.weight, fc2.bias.
  size_t return_at = joint.out.rfind("return (");
  ASSERT_NE(return_at, std::string::npos);
  std::string returned = joint.out.substr(return_at);
  EXPECT_THAT(returned, StartsWith("return (probs, loss, "));
  EXPECT_EQ(std::count(returned.begin(), returned.end(), ','), 5) << returned;
  // --loss names the same output explicitly.
  CliResult named = kiln("dump " + mlp_with_loss() + " --stage joint --loss loss");
  EXPECT_EQ(named.status, 0) << named.err;
  EXPECT_EQ(named.out, joint.out);
}

TEST_F(DumpTraining, ForwardAndBackwardAreHeadedByTheReportAndReadBackIn) {
  std::string model = mlp_with_loss();
  for (const char* stage : {"forward", "backward"}) {
    CliResult result = kiln("dump " + model + " --stage " + stage);
    ASSERT_EQ(result.status, 0) << stage << ": " << result.err;
    EXPECT_THAT(result.out, StartsWith("# partition: saved ")) << stage;
    EXPECT_THAT(result.out, HasSubstr("; saving every activation: ")) << stage;
    EXPECT_THAT(result.out, HasSubstr("#   saved x : f32[s0, 784] ")) << stage;
    EXPECT_THAT(without_comment_header(result.out), StartsWith("graph():")) << stage;
  }
  // The forward dump, report included, is a model file `kiln dump` reads (the weights beside
  // it) and prints back without the comments. (The backward reads constants that constant
  // folding made, which no weights file holds.)
  CliResult forward = kiln("dump " + model + " --stage forward");
  CliResult reread = kiln("dump " + write_model("forward", forward.out));
  EXPECT_EQ(reread.status, 0) << reread.err;
  EXPECT_EQ(reread.out, without_comment_header(forward.out));
  // The forward returns probs and loss, then the saved values, x first.
  EXPECT_THAT(forward.out, HasSubstr("return (probs, loss, x, "));
  CliResult backward = kiln("dump " + model + " --stage backward");
  EXPECT_THAT(backward.out, HasSubstr("%x : f32[s0, 784] [num_users=1] = placeholder[target=x]"));
}

TEST_F(DumpTraining, ReportGoesToStderrBesideJson) {
  CliResult json = kiln("dump " + mlp_with_loss() + " --stage backward --format json");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, StartsWith("{"));
  EXPECT_THAT(json.out, Not(HasSubstr("# partition")));
  EXPECT_THAT(json.err, StartsWith("# partition: saved "));
}

TEST_F(DumpTraining, LossErrorsAreOneClearLine) {
  std::string mlp = cli_test::sample_model("mlp");
  expect_user_error(kiln("dump " + mlp + " --stage joint"),
                    "the model has no floating scalar output to differentiate (outputs: probs f32[s0, 10]): name the "
                    "loss with --loss NAME");
  expect_user_error(kiln("dump " + mlp + " --stage forward --loss probs"),
                    "--loss probs: output 'probs' is f32[s0, 10], not a floating scalar");
  expect_user_error(kiln("dump " + mlp_with_loss() + " --stage backward --loss lost"),
                    "--loss lost: the model has no output named 'lost' (outputs: probs f32[s0, 10], loss f32[])");
  expect_user_error(kiln("dump " + mlp_with_loss() + " --stage simplified --loss loss"),
                    "--loss applies only to --stage joint, forward or backward");
  std::string two_losses = mlp_with("two_losses",
                                    "    %loss : f32[] = call_function[target=mean](args = (%probs,), kwargs = {})\n"
                                    "    %total : f32[] = call_function[target=sum](args = (%probs,), kwargs = {})\n",
                                    "(loss, total)");
  expect_user_error(kiln("dump " + two_losses + " --stage joint"), "the model has several floating scalar outputs");
  CliResult chosen = kiln("dump " + two_losses + " --stage joint --loss total");
  EXPECT_EQ(chosen.status, 0) << chosen.err;
}

}  // namespace
}  // namespace kiln
