// The texts a package's sources are made from (codegen/package/package_sources.h), embedded at
// build time by codegen/CMakeLists.txt: the header template (kiln_package_header.h), the API's
// implementation template (kiln_package_wrapper.inc), the C types every package header
// shares (runtime/package_abi.h, which kiln::Package loads packages with), and the math of the
// fallback ops a package computes (ir/kernels/portable_kernels.h with runtime/half.h, see
// package_fallbacks.h); for
// CUDA packages, the texts of runtime/cuda/ that their host code pastes
// (codegen/package/cuda_package_sources.h).
#pragma once

#include <string_view>

namespace kiln::codegen {

std::string_view package_header_text();
std::string_view package_wrapper_text();
std::string_view package_abi_text();
std::string_view portable_kernels_text();
std::string_view half_conversions_text();  // runtime/half.h, which the portable kernels use
std::string_view package_cuda_text();      // runtime/cuda/package_cuda.inc
std::string_view gemm_layout_text();       // runtime/cuda/gemm_layout.inc
std::string_view cublas_calls_text();      // runtime/cuda/cublas_calls.inc
std::string_view cuda_driver_api_text();   // runtime/cuda/driver_api.h
std::string_view cublas_api_text();        // runtime/cuda/cublas_api.h

}  // namespace kiln::codegen
