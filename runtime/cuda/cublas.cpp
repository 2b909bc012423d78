// cuBLAS and cuBLASLt. See runtime/cuda/cublas.h.
#include "runtime/cuda/cublas.h"

#include <mutex>
#include <utility>

#include "runtime/cuda/library_search.h"
#include "kiln/error.h"

namespace kiln::cuda {

namespace {

template <typename Slot>
void bind(const SharedLibrary& library, Slot& slot, const char* symbol) {
  slot = reinterpret_cast<Slot>(library.symbol(symbol));
}

int lt_epilogue(GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case GemmEpilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case GemmEpilogue::bias_relu: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case GemmEpilogue::gelu: return CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::bias_gelu: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  KILN_CHECK(false, "unknown GEMM epilogue");
}

// The largest power of two, at most 256 (cuBLASLt's default assumption), dividing `pointer`:
// the alignment the heuristic may count on for a matrix (workspace buffers are only 64-aligned).
uint32_t alignment_of(CUdeviceptr pointer) {
  uint32_t alignment = 256;
  while (alignment > 1 && pointer % alignment != 0) alignment /= 2;
  return alignment;
}

bool has_bias(GemmEpilogue epilogue) {
  return epilogue == GemmEpilogue::bias || epilogue == GemmEpilogue::bias_relu || epilogue == GemmEpilogue::bias_gelu;
}

}  // namespace

std::unique_ptr<CublasLibraries> CublasLibraries::load() {
  std::unique_ptr<CublasLibraries> libraries(new CublasLibraries());
  libraries->lt_library_ = open_toolkit_library({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"},
                                                "KILN_CUBLASLT_LIBRARY", "cuBLASLt");
  libraries->blas_library_ = open_toolkit_library({"libcublas.so.13", "libcublas.so.12", "libcublas.so"},
                                                  "KILN_CUBLAS_LIBRARY", "cuBLAS");
  const SharedLibrary& b = libraries->blas_library_;
  CublasFunctions& blas = libraries->blas_;
  bind(b, blas.cublasCreate, "cublasCreate_v2");
  bind(b, blas.cublasDestroy, "cublasDestroy_v2");
  bind(b, blas.cublasSetStream, "cublasSetStream_v2");
  bind(b, blas.cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  const SharedLibrary& l = libraries->lt_library_;
  CublasLtFunctions& lt = libraries->lt_;
  bind(l, lt.cublasLtCreate, "cublasLtCreate");
  bind(l, lt.cublasLtDestroy, "cublasLtDestroy");
  bind(l, lt.cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
  bind(l, lt.cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
  bind(l, lt.cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  bind(l, lt.cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  bind(l, lt.cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  bind(l, lt.cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  bind(l, lt.cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
  bind(l, lt.cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
  bind(l, lt.cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
  bind(l, lt.cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
  bind(l, lt.cublasLtMatmul, "cublasLtMatmul");
  return libraries;
}

const CublasLibraries& cublas_libraries() {
  static std::once_flag once;
  static std::unique_ptr<CublasLibraries> loaded;
  static std::string failure;
  std::call_once(once, [] {
    try {
      loaded = CublasLibraries::load();
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!loaded) throw Error(failure);
  return *loaded;
}

int cuda_data_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: fail("cuBLAS GEMM on ", dtype_name(dtype), ": only f32, f16 and bf16 are supported");
  }
}

Cublas::Cublas(const CudaContext& context) : context_(context), libraries_(cublas_libraries()) {
  context_.make_current();
  check(libraries_.blas().cublasCreate(&handle_), "cublasCreate");
  check(libraries_.lt().cublasLtCreate(&lt_handle_), "cublasLtCreate");
}

Cublas::~Cublas() {
  if (handle_ != nullptr) libraries_.blas().cublasDestroy(handle_);
  if (lt_handle_ != nullptr) libraries_.lt().cublasLtDestroy(lt_handle_);
}

void Cublas::check(cublasStatus_t status, const char* what) const {
  if (status != CUBLAS_STATUS_SUCCESS) fail("cuBLAS error: ", what, " returned status ", status);
}

void Cublas::gemm(CudaStream& stream, const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c) {
  ColumnMajorGemm plan = plan_column_major(gemm);
  if (plan.rows == 0 || plan.cols == 0) return;
  int type = cuda_data_type(dtype);
  context_.make_current();
  check(libraries_.blas().cublasSetStream(handle_, stream.handle()), "cublasSetStream");
  check(libraries_.blas().cublasGemmStridedBatchedEx(
            handle_, plan.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N, plan.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N,
            int(plan.rows), int(plan.cols), int(plan.inner), &gemm.alpha, reinterpret_cast<const void*>(b), type,
            int(plan.ld_first), plan.stride_first, reinterpret_cast<const void*>(a), type, int(plan.ld_second),
            plan.stride_second, &gemm.beta, reinterpret_cast<void*>(c), type, int(plan.ld_out), plan.stride_out,
            int(plan.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

void Cublas::gemm_with_epilogue(CudaStream& stream, const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b,
                                CUdeviceptr c, GemmEpilogue epilogue, CUdeviceptr bias) {
  ColumnMajorGemm plan = plan_column_major(gemm);
  if (plan.rows == 0 || plan.cols == 0) return;
  if (has_bias(epilogue) && bias == 0) fail("cuBLASLt GEMM: the epilogue adds a bias, and none was given");
  int type = cuda_data_type(dtype);
  const CublasLtFunctions& lt = libraries_.lt();
  context_.make_current();

  // Descriptors, destroyed however this returns.
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  struct Cleanup {
    const CublasLtFunctions& lt;
    cublasLtMatmulDesc_t& desc;
    cublasLtMatrixLayout_t &first, &second, &out;
    cublasLtMatmulPreference_t& preference;
    ~Cleanup() {
      if (preference != nullptr) lt.cublasLtMatmulPreferenceDestroy(preference);
      for (cublasLtMatrixLayout_t layout : {first, second, out}) {
        if (layout != nullptr) lt.cublasLtMatrixLayoutDestroy(layout);
      }
      if (desc != nullptr) lt.cublasLtMatmulDescDestroy(desc);
    }
  } cleanup{lt, desc, first, second, out, preference};

  check(lt.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  int transpose_first = plan.transpose_first ? CUBLAS_OP_T : CUBLAS_OP_N;
  int transpose_second = plan.transpose_second ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lt_epilogue_value = lt_epilogue(epilogue);
  check(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose_first, sizeof transpose_first), "TRANSA");
  check(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transpose_second, sizeof transpose_second), "TRANSB");
  check(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epilogue_value, sizeof lt_epilogue_value),
        "EPILOGUE");
  if (has_bias(epilogue)) {
    const void* bias_pointer = reinterpret_cast<const void*>(bias);
    check(lt.cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_pointer, sizeof bias_pointer),
          "BIAS_POINTER");
  }
  // Layouts describe the matrices as stored (column-major): op(first) is rows x inner.
  auto layout = [&](cublasLtMatrixLayout_t& l, bool transposed, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    check(lt.cublasLtMatrixLayoutCreate(&l, type, uint64_t(transposed ? cols : rows), uint64_t(transposed ? rows : cols), ld),
          "cublasLtMatrixLayoutCreate");
    int32_t batch = int32_t(plan.batch);
    check(lt.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch), "BATCH_COUNT");
    check(lt.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
          "STRIDED_BATCH_OFFSET");
  };
  layout(first, plan.transpose_first, plan.rows, plan.inner, plan.ld_first, plan.stride_first);
  layout(second, plan.transpose_second, plan.inner, plan.cols, plan.ld_second, plan.stride_second);
  layout(out, false, plan.rows, plan.cols, plan.ld_out, plan.stride_out);

  check(lt.cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  uint64_t no_workspace = 0;
  check(lt.cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &no_workspace,
                                                sizeof no_workspace),
        "MAX_WORKSPACE_BYTES");
  // Lt's A is the row-major b, its B the row-major a; C and D are both c.
  const std::pair<int, CUdeviceptr> alignments[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, b},
                                                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, a},
                                                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, c},
                                                    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, c}};
  for (const auto& [attribute, pointer] : alignments) {
    uint32_t alignment = alignment_of(pointer);
    check(lt.cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment, sizeof alignment), "MIN_ALIGNMENT");
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  check(lt.cublasLtMatmulAlgoGetHeuristic(lt_handle_, desc, first, second, out, out, preference, 1, &heuristic, &found),
        "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) fail("cuBLASLt has no algorithm for a ", plan.cols, "x", plan.rows, "x", plan.inner, " GEMM with this epilogue");
  check(lt.cublasLtMatmul(lt_handle_, desc, &gemm.alpha, reinterpret_cast<const void*>(b), first,
                          reinterpret_cast<const void*>(a), second, &gemm.beta, reinterpret_cast<const void*>(c), out,
                          reinterpret_cast<void*>(c), out, &heuristic.algo, nullptr, 0, stream.handle()),
        "cublasLtMatmul");
}

}  // namespace kiln::cuda
