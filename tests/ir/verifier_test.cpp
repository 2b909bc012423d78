// Tests for ir/verifier: well-formed graphs pass, and each invariant, broken by editing a
// graph through the Graph API (create_node, set_args, move_before, meta), gives its message.
// (Use lists, unique names and graph membership are maintained by Graph itself: the public
// API cannot break them, so they have no test here.)
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include "tests/ir/format_test_graphs.h"

namespace kiln::ir {
namespace {

std::string verify_error(const Graph& graph) {
  try {
    verify(graph);
  } catch (const VerifyError& error) {
    return error.what();
  }
  return "(no error)";
}

NodeMeta single(DType dtype, SymShape shape) {
  NodeMeta meta;
  meta.values.push_back(TensorMeta::contiguous(dtype, std::move(shape)));
  return meta;
}

// x : f32[2, 3] -> relu -> output
struct ReluGraph {
  Graph graph;
  Node* x;
  Node* relu;
  Node* output;
  ReluGraph() {
    x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2, 3}));
    relu = graph.create_call("relu", {x});
    output = graph.create_output({relu});
  }
};

TEST(Verifier, AcceptsWellFormedGraphs) {
  EXPECT_NO_THROW(verify(format_test::mlp_graph()));
  EXPECT_NO_THROW(verify(format_test::all_arguments_graph()));
  EXPECT_NO_THROW(verify(ReluGraph().graph));
}

TEST(Verifier, IsAnInternalError) {
  Graph graph;
  EXPECT_THROW(verify(graph), InternalError);
}

TEST(VerifierErrors, TopologicalOrder) {
  ReluGraph g;
  g.graph.move_before(g.relu, g.x);
  EXPECT_EQ(verify_error(g.graph),
            "verify: node %relu (relu): uses %x before it is defined (nodes must be in topological order)");
}

TEST(VerifierErrors, NoOutputNode) {
  Graph graph;
  graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {2}));
  EXPECT_EQ(verify_error(graph), "verify: the graph has no output node");
}

TEST(VerifierErrors, TwoOutputNodes) {
  ReluGraph g;
  g.graph.create_node(OpKind::output, "output", {g.relu}, {}, "output_1", {});
  EXPECT_EQ(verify_error(g.graph), "verify: the graph has 2 output nodes (%output_1, %output)");
}

TEST(VerifierErrors, OutputNotLast) {
  ReluGraph g;
  Node* later = g.graph.create_call("relu", {g.x}, {}, "later");
  g.graph.move_before(g.output, later);
  EXPECT_EQ(verify_error(g.graph),
            "verify: node %output (output): is not the last node: node %later (relu) follows it");
}

TEST(VerifierErrors, UnregisteredTarget) {
  ReluGraph g;
  g.graph.create_node(OpKind::call_function, "frobnicate", {g.x}, {}, "f", single(DType::f32, {2, 3}));
  EXPECT_EQ(verify_error(g.graph), "verify: node %f (frobnicate): target 'frobnicate' is not a registered op");
}

TEST(VerifierErrors, ArgumentsDoNotBind) {
  ReluGraph g;
  g.relu->set_args({g.x, g.x});
  EXPECT_EQ(verify_error(g.graph),
            "verify: node %relu (relu): arguments do not bind to relu(Tensor self) -> Tensor: expected at most 1 "
            "positional argument (self), but got 2");
}

TEST(VerifierErrors, MetaDiffersFromInference) {
  ReluGraph g;
  g.relu->meta.values[0].dtype = DType::f16;
  EXPECT_EQ(verify_error(g.graph), "verify: node %relu (relu): meta says f16[2, 3] but the op infers f32[2, 3]");
  g.relu->meta = single(DType::f32, {3, 2});
  EXPECT_EQ(verify_error(g.graph), "verify: node %relu (relu): meta says f32[3, 2] but the op infers f32[2, 3]");
}

TEST(VerifierErrors, ShapeRuleRejectsTheNode) {
  ReluGraph g;
  g.graph.create_node(OpKind::call_function, "matmul", {g.x, g.x}, {}, "mm", single(DType::f32, {2, 3}));
  std::string message = verify_error(g.graph);
  EXPECT_EQ(message.rfind("verify: node %mm (matmul): the shape rule rejects it: ", 0), 0u) << message;
  EXPECT_EQ(message.find("node %mm", 10), std::string::npos) << "the node is named twice: " << message;
}

TEST(VerifierErrors, GetAttrWithoutParameter) {
  Graph graph;
  graph.set_parameter("w", Tensor::zeros({4}, DType::f32));
  Node* w = graph.create_get_attr("w");
  graph.create_output({w});
  graph.remove_parameter("w");
  EXPECT_EQ(verify_error(graph), "verify: node %w (get_attr): get_attr target 'w' is not a parameter of the graph");
}

TEST(VerifierErrors, GetAttrMetaDiffersFromParameter) {
  Graph graph;
  graph.set_parameter("w", Tensor::zeros({4}, DType::f32));
  Node* w = graph.create_get_attr("w");
  graph.create_output({w});
  graph.set_parameter("w", Tensor::zeros({5}, DType::i32));
  EXPECT_EQ(verify_error(graph), "verify: node %w (get_attr): meta says f32[4] but parameter 'w' is i32[5]");
}

TEST(VerifierErrors, TupleUsedOtherThanThroughGetitem) {
  ReluGraph g;
  Node* pair = g.graph.create_call("var_mean", {g.x, Argument::ints({1})});
  g.graph.create_node(OpKind::call_function, "relu", {pair}, {}, "bad", single(DType::f32, {2}));
  EXPECT_EQ(verify_error(g.graph),
            "verify: node %var_mean (var_mean): is a tuple but node %bad (relu) uses it other than as getitem's "
            "first argument");

  ReluGraph returned;
  Node* tuple = returned.graph.create_call("var_mean", {returned.x, Argument::ints({1})});
  returned.output->set_args({returned.relu, tuple});
  EXPECT_EQ(verify_error(returned.graph),
            "verify: node %var_mean (var_mean): is a tuple but node %output (output) uses it other than as "
            "getitem's first argument");
}

TEST(VerifierErrors, PlaceholderShape) {
  Graph graph;
  graph.create_node(OpKind::placeholder, "y", {}, {}, "y", {});
  EXPECT_EQ(verify_error(graph), "verify: the graph has no output node");
  graph.create_output({});
  EXPECT_EQ(verify_error(graph), "verify: node %y (placeholder): has no meta");

  Graph strided;
  NodeMeta meta = single(DType::f32, {2, 3});
  meta.values[0].strides = {1};
  strided.create_node(OpKind::placeholder, "z", {}, {}, "z", meta);
  strided.create_output({});
  EXPECT_EQ(verify_error(strided), "verify: node %z (placeholder): meta f32[2, 3] has 1 strides for rank 2");

  Graph with_args;
  with_args.create_node(OpKind::placeholder, "a", {1}, {}, "a", single(DType::f32, {2}));
  with_args.create_output({});
  EXPECT_EQ(verify_error(with_args), "verify: node %a (placeholder): takes no arguments");
}

}  // namespace
}  // namespace kiln::ir
