// Reference kernels, part 1: elementwise ops (type promotion, integer wrap, division modes,
// NaN rules, f16/bf16 rounding), creation ops and reductions. Each op runs through a one-node
// graph and the interpreter; expected values are written by hand or computed in the test
// with a direct formula.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/reference_kernels.h"
#include "runtime/philox.h"
#include "tests/ir/reference_test_support.h"

namespace kiln::ir {
namespace {

using testing::expect_error;
using testing::expect_ints;
using testing::expect_tensor;
using testing::OpRunner;
using testing::tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ReferenceKernels, EveryRegisteredOpHasAKernel) {
  std::vector<std::string> missing = ops_without_reference_kernel();
  std::string list;
  for (const std::string& name : missing) list += name + " ";
  EXPECT_TRUE(missing.empty()) << "ops without a reference kernel: " << list;
  EXPECT_NE(find_reference_kernel("add_"), nullptr);
  EXPECT_NE(find_reference_kernel("gelu_"), nullptr);
  EXPECT_EQ(find_reference_kernel("no_such_op"), nullptr);
}

// ---------------------------------------------------------------- unary

TEST(ReferenceKernels, NegAndAbsWrapOnIntegers) {
  OpRunner r;
  Tensor x = tensor({3}, {double(std::numeric_limits<int32_t>::min()), -5, 7}, DType::i32);
  expect_ints(r.run1("neg", {r.input(x)}), DType::i32, {3}, {std::numeric_limits<int32_t>::min(), 5, -7});
  OpRunner r2;
  expect_ints(r2.run1("abs", {r2.input(x)}), DType::i32, {3}, {std::numeric_limits<int32_t>::min(), 5, 7});
}

TEST(ReferenceKernels, NegOfBoolIsAnError) {
  OpRunner r;
  Tensor x = tensor({2}, {1, 0}, DType::boolean);
  expect_error([&] { r.run1("neg", {r.input(x)}); }, {"node %neg (neg)", "bool"});
}

TEST(ReferenceKernels, FloatFunctionsPromoteIntegersToF32) {
  OpRunner r;
  Tensor x = tensor({3}, {0, 1, 4}, DType::i64);
  expect_tensor(r.run1("sqrt", {r.input(x)}), DType::f32, {3}, {0, 1, 2});
  OpRunner r2;
  expect_tensor(r2.run1("exp", {r2.input(tensor({2}, {0, 1}, DType::boolean))}), DType::f32, {2}, {1, M_E});
}

TEST(ReferenceKernels, FloatFunctionValues) {
  Tensor x = tensor({4}, {-2, -0.5, 0, 3});
  struct Case {
    const char* op;
    double (*fn)(double);
  } cases[] = {
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"expm1", [](double v) { return std::exp(v) - 1; }},
  };
  for (const Case& c : cases) {
    OpRunner r;
    std::vector<double> expected;
    for (double v : {-2.0, -0.5, 0.0, 3.0}) expected.push_back(c.fn(v));
    SCOPED_TRACE(c.op);
    expect_tensor(r.run1(c.op, {r.input(x)}), DType::f32, {4}, expected, 1e-6);
  }
  OpRunner r;
  expect_tensor(r.run1("log", {r.input(tensor({3}, {-1, 0, M_E}))}), DType::f32, {3}, {kNaN, -kInf, 1});
  OpRunner r2;
  expect_tensor(r2.run1("rsqrt", {r2.input(tensor({2}, {4, 0}))}), DType::f32, {2}, {0.5, kInf});
  OpRunner r3;
  expect_tensor(r3.run1("log1p", {r3.input(tensor({1}, {1e-10}, DType::f64))}), DType::f64, {1}, {1e-10}, 1e-12);
}

TEST(ReferenceKernels, RoundHalfToEvenAndFloorCeil) {
  Tensor x = tensor({6}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4});
  OpRunner r;
  expect_tensor(r.run1("round", {r.input(x)}), DType::f32, {6}, {0, 2, 2, -0.0, -2, 2});
  OpRunner r2;
  expect_tensor(r2.run1("floor", {r2.input(x)}), DType::f32, {6}, {0, 1, 2, -1, -2, 2});
  OpRunner r3;
  expect_tensor(r3.run1("ceil", {r3.input(x)}), DType::f32, {6}, {1, 2, 3, -0.0, -1, 3});
  OpRunner r4;  // identity on integers
  expect_ints(r4.run1("round", {r4.input(tensor({2}, {3, -4}, DType::i64))}), DType::i64, {2}, {3, -4});
}

