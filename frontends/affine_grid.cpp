// The base grid of affine_grid (affine_grid.h).
#include "frontends/affine_grid.h"

#include <functional>
#include <numeric>

namespace kiln::frontends {

Tensor affine_base_grid(const std::vector<int64_t>& sizes, bool align_corners, DType dtype, SinglePoint single) {
  size_t r = sizes.size();
  int64_t points = std::accumulate(sizes.begin(), sizes.end(), int64_t(1), std::multiplies<int64_t>());
  std::vector<double> values;
  std::vector<int64_t> position(r, 0);
  for (int64_t p = 0; p < points; ++p) {
    for (size_t c = 0; c < r; ++c) {
      size_t d = r - 1 - c;  // x is the last dim
      double n = double(sizes[d]);
      double coordinate = !align_corners ? -1 + (2.0 * double(position[d]) + 1) / n
                          : n > 1        ? -1 + 2.0 * double(position[d]) / (n - 1)
                          : single == SinglePoint::at_centre ? 0.0
                                                             : -1.0;
      values.push_back(coordinate);
    }
    values.push_back(1.0);
    for (size_t d = r; d-- > 0 && ++position[d] == sizes[d];) position[d] = 0;
  }
  return Tensor::from_doubles({points, int64_t(r + 1)}, values, dtype);
}

}  // namespace kiln::frontends
