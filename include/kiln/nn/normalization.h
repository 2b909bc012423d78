// Normalization modules: torch.nn.BatchNorm2d and torch.nn.LayerNorm, with PyTorch's
// parameter and buffer names (weight = ones, bias = zeros; running_mean = zeros,
// running_var = ones, num_batches_tracked = 0 as i64).
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// In training mode, normalizes with the batch's statistics and records the updates of its
// buffers as in-place ops on them (running stats by `momentum`, num_batches_tracked += 1);
// in eval mode, normalizes with the running statistics and records no update.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true);
  // x [N, num_features, H, W].
  Var forward(const Var& input) override;

 private:
  int64_t num_features_;
  double eps_;
  double momentum_;
};

// Normalizes over the last normalized_shape.size() dims.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);
  Var forward(const Var& input) override;

 private:
  std::vector<int64_t> normalized_shape_;
  double eps_;
};

}  // namespace kiln::nn
