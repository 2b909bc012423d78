// The base grid of affine_grid, shared by the ONNX (AffineGrid) and torch.export
// (affine_grid_generator) importers: every point of a grid of `sizes` (D, H, W or H, W) as
// normalized coordinates, x first, then 1: [prod(sizes), r + 1], which a product with theta^T
// maps to the sampling grid.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::frontends {

// How a dim of size 1 is placed when corners align: at -1 (ONNX's linspace(-1, 1, 1)) or at 0
// (PyTorch's affine_grid, which places a single point at the centre either way).
enum class SinglePoint { at_minus_one, at_centre };

Tensor affine_base_grid(const std::vector<int64_t>& sizes, bool align_corners, DType dtype, SinglePoint single);

}  // namespace kiln::frontends
