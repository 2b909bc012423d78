// Differential tests of the elementwise lowerings (codegen/lowering_pointwise.cpp): each
// graph is lowered, the loop program evaluated (codegen/loop_evaluator.h) and compared with
// the reference interpreter. Covers every unary op over float, integer and bool dtypes and
// special values (NaN, infinities, -0.0, halves for round-half-even), every binary op over
// dtype pairs that promote, broadcasting, Python-number operands, alpha, rounding modes,
// integer division semantics, comparisons, logical ops, where, clamp, cast and clone, with
// sizes 1, 3 and 17 and a symbolic batch dim.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "tests/codegen/lowering_test_support.h"

namespace kiln::codegen::testing {
namespace {

const char* const kUnaryOps[] = {"neg", "abs",  "exp",  "log",     "log1p", "expm1", "sqrt",
                                 "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "erf", "erfinv",
                                 "relu", "floor", "ceil", "round", "sign",   "logical_not", "isnan"};

std::string type(DType dtype, const std::string& shape) { return std::string(dtype_name(dtype)) + shape; }

// True when the interpreter accepts the graph (some op/dtype pairs are user errors).
bool runs(const std::string& text, const Inputs& inputs) {
  try {
    ir::Interpreter().run(parse(text), inputs);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(LoweringPointwise, UnaryOpsOverDtypes) {
  int checked = 0;
  for (const char* op : kUnaryOps)
    for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i64, DType::i32, DType::i8, DType::boolean}) {
      std::string text;
      try {
        text = graph_text({"x: " + type(dtype, "[3, 17]")}, {op_line("y", op, "%x")}, "y");
        parse(text);
      } catch (const Error&) {
        continue;  // the shape rule rejects this dtype
      }
      Inputs inputs = {{"x", random_tensor({3, 17}, dtype, 7)}};
      if (!runs(text, inputs)) continue;
      EXPECT_EQ(check_lowering(text, inputs), "") << op << " on " << dtype_name(dtype);
      ++checked;
    }
  EXPECT_GE(checked, 21 * 5);
}

TEST(LoweringPointwise, UnaryOpsOnSpecialValues) {
  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {std::nan(""), inf, -inf, -0.0, 0.5, 1.5, 2.5, -2.5, 0.0, 1e-30, -3.7, 100, -0.5, 3.5,
                                1.0, -1.0};
  for (const char* op : kUnaryOps)
    for (DType dtype : {DType::f32, DType::f16}) {
      std::string text = graph_text({"x: " + type(dtype, "[16]")}, {op_line("y", op, "%x")}, "y");
      EXPECT_EQ(check_lowering(text, {{"x", tensor_of({16}, values, dtype)}}), "") << op;
    }
}

TEST(LoweringPointwise, OddSizesAndSymbolicBatch) {
  for (int64_t size : {1, 3, 17}) {
    std::string text = graph_text({"x: f32[s0, 17]", "y: f32[17]"},
                                  {op_line("a", "mul", "%x, %y"), op_line("b", "exp", "%a"), op_line("c", "sub", "%b, 1.5")},
                                  "c");
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({size, 17}, DType::f32, 1)}, {"y", random_tensor({17}, DType::f32, 2)}}),
              "")
        << "s0 = " << size;
    std::string fixed = graph_text({"x: i64[" + std::to_string(size) + "]"}, {op_line("y", "mul", "%x, %x")}, "y");
    EXPECT_EQ(check_lowering(fixed, {{"x", random_tensor({size}, DType::i64, 3)}}), "");
  }
}

struct DtypePair {
  DType a, b;
};

const DtypePair kPairs[] = {{DType::f32, DType::f32},  {DType::f32, DType::i64}, {DType::i64, DType::i64},
                            {DType::i32, DType::i64},  {DType::i8, DType::u8},   {DType::boolean, DType::boolean},
                            {DType::f16, DType::f32},  {DType::bf16, DType::f16}, {DType::i64, DType::f16},
                            {DType::f64, DType::f32},  {DType::boolean, DType::i32}, {DType::f16, DType::f16}};

