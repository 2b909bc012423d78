// cuBLAS and cuBLASLt. See runtime/cuda/cublas.h.
#include "runtime/cuda/cublas.h"

#include <mutex>
#include <utility>

#include "runtime/cuda/library_search.h"
#include "kiln/error.h"

namespace kiln::cuda {

#include "runtime/cuda/cublas_calls.inc"

namespace {

template <typename Slot>
void bind(const SharedLibrary& library, Slot& slot, const char* symbol) {
  slot = reinterpret_cast<Slot>(library.symbol(symbol));
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
  int type = cublas_data_type(int(dtype));
  if (type < 0) fail("cuBLAS GEMM on ", dtype_name(dtype), ": only f32, f16 and bf16 are supported");
  return type;
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
  std::string error = cublas_gemm_call(libraries_.blas(), handle_, plan, gemm, type, a, b, c);
  if (!error.empty()) fail(error);
}

void Cublas::gemm_with_epilogue(CudaStream& stream, const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b,
                                CUdeviceptr c, GemmEpilogue epilogue, CUdeviceptr bias) {
  ColumnMajorGemm plan = plan_column_major(gemm);
  if (plan.rows == 0 || plan.cols == 0) return;
  int type = cuda_data_type(dtype);
  context_.make_current();
  std::string error = cublaslt_gemm_call(libraries_.lt(), lt_handle_, stream.handle(), plan, gemm, type, a, b, c, epilogue, bias);
  if (!error.empty()) fail(error);
}

}  // namespace kiln::cuda
