// The gradient buckets of data-parallel training (compiler/distributed/gradient_buckets.h), on
// ParameterArenas made here: filled in the order given up to the byte cap, one dtype each, a
// parameter larger than the cap alone, and the arena range a bucket fills (padding included), or
// none when its parameters are not adjacent in the arena. Sizes are worked out in the comments
// from the arena's layout: each parameter starts on a 64-byte line (16 f32, 32 f16 elements).
#include "compiler/distributed/gradient_buckets.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kiln::compiler {
namespace {

training::ParameterArena make_arena(const std::vector<std::pair<std::string, Tensor>>& parameters) {
  std::vector<training::NamedTensor> named;
  for (const auto& [name, value] : parameters) named.push_back({name, value});
  return training::ParameterArena(named);
}

// a: 10 f32 (40 bytes, 16 elements with padding), b: 20 f32 (80 bytes, 32), c: 16 f32 (64 bytes, 16).
training::ParameterArena three_f32() {
  return make_arena({{"a", Tensor::zeros({10}, DType::f32)},
                     {"b", Tensor::zeros({4, 5}, DType::f32)},
                     {"c", Tensor::zeros({16}, DType::f32)}});
}

TEST(GradientBuckets, ALargeCapMakesOneBucketOverTheWholeArena) {
  training::ParameterArena arena = three_f32();
  const std::vector<GradientBucket> buckets = plan_gradient_buckets(arena, {"c", "b", "a"}, int64_t(25) << 20);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].parameters, (std::vector<std::string>{"c", "b", "a"}));
  EXPECT_EQ(buckets[0].bytes, 40 + 80 + 64);
  ASSERT_TRUE(buckets[0].arena_range);
  EXPECT_EQ(*buckets[0].arena_range, (std::pair<int64_t, int64_t>{0, 16 + 32 + 16}));
  EXPECT_EQ(buckets[0].arena_range->second, arena.groups()[0].gradients.numel());
}

TEST(GradientBuckets, TheCapClosesABucketBeforeItIsExceeded) {
  training::ParameterArena arena = three_f32();
  // c (64) + b (80) = 144 <= 150; + a (40) would be 184: a starts the next bucket.
  const std::vector<GradientBucket> buckets = plan_gradient_buckets(arena, {"c", "b", "a"}, 150);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].parameters, (std::vector<std::string>{"c", "b"}));
  EXPECT_EQ(*buckets[0].arena_range, (std::pair<int64_t, int64_t>{16, 32 + 16}));  // b at 16, c at 48
  EXPECT_EQ(buckets[1].parameters, (std::vector<std::string>{"a"}));
  EXPECT_EQ(*buckets[1].arena_range, (std::pair<int64_t, int64_t>{0, 16}));
}

TEST(GradientBuckets, AParameterLargerThanTheCapIsABucketAlone) {
  training::ParameterArena arena = three_f32();
  const std::vector<GradientBucket> buckets = plan_gradient_buckets(arena, {"a", "b", "c"}, 50);
  ASSERT_EQ(buckets.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(buckets[i].parameters.size(), 1u);
  EXPECT_EQ(buckets[1].parameters[0], "b");
  EXPECT_EQ(buckets[1].bytes, 80);
}

TEST(GradientBuckets, ParametersNotAdjacentInTheArenaHaveNoRange) {
  training::ParameterArena arena = three_f32();
  // a (40) + c (64) fit 110, but b lies between them in the arena.
  const std::vector<GradientBucket> buckets = plan_gradient_buckets(arena, {"c", "a", "b"}, 110);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].parameters, (std::vector<std::string>{"c", "a"}));
  EXPECT_FALSE(buckets[0].arena_range);
  EXPECT_TRUE(buckets[1].arena_range);
}

TEST(GradientBuckets, EachDtypeHasItsOwnBuckets) {
  training::ParameterArena arena = make_arena({{"w", Tensor::zeros({8}, DType::f32)},
                                               {"h", Tensor::zeros({8}, DType::f16)},
                                               {"v", Tensor::zeros({8}, DType::f32)}});
  const std::vector<GradientBucket> buckets = plan_gradient_buckets(arena, {"v", "h", "w"}, 1 << 20);
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].parameters, (std::vector<std::string>{"v", "w"}));
  EXPECT_EQ(buckets[0].group, arena.group_of("v"));
  EXPECT_EQ(*buckets[0].arena_range, (std::pair<int64_t, int64_t>{0, 32}));  // w at 0, v at 16
  EXPECT_EQ(buckets[1].parameters, (std::vector<std::string>{"h"}));
  EXPECT_EQ(buckets[1].bytes, 16);
  EXPECT_EQ(*buckets[1].arena_range, (std::pair<int64_t, int64_t>{0, 32}));
}

}  // namespace
}  // namespace kiln::compiler
