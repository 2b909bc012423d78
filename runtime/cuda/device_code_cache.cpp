// Device code through the compile cache. See runtime/cuda/device_code_cache.h.
#include "runtime/cuda/device_code_cache.h"

#include <fstream>
#include <sstream>

#include "runtime/checksum.h"
#include "runtime/error.h"

#ifndef KILN_VERSION
#define KILN_VERSION "0.0.0"
#endif

namespace kiln::cuda {

namespace {

constexpr const char* kSourceFile = "kernel.cu";
constexpr const char* kCubinFile = "device.cubin";
constexpr const char* kPtxFile = "device.ptx";
constexpr const char* kLogFile = "nvrtc.log";

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) fail("cannot write ", path.string());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The device code of a verified entry; false when it holds neither image (an entry of another
// layout), which the caller rebuilds.
bool read_entry(const std::filesystem::path& entry, DeviceCode& code, const std::string& architecture) {
  namespace fs = std::filesystem;
  code.is_cubin = fs::exists(entry / kCubinFile);
  fs::path image = entry / (code.is_cubin ? kCubinFile : kPtxFile);
  if (!fs::exists(image)) return false;
  code.image = read_file(image);
  code.log = read_file(entry / kLogFile);
  code.architecture = architecture;
  return true;
}

}  // namespace

std::string device_code_key(const Nvrtc& nvrtc, const std::string& source, int sm, const std::vector<std::string>& options) {
  std::string content = "kiln " KILN_VERSION "\nnvrtc " + nvrtc.version() + "\narch " + nvrtc.target_architecture(sm) + "\noptions";
  for (const std::string& option : options) content += " " + option;
  content += "\n" + source;
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
  auto hit = cache->lookup(result.key);
  CacheLock lock;
  if (!hit) {
    lock = cache->lock(result.key);
    hit = cache->lookup(result.key);  // built by another process while we waited
  }
  if (hit && read_entry(*hit, result.code, architecture)) {
    result.cache_hit = true;
    result.entry = *hit;
    return result;
  }
  if (!lock.held()) lock = cache->lock(result.key);
  result.code = nvrtc.compile(source, name, sm, options);
  std::filesystem::path staging = cache->make_staging_directory();
  write_file(staging / kSourceFile, source);
  write_file(staging / (result.code.is_cubin ? kCubinFile : kPtxFile), result.code.image);
  write_file(staging / kLogFile, result.code.log);
  result.entry = cache->publish(result.key, staging);
  return result;
}

}  // namespace kiln::cuda
