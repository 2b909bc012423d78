// Helpers of the ONNX importer's tests: the committed cases under tests/data/onnx/ (written by
// scripts/make_onnx_test_models.py: model.onnx, input_<k>.npy, output_<k>.npy with ONNX
// Runtime's outputs), running a case through the interpreter and the CPU backend, and the
// comparison with ONNX Runtime: floats within 1e-4 of the expected tensor's magnitude (its
// largest |value|), NaN where it has NaN and infinities exactly; integers and bools exactly.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/compile_driver.h"
#include "ir/graph.h"
#include "kiln/npy.h"
#include "kiln/tensor.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::frontends::testing {

namespace fs = std::filesystem;

inline const fs::path kOnnxData = fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "onnx";

// The case folders under tests/data/onnx/<group>, by name, sorted.
inline std::vector<std::string> onnx_cases(const std::string& group) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kOnnxData / group))
    if (fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The numbered .npy files <prefix>_0.npy, <prefix>_1.npy, ... of a case folder.
inline std::vector<Tensor> read_numbered(const fs::path& folder, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int k = 0; fs::exists(folder / (prefix + "_" + std::to_string(k) + ".npy")); ++k)
    tensors.push_back(read_npy((folder / (prefix + "_" + std::to_string(k) + ".npy")).string()));
  return tensors;
}

// The case's inputs by placeholder name (the k-th file feeds the k-th placeholder).
inline std::map<std::string, Tensor> case_inputs(const ir::Graph& graph, const fs::path& folder) {
  std::vector<Tensor> files = read_numbered(folder, "input");
  std::vector<ir::Node*> placeholders = graph.placeholders();
  EXPECT_EQ(files.size(), placeholders.size()) << folder;
  std::map<std::string, Tensor> inputs;
  for (size_t k = 0; k < files.size() && k < placeholders.size(); ++k) inputs[placeholders[k]->target()] = files[k];
  return inputs;
}

// Empty when `actual` matches ONNX Runtime's `expected` (see above); else the first difference.
inline std::string difference_from_reference(const Tensor& expected, const Tensor& actual, double rtol = 1e-4) {
  std::ostringstream out;
  if (expected.dtype() != actual.dtype()) {
    out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
    return out.str();
  }
  if (expected.sizes() != actual.sizes()) {
    out << "sizes " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
    return out.str();
  }
  double magnitude = 0;
  if (is_floating(expected.dtype()))
    for (int64_t i = 0; i < expected.numel(); ++i)
      if (std::isfinite(expected.flat_double(i))) magnitude = std::max(magnitude, std::fabs(expected.flat_double(i)));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (!is_floating(expected.dtype())) {
      if (expected.flat_int(i) != actual.flat_int(i)) {
        out << "element " << i << " is " << actual.flat_int(i) << ", expected " << expected.flat_int(i);
        return out.str();
      }
      continue;
    }
    double e = expected.flat_double(i), a = actual.flat_double(i);
    bool same = std::isnan(e) ? std::isnan(a) : std::isinf(e) ? a == e : std::fabs(a - e) <= rtol * magnitude;
    if (!same) {
      out << "element " << i << " is " << a << ", expected " << e << " (|difference| " << std::fabs(a - e)
          << ", allowed " << rtol * magnitude << ")";
      return out.str();
    }
  }
  return "";
}

inline void expect_outputs_match(const std::vector<Tensor>& expected, const std::vector<Tensor>& actual,
                                 const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < expected.size(); ++k) {
    std::string problem = difference_from_reference(expected[k], actual[k]);
    EXPECT_TRUE(problem.empty()) << what << ", output " << k << ": " << problem;
  }
}

// One compile cache for the suite.
inline CompileOptions onnx_test_compile_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

// The message of the kiln::Error `body` throws ("(no error)" when it throws none).
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "not a kiln::Error: " << error.what();
  }
  return "(no error)";
}

}  // namespace kiln::frontends::testing
