// Tests of the loop program printer (codegen/loop_printer.h): golden dumps of the MLP sample
// (after the default pipeline) and of a softmax graph, under tests/codegen/golden/
// (KILN_UPDATE_GOLDENS=1 rewrites them when a change is intended), and the expression
// forms: masked loads, indirect loads, casts, constants of every kind, where, random,
// reductions and externs.
#include "tests/support/golden.h"
#include "codegen/loop_printer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/lowering.h"
#include "ir/model_file.h"
#include "passes/pass_manager.h"
#include "tests/codegen/lowering_test_support.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldens = fs::path(KILN_SOURCE_DIR) / "tests" / "codegen" / "golden";

void expect_golden(const std::string& printed, const std::string& name) {
  test_support::expect_matches_golden(printed, kGoldens / name);
}

TEST(LoopPrinter, MlpGolden) {
  ir::Graph graph = ir::load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / "mlp.kiln").string());
  passes::run_pipeline(graph, "simplified");
  expect_golden(print_loop_program(lower(graph)), "mlp.loops.txt");
}

TEST(LoopPrinter, SoftmaxGolden) {
  ir::Graph graph = testing::parse(testing::graph_text(
      {"x: f32[s0, 10]"}, {testing::op_line("y", "softmax", "%x, 1")}, "y"));
  passes::run_pipeline(graph, "simplified");
  expect_golden(print_loop_program(lower(graph)), "softmax.loops.txt");
}

TEST(LoopPrinter, HeaderListsSymbolsAndBuffers) {
  ir::Graph graph = testing::parse(testing::graph_text({"x: f32[s0, 3]"}, {testing::op_line("y", "relu", "%x")}, "y"));
  std::string text = print_loop_program(lower(graph));
  EXPECT_EQ(text,
            "loop_program():\n"
            "symbols: s0 = x.size(0)\n"
            "buffers:\n"
            "  x: Input f32[s0, 3] (input 0)\n"
            "  y: Output f32[s0, 3] (output 0)\n"
            "node y: Pointwise  origins=[y]\n"
            "    ranges [s0, 3]\n"
            "    y[3*x0 + x1] = relu(x[3*x0 + x1])\n");
}

TEST(LoopPrinter, Expressions) {
  LoopProgram program;
  Buffer buffer;
  buffer.name = "buf";
  buffer.dtype = DType::f16;
  buffer.shape = {4, 5};
  int id = program.add_buffer(buffer);
  SymInt x0 = loop_var(0), x1 = loop_var(1);
  Expr value = load(id, DType::f16, 5 * x0 + x1);
  EXPECT_EQ(print_expr(program, value), "buf[5*x0 + x1]");
  EXPECT_EQ(print_expr(program, cast(value, DType::f32)), "f32(buf[5*x0 + x1])");
  EXPECT_EQ(print_expr(program, constant(0.5, DType::f32)), "0.5");
  EXPECT_EQ(print_expr(program, constant(2, DType::f64)), "f64(2.0)");
  EXPECT_EQ(print_expr(program, constant(-3, DType::i64)), "-3");
  EXPECT_EQ(print_expr(program, constant(7, DType::i32)), "i32(7)");
  EXPECT_EQ(print_expr(program, constant(1, DType::boolean)), "True");
  EXPECT_EQ(print_expr(program, index_value(x0 * 2, DType::i64)), "i64(2*x0)");
  Expr sum = binary(LoopOp::add, constant(1, DType::f32), constant(2, DType::f32));
  EXPECT_EQ(print_expr(program, binary(LoopOp::mul, sum, constant(3, DType::f32))), "(1.0 + 2.0) * 3.0");
  EXPECT_EQ(print_expr(program, binary(LoopOp::maximum, sum, sum)), "maximum(1.0 + 2.0, 1.0 + 2.0)");
  Expr mask = binary(LoopOp::lt, index_value(x1, DType::i64), constant(3, DType::i64));
  EXPECT_EQ(print_expr(program, where(mask, unary(LoopOp::exp, sum), constant(0, DType::f32))),
            "where(i64(x1) < 3, exp(1.0 + 2.0), 0.0)");
  auto masked = std::make_shared<ExprNode>(*value);
  masked->mask = mask;
  masked->other = constant(0, DType::f16);
  EXPECT_EQ(print_expr(program, masked), "masked(i64(x1) < 3, buf[5*x0 + x1], f16(0.0))");
  auto indirect = std::make_shared<ExprNode>(*load(id, DType::f16, x1));
  indirect->indirect.push_back(IndirectTerm{index_value(x0, DType::i64), 4, 5});
  EXPECT_EQ(print_expr(program, indirect), "buf[x1 + 5*indirect(i64(x0), size=4)]");
  auto random = std::make_shared<ExprNode>();
  random->kind = ExprKind::Random;
  random->index = x0;
  random->seed = 3;
  random->normal = true;
  EXPECT_EQ(print_expr(program, random), "randn(seed=3, offset=0, index=x0)");
}

TEST(LoopPrinter, ReductionAndExternLines) {
  ir::Graph graph = testing::parse(testing::graph_text(
      {"a: f32[3, 4]", "b: f32[4, 2]"},
      {testing::op_line("m", "matmul", "%a, %b"), testing::op_line("s", "var_mean", "%m, [1]"),
       testing::op_line("v", "getitem", "%s, 0"), testing::op_line("c", "cumsum", "%v, 0")},
      "c"));
  std::string text = print_loop_program(lower(graph));
  EXPECT_NE(text.find("node m: Extern Gemm  origins=[m]\n    ranges [3, 2]\n"
                      "    m{offset=0, shape=[3, 2], strides=[2, 1]} = gemm(a{offset=0, shape=[3, 4], strides=[4, 1]}, "
                      "b{offset=0, shape=[4, 2], strides=[2, 1]})\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("node s: Reduction welford  origins=[s]\n    ranges [3, 1]  reduction_ranges [2]  reduced_dims [1]\n"
                      "    {s_mean, s_m2}[x0] = welford(m[r0 + 2*x0]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("= fallback %c(s_var{offset=0, shape=[3], strides=[1]})"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::codegen
