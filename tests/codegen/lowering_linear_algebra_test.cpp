// Tests of the matmul, bmm (codegen/lowering_linear_algebra.cpp) and im2col convolution
// (codegen/lowering_convolution.cpp) lowerings:
// differential checks against the interpreter over 1-d operands, broadcast batch dims,
// transposed (column-major) operands, operands that need a contiguous copy (non-affine or
// without a unit stride, or rows read batch-first under a shared weight), f64, integer dtypes through the Fallback, convolutions of rank 1-3
// with groups, stride, padding, dilation and bias, the 1x1 shortcut, half-precision convolution
// through the Fallback; and the Gemm views themselves.
#include <gtest/gtest.h>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

TEST(LoweringMatmul, ShapesBatchesAndLayouts) {
  struct Case {
    std::vector<std::string> inputs;
    std::vector<std::string> lines;
  };
  const Case cases[] = {
      {{"a: f32[3, 4]", "b: f32[4, 5]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f32[4]", "b: f32[4, 5]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f32[3, 4]", "b: f32[4]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f32[4]", "b: f32[4]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f32[2, 1, 3, 4]", "b: f32[5, 4, 6]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f32[4]", "b: f32[2, 4, 3]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f32[2, 3, 4]", "b: f32[4]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f64[2, 3, 4]", "b: f64[2, 4, 5]"}, {op_line("y", "bmm", "%a, %b")}},
      {{"a: f32[4, 3]", "b: f32[5, 4]"},
       {op_line("at", "transpose", "%a, 0, 1"), op_line("bt", "transpose", "%b, 0, 1"),
        op_line("y", "matmul", "%at, %bt")}},
      {{"a: f32[3, 8]", "b: f32[4, 10]"},
       {op_line("as", "slice", "%a, 1, 0, 8, 2"), op_line("bs", "slice", "%b, 1, 1, 6"), op_line("y", "matmul", "%as, %bs")}},
      {{"a: f32[4, 3]", "b: f32[2, 10]"},
       {op_line("at", "transpose", "%a, 0, 1"), op_line("br", "reshape", "%at, [12]"),
        op_line("bb", "reshape", "%br, [3, 4]"), op_line("b2", "reshape", "%b, [4, 5]"),
        op_line("y", "matmul", "%bb, %b2")}},
      {{"a: f32[1, 4]", "b: f32[4, 5]"}, {op_line("ae", "expand", "%a, [3, 4]"), op_line("y", "matmul", "%ae, %b")}},
      {{"a: f32[s0, 4]", "b: f32[4, s1]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: i64[3, 4]", "b: i64[4, 2]"}, {op_line("y", "matmul", "%a, %b")}},
      {{"a: f16[3, 4]", "b: f16[4, 2]"}, {op_line("y", "matmul", "%a, %b")}},
  };
  for (const Case& c : cases) {
    std::string text = graph_text(c.inputs, c.lines, "y");
    ir::Graph graph = parse(text);
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 3, {{"s0", 3}, {"s1", 5}})), "")
        << c.lines.back();
  }
}

TEST(LoweringMatmul, TransposedWeightIsAColumnMajorView) {
  ir::Graph graph = parse(graph_text({"x: f32[s0, 784]"},
                                     {"%w : f32[128, 784] = get_attr[target=w]", op_line("t", "transpose", "%w, 0, 1"),
                                      op_line("y", "matmul", "%x, %t")},
                                     "y"),
                          {{"w", random_tensor({128, 784}, DType::f32, 1)}});
  LoopProgram program = lower(graph);
  ASSERT_EQ(program.nodes.size(), 1u);
  const LoopNode& gemm = program.nodes[0];
  EXPECT_EQ(gemm.kind, NodeKind::Extern);
  EXPECT_EQ(gemm.extern_call.kind, ExternKind::Gemm);
  EXPECT_EQ(gemm.origins, (std::vector<std::string>{"t", "y"}));
  const StridedView &a = gemm.extern_call.inputs[0], &b = gemm.extern_call.inputs[1];
  EXPECT_EQ(program.buffer(a.buffer).name, "x");
  EXPECT_EQ(a.strides, (SymShape{784, 1}));
  EXPECT_EQ(program.buffer(b.buffer).kind, BufferKind::Parameter);
  EXPECT_EQ(b.shape, (SymShape{784, 128}));
  EXPECT_EQ(b.strides, (SymShape{1, 784}));
  EXPECT_EQ(gemm.extern_call.outputs[0].shape, (SymShape{SymInt::symbol("s0"), 128}));
  EXPECT_EQ(check_lowering(graph, {{"x", random_tensor({3, 784}, DType::f32, 2)}}), "");
}

