// GemmPlan: a row-major (batched) matrix product as the column-major call cuBLAS takes, by the
// usual transpose trick. Row-major C[m, n] = op(A)[m, k] op(B)[k, n] is, read column-major,
// C^T[n, m] = op(B)^T op(A)^T: the same bytes, with the operands swapped, m and n swapped, and
// each operand's transpose flag kept (a row-major [r, c] matrix with leading dim ld is the
// column-major [c, r] matrix with the same ld). Pure arithmetic, tested without a GPU.
#pragma once

#include <cstdint>

namespace kiln::cuda {

// out[b] = alpha * op(a[b]) @ op(b[b]) + beta * out[b] for b < batch, every matrix row-major.
struct RowMajorGemm {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false;  // a is stored [k, m] and read transposed
  bool transpose_b = false;  // b is stored [n, k] and read transposed
  int64_t lda = 0, ldb = 0, ldc = 0;  // row strides; 0: the dense value (columns as stored)
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batches; 0 for a shared operand
  float alpha = 1, beta = 0;
};

// Epilogues cuBLASLt fuses onto a GEMM (bias per output column of the row-major result).
enum class GemmEpilogue { none, bias, relu, bias_relu, gelu, bias_gelu };

// The column-major call: D = alpha * op(first) @ op(second) + beta * C, of size rows x cols;
// `first` is the row-major b and `second` the row-major a.
struct ColumnMajorGemm {
  bool transpose_first = false, transpose_second = false;
  int64_t rows = 0, cols = 0, inner = 0;
  int64_t ld_first = 0, ld_second = 0, ld_out = 0;
  int64_t stride_first = 0, stride_second = 0, stride_out = 0;
  int64_t batch = 1;
};

// Fills dense leading dims; throws kiln::Error for a negative size, a leading dim below the
// row length, or a size past cuBLAS's 32-bit int.
ColumnMajorGemm plan_column_major(const RowMajorGemm& gemm);

}  // namespace kiln::cuda
