// Tests of the runtime core: dtypes, devices, half/bfloat16 conversion, the aligned
// allocator, Tensor views (sharing storage) and copies.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "runtime/allocator.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "runtime/half.h"
#include "kiln/tensor.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

TEST(DType, NamesSizesAndCategories) {
  EXPECT_EQ(dtype_name(DType::f32), "f32");
  EXPECT_EQ(dtype_name(DType::boolean), "bool");
  EXPECT_EQ(parse_dtype("float32"), DType::f32);
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("long"), DType::i64);
  EXPECT_EQ(parse_dtype("int16"), DType::i16);
  EXPECT_EQ(parse_dtype("short"), DType::i16);
  EXPECT_EQ(dtype_name(DType::i16), "i16");
  EXPECT_EQ(dtype_size(DType::i16), 2u);
  EXPECT_TRUE(is_integral(DType::i16));
  EXPECT_TRUE(is_signed(DType::i16));
  EXPECT_EQ(parse_dtype("complex64"), std::nullopt);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::boolean), 1u);
  EXPECT_TRUE(is_floating(DType::f16));
  EXPECT_FALSE(is_floating(DType::i8));
  EXPECT_TRUE(is_integral(DType::u8));
  EXPECT_FALSE(is_integral(DType::boolean));
  for (DType dtype : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
}

TEST(Device, ParseAndPrint) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu());
  EXPECT_EQ(parse_device("cuda:1"), Device::cuda(1));
  EXPECT_EQ(Device::cuda(2).to_string(), "cuda:2");
  EXPECT_THROW(parse_device("tpu"), Error);
  EXPECT_THROW(parse_device("cuda:x"), Error);
  EXPECT_THROW(parse_device("cuda:"), Error);
}

TEST(Half, KnownBitPatterns) {
  // Values from the IEEE 754 binary16 definition.
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);          // largest finite
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);          // rounds to infinity
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -26)), 0x0000);  // underflows to zero
  EXPECT_EQ(f16_to_float(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(f16_to_float(float_to_f16(INFINITY))));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even (1 + 2^-9).
  EXPECT_EQ(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(Half, EveryF16RoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float value = f16_to_float(uint16_t(bits));
    if (std::isnan(value)) continue;
    ASSERT_EQ(float_to_f16(value), bits) << "bits " << bits;
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

TEST(Allocator, SixtyFourByteAligned) {
  for (size_t size : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000)}) {
    void* pointer = cpu_allocate(size);
    EXPECT_NE(pointer, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pointer) % kCpuAlignment, 0u);
    cpu_free(pointer);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Tensor::empty({3, 5}, DType::f32).data_ptr()) % 64, 0u);
}

Tensor arange_tensor(const Sizes& sizes, DType dtype = DType::f32) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = double(i);
  return Tensor::from_doubles(sizes, values, dtype);
}

TEST(Tensor, ContiguousLayout) {
  Tensor t = Tensor::zeros({2, 3, 4}, DType::f32);
  EXPECT_EQ(t.strides(), (Sizes{12, 4, 1}));
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(Tensor::scalar(2.5, DType::f64).item(), 2.5);
  EXPECT_EQ(Tensor::empty({0, 3}, DType::f32).numel(), 0);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = arange_tensor({2, 3});
  Tensor transposed = t.transpose(0, 1);
  EXPECT_TRUE(transposed.shares_storage_with(t));
  EXPECT_EQ(transposed.sizes(), (Sizes{3, 2}));
  EXPECT_EQ(transposed.strides(), (Sizes{1, 3}));
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.item_double(std::vector<int64_t>{2, 1}), 5.0);  // t[1][2]
  // A write through a view is seen by the base.
  transposed.set_double(std::vector<int64_t>{0, 1}, 42.0);
  EXPECT_EQ(t.item_double(std::vector<int64_t>{1, 0}), 42.0);

  Tensor row = t.select(0, -1);  // t[1]
  EXPECT_EQ(row.sizes(), (Sizes{3}));
  EXPECT_EQ(row.flat_double(2), 5.0);
  Tensor column = t.select(1, 1);
  EXPECT_EQ(column.strides(), (Sizes{3}));
  EXPECT_EQ(column.flat_double(1), 4.0);

  Tensor stepped = arange_tensor({10}).slice(0, 1, 100, 3);  // 1, 4, 7
  EXPECT_EQ(stepped.sizes(), (Sizes{3}));
  EXPECT_EQ(stepped.flat_double(2), 7.0);
  EXPECT_EQ(arange_tensor({10}).slice(0, -3, 10).flat_double(0), 7.0);
}

