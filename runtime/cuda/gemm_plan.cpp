// The row-major to column-major GEMM plan. See runtime/cuda/gemm_plan.h.
#include "runtime/cuda/gemm_plan.h"

#include "kiln/error.h"

namespace kiln::cuda {

ColumnMajorGemm plan_column_major(const RowMajorGemm& gemm) {
  std::string error;
  ColumnMajorGemm plan = column_major_gemm(gemm, error);
  if (!error.empty()) fail(error);
  return plan;
}

std::optional<GemmCalls> plan_strided_gemm(const StridedGemm& views) {
  const size_t rank = views.out_shape.size();
  KILN_CHECK(rank >= 2 && views.a_strides.size() == rank && views.b_strides.size() == rank && views.out_strides.size() == rank,
             "a strided GEMM needs three views of one rank >= 2");
  return strided_gemm_calls(views);
}

}  // namespace kiln::cuda
