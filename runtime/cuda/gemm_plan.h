// GemmPlan: a row-major (batched) matrix product as the column-major call cuBLAS takes, by the
// usual transpose trick. The arithmetic is runtime/cuda/gemm_layout.inc (RowMajorGemm,
// ColumnMajorGemm, GemmEpilogue, blas_layout, StridedGemm, GemmCalls), text that CUDA packages
// share; this header puts it in kiln::cuda and reports its errors as kiln::Error. Pure
// arithmetic, tested without a GPU.
#pragma once

#include <array>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cuda {

#include "runtime/cuda/gemm_layout.inc"

// column_major_gemm; throws kiln::Error for a negative size, a leading dim below the row
// length, or a size past cuBLAS's 32-bit int.
ColumnMajorGemm plan_column_major(const RowMajorGemm& gemm);

// strided_gemm_calls; the three views must have one rank >= 2 (an internal error otherwise).
std::optional<GemmCalls> plan_strided_gemm(const StridedGemm& views);

}  // namespace kiln::cuda
