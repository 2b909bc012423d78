// Reference kernel of convolution: 1-3 spatial dims, NC* layout, stride, padding, dilation,
// groups, bias, and transposed convolution with output_padding. The geometry and the sums are
// portable::convolution_geometry and portable::convolution_sums (ir/kernels/portable_kernels.h,
// which packages compile in): spatial dims padded to three, one direct loop nest for every
// rank, sums in double rounded once to the input's dtype.
#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

Tensor convolution(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  bool transposed = call.bool_arg(6);
  size_t spatial = weight.dim() >= 3 ? size_t(weight.dim() - 2) : 0;
  if (spatial < 1 || spatial > portable::ConvolutionGeometry::kMaxSpatial)
    call.fail("convolution: weight must have 3 to 5 dims ([out, in/groups, *kernel]), got shape ",
              sizes_to_string(weight.sizes()));
  if (input.dtype() != weight.dtype())
    call.fail("convolution: input type (", dtype_name(input.dtype()), ") and weight type (", dtype_name(weight.dtype()),
              ") should be the same");
  std::vector<int64_t> stride = expand_param(call.ints(3), spatial, "stride");
  std::vector<int64_t> padding = expand_param(call.ints(4), spatial, "padding");
  std::vector<int64_t> dilation = expand_param(call.ints(5), spatial, "dilation");
  std::vector<int64_t> output_padding =
      transposed ? expand_param(call.ints(7), spatial, "output_padding") : std::vector<int64_t>(spatial, 0);
  portable::ConvolutionGeometry geometry = run_portable(call, [&] {
    return portable::convolution_geometry(input.sizes(), weight.sizes(), stride, padding, dilation, output_padding,
                                          call.int_arg(8), transposed);
  });
  std::vector<double> bias;
  if (!call.is_none(2)) {
    const Tensor& b = call.tensor(2);
    if (b.dim() != 1 || b.size(0) != geometry.out_channels)
      call.fail("convolution: bias must have shape [", geometry.out_channels, "], got ", sizes_to_string(b.sizes()));
    bias = to_doubles(b);
  }
  std::vector<double> x = to_doubles(input), w = to_doubles(weight);
  std::vector<double> out(static_cast<size_t>(numel_of(geometry.out_shape)), 0.0);
  portable::convolution_sums(geometry, x.data(), w.data(), call.is_none(2) ? nullptr : bias.data(), out.data());
  return from_doubles(geometry.out_shape, input.dtype(), out);
}

}  // namespace

void register_convolution_kernels(KernelTable& table) { table["convolution"] = single(convolution); }

}  // namespace kiln::ir::kernels
