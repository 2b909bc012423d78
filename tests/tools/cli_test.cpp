// Tests of the `kiln` command line as a user meets it: the real executable, its output,
// its exit status (0 ok, 1 user error with one clear line on stderr), for good and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "kiln/npy.h"
#include "kiln/tensor.h"
#include "sample_models.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using cli_test::expect_usage_error;
using cli_test::expect_user_error;
using cli_test::kSampleModels;
using cli_test::read_file;
using cli_test::sample_input;
using cli_test::sample_model;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class Cli : public cli_test::KilnCliTest {
 protected:
  fs::path write(const std::string& name, const std::string& contents) {
    fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
};

TEST_F(Cli, HelpListsCommands) {
  CliResult result = kiln("--help");
  EXPECT_EQ(result.status, 0);
  EXPECT_THAT(result.out, HasSubstr("dump"));
  EXPECT_THAT(result.out, HasSubstr("run"));
  EXPECT_THAT(result.out, HasSubstr("Examples:"));
  CliResult run_help = kiln("run --help");
  EXPECT_EQ(run_help.status, 0);
  EXPECT_THAT(run_help.out, HasSubstr("--random-inputs"));
}

TEST_F(Cli, EveryModelCommandSaysWhichFilesItReads) {
  for (const char* command : {"dump", "run", "opt", "compile", "bench", "report"}) {
    CliResult help = kiln(std::string(command) + " --help");
    EXPECT_EQ(help.status, 0) << command;
    EXPECT_THAT(help.out, HasSubstr("Model file: .pt2 (torch.export), .onnx (ONNX), .kiln (IR text) or .json (IR JSON)")) << command;
  }
}

// Each command's --help ends with examples of that command only (not the top-level list), and
// every example names a file that exists in the repository or one the user makes.
TEST_F(Cli, EveryCommandsHelpHasItsOwnExamples) {
  for (const char* command : {"dump", "run", "opt", "compile", "bench", "kernel", "verify", "cache", "report", "launch"}) {
    CliResult help = kiln(std::string(command) + " --help");
    EXPECT_EQ(help.status, 0) << command;
    size_t examples = help.out.find("Examples:\n");
    ASSERT_NE(examples, std::string::npos) << command << ":\n" << help.out;
    std::istringstream lines(help.out.substr(examples + 10));
    int count = 0;
    for (std::string line; std::getline(lines, line) && !line.empty();) {
      ++count;
      EXPECT_THAT(line, ::testing::StartsWith("  kiln " + std::string(command) + " ")) << command;
      std::smatch sample;
      if (std::regex_search(line, sample, std::regex("samples/models/[a-z_]+\\.kiln"))) {
        EXPECT_TRUE(std::filesystem::exists(std::string(KILN_SOURCE_DIR) + "/" + sample.str())) << line;
      }
    }
    EXPECT_GE(count, 1) << command;
  }
}

TEST_F(Cli, BadUsageIsAUserError) {
  EXPECT_EQ(kiln("").status, 1);
  EXPECT_EQ(kiln("frobnicate").status, 1);
  expect_usage_error(kiln("dump " + sample_model("mlp") + " --format yaml"), "--format");
  expect_usage_error(kiln("dump " + sample_model("mlp") + " --no-such-flag"), "--no-such-flag");
  expect_user_error(kiln("run " + sample_model("mlp") + " --input x"), "expected NAME=VALUE");
  expect_user_error(kiln("run " + sample_model("mlp") + " --random-inputs 0 --dim s0=minus"), "bad --dim 's0=minus'");
}

TEST_F(Cli, DumpPrintsTheGraphInEveryFormat) {
  CliResult text = kiln("dump " + sample_model("mlp"));
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out, read_file(sample_model("mlp")));
  CliResult json = kiln("dump " + sample_model("mlp") + " --format json");
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"version\": 2"));
  CliResult dot = kiln("dump " + sample_model("cnn") + " --format dot");
  EXPECT_EQ(dot.status, 0) << dot.err;
  EXPECT_THAT(dot.out, StartsWith("digraph"));
}

TEST_F(Cli, DumpOfEverySample) {
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    CliResult result = kiln(std::string("dump ") + sample_model(name));
    EXPECT_EQ(result.status, 0) << name << ": " << result.err;
    EXPECT_THAT(result.out, StartsWith("graph():")) << name;
  }
}

TEST_F(Cli, DumpAfterPipelineStages) {
  CliResult decomposed = kiln("dump " + sample_model("mlp") + " --stage decomposed");
  EXPECT_EQ(decomposed.status, 0) << decomposed.err;
  EXPECT_THAT(decomposed.out, Not(HasSubstr("target=linear]")));
  EXPECT_THAT(decomposed.out, Not(HasSubstr("target=softmax]")));
  EXPECT_THAT(decomposed.out, HasSubstr("target=amax]"));
  expect_usage_error(kiln("dump " + sample_model("mlp") + " --stage bogus"), "--stage");

  CliResult all = kiln("dump " + sample_model("inplace") + " --all-stages " + (dir_ / "stages").string());
  EXPECT_EQ(all.status, 0) << all.err;
  for (const char* file : {"0_traced.kiln", "1_functional.kiln", "2_decomposed.kiln", "3_simplified.kiln"})
    EXPECT_TRUE(fs::exists(dir_ / "stages" / file)) << file;
  EXPECT_THAT(read_file(dir_ / "stages" / "1_functional.kiln"), Not(HasSubstr("target=add_]")));
}

