// The `kiln` commands on .pt2 files (torch.export archives; tests/data/pt2/): dump with the
// user's PyTorch source, run on the archive's sample inputs (--sample-inputs) through the
// interpreter and the CPU backend, compile, compile --train of a program with a loss output,
// and the errors a user can cause with them (exit 1, one line).
#include "tests/support/test_paths.h"
#include "tests/tools/cli_runner.h"

namespace kiln::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kPt2 = std::string(KILN_SOURCE_DIR) + "/tests/data/pt2/";

class Pt2Command : public KilnCliTest {};

TEST_F(Pt2Command, DumpShowsThePyTorchFileLineAndModulePath) {
  CliResult result = kiln("dump " + kPt2 + "cnn_train.pt2 --show-source");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("%x : f32[s77, 3, 8, 8]"));
  EXPECT_THAT(result.out, HasSubstr("get_attr[target=bn.running_mean]"));
  // The convolution's line: the model's file and line, then the module path.
  EXPECT_THAT(result.out, ::testing::ContainsRegex("call_function\\[target=convolution\\].*# .*make_pt2_test_programs\\.py:[0-9]+ conv\n"));
  EXPECT_THAT(result.out, ::testing::ContainsRegex("call_function\\[target=batch_norm\\].*# .*make_pt2_test_programs\\.py:[0-9]+ bn\n"));
}

// --show-source on the code generator's stages: each loop node and kernel, and each kernel's
// function in the generated C++, says which of the user's lines it computes; without the flag
// nothing does.
TEST_F(Pt2Command, CodeStagesShowThePyTorchSourceToo) {
  CliResult loops = kiln("dump " + kPt2 + "cnn_train.pt2 --stage loops --show-source");
  ASSERT_EQ(loops.status, 0) << loops.err;
  EXPECT_THAT(loops.out, ::testing::ContainsRegex("origins=\\[conv2d_convolution\\]  # from .*make_pt2_test_programs\\.py:[0-9]+ conv\n"));
  CliResult scheduled = kiln("dump " + kPt2 + "cnn_train.pt2 --stage scheduled --show-source");
  ASSERT_EQ(scheduled.status, 0) << scheduled.err;
  EXPECT_THAT(scheduled.out, ::testing::ContainsRegex("fuses: [^\n]*  # from .*make_pt2_test_programs\\.py:[0-9]+ bn"));
  CliResult code = kiln("dump " + kPt2 + "cnn_train.pt2 --stage cpp --show-source");
  ASSERT_EQ(code.status, 0) << code.err;
  EXPECT_THAT(code.out, ::testing::ContainsRegex("// from .*make_pt2_test_programs\\.py:[0-9]+ conv\nKILN_KERNEL int32_t kernel"));
  for (const char* stage : {"loops", "scheduled", "cpp"}) {
    CliResult plain = kiln("dump " + kPt2 + "cnn_train.pt2 --stage " + stage);
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_THAT(plain.out, Not(HasSubstr("make_pt2_test_programs.py"))) << stage;
  }
}

TEST_F(Pt2Command, RunOnTheArchivesSampleInputs) {
  for (const std::string backend : {"interp", "cpu"}) {
    CliResult result = kiln("run " + kPt2 + "attention.pt2 --sample-inputs --target " + backend + " --out " + (dir_ / backend).string());
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_THAT(result.out, HasSubstr("gelu: f32[2, 6, 16] = ["));
    EXPECT_TRUE(std::filesystem::exists(dir_ / backend / "gelu.npy"));
  }
  CliResult checked = kiln("run " + kPt2 + "cnn_train.pt2 --sample-inputs --target cpu --check");
  ASSERT_EQ(checked.status, 0) << checked.out << checked.err;
  EXPECT_THAT(checked.out, HasSubstr(": ok"));
  EXPECT_THAT(checked.out, Not(HasSubstr("FAIL")));
}

TEST_F(Pt2Command, RandomInputsWithASymbolicBatch) {
  // The symbol's name is torch.export's: read it from the dump rather than guess.
  CliResult dump = kiln("dump " + kPt2 + "dynamic_mlp.pt2");
  ASSERT_EQ(dump.status, 0);
  std::string symbol = dump.out.substr(dump.out.find("%x : f32[") + 9);
  symbol = symbol.substr(0, symbol.find(','));
  CliResult result = kiln("run " + kPt2 + "dynamic_mlp.pt2 --random-inputs 1 --dim " + symbol + "=7 --target cpu --check");
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("f32[7, 3]"));
}

TEST_F(Pt2Command, CompileAndTrainTheLossOutput) {
  CliResult compiled = kiln("compile " + kPt2 + "cnn_train_core.pt2");
  ASSERT_EQ(compiled.status, 0) << compiled.err;
  CliResult trained = kiln("compile " + kPt2 + "mlp_loss.pt2 --train");
  ASSERT_EQ(trained.status, 0) << trained.out << trained.err;
  EXPECT_THAT(trained.out, HasSubstr("backward"));
}

TEST_F(Pt2Command, SampleInputsNeedAPt2File) {
  expect_user_error(kiln("run " + std::string(KILN_SOURCE_DIR) + "/samples/models/mlp.kiln --sample-inputs"),
                    "--sample-inputs reads the sample inputs that a .pt2 archive");
  expect_user_error(kiln("run " + kPt2 + "attention.pt2 --sample-inputs --random-inputs 0"),
                    "--sample-inputs gives every input");
}

TEST_F(Pt2Command, ABadArchiveIsOneLineAndExitOne) {
  std::ofstream(dir_ / "broken.pt2") << "not a zip";
  expect_user_error(kiln("dump " + (dir_ / "broken.pt2").string()), "is not a zip archive");
  expect_user_error(kiln("run " + (dir_ / "broken.pt2").string() + " --sample-inputs"), "is not a zip archive");
}

}  // namespace
}  // namespace kiln::cli_test
