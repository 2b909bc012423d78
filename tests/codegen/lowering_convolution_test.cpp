// Tests of the library-call convolution lowering (codegen/lowering_convolution.cpp with
// LoweringOptions::library_convolution) and of the channels-last layout it brings
// (codegen/lowering_layout.cpp): differential checks against the interpreter through the loop
// evaluator's reference convolution (2-d f32 with groups, stride, asymmetric padding, dilation,
// bias, depthwise, 1x1), the layout flowing from one convolution through pointwise nodes and
// pools into the next without another transposing copy, graph outputs written back in the
// graph's NCHW layout, values read through views (flatten into a matmul), and what stays on
// im2col + GEMM (f64, 1-d and 3-d convolutions).
#include <gtest/gtest.h>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

LoweringOptions library() {
  LoweringOptions options;
  options.library_convolution = true;
  return options;
}

// The Pointwise nodes that copy a value into channels-last order for a convolution.
int transposing_copies(const LoopProgram& program) {
  int count = 0;
  for (const LoopNode& node : program.nodes) {
    const std::string suffix = "_input";
    if (node.kind == NodeKind::Pointwise && node.name.size() > suffix.size() &&
        node.name.compare(node.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      ++count;
  }
  return count;
}

TEST(LoweringLibraryConvolution, GeometriesMatchTheInterpreter) {
  struct Case {
    std::string input, weight, bias, stride, padding, dilation;
    int groups;
  };
  const Case cases[] = {
      {"[1, 3, 7, 6]", "[5, 3, 3, 2]", "[5]", "[1, 1]", "[1, 0]", "[1, 1]", 1},
      {"[2, 4, 7, 7]", "[4, 1, 3, 3]", "[4]", "[2, 1]", "[1, 2]", "[1, 2]", 4},  // depthwise
      {"[2, 6, 5, 5]", "[4, 3, 1, 1]", "", "[1]", "[0]", "[1]", 2},
      {"[2, 3, 5, 5]", "[4, 3, 1, 1]", "[4]", "[2]", "[0]", "[1]", 1},
      {"[1, 2, 9, 8]", "[6, 2, 3, 3]", "", "[3, 2]", "[2]", "[2, 1]", 1},
  };
  for (const Case& c : cases) {
    std::vector<std::string> inputs = {"x: f32" + c.input, "w: f32" + c.weight};
    if (!c.bias.empty()) inputs.push_back("b: f32" + c.bias);
    std::string args = "%x, %w, " + std::string(c.bias.empty() ? "None" : "%b") + ", " + c.stride + ", " + c.padding +
                       ", " + c.dilation + ", False, [0], " + std::to_string(c.groups);
    ir::Graph graph = parse(graph_text(inputs, {op_line("y", "convolution", args)}, "y"));
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 4), library()), "") << args;
    std::map<std::string, int> kinds = node_kinds(lower(graph, library()));
    EXPECT_EQ(kinds["Convolution"], 1) << args;
    EXPECT_EQ(kinds["Gemm"], 0) << args;
  }
}

TEST(LoweringLibraryConvolution, LayoutFlowsThroughPointwiseNodesAndPools) {
  // conv -> relu -> max pool -> conv -> add (a residual of the pool) -> avg pool: one copy of
  // the input into channels-last order, none between the convolutions.
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 12, 12]", "w1: f32[8, 3, 3, 3]", "b1: f32[8]", "w2: f32[8, 8, 3, 3]"},
      {op_line("c1", "convolution", "%x, %w1, %b1, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("r", "relu", "%c1"), op_line("p", "max_pool", "%r, [3, 3], [2, 2], [1, 1]"),
       op_line("c2", "convolution", "%p, %w2, None, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("s", "add", "%c2, %p"), op_line("y", "avg_pool", "%s, [2, 2], [2, 2], [0, 0]")},
      "y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 3), library()), "");
  LoopProgram program = lower(graph, library());
  EXPECT_EQ(node_kinds(program)["Convolution"], 2);
  EXPECT_EQ(transposing_copies(program), 1);
  // The second convolution reads the pool's own buffer.
  for (const LoopNode& node : program.nodes) {
    if (node.kind == NodeKind::Extern && node.name == "c2") {
      EXPECT_EQ(program.buffer(node.extern_call.inputs[0].buffer).name, "p");
    }
  }
}

TEST(LoweringLibraryConvolution, OutputsAndViewsSeeTheGraphsLayout) {
  // Two outputs: the convolution itself (stored channels-last, written back as NCHW) and a
  // flatten of its global average pool into a matmul (a view of a channels-last value).
  ir::Graph graph = parse(graph_text(
      {"x: f32[2, 3, 6, 5]", "w: f32[4, 3, 3, 3]", "m: f32[4, 7]"},
      {op_line("c", "convolution", "%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0], 1"),
       op_line("g", "adaptive_avg_pool", "%c, [1, 1]"), op_line("f", "reshape", "%g, [2, 4]"),
       op_line("y", "matmul", "%f, %m")},
      "c, y"));
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 5), library()), "");
}

TEST(LoweringLibraryConvolution, OtherRanksAndDtypesStayOnIm2col) {
  for (const std::string& declaration :
       {std::string("x: f64[1, 2, 5, 5]|w: f64[3, 2, 3, 3]"), std::string("x: f32[1, 2, 9]|w: f32[3, 2, 3]"),
        std::string("x: f32[1, 2, 4, 4, 4]|w: f32[3, 2, 2, 2, 2]")}) {
    size_t bar = declaration.find('|');
    std::string pads = declaration.find("5, 5]") != std::string::npos ? "[1, 1]" : "[0]";
    ir::Graph graph = parse(graph_text({declaration.substr(0, bar), declaration.substr(bar + 1)},
                                       {op_line("y", "convolution", "%x, %w, None, [1], " + pads + ", [1], False, [0], 1")},
                                       "y"));
    std::map<std::string, int> kinds = node_kinds(lower(graph, library()));
    EXPECT_EQ(kinds["Convolution"], 0) << declaration;
    EXPECT_EQ(kinds["Gemm"], 1) << declaration;
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 6), library()), "") << declaration;
  }
}

}  // namespace
}  // namespace kiln::codegen::testing
