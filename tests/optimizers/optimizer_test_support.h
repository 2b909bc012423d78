// Helpers shared by the optimizer tests: the compile options (a cache under the build
// directory, so reruns load instead of compiling) and a closeness check.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "compiler/training/fused_optimizer.h"
#include "kiln/tensor.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::training::testing {

inline FusedOptimizerOptions test_optimizer_options() {
  FusedOptimizerOptions options;
  options.compile.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

// Every element of `actual` within `relative` * max(max|expected|, scale) of `expected` (same
// shape). `scale`: the size of the values the computation combined, when the result may have
// cancelled to far less (a parameter of one element that a step brought near zero).
inline ::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected, double relative,
                                            const std::string& what, double scale = 0) {
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure() << what << ": shape " << sizes_to_string(actual.sizes()) << " vs "
                                         << sizes_to_string(expected.sizes());
  double largest = scale;
  for (int64_t i = 0; i < expected.numel(); ++i) largest = std::max(largest, std::abs(expected.flat_double(i)));
  const double tolerance = relative * std::max(largest, 1e-30);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double a = actual.flat_double(i), e = expected.flat_double(i);
    if (!(std::abs(a - e) <= tolerance))
      return ::testing::AssertionFailure() << what << ": element " << i << " is " << a << ", expected " << e
                                           << " (tolerance " << tolerance << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::training::testing