TEST(ReferenceKernels, SignGivesZeroForNaN) {
  OpRunner r;
  expect_tensor(r.run1("sign", {r.input(tensor({4}, {-3, 0, kNaN, 2}))}), DType::f32, {4}, {-1, 0, 0, 1});
  OpRunner r2;
  expect_ints(r2.run1("sign", {r2.input(tensor({3}, {-9, 0, 4}, DType::i8))}), DType::i8, {3}, {-1, 0, 1});
}

TEST(ReferenceKernels, ReluOfTransposedInput) {
  Tensor base = tensor({2, 3}, {-1, 2, -3, 4, -5, 6});
  OpRunner r;
  Tensor out = r.run1("relu", {r.input(base.transpose(0, 1))});
  expect_tensor(out, DType::f32, {3, 2}, {0, 4, 2, 0, 0, 6});
}

TEST(ReferenceKernels, ClampRules) {
  OpRunner r;
  // NaN input stays NaN; bounds apply in order max(min(...)).
  expect_tensor(r.run1("clamp", {r.input(tensor({4}, {-2, 0.5, 3, kNaN})), 0.0, 1.0}), DType::f32, {4},
                {0, 0.5, 1, kNaN});
  OpRunner r2;  // min > max: everything becomes max
  expect_tensor(r2.run1("clamp", {r2.input(tensor({2}, {-5, 5})), 2.0, 1.0}), DType::f32, {2}, {1, 1});
  OpRunner r3;  // integer clamp stays integer
  expect_ints(r3.run1("clamp", {r3.input(tensor({3}, {-7, 3, 9}, DType::i32)), int64_t(-1), int64_t(4)}), DType::i32,
              {3}, {-1, 3, 4});
  OpRunner r6;  // a float bound raises an integer tensor to f32, as PyTorch's type promotion
  expect_tensor(r6.run1("clamp", {r6.input(tensor({3}, {1, 2, 3}, DType::i64)), 1.5}), DType::f32, {3}, {1.5, 2, 3});
  OpRunner r4;  // a NaN bound gives NaN
  expect_tensor(r4.run1("clamp", {r4.input(tensor({1}, {1})), Argument(), kNaN}), DType::f32, {1}, {kNaN});
  OpRunner r5;
  expect_error([&] { r5.run1("clamp", {r5.input(tensor({1}, {1}))}); }, {"clamp"});
}

TEST(ReferenceKernels, LogicalNotAndIsnan) {
  Tensor x = tensor({4}, {0, kNaN, -1, 0.5});
  OpRunner r;
  expect_ints(r.run1("logical_not", {r.input(x)}), DType::boolean, {4}, {1, 0, 0, 0});
  OpRunner r2;
  expect_ints(r2.run1("isnan", {r2.input(x)}), DType::boolean, {4}, {0, 1, 0, 0});
}

TEST(ReferenceKernels, HalfTypesRoundOnce) {
  // e = 2.71828...: in f16 the spacing near 2 is 2^-9, in bf16 2^-6; both round to 2.71875.
  OpRunner r;
  expect_tensor(r.run1("exp", {r.input(tensor({1}, {1}, DType::f16))}), DType::f16, {1}, {2.71875}, 0);
  OpRunner r2;
  expect_tensor(r2.run1("exp", {r2.input(tensor({1}, {1}, DType::bf16))}), DType::bf16, {1}, {2.71875}, 0);
  // 1 + 2^-10 is exact in f16; 1 + 2^-11 (a tie) rounds to even, 1.
  OpRunner r3;
  Tensor a = tensor({2}, {1, 1}, DType::f16), b = tensor({2}, {std::ldexp(1.0, -10), std::ldexp(1.0, -11)}, DType::f16);
  expect_tensor(r3.run1("add", {r3.input(a), r3.input(b)}), DType::f16, {2}, {1 + std::ldexp(1.0, -10), 1}, 0);
}

// ---------------------------------------------------------------- binary

