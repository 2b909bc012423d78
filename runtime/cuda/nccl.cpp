// NCCL, dlopen'ed. See runtime/cuda/nccl.h.
#include "runtime/cuda/nccl.h"

#include <mutex>
#include <type_traits>

#include "kiln/error.h"
#include "runtime/cuda/library_search.h"

namespace kiln::cuda {

namespace {

const char* result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return nullptr;
  }
}

}  // namespace

std::unique_ptr<NcclLibrary> NcclLibrary::load() {
  std::unique_ptr<NcclLibrary> nccl(new NcclLibrary());
  std::string tried;
  for (const std::string& candidate : toolkit_library_candidates({kNcclLibrary}, kNcclLibraryVariable)) {
    try {
      nccl->library_ = SharedLibrary::open(candidate);
      nccl->path_ = candidate;
      break;
    } catch (const Error& e) {
      tried += (tried.empty() ? " " : "; ") + std::string(e.what());
    }
  }
  if (!nccl->library_.is_open())
    fail("NCCL was not found: install NCCL (", kNcclLibrary, ", e.g. Debian's libnccl2 or the pip package ",
         "nvidia-nccl-cu13) or set $", kNcclLibraryVariable, " to the library's path. Tried:", tried);
  auto bind = [&](auto& slot, const char* symbol, bool required) {
    void* address = nccl->library_.find_symbol(symbol);
    if (address == nullptr && required)
      fail("NCCL was not found: ", nccl->path_, " lacks ", symbol, " (not NCCL, or a NCCL older than 2.10); set $",
           kNcclLibraryVariable, " to a NCCL 2.10 or later");
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  NcclFunctions& api = nccl->api_;
  bind(api.ncclGetVersion, "ncclGetVersion", true);
  bind(api.ncclGetUniqueId, "ncclGetUniqueId", true);
  bind(api.ncclCommInitRank, "ncclCommInitRank", true);
  bind(api.ncclCommDestroy, "ncclCommDestroy", true);
  bind(api.ncclCommAbort, "ncclCommAbort", true);
  bind(api.ncclCommGetAsyncError, "ncclCommGetAsyncError", true);
  bind(api.ncclGetErrorString, "ncclGetErrorString", true);
  bind(api.ncclAllReduce, "ncclAllReduce", true);
  bind(api.ncclBroadcast, "ncclBroadcast", true);
  bind(api.ncclAllGather, "ncclAllGather", true);
  bind(api.ncclGetLastError, "ncclGetLastError", false);
  if (api.ncclGetVersion(&nccl->version_) != ncclSuccess) fail("NCCL was not found: ncclGetVersion failed in ", nccl->path_);
  if (nccl->version_ < kNcclMinimumVersion)
    fail("NCCL was not found: ", nccl->path_, " is NCCL ", nccl->version_text(), "; Kiln needs 2.10 or later (set $",
         kNcclLibraryVariable, ")");
  return nccl;
}

std::string NcclLibrary::version_text() const {
  return std::to_string(version_ / 10000) + "." + std::to_string(version_ / 100 % 100) + "." +
         std::to_string(version_ % 100);
}

std::string NcclLibrary::error_text(ncclResult_t result) const {
  const char* name = result_name(result);
  std::string text = name ? name : "NCCL error " + std::to_string(result);
  if (const char* description = api_.ncclGetErrorString(result); description != nullptr && *description != '\0')
    text += std::string(" (") + description + ")";
  return text;
}

const NcclLibrary& nccl_library() {
  static std::mutex mutex;
  static std::unique_ptr<NcclLibrary> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded) loaded = NcclLibrary::load();
  return *loaded;
}

ncclDataType_t nccl_data_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i8: return ncclInt8;
    case DType::u8: return ncclUint8;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u32: return ncclUint32;
    case DType::u64: return ncclUint64;
    default: return -1;
  }
}

}  // namespace kiln::cuda
