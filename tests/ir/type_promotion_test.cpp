// Type promotion against tables written from PyTorch (torch.promote_types over Kiln's ten
// dtypes, as PyTorch 2.x prints it; torch.result_type and torch.can_cast from its
// documentation).
#include "ir/type_promotion.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/error.h"

namespace kiln::ir {
namespace {

constexpr DType f32 = DType::f32, f16 = DType::f16, bf16 = DType::bf16, f64 = DType::f64, i64 = DType::i64,
                i32 = DType::i32, i16 = DType::i16, i8 = DType::i8, u8 = DType::u8, b = DType::boolean;

TEST(PromoteTypes, MatchesPyTorchTable) {
  // Rows and columns in this order; entries as torch.promote_types gives them.
  const DType order[] = {u8, i8, i16, i32, i64, f16, f32, f64, b, bf16};
  const DType table[10][10] = {
      //        u8    i8   i16   i32   i64   f16   f32   f64     b  bf16
      /* u8 */ {u8, i16, i16, i32, i64, f16, f32, f64, u8, bf16},
      /* i8 */ {i16, i8, i16, i32, i64, f16, f32, f64, i8, bf16},
      /*i16 */ {i16, i16, i16, i32, i64, f16, f32, f64, i16, bf16},
      /*i32 */ {i32, i32, i32, i32, i64, f16, f32, f64, i32, bf16},
      /*i64 */ {i64, i64, i64, i64, i64, f16, f32, f64, i64, bf16},
      /*f16 */ {f16, f16, f16, f16, f16, f16, f32, f64, f16, f32},
      /*f32 */ {f32, f32, f32, f32, f32, f32, f32, f64, f32, f32},
      /*f64 */ {f64, f64, f64, f64, f64, f64, f64, f64, f64, f64},
      /*  b */ {u8, i8, i16, i32, i64, f16, f32, f64, b, bf16},
      /*bf16*/ {bf16, bf16, bf16, bf16, bf16, f32, f32, f64, bf16, bf16},
  };
  for (int row = 0; row < 10; ++row)
    for (int column = 0; column < 10; ++column)
      EXPECT_EQ(promote_types(order[row], order[column]), table[row][column])
          << dtype_name(order[row]) << " + " << dtype_name(order[column]);
}

TEST(PromoteTypes, WideUnsignedTypesPromoteOnlyWithFloats) {
  // torch.promote_types in PyTorch 2.x: uint16/32/64 with themselves or a floating type, and a
  // RuntimeError ("Promotion for uint16, uint32, uint64 types is not supported") otherwise.
  const DType u16 = DType::u16, u32 = DType::u32, u64 = DType::u64;
  for (DType u : {u16, u32, u64}) {
    EXPECT_EQ(promote_types(u, u), u);
    for (DType f : {f16, bf16, f32, f64}) {
      EXPECT_EQ(promote_types(u, f), f) << dtype_name(u) << " + " << dtype_name(f);
      EXPECT_EQ(promote_types(f, u), f);
    }
    for (DType other : {u8, i8, i16, i32, i64, b, u16, u32, u64}) {
      if (other == u) continue;
      EXPECT_THROW(promote_types(u, other), Error) << dtype_name(u) << " + " << dtype_name(other);
      EXPECT_THROW(promote_types(other, u), Error);
    }
  }
  try {
    promote_types(u32, i32);
    FAIL() << "u32 + i32 promoted";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "promotion of u32 with i32 is not supported (as in PyTorch, u16, u32 and u64 promote only with floating "
              "types): cast one operand first");
  }
  // A Python number or a 0-d tensor of the same category leaves a u32 tensor u32 (no promotion).
  EXPECT_EQ(result_type(std::vector<PromotionOperand>{PromotionOperand::tensor(u32, 1), PromotionOperand::scalar(i64)}), u32);
  EXPECT_EQ(result_type(std::vector<PromotionOperand>{PromotionOperand::tensor(u64, 1), PromotionOperand::tensor(i64, 0)}), u64);
  EXPECT_EQ(result_type(std::vector<PromotionOperand>{PromotionOperand::tensor(u16, 1), PromotionOperand::scalar(f32)}), f32);
  EXPECT_EQ(sum_dtype(u64), i64);
}

TEST(PromoteTypes, HalfTypesMeetInF32) {
  EXPECT_EQ(promote_types(bf16, f16), f32);
  EXPECT_EQ(promote_types(f16, bf16), f32);
}

TEST(DTypeCategory, OrdersBoolIntegralFloating) {
  EXPECT_EQ(dtype_category(b), DTypeCategory::boolean);
  EXPECT_EQ(dtype_category(u8), DTypeCategory::integral);
  EXPECT_EQ(dtype_category(i64), DTypeCategory::integral);
  EXPECT_EQ(dtype_category(bf16), DTypeCategory::floating);
}

using Operand = PromotionOperand;

DType result(std::initializer_list<Operand> operands) {
  return result_type(std::span<const Operand>(operands.begin(), operands.size()));
}
Operand tensor(DType dtype) { return Operand::tensor(dtype, 1); }
Operand zero_dim(DType dtype) { return Operand::tensor(dtype, 0); }
Operand scalar_int() { return Operand::scalar(i64); }
Operand scalar_float() { return Operand::scalar(kDefaultFloat); }
Operand scalar_bool() { return Operand::scalar(b); }

TEST(ResultType, DimensionedTensorsPromoteAsTable) {
  EXPECT_EQ(result({tensor(i32), tensor(f16)}), f16);
  EXPECT_EQ(result({tensor(u8), tensor(i8)}), i16);
  EXPECT_EQ(result({tensor(i16), tensor(u8)}), i16);
  EXPECT_EQ(result({tensor(i16), tensor(i32)}), i32);
  EXPECT_EQ(result({tensor(b), tensor(b)}), b);
}

TEST(ResultType, PythonScalarsOnlyRaiseTheCategory) {
  // Examples from the torch.result_type / type promotion documentation.
  EXPECT_EQ(result({tensor(i64), scalar_float()}), f32);  // int tensor + 2.5 -> default float
  EXPECT_EQ(result({tensor(i32), scalar_int()}), i32);    // int32 tensor + 5 -> int32
  EXPECT_EQ(result({tensor(u8), scalar_int()}), u8);
  EXPECT_EQ(result({tensor(f16), scalar_float()}), f16);
  EXPECT_EQ(result({tensor(bf16), scalar_int()}), bf16);
  EXPECT_EQ(result({tensor(b), scalar_int()}), i64);      // bool tensor + 5 -> int64
  EXPECT_EQ(result({tensor(b), scalar_float()}), f32);
  EXPECT_EQ(result({tensor(b), scalar_bool()}), b);
  EXPECT_EQ(result({tensor(i32), scalar_bool()}), i32);
  EXPECT_EQ(result({tensor(i16), scalar_int()}), i16);    // int16 tensor + 5 -> int16
  EXPECT_EQ(result({tensor(i16), scalar_float()}), f32);
}

TEST(ResultType, ZeroDimTensorsRankBetweenTensorsAndScalars) {
  EXPECT_EQ(result({tensor(i32), zero_dim(i64)}), i32);  // same category: dimensioned wins
  EXPECT_EQ(result({tensor(f16), zero_dim(f64)}), f16);
  EXPECT_EQ(result({tensor(i32), zero_dim(f64)}), f64);  // higher category: promoted
  EXPECT_EQ(result({tensor(i64), zero_dim(f16)}), f16);
  EXPECT_EQ(result({zero_dim(i32), scalar_int()}), i32);
  EXPECT_EQ(result({zero_dim(i32), scalar_float()}), f32);
  EXPECT_EQ(result({zero_dim(f16), zero_dim(f32)}), f32);
  EXPECT_EQ(result({tensor(u8), zero_dim(i8), scalar_float()}), f32);
  EXPECT_EQ(result({tensor(i16), zero_dim(i64)}), i16);
  EXPECT_EQ(result({tensor(i16), zero_dim(f64)}), f64);
  EXPECT_EQ(result({tensor(i16), zero_dim(bf16)}), bf16);
}

TEST(ResultType, OnlyScalars) {
  EXPECT_EQ(result({scalar_int(), scalar_int()}), i64);
  EXPECT_EQ(result({scalar_int(), scalar_float()}), f32);
  EXPECT_EQ(result({scalar_bool()}), b);
}

TEST(CanCast, FollowsPyTorch) {
  EXPECT_TRUE(can_cast(i64, f32));
  EXPECT_TRUE(can_cast(f64, f16));  // narrowing within a category is allowed
  EXPECT_TRUE(can_cast(i64, u8));
  EXPECT_TRUE(can_cast(b, i32));
  EXPECT_TRUE(can_cast(b, b));
  EXPECT_FALSE(can_cast(f32, i64));
  EXPECT_FALSE(can_cast(f16, u8));
  EXPECT_TRUE(can_cast(i16, i8));
  EXPECT_FALSE(can_cast(f32, i16));
  EXPECT_FALSE(can_cast(i16, b));
  EXPECT_FALSE(can_cast(i32, b));
  EXPECT_FALSE(can_cast(f32, b));
}

TEST(FloatOps, IntegralInputsBecomeDefaultFloat) {
  EXPECT_EQ(to_floating(i64), f32);
  EXPECT_EQ(to_floating(i16), f32);
  EXPECT_EQ(to_floating(b), f32);
  EXPECT_EQ(to_floating(f16), f16);
  EXPECT_EQ(to_floating(f64), f64);
}

TEST(SumDType, IntegralAndBoolAccumulateAsI64) {
  EXPECT_EQ(sum_dtype(i32), i64);
  EXPECT_EQ(sum_dtype(u8), i64);
  EXPECT_EQ(sum_dtype(i16), i64);
  EXPECT_EQ(sum_dtype(b), i64);
  EXPECT_EQ(sum_dtype(bf16), bf16);
}

}  // namespace
}  // namespace kiln::ir
