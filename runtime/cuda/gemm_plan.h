// GemmPlan: a row-major (batched) matrix product as the column-major call cuBLAS takes, by the
// usual transpose trick. Row-major C[m, n] = op(A)[m, k] op(B)[k, n] is, read column-major,
// C^T[n, m] = op(B)^T op(A)^T: the same bytes, with the operands swapped, m and n swapped, and
// each operand's transpose flag kept (a row-major [r, c] matrix with leading dim ld is the
// column-major [c, r] matrix with the same ld). Pure arithmetic, tested without a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

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

// Epilogues cuBLASLt fuses onto a GEMM (bias per output column of the row-major result, the
// same for every batch). cuBLASLt's GELU is the tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi)
// (x + 0.044715 x^3))), not the exact erf form.
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

// How a strided 2-D view [rows, cols] is read by BLAS: as stored (row-major, leading dim
// `ld`) or transposed (column-major, stored [cols, rows] with leading dim `ld`); std::nullopt
// when neither stride is 1 (the view needs a copy). Dims of size 1 take any stride.
struct OperandLayout {
  bool transposed = false;
  int64_t ld = 0;
};
std::optional<OperandLayout> blas_layout(int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols);

// A batched product of strided views, out[b...] = a[b...] @ b[b...] with a [batch..., m, k],
// b [batch..., k, n] and out [batch..., m, n] (any rank >= 2, the same for all three; a batch
// stride of 0 broadcasts), as GEMM calls: one strided batched call over the innermost batch
// dims that walk memory as one dim, repeated at each element offset of the rest.
struct StridedGemm {
  std::vector<int64_t> out_shape;                      // [batch..., m, n]
  int64_t k = 0;
  std::vector<int64_t> a_strides, b_strides, out_strides;  // elements, one per dim
};
struct GemmCalls {
  RowMajorGemm gemm;                            // alpha 1, beta 0
  std::vector<std::array<int64_t, 3>> offsets;  // per call: element offsets of a, b and out
};
// std::nullopt when an operand has no BLAS layout (blas_layout). No calls when the output is empty.
std::optional<GemmCalls> plan_strided_gemm(const StridedGemm& views);

}  // namespace kiln::cuda
