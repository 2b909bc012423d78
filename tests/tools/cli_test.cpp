// Tests of the `kiln` command line as a user meets it: the real executable, its output,
// its exit status (0 ok, 1 user error with one clear line on stderr), for good and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/npy.h"
#include "runtime/tensor.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_file(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kiln_cli_test_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
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

  fs::path write(const std::string& name, const std::string& contents) {
    fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }

  static std::string model(const std::string& name) { return (kModels / (name + ".kiln")).string(); }
  static std::string input(const std::string& name) {
    return "x=" + (kModels / (name + "_data") / "inputs" / "x.npy").string();
  }

  fs::path dir_;
};

// A user error: status 1 and exactly one line on stderr, starting "kiln: error: ".
void expect_user_error(const Result& result, const std::string& expected) {
  EXPECT_EQ(result.status, 1) << result.err;
  EXPECT_THAT(result.err, StartsWith("kiln: error: "));
  EXPECT_THAT(result.err, HasSubstr(expected));
}

TEST_F(Cli, HelpListsCommands) {
  Result result = kiln("--help");
  EXPECT_EQ(result.status, 0);
  EXPECT_THAT(result.out, HasSubstr("dump"));
  EXPECT_THAT(result.out, HasSubstr("run"));
  EXPECT_THAT(result.out, HasSubstr("Examples:"));
  Result run_help = kiln("run --help");
  EXPECT_EQ(run_help.status, 0);
  EXPECT_THAT(run_help.out, HasSubstr("--random-inputs"));
}

TEST_F(Cli, BadUsageIsAUserError) {
  EXPECT_EQ(kiln("").status, 1);
  EXPECT_EQ(kiln("frobnicate").status, 1);
  expect_user_error(kiln("dump " + model("mlp") + " --format yaml"), "--format");
  expect_user_error(kiln("dump " + model("mlp") + " --no-such-flag"), "--no-such-flag");
  expect_user_error(kiln("run " + model("mlp") + " --input x"), "expected NAME=VALUE");
  expect_user_error(kiln("run " + model("mlp") + " --random-inputs 0 --dim s0=minus"), "bad --dim 's0=minus'");
}

TEST_F(Cli, DumpPrintsTheGraphInEveryFormat) {
  Result text = kiln("dump " + model("mlp"));
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out, read_file(model("mlp")));
  Result json = kiln("dump " + model("mlp") + " --format json");
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"version\": 1"));
  Result dot = kiln("dump " + model("cnn") + " --format dot");
  EXPECT_EQ(dot.status, 0) << dot.err;
  EXPECT_THAT(dot.out, StartsWith("digraph"));
}

TEST_F(Cli, DumpOfEverySample) {
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    Result result = kiln(std::string("dump ") + model(name));
    EXPECT_EQ(result.status, 0) << name << ": " << result.err;
    EXPECT_THAT(result.out, StartsWith("graph():")) << name;
  }
}

TEST_F(Cli, DumpAfterPipelineStages) {
  Result decomposed = kiln("dump " + model("mlp") + " --stage decomposed");
  EXPECT_EQ(decomposed.status, 0) << decomposed.err;
  EXPECT_THAT(decomposed.out, Not(HasSubstr("target=linear]")));
  EXPECT_THAT(decomposed.out, Not(HasSubstr("target=softmax]")));
  EXPECT_THAT(decomposed.out, HasSubstr("target=amax]"));
  expect_user_error(kiln("dump " + model("mlp") + " --stage bogus"), "--stage");

  Result all = kiln("dump " + model("inplace") + " --all-stages " + (dir_ / "stages").string());
  EXPECT_EQ(all.status, 0) << all.err;
  for (const char* file : {"0_traced.kiln", "1_functional.kiln", "2_decomposed.kiln", "3_simplified.kiln"})
    EXPECT_TRUE(fs::exists(dir_ / "stages" / file)) << file;
  EXPECT_THAT(read_file(dir_ / "stages" / "1_functional.kiln"), Not(HasSubstr("target=add_]")));
}

