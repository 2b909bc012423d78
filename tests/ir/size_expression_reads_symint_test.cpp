// The runtime's reader of printed sizes (runtime/size_expression.h) against the printer it reads
// (ir::SymInt::to_string, ir/symbolic.h): random symbolic integers, printed, parsed by the
// runtime and evaluated under random sizes, give SymInt::evaluate's value (or both refuse).
// The CUDA launch plan carries every size in this printed form.
#include <gtest/gtest.h>

#include <random>

#include "ir/symbolic.h"
#include "kiln/error.h"
#include "runtime/size_expression.h"

namespace kiln {
namespace {

using ir::SymInt;

const std::vector<std::string> kSymbols = {"s0", "s1", "s2"};

SymInt random_sym(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> percent(0, 99);
  if (depth == 0 || percent(rng) < 25) {
    if (percent(rng) < 55) return SymInt::symbol(kSymbols[std::uniform_int_distribution<size_t>(0, 2)(rng)]);
    return SymInt(std::uniform_int_distribution<int64_t>(-6, 6)(rng));
  }
  SymInt a = random_sym(rng, depth - 1), b = random_sym(rng, depth - 1);
  switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return -a;
    case 4: return b.maybe_constant() == 0 ? a : ir::floordiv(a, b);
    case 5: return b.maybe_constant() == 0 ? a : ir::mod(a, b);
    case 6: return ir::max(a, b);
    default: return ir::min(a, b);
  }
}

TEST(SizeExpressionReadsSymInt, RandomExpressionsEvaluateAlike) {
  std::mt19937_64 rng(20251201);
  int compared = 0, printed_powers = 0;
  for (int i = 0; i < 3000; ++i) {
    SymInt sym;
    try {
      sym = random_sym(rng, 4);
    } catch (const ir::SymbolicError&) {
      continue;  // construction overflowed, or divided by an expression that folded to 0
    }
    std::string text = sym.to_string();
    printed_powers += text.find("**") != std::string::npos;
    SizeExpression expression = SizeExpression::parse(text, kSymbols, "test");
    EXPECT_EQ(expression.is_constant(), sym.is_constant()) << text;
    for (int b = 0; b < 4; ++b) {
      std::uniform_int_distribution<int64_t> size(0, 9);
      std::vector<int64_t> values = {size(rng), size(rng), size(rng)};
      std::map<std::string, int64_t> bindings = {{"s0", values[0]}, {"s1", values[1]}, {"s2", values[2]}};
      int64_t expected = 0;
      try {
        expected = sym.evaluate(bindings);
      } catch (const ir::SymbolicError&) {
        EXPECT_THROW(expression.evaluate(values), Error) << text;  // division by zero or overflow both ways
        continue;
      }
      EXPECT_EQ(expression.evaluate(values), expected) << text << " with s0=" << values[0] << " s1=" << values[1]
                                                       << " s2=" << values[2];
      ++compared;
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(compared, 8000);
  EXPECT_GT(printed_powers, 50);  // the printer's ** form is read too
}

}  // namespace
}  // namespace kiln
