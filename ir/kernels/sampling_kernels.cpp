// Reference kernels of the sampling ops: grid_sample (nearest, bilinear, bicubic; zeros,
// border, reflection padding; align_corners; 1-3 spatial dims), roi_align (avg or max,
// aligned, sampling_ratio) and deform_conv2d (groups, offset groups, optional mask and bias).
// Their math is portable::grid_sample_values, roi_align_values and deform_conv2d_values
// (ir/kernels/portable_kernels.h, which packages compile in, with the rules each follows): the
// kernels read the tensors as doubles, and round the result once to the input's dtype.
#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

Tensor grid_sample(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& grid = call.tensor(1);
  portable::GridSampleMode mode = run_portable(call, [&] { return portable::grid_sample_mode(call.string_arg(2)); });
  portable::GridSamplePadding padding =
      run_portable(call, [&] { return portable::grid_sample_padding(call.string_arg(3)); });
  Sizes out_shape = run_portable(call, [&] { return portable::grid_sample_shape(input.sizes(), grid.sizes()); });
  std::vector<double> x = to_doubles(input), coordinates = to_doubles(grid);
  std::vector<double> out(size_t(numel_of(out_shape)), 0.0);
  portable::grid_sample_values(x.data(), input.sizes(), coordinates.data(), grid.sizes(), mode, padding,
                               call.bool_arg(4), grid.dtype() != DType::f64, out.data());
  return from_doubles(out_shape, input.dtype(), out);
}

Tensor roi_align(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& rois = call.tensor(1);
  const Tensor& batch_indices = call.tensor(2);
  int64_t pooled_height = call.int_arg(3), pooled_width = call.int_arg(4);
  Sizes out_shape = run_portable(call, [&] {
    return portable::roi_align_shape(input.sizes(), rois.sizes(), batch_indices.sizes(), pooled_height, pooled_width);
  });
  std::vector<double> x = to_doubles(input), boxes = to_doubles(rois);
  std::vector<int64_t> images = to_ints(batch_indices);
  std::vector<double> out(size_t(numel_of(out_shape)), 0.0);
  run_portable(call, [&] {
    portable::roi_align_values(x.data(), input.sizes(), boxes.data(), images.data(), out_shape[0], pooled_height,
                               pooled_width, call.int_arg(5), call.float_arg(6), call.string_arg(7) == "max",
                               call.bool_arg(8), out.data());
  });
  return from_doubles(out_shape, input.dtype(), out);
}

Tensor deform_conv2d(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  const Tensor& offset = call.tensor(2);
  bool has_mask = call.is_tensor(3), has_bias = call.is_tensor(4);
  int64_t groups = call.int_arg(8), offset_groups = call.int_arg(9);
  Sizes mask_sizes = has_mask ? call.tensor(3).sizes() : Sizes{}, bias_sizes = has_bias ? call.tensor(4).sizes() : Sizes{};
  Sizes out_shape = run_portable(call, [&] {
    return portable::deform_conv2d_shape(input.sizes(), weight.sizes(), offset.sizes(), has_mask ? &mask_sizes : nullptr,
                                         has_bias ? &bias_sizes : nullptr, groups, offset_groups);
  });
  std::vector<double> x = to_doubles(input), w = to_doubles(weight), off = to_doubles(offset);
  std::vector<double> mask = has_mask ? to_doubles(call.tensor(3)) : std::vector<double>();
  std::vector<double> bias = has_bias ? to_doubles(call.tensor(4)) : std::vector<double>();
  std::vector<double> out(size_t(numel_of(out_shape)), 0.0);
  portable::deform_conv2d_values(x.data(), input.sizes(), w.data(), weight.sizes(), off.data(), offset.sizes(),
                                 has_mask ? mask.data() : nullptr, has_bias ? bias.data() : nullptr, call.ints(5),
                                 call.ints(6), call.ints(7), groups, offset_groups, out.data());
  return from_doubles(out_shape, input.dtype(), out);
}

}  // namespace

void register_sampling_kernels(KernelTable& table) {
  table.emplace("deform_conv2d", single(deform_conv2d));
  table.emplace("grid_sample", single(grid_sample));
  table.emplace("roi_align", single(roi_align));
}

}  // namespace kiln::ir::kernels
