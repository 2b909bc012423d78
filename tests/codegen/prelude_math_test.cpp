// Accuracy of the prelude's float math (codegen/cpp/kiln_prelude.h) as this test binary is
// compiled (no FMA, no contraction): the error in ulps against double-precision libm over a
// stride through every float bit pattern, an even grid over each function's main domain and
// the special values, checked against the bound the prelude states; the special values
// themselves; and pow over random and special operands. prelude_compile_test.cpp repeats the
// sweep with generated code's flags (-O3 -march=native, FMA, vectorized).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <random>

#include "tests/codegen/prelude_functions.h"
#include "tests/codegen/prelude_ulp.h"

namespace kiln::prelude_test {
namespace {

std::string describe(const ErrorStats& stats) {
  char text[200];
  std::snprintf(text, sizeof(text), "max %.4f ulp at x = %a (got %a, exact %a) over %llu points", stats.max_ulp,
                double(stats.worst_input), double(stats.worst_result), stats.worst_exact,
                static_cast<unsigned long long>(stats.points));
  return text;
}

class PreludeAccuracyTest : public ::testing::TestWithParam<UnaryFunction> {};

}  // namespace

// Names the parameter in test output (found by argument-dependent lookup).
void PrintTo(const UnaryFunction& function, std::ostream* out) { *out << "kiln_" << function.name; }

namespace {

TEST_P(PreludeAccuracyTest, WithinStatedUlpBound) {
  const UnaryFunction& function = GetParam();
  // A stride through all 2^32 bit patterns (17 million floats, both signs, NaNs included),
  // four million evenly spaced points over the main domain, and the special values.
  ErrorStats stride = measure(within_domain(bit_stride_inputs(251), function.max_magnitude), function.approx,
                              function.exact, function.absolute_unit);
  ErrorStats grid = measure(even_grid(function.grid_low, function.grid_high, 4'000'000), function.approx,
                            function.exact, function.absolute_unit);
  ErrorStats special = measure(within_domain(special_inputs(), function.max_magnitude), function.approx,
                               function.exact, function.absolute_unit);
  std::printf("kiln_%-8s stride: %s\n           grid:   %s\n           special: %s\n", function.name,
              describe(stride).c_str(), describe(grid).c_str(), describe(special).c_str());
  EXPECT_LE(stride.max_ulp, function.bound_ulp) << describe(stride);
  EXPECT_LE(grid.max_ulp, function.bound_ulp) << describe(grid);
  EXPECT_LE(special.max_ulp, function.bound_ulp) << describe(special);
}

INSTANTIATE_TEST_SUITE_P(Functions, PreludeAccuracyTest, ::testing::ValuesIn(unary_functions()),
                         [](const ::testing::TestParamInfo<UnaryFunction>& param) { return std::string(param.param.name); });

// Each special value stated in the prelude's header, spelled out.
TEST(PreludeSpecialValues, MatchC) {
  auto same = [](float actual, float expected) {
    if (std::isnan(expected)) return std::isnan(actual);
    return actual == expected && std::signbit(actual) == std::signbit(expected);
  };
  const float inf = INFINITY, nan = NAN;
  struct Case {
    const char* what;
    float actual, expected;
  };
  const Case cases[] = {
      {"exp(-inf)", kiln_exp(-inf), 0.0f},       {"exp(inf)", kiln_exp(inf), inf},
      {"exp(nan)", kiln_exp(nan), nan},          {"exp(89)", kiln_exp(89.0f), inf},
      {"exp(-104)", kiln_exp(-104.0f), 0.0f},    {"exp(-0)", kiln_exp(-0.0f), 1.0f},
      {"expm1(-inf)", kiln_expm1(-inf), -1.0f},
      {"expm1(inf)", kiln_expm1(inf), inf},      {"expm1(-0)", kiln_expm1(-0.0f), -0.0f},
      {"expm1(89)", kiln_expm1(89.0f), inf},     {"expm1(nan)", kiln_expm1(nan), nan},
      {"log(0)", kiln_log(0.0f), -inf},          {"log(-0)", kiln_log(-0.0f), -inf},
      {"log(-1)", kiln_log(-1.0f), nan},         {"log(-inf)", kiln_log(-inf), nan},
      {"log(inf)", kiln_log(inf), inf},          {"log(1)", kiln_log(1.0f), 0.0f},
      {"log(nan)", kiln_log(nan), nan},          {"log1p(-1)", kiln_log1p(-1.0f), -inf},
      {"log1p(-2)", kiln_log1p(-2.0f), nan},     {"log1p(-0)", kiln_log1p(-0.0f), -0.0f},
      {"log1p(inf)", kiln_log1p(inf), inf},      {"log1p(nan)", kiln_log1p(nan), nan},
      {"sigmoid(inf)", kiln_sigmoid(inf), 1.0f}, {"sigmoid(-inf)", kiln_sigmoid(-inf), 0.0f},
      {"sigmoid(nan)", kiln_sigmoid(nan), nan},  {"tanh(inf)", kiln_tanh(inf), 1.0f},
      {"tanh(-inf)", kiln_tanh(-inf), -1.0f},    {"tanh(-0)", kiln_tanh(-0.0f), -0.0f},
      {"tanh(nan)", kiln_tanh(nan), nan},        {"erf(inf)", kiln_erf(inf), 1.0f},
      {"erf(-inf)", kiln_erf(-inf), -1.0f},      {"erf(-0)", kiln_erf(-0.0f), -0.0f},
      {"erf(nan)", kiln_erf(nan), nan},          {"sin(-0)", kiln_sin(-0.0f), -0.0f},
      {"one_plus_erf(inf)", kiln_one_plus_erf(inf), 2.0f},
      {"one_plus_erf(-inf)", kiln_one_plus_erf(-inf), 0.0f},
      {"one_plus_erf(-0)", kiln_one_plus_erf(-0.0f), 1.0f},
      {"one_plus_erf(nan)", kiln_one_plus_erf(nan), nan},
      {"sin(inf)", kiln_sin(inf), nan},          {"sin(nan)", kiln_sin(nan), nan},
      {"cos(-0)", kiln_cos(-0.0f), 1.0f},        {"cos(-inf)", kiln_cos(-inf), nan},
      {"erfinv(1)", kiln_erfinv(1.0f), inf},     {"erfinv(-1)", kiln_erfinv(-1.0f), -inf},
      {"erfinv(-0)", kiln_erfinv(-0.0f), -0.0f}, {"erfinv(0)", kiln_erfinv(0.0f), 0.0f},
      {"erfinv(1.5)", kiln_erfinv(1.5f), nan},   {"erfinv(-inf)", kiln_erfinv(-inf), nan},
      {"erfinv(nan)", kiln_erfinv(nan), nan},
  };
  for (const Case& c : cases)
    EXPECT_TRUE(same(c.actual, c.expected)) << c.what << " = " << c.actual << " (" << std::hexfloat << c.actual
                                            << "), expected " << c.expected;
  // Overflow and underflow boundaries: the largest float whose exp is finite, and results in
  // the subnormal range (not flushed to zero).
  EXPECT_TRUE(std::isfinite(kiln_exp(0x1.62e42ep+6f)));
  EXPECT_TRUE(std::isinf(kiln_exp(0x1.62e430p+6f)));
  EXPECT_TRUE(std::isfinite(kiln_expm1(0x1.62e42ep+6f)));
  EXPECT_TRUE(std::isinf(kiln_expm1(0x1.62e430p+6f)));
  EXPECT_GT(kiln_exp(-103.9f), 0.0f);
  EXPECT_GT(kiln_sigmoid(-100.0f), 0.0f);
  EXPECT_LT(kiln_sigmoid(-100.0f), 0x1p-126f);
  EXPECT_LE(ulp_error(kiln_log(0x1p-149f), std::log(0x1p-149)), 1.0);
}

// Beyond the reduction domain sin and cos stay finite and bounded.
TEST(PreludeSpecialValues, SinCosBeyondTheirDomainStayInRange) {
  for (float x : {5e8f, -7.3e12f, 1e30f, 3.4e38f, -3.4e38f}) {
    EXPECT_LE(std::fabs(kiln_sin(x)), 1.0f) << x;
    EXPECT_LE(std::fabs(kiln_cos(x)), 1.0f) << x;
  }
}

// erfinv's steepest part: every float within 2^16 ulps of +-1 (the sweeps above reach few).
TEST(PreludeErfinv, FloatsNearOneWithinStatedBound) {
  std::vector<float> inputs;
  for (uint32_t bits = 0x3f7f0000u; bits < 0x3f800000u; ++bits) {
    inputs.push_back(float_from_bits(bits));
    inputs.push_back(-float_from_bits(bits));
  }
  ErrorStats stats = measure(inputs, [](float x) { return kiln_erfinv(x); },
                             [](double x) { return ir::kernels::erfinv(x); });
  std::printf("kiln_erfinv near +-1: %s\n", describe(stats).c_str());
  EXPECT_LE(stats.max_ulp, 1.0) << describe(stats);
}

// The double kiln_erfinv (f64 programs) agrees with the interpreter's within 3 double ulps (each
// is within about 1 ulp of the exact value; they start from different estimates), from the
// middle of the range to the doubles closest to 1.
TEST(PreludeErfinv, DoubleVersionAgreesWithTheInterpreter) {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> inputs = {0.5, -0.5, 0x1p-1074, -0x1p-1000, 1e-300, 0.25};
  for (int i = 0; i < 200'000; ++i) inputs.push_back(uniform(random));
  for (int k = 1; k <= 53; ++k) {
    inputs.push_back(1.0 - std::ldexp(1.0, -k));
    inputs.push_back(-1.0 + std::ldexp(1.0, -k));
  }
  double worst = 0, worst_input = 0;
  for (double x : inputs) {
    double exact = ir::kernels::erfinv(x), got = kiln_erfinv(x);
    double ulp = std::nextafter(std::fabs(exact), INFINITY) - std::fabs(exact);
    double error = std::fabs(got - exact) / ulp;
    if (!(error <= worst)) {
      worst = error;
      worst_input = x;
    }
  }
  std::printf("kiln_erfinv(double): max %.3f ulp from the interpreter's at x = %a\n", worst, worst_input);
  EXPECT_LE(worst, 3.0) << "at x = " << std::hexfloat << worst_input;
  EXPECT_TRUE(std::isinf(kiln_erfinv(1.0)) && kiln_erfinv(-1.0) < 0 && std::isnan(kiln_erfinv(1.0000001)));
  EXPECT_TRUE(std::signbit(kiln_erfinv(-0.0)) && std::isnan(kiln_erfinv(std::nan(""))));
}

// pow against the double libm result: random operands of every kind, operands that give
// finite moderate results, and every pair of special values (exact, with C's special cases).
TEST(PreludePow, WithinOneUlpOfLibm) {
  std::mt19937_64 random(20261129);
  ErrorStats stats;
  auto check = [&](float x, float y) { stats.add(x, kiln_pow(x, y), std::pow(double(x), double(y))); };
  for (int i = 0; i < 2'000'000; ++i) check(float_from_bits(uint32_t(random())), float_from_bits(uint32_t(random())));
  std::uniform_real_distribution<float> mantissa(0.5f, 1.0f);
  for (int i = 0; i < 2'000'000; ++i) {
    float x = std::ldexp(mantissa(random), int(random() % 40) - 20) * ((random() & 1) ? -1.0f : 1.0f);
    float y = float(int64_t(random() % 20001) - 10000) / float(1 << (random() % 12));
    check(x, y);
  }
  for (int i = 0; i < 1'000'000; ++i) check(std::ldexp(mantissa(random), 1), std::ldexp(mantissa(random), 7));
  std::printf("kiln_pow: %s\n", describe(stats).c_str());
  EXPECT_LE(stats.max_ulp, 1.0) << describe(stats);

  std::vector<float> specials = special_inputs();
  for (float extra : {3.0f, -3.0f, 0.25f, -0.25f, 1.5f, -1.5f, 16777216.0f, -16777215.0f, 127.0f, 128.0f, -149.0f,
                      -150.0f})
    specials.push_back(extra);
  for (float x : specials)
    for (float y : specials) {
      float actual = kiln_pow(x, y), expected = float(std::pow(double(x), double(y)));
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(actual)) << "pow(" << x << ", " << y << ")";
      } else {
        EXPECT_LE(ulp_error(actual, std::pow(double(x), double(y))), 1.0) << "pow(" << x << ", " << y << ") = " << actual;
        if (expected == 0.0f || std::isinf(expected)) {
          EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << "pow(" << x << ", " << y << ")";
        }
      }
    }
}

}  // namespace
}  // namespace kiln::prelude_test
