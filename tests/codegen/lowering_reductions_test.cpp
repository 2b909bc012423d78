// Differential tests of the reduction lowerings (codegen/lowering_reductions.cpp) against
// the interpreter: sum, prod, mean, amax, amin, argmax, argmin, var and var_mean over dim
// lists (None, single, negative, several), keepdim, explicit dtypes, integer and bool
// inputs, f16, 0-d inputs, NaN, reductions of views and a symbolic batch, amax and amin over
// their identity padding; and the node structure (ranges with the reduced dims set to 1,
// reduction ranges, reduced_dims).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

std::string type(DType dtype, const std::string& shape) { return std::string(dtype_name(dtype)) + shape; }

const char* const kDimArguments[] = {"None", "[1]", "[-1]", "[0, 2]", "[2, 0]", "[0, 1, 2]"};

TEST(LoweringReductions, SumProdMeanOverDimsAndKeepdim) {
  for (const char* op : {"sum", "prod", "mean"})
    for (const char* dims : kDimArguments)
      for (const char* keepdim : {"False", "True"})
        for (DType dtype : {DType::f32, DType::f16, DType::i64, DType::i32, DType::boolean}) {
          if (std::string(op) == "mean" && !is_floating(dtype)) continue;
          std::string text = graph_text({"x: " + type(dtype, "[3, 4, 5]")},
                                        {op_line("y", op, std::string("%x, ") + dims + ", " + keepdim)}, "y");
          double low = std::string(op) == "prod" ? 0.5 : -2, high = std::string(op) == "prod" ? 1.5 : 2;
          if (!is_floating(dtype)) low = -2, high = 2;
          EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 4, 5}, dtype, 3, low, high)}}), "")
              << op << " dims " << dims << " keepdim " << keepdim << " " << dtype_name(dtype);
        }
}

TEST(LoweringReductions, ExplicitDtype) {
  const std::pair<std::string, DType> cases[] = {{op_line("y", "sum", "%x, [1]", "dtype: f64"), DType::f32},
                                                 {op_line("y", "sum", "%x, None", "dtype: i32"), DType::i64},
                                                 {op_line("y", "sum", "%x, [0]", "dtype: f32"), DType::i64},
                                                 {op_line("y", "prod", "%x, [1]", "dtype: f64"), DType::f16},
                                                 {op_line("y", "mean", "%x, [1]", "dtype: f64"), DType::f32},
                                                 {op_line("y", "mean", "%x, [0, 1]", "dtype: f32"), DType::i64}};
  for (const auto& [line, dtype] : cases) {
    std::string text = graph_text({"x: " + type(dtype, "[3, 17]")}, {line}, "y");
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 17}, dtype, 5)}}), "") << line;
  }
}

TEST(LoweringReductions, ExtremesAndArgExtremes) {
  for (const char* op : {"amax", "amin"})
    for (const char* dims : {"[]", "[1]", "[-1]", "[0, 2]"})
      for (DType dtype : {DType::f32, DType::f16, DType::i64, DType::i8, DType::boolean}) {
        std::string text = graph_text({"x: " + type(dtype, "[3, 4, 5]")}, {op_line("y", op, std::string("%x, ") + dims)}, "y");
        EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 4, 5}, dtype, 8, -3, 3)}}), "") << op << dims;
      }
  for (const char* op : {"argmax", "argmin"})
    for (const char* args : {"None", "None, True", "0", "1", "-1, True", "2"})
      for (DType dtype : {DType::f32, DType::i64, DType::boolean}) {
        std::string text = graph_text({"x: " + type(dtype, "[3, 4, 5]")}, {op_line("y", op, std::string("%x, ") + args)}, "y");
        // Few distinct values: ties test that the first extreme wins.
        EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 4, 5}, dtype, 9, -2, 2)}}), "") << op << args;
      }
}

TEST(LoweringReductions, NaNPropagatesAndWinsArgmax) {
  double nan = std::nan("");
  Tensor x = tensor_of({2, 4}, {1, nan, 3, 2, 4, 5, nan, nan}, DType::f32);
  for (const char* line : {"amax", "amin", "argmax", "argmin", "sum"}) {
    std::string args = std::string(line).starts_with("arg") ? "%x, 1" : "%x, [1]";
    std::string text = graph_text({"x: f32[2, 4]"}, {op_line("y", line, args)}, "y");
    EXPECT_EQ(check_lowering(text, {{"x", x}}), "") << line;
  }
}

