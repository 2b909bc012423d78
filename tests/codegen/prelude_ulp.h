// Error measurement for the prelude's float math (codegen/cpp/kiln_prelude.h): the error of a
// float result in units in the last place of the exact value (double-precision libm stands in
// for it), and sweeps of a function over float inputs: a stride through every float bit
// pattern, an even grid over a range, and a list of special values. Header-only with no Kiln
// dependency: tests/codegen/prelude_math_test.cpp uses it directly, and the test that builds
// the prelude with a generated code's compiler flags includes it in the program it compiles.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace kiln::prelude_test {

inline float float_from_bits(uint32_t bits) { float value; std::memcpy(&value, &bits, 4); return value; }

// The spacing of floats at the magnitude of `exact` (the float subnormal spacing below 2^-126,
// the spacing of the top binade beyond the float range).
inline double float_ulp_at(double exact) {
  double magnitude = std::fabs(exact);
  if (magnitude < 0x1p-126) return 0x1p-149;
  int exponent;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  if (exponent > 128) exponent = 128;
  return std::ldexp(1.0, exponent - 24);
}

// The error of `result` in ulps of `exact`; infinity when the result is not the right special
// value (NaN for NaN, the same infinity, the same sign of zero). A float infinity counts as
// 2^128, the first value past the float range, and so does an exact value beyond it.
inline double ulp_error(float result, double exact) {
  bool result_nan = std::isnan(result), exact_nan = std::isnan(exact);
  if (result_nan || exact_nan) return result_nan && exact_nan ? 0.0 : INFINITY;
  if (std::isinf(exact)) return double(result) == exact ? 0.0 : INFINITY;
  if (exact == 0.0 && result == 0.0) return std::signbit(exact) == std::signbit(result) ? 0.0 : INFINITY;
  // Beyond the float range, the exact value rounds to infinity (counted as 2^128).
  if (std::fabs(exact) > 0x1p128) exact = std::copysign(0x1p128, exact);
  double value = std::isinf(result) ? std::copysign(0x1p128, double(result)) : double(result);
  return std::fabs(value - exact) / float_ulp_at(exact);
}

// The error of `result` in multiples of `unit` (an absolute error, for a function whose bound is
// one: 1 + erf(x)); infinity for a wrong special value, as ulp_error.
inline double absolute_error(float result, double exact, double unit) {
  bool result_nan = std::isnan(result), exact_nan = std::isnan(exact);
  if (result_nan || exact_nan) return result_nan && exact_nan ? 0.0 : INFINITY;
  if (std::isinf(exact) || std::isinf(result)) return double(result) == exact ? 0.0 : INFINITY;
  return std::fabs(double(result) - exact) / unit;
}

struct ErrorStats {
  double max_ulp = 0;
  float worst_input = 0;
  float worst_result = 0;
  double worst_exact = 0;
  uint64_t points = 0;
  double absolute_unit = 0;  // > 0: errors are absolute, in this unit, instead of ulps of the exact value

  void add(float input, float result, double exact) {
    double error = absolute_unit > 0 ? absolute_error(result, exact, absolute_unit) : ulp_error(result, exact);
    ++points;
    if (error > max_ulp || (std::isinf(error) && !std::isinf(max_ulp))) {
      max_ulp = error;
      worst_input = input;
      worst_result = result;
      worst_exact = exact;
    }
  }
};

// Every `stride`-th float bit pattern (both signs, NaNs included), starting at `start`.
inline std::vector<float> bit_stride_inputs(uint32_t stride, uint32_t start = 0) {
  std::vector<float> inputs;
  inputs.reserve(size_t((uint64_t(1) << 32) / stride + 1));
  for (uint64_t bits = start; bits < (uint64_t(1) << 32); bits += stride) inputs.push_back(float_from_bits(uint32_t(bits)));
  return inputs;
}
// `count` points evenly spaced over [low, high], each rounded to float.
inline std::vector<float> even_grid(double low, double high, size_t count) {
  std::vector<float> inputs(count);
  for (size_t i = 0; i < count; ++i) inputs[i] = float(low + (high - low) * double(i) / double(count - 1));
  return inputs;
}
// Values every float function must get right: zeros, infinities, NaN, the extremes and the
// subnormal boundary.
inline std::vector<float> special_inputs() {
  return {0.0f,       -0.0f,         INFINITY,      -INFINITY,     NAN,        -NAN,      1.0f,   -1.0f,
          0.5f,       -0.5f,         2.0f,          -2.0f,         0x1p-149f,  -0x1p-149f, 0x1p-126f, -0x1p-126f,
          0x1.fffffcp-127f, 3.4028235e38f, -3.4028235e38f, 1e-30f, -1e-30f, 1e30f, -1e30f, 88.72283f,
          88.72284f,  -87.33655f,    -103.97208f,   -103.97209f,   0x1p-25f,   -0x1p-25f, 0x1p-24f, -0x1p-24f};
}

// Runs `approx` over `inputs` in one loop (an `omp simd` loop, as generated code calls it, when
// KILN_PRELUDE_TEST_SIMD is defined), then compares each result with `exact(double(input))`: in
// ulps of the exact value, or in multiples of `absolute_unit` when that is positive.
template <typename Approx, typename Exact>
ErrorStats measure(const std::vector<float>& inputs, Approx approx, Exact exact, double absolute_unit = 0) {
  std::vector<float> results(inputs.size());
  const float* in = inputs.data();
  float* out = results.data();
  size_t count = inputs.size();
#ifdef KILN_PRELUDE_TEST_SIMD
#pragma omp simd
#endif
  for (size_t i = 0; i < count; ++i) out[i] = approx(in[i]);
  ErrorStats stats;
  stats.absolute_unit = absolute_unit;
  for (size_t i = 0; i < count; ++i) stats.add(in[i], out[i], exact(double(in[i])));
  return stats;
}

}  // namespace kiln::prelude_test
