// torch.nn.Conv2d over kiln::Var (conv.h).
#include "kiln/nn/conv.h"

#include <cmath>

#include "ir/graph.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/error.h"

namespace kiln::nn {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride, Size2 padding,
               Size2 dilation, int64_t groups, bool bias)
    : Module("Conv2d"), in_channels_(in_channels), stride_(stride), padding_(padding), dilation_(dilation),
      groups_(groups) {
  if (groups <= 0 || in_channels % groups != 0 || out_channels % groups != 0) {
    fail("Conv2d: in_channels (", in_channels, ") and out_channels (", out_channels,
         ") must be divisible by groups (", groups, ")");
  }
  Tensor weight = Tensor::empty({out_channels, in_channels / groups, kernel_size.height, kernel_size.width}, DType::f32);
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (bias) {
    Tensor bias_value = Tensor::empty({out_channels}, DType::f32);
    double bound = 1 / std::sqrt(double(init::fan_in(weight)));
    init::uniform_(bias_value, -bound, bound);
    register_parameter("bias", bias_value);
  }
}

Var Conv2d::forward(const Var& input) {
  SourceLocation loc = SourceLocation::current();
  if (input.dim() != 4 || input.meta().shape[1] != ir::SymInt(in_channels_)) {
    fail_in_forward("expected an input of shape [N, " + std::to_string(in_channels_) + ", H, W], got " +
                        input.type_string(),
                    loc);
  }
  Var weight = attribute("weight");  // get_attr nodes in PyTorch's parameter order
  return functional::conv2d(input, weight, optional_attribute("bias"),
                            stride_.to_vector(), padding_.to_vector(), dilation_.to_vector(), groups_);
}

}  // namespace kiln::nn
