// Nvrtc: NVIDIA's runtime compiler for CUDA C++, dlopen'ed (Kiln links no CUDA library).
// compile() turns one source into device code for a GPU architecture: a cubin for an
// architecture NVRTC knows (--gpu-architecture=sm_XX), or, for a device newer than this NVRTC,
// PTX for the newest virtual architecture it knows (compute_XX), which the driver compiles on
// load. A compile error is a kiln::Error carrying NVRTC's error messages (file, line, message,
// the source line; its warnings are counted, not shown).
//
// The library is libnvrtc.so.13 (or .so.12, .so), found as runtime/cuda/library_search.h says
// ($KILN_NVRTC_LIBRARY overrides). NVRTC itself dlopens libnvrtc-builtins.so.<major>.<minor>
// by name when it compiles, which the dynamic loader finds only where the toolkit's folder is
// on its search path; load() preloads it from the toolkit's folder, so the loader finds it
// among the loaded libraries on any machine.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/nvrtc_api.h"
#include "runtime/shared_library.h"

namespace kiln::cuda {

struct DeviceCode {
  std::string image;         // the cubin's bytes, or the PTX text
  bool is_cubin = false;     // false: PTX
  std::string architecture;  // the --gpu-architecture value used: "sm_90" or "compute_90"
  std::string log;           // NVRTC's log (warnings), possibly empty
};

class Nvrtc {
 public:
  // Loads `library` (a name or a path), or searches as the header says when empty. Throws
  // kiln::Error listing what was tried when NVRTC cannot be loaded.
  static std::unique_ptr<Nvrtc> load(const std::string& library = "");

  const NvrtcFunctions& api() const { return api_; }
  const std::filesystem::path& path() const { return library_.path(); }
  int version_major() const { return major_; }
  int version_minor() const { return minor_; }
  std::string version() const { return std::to_string(major_) + "." + std::to_string(minor_); }
  // The real architectures this NVRTC compiles cubins for, ascending: {75, 80, 86, ...}.
  const std::vector<int>& supported_architectures() const { return architectures_; }

  // "sm_<sm>" when NVRTC supports it; "compute_<newest>" for a newer device; kiln::Error for a
  // device older than every architecture NVRTC supports.
  std::string target_architecture(int sm) const;

  // Compiles `source` (named `name` in messages, e.g. "kernels.cu") for device architecture
  // `sm` (80 for sm_80) with extra NVRTC `options` (e.g. "-default-device", "--use_fast_math").
  DeviceCode compile(const std::string& source, const std::string& name, int sm,
                     const std::vector<std::string>& options = {}) const;

 private:
  Nvrtc() = default;
  void check(nvrtcResult result, const char* what) const;
  SharedLibrary library_;
  SharedLibrary builtins_;  // libnvrtc-builtins, preloaded (holds nothing if not found)
  NvrtcFunctions api_{};
  int major_ = 0, minor_ = 0;
  std::vector<int> architectures_;
};

// The process's NVRTC, loaded on first use (a failure is remembered and thrown on every call).
const Nvrtc& nvrtc();

}  // namespace kiln::cuda
