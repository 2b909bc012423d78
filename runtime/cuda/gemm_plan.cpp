// The row-major to column-major GEMM plan. See runtime/cuda/gemm_plan.h.
#include "runtime/cuda/gemm_plan.h"

#include <algorithm>
#include <climits>

#include "kiln/error.h"

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

std::optional<OperandLayout> blas_layout(int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols) {
  if (col_stride == 1 || cols == 1) {
    int64_t ld = rows <= 1 ? std::max<int64_t>(cols, 1) : row_stride;
    if (rows <= 1 || row_stride >= cols) return OperandLayout{false, ld};
  }
  if (row_stride == 1 || rows == 1) {
    int64_t ld = cols <= 1 ? std::max<int64_t>(rows, 1) : col_stride;
    if (cols <= 1 || col_stride >= rows) return OperandLayout{true, ld};
  }
  return std::nullopt;
}

std::optional<GemmCalls> plan_strided_gemm(const StridedGemm& views) {
  const size_t rank = views.out_shape.size();
  KILN_CHECK(rank >= 2 && views.a_strides.size() == rank && views.b_strides.size() == rank && views.out_strides.size() == rank,
             "a strided GEMM needs three views of one rank >= 2");
  GemmCalls calls;
  RowMajorGemm& gemm = calls.gemm;
  gemm.m = views.out_shape[rank - 2];
  gemm.n = views.out_shape[rank - 1];
  gemm.k = views.k;
  std::optional<OperandLayout> a = blas_layout(views.a_strides[rank - 2], views.a_strides[rank - 1], gemm.m, gemm.k);
  std::optional<OperandLayout> b = blas_layout(views.b_strides[rank - 2], views.b_strides[rank - 1], gemm.k, gemm.n);
  std::optional<OperandLayout> out = blas_layout(views.out_strides[rank - 2], views.out_strides[rank - 1], gemm.m, gemm.n);
  if (!a || !b || !out || out->transposed) return std::nullopt;
  gemm.transpose_a = a->transposed, gemm.lda = a->ld;
  gemm.transpose_b = b->transposed, gemm.ldb = b->ld;
  gemm.ldc = out->ld;

  // Batch dims of more than one element, innermost last; merge neighbours that walk memory as
  // one dim in all three views.
  struct Dim {
    int64_t size, a, b, out;
  };
  std::vector<Dim> dims;
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (views.out_shape[i] == 0) return calls;  // an empty batch: nothing to do
    if (views.out_shape[i] != 1) dims.push_back({views.out_shape[i], views.a_strides[i], views.b_strides[i], views.out_strides[i]});
  }
  if (gemm.m == 0 || gemm.n == 0) return calls;
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& outer = merged.back();
      if (outer.a == d.a * d.size && outer.b == d.b * d.size && outer.out == d.out * d.size) {
        outer = {outer.size * d.size, d.a, d.b, d.out};
        continue;
      }
    }
    merged.push_back(d);
  }
  if (!merged.empty()) {
    const Dim& inner = merged.back();
    gemm.batch = inner.size;
    gemm.stride_a = inner.a, gemm.stride_b = inner.b, gemm.stride_c = inner.out;
    merged.pop_back();
  }
  // One call per index of the remaining (outer) batch dims.
  int64_t count = 1;
  for (const Dim& d : merged) count *= d.size;
  for (int64_t index = 0; index < count; ++index) {
    std::array<int64_t, 3> offset{0, 0, 0};
    int64_t rest = index;
    for (size_t i = merged.size(); i-- > 0;) {
      int64_t position = rest % merged[i].size;
      rest /= merged[i].size;
      offset[0] += position * merged[i].a;
      offset[1] += position * merged[i].b;
      offset[2] += position * merged[i].out;
    }
    calls.offsets.push_back(offset);
  }
  return calls;
}

}  // namespace kiln::cuda
