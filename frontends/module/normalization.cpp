// torch.nn.BatchNorm2d and torch.nn.LayerNorm over kiln::Var (normalization.h).
#include "kiln/nn/normalization.h"

#include "ir/graph.h"
#include "kiln/nn/functional.h"

namespace kiln::nn {

BatchNorm2d::BatchNorm2d(int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats)
    : Module("BatchNorm2d"), num_features_(num_features), eps_(eps), momentum_(momentum) {
  if (affine) {
    register_parameter("weight", Tensor::full({num_features}, 1, DType::f32));
    register_parameter("bias", Tensor::zeros({num_features}, DType::f32));
  }
  if (track_running_stats) {
    register_buffer("running_mean", Tensor::zeros({num_features}, DType::f32));
    register_buffer("running_var", Tensor::full({num_features}, 1, DType::f32));
    register_buffer("num_batches_tracked", Tensor::zeros({}, DType::i64));
  }
}

Var BatchNorm2d::forward(const Var& input) {
  SourceLocation loc = SourceLocation::current();
  if (input.dim() != 4 || input.meta().shape[1] != ir::SymInt(num_features_)) {
    fail_in_forward("expected an input of shape [N, " + std::to_string(num_features_) + ", H, W], got " +
                        input.type_string(),
                    loc);
  }
  bool tracking = has_attribute("running_mean");
  // As PyTorch: batch statistics in training, and always when no running statistics are kept.
  bool use_batch_stats = is_training() || !tracking;
  Var weight = optional_attribute("weight");
  Var bias = optional_attribute("bias");
  Var running_mean, running_var;
  if (tracking) {
    running_mean = attribute("running_mean");
    running_var = attribute("running_var");
  }
  if (is_training() && tracking) attribute("num_batches_tracked").add_(1);
  return functional::batch_norm(input, running_mean, running_var, weight, bias, use_batch_stats, momentum_, eps_);
}

LayerNorm::LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine, bool bias)
    : Module("LayerNorm"), normalized_shape_(std::move(normalized_shape)), eps_(eps) {
  if (elementwise_affine) {
    register_parameter("weight", Tensor::full(normalized_shape_, 1, DType::f32));
    if (bias) register_parameter("bias", Tensor::zeros(normalized_shape_, DType::f32));
  }
}

Var LayerNorm::forward(const Var& input) {
  Var weight = optional_attribute("weight");  // get_attr nodes in PyTorch's parameter order
  return functional::layer_norm(input, normalized_shape_, weight, optional_attribute("bias"), eps_);
}

}  // namespace kiln::nn
