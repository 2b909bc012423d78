// Reference kernels of softmax / log_softmax (max-subtracted) and the normalizations:
// layer_norm, rms_norm, batch_norm (training: batch statistics with the biased variance;
// eval: running statistics) and group_norm. Statistics are computed in double (two passes),
// and each output is rounded once to the input's dtype. At f32's edges they follow PyTorch,
// which computes them in f32 (its opmath type for f32, f16 and bf16): a statistic is rounded
// to f32 before use, so a variance or mean square past f32's range is inf, 1 / sqrt(inf) is 0,
// and the row normalizes to 0 (then * weight + bias), as the compiled code does with its f32
// statistics; an inf or NaN in a row makes the row NaN.
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

void check_floating(const KernelCall& call, const Tensor& tensor, const char* op) {
  if (!is_floating(tensor.dtype()))
    call.fail(op, ": expected a floating point input, got ", dtype_name(tensor.dtype()));
}

// Softmax (or log-softmax) of one row, subtracting the row's max first.
void softmax_row(std::span<const double> in, std::span<double> out, bool log) {
  double max = -std::numeric_limits<double>::infinity();
  for (double value : in) max = std::isnan(value) || std::isnan(max) ? std::nan("") : std::max(max, value);
  double sum = 0;
  for (double value : in) sum += std::exp(value - max);
  for (size_t i = 0; i < in.size(); ++i) out[i] = log ? in[i] - max - std::log(sum) : std::exp(in[i] - max) / sum;
}

Tensor softmax(const KernelCall& call, bool log) {
  Tensor self = call.tensor(0);
  if (std::optional<DType> dtype = call.optional_dtype(2)) self = self.to(*dtype);
  check_floating(call, self, log ? "log_softmax" : "softmax");
  return map_rows(self, call.int_arg(1), self.dtype(),
                  [log](std::span<const double> in, std::span<double> out) { softmax_row(in, out, log); });
}

// A statistic as the dtype PyTorch computes it in holds it: f64 for f64, else f32 (inf past
// its range).
double in_compute_dtype(double value, DType dtype) { return dtype == DType::f64 ? value : double(float(value)); }

// 1 / sqrt(variance + eps) for a normalization, with the variance as the compute dtype holds it.
double inverse_std(double variance, double eps, DType dtype) {
  return 1.0 / std::sqrt(in_compute_dtype(variance, dtype) + eps);
}

// Values of an optional per-feature parameter (weight or bias) that must have `shape`;
// empty when None.
std::vector<double> parameter(const KernelCall& call, size_t index, const Sizes& shape, const char* what) {
  if (call.is_none(index)) return {};
  const Tensor& tensor = call.tensor(index);
  if (tensor.sizes() != shape)
    call.fail(what, " must have shape ", sizes_to_string(shape), ", got ", sizes_to_string(tensor.sizes()));
  return to_doubles(tensor);
}

// Rows of the trailing `normalized_shape` dims; fails unless the input ends with them.
int64_t row_length(const KernelCall& call, const Tensor& input, const Sizes& normalized_shape) {
  bool fits = int64_t(normalized_shape.size()) <= input.dim();
  for (size_t i = 0; fits && i < normalized_shape.size(); ++i)
    fits = input.sizes()[input.sizes().size() - normalized_shape.size() + i] == normalized_shape[i];
  if (!fits)
    call.fail("given normalized_shape=", sizes_to_string(normalized_shape),
              ", expected input with shape [*, ", sizes_to_string(normalized_shape).substr(1),
              ", but got input of size ", sizes_to_string(input.sizes()));
  return numel_of(normalized_shape);
}

Tensor layer_norm(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  check_floating(call, input, "layer_norm");
  Sizes shape = call.sym_ints(1);
  int64_t row = row_length(call, input, shape);
  std::vector<double> weight = parameter(call, 2, shape, "layer_norm: weight");
  std::vector<double> bias = parameter(call, 3, shape, "layer_norm: bias");
  double eps = call.float_arg(4);
  std::vector<double> x = to_doubles(input);
  for (size_t start = 0; row > 0 && start < x.size(); start += size_t(row)) {
    double mean = 0, variance = 0;
    for (int64_t i = 0; i < row; ++i) mean += x[start + size_t(i)];
    mean /= double(row);
    for (int64_t i = 0; i < row; ++i) variance += (x[start + size_t(i)] - mean) * (x[start + size_t(i)] - mean);
    variance /= double(row);  // biased
    double inverse = inverse_std(variance, eps, input.dtype());
    for (size_t i = 0; i < size_t(row); ++i) {
      double value = (x[start + i] - mean) * inverse;
      if (!weight.empty()) value *= weight[i];
      if (!bias.empty()) value += bias[i];
      x[start + i] = value;
    }
  }
  return from_doubles(input.sizes(), input.dtype(), x);
}

// The default eps of rms_norm: the machine epsilon of the type PyTorch computes in (f32 for
// f16/bf16/f32, f64 for f64).
double default_rms_eps(DType dtype) {
  return dtype == DType::f64 ? std::numeric_limits<double>::epsilon() : double(std::numeric_limits<float>::epsilon());
}

