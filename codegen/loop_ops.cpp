// The loop-IR op table (codegen/loop_ops.h): one row per op, and the scalar functions the loop
// evaluator calls, with the reference interpreter's semantics (ir/kernels/unary_kernels.cpp,
// ir/kernels/binary_kernels.cpp).
#include "codegen/loop_ops.h"

#include <algorithm>
#include <cmath>

#include "ir/kernels/erfinv.h"
#include "kiln/error.h"
#include "runtime/scalar_arithmetic.h"

namespace kiln::codegen {
namespace {

// ---------------------------------------------------------------- scalar semantics
// (runtime/scalar_arithmetic.h; what remains here reports errors in the loop program's words)

[[noreturn]] void zero_division(const char* what) {
  fail("ZeroDivisionError: integer ", what, " by zero in the loop program");
}

// Integer division rounding toward zero (trunc) or down (floor); INT64_MIN / -1 wraps.
int64_t int_divide(int64_t x, int64_t y, bool floor) {
  if (y == 0) zero_division("division");
  return floor ? int_floor_divide(x, y) : int_truncate_divide(x, y);
}

// C's remainder (the sign of the dividend), or Python's (the sign of the divisor).
int64_t int_remainder(int64_t x, int64_t y, bool python, const char* what) {
  if (y == 0) zero_division(what);
  return python ? int_floor_mod(x, y) : int_c_remainder(x, y);
}

bool truth(double x) { return x != 0.0; }  // NaN is true
bool truth(int64_t x) { return x != 0; }

// ---------------------------------------------------------------- rows

using R = LoopResultDType;
using C = LoopCost;
using G = GraphLowering;

// A row whose C and CUDA spelling is kop_<name> (the shared op layer).
LoopOpInfo row(LoopOp op, std::string_view name, int arity, R result, C cost, G lowering, FloatEvaluator on_float,
               IntEvaluator on_int, std::string_view c_spelling, std::string_view infix = "") {
  return {op, name, arity, result, cost, lowering, on_float, on_int, c_spelling, "", infix};
}

std::vector<LoopOpInfo> make_table() {
  using Op = LoopOp;
  return {
      // ---- unary
      row(Op::neg, "neg", 1, R::argument, C::cheap, G::same_unary, [](double x, double) { return -x; },
          [](int64_t x, int64_t) { return wrapping_negate(x); }, "kop_neg"),
      row(Op::abs, "abs", 1, R::argument, C::cheap, G::same_unary, [](double x, double) { return std::fabs(x); },
          [](int64_t x, int64_t) { return x < 0 ? wrapping_negate(x) : x; }, "kop_abs"),
      row(Op::exp, "exp", 1, R::argument, C::expensive, G::float_unary, [](double x, double) { return std::exp(x); },
          nullptr, "kop_exp"),
      row(Op::log, "log", 1, R::argument, C::expensive, G::float_unary, [](double x, double) { return std::log(x); },
          nullptr, "kop_log"),
      row(Op::log1p, "log1p", 1, R::argument, C::expensive, G::float_unary,
          [](double x, double) { return std::log1p(x); }, nullptr, "kop_log1p"),
      row(Op::expm1, "expm1", 1, R::argument, C::expensive, G::float_unary,
          [](double x, double) { return std::expm1(x); }, nullptr, "kop_expm1"),
      row(Op::sqrt, "sqrt", 1, R::argument, C::cheap, G::float_unary, [](double x, double) { return std::sqrt(x); },
          nullptr, "kop_sqrt"),
      row(Op::rsqrt, "rsqrt", 1, R::argument, C::cheap, G::float_unary,
          [](double x, double) { return 1.0 / std::sqrt(x); }, nullptr, "kop_rsqrt"),
      row(Op::reciprocal, "reciprocal", 1, R::argument, C::cheap, G::float_unary,
          [](double x, double) { return 1.0 / x; }, nullptr, "kop_reciprocal"),
      row(Op::sin, "sin", 1, R::argument, C::expensive, G::float_unary, [](double x, double) { return std::sin(x); },
          nullptr, "kop_sin"),
      row(Op::cos, "cos", 1, R::argument, C::expensive, G::float_unary, [](double x, double) { return std::cos(x); },
          nullptr, "kop_cos"),
      row(Op::tanh, "tanh", 1, R::argument, C::expensive, G::float_unary,
          [](double x, double) { return std::tanh(x); }, nullptr, "kop_tanh"),
      row(Op::sigmoid, "sigmoid", 1, R::argument, C::expensive, G::float_unary,
          [](double x, double) { return 1.0 / (1.0 + std::exp(-x)); }, nullptr, "kop_sigmoid"),
      row(Op::erf, "erf", 1, R::argument, C::expensive, G::float_unary, [](double x, double) { return std::erf(x); },
          nullptr, "kop_erf"),
      // The op layer's text is pinned by the generated-code goldens: erfinv is spelled by the
      // preludes' own kiln_erfinv (float and double overloads) instead of a kop_ wrapper.
      row(Op::erfinv, "erfinv", 1, R::argument, C::expensive, G::float_unary,
          [](double x, double) { return ir::kernels::erfinv(x); }, nullptr, "kiln_erfinv"),
      row(Op::relu, "relu", 1, R::argument, C::cheap, G::same_unary,
          [](double x, double) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); },
          [](int64_t x, int64_t) { return x > 0 ? x : int64_t(0); }, "kop_relu"),
      row(Op::floor, "floor", 1, R::argument, C::cheap, G::rounding_unary,
          [](double x, double) { return std::floor(x); }, [](int64_t x, int64_t) { return x; }, "kop_floor"),
      row(Op::ceil, "ceil", 1, R::argument, C::cheap, G::rounding_unary,
          [](double x, double) { return std::ceil(x); }, [](int64_t x, int64_t) { return x; }, "kop_ceil"),
      row(Op::round, "round", 1, R::argument, C::cheap, G::rounding_unary,
          [](double x, double) { return std::nearbyint(x); }, [](int64_t x, int64_t) { return x; }, "kop_round"),
      row(Op::sign, "sign", 1, R::argument, C::cheap, G::same_unary,
          [](double x, double) { return double(0.0 < x) - double(x < 0.0); },
          [](int64_t x, int64_t) { return int64_t(x > 0) - int64_t(x < 0); }, "kop_sign"),
      row(Op::logical_not, "logical_not", 1, R::boolean, C::cheap, G::truth_unary,
          [](double x, double) { return double(!truth(x)); }, [](int64_t x, int64_t) { return int64_t(!truth(x)); },
          "kop_logical_not"),
      row(Op::isnan, "isnan", 1, R::boolean, C::cheap, G::nan_test_unary,
          [](double x, double) { return double(std::isnan(x)); }, [](int64_t, int64_t) { return int64_t(0); },
          "kop_isnan"),
      // ---- binary
      row(Op::add, "add", 2, R::argument, C::cheap, G::custom, [](double a, double b) { return a + b; },
          [](int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }, "kop_add", "+"),
      row(Op::sub, "sub", 2, R::argument, C::cheap, G::custom, [](double a, double b) { return a - b; },
          [](int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }, "kop_sub", "-"),
      row(Op::mul, "mul", 2, R::argument, C::cheap, G::promoted_binary, [](double a, double b) { return a * b; },
          [](int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }, "kop_mul", "*"),
      row(Op::div, "div", 2, R::argument, C::cheap, G::custom, [](double a, double b) { return a / b; }, nullptr,
          "kop_div", "/"),
      row(Op::div_trunc, "div_trunc", 2, R::argument, C::cheap, G::none,
          [](double a, double b) { return std::trunc(a / b); },
          [](int64_t a, int64_t b) { return int_divide(a, b, false); }, "kop_div_trunc"),
      row(Op::div_floor, "div_floor", 2, R::argument, C::cheap, G::none, floor_divide,
          [](int64_t a, int64_t b) { return int_divide(a, b, true); }, "kop_div_floor"),
      row(Op::pow, "pow", 2, R::argument, C::expensive, G::custom, [](double a, double b) { return std::pow(a, b); },
          int_pow, "kop_pow"),
      row(Op::maximum, "maximum", 2, R::argument, C::cheap, G::promoted_binary, nan_max,
          [](int64_t a, int64_t b) { return std::max(a, b); }, "kop_maximum"),
      row(Op::minimum, "minimum", 2, R::argument, C::cheap, G::promoted_binary, nan_min,
          [](int64_t a, int64_t b) { return std::min(a, b); }, "kop_minimum"),
      row(Op::fmod, "fmod", 2, R::argument, C::cheap, G::promoted_binary,
          [](double a, double b) { return std::fmod(a, b); },
          [](int64_t a, int64_t b) { return int_remainder(a, b, false, "fmod"); }, "kop_fmod"),
      row(Op::remainder, "remainder", 2, R::argument, C::cheap, G::promoted_binary, python_fmod,
          [](int64_t a, int64_t b) { return int_remainder(a, b, true, "remainder"); }, "kop_remainder"),
      row(Op::eq, "eq", 2, R::boolean, C::cheap, G::promoted_binary, [](double a, double b) { return double(a == b); },
          [](int64_t a, int64_t b) { return int64_t(a == b); }, "kop_eq", "=="),
      row(Op::ne, "ne", 2, R::boolean, C::cheap, G::promoted_binary, [](double a, double b) { return double(a != b); },
          [](int64_t a, int64_t b) { return int64_t(a != b); }, "kop_ne", "!="),
      row(Op::lt, "lt", 2, R::boolean, C::cheap, G::promoted_binary, [](double a, double b) { return double(a < b); },
          [](int64_t a, int64_t b) { return int64_t(a < b); }, "kop_lt", "<"),
      row(Op::le, "le", 2, R::boolean, C::cheap, G::promoted_binary, [](double a, double b) { return double(a <= b); },
          [](int64_t a, int64_t b) { return int64_t(a <= b); }, "kop_le", "<="),
      row(Op::gt, "gt", 2, R::boolean, C::cheap, G::promoted_binary, [](double a, double b) { return double(a > b); },
          [](int64_t a, int64_t b) { return int64_t(a > b); }, "kop_gt", ">"),
      row(Op::ge, "ge", 2, R::boolean, C::cheap, G::promoted_binary, [](double a, double b) { return double(a >= b); },
          [](int64_t a, int64_t b) { return int64_t(a >= b); }, "kop_ge", ">="),
      row(Op::logical_and, "logical_and", 2, R::boolean, C::cheap, G::truth_binary,
          [](double a, double b) { return double(truth(a) && truth(b)); },
          [](int64_t a, int64_t b) { return int64_t(truth(a) && truth(b)); }, "kop_logical_and"),
      row(Op::logical_or, "logical_or", 2, R::boolean, C::cheap, G::truth_binary,
          [](double a, double b) { return double(truth(a) || truth(b)); },
          [](int64_t a, int64_t b) { return int64_t(truth(a) || truth(b)); }, "kop_logical_or"),
      row(Op::logical_xor, "logical_xor", 2, R::boolean, C::cheap, G::truth_binary,
          [](double a, double b) { return double(truth(a) != truth(b)); },
          [](int64_t a, int64_t b) { return int64_t(truth(a) != truth(b)); }, "kop_logical_xor"),
      row(Op::bitwise_and, "bitwise_and", 2, R::argument, C::cheap, G::promoted_binary, nullptr,
          [](int64_t a, int64_t b) { return a & b; }, "kop_bitwise_and"),
      row(Op::bitwise_or, "bitwise_or", 2, R::argument, C::cheap, G::promoted_binary, nullptr,
          [](int64_t a, int64_t b) { return a | b; }, "kop_bitwise_or"),
      row(Op::bitwise_xor, "bitwise_xor", 2, R::argument, C::cheap, G::promoted_binary, nullptr,
          [](int64_t a, int64_t b) { return a ^ b; }, "kop_bitwise_xor"),
      // Values arrive sign- or zero-extended to int64 and the result wraps to the dtype, so the
      // int64 shift is the narrow type's shift (64 and more: 0, or the sign to the right).
      row(Op::bitwise_left_shift, "bitwise_left_shift", 2, R::argument, C::cheap, G::promoted_binary, nullptr,
          [](int64_t a, int64_t b) { return b < 0 || b >= 64 ? int64_t(0) : int64_t(uint64_t(a) << b); },
          "kop_bitwise_left_shift"),
      row(Op::bitwise_right_shift, "bitwise_right_shift", 2, R::argument, C::cheap, G::promoted_binary, nullptr,
          [](int64_t a, int64_t b) { return b < 0 || b >= 64 ? int64_t(a < 0 ? -1 : 0) : a >> b; },
          "kop_bitwise_right_shift"),
      // Integers only (lowering_pointwise.cpp lowers bitwise_not of bools as logical_not).
      row(Op::bitwise_not, "bitwise_not", 1, R::argument, C::cheap, G::custom, nullptr,
          [](int64_t a, int64_t) { return ~a; }, "kop_bitwise_not"),
      // exp of an argument known to be <= 0 or NaN (no graph op: the scheduler puts it where a
      // value minus its row's max is exponentiated, codegen/schedule_shifted_exps.cpp); the
      // preludes spell it kiln_exp_nonpositive, which skips exp's overflow select.
      row(Op::exp_nonpositive, "exp_nonpositive", 1, R::argument, C::expensive, G::none,
          [](double x, double) { return std::exp(x); }, nullptr, "kiln_exp_nonpositive"),
      // 1 + erf(x) = erfc(-x) (no graph op: the scheduler puts it where 1 + erf(a) or 1 - erf(a) is
      // computed, codegen/schedule_erf_complements.cpp); the preludes spell it kiln_one_plus_erf.
      row(Op::one_plus_erf, "one_plus_erf", 1, R::argument, C::expensive, G::none,
          [](double x, double) { return std::erfc(-x); }, nullptr, "kiln_one_plus_erf"),
  };
}

}  // namespace

const std::vector<LoopOpInfo>& loop_ops() {
  static const std::vector<LoopOpInfo> table = [] {
    std::vector<LoopOpInfo> rows = make_table();
    // Row i is enumerator i + 1 (LoopOp::none has no row), so lookups are an index.
    for (size_t i = 0; i < rows.size(); ++i)
      KILN_CHECK(size_t(rows[i].op) == i + 1, "the loop op table is out of enumerator order at ", rows[i].name);
    KILN_CHECK(rows.size() == size_t(LoopOp::one_plus_erf), "the loop op table lacks a row");
    return rows;
  }();
  return table;
}

const LoopOpInfo& loop_op_info(LoopOp op) {
  KILN_CHECK(op != LoopOp::none, "loop op table: LoopOp::none is not an op");
  return loop_ops().at(size_t(op) - 1);
}

std::optional<LoopOp> find_loop_op(std::string_view name) {
  for (const LoopOpInfo& info : loop_ops())
    if (info.name == name) return info.op;
  return std::nullopt;
}

}  // namespace kiln::codegen
