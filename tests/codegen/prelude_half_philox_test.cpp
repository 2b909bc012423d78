// The prelude's f16/bf16 conversions and Philox generator (codegen/cpp/kiln_prelude.h) against
// the runtime's own (runtime/half.h, runtime/philox.h), bit for bit: every 16-bit pattern to
// float; floats to 16 bits over a stride through all float bit patterns plus every rounding
// tie and its neighbours; Philox words, uniform and normal draws over edge and random
// (seed, offset, index) triples.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codegen/cpp/kiln_prelude.h"
#include "runtime/half.h"
#include "runtime/philox.h"

namespace kiln {
namespace {

uint32_t bits_of(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

TEST(PreludeHalf, EverySixteenBitPatternToFloat) {
  for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
    uint16_t value = uint16_t(pattern);
    ASSERT_EQ(bits_of(kiln_f16_to_f32(value)), bits_of(f16_to_float(value))) << "f16 " << std::hex << pattern;
    ASSERT_EQ(bits_of(kiln_bf16_to_f32(value)), bits_of(bf16_to_float(value))) << "bf16 " << std::hex << pattern;
  }
}

// Floats that exercise every rounding decision: for each 16-bit value, the float halfway to
// the next one (a tie) and the floats one bit either side of it, and the value itself.
std::vector<uint32_t> rounding_boundaries() {
  std::vector<uint32_t> inputs;
  for (uint32_t pattern = 0; pattern < 65536; ++pattern) {
    // bf16: the dropped half is the low 16 bits.
    uint32_t bf16 = pattern << 16;
    for (uint32_t low : {0x0u, 0x1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) inputs.push_back(bf16 | low);
    // f16: the float midway between this f16 value and the next larger magnitude.
    float value = f16_to_float(uint16_t(pattern)), next = f16_to_float(uint16_t(pattern + 1));
    if ((pattern & 0x7fffu) >= 0x7c00u) continue;  // infinities, NaN
    float tie = (pattern & 0x7fffu) == 0x7bffu ? 65520.0f : (value + next) / 2.0f;  // 65520 rounds to inf
    if (pattern & 0x8000u) tie = -std::fabs(tie);
    for (int32_t step : {-1, 0, 1}) inputs.push_back(bits_of(tie) + uint32_t(step));
    inputs.push_back(bits_of(value));
  }
  return inputs;
}

TEST(PreludeHalf, FloatToSixteenBitsMatchesTheRuntime) {
  std::vector<uint32_t> inputs = rounding_boundaries();
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 97) inputs.push_back(uint32_t(bits));
  int mismatches = 0;
  for (uint32_t bits : inputs) {
    float value;
    std::memcpy(&value, &bits, 4);
    if (kiln_f32_to_f16(value) != float_to_f16(value) && ++mismatches <= 10)
      ADD_FAILURE() << "f16 of float bits " << std::hex << bits << ": " << kiln_f32_to_f16(value) << " vs "
                    << float_to_f16(value);
    if (kiln_f32_to_bf16(value) != float_to_bf16(value) && ++mismatches <= 10)
      ADD_FAILURE() << "bf16 of float bits " << std::hex << bits << ": " << kiln_f32_to_bf16(value) << " vs "
                    << float_to_bf16(value);
  }
  EXPECT_EQ(mismatches, 0) << "over " << inputs.size() << " floats";
}

std::vector<std::array<uint64_t, 3>> philox_triples() {
  const uint64_t max = ~uint64_t(0);
  std::vector<std::array<uint64_t, 3>> triples = {
      {0, 0, 0}, {max, max, max}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0x123456789abcdef0ull, 42, 1ull << 32},
      {max, 0, (1ull << 32) - 1}};
  std::mt19937_64 random(3);
  for (int i = 0; i < 200000; ++i) triples.push_back({random(), random() >> (random() % 64), random() >> (random() % 64)});
  return triples;
}

TEST(PreludePhilox, WordsUniformAndNormalMatchTheRuntime) {
  for (const auto& [seed, offset, index] : philox_triples()) {
    PhiloxCounter expected = philox_words(seed, offset, index);
    KilnPhiloxWords actual = kiln_philox_words(seed, offset, index);
    for (int w = 0; w < 4; ++w) ASSERT_EQ(actual.word[w], expected[size_t(w)]) << seed << " " << offset << " " << index;
    ASSERT_EQ(bits_of(kiln_philox_uniform(seed, offset, index)), bits_of(philox_uniform(seed, offset, index)));
    ASSERT_EQ(bits_of(kiln_philox_normal(seed, offset, index)), bits_of(philox_normal(seed, offset, index)));
  }
}

// Salmon et al.'s published known-answer vectors for Philox4x32-10, independent of both.
TEST(PreludePhilox, KnownAnswerVectors) {
  KilnPhiloxWords zero = kiln_philox_words(0, 0, 0);
  EXPECT_EQ(zero.word[0], 0x6627e8d5u);
  EXPECT_EQ(zero.word[1], 0xe169c58du);
  EXPECT_EQ(zero.word[2], 0xbc57ac4cu);
  EXPECT_EQ(zero.word[3], 0x9b00dbd8u);
  // counter = {ffffffff x4}, key = {ffffffff x2}
  KilnPhiloxWords ones = kiln_philox_words(~uint64_t(0), ~uint64_t(0), ~uint64_t(0));
  EXPECT_EQ(ones.word[0], 0x408f276du);
  EXPECT_EQ(ones.word[1], 0x41c83b0eu);
  EXPECT_EQ(ones.word[2], 0xa20bc7c6u);
  EXPECT_EQ(ones.word[3], 0x6d5451fdu);
}

}  // namespace
}  // namespace kiln
