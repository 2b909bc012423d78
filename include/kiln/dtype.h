// Element types of tensors: the names users see (f32, i64, ...), sizes, categories, and
// the PyTorch-compatible names ("float32", torch.float32) used when reading other formats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

// The order is the packages' dtype codes (runtime/package_abi.h): new dtypes are appended.
enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i8, u8, boolean, i16, u16, u32, u64 };

// Every dtype, in enum order (the index of each is its code).
inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16,    DType::f64, DType::i64,
                                       DType::i32, DType::i8,  DType::u8,      DType::boolean, DType::i16,
                                       DType::u16, DType::u32, DType::u64};

// Short name as printed in the IR: "f32", "bf16", "i64", "i16", "u32", "bool".
std::string_view dtype_name(DType dtype);
// Parses a short name ("f32") or a PyTorch name ("float32", "float", "int64", "long", "int16",
// "short", "uint16", "uint32", "uint64", "bool").
std::optional<DType> parse_dtype(std::string_view name);
size_t dtype_size(DType dtype);
bool is_floating(DType dtype);  // f32 f16 bf16 f64
bool is_integral(DType dtype);  // i64 i32 i16 i8 u8 u16 u32 u64 (not bool)
bool is_signed(DType dtype);    // the floating and signed integer dtypes

// C++ type for a dtype; f16/bf16 are stored as uint16_t bit patterns (see runtime/half.h).
template <DType D> struct dtype_cpp;
template <> struct dtype_cpp<DType::f32> { using type = float; };
template <> struct dtype_cpp<DType::f64> { using type = double; };
template <> struct dtype_cpp<DType::f16> { using type = uint16_t; };
template <> struct dtype_cpp<DType::bf16> { using type = uint16_t; };
template <> struct dtype_cpp<DType::i64> { using type = int64_t; };
template <> struct dtype_cpp<DType::i32> { using type = int32_t; };
template <> struct dtype_cpp<DType::i16> { using type = int16_t; };
template <> struct dtype_cpp<DType::i8> { using type = int8_t; };
template <> struct dtype_cpp<DType::u8> { using type = uint8_t; };
template <> struct dtype_cpp<DType::u16> { using type = uint16_t; };
template <> struct dtype_cpp<DType::u32> { using type = uint32_t; };
template <> struct dtype_cpp<DType::u64> { using type = uint64_t; };
template <> struct dtype_cpp<DType::boolean> { using type = bool; };

}  // namespace kiln
