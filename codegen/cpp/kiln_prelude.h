// Kiln's prelude for generated C++: the text the C++ backend pastes at the top of every
// generated source file (embedded by codegen/CMakeLists.txt as kiln::codegen::cpp_prelude()).
// It owns what generated kernels need beyond plain arithmetic: the compiled-artifact ABI
// declarations, branch-free float math that GCC and Clang vectorize inside `#pragma omp simd`
// loops without -ffast-math, the interpreter's exact semantics for rounding, division and
// NaN-propagating max/min, f16/bf16 conversions and the Philox generator.
//
// Compile latency rules the form: no header but <stdint.h> and <stddef.h> (compiler builtins
// instead of <cmath> and <immintrin.h>); C++17 that GCC and Clang accept warning-free with
// -Wall -Wextra -Wpedantic -Wshadow -Wconversion; every function `static inline` with a `kiln_`
// prefix.
//
// Float math: the error is |result - exact| in ulps of the exact value (a correctly rounded
// result is within 0.5). "bound" is what tests/codegen/prelude_math_test.cpp and
// prelude_compile_test.cpp assert (this build's flags, and -O3 -march=native with FMA,
// vectorized); "seen" is the largest error over every float of the function's non-trivial
// range, with and without FMA:
//   function      bound  seen   checked exhaustively over
//   kiln_exp      1      0.98   2^-27 <= |x| <= 104 (0 below -104, inf above 88.72; 0.88 without FMA)
//   kiln_exp_nonpositive  1  0.98  -104 <= x <= 0 (0.86 without FMA)
//   kiln_expm1    2      1.01   2^-27 <= |x| <= 104
//   kiln_log      1      0.89   every positive float, subnormals included
//   kiln_log1p    1      0.89   -1 < x <= -2^-27, x >= 2^-27
//   kiln_sigmoid  2.5    2.40   2^-27 <= |x| <= 104
//   kiln_tanh     2      1.51   every float of |x| <= 20 (+-1 beyond 10)
//   kiln_erf      2      1.38   |x| < 4.5 (+-1 beyond), subnormals included
//   kiln_one_plus_erf  1.5  1.46   every float of |x| < 6 (2 and 0 beyond 3.92); ulps of 1, not of the
//                               result: an absolute error, as 1 + erf(x) computed in float has
//   kiln_sin/cos  1      0.501  2^-13 <= |x| <= 1e4; every 13th float from 2^26 to the largest
//   kiln_pow      1      0.50   5 million random pairs; computed in double (log, product, exp)
//   kiln_erfinv   1      0.508  every float of [0, 1] (odd); computed in double, against the
//                               interpreter's erfinv (ir/kernels/erfinv.h: libm has none)
// Subnormal inputs and results are handled (no flush to zero). Special values follow C:
// NaN in gives NaN, exp(-inf) = 0, exp overflows to +inf, log(0) = -inf, log(x < 0) = NaN,
// log1p(-1) = -inf, expm1(-inf) = -1, tanh(+-inf) = +-1, sin(+-inf) = NaN, pow has all of C's
// special cases, erfinv(+-1) = +-inf and NaN beyond (PyTorch's), and -0 maps to -0 for the odd
// functions. Double versions call the scalar libm builtins: f64 is rare.
#ifndef KILN_PRELUDE_H
#define KILN_PRELUDE_H

#include <stddef.h>
#include <stdint.h>

// ---------------------------------------------------------------- compiled-artifact ABI
// Repeated verbatim from runtime/compiled_abi.h (tests/codegen check the layouts agree).
#ifdef __cplusplus
extern "C" {
#endif

enum { kKilnAbiVersion = 1 };

// dtype codes: the order of kiln::DType (kiln/dtype.h).
typedef struct KilnTensorDesc {
  void* data;
  const int64_t* sizes;
  const int64_t* strides;  // elements
  int32_t dtype;
  int32_t rank;
} KilnTensorDesc;

// Runs graph node `fallback_index` (manifest "fallbacks" order) with the reference kernel:
// `inputs` are its tensor arguments, `outputs` its results (contiguous, preallocated).
// Returns 0, or non-zero with a message in `error`.
typedef int32_t (*KilnFallbackFn)(void* state, int32_t fallback_index, const KilnTensorDesc* inputs,
                                  int32_t num_inputs, const KilnTensorDesc* outputs, int32_t num_outputs,
                                  char* error, int64_t error_capacity);

typedef struct KilnRunArgs {
  const KilnTensorDesc* inputs;   // graph placeholder order
  void* const* outputs;           // graph output order, contiguous
  void* const* parameters;        // manifest "parameters" order, contiguous
  void* workspace;
  const int64_t* symbols;         // as bound by kiln_bind
  KilnFallbackFn fallback;        // may be null when the manifest lists no fallbacks
  void* fallback_state;
  char* error;
  int64_t error_capacity;
  int32_t num_threads;            // 0: the OpenMP default
} KilnRunArgs;

#ifdef __cplusplus
}
#endif

#define KILN_INLINE static inline __attribute__((always_inline, unused))
// A module's kernel functions, and the state its kernels and entry points share (the thread
// pool, the fault flags): external linkage hidden inside the module (state: one inline variable),
// so that a build may compile the kernels in several translation units (codegen/cpp/
// cpp_emitter.h: CppModule::kernel_spans); kernels are never inlined into kiln_run (one call
// each). A package's per-ISA sources, which hold the same kernels, and a standalone kernel
// header define both `static` first.
#ifndef KILN_KERNEL
#define KILN_KERNEL __attribute__((noinline, visibility("hidden")))
#endif
#ifndef KILN_MODULE_STATE
#define KILN_MODULE_STATE __attribute__((visibility("hidden"))) inline
#endif
// Sixteen f32 lanes of a row's max or min (codegen/cpp/cpp_reductions.cpp), combined by vector
// compares and blends: GCC's and Clang's vector extension, no header.
typedef float kiln_f32x16 __attribute__((vector_size(64)));
// Follows `#pragma omp simd` on a loop whose body applies a polynomial (exp, erf, tanh, ...):
// each iteration is one long dependent chain of vector instructions, and Clang's cost model
// keeps one chain in flight when the body is large; two interleaved chains keep the FMA units
// busy (the erf-GELU chain: 2x at one thread). Four spill more of the polynomials' constants
// than they gain: the chain, gelu and tanh run 5-25% slower at 4 (bench/README.md). GCC has no
// such hint.
#ifndef KILN_INTERLEAVE_SIMD
#if defined(__clang__)
#define KILN_INTERLEAVE_SIMD _Pragma("clang loop interleave_count(2)")
#else
#define KILN_INTERLEAVE_SIMD
#endif
#endif