TEST(ReferenceKernels, AddBroadcastsAgainstALoop) {
  Tensor a = tensor({2, 1}, {10, 20}), b = tensor({3}, {1, 2, 3});
  OpRunner r;
  Tensor out = r.run1("add", {r.input(a), r.input(b)});
  std::vector<double> expected;
  for (double x : {10.0, 20.0})
    for (double y : {1.0, 2.0, 3.0}) expected.push_back(x + y);
  expect_tensor(out, DType::f32, {2, 3}, expected);
}

TEST(ReferenceKernels, AddAndSubWithAlpha) {
  Tensor a = tensor({2}, {1, 2}), b = tensor({2}, {10, 20});
  OpRunner r;
  expect_tensor(r.run1("add", {r.input(a), r.input(b)}, {{"alpha", 0.5}}), DType::f32, {2}, {6, 12});
  OpRunner r2;
  expect_tensor(r2.run1("sub", {r2.input(a), r2.input(b)}, {{"alpha", 2}}), DType::f32, {2}, {-19, -38});
  OpRunner r3;
  expect_error([&] { r3.run1("add", {r3.input(tensor({1}, {1}, DType::i64)), int64_t(1)}, {{"alpha", 0.5}}); },
               {"alpha"});
}

TEST(ReferenceKernels, TypePromotion) {
  OpRunner r;
  Tensor i32 = tensor({2}, {1, 2}, DType::i32);
  // i32 tensor + 2.5 -> f32
  expect_tensor(r.run1("add", {r.input(i32), 2.5}), DType::f32, {2}, {3.5, 4.5});
  OpRunner r2;  // bool tensor + 2 -> i64
  expect_ints(r2.run1("add", {r2.input(tensor({2}, {1, 0}, DType::boolean)), int64_t(2)}), DType::i64, {2}, {3, 2});
  OpRunner r3;  // i32 tensor + f64 0-d tensor -> f64
  expect_tensor(r3.run1("mul", {r3.input(i32), r3.input(Tensor::scalar(1.5, DType::f64))}), DType::f64, {2}, {1.5, 3});
  OpRunner r4;  // f16 tensor + 2.0 -> f16
  expect_tensor(r4.run1("add", {r4.input(tensor({1}, {1}, DType::f16)), 2.0}), DType::f16, {1}, {3});
  OpRunner r5;  // u8 + i8 -> i16
  expect_ints(r5.run1("add", {r5.input(tensor({1}, {200}, DType::u8)), r5.input(tensor({1}, {100}, DType::i8))}),
              DType::i16, {1}, {300});
  OpRunner r6;  // i64 0-d tensor does not widen an i32 tensor
  expect_ints(r6.run1("add", {r6.input(i32), r6.input(Tensor::scalar(5, DType::i64))}), DType::i32, {2}, {6, 7});
  OpRunner r7;  // Python number on the left
  expect_tensor(r7.run1("sub", {1.0, r7.input(tensor({2}, {0.25, 2}))}), DType::f32, {2}, {0.75, -1});
}

TEST(ReferenceKernels, IntegerArithmeticWraps) {
  OpRunner r;
  Tensor a = tensor({2}, {double(std::numeric_limits<int32_t>::max()), 3}, DType::i32);
  expect_ints(r.run1("add", {r.input(a), int64_t(1)}), DType::i32, {2}, {std::numeric_limits<int32_t>::min(), 4});
  OpRunner r2;
  Tensor big = Tensor::empty({1}, DType::i64);
  big.set_int(std::vector<int64_t>{0}, std::numeric_limits<int64_t>::max());
  expect_ints(r2.run1("mul", {r2.input(big), int64_t(2)}), DType::i64, {1}, {-2});
  OpRunner r3;  // u8 wraps modulo 256
  expect_ints(r3.run1("sub", {r3.input(tensor({1}, {3}, DType::u8)), r3.input(tensor({1}, {5}, DType::u8))}), DType::u8,
              {1}, {254});
}

