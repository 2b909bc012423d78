// Compiled kernels side by side (codegen/schedule_side_by_side.cpp, codegen/cpp/cpp_entry_points.cpp):
// the two directions of a small bidirectional recurrence run as two lanes, on the pool (weights as
// inputs) and on OpenMP's team (frozen weights, oneDNN's products; a build without oneDNN keeps the
// pool there too), and match the interpreter at 1, 2 and 3 threads, call after call.
#include <gtest/gtest.h>

#include "compiler/compile_driver.h"
#include "compiler/target_registry.h"
#include "ir/interpreter.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using ir::Graph;
using ir::Node;
using test_support::compare_tensors;
using test_support::random_tensor;

// h <- tanh(x_t @ w_in + h @ w_h) over 12 steps, forward and backward, over x [12, 1, 24]; the
// directions' last states and all their states, joined.
Graph bidirectional_recurrence(bool weights_are_parameters) {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {12, 1, 24}));
  auto weight = [&](const std::string& name, std::vector<int64_t> shape, uint64_t seed) -> Node* {
    if (!weights_are_parameters) {
      std::vector<ir::SymInt> dims(shape.begin(), shape.end());
      return graph.create_placeholder(name, ir::TensorMeta::contiguous(DType::f32, dims));
    }
    graph.set_parameter(name, random_tensor(shape, DType::f32, seed, -0.3, 0.3));
    return graph.create_get_attr(name);
  };
  std::vector<ir::Argument> states;
  for (int direction = 0; direction < 2; ++direction) {
    const std::string d = direction == 0 ? "forward" : "backward";
    Node* w_in = weight(d + "_in", {24, 32}, 10 + uint64_t(direction));
    Node* w_h = weight(d + "_h", {32, 32}, 20 + uint64_t(direction));
    Node* h = nullptr;
    for (int step = 0; step < 12; ++step) {
      const int t = direction == 0 ? step : 11 - step;
      Node* x_t = graph.create_call("select", {x, 0, t});
      Node* pre = graph.create_call("matmul", {x_t, w_in});
      if (h) pre = graph.create_call("add", {pre, graph.create_call("matmul", {h, w_h})});
      h = graph.create_call("tanh", {pre});
      states.emplace_back(h);
    }
  }
  graph.create_output({graph.create_call("cat", {states, 1})});
  return graph;
}

// Frozen GEMMs are oneDNN's matmuls (run on OpenMP's team) only where Kiln was built with oneDNN.
bool built_with_onednn() { return find_code_target("cpu").lowering_options().library_matmul; }

std::map<std::string, Tensor> inputs_of(const Graph& graph, uint64_t seed) {
  std::map<std::string, Tensor> inputs;
  for (const Node* placeholder : graph.placeholders()) {
    std::vector<int64_t> sizes;
    for (const ir::SymInt& size : placeholder->value().shape) sizes.push_back(size.constant());
    inputs[placeholder->target()] = random_tensor(sizes, DType::f32, seed++, -0.5, 0.5);
  }
  return inputs;
}

TEST(CpuSideBySide, TheDirectionsOfABidirectionalRecurrenceRunAsTwoLanesAndMatchTheInterpreter) {
  for (bool frozen : {false, true}) {
    SCOPED_TRACE(frozen ? "frozen weights (OpenMP's team)" : "weights as inputs (the pool)");
    Graph graph = bidirectional_recurrence(frozen);
    CodegenStageOptions stage;
    stage.freeze = frozen;
    const std::string scheduled = dump_codegen_stage(graph, "scheduled", stage);
    EXPECT_NE(scheduled.find("# side by side: "), std::string::npos) << scheduled;
    const std::string source = dump_codegen_stage(graph, "cpp", stage);
    EXPECT_NE(source.find("// side by side: "), std::string::npos);
    const bool on_team = frozen && built_with_onednn();
    EXPECT_NE(source.find(on_team ? "kiln_team_for(2, lanes)" : "kiln_parallel_for(2, lanes)"), std::string::npos);
    CompileOptions options;
    options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
    options.freeze = frozen;
    CompiledModel model = compile(graph, options);
    for (uint64_t seed : {1u, 2u}) {
      std::map<std::string, Tensor> inputs = inputs_of(graph, seed * 100);
      const Tensor expected = ir::Interpreter().run(graph, inputs)[0];
      for (int threads : {1, 2, 3}) {
        for (int call = 0; call < 20; ++call) {
          const std::string problem = compare_tensors(expected, model.run(inputs, threads)[0], 1e-4, 1e-5);
          ASSERT_TRUE(problem.empty()) << threads << " threads, call " << call << ": " << problem;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::compiler
