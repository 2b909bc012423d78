// The expression front end (frontends/expression/expression_parser.h): the graph an expression
// builds (precedence, unary minus, folding, op arguments), the input specs, and errors at their
// columns. `kiln kernel` runs these graphs end to end (tests/tools/kernel_command_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontends/expression/expression_parser.h"
#include "ir/printer.h"
#include "kiln/error.h"

namespace kiln::frontends {
namespace {

using ::testing::HasSubstr;

std::vector<ExpressionInput> inputs(const std::vector<std::string>& specs) {
  std::vector<ExpressionInput> result;
  for (const std::string& spec : specs) result.push_back(parse_expression_input(spec));
  return result;
}

// The graph's call nodes as "target(args)" lines, in order.
std::vector<std::string> calls(const ir::Graph& graph) {
  std::vector<std::string> lines;
  for (ir::Node* node : graph.node_list()) {
    if (node->op() != ir::OpKind::call_function) continue;
    std::string line = node->target() + "(";
    for (size_t i = 0; i < node->args().size(); ++i) line += (i ? ", " : "") + node->args()[i].to_string();
    for (const auto& [key, value] : node->kwargs()) line += ", " + key + "=" + value.to_string();
    lines.push_back(line + ")");
  }
  return lines;
}

std::string error_of(const std::string& expression, const std::vector<std::string>& specs) {
  try {
    parse_expression(expression, inputs(specs));
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ExpressionParser, ProductsBindTighterThanSums) {
  ir::Graph graph = parse_expression("x + y * 2 - x / y", inputs({"x=f32[4]", "y=f32[4]"}));
  EXPECT_THAT(calls(graph), ::testing::ElementsAre("mul(%y, 2)", "add(%x, %mul)", "div(%x, %y)", "sub(%add, %div)"));
}

TEST(ExpressionParser, UnaryMinusParenthesesAndFoldedNumbers) {
  ir::Graph graph = parse_expression("-(x) * (2 + 3) / -4.0", inputs({"x=f32[4]"}));
  EXPECT_THAT(calls(graph), ::testing::ElementsAre("neg(%x)", "mul(%neg, 5)", "div(%mul, -4.0)"));
}

TEST(ExpressionParser, OpArgumentsFollowTheSchema) {
  ir::Graph graph = parse_expression("sum(x * x, [1], keepdim=True) + cast(softmax(x, -1), f64)", inputs({"x=f32[s0, 8]"}));
  EXPECT_THAT(calls(graph), ::testing::ElementsAre("mul(%x, %x)", "sum(%mul, [1], keepdim=True)", "softmax(%x, -1)",
                                                   "cast(%softmax, f64)", "add(%sum, %cast)"));
  EXPECT_EQ(graph.outputs().at(0)->name(), "out");
  EXPECT_EQ(graph.outputs().at(0)->meta.values.at(0).type_string(), "f64[s0, 8]");
}

TEST(ExpressionParser, OutputNameAvoidsAnInputNamedOut) {
  ir::Graph graph = parse_expression("out * 2", inputs({"out=f32[3]"}));
  EXPECT_EQ(graph.outputs().at(0)->name(), "out_1");
}

TEST(ExpressionParser, InputSpecs) {
  ExpressionInput x = parse_expression_input(" x = f32[s0, 2*s1, 4] ");
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.meta.type_string(), "f32[s0, 2*s1, 4]");
  EXPECT_EQ(parse_expression_input("flag=bool[]").meta.type_string(), "bool[]");
  EXPECT_THAT(error_of("x", {"x=f32[-1]"}), HasSubstr("the dim -1 is negative"));
  EXPECT_THAT(error_of("x", {"1x=f32[2]"}), HasSubstr("the name '1x' is not an identifier"));
  EXPECT_THAT(error_of("x + x", {"x=f32[2]", "x=f32[3]"}), HasSubstr("--input x is given twice"));
}

TEST(ExpressionParser, ErrorsNameTheirColumn) {
  const std::vector<std::string> x = {"x=f32[4]"};
  EXPECT_EQ(error_of("relu(x, ", x), "expression:1:9: expected a number, an input, an op call or '(', found end of expression");
  EXPECT_EQ(error_of("exp(x))", x), "expression:1:7: expected an operator (+ - * /) or the end of the expression, found ')'");
  EXPECT_EQ(error_of("  x + 1e", x), "expression:1:9: expected the exponent's digits, found end of expression");
  EXPECT_EQ(error_of("x(2)", x), "expression:1:1: 'x' is an input, not an op: it cannot be called");
  EXPECT_THAT(error_of("x + sum(x, dim=1, 2)", x), HasSubstr("expression:1:19: a positional argument of 'sum' follows a keyword argument"));
  EXPECT_THAT(error_of("x + relu(x, 3)", x), HasSubstr("expression:1:5: node %relu (relu):"));
  EXPECT_EQ(error_of("2 / 0 * x", x), "expression:1:3: division by zero");
  EXPECT_EQ(error_of("", x), "expression: the expression is empty");
  EXPECT_THAT(error_of("2 * (3 + 4)", x), HasSubstr("expression:1:1: the expression is a number, not a tensor"));
  EXPECT_EQ(error_of("(x)", x), "expression:1:1: the expression is the input 'x' itself: there is nothing to compute");
  EXPECT_EQ(error_of("1 + relu_(x)", x), "expression:1:5: 'relu_' is an in-place op: an expression cannot mutate its inputs (use 'relu')");
  EXPECT_EQ(error_of("var_mean(x)", x), "expression:1:1: 'var_mean' returns 2 values; an expression computes one tensor");
  EXPECT_EQ(error_of("x * 99999999999999999999", x), "expression:1:5: the integer 99999999999999999999 is out of range (int64)");
  EXPECT_EQ(error_of("sum(x, 'dim)", x), "expression:1:8: the string has no closing '");
  EXPECT_THAT(error_of(std::string(100000, '(') + "x", x), HasSubstr("the expression nests deeper than 200 levels"));
  EXPECT_THAT(error_of(std::string(100000, '-') + "x", x), HasSubstr("the expression nests deeper than 200 levels"));
  EXPECT_THAT(error_of("x" + std::string(300, ')'), x), HasSubstr("expression:1:2: expected an operator"));
}

}  // namespace
}  // namespace kiln::frontends
