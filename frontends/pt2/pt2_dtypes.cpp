// The dtype tables of the export schema and of torch.save.
#include "frontends/pt2/pt2_dtypes.h"

#include <map>

namespace kiln::frontends {

namespace {

struct ScalarTypeRow {
  int64_t code;
  const char* name;
  std::optional<DType> dtype;
};

constexpr ScalarTypeRow kScalarTypes[] = {
    {1, "torch.uint8", DType::u8},          {2, "torch.int8", DType::i8},
    {3, "torch.int16", DType::i16},         {4, "torch.int32", DType::i32},
    {5, "torch.int64", DType::i64},         {6, "torch.float16", DType::f16},
    {7, "torch.float32", DType::f32},       {8, "torch.float64", DType::f64},
    {9, "torch.complex32", std::nullopt},   {10, "torch.complex64", std::nullopt},
    {11, "torch.complex128", std::nullopt}, {12, "torch.bool", DType::boolean},
    {13, "torch.bfloat16", DType::bf16},    {28, "torch.uint16", DType::u16},
    {29, "torch.float8_e4m3fn", std::nullopt}, {30, "torch.float8_e5m2", std::nullopt},
    {31, "torch.float8_e4m3fnuz", std::nullopt}, {32, "torch.float8_e5m2fnuz", std::nullopt},
    {33, "torch.float8_e8m0fnu", std::nullopt}, {34, "torch.uint32", DType::u32},
    {35, "torch.uint64", DType::u64},
};

}  // namespace

std::optional<DType> dtype_from_scalar_type(int64_t code) {
  for (const ScalarTypeRow& row : kScalarTypes)
    if (row.code == code) return row.dtype;
  return std::nullopt;
}

std::string scalar_type_name(int64_t code) {
  for (const ScalarTypeRow& row : kScalarTypes)
    if (row.code == code) return row.name;
  return "ScalarType " + std::to_string(code);
}

int64_t scalar_type_of(DType dtype) {
  for (const ScalarTypeRow& row : kScalarTypes)
    if (row.dtype == dtype) return row.code;
  return 0;
}

std::optional<DType> dtype_from_storage_class(const std::string& name) {
  static const std::map<std::string, DType> classes = {
      {"FloatStorage", DType::f32}, {"DoubleStorage", DType::f64}, {"HalfStorage", DType::f16},
      {"BFloat16Storage", DType::bf16}, {"LongStorage", DType::i64}, {"IntStorage", DType::i32},
      {"ShortStorage", DType::i16}, {"CharStorage", DType::i8}, {"ByteStorage", DType::u8},
      {"BoolStorage", DType::boolean},
  };
  auto found = classes.find(name);
  if (found == classes.end()) return std::nullopt;
  return found->second;
}

}  // namespace kiln::frontends