TEST(Tensor, ExpandUnsqueezeSqueeze) {
  Tensor t = arange_tensor({3, 1});
  Tensor expanded = t.expand({2, 3, 4});
  EXPECT_EQ(expanded.strides(), (Sizes{0, 1, 0}));
  EXPECT_EQ(expanded.item_double(std::vector<int64_t>{1, 2, 3}), 2.0);
  EXPECT_EQ(t.expand({-1, 5}).sizes(), (Sizes{3, 5}));
  EXPECT_THAT([&] { t.expand({4, 4}); }, ::testing::Throws<Error>());
  EXPECT_EQ(t.unsqueeze(0).sizes(), (Sizes{1, 3, 1}));
  EXPECT_EQ(t.unsqueeze(-1).sizes(), (Sizes{3, 1, 1}));
  EXPECT_EQ(t.squeeze(1).sizes(), (Sizes{3}));
  EXPECT_EQ(t.squeeze(0).sizes(), (Sizes{3, 1}));
}

TEST(Tensor, ViewAndReshape) {
  Tensor t = arange_tensor({2, 3, 4});
  Tensor viewed = t.view({6, -1});
  EXPECT_EQ(viewed.sizes(), (Sizes{6, 4}));
  EXPECT_TRUE(viewed.shares_storage_with(t));
  Tensor transposed = t.transpose(0, 2);  // [4, 3, 2], not viewable as [24]
  try {
    transposed.view({24});
    FAIL() << "view of a non-contiguous tensor should fail";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("use reshape instead"));
  }
  Tensor flat = transposed.reshape({24});
  EXPECT_FALSE(flat.shares_storage_with(t));
  EXPECT_EQ(flat.flat_double(1), 12.0);  // transposed[0][0][1] = t[1][0][0]
  EXPECT_THROW(t.view({5, -1}), Error);
  EXPECT_THROW(t.view({-1, -1}), Error);
  // Splitting a dim of a transposed view is still a view.
  Tensor split = t.transpose(1, 2).view({2, 2, 2, 3});
  EXPECT_TRUE(split.shares_storage_with(t));
  EXPECT_EQ(split.item_double(std::vector<int64_t>{1, 1, 0, 2}), t.item_double(std::vector<int64_t>{1, 2, 2}));
}

TEST(Tensor, PermuteErrors) {
  Tensor t = arange_tensor({2, 3});
  EXPECT_EQ(t.permute({1, 0}).sizes(), (Sizes{3, 2}));
  EXPECT_THROW(t.permute({0}), Error);
  EXPECT_THROW(t.permute({0, 0}), Error);
  EXPECT_THROW(t.permute({0, 2}), Error);
  EXPECT_THROW(t.select(0, 2), Error);
  try {
    t.size(2);
    FAIL();
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  }
}

TEST(Tensor, CopiesAndConversions) {
  Tensor t = arange_tensor({2, 3});
  Tensor transposed = t.transpose(0, 1);
  Tensor contiguous = transposed.contiguous();
  EXPECT_TRUE(contiguous.is_contiguous());
  EXPECT_FALSE(contiguous.shares_storage_with(t));
  EXPECT_EQ(contiguous.flat_double(1), 3.0);
  EXPECT_TRUE(t.contiguous().shares_storage_with(t));

  Tensor halves = Tensor::from_doubles({3}, std::vector<double>{1.5, -2.25, 1e-8}, DType::f16);
  EXPECT_EQ(halves.flat_double(1), -2.25);
  EXPECT_EQ(halves.flat_double(2), 0.0);  // below f16's smallest subnormal

  Tensor floats = Tensor::from_doubles({4}, std::vector<double>{2.7, -2.7, NAN, 1e30}, DType::f32);
  Tensor ints = floats.to(DType::i32);
  EXPECT_EQ(ints.flat_int(0), 2);   // truncation toward zero
  EXPECT_EQ(ints.flat_int(1), -2);
  Tensor bools = floats.to(DType::boolean);
  EXPECT_EQ(bools.flat_int(0), 1);
  EXPECT_EQ(Tensor::from_doubles({1}, std::vector<double>{0.0}, DType::f32).to(DType::boolean).flat_int(0), 0);
  // i64 values beyond 2^53 copy exactly between integer types.
  Tensor big = Tensor::empty({1}, DType::i64);
  big.set_int(std::vector<int64_t>{0}, (int64_t(1) << 60) + 1);
  EXPECT_EQ(big.to(DType::i64).flat_int(0), (int64_t(1) << 60) + 1);
  Tensor copy = Tensor::empty({1}, DType::i64);
  copy.copy_from(big);
  EXPECT_EQ(copy.flat_int(0), (int64_t(1) << 60) + 1);
  EXPECT_THROW(copy.copy_from(t), Error);
}