TEST(LoweringPointwise, BinaryOpsOverDtypePairsWithBroadcasting) {
  const char* ops[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder", "eq", "ne",
                       "lt",  "le",  "gt",  "ge",  "logical_and", "logical_or", "logical_xor"};
  int checked = 0;
  for (const char* op : ops)
    for (const DtypePair& pair : kPairs) {
      std::string text;
      try {
        text = graph_text({"x: " + type(pair.a, "[3, 1, 17]"), "y: " + type(pair.b, "[4, 17]")},
                          {op_line("z", op, "%x, %y")}, "z");
        parse(text);
      } catch (const Error&) {
        continue;
      }
      // Divisors and exponents stay positive so integer ops are defined.
      bool positive = std::string(op) == "div" || std::string(op) == "fmod" || std::string(op) == "remainder" ||
                      std::string(op) == "pow";
      Inputs inputs = {{"x", random_tensor({3, 1, 17}, pair.a, 11, -4, 4)},
                       {"y", random_tensor({4, 17}, pair.b, 12, positive ? 1 : -4, positive ? 3 : 4)}};
      if (!runs(text, inputs)) continue;
      EXPECT_EQ(check_lowering(text, inputs), "") << op << " " << dtype_name(pair.a) << " x " << dtype_name(pair.b);
      ++checked;
    }
  EXPECT_GE(checked, 150);
}

TEST(LoweringPointwise, IntegerDivisionRoundingModesAndNegativeDivisors) {
  for (DType dtype : {DType::i64, DType::i32, DType::i8, DType::f32}) {
    for (const char* mode : {"trunc", "floor"}) {
      std::string text = graph_text({"x: " + type(dtype, "[17]"), "y: " + type(dtype, "[17]")},
                                    {op_line("z", "div", "%x, %y", std::string("rounding_mode: \"") + mode + "\"")}, "z");
      EXPECT_EQ(check_lowering(text, {{"x", random_tensor({17}, dtype, 5, -9, 9)}, {"y", random_tensor({17}, dtype, 6, -4, -1)}}), "")
          << mode << " " << dtype_name(dtype);
    }
    for (const char* op : {"fmod", "remainder"}) {
      std::string text = graph_text({"x: " + type(dtype, "[17]"), "y: " + type(dtype, "[17]")}, {op_line("z", op, "%x, %y")}, "z");
      EXPECT_EQ(check_lowering(text, {{"x", random_tensor({17}, dtype, 5, -9, 9)}, {"y", random_tensor({17}, dtype, 6, -4, -1)}}), "")
          << op << " " << dtype_name(dtype);
    }
  }
}

