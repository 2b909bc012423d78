// Reference kernels of the losses, computed exactly as PyTorch defines them: nll_loss (class
// weights, ignore_index; 'mean' divides by the summed weights of the non-ignored targets),
// cross_entropy (log_softmax over the class dim, then nll; class-probability targets; label
// smoothing mixed in the way PyTorch mixes it, including its interplay with weights), and
// mse_loss.
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

// Input [C], [N, C] or [N, C, d1, ...] seen as batch x classes x spatial.
struct ClassLayout {
  int64_t batch = 1, classes = 0, spatial = 1;
  Sizes element_shape;  // the input's shape without the class dim
  size_t at(int64_t n, int64_t c, int64_t s) const { return size_t((n * classes + c) * spatial + s); }
  size_t element(int64_t n, int64_t s) const { return size_t(n * spatial + s); }
};

ClassLayout class_layout(const KernelCall& call, const Tensor& input) {
  if (!is_floating(input.dtype()))
    call.fail(call.op().name(), " expects a floating-point input, but got ", dtype_name(input.dtype()));
  if (input.dim() == 0) call.fail(call.op().name(), ": input tensor should be 1-D or more");
  ClassLayout layout;
  if (input.dim() == 1) {
    layout.classes = input.size(0);
    return layout;
  }
  layout.batch = input.size(0);
  layout.classes = input.size(1);
  layout.element_shape = {input.size(0)};
  for (int64_t d = 2; d < input.dim(); ++d) {
    layout.spatial *= input.size(d);
    layout.element_shape.push_back(input.size(d));
  }
  return layout;
}

// Class weights (1 each when None).
std::vector<double> class_weights(const KernelCall& call, const ClassLayout& layout) {
  if (call.is_none(2)) return std::vector<double>(size_t(layout.classes), 1.0);
  const Tensor& weight = call.tensor(2);
  if (weight.dim() != 1 || weight.size(0) != layout.classes)
    call.fail("weight tensor should be defined either for all ", layout.classes,
              " classes or no classes but got weight tensor of shape: ", sizes_to_string(weight.sizes()));
  return to_doubles(weight);
}

// Target class indices, checked against the number of classes (ignore_index excepted).
std::vector<int64_t> class_targets(const KernelCall& call, const ClassLayout& layout, int64_t ignore_index) {
  const Tensor& target = call.tensor(1);
  if (is_floating(target.dtype()) || target.dtype() == DType::boolean)
    call.fail("expected target to hold class indices (an integer tensor), got ", dtype_name(target.dtype()));
  if (target.sizes() != layout.element_shape)
    call.fail("expected target of shape ", sizes_to_string(layout.element_shape), ", got ",
              sizes_to_string(target.sizes()));
  std::vector<int64_t> targets = to_ints(target);
  for (int64_t t : targets)
    if (t != ignore_index && (t < 0 || t >= layout.classes))
      call.fail("target ", t, " is out of bounds for ", layout.classes, " classes");
  return targets;
}

// Reduces per-element losses: 'none' keeps them, 'sum' adds, 'mean' divides by `divisor`.
Tensor reduce_loss(const KernelCall& call, const std::string& reduction, const std::vector<double>& losses,
                   const Sizes& shape, double divisor, DType dtype) {
  if (reduction == "none") return from_doubles(shape, dtype, losses);
  if (reduction != "sum" && reduction != "mean")
    call.fail("'", reduction, "' is not a valid value for reduction (expected 'none', 'mean' or 'sum')");
  double sum = 0;
  for (double loss : losses) sum += loss;
  double value = reduction == "sum" ? sum : sum / divisor;
  return from_doubles({}, dtype, std::span<const double>(&value, 1));
}

// Log-probabilities over the class dim (log_softmax with the max subtracted), row-major.
std::vector<double> log_probabilities(const Tensor& input, const ClassLayout& layout) {
  std::vector<double> x = to_doubles(input);
  for (int64_t n = 0; n < layout.batch; ++n)
    for (int64_t s = 0; s < layout.spatial; ++s) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < layout.classes; ++c) max = std::max(max, x[layout.at(n, c, s)]);
      double sum = 0;
      for (int64_t c = 0; c < layout.classes; ++c) sum += std::exp(x[layout.at(n, c, s)] - max);
      double log_sum = std::log(sum);
      for (int64_t c = 0; c < layout.classes; ++c) x[layout.at(n, c, s)] = x[layout.at(n, c, s)] - max - log_sum;
    }
  return x;
}

// Per-element nll and the summed weights of the non-ignored targets.
struct NllTerms {
  std::vector<double> losses;
  double weight_sum = 0;
};
NllTerms nll_terms(const std::vector<double>& log_probs, const ClassLayout& layout, const std::vector<int64_t>& targets,
                   const std::vector<double>& weights, int64_t ignore_index) {
  NllTerms terms;
  terms.losses.assign(targets.size(), 0.0);
  for (int64_t n = 0; n < layout.batch; ++n)
    for (int64_t s = 0; s < layout.spatial; ++s) {
      int64_t t = targets[layout.element(n, s)];
      if (t == ignore_index) continue;
      double w = weights[size_t(t)];
      terms.losses[layout.element(n, s)] = -w * log_probs[layout.at(n, t, s)];
      terms.weight_sum += w;
    }
  return terms;
}

