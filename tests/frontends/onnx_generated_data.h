// Where the ONNX test data too large to commit lives: scripts/make-onnx-test-data (a step of
// the test set-up, scripts/test) writes it into .cache/onnx-tests/ of the source tree, or into
// $KILN_ONNX_TEST_DATA (relative paths from the source tree), and marks it complete last:
//   node/      ONNX's backend node tests (tests/onnx_conformance/);
//   resnet18/  a real ResNet-18 with random weights, an input and ONNX Runtime's output.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "tests/support/test_paths.h"

namespace kiln::frontends::testing {

// The folder, or nullopt when the set-up step has not finished writing it.
inline std::optional<std::filesystem::path> generated_onnx_test_data() {
  namespace fs = std::filesystem;
  const char* configured = std::getenv("KILN_ONNX_TEST_DATA");
  fs::path data = configured && *configured ? fs::path(configured) : fs::path(".cache") / "onnx-tests";
  if (data.is_relative()) data = fs::path(KILN_SOURCE_DIR) / data;
  std::error_code status;
  if (!fs::exists(data / "complete", status)) return std::nullopt;
  return data;
}

// What to tell a user when generated_onnx_test_data() is nullopt.
inline std::string missing_generated_onnx_test_data() {
  return "the generated ONNX test data is not there (.cache/onnx-tests/ in the source tree, or $KILN_ONNX_TEST_DATA): "
         "run the test set-up step scripts/make-onnx-test-data (scripts/test runs it)";
}

// scripts/test sets KILN_ONNX_TEST_DATA_REQUIRED=1 after writing the data: a test that needs
// it then fails, rather than skips, when it is missing.
inline bool generated_onnx_test_data_required() {
  const char* required = std::getenv("KILN_ONNX_TEST_DATA_REQUIRED");
  return required && std::string(required) == "1";
}

}  // namespace kiln::frontends::testing
