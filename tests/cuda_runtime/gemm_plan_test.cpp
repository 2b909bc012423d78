// The row-major to column-major GEMM plan, checked by running the plan through a reference
// column-major GEMM (BLAS's definition, X(i, j) = X[i + j * ld]) on row-major data and comparing
// with a row-major product computed directly.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/cuda/gemm_plan.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

// BLAS's column-major GEMM over one batch, as cuBLAS defines it.
void column_major_gemm(const ColumnMajorGemm& p, float alpha, const float* first, const float* second, float beta,
                       float* out) {
  auto element = [](const float* x, bool transposed, int64_t ld, int64_t i, int64_t j) {
    return transposed ? x[j + i * ld] : x[i + j * ld];
  };
  for (int64_t j = 0; j < p.cols; ++j) {
    for (int64_t i = 0; i < p.rows; ++i) {
      double sum = 0;
      for (int64_t l = 0; l < p.inner; ++l) {
        sum += double(element(first, p.transpose_first, p.ld_first, i, l)) * element(second, p.transpose_second, p.ld_second, l, j);
      }
      out[i + j * p.ld_out] = float(alpha * sum + beta * out[i + j * p.ld_out]);
    }
  }
}

struct Case {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
  int64_t pad_a, pad_b, pad_c;  // extra elements per stored row
  int64_t batch;
  bool shared_b;
};

void check_case(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << c.transpose_a
                                    << " tb=" << c.transpose_b << " batch=" << c.batch);
  RowMajorGemm gemm;
  gemm.m = c.m, gemm.n = c.n, gemm.k = c.k;
  gemm.transpose_a = c.transpose_a, gemm.transpose_b = c.transpose_b;
  int64_t a_rows = c.transpose_a ? c.k : c.m, a_cols = c.transpose_a ? c.m : c.k;
  int64_t b_rows = c.transpose_b ? c.n : c.k, b_cols = c.transpose_b ? c.k : c.n;
  gemm.lda = a_cols + c.pad_a, gemm.ldb = b_cols + c.pad_b, gemm.ldc = c.n + c.pad_c;
  gemm.batch = c.batch;
  gemm.stride_a = a_rows * gemm.lda;
  gemm.stride_b = c.shared_b ? 0 : b_rows * gemm.ldb;
  gemm.stride_c = c.m * gemm.ldc;
  gemm.alpha = 1.5f, gemm.beta = 0.5f;

  std::mt19937 random(7);
  std::uniform_real_distribution<float> values(-1, 1);
  auto fill = [&](size_t size) {
    std::vector<float> v(size);
    for (float& x : v) x = values(random);
    return v;
  };
  std::vector<float> a = fill(size_t(gemm.stride_a * c.batch));
  std::vector<float> b = fill(size_t(c.shared_b ? b_rows * gemm.ldb : gemm.stride_b * c.batch));
  std::vector<float> out = fill(size_t(gemm.stride_c * c.batch));
  std::vector<float> expected = out;
  for (int64_t batch = 0; batch < c.batch; ++batch) {
    const float* ab = a.data() + batch * gemm.stride_a;
    const float* bb = b.data() + batch * gemm.stride_b;
    float* eb = expected.data() + batch * gemm.stride_c;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          float x = c.transpose_a ? ab[l * gemm.lda + i] : ab[i * gemm.lda + l];
          float y = c.transpose_b ? bb[j * gemm.ldb + l] : bb[l * gemm.ldb + j];
          sum += double(x) * y;
        }
        eb[i * gemm.ldc + j] = float(gemm.alpha * sum + gemm.beta * eb[i * gemm.ldc + j]);
      }
    }
  }

  ColumnMajorGemm plan = plan_column_major(gemm);
  EXPECT_EQ(plan.batch, c.batch);
  for (int64_t batch = 0; batch < c.batch; ++batch) {
    // The plan's first operand is b, its second a.
    column_major_gemm(plan, gemm.alpha, b.data() + batch * plan.stride_first, a.data() + batch * plan.stride_second, gemm.beta,
                      out.data() + batch * plan.stride_out);
  }
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], expected[i], 1e-5) << "element " << i;
}

TEST(GemmPlan, EveryTransposeCombinationMatchesTheRowMajorProduct) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) check_case({5, 7, 3, ta, tb, 0, 0, 0, 1, false});
  }
}

TEST(GemmPlan, PaddedRowsAndStridedBatches) {
  check_case({4, 6, 9, false, true, 2, 3, 1, 3, false});
  check_case({4, 6, 9, true, false, 1, 0, 5, 2, false});
}

TEST(GemmPlan, ABatchSharingTheRightOperand) { check_case({3, 8, 4, false, false, 0, 0, 0, 4, true}); }

TEST(GemmPlan, DenseLeadingDimensionsAreFilledIn) {
  RowMajorGemm gemm;
  gemm.m = 2, gemm.n = 3, gemm.k = 4, gemm.transpose_b = true;
  ColumnMajorGemm plan = plan_column_major(gemm);
  EXPECT_EQ(plan.rows, 3);
  EXPECT_EQ(plan.cols, 2);
  EXPECT_EQ(plan.ld_first, 4);   // b stored [n, k]
  EXPECT_EQ(plan.ld_second, 4);  // a stored [m, k]
  EXPECT_EQ(plan.ld_out, 3);
  EXPECT_TRUE(plan.transpose_first);
  EXPECT_FALSE(plan.transpose_second);
}

