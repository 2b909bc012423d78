// ONNX models from the command line: `kiln dump model.onnx` (the imported graph with each
// node's ONNX source), `kiln run model.onnx` with ONNX Runtime's input and `--backend cpu
// --check`, a model specialized on its shape input (by `kiln run` and `kiln bench`), `kiln compile
// model.onnx`, and a refused model
// (one line on stderr, exit 1).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using cli_test::CliResult;
using ::testing::HasSubstr;

const fs::path kOnnxData = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "onnx";

using OnnxCli = cli_test::KilnCliTest;

TEST_F(OnnxCli, DumpShowsTheImportedGraphWithItsOnnxSource) {
  CliResult result = kiln("dump " + (kOnnxData / "models" / "mlp" / "model.onnx").string() + " --show-source");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("%x : f32[8, 64] [num_users=1] = placeholder[target=x]"));
  EXPECT_THAT(result.out, HasSubstr("get_attr[target=fc1.weight]"));
  EXPECT_THAT(result.out, HasSubstr("call_function[target=linear]"));
  EXPECT_THAT(result.out, HasSubstr("# model.onnx /fc1/Gemm (Gemm)"));
  EXPECT_THAT(result.out, HasSubstr("return (log_probs,)"));
}

TEST_F(OnnxCli, RunOnTheCpuBackendChecksAgainstTheInterpreter) {
  fs::path folder = kOnnxData / "models" / "lenet";
  CliResult result = kiln("run " + (folder / "model.onnx").string() + " --backend cpu --check --input image=" +
                          (folder / "input_0.npy").string() + " --out " + (dir_ / "out").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("check logits: max abs err"));
  EXPECT_THAT(result.out, HasSubstr(": ok"));
  EXPECT_TRUE(fs::exists(dir_ / "out" / "logits.npy"));
}

TEST_F(OnnxCli, CompileAnOnnxModel) {
  CliResult result = kiln("compile " + (kOnnxData / "models" / "transformer_encoder_layer" / "model.onnx").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("compiled: key "));
}

TEST_F(OnnxCli, RunSpecializesOnShapeDecidingInputs) {
  fs::path folder = kOnnxData / "specialize" / "reshape_shape_input";
  std::string model = (folder / "model.onnx").string();
  CliResult result = kiln("run " + model + " --backend cpu --check --input x=" + (folder / "input_0.npy").string() +
                          " --input shape=" + (folder / "input_1.npy").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("y: f32[3, 4] = "));
  // Its value cannot be random: without it, one line and exit 1.
  cli_test::expect_user_error(kiln("run " + model + " --random-inputs 0"),
                              "input 1 (shape) must be known when the model is imported, but it is computed from the "
                              "graph input 'shape' fed at run time");
}

// `kiln bench` specializes the same way on the value it is given, and refuses the model alike
// without it.
TEST_F(OnnxCli, BenchSpecializesOnShapeDecidingInputs) {
  fs::path folder = kOnnxData / "specialize" / "reshape_shape_input";
  std::string model = (folder / "model.onnx").string();
  CliResult result = kiln("bench " + model + " --target cpu --iters 3 --warmup 1 --input x=" +
                          (folder / "input_0.npy").string() + " --input shape=" + (folder / "input_1.npy").string());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("median "));
  cli_test::expect_user_error(kiln("bench " + model + " --random-inputs 0 --iters 1"),
                              "input 1 (shape) must be known when the model is imported, but it is computed from the "
                              "graph input 'shape' fed at run time");
}

TEST_F(OnnxCli, RefusedModelIsOneLineAndExitOne) {
  CliResult result = kiln("run " + (kOnnxData / "bad" / "unsupported_ops.onnx").string() + " --random-inputs 0");
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, HasSubstr("uses 3 ONNX ops that Kiln does not support, in 4 nodes"));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

}  // namespace
}  // namespace kiln
