// ParameterArena: layout and views, zero_grad, gradient accumulation over micro-batches, and the
// parameters and gradients it refuses.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "compiler/training/parameter_arena.h"
#include "kiln/error.h"
#include "tests/optimizers/optimizer_test_support.h"

namespace kiln::training {
namespace {

using ::testing::HasSubstr;

Tensor iota(const Sizes& sizes, DType dtype, double start = 1.0) {
  std::vector<double> values(size_t(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i) values[i] = start + double(i);
  return Tensor::from_doubles(sizes, values, dtype);
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(ParameterArena, ParametersAreViewsIntoOneArenaPerDtype) {
  ParameterArena arena({{"w", iota({2, 3}, DType::f32)}, {"d", iota({4}, DType::f64)}, {"b", iota({5}, DType::f32, 10)}});
  ASSERT_EQ(arena.groups().size(), 2u);
  EXPECT_EQ(arena.groups()[0].dtype, DType::f32);
  EXPECT_EQ(arena.groups()[1].dtype, DType::f64);
  EXPECT_EQ(arena.groups()[0].members, (std::vector<size_t>{0, 2}));
  const Tensor w = arena.parameter("w"), b = arena.parameter("b"), d = arena.parameter("d");
  EXPECT_EQ(w.sizes(), (Sizes{2, 3}));
  EXPECT_TRUE(w.is_contiguous());
  EXPECT_TRUE(w.shares_storage_with(arena.groups()[0].parameters));
  EXPECT_TRUE(b.shares_storage_with(arena.groups()[0].parameters));
  EXPECT_TRUE(d.shares_storage_with(arena.groups()[1].parameters));
  EXPECT_TRUE(testing::all_close(w, iota({2, 3}, DType::f32), 0, "w"));
  EXPECT_TRUE(testing::all_close(b, iota({5}, DType::f32, 10), 0, "b"));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data_ptr()) % 64, 0u) << "each parameter starts on a cache line";
  // Writing through a view writes the arena the optimizer updates.
  b.set_double(std::vector<int64_t>{0}, -1.0);
  EXPECT_EQ(arena.groups()[0].parameters.flat_double(16), -1.0);
}

TEST(ParameterArena, AccumulatesScaledMicroBatchGradientsAndZeroGradClearsThem) {
  ParameterArena arena({{"w", iota({3, 3}, DType::f32)}, {"d", iota({7}, DType::f64)}});
  const Tensor w1 = iota({3, 3}, DType::f32, 0.25), w2 = iota({3, 3}, DType::f32, -3.5);
  const Tensor d1 = iota({7}, DType::f64, 0.1), d2 = iota({7}, DType::f64, 2.7);
  arena.accumulate_gradients({{"w", w1}, {"d", d1}}, 0.5);
  arena.accumulate_gradients({{"w", w2.transpose(0, 1).contiguous().transpose(0, 1)}, {"d", d2}}, 0.5);  // any strides
  for (int64_t i = 0; i < 9; ++i)
    EXPECT_FLOAT_EQ(arena.gradient("w").flat_double(i), 0.5 * w1.flat_double(i) + 0.5 * w2.flat_double(i));
  for (int64_t i = 0; i < 7; ++i)
    EXPECT_DOUBLE_EQ(arena.gradient("d").flat_double(i), 0.5 * d1.flat_double(i) + 0.5 * d2.flat_double(i));
  arena.zero_grad();
  for (const ParameterArena::Group& group : arena.groups())
    for (int64_t i = 0; i < group.gradients.numel(); ++i) ASSERT_EQ(group.gradients.flat_double(i), 0.0);
  // Only the named parameters accumulate.
  arena.accumulate_gradients({{"d", d1}});
  EXPECT_EQ(arena.gradient("w").flat_double(0), 0.0);
  EXPECT_DOUBLE_EQ(arena.gradient("d").flat_double(3), d1.flat_double(3));
}

TEST(ParameterArena, HalfPrecisionGradientsAccumulateInFloat) {
  ParameterArena arena({{"h", iota({5}, DType::bf16)}});
  arena.accumulate_gradients({{"h", iota({5}, DType::bf16)}}, 2.0);
  arena.accumulate_gradients({{"h", iota({5}, DType::bf16)}}, 1.0);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(arena.gradient("h").flat_double(i), 3.0 * double(i + 1));
}

TEST(ParameterArena, RefusesAGradientOfAnotherShapeOrDtypeAndAddsNothing) {
  ParameterArena arena({{"w", iota({2, 3}, DType::f32)}, {"b", iota({3}, DType::f32)}});
  EXPECT_THAT(error_of([&] { arena.accumulate_gradients({{"b", iota({3}, DType::f32)}, {"w", iota({3, 2}, DType::f32)}}); }),
              HasSubstr("the gradient of parameter 'w' is f32[3, 2], the parameter is f32[2, 3]"));
  EXPECT_EQ(arena.gradient("b").flat_double(0), 0.0) << "checked before anything is added";
  EXPECT_THAT(error_of([&] { arena.accumulate_gradients({{"w", iota({2, 3}, DType::f64)}}); }),
              HasSubstr("the gradient of parameter 'w' is f64[2, 3], the parameter is f32[2, 3]"));
  EXPECT_THAT(error_of([&] { arena.accumulate_gradients({{"v", iota({3}, DType::f32)}}); }),
              HasSubstr("the optimizer has no parameter 'v'"));
  EXPECT_THAT(error_of([&] { arena.accumulate_gradients({{"b", Tensor()}}); }),
              HasSubstr("the gradient of parameter 'b' is undefined"));
  EXPECT_THAT(error_of([&] { arena.parameter("nope"); }), HasSubstr("the optimizer has no parameter 'nope'"));
}

TEST(ParameterArena, RefusesParametersItCannotTrain) {
  EXPECT_THAT(error_of([] { ParameterArena({}); }), HasSubstr("optimizer got an empty parameter list"));
  EXPECT_THAT(error_of([] { ParameterArena({{"steps", iota({2}, DType::i64)}}); }),
              HasSubstr("parameter 'steps' is i64: only floating parameters (f32, f64, f16, bf16) can be trained"));
  EXPECT_THAT(error_of([] { ParameterArena({{"w", iota({2}, DType::f32)}, {"w", iota({2}, DType::f32)}}); }),
              HasSubstr("parameter 'w' is given twice"));
  EXPECT_THAT(error_of([] { ParameterArena({{"w", Tensor()}}); }), HasSubstr("parameter 'w' is an undefined tensor"));
}

}  // namespace
}  // namespace kiln::training
