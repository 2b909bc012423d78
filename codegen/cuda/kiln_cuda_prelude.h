// Kiln's prelude for generated CUDA: the text the CUDA backend pastes at the top of every
// generated source file (embedded by codegen/CMakeLists.txt as kiln::codegen::cuda::cuda_prelude()),
// before the shared op layer (codegen/c_like/c_ops.h) whose hooks it defines. It owns the
// device-side basics: fixed-width integer types (NVRTC has no <stdint.h>; under nvcc <cstdint>), the math the op
// layer calls, taken from CUDA's math library (expf, erff, erfinvf, ...; the interpreter's exact
// rules where it has them: rsqrt, trunc and floor division, float-to-integer saturation), f16/bf16
// storage (cuda_fp16.h / cuda_bf16.h types, converted through f32) and the Philox generator,
// bit for bit runtime/philox.h (as the C++ prelude's).
//
// The same text compiles as host C++ under the CPU emulation (codegen/cuda/kiln_cuda_emulation.h,
// which defines KILN_CUDA_EMULATION and the CUDA language it needs) so that tests run every
// generated kernel without a GPU. With NVRTC it needs -std=c++17, and, when the program stores
// f16 or bf16 (KILN_CUDA_HALF is defined), CUDA's include directory for the half headers.
#ifndef KILN_CUDA_PRELUDE_H
#define KILN_CUDA_PRELUDE_H

#ifndef KILN_CUDA_EMULATION
#ifdef __CUDACC_RTC__
// NVRTC has no <stdint.h>: the fixed-width types, as the host's LP64 ABI defines them.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#else
// nvcc (a package's build) compiles with the host's headers, which already define them.
#include <cstdint>
#endif
#ifdef KILN_CUDA_HALF
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#endif

#define KILN_DEVICE_FN static __device__ __forceinline__
// A kernel's dynamic shared memory (the emulation defines its own, poisoned per block).
#ifndef KILN_SHARED_MEMORY
#define KILN_SHARED_MEMORY(name) extern __shared__ __align__(16) unsigned char name[]
#endif

// ---------------------------------------------------------------- the op layer's hooks
// Op functions are device functions. Fault flags are module globals with C names: the host
// clears them before a run (cuModuleGetGlobal("kiln_fault_index")) and reads them after.
#define KILN_OP KILN_DEVICE_FN
#define KILN_FAULT_FLAG(name) extern "C" { __device__ int name = 0; }
#define KILN_RAISE_FAULT(name) atomicExch(&name, 1)

// ---------------------------------------------------------------- special values, bits
KILN_DEVICE_FN float kiln_inf_f32() { return __int_as_float(0x7f800000); }
KILN_DEVICE_FN float kiln_nan_f32() { return __int_as_float(0x7fc00000); }
KILN_DEVICE_FN double kiln_inf_f64() { return __longlong_as_double(0x7ff0000000000000LL); }
KILN_DEVICE_FN double kiln_nan_f64() { return __longlong_as_double(0x7ff8000000000000LL); }

