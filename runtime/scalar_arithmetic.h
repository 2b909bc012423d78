// Scalar arithmetic with PyTorch's and Python's semantics, defined once for everything that
// evaluates it: the reference kernels (ir/kernels/), the loop evaluator (codegen/loop_ops.cpp),
// symbolic sizes (ir/symbolic*.cpp) and size expressions (runtime/size_expression.cpp). The
// generated code spells the same semantics in its preludes.
//
// Integers: division and remainder by 0 are the caller's to report (each says it in its own
// words); INT64_MIN / -1 wraps to INT64_MIN, as two's-complement hardware and PyTorch's kernels
// do (callers that must not wrap, like symbolic sizes, check it first).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kiln {

inline int64_t wrapping_negate(int64_t value) { return int64_t(0 - uint64_t(value)); }

// C's a / b: the quotient rounds toward zero. b != 0.
inline int64_t int_truncate_divide(int64_t a, int64_t b) {
  if (b == -1) return wrapping_negate(a);
  return a / b;
}

// Python's a // b: the quotient rounds toward negative infinity. b != 0.
inline int64_t int_floor_divide(int64_t a, int64_t b) {
  if (b == -1) return wrapping_negate(a);
  int64_t quotient = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --quotient;
  return quotient;
}

// C's a % b: the sign of the dividend. b != 0.
inline int64_t int_c_remainder(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

// Python's a % b: the sign of the divisor. b != 0.
inline int64_t int_floor_mod(int64_t a, int64_t b) {
  int64_t remainder = int_c_remainder(a, b);
  if (remainder != 0 && ((remainder < 0) != (b < 0))) remainder += b;
  return remainder;
}

// base ** exponent by squaring, wrapping; a negative exponent as PyTorch's integer pow
// (1 and -1 keep their powers, every other base gives 0).
inline int64_t int_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 != 0) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, factor = uint64_t(base);
  for (uint64_t e = uint64_t(exponent); e; e >>= 1) {
    if (e & 1) result *= factor;
    factor *= factor;
  }
  return int64_t(result);
}

// PyTorch's div_floor_floating: the floor of the exact quotient; IEEE results for b == 0.
inline double floor_divide(double a, double b) {
  if (b == 0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, a / b);
  double floored = std::floor(div);
  if (div - floored > 0.5) floored += 1.0;
  return floored;
}

// Python's a % b on reals (torch.remainder): the sign of the divisor.
inline double python_fmod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}

// torch.maximum / torch.minimum: NaN in either operand gives NaN.
inline double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }
inline double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::min(a, b); }

}  // namespace kiln
