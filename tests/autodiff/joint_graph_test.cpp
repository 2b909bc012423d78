// The joint graph itself: its layout (joint_graph.h), its text for a small MLP (a golden file;
// KILN_UPDATE_GOLDENS=1 rewrites it), grad-outputs mode, zero gradients for values that do
// not reach the loss, gradients passing around non-differentiable values, f16 gradients, and
// gradients on the sample models (mlp, cnn, attention after functionalize and decompose)
// against finite differences in f64.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/support/golden.h"
#include "frontends/model_loader.h"
#include "gradient_check.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/autodiff.h"
#include "passes/pass_manager.h"
#include "tests/support/test_paths.h"

namespace kiln {
namespace {

using ir::Argument;
using ir::Graph;
using ir::Node;
using passes::AutodiffOptions;
using passes::JointGraph;

// x: f32[4, 3] -> linear(3 -> 5) -> relu -> linear(5 -> 2) -> mean: the loss.
Graph small_mlp() {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {4, 3}));
  graph.set_parameter("fc1.weight", testing::random_tensor({5, 3}, DType::f32, 1));
  graph.set_parameter("fc1.bias", testing::random_tensor({5}, DType::f32, 2));
  graph.set_parameter("fc2.weight", testing::random_tensor({2, 5}, DType::f32, 3));
  Node* t1 = graph.create_call("transpose", {graph.create_get_attr("fc1.weight"), 0, 1});
  Node* h = graph.create_call("add", {graph.create_call("matmul", {x, t1}), graph.create_get_attr("fc1.bias")});
  Node* relu = graph.create_call("relu", {h});
  Node* t2 = graph.create_call("transpose", {graph.create_get_attr("fc2.weight"), 0, 1});
  Node* out = graph.create_call("matmul", {relu, t2});
  graph.create_output({graph.create_call("mean", {out}, {}, "loss")});
  return graph;
}

TEST(JointGraph, SmallMlpMatchesGoldenText) {
  JointGraph joint = passes::build_joint_graph(small_mlp());
  std::string text = ir::print_graph(joint.graph);
  std::string path = std::string(KILN_SOURCE_DIR) + "/tests/data/autodiff/small_mlp_joint.txt";
  test_support::expect_matches_golden(text, path);
  // The text parses back to the same graph.
  EXPECT_EQ(ir::print_graph(ir::parse_graph(text, "<joint>", joint.graph.parameters())), text);
  EXPECT_EQ(joint.wrt, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(joint.num_forward_outputs, 1);
  EXPECT_TRUE(joint.tangents.empty());
}

TEST(JointGraph, KeepsTheForwardNodesFirstAndUnchanged) {
  Graph forward = small_mlp();
  JointGraph joint = passes::build_joint_graph(forward);
  std::vector<Node*> joint_nodes = joint.graph.node_list();
  size_t i = 0;
  for (Node* node : forward.nodes()) {
    if (node->op() == ir::OpKind::output) break;
    ASSERT_LT(i, joint_nodes.size());
    EXPECT_EQ(joint_nodes[i]->name(), node->name());
    EXPECT_EQ(joint_nodes[i]->target(), node->target());
    ++i;
  }
}

TEST(JointGraph, GradOutputsModeTakesOneTangentPerOutput) {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f64, {3}));
  Node* y = graph.create_placeholder("y", ir::TensorMeta::contiguous(DType::f64, {3}));
  Node* product = graph.create_call("mul", {x, y});
  graph.create_output({product, graph.create_call("exp", {x})});
  JointGraph joint = passes::build_joint_graph(graph, AutodiffOptions::for_grad_outputs({"x", "y"}));
  EXPECT_EQ(joint.tangents, (std::vector<std::string>{"tangent_mul", "tangent_exp"}));
  std::vector<Node*> placeholders = joint.graph.placeholders();
  ASSERT_EQ(placeholders.size(), 4u);
  EXPECT_EQ(placeholders[2]->name(), "tangent_mul");
  EXPECT_EQ(placeholders[3]->name(), "tangent_exp");

  Tensor xs = Tensor::from_doubles({3}, std::vector<double>{1, 2, 3}, DType::f64);
  Tensor ys = Tensor::from_doubles({3}, std::vector<double>{-1, 0.5, 2}, DType::f64);
  Tensor t1 = Tensor::from_doubles({3}, std::vector<double>{1, 10, 100}, DType::f64);
  Tensor t2 = Tensor::from_doubles({3}, std::vector<double>{0.5, 0.25, 2}, DType::f64);
  std::vector<Tensor> out = ir::interpret(joint.graph, {{"x", xs}, {"y", ys}, {"tangent_mul", t1}, {"tangent_exp", t2}});
  ASSERT_EQ(out.size(), 4u);
  for (int64_t i = 0; i < 3; ++i) {
    // d/dx = t1 * y + t2 * exp(x); d/dy = t1 * x.
    EXPECT_DOUBLE_EQ(out[2].flat_double(i), t1.flat_double(i) * ys.flat_double(i) + t2.flat_double(i) * std::exp(xs.flat_double(i)));
    EXPECT_DOUBLE_EQ(out[3].flat_double(i), t1.flat_double(i) * xs.flat_double(i));
  }
}

