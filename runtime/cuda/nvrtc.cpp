// The dlopen'ed NVRTC. See runtime/cuda/nvrtc.h.
#include "runtime/cuda/nvrtc.h"

#include <algorithm>
#include <mutex>
#include <type_traits>

#include "runtime/cuda/library_search.h"
#include "kiln/error.h"

namespace kiln::cuda {

namespace {

void resolve(const SharedLibrary& library, NvrtcFunctions& api) {
  auto bind = [&](auto& slot, const char* symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(library.symbol(symbol));
  };
  bind(api.nvrtcGetErrorString, "nvrtcGetErrorString");
  bind(api.nvrtcVersion, "nvrtcVersion");
  bind(api.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  bind(api.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
  bind(api.nvrtcCreateProgram, "nvrtcCreateProgram");
  bind(api.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  bind(api.nvrtcCompileProgram, "nvrtcCompileProgram");
  bind(api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  bind(api.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  bind(api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  bind(api.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  bind(api.nvrtcGetPTXSize, "nvrtcGetPTXSize");
  bind(api.nvrtcGetPTX, "nvrtcGetPTX");
}

// Destroys the program however compile() leaves.
struct ProgramGuard {
  const NvrtcFunctions& api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program != nullptr) api.nvrtcDestroyProgram(&program);
  }
};

// NVRTC's log without its warnings: the entries (a message, the source line, a caret, then a
// blank line) that report errors, and the closing "N errors detected" line. All of it when no
// entry matches (an unexpected format).
std::string error_entries(const std::string& log) {
  std::string kept, entry;
  size_t warnings = 0;
  auto flush = [&] {
    if (entry.empty()) return;
    bool is_error = entry.find(": error") != std::string::npos || entry.find("errors detected") != std::string::npos ||
                    entry.find("error detected") != std::string::npos;
    if (is_error) kept += entry;
    else if (entry.find(": warning") != std::string::npos) ++warnings;
    entry.clear();
  };
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    std::string line = log.substr(start, end == std::string::npos ? std::string::npos : end - start + 1);
    start = end == std::string::npos ? log.size() : end + 1;
    if (line == "\n") {
      flush();
      continue;
    }
    entry += line;
  }
  flush();
  if (kept.empty()) return log;
  if (warnings > 0) kept += "(" + std::to_string(warnings) + " warning" + (warnings == 1 ? "" : "s") + " not shown)\n";
  return kept;
}

}  // namespace

std::unique_ptr<Nvrtc> Nvrtc::load(const std::string& library) {
  std::unique_ptr<Nvrtc> nvrtc(new Nvrtc());
  nvrtc->library_ = library.empty()
                        ? open_toolkit_library({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}, "KILN_NVRTC_LIBRARY",
                                               "NVRTC (the CUDA runtime compiler)")
                        : SharedLibrary::open(library);
  resolve(nvrtc->library_, nvrtc->api_);
  nvrtc->check(nvrtc->api_.nvrtcVersion(&nvrtc->major_, &nvrtc->minor_), "nvrtcVersion");
  const std::string builtins = "libnvrtc-builtins.so." + nvrtc->version();
  try {
    nvrtc->builtins_ = open_toolkit_library({builtins}, "KILN_NVRTC_BUILTINS_LIBRARY", builtins);
  } catch (const Error&) {
    // Not in the toolkit's folder either: NVRTC reports it by name when it first compiles.
  }
  int count = 0;
  nvrtc->check(nvrtc->api_.nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  nvrtc->architectures_.resize(size_t(count));
  if (count > 0) nvrtc->check(nvrtc->api_.nvrtcGetSupportedArchs(nvrtc->architectures_.data()), "nvrtcGetSupportedArchs");
  std::sort(nvrtc->architectures_.begin(), nvrtc->architectures_.end());
  return nvrtc;
}

void Nvrtc::check(nvrtcResult result, const char* what) const {
  if (result != NVRTC_SUCCESS) fail("NVRTC error: ", what, ": ", api_.nvrtcGetErrorString(result));
}

std::string Nvrtc::target_architecture(int sm) const {
  if (architectures_.empty()) fail("NVRTC ", version(), " reports no supported GPU architecture");
  if (std::find(architectures_.begin(), architectures_.end(), sm) != architectures_.end()) {
    return "sm_" + std::to_string(sm);
  }
  if (sm > architectures_.back()) return "compute_" + std::to_string(architectures_.back());
  fail("NVRTC ", version(), " cannot compile for sm_", sm, " (it supports sm_", architectures_.front(), " to sm_",
       architectures_.back(), ")");
}

DeviceCode Nvrtc::compile(const std::string& source, const std::string& name, int sm,
                          const std::vector<std::string>& options) const {
  DeviceCode code;
  code.architecture = target_architecture(sm);
  code.is_cubin = code.architecture.rfind("sm_", 0) == 0;
  std::vector<std::string> all_options = {"--gpu-architecture=" + code.architecture};
  all_options.insert(all_options.end(), options.begin(), options.end());
  std::vector<const char*> option_pointers;
  for (const std::string& option : all_options) option_pointers.push_back(option.c_str());

  ProgramGuard guard{api_};
  check(api_.nvrtcCreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  nvrtcResult compiled = api_.nvrtcCompileProgram(guard.program, int(option_pointers.size()), option_pointers.data());
  size_t log_size = 0;
  check(api_.nvrtcGetProgramLogSize(guard.program, &log_size), "nvrtcGetProgramLogSize");
  if (log_size > 1) {
    code.log.resize(log_size);
    check(api_.nvrtcGetProgramLog(guard.program, code.log.data()), "nvrtcGetProgramLog");
    code.log.resize(log_size - 1);  // the trailing NUL
  }
  if (compiled != NVRTC_SUCCESS) {
    fail("NVRTC ", version(), " failed to compile ", name, " for ", code.architecture, " (", api_.nvrtcGetErrorString(compiled),
         "):\n", error_entries(code.log));
  }
  size_t size = 0;
  if (code.is_cubin) {
    check(api_.nvrtcGetCUBINSize(guard.program, &size), "nvrtcGetCUBINSize");
    code.image.resize(size);
    check(api_.nvrtcGetCUBIN(guard.program, code.image.data()), "nvrtcGetCUBIN");
  } else {
    check(api_.nvrtcGetPTXSize(guard.program, &size), "nvrtcGetPTXSize");
    code.image.resize(size);
    check(api_.nvrtcGetPTX(guard.program, code.image.data()), "nvrtcGetPTX");
    if (!code.image.empty() && code.image.back() == '\0') code.image.pop_back();
  }
  return code;
}

const Nvrtc& nvrtc() {
  static std::once_flag once;
  static std::unique_ptr<Nvrtc> loaded;
  static std::string failure;
  std::call_once(once, [] {
    try {
      loaded = Nvrtc::load();
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!loaded) throw Error(failure);
  return *loaded;
}

}  // namespace kiln::cuda
