// Philox4x32-10, the counter-based random number generator of Salmon et al., "Parallel
// Random Numbers: As Easy as 1, 2, 3" (SC 2011), and Kiln's contract for turning it into
// tensors. Header-only: the interpreter, the runtime and generated code all use exactly
// these functions, so every backend draws the same numbers.
//
// The contract: element i (row-major linear index) of rand(size, seed, offset) uses
//   counter = {lo32(i), hi32(i), lo32(offset), hi32(offset)},  key = {lo32(seed), hi32(seed)}
// and maps output word 0 to [0, 1) as (w0 >> 8) * 2^-24 (exact in float). randn uses words
// 0 and 1 with Box-Muller: u1 = ((w0 >> 8) + 1) * 2^-24 in (0, 1], u2 = (w1 >> 8) * 2^-24,
// z = sqrt(-2 ln u1) * cos(2 pi u2).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace kiln {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

inline constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxKeyBump0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kPhiloxKeyBump1 = 0xBB67AE85u;  // sqrt(3) - 1

// One Philox round: two 32x32 -> 64-bit multiplies, then a Feistel-like mix with the key.
constexpr PhiloxCounter philox4x32_round(const PhiloxCounter& counter, const PhiloxKey& key) {
  uint64_t product0 = uint64_t(kPhiloxMultiplier0) * counter[0];
  uint64_t product1 = uint64_t(kPhiloxMultiplier1) * counter[2];
  uint32_t hi0 = uint32_t(product0 >> 32), lo0 = uint32_t(product0);
  uint32_t hi1 = uint32_t(product1 >> 32), lo1 = uint32_t(product1);
  return {hi1 ^ counter[1] ^ key[0], lo1, hi0 ^ counter[3] ^ key[1], lo0};
}

// Philox4x32 with 10 rounds; the key is bumped between rounds (9 bumps).
constexpr PhiloxCounter philox4x32(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxKeyBump0;
      key[1] += kPhiloxKeyBump1;
    }
    counter = philox4x32_round(counter, key);
  }
  return counter;
}

// The four output words for element `index` of a draw with `seed` and `offset`.
constexpr PhiloxCounter philox_words(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox4x32({uint32_t(index), uint32_t(index >> 32), uint32_t(offset), uint32_t(offset >> 32)},
                    {uint32_t(seed), uint32_t(seed >> 32)});
}

// 24 random bits mapped to [0, 1): k * 2^-24 for k in [0, 2^24).
constexpr float philox_word_to_uniform(uint32_t word) { return float(word >> 8) * (1.0f / 16777216.0f); }

// Element `index` of rand(size, seed, offset): uniform in [0, 1).
constexpr float philox_uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  return philox_word_to_uniform(philox_words(seed, offset, index)[0]);
}

// Element `index` of randn(size, seed, offset): standard normal by Box-Muller, evaluated in
// double and rounded to float once (generated code may differ from this by an ulp or two).
inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t index) {
  PhiloxCounter words = philox_words(seed, offset, index);
  double u1 = double((words[0] >> 8) + 1u) * (1.0 / 16777216.0);  // (0, 1]: log is finite
  double u2 = double(words[1] >> 8) * (1.0 / 16777216.0);         // [0, 1)
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2));
}

}  // namespace kiln
