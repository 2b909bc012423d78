// User errors of build_joint_graph: each one a kiln::Error whose message names what is wrong.
#include <gtest/gtest.h>

#include "passes/autodiff.h"
#include "kiln/error.h"

namespace kiln {
namespace {

using ir::Graph;
using ir::Node;
using passes::AutodiffOptions;

// x: f32[2, 3], idx: i64[2], w (parameter f32[3]); outputs: (sum(x * w), x * w).
Graph small_graph() {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {2, 3}));
  graph.create_placeholder("idx", ir::TensorMeta::contiguous(DType::i64, {2}));
  graph.set_parameter("w", Tensor::zeros({3}, DType::f32));
  Node* product = graph.create_call("mul", {x, graph.create_get_attr("w")});
  graph.create_output({graph.create_call("sum", {product}), product});
  return graph;
}

std::string error_of(const Graph& graph, const AutodiffOptions& options) {
  try {
    passes::build_joint_graph(graph, options);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

TEST(AutodiffErrors, WrtNamingAMissingInput) {
  EXPECT_EQ(error_of(small_graph(), AutodiffOptions::for_loss(0, {"y"})),
            "autodiff: wrt 'y' names no placeholder or parameter of the graph (placeholders: x, idx; parameters: w)");
}

TEST(AutodiffErrors, WrtOfIntegerDtype) {
  EXPECT_EQ(error_of(small_graph(), AutodiffOptions::for_loss(0, {"idx"})),
            "autodiff: wrt 'idx' has dtype i64; gradients exist only for floating values");
}

TEST(AutodiffErrors, WrtNamedTwice) {
  EXPECT_EQ(error_of(small_graph(), AutodiffOptions::for_loss(0, {"x", "x"})), "autodiff: wrt names 'x' twice");
}

TEST(AutodiffErrors, LossIndexOutOfRange) {
  EXPECT_EQ(error_of(small_graph(), AutodiffOptions::for_loss(2)),
            "autodiff: loss output 2 is out of range: the graph has 2 outputs");
  EXPECT_EQ(error_of(small_graph(), AutodiffOptions::for_loss(-1)),
            "autodiff: loss output -1 is out of range: the graph has 2 outputs");
}

TEST(AutodiffErrors, NonScalarLoss) {
  EXPECT_EQ(error_of(small_graph(), AutodiffOptions::for_loss(1)),
            "autodiff: loss output 1 (%mul) is f32[2, 3], not a floating scalar; differentiate a scalar loss, or give "
            "grad_outputs");
}

TEST(AutodiffErrors, CompositeNodeNeedsDecomposition) {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {2, 3}));
  graph.create_output({graph.create_call("sum", {graph.create_call("softmax", {x, 1})})});
  EXPECT_EQ(error_of(graph, AutodiffOptions::for_loss(0, {"x"})),
            "autodiff: node %softmax (softmax) is a composite op; autodiff needs a decomposed graph (run decompose "
            "first)");
}

TEST(AutodiffErrors, OpArgumentWithoutDerivative) {
  Graph graph;
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {1, 2, 3}));
  graph.create_output({graph.create_call("sum", {graph.create_call("pad", {x, ir::Argument::ints({1, 1}), "reflect"})})});
  EXPECT_EQ(error_of(graph, AutodiffOptions::for_loss(0, {"x"})),
            "autodiff: node %pad (pad): pad mode \"reflect\" has no derivative (only \"constant\" has one)");
}

}  // namespace
}  // namespace kiln
