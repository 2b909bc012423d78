// torch.nn.Linear over kiln::Var (linear.h).
#include "kiln/nn/linear.h"

#include <cmath>

#include "ir/graph.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"

namespace kiln::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : Module("Linear"), in_features_(in_features), out_features_(out_features) {
  Tensor weight = Tensor::empty({out_features, in_features}, DType::f32);
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (bias) {
    Tensor bias_value = Tensor::empty({out_features}, DType::f32);
    double bound = in_features > 0 ? 1 / std::sqrt(double(in_features)) : 0;
    init::uniform_(bias_value, -bound, bound);
    register_parameter("bias", bias_value);
  }
}

Var Linear::forward(const Var& input) {
  SourceLocation loc = SourceLocation::current();
  if (input.dim() < 1 || input.meta().shape.back() != ir::SymInt(in_features_)) {
    fail_in_forward("expected an input of shape [..., " + std::to_string(in_features_) + "] (in_features=" +
                        std::to_string(in_features_) + ", out_features=" + std::to_string(out_features_) + "), got " +
                        input.type_string(),
                    loc);
  }
  Var weight = attribute("weight");  // get_attr nodes in PyTorch's parameter order
  return functional::linear(input, weight, optional_attribute("bias"));
}

}  // namespace kiln::nn
