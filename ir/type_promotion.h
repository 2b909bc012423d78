// Owns type promotion: PyTorch's rules for the dtype of an op's result, for Kiln's thirteen
// dtypes (f32 f16 bf16 f64 i64 i32 i16 i8 u8 u16 u32 u64 bool).
//
//  - Categories are ordered bool < integral < floating.
//  - promote_types(a, b) is PyTorch's table: the smallest dtype that holds both (u8 + i8 is
//    i16). As in PyTorch, u16, u32 and u64 promote with floating types only (u32 + f16 is f16);
//    with any other dtype promote_types throws kiln::Error. Kiln lacks the complex types.
//  - result_type over operands of three priorities, highest first: dimensioned tensors,
//    zero-dim tensors, Python scalars. A lower-priority operand changes the result only when
//    its category is higher (i32 tensor + 2 -> i32, i64 tensor + 2.5 -> f32, f16 tensor +
//    2.0 -> f16, bool tensor + 2 -> i64, i32 tensor + f64 zero-dim tensor -> f64).
//    A Python float scalar counts as the default float dtype (f32), an int as i64.
//  - can_cast(from, to) is PyTorch's rule for writing a result into an existing tensor
//    (in-place ops, out=): no floating -> integral, no non-bool -> bool.
#pragma once

#include <cstdint>
#include <span>

#include "kiln/dtype.h"

namespace kiln::ir {

// The dtype a Python float takes in type promotion, and the result of float ops (exp, sqrt,
// true division, mean, ...) on integral or bool inputs.
inline constexpr DType kDefaultFloat = DType::f32;

enum class DTypeCategory : uint8_t { boolean, integral, floating };
DTypeCategory dtype_category(DType dtype);

// The smallest dtype both a and b convert to without losing their category (PyTorch's
// torch.promote_types; kiln::Error where PyTorch refuses: u16/u32/u64 with a non-float).
DType promote_types(DType a, DType b);

// Whether a value of dtype `from` may be written into a tensor of dtype `to` (torch.can_cast).
bool can_cast(DType from, DType to);

// One input of result_type: its dtype and its priority.
struct PromotionOperand {
  enum class Kind : uint8_t { dimensioned, zero_dim, scalar };
  DType dtype = DType::f32;
  Kind kind = Kind::dimensioned;

  static PromotionOperand tensor(DType dtype, int64_t rank) {
    return {dtype, rank == 0 ? Kind::zero_dim : Kind::dimensioned};
  }
  // A Python number: pass DType::boolean, DType::i64 or kDefaultFloat (see scalar_dtype).
  static PromotionOperand scalar(DType dtype) { return {dtype, Kind::scalar}; }
};

// PyTorch's torch.result_type over any number of operands (at least one).
DType result_type(std::span<const PromotionOperand> operands);

// The dtype of a float op's result: integral and bool become the default float (f32),
// floating dtypes are kept.
DType to_floating(DType dtype);

// The accumulation dtype of sum, prod and cumsum without an explicit dtype: integral and
// bool become i64, floating dtypes are kept.
DType sum_dtype(DType dtype);

}  // namespace kiln::ir
