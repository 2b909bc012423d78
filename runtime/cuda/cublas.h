// Cublas: cuBLAS and cuBLASLt, dlopen'ed (libcublas.so.13 / libcublasLt.so.13, or .so.12), with
// one handle of each bound to a CudaContext. gemm() runs a row-major (strided batched) GEMM
// through cublasGemmStridedBatchedEx, f32 accumulation, by the transpose trick of
// runtime/cuda/gemm_plan.h; gemm_with_epilogue() runs it through cublasLtMatmul with a fused
// bias / ReLU / GELU epilogue. Errors name the call and cuBLAS's status.
#pragma once

#include <memory>
#include <string>

#include "runtime/cuda/cublas_api.h"
#include "runtime/cuda/cuda_stream.h"
#include "runtime/cuda/gemm_plan.h"
#include "kiln/dtype.h"
#include "runtime/shared_library.h"

namespace kiln::cuda {

class CublasLibraries {
 public:
  // Loads both libraries (searched like NVRTC: the system path, then $CUDA_HOME/lib64,
  // $CUDA_PATH/lib64, /usr/local/cuda/lib64). Throws kiln::Error naming what was tried.
  static std::unique_ptr<CublasLibraries> load();
  const CublasFunctions& blas() const { return blas_; }
  const CublasLtFunctions& lt() const { return lt_; }

 private:
  CublasLibraries() = default;
  SharedLibrary blas_library_, lt_library_;
  CublasFunctions blas_{};
  CublasLtFunctions lt_{};
};

// The process's cuBLAS libraries, loaded on first use (a failure is thrown on every call).
const CublasLibraries& cublas_libraries();

// The cudaDataType of `dtype` (f32, f16, bf16); kiln::Error for any other.
int cuda_data_type(DType dtype);

class Cublas {
 public:
  explicit Cublas(const CudaContext& context);
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // c = alpha * op(a) @ op(b) + beta * c, all of `dtype`, row-major, on `stream`.
  void gemm(CudaStream& stream, const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c);
  // The same with `epilogue` fused; `bias` (n values of `dtype`) when the epilogue has one.
  void gemm_with_epilogue(CudaStream& stream, const RowMajorGemm& gemm, DType dtype, CUdeviceptr a, CUdeviceptr b,
                          CUdeviceptr c, GemmEpilogue epilogue, CUdeviceptr bias);

 private:
  void check(cublasStatus_t status, const char* what) const;
  const CudaContext& context_;
  const CublasLibraries& libraries_;
  cublasHandle_t handle_ = nullptr;
  cublasLtHandle_t lt_handle_ = nullptr;
};

}  // namespace kiln::cuda
