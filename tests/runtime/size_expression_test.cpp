// Tests for runtime/size_expression: the printed form of symbolic sizes read and evaluated by
// the runtime. Values are worked out by hand here (Python's precedence and floor semantics);
// tests/ir/size_expression_reads_symint_test.cpp checks it against ir::SymInt's own printer on
// random expressions. Every bad text names the expression and the column.
#include "runtime/size_expression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "kiln/error.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

int64_t value(const std::string& text, std::vector<int64_t> values = {}) {
  return SizeExpression::parse(text, {"s0", "s1"}, "test").evaluate(values.empty() ? std::vector<int64_t>{0, 0} : values);
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(SizeExpression, ConstantsSymbolsAndPrecedence) {
  EXPECT_EQ(value("0"), 0);
  EXPECT_EQ(value("784"), 784);
  EXPECT_EQ(value("s0", {5, 7}), 5);
  EXPECT_EQ(value("s1", {5, 7}), 7);
  EXPECT_EQ(value("s0*512", {3, 0}), 1536);
  EXPECT_EQ(value("2 + 3*4"), 14);
  EXPECT_EQ(value("(2 + 3)*4"), 20);
  EXPECT_EQ(value("s0 - s1 - 1", {10, 3}), 6);  // left to right
  EXPECT_EQ(value("2**3**2"), 512);             // right to left: 2**9
  EXPECT_EQ(value("-2**2"), -4);                // ** binds tighter than unary minus
  EXPECT_EQ(value("-s0*3", {2, 0}), -6);
  EXPECT_EQ(value("s0**2 - s1 % 4", {3, 10}), 7);
  EXPECT_EQ(value("max(s0, 1)", {0, 0}), 1);
  EXPECT_EQ(value("min(s0 + 1, s1)", {4, 3}), 3);
  EXPECT_EQ(value("(s0 + 255)//256", {257, 0}), 2);
  EXPECT_EQ(value("4*(s0*s1 + 1)", {2, 3}), 28);
  EXPECT_TRUE(SizeExpression::parse("3*(4 + 1)", {}, "test").is_constant());
  EXPECT_FALSE(SizeExpression::parse("s0 - s0", {"s0"}, "test").is_constant());
  EXPECT_EQ(SizeExpression::parse("  s0 * 2 ", {"s0"}, "test").text(), "  s0 * 2 ");
}

TEST(SizeExpression, DivisionAndModuloArePythons) {
  EXPECT_EQ(value("7//2"), 3);
  EXPECT_EQ(value("-7//2"), -4);   // floor, not truncation
  EXPECT_EQ(value("7//-2"), -4);
  EXPECT_EQ(value("-7//-2"), 3);
  EXPECT_EQ(value("7 % 3"), 1);
  EXPECT_EQ(value("-7 % 3"), 2);   // the divisor's sign
  EXPECT_EQ(value("7 % -3"), -2);
  EXPECT_EQ(value("-7 % -3"), -1);
  EXPECT_EQ(value("(2*s0)//3", {4, 0}), 2);
  EXPECT_EQ(value("(-s0)//2", {3, 0}), -2);
}

TEST(SizeExpression, BadTextNamesTheExpressionAndTheColumn) {
  auto parse = [](const std::string& text) { SizeExpression::parse(text, {"s0"}, "plan.json: field 'grid'"); };
  EXPECT_EQ(error_of([&] { parse("s0 +"); }),
            "plan.json: field 'grid': cannot read size expression 's0 +': the expression ends early at column 5");
  EXPECT_EQ(error_of([&] { parse("s9*2"); }),
            "plan.json: field 'grid': cannot read size expression 's9*2': unknown symbol 's9' at column 1");
  EXPECT_THAT(error_of([&] { parse("(s0 + 1"); }), HasSubstr("expected ')' at column 8"));
  EXPECT_THAT(error_of([&] { parse("s0 $ 2"); }), HasSubstr("unexpected '$' at column 4"));
  EXPECT_THAT(error_of([&] { parse("max(s0)"); }), HasSubstr("expected ',' at column 7"));
  EXPECT_THAT(error_of([&] { parse("s0**s0"); }), HasSubstr("the exponent must be a constant from 0 to 64 at column 5"));
  EXPECT_THAT(error_of([&] { parse("2**65"); }), HasSubstr("the exponent must be a constant"));
  EXPECT_THAT(error_of([&] { parse("99999999999999999999"); }), HasSubstr("does not fit in 64 bits at column 1"));
  EXPECT_THAT(error_of([&] { parse(""); }), HasSubstr("the expression ends early at column 1"));
}

TEST(SizeExpression, OverflowAndDivisionByZeroAreErrors) {
  std::vector<int64_t> big = {std::numeric_limits<int64_t>::max(), 0};
  EXPECT_EQ(error_of([&] { value("s0 + 1", big); }), "size expression 's0 + 1' overflows 64-bit integers");
  EXPECT_THAT(error_of([&] { value("s0*2", big); }), HasSubstr("overflows"));
  EXPECT_THAT(error_of([&] { value("2**63"); }), HasSubstr("overflows"));
  EXPECT_EQ(error_of([&] { value("s0//s1", {4, 0}); }), "division by zero evaluating size expression 's0//s1'");
  EXPECT_THAT(error_of([&] { value("s0 % s1", {4, 0}); }), HasSubstr("division by zero"));
  EXPECT_EQ(value("9223372036854775807 % -1"), 0);
}

}  // namespace
}  // namespace kiln