TEST(ReferenceKernels, DivisionModes) {
  Tensor a = tensor({4}, {-7, 7, -7, 7}, DType::i64), b = tensor({4}, {2, -2, -2, 2}, DType::i64);
  OpRunner r;
  expect_tensor(r.run1("div", {r.input(a), r.input(b)}), DType::f32, {4}, {-3.5, -3.5, 3.5, 3.5});
  OpRunner r2;
  expect_ints(r2.run1("div", {r2.input(a), r2.input(b)}, {{"rounding_mode", "trunc"}}), DType::i64, {4}, {-3, -3, 3, 3});
  OpRunner r3;
  expect_ints(r3.run1("div", {r3.input(a), r3.input(b)}, {{"rounding_mode", "floor"}}), DType::i64, {4}, {-4, -4, 3, 3});
  OpRunner r4;
  Tensor x = tensor({4}, {-7.5, 7.5, 1, -1}), y = tensor({4}, {2, 2, 0, 0});
  expect_tensor(r4.run1("div", {r4.input(x), r4.input(y)}, {{"rounding_mode", "floor"}}), DType::f32, {4},
                {-4, 3, kInf, -kInf});
  OpRunner r5;
  expect_tensor(r5.run1("div", {r5.input(x), r5.input(y)}, {{"rounding_mode", "trunc"}}), DType::f32, {4},
                {-3, 3, kInf, -kInf});
}

TEST(ReferenceKernels, IntegerDivisionByZeroNamesTheNode) {
  OpRunner r;
  Tensor a = tensor({2}, {1, 2}, DType::i32), b = tensor({2}, {1, 0}, DType::i32);
  expect_error([&] { r.run1("div", {r.input(a), r.input(b)}, {{"rounding_mode", "floor"}}); },
               {"node %div (div)", "ZeroDivisionError"});
  OpRunner r2;
  expect_error([&] { r2.run1("remainder", {r2.input(a), int64_t(0)}); }, {"%remainder", "ZeroDivisionError"});
  OpRunner r3;
  expect_error([&] { r3.run1("fmod", {r3.input(a), r3.input(b)}); }, {"%fmod", "ZeroDivisionError"});
}

TEST(ReferenceKernels, RemainderTakesTheDivisorsSignFmodTheDividends) {
  Tensor a = tensor({4}, {-7, 7, -7, 7}, DType::i64), b = tensor({4}, {3, -3, -3, 3}, DType::i64);
  OpRunner r;
  expect_ints(r.run1("remainder", {r.input(a), r.input(b)}), DType::i64, {4}, {2, -2, -1, 1});
  OpRunner r2;
  expect_ints(r2.run1("fmod", {r2.input(a), r2.input(b)}), DType::i64, {4}, {-1, 1, -1, 1});
  Tensor x = tensor({2}, {-7.5, 7.5});
  OpRunner r3;
  expect_tensor(r3.run1("remainder", {r3.input(x), 2.0}), DType::f32, {2}, {0.5, 1.5});
  OpRunner r4;
  expect_tensor(r4.run1("fmod", {r4.input(x), 2.0}), DType::f32, {2}, {-1.5, 1.5});
}

TEST(ReferenceKernels, PowOnIntegersAndFloats) {
  Tensor base = tensor({4}, {2, 3, -1, 5}, DType::i64), exponent = tensor({4}, {10, -1, -3, 0}, DType::i64);
  OpRunner r;
  expect_ints(r.run1("pow", {r.input(base), r.input(exponent)}), DType::i64, {4}, {1024, 0, -1, 1});
  OpRunner r2;
  expect_error([&] { r2.run1("pow", {r2.input(base), int64_t(-2)}); }, {"%pow", "negative"});
  OpRunner r3;
  expect_tensor(r3.run1("pow", {r3.input(tensor({2}, {4, 2})), 0.5}), DType::f32, {2}, {2, std::sqrt(2.0)});
  OpRunner r4;  // int tensor ** float -> f32
  expect_tensor(r4.run1("pow", {r4.input(tensor({1}, {9}, DType::i32)), 0.5}), DType::f32, {1}, {3});
}

TEST(ReferenceKernels, MaximumMinimumPropagateNaN) {
  Tensor a = tensor({3}, {1, kNaN, 3}), b = tensor({3}, {2, 0, kNaN});
  OpRunner r;
  expect_tensor(r.run1("maximum", {r.input(a), r.input(b)}), DType::f32, {3}, {2, kNaN, kNaN});
  OpRunner r2;
  expect_tensor(r2.run1("minimum", {r2.input(a), r2.input(b)}), DType::f32, {3}, {1, kNaN, kNaN});
}

