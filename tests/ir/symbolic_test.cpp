// Owns the tests of ir/symbolic.h: each simplification rule, printing (text and C++),
// parsing and its errors, evaluation and substitution, and randomized checks that compare
// SymInt against a direct integer evaluation of 2000 generated expression trees.
#include "ir/symbolic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

namespace kiln::ir {
namespace {

const SymInt s0 = SymInt::symbol("s0");
const SymInt s1 = SymInt::symbol("s1");
const SymInt s2 = SymInt::symbol("s2");

// ---------------------------------------------------------------- construction

TEST(SymInt, ConstantsAndSymbols) {
  EXPECT_TRUE(SymInt().is_constant());
  EXPECT_EQ(SymInt().constant(), 0);
  EXPECT_EQ(SymInt(42).constant(), 42);
  EXPECT_EQ(SymInt(-7).maybe_constant(), std::optional<int64_t>(-7));
  EXPECT_EQ(s0.maybe_constant(), std::nullopt);
  EXPECT_THROW(s0.constant(), SymbolicError);
  std::vector<SymInt> dims = {2, 3};
  EXPECT_EQ(dims[1], SymInt(3));

  EXPECT_TRUE(s0.is_symbol());
  EXPECT_FALSE(s0.is_constant());
  EXPECT_FALSE((s0 + 1).is_symbol());
  EXPECT_FALSE((2 * s0).is_symbol());
  EXPECT_FALSE(SymInt(3).is_symbol());
  EXPECT_EQ(SymInt::symbol("batch_size").to_string(), "batch_size");
}

TEST(SymInt, RejectsBadSymbolNames) {
  for (const char* name : {"", "1a", "a-b", "a b", "max", "min", "s0+1"})
    EXPECT_THROW(SymInt::symbol(name), SymbolicError) << name;
  EXPECT_NO_THROW(SymInt::symbol("_x9"));
}

TEST(SymInt, FreeSymbolsAreSortedAndUnique) {
  SymInt e = max(s2 * s0, floordiv(s1 + s0, 3)) + s0;
  EXPECT_EQ(e.free_symbols(), (std::vector<std::string>{"s0", "s1", "s2"}));
  EXPECT_TRUE(SymInt(5).free_symbols().empty());
}

// ---------------------------------------------------------------- polynomial rules

TEST(SymIntSimplify, CollectsLikeTerms) {
  EXPECT_EQ(s0 * 2 + s0, 3 * s0);
  EXPECT_EQ((s0 * 2 + s0).to_string(), "3*s0");
  EXPECT_EQ(s0 + s1 - s0, s1);
}

TEST(SymIntSimplify, CancelsToZero) {
  SymInt zero = s0 - s0;
  EXPECT_TRUE(zero.is_constant());
  EXPECT_EQ(zero, 0);
  EXPECT_EQ((s0 * s1 - s1 * s0).maybe_constant(), std::optional<int64_t>(0));
}

TEST(SymIntSimplify, ExpandsProducts) {
  SymInt square = (s0 + 1) * (s0 + 1);
  EXPECT_EQ(square, s0 * s0 + 2 * s0 + 1);
  EXPECT_EQ(square.to_string(), "s0**2 + 2*s0 + 1");
  EXPECT_EQ((s0 + s1) * (s0 - s1), s0 * s0 - s1 * s1);
}

TEST(SymIntSimplify, FoldsIdentities) {
  EXPECT_EQ(s0 * 1, s0);
  EXPECT_EQ(1 * s0, s0);
  EXPECT_EQ(s0 + 0, s0);
  EXPECT_EQ(0 * s0, 0);
  EXPECT_TRUE((s0 * 0).is_constant());
  EXPECT_EQ(-(-s0), s0);
}

TEST(SymIntSimplify, FoldsConstantsWithFloorSemantics) {
  EXPECT_EQ(SymInt(2) + 3, 5);
  EXPECT_EQ(SymInt(2) * -3, -6);
  EXPECT_EQ(floordiv(7, 2), 3);
  EXPECT_EQ(floordiv(-7, 2), -4);
  EXPECT_EQ(floordiv(7, -2), -4);
  EXPECT_EQ(floordiv(-7, -2), 3);
  EXPECT_EQ(mod(7, 3), 1);
  EXPECT_EQ(mod(-7, 3), 2);
  EXPECT_EQ(mod(7, -3), -2);
  EXPECT_EQ(mod(-7, -3), -1);
  EXPECT_EQ(max(3, -4), 3);
  EXPECT_EQ(min(3, -4), -4);
}

TEST(SymIntSimplify, SumsAndProductsCommute) {
  EXPECT_EQ(s1 + s0, s0 + s1);
  EXPECT_EQ((s1 + s0).hash(), (s0 + s1).hash());
  EXPECT_EQ(s1 * s0 * s2, s2 * s0 * s1);
  EXPECT_EQ((s1 * s0).to_string(), "s0*s1");
}

// ---------------------------------------------------------------- floordiv and mod rules

TEST(SymIntSimplify, FloorDivCancelsAConstantFactor) {
  EXPECT_EQ(floordiv(4 * s0 + 8, 4), s0 + 2);
  EXPECT_EQ(floordiv(s0 * 3, 3), s0);
  EXPECT_EQ(floordiv(6 * s0 * s1 - 12, 6), s0 * s1 - 2);
  // The divisible part comes out; the rest stays under the floor.
  EXPECT_EQ(floordiv(4 * s0 + 3, 4), s0);
  EXPECT_EQ(floordiv(4 * s0 + s1, 4), s0 + floordiv(s1, 4));
  // A common factor of the numerator and the divisor.
  EXPECT_EQ(floordiv(2 * s0 + 2, 4).to_string(), "(s0 + 1)//2");
  // The constant is reduced into [0, k).
  EXPECT_EQ(floordiv(s0 - 3, 2), floordiv(s0 + 1, 2) - 2);
}

TEST(SymIntSimplify, FloorDivByOneAndByItself) {
  EXPECT_EQ(floordiv(s0 + s1, 1), s0 + s1);
  EXPECT_EQ(floordiv(s0, -1), -s0);
  EXPECT_EQ(floordiv(s0 * s1, s0 * s1), 1);
  EXPECT_EQ(floordiv(0, s0), 0);
}

TEST(SymIntSimplify, FloorDivNestsAndUsesRanges) {
  EXPECT_EQ(floordiv(floordiv(s0, 2), 3), floordiv(s0, 6));
  EXPECT_EQ(floordiv(mod(s0, 4), 4), 0);
  EXPECT_EQ(floordiv(mod(s0, 4) + 4, 4), 1);
  EXPECT_EQ(floordiv(s0, -2), floordiv(-s0, 2));
}

TEST(SymIntSimplify, FloorDivBySymbols) {
  EXPECT_EQ(floordiv(s0 * s1, s0), s1);
  EXPECT_EQ(floordiv(s0 * s1 + s2, s0), s1 + floordiv(s2, s0));
  EXPECT_EQ(floordiv(4 * s0, 2 * s1), floordiv(2 * s0, s1));
  EXPECT_EQ(floordiv(mod(s0, 4), s1 + 4), 0);
}

TEST(SymIntSimplify, ModRules) {
  EXPECT_EQ(mod(4 * s0, 4), 0);
  EXPECT_EQ(mod(s0 * s1, 1), 0);
  EXPECT_EQ(mod(s0, -1), 0);
  EXPECT_EQ(mod(s0, s0), 0);
  EXPECT_EQ(mod(4 * s0 + 5, 4), 1);
  EXPECT_EQ(mod(s0 + 5, 4), mod(s0 + 1, 4));
  EXPECT_EQ(mod(2 * s0, 4), 2 * mod(s0, 2));
  EXPECT_EQ(mod(mod(s0, 4), 8), mod(s0, 4));
  EXPECT_EQ(mod(mod(s0, 8), 4), mod(s0, 4));
  EXPECT_EQ(mod(s0 * s1 + s2, s1), mod(s2, s1));
  EXPECT_EQ(mod(s0, -4), -mod(-s0, 4));
}

TEST(SymIntSimplify, DivisionByConstantZeroThrows) {
  EXPECT_THROW(floordiv(s0, 0), SymbolicError);
  EXPECT_THROW(mod(s0, s1 - s1), SymbolicError);
  EXPECT_THROW(floordiv(3, 0), SymbolicError);
}

// ---------------------------------------------------------------- max and min rules

TEST(SymIntSimplify, MaxMinOfEqualAndConstantArguments) {
  EXPECT_EQ(max(s0 + 1, s0 + 1), s0 + 1);
  EXPECT_EQ(min(s0, s0), s0);
  EXPECT_EQ(max(max(s0, 3), 5), max(s0, 5));
  EXPECT_EQ(min(min(s0, 3), 5), min(s0, 3));
}

TEST(SymIntSimplify, MaxMinUseNonNegativeSymbols) {
  EXPECT_EQ(max(s0, 0), s0);
  EXPECT_EQ(min(s0, 0), 0);
  EXPECT_EQ(max(s0 * s1, -3), s0 * s1);
  EXPECT_EQ(max(s0 + 1, s0), s0 + 1);
  EXPECT_EQ(min(s0 + 1, s0), s0);
  EXPECT_EQ(max(s0, 3).to_string(), "max(s0, 3)");  // s0 may be below 3
}

TEST(SymIntSimplify, MaxMinAreCommutativeAndAssociative) {
  EXPECT_EQ(max(s1, s0), max(s0, s1));
  EXPECT_EQ(max(s1, s0).hash(), max(s0, s1).hash());
  EXPECT_EQ(min(s1, s0).to_string(), "min(s0, s1)");
  EXPECT_EQ(max(max(s0, s1), s2), max(s0, max(s2, s1)));
  EXPECT_EQ(max(s2, max(s1, s0)).to_string(), "max(max(s0, s1), s2)");
}

// ---------------------------------------------------------------- printing

TEST(SymIntPrint, CanonicalOrder) {
  EXPECT_EQ((3 + s0 + 2 * s1 * s0).to_string(), "2*s0*s1 + s0 + 3");
  EXPECT_EQ((s0 - 1).to_string(), "s0 - 1");
  EXPECT_EQ((4 - s0).to_string(), "-s0 + 4");
  EXPECT_EQ((s1 - 2 * s0).to_string(), "-2*s0 + s1");
  EXPECT_EQ(SymInt(-5).to_string(), "-5");
  EXPECT_EQ((s0 * s0 * s1 + s1).to_string(), "s0**2*s1 + s1");
  // Symbols in natural order.
  EXPECT_EQ((SymInt::symbol("s10") + s2).to_string(), "s2 + s10");
}

TEST(SymIntPrint, DivisionModMaxMin) {
  EXPECT_EQ(floordiv(s0 + 1, 2).to_string(), "(s0 + 1)//2");
  EXPECT_EQ(floordiv(s0, 2).to_string(), "s0//2");
  EXPECT_EQ(mod(s0, 4).to_string(), "s0 % 4");
  EXPECT_EQ(min(s0, s1).to_string(), "min(s0, s1)");
  EXPECT_EQ((3 * floordiv(s0, 2)).to_string(), "3*(s0//2)");
  EXPECT_EQ((-floordiv(s0, 2)).to_string(), "-(s0//2)");
  EXPECT_EQ((s1 - mod(s0, 3)).to_string(), "s1 - s0 % 3");
  EXPECT_EQ(floordiv(s0, s1 * s2).to_string(), "s0//(s1*s2)");
  EXPECT_EQ(floordiv(s0 * s1, s2).to_string(), "(s0*s1)//s2");
  EXPECT_EQ(floordiv(-s0, 2).to_string(), "(-s0)//2");
  EXPECT_EQ(mod(-3, s0).to_string(), "(-3) % s0");
  EXPECT_EQ(floordiv(floordiv(s0, s1), s2).to_string(), "(s0//s1)//s2");
  std::ostringstream out;
  out << s0 + 1;
  EXPECT_EQ(out.str(), "s0 + 1");
}

TEST(SymIntPrint, ExtremeConstantsRoundTrip) {
  for (SymInt value : {SymInt(INT64_MIN), SymInt(INT64_MAX), SymInt(INT64_MIN + 1),
                       s0 * INT64_MIN, s0 * INT64_MIN + INT64_MAX, s0 * INT64_MAX + INT64_MIN}) {
    EXPECT_EQ(parse_sym_int(value.to_string()), value) << value.to_string();
  }
  EXPECT_EQ(SymInt(INT64_MIN).to_string(), "-9223372036854775807 - 1");
}

TEST(SymIntPrint, Cpp) {
  EXPECT_EQ(SymInt(3).to_cpp(), "3");
  EXPECT_EQ((3 * s0 * s0 * s1 - 1).to_cpp(), "3*s0*s0*s1 - 1");
  EXPECT_EQ(floordiv(s0, 2).to_cpp(), "(s0 / 2)");
  EXPECT_EQ(floordiv(s0, s1).to_cpp(), "(s0 / s1)");
  EXPECT_EQ(floordiv(s0 + 1, 2).to_cpp(), "((s0 + 1) / 2)");
  EXPECT_EQ(floordiv(s0, s1 + 2).to_cpp(), "(s0 / (s1 + 2))");
  EXPECT_EQ(mod(s0, 4).to_cpp(), "(s0 % 4)");
  EXPECT_EQ((2 * mod(s0, 4)).to_cpp(), "2*(s0 % 4)");
  // Possibly negative operands need the floor-semantics helpers.
  EXPECT_EQ(floordiv(s0 - s1, 2).to_cpp(), "kiln_floordiv(s0 - s1, 2)");
  EXPECT_EQ(floordiv(-3, s0).to_cpp(), "kiln_floordiv(-3, s0)");
  EXPECT_EQ(floordiv(s0, s1 - 3).to_cpp(), "kiln_floordiv(s0, s1 - 3)");
  EXPECT_EQ(mod(s0 - s1, s2).to_cpp(), "kiln_mod(s0 - s1, s2)");
  EXPECT_EQ(mod(s0, s1 - s2).to_cpp(), "kiln_mod(s0, s1 - s2)");
  EXPECT_EQ((-floordiv(s0 - s1, 2)).to_cpp(), "-kiln_floordiv(s0 - s1, 2)");
  EXPECT_EQ(max(s0, 3).to_cpp(), "std::max<int64_t>(s0, 3)");
  EXPECT_EQ(min(s0, s1).to_cpp(), "std::min<int64_t>(s0, s1)");
  EXPECT_EQ(SymInt(INT64_MIN).to_cpp(), "-9223372036854775807 - 1");
}

// ---------------------------------------------------------------- evaluation, substitution

TEST(SymIntEvaluate, Values) {
  std::map<std::string, int64_t> bindings{{"s0", 7}, {"s1", 3}};
  EXPECT_EQ((s0 * s1 + 2).evaluate(bindings), 23);
  EXPECT_EQ(floordiv(s1 - s0, 2).evaluate(bindings), -2);
  EXPECT_EQ(mod(s1 - s0, 3).evaluate(bindings), 2);
  EXPECT_EQ(max(s0, s1 * 3).evaluate(bindings), 9);
  EXPECT_EQ(SymInt(5).evaluate({}), 5);
}

TEST(SymIntEvaluate, Errors) {
  try {
    (s0 + s1).evaluate({{"s0", 1}});
    FAIL() << "expected an error";
  } catch (const SymbolicError& error) {
    EXPECT_NE(std::string(error.what()).find("unbound symbol 's1'"), std::string::npos)
        << error.what();
  }
  try {
    floordiv(s0, s1).evaluate({{"s0", 1}, {"s1", 0}});
    FAIL() << "expected an error";
  } catch (const SymbolicError& error) {
    EXPECT_NE(std::string(error.what()).find("division by zero"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(mod(s0, s1).evaluate({{"s0", 1}, {"s1", 0}}), SymbolicError);
  EXPECT_THROW(s0.evaluate({{"s0", -1}}), SymbolicError);  // symbols are sizes
  EXPECT_THROW((s0 * s0).evaluate({{"s0", INT64_MAX}}), SymbolicError);  // overflow
  EXPECT_THROW(SymInt(INT64_MAX) + 1, SymbolicError);
}

TEST(SymIntSubstitute, ReplacesAndSimplifies) {
  EXPECT_EQ(floordiv(s0, 2).substitute({{"s0", 2 * s1}}), s1);
  EXPECT_EQ((s0 + s1).substitute({{"s0", s1 + 1}}), 2 * s1 + 1);
  EXPECT_EQ(max(s0, s1).substitute({{"s1", 0}}), s0);
  EXPECT_EQ((s0 * s1).substitute({{"s2", 5}}), s0 * s1);
  EXPECT_EQ((s0 * s0).substitute({{"s0", 3}}), 9);
  EXPECT_THROW(floordiv(s1, s0).substitute({{"s0", 0}}), SymbolicError);
}

// A divisor scaled by a constant: (128*x0 + x1)//(128*s0) with x1 < 128 is x0//s0, and the
// remainder 128*(x0 % s0) + x1 (a copy out of a permuted view of a symbolic batch); equal at every
// point of the bounds and sizes tried. A remainder outside [0, 128), a divisor with a constant
// term or a non-symbol factor, stay.
TEST(SymIntFoldWithBounds, FoldsDivisionsByAScaledSymbol) {
  SymInt x0 = SymInt::symbol("x0"), x1 = SymInt::symbol("x1");
  const std::map<std::string, int64_t> bounds = {{"x1", 128}};
  const SymInt quotient = floordiv(128 * x0 + x1, 128 * s0), remainder = mod(128 * x0 + x1, 128 * s0);
  EXPECT_EQ(quotient.fold_with_bounds(bounds), floordiv(x0, s0));
  EXPECT_EQ(remainder.fold_with_bounds(bounds), 128 * mod(x0, s0) + x1);
  EXPECT_EQ(floordiv(256 * x0 + 2 * x1 + 1, 256 * s0 * s1).fold_with_bounds(bounds), floordiv(x0, s0 * s1));
  for (int64_t size : {1, 3, 7})
    for (int64_t i : {0, 1, 5, 20})
      for (int64_t j : {0, 1, 127}) {
        const std::map<std::string, int64_t> at = {{"x0", i}, {"x1", j}, {"s0", size}};
        EXPECT_EQ(quotient.fold_with_bounds(bounds).evaluate(at), quotient.evaluate(at));
        EXPECT_EQ(remainder.fold_with_bounds(bounds).evaluate(at), remainder.evaluate(at));
      }
  EXPECT_EQ(quotient.fold_with_bounds({{"x1", 129}}), quotient);
  EXPECT_EQ(floordiv(128 * x0 + x1 + 5, 128 * s0).fold_with_bounds(bounds), floordiv(128 * x0 + x1 + 5, 128 * s0));
  EXPECT_EQ(floordiv(128 * x0 + x1, 128 * s0 + 1).fold_with_bounds(bounds), floordiv(128 * x0 + x1, 128 * s0 + 1));
  EXPECT_EQ(floordiv(128 * x0 + x1, 128 * max(s0, 1)).fold_with_bounds(bounds), floordiv(128 * x0 + x1, 128 * max(s0, 1)));
}

// Loop variables bounded to [0, size): a head split read back through //256 and % 256 is the
// affine index it walks; a quotient the bounds do not decide stays; an unbounded symbol stays.
TEST(SymIntFoldWithBounds, FoldsWhatTheBoundsDecide) {
  SymInt x1 = SymInt::symbol("x1"), x3 = SymInt::symbol("x3");
  std::map<std::string, int64_t> bounds = {{"x1", 4}, {"x3", 64}};
  SymInt flat = 64 * x1 + x3;
  EXPECT_EQ((768 * floordiv(flat, 256) + mod(flat, 256)).fold_with_bounds(bounds), flat);
  std::map<std::string, int64_t> three_heads = {{"x1", 3}, {"x3", 64}};
  EXPECT_EQ(floordiv(flat + 300, 256).fold_with_bounds(three_heads), 1);  // 300..491: quotient 1
  EXPECT_EQ(mod(flat + 300, 256).fold_with_bounds(three_heads), flat + 44);
  EXPECT_EQ(floordiv(flat + 300, 256).fold_with_bounds(bounds), floordiv(flat + 300, 256));  // 300..555
  EXPECT_EQ(floordiv(flat, 128).fold_with_bounds(bounds), floordiv(flat, 128));  // 0 or 1
  EXPECT_EQ(floordiv(flat, 128).fold_with_bounds({{"x1", 2}, {"x3", 64}}), 0);
  EXPECT_EQ(floordiv(flat + s0, 256).fold_with_bounds(bounds), floordiv(flat + s0, 256));
  // Nested: the inner fold decides the outer one.
  EXPECT_EQ(floordiv(mod(flat, 256) + 1, 512).fold_with_bounds(bounds), 0);
  // max/min ranges narrow with their operands.
  EXPECT_EQ(floordiv(max(x1, x3), 64).fold_with_bounds(bounds), 0);
  EXPECT_EQ(x1.fold_with_bounds({}), x1);
}

TEST(SymIntHashing, UnorderedSet) {
  std::unordered_set<SymInt, SymIntHash> set{s0 + s1, s1 + s0, 2 * s0, s0 * 2, SymInt(3)};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(set.count(SymInt(1) + 2), 1u);
}

// ---------------------------------------------------------------- parsing

TEST(SymIntParse, Basics) {
  EXPECT_EQ(parse_sym_int("s0"), s0);
  EXPECT_EQ(parse_sym_int("  42 "), 42);
  EXPECT_EQ(parse_sym_int("-3"), -3);
  EXPECT_EQ(parse_sym_int("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(parse_sym_int("2*s0*s1 + s0 + 3"), 2 * s0 * s1 + s0 + 3);
  EXPECT_EQ(parse_sym_int("(s0 + 1)//2"), floordiv(s0 + 1, 2));
  EXPECT_EQ(parse_sym_int("s0 % 4"), mod(s0, 4));
  EXPECT_EQ(parse_sym_int("max(s1, s0) - min(s0, 3)"), max(s0, s1) - min(s0, 3));
  EXPECT_EQ(parse_sym_int("s0**2*s1"), s0 * s0 * s1);
  EXPECT_EQ(parse_sym_int("2**3**2"), 512);  // ** is right-associative
}

TEST(SymIntParse, PythonPrecedence) {
  EXPECT_EQ(parse_sym_int("-s0//2"), floordiv(-s0, 2));  // unary minus binds tighter
  EXPECT_EQ(parse_sym_int("-7//2"), -4);
  EXPECT_EQ(parse_sym_int("-s0**2"), -(s0 * s0));  // ** binds tighter than unary minus
  EXPECT_EQ(parse_sym_int("s0*s1//s2"), floordiv(s0 * s1, s2));
  EXPECT_EQ(parse_sym_int("s0 - s1 - s2"), s0 - s1 - s2);
  EXPECT_EQ(parse_sym_int("s0 + s1 % 3 * 2"), s0 + mod(s1, 3) * 2);
}

void expect_parse_error(const std::string& text, size_t column, const std::string& fragment) {
  try {
    parse_sym_int(text);
    ADD_FAILURE() << "no error for \"" << text << "\"";
  } catch (const SymbolicError& error) {
    EXPECT_EQ(error.column(), std::optional<size_t>(column)) << text << ": " << error.what();
    std::string message = error.what();
    EXPECT_NE(message.find("column " + std::to_string(column)), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(SymIntParse, ErrorsNameTheColumn) {
  expect_parse_error("", 1, "expected an integer");
  expect_parse_error("s0 + * 2", 6, "expected an integer");
  expect_parse_error("(s0 + 1", 8, "expected ')'");
  expect_parse_error("s0 $ 1", 4, "unexpected '$'");
  expect_parse_error("s0 s1", 4, "unexpected 's'");
  expect_parse_error("s0 / 2", 4, "floor division is written '//'");
  expect_parse_error("foo(1, 2)", 1, "unknown function 'foo'");
  expect_parse_error("max(s0 s1)", 8, "expected ','");
  expect_parse_error("max + 1", 5, "expected '(' after max");
  expect_parse_error("99999999999999999999", 1, "out of int64 range");
  expect_parse_error("s0 // 0", 4, "division by zero");
  expect_parse_error("s0 % (s1 - s1)", 4, "division by zero");
  expect_parse_error("s0**s1", 3, "exponent");
  expect_parse_error("s0**65", 3, "above 64");
  expect_parse_error("9223372036854775807 + 1", 21, "overflow");
}

// ---------------------------------------------------------------- random expression trees

// An expression tree evaluated directly with Python integer semantics, the reference.
struct Tree {
  enum Op { kConstant, kSymbol, kAdd, kSub, kMul, kNeg, kFloorDiv, kMod, kMax, kMin };
  Op op = kConstant;
  int64_t value = 0;  // kConstant: the value; kSymbol: the index of the symbol
  std::shared_ptr<Tree> a, b;
};
using TreePtr = std::shared_ptr<Tree>;

const char* const kNames[] = {"s0", "s1", "s2"};

TreePtr random_tree(std::mt19937_64& rng, int depth) {
  auto tree = std::make_shared<Tree>();
  std::uniform_int_distribution<int> percent(0, 99);
  if (depth == 0 || percent(rng) < 25) {
    if (percent(rng) < 55) {
      tree->op = Tree::kSymbol;
      tree->value = std::uniform_int_distribution<int>(0, 2)(rng);
    } else {
      tree->op = Tree::kConstant;
      tree->value = std::uniform_int_distribution<int>(-6, 6)(rng);
    }
    return tree;
  }
  static const Tree::Op kOps[] = {Tree::kAdd,      Tree::kAdd, Tree::kSub, Tree::kMul,
                                  Tree::kMul,      Tree::kNeg, Tree::kFloorDiv,
                                  Tree::kFloorDiv, Tree::kMod, Tree::kMod, Tree::kMax,
                                  Tree::kMin};
  tree->op = kOps[std::uniform_int_distribution<size_t>(0, std::size(kOps) - 1)(rng)];
  tree->a = random_tree(rng, depth - 1);
  if (tree->op != Tree::kNeg) tree->b = random_tree(rng, depth - 1);
  return tree;
}

// The reference result: a value, or why there is none.
struct Outcome {
  enum Status { kValue, kDivisionByZero, kOverflow };
  Status status = kValue;
  int64_t value = 0;
};

int64_t python_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t python_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

Outcome evaluate_tree(const Tree& tree, const std::map<std::string, int64_t>& bindings) {
  switch (tree.op) {
    case Tree::kConstant:
      return {Outcome::kValue, tree.value};
    case Tree::kSymbol:
      return {Outcome::kValue, bindings.at(kNames[tree.value])};
    default:
      break;
  }
  Outcome a = evaluate_tree(*tree.a, bindings);
  if (a.status != Outcome::kValue) return a;
  if (tree.op == Tree::kNeg) {
    if (a.value == INT64_MIN) return {Outcome::kOverflow, 0};
    return {Outcome::kValue, -a.value};
  }
  Outcome b = evaluate_tree(*tree.b, bindings);
  if (b.status != Outcome::kValue) return b;
  int64_t result = 0;
  bool overflow = false;
  switch (tree.op) {
    case Tree::kAdd:
      overflow = __builtin_add_overflow(a.value, b.value, &result);
      break;
    case Tree::kSub:
      overflow = __builtin_sub_overflow(a.value, b.value, &result);
      break;
    case Tree::kMul:
      overflow = __builtin_mul_overflow(a.value, b.value, &result);
      break;
    case Tree::kFloorDiv:
    case Tree::kMod:
      if (b.value == 0) return {Outcome::kDivisionByZero, 0};
      if (b.value == -1) {
        overflow = tree.op == Tree::kFloorDiv && a.value == INT64_MIN;
        result = tree.op == Tree::kFloorDiv ? (overflow ? 0 : -a.value) : 0;
      } else {
        result = tree.op == Tree::kFloorDiv ? python_floordiv(a.value, b.value)
                                            : python_mod(a.value, b.value);
      }
      break;
    case Tree::kMax:
      result = std::max(a.value, b.value);
      break;
    case Tree::kMin:
      result = std::min(a.value, b.value);
      break;
    default:
      break;
  }
  if (overflow) return {Outcome::kOverflow, 0};
  return {Outcome::kValue, result};
}

SymInt to_sym(const Tree& tree) {
  switch (tree.op) {
    case Tree::kConstant:
      return tree.value;
    case Tree::kSymbol:
      return SymInt::symbol(kNames[tree.value]);
    case Tree::kNeg:
      return -to_sym(*tree.a);
    default:
      break;
  }
  SymInt a = to_sym(*tree.a), b = to_sym(*tree.b);
  switch (tree.op) {
    case Tree::kAdd:
      return a + b;
    case Tree::kSub:
      return a - b;
    case Tree::kMul:
      return a * b;
    case Tree::kFloorDiv:
      return floordiv(a, b);
    case Tree::kMod:
      return mod(a, b);
    case Tree::kMax:
      return max(a, b);
    case Tree::kMin:
      return min(a, b);
    default:
      return 0;
  }
}

std::string describe(const Tree& tree) {
  static const char* const kOpNames[] = {"", "", "+", "-", "*", "neg", "floordiv", "mod",
                                         "max", "min"};
  if (tree.op == Tree::kConstant) return std::to_string(tree.value);
  if (tree.op == Tree::kSymbol) return kNames[tree.value];
  std::string text = std::string(kOpNames[tree.op]) + "(" + describe(*tree.a);
  if (tree.b) text += ", " + describe(*tree.b);
  return text + ")";
}

// Evaluates to_cpp() output with C++ semantics (truncating / and %), calling Python-semantics
// kiln_floordiv / kiln_mod, so that the choice between the two is checked. Returns nullopt on
// division by zero or overflow.
class CppEvaluator {
 public:
  CppEvaluator(std::string text, const std::map<std::string, int64_t>& bindings)
      : text_(std::move(text)), bindings_(bindings) {}

  std::optional<int64_t> run() {
    std::optional<int64_t> value = sum();
    skip();
    if (position_ != text_.size()) throw std::runtime_error("trailing text in " + text_);
    return value;
  }

 private:
  void skip() {
    while (position_ < text_.size() && text_[position_] == ' ') ++position_;
  }
  bool accept(const std::string& token) {
    skip();
    if (text_.compare(position_, token.size(), token) != 0) return false;
    position_ += token.size();
    return true;
  }
  void expect(const std::string& token) {
    if (!accept(token)) throw std::runtime_error("expected " + token + " in " + text_);
  }

  static std::optional<int64_t> apply(char op, std::optional<int64_t> a, std::optional<int64_t> b) {
    if (!a || !b) return std::nullopt;
    int64_t result;
    switch (op) {
      case '+':
        if (__builtin_add_overflow(*a, *b, &result)) return std::nullopt;
        return result;
      case '-':
        if (__builtin_sub_overflow(*a, *b, &result)) return std::nullopt;
        return result;
      case '*':
        if (__builtin_mul_overflow(*a, *b, &result)) return std::nullopt;
        return result;
      case '/':
      case '%':
      case 'f':
      case 'm':
        if (*b == 0 || (*a == INT64_MIN && *b == -1)) return std::nullopt;
        if (op == '/') return *a / *b;
        if (op == '%') return *a % *b;
        return op == 'f' ? python_floordiv(*a, *b) : python_mod(*a, *b);
      case '>':
        return std::max(*a, *b);
      case '<':
        return std::min(*a, *b);
    }
    return std::nullopt;
  }

  std::optional<int64_t> sum() {
    std::optional<int64_t> value = product();
    while (true) {
      if (accept("+")) {
        value = apply('+', value, product());
      } else if (accept("-")) {
        value = apply('-', value, product());
      } else {
        return value;
      }
    }
  }

  std::optional<int64_t> product() {
    std::optional<int64_t> value = unary();
    while (true) {
      if (accept("*")) {
        value = apply('*', value, unary());
      } else if (accept("/")) {
        value = apply('/', value, unary());
      } else if (accept("%")) {
        value = apply('%', value, unary());
      } else {
        return value;
      }
    }
  }

  std::optional<int64_t> unary() {
    if (accept("-")) return apply('-', 0, unary());
    return primary();
  }

  std::optional<int64_t> call(char op) {
    expect("(");
    std::optional<int64_t> a = sum();
    expect(",");
    std::optional<int64_t> b = sum();
    expect(")");
    return apply(op, a, b);
  }

  std::optional<int64_t> primary() {
    skip();
    if (accept("(")) {
      std::optional<int64_t> value = sum();
      expect(")");
      return value;
    }
    if (accept("kiln_floordiv")) return call('f');
    if (accept("kiln_mod")) return call('m');
    if (accept("std::max<int64_t>")) return call('>');
    if (accept("std::min<int64_t>")) return call('<');
    size_t start = position_;
    auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    while (position_ < text_.size() && word_char(text_[position_])) ++position_;
    std::string token = text_.substr(start, position_ - start);
    if (token.empty()) throw std::runtime_error("bad C++ expression " + text_);
    if (std::isdigit(static_cast<unsigned char>(token[0]))) return std::stoll(token);
    return bindings_.at(token);
  }

  std::string text_;
  const std::map<std::string, int64_t>& bindings_;
  size_t position_ = 0;
};

std::map<std::string, int64_t> random_bindings(std::mt19937_64& rng) {
  std::uniform_int_distribution<int64_t> size(0, 9);
  return {{"s0", size(rng)}, {"s1", size(rng)}, {"s2", size(rng)}};
}

constexpr int kTrees = 2000;
constexpr int kDepth = 4;

// Builds the SymInt of each tree (nullopt when construction itself divides by the constant
// 0, which the reference must then also fail on) and hands both to `check`.
void for_random_trees(uint64_t seed,
                      const std::function<void(const Tree&, const SymInt&)>& check) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < kTrees; ++i) {
    TreePtr tree = random_tree(rng, kDepth);
    std::optional<SymInt> sym;
    try {
      sym = to_sym(*tree);
    } catch (const SymbolicError& error) {
      // Only an identically-zero divisor (or an overflow) stops construction.
      Outcome outcome = evaluate_tree(*tree, random_bindings(rng));
      EXPECT_NE(outcome.status, Outcome::kValue) << describe(*tree) << ": " << error.what();
      continue;
    }
    check(*tree, *sym);
    if (testing::Test::HasFailure()) return;  // one failing tree is enough to read
  }
}

TEST(SymIntRandom, EvaluateMatchesDirectComputation) {
  int compared = 0, skipped = 0;
  for_random_trees(20240611, [&](const Tree& tree, const SymInt& sym) {
    std::mt19937_64 rng(std::hash<std::string>{}(describe(tree)));
    for (int b = 0; b < 4; ++b) {
      std::map<std::string, int64_t> bindings = random_bindings(rng);
      Outcome expected = evaluate_tree(tree, bindings);
      if (expected.status != Outcome::kValue) {
        ++skipped;
        continue;
      }
      try {
        EXPECT_EQ(sym.evaluate(bindings), expected.value)
            << describe(tree) << " simplified to " << sym.to_string() << " with s0="
            << bindings["s0"] << " s1=" << bindings["s1"] << " s2=" << bindings["s2"];
        ++compared;
      } catch (const SymbolicError& error) {
        // The expanded form may overflow where the tree did not; anything else is a bug.
        EXPECT_NE(std::string(error.what()).find("overflow"), std::string::npos)
            << describe(tree) << ": " << error.what();
        ++skipped;
      }
    }
  });
  EXPECT_GT(compared, 6000) << "skipped " << skipped;
}

TEST(SymIntRandom, PrintParseRoundTrip) {
  for_random_trees(20240611, [](const Tree& tree, const SymInt& sym) {
    std::string text = sym.to_string();
    SymInt parsed;
    try {
      parsed = parse_sym_int(text);
    } catch (const SymbolicError& error) {
      ADD_FAILURE() << describe(tree) << " printed as " << text << ": " << error.what();
      return;
    }
    EXPECT_EQ(parsed, sym) << describe(tree) << " printed as " << text << " parsed as "
                           << parsed.to_string();
    EXPECT_EQ(parsed.to_string(), text);
    EXPECT_EQ(parsed.hash(), sym.hash());
  });
}

TEST(SymIntRandom, CppMatchesEvaluate) {
  int compared = 0;
  for_random_trees(7, [&](const Tree& tree, const SymInt& sym) {
    std::mt19937_64 rng(std::hash<std::string>{}(describe(tree)));
    std::string cpp = sym.to_cpp();
    for (int b = 0; b < 4; ++b) {
      std::map<std::string, int64_t> bindings = random_bindings(rng);
      int64_t expected;
      try {
        expected = sym.evaluate(bindings);
      } catch (const SymbolicError&) {
        continue;
      }
      std::optional<int64_t> actual = CppEvaluator(cpp, bindings).run();
      if (!actual) continue;  // the C++ form overflows or divides by zero in a dead branch
      EXPECT_EQ(*actual, expected) << sym.to_string() << " as C++ " << cpp;
      ++compared;
    }
  });
  EXPECT_GT(compared, 6000);
}

TEST(SymIntRandom, AlgebraicIdentitiesHold) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 500; ++i) {
    try {
      SymInt a = to_sym(*random_tree(rng, 3));
      SymInt b = to_sym(*random_tree(rng, 3));
      SymInt c = to_sym(*random_tree(rng, 2));
      EXPECT_EQ(a + b, b + a) << a << " | " << b;
      EXPECT_EQ(a * b, b * a) << a << " | " << b;
      EXPECT_EQ((a + b) + c, a + (b + c)) << a << " | " << b << " | " << c;
      EXPECT_EQ(a * (b + c), a * b + a * c) << a << " | " << b << " | " << c;
      EXPECT_EQ(a - a, 0) << a;
      EXPECT_EQ(max(a, b), max(b, a)) << a << " | " << b;
      EXPECT_EQ(min(a, b), min(b, a)) << a << " | " << b;
      EXPECT_EQ(max(max(a, b), c), max(a, max(b, c))) << a << " | " << b << " | " << c;
      EXPECT_EQ(floordiv(6 * a + 12, 6), a + 2) << a;
      EXPECT_EQ(mod(5 * a, 5), 0) << a;
    } catch (const SymbolicError&) {
      // Construction divided by the constant 0 or overflowed: nothing to compare.
    }
  }
}

TEST(SymIntRandom, SubstituteMatchesEvaluate) {
  int compared = 0;
  for_random_trees(31337, [&](const Tree& tree, const SymInt& sym) {
    // s0 := s1 + s2 + 1, checked against evaluating the tree with s0 bound to that value.
    SymInt replaced;
    try {
      replaced = sym.substitute({{"s0", s1 + s2 + 1}});
    } catch (const SymbolicError&) {
      return;  // a divisor became the constant 0, or an overflow
    }
    std::mt19937_64 rng(std::hash<std::string>{}(describe(tree)));
    for (int b = 0; b < 3; ++b) {
      std::map<std::string, int64_t> bindings = random_bindings(rng);
      bindings["s0"] = bindings["s1"] + bindings["s2"] + 1;
      Outcome expected = evaluate_tree(tree, bindings);
      if (expected.status != Outcome::kValue) continue;
      try {
        EXPECT_EQ(replaced.evaluate(bindings), expected.value)
            << describe(tree) << " became " << replaced.to_string();
        ++compared;
      } catch (const SymbolicError&) {
      }
    }
  });
  EXPECT_GT(compared, 4000);
}

// Every random expression, folded with s0 < 3 and s1 < 5, equals itself for every binding
// within those bounds (s2 unbounded).
TEST(SymIntRandom, FoldWithBoundsMatchesEvaluateWithinTheBounds) {
  int compared = 0, folded = 0;
  for_random_trees(4242, [&](const Tree& tree, const SymInt& sym) {
    SymInt result;
    try {
      result = sym.fold_with_bounds({{"s0", 3}, {"s1", 5}});
    } catch (const SymbolicError&) {
      return;  // an overflow while rebuilding
    }
    if (!(result == sym)) ++folded;
    for (int64_t a = 0; a < 3; ++a) {
      for (int64_t b = 0; b < 5; ++b) {
        std::map<std::string, int64_t> bindings = {{"s0", a}, {"s1", b}, {"s2", (a * 7 + b * 3) % 10}};
        Outcome expected = evaluate_tree(tree, bindings);
        if (expected.status != Outcome::kValue) continue;
        try {
          EXPECT_EQ(result.evaluate(bindings), expected.value)
              << describe(tree) << " folded to " << result.to_string() << " at s0=" << a << " s1=" << b;
          ++compared;
        } catch (const SymbolicError&) {
        }
      }
    }
  });
  EXPECT_GT(compared, 10000);
  EXPECT_GT(folded, 20);  // the bounds decided something in enough of the trees
}

}  // namespace
}  // namespace kiln::ir
