// How far a result is from the reference's, element by element: the one tolerance check of
// `kiln run --check` and `kiln verify`. Floating outputs compare within atol + rtol * |expected|
// (NaN equals NaN, equal infinities are equal); integer and bool outputs compare exactly.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/tensor.h"

namespace kiln::compiler {

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

struct TensorComparison {
  bool same_type = true;  // dtype and shape agree; the rest is meaningful only then
  double max_abs = 0;
  double max_rel = 0;
  int64_t bad = 0;    // elements past the tolerance
  int64_t numel = 0;
  bool exact = false;  // compared exactly (integer and bool dtypes)
  bool ok() const { return same_type && bad == 0; }
  // What is wrong, for people ("" when ok): "'y' has 3 of 12 elements past atol 1e-05 + rtol
  // 0.0001 (max abs err 0.5)", or the dtypes and shapes that disagree.
  std::string problem(const std::string& name, const Tensor& got, const Tensor& expected, const Tolerance& tolerance) const;
};

TensorComparison compare_tensors(const Tensor& got, const Tensor& expected, const Tolerance& tolerance);

}  // namespace kiln::compiler
