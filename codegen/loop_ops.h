// The loop-IR op table: every op a Unary or Binary expression of the loop IR (codegen/loop_ir.h)
// may apply, one row each, and everything codegen needs to know about it in one place: its
// printed name, arity, result dtype, cost class (read by the scheduler), how a graph op of the
// same name lowers onto it (codegen/lowering_pointwise.cpp), how the scalar loop evaluator
// computes it (codegen/loop_evaluator.cpp), and how generated C++ and CUDA spell it (the C-like
// printer, codegen/c_like/c_printer.cpp). Adding a pointwise op adds one enumerator and one row.
//
// Semantics are the reference interpreter's (ir/kernels/): arguments arrive in the computation
// dtype (lowering casts them), comparisons and the logical ops give bool, maximum and minimum
// propagate NaN, round is half to even, div_trunc / div_floor / fmod / remainder follow PyTorch
// (integer division by zero is a ZeroDivisionError), bitwise_and / bitwise_or take bools and
// integers.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kiln::codegen {

enum class LoopOp : uint8_t {
  none,  // not an op: the `op` of expressions that are not Unary or Binary
  // unary
  neg, abs, exp, log, log1p, expm1, sqrt, rsqrt, reciprocal, sin, cos, tanh, sigmoid, erf, erfinv, relu, floor,
  ceil, round, sign, logical_not, isnan,
  // binary
  add, sub, mul, div, div_trunc, div_floor, pow, maximum, minimum, fmod, remainder, eq, ne, lt, le, gt, ge,
  logical_and, logical_or, logical_xor, bitwise_and, bitwise_or, bitwise_xor, bitwise_left_shift, bitwise_right_shift,
  // unary again (added later; row order follows the enumerators)
  bitwise_not, exp_nonpositive, one_plus_erf,
};

// The dtype of an op's result.
enum class LoopResultDType {
  argument,  // the (common) dtype of its arguments
  boolean,   // bool (comparisons, logical ops, isnan)
};

// What a value costs to compute, for the scheduler: a reduction whose body contains an
// expensive op stores its values for a later row step of its kernel to read back instead of
// computing them again (softmax's exp).
enum class LoopCost {
  cheap,      // a few instructions: arithmetic, comparisons, selects, rounding, sqrt
  expensive,  // a polynomial or a library call: exp, log, tanh, erf, pow, ...
};

// How the graph op of the same name lowers onto this loop op (codegen/lowering_pointwise.cpp).
enum class GraphLowering {
  none,             // no graph op lowers onto it by this table (lowering builds it where needed)
  custom,           // lowering_pointwise.cpp has the graph op's own lowering (add, sub, div, pow)
  float_unary,      // integer and bool inputs convert to the result's float dtype first
  same_unary,       // the input's dtype (neg, abs, relu, sign)
  rounding_unary,   // floats only: the identity on integer and bool inputs (floor, ceil, round)
  truth_unary,      // the input as bool (logical_not)
  nan_test_unary,   // floats only: false on integer and bool inputs (isnan)
  promoted_binary,  // both operands converted to the promoted dtype (mul, maximum, comparisons, ...)
  truth_binary,     // both operands as bool (logical_and, logical_or, logical_xor)
};

// The loop evaluator's scalar semantics: floating arguments computed in double, integer and
// bool arguments in int64 (the evaluator rounds or wraps the result to the expression's dtype).
// Unary ops ignore `b`. A bool result is 0 or 1. nullptr: the op is not defined on that kind of
// argument (lowering never builds it).
using FloatEvaluator = double (*)(double a, double b);
using IntEvaluator = int64_t (*)(int64_t a, int64_t b);

struct LoopOpInfo {
  LoopOp op;
  std::string_view name;  // as the loop printer prints it (and the graph op that lowers onto it)
  int arity;              // 1 or 2
  LoopResultDType result;
  LoopCost cost;
  GraphLowering lowering;
  FloatEvaluator on_float;
  IntEvaluator on_int;
  // The function generated C++ calls, overloaded for every computation dtype: an op of the
  // shared op layer (kop_*, codegen/c_like/c_ops.cpp) or a function of both preludes.
  std::string_view c_spelling;
  std::string_view cuda_spelling;  // generated CUDA's, where it differs from c_spelling (else empty)
  std::string_view infix;          // the loop printer's infix operator ("+"), or empty: name(args)
};

// The row of `op` (an internal error for LoopOp::none).
const LoopOpInfo& loop_op_info(LoopOp op);
// Every row, in enumerator order.
const std::vector<LoopOpInfo>& loop_ops();
// The op printed as `name`, if any.
std::optional<LoopOp> find_loop_op(std::string_view name);

inline std::string_view loop_op_name(LoopOp op) { return loop_op_info(op).name; }

}  // namespace kiln::codegen