TEST(ReferenceKernels, ComparisonsUseThePromotedType) {
  OpRunner r;
  expect_ints(r.run1("lt", {r.input(tensor({3}, {1, 2, 3}, DType::i64)), 2.5}), DType::boolean, {3}, {1, 1, 0});
  // 16777217 as f32 is 16777216: compared in f32 (the promoted type) they are equal.
  OpRunner r2;
  Tensor big = Tensor::empty({1}, DType::i64);
  big.set_int(std::vector<int64_t>{0}, 16777217);
  expect_ints(r2.run1("eq", {r2.input(big), r2.input(tensor({1}, {16777216}))}), DType::boolean, {1}, {1});
  OpRunner r3;  // NaN compares unequal to everything
  Tensor x = tensor({2}, {kNaN, 1});
  expect_ints(r3.run1("ne", {r3.input(x), r3.input(x)}), DType::boolean, {2}, {1, 0});
  for (const char* op : {"le", "ge", "gt"}) {
    OpRunner rc;
    SCOPED_TRACE(op);
    Tensor out = rc.run1(op, {rc.input(tensor({3}, {1, 2, 3})), 2.0});
    std::string name = op;
    std::vector<int64_t> expected = name == "le" ? std::vector<int64_t>{1, 1, 0}
                                    : name == "ge" ? std::vector<int64_t>{0, 1, 1}
                                                   : std::vector<int64_t>{0, 0, 1};
    expect_ints(out, DType::boolean, {3}, expected);
  }
}

TEST(ReferenceKernels, LogicalOpsUseTruthValues) {
  Tensor a = tensor({4}, {0, 0, kNaN, 2}), b = tensor({4}, {0, 1, 0, -1}, DType::i32);
  OpRunner r;
  expect_ints(r.run1("logical_and", {r.input(a), r.input(b)}), DType::boolean, {4}, {0, 0, 0, 1});
  OpRunner r2;
  expect_ints(r2.run1("logical_or", {r2.input(a), r2.input(b)}), DType::boolean, {4}, {0, 1, 1, 1});
  OpRunner r3;
  expect_ints(r3.run1("logical_xor", {r3.input(a), r3.input(b)}), DType::boolean, {4}, {0, 1, 1, 0});
}

TEST(ReferenceKernels, WhereBroadcastsAndPromotes) {
  Tensor condition = tensor({3, 1}, {1, 0, 1}, DType::boolean);
  Tensor other = tensor({4}, {1, 2, 3, 4}, DType::i64);
  OpRunner r;
  Tensor out = r.run1("where", {r.input(condition), 0.5, r.input(other)});
  expect_tensor(out, DType::f32, {3, 4}, {0.5, 0.5, 0.5, 0.5, 1, 2, 3, 4, 0.5, 0.5, 0.5, 0.5});
}

TEST(ReferenceKernels, CastFollowsTheStoreRules) {
  Tensor x = tensor({5}, {2.7, -2.7, kNaN, 1e20, -1e20});
  OpRunner r;
  // Truncation; NaN -> 0; out of range saturates to int64 and then wraps to i32.
  int32_t high = int32_t(uint32_t(uint64_t(std::numeric_limits<int64_t>::max())));
  int32_t low = int32_t(uint32_t(uint64_t(std::numeric_limits<int64_t>::min())));
  expect_ints(r.run1("cast", {r.input(x), DType::i32}), DType::i32, {5}, {2, -2, 0, high, low});
  OpRunner r2;
  expect_ints(r2.run1("cast", {r2.input(tensor({3}, {0, kNaN, -1})), DType::boolean}), DType::boolean, {3}, {0, 1, 1});
  OpRunner r3;  // f32 -> f16 rounds to nearest even: 1 + 3 * 2^-11 lies halfway, goes to 1 + 2^-9
  expect_tensor(r3.run1("cast", {r3.input(tensor({1}, {1 + 3 * std::ldexp(1.0, -11)})), DType::f16}), DType::f16, {1},
                {1 + std::ldexp(1.0, -9)}, 0);
  OpRunner r4;  // same dtype: a fresh copy
  Tensor y = tensor({2}, {1, 2});
  Tensor copy = r4.run1("cast", {r4.input(y), DType::f32});
  EXPECT_FALSE(copy.shares_storage_with(y));
}