// copy_from between tensors of one dtype with any strides copies each element's bits (a
// permuted source, a sliced destination, a step, a 0-d tensor, an expanded source), for every
// element size; NaN payloads and -0 stay as they are, as no conversion touches them.
TEST(Tensor, SameDtypeCopiesOfStridedViewsKeepEveryElementsBits) {
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::i8, DType::i64, DType::boolean}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor base = Tensor::empty({3, 4, 5}, dtype);
    for (int64_t i = 0; i < base.numel(); ++i) {
      std::vector<int64_t> index = {i / 20, (i / 5) % 4, i % 5};
      if (dtype == DType::boolean) base.set_int(index, i % 3 == 0);
      else if (is_floating(dtype)) base.set_double(index, double(i) * 0.5 - 7);
      else base.set_int(index, i - 30);
    }
    const Tensor permuted = base.permute({2, 0, 1});
    Tensor copy = Tensor::empty(permuted.sizes(), dtype);
    copy.copy_from(permuted);
    ASSERT_TRUE(copy.is_contiguous());
    for_each_index(permuted.sizes(), [&](std::span<const int64_t> index) {
      EXPECT_EQ(copy.item_double(index), permuted.item_double(index));
    });
    // Into a strided destination: every other column of a wider tensor.
    Tensor wide = Tensor::zeros({5, 3, 8}, dtype);
    const Tensor columns = wide.slice(2, 0, 8, 2);
    columns.copy_from(permuted);
    for_each_index(permuted.sizes(), [&](std::span<const int64_t> index) {
      EXPECT_EQ(wide.item_double(std::vector<int64_t>{index[0], index[1], 2 * index[2]}), permuted.item_double(index));
      EXPECT_EQ(wide.item_double(std::vector<int64_t>{index[0], index[1], 2 * index[2] + 1}), 0.0);
    });
    Tensor scalar = Tensor::empty({}, dtype);
    scalar.copy_from(base.select(0, 2).select(0, 3).select(0, 4));
    EXPECT_EQ(scalar.item_double(std::vector<int64_t>{}), base.item_double(std::vector<int64_t>{2, 3, 4}));
  }
  // Bits, not values: a NaN with a payload and -0.
  Tensor bits = Tensor::empty({2, 2}, DType::f32);
  const uint32_t payload = 0x7fc12345u, negative_zero = 0x80000000u;
  std::memcpy(bits.data<float>(), &payload, 4);
  std::memcpy(bits.data<float>() + 3, &negative_zero, 4);
  bits.data<float>()[1] = 1.0f;
  bits.data<float>()[2] = 2.0f;
  Tensor transposed = Tensor::empty({2, 2}, DType::f32);
  transposed.copy_from(bits.transpose(0, 1));
  uint32_t first = 0, last = 0;
  std::memcpy(&first, transposed.data<float>(), 4);
  std::memcpy(&last, transposed.data<float>() + 3, 4);
  EXPECT_EQ(first, payload);
  EXPECT_EQ(last, negative_zero);
  EXPECT_EQ(transposed.data<float>()[1], 2.0f);
}

TEST(Tensor, Int16Conversions) {
  // Expected values as PyTorch converts (x.to(torch.int16), ...): float to i16 truncates, then
  // wraps modulo 2^16 like int64 to i16; Kiln's rule beyond int64 (1e30) saturates to int64
  // first, whose low 16 bits are -1 (PyTorch leaves that case to the platform).
  Tensor floats = Tensor::from_doubles({6}, std::vector<double>{40000.7, -40000.2, 2.7, -2.7, NAN, 1e30}, DType::f32);
  Tensor shorts = floats.to(DType::i16);
  EXPECT_EQ(shorts.dtype(), DType::i16);
  EXPECT_EQ(shorts.element_size(), 2u);
  const int64_t from_floats[] = {-25536, 25536, 2, -2, 0, -1};
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(shorts.flat_int(i), from_floats[i]) << i;
  Tensor longs = Tensor::from_doubles({4}, std::vector<double>{40000, -40000, 70000, -32768}, DType::i64);
  const int64_t from_longs[] = {-25536, 25536, 4464, -32768};
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(longs.to(DType::i16).flat_int(i), from_longs[i]) << i;
  Tensor narrow = Tensor::from_doubles({3}, std::vector<double>{300, -129, -1}, DType::i16);
  EXPECT_EQ(narrow.to(DType::i8).flat_int(0), 44);
  EXPECT_EQ(narrow.to(DType::i8).flat_int(1), 127);
  EXPECT_EQ(narrow.to(DType::u8).flat_int(2), 255);
  EXPECT_EQ(narrow.to(DType::f32).flat_double(1), -129.0);
  EXPECT_EQ(narrow.to(DType::boolean).flat_int(2), 1);
  EXPECT_EQ(narrow.to(DType::i64).flat_int(1), -129);
}

