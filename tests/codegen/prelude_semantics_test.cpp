// The prelude's exact operations (codegen/cpp/kiln_prelude.h) against Kiln's interpreter
// itself: rounding (floor, ceil, round half to even, trunc), sign, relu, rsqrt, NaN-propagating
// maximum/minimum and the reduction accumulators, float division with rounding modes, fmod
// and Python remainder, integer division and remainder (INT_MIN / -1 included), and
// float-to-int64 saturation. Every operand pair of a list of special, tie and random values
// runs through the reference kernels; the prelude must give the same bits (any NaN for NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "codegen/cpp/kiln_prelude.h"
#include "tests/ir/reference_test_support.h"

namespace kiln {
namespace {

using ir::testing::OpRunner;

std::vector<float> float_operands() {
  std::vector<float> values = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 0.5f, -0.5f, 1.5f, -1.5f,
                               2.5f, -2.5f, 3.0f, -3.0f, 7.0f, -7.0f, 0.1f, -0.1f, 1e-3f, 0x1p-149f, -0x1p-149f,
                               0x1p-126f, 3.4028235e38f, -3.4028235e38f, 8388607.5f, -8388607.5f, 8388608.0f,
                               16777215.0f, 1e20f, -1e20f, 0.999999f, 1.000001f, 2.0000002f, -2.9999998f};
  std::mt19937 random(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int i = 0; i < 60; ++i) values.push_back(std::ldexp(unit(random), int(random() % 60) - 30));
  for (int i = 0; i < 20; ++i) values.push_back(float(int(random() % 41) - 20) * 0.25f);
  return values;
}

Tensor f32_tensor(const std::vector<float>& values) {
  Tensor tensor = Tensor::empty({int64_t(values.size())}, DType::f32);
  std::memcpy(tensor.data_ptr(), values.data(), values.size() * sizeof(float));
  return tensor;
}
template <typename T>
Tensor int_tensor(const std::vector<T>& values, DType dtype) {
  Tensor tensor = Tensor::empty({int64_t(values.size())}, dtype);
  std::memcpy(tensor.data_ptr(), values.data(), values.size() * sizeof(T));
  return tensor;
}

bool same_float(float actual, float expected) {
  if (std::isnan(expected)) return std::isnan(actual);
  uint32_t a, e;
  std::memcpy(&a, &actual, 4);
  std::memcpy(&e, &expected, 4);
  return a == e;
}

// Every ordered pair of the operands, as two flat tensors.
struct Pairs {
  std::vector<float> a, b;
};
Pairs all_pairs(const std::vector<float>& values) {
  Pairs pairs;
  for (float x : values)
    for (float y : values) {
      pairs.a.push_back(x);
      pairs.b.push_back(y);
    }
  return pairs;
}

void expect_unary(const std::string& op, float (*prelude)(float)) {
  std::vector<float> values = float_operands();
  OpRunner runner;
  Tensor result = runner.run1(op, {runner.input(f32_tensor(values))});
  ASSERT_EQ(result.dtype(), DType::f32);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_TRUE(same_float(prelude(values[i]), result.data<float>()[i]))
        << op << "(" << std::hexfloat << values[i] << ") = " << prelude(values[i]) << ", interpreter "
        << result.data<float>()[i];
}

void expect_binary(const std::string& op, float (*prelude)(float, float), ir::Kwargs kwargs = {}) {
  Pairs pairs = all_pairs(float_operands());
  OpRunner runner;
  Tensor result = runner.run1(op, {runner.input(f32_tensor(pairs.a)), runner.input(f32_tensor(pairs.b))}, kwargs);
  ASSERT_EQ(result.dtype(), DType::f32);
  int mismatches = 0;
  for (size_t i = 0; i < pairs.a.size(); ++i) {
    float actual = prelude(pairs.a[i], pairs.b[i]), expected = result.data<float>()[i];
    if (!same_float(actual, expected) && ++mismatches <= 10)
      ADD_FAILURE() << op << "(" << std::hexfloat << pairs.a[i] << ", " << pairs.b[i] << ") = " << actual
                    << ", interpreter " << expected;
  }
  EXPECT_EQ(mismatches, 0) << op << " over " << pairs.a.size() << " pairs";
}

TEST(PreludeSemantics, RoundingSignReluRsqrtMatchTheInterpreter) {
  expect_unary("floor", [](float x) { return kiln_floor(x); });
  expect_unary("ceil", [](float x) { return kiln_ceil(x); });
  expect_unary("round", [](float x) { return kiln_round(x); });
  expect_unary("sign", [](float x) { return kiln_sign(x); });
  expect_unary("relu", [](float x) { return kiln_relu(x); });
  expect_unary("rsqrt", [](float x) { return kiln_rsqrt(x); });
  expect_unary("sqrt", [](float x) { return kiln_sqrt(x); });
}

TEST(PreludeSemantics, FloatDivisionAndRemainderMatchTheInterpreter) {
  expect_binary("div", [](float a, float b) { return kiln_div_trunc(a, b); }, {{"rounding_mode", "trunc"}});
  expect_binary("div", [](float a, float b) { return kiln_div_floor(a, b); }, {{"rounding_mode", "floor"}});
  expect_binary("fmod", [](float a, float b) { return kiln_fmod(a, b); });
  expect_binary("remainder", [](float a, float b) { return kiln_remainder(a, b); });
}

TEST(PreludeSemantics, MaximumMinimumMatchTheInterpreter) {
  expect_binary("maximum", [](float a, float b) { return kiln_maximum(a, b); });
  expect_binary("minimum", [](float a, float b) { return kiln_minimum(a, b); });
}

TEST(PreludeSemantics, DoubleOverloadsMatchTheInterpreter) {
  std::vector<float> floats = float_operands();
  Pairs pairs = all_pairs(floats);
  std::vector<double> a(pairs.a.begin(), pairs.a.end()), b(pairs.b.begin(), pairs.b.end());
  for (double& x : a) x *= 1.0000000001;  // values a float cannot hold
  OpRunner trunc_runner, floor_runner, remainder_runner;
  Tensor ta = Tensor::from_vector({int64_t(a.size())}, a, DType::f64), tb = Tensor::from_vector({int64_t(b.size())}, b, DType::f64);
  Tensor trunc = trunc_runner.run1("div", {trunc_runner.input(ta), trunc_runner.input(tb)}, {{"rounding_mode", "trunc"}});
  Tensor floor = floor_runner.run1("div", {floor_runner.input(ta), floor_runner.input(tb)}, {{"rounding_mode", "floor"}});
  Tensor remainder = remainder_runner.run1("remainder", {remainder_runner.input(ta), remainder_runner.input(tb)});
  auto same = [](double actual, double expected) {
    return std::isnan(expected) ? std::isnan(actual) : std::memcmp(&actual, &expected, 8) == 0;
  };
  int mismatches = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    mismatches += !same(kiln_div_trunc(a[i], b[i]), trunc.data<double>()[i]);
    mismatches += !same(kiln_div_floor(a[i], b[i]), floor.data<double>()[i]);
    mismatches += !same(kiln_remainder(a[i], b[i]), remainder.data<double>()[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

// amax over each row of a 2-D tensor against kiln_max_accumulate folded from -inf (and amin).
TEST(PreludeSemantics, ReductionAccumulatorsMatchAmaxAmin) {
  std::vector<float> values = float_operands();
  const size_t row = 7;  // rows of 7 consecutive operands, NaN and infinities among them
  size_t rows = values.size() / row;
  values.resize(rows * row);
  Tensor input = f32_tensor(values).reshape({int64_t(rows), int64_t(row)});
  for (bool is_max : {true, false}) {
    OpRunner runner;
    Tensor result = runner.run1(is_max ? "amax" : "amin", {runner.input(input), ir::Argument(std::vector<ir::Argument>{1}), false});
    for (size_t r = 0; r < rows; ++r) {
      float acc = is_max ? -INFINITY : INFINITY;
      for (size_t i = 0; i < row; ++i)
        acc = is_max ? kiln_max_accumulate(acc, values[r * row + i]) : kiln_min_accumulate(acc, values[r * row + i]);
      EXPECT_TRUE(same_float(acc, result.data<float>()[r])) << (is_max ? "amax" : "amin") << " row " << r;
    }
  }
}

std::vector<int64_t> int64_operands() {
  const int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> values = {0, 1, -1, 2, -2, 3, -3, 7, -7, 10, -10, min, max, min + 1, max - 1};
  std::mt19937_64 random(11);
  for (int i = 0; i < 40; ++i) values.push_back(int64_t(random()) >> (random() % 63));
  return values;
}

// Integer division and remainder (non-zero divisors; the interpreter raises on zero) through
// int64 and int32 tensors.
TEST(PreludeSemantics, IntegerDivisionMatchesTheInterpreter) {
  std::vector<int64_t> values = int64_operands();
  std::vector<int64_t> a, b;
  for (int64_t x : values)
    for (int64_t y : values)
      if (y != 0) {
        a.push_back(x);
        b.push_back(y);
      }
  Tensor ta = int_tensor(a, DType::i64), tb = int_tensor(b, DType::i64);
  std::vector<int32_t> a32, b32;
  for (size_t i = 0; i < a.size(); ++i) {
    a32.push_back(int32_t(uint32_t(uint64_t(a[i]))));
    int32_t divisor = int32_t(uint32_t(uint64_t(b[i])));
    b32.push_back(divisor == 0 ? 1 : divisor);
  }
  a32.push_back(std::numeric_limits<int32_t>::min());
  b32.push_back(-1);
  Tensor ta32 = int_tensor(a32, DType::i32), tb32 = int_tensor(b32, DType::i32);
  auto run = [](const std::string& op, const Tensor& x, const Tensor& y, ir::Kwargs kwargs = {}) {
    OpRunner runner;
    return runner.run1(op, {runner.input(x), runner.input(y)}, kwargs);
  };
  Tensor trunc = run("div", ta, tb, {{"rounding_mode", "trunc"}}), floor = run("div", ta, tb, {{"rounding_mode", "floor"}});
  Tensor fmod = run("fmod", ta, tb), remainder = run("remainder", ta, tb);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(kiln_int_div_trunc(a[i], b[i]), trunc.data<int64_t>()[i]) << a[i] << " / " << b[i];
    EXPECT_EQ(kiln_int_div_floor(a[i], b[i]), floor.data<int64_t>()[i]) << a[i] << " // " << b[i];
    EXPECT_EQ(kiln_int_fmod(a[i], b[i]), fmod.data<int64_t>()[i]) << a[i] << " fmod " << b[i];
    EXPECT_EQ(kiln_int_remainder(a[i], b[i]), remainder.data<int64_t>()[i]) << a[i] << " % " << b[i];
  }
  Tensor trunc32 = run("div", ta32, tb32, {{"rounding_mode", "trunc"}});
  Tensor floor32 = run("div", ta32, tb32, {{"rounding_mode", "floor"}});
  Tensor remainder32 = run("remainder", ta32, tb32);
  for (size_t i = 0; i < a32.size(); ++i) {
    EXPECT_EQ(kiln_int_div_trunc(a32[i], b32[i]), trunc32.data<int32_t>()[i]) << a32[i] << " / " << b32[i];
    EXPECT_EQ(kiln_int_div_floor(a32[i], b32[i]), floor32.data<int32_t>()[i]) << a32[i] << " // " << b32[i];
    EXPECT_EQ(kiln_int_remainder(a32[i], b32[i]), remainder32.data<int32_t>()[i]) << a32[i] << " % " << b32[i];
  }
}

// The interpreter raises ZeroDivisionError; the prelude returns 0 without trapping, leaving the
// report to the kernel.
TEST(PreludeSemantics, IntegerDivisionByZeroReturnsZeroWhereTheInterpreterRaises) {
  OpRunner runner;
  Tensor a = int_tensor(std::vector<int64_t>{5}, DType::i64), zero = int_tensor(std::vector<int64_t>{0}, DType::i64);
  EXPECT_THROW(runner.run1("div", {runner.input(a), runner.input(zero)}, {{"rounding_mode", "floor"}}), Error);
  for (int64_t x : int64_operands()) {
    EXPECT_EQ(kiln_int_div_trunc(x, int64_t(0)), 0);
    EXPECT_EQ(kiln_int_div_floor(x, int64_t(0)), 0);
    EXPECT_EQ(kiln_int_fmod(x, int64_t(0)), 0);
    EXPECT_EQ(kiln_int_remainder(x, int64_t(0)), 0);
  }
}

// Float to int64 as the interpreter's cast: truncation, NaN to 0, saturation.
TEST(PreludeSemantics, SaturatingCastMatchesTheInterpreter) {
  std::vector<float> values = float_operands();
  for (float extra : {9.2233715e18f, -9.2233715e18f, 9.223372e18f, -9.223372e18f, 1e19f, -1e19f})
    values.push_back(extra);
  OpRunner runner;
  Tensor result = runner.run1("cast", {runner.input(f32_tensor(values)), DType::i64});
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(kiln_saturate_to_i64(values[i]), result.data<int64_t>()[i]) << std::hexfloat << values[i];
}

}  // namespace
}  // namespace kiln
