// NcclLibrary: NCCL (libnccl.so.2), dlopen'ed so that Kiln builds and runs without it; the
// data-parallel nccl backend (compiler/distributed/nccl_process_group.h) calls it. Found as
// $KILN_NCCL_LIBRARY names it when set, else libnccl.so.2 on the system's library path, else under
// $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64 (the pip package nvidia-nccl-cu13
// puts it in site-packages/nvidia/nccl/lib: point $KILN_NCCL_LIBRARY there).
#pragma once

#include <memory>
#include <string>

#include "kiln/dtype.h"
#include "runtime/cuda/nccl_api.h"
#include "runtime/shared_library.h"

namespace kiln::cuda {

inline constexpr const char* kNcclLibrary = "libnccl.so.2";
inline constexpr const char* kNcclLibraryVariable = "KILN_NCCL_LIBRARY";
// NCCL 2.10: ncclAvg and ncclBfloat16.
inline constexpr int kNcclMinimumVersion = nccl_version_code(2, 10, 0);

class NcclLibrary {
 public:
  // Loads NCCL (see above) and resolves its entry points. Throws kiln::Error "NCCL was not found:
  // ..." naming every file tried and the loader's reason, or naming the missing symbol or the
  // too old version.
  static std::unique_ptr<NcclLibrary> load();

  const NcclFunctions& api() const { return api_; }
  const std::string& path() const { return path_; }
  int version() const { return version_; }  // e.g. 22809 for NCCL 2.28.9
  std::string version_text() const;         // "2.28.9"

  // NCCL's name and description of `result`: "ncclSystemError (unhandled system error ...)".
  std::string error_text(ncclResult_t result) const;

 private:
  NcclLibrary() = default;
  SharedLibrary library_;
  NcclFunctions api_{};
  std::string path_;
  int version_ = 0;
};

// The process's NCCL: loaded on the first call that succeeds (a failure is not remembered, so
// that a program may set $KILN_NCCL_LIBRARY and try again); throws load()'s error otherwise.
const NcclLibrary& nccl_library();

// The ncclDataType_t of `dtype`: f32, f64, f16, bf16, i8, u8, i32, i64, u32, u64; -1 for any other.
ncclDataType_t nccl_data_type(DType dtype);

}  // namespace kiln::cuda
