// The CUDA code at the edges of f32's range, through the CPU emulation: PyTorch's results for
// every reduction and normalization (tests/data/f32_edges/), and agreement with the interpreter
// on random graphs of those ops fed such values. The interpreter's, eager mode's and the CPU
// code's twin is tests/compiler/f32_edges_test.cpp.
#include <gtest/gtest.h>

#include <map>

#include "frontends/model_loader.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "tests/cuda_codegen/emulated_model.h"
#include "tests/support/differential.h"
#include "tests/support/f32_edge_cases.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen::cuda {
namespace {

using test_support::compare_tensors;
using test_support::F32EdgeCase;
using testing::EmulatedModel;

constexpr double kRtol = 1e-4, kAtol = 1e-5;

TEST(CudaF32Edges, EmulatedKernelsGivePyTorchsResults) {
  std::map<std::string, std::vector<F32EdgeCase>> by_op;
  for (F32EdgeCase& c : test_support::f32_edge_cases()) by_op[c.op].push_back(std::move(c));
  for (auto& [op, cases] : by_op) {
    ir::Graph graph = op == "logsumexp"
                          ? frontends::load_model(std::string(KILN_SOURCE_DIR) + "/tests/data/f32_edges/logsumexp.onnx")
                          : test_support::f32_edge_graph(op);
    EmulatedModel model = EmulatedModel::compile(graph);
    for (const F32EdgeCase& c : cases) {
      std::map<std::string, Tensor> inputs =
          op == "logsumexp" ? std::map<std::string, Tensor>{{"x", c.x.clone()}} : test_support::f32_edge_inputs(graph, c.x);
      std::vector<Tensor> actual = model.run(inputs);
      ASSERT_GE(actual.size(), c.expected.size()) << c.name;
      for (size_t i = 0; i < c.expected.size(); ++i)
        EXPECT_EQ(compare_tensors(c.expected[i], actual[i], kRtol, kAtol), "") << c.name << " output " << i;
    }
  }
}

TEST(CudaF32Edges, RandomEdgeGraphsMatchTheInterpreter) {
  for (uint64_t seed = 0; seed < 12; ++seed) {
    ir::Graph graph = test_support::random_f32_edge_graph(seed);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + ir::print_graph(graph));
    EmulatedModel model = EmulatedModel::compile(graph);
    for (int64_t size : {8, 16, 33}) {
      std::map<std::string, Tensor> inputs = test_support::random_f32_edge_inputs(graph, seed, size);
      std::vector<Tensor> expected = ir::interpret(graph, inputs);
      std::vector<Tensor> actual = model.run(inputs);
      ASSERT_GE(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], kRtol, kAtol), "") << "size " << size << ", output " << i;
    }
  }
}

}  // namespace
}  // namespace kiln::codegen::cuda
