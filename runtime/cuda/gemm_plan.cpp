// The row-major to column-major GEMM plan. See runtime/cuda/gemm_plan.h.
#include "runtime/cuda/gemm_plan.h"

#include <algorithm>
#include <climits>

#include "runtime/error.h"

namespace kiln::cuda {

ColumnMajorGemm plan_column_major(const RowMajorGemm& gemm) {
  if (gemm.m < 0 || gemm.n < 0 || gemm.k < 0 || gemm.batch < 1) {
    fail("GEMM with sizes m=", gemm.m, " n=", gemm.n, " k=", gemm.k, " batch=", gemm.batch, ": sizes must be >= 0, batch >= 1");
  }
  // Row lengths as stored.
  int64_t a_columns = gemm.transpose_a ? gemm.m : gemm.k;
  int64_t b_columns = gemm.transpose_b ? gemm.k : gemm.n;
  auto leading = [](int64_t given, int64_t columns, const char* name) {
    int64_t ld = given == 0 ? std::max<int64_t>(columns, 1) : given;
    if (ld < columns) fail("GEMM operand ", name, ": leading dimension ", ld, " is below its row length ", columns);
    return ld;
  };
  ColumnMajorGemm plan;
  plan.transpose_first = gemm.transpose_b;
  plan.transpose_second = gemm.transpose_a;
  plan.rows = gemm.n;
  plan.cols = gemm.m;
  plan.inner = gemm.k;
  plan.ld_first = leading(gemm.ldb, b_columns, "b");
  plan.ld_second = leading(gemm.lda, a_columns, "a");
  plan.ld_out = leading(gemm.ldc, gemm.n, "out");
  plan.stride_first = gemm.stride_b;
  plan.stride_second = gemm.stride_a;
  plan.stride_out = gemm.stride_c;
  plan.batch = gemm.batch;
  for (int64_t value : {plan.rows, plan.cols, plan.inner, plan.ld_first, plan.ld_second, plan.ld_out, plan.batch}) {
    if (value > INT_MAX) fail("GEMM size ", value, " is past cuBLAS's 32-bit limit");
  }
  return plan;
}

}  // namespace kiln::cuda