TEST(Tensor, UnsignedConversions) {
  // u16 and u32 as numpy's astype converts integers (modulo 2^16, 2^32); floats truncate, then
  // wrap through int64 as for the other integer types. u64 keeps values from 2^63 up (float
  // values past 2^64 saturate to its largest value, negative ones wrap through int64).
  EXPECT_EQ(parse_dtype("uint16"), DType::u16);
  EXPECT_EQ(parse_dtype("u32"), DType::u32);
  EXPECT_EQ(parse_dtype("uint64"), DType::u64);
  for (DType dtype : {DType::u16, DType::u32, DType::u64}) {
    EXPECT_TRUE(is_integral(dtype));
    EXPECT_FALSE(is_signed(dtype));
    EXPECT_FALSE(is_floating(dtype));
  }
  EXPECT_EQ(dtype_size(DType::u16), 2u);
  EXPECT_EQ(dtype_size(DType::u32), 4u);
  EXPECT_EQ(dtype_size(DType::u64), 8u);
  Tensor longs = Tensor::from_doubles({3}, std::vector<double>{-1, 70000, 5000000000}, DType::i64);
  Tensor u16 = longs.to(DType::u16), u32 = longs.to(DType::u32), u64 = longs.to(DType::u64);
  const int64_t as_u16[] = {65535, 4464, 61952}, as_u32[] = {4294967295, 70000, 705032704};
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(u16.flat_int(i), as_u16[i]) << i;
    EXPECT_EQ(u32.flat_int(i), as_u32[i]) << i;
  }
  EXPECT_EQ(u64.flat_double(0), 0x1p64);  // -1 is 2^64 - 1, as a double 2^64
  EXPECT_EQ(u64.to(DType::i64).flat_int(0), -1);
  Tensor floats = Tensor::from_doubles({4}, std::vector<double>{1e19, 1e30, 2.9, NAN}, DType::f64);
  Tensor big = floats.to(DType::u64);
  EXPECT_EQ(big.flat_double(0), 1e19);
  EXPECT_EQ(uint64_t(big.flat_int(1)), ~0ull);
  EXPECT_EQ(big.flat_int(2), 2);
  EXPECT_EQ(big.flat_int(3), 0);
  EXPECT_EQ(Tensor::from_doubles({1}, std::vector<double>{70000.9}, DType::f32).to(DType::u16).flat_int(0), 4464);
}

TEST(Tensor, ForEachIndexOrderAndEmpty) {
  std::vector<Sizes> seen;
  for_each_index({2, 2}, [&](std::span<const int64_t> index) { seen.emplace_back(index.begin(), index.end()); });
  EXPECT_EQ(seen, (std::vector<Sizes>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  int calls = 0;
  for_each_index({}, [&](std::span<const int64_t>) { ++calls; });
  EXPECT_EQ(calls, 1);
  for_each_index({3, 0}, [&](std::span<const int64_t>) { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(Tensor, ToStringShowsValues) {
  EXPECT_EQ(arange_tensor({2, 2}, DType::i64).to_string(), "tensor([[0, 1], [2, 3]], dtype=i64)");
  EXPECT_EQ(Tensor::zeros({2}, DType::boolean).to_string(), "tensor([False, False], dtype=bool)");
}

TEST(Tensor, AsStridedChecksBounds) {
  Tensor t = arange_tensor({6});
  Tensor windows = t.as_strided({3, 2}, {2, 1}, 0);
  EXPECT_EQ(windows.item_double(std::vector<int64_t>{2, 1}), 5.0);
  EXPECT_THROW(t.as_strided({3, 3}, {2, 1}, 0), Error);
  EXPECT_THROW(t.as_strided({2}, {1}, -1), Error);
}

// A fuzzed graph asked for a tensor whose byte count overflowed size_t: the message said "could
// not allocate 17911152081573380100 bytes". The count is now checked before anything is allocated.
TEST(Tensor, AnOverflowingSizeIsOutOfMemoryNotAWrappedByteCount) {
  int64_t huge = int64_t(1) << 32;
  try {
    Tensor::empty({huge, huge}, DType::f32);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(),
                 "out of memory: a f32 tensor of shape [4294967296, 4294967296] would take more than 2^63 elements "
                 "or 2^64 bytes");
  }
  EXPECT_EQ(checked_numel({huge, huge}), std::nullopt);
  EXPECT_EQ(checked_numel({0, huge, huge}), std::nullopt);  // the strides still overflow
  EXPECT_EQ(checked_numel({0, 5}), 0);
  EXPECT_EQ(checked_numel({}), 1);
  EXPECT_EQ(numel_of({2, 69242844270821375, 101, 0}), 0);  // no overflow on the way to the zero
  EXPECT_EQ(checked_nbytes({int64_t(1) << 62}, DType::f32), std::nullopt);  // 2^64 bytes
  EXPECT_EQ(checked_nbytes({int64_t(1) << 61}, DType::f32), size_t(1) << 63);
}

}  // namespace
}  // namespace kiln
