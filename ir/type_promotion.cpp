// PyTorch's type promotion rules for Kiln's dtypes (see type_promotion.h).
#include "ir/type_promotion.h"

#include <optional>

#include "kiln/error.h"

namespace kiln::ir {

DTypeCategory dtype_category(DType dtype) {
  if (dtype == DType::boolean) return DTypeCategory::boolean;
  return is_floating(dtype) ? DTypeCategory::floating : DTypeCategory::integral;
}

namespace {
bool is_wide_unsigned(DType dtype) { return dtype == DType::u16 || dtype == DType::u32 || dtype == DType::u64; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // PyTorch promotes u16, u32 and u64 only with floating types (and refuses the rest).
  if ((is_wide_unsigned(a) && !is_floating(b)) || (is_wide_unsigned(b) && !is_floating(a)))
    fail("promotion of ", dtype_name(a), " with ", dtype_name(b),
         " is not supported (as in PyTorch, u16, u32 and u64 promote only with floating types): cast one operand first");
  if (a == DType::boolean) return b;
  if (b == DType::boolean) return a;
  bool a_float = is_floating(a), b_float = is_floating(b);
  if (a_float && b_float) {
    if (a == DType::f64 || b == DType::f64) return DType::f64;
    // f32 with a half type, or f16 with bf16 (neither holds the other): f32.
    return DType::f32;
  }
  if (a_float) return a;
  if (b_float) return b;
  // Both integral. u8 is the only unsigned type left: with a wider signed type the signed one
  // wins; with i8 (as wide) PyTorch picks i16, the narrowest signed type that holds both.
  if (a == DType::u8 || b == DType::u8) {
    DType signed_type = a == DType::u8 ? b : a;
    return signed_type == DType::i8 ? DType::i16 : signed_type;
  }
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

bool can_cast(DType from, DType to) {
  if (is_floating(from) && is_integral(to)) return false;
  if (from != DType::boolean && to == DType::boolean) return false;
  return true;
}

namespace {

// PyTorch's combine_categories: the higher-priority result wins unless the lower one is of
// a higher category (or the higher one is bool), in which case the two are promoted.
std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::boolean || is_floating(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

DType result_type(std::span<const PromotionOperand> operands) {
  KILN_CHECK(!operands.empty(), "result_type of no operands");
  std::optional<DType> by_kind[3];
  for (const PromotionOperand& operand : operands) {
    std::optional<DType>& slot = by_kind[size_t(operand.kind)];
    slot = slot ? promote_types(*slot, operand.dtype) : operand.dtype;
  }
  using Kind = PromotionOperand::Kind;
  std::optional<DType> result = combine_categories(
      by_kind[size_t(Kind::dimensioned)],
      combine_categories(by_kind[size_t(Kind::zero_dim)], by_kind[size_t(Kind::scalar)]));
  return *result;
}

DType to_floating(DType dtype) { return is_floating(dtype) ? dtype : kDefaultFloat; }

DType sum_dtype(DType dtype) { return is_floating(dtype) ? dtype : DType::i64; }

}  // namespace kiln::ir