TEST(GemmPlan, BadSizesAreErrors) {
  RowMajorGemm gemm;
  gemm.m = 2, gemm.n = 3, gemm.k = 4, gemm.lda = 3;
  try {
    plan_column_major(gemm);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "GEMM operand a: leading dimension 3 is below its row length 4");
  }
  gemm.lda = 0, gemm.m = -1;
  EXPECT_THROW(plan_column_major(gemm), Error);
  gemm.m = int64_t(1) << 32;
  EXPECT_THROW(plan_column_major(gemm), Error);
}

}  // namespace
}  // namespace kiln::cuda

namespace kiln::cuda {
namespace {

// Runs `views` both directly (a loop over every output element) and as the planned calls through
// the reference column-major GEMM, on random data, and compares.
void check_strided(const StridedGemm& views, size_t a_size, size_t b_size, size_t expected_calls, int64_t expected_batch) {
  std::optional<GemmCalls> calls = plan_strided_gemm(views);
  ASSERT_TRUE(calls.has_value());
  EXPECT_EQ(calls->offsets.size(), expected_calls);
  EXPECT_EQ(calls->gemm.batch, expected_batch);
  std::mt19937 random(11);
  std::uniform_real_distribution<float> values(-1, 1);
  std::vector<float> a(a_size), b(b_size);
  for (float& x : a) x = values(random);
  for (float& x : b) x = values(random);
  const size_t rank = views.out_shape.size();
  int64_t out_size = 1;
  for (int64_t d : views.out_shape) out_size *= d;
  std::vector<float> expected(size_t(out_size), 0), got(size_t(out_size), -7);
  for (int64_t flat = 0; flat < out_size; ++flat) {  // out is contiguous in these cases
    std::vector<int64_t> index(rank);
    int64_t rest = flat;
    for (size_t i = rank; i-- > 0;) index[i] = rest % views.out_shape[i], rest /= views.out_shape[i];
    int64_t a_base = 0, b_base = 0;
    for (size_t i = 0; i + 2 < rank; ++i) a_base += index[i] * views.a_strides[i], b_base += index[i] * views.b_strides[i];
    double sum = 0;
    for (int64_t l = 0; l < views.k; ++l) {
      sum += double(a[size_t(a_base + index[rank - 2] * views.a_strides[rank - 2] + l * views.a_strides[rank - 1])]) *
             b[size_t(b_base + l * views.b_strides[rank - 2] + index[rank - 1] * views.b_strides[rank - 1])];
    }
    expected[size_t(flat)] = float(sum);
  }
  ColumnMajorGemm plan = plan_column_major(calls->gemm);
  for (const auto& offset : calls->offsets) {
    for (int64_t batch = 0; batch < plan.batch; ++batch) {
      column_major_gemm(plan, 1, b.data() + offset[1] + batch * plan.stride_first, a.data() + offset[0] + batch * plan.stride_second,
                        0, got.data() + offset[2] + batch * plan.stride_out);
    }
  }
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-5) << "element " << i;
}

TEST(StridedGemm, ContiguousBatchDimsMergeIntoOneCall) {
  // a [2, 3, 4, 5], b [2, 3, 5, 6], out [2, 3, 4, 6], all contiguous.
  check_strided({{2, 3, 4, 6}, 5, {60, 20, 5, 1}, {90, 30, 6, 1}, {72, 24, 6, 1}}, 120, 180, 1, 6);
}

TEST(StridedGemm, ABroadcastRightOperandAndATransposedLeftOne) {
  // a stored [2, 5, 4] read as [2, 4, 5] (transposed), b [5, 6] broadcast over the batch.
  check_strided({{2, 4, 6}, 5, {20, 1, 4}, {0, 6, 1}, {24, 6, 1}}, 40, 30, 1, 2);
}

TEST(StridedGemm, BatchDimsThatDoNotMergeBecomeSeparateCalls) {
  // a's batch dims are permuted in memory: a [3, 2, 4, 5] stored as [2, 3, 4, 5].
  check_strided({{3, 2, 4, 6}, 5, {20, 60, 5, 1}, {60, 30, 6, 1}, {48, 24, 6, 1}}, 120, 180, 3, 2);
}

TEST(StridedGemm, AnOperandWithoutAUnitStrideHasNoLayout) {
  EXPECT_FALSE(plan_strided_gemm({{4, 6}, 5, {10, 2}, {6, 1}, {6, 1}}).has_value());
  EXPECT_FALSE(blas_layout(10, 2, 4, 5).has_value());
  EXPECT_TRUE(blas_layout(10, 2, 4, 1).has_value());  // one column: any column stride
}

TEST(StridedGemm, AnEmptyBatchOrOutputMakesNoCalls) {
  EXPECT_TRUE(plan_strided_gemm({{0, 4, 6}, 5, {20, 5, 1}, {30, 6, 1}, {24, 6, 1}})->offsets.empty());
  EXPECT_TRUE(plan_strided_gemm({{2, 0, 6}, 5, {0, 5, 1}, {30, 6, 1}, {0, 6, 1}})->offsets.empty());
}

}  // namespace
}  // namespace kiln::cuda
