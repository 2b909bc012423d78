// Reference kernels of the composite activations, each from its formula in double: gelu
// (exact erf form and tanh approximation), silu, leaky_relu, elu, hardsigmoid, hardswish,
// softplus, and dropout (Philox: keep element i when rand(seed, offset 0)[i] >= p, scale the
// kept ones by 1 / (1 - p)).
#include <cmath>
#include <functional>

#include "ir/kernels/kernel_support.h"
#include "runtime/philox.h"

namespace kiln::ir::kernels {
namespace {

// Same-dtype float activation: fn(call) returns the per-element function.
ReferenceKernel activation(std::function<std::function<double(double)>(const KernelCall&)> make) {
  return single([make](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    if (!is_floating(self.dtype()))
      call.fail(call.op().name(), " expects a floating-point input, but got ", dtype_name(self.dtype()));
    std::function<double(double)> fn = make(call);
    std::vector<double> values = to_doubles(self);
    for (double& value : values) value = fn(value);
    return from_doubles(self.sizes(), self.dtype(), values);
  });
}

double relu6(double x) { return std::isnan(x) ? x : std::min(std::max(x, 0.0), 6.0); }

Tensor dropout(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  double p = call.float_arg(1);
  if (!(p >= 0 && p <= 1)) call.fail("dropout probability has to be between 0 and 1, but got ", p);
  if (!call.bool_arg(2)) return input.clone();
  if (!is_floating(input.dtype()))
    call.fail("dropout expects a floating-point input when training, but got ", dtype_name(input.dtype()));
  uint64_t seed = uint64_t(call.int_arg(3));
  std::vector<double> values = to_doubles(input);
  double scale = p == 1 ? 0.0 : 1.0 / (1.0 - p);
  for (size_t i = 0; i < values.size(); ++i) {
    bool keep = p < 1 && double(philox_uniform(seed, 0, i)) >= p;
    values[i] = keep ? values[i] * scale : 0.0;
  }
  return from_doubles(input.sizes(), input.dtype(), values);
}

}  // namespace

void register_activation_kernels(KernelTable& table) {
  table["gelu"] = activation([](const KernelCall& call) -> std::function<double(double)> {
    const std::string& approximate = call.string_arg(1);
    if (approximate == "tanh")
      return [](double x) {
        const double k = std::sqrt(2.0 / M_PI);
        return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
      };
    if (approximate != "none")
      call.fail("approximate argument must be either none or tanh, but got '", approximate, "'");
    return [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); };
  });
  table["silu"] = activation([](const KernelCall&) -> std::function<double(double)> {
    return [](double x) { return x / (1.0 + std::exp(-x)); };
  });
  table["leaky_relu"] = activation([](const KernelCall& call) -> std::function<double(double)> {
    double slope = call.scalar_double(1);
    return [slope](double x) { return x > 0 ? x : x * slope; };
  });
  table["elu"] = activation([](const KernelCall& call) -> std::function<double(double)> {
    double alpha = call.scalar_double(1);
    return [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x); };
  });
  table["hardsigmoid"] = activation([](const KernelCall&) -> std::function<double(double)> {
    return [](double x) { return relu6(x + 3.0) / 6.0; };
  });
  table["hardswish"] = activation([](const KernelCall&) -> std::function<double(double)> {
    return [](double x) { return x * relu6(x + 3.0) / 6.0; };
  });
  table["softplus"] = activation([](const KernelCall& call) -> std::function<double(double)> {
    double beta = call.scalar_double(1), threshold = call.scalar_double(2);
    // Linear where beta * x > threshold (for numerical stability), as PyTorch.
    return [beta, threshold](double x) { return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta; };
  });
  table["dropout"] = single(dropout);
}

}  // namespace kiln::ir::kernels
