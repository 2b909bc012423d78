// The GEMM epilogues the CUDA backend fuses into one cuBLASLt call (codegen/cuda/gemm_epilogue.h):
// relu(x@w+b) (the MLP sample's first layer), gelu_tanh(x@w+b), relu(x@w), x@w+b with a [n] or
// [1, n] bias and batched, are one library step carrying the epilogue, its bias view and the
// buffer it writes, with no epilogue kernel; and through the CPU emulation (whose GEMM step
// applies the epilogue as cuBLASLt defines it) they still match the interpreter. Every other
// epilogue keeps the cuBLAS call plus a kernel: x@w*2+1, a per-row bias, the exact (erf) GELU,
// relu before the bias, and a GEMM output that is also a graph output.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/printer.h"
#include "kiln/npy.h"
#include "tests/cuda_codegen/emulated_model.h"
#include "tests/support/differential.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen::cuda {
namespace {

namespace fs = std::filesystem;
using testing::EmulatedModel;

ir::Node* input(ir::Graph& graph, const std::string& name, const std::vector<ir::SymInt>& shape) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(DType::f32, shape));
}

// The module the CUDA backend emits for `graph` (no host build).
struct Emitted {
  ScheduledProgram scheduled;
  CudaModule module;
};
Emitted emit(const ir::Graph& graph) {
  Emitted e{schedule(lower(testing::simplified(graph))), {}};
  e.module = emit_cuda(e.scheduled);
  return e;
}

int buffer_named(const ScheduledProgram& scheduled, const std::string& name) {
  for (const Buffer& b : scheduled.program.buffers) {
    if (b.name == name) return b.id;
  }
  ADD_FAILURE() << "no buffer " << name;
  return -1;
}

size_t kernel_launches(const CudaModule& module) {
  size_t count = 0;
  for (const LaunchStep& step : module.steps) count += step.kind == LaunchStep::Kind::Kernel;
  return count;
}

bool has_epilogue_kernel(const CudaModule& module) {
  for (const LaunchStep& step : module.steps) {
    if (step.kind == LaunchStep::Kind::Kernel && step.launch.name.find("_epilogue") != std::string::npos) return true;
  }
  return false;
}

std::map<std::string, Tensor> random_inputs(const ir::Graph& graph) {
  std::map<std::string, Tensor> inputs;
  uint64_t seed = 11;
  for (const ir::Node* node : graph.placeholders()) {
    const ir::TensorMeta& meta = node->meta.values.at(0);
    Sizes sizes;
    for (const ir::SymInt& d : meta.shape) sizes.push_back(d.is_constant() ? d.constant() : 5);  // s0 = 5
    inputs[node->target()] = test_support::random_tensor(sizes, meta.dtype, seed++);
  }
  return inputs;
}

void expect_emulation_matches_interpreter(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  EmulatedModel model = EmulatedModel::compile(graph);
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<Tensor> actual = model.run(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(test_support::compare_tensors(expected[i], actual[i], 1e-4, 1e-5), "") << ir::print_graph(graph);
  }
}

// x [6, 16] @ w [16, 8], then `epilogue` of the product (and of bias b [8] when it reads it).
ir::Graph gemm_with(const std::function<ir::Node*(ir::Graph&, ir::Node* product, ir::Node* bias)>& epilogue) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {6, 16});
  ir::Node* w = input(graph, "w", {16, 8});
  ir::Node* b = input(graph, "b", {8});
  ir::Node* product = graph.create_call("matmul", {x, w});
  graph.create_output({epilogue(graph, product, b)});
  return graph;
}

TEST(GemmEpilogue, TheMlpSamplesFirstLayerIsOneLtCallWithBiasAndRelu) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  ir::Graph graph = ir::load_model((dir / "mlp.kiln").string());
  Emitted e = emit(graph);
  ASSERT_FALSE(e.module.steps.empty());
  const LaunchStep& first = e.module.steps[0];
  ASSERT_EQ(first.kind, LaunchStep::Kind::Library);
  ASSERT_TRUE(first.epilogue.has_value());
  EXPECT_EQ(first.epilogue->activation, GemmActivation::relu);
  ASSERT_TRUE(first.epilogue->bias.has_value());
  const int bias = buffer_named(e.scheduled, "fc1_bias"), relu = buffer_named(e.scheduled, "relu");
  EXPECT_EQ(first.epilogue->bias->buffer, bias);
  EXPECT_EQ(first.epilogue->bias->offset, ir::SymInt(0));
  EXPECT_EQ(first.epilogue->bias->shape, (SymShape{128}));
  EXPECT_EQ(first.epilogue->bias->strides, (SymShape{1}));
  EXPECT_EQ(first.epilogue->output, relu);
  EXPECT_FALSE(has_epilogue_kernel(e.module));
  EXPECT_NE(launch_plan_text(e.module).find("library call: loop node " + std::to_string(first.loop_node) +
                                            ", cublasLt epilogue bias_relu, bias b" + std::to_string(bias) +
                                            " at 0, into b" + std::to_string(relu) + "\n"),
            std::string::npos)
      << launch_plan_text(e.module);
  // Through the emulation, with the sample's own input.
  std::map<std::string, Tensor> inputs{{"x", read_npy((dir / "mlp_data" / "inputs" / "x.npy").string())}};
  expect_emulation_matches_interpreter(graph, inputs);
}