TEST(LoweringMatmul, OperandsWithoutAUnitStrideAreCopied) {
  ir::Graph graph = parse(graph_text({"a: f32[3, 8]", "b: f32[4, 5]"},
                                     {op_line("s", "slice", "%a, 1, 0, 8, 2"), op_line("y", "matmul", "%s, %b")}, "y"));
  LoopProgram program = lower(graph);
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Gemm", 1}, {"Pointwise", 1}}));
  EXPECT_EQ(program.nodes[0].name, "y_a");
  EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 1)), "");
}

TEST(LoweringMatmul, BatchBroadcastHasZeroStride) {
  ir::Graph graph = parse(graph_text({"a: f32[2, 1, 3, 4]", "b: f32[5, 4, 6]"}, {op_line("y", "matmul", "%a, %b")}, "y"));
  LoopProgram program = lower(graph);
  ASSERT_EQ(program.nodes.size(), 1u);
  const ExternCall& call = program.nodes[0].extern_call;
  EXPECT_EQ(call.inputs[0].shape, (SymShape{2, 5, 3, 4}));
  EXPECT_EQ(call.inputs[0].strides, (SymShape{12, 0, 4, 1}));
  EXPECT_EQ(call.inputs[1].shape, (SymShape{2, 5, 4, 6}));
  EXPECT_EQ(call.inputs[1].strides, (SymShape{0, 24, 6, 1}));
}

// x read batch-first from a time-major tensor, times one weight: the batch's rows walk memory with
// two strides, so x is copied in order first and the batch folds into the rows of one GEMM. Not
// where the weight differs along the batch, where x is broadcast along it (its copy would repeat
// rows), or where the product is too narrow to pay for the copy. Two products of x share its copy.
TEST(LoweringMatmul, ASharedWeightOverRowsReadBatchFirstCopiesThemToFoldIntoOneGemm) {
  auto program_of = [](const std::string& x, const std::string& w, const std::string& permute) {
    return parse(graph_text({"x: f32" + x, "w: f32" + w},
                            {op_line("xt", "permute", "%x, " + permute), op_line("y", "matmul", "%xt, %w")}, "y"));
  };
  ir::Graph folded = program_of("[12, 3, 16]", "[16, 20]", "[1, 0, 2]");
  LoopProgram program = lower(folded);
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Gemm", 1}, {"Pointwise", 1}}));
  const ExternCall& call = program.nodes.back().extern_call;
  EXPECT_EQ(call.inputs[0].shape, (SymShape{3, 12, 16}));
  EXPECT_EQ(call.inputs[0].strides, (SymShape{192, 16, 1}));
  EXPECT_TRUE(gemm_folded_row_stride(call.inputs[0], call.inputs[1]).has_value());
  EXPECT_EQ(check_lowering(folded, test_support::random_inputs(folded, 1)), "");
  // Two products of the one input read one copy of it (a bidirectional RNN's two directions).
  ir::Graph shared = parse(graph_text({"x: f32[12, 3, 16]", "w: f32[16, 20]", "v: f32[16, 24]"},
                                      {op_line("xt", "permute", "%x, [1, 0, 2]"), op_line("y", "matmul", "%xt, %w"),
                                       op_line("z", "matmul", "%xt, %v")},
                                      "y, z"));
  EXPECT_EQ(node_kinds(lower(shared)), (std::map<std::string, int>{{"Gemm", 2}, {"Pointwise", 1}}));
  EXPECT_EQ(check_lowering(shared, test_support::random_inputs(shared, 5)), "");
  // Four dims, two of them batch dims read out of order.
  ir::Graph deep = program_of("[5, 4, 3, 16]", "[16, 20]", "[2, 0, 1, 3]");
  EXPECT_EQ(node_kinds(lower(deep)), (std::map<std::string, int>{{"Gemm", 1}, {"Pointwise", 1}}));
  EXPECT_EQ(check_lowering(deep, test_support::random_inputs(deep, 2)), "");
  for (const auto& [x, w] : std::vector<std::pair<std::string, std::string>>{
           {"[12, 3, 16]", "[3, 16, 20]"},  // a weight per batch entry
           {"[12, 3, 16]", "[16, 8]"}}) {   // 8 columns
    ir::Graph kept = program_of(x, w, "[1, 0, 2]");
    EXPECT_EQ(node_kinds(lower(kept)), (std::map<std::string, int>{{"Gemm", 1}})) << x << " @ " << w;
    EXPECT_EQ(check_lowering(kept, test_support::random_inputs(kept, 3)), "") << x << " @ " << w;
  }
  ir::Graph broadcast = parse(graph_text({"x: f32[12, 1, 16]", "w: f32[16, 20]"},
                                         {op_line("xe", "expand", "%x, [12, 3, 16]"), op_line("xt", "permute", "%xe, [1, 0, 2]"),
                                          op_line("y", "matmul", "%xt, %w")},
                                         "y"));
  EXPECT_EQ(node_kinds(lower(broadcast)), (std::map<std::string, int>{{"Gemm", 1}}));
  EXPECT_EQ(check_lowering(broadcast, test_support::random_inputs(broadcast, 4)), "");
}

