// Shape/dtype rules of convolution (1-3 spatial dims, groups, transposed) and pooling
// (max, avg, adaptive avg/max), with PyTorch's parameter checks and output-size formulas:
//   convolution:  floor((in + 2p - d(k-1) - 1) / s) + 1
//   transposed:   (in - 1)s - 2p + d(k-1) + output_padding + 1
//   pooling:      floor or ceil of (in + 2p - d(k-1) - 1) / s, plus 1; in ceil mode the last
//                 window must start inside the input or the left padding (PyTorch's rule).
// Layout is NC* ("channels first"); pooling also takes unbatched C* inputs.
#include <algorithm>

#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

// "3 x 3" for messages about spatial sizes.
std::string spatial_string(const std::vector<SymInt>& sizes) {
  std::string text;
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? " x " : "") + sizes[i].to_string();
  return text;
}

void check_all(const OpCall& call, const std::vector<int64_t>& values, int64_t minimum, const char* message) {
  for (int64_t value : values)
    if (value < minimum) call.fail(message, ", but got ", ints_string(values));
}

NodeMeta convolution_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  const TensorMeta& weight = call.tensor(1);
  int64_t spatial = weight.rank() - 2;
  if (spatial < 1 || spatial > 3)
    call.fail("expected weight to have 3, 4 or 5 dims (1 to 3 spatial dims), but got weight of shape ",
              shape_string(weight.shape));
  if (input.rank() != weight.rank())
    call.fail("Expected ", weight.rank(), "-dimensional input for ", weight.rank(), "-dimensional weight ",
              shape_string(weight.shape), ", but got ", input.rank(), "-dimensional input of size ",
              shape_string(input.shape), " instead");
  if (!is_floating(input.dtype)) call.fail("convolution expects floating-point tensors, but got input of dtype ",
                                           dtype_name(input.dtype));
  if (input.dtype != weight.dtype)
    call.fail("Input type (", dtype_name(input.dtype), ") and weight type (", dtype_name(weight.dtype),
              ") should be the same");
  size_t count = size_t(spatial);
  std::vector<int64_t> stride = expand_param(call, call.ints(3), count, "stride");
  std::vector<int64_t> padding = expand_param(call, call.ints(4), count, "padding");
  std::vector<int64_t> dilation = expand_param(call, call.ints(5), count, "dilation");
  bool transposed = call.bool_arg(6);
  std::vector<int64_t> output_padding = expand_param(call, call.ints(7), count, "output_padding", {0});
  int64_t groups = call.int_arg(8);
  if (groups <= 0) call.fail("non-positive groups is not supported, but got groups=", groups);
  check_all(call, stride, 1, "non-positive stride is not supported");
  check_all(call, padding, 0, "negative padding is not supported");
  check_all(call, dilation, 1, "dilation should be greater than zero");
  check_all(call, output_padding, 0, "negative output_padding is not supported");
  if (transposed)
    for (size_t i = 0; i < count; ++i)
      if (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i])
        call.fail("output padding must be smaller than either stride or dilation, but got output_padding: ",
                  ints_string(output_padding), ", stride: ", ints_string(stride), ", dilation: ",
                  ints_string(dilation));

  const SymInt& channels = input.shape[1];
  SymInt out_channels;
  if (!transposed) {
    const SymInt& out = weight.shape[0];
    if (out.is_constant() && out.constant() % groups != 0)
      call.fail("Given groups=", groups, ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", shape_string(weight.shape), " instead");
    if (!(weight.shape[1] * SymInt(groups) == channels))
      call.fail("Given groups=", groups, ", weight of size ", shape_string(weight.shape), ", expected input",
                shape_string(input.shape), " to have ", weight.shape[1] * SymInt(groups), " channels, but got ",
                channels, " channels instead");
    out_channels = out;
  } else {
    if (weight.shape[0].is_constant() && weight.shape[0].constant() % groups != 0)
      call.fail("Given groups=", groups, ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", shape_string(weight.shape), " instead");
    if (!(weight.shape[0] == channels))
      call.fail("Given transposed=1, weight of size ", shape_string(weight.shape), ", expected input",
                shape_string(input.shape), " to have ", weight.shape[0], " channels, but got ", channels,
                " channels instead");
    out_channels = weight.shape[1] * SymInt(groups);
  }
  if (!call.is_none(2)) {
    const TensorMeta& bias = call.tensor(2);
    if (bias.rank() != 1 || !(bias.shape[0] == out_channels))
      call.fail("Given weight of size ", shape_string(weight.shape), ", expected bias to be 1-dimensional with ",
                out_channels, " elements, but got bias of size ", shape_string(bias.shape), " instead");
    if (bias.dtype != input.dtype)
      call.fail("Input type (", dtype_name(input.dtype), ") and bias type (", dtype_name(bias.dtype),
                ") should be the same");
  }

  SymShape shape = {input.shape[0], out_channels};
  std::vector<SymInt> padded, kernel;
  bool kernel_too_large = false;
  for (size_t i = 0; i < count; ++i) {
    const SymInt& size = input.shape[2 + i];
    const SymInt& kernel_size = weight.shape[2 + i];
    SymInt effective_kernel = SymInt(dilation[i]) * (kernel_size - SymInt(1)) + SymInt(1);
    if (transposed) {
      shape.push_back((size - SymInt(1)) * SymInt(stride[i]) - SymInt(2 * padding[i]) + effective_kernel +
                      SymInt(output_padding[i]));
    } else {
      SymInt padded_size = size + SymInt(2 * padding[i]);
      padded.push_back(padded_size);
      kernel.push_back(effective_kernel);
      SymInt gap = padded_size - effective_kernel;
      if (gap.is_constant() && gap.constant() < 0) kernel_too_large = true;
      shape.push_back(floordiv(gap, SymInt(stride[i])) + SymInt(1));
    }
  }
  if (kernel_too_large)
    call.fail("Calculated padded input size per channel: (", spatial_string(padded), "). Kernel size: (",
              spatial_string(kernel), "). Kernel size can't be greater than actual input size");
  for (size_t i = 2; i < shape.size(); ++i)
    if (shape[i].is_constant() && shape[i].constant() < 1)
      call.fail("Given input size per channel: (", spatial_string({input.shape.begin() + 2, input.shape.end()}),
                "). Calculated output size per channel: (", spatial_string({shape.begin() + 2, shape.end()}),
                "). Output size is too small");
  return single(TensorMeta::contiguous(input.dtype, std::move(shape), input.device));
}

// The number of spatial dims a pooling op works on: the length of its size list, or for a
// single value, every dim after batch and channel (a rank-2 input: one, unbatched).
size_t pooled_dims(const OpCall& call, size_t list_index, const TensorMeta& input) {
  const Argument& list = call.arg(list_index);
  int64_t spatial = list.is_list() && list.list().size() > 1 ? int64_t(list.list().size())
                                                             : std::max<int64_t>(1, input.rank() - 2);
  if (list.is_list() && list.list().empty())
    call.fail(call.op().schema.params[list_index].name, " must have 1 to 3 values, but got []");
  if (spatial > 3) call.fail(call.op().name(), " supports 1 to 3 spatial dims, but got input of shape ",
                             shape_string(input.shape));
  if (input.rank() != spatial + 1 && input.rank() != spatial + 2)
    call.fail("expected a ", spatial + 1, "-d (unbatched) or ", spatial + 2, "-d (batched) input for ", spatial,
              "-d pooling, but got input of shape ", shape_string(input.shape));
  return size_t(spatial);
}

// PyTorch's pooling_output_shape for one spatial dim.
SymInt pooled_size(const SymInt& size, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                   bool ceil_mode) {
  SymInt span = size + SymInt(2 * pad - dilation * (kernel - 1) - 1);
  if (std::optional<int64_t> constant = size.maybe_constant()) {
    int64_t numerator = span.constant() + (ceil_mode ? stride - 1 : 0);
    // div_rtn: division rounding toward negative infinity.
    int64_t out = (numerator >= 0 ? numerator / stride : -((-numerator + stride - 1) / stride)) + 1;
    if (ceil_mode && (out - 1) * stride >= *constant + pad) --out;
    return SymInt(out);
  }
  if (!ceil_mode) return floordiv(span, SymInt(stride)) + SymInt(1);
  // Ceil mode: window starts j*stride with j <= ceil(span/stride) that start before size + pad.
  SymInt ceil_count = floordiv(span + SymInt(stride - 1), SymInt(stride));
  SymInt last_start_inside = floordiv(size + SymInt(pad - 1), SymInt(stride));
  return min(ceil_count, last_start_inside) + SymInt(1);
}

NodeMeta pool_meta(const OpCall& call, const TensorMeta& input, size_t spatial, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                   const std::vector<int64_t>& dilation, bool ceil_mode) {
  check_all(call, kernel, 1, "kernel_size must be greater than zero");
  check_all(call, stride, 1, "stride should be greater than zero");
  check_all(call, dilation, 1, "dilation should be greater than zero");
  check_all(call, padding, 0, "pad must be non-negative");
  for (size_t i = 0; i < spatial; ++i)
    if (padding[i] > kernel[i] / 2)  // PyTorch checks the kernel size, not the dilated one
      call.fail("pad should be at most half of kernel size, but got pad=", padding[i], " and kernel_size=", kernel[i]);
  if (input.dtype == DType::boolean) call.fail(call.op().name(), " is not implemented for bool tensors");
  size_t first = input.shape.size() - spatial;
  SymShape shape(input.shape.begin(), input.shape.begin() + long(first));
  bool too_small = false;
  for (size_t i = 0; i < spatial; ++i) {
    SymInt size = pooled_size(input.shape[first + i], kernel[i], padding[i], stride[i], dilation[i], ceil_mode);
    if (size.is_constant() && size.constant() < 1) too_small = true;
    shape.push_back(size);
  }
  if (too_small)
    call.fail("Given input size: (", spatial_string({input.shape.begin() + long(first), input.shape.end()}),
              "). Calculated output size: (", spatial_string({shape.begin() + long(first), shape.end()}),
              "). Output size is too small");
  return single(TensorMeta::contiguous(input.dtype, std::move(shape), input.device));
}

NodeMeta max_pool_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  size_t spatial = pooled_dims(call, 1, input);
  std::vector<int64_t> kernel = expand_param(call, call.ints(1), spatial, "kernel_size");
  std::vector<int64_t> stride = expand_param(call, call.ints(2), spatial, "stride", kernel);
  std::vector<int64_t> padding = expand_param(call, call.ints(3), spatial, "padding");
  std::vector<int64_t> dilation = expand_param(call, call.ints(4), spatial, "dilation");
  return pool_meta(call, input, spatial, kernel, stride, padding, dilation, call.bool_arg(5));
}