TEST(JointGraph, ValuesThatDoNotReachTheLossGetZerosOfTheirTypeAndShape) {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f64, {2}));
  graph.create_placeholder("unused", ir::TensorMeta::contiguous(DType::f16, {3, 2}));
  graph.create_output({graph.create_call("sum", {x})});
  JointGraph joint = passes::build_joint_graph(graph, AutodiffOptions::for_loss(0, {"x", "unused"}));
  std::vector<Tensor> out = ir::interpret(
      joint.graph, {{"x", Tensor::full({2}, 1.0, DType::f64)}, {"unused", Tensor::full({3, 2}, 1.0, DType::f16)}});
  EXPECT_EQ(out[2].dtype(), DType::f16);
  EXPECT_EQ(out[2].sizes(), (Sizes{3, 2}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out[2].flat_double(i), 0.0);
  for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(out[1].flat_double(i), 1.0);
}

TEST(JointGraph, NonDifferentiableValuesDoNotStopOtherGradients) {
  // loss = sum(where(x > 0, x * 3, argmax-derived mask)) : the comparison and the integer
  // branch carry no gradient, x's gradient flows through mul.
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f64, {4}));
  Node* positive = graph.create_call("gt", {x, 0.0});
  Node* index = graph.create_call("cast", {graph.create_call("argmax", {x}), DType::f64});
  Node* chosen = graph.create_call("where", {positive, graph.create_call("mul", {x, 3.0}), index});
  graph.create_output({graph.create_call("sum", {chosen})});
  JointGraph joint = passes::build_joint_graph(graph, AutodiffOptions::for_loss(0, {"x"}));
  Tensor xs = Tensor::from_doubles({4}, std::vector<double>{1, -2, 0.5, -1}, DType::f64);
  std::vector<Tensor> out = ir::interpret(joint.graph, {{"x", xs}});
  std::vector<double> expected{3, 0, 3, 0};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out[1].flat_double(i), expected[size_t(i)]);
}

TEST(JointGraph, HalfPrecisionGradientsKeepTheirDtype) {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f16, {2, 3}));
  Node* w = graph.create_placeholder("w", ir::TensorMeta::contiguous(DType::bf16, {3}));
  Node* y = graph.create_call("mul", {graph.create_call("tanh", {x}), graph.create_call("cast", {w, DType::f16})});
  graph.create_output({graph.create_call("sum", {y})});
  JointGraph joint = passes::build_joint_graph(graph, AutodiffOptions::for_loss(0, {"x", "w"}));
  Node* output = joint.graph.output_node();
  EXPECT_EQ(output->args()[1].node()->value().dtype, DType::f16);
  EXPECT_EQ(output->args()[2].node()->value().dtype, DType::bf16);
  Tensor xs = testing::random_tensor({2, 3}, DType::f16, 5);
  Tensor ws = testing::random_tensor({3}, DType::bf16, 6);
  std::vector<Tensor> out = ir::interpret(joint.graph, {{"x", xs}, {"w", ws}});
  // d/dw_j = sum_i tanh(x_ij), within bf16's precision.
  for (int64_t j = 0; j < 3; ++j) {
    double expected = std::tanh(xs.flat_double(j)) + std::tanh(xs.flat_double(3 + j));
    EXPECT_NEAR(out[2].flat_double(j), expected, 2e-2);
  }
}

// ---- the sample models, in f64, against finite differences ----

// `graph` with every f32 value and parameter turned into f64 (through its text form).
Graph in_double_precision(const Graph& graph) {
  std::string text = ir::print_graph(graph);
  for (size_t at = text.find("f32"); at != std::string::npos; at = text.find("f32", at)) text.replace(at, 3, "f64");
  std::map<std::string, Tensor, std::less<>> parameters;
  for (const auto& [name, tensor] : graph.parameters()) parameters[name] = tensor.to(DType::f64);
  return ir::parse_graph(text, "<f64>", parameters);
}

void check_sample(const std::string& name, const Sizes& input_sizes) {
  Graph graph = frontends::load_model(std::string(KILN_SOURCE_DIR) + "/samples/models/" + name + ".kiln");
  passes::run_pipeline(graph, "decomposed");
  Graph wide = in_double_precision(graph);
  testing::GradientCheckOptions options;
  options.max_elements = 12;  // per value: a spread of elements of each input and parameter
  std::vector<std::string> mismatches =
      testing::check_gradients(wide, {{"x", testing::random_tensor(input_sizes, DType::f64, 11)}}, options);
  for (const std::string& mismatch : mismatches) ADD_FAILURE() << name << ": " << mismatch;
}

TEST(SampleModels, MlpGradientsMatchFiniteDifferences) { check_sample("mlp", {2, 784}); }
TEST(SampleModels, CnnGradientsMatchFiniteDifferences) { check_sample("cnn", {2, 3, 16, 16}); }
TEST(SampleModels, AttentionGradientsMatchFiniteDifferences) { check_sample("attention", {2, 8, 32}); }

}  // namespace
}  // namespace kiln
