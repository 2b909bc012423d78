// What oneDNN ran during a call, for the tests of the cpu target's library paths: its verbose log
// (one "exec" line per primitive, naming the primitive's kind and kernel), and whether it runs its
// AVX-512 kernels here, which decides the paths Kiln's generated code takes around it
// (codegen/cpp/kiln_dnnl.h: nChw8c convolutions, Winograd, the few-row products).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "runtime/cpu_features.h"

namespace kiln::test_support {

// oneDNN's verbose log of what it ran while `run` ran; empty where libdnnl cannot be found. A
// module links libdnnl.so.2, so this process's copy of it is the one the module calls.
inline std::string onednn_log_of(const std::function<void()>& run) {
  void* library = dlopen("libdnnl.so.2", RTLD_NOW);
  auto set_verbose = library ? reinterpret_cast<int (*)(int)>(dlsym(library, "dnnl_set_verbose")) : nullptr;
  if (!set_verbose) {
    run();
    return "";
  }
  set_verbose(1);
  testing::internal::CaptureStdout();
  run();
  std::string log = testing::internal::GetCapturedStdout();
  set_verbose(0);
  return log;
}

// Whether oneDNN runs its AVX-512 kernels here: the CPU has AVX-512 (F, BW, VL, DQ), as Kiln's
// avx512 ISA needs, and ONEDNN_MAX_CPU_ISA does not hold oneDNN below it (tests/CMakeLists.txt
// runs some tests so). Without them oneDNN has no f32 Winograd kernels, runs a direct convolution
// of several kernel points on nChw8c, and its matmul is its older gemm kernel.
inline bool onednn_has_avx512() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  return host_supports(Isa::avx512) && (!cap || std::string_view(cap).find("AVX512") != std::string_view::npos ||
                                        std::string_view(cap) == "ALL");
}

}  // namespace kiln::test_support
