// The row-major to column-major GEMM plan, checked by running the plan through a reference
// column-major GEMM (BLAS's definition, X(i, j) = X[i + j * ld]) on row-major data and comparing
// with a row-major product computed directly.
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/cuda/gemm_plan.h"
#include "runtime/error.h"

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
