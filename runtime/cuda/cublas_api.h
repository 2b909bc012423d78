// The slice of cuBLAS (cublas_api.h) and cuBLASLt (cublasLt.h) that Kiln calls, declared here
// so that Kiln builds without the CUDA toolkit; both libraries are dlopen'ed at run time
// (runtime/cuda/cublas.h). Checked against the toolkit's headers by
// runtime/cuda/cuda_abi_check.cpp where they are found.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/cuda/driver_api.h"

namespace kiln::cuda {

using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext*;
using cublasLtHandle_t = struct cublasLtContext*;
struct cublasLtMatmulDescOpaque_t { uint64_t data[32]; };
struct cublasLtMatrixLayoutOpaque_t { uint64_t data[8]; };
struct cublasLtMatmulPreferenceOpaque_t { uint64_t data[8]; };
struct cublasLtMatmulAlgo_t { uint64_t data[8]; };
using cublasLtMatmulDesc_t = cublasLtMatmulDescOpaque_t*;
using cublasLtMatrixLayout_t = cublasLtMatrixLayoutOpaque_t*;
using cublasLtMatmulPreference_t = cublasLtMatmulPreferenceOpaque_t*;
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

inline constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
inline constexpr int CUBLAS_OP_N = 0;
inline constexpr int CUBLAS_OP_T = 1;
inline constexpr int CUBLAS_GEMM_DEFAULT = -1;
inline constexpr int CUBLAS_COMPUTE_32F = 68;
// cudaDataType values.
inline constexpr int CUDA_R_32F = 0;
inline constexpr int CUDA_R_16F = 2;
inline constexpr int CUDA_R_16BF = 14;
// cublasLtMatmulDescAttributes_t, cublasLtMatrixLayoutAttribute_t, cublasLtMatmulPreferenceAttributes_t.
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;
inline constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;
inline constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
inline constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
inline constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;
inline constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;
inline constexpr int CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1;
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5;
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6;
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7;
inline constexpr int CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8;
// cublasLtEpilogue_t.
inline constexpr int CUBLASLT_EPILOGUE_DEFAULT = 1;
inline constexpr int CUBLASLT_EPILOGUE_RELU = 2;
inline constexpr int CUBLASLT_EPILOGUE_BIAS = 4;
inline constexpr int CUBLASLT_EPILOGUE_RELU_BIAS = 6;
inline constexpr int CUBLASLT_EPILOGUE_GELU = 32;
inline constexpr int CUBLASLT_EPILOGUE_GELU_BIAS = 36;

struct CublasFunctions {
  cublasStatus_t (*cublasCreate)(cublasHandle_t* handle);          // _v2
  cublasStatus_t (*cublasDestroy)(cublasHandle_t handle);          // _v2
  cublasStatus_t (*cublasSetStream)(cublasHandle_t handle, CUstream stream);  // _v2
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t handle, int transa, int transb, int m, int n, int k,
                                               const void* alpha, const void* a, int a_type, int lda, long long stride_a,
                                               const void* b, int b_type, int ldb, long long stride_b, const void* beta,
                                               void* c, int c_type, int ldc, long long stride_c, int batch_count,
                                               int compute_type, int algorithm);
};

struct CublasLtFunctions {
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t* handle);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t handle);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t* desc, int compute_type, int scale_type);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t desc);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t desc, int attribute, const void* value, size_t size);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t* layout, int type, uint64_t rows, uint64_t cols, int64_t ld);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t layout);
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t layout, int attribute, const void* value, size_t size);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t* preference);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t preference);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t preference, int attribute, const void* value,
                                                         size_t size);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                                   cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                   cublasLtMatmulPreference_t preference, int requested,
                                                   cublasLtMatmulHeuristicResult_t* results, int* returned);
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                                   cublasLtMatrixLayout_t a_layout, const void* b, cublasLtMatrixLayout_t b_layout,
                                   const void* beta, const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                                   cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algorithm, void* workspace,
                                   size_t workspace_bytes, CUstream stream);
};

}  // namespace kiln::cuda
