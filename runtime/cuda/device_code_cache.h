// Device code through the compile cache: NVRTC's output for one CUDA source is stored in
// runtime/compile_cache.h's cache like a CPU artifact, so a second compile of the same kernels
// reads the cubin back instead of running NVRTC (which takes 100s of ms per source). The key
// covers the source, the target architecture, NVRTC's version, the options and Kiln's version.
// An entry holds kernel.cu (for people reading the cache), device.cubin or device.ptx, and
// nvrtc.log; one that fails its checksums is rebuilt by the cache's rules, never trusted.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/cuda/nvrtc.h"

namespace kiln::cuda {

struct CachedDeviceCode {
  DeviceCode code;
  std::string key;
  bool cache_hit = false;
  std::filesystem::path entry;  // the cache entry's directory (empty without a cache)
};

// The cache key of compiling `source` with `nvrtc` for `sm` and `options` (32 hex digits).
std::string device_code_key(const Nvrtc& nvrtc, const std::string& source, int sm, const std::vector<std::string>& options);

// Compiles `source` (see Nvrtc::compile) unless `cache` holds the result; stores it otherwise.
// `cache` may be null: then NVRTC always runs.
CachedDeviceCode compile_device_code(const Nvrtc& nvrtc, CompileCache* cache, const std::string& source,
                                     const std::string& name, int sm, const std::vector<std::string>& options = {});

}  // namespace kiln::cuda