TEST(LoweringMatmul, IntegerMatmulFallsBack) {
  ir::Graph graph = parse(graph_text({"a: i64[3, 4]", "b: i64[4, 2]"}, {op_line("y", "matmul", "%a, %b")}, "y"));
  EXPECT_EQ(node_kinds(lower(graph)), (std::map<std::string, int>{{"Fallback", 1}}));
}

TEST(LoweringConvolution, RanksGroupsStridesPaddingDilation) {
  struct Case {
    std::string input, weight, bias, stride, padding, dilation;
    int groups;
  };
  const Case cases[] = {
      {"[2, 3, 9]", "[4, 3, 3]", "[4]", "[1]", "[0]", "[1]", 1},
      {"[2, 4, 9]", "[6, 2, 3]", "", "[2]", "[1]", "[2]", 2},
      {"[1, 3, 7, 6]", "[5, 3, 3, 2]", "[5]", "[1, 1]", "[1, 0]", "[1, 1]", 1},
      {"[2, 4, 7, 7]", "[4, 1, 3, 3]", "[4]", "[2, 1]", "[1, 2]", "[1, 2]", 4},
      {"[2, 6, 5, 5]", "[4, 3, 1, 1]", "", "[1]", "[0]", "[1]", 2},
      {"[2, 3, 5, 5]", "[4, 3, 1, 1]", "[4]", "[2]", "[0]", "[1]", 1},
      {"[1, 2, 4, 5, 3]", "[3, 2, 2, 3, 1]", "[3]", "[1, 2, 1]", "[1, 1, 0]", "[1, 1, 2]", 1},
      {"[1, 1, 17]", "[1, 1, 1]", "[1]", "[1]", "[0]", "[1]", 1},
  };
  for (const Case& c : cases)
    for (DType dtype : {DType::f32, DType::f64}) {
      std::string dt(dtype_name(dtype));
      std::vector<std::string> inputs = {"x: " + dt + c.input, "w: " + dt + c.weight};
      if (!c.bias.empty()) inputs.push_back("b: " + dt + c.bias);
      std::string args = "%x, %w, " + std::string(c.bias.empty() ? "None" : "%b") + ", " + c.stride + ", " + c.padding +
                         ", " + c.dilation + ", False, [0], " + std::to_string(c.groups);
      std::string text = graph_text(inputs, {op_line("y", "convolution", args)}, "y");
      ir::Graph graph = parse(text);
      EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 4)), "") << args;
      std::map<std::string, int> kinds = node_kinds(lower(graph));
      EXPECT_EQ(kinds["Gemm"], 1) << args;
      EXPECT_EQ(kinds["Fallback"], 0) << args;
    }
}

TEST(LoweringConvolution, PointwiseKernelSkipsIm2col) {
  ir::Graph graph = parse(graph_text({"x: f32[2, 6, 5, 5]", "w: f32[4, 3, 1, 1]"},
                                     {op_line("y", "convolution", "%x, %w, None, [1], [0], [1], False, [0], 2")}, "y"));
  LoopProgram program = lower(graph);
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Gemm", 1}}));
  const ExternCall& call = program.nodes[0].extern_call;
  EXPECT_EQ(program.buffer(call.inputs[1].buffer).name, "x");
  EXPECT_EQ(call.inputs[1].shape, (SymShape{2, 2, 3, 25}));
}

// Transposed convolutions: tests/codegen/lowering_convolution_test.cpp.
TEST(LoweringConvolution, HalfPrecisionConvolutionFallsBack) {
  ir::Graph half = parse(graph_text({"x: f16[1, 2, 4, 4]", "w: f16[3, 2, 3, 3]"},
                                    {op_line("y", "convolution", "%x, %w, None, [1], [1], [1], False, [0], 1")}, "y"));
  EXPECT_EQ(node_kinds(lower(half)), (std::map<std::string, int>{{"Fallback", 1}}));
  EXPECT_EQ(check_lowering(half, test_support::random_inputs(half, 1)), "");
}

TEST(LoweringConvolution, SymbolicBatch) {
  ir::Graph graph = parse(graph_text({"x: f32[s0, 3, 6, 6]", "w: f32[4, 3, 3, 3]", "b: f32[4]"},
                                     {op_line("y", "convolution", "%x, %w, %b, [1], [1], [1], False, [0], 1")}, "y"));
  for (int64_t batch : {1, 3})
    EXPECT_EQ(check_lowering(graph, test_support::random_inputs(graph, 2, {{"s0", batch}})), "") << batch;
}

}  // namespace
}  // namespace kiln::codegen::testing
