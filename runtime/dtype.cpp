// Names, sizes and categories of element types.
#include "kiln/dtype.h"

#include "kiln/error.h"

namespace kiln {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::i16: return "i16";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::u16: return "u16";
    case DType::u32: return "u32";
    case DType::u64: return "u64";
    case DType::boolean: return "bool";
  }
  KILN_CHECK(false, "bad dtype ", int(dtype));
}

std::optional<DType> parse_dtype(std::string_view name) {
  struct Alias { std::string_view name; DType dtype; };
  static constexpr Alias aliases[] = {
      {"f32", DType::f32},     {"float32", DType::f32}, {"float", DType::f32},
      {"f16", DType::f16},     {"float16", DType::f16}, {"half", DType::f16},
      {"bf16", DType::bf16},   {"bfloat16", DType::bf16},
      {"f64", DType::f64},     {"float64", DType::f64}, {"double", DType::f64},
      {"i64", DType::i64},     {"int64", DType::i64},   {"long", DType::i64},
      {"i32", DType::i32},     {"int32", DType::i32},   {"int", DType::i32},
      {"i16", DType::i16},     {"int16", DType::i16},   {"short", DType::i16},
      {"i8", DType::i8},       {"int8", DType::i8},
      {"u8", DType::u8},       {"uint8", DType::u8},
      {"u16", DType::u16},     {"uint16", DType::u16},
      {"u32", DType::u32},     {"uint32", DType::u32},
      {"u64", DType::u64},     {"uint64", DType::u64},
      {"bool", DType::boolean},
  };
  for (const Alias& alias : aliases)
    if (alias.name == name) return alias.dtype;
  return std::nullopt;
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f64:
    case DType::i64:
    case DType::u64: return 8;
    case DType::f32:
    case DType::i32:
    case DType::u32: return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
    case DType::u16: return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean: return 1;
  }
  KILN_CHECK(false, "bad dtype ", int(dtype));
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f64;
}

bool is_integral(DType dtype) {
  return dtype == DType::i64 || dtype == DType::i32 || dtype == DType::i16 || dtype == DType::i8 ||
         dtype == DType::u8 || dtype == DType::u16 || dtype == DType::u32 || dtype == DType::u64;
}

bool is_signed(DType dtype) {
  return dtype != DType::u8 && dtype != DType::u16 && dtype != DType::u32 && dtype != DType::u64 &&
         dtype != DType::boolean;
}

}  // namespace kiln
