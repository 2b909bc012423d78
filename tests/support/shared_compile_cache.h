// The compile cache that the test suites share across runs, build folders and clean clones: the
// conformance and model suites (label conformance: ONNX's node tests, PyTorch's OpInfo samples,
// the exported models) and the suites that compile small graphs by the hundred (the CPU backend,
// the API, training, the optimizers): thousands of small generated programs, each compiled once
// per change of its code, as ccache compiles Kiln's own objects once. CI builds a fresh clone
// each run; a cache in its build folder started empty every time. A cache entry is keyed by
// everything that decides its binary (Kiln's version and ABI, the ISA, the compiler (the
// in-process one by its bytes) and flags, the generated source: compiler/targets/cpu_target.cpp),
// so a hit is the module a compile would build now; the suites check the numbers it computes
// either way, and the compile step itself, hits, misses and damaged entries are tested in private
// caches (cpu_backend_test.cpp's CpuBackendCache, the cpu target's own tests). Entries beyond
// CompileCache's size bound ($KILN_CACHE_MAX_BYTES, else 1 GiB) are evicted least recently used
// first.
//
// Where: $KILN_TEST_COMPILE_CACHE, else compile-cache/ in the test data cache that
// scripts/make-pt2-test-data fills ($KILN_TEST_DATA_CACHE, else $XDG_CACHE_HOME/kiln-test-data,
// else ~/.cache/kiln-test-data), else, without a home, `fallback` (in the build tree).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace kiln::test_support {

inline std::filesystem::path shared_compile_cache(const std::filesystem::path& fallback) {
  auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (!variable("KILN_TEST_COMPILE_CACHE").empty()) return variable("KILN_TEST_COMPILE_CACHE");
  if (!variable("KILN_TEST_DATA_CACHE").empty()) return std::filesystem::path(variable("KILN_TEST_DATA_CACHE")) / "compile-cache";
  if (!variable("XDG_CACHE_HOME").empty())
    return std::filesystem::path(variable("XDG_CACHE_HOME")) / "kiln-test-data" / "compile-cache";
  if (!variable("HOME").empty()) return std::filesystem::path(variable("HOME")) / ".cache" / "kiln-test-data" / "compile-cache";
  return fallback;
}

}  // namespace kiln::test_support
