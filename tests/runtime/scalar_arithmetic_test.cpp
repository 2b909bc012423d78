// runtime/scalar_arithmetic.h: Python's and PyTorch's division semantics, the one definition the
// reference kernels, the loop evaluator and symbolic sizes share. Expected values are Python's
// own (`-7 // 2 == -4`, `-7 % 2 == 1`, `7 % -2 == -1`, `math.fmod` vs `%`), and torch's for the
// wrapping and NaN cases.
#include "runtime/scalar_arithmetic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kiln {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

TEST(ScalarArithmetic, IntegerDivisionRoundsLikePythonAndC) {
  EXPECT_EQ(int_floor_divide(-7, 2), -4);
  EXPECT_EQ(int_floor_divide(7, -2), -4);
  EXPECT_EQ(int_floor_divide(-8, 2), -4);
  EXPECT_EQ(int_floor_divide(7, 2), 3);
  EXPECT_EQ(int_truncate_divide(-7, 2), -3);
  EXPECT_EQ(int_truncate_divide(7, -2), -3);
}

TEST(ScalarArithmetic, RemaindersTakeTheDivisorsOrTheDividendsSign) {
  EXPECT_EQ(int_floor_mod(-7, 2), 1);
  EXPECT_EQ(int_floor_mod(7, -2), -1);
  EXPECT_EQ(int_floor_mod(-8, 2), 0);
  EXPECT_EQ(int_c_remainder(-7, 2), -1);
  EXPECT_EQ(int_c_remainder(7, -2), 1);
}

TEST(ScalarArithmetic, MinOverMinusOneWrapsInsteadOfTrapping) {
  EXPECT_EQ(int_floor_divide(kMin, -1), kMin);
  EXPECT_EQ(int_truncate_divide(kMin, -1), kMin);
  EXPECT_EQ(int_floor_mod(kMin, -1), 0);
  EXPECT_EQ(int_c_remainder(kMin, -1), 0);
  EXPECT_EQ(wrapping_negate(kMin), kMin);
}

TEST(ScalarArithmetic, IntegerPowerWrapsAndHandlesNegativeExponents) {
  EXPECT_EQ(int_pow(3, 4), 81);
  EXPECT_EQ(int_pow(-2, 3), -8);
  EXPECT_EQ(int_pow(2, 64), 0);  // wraps, as torch.pow on int64
  EXPECT_EQ(int_pow(2, -1), 0);
  EXPECT_EQ(int_pow(-1, -3), -1);
  EXPECT_EQ(int_pow(1, -5), 1);
}

TEST(ScalarArithmetic, FloatingFloorDivisionAndRemainder) {
  EXPECT_EQ(floor_divide(-7.0, 2.0), -4.0);
  EXPECT_EQ(floor_divide(7.5, 2.0), 3.0);
  EXPECT_TRUE(std::signbit(floor_divide(-0.0, 3.0)));
  EXPECT_TRUE(std::isinf(floor_divide(1.0, 0.0)));
  EXPECT_EQ(python_fmod(-7.0, 2.0), 1.0);
  EXPECT_EQ(python_fmod(7.0, -2.0), -1.0);
  EXPECT_EQ(python_fmod(5.5, 2.0), 1.5);
}

TEST(ScalarArithmetic, MaximumAndMinimumPropagateNaN) {
  EXPECT_TRUE(std::isnan(nan_max(1.0, std::nan(""))));
  EXPECT_TRUE(std::isnan(nan_min(std::nan(""), 1.0)));
  EXPECT_EQ(nan_max(1.0, 2.0), 2.0);
  EXPECT_EQ(nan_min(1.0, 2.0), 1.0);
}

}  // namespace
}  // namespace kiln