// ---------------------------------------------------------------- bits and selects
KILN_INLINE uint32_t kiln_f32_bits(float x) { uint32_t u; __builtin_memcpy(&u, &x, 4); return u; }
KILN_INLINE float kiln_bits_f32(uint32_t u) { float x; __builtin_memcpy(&x, &u, 4); return x; }
KILN_INLINE uint64_t kiln_f64_bits(double x) { uint64_t u; __builtin_memcpy(&u, &x, 8); return u; }
KILN_INLINE double kiln_bits_f64(uint64_t u) { double x; __builtin_memcpy(&x, &u, 8); return x; }

// `condition ? if_true : if_false` as a bit blend. GCC (12, without -ffast-math) turns a `?:`
// into a branch, may then sink float arithmetic into it, and will not if-convert a branch
// holding float operations while -ftrapping-math is on (the default): the loop stays scalar.
// A blend keeps both arms computed and the code straight, so loops vectorize; every select
// below whose arms involve float arithmetic goes through these.
KILN_INLINE uint32_t kiln_select(bool condition, uint32_t if_true, uint32_t if_false) {
  uint32_t mask = 0u - uint32_t(condition);
  return (if_true & mask) | (if_false & ~mask);
}
KILN_INLINE float kiln_select(bool condition, float if_true, float if_false) {
  return kiln_bits_f32(kiln_select(condition, kiln_f32_bits(if_true), kiln_f32_bits(if_false)));
}
KILN_INLINE double kiln_select(bool condition, double if_true, double if_false) {
  uint64_t mask = 0ull - uint64_t(condition);
  return kiln_bits_f64((kiln_f64_bits(if_true) & mask) | (kiln_f64_bits(if_false) & ~mask));
}

// ---------------------------------------------------------------- rounding, sign, NaN
// Round half to even (the default rounding mode; nearbyint's result).
KILN_INLINE float kiln_round(float x) { return __builtin_rintf(x); }
KILN_INLINE double kiln_round(double x) { return __builtin_rint(x); }
// floor, ceil and trunc from rint, which GCC vectorizes (floor, ceil and trunc it vectorizes
// only with -fno-trapping-math): rint(x), minus 1 where it rounded up. Exact; -0 and NaN kept.
KILN_INLINE float kiln_floor(float x) {
  float rounded = __builtin_rintf(x);
  return kiln_select(rounded > x, rounded - 1.0f, rounded);
}
KILN_INLINE double kiln_floor(double x) {
  double rounded = __builtin_rint(x);
  return kiln_select(rounded > x, rounded - 1.0, rounded);
}
KILN_INLINE float kiln_ceil(float x) { return -kiln_floor(-x); }
KILN_INLINE double kiln_ceil(double x) { return -kiln_floor(-x); }
KILN_INLINE float kiln_trunc(float x) { return kiln_select(x < 0.0f, kiln_ceil(x), kiln_floor(x)); }
KILN_INLINE double kiln_trunc(double x) { return kiln_select(x < 0.0, kiln_ceil(x), kiln_floor(x)); }
KILN_INLINE float kiln_fabs(float x) { return __builtin_fabsf(x); }
KILN_INLINE double kiln_fabs(double x) { return __builtin_fabs(x); }
KILN_INLINE float kiln_sqrt(float x) { return __builtin_sqrtf(x); }
KILN_INLINE double kiln_sqrt(double x) { return __builtin_sqrt(x); }
// 1/sqrt(x) rounded once, as the interpreter computes it (in double).
KILN_INLINE float kiln_rsqrt(float x) { return float(1.0 / __builtin_sqrt(double(x))); }
KILN_INLINE double kiln_rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
KILN_INLINE bool kiln_isnan(float x) { return x != x; }
KILN_INLINE bool kiln_isnan(double x) { return x != x; }
// PyTorch's relu and sign: relu(NaN) = NaN; sign(NaN) = sign(-0) = 0.
KILN_INLINE float kiln_relu(float x) { return ((x > 0.0f) | (x != x)) ? x : 0.0f; }
KILN_INLINE double kiln_relu(double x) { return ((x > 0.0) | (x != x)) ? x : 0.0; }
KILN_INLINE float kiln_sign(float x) { return float(int(0.0f < x) - int(x < 0.0f)); }
KILN_INLINE double kiln_sign(double x) { return double(int(0.0 < x) - int(x < 0.0)); }

// ---------------------------------------------------------------- maximum, minimum
// NaN-propagating, as the interpreter: a NaN operand gives the quiet NaN; otherwise the larger
// (smaller) value, `a` on ties (so maximum(-0, +0) = -0, like std::max).
KILN_INLINE float kiln_maximum(float a, float b) { return ((a != a) | (b != b)) ? __builtin_nanf("") : (a < b ? b : a); }
KILN_INLINE double kiln_maximum(double a, double b) { return ((a != a) | (b != b)) ? __builtin_nan("") : (a < b ? b : a); }
KILN_INLINE float kiln_minimum(float a, float b) { return ((a != a) | (b != b)) ? __builtin_nanf("") : (b < a ? b : a); }
KILN_INLINE double kiln_minimum(double a, double b) { return ((a != a) | (b != b)) ? __builtin_nan("") : (b < a ? b : a); }
// Reduction accumulators, as the interpreter's amax/amin: start from -inf (+inf) or the first
// value; a NaN sticks; ties keep the accumulator. Also combines two partial results, the
// earlier one as `acc`. In a `#pragma omp simd reduction` they need a declared reduction:
//   #pragma omp declare reduction(kiln_max : float : omp_out = kiln_max_accumulate(omp_out, omp_in))
//       initializer(omp_priv = -__builtin_inff())
KILN_INLINE float kiln_max_accumulate(float acc, float value) { return ((value > acc) | (value != value)) ? value : acc; }
KILN_INLINE double kiln_max_accumulate(double acc, double value) { return ((value > acc) | (value != value)) ? value : acc; }
KILN_INLINE float kiln_min_accumulate(float acc, float value) { return ((value < acc) | (value != value)) ? value : acc; }
KILN_INLINE double kiln_min_accumulate(double acc, double value) { return ((value < acc) | (value != value)) ? value : acc; }

