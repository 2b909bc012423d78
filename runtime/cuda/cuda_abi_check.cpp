// Compile-time check of Kiln's own declarations of the CUDA APIs (driver_api.h, nvrtc_api.h,
// cublas_api.h) against the CUDA toolkit's headers: every constant's value and every opaque
// struct's size. Compiled only when CMake finds the toolkit (runtime/CMakeLists.txt defines
// KILN_CUDA_HEADERS and adds its include folder to this file alone); empty otherwise.
#ifdef KILN_CUDA_HEADERS

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <nvrtc.h>

#include "runtime/cuda/cublas_api.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/nvrtc_api.h"

// NCCL ships apart from the toolkit (the CUDA 13 toolkit's include folder may hold it).
#if __has_include(<nccl.h>)
#include <nccl.h>

#include "runtime/cuda/nccl_api.h"
#define KILN_NCCL_HEADER 1
#endif

namespace kiln::cuda {

#define KILN_SAME(ours, theirs) static_assert(int(ours) == int(theirs), #ours " differs from the CUDA toolkit's")
KILN_SAME(kiln::cuda::CUDA_ERROR_OUT_OF_MEMORY, ::CUDA_ERROR_OUT_OF_MEMORY);
KILN_SAME(kiln::cuda::CUDA_ERROR_NOT_INITIALIZED, ::CUDA_ERROR_NOT_INITIALIZED);
KILN_SAME(kiln::cuda::CUDA_ERROR_STUB_LIBRARY, ::CUDA_ERROR_STUB_LIBRARY);
KILN_SAME(kiln::cuda::CUDA_ERROR_NO_DEVICE, ::CUDA_ERROR_NO_DEVICE);
KILN_SAME(kiln::cuda::CUDA_ERROR_NOT_READY, ::CUDA_ERROR_NOT_READY);
KILN_SAME(kiln::cuda::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
KILN_SAME(kiln::cuda::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, ::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
KILN_SAME(kiln::cuda::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, ::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
KILN_SAME(kiln::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
KILN_SAME(kiln::cuda::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
KILN_SAME(kiln::cuda::CU_STREAM_NON_BLOCKING, ::CU_STREAM_NON_BLOCKING);
KILN_SAME(kiln::cuda::CU_EVENT_DISABLE_TIMING, ::CU_EVENT_DISABLE_TIMING);
static_assert(sizeof(kiln::cuda::CUdeviceptr) == sizeof(::CUdeviceptr));

KILN_SAME(kiln::cuda::NVRTC_ERROR_COMPILATION, ::NVRTC_ERROR_COMPILATION);

KILN_SAME(kiln::cuda::CUBLAS_OP_T, ::CUBLAS_OP_T);
KILN_SAME(kiln::cuda::CUBLAS_GEMM_DEFAULT, ::CUBLAS_GEMM_DEFAULT);
KILN_SAME(kiln::cuda::CUBLAS_COMPUTE_32F, ::CUBLAS_COMPUTE_32F);
KILN_SAME(kiln::cuda::CUDA_R_32F, ::CUDA_R_32F);
KILN_SAME(kiln::cuda::CUDA_R_16F, ::CUDA_R_16F);
KILN_SAME(kiln::cuda::CUDA_R_16BF, ::CUDA_R_16BF);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_DESC_TRANSA, ::CUBLASLT_MATMUL_DESC_TRANSA);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_DESC_TRANSB, ::CUBLASLT_MATMUL_DESC_TRANSB);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_DESC_EPILOGUE, ::CUBLASLT_MATMUL_DESC_EPILOGUE);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_DESC_BIAS_POINTER, ::CUBLASLT_MATMUL_DESC_BIAS_POINTER);
KILN_SAME(kiln::cuda::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, ::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
KILN_SAME(kiln::cuda::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, ::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
KILN_SAME(kiln::cuda::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, ::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
KILN_SAME(kiln::cuda::CUBLASLT_EPILOGUE_DEFAULT, ::CUBLASLT_EPILOGUE_DEFAULT);
KILN_SAME(kiln::cuda::CUBLASLT_EPILOGUE_RELU, ::CUBLASLT_EPILOGUE_RELU);
KILN_SAME(kiln::cuda::CUBLASLT_EPILOGUE_BIAS, ::CUBLASLT_EPILOGUE_BIAS);
KILN_SAME(kiln::cuda::CUBLASLT_EPILOGUE_RELU_BIAS, ::CUBLASLT_EPILOGUE_RELU_BIAS);
KILN_SAME(kiln::cuda::CUBLASLT_EPILOGUE_GELU, ::CUBLASLT_EPILOGUE_GELU);
KILN_SAME(kiln::cuda::CUBLASLT_EPILOGUE_GELU_BIAS, ::CUBLASLT_EPILOGUE_GELU_BIAS);
#if KILN_NCCL_HEADER
KILN_SAME(kiln::cuda::kNcclUniqueIdBytes, NCCL_UNIQUE_ID_BYTES);
KILN_SAME(kiln::cuda::ncclSuccess, ::ncclSuccess);
KILN_SAME(kiln::cuda::ncclUnhandledCudaError, ::ncclUnhandledCudaError);
KILN_SAME(kiln::cuda::ncclSystemError, ::ncclSystemError);
KILN_SAME(kiln::cuda::ncclInternalError, ::ncclInternalError);
KILN_SAME(kiln::cuda::ncclInvalidArgument, ::ncclInvalidArgument);
KILN_SAME(kiln::cuda::ncclInvalidUsage, ::ncclInvalidUsage);
KILN_SAME(kiln::cuda::ncclRemoteError, ::ncclRemoteError);
KILN_SAME(kiln::cuda::ncclInProgress, ::ncclInProgress);
KILN_SAME(kiln::cuda::ncclSum, ::ncclSum);
KILN_SAME(kiln::cuda::ncclAvg, ::ncclAvg);
KILN_SAME(kiln::cuda::ncclInt8, ::ncclInt8);
KILN_SAME(kiln::cuda::ncclUint8, ::ncclUint8);
KILN_SAME(kiln::cuda::ncclInt32, ::ncclInt32);
KILN_SAME(kiln::cuda::ncclUint32, ::ncclUint32);
KILN_SAME(kiln::cuda::ncclInt64, ::ncclInt64);
KILN_SAME(kiln::cuda::ncclUint64, ::ncclUint64);
KILN_SAME(kiln::cuda::ncclFloat16, ::ncclFloat16);
KILN_SAME(kiln::cuda::ncclFloat32, ::ncclFloat32);
KILN_SAME(kiln::cuda::ncclFloat64, ::ncclFloat64);
KILN_SAME(kiln::cuda::ncclBfloat16, ::ncclBfloat16);
KILN_SAME(kiln::cuda::nccl_version_code(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_VERSION_CODE);
// Kiln passes NCCL's enums as int and the unique id by value: the same sizes make the same ABI.
static_assert(sizeof(kiln::cuda::ncclUniqueId) == sizeof(::ncclUniqueId));
static_assert(sizeof(kiln::cuda::ncclResult_t) == sizeof(::ncclResult_t));
static_assert(sizeof(kiln::cuda::ncclRedOp_t) == sizeof(::ncclRedOp_t));
static_assert(sizeof(kiln::cuda::ncclDataType_t) == sizeof(::ncclDataType_t));
#endif
#undef KILN_SAME
static_assert(sizeof(kiln::cuda::cublasLtMatmulDescOpaque_t) == sizeof(::cublasLtMatmulDescOpaque_t));
static_assert(sizeof(kiln::cuda::cublasLtMatrixLayoutOpaque_t) == sizeof(::cublasLtMatrixLayoutOpaque_t));
static_assert(sizeof(kiln::cuda::cublasLtMatmulPreferenceOpaque_t) == sizeof(::cublasLtMatmulPreferenceOpaque_t));
static_assert(sizeof(kiln::cuda::cublasLtMatmulHeuristicResult_t) == sizeof(::cublasLtMatmulHeuristicResult_t));

}  // namespace kiln::cuda

#endif  // KILN_CUDA_HEADERS
