// The op layer of generated C++: one function per loop-IR op (codegen/loop_ir.h's op sets) for
// every compute type, with the reference interpreter's semantics (ir/kernels/). The C++ emitter
// pastes this text after the prelude (codegen/cpp/kiln_prelude.h: vectorizable math, Philox,
// half conversions) at the top of every generated file; like the prelude it includes no header.
#include "codegen/cpp/cpp_emitter.h"

namespace kiln::codegen {

std::string_view cpp_ops_text() {
  static constexpr char kText[] = R"KILN_OPS(

template <class T> struct kiln_is_float { static constexpr bool value = false; };
template <> struct kiln_is_float<float> { static constexpr bool value = true; };
template <> struct kiln_is_float<double> { static constexpr bool value = true; };

static inline int64_t kiln_imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t kiln_imin(int64_t a, int64_t b) { return a < b ? a : b; }
// Python floor division and modulo of index expressions (SymInt::to_cpp calls these).
static inline int64_t kiln_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t kiln_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Run-time faults raised inside kernels (checked by kiln_run after each kernel).
static int kiln_fault_zero_division = 0;
static int kiln_fault_index = 0;

// An index read from a tensor (gather, index_select, embedding): outside [0, size) flags a
// fault, as the interpreter (and PyTorch) reject such indices.
static inline int64_t kiln_wrap_index(int64_t value, int64_t size) {
  int bad = value < 0 || value >= size;
  if (bad) __atomic_store_n(&kiln_fault_index, 1, __ATOMIC_RELAXED);
  return bad ? 0 : value;
}

// ---- unary
template <class T> static inline T kop_neg(T a) {
  if constexpr (kiln_is_float<T>::value) return -a;
  else return T(0 - (unsigned long long)(a));
}
template <class T> static inline T kop_abs(T a) {
  if constexpr (kiln_is_float<T>::value) return __builtin_fabs(a);
  else return a < 0 ? kop_neg(a) : a;
}
static inline float kop_abs(float a) { return __builtin_fabsf(a); }
static inline float kop_exp(float a) { return kiln_exp(a); }
static inline double kop_exp(double a) { return __builtin_exp(a); }
static inline float kop_log(float a) { return kiln_log(a); }
static inline double kop_log(double a) { return __builtin_log(a); }
static inline float kop_log1p(float a) { return kiln_log1p(a); }
static inline double kop_log1p(double a) { return __builtin_log1p(a); }
static inline float kop_expm1(float a) { return kiln_expm1(a); }
static inline double kop_expm1(double a) { return __builtin_expm1(a); }
static inline float kop_sqrt(float a) { return __builtin_sqrtf(a); }
static inline double kop_sqrt(double a) { return __builtin_sqrt(a); }
static inline float kop_rsqrt(float a) { return kiln_rsqrt(a); }
static inline double kop_rsqrt(double a) { return kiln_rsqrt(a); }
template <class T> static inline T kop_reciprocal(T a) { return T(1) / a; }
static inline float kop_sin(float a) { return kiln_sin(a); }
static inline double kop_sin(double a) { return __builtin_sin(a); }
static inline float kop_cos(float a) { return kiln_cos(a); }
static inline double kop_cos(double a) { return __builtin_cos(a); }
static inline float kop_tanh(float a) { return kiln_tanh(a); }
static inline double kop_tanh(double a) { return __builtin_tanh(a); }
static inline float kop_sigmoid(float a) { return kiln_sigmoid(a); }
static inline double kop_sigmoid(double a) { return 1.0 / (1.0 + __builtin_exp(-a)); }
static inline float kop_erf(float a) { return kiln_erf(a); }
static inline double kop_erf(double a) { return __builtin_erf(a); }
template <class T> static inline T kop_relu(T a) {
  if constexpr (kiln_is_float<T>::value) return (a > T(0) || a != a) ? a : T(0);
  else return a > T(0) ? a : T(0);
}
template <class T> static inline T kop_floor(T a) { return a; }
static inline float kop_floor(float a) { return kiln_floor(a); }
static inline double kop_floor(double a) { return kiln_floor(a); }
template <class T> static inline T kop_ceil(T a) { return a; }
static inline float kop_ceil(float a) { return kiln_ceil(a); }
static inline double kop_ceil(double a) { return kiln_ceil(a); }
template <class T> static inline T kop_round(T a) { return a; }
static inline float kop_round(float a) { return __builtin_rintf(a); }
static inline double kop_round(double a) { return __builtin_rint(a); }
template <class T> static inline T kop_sign(T a) { return T((T(0) < a) - (a < T(0))); }
static inline bool kop_sign(bool a) { return a; }
static inline bool kop_logical_not(bool a) { return !a; }
template <class T> static inline bool kop_logical_not(T a) { return a == T(0); }
template <class T> static inline bool kop_isnan(T a) { return a != a; }

// ---- binary
template <class T> static inline T kop_add(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return a + b;
  else return T((unsigned long long)(a) + (unsigned long long)(b));
}
static inline bool kop_add(bool a, bool b) { return a || b; }
template <class T> static inline T kop_sub(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return a - b;
  else return T((unsigned long long)(a) - (unsigned long long)(b));
}
template <class T> static inline T kop_mul(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return a * b;
  else return T((unsigned long long)(a) * (unsigned long long)(b));
}
static inline bool kop_mul(bool a, bool b) { return a && b; }
template <class T> static inline T kop_div(T a, T b) { return a / b; }
// Integer division by zero raises the interpreter's ZeroDivisionError; INT_MIN / -1 wraps.
template <class T> static inline T kiln_int_div_checked(T a, T b) {
  if (b == 0) {
    __atomic_store_n(&kiln_fault_zero_division, 1, __ATOMIC_RELAXED);
    return 0;
  }
  if (b == T(-1)) return kop_neg(a);
  return a / b;
}
template <class T> static inline T kop_div_trunc(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return T(__builtin_trunc(double(a / b)));
  else return kiln_int_div_checked(a, b);
}
static inline float kop_div_trunc(float a, float b) { return kiln_div_trunc(a, b); }
static inline double kop_div_trunc(double a, double b) { return kiln_div_trunc(a, b); }
template <class T> static inline T kop_div_floor(T a, T b) {
  if constexpr (kiln_is_float<T>::value) {
    if (b == T(0)) return a / b;
    T m = T(__builtin_fmod(double(a), double(b)));
    T d = (a - m) / b;
    if (m != T(0) && ((b < T(0)) != (m < T(0)))) d -= T(1);
    if (d == T(0)) return __builtin_copysign(T(0), a / b);
    T f = T(__builtin_floor(double(d)));
    if (d - f > T(0.5)) f += T(1);
    return f;
  } else {
    if (b == 0) {
      __atomic_store_n(&kiln_fault_zero_division, 1, __ATOMIC_RELAXED);
      return 0;
    }
    if (b == T(-1)) return kop_neg(a);
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
  }
}
static inline float kop_div_floor(float a, float b) { return kiln_div_floor(a, b); }
static inline double kop_div_floor(double a, double b) { return kiln_div_floor(a, b); }
template <class T> static inline T kop_pow(T base, T exponent) {
  if constexpr (kiln_is_float<T>::value) {
    return T(__builtin_pow(double(base), double(exponent)));
  } else {
    if (exponent < 0) {
      if (base == 1) return 1;
      if (base == T(-1)) return (exponent % 2 != 0) ? T(-1) : T(1);
      return 0;
    }
    unsigned long long result = 1, factor = (unsigned long long)(base);
    for (unsigned long long e = (unsigned long long)(exponent); e; e >>= 1) {
      if (e & 1) result *= factor;
      factor *= factor;
    }
    return T(result);
  }
}
static inline float kop_pow(float base, float exponent) { return kiln_pow(base, exponent); }
template <class T> static inline T kop_maximum(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return (a != a || b != b) ? a + b : (a > b ? a : b);
  else return a > b ? a : b;
}
template <class T> static inline T kop_minimum(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return (a != a || b != b) ? a + b : (a < b ? a : b);
  else return a < b ? a : b;
}
template <class T> static inline T kop_fmod(T a, T b) {
  if constexpr (kiln_is_float<T>::value) {
    return T(__builtin_fmod(double(a), double(b)));
  } else {
    if (b == 0) {
      __atomic_store_n(&kiln_fault_zero_division, 1, __ATOMIC_RELAXED);
      return 0;
    }
    return b == T(-1) ? T(0) : T(a % b);
  }
}
static inline float kop_fmod(float a, float b) { return __builtin_fmodf(a, b); }
template <class T> static inline T kop_remainder(T a, T b) {
  T r = kop_fmod(a, b);
  if constexpr (kiln_is_float<T>::value) {
    return (r != T(0) && ((b < T(0)) != (r < T(0)))) ? r + b : r;
  } else {
    return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
  }
}
template <class T> static inline bool kop_eq(T a, T b) { return a == b; }
template <class T> static inline bool kop_ne(T a, T b) { return a != b; }
template <class T> static inline bool kop_lt(T a, T b) { return a < b; }
template <class T> static inline bool kop_le(T a, T b) { return a <= b; }
template <class T> static inline bool kop_gt(T a, T b) { return a > b; }
template <class T> static inline bool kop_ge(T a, T b) { return a >= b; }
template <class T> static inline bool kop_logical_and(T a, T b) { return (a != T(0)) && (b != T(0)); }
template <class T> static inline bool kop_logical_or(T a, T b) { return (a != T(0)) || (b != T(0)); }
template <class T> static inline bool kop_logical_xor(T a, T b) { return (a != T(0)) != (b != T(0)); }
template <class T> static inline T kop_bitwise_and(T a, T b) { return T(a & b); }
template <class T> static inline T kop_bitwise_or(T a, T b) { return T(a | b); }

// ---- reduction combines (NaN propagates through max/min)
template <class T> static inline T kred_max(T acc, T v) {
  if constexpr (kiln_is_float<T>::value) return (v > acc || v != v) ? v : acc;
  else return v > acc ? v : acc;
}
template <class T> static inline T kred_min(T acc, T v) {
  if constexpr (kiln_is_float<T>::value) return (v < acc || v != v) ? v : acc;
  else return v < acc ? v : acc;
}
)KILN_OPS";
  return kText;
}

}  // namespace kiln::codegen