// ---------------------------------------------------------------- division and remainder
// Floats: computed in double exactly as the interpreter (ir/kernels/binary_kernels.cpp) and
// rounded once, so the results agree bit for bit (fmod is exact at any precision; it stays a
// scalar call).
KILN_INLINE double kiln_div_trunc(double a, double b) { return kiln_trunc(a / b); }
KILN_INLINE float kiln_div_trunc(float a, float b) { return float(kiln_div_trunc(double(a), double(b))); }
KILN_INLINE double kiln_fmod(double a, double b) { return __builtin_fmod(a, b); }
KILN_INLINE float kiln_fmod(float a, float b) { return __builtin_fmodf(a, b); }
// Python's remainder: the sign of the divisor.
KILN_INLINE double kiln_remainder(double a, double b) {
  double mod = __builtin_fmod(a, b);
  return kiln_select((mod != 0.0) & ((b < 0.0) != (mod < 0.0)), mod + b, mod);
}
KILN_INLINE float kiln_remainder(float a, float b) { return float(kiln_remainder(double(a), double(b))); }
// PyTorch's div_floor_floating: the floor of the exact quotient, IEEE results for b == 0.
KILN_INLINE double kiln_div_floor(double a, double b) {
  double mod = __builtin_fmod(a, b);
  double div = (a - mod) / b;
  div = kiln_select((mod != 0.0) & ((b < 0.0) != (mod < 0.0)), div - 1.0, div);
  double floored = kiln_floor(div);
  floored = kiln_select(div - floored > 0.5, floored + 1.0, floored);
  double quotient = a / b;
  floored = kiln_select(div == 0.0, __builtin_copysign(0.0, quotient), floored);
  return kiln_select(b == 0.0, quotient, floored);
}
KILN_INLINE float kiln_div_floor(float a, float b) { return float(kiln_div_floor(double(a), double(b))); }

// Integers: exact in int64 with two's-complement wrap (INT64_MIN / -1 = INT64_MIN), as the
// interpreter. Narrower types promote to int or int64 and the caller truncates the result,
// which equals the interpreter's wrap. Division by zero returns 0 and never traps: the
// interpreter raises "ZeroDivisionError: integer division by zero" (or "... remainder / fmod
// by zero"), so a kernel must test the divisor itself to report it.
KILN_INLINE int64_t kiln_int_div_trunc(int64_t a, int64_t b) {
  int64_t divisor = ((b == 0) | (b == -1)) ? 1 : b;
  int64_t quotient = a / divisor;
  quotient = b == -1 ? int64_t(0 - uint64_t(a)) : quotient;
  return b == 0 ? 0 : quotient;
}
KILN_INLINE int64_t kiln_int_div_floor(int64_t a, int64_t b) {
  int64_t divisor = ((b == 0) | (b == -1)) ? 1 : b;
  int64_t quotient = a / divisor, rest = a % divisor;
  quotient = ((rest != 0) & ((rest < 0) != (divisor < 0))) ? quotient - 1 : quotient;
  quotient = b == -1 ? int64_t(0 - uint64_t(a)) : quotient;
  return b == 0 ? 0 : quotient;
}
// C's remainder (the sign of the dividend): the integer fmod.
KILN_INLINE int64_t kiln_int_fmod(int64_t a, int64_t b) {
  int64_t divisor = ((b == 0) | (b == -1)) ? 1 : b;
  return ((b == 0) | (b == -1)) ? 0 : a % divisor;
}
// Python's remainder (the sign of the divisor).
KILN_INLINE int64_t kiln_int_remainder(int64_t a, int64_t b) {
  int64_t rest = kiln_int_fmod(a, b);
  return ((rest != 0) & ((rest < 0) != (b < 0))) ? int64_t(uint64_t(rest) + uint64_t(b)) : rest;
}
KILN_INLINE int32_t kiln_int_div_trunc(int32_t a, int32_t b) { return int32_t(kiln_int_div_trunc(int64_t(a), int64_t(b))); }
KILN_INLINE int32_t kiln_int_div_floor(int32_t a, int32_t b) { return int32_t(kiln_int_div_floor(int64_t(a), int64_t(b))); }
KILN_INLINE int32_t kiln_int_fmod(int32_t a, int32_t b) { return int32_t(kiln_int_fmod(int64_t(a), int64_t(b))); }
KILN_INLINE int32_t kiln_int_remainder(int32_t a, int32_t b) { return int32_t(kiln_int_remainder(int64_t(a), int64_t(b))); }

// Float to int64 as the interpreter stores it: truncation toward zero, NaN gives 0, values
// beyond the range saturate (never the undefined behaviour of a plain cast).
KILN_INLINE int64_t kiln_saturate_to_i64(double x) {
  double in_range = kiln_select(x < -0x1p63, -0x1p63, kiln_select(x < 0x1p63, x, 0.0));
  int64_t value = int64_t(kiln_select(x != x, 0.0, in_range));
  return x >= 0x1p63 ? INT64_MAX : value;
}
KILN_INLINE int64_t kiln_saturate_to_i64(float x) { return kiln_saturate_to_i64(double(x)); }

// ---------------------------------------------------------------- exp, expm1
// x = k ln2 + r_high + r_low with k = rint(x / ln2) clamped to [k_min, k_max] (so out-of-range
// and NaN inputs stay harmless; callers select their results for those). ln2 = 0.693359375
// (9 bits, so k * 0.693359375 and r_high = x - k * 0.693359375 are exact) - 2.12194440e-4.
KILN_INLINE float kiln_reduce_ln2(float x, int32_t k_min, int32_t k_max, int32_t* k, float* r_low) {
  const float shifter = 0x1.8p23f;  // adding it rounds to an integer in the low mantissa bits
  int32_t n = int32_t(kiln_f32_bits(x * 0x1.715476p0f + shifter) - kiln_f32_bits(shifter));
  n = n < k_min ? k_min : n;
  n = n > k_max ? k_max : n;
  float kf = float(n);
  *k = n;
  *r_low = kf * 2.12194440e-4f;
  return x - kf * 0.693359375f;
}

// e^r - 1 - r on |r| <= ln2/2 (+ a little): r^2 P(r), P a minimax fit of (e^r - 1 - r) / r^2
// with float coefficients, weighted by r^2 / |e^r - 1| (relative error of expm1: 0.04 ulp).
KILN_INLINE float kiln_exp_tail(float r) {
  float p = 0x1.a032cep-13f;
  p = p * r + 0x1.6d72f4p-10f;
  p = p * r + 0x1.11118ap-7f;
  p = p * r + 0x1.5554bp-5f;
  p = p * r + 0x1.555554p-3f;
  p = p * r + 0.5f;
  return (r * r) * p;
}

// e^(x - k ln2) - 1 for k = kf = rint(x / ln2), |x - k ln2| <= ln2/2 (+ a little). With fused
// multiply-adds, r = x - k ln2 in two (Cody and Waite's split of ln2 into float(ln2) and the rest)
// and r + tail(r): three instructions fewer than the exact 9-bit split below, 0.98 ulp against
// 0.86-0.88 in kiln_exp and kiln_exp_nonpositive over every float of their ranges; the erf-GELU
// chain's loop, whose sigmoid takes this, 7-9% faster (bench/README.md). Without them,
// r_high + (r_low + tail): the last addition rounds at the result's scale, and r_low (~2^-5 of r)
// joins r_high only there (summing 1 + r_high with its exact rounding error as well gave 0.78 ulp
// against 0.88, at 11% of the softmax kernel's time).
KILN_INLINE float kiln_exp_reduced_minus_one(float x, float kf) {
#if defined(__FMA__)
  float r = __builtin_fmaf(kf, -0x1.62e43p-1f, x);
  r = __builtin_fmaf(kf, 0x1.05c61p-29f, r);
  return r + kiln_exp_tail(r);
#else
  float r_high = x - kf * 0.693359375f, r_low = kf * 2.12194440e-4f;
  return r_high + (r_low + kiln_exp_tail(r_high + r_low));
#endif
}

