// The slice of NCCL's C API (nccl.h) that Kiln calls, declared here so that Kiln builds without
// NCCL and links no NCCL library: libnccl.so.2 is dlopen'ed at run time (runtime/cuda/nccl.h).
// Names, values and signatures are nccl.h's (NCCL 2.10 and later; checked against NCCL 2.28's
// header); where the header is found at build time, runtime/cuda/cuda_abi_check.cpp compares them.
#pragma once

#include <cstddef>

#include "runtime/cuda/driver_api.h"

namespace kiln::cuda {

using ncclComm_t = struct ncclComm*;

inline constexpr int kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
struct ncclUniqueId {
  char internal[kNcclUniqueIdBytes];
};

// ncclResult_t values.
using ncclResult_t = int;
inline constexpr ncclResult_t ncclSuccess = 0;
inline constexpr ncclResult_t ncclUnhandledCudaError = 1;
inline constexpr ncclResult_t ncclSystemError = 2;
inline constexpr ncclResult_t ncclInternalError = 3;
inline constexpr ncclResult_t ncclInvalidArgument = 4;
inline constexpr ncclResult_t ncclInvalidUsage = 5;
inline constexpr ncclResult_t ncclRemoteError = 6;
inline constexpr ncclResult_t ncclInProgress = 7;

// ncclRedOp_t values (ncclAvg since NCCL 2.10).
using ncclRedOp_t = int;
inline constexpr ncclRedOp_t ncclSum = 0;
inline constexpr ncclRedOp_t ncclAvg = 4;

// ncclDataType_t values (ncclBfloat16 since NCCL 2.10).
using ncclDataType_t = int;
inline constexpr ncclDataType_t ncclInt8 = 0;
inline constexpr ncclDataType_t ncclUint8 = 1;
inline constexpr ncclDataType_t ncclInt32 = 2;
inline constexpr ncclDataType_t ncclUint32 = 3;
inline constexpr ncclDataType_t ncclInt64 = 4;
inline constexpr ncclDataType_t ncclUint64 = 5;
inline constexpr ncclDataType_t ncclFloat16 = 6;
inline constexpr ncclDataType_t ncclFloat32 = 7;
inline constexpr ncclDataType_t ncclFloat64 = 8;
inline constexpr ncclDataType_t ncclBfloat16 = 9;

// NCCL_VERSION(major, minor, patch) for NCCL 2.9 and later, as ncclGetVersion reports it.
constexpr int nccl_version_code(int major, int minor, int patch) { return major * 10000 + minor * 100 + patch; }

// The entry points, by their exported symbol. The streams are CUDA runtime streams
// (cudaStream_t), which are the driver's CUstream.
struct NcclFunctions {
  ncclResult_t (*ncclGetVersion)(int* version);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId* id);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t comm);
  ncclResult_t (*ncclCommAbort)(ncclComm_t comm);
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t comm, ncclResult_t* async_error);
  const char* (*ncclGetErrorString)(ncclResult_t result);
  ncclResult_t (*ncclAllReduce)(const void* send, void* receive, size_t count, ncclDataType_t type, ncclRedOp_t op,
                                ncclComm_t comm, CUstream stream);
  ncclResult_t (*ncclBroadcast)(const void* send, void* receive, size_t count, ncclDataType_t type, int root,
                                ncclComm_t comm, CUstream stream);
  ncclResult_t (*ncclAllGather)(const void* send, void* receive, size_t send_count, ncclDataType_t type,
                                ncclComm_t comm, CUstream stream);
  // Optional (NCCL 2.13 and later): the last error's explanation; nullptr when absent.
  const char* (*ncclGetLastError)(ncclComm_t comm);
};

}  // namespace kiln::cuda
