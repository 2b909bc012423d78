// IEEE half (f16) and bfloat16 conversions to and from float, round-to-nearest-even,
// with NaN and infinity preserved. Storage of both is a uint16_t bit pattern.
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln {

inline float bits_to_float(uint32_t bits) { float f; std::memcpy(&f, &bits, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t bits; std::memcpy(&bits, &f, 4); return bits; }

inline float bf16_to_float(uint16_t value) { return bits_to_float(uint32_t(value) << 16); }

inline uint16_t float_to_bf16(float value) {
  uint32_t bits = float_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}

inline float f16_to_float(uint16_t value) {
  uint32_t sign = uint32_t(value & 0x8000u) << 16;
  uint32_t exponent = (value >> 10) & 0x1fu;
  uint32_t mantissa = value & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);
    // subnormal: value = mantissa * 2^-24
    float magnitude = float(mantissa) * (1.0f / 16777216.0f);
    return sign ? -magnitude : magnitude;
  }
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t float_to_f16(float value) {
  uint32_t bits = float_to_bits(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return uint16_t(sign | 0x7e00u);  // NaN
  if (magnitude >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to infinity
  if (magnitude < 0x38800000u) {                                   // subnormal or zero in f16
    // Scale so the f16 subnormal unit (2^-24) is 1 and round to nearest even via float addition.
    float scaled = bits_to_float(magnitude) + 0.5f;  // 0.5 = 2^-1: shifts mantissa bits into place
    return uint16_t(sign | (float_to_bits(scaled) - float_to_bits(0.5f)));
  }
  uint32_t rounding = 0xfffu + ((magnitude >> 13) & 1u);
  magnitude += rounding - (112u << 23);
  return uint16_t(sign | (magnitude >> 13));
}

}  // namespace kiln
