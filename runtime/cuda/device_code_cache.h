// Device code on disk and through the compile cache. NVRTC's output for one CUDA source is kept
// in files, the same in a cache entry and in a cuda target's artifact directory: the image
// (device.cubin, or device.ptx for a device newer than the NVRTC) and nvrtc.log.
// compile_device_code stores it in runtime/compile_cache.h's cache (CompileCache::get_or_build)
// so that a second compile of the same kernels reads the image back instead of running NVRTC
// (100s of ms per source); the key covers the source, the target architecture, NVRTC's version,
// the options and Kiln's version. Its entries also hold kernel.cu (for people reading the
// cache); one that fails its checksums is rebuilt by the cache's rules, never trusted.
// (The cuda target caches whole artifacts, plan included, through the same get_or_build:
// compiler/targets/cuda_target.h.)
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "runtime/compile_cache.h"
#include "runtime/cuda/nvrtc.h"

namespace kiln::cuda {

inline constexpr const char* kCubinFile = "device.cubin";
inline constexpr const char* kPtxFile = "device.ptx";
inline constexpr const char* kNvrtcLogFile = "nvrtc.log";

// Writes code.image (as device.cubin or device.ptx) and code.log into `directory`.
void write_device_code(const std::filesystem::path& directory, const DeviceCode& code);
// The device code in `directory` (architecture as given; an absent log reads as empty), or
// std::nullopt when it holds neither image.
std::optional<DeviceCode> read_device_code(const std::filesystem::path& directory, const std::string& architecture);

struct CachedDeviceCode {
  DeviceCode code;
  std::string key;
  bool cache_hit = false;
  std::filesystem::path entry;  // the cache entry's directory (empty without a cache)
};

// The text the cache key of compiling `source` with `nvrtc` for `sm` and `options` hashes.
std::string device_code_key_text(const Nvrtc& nvrtc, const std::string& source, int sm,
                                 const std::vector<std::string>& options);
// That key (32 hex digits).
std::string device_code_key(const Nvrtc& nvrtc, const std::string& source, int sm, const std::vector<std::string>& options);

// Compiles `source` (see Nvrtc::compile) unless `cache` holds the result; stores it otherwise.
// `cache` may be null: then NVRTC always runs.
CachedDeviceCode compile_device_code(const Nvrtc& nvrtc, CompileCache* cache, const std::string& source,
                                     const std::string& name, int sm, const std::vector<std::string>& options = {});

}  // namespace kiln::cuda