Tensor rms_norm(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  check_floating(call, input, "rms_norm");
  Sizes shape = call.sym_ints(1);
  int64_t row = row_length(call, input, shape);
  std::vector<double> weight = parameter(call, 2, shape, "rms_norm: weight");
  double eps = call.optional_float(3).value_or(default_rms_eps(input.dtype()));
  std::vector<double> x = to_doubles(input);
  for (size_t start = 0; row > 0 && start < x.size(); start += size_t(row)) {
    double squares = 0;
    // Each square as PyTorch's x.pow(2) makes it in the compute dtype (inf past f32's range).
    for (int64_t i = 0; i < row; ++i) squares += in_compute_dtype(x[start + size_t(i)] * x[start + size_t(i)], input.dtype());
    double inverse = 1.0 / std::sqrt(in_compute_dtype(squares / double(row), input.dtype()) + eps);
    for (size_t i = 0; i < size_t(row); ++i) x[start + i] = x[start + i] * inverse * (weight.empty() ? 1.0 : weight[i]);
  }
  return from_doubles(input.sizes(), input.dtype(), x);
}

Tensor batch_norm(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  check_floating(call, input, "batch_norm");
  if (input.dim() < 2) call.fail("batch_norm: expected an input with at least 2 dims, got ", sizes_to_string(input.sizes()));
  int64_t batch = input.size(0), channels = input.size(1);
  int64_t spatial = channels == 0 || batch == 0 ? 0 : input.numel() / (batch * channels);
  Sizes channel_shape = {channels};
  std::vector<double> weight = parameter(call, 1, channel_shape, "batch_norm: weight");
  std::vector<double> bias = parameter(call, 2, channel_shape, "batch_norm: bias");
  bool training = call.bool_arg(5);
  double eps = call.float_arg(7);
  std::vector<double> x = to_doubles(input);
  std::vector<double> means(static_cast<size_t>(channels)), variances(static_cast<size_t>(channels));
  if (training) {
    int64_t count = batch * spatial;
    if (count == 1)
      call.fail("batch_norm: expected more than 1 value per channel when training, got input of size ",
                sizes_to_string(input.sizes()));
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) sum += x[size_t((n * channels + c) * spatial + s)];
      double mean = sum / double(count), squares = 0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t s = 0; s < spatial; ++s) {
          double deviation = x[size_t((n * channels + c) * spatial + s)] - mean;
          squares += deviation * deviation;
        }
      means[size_t(c)] = mean;
      variances[size_t(c)] = squares / double(count);  // biased
    }
  } else {
    if (call.is_none(3) || call.is_none(4))
      call.fail("batch_norm: running_mean and running_var must be given when not training");
    means = parameter(call, 3, channel_shape, "batch_norm: running_mean");
    variances = parameter(call, 4, channel_shape, "batch_norm: running_var");
  }
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      // Batch statistics stay in double as PyTorch's CPU kernel accumulates them (acc_type of
      // f32 is f64 there), and 1 / sqrt(var + eps) is rounded to the compute dtype; running
      // statistics are that dtype already.
      double inverse = training ? in_compute_dtype(1.0 / std::sqrt(variances[size_t(c)] + eps), input.dtype())
                                : inverse_std(variances[size_t(c)], eps, input.dtype());
      for (int64_t s = 0; s < spatial; ++s) {
        double& value = x[size_t((n * channels + c) * spatial + s)];
        value = (value - means[size_t(c)]) * inverse;
        if (!weight.empty()) value *= weight[size_t(c)];
        if (!bias.empty()) value += bias[size_t(c)];
      }
    }
  return from_doubles(input.sizes(), input.dtype(), x);
}

Tensor group_norm(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  check_floating(call, input, "group_norm");
  if (input.dim() < 2) call.fail("group_norm: expected an input with at least 2 dims, got ", sizes_to_string(input.sizes()));
  int64_t groups = call.int_arg(1);
  int64_t batch = input.size(0), channels = input.size(1);
  if (groups <= 0 || channels % groups != 0)
    call.fail("group_norm: expected the number of channels (", channels, ") to be divisible by num_groups (", groups, ")");
  int64_t spatial = channels == 0 || batch == 0 ? 0 : input.numel() / (batch * channels);
  Sizes channel_shape = {channels};
  std::vector<double> weight = parameter(call, 2, channel_shape, "group_norm: weight");
  std::vector<double> bias = parameter(call, 3, channel_shape, "group_norm: bias");
  double eps = call.float_arg(4);
  int64_t per_group = channels / groups;
  int64_t block = per_group * spatial;
  std::vector<double> x = to_doubles(input);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      size_t start = size_t((n * channels + g * per_group) * spatial);
      double mean = 0, variance = 0;
      for (int64_t i = 0; i < block; ++i) mean += x[start + size_t(i)];
      mean /= double(block);
      for (int64_t i = 0; i < block; ++i) variance += (x[start + size_t(i)] - mean) * (x[start + size_t(i)] - mean);
      variance /= double(block);
      double inverse = inverse_std(variance, eps, input.dtype());
      for (int64_t i = 0; i < block; ++i) {
        int64_t channel = g * per_group + i / std::max<int64_t>(spatial, 1);
        double& value = x[start + size_t(i)];
        value = (value - mean) * inverse;
        if (!weight.empty()) value *= weight[size_t(channel)];
        if (!bias.empty()) value += bias[size_t(channel)];
      }
    }
  return from_doubles(input.sizes(), input.dtype(), x);
}

}  // namespace

void register_normalization_kernels(KernelTable& table) {
  table["softmax"] = single([](const KernelCall& call) { return softmax(call, false); });
  table["log_softmax"] = single([](const KernelCall& call) { return softmax(call, true); });
  table["layer_norm"] = single(layer_norm);
  table["rms_norm"] = single(rms_norm);
  table["batch_norm"] = single(batch_norm);
  table["group_norm"] = single(group_norm);
}

}  // namespace kiln::ir::kernels
