// Comparing a result with a node test's expected output the way ONNX's backend test runner
// does (onnx/backend/test/runner: numpy.testing.assert_allclose with rtol 1e-3, atol 1e-7):
// same dtype and shape; floats within atol + rtol * |expected| of each other, NaN equal to
// NaN and infinities equal to themselves; integers and bools exactly.
#pragma once

#include <string>

#include "kiln/tensor.h"

namespace kiln::conformance {

inline constexpr double kOnnxRtol = 1e-3;
inline constexpr double kOnnxAtol = 1e-7;

// Empty when `actual` matches `expected`, else the first difference in words.
std::string difference_at_onnx_tolerance(const Tensor& expected, const Tensor& actual);

}  // namespace kiln::conformance
