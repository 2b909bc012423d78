// The declaration half of the op registry: every op's schema, flags and one-line summary,
// as one table (op_schemas.cpp). Shape rules attach by name (ir/ops/*.cpp).
#pragma once

#include <span>
#include <string_view>

namespace kiln::ir {

struct OpDeclaration {
  std::string_view schema;
  std::string_view flags;    // space-separated: composite view pointwise reduction random ...
  std::string_view summary;
};

std::span<const OpDeclaration> op_declarations();

}  // namespace kiln::ir
