// `kiln compile MODEL --train [--loss NAME]` as a user meets it: the real executable on the MLP
// sample given a scalar loss output (its probabilities' mean) prints the partition's saved-bytes
// report and compiles the forward and the backward modules (-o writes each into its own folder;
// a second run finds both in the cache), and each user error about the loss is one clear line.
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
using ::testing::StartsWith;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

std::string read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class CompileTrain : public ::testing::Test {
 protected:
  struct Result {
    int status = -1;
    std::string out, err;
  };

  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_compile_train_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                                        "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs kiln with a compile cache of this test's own.
  Result kiln(const std::string& arguments) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command = "KILN_CACHE_DIR=" + (dir_ / "cache").string() + " " + KILN_EXECUTABLE + " " + arguments +
                                " >" + out.string() + " 2>" + err.string();
    const int raw = std::system(command.c_str());
    return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  }

  // The MLP sample returning (probs, loss = mean(probs)), with its weights beside it.
  std::string mlp_with_loss() {
    std::string text = read_file(kModels / "mlp.kiln");
    const std::string old_return = "    return (probs,)\n";
    const size_t at = text.find(old_return);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, old_return.size(),
                 "    %loss : f32[] = call_function[target=mean](args = (%probs,), kwargs = {})\n"
                 "    return (probs, loss)\n");
    const std::string probs_users = "%probs : f32[s0, 10] [num_users=1] =";  // probs gains a user
    text.replace(text.find(probs_users), probs_users.size(), "%probs : f32[s0, 10] =");
    std::ofstream(dir_ / "mlp_loss.kiln", std::ios::binary) << text;
    fs::copy_file(kModels / "mlp.safetensors", dir_ / "mlp_loss.safetensors");
    return (dir_ / "mlp_loss.kiln").string();
  }

  static void expect_user_error(const Result& result, const std::string& expected) {
    EXPECT_EQ(result.status, 1) << result.err;
    EXPECT_THAT(result.err, StartsWith("kiln: error: "));
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_THAT(result.err, HasSubstr(expected));
  }

  fs::path dir_;
};

TEST_F(CompileTrain, CompilesTheForwardAndBackwardAfterTheSavedBytesReport) {
  const std::string model = mlp_with_loss();
  Result first = kiln("compile " + model + " --train -o " + (dir_ / "out").string());
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
  Result second = kiln("compile " + model + " --train --loss loss");
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
  expect_user_error(kiln("compile " + (kModels / "mlp.kiln").string() + " --train"),
                    "the model has no floating scalar output to differentiate");
}

TEST_F(CompileTrain, LossWithoutTrainIsRefused) {
  expect_user_error(kiln("compile " + mlp_with_loss() + " --loss loss"), "--loss applies only with --train");
}

}  // namespace
}  // namespace kiln