TEST(ReferenceKernels, BroadcastingWithSizeZeroAndSizeOneDims) {
  OpRunner r;
  expect_tensor(r.run1("add", {r.input(Tensor::zeros({0, 3}, DType::f32)), r.input(tensor({1, 3}, {1, 2, 3}))}),
                DType::f32, {0, 3}, {});
  OpRunner r2;  // [2, 1, 1] with [1, 3]: [2, 1, 3]
  expect_tensor(r2.run1("mul", {r2.input(tensor({2, 1, 1}, {1, 2})), r2.input(tensor({1, 3}, {1, 2, 3}))}), DType::f32,
                {2, 1, 3}, {1, 2, 3, 2, 4, 6});
  OpRunner r3;  // two 0-d tensors
  expect_tensor(r3.run1("sub", {r3.input(Tensor::scalar(5, DType::f32)), r3.input(Tensor::scalar(2, DType::f32))}),
                DType::f32, {}, {3});
  OpRunner r4;
  expect_error([&] { r4.run1("add", {r4.input(tensor({2}, {1, 2})), r4.input(tensor({3}, {1, 2, 3}))}); }, {"%add"});
}

TEST(ReferenceKernels, BoolArithmetic) {
  Tensor a = tensor({4}, {0, 0, 1, 1}, DType::boolean), b = tensor({4}, {0, 1, 0, 1}, DType::boolean);
  OpRunner r;  // bool + bool stays bool (1 + 1 is true)
  expect_ints(r.run1("add", {r.input(a), r.input(b)}), DType::boolean, {4}, {0, 1, 1, 1});
  OpRunner r2;
  expect_ints(r2.run1("mul", {r2.input(a), r2.input(b)}), DType::boolean, {4}, {0, 0, 0, 1});
  OpRunner r3;
  expect_error([&] { r3.run1("sub", {r3.input(a), r3.input(b)}); }, {"%sub", "bool"});
}

TEST(ReferenceKernels, ReciprocalAndClone) {
  OpRunner r;
  expect_tensor(r.run1("reciprocal", {r.input(tensor({3}, {2, 0, -4}, DType::i32))}), DType::f32, {3},
                {0.5, std::numeric_limits<double>::infinity(), -0.25});
  Tensor base = tensor({2, 2}, {1, 2, 3, 4});
  OpRunner r2;
  Tensor copy = r2.run1("clone", {r2.input(base.transpose(0, 1))});
  expect_tensor(copy, DType::f32, {2, 2}, {1, 3, 2, 4});
  EXPECT_TRUE(copy.is_contiguous());
  EXPECT_FALSE(copy.shares_storage_with(base));
}

TEST(ReferenceKernels, HalfSumsAccumulateInDouble) {
  // In f16 2048 + 1 rounds back to 2048 (spacing 2), so a running f16 sum of {2048, 1, 1}
  // would stay 2048; accumulating in double gives 2050, which f16 holds exactly.
  OpRunner r;
  expect_tensor(r.run1("sum", {r.input(tensor({3}, {2048, 1, 1}, DType::f16))}), DType::f16, {}, {2050}, 0);
  OpRunner r2;  // bf16 holds 8 significant bits: 257 rounds to 256 (tie to even), 259 to 260
  expect_tensor(r2.run1("add", {r2.input(tensor({2}, {256, 256}, DType::bf16)), r2.input(tensor({2}, {1, 3}, DType::bf16))}),
                DType::bf16, {2}, {256, 260}, 0);
}

// ---------------------------------------------------------------- creation

TEST(ReferenceKernels, FullInfersItsDtype) {
  OpRunner r;
  expect_ints(r.run1("full", {Argument::ints({2, 2}), int64_t(7)}), DType::i64, {2, 2}, {7, 7, 7, 7});
  OpRunner r2;
  expect_tensor(r2.run1("full", {Argument::ints({3}), 1.5}), DType::f32, {3}, {1.5, 1.5, 1.5});
  OpRunner r3;
  expect_ints(r3.run1("full", {Argument::ints({1}), true}), DType::boolean, {1}, {1});
  OpRunner r4;
  expect_tensor(r4.run1("full", {Argument::ints({0, 3}), 2.0}, {{"dtype", DType::f64}}), DType::f64, {0, 3}, {});
  OpRunner r5;
  Tensor like = tensor({2, 1}, {1, 2}, DType::i32);
  expect_ints(r5.run1("full_like", {r5.input(like), 3.9}), DType::i32, {2, 1}, {3, 3});
}