// --all-stages wrote the four graph stages only, overwrote files without asking, and no stage
// loaded back without copying the weights by hand (after constant folding: "get_attr target
// '_folded_causal' is not in the weights file").
TEST_F(Cli, AllStagesWritesEveryStageAndEachGraphLoadsBack) {
  const std::string command = "dump " + sample_model("attention") + " --all-stages " + (dir_ / "stages").string();
  CliResult all = kiln(command);
  ASSERT_EQ(all.status, 0) << all.err;
  int graphs = 0;
  std::vector<std::string> code_files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir_ / "stages")) {
    const fs::path& path = entry.path();
    if (path.extension() == ".kiln") {
      ++graphs;
      CliResult again = kiln("dump " + path.string());
      EXPECT_EQ(again.status, 0) << path << ": " << again.err;
    } else if (path.extension() != ".safetensors") {
      code_files.push_back(path.filename().string());
    }
  }
  EXPECT_GE(graphs, 4);
  for (const char* stage : {"_loops.txt", "_scheduled.txt", "_cpp.cpp"}) {
    bool found = false;
    for (const std::string& file : code_files) found |= file.size() > std::string(stage).size() &&
                                                        file.compare(file.size() - std::string(stage).size(), std::string::npos, stage) == 0;
    EXPECT_TRUE(found) << stage << " in " << all.out;
  }
  expect_user_error(kiln(command), "exists and is not empty (pass --force to overwrite its files)");
  CliResult forced = kiln(command + " --force");
  EXPECT_EQ(forced.status, 0) << forced.err;
}

TEST_F(Cli, OptRunsPassListsAndRejectsUnknownPasses) {
  CliResult result = kiln("opt " + sample_model("inplace") + " --passes functionalize,dce --verbose");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, Not(HasSubstr("target=mul_]")));
  EXPECT_THAT(result.err, HasSubstr("[pass functionalize]"));
  EXPECT_THAT(result.err, HasSubstr("[pass dce]"));
  expect_user_error(kiln("opt " + sample_model("mlp") + " --passes functionalize,bogus"), "unknown pass 'bogus'");
  expect_usage_error(kiln("opt " + sample_model("mlp")), "--passes");
}

TEST_F(Cli, RunPrintsAndWritesOutputs) {
  CliResult result =
      kiln("run " + sample_model("mlp") + " --input " + sample_input("mlp") + " --out " + (dir_ / "out").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("probs: f32[3, 10] = ["));
  Tensor written = read_npy((dir_ / "out" / "probs.npy").string());
  Tensor expected = read_npy((kSampleModels / "mlp_data" / "expected" / "probs.npy").string());
  ASSERT_EQ(written.sizes(), expected.sizes());
  for (int64_t i = 0; i < expected.numel(); ++i)
    EXPECT_NEAR(written.flat_double(i), expected.flat_double(i), 1e-5);
}

TEST_F(Cli, RunWithRandomInputsNeedsSymbolSizes) {
  expect_user_error(kiln("run " + sample_model("mlp") + " --random-inputs 0"), "pass --dim s0=N");
  CliResult result = kiln("run " + sample_model("mlp") + " --random-inputs 7 --dim s0=2");
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("probs: f32[2, 10]"));
  // The same seed gives the same outputs.
  EXPECT_EQ(kiln("run " + sample_model("mlp") + " --random-inputs 7 --dim s0=2").out, result.out);
}

TEST_F(Cli, RunInputErrors) {
  expect_user_error(kiln("run " + sample_model("mlp")), "missing input 'x'");
  expect_user_error(kiln("run " + sample_model("mlp") + " --input y=a.npy --random-inputs 0 --dim s0=1"),
                    "no input named 'y'");
  fs::path garbage = write("garbage.npy", "this is not numpy");
  expect_user_error(kiln("run " + sample_model("mlp") + " --input x=" + garbage.string()), garbage.string());
  expect_user_error(kiln("run " + sample_model("mlp") + " --input x=" + (dir_ / "absent.npy").string()), "absent.npy");
  // A wrong shape: 785 features instead of 784.
  write_npy((dir_ / "wide.npy").string(), Tensor::zeros({3, 785}, DType::f32));
  CliResult wide = kiln("run " + sample_model("mlp") + " --input x=" + (dir_ / "wide.npy").string());
  expect_user_error(wide, "input 'x'");
  EXPECT_THAT(wide.err, HasSubstr("785"));
  // A wrong dtype.
  write_npy((dir_ / "ints.npy").string(), Tensor::zeros({3, 784}, DType::i64));
  expect_user_error(kiln("run " + sample_model("mlp") + " --input x=" + (dir_ / "ints.npy").string()), "input 'x'");
}

TEST_F(Cli, ModelFileErrors) {
  expect_user_error(kiln("dump " + (dir_ / "nothing.kiln").string()), "nothing.kiln");
  expect_user_error(kiln("dump " + write("model.onnx2", "x").string()), "model.onnx2");

  std::string mlp = read_file(sample_model("mlp"));
  fs::path truncated = write("truncated.kiln", mlp.substr(0, mlp.size() / 2));
  CliResult cut = kiln("dump " + truncated.string());
  expect_user_error(cut, "truncated.kiln:");

  std::string unknown_op = mlp;
  unknown_op.replace(unknown_op.find("target=relu"), 11, "target=frobnicate");
  fs::path unknown = write("unknown.kiln", unknown_op);
  fs::copy_file(kSampleModels / "mlp.safetensors", dir_ / "unknown.safetensors");
  expect_user_error(kiln("dump " + unknown.string()), "unknown op 'frobnicate'");

  fs::path no_weights = write("no_weights.kiln", mlp);
  CliResult missing = kiln("dump " + no_weights.string());
  expect_user_error(missing, "no_weights.safetensors");
}

}  // namespace
}  // namespace kiln
