// `kiln dump --stage joint|forward|backward [--loss NAME]` as a user meets it: the real
// executable on the MLP sample given a scalar loss output (its probabilities' mean): the
// joint graph, the forward and backward halves headed by the saved-bytes report as comments
// (the dump still reads back in), the report on stderr beside JSON, and each user error
// about the loss as one clear line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The text after the report's comment lines.
std::string without_comment_header(const std::string& text) {
  size_t start = 0;
  while (text.compare(start, 1, "#") == 0) start = text.find('\n', start) + 1;
  return text.substr(start);
}

class DumpTraining : public ::testing::Test {
 protected:
  struct Result {
    int status = -1;
    std::string out;
    std::string err;
  };

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kiln_dump_training_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result kiln(const std::string& arguments) {
    fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string command = std::string(KILN_EXECUTABLE) + " " + arguments + " >" + out.string() + " 2>" + err.string();
    int raw = std::system(command.c_str());
    Result result;
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    result.out = read_file(out);
    result.err = read_file(err);
    return result;
  }

  // A copy of the MLP sample (with its weights) whose return is replaced by `outputs`, after
  // the lines in `extra_nodes`.
  std::string mlp_with(const std::string& name, const std::string& extra_nodes, const std::string& outputs) {
    std::string text = read_file(kModels / "mlp.kiln");
    const std::string old_return = "    return (probs,)\n";
    size_t at = text.find(old_return);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, old_return.size(), extra_nodes + "    return " + outputs + "\n");
    // probs gains users: drop its written use count (the parser checks it when written).
    const std::string probs_users = "%probs : f32[s0, 10] [num_users=1] =";
    at = text.find(probs_users);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, probs_users.size(), "%probs : f32[s0, 10] =");
    return write_model(name, text);
  }
  std::string mlp_with_loss() {
    return mlp_with("mlp_loss", "    %loss : f32[] = call_function[target=mean](args = (%probs,), kwargs = {})\n",
                    "(probs, loss)");
  }
  // A model file `name`.kiln holding `text`, with the MLP's weights beside it.
  std::string write_model(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / (name + ".kiln"), std::ios::binary) << text;
    fs::copy_file(kModels / "mlp.safetensors", dir_ / (name + ".safetensors"), fs::copy_options::overwrite_existing);
    return (dir_ / (name + ".kiln")).string();
  }

  // A user error: status 1, one line on stderr starting "kiln: error: ".
  static void expect_user_error(const Result& result, const std::string& expected) {
    EXPECT_EQ(result.status, 1) << result.err;
    EXPECT_THAT(result.err, StartsWith("kiln: error: "));
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_THAT(result.err, HasSubstr(expected));
  }

  fs::path dir_;
};

TEST_F(DumpTraining, JointGraphReturnsTheForwardOutputsThenEveryParameterGradient) {
  Result joint = kiln("dump " + mlp_with_loss() + " --stage joint");
  ASSERT_EQ(joint.status, 0) << joint.err;
  EXPECT_THAT(joint.out, StartsWith("graph():"));
  // probs, loss, then the gradients of fc1.weight, fc1.bias, fc2.weight, fc2.bias.
  size_t return_at = joint.out.rfind("return (");
  ASSERT_NE(return_at, std::string::npos);
  std::string returned = joint.out.substr(return_at);
  EXPECT_THAT(returned, StartsWith("return (probs, loss, "));
  EXPECT_EQ(std::count(returned.begin(), returned.end(), ','), 5) << returned;
  // --loss names the same output explicitly.
  Result named = kiln("dump " + mlp_with_loss() + " --stage joint --loss loss");
  EXPECT_EQ(named.status, 0) << named.err;
  EXPECT_EQ(named.out, joint.out);
}

TEST_F(DumpTraining, ForwardAndBackwardAreHeadedByTheReportAndReadBackIn) {
  std::string model = mlp_with_loss();
  for (const char* stage : {"forward", "backward"}) {
    Result result = kiln("dump " + model + " --stage " + stage);
    ASSERT_EQ(result.status, 0) << stage << ": " << result.err;
    EXPECT_THAT(result.out, StartsWith("# partition: saved ")) << stage;
    EXPECT_THAT(result.out, HasSubstr("; saving every activation: ")) << stage;
    EXPECT_THAT(result.out, HasSubstr("#   saved x : f32[s0, 784] ")) << stage;
    EXPECT_THAT(without_comment_header(result.out), StartsWith("graph():")) << stage;
  }
  // The forward dump, report included, is a model file `kiln dump` reads (the weights beside
  // it) and prints back without the comments. (The backward reads constants that constant
  // folding made, which no weights file holds.)
  Result forward = kiln("dump " + model + " --stage forward");
  Result reread = kiln("dump " + write_model("forward", forward.out));
  EXPECT_EQ(reread.status, 0) << reread.err;
  EXPECT_EQ(reread.out, without_comment_header(forward.out));
  // The forward returns probs and loss, then the saved values, x first.
  EXPECT_THAT(forward.out, HasSubstr("return (probs, loss, x, "));
  Result backward = kiln("dump " + model + " --stage backward");
  EXPECT_THAT(backward.out, HasSubstr("%x : f32[s0, 784] [num_users=1] = placeholder[target=x]"));
}

TEST_F(DumpTraining, ReportGoesToStderrBesideJson) {
  Result json = kiln("dump " + mlp_with_loss() + " --stage backward --format json");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, StartsWith("{"));
  EXPECT_THAT(json.out, Not(HasSubstr("# partition")));
  EXPECT_THAT(json.err, StartsWith("# partition: saved "));
}

TEST_F(DumpTraining, LossErrorsAreOneClearLine) {
  std::string mlp = (kModels / "mlp.kiln").string();
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
  Result chosen = kiln("dump " + two_losses + " --stage joint --loss total");
  EXPECT_EQ(chosen.status, 0) << chosen.err;
}

}  // namespace
}  // namespace kiln