TEST(ReferenceKernels, Arange) {
  OpRunner r;
  expect_ints(r.run1("arange", {int64_t(1), int64_t(10), int64_t(3)}), DType::i64, {3}, {1, 4, 7});
  OpRunner r2;
  expect_ints(r2.run1("arange", {int64_t(5), int64_t(0), int64_t(-2)}), DType::i64, {3}, {5, 3, 1});
  OpRunner r3;
  expect_tensor(r3.run1("arange", {0.0, 1.0, 0.25}), DType::f32, {4}, {0, 0.25, 0.5, 0.75});
  OpRunner r4;
  expect_ints(r4.run1("arange", {int64_t(2), int64_t(2)}), DType::i64, {0}, {});
  OpRunner r5;
  expect_error([&] { r5.run1("arange", {int64_t(0), int64_t(4), int64_t(0)}); }, {"step"});
}

TEST(ReferenceKernels, Iota) {
  OpRunner r;
  expect_ints(r.run1("iota", {int64_t(4)}, {{"start", int64_t(10)}, {"step", int64_t(-3)}}), DType::i64, {4},
              {10, 7, 4, 1});
}

TEST(ReferenceKernels, RandFollowsThePhiloxContract) {
  OpRunner r;
  Tensor out = r.run1("rand", {Argument::ints({2, 3})}, {{"seed", int64_t(42)}, {"offset", int64_t(5)}});
  ASSERT_EQ(out.numel(), 6);
  for (uint32_t i = 0; i < 6; ++i) {
    PhiloxCounter words = philox4x32({i, 0, 5, 0}, {42, 0});
    EXPECT_EQ(out.flat_double(i), double(words[0] >> 8) / 16777216.0) << "element " << i;
  }
  OpRunner r2;
  Tensor normal = r2.run1("randn", {Argument::ints({4})}, {{"seed", int64_t(7)}});
  for (uint32_t i = 0; i < 4; ++i) {
    PhiloxCounter words = philox4x32({i, 0, 0, 0}, {7, 0});
    double u1 = (double(words[0] >> 8) + 1) / 16777216.0, u2 = double(words[1] >> 8) / 16777216.0;
    EXPECT_NEAR(normal.flat_double(i), std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2), 1e-6);
  }
}

// ---------------------------------------------------------------- reductions

