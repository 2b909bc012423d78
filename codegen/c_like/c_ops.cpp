// The op layer of generated C-like code (see codegen/c_like/c_ops.h): one function per loop-IR
// op (codegen/loop_ir.h's op sets) for every compute type, with the reference interpreter's
// semantics (ir/kernels/). The C++ and CUDA backends paste this text after their preludes
// (codegen/cpp/kiln_prelude.h, codegen/cuda/kiln_cuda_prelude.h), which provide the math it
// calls; like the preludes it includes no header.
#include "codegen/c_like/c_ops.h"

namespace kiln::codegen {

std::string_view c_ops_text() {
  static constexpr char kText[] = R"KILN_OPS(

template <class T> struct kiln_is_float { static constexpr bool value = false; };
template <> struct kiln_is_float<float> { static constexpr bool value = true; };
template <> struct kiln_is_float<double> { static constexpr bool value = true; };

KILN_OP int64_t kiln_imax(int64_t a, int64_t b) { return a > b ? a : b; }
KILN_OP int64_t kiln_imin(int64_t a, int64_t b) { return a < b ? a : b; }
// A select whose operands are both evaluated (they are arguments): the printer's form of a
// where on data (c_printer.cpp), which GCC vectorizes as a blend, where `c ? a[i] : b` became a
// masked load that it does not vectorize.
template <class T> KILN_OP T kiln_select(bool c, T a, T b) { return c ? a : b; }
// Python floor division and modulo of index expressions (SymInt::to_cpp calls these).
KILN_OP int64_t kiln_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KILN_OP int64_t kiln_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Float to u64 as the interpreter stores it (runtime/tensor.cpp): values from 2^63 up, which
// kiln_saturate_to_i64 would clamp, saturate to the u64 range; the rest wrap through int64.
KILN_OP uint64_t kiln_saturate_to_u64(double x) {
  if (x >= 0x1p64) return ~0ULL;
  if (x >= 0x1p63) return (unsigned long long)(x);
  return (unsigned long long)(kiln_saturate_to_i64(x));
}

// Run-time faults raised inside kernels (checked by kiln_run after each kernel).
KILN_FAULT_FLAG(kiln_fault_zero_division);
KILN_FAULT_FLAG(kiln_fault_index);

// An index read from a tensor (gather, index_select, embedding): outside [0, size) flags a
// fault, as the interpreter (and PyTorch) reject such indices.
KILN_OP int64_t kiln_wrap_index(int64_t value, int64_t size) {
  int bad = value < 0 || value >= size;
  if (bad) KILN_RAISE_FAULT(kiln_fault_index);
  return bad ? 0 : value;
}

// ---- unary
template <class T> KILN_OP T kop_neg(T a) {
  if constexpr (kiln_is_float<T>::value) return -a;
  else return T(0 - (unsigned long long)(a));
}
template <class T> KILN_OP T kop_abs(T a) {
  if constexpr (kiln_is_float<T>::value) return kiln_fabs(a);
  else return a < 0 ? kop_neg(a) : a;
}
KILN_OP float kop_abs(float a) { return kiln_fabs(a); }
KILN_OP float kop_exp(float a) { return kiln_exp(a); }
KILN_OP double kop_exp(double a) { return kiln_exp(a); }
KILN_OP float kop_log(float a) { return kiln_log(a); }
KILN_OP double kop_log(double a) { return kiln_log(a); }
KILN_OP float kop_log1p(float a) { return kiln_log1p(a); }
KILN_OP double kop_log1p(double a) { return kiln_log1p(a); }
KILN_OP float kop_expm1(float a) { return kiln_expm1(a); }
KILN_OP double kop_expm1(double a) { return kiln_expm1(a); }
KILN_OP float kop_sqrt(float a) { return kiln_sqrt(a); }
KILN_OP double kop_sqrt(double a) { return kiln_sqrt(a); }
KILN_OP float kop_rsqrt(float a) { return kiln_rsqrt(a); }
KILN_OP double kop_rsqrt(double a) { return kiln_rsqrt(a); }
template <class T> KILN_OP T kop_reciprocal(T a) { return T(1) / a; }
KILN_OP float kop_sin(float a) { return kiln_sin(a); }
KILN_OP double kop_sin(double a) { return kiln_sin(a); }
KILN_OP float kop_cos(float a) { return kiln_cos(a); }
KILN_OP double kop_cos(double a) { return kiln_cos(a); }
KILN_OP float kop_tanh(float a) { return kiln_tanh(a); }
KILN_OP double kop_tanh(double a) { return kiln_tanh(a); }
KILN_OP float kop_sigmoid(float a) { return kiln_sigmoid(a); }
KILN_OP double kop_sigmoid(double a) { return kiln_sigmoid(a); }
KILN_OP float kop_erf(float a) { return kiln_erf(a); }
KILN_OP double kop_erf(double a) { return kiln_erf(a); }
// NaN-propagating selects are written as a plain select, then a NaN override: GCC 12
// vectorizes that form even nested (a relu read by a max pool), and not `(a > b) | (a != a)`.
template <class T> KILN_OP T kop_relu(T a) {
  if constexpr (kiln_is_float<T>::value) {
    const T positive = a > T(0) ? a : T(0);
    return a != a ? a : positive;
  } else {
    return a > T(0) ? a : T(0);
  }
}
template <class T> KILN_OP T kop_floor(T a) { return a; }
KILN_OP float kop_floor(float a) { return kiln_floor(a); }
KILN_OP double kop_floor(double a) { return kiln_floor(a); }
template <class T> KILN_OP T kop_ceil(T a) { return a; }
KILN_OP float kop_ceil(float a) { return kiln_ceil(a); }
KILN_OP double kop_ceil(double a) { return kiln_ceil(a); }
template <class T> KILN_OP T kop_round(T a) { return a; }
KILN_OP float kop_round(float a) { return kiln_round(a); }
KILN_OP double kop_round(double a) { return kiln_round(a); }
template <class T> KILN_OP T kop_sign(T a) { return T((T(0) < a) - (a < T(0))); }
KILN_OP bool kop_sign(bool a) { return a; }
KILN_OP bool kop_logical_not(bool a) { return !a; }
template <class T> KILN_OP bool kop_logical_not(T a) { return a == T(0); }
template <class T> KILN_OP bool kop_isnan(T a) { return a != a; }

// ---- binary
template <class T> KILN_OP T kop_add(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return a + b;
  else return T((unsigned long long)(a) + (unsigned long long)(b));
}
KILN_OP bool kop_add(bool a, bool b) { return a || b; }
template <class T> KILN_OP T kop_sub(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return a - b;
  else return T((unsigned long long)(a) - (unsigned long long)(b));
}
template <class T> KILN_OP T kop_mul(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return a * b;
  else return T((unsigned long long)(a) * (unsigned long long)(b));
}
KILN_OP bool kop_mul(bool a, bool b) { return a && b; }
template <class T> KILN_OP T kop_div(T a, T b) { return a / b; }
// Integer division by zero raises the interpreter's ZeroDivisionError; INT_MIN / -1 wraps.
// (For unsigned T, T(-1) is the largest value, divided by as any other.)
template <class T> KILN_OP T kiln_int_div_checked(T a, T b) {
  if (b == 0) {
    KILN_RAISE_FAULT(kiln_fault_zero_division);
    return 0;
  }
  if constexpr (T(-1) < T(0)) {
    if (b == T(-1)) return kop_neg(a);
  }
  return T(a / b);
}
template <class T> KILN_OP T kop_div_trunc(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return kiln_div_trunc(a, b);
  else return kiln_int_div_checked(a, b);
}
KILN_OP float kop_div_trunc(float a, float b) { return kiln_div_trunc(a, b); }
KILN_OP double kop_div_trunc(double a, double b) { return kiln_div_trunc(a, b); }
template <class T> KILN_OP T kop_div_floor(T a, T b) {
  if constexpr (kiln_is_float<T>::value) {
    return kiln_div_floor(a, b);
  } else {
    if (b == 0) {
      KILN_RAISE_FAULT(kiln_fault_zero_division);
      return 0;
    }
    if constexpr (T(-1) < T(0)) {
      if (b == T(-1)) return kop_neg(a);
      T q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? T(q - 1) : q;
    } else {
      return T(a / b);
    }
  }
}
KILN_OP float kop_div_floor(float a, float b) { return kiln_div_floor(a, b); }
KILN_OP double kop_div_floor(double a, double b) { return kiln_div_floor(a, b); }
template <class T> KILN_OP T kop_pow(T base, T exponent) {
  if constexpr (kiln_is_float<T>::value) {
    return T(kiln_pow(double(base), double(exponent)));
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
KILN_OP float kop_pow(float base, float exponent) { return kiln_pow(base, exponent); }
template <class T> KILN_OP T kop_maximum(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return (a != a || b != b) ? a + b : (a > b ? a : b);
  else return a > b ? a : b;
}
template <class T> KILN_OP T kop_minimum(T a, T b) {
  if constexpr (kiln_is_float<T>::value) return (a != a || b != b) ? a + b : (a < b ? a : b);
  else return a < b ? a : b;
}
template <class T> KILN_OP T kop_fmod(T a, T b) {
  if constexpr (kiln_is_float<T>::value) {
    return T(kiln_fmod(double(a), double(b)));
  } else {
    if (b == 0) {
      KILN_RAISE_FAULT(kiln_fault_zero_division);
      return 0;
    }
    if constexpr (T(-1) < T(0)) return b == T(-1) ? T(0) : T(a % b);
    else return T(a % b);
  }
}
KILN_OP float kop_fmod(float a, float b) { return kiln_fmod(a, b); }
template <class T> KILN_OP T kop_remainder(T a, T b) {
  T r = kop_fmod(a, b);
  if constexpr (kiln_is_float<T>::value) {
    return (r != T(0) && ((b < T(0)) != (r < T(0)))) ? r + b : r;
  } else if constexpr (T(-1) < T(0)) {
    return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
  } else {
    return r;
  }
}
template <class T> KILN_OP bool kop_eq(T a, T b) { return a == b; }
template <class T> KILN_OP bool kop_ne(T a, T b) { return a != b; }
template <class T> KILN_OP bool kop_lt(T a, T b) { return a < b; }
template <class T> KILN_OP bool kop_le(T a, T b) { return a <= b; }
template <class T> KILN_OP bool kop_gt(T a, T b) { return a > b; }
template <class T> KILN_OP bool kop_ge(T a, T b) { return a >= b; }
template <class T> KILN_OP bool kop_logical_and(T a, T b) { return (a != T(0)) & (b != T(0)); }
template <class T> KILN_OP bool kop_logical_or(T a, T b) { return (a != T(0)) | (b != T(0)); }
template <class T> KILN_OP bool kop_logical_xor(T a, T b) { return (a != T(0)) != (b != T(0)); }
template <class T> KILN_OP T kop_bitwise_and(T a, T b) { return T(a & b); }
template <class T> KILN_OP T kop_bitwise_or(T a, T b) { return T(a | b); }
template <class T> KILN_OP T kop_bitwise_xor(T a, T b) { return T(a ^ b); }
template <class T> KILN_OP T kop_bitwise_not(T a) { return T(~a); }
// Shifts of at least the width give 0 (left) or the sign (right), as the interpreter's.
template <class T> KILN_OP bool kiln_negative(T v) {
  if constexpr (T(-1) < T(0)) return v < T(0);
  else return false;
}
template <class T> KILN_OP T kop_bitwise_left_shift(T a, T b) {
  return (kiln_negative(b) || int64_t(b) >= int64_t(sizeof(T) * 8)) ? T(0) : T((unsigned long long)(a) << int(b));
}
template <class T> KILN_OP T kop_bitwise_right_shift(T a, T b) {
  return (kiln_negative(b) || int64_t(b) >= int64_t(sizeof(T) * 8)) ? T(kiln_negative(a) ? -1 : 0) : T(a >> int(b));
}

// ---- reduction combines (NaN propagates through max/min). Bools combine with | and &, not
// || and &&: no short circuit, so scalar code selects without a data-dependent branch (a
// 3x3 max pool spent most of its time on mispredicted branches).
template <class T> KILN_OP T kred_max(T acc, T v) {
  if constexpr (kiln_is_float<T>::value) {
    const T larger = v > acc ? v : acc;  // a NaN acc stays: the comparison is false
    return v != v ? v : larger;
  } else {
    return v > acc ? v : acc;
  }
}
template <class T> KILN_OP T kred_min(T acc, T v) {
  if constexpr (kiln_is_float<T>::value) {
    const T smaller = v < acc ? v : acc;
    return v != v ? v : smaller;
  } else {
    return v < acc ? v : acc;
  }
}
)KILN_OPS";
  return kText;
}

}  // namespace kiln::codegen
