// Values at the edges of f32's range (huge, overflowing when squared, tiny and subnormal, inf,
// NaN) in every reduction and normalization: the interpreter, eager mode and the compiled CPU
// code give PyTorch's results (tests/data/f32_edges/, scripts/make_f32_edge_goldens.py), and
// agree with one another on random graphs of those ops fed such values
// (tests/support/f32_edge_cases.h). The CUDA code's twin is tests/cuda_codegen/f32_edges_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "compiler/compile_driver.h"
#include "compiler/eager_executor.h"
#include "frontends/model_loader.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "tests/support/differential.h"
#include "tests/support/f32_edge_cases.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;
using test_support::F32EdgeCase;

constexpr double kRtol = 1e-4, kAtol = 1e-5;

ir::Graph graph_of(const std::string& op) {
  if (op == "logsumexp")
    return frontends::load_model(std::string(KILN_SOURCE_DIR) + "/tests/data/f32_edges/logsumexp.onnx");
  return test_support::f32_edge_graph(op);
}

std::map<std::string, Tensor> inputs_of(const ir::Graph& graph, const F32EdgeCase& c) {
  if (c.op == "logsumexp") return {{"x", c.x.clone()}};
  return test_support::f32_edge_inputs(graph, c.x);
}

void expect_outputs(const F32EdgeCase& c, const std::vector<Tensor>& actual, const std::string& who) {
  ASSERT_GE(actual.size(), c.expected.size()) << who << ": " << c.name;
  for (size_t i = 0; i < c.expected.size(); ++i)
    EXPECT_EQ(compare_tensors(c.expected[i], actual[i], kRtol, kAtol), "") << who << ": " << c.name << " output " << i;
}

CompileOptions test_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

TEST(F32Edges, TheGoldensCoverEveryReductionAndNormalization) {
  std::map<std::string, int> per_op;
  for (const F32EdgeCase& c : test_support::f32_edge_cases()) ++per_op[c.op];
  for (const char* op : {"softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm", "batch_norm", "var",
                         "var_mean", "sum", "mean", "amax", "amin", "logsumexp"})
    EXPECT_EQ(per_op[op], 24) << op;  // 8 kinds of rows x 3 lengths
}

TEST(F32Edges, TheInterpreterAndEagerModeGivePyTorchsResults) {
  for (const F32EdgeCase& c : test_support::f32_edge_cases()) {
    ir::Graph graph = graph_of(c.op);
    expect_outputs(c, ir::interpret(graph, inputs_of(graph, c)), "interpreter");
    expect_outputs(c, run_eager(graph, inputs_of(graph, c)), "eager");
  }
}

TEST(F32Edges, TheCompiledCpuCodeGivesPyTorchsResults) {
  std::map<std::string, std::vector<F32EdgeCase>> by_op;
  for (F32EdgeCase& c : test_support::f32_edge_cases()) by_op[c.op].push_back(std::move(c));
  for (auto& [op, cases] : by_op) {
    ir::Graph graph = graph_of(op);
    CompiledModel model = compile(graph, test_options());  // s0 symbolic: one build per op
    for (const F32EdgeCase& c : cases) expect_outputs(c, model.run(inputs_of(graph, c)), "cpu");
  }
}

// Random chains of those ops: eager mode and the CPU code agree with the interpreter.
TEST(F32Edges, RandomEdgeGraphsAgreeAcrossTheInterpreterEagerModeAndCpuCode) {
  for (uint64_t seed = 0; seed < 16; ++seed) {
    ir::Graph graph = test_support::random_f32_edge_graph(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + ir::print_graph(graph));
    CompiledModel model = compile(graph, test_options());
    for (int64_t size : {8, 16, 33}) {
      std::map<std::string, Tensor> inputs = test_support::random_f32_edge_inputs(graph, seed, size);
      std::vector<Tensor> expected = ir::interpret(graph, inputs);
      std::vector<Tensor> eager = run_eager(graph, inputs);
      std::vector<Tensor> cpu = model.run(inputs);
      ASSERT_EQ(eager.size(), expected.size());
      ASSERT_EQ(cpu.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(compare_tensors(expected[i], eager[i], kRtol, kAtol), "") << "eager, size " << size << ", output " << i;
        EXPECT_EQ(compare_tensors(expected[i], cpu[i], kRtol, kAtol), "") << "cpu, size " << size << ", output " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::compiler
