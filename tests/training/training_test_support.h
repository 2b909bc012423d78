// Shared helpers of the module API tests: the PyTorch golden files of tests/data/training/
// (written by scripts/make_training_goldens.py), tensor comparison, and the compile options
// of the CPU backend runs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "compiler/compile_driver.h"
#include "kiln/safetensors.h"
#include "kiln/tensor.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::training_test {

inline std::string data_path(const std::string& file) {
  return (std::filesystem::path(KILN_SOURCE_DIR) / "tests" / "data" / "training" / file).string();
}

// The "input.*" or "expected.*" entries of NAME.io.safetensors, by the rest of their name.
inline std::map<std::string, Tensor> golden_entries(const std::string& name, const std::string& kind) {
  std::map<std::string, Tensor> entries;
  for (auto& [key, value] : read_safetensors(data_path(name + ".io.safetensors"))) {
    if (key.rfind(kind + ".", 0) == 0) entries.emplace(key.substr(kind.size() + 1), value);
  }
  return entries;
}

// Empty when `actual` matches `expected` within |a - e| <= atol + rtol |e| (integers exactly).
inline std::string mismatch(const Tensor& expected, const Tensor& actual, double rtol = 1e-4, double atol = 1e-5) {
  if (expected.sizes() != actual.sizes()) {
    return "sizes " + sizes_to_string(actual.sizes()) + ", expected " + sizes_to_string(expected.sizes());
  }
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = expected.flat_double(i), a = actual.flat_double(i);
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
      return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(e);
    }
  }
  return "";
}

inline CompileOptions compile_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

}  // namespace kiln::training_test
