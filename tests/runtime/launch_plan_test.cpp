// Tests for runtime/cuda/launch_plan: a plan written here by hand in the format of the header
// parses into exactly its fields; each damaged, truncated or inconsistent plan is refused with
// one message naming the file and the field (tests/cuda_runtime and tests/cuda_codegen read the
// plans the compiler writes).
#include "runtime/cuda/launch_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "kiln/error.h"

namespace kiln::cuda {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// x [s0, 4] -> kernel k0 (t = f(x)) -> gemm t @ w -> y [s0, 3] -> fallback scatter_1 (z from y).
json valid_plan() {
  return json::parse(R"({
    "format": "kiln-cuda-launch-plan", "version": 2, "architecture": "sm_80",
    "nvrtc_options": ["-default-device"],
    "symbols": [{"name": "s0", "input": 0, "dim": 0}],
    "inputs": ["x"], "parameters": ["w"], "outputs": ["y", "z"], "fallbacks": ["scatter_1"],
    "workspace_bytes": "s0*16 + 256", "scratch_offset": "s0*16",
    "buffers": [
      {"id": 0, "name": "x", "kind": "input", "dtype": "f32", "shape": ["s0", "4"], "source": "x"},
      {"id": 1, "name": "w", "kind": "parameter", "dtype": "f32", "shape": ["4", "3"], "source": "fc.weight"},
      {"id": 2, "name": "t", "kind": "intermediate", "dtype": "f32", "shape": ["s0", "4"], "workspace_offset": "0"},
      {"id": 3, "name": "y", "kind": "output", "dtype": "f32", "shape": ["s0", "3"], "source": "y"},
      {"id": 4, "name": "z", "kind": "output", "dtype": "i64", "shape": ["s0"], "source": "z"},
      {"id": 5, "name": "unused", "kind": "intermediate", "dtype": "f32", "shape": ["2"]}
    ],
    "steps": [
      {"kernel": "k0", "grid": "(s0*4 + 255)//256", "block": 256, "shared_bytes": 0,
       "arguments": ["buffer x", "buffer t", "symbol s0", "scratch"]},
      {"library": "gemm_lt", "node": "mm", "graph_node": "mm", "epilogue": "bias_relu",
       "bias": {"buffer": "x", "offset": "1"}, "output": "y",
       "inputs": [{"buffer": "t", "shape": ["s0", "4"], "strides": ["4", "1"], "offset": "0"},
                  {"buffer": "w", "shape": ["4", "3"], "strides": ["3", "1"], "offset": "0"}],
       "outputs": [{"buffer": "y", "shape": ["s0", "3"], "strides": ["3", "1"], "offset": "0"}]},
      {"library": "fallback", "node": "scatter_1", "graph_node": "scatter_1", "fallback": 0,
       "inputs": [{"buffer": "y", "shape": ["s0", "3"], "strides": ["3", "1"], "offset": "0"}],
       "outputs": [{"buffer": "z", "shape": ["s0"], "strides": ["1"], "offset": "0"}]}
    ]})");
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// The error of parsing valid_plan() after `change`.
std::string error_after(const std::function<void(json&)>& change) {
  json plan = valid_plan();
  change(plan);
  return error_of([&] { parse_launch_plan(plan.dump(), "dir/launch_plan.json"); });
}

TEST(LaunchPlan, AHandWrittenPlanParsesIntoItsFields) {
  LaunchPlan plan = parse_launch_plan(valid_plan().dump(), "plan");
  EXPECT_EQ(plan.architecture, "sm_80");
  EXPECT_EQ(plan.nvrtc_options, std::vector<std::string>{"-default-device"});
  ASSERT_EQ(plan.symbols.size(), 1u);
  EXPECT_EQ(plan.symbols[0].name, "s0");
  EXPECT_EQ(plan.symbol_names, std::vector<std::string>{"s0"});
  EXPECT_EQ(plan.inputs, std::vector<int>{0});
  EXPECT_EQ(plan.parameters, std::vector<int>{1});
  EXPECT_EQ(plan.outputs, (std::vector<int>{3, 4}));
  EXPECT_EQ(plan.fallbacks, std::vector<std::string>{"scatter_1"});
  EXPECT_EQ(plan.workspace_bytes.evaluate({10}), 416);
  EXPECT_EQ(plan.scratch_offset.evaluate({10}), 160);
  ASSERT_EQ(plan.buffers.size(), 6u);
  EXPECT_EQ(plan.buffer(1).kind, PlanBufferKind::Parameter);
  EXPECT_EQ(plan.buffer(1).source, "fc.weight");
  EXPECT_EQ(plan.buffer(4).dtype, DType::i64);
  EXPECT_EQ(plan.buffer(2).workspace_offset->evaluate({10}), 0);
  EXPECT_FALSE(plan.buffer(5).workspace_offset);

  ASSERT_EQ(plan.steps.size(), 3u);
  const PlanStep& kernel = plan.steps[0];
  EXPECT_EQ(kernel.kind, PlanStep::Kind::Kernel);
  EXPECT_EQ(kernel.name, "k0");
  EXPECT_EQ(kernel.grid.evaluate({100}), 2);
  EXPECT_EQ(kernel.block, 256);
  ASSERT_EQ(kernel.arguments.size(), 4u);
  EXPECT_EQ(kernel.arguments[1].kind, PlanArgument::Kind::Buffer);
  EXPECT_EQ(kernel.arguments[1].index, 2);
  EXPECT_EQ(kernel.arguments[2].kind, PlanArgument::Kind::Symbol);
  EXPECT_EQ(kernel.arguments[3].kind, PlanArgument::Kind::Scratch);

  const PlanStep& gemm = plan.steps[1];
  EXPECT_EQ(gemm.kind, PlanStep::Kind::Gemm);
  EXPECT_EQ(gemm.epilogue, GemmEpilogue::bias_relu);
  ASSERT_TRUE(gemm.bias);
  EXPECT_EQ(gemm.bias->buffer, 0);
  EXPECT_EQ(gemm.bias->offset.evaluate({1}), 1);
  EXPECT_EQ(gemm.epilogue_output, 3);
  ASSERT_EQ(gemm.inputs.size(), 2u);
  EXPECT_EQ(gemm.inputs[1].buffer, 1);
  EXPECT_EQ(gemm.inputs[0].strides[0].evaluate({1}), 4);

  const PlanStep& fallback = plan.steps[2];
  EXPECT_EQ(fallback.kind, PlanStep::Kind::Fallback);
  EXPECT_EQ(fallback.fallback, 0);
  EXPECT_EQ(fallback.outputs[0].buffer, 4);
}

TEST(LaunchPlan, SymbolRangesAreOptionalAndChecked) {
  LaunchPlan plain = parse_launch_plan(valid_plan().dump(), "plan");
  EXPECT_EQ(plain.symbols[0].min, 0);
  EXPECT_FALSE(plain.symbols[0].max);
  json ranged = valid_plan();
  ranged["symbols"][0]["min"] = 2;
  ranged["symbols"][0]["max"] = 64;
  LaunchPlan plan = parse_launch_plan(ranged.dump(), "plan");
  EXPECT_EQ(plan.symbols[0].min, 2);
  EXPECT_EQ(plan.symbols[0].max, 64);
  EXPECT_EQ(error_after([](json& p) { p["symbols"][0]["min"] = 8, p["symbols"][0]["max"] = 4; }),
            "dir/launch_plan.json: symbol 's0' has the empty or negative range [8, 4]");
  EXPECT_EQ(error_after([](json& p) { p["symbols"][0]["min"] = -1; }),
            "dir/launch_plan.json: symbol 's0' has the empty or negative range [-1, int_oo]");
  EXPECT_EQ(error_after([](json& p) { p["symbols"][0]["max"] = "many"; }),
            "dir/launch_plan.json: field 'symbols[0].max' must be an integer, got \"many\"");
}

TEST(LaunchPlan, EpilogueNamesRoundTrip) {
  for (GemmEpilogue e : {GemmEpilogue::bias, GemmEpilogue::relu, GemmEpilogue::bias_relu, GemmEpilogue::gelu,
                         GemmEpilogue::bias_gelu})
    EXPECT_EQ(parse_plan_epilogue(plan_epilogue_name(e)), e);
  EXPECT_EQ(plan_epilogue_name(GemmEpilogue::bias_gelu), std::string("bias_gelu_tanh"));
  EXPECT_EQ(parse_plan_epilogue("gelu"), std::nullopt);  // the exact GELU is not cuBLASLt's
}

TEST(LaunchPlan, TruncatedOrNonJsonFilesAreRefused) {
  std::string text = valid_plan().dump();
  EXPECT_EQ(error_of([&] { parse_launch_plan(text.substr(0, text.size() / 2), "p.json"); }),
            "p.json: not valid JSON (truncated or damaged)");
  EXPECT_EQ(error_of([&] { parse_launch_plan("", "p.json"); }), "p.json: not valid JSON (truncated or damaged)");
  EXPECT_EQ(error_of([&] { parse_launch_plan("[1, 2]", "p.json"); }), "p.json: expected a JSON object, got [1,2]");
  EXPECT_EQ(error_of([&] { read_launch_plan("/nonexistent/artifact/launch_plan.json"); }),
            "no CUDA artifact in /nonexistent/artifact: launch_plan.json is missing");
}

TEST(LaunchPlan, FormatAndVersionAreChecked) {
  EXPECT_EQ(error_after([](json& p) { p["format"] = "kiln-artifact"; }),
            "dir/launch_plan.json: not a Kiln CUDA launch plan (format is \"kiln-artifact\", expected \"kiln-cuda-launch-plan\")");
  EXPECT_EQ(error_after([](json& p) { p["version"] = 1; }),
            "dir/launch_plan.json: launch plan version 1 (written by an older Kiln) lacks what the runtime needs to run it; "
            "recompile the model");
  EXPECT_THAT(error_after([](json& p) { p["version"] = 3; }), HasSubstr("version 3 is not the version this Kiln reads (2)"));
  EXPECT_EQ(error_after([](json& p) { p.erase("version"); }), "dir/launch_plan.json: field 'version' is missing");
}

TEST(LaunchPlan, EachBadFieldIsNamed) {
  EXPECT_EQ(error_after([](json& p) { p["buffers"][0]["dtype"] = "f33"; }),
            "dir/launch_plan.json: field 'buffers[0].dtype' must be a dtype name such as \"f32\", got \"f33\"");
  EXPECT_EQ(error_after([](json& p) { p["buffers"][2]["kind"] = "scratch"; }),
            "dir/launch_plan.json: field 'buffers[2].kind' must be input, parameter, output or intermediate, got \"scratch\"");
  EXPECT_EQ(error_after([](json& p) { p["buffers"][3]["id"] = 7; }),
            "dir/launch_plan.json: field 'buffers[3].id' must be 3, got 7");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["grid"] = 64; }),
            "dir/launch_plan.json: field 'steps[0].grid' must be a size expression (a string), got 64");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["grid"] = "(s0 + 1"; }),
            "dir/launch_plan.json: field 'steps[0].grid': cannot read size expression '(s0 + 1': expected ')' at column 8");
  EXPECT_EQ(error_after([](json& p) { p["buffers"][0]["shape"][0] = "s1"; }),
            "dir/launch_plan.json: field 'buffers[0].shape[0]': cannot read size expression 's1': unknown symbol 's1' at column 1");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["block"] = 2048; }),
            "dir/launch_plan.json: field 'steps[0].block' must be a thread count from 1 to 1024, got 2048");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["arguments"][0] = "tensor x"; }),
            "dir/launch_plan.json: field 'steps[0].arguments[0]' must be \"buffer NAME\", \"symbol NAME\" or \"scratch\", got \"tensor x\"");
  EXPECT_EQ(error_after([](json& p) { p["steps"][1]["library"] = "conv"; }),
            "dir/launch_plan.json: field 'steps[1].library' must be gemm, gemm_lt or fallback, got \"conv\"");
  EXPECT_THAT(error_after([](json& p) { p["steps"][1]["epilogue"] = "gelu"; }),
              HasSubstr("field 'steps[1].epilogue' must be bias, relu, bias_relu, gelu_tanh or bias_gelu_tanh"));
  EXPECT_EQ(error_after([](json& p) { p["steps"][1].erase("bias"); }), "dir/launch_plan.json: field 'steps[1].bias' is missing");
  EXPECT_EQ(error_after([](json& p) { p["steps"][2]["fallback"] = 1; }),
            "dir/launch_plan.json: field 'steps[2].fallback' must be the index of one of the 1 fallbacks, got 1");
  EXPECT_EQ(error_after([](json& p) { p["steps"][2]["inputs"][0]["strides"] = json::array({"1"}); }),
            "dir/launch_plan.json: steps[2].inputs[0] has 2 sizes but 1 strides");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0] = "launch k0"; }),
            "dir/launch_plan.json: field 'steps[0]' must be an object, got \"launch k0\"");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0].erase("kernel"); }),
            "dir/launch_plan.json: steps[0] is neither a kernel nor a library step");
}

