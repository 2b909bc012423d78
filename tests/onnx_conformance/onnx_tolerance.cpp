// ONNX's backend-test comparison (see onnx_tolerance.h).
#include "tests/onnx_conformance/onnx_tolerance.h"

#include <cmath>
#include <sstream>

namespace kiln::conformance {

std::string difference_at_onnx_tolerance(const Tensor& expected, const Tensor& actual) {
  std::ostringstream out;
  if (expected.dtype() != actual.dtype()) {
    out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
    return out.str();
  }
  if (expected.sizes() != actual.sizes()) {
    out << "sizes " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
    return out.str();
  }
  bool floating = is_floating(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (!floating) {
      if (expected.flat_int(i) != actual.flat_int(i)) {
        out << "element " << i << " is " << actual.flat_int(i) << ", expected " << expected.flat_int(i);
        return out.str();
      }
      continue;
    }
    double e = expected.flat_double(i), a = actual.flat_double(i);
    double allowed = kOnnxAtol + kOnnxRtol * std::fabs(e);
    bool same = std::isnan(e) ? std::isnan(a) : std::isinf(e) ? a == e : std::fabs(a - e) <= allowed;
    if (!same) {
      out.precision(9);
      out << "element " << i << " is " << a << ", expected " << e << " (|difference| " << std::fabs(a - e)
          << ", allowed " << allowed << ")";
      return out.str();
    }
  }
  return "";
}

}  // namespace kiln::conformance