TEST_F(Cli, OptRunsPassListsAndRejectsUnknownPasses) {
  Result result = kiln("opt " + model("inplace") + " --passes functionalize,dce --verbose");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("target=mul_]")));
  EXPECT_THAT(result.err, HasSubstr("[pass functionalize]"));
  EXPECT_THAT(result.err, HasSubstr("[pass dce]"));
  expect_user_error(kiln("opt " + model("mlp") + " --passes functionalize,bogus"), "unknown pass 'bogus'");
  expect_user_error(kiln("opt " + model("mlp")), "--passes");
}

TEST_F(Cli, RunPrintsAndWritesOutputs) {
  Result result = kiln("run " + model("mlp") + " --input " + input("mlp") + " --out " + (dir_ / "out").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("probs: f32[3, 10] = ["));
  Tensor written = read_npy((dir_ / "out" / "probs.npy").string());
  Tensor expected = read_npy((kModels / "mlp_data" / "expected" / "probs.npy").string());
  ASSERT_EQ(written.sizes(), expected.sizes());
  for (int64_t i = 0; i < expected.numel(); ++i)
    EXPECT_NEAR(written.flat_double(i), expected.flat_double(i), 1e-5);
}

TEST_F(Cli, RunWithRandomInputsNeedsSymbolSizes) {
  expect_user_error(kiln("run " + model("mlp") + " --random-inputs 0"), "pass --dim s0=N");
  Result result = kiln("run " + model("mlp") + " --random-inputs 7 --dim s0=2");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("probs: f32[2, 10]"));
  // The same seed gives the same outputs.
  EXPECT_EQ(kiln("run " + model("mlp") + " --random-inputs 7 --dim s0=2").out, result.out);
}

TEST_F(Cli, RunInputErrors) {
  expect_user_error(kiln("run " + model("mlp")), "missing input 'x'");
  expect_user_error(kiln("run " + model("mlp") + " --input y=a.npy --random-inputs 0 --dim s0=1"),
                    "no input named 'y'");
  fs::path garbage = write("garbage.npy", "this is not numpy");
  expect_user_error(kiln("run " + model("mlp") + " --input x=" + garbage.string()), garbage.string());
  expect_user_error(kiln("run " + model("mlp") + " --input x=" + (dir_ / "absent.npy").string()), "absent.npy");
  // A wrong shape: 785 features instead of 784.
  write_npy((dir_ / "wide.npy").string(), Tensor::zeros({3, 785}, DType::f32));
  Result wide = kiln("run " + model("mlp") + " --input x=" + (dir_ / "wide.npy").string());
  expect_user_error(wide, "input 'x'");
  EXPECT_THAT(wide.err, HasSubstr("785"));
  // A wrong dtype.
  write_npy((dir_ / "ints.npy").string(), Tensor::zeros({3, 784}, DType::i64));
  expect_user_error(kiln("run " + model("mlp") + " --input x=" + (dir_ / "ints.npy").string()), "input 'x'");
}

TEST_F(Cli, ModelFileErrors) {
  expect_user_error(kiln("dump " + (dir_ / "nothing.kiln").string()), "nothing.kiln");
  expect_user_error(kiln("dump " + write("model.onnx2", "x").string()), "model.onnx2");

  std::string mlp = read_file(model("mlp"));
  fs::path truncated = write("truncated.kiln", mlp.substr(0, mlp.size() / 2));
  Result cut = kiln("dump " + truncated.string());
  expect_user_error(cut, "truncated.kiln:");

  std::string unknown_op = mlp;
  unknown_op.replace(unknown_op.find("target=relu"), 11, "target=frobnicate");
  fs::path unknown = write("unknown.kiln", unknown_op);
  fs::copy_file(kModels / "mlp.safetensors", dir_ / "unknown.safetensors");
  expect_user_error(kiln("dump " + unknown.string()), "unknown op 'frobnicate'");

  fs::path no_weights = write("no_weights.kiln", mlp);
  Result missing = kiln("dump " + no_weights.string());
  expect_user_error(missing, "no_weights.safetensors");
}

}  // namespace
}  // namespace kiln
