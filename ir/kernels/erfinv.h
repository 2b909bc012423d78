// The inverse error function in double precision, as torch.erfinv defines it: erfinv(erf(y)) =
// y on [-1, 1], erfinv(+-1) = +-inf, NaN for |x| > 1 and for NaN, erfinv(-0) = -0. The
// reference kernel (ir/kernels/unary_kernels.cpp) and the loop evaluator (codegen/loop_ops.cpp)
// compute it here, and tests use it as the exact value the generated code's float version
// (codegen/cpp/kiln_prelude.h) is measured against. Header-only and dependency-free, so that a
// test program built apart from Kiln (tests/codegen/prelude_compile_test.cpp) can include it.
//
// Method: a start from M. Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011; relative error 1.3e-7 for |x| <= 1 - 2^-24) or, closer
// to 1, from the asymptotic form of erfc; then Halley steps on erf(y) - |x| = 0, the residual
// computed as erf(y) - |x| for |x| <= 0.5 and as (1 - |x|) - erfc(y) above (1 - |x| is exact
// there, and erfc keeps its relative accuracy where erf(y) rounds to 1). Halley converges
// cubically: two steps reach the accuracy of libm's erf and erfc from either start (within
// 1 ulp of the exact value, measured against mpmath at 50 digits); a third is a margin.
#pragma once

#include <cmath>
#include <limits>

namespace kiln::ir::kernels {

inline double erfinv(double x) {
  if (std::isnan(x) || x < -1.0 || x > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 1.0 || x == -1.0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (x == 0.0) return x;  // keeps -0
  const double a = std::fabs(x);
  double w = -std::log((1.0 - a) * (1.0 + a));
  double p = 0;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else if (w < 16.0) {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  // Beyond Giles' range (only doubles come this close to 1): erfc(y) ~ exp(-y^2) / (y sqrt(pi))
  // solved for y to first order, with relative error below 1e-3.
  const double tail = -std::log(1.0 - a);
  const double log_sqrt_pi = 0.57236494292470008;
  double y = w < 16.0 ? p * a : std::sqrt(tail - 0.5 * std::log(tail) - log_sqrt_pi);
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int step = 0; step < 3; ++step) {
    double residual = a <= 0.5 ? std::erf(y) - a : (1.0 - a) - std::erfc(y);
    double slope = two_over_sqrt_pi * std::exp(-y * y);  // d/dy erf(y); erf'' = -2y erf'
    y -= residual / (slope + y * residual);
  }
  return std::copysign(y, x);
}

}  // namespace kiln::ir::kernels
