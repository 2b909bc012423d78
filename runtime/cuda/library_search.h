// Where Kiln looks for the CUDA toolkit's libraries (NVRTC, cuBLAS, cuBLASLt) that it dlopens:
// the file named by an override variable when set; else each name on the system's library
// path; else each name under $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/shared_library.h"

namespace kiln::cuda {

// The paths tried, in order, for `names` (e.g. {"libnvrtc.so.13", "libnvrtc.so"}).
std::vector<std::string> toolkit_library_candidates(const std::vector<std::string>& names, const char* override_variable);

// The first candidate that loads; kiln::Error "<what> was not found; install the CUDA toolkit or
// set $<override_variable>. Tried: ..." listing every attempt and the loader's reason.
SharedLibrary open_toolkit_library(const std::vector<std::string>& names, const char* override_variable, const std::string& what);

// The toolkit's include folder (for NVRTC's -I, when generated code includes cuda_fp16.h): the
// first of $CUDA_HOME/include, $CUDA_PATH/include and /usr/local/cuda/include that holds
// cuda_fp16.h; std::nullopt when none does.
std::optional<std::string> toolkit_include_directory();

}  // namespace kiln::cuda
