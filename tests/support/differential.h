// Helpers of differential tests (a backend against the reference interpreter): reproducible
// random input tensors and a tolerance comparison that says where two results differ.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/tensor.h"

namespace kiln::test_support {

// Floats uniform in [low, high] (on a grid of 1000003 steps), integers in [-4, 4], bools fair.
Tensor random_tensor(const Sizes& sizes, DType dtype, uint64_t seed, double low = -2, double high = 2);

// Empty when `actual` matches `expected`: same dtype and sizes, floats within
// atol + rtol * |expected| (NaN matching NaN), integers and bools exactly; otherwise the first
// element that differs, with both values.
std::string compare_tensors(const Tensor& expected, const Tensor& actual, double rtol, double atol);

}  // namespace kiln::test_support