TEST(LoweringReductions, VarAndVarMean) {
  for (const char* dims : kDimArguments)
    for (const char* correction : {"0.0", "1", "2.5"})
      for (const char* keepdim : {"False", "True"})
        for (DType dtype : {DType::f32, DType::f64, DType::f16}) {
          std::string kwargs = std::string("correction: ") + correction + ", keepdim: " + keepdim;
          std::string text =
              graph_text({"x: " + type(dtype, "[3, 4, 5]")},
                         {op_line("v", "var", std::string("%x, ") + dims, kwargs),
                          op_line("vm", "var_mean", std::string("%x, ") + dims, kwargs),
                          op_line("a", "getitem", "%vm, 0"), op_line("b", "getitem", "%vm, 1")},
                         "v, a, b");
          EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 4, 5}, dtype, 4)}}), "")
              << dims << " " << kwargs << " " << dtype_name(dtype);
        }
}

TEST(LoweringReductions, VarMeanIsOneWelfordNode) {
  std::string text = graph_text({"x: f32[s0, 32]"},
                                {op_line("vm", "var_mean", "%x, [1]", "correction: 0.0, keepdim: True"),
                                 op_line("var", "getitem", "%vm, 0"), op_line("mean", "getitem", "%vm, 1"),
                                 op_line("y", "sub", "%x, %mean"), op_line("z", "mul", "%y, %var")},
                                "z");
  ir::Graph graph = parse(text);
  LoopProgram program = lower(graph);
  EXPECT_EQ(node_kinds(program), (std::map<std::string, int>{{"Pointwise", 3}, {"Reduction", 1}}));  // the variance, y, z
  const LoopNode& welford = program.nodes[0];
  EXPECT_EQ(welford.reduction, ReductionKind::Welford);
  ASSERT_EQ(welford.outputs.size(), 2u);
  EXPECT_EQ(program.buffer(welford.outputs[0]).name, "vm_mean");
  EXPECT_EQ(program.buffer(welford.outputs[1]).name, "vm_m2");
  EXPECT_EQ(welford.ranges, (SymShape{SymInt::symbol("s0"), 1}));
  EXPECT_EQ(welford.reduction_ranges, (SymShape{32}));
  EXPECT_EQ(welford.reduced_dims, (std::vector<int>{1}));
  // The consumer reads the mean and the variance through the getitems.
  const LoopNode& consumer = program.nodes[2];
  EXPECT_EQ(consumer.origins, (std::vector<std::string>{"mean", "y"}));
  for (int64_t batch : {1, 3, 17})
    EXPECT_EQ(check_lowering(graph, {{"x", random_tensor({batch, 32}, DType::f32, 2)}}), "") << batch;
}

TEST(LoweringReductions, ReductionStructure) {
  ir::Graph graph = parse(graph_text({"x: f32[3, 4, 5]"},
                                     {op_line("s", "sum", "%x, [0, 2]"), op_line("m", "argmax", "%x"),
                                      op_line("p", "mean", "%x, [1]", "")},
                                     "s, m, p"));
  LoopProgram program = lower(graph);
  ASSERT_EQ(program.nodes.size(), 4u);  // sum, argmax, mean's sum and division
  EXPECT_EQ(program.nodes[0].ranges, (SymShape{1, 4, 1}));
  EXPECT_EQ(program.nodes[0].reduction_ranges, (SymShape{3, 5}));
  EXPECT_EQ(program.nodes[0].reduced_dims, (std::vector<int>{0, 2}));
  EXPECT_EQ(program.buffer(program.nodes[0].outputs[0]).shape, (SymShape{4}));
  EXPECT_EQ(program.nodes[1].reduction, ReductionKind::ArgMax);
  EXPECT_EQ(program.nodes[1].ranges, (SymShape{1, 1, 1}));
  EXPECT_EQ(program.nodes[1].reduction_ranges, (SymShape{3, 4, 5}));
  EXPECT_EQ(program.nodes[2].name, "p_sum");
  EXPECT_EQ(program.nodes[3].name, "p");
  EXPECT_EQ(program.nodes[3].kind, NodeKind::Pointwise);
}