// e^x for -104 <= x <= 89 (and NaN, which gives NaN); kiln_exp selects the ends. k = rint(x / ln2)
// comes from the shifter sum without a clamp: out of range, k is garbage but finite and the
// callers select the result.
KILN_INLINE float kiln_exp_in_range(float x) {
  const float shifter = 0x1.8p23f;
  float shifted = x * 0x1.715476p0f + shifter;
  float kf = shifted - shifter;
  int32_t k = int32_t(kiln_f32_bits(shifted) - kiln_f32_bits(shifter));
  float p = 1.0f + kiln_exp_reduced_minus_one(x, kf);
  // 2^k in two factors, so that results in the subnormal range are rounded once. Both factors
  // are normal for every k in [-151, 129] whichever way the halving rounds, so an arithmetic
  // shift (GCC's and Clang's >> of a negative int) does: one instruction where k / 2 took five.
  int32_t half = k >> 1;
  float scale_a = kiln_bits_f32(uint32_t(half + 127) << 23);
  float scale_b = kiln_bits_f32(uint32_t(k - half + 127) << 23);
  return (p * scale_a) * scale_b;
}

KILN_INLINE float kiln_exp(float x) {
  // Past 89 the result is +inf, below -104 it is 0 (NaN takes neither).
  float result = kiln_select(x > 89.0f, __builtin_inff(), kiln_exp_in_range(x));
  return kiln_select(x < -104.0f, 0.0f, result);
}
KILN_INLINE double kiln_exp(double x) { return __builtin_exp(x); }
// e^x for -104 <= x <= 0 (and NaN): as kiln_exp_in_range, with 2^k applied in one rounding as
// (p 2^(k+64)) 2^-64. An integer add puts k in the exponent of p 2^64, which is normal for every
// k >= -150, so the add is exact and only the last product rounds (into the subnormals too): 3
// instructions where the two factors took 8 (sigmoid and the softmax kernel, bench/README.md).
KILN_INLINE float kiln_exp_nonpositive_in_range(float x) {
  const float shifter = 0x1.8p23f;
  float shifted = x * 0x1.715476p0f + shifter;
  float kf = shifted - shifter;
  float p64 = 0x1p64f + 0x1p64f * kiln_exp_reduced_minus_one(x, kf);
  // The bits of `shifted` are the shifter's plus k, and the shifter's shifted by 23 are 0 mod 2^32.
  // A NaN's payload would shift into the exponent: the factor 2^-64 + x 0 carries the NaN instead
  // (x 0 is +-0 for finite x; -inf gives NaN here, which kiln_exp_nonpositive selects away).
  return kiln_bits_f32(kiln_f32_bits(p64) + (kiln_f32_bits(shifted) << 23)) * (0x1p-64f + x * 0.0f);
}
// e^x for x <= 0 or NaN (a value minus its row's max: softmax's), without the overflow select.
KILN_INLINE float kiln_exp_nonpositive(float x) {
  return kiln_select(x < -104.0f, 0.0f, kiln_exp_nonpositive_in_range(x));
}
KILN_INLINE double kiln_exp_nonpositive(double x) { return __builtin_exp(x); }

KILN_INLINE float kiln_expm1(float x) {
  int32_t k;
  float r_low, r_high = kiln_reduce_ln2(x, -27, 128, &k, &r_low);
  // 2^k (1 + em) - 1 = 2 (t em + (t - 1/2)) with t = 2^(k-1): halving every term is exact and
  // t stays finite for k = 128. With em = r_high + (r_low + tail), the leading terms
  // (t - 1/2) + t r_high are summed with their exact rounding errors (t - 1/2 rounds for
  // k > 24; |t - 1/2| >= |t r_high| or t - 1/2 = 0), so only the last addition rounds at the
  // result's scale.
  float t = kiln_bits_f32(uint32_t(k - 1 + 127) << 23);
  float lead = t - 0.5f, scaled = t * r_high;
  float lead_error = (t - lead) - 0.5f;
  float sum = lead + scaled;
  float sum_error = (lead - sum) + scaled;
  float low = (sum_error + lead_error) + t * (r_low + kiln_exp_tail(r_high + r_low));
  float result = 2.0f * (sum + low);
  // Past 89 the result is +inf; below -18, e^x < 2^-25 and it rounds to -1; for tiny |x|
  // (and -0) it is x itself, x + x^2/2 rounding to x.
  result = kiln_select(x > 89.0f, __builtin_inff(), result);
  result = kiln_select(x < -18.0f, -1.0f, result);
  return kiln_select(__builtin_fabsf(x) < 0x1p-25f, x, result);
}
KILN_INLINE double kiln_expm1(double x) { return __builtin_expm1(x); }

// ---------------------------------------------------------------- log, log1p
// log(1 + f) - f for f in [sqrt(1/2) - 1, sqrt(2) - 1]: Cephes' logf polynomial.
KILN_INLINE float kiln_log1p_tail(float f) {
  float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  return f * z * p - 0.5f * z;
}