TEST(ReferenceKernels, SumOverDimsWithKeepdimAndNegativeAxes) {
  Tensor x = tensor({2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  OpRunner r;
  // sum over dims 0 and 2: for j in 0..2: sum_i sum_k x[i][j][k]
  std::vector<double> expected(3, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) expected[size_t(j)] += 1 + (i * 6 + j * 2 + k);
  expect_tensor(r.run1("sum", {r.input(x), Argument::ints({0, -1}), true}), DType::f32, {1, 3, 1}, expected);
  OpRunner r2;
  expect_tensor(r2.run1("sum", {r2.input(x)}), DType::f32, {}, {78});
  OpRunner r3;  // non-contiguous input
  expect_tensor(r3.run1("sum", {r3.input(x.transpose(0, 2)), Argument::ints({2})}), DType::f32, {2, 3},
                {1 + 7, 3 + 9, 5 + 11, 2 + 8, 4 + 10, 6 + 12});
}

TEST(ReferenceKernels, SumOfIntegersAndBoolIsI64AndEmptySumIsZero) {
  OpRunner r;
  expect_ints(r.run1("sum", {r.input(tensor({3}, {100, 100, 100}, DType::i8))}), DType::i64, {}, {300});
  OpRunner r2;
  expect_ints(r2.run1("sum", {r2.input(tensor({4}, {1, 0, 1, 1}, DType::boolean))}), DType::i64, {}, {3});
  OpRunner r3;
  expect_tensor(r3.run1("sum", {r3.input(Tensor::zeros({0, 2}, DType::f32)), Argument::ints({0})}), DType::f32, {2},
                {0, 0});
  OpRunner r4;  // explicit dtype
  expect_tensor(r4.run1("sum", {r4.input(tensor({2}, {1, 2}, DType::i32))}, {{"dtype", DType::f64}}), DType::f64, {},
                {3});
}

TEST(ReferenceKernels, ProdAndMean) {
  Tensor x = tensor({2, 2}, {1, 2, 3, 4});
  OpRunner r;
  expect_tensor(r.run1("prod", {r.input(x), Argument::ints({1})}), DType::f32, {2}, {2, 12});
  OpRunner r2;
  expect_tensor(r2.run1("mean", {r2.input(x), Argument::ints({0})}), DType::f32, {2}, {2, 3});
  OpRunner r3;
  expect_tensor(r3.run1("mean", {r3.input(Tensor::zeros({0}, DType::f32))}), DType::f32, {}, {kNaN});
  OpRunner r4;
  expect_error([&] { r4.run1("mean", {r4.input(tensor({2}, {1, 2}, DType::i64))}); }, {"%mean"});
}

TEST(ReferenceKernels, AmaxAminPropagateNaN) {
  Tensor x = tensor({2, 3}, {1, kNaN, 3, 4, 5, -6});
  OpRunner r;
  expect_tensor(r.run1("amax", {r.input(x), Argument::ints({1})}), DType::f32, {2}, {kNaN, 5});
  OpRunner r2;
  expect_tensor(r2.run1("amin", {r2.input(x), Argument::ints({1})}), DType::f32, {2}, {kNaN, -6});
  OpRunner r3;  // [] reduces everything
  expect_ints(r3.run1("amax", {r3.input(tensor({3}, {4, 9, 2}, DType::i64))}), DType::i64, {}, {9});
  OpRunner r4;
  expect_error([&] { r4.run1("amax", {r4.input(Tensor::zeros({2, 0}, DType::f32)), Argument::ints({1})}); },
               {"%amax"});
}

TEST(ReferenceKernels, ArgmaxFirstOccurrenceAndNaN) {
  Tensor x = tensor({2, 4}, {1, 3, 3, 0, 2, kNaN, 5, kNaN});
  OpRunner r;
  expect_ints(r.run1("argmax", {r.input(x), int64_t(1)}), DType::i64, {2}, {1, 1});
  OpRunner r2;
  expect_ints(r2.run1("argmin", {r2.input(x), int64_t(-1)}), DType::i64, {2}, {3, 1});
  OpRunner r3;  // flattened with keepdim: every dim kept as 1
  expect_ints(r3.run1("argmax", {r3.input(tensor({2, 2}, {1, 7, 7, 2})), Argument(), true}), DType::i64, {1, 1}, {1});
}

TEST(ReferenceKernels, VarianceWithCorrection) {
  Tensor x = tensor({2, 3}, {1, 2, 4, 3, 3, 3});
  // Row 0: mean 7/3, squared deviations sum = (16 + 1 + 25) / 9 = 42/9.
  OpRunner r;
  expect_tensor(r.run1("var", {r.input(x), Argument::ints({1})}), DType::f32, {2}, {42.0 / 9 / 2, 0});
  OpRunner r2;
  expect_tensor(r2.run1("var", {r2.input(x), Argument::ints({1})}, {{"correction", 0.0}, {"keepdim", true}}),
                DType::f32, {2, 1}, {42.0 / 9 / 3, 0});
  OpRunner r3;  // one element with correction 1: 0 / 0
  expect_tensor(r3.run1("var", {r3.input(tensor({1}, {5}))}), DType::f32, {}, {kNaN});
  OpRunner r4;
  std::vector<Tensor> both = r4.run("var_mean", {r4.input(x), Argument::ints({1})});
  ASSERT_EQ(both.size(), 2u);
  expect_tensor(both[0], DType::f32, {2}, {42.0 / 9 / 2, 0});
  expect_tensor(both[1], DType::f32, {2}, {7.0 / 3, 3});
}

TEST(ReferenceKernels, Cumsum) {
  OpRunner r;
  expect_tensor(r.run1("cumsum", {r.input(tensor({2, 3}, {1, 2, 3, 4, 5, 6})), int64_t(-1)}), DType::f32, {2, 3},
                {1, 3, 6, 4, 9, 15});
  OpRunner r2;
  expect_ints(r2.run1("cumsum", {r2.input(tensor({2, 2}, {1, 2, 3, 4}, DType::i32)), int64_t(0)}), DType::i64, {2, 2},
              {1, 2, 4, 6});
}

}  // namespace
}  // namespace kiln::ir
