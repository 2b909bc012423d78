// The texts a package's sources are made from (codegen/package/package_sources.h), embedded at
// build time by codegen/CMakeLists.txt: the header template (kiln_package_header.h), the API's
// implementation template (kiln_package_wrapper.inc), the C types every package header
// shares (runtime/package_abi.h, which kiln::Package loads packages with), and the math of the
// fallback ops a package computes (ir/kernels/portable_kernels.h, see package_fallbacks.h).
#pragma once

#include <string_view>

namespace kiln::codegen {

std::string_view package_header_text();
std::string_view package_wrapper_text();
std::string_view package_abi_text();
std::string_view portable_kernels_text();

}  // namespace kiln::codegen
