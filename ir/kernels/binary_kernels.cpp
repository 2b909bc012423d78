// Reference kernels of the elementwise binary ops (add, sub, mul, div with rounding modes,
// pow, maximum/minimum, fmod/remainder), the comparisons, the logical and bitwise ops, where
// and cast.
// Operands are converted to the promoted dtype first (PyTorch's result_type), then the
// operation runs exactly in int64 (wrapping through unsigned arithmetic) for integer and bool
// dtypes, or in double for floating ones, and the result is rounded to the output dtype once.
// u64 values are held as their bits in int64 (2^63 and up read negative): the ops whose result
// depends on the order or sign (division, remainders, max/min, comparisons, right shifts) run
// on them as uint64; u8, u16 and u32 values are zero-extended, so int64 is exact for them.
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"
#include "runtime/scalar_arithmetic.h"

namespace kiln::ir::kernels {
namespace {

// Parameters `first` and `second` (tensors or numbers) converted to `compute` and broadcast.
struct Broadcast2 {
  Sizes shape;
  Tensor a, b;
};
Broadcast2 broadcast_operands(const KernelCall& call, size_t first, size_t second, DType compute) {
  Tensor a = operand_tensor(call, first, compute), b = operand_tensor(call, second, compute);
  Sizes shape = broadcast_shapes(a.sizes(), b.sizes());
  return {shape, a.expand(shape), b.expand(shape)};
}

DType promoted(const KernelCall& call, size_t first, size_t second) {
  TypeOperand operands[] = {operand_of(call, first), operand_of(call, second)};
  return common_dtype(operands);
}

// Runs fn over the broadcast operands as doubles and writes `out`.
template <typename Fn>
Tensor float_binary(const Broadcast2& in, DType out, Fn fn) {
  std::vector<double> a = to_doubles(in.a), b = to_doubles(in.b);
  std::vector<double> result(a.size());
  for (size_t i = 0; i < a.size(); ++i) result[i] = fn(a[i], b[i]);
  return from_doubles(in.shape, out, result);
}

// Runs fn over the broadcast operands as int64 and writes `out`.
template <typename Fn>
Tensor int_binary(const Broadcast2& in, DType out, Fn fn) {
  std::vector<int64_t> a = to_ints(in.a), b = to_ints(in.b);
  std::vector<int64_t> result(a.size());
  for (size_t i = 0; i < a.size(); ++i) result[i] = fn(a[i], b[i]);
  return from_ints(in.shape, out, result);
}

// The unsigned forms for u64 operands held as int64 bits.
uint64_t u64_bits(int64_t value) { return uint64_t(value); }

int64_t wrap_add(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
int64_t wrap_mul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

// The shifts on int64 values of a narrower type (sign- or zero-extended): shifting left by 64
// or more gives 0, right by 64 or more the sign (0 or -1); the result wraps to the type.
int64_t shift_left(int64_t a, int64_t b) { return b < 0 || b >= 64 ? 0 : int64_t(uint64_t(a) << b); }
int64_t shift_right(int64_t a, int64_t b) { return b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b; }

enum class Bitwise { and_, or_, xor_, left_shift, right_shift };

// The bitwise ops on integers and bools in the promoted dtype, exactly in int64.
ReferenceKernel bitwise_kernel(Bitwise kind) {
  return single([kind](const KernelCall& call) {
    DType dtype = promoted(call, 0, 1);
    bool shift = kind == Bitwise::left_shift || kind == Bitwise::right_shift;
    if (is_floating(dtype) || (shift && dtype == DType::boolean))
      call.fail("\"", call.op().name(), "_cpu\" not implemented for '", dtype_name(dtype), "'");
    return int_binary(broadcast_operands(call, 0, 1, dtype), dtype, [kind, dtype](int64_t a, int64_t b) {
      switch (kind) {
        case Bitwise::and_: return a & b;
        case Bitwise::or_: return a | b;
        case Bitwise::xor_: return a ^ b;
        case Bitwise::left_shift: return shift_left(a, b);
        case Bitwise::right_shift:
          if (dtype == DType::u64) return b < 0 || b >= 64 ? int64_t(0) : int64_t(u64_bits(a) >> b);
          return shift_right(a, b);
      }
      return int64_t(0);
    });
  });
}

[[noreturn]] void zero_division(const KernelCall& call, std::string_view what) {
  call.fail("ZeroDivisionError: integer ", what, " by zero");
}

// add / sub: self + sign * alpha * other.
Tensor add_sub(const KernelCall& call, bool subtract) {
  DType dtype = promoted(call, 0, 1);
  if (subtract && dtype == DType::boolean)
    call.fail("subtraction, the `-` operator, with two bool tensors is not supported; use logical_xor instead");
  const Argument& alpha = call.arg(2);
  Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
  if (is_floating(dtype)) {
    double scale = (subtract ? -1.0 : 1.0) * alpha.floating();
    return float_binary(in, dtype, [scale](double a, double b) { return a + scale * b; });
  }
  if (alpha.is_float())
    call.fail("for integral input tensors, argument alpha must not be a floating point number");
  int64_t scale = alpha.is_bool() ? int64_t(alpha.boolean()) : alpha.integer();
  if (subtract) scale = int64_t(0 - uint64_t(scale));
  return int_binary(in, dtype, [scale](int64_t a, int64_t b) { return wrap_add(a, wrap_mul(scale, b)); });
}

Tensor div(const KernelCall& call) {
  DType dtype = promoted(call, 0, 1);
  const Argument& mode_arg = call.arg(2);
  std::string mode = mode_arg.is_none() ? "" : mode_arg.string();
  if (mode.empty()) {
    DType out = float_result(dtype);
    return float_binary(broadcast_operands(call, 0, 1, out), out, [](double a, double b) { return a / b; });
  }
  if (mode != "trunc" && mode != "floor")
    call.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode, "'");
  Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
  if (is_floating(dtype)) {
    if (mode == "trunc") return float_binary(in, dtype, [](double a, double b) { return std::trunc(a / b); });
    return float_binary(in, dtype, floor_divide);
  }
  return int_binary(in, dtype, [&](int64_t a, int64_t b) {
    if (b == 0) zero_division(call, "division");
    if (dtype == DType::u64) return int64_t(u64_bits(a) / u64_bits(b));  // trunc and floor agree
    return mode == "trunc" ? int_truncate_divide(a, b) : int_floor_divide(a, b);
  });
}

Tensor pow(const KernelCall& call) {
  DType dtype = promoted(call, 0, 1);
  if (!is_floating(dtype) && call.is_number(1) && !call.is_float_number(1) && call.scalar_int(1) < 0)
    call.fail("integers to negative integer powers are not allowed");
  Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
  if (is_floating(dtype)) return float_binary(in, dtype, [](double a, double b) { return std::pow(a, b); });
  return int_binary(in, dtype, int_pow);
}

Tensor maximum_minimum(const KernelCall& call, bool is_max) {
  DType dtype = promoted(call, 0, 1);
  Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
  if (is_floating(dtype)) return float_binary(in, dtype, is_max ? nan_max : nan_min);
  if (dtype == DType::u64)
    return int_binary(in, dtype, [is_max](int64_t a, int64_t b) {
      return int64_t(is_max ? std::max(u64_bits(a), u64_bits(b)) : std::min(u64_bits(a), u64_bits(b)));
    });
  return int_binary(in, dtype, [is_max](int64_t a, int64_t b) { return is_max ? std::max(a, b) : std::min(a, b); });
}

Tensor modulo(const KernelCall& call, bool python_sign) {
  DType dtype = promoted(call, 0, 1);
  Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
  if (is_floating(dtype))
    return float_binary(in, dtype, python_sign ? python_fmod : +[](double a, double b) { return std::fmod(a, b); });
  return int_binary(in, dtype, [&](int64_t a, int64_t b) {
    if (b == 0) zero_division(call, python_sign ? "remainder" : "fmod");
    if (dtype == DType::u64) return int64_t(u64_bits(a) % u64_bits(b));  // both signs agree
    return python_sign ? int_floor_mod(a, b) : int_c_remainder(a, b);
  });
}

enum class Comparison { eq, ne, lt, le, gt, ge };
template <typename T>
bool compare(Comparison kind, T a, T b) {
  switch (kind) {
    case Comparison::eq: return a == b;
    case Comparison::ne: return a != b;
    case Comparison::lt: return a < b;
    case Comparison::le: return a <= b;
    case Comparison::gt: return a > b;
    case Comparison::ge: return a >= b;
  }
  return false;
}

// Compares in the promoted dtype (both operands converted to it first), result bool.
ReferenceKernel comparison_kernel(Comparison kind) {
  return single([kind](const KernelCall& call) {
    DType dtype = promoted(call, 0, 1);
    Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
    if (is_floating(dtype))
      return float_binary(in, DType::boolean, [kind](double a, double b) { return compare(kind, a, b) ? 1.0 : 0.0; });
    if (dtype == DType::u64)
      return int_binary(in, DType::boolean, [kind](int64_t a, int64_t b) { return int64_t(compare(kind, u64_bits(a), u64_bits(b))); });
    return int_binary(in, DType::boolean, [kind](int64_t a, int64_t b) { return int64_t(compare(kind, a, b)); });
  });
}

// Truth values of each operand in its own dtype (NaN is true), result bool.
enum class Logical { and_, or_, xor_ };
ReferenceKernel logical_kernel(Logical kind) {
  return single([kind](const KernelCall& call) {
    Tensor a = call.is_tensor(0) ? call.tensor(0) : number_tensor(call.arg(0), TypeOperand::number(call.arg(0)).dtype);
    Tensor b = call.is_tensor(1) ? call.tensor(1) : number_tensor(call.arg(1), TypeOperand::number(call.arg(1)).dtype);
    Sizes shape = broadcast_shapes(a.sizes(), b.sizes());
    std::vector<double> x = to_doubles(a.expand(shape)), y = to_doubles(b.expand(shape));
    std::vector<double> result(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      bool p = x[i] != 0.0, q = y[i] != 0.0;
      bool value = kind == Logical::and_ ? (p && q) : kind == Logical::or_ ? (p || q) : (p != q);
      result[i] = value ? 1.0 : 0.0;
    }
    return from_doubles(shape, DType::boolean, result);
  });
}

Tensor where(const KernelCall& call) {
  const Tensor& condition = call.tensor(0);
  DType dtype = promoted(call, 1, 2);
  Tensor a = operand_tensor(call, 1, dtype), b = operand_tensor(call, 2, dtype);
  Sizes shape = broadcast_shapes(condition.sizes(), broadcast_shapes(a.sizes(), b.sizes()));
  std::vector<double> truth = to_doubles(condition.expand(shape));
  if (is_floating(dtype)) {
    std::vector<double> x = to_doubles(a.expand(shape)), y = to_doubles(b.expand(shape));
    for (size_t i = 0; i < x.size(); ++i) x[i] = truth[i] != 0.0 ? x[i] : y[i];
    return from_doubles(shape, dtype, x);
  }
  std::vector<int64_t> x = to_ints(a.expand(shape)), y = to_ints(b.expand(shape));
  for (size_t i = 0; i < x.size(); ++i) x[i] = truth[i] != 0.0 ? x[i] : y[i];
  return from_ints(shape, dtype, x);
}

}  // namespace

void register_binary_kernels(KernelTable& table) {
  table["add"] = single([](const KernelCall& call) { return add_sub(call, false); });
  table["sub"] = single([](const KernelCall& call) { return add_sub(call, true); });
  table["mul"] = single([](const KernelCall& call) {
    DType dtype = promoted(call, 0, 1);
    Broadcast2 in = broadcast_operands(call, 0, 1, dtype);
    if (is_floating(dtype)) return float_binary(in, dtype, [](double a, double b) { return a * b; });
    return int_binary(in, dtype, wrap_mul);
  });
  table["div"] = single(div);
  table["pow"] = single(pow);
  table["maximum"] = single([](const KernelCall& call) { return maximum_minimum(call, true); });
  table["minimum"] = single([](const KernelCall& call) { return maximum_minimum(call, false); });
  table["fmod"] = single([](const KernelCall& call) { return modulo(call, false); });
  table["remainder"] = single([](const KernelCall& call) { return modulo(call, true); });
  table["eq"] = comparison_kernel(Comparison::eq);
  table["ne"] = comparison_kernel(Comparison::ne);
  table["lt"] = comparison_kernel(Comparison::lt);
  table["le"] = comparison_kernel(Comparison::le);
  table["gt"] = comparison_kernel(Comparison::gt);
  table["ge"] = comparison_kernel(Comparison::ge);
  table["logical_and"] = logical_kernel(Logical::and_);
  table["logical_or"] = logical_kernel(Logical::or_);
  table["logical_xor"] = logical_kernel(Logical::xor_);
  table["bitwise_and"] = bitwise_kernel(Bitwise::and_);
  table["bitwise_or"] = bitwise_kernel(Bitwise::or_);
  table["bitwise_xor"] = bitwise_kernel(Bitwise::xor_);
  table["bitwise_left_shift"] = bitwise_kernel(Bitwise::left_shift);
  table["bitwise_right_shift"] = bitwise_kernel(Bitwise::right_shift);
  table["where"] = single(where);
  table["cast"] = single([](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    DType dtype = call.dtype_arg(1);
    // Float to integer truncates; NaN and out-of-range values follow runtime/tensor.cpp's
    // store rules (saturate to int64, then wrap to the narrower type).
    Tensor result = Tensor::empty(self.sizes(), dtype);
    result.copy_from(self);
    return result;
  });
}

}  // namespace kiln::ir::kernels
