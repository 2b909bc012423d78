// Every kernel the CUDA code generator prints for the core-op cases, the samples and a few
// random graphs compiles with NVRTC for sm_80 and sm_90 (no GPU needed). NVRTC is dlopen'ed
// here through its C API (a few declarations, local to this test): the runtime's loader
// (runtime/cuda/) was not committed when this test was written. Without libnvrtc the test is
// skipped, saying so.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/lowering.h"
#include "ir/model_file.h"
#include "tests/cuda_codegen/emulated_model.h"
#include "tests/support/op_coverage_cases.h"
#include "tests/support/random_graph.h"

namespace kiln::codegen::cuda {
namespace {

namespace fs = std::filesystem;

// The part of NVRTC's C API this test calls (nvrtc.h).
struct NvrtcLibrary {
  using Create = int (*)(void**, const char*, const char*, int, const char* const*, const char* const*);
  using Compile = int (*)(void*, int, const char* const*);
  using LogSize = int (*)(void*, size_t*);
  using Log = int (*)(void*, char*);
  using Destroy = int (*)(void**);
  void* handle = nullptr;
  Create create = nullptr;
  Compile compile = nullptr;
  LogSize log_size = nullptr;
  Log log = nullptr;
  Destroy destroy = nullptr;
  std::string include_dir;

  static const NvrtcLibrary& get() {
    static NvrtcLibrary library = [] {
      NvrtcLibrary l;
      std::vector<std::string> homes;
      if (const char* home = std::getenv("CUDA_HOME")) homes.push_back(home);
      homes.push_back("/usr/local/cuda");
      for (const std::string& name : {std::string("libnvrtc.so.13"), std::string("libnvrtc.so.12"), std::string("libnvrtc.so")}) {
        l.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
        for (size_t i = 0; !l.handle && i < homes.size(); ++i) {
          l.handle = dlopen((homes[i] + "/lib64/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
        }
        if (l.handle) break;
      }
      for (const std::string& home : homes) {
        if (l.include_dir.empty() && fs::exists(home + "/include/cuda_fp16.h")) l.include_dir = home + "/include";
      }
      if (!l.handle) return l;
      l.create = reinterpret_cast<Create>(dlsym(l.handle, "nvrtcCreateProgram"));
      l.compile = reinterpret_cast<Compile>(dlsym(l.handle, "nvrtcCompileProgram"));
      l.log_size = reinterpret_cast<LogSize>(dlsym(l.handle, "nvrtcGetProgramLogSize"));
      l.log = reinterpret_cast<Log>(dlsym(l.handle, "nvrtcGetProgramLog"));
      l.destroy = reinterpret_cast<Destroy>(dlsym(l.handle, "nvrtcDestroyProgram"));
      return l;
    }();
    return library;
  }

  // "" when `module` compiles for sm_<sm>, else NVRTC's log.
  std::string compile_module(const CudaModule& module, int sm) const {
    std::vector<std::string> options = module.nvrtc_options;
    options.push_back("--gpu-architecture=sm_" + std::to_string(sm));
    if (module.uses_half) options.push_back("-I" + include_dir);
    std::vector<const char*> pointers;
    for (const std::string& o : options) pointers.push_back(o.c_str());
    void* program = nullptr;
    if (create(&program, module.source.c_str(), "kernels.cu", 0, nullptr, nullptr) != 0) return "nvrtcCreateProgram failed";
    int rc = compile(program, int(pointers.size()), pointers.data());
    size_t size = 0;
    log_size(program, &size);
    std::string text(size, '\0');
    log(program, text.data());
    destroy(&program);
    return rc == 0 ? "" : "NVRTC (sm_" + std::to_string(sm) + "):\n" + text.substr(0, 4000);
  }
};

void expect_compiles(const ir::Graph& graph, const std::string& what) {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::get();
  if (!nvrtc.handle) GTEST_SKIP() << "libnvrtc was not found (CUDA_HOME, /usr/local/cuda/lib64, the library path)";
  CudaModule module = emit_cuda(schedule(lower(testing::simplified(graph))));
  for (int sm : {80, 90}) EXPECT_EQ(nvrtc.compile_module(module, sm), "") << what;
}

TEST(CudaNvrtc, EveryCoreOpCaseCompilesForSm80AndSm90) {
  for (const test_support::OpCoverageCase& c : test_support::op_coverage_cases()) expect_compiles(c.graph, c.name);
}

TEST(CudaNvrtc, EverySampleCompilesForSm80AndSm90) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  for (const char* sample : {"mlp", "cnn", "attention", "inplace"}) {
    expect_compiles(ir::load_model((dir / (std::string(sample) + ".kiln")).string()), sample);
  }
}

TEST(CudaNvrtc, RandomGraphsCompileForSm80AndSm90) {
  for (uint64_t seed = 0; seed < 8; ++seed) expect_compiles(test_support::random_graph(seed), "seed " + std::to_string(seed));
}

}  // namespace
}  // namespace kiln::codegen::cuda
