// PyTorch's element types as a .pt2 archive names them, mapped to Kiln's DType: the export
// schema's ScalarType codes (torch/_export/serde/schema.py) and torch.save's storage classes
// ("FloatStorage"). Types Kiln has no dtype for (uint16/32/64, complex, float8) are reported
// by name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kiln/dtype.h"

namespace kiln::frontends {

std::optional<DType> dtype_from_scalar_type(int64_t code);
std::string scalar_type_name(int64_t code);  // "torch.complex64", "ScalarType 99"
// "FloatStorage" -> f32; nullopt for storage classes Kiln has no dtype for.
std::optional<DType> dtype_from_storage_class(const std::string& name);
// The schema's ScalarType code of a Kiln dtype.
int64_t scalar_type_of(DType dtype);

}  // namespace kiln::frontends