TEST(LoweringReductions, ZeroDimAndSizeOneInputs) {
  for (const char* line : {"sum", "prod", "amax", "argmax", "mean"}) {
    std::string args = std::string(line) == "argmax" ? "%x" : (std::string(line) == "amax" ? "%x, []" : "%x, None");
    std::string scalar = graph_text({"x: f32[]"}, {op_line("y", line, args)}, "y");
    EXPECT_EQ(check_lowering(scalar, {{"x", random_tensor({}, DType::f32, 1)}}), "") << line;
    std::string ones = graph_text({"x: f32[1, 1]"}, {op_line("y", line, args)}, "y");
    EXPECT_EQ(check_lowering(ones, {{"x", random_tensor({1, 1}, DType::f32, 1)}}), "") << line;
  }
}

TEST(LoweringReductions, ReductionOfViewsAndSymbolicBatch) {
  std::string text = graph_text({"x: f32[s0, 17]"},
                                {op_line("t", "transpose", "%x, 0, 1"), op_line("s", "sum", "%t, [1]", ""),
                                 op_line("m", "amax", "%t, [0], True"), op_line("e", "exp", "%m")},
                                "s, e");
  for (int64_t batch : {1, 3, 17})
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({batch, 17}, DType::f32, 6)}}), "") << batch;
}

// amax over x padded with -inf after the end of the reduced dim (softmax's row_max over a symbolic
// dim) reduces x itself from -inf, the pad not computed: one reduction over s0, not s0 + 1, and no
// other node. The same numbers as the interpreter's over the padding, for empty rows (s0 = 0), NaN
// and -inf rows. A pad that is not the identity (0, or before the start, or along a kept dim, or
// +inf for amax) or that something else reads too is computed as before.
TEST(LoweringReductions, AnExtremeOverItsIdentityPaddingSkipsThePadding) {
  auto graph_of = [](const std::string& pad_args, const std::string& op, bool pad_read_elsewhere) {
    std::vector<std::string> lines = {op_line("p", "pad", "%x, " + pad_args), op_line("m", op, "%p, [1], True"),
                                      op_line("y", "mul", "%m, 2.0")};
    if (pad_read_elsewhere) lines.push_back(op_line("q", "abs", "%p"));
    return parse(graph_text({"x: f32[3, s0]"}, lines, pad_read_elsewhere ? "y, q" : "y"));
  };
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::string, Inputs>> inputs = {
      {"s0 = 0", {{"x", Tensor::zeros({3, 0}, DType::f32)}}},
      {"s0 = 5", {{"x", random_tensor({3, 5}, DType::f32, 11)}}},
      {"NaN and -inf rows", {{"x", tensor_of({3, 2}, {nan, 1, -inf, -inf, 2, -inf}, DType::f32)}}}};
  for (const char* op : {"amax", "amin"}) {
    const std::string identity = std::string(op) == "amax" ? "-inf" : "inf";
    ir::Graph graph = graph_of("[0, 1], 'constant', " + identity, op, false);
    LoopProgram program = lower(graph);
    ASSERT_EQ(program.nodes.size(), 2u) << op;  // the reduction and y
    EXPECT_EQ(program.nodes[0].reduction_ranges, (SymShape{SymInt::symbol("s0")})) << op;
    for (const auto& [name, given] : inputs) EXPECT_EQ(check_lowering(graph, given), "") << op << ", " << name;
  }
  for (const char* pad_args : {"[0, 1], 'constant', 0.0", "[1, 0], 'constant', -inf", "[0, 0, 0, 1], 'constant', -inf",
                               "[0, 1], 'constant', inf"}) {
    ir::Graph graph = graph_of(pad_args, "amax", false);
    EXPECT_EQ(lower(graph).nodes.size(), 3u) << pad_args;  // the pad computed
    for (const auto& [name, given] : inputs) {
      // (amax of an empty row is an error where the padding is not along the reduced dim.)
      if (name != "s0 = 0" || std::string(pad_args).starts_with("[0, 1]") || std::string(pad_args).starts_with("[1, 0]")) {
        EXPECT_EQ(check_lowering(graph, given), "") << pad_args << ", " << name;
      }
    }
  }
  ir::Graph shared = graph_of("[0, 1], 'constant', -inf", "amax", true);
  EXPECT_EQ(lower(shared).nodes.size(), 4u);  // the pad for abs, the reduction without it, y, q
  for (const auto& [name, given] : inputs) EXPECT_EQ(check_lowering(shared, given), "") << "read elsewhere, " << name;
}

}  // namespace
}  // namespace kiln::codegen::testing
