// The tolerance check of `kiln run --check` and `kiln verify` (compiler/tensor_comparison.h).
#include "compiler/tensor_comparison.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kiln::compiler {

TensorComparison compare_tensors(const Tensor& got, const Tensor& expected, const Tolerance& tolerance) {
  TensorComparison result;
  if (got.dtype() != expected.dtype() || got.sizes() != expected.sizes()) {
    result.same_type = false;
    return result;
  }
  Tensor a = got.contiguous().to(DType::f64), b = expected.contiguous().to(DType::f64);
  const double* pa = a.data<double>();
  const double* pb = b.data<double>();
  result.exact = !is_floating(expected.dtype());
  result.numel = a.numel();
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = pa[i], y = pb[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    double diff = std::isnan(x) || std::isnan(y) ? INFINITY : std::fabs(x - y);
    if (x == y) diff = 0;  // equal infinities
    result.max_abs = std::max(result.max_abs, diff);
    if (y != 0) result.max_rel = std::max(result.max_rel, diff / std::fabs(y));
    bool ok = result.exact ? diff == 0 : diff <= tolerance.atol + tolerance.rtol * std::fabs(y);
    if (!ok) ++result.bad;
  }
  return result;
}

std::string TensorComparison::problem(const std::string& name, const Tensor& got, const Tensor& expected,
                                      const Tolerance& tolerance) const {
  if (!same_type)
    return "'" + name + "' is " + std::string(dtype_name(got.dtype())) + sizes_to_string(got.sizes()) + ", expected " +
           std::string(dtype_name(expected.dtype())) + sizes_to_string(expected.sizes());
  if (bad == 0) return "";
  std::ostringstream text;
  text << "'" << name << "' has " << bad << " of " << numel << " elements past "
       << (exact ? std::string("exact equality")
                 : "atol " + std::to_string(tolerance.atol) + " + rtol " + std::to_string(tolerance.rtol))
       << " (max abs err " << max_abs << ")";
  return text.str();
}

}  // namespace kiln::compiler