// Splits a positive normal float into 2^e * m with m in [sqrt(1/2), sqrt(2)); returns m - 1
// (exact).
KILN_INLINE float kiln_split_log(float x, int32_t* e) {
  uint32_t bits = kiln_f32_bits(x) + (0x3f800000u - 0x3f3504f3u);
  *e = int32_t(bits >> 23) - 127;
  return kiln_bits_f32((bits & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
}

KILN_INLINE float kiln_log(float x) {
  bool subnormal = x < 0x1p-126f;
  int32_t e;
  float f = kiln_split_log(kiln_select(subnormal, x * 0x1p23f, x), &e);
  float fe = float(e - (subnormal ? 23 : 0));
  // log 2 = 0.693359375 - 2.12194440e-4, as in exp.
  float result = (f + (kiln_log1p_tail(f) + fe * -2.12194440e-4f)) + fe * 0.693359375f;
  float special = kiln_select(x == 0.0f, -__builtin_inff(), kiln_select(x == __builtin_inff(), x, __builtin_nanf("")));
  return kiln_select((x > 0.0f) & (x < __builtin_inff()), result, special);
}
KILN_INLINE double kiln_log(double x) { return __builtin_log(x); }

KILN_INLINE float kiln_log1p(float x) {
  float u = 1.0f + x;
  int32_t e;
  float f = kiln_split_log(u, &e);
  // log(1 + x) = log(u) + c with c ~ (1 + x - u) / u, the rounding error of u (musl's log1pf).
  // With e == 0, f is x itself (exact) and needs no correction.
  float c = kiln_select(e >= 2, 1.0f - (u - x), x - (u - 1.0f)) / u;
  c = kiln_select((e != 0) & (e < 25), c, 0.0f);
  f = kiln_select(e == 0, x, f);
  float fe = float(e);
  float result = (f + (kiln_log1p_tail(f) + (fe * -2.12194440e-4f + c))) + fe * 0.693359375f;
  float special = kiln_select(x == -1.0f, -__builtin_inff(), kiln_select(x == __builtin_inff(), x, __builtin_nanf("")));
  result = kiln_select((x > -1.0f) & (x < __builtin_inff()), result, special);
  // Tiny |x| (and -0) gives x itself: x - x^2/2 rounds to x.
  return kiln_select(__builtin_fabsf(x) < 0x1p-25f, x, result);
}
KILN_INLINE double kiln_log1p(double x) { return __builtin_log1p(x); }

// ---------------------------------------------------------------- sigmoid, tanh, erf
KILN_INLINE float kiln_sigmoid(float x) {
  // With e = exp(-|x|) <= 1: 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0 (no overflow,
  // subnormal results kept). All in float, 8 or 16 lanes per instruction: one quotient, of the
  // numerator selected (2.40 ulp; a reciprocal times e took an instruction more, 2.83 ulp; a
  // double quotient measured 1.48 ulp at twice the cost).
  float minus_a = -__builtin_fabsf(x);
  float e = kiln_exp_nonpositive(minus_a);
  return kiln_select(x < 0.0f, e, 1.0f) / (1.0f + e);
}
KILN_INLINE double kiln_sigmoid(double x) { return 1.0 / (1.0 + __builtin_exp(-x)); }

KILN_INLINE float kiln_tanh(float x) {
  // |x| < 0.625: |x| + |x|^3 P(x^2), P a fit of (tanh(x) - x) / x^3 weighted by x^3 / tanh(x) (the
  // relative error of tanh: 0.14 ulp; scripts/fit_tanh_prelude.py). From 0.625 on: (1 - e) / (1 + e)
  // with e = exp(-2|x|) <= 0.29, where the division and e's error stay near an ulp; tanh(10)
  // already rounds to 1. NaN takes the polynomial (a >= 0.625 is false), which gives NaN; the
  // sign goes on last, so -0 stays -0.
  float a = __builtin_fabsf(x);
  float z = x * x;
  float p = -0x1.75e1c4p-8f;
  p = p * z + 0x1.52269ap-6f;
  p = p * z - 0x1.b83c5ap-5f;
  p = p * z + 0x1.110726p-3f;
  p = p * z - 0x1.555532p-2f;
  float small = a + (a * z) * p;
  float e = kiln_exp_nonpositive_in_range(-2.0f * kiln_select(a < 10.0f, a, 10.0f));
  float large = (1.0f - e) / (1.0f + e);
  return __builtin_copysignf(kiln_select(a >= 0.625f, large, small), x);
}
KILN_INLINE double kiln_tanh(double x) { return __builtin_tanh(x); }

// e^q for -18 < q <= 0 (erf's and 1 + erf's exp(Q)): 2^k stays normal, so one integer add into the
// exponent scales, and there is no select.
KILN_INLINE float kiln_exp_moderate_negative(float q) {
  const float shifter = 0x1.8p23f;
  float shifted = q * 0x1.715476p0f + shifter;
  float kf = shifted - shifter;
  float r = (q - kf * 0.693359375f) + kf * 2.12194440e-4f;
  return kiln_bits_f32(kiln_f32_bits(1.0f + (r + kiln_exp_tail(r))) + (kiln_f32_bits(shifted) << 23));
}

KILN_INLINE float kiln_erf(float x) {
  float a = __builtin_fabsf(x);
  // |x| < 0.921875: x + x P(x^2), a minimax fit of erf(x) - x relative to erf(x).
  float z = x * x;
  float p = 0x1.5f12dep-14f;
  p = p * z - 0x1.aaea14p-11f;
  p = p * z + 0x1.54daeap-8f;
  p = p * z - 0x1.b8107ep-6f;
  p = p * z + 0x1.ce2e2p-4f;
  p = p * z - 0x1.812744p-2f;
  p = p * z + 0x1.06eba8p-3f;
  float small = x + x * p;
  // 0.921875 <= |x| < 3.92: 1 - exp(Q(|x|)), Q a fit of log(erfc(|x|)) weighted by erfc(|x|)
  // (the absolute error of erf). From 3.92 on, erfc < 2^-25 and erf rounds to 1: b stops at 3.92,
  // where 1 - exp(Q) already rounds to 1 (NaN also takes 3.92, and then `small`).
  float b = kiln_select(a < 3.92f, a, 3.92f);
  float q = 0x1.986354p-13f;
  q = q * b - 0x1.8d5ba8p-9f;
  q = q * b + 0x1.6b6b88p-6f;
  q = q * b - 0x1.a952fcp-4f;
  q = q * b - 0x1.464a52p-1f;
  q = q * b - 0x1.20ab68p+0f;
  q = q * b - 0x1.b8365p-13f;
  float large = 1.0f - kiln_exp_moderate_negative(q);
  // NaN takes `small`, which is NaN.
  return kiln_select(a >= 0.921875f, __builtin_copysignf(large, x), small);
}
KILN_INLINE double kiln_erf(double x) { return __builtin_erf(x); }

// 1 + erf(x) = erfc(-x), where the generated code computes 1 + erf(x) (GELU's x/2 (1 + erf(x / sqrt 2));
// codegen/schedule_erf_complements.cpp): one exponential where erf takes two branches. With u = |x|,
// E = erfc(u) = 2^(u P(u)), P a fit of log2(erfc(u)) / u weighted by u erfc(u) ln 2, E's absolute error
// (scripts/fit_one_plus_erf_prelude.py: 0.15 ulp of 1); the result is 2 - E for x >= 0 and E itself
// for x < 0, so a small result is not the difference of two numbers near 1 (where it exceeds 1e-6,
// within 0.8% of erfc(-x) against 2.9% for 1 + kiln_erf(x)). The error is bounded absolutely, as
// 1 + erf(x) in float is: 1.46 ulps of 1 (1.32 with FMA; 1 + kiln_erf(x): 1.05). From 3.92 on, E < 2^-25: the
// result is 2 or 0, and NaN gives NaN.
// Base 2, because the error counted is absolute: the exponent q = u P(u) (in [-27, 0]) splits
// exactly into k = rint(q) and r = q - k, so 2^r needs no reduction by a split ln 2 (three
// instructions fewer than e^q) and a degree-6 polynomial (0.27 ulp relative) where e^r took 7.
KILN_INLINE float kiln_one_plus_erf(float x) {
  float u = __builtin_fabsf(x);
  bool beyond = u >= 3.92f;
  float b = kiln_select(beyond, 3.92f, u);
  // P by Estrin's scheme (pairs, then b^2 and b^4): Horner's chain of 7 dependent FMAs left too
  // little work in flight beside the exponential that follows (the erf-GELU chain 6% slower).
  float b2 = b * b, b4 = b2 * b2;
  float p01 = -0x1.d63aacp-1f * b - 0x1.a0be9ep+0f;
  float p23 = 0x1.cee88cp-6f * b - 0x1.301722p-3f;
  float p45 = -0x1.867292p-10f * b - 0x1.9621a4p-11f;
  float p67 = -0x1.7c7eb6p-15f * b + 0x1.d325ep-12f;
  float q = ((p01 + b2 * p23) + b4 * (p45 + b2 * p67)) * b;
  // k = rint(q) from the shifter's sum (exact: |q| < 2^22), r = q - k exact (|r| <= 1/2, a
  // multiple of q's ulp); 2^r = 1 + r Q(r), Q a fit of (2^r - 1) / r relative to 2^r.
  const float shifter = 0x1.8p23f;
  float shifted = q + shifter;
  float r = q - (shifted - shifter);
  float p = 0x1.41fbb8p-13f;
  p = p * r + 0x1.5f3e54p-10f;
  p = p * r + 0x1.3b2d4cp-7f;
  p = p * r + 0x1.c6aee8p-5f;
  p = p * r + 0x1.ebfbdcp-3f;
  p = p * r + 0x1.62e43p-1f;
  p = p * r + 1.0f;
  // 2^k by an integer add to the exponent (the shifter's bits shifted by 23 are 0 mod 2^32; the
  // result is normal: k >= -27). A NaN's payload would shift into the exponent too: b * 0 (0 for
  // finite b, NaN for NaN) carries the NaN past it.
  float e = kiln_bits_f32(kiln_f32_bits(p) + (kiln_f32_bits(shifted) << 23)) + b * 0.0f;
  e = kiln_select(beyond, 0.0f, e);
  return kiln_select(x < 0.0f, e, 2.0f - e);
}
KILN_INLINE double kiln_one_plus_erf(double x) { return __builtin_erfc(-x); }

// ---------------------------------------------------------------- sin, cos
// Both reduce |x| = n pi/2 + r, |r| <= pi/4, and evaluate FreeBSD's k_sinf/k_cosf polynomials
// in double. Below 2^27 the reduction is Cody-Waite in double (pi/2 as 25 + 53 bits: n times
// the high part is exact); from 2^27 on it is Payne-Hanek as in glibc's sinf: the float's
// mantissa times a 96-bit window of 2/pi's bits, chosen by its exponent, gives x 2/pi mod 4
// in 2.62 fixed point, and r to 33 bits. Both run for every lane (a select picks one).
static const uint32_t kiln_two_over_pi_bits[24] __attribute__((unused)) = {
    0x000000a2, 0x0000a2f9, 0x00a2f983, 0xa2f9836e, 0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
    0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1, 0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
    0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599, 0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041};

// Returns r and writes the quadrant n mod 4 (as a double, 0 to 3) for a = |x| (finite or not:
// infinities and NaN give garbage that the callers replace with NaN).
KILN_INLINE double kiln_reduce_pio2(float a, double* quadrant) {
  double ad = double(a);
  double n = __builtin_rint(ad * 0x1.45f306dc9c883p-1);
  double r_small = (ad - n * 0x1.921fb5p+0) - n * 0x1.110b4611a6263p-26;
  double quadrant_small = n - 4.0 * kiln_floor(n * 0.25);
  uint32_t bits = kiln_f32_bits(a);
  uint32_t window = (bits >> 26) & 15u;  // indexed, not a pointer: GCC vectorizes it as a gather
  uint32_t mantissa = ((bits & 0x7fffffu) | 0x800000u) << ((bits >> 23) & 7u);
  uint64_t low = uint64_t(mantissa) * kiln_two_over_pi_bits[window + 4];
  uint64_t high = uint64_t(mantissa) * kiln_two_over_pi_bits[window + 8];
  uint64_t top = uint32_t(mantissa * kiln_two_over_pi_bits[window]);
  uint64_t fixed = ((high >> 32) | (top << 32)) + low;
  uint64_t n_large = (fixed + (1ull << 61)) >> 62;
  // The signed 2.62 remainder to double as high * 2^32 + low: AVX2 converts int32 but not int64
  // (and has no 64-bit arithmetic shift), so the halves are converted apart, the unsigned low
  // half by the 2^52 bit trick.
  uint64_t remainder = fixed - (n_large << 62);
  double high_half = double(int32_t(uint32_t(remainder >> 32)));
  double low_half = kiln_bits_f64(0x4330000000000000ull | (remainder & 0xffffffffull)) - 0x1p52;
  double r_large = (high_half * 0x1p32 + low_half) * 0x1.921fb54442d18p-62;  // pi/2 2^-62
  bool large = a >= 0x1p27f;
  *quadrant = kiln_select(large, double(int32_t(n_large)), quadrant_small);
  return kiln_select(large, r_large, r_small);
}
KILN_INLINE double kiln_sin_reduced(double r) {
  double z = r * r, w = z * z, s = z * r;
  double high = -0x1.a00f9e2cae774p-13 + z * 0x1.6cd878c3b46a7p-19;
  return (r + s * (-0x1.5555554cbac77p-3 + z * 0x1.11110896efbb2p-7)) + s * w * high;
}
KILN_INLINE double kiln_cos_reduced(double r) {
  double z = r * r, w = z * z;
  double high = -0x1.6c087e80f1e27p-10 + z * 0x1.99342e0ee5069p-16;
  return ((1.0 + z * -0x1.ffffffd0c5e81p-2) + w * 0x1.55553e1053a42p-5) + (w * z) * high;
}
KILN_INLINE float kiln_sin(float x) {
  float a = __builtin_fabsf(x);
  double quadrant;
  double r = kiln_reduce_pio2(a, &quadrant);
  double value = kiln_select((quadrant == 1.0) | (quadrant == 3.0), kiln_cos_reduced(r), kiln_sin_reduced(r));
  value = kiln_select((quadrant >= 2.0) != (x < 0.0f), -value, value);  // sin(-x) = -sin(x)
  float result = kiln_select(a < __builtin_inff(), float(value), __builtin_nanf(""));
  // Tiny |x| (and -0) gives x itself.
  return kiln_select(a < 0x1p-12f, x, result);
}
KILN_INLINE double kiln_sin(double x) { return __builtin_sin(x); }
KILN_INLINE float kiln_cos(float x) {
  float a = __builtin_fabsf(x);
  double quadrant;
  double r = kiln_reduce_pio2(a, &quadrant);
  double value = kiln_select((quadrant == 1.0) | (quadrant == 3.0), kiln_sin_reduced(r), kiln_cos_reduced(r));
  value = kiln_select((quadrant == 1.0) | (quadrant == 2.0), -value, value);
  return kiln_select(a < __builtin_inff(), float(value), __builtin_nanf(""));
}
KILN_INLINE double kiln_cos(double x) { return __builtin_cos(x); }

// ---------------------------------------------------------------- pow
// log(x) in double for a float x (never subnormal in double): fdlibm's log, branch-free.
KILN_INLINE double kiln_log_of_float(double x) {
  uint64_t bits = kiln_f64_bits(x) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
  double e = double(int32_t(bits >> 52) - 1023);
  double f = kiln_bits_f64((bits & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
  double s = f / (2.0 + f), z = s * s, w = z * z;
  double t1 = w * (0x1.999999997fa04p-2 + w * (0x1.c71c51d8e78afp-3 + w * 0x1.39a09d078c69fp-3));
  double t2 = z * (0x1.5555555555593p-1 + w * (0x1.2492494229359p-2 + w * (0x1.7466496cb03dep-3 + w * 0x1.2f112df3e5244p-3)));
  double half_f2 = 0.5 * f * f;
  double result = e * 0x1.62e42feep-1 - ((half_f2 - (s * (half_f2 + (t1 + t2)) + e * 0x1.a39ef35793c76p-33)) - f);
  double special = kiln_select(x == 0.0, -__builtin_inf(), kiln_select(x == __builtin_inf(), x, __builtin_nan("")));
  return kiln_select((x > 0.0) & (x < __builtin_inf()), result, special);
}
// e^t in double for the exponents a float pow needs: 2^k times a degree-11 Taylor polynomial
// on |r| <= ln2/2 (relative error below 1e-14); t is clamped to [-300, 300] (the float
// result is 0 or inf well before), NaN passes through.
KILN_INLINE double kiln_exp_for_float(double t) {
  double clamped = kiln_select(t > 300.0, 300.0, kiln_select(t < -300.0, -300.0, t));
  const double shifter = 0x1.8p52;
  double shifted = clamped * 0x1.71547652b82fep0 + shifter;
  double k = shifted - shifter;
  int64_t ki = int64_t(kiln_f64_bits(shifted) - kiln_f64_bits(shifter));
  double r = (clamped - k * 0x1.62e42fee00000p-1) - k * 0x1.a39ef35793c76p-33;
  double p = 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  return p * kiln_bits_f64(uint64_t(ki + 1023) << 52);
}
// C's powf: |x|^y = e^(y log|x|) in double, rounded once; then C's special cases as selects.
KILN_INLINE float kiln_pow(float x, float y) {
  double magnitude = kiln_exp_for_float(double(y) * kiln_log_of_float(double(__builtin_fabsf(x))));
  float result = float(magnitude);
  float y_half = y * 0.5f;
  bool y_integer = __builtin_rintf(y) == y;  // true for +-inf
  bool y_odd = y_integer & (__builtin_rintf(y_half) != y_half);
  bool x_negative = kiln_f32_bits(x) >> 31 != 0;  // includes -0 and -inf
  result = kiln_select(x_negative & y_odd, -result, result);
  // A finite negative base to a finite non-integer power.
  result = kiln_select((x < 0.0f) & (x > -__builtin_inff()) & !y_integer, __builtin_nanf(""), result);
  result = kiln_select((x == -1.0f) & (__builtin_fabsf(y) == __builtin_inff()), 1.0f, result);
  return kiln_select((x == 1.0f) | (y == 0.0f), 1.0f, result);
}
KILN_INLINE double kiln_pow(double x, double y) { return __builtin_pow(x, y); }

// ---------------------------------------------------------------- erfinv
// erfinv(x) / x in double as a function of w = -log(1 - x^2): P1(w - 2.5) for w < 5, else
// P2(sqrt(w) - 3), both of degree 11 (scripts/fit_erfinv_prelude.py fits them; relative error
// below 6e-10 for w < 16.2, which every float below 1 is), as in M. Giles' "Approximating the
// erfinv function". Both are computed and a select picks one.
KILN_INLINE double kiln_erfinv_ratio(double w) {
  double z1 = w - 2.5;
  double central = 0x1.22f3c4bec78abp-33;
  central = central * z1 + 0x1.e0f9606c80000p-32;
  central = central * z1 - 0x1.7a6c867313cafp-27;
  central = central * z1 + 0x1.1a9f562aa15dbp-26;
  central = central * z1 + 0x1.0180d5e7ab384p-21;
  central = central * z1 - 0x1.cbd3ac0103d21p-19;
  central = central * z1 - 0x1.4f730db3160a2p-18;
  central = central * z1 + 0x1.c9bb502256871p-13;
  central = central * z1 - 0x1.48639d605c9bep-10;
  central = central * z1 - 0x1.11c3e06f356c3p-8;
  central = central * z1 + 0x1.f91e89754a439p-3;
  central = central * z1 + 0x1.805c5cff6528ap+0;
  double z2 = __builtin_sqrt(w) - 3.0;
  double tail = -0x1.a3c86b91557abp-17;
  tail = tail * z2 - 0x1.c3961a6160000p-17;
  tail = tail * z2 + 0x1.78cabe0eea141p-13;
  tail = tail * z2 - 0x1.3e078a97722bfp-12;
  tail = tail * z2 - 0x1.132991c587100p-13;
  tail = tail * z2 + 0x1.868a2c5548a93p-10;
  tail = tail * z2 - 0x1.d32006370afc7p-9;
  tail = tail * z2 + 0x1.748655ea2ed12p-8;
  tail = tail * z2 - 0x1.f4e7e62b54d99p-8;
  tail = tail * z2 + 0x1.358342832bc3dp-7;
  tail = tail * z2 + 0x1.006dca2a18e54p+0;
  tail = tail * z2 + 0x1.6a9efbd4fcb85p+1;
  return kiln_select(w < 5.0, central, tail);
}
// PyTorch's erfinv: +-inf at +-1, NaN beyond and for NaN, -0 kept. (1 - a)(1 + a) is exact in
// double for a float a, and its log is the branch-free one of pow.
KILN_INLINE float kiln_erfinv(float x) {
  double a = double(__builtin_fabsf(x));
  double w = -kiln_log_of_float((1.0 - a) * (1.0 + a));
  float result = float(a * kiln_erfinv_ratio(w));
  result = kiln_select(a == 1.0, __builtin_inff(), result);
  result = kiln_select(a > 1.0, __builtin_nanf(""), result);  // NaN inputs are NaN already
  return __builtin_copysignf(result, x);
}
// The double version: the estimate above (or, closer to 1 than floats come, the asymptotic form
// of erfc), then three Halley steps on erf(y) - |x| with libm's erf and erfc: the interpreter's
// method (ir/kernels/erfinv.h), within an ulp or two of it. Scalar: f64 is rare.
KILN_INLINE double kiln_erfinv(double x) {
  if ((x != x) | (x < -1.0) | (x > 1.0)) return __builtin_nan("");
  if ((x == 1.0) | (x == -1.0)) return __builtin_copysign(__builtin_inf(), x);
  if (x == 0.0) return x;
  double a = __builtin_fabs(x);
  double w = -__builtin_log((1.0 - a) * (1.0 + a));
  double tail = -__builtin_log(1.0 - a);
  double asymptotic = __builtin_sqrt(tail - 0.5 * __builtin_log(tail) - 0.57236494292470008);  // log sqrt(pi)
  double y = w < 16.0 ? a * kiln_erfinv_ratio(w) : asymptotic;
  for (int step = 0; step < 3; ++step) {
    double residual = a <= 0.5 ? __builtin_erf(y) - a : (1.0 - a) - __builtin_erfc(y);
    double slope = 1.1283791670955126 * __builtin_exp(-y * y);
    y -= residual / (slope + y * residual);
  }
  return __builtin_copysign(y, x);
}

// ---------------------------------------------------------------- f16, bf16
// Bit for bit runtime/half.h: round to nearest even, infinities kept, NaN quieted.
KILN_INLINE float kiln_bf16_to_f32(uint16_t value) { return kiln_bits_f32(uint32_t(value) << 16); }

KILN_INLINE uint16_t kiln_f32_to_bf16(float value) {
  uint32_t bits = kiln_f32_bits(value);
  uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return uint16_t(kiln_select((bits & 0x7fffffffu) > 0x7f800000u, quiet_nan, rounded));
}

KILN_INLINE float kiln_f16_to_f32(uint16_t value) {
  uint32_t sign = uint32_t(value & 0x8000u) << 16;
  uint32_t exponent = (uint32_t(value) >> 10) & 0x1fu;
  uint32_t mantissa = value & 0x3ffu;
  uint32_t normal = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  uint32_t inf_nan = sign | 0x7f800000u | (mantissa << 13);
  uint32_t subnormal = sign | kiln_f32_bits(float(int32_t(mantissa)) * 0x1p-24f);  // zero too
  return kiln_bits_f32(kiln_select(exponent == 0x1fu, inf_nan, kiln_select(exponent == 0u, subnormal, normal)));
}

KILN_INLINE uint16_t kiln_f32_to_f16(float value) {
  uint32_t bits = kiln_f32_bits(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7fffffffu;
  // Normal in f16: round the 13 dropped mantissa bits to nearest even and rebias.
  uint32_t normal = (magnitude + 0xfffu + ((magnitude >> 13) & 1u) - (112u << 23)) >> 13;
  // Subnormal in f16: adding 0.5 lines the f16 subnormal unit 2^-24 up with the float's last
  // mantissa bit, so the float addition rounds to nearest even.
  uint32_t subnormal = kiln_f32_bits(kiln_bits_f32(magnitude) + 0.5f) - 0x3f000000u;
  uint32_t result = kiln_select(magnitude < 0x38800000u, subnormal, normal);
  result = kiln_select(magnitude >= 0x477ff000u, 0x7c00u, result);  // rounds to infinity
  result = kiln_select(magnitude > 0x7f800000u, 0x7e00u, result);   // NaN
  return uint16_t(sign | result);
}

// ---------------------------------------------------------------- Philox4x32-10
// Exactly runtime/philox.h: element `index` of rand/randn with `seed` and `offset` uses
// counter {lo(index), hi(index), lo(offset), hi(offset)} and key {lo(seed), hi(seed)}.
struct KilnPhiloxWords {
  uint32_t word[4];
};

KILN_INLINE KilnPhiloxWords kiln_philox_words(uint64_t seed, uint64_t offset, uint64_t index) {
  uint32_t c0 = uint32_t(index), c1 = uint32_t(index >> 32), c2 = uint32_t(offset), c3 = uint32_t(offset >> 32);
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t product0 = uint64_t(0xD2511F53u) * c0;
    uint64_t product1 = uint64_t(0xCD9E8D57u) * c2;
    uint32_t next0 = uint32_t(product1 >> 32) ^ c1 ^ k0;
    uint32_t next2 = uint32_t(product0 >> 32) ^ c3 ^ k1;
    c1 = uint32_t(product1);
    c3 = uint32_t(product0);
    c0 = next0;
    c2 = next2;
    k0 += 0x9E3779B9u;  // the key is bumped between rounds (the last bump is unused)
    k1 += 0xBB67AE85u;
  }
  KilnPhiloxWords words = {{c0, c1, c2, c3}};
  return words;
}

// Uniform in [0, 1): the top 24 bits of word 0 times 2^-24 (exact).
KILN_INLINE float kiln_philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  return float(kiln_philox_words(seed, offset, index).word[0] >> 8) * 0x1p-24f;
}

// Standard normal by Box-Muller in double with libm's log and cos, rounded once: the
// interpreter's exact value (these libm calls are scalar).
KILN_INLINE float kiln_philox_normal(uint64_t seed, uint64_t offset, uint64_t index) {
  KilnPhiloxWords words = kiln_philox_words(seed, offset, index);
  double u1 = double((words.word[0] >> 8) + 1u) * (1.0 / 16777216.0);  // (0, 1]
  double u2 = double(words.word[1] >> 8) * (1.0 / 16777216.0);         // [0, 1)
  return float(__builtin_sqrt(-2.0 * __builtin_log(u1)) * __builtin_cos(6.283185307179586476925286766559 * u2));
}

// ---------------------------------------------------------------- the op layer's hooks
// What codegen/c_like/c_ops.h asks of a prelude: op functions are static inline, and always
// inlined: in a large module GCC stops inlining plain `inline` functions (its unit-growth limits),
// and an op left a call keeps its `omp simd` loop scalar (an unrolled BiGRU's package, built by
// g++: 2.18 ms a call, 0.95 with the ops inlined; bench/README.md). Fault flags are the module's
// ints (KILN_MODULE_STATE), set atomically (threads may raise them together).
#define KILN_OP static inline __attribute__((always_inline, unused))
#define KILN_FAULT_FLAG(name) KILN_MODULE_STATE int name = 0
#define KILN_RAISE_FAULT(name) __atomic_store_n(&name, 1, __ATOMIC_RELAXED)

#undef KILN_INLINE

#endif  // KILN_PRELUDE_H
