// torch.nn.Conv2d: weight [out_channels, in_channels / groups, kh, kw] (kaiming_uniform with
// a = sqrt(5)) and bias [out_channels] (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), as PyTorch.
#pragma once

#include <cstdint>

#include "kiln/nn/module.h"

namespace kiln::nn {

// A 2-d size given as one number (3 -> 3x3) or as {height, width}, as PyTorch's int-or-tuple.
struct Size2 {
  Size2(int64_t both) : height(both), width(both) {}  // NOLINT: implicit on purpose
  Size2(int64_t height_, int64_t width_) : height(height_), width(width_) {}
  std::vector<int64_t> to_vector() const { return {height, width}; }
  int64_t height;
  int64_t width;
};

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1, Size2 padding = 0,
         Size2 dilation = 1, int64_t groups = 1, bool bias = true);
  // x [N, in_channels, H, W] -> [N, out_channels, H', W'].
  Var forward(const Var& input) override;

 private:
  int64_t in_channels_;
  Size2 stride_, padding_, dilation_;
  int64_t groups_;
};

}  // namespace kiln::nn