NodeMeta avg_pool_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  size_t spatial = pooled_dims(call, 1, input);
  std::vector<int64_t> kernel = expand_param(call, call.ints(1), spatial, "kernel_size");
  std::vector<int64_t> stride = expand_param(call, call.ints(2), spatial, "stride", kernel);
  std::vector<int64_t> padding = expand_param(call, call.ints(3), spatial, "padding");
  if (!call.is_none(6) && call.int_arg(6) == 0) call.fail("divisor must be not zero");
  return pool_meta(call, input, spatial, kernel, stride, padding, std::vector<int64_t>(spatial, 1), call.bool_arg(4));
}

NodeMeta adaptive_pool_rule(const OpCall& call) {
  const TensorMeta& input = call.tensor(0);
  size_t spatial = pooled_dims(call, 1, input);
  std::vector<int64_t> output_size = expand_param(call, call.ints(1), spatial, "output_size");
  check_all(call, output_size, 0, "elements of output_size must be greater than or equal to 0");
  if (input.dtype == DType::boolean) call.fail(call.op().name(), " is not implemented for bool tensors");
  // The pooled dims must be non-empty (batch and channel dims may be empty).
  for (size_t d = input.shape.size() - spatial; d < input.shape.size(); ++d)
    if (is_zero(input.shape[d]))
      call.fail(call.op().name(), "(): Expected input to have non-zero size for non-batch dimensions, but input has "
                "sizes ", shape_string(input.shape), " with dimension ", d, " being empty");
  SymShape shape(input.shape.begin(), input.shape.end() - long(spatial));
  for (int64_t size : output_size) shape.push_back(SymInt(size));
  return single(TensorMeta::contiguous(input.dtype, std::move(shape), input.device));
}

}  // namespace

void attach_conv_pool_shape_rules(ShapeRuleTable& rules) {
  rules["convolution"] = convolution_rule;
  rules["max_pool"] = max_pool_rule;
  rules["avg_pool"] = avg_pool_rule;
  rules["adaptive_avg_pool"] = adaptive_pool_rule;
  rules["adaptive_max_pool"] = adaptive_pool_rule;
}

}  // namespace kiln::ir