TEST(GemmEpilogue, GeluTanhOfXwPlusBIsOneLtCallAndNothingElse) {
  ir::Graph graph = gemm_with([](ir::Graph& g, ir::Node* product, ir::Node* b) {
    return g.create_call("gelu", {g.create_call("add", {product, b})}, {{"approximate", "tanh"}});
  });
  Emitted e = emit(graph);
  ASSERT_EQ(e.module.steps.size(), 1u);
  ASSERT_TRUE(e.module.steps[0].epilogue.has_value());
  EXPECT_EQ(e.module.steps[0].epilogue->activation, GemmActivation::gelu_tanh);
  ASSERT_TRUE(e.module.steps[0].epilogue->bias.has_value());
  EXPECT_EQ(e.module.steps[0].epilogue->bias->buffer, buffer_named(e.scheduled, "b"));
  EXPECT_EQ(epilogue_name(*e.module.steps[0].epilogue), "bias_gelu_tanh");
  EXPECT_EQ(kernel_launches(e.module), 0u);
  expect_emulation_matches_interpreter(graph, random_inputs(graph));
}

TEST(GemmEpilogue, ReluWithoutBiasAndBiasWithoutActivationAreFused) {
  ir::Graph relu_only = gemm_with([](ir::Graph& g, ir::Node* product, ir::Node*) { return g.create_call("relu", {product}); });
  Emitted relu = emit(relu_only);
  ASSERT_TRUE(relu.module.steps.at(0).epilogue.has_value());
  EXPECT_EQ(epilogue_name(*relu.module.steps[0].epilogue), "relu");
  EXPECT_EQ(kernel_launches(relu.module), 0u);
  expect_emulation_matches_interpreter(relu_only, random_inputs(relu_only));

  // The bias first, as a [1, n] row.
  ir::Graph bias_row = gemm_with([](ir::Graph& g, ir::Node* product, ir::Node* b) {
    return g.create_call("add", {g.create_call("unsqueeze", {b, 0}), product});
  });
  Emitted bias = emit(bias_row);
  ASSERT_TRUE(bias.module.steps.at(0).epilogue.has_value());
  EXPECT_EQ(epilogue_name(*bias.module.steps[0].epilogue), "bias");
  EXPECT_EQ(kernel_launches(bias.module), 0u);
  expect_emulation_matches_interpreter(bias_row, random_inputs(bias_row));
}

TEST(GemmEpilogue, ABatchedProductOfSymbolicRowsSharesOneBiasAcrossTheBatch) {
  ir::Graph graph;
  ir::Node* x = input(graph, "x", {3, ir::SymInt::symbol("s0"), 16});
  ir::Node* w = input(graph, "w", {3, 16, 8});
  ir::Node* b = input(graph, "b", {8});
  graph.create_output({graph.create_call("relu", {graph.create_call("add", {graph.create_call("matmul", {x, w}), b})})});
  Emitted e = emit(graph);
  ASSERT_TRUE(e.module.steps.at(0).epilogue.has_value());
  EXPECT_EQ(epilogue_name(*e.module.steps[0].epilogue), "bias_relu");
  EXPECT_EQ(kernel_launches(e.module), 0u);
  expect_emulation_matches_interpreter(graph, random_inputs(graph));
}

TEST(GemmEpilogue, EveryOtherEpilogueKeepsItsKernel) {
  struct Case {
    const char* name;
    ir::Graph graph;
  };
  std::vector<Case> cases;
  cases.push_back({"x@w*2+1", gemm_with([](ir::Graph& g, ir::Node* product, ir::Node*) {
                     return g.create_call("add", {g.create_call("mul", {product, 2.0}), 1.0});
                   })});
  cases.push_back({"exact gelu", gemm_with([](ir::Graph& g, ir::Node* product, ir::Node* b) {
                     return g.create_call("gelu", {g.create_call("add", {product, b})});
                   })});
  cases.push_back({"relu before the bias", gemm_with([](ir::Graph& g, ir::Node* product, ir::Node* b) {
                     return g.create_call("add", {g.create_call("relu", {product}), b});
                   })});
  {
    ir::Graph graph;  // a bias per row: [6, 1]
    ir::Node* x = input(graph, "x", {6, 16});
    ir::Node* w = input(graph, "w", {16, 8});
    ir::Node* b = input(graph, "b", {6, 1});
    graph.create_output({graph.create_call("add", {graph.create_call("matmul", {x, w}), b})});
    cases.push_back({"bias per row", std::move(graph)});
  }
  {
    ir::Graph graph;  // the product is also returned: the fused call would never write it
    ir::Node* x = input(graph, "x", {6, 16});
    ir::Node* w = input(graph, "w", {16, 8});
    ir::Node* b = input(graph, "b", {8});
    ir::Node* product = graph.create_call("matmul", {x, w});
    graph.create_output({product, graph.create_call("relu", {graph.create_call("add", {product, b})})});
    cases.push_back({"product returned too", std::move(graph)});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Emitted e = emit(c.graph);
    ASSERT_EQ(e.module.steps.at(0).kind, LaunchStep::Kind::Library);
    EXPECT_FALSE(e.module.steps[0].epilogue.has_value());
    EXPECT_TRUE(has_epilogue_kernel(e.module)) << launch_plan_text(e.module);
    EXPECT_EQ(kernel_launches(e.module), 1u) << launch_plan_text(e.module);
  }
  // The kept path still runs right.
  expect_emulation_matches_interpreter(cases[0].graph, random_inputs(cases[0].graph));
}

}  // namespace
}  // namespace kiln::codegen::cuda
