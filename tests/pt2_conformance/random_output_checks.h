// What the OpInfo runner checks instead of values for ops whose results are random or
// uninitialized. PyTorch's own OpInfo tests skip value comparison for these (empty_like's
// memory is whatever the allocator held; rand_like draws from PyTorch's generator, Kiln from
// its Philox generator), so comparing values would compare two draws. Each check is a property
// that a wrong result can fail:
//   empty, empty_like, new_empty, ...   dtype and shape only (the values are undefined)
//   rand_like                            dtype, shape, every value in [0, 1)
//   randn_like                           dtype, shape, every value finite
//   bernoulli                            dtype, shape, every value 0 or 1
//   dropout2d / dropout3d / feature alpha dropout (training): every (N, C) slice of the output
//       is one of the two affine maps of the input slice that PyTorch's output shows (kept:
//       x / (1 - p) or the alpha-dropout affine map; dropped: 0 or alpha dropout's constant),
//       and both occur when PyTorch's output has both (a per-element mask would not pass)
//   rrelu (training)                     x where x >= 0; x * r with r in [0, 1] elsewhere (the
//       samples' slope range is [0, 1]; PyTorch's default [1/8, 1/3] lies inside), with more
//       than one slope among several negative elements (one slope is leaky_relu, not rrelu)
// The op is the OpInfo entry's key; a property check that matches PyTorch's values exactly
// passes too (p = 0 and p = 1 dropout are deterministic).
#pragma once

#include <map>
#include <string>

#include "kiln/tensor.h"

namespace kiln::pt2_conformance {

enum class OutputCheck { values, shape_and_dtype, unit_interval, finite, zero_or_one, feature_mask, random_slope };

// How the outputs of the OpInfo entry `op` are checked.
OutputCheck output_check(const std::string& op);

// Empty when `actual` passes `check` against PyTorch's `expected` (values: within atol + rtol *
// |expected|); `inputs` are the sample's inputs (the feature mask and the random slope read
// the one input). Else the problem in words.
std::string check_output(OutputCheck check, const Tensor& expected, const Tensor& actual,
                         const std::map<std::string, Tensor>& inputs, double atol, double rtol);

}  // namespace kiln::pt2_conformance
