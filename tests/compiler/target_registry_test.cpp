// The target registry and the one driver (compiler/target_registry.h, compiler/compile_driver.h):
// the rows in the order the CLI lists them, the code targets' own dump stages after the shared
// ones, each target's Executable matching the interpreter on the samples (cpu through the
// driver; cuda only compiles here, tests/cuda_runtime runs it), and the errors for an unknown
// target, a target that generates no code and an unknown stage.
#include "compiler/target_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

ir::Graph sample(const std::string& name) {
  return ir::load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / (name + ".kiln")).string());
}

std::map<std::string, Tensor> sample_inputs(const std::string& name) {
  std::map<std::string, Tensor> inputs;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "samples" / "models" / (name + "_data") / "inputs"))
    inputs[entry.path().stem().string()] = read_npy(entry.path().string());
  return inputs;
}

TEST(TargetRegistry, RowsInTheOrderTheCliListsThem) {
  EXPECT_THAT(target_names(), ElementsAre("cpu", "cuda", "interp", "eager"));
  EXPECT_EQ(target_list(), "cpu, cuda, interp, eager");
  EXPECT_NE(find_target("cpu").code, nullptr);
  EXPECT_NE(find_target("cuda").code, nullptr);
  EXPECT_EQ(find_target("interp").code, nullptr);
  EXPECT_EQ(find_target("eager").code, nullptr);
  EXPECT_EQ(find_code_target("cpu").code_stage(), "cpp");
  EXPECT_EQ(find_code_target("cuda").code_stage(), "cuda");
}

TEST(TargetRegistry, UnknownAndCodelessTargetsAreClearErrors) {
  EXPECT_EQ(error_of([] { find_target("tpu"); }), "unknown target 'tpu' (known: cpu, cuda, interp, eager)");
  EXPECT_EQ(error_of([] { find_code_target("interp"); }),
            "target 'interp' runs the graph and generates no code (the targets that compile: cpu, cuda)");
  CompileOptions options;
  options.target = "eager";
  EXPECT_EQ(error_of([&] { compile(sample("mlp"), options); }),
            "target 'eager' runs the graph and generates no code (the targets that compile: cpu, cuda)");
  options.target = "tpu";
  EXPECT_EQ(error_of([&] { prepare(sample("mlp"), options); }), "unknown target 'tpu' (known: cpu, cuda, interp, eager)");
}

TEST(TargetRegistry, CodegenStagesComeFromTheRegistry) {
  std::vector<std::string> names, targets;
  for (const CodegenStage& stage : codegen_stages()) {
    names.push_back(stage.name);
    targets.push_back(stage.target);
  }
  EXPECT_THAT(names, ElementsAre("loops", "scheduled", "cpp", "cuda"));
  EXPECT_THAT(targets, ElementsAre("", "", "cpu", "cuda"));
  EXPECT_TRUE(is_codegen_stage("cuda"));
  EXPECT_FALSE(is_codegen_stage("ptx"));
  EXPECT_EQ(error_of([] { dump_codegen_stage(sample("mlp"), "ptx"); }),
            "unknown codegen stage 'ptx' (known: loops, scheduled, cpp, cuda)");
}

// Every target that runs here gives the interpreter's results on every sample.
TEST(TargetRegistry, EveryRunnableTargetMatchesTheInterpreter) {
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    ir::Graph graph = sample(name);
    std::map<std::string, Tensor> inputs = sample_inputs(name);
    std::map<std::string, Tensor> for_interpreter;
    for (const auto& [key, value] : inputs) for_interpreter[key] = value.clone();
    std::vector<Tensor> expected = ir::Interpreter().run(graph, for_interpreter);
    for (const char* target : {"interp", "eager", "cpu"}) {
      SCOPED_TRACE(std::string(name) + " on " + target);
      CompileOptions options;
      options.target = target;
      options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
      std::unique_ptr<Executable> executable = prepare(graph, options);
      EXPECT_EQ(executable->compile_result() != nullptr, std::string(target) == "cpu");
      std::map<std::string, Tensor> copy;
      for (const auto& [key, value] : inputs) copy[key] = value.clone();
      std::vector<Tensor> actual = executable->run(copy);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(test_support::compare_tensors(expected[i], actual[i], 1e-4, 1e-5), "") << "output " << i;
    }
  }
}

TEST(CompileDriver, StagesAreTimedInOrder) {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  std::vector<std::string> stages;
  options.on_stage = [&](const std::string& stage, double milliseconds) {
    stages.push_back(stage);
    EXPECT_GE(milliseconds, 0);
  };
  CompiledModel model = compile(sample("mlp"), options);
  std::vector<std::string> expected = {"passes", "lower", "schedule", "codegen"};
  // Before the build come, in this order, the set-up a process or a cache does once: whichever of
  // them this compile was the first to need (a fresh cache needs all three, a warm one none).
  size_t next = expected.size();
  for (const char* once : {"in-process compiler load (once per process)", "link stubs (once per cache)",
                           "precompiled prelude (once per cache)"})
    if (next < stages.size() && stages[next] == once) expected.push_back(stages[next++]);
  if (!model.result().cache_hit) expected.push_back("c++ compile");
  expected.push_back(model.result().cache_hit ? "cache hit" : "cache store");
  expected.push_back("load");
  EXPECT_EQ(stages, expected);
  EXPECT_EQ(model.result().target, "cpu");
  EXPECT_EQ(model.result().kernel_count, 3u);
  EXPECT_EQ(model.result().details.rfind("isa ", 0), 0u) << model.result().details;
  EXPECT_EQ(model.result().artifact_dir.parent_path().filename(), "entries");
}

}  // namespace
}  // namespace kiln::compiler
