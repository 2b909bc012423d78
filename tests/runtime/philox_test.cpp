// Tests for runtime/philox.h: the published Philox4x32-10 known-answer vectors (Random123's
// kat_vectors), Kiln's counter/key layout, and statistical sanity of the uniform and normal maps.
#include "runtime/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kiln {
namespace {

TEST(Philox, KnownAnswerZeroCounterZeroKey) {
  PhiloxCounter out = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(out[0], 0x6627e8d5u);
  EXPECT_EQ(out[1], 0xe169c58du);
  EXPECT_EQ(out[2], 0xbc57ac4cu);
  EXPECT_EQ(out[3], 0x9b00dbd8u);
}

TEST(Philox, KnownAnswerAllOnes) {
  PhiloxCounter out = philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(out[0], 0x408f276du);
  EXPECT_EQ(out[1], 0x41c83b0eu);
  EXPECT_EQ(out[2], 0xa20bc7c6u);
  EXPECT_EQ(out[3], 0x6d5451fdu);
}

TEST(Philox, KnownAnswerPiDigits) {
  PhiloxCounter out = philox4x32({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(out[0], 0xd16cfe09u);
  EXPECT_EQ(out[1], 0x94fdccebu);
  EXPECT_EQ(out[2], 0x5001e420u);
  EXPECT_EQ(out[3], 0x24126ea1u);
}

TEST(Philox, IsConstexpr) {
  static_assert(philox4x32({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);
  SUCCEED();
}

TEST(Philox, CounterAndKeyLayout) {
  // index -> counter words 0/1, offset -> words 2/3, seed -> key.
  uint64_t seed = 0x299f31d0a4093822ull, offset = 0x0370734413198a2eull, index = 0x85a308d3243f6a88ull;
  PhiloxCounter out = philox_words(seed, offset, index);
  EXPECT_EQ(out[0], 0xd16cfe09u);
  EXPECT_EQ(out[3], 0x24126ea1u);
  EXPECT_EQ(philox_words(0, 0, 0), philox4x32({0, 0, 0, 0}, {0, 0}));
}

TEST(Philox, UniformMapping) {
  // word 0 of counter 0 key 0 is 0x6627e8d5: (0x6627e8d5 >> 8) / 2^24.
  EXPECT_FLOAT_EQ(philox_uniform(0, 0, 0), float(0x6627e8u) / 16777216.0f);
  EXPECT_EQ(philox_word_to_uniform(0u), 0.0f);
  EXPECT_LT(philox_word_to_uniform(0xffffffffu), 1.0f);
  EXPECT_EQ(philox_word_to_uniform(0xffffffffu), float(16777215.0 / 16777216.0));
}

TEST(Philox, NormalMappingFromWords) {
  PhiloxCounter words = philox_words(7, 3, 11);
  double u1 = (double(words[0] >> 8) + 1.0) / 16777216.0;
  double u2 = double(words[1] >> 8) / 16777216.0;
  double expected = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  EXPECT_NEAR(philox_normal(7, 3, 11), expected, 1e-6);
}

TEST(Philox, UniformIsRoughlyUniform) {
  constexpr int kSamples = 200000, kBins = 20;
  std::vector<int> bins(kBins, 0);
  double sum = 0;
  for (uint64_t i = 0; i < kSamples; ++i) {
    float u = philox_uniform(1234, 0, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    ++bins[int(u * kBins)];
  }
  EXPECT_NEAR(sum / kSamples, 0.5, 0.005);
  // Chi-square with 19 degrees of freedom: the 99.99th percentile is about 49.
  double expected = double(kSamples) / kBins, chi2 = 0;
  for (int count : bins) chi2 += (count - expected) * (count - expected) / expected;
  EXPECT_LT(chi2, 49.0);
}

TEST(Philox, DifferentSeedsAndOffsetsGiveDifferentStreams) {
  int equal_seed = 0, equal_offset = 0;
  for (uint64_t i = 0; i < 1000; ++i) {
    equal_seed += philox_uniform(1, 0, i) == philox_uniform(2, 0, i);
    equal_offset += philox_uniform(1, 0, i) == philox_uniform(1, 1, i);
  }
  EXPECT_LT(equal_seed, 5);
  EXPECT_LT(equal_offset, 5);
}

TEST(Philox, NormalHasUnitMomentsAndIsFinite) {
  constexpr int kSamples = 200000;
  double sum = 0, sum_squares = 0;
  int within_one = 0;
  for (uint64_t i = 0; i < kSamples; ++i) {
    float z = philox_normal(42, 5, i);
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum_squares += double(z) * z;
    within_one += std::fabs(z) < 1.0f;
  }
  double mean = sum / kSamples;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(sum_squares / kSamples - mean * mean, 1.0, 0.02);
  EXPECT_NEAR(double(within_one) / kSamples, 0.6827, 0.005);  // P(|Z| < 1)
}

}  // namespace
}  // namespace kiln