TEST(LoweringPointwise, PythonNumberOperandsAndAlpha) {
  struct Case {
    DType dtype;
    std::string line;
  };
  const Case cases[] = {
      {DType::f32, op_line("z", "add", "%x, 2.5")},
      {DType::f32, op_line("z", "mul", "%x, 0.1")},
      {DType::f32, op_line("z", "sub", "1.5, %x")},
      {DType::f16, op_line("z", "add", "%x, 0.1")},
      {DType::bf16, op_line("z", "mul", "%x, 3")},
      {DType::i64, op_line("z", "add", "%x, 2.5")},  // promotes to f32
      {DType::i32, op_line("z", "add", "%x, 3000000000")},  // wraps to i32
      {DType::i8, op_line("z", "mul", "%x, 300")},
      {DType::u8, op_line("z", "sub", "%x, 1")},
      {DType::boolean, op_line("z", "add", "%x, True")},
      {DType::boolean, op_line("z", "mul", "%x, 2")},
      {DType::f32, op_line("z", "add", "%x, %x", "alpha: 2")},
      {DType::f32, op_line("z", "sub", "%x, 0.5", "alpha: 0.25")},
      {DType::i64, op_line("z", "sub", "%x, %x", "alpha: 3")},
      {DType::i64, op_line("z", "add", "%x, 4", "alpha: -2")},
      {DType::f32, op_line("z", "div", "%x, 3")},
      {DType::i64, op_line("z", "div", "%x, 3")},
      {DType::i64, op_line("z", "div", "%x, -3", "rounding_mode: \"floor\"")},
      {DType::f32, op_line("z", "pow", "%x, 2")},
      {DType::f32, op_line("z", "pow", "2, %x")},
      {DType::i64, op_line("z", "pow", "%x, 3")},
      {DType::f32, op_line("z", "maximum", "%x, 0.25")},
      {DType::f32, op_line("z", "gt", "%x, 0")},
      {DType::i64, op_line("z", "le", "%x, 1.5")},
      {DType::f32, op_line("z", "logical_and", "%x, 1")},
      {DType::i64, op_line("z", "remainder", "%x, -3")},
      {DType::f32, op_line("z", "fmod", "%x, 0.75")},
  };
  for (const Case& c : cases) {
    std::string text = graph_text({"x: " + type(c.dtype, "[3, 17]")}, {c.line}, "z");
    EXPECT_EQ(check_lowering(text, {{"x", random_tensor({3, 17}, c.dtype, 9, -4, 4)}}), "") << c.line;
  }
}

TEST(LoweringPointwise, NegativeIntegerPowerOfIntegersIsAnError) {
  ir::Graph graph = parse(graph_text({"x: i64[3]"}, {op_line("z", "pow", "%x, -1")}, "z"));
  try {
    lower(graph);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("negative integer powers"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("%z"), std::string::npos) << error.what();
  }
}

// pow(x, 2) of a floating x lowers to x * x: the square rounded once, bit for bit the
// interpreter's pow, over special values, overflow and underflow; other exponents stay pow.
TEST(LoweringPointwise, FloatingSquaresAreMultipliesEqualToPow) {
  double inf = std::numeric_limits<double>::infinity();
  std::vector<double> values = {std::nan(""), inf, -inf, -0.0, 0.0, 1e-30, -1e-23, 1e-45, 3e19, -2e19, 1.0000001,
                                -3.7, 0.1, 65504, 300, 1e-4};
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const char* exponent : {"2", "2.0"}) {
      std::string text = graph_text({"x: " + type(dtype, "[16]")}, {op_line("z", "pow", std::string("%x, ") + exponent)}, "z");
      ir::Graph graph = parse(text);
      Inputs inputs = {{"x", tensor_of({16}, values, dtype)}};
      LoopProgram program = lower(graph);
      std::string printed = print_loop_program(program);
      EXPECT_EQ(printed.find("pow"), std::string::npos) << printed;
      EXPECT_NE(printed.find(" * "), std::string::npos) << printed;
      Tensor expected = ir::Interpreter().run(graph, inputs)[0];
      Tensor actual = evaluate_loop_program(program, graph, inputs)[0];
      ASSERT_EQ(expected.nbytes(), actual.nbytes());
      EXPECT_EQ(std::memcmp(expected.data_ptr(), actual.data_ptr(), expected.nbytes()), 0)
          << dtype_name(dtype) << " pow(x, " << exponent << "):\n" << difference(expected, actual);
    }
  for (const char* other : {"%x, 3", "%x, 2.5", "%x, %x"}) {
    LoopProgram program = lower(parse(graph_text({"x: f32[4]"}, {op_line("z", "pow", other)}, "z")));
    EXPECT_NE(print_loop_program(program).find("pow"), std::string::npos) << other;
  }
}

TEST(LoweringPointwise, ComparisonsAndMaxMinWithNaN) {
  double nan = std::nan("");
  Tensor x = tensor_of({6}, {nan, 1, 2, nan, -1, 0}, DType::f32);
  Tensor y = tensor_of({6}, {1, nan, 2, nan, -2, -0.0}, DType::f32);
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "logical_and", "logical_xor"}) {
    std::string text = graph_text({"x: f32[6]", "y: f32[6]"}, {op_line("z", op, "%x, %y")}, "z");
    EXPECT_EQ(check_lowering(text, {{"x", x}, {"y", y}}), "") << op;
  }
}