Tensor nll_loss(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  ClassLayout layout = class_layout(call, input);
  int64_t ignore_index = call.int_arg(4);
  std::vector<double> weights = class_weights(call, layout);
  std::vector<int64_t> targets = class_targets(call, layout, ignore_index);
  NllTerms terms = nll_terms(to_doubles(input), layout, targets, weights, ignore_index);
  return reduce_loss(call, call.string_arg(3), terms.losses, layout.element_shape, terms.weight_sum, input.dtype());
}

Tensor cross_entropy(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& target = call.tensor(1);
  ClassLayout layout = class_layout(call, input);
  const std::string& reduction = call.string_arg(3);
  int64_t ignore_index = call.int_arg(4);
  double smoothing = call.float_arg(5);
  if (!(smoothing >= 0 && smoothing <= 1)) call.fail("label_smoothing must be between 0.0 and 1.0, got ", smoothing);
  std::vector<double> weights = class_weights(call, layout);
  std::vector<double> log_probs = log_probabilities(input, layout);
  double classes = double(layout.classes);

  if (is_floating(target.dtype())) {
    // Class probabilities: loss = -sum_c w_c * p_c * log q_c with p smoothed toward uniform;
    // 'mean' divides by the number of elements (batch x spatial), not by weights.
    if (target.sizes() != input.sizes())
      call.fail("expected class-probability target of shape ", sizes_to_string(input.sizes()), ", got ",
                sizes_to_string(target.sizes()));
    std::vector<double> p = to_doubles(target);
    std::vector<double> losses(static_cast<size_t>(layout.batch * layout.spatial), 0.0);
    for (int64_t n = 0; n < layout.batch; ++n)
      for (int64_t s = 0; s < layout.spatial; ++s)
        for (int64_t c = 0; c < layout.classes; ++c) {
          double probability = p[layout.at(n, c, s)] * (1 - smoothing) + smoothing / classes;
          losses[layout.element(n, s)] -= weights[size_t(c)] * probability * log_probs[layout.at(n, c, s)];
        }
    return reduce_loss(call, reduction, losses, layout.element_shape, double(layout.batch * layout.spatial),
                       input.dtype());
  }

  std::vector<int64_t> targets = class_targets(call, layout, ignore_index);
  NllTerms nll = nll_terms(log_probs, layout, targets, weights, ignore_index);
  if (smoothing == 0)
    return reduce_loss(call, reduction, nll.losses, layout.element_shape, nll.weight_sum, input.dtype());

  // PyTorch: (1 - eps) * nll(reduced) + eps / C * smooth(reduced), where
  // smooth[n, s] = -sum_c w_c * log q[n, c, s] (0 for ignored targets) and its 'mean'
  // divides by the summed weights of the targets (their count without weights).
  std::vector<double> smooth(nll.losses.size(), 0.0);
  for (int64_t n = 0; n < layout.batch; ++n)
    for (int64_t s = 0; s < layout.spatial; ++s) {
      if (targets[layout.element(n, s)] == ignore_index) continue;
      double sum = 0;
      for (int64_t c = 0; c < layout.classes; ++c) sum += weights[size_t(c)] * log_probs[layout.at(n, c, s)];
      smooth[layout.element(n, s)] = -sum;
    }
  if (reduction == "none") {
    std::vector<double> losses(smooth.size());
    for (size_t i = 0; i < losses.size(); ++i)
      losses[i] = (1 - smoothing) * nll.losses[i] + smoothing / classes * smooth[i];
    return from_doubles(layout.element_shape, input.dtype(), losses);
  }
  double nll_sum = 0, smooth_sum = 0;
  for (size_t i = 0; i < smooth.size(); ++i) {
    nll_sum += nll.losses[i];
    smooth_sum += smooth[i];
  }
  if (reduction != "sum" && reduction != "mean")
    call.fail("'", reduction, "' is not a valid value for reduction (expected 'none', 'mean' or 'sum')");
  double value = reduction == "sum" ? (1 - smoothing) * nll_sum + smoothing / classes * smooth_sum
                                    : (1 - smoothing) * nll_sum / nll.weight_sum +
                                          smoothing / classes * smooth_sum / nll.weight_sum;
  return from_doubles({}, input.dtype(), std::span<const double>(&value, 1));
}

Tensor mse_loss(const KernelCall& call) {
  TypeOperand operands[] = {TypeOperand::of(call.tensor(0)), TypeOperand::of(call.tensor(1))};
  DType dtype = common_dtype(operands);
  if (!is_floating(dtype)) call.fail("mse_loss expects floating-point inputs, but got ", dtype_name(dtype));
  Tensor a = call.tensor(0).to(dtype), b = call.tensor(1).to(dtype);
  Sizes shape = broadcast_shapes(a.sizes(), b.sizes());
  std::vector<double> x = to_doubles(a.expand(shape)), y = to_doubles(b.expand(shape));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (x[i] - y[i]) * (x[i] - y[i]);
  return reduce_loss(call, call.string_arg(2), x, shape, double(x.size()), dtype);
}

}  // namespace

void register_loss_kernels(KernelTable& table) {
  table["nll_loss"] = single(nll_loss);
  table["cross_entropy"] = single(cross_entropy);
  table["mse_loss"] = single(mse_loss);
}

}  // namespace kiln::ir::kernels