TEST(LaunchPlan, InconsistentPlansAreRefused) {
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["arguments"][0] = "buffer q"; }),
            "dir/launch_plan.json: steps[0].arguments[0] names no buffer of the plan ('q')");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["arguments"][2] = "symbol s7"; }),
            "dir/launch_plan.json: steps[0].arguments[2] names no symbol of the plan ('s7')");
  EXPECT_EQ(error_after([](json& p) { p["steps"][0]["arguments"][0] = "buffer unused"; }),
            "dir/launch_plan.json: steps[0].arguments[0] uses intermediate buffer 'unused', which has no workspace_offset");
  EXPECT_EQ(error_after([](json& p) { p["buffers"][4]["name"] = "y"; }), "dir/launch_plan.json: buffer name 'y' is used twice");
  EXPECT_EQ(error_after([](json& p) { p["outputs"] = json::array({"y"}); }),
            "dir/launch_plan.json: buffer 'z' is not listed in outputs");
  EXPECT_EQ(error_after([](json& p) { p["inputs"] = json::array({"w"}); }),
            "dir/launch_plan.json: inputs[0] names buffer 'w' of another kind");
  EXPECT_EQ(error_after([](json& p) { p["outputs"] = json::array({"y", "y"}); }),
            "dir/launch_plan.json: outputs lists buffer 'y' twice");
  EXPECT_EQ(error_after([](json& p) { p["symbols"][0]["dim"] = 1; }),
            "dir/launch_plan.json: symbol 's0' is bound from dim 1 of input 'x', which is not that symbol");
  EXPECT_EQ(error_after([](json& p) { p["symbols"][0]["input"] = 2; }),
            "dir/launch_plan.json: field 'symbols[0].input' must be the position of one of the 1 inputs, got 2");
  EXPECT_EQ(error_after([](json& p) { p["symbols"].push_back(p["symbols"][0]); }),
            "dir/launch_plan.json: symbol 's0' is listed twice");
  EXPECT_EQ(error_after([](json& p) { p["buffers"][0]["workspace_offset"] = "0"; }),
            "dir/launch_plan.json: buffer 'x' has a workspace_offset but is not an intermediate");
  EXPECT_EQ(error_after([](json& p) { p["steps"][1]["inputs"].erase(1); }),
            "dir/launch_plan.json: steps[1].inputs and outputs of a gemm must be two views and one");
  EXPECT_EQ(error_after([](json& p) { p["steps"][2]["graph_node"] = "index_put"; }),
            "dir/launch_plan.json: steps[2].graph_node is not fallbacks[0]");
}

TEST(LaunchPlan, ReadLaunchPlanNamesTheFile) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("kiln_plan_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string text = valid_plan().dump(2);
  std::ofstream(dir / "launch_plan.json") << text.substr(0, text.size() - 40);
  EXPECT_EQ(error_of([&] { read_launch_plan(dir / "launch_plan.json"); }),
            (dir / "launch_plan.json").string() + ": not valid JSON (truncated or damaged)");
  std::ofstream(dir / "launch_plan.json") << text;
  EXPECT_EQ(read_launch_plan(dir / "launch_plan.json").steps.size(), 3u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::cuda