TEST(LoweringPointwise, Where) {
  std::string text = graph_text({"c: bool[3, 1]", "a: f32[1, 17]", "b: i64[3, 17]"},
                                {op_line("z", "where", "%c, %a, %b"), op_line("w", "where", "%c, %b, 0.5"),
                                 op_line("v", "where", "%c, 2, %b")},
                                "z, w, v");
  EXPECT_EQ(check_lowering(text, {{"c", random_tensor({3, 1}, DType::boolean, 1)},
                                  {"a", random_tensor({1, 17}, DType::f32, 2)},
                                  {"b", random_tensor({3, 17}, DType::i64, 3)}}),
            "");
  std::string half = graph_text({"c: bool[17]", "a: f16[17]"}, {op_line("z", "where", "%c, %a, -1.25")}, "z");
  EXPECT_EQ(check_lowering(half, {{"c", random_tensor({17}, DType::boolean, 4)}, {"a", random_tensor({17}, DType::f16, 5)}}), "");
}

TEST(LoweringPointwise, Clamp) {
  double nan = std::nan("");
  Tensor special = tensor_of({5}, {nan, -3, 0.5, 3, 1}, DType::f32);
  const std::pair<DType, std::string> cases[] = {
      {DType::f32, "%x, -0.5, 0.5"}, {DType::f32, "%x, None, 1"},    {DType::f32, "%x, 1"},
      {DType::f32, "%x, 1.0, -1.0"}, {DType::i64, "%x, -1, 2"},      {DType::i64, "%x, -1.5, 2"},
      {DType::i8, "%x, 200"},        {DType::f16, "%x, -0.3, 0.7"},  {DType::f32, "%x, nan"}};
  for (const auto& [dtype, args] : cases) {
    std::string text = graph_text({"x: " + type(dtype, "[5]")}, {op_line("z", "clamp", args)}, "z");
    Tensor x = dtype == DType::f32 ? special : random_tensor({5}, dtype, 3, -4, 4);
    EXPECT_EQ(check_lowering(text, {{"x", x}}), "") << args << " on " << dtype_name(dtype);
  }
}

TEST(LoweringPointwise, CastBetweenEveryDtype) {
  double inf = std::numeric_limits<double>::infinity();
  Tensor floats = tensor_of({10}, {std::nan(""), inf, -inf, 300.7, -129.5, 2.5, -0.0, 1e20, 65504, 0.1}, DType::f32);
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes) {
      std::string text = graph_text({"x: " + type(from, "[10]")},
                                    {op_line("z", "cast", "%x, " + std::string(dtype_name(to)))}, "z");
      Tensor x = from == DType::f32 ? floats : random_tensor({10}, from, 4, -200, 200);
      EXPECT_EQ(check_lowering(text, {{"x", x}}), "") << dtype_name(from) << " -> " << dtype_name(to);
    }
}

TEST(LoweringPointwise, CloneOfAView) {
  std::string text = graph_text({"x: f32[3, 17]"}, {op_line("t", "transpose", "%x, 0, 1"), op_line("z", "clone", "%t")}, "z");
  ir::Graph graph = parse(text);
  EXPECT_EQ(check_lowering(graph, {{"x", random_tensor({3, 17}, DType::f32, 1)}}), "");
  LoopProgram program = lower(graph);
  ASSERT_EQ(program.nodes.size(), 1u);
  EXPECT_EQ(program.nodes[0].origins, (std::vector<std::string>{"t", "z"}));
  EXPECT_EQ(print_expr(program, program.nodes[0].body), "x[x0 + 17*x1]") << "(the transpose is folded into the load)";
}

}  // namespace
}  // namespace kiln::codegen::testing
