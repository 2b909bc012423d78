// Golden tests of the CUDA code generator: the kernels and launch plan printed for a pointwise
// chain (128-bit accesses, grid-stride loops), a row softmax (one block per row, max and sum
// block reductions, the exp stashed and read back) and a layer_norm (a Welford block
// reduction) against tests/cuda_codegen/golden/*.cu. KILN_UPDATE_GOLDENS=1 rewrites the files
// (review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/golden.h"
#include "codegen/cuda/cuda_emitter.h"
#include "codegen/lowering.h"
#include "tests/cuda_codegen/emulated_model.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::codegen::cuda {
namespace {

namespace fs = std::filesystem;

ir::Argument ints(std::initializer_list<int64_t> values) {
  std::vector<ir::Argument> list;
  for (int64_t v : values) list.emplace_back(v);
  return ir::Argument(list);
}

std::string generated(const ir::Graph& graph) {
  CudaModule module = emit_cuda(schedule(lower(testing::simplified(graph))));
  std::string plan, line;
  std::istringstream lines(launch_plan_text(module));
  while (std::getline(lines, line)) plan += "// " + line + "\n";
  return plan + kernels_text(module);
}

void expect_golden(const std::string& name, const std::string& text) {
  test_support::expect_matches_golden(text, fs::path("tests/cuda_codegen/golden") / (name + ".cu"));
}

ir::Node* input(ir::Graph& graph, const std::string& name, const std::vector<ir::SymInt>& shape) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(DType::f32, shape));
}

TEST(CudaGolden, PointwiseChain) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {ir::SymInt::symbol("n"), 256});
  ir::Node* y = input(graph, "y", {256});
  graph.create_output({graph.create_call("sigmoid", {graph.create_call("add", {graph.create_call("mul", {x, 2.0}), y})})});
  expect_golden("pointwise", generated(graph));
}

TEST(CudaGolden, RowSoftmax) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {ir::SymInt::symbol("rows"), 1000});
  graph.create_output({graph.create_call("softmax", {x, -1})});
  expect_golden("softmax", generated(graph));
}

TEST(CudaGolden, WelfordLayerNorm) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {64, 768});
  ir::Node* w = input(graph, "w", {768});
  ir::Node* b = input(graph, "b", {768});
  graph.create_output({graph.create_call("layer_norm", {x, ints({768}), w, b})});
  expect_golden("layer_norm", generated(graph));
}

}  // namespace
}  // namespace kiln::codegen::cuda
