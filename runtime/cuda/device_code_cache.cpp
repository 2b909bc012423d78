// Device code on disk and through the compile cache. See runtime/cuda/device_code_cache.h.
#include "runtime/cuda/device_code_cache.h"

#include <fstream>

#include "runtime/atomic_file.h"
#include "runtime/checksum.h"
#include "kiln/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::cuda {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSourceFile = "kernel.cu";

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail("cannot write ", path.string());
}

}  // namespace

void write_device_code(const fs::path& directory, const DeviceCode& code) {
  write_bytes(directory / (code.is_cubin ? kCubinFile : kPtxFile), code.image);
  write_bytes(directory / kNvrtcLogFile, code.log);
}

std::optional<DeviceCode> read_device_code(const fs::path& directory, const std::string& architecture) {
  std::error_code error;
  DeviceCode code;
  code.is_cubin = fs::exists(directory / kCubinFile, error);
  fs::path image = directory / (code.is_cubin ? kCubinFile : kPtxFile);
  if (!fs::exists(image, error)) return std::nullopt;
  code.image = read_file(image.string());
  if (fs::exists(directory / kNvrtcLogFile, error)) code.log = read_file((directory / kNvrtcLogFile).string());
  code.architecture = architecture;
  return code;
}

std::string device_code_key_text(const Nvrtc& nvrtc, const std::string& source, int sm,
                                 const std::vector<std::string>& options) {
  std::string content = "kiln " KILN_VERSION "\nnvrtc " + nvrtc.version() + "\narch " + nvrtc.target_architecture(sm) + "\noptions";
  for (const std::string& option : options) content += " " + option;
  return content + "\n" + source;
}

std::string device_code_key(const Nvrtc& nvrtc, const std::string& source, int sm, const std::vector<std::string>& options) {
  std::string content = device_code_key_text(nvrtc, source, sm, options);
  Checksum64 a(0), b(0x9E3779B97F4A7C15ULL);
  a.update(content.data(), content.size());
  b.update(content.data(), content.size());
  return checksum_hex(a.digest()) + checksum_hex(b.digest());
}

CachedDeviceCode compile_device_code(const Nvrtc& nvrtc, CompileCache* cache, const std::string& source,
                                     const std::string& name, int sm, const std::vector<std::string>& options) {
  CachedDeviceCode result;
  if (cache == nullptr) {
    result.code = nvrtc.compile(source, name, sm, options);
    return result;
  }
  result.key = device_code_key(nvrtc, source, sm, options);
  std::string architecture = nvrtc.target_architecture(sm);
  bool built = false;
  CacheEntry entry = cache->get_or_build(
      result.key,
      [&](const fs::path& staging) {
        result.code = nvrtc.compile(source, name, sm, options);
        built = true;
        write_bytes(staging / kSourceFile, source);
        write_device_code(staging, result.code);
      },
      [&](const fs::path& found) { return fs::exists(found / kCubinFile) || fs::exists(found / kPtxFile); });
  result.entry = entry.directory;
  result.cache_hit = entry.hit;
  if (built) return result;
  std::optional<DeviceCode> cached = read_device_code(entry.directory, architecture);
  if (!cached) fail("compile cache entry ", entry.directory.string(), " lost its device code while being read");
  result.code = std::move(*cached);
  return result;
}

}  // namespace kiln::cuda