// ---------------------------------------------------------------- math (CUDA's library)
KILN_DEVICE_FN float kiln_fabs(float x) { return fabsf(x); }
KILN_DEVICE_FN double kiln_fabs(double x) { return fabs(x); }
KILN_DEVICE_FN float kiln_exp(float x) { return expf(x); }
KILN_DEVICE_FN double kiln_exp(double x) { return exp(x); }
KILN_DEVICE_FN float kiln_exp_nonpositive(float x) { return expf(x); }
KILN_DEVICE_FN double kiln_exp_nonpositive(double x) { return exp(x); }
KILN_DEVICE_FN float kiln_expm1(float x) { return expm1f(x); }
KILN_DEVICE_FN double kiln_expm1(double x) { return expm1(x); }
KILN_DEVICE_FN float kiln_log(float x) { return logf(x); }
KILN_DEVICE_FN double kiln_log(double x) { return log(x); }
KILN_DEVICE_FN float kiln_log1p(float x) { return log1pf(x); }
KILN_DEVICE_FN double kiln_log1p(double x) { return log1p(x); }
KILN_DEVICE_FN float kiln_sqrt(float x) { return sqrtf(x); }
KILN_DEVICE_FN double kiln_sqrt(double x) { return sqrt(x); }
// 1/sqrt(x) rounded once, as the interpreter computes it (in double).
KILN_DEVICE_FN float kiln_rsqrt(float x) { return float(1.0 / sqrt(double(x))); }
KILN_DEVICE_FN double kiln_rsqrt(double x) { return 1.0 / sqrt(x); }
KILN_DEVICE_FN float kiln_sin(float x) { return sinf(x); }
KILN_DEVICE_FN double kiln_sin(double x) { return sin(x); }
KILN_DEVICE_FN float kiln_cos(float x) { return cosf(x); }
KILN_DEVICE_FN double kiln_cos(double x) { return cos(x); }
KILN_DEVICE_FN float kiln_tanh(float x) { return tanhf(x); }
KILN_DEVICE_FN double kiln_tanh(double x) { return tanh(x); }
KILN_DEVICE_FN float kiln_erf(float x) { return erff(x); }
KILN_DEVICE_FN double kiln_erf(double x) { return erf(x); }
// 1 + erf(x), as erfc(-x) (codegen/schedule_erf_complements.cpp).
KILN_DEVICE_FN float kiln_one_plus_erf(float x) { return erfcf(-x); }
KILN_DEVICE_FN double kiln_one_plus_erf(double x) { return erfc(-x); }
// +-inf at +-1, NaN beyond, -0 kept, as PyTorch (and the interpreter, ir/kernels/erfinv.h).
KILN_DEVICE_FN float kiln_erfinv(float x) { return erfinvf(x); }
KILN_DEVICE_FN double kiln_erfinv(double x) { return erfinv(x); }
// exp(-|x|) never overflows: 1 / (1 + e) for x >= 0, e / (1 + e) below.
KILN_DEVICE_FN float kiln_sigmoid(float x) {
  float e = expf(-fabsf(x));
  float r = 1.0f / (1.0f + e);
  return x < 0.0f ? e * r : r;
}
KILN_DEVICE_FN double kiln_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
KILN_DEVICE_FN float kiln_floor(float x) { return floorf(x); }
KILN_DEVICE_FN double kiln_floor(double x) { return floor(x); }
KILN_DEVICE_FN float kiln_ceil(float x) { return ceilf(x); }
KILN_DEVICE_FN double kiln_ceil(double x) { return ceil(x); }
KILN_DEVICE_FN float kiln_round(float x) { return rintf(x); }  // half to even
KILN_DEVICE_FN double kiln_round(double x) { return rint(x); }
KILN_DEVICE_FN float kiln_fmod(float a, float b) { return fmodf(a, b); }
KILN_DEVICE_FN double kiln_fmod(double a, double b) { return fmod(a, b); }
KILN_DEVICE_FN float kiln_pow(float a, float b) { return powf(a, b); }
KILN_DEVICE_FN double kiln_pow(double a, double b) { return pow(a, b); }
// Division with rounding, computed in double and rounded once, as the interpreter.
KILN_DEVICE_FN double kiln_div_trunc(double a, double b) { return trunc(a / b); }
KILN_DEVICE_FN float kiln_div_trunc(float a, float b) { return float(trunc(double(a) / double(b))); }
// PyTorch's div_floor_floating: the floor of the exact quotient, IEEE results for b == 0.
KILN_DEVICE_FN double kiln_div_floor(double a, double b) {
  if (b == 0.0) return a / b;
  double mod = fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0.0) != (mod < 0.0))) div -= 1.0;
  if (div == 0.0) return copysign(0.0, a / b);
  double floored = floor(div);
  return div - floored > 0.5 ? floored + 1.0 : floored;
}
KILN_DEVICE_FN float kiln_div_floor(float a, float b) { return float(kiln_div_floor(double(a), double(b))); }
// Float to int64 as the interpreter stores it: truncation, NaN gives 0, saturation.
KILN_DEVICE_FN int64_t kiln_saturate_to_i64(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775807.0) return 9223372036854775807LL;
  if (x <= -9223372036854775808.0) return -9223372036854775807LL - 1;
  return int64_t(x);
}
KILN_DEVICE_FN int64_t kiln_saturate_to_i64(float x) { return kiln_saturate_to_i64(double(x)); }

// ---------------------------------------------------------------- f16, bf16
// Stored as CUDA's types, computed in f32; conversions round to nearest even.
#ifdef KILN_CUDA_HALF
KILN_DEVICE_FN float kiln_f16_to_f32(__half value) { return __half2float(value); }
KILN_DEVICE_FN __half kiln_f32_to_f16(float value) { return __float2half_rn(value); }
KILN_DEVICE_FN float kiln_bf16_to_f32(__nv_bfloat16 value) { return __bfloat162float(value); }
KILN_DEVICE_FN __nv_bfloat16 kiln_f32_to_bf16(float value) { return __float2bfloat16_rn(value); }
#endif

// ---------------------------------------------------------------- Philox4x32-10
// Exactly runtime/philox.h: element `index` of rand/randn with `seed` and `offset` uses
// counter {lo(index), hi(index), lo(offset), hi(offset)} and key {lo(seed), hi(seed)}.
struct KilnPhiloxWords {
  uint32_t word[4];
};

KILN_DEVICE_FN KilnPhiloxWords kiln_philox_words(uint64_t seed, uint64_t offset, uint64_t index) {
  uint32_t c0 = uint32_t(index), c1 = uint32_t(index >> 32), c2 = uint32_t(offset), c3 = uint32_t(offset >> 32);
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t high0 = __umulhi(0xD2511F53u, c0), low0 = 0xD2511F53u * c0;
    uint32_t high1 = __umulhi(0xCD9E8D57u, c2), low1 = 0xCD9E8D57u * c2;
    uint32_t next0 = high1 ^ c1 ^ k0;
    uint32_t next2 = high0 ^ c3 ^ k1;
    c1 = low1;
    c3 = low0;
    c0 = next0;
    c2 = next2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  KilnPhiloxWords words = {{c0, c1, c2, c3}};
  return words;
}

// Uniform in [0, 1): the top 24 bits of word 0 times 2^-24 (exact).
KILN_DEVICE_FN float kiln_philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  return float(kiln_philox_words(seed, offset, index).word[0] >> 8) * 5.9604644775390625e-8f;
}

// Standard normal by Box-Muller in double, rounded once (the interpreter's formula; CUDA's
// double log and cos are within 2 ulp of libm's, so a rare last bit of the float may differ).
KILN_DEVICE_FN float kiln_philox_normal(uint64_t seed, uint64_t offset, uint64_t index) {
  KilnPhiloxWords words = kiln_philox_words(seed, offset, index);
  double u1 = double((words.word[0] >> 8) + 1u) * (1.0 / 16777216.0);  // (0, 1]
  double u2 = double(words.word[1] >> 8) * (1.0 / 16777216.0);         // [0, 1)
  return float(sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2));
}

#endif  // KILN_CUDA_PRELUDE_H
