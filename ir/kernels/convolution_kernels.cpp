// Reference kernel of convolution: 1-3 spatial dims, NC* layout, stride,
// padding, dilation, groups, bias, and transposed convolution with output_padding. Spatial
// dims are padded to three internally (missing ones have size 1), so one direct loop nest
// serves every rank. Sums run in double, rounded once to the input's dtype.
#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

constexpr size_t kMaxSpatial = 3;

// Geometry of one spatial dim (unused dims: size 1, kernel 1, stride 1, no padding).
struct SpatialDim {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, padding = 0, dilation = 1;
};

Tensor convolution(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  bool transposed = call.bool_arg(6);
  int64_t groups = call.int_arg(8);
  size_t spatial = weight.dim() >= 3 ? size_t(weight.dim() - 2) : 0;
  if (spatial < 1 || spatial > kMaxSpatial)
    call.fail("convolution: weight must have 3 to 5 dims ([out, in/groups, *kernel]), got shape ",
              sizes_to_string(weight.sizes()));
  if (input.dim() != int64_t(spatial) + 2)
    call.fail("convolution: expected a ", spatial + 2, "-D input [N, C, *spatial] for a ", weight.dim(),
              "-D weight, got shape ", sizes_to_string(input.sizes()));
  if (input.dtype() != weight.dtype())
    call.fail("convolution: input type (", dtype_name(input.dtype()), ") and weight type (", dtype_name(weight.dtype()),
              ") should be the same");
  if (groups < 1) call.fail("convolution: groups must be positive, got ", groups);
  std::vector<int64_t> stride = expand_param(call.ints(3), spatial, "stride");
  std::vector<int64_t> padding = expand_param(call.ints(4), spatial, "padding");
  std::vector<int64_t> dilation = expand_param(call.ints(5), spatial, "dilation");
  std::vector<int64_t> output_padding =
      transposed ? expand_param(call.ints(7), spatial, "output_padding") : std::vector<int64_t>(spatial, 0);

  int64_t batch = input.size(0), in_channels = input.size(1);
  // Normal weight: [out, in/groups, k...]; transposed: [in, out/groups, k...].
  int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  int64_t in_per_group = transposed ? weight.size(0) / groups : weight.size(1);
  int64_t out_per_group = out_channels / groups;
  if (transposed ? weight.size(0) != in_channels || in_channels % groups != 0
                 : in_channels != weight.size(1) * groups || out_channels % groups != 0)
    call.fail("convolution: input of shape ", sizes_to_string(input.sizes()), " and weight of shape ",
              sizes_to_string(weight.sizes()), " do not fit with groups=", groups,
              transposed ? " (transposed)" : "");

  SpatialDim dims[kMaxSpatial];
  Sizes out_shape = {batch, out_channels};
  for (size_t s = 0; s < spatial; ++s) {
    SpatialDim& dim = dims[kMaxSpatial - spatial + s];
    dim.in = input.size(int64_t(2 + s));
    dim.kernel = weight.size(int64_t(2 + s));
    dim.stride = stride[s];
    dim.padding = padding[s];
    dim.dilation = dilation[s];
    if (dim.stride < 1 || dim.dilation < 1 || dim.padding < 0)
      call.fail("convolution: stride and dilation must be positive and padding non-negative");
    if (transposed) {
      if (output_padding[s] >= dim.stride && output_padding[s] >= dim.dilation)
        call.fail("convolution: output_padding must be smaller than either stride or dilation");
      dim.out = (dim.in - 1) * dim.stride - 2 * dim.padding + dim.dilation * (dim.kernel - 1) + output_padding[s] + 1;
    } else {
      dim.out = (dim.in + 2 * dim.padding - dim.dilation * (dim.kernel - 1) - 1) / dim.stride + 1;
      if (dim.in + 2 * dim.padding < dim.dilation * (dim.kernel - 1) + 1) dim.out = 0;
    }
    if (dim.out <= 0)
      call.fail("convolution: the output size of spatial dim ", s, " is ", dim.out, " (input ", dim.in, ", kernel ",
                dim.kernel, "): too small");
    out_shape.push_back(dim.out);
  }

  std::vector<double> x = to_doubles(input), w = to_doubles(weight);
  std::vector<double> out(static_cast<size_t>(numel_of(out_shape)), 0.0);
  const SpatialDim &d0 = dims[0], &d1 = dims[1], &d2 = dims[2];
  int64_t kernel_volume = d0.kernel * d1.kernel * d2.kernel;
  auto in_at = [&](int64_t n, int64_t c, int64_t i0, int64_t i1, int64_t i2) {
    return ((n * in_channels + c) * d0.in + i0) * d1.in * d2.in + i1 * d2.in + i2;
  };
  auto out_at = [&](int64_t n, int64_t c, int64_t o0, int64_t o1, int64_t o2) {
    return ((n * out_channels + c) * d0.out + o0) * d1.out * d2.out + o1 * d2.out + o2;
  };

  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t ci = 0; ci < in_per_group; ++ci)
        for (int64_t co = 0; co < out_per_group; ++co) {
          int64_t in_c = g * in_per_group + ci, out_c = g * out_per_group + co;
          const double* kernel = transposed ? &w[size_t((in_c * out_per_group + co) * kernel_volume)]
                                            : &w[size_t((out_c * in_per_group + ci) * kernel_volume)];
          for (int64_t k0 = 0; k0 < d0.kernel; ++k0)
            for (int64_t k1 = 0; k1 < d1.kernel; ++k1)
              for (int64_t k2 = 0; k2 < d2.kernel; ++k2) {
                double weight_value = kernel[(k0 * d1.kernel + k1) * d2.kernel + k2];
                if (!transposed) {
                  // out[o] += in[o * stride - padding + k * dilation] * w[k]
                  for (int64_t o0 = 0; o0 < d0.out; ++o0) {
                    int64_t i0 = o0 * d0.stride - d0.padding + k0 * d0.dilation;
                    if (i0 < 0 || i0 >= d0.in) continue;
                    for (int64_t o1 = 0; o1 < d1.out; ++o1) {
                      int64_t i1 = o1 * d1.stride - d1.padding + k1 * d1.dilation;
                      if (i1 < 0 || i1 >= d1.in) continue;
                      for (int64_t o2 = 0; o2 < d2.out; ++o2) {
                        int64_t i2 = o2 * d2.stride - d2.padding + k2 * d2.dilation;
                        if (i2 < 0 || i2 >= d2.in) continue;
                        out[size_t(out_at(n, out_c, o0, o1, o2))] += x[size_t(in_at(n, in_c, i0, i1, i2))] * weight_value;
                      }
                    }
                  }
                } else {
                  // out[i * stride - padding + k * dilation] += in[i] * w[k]
                  for (int64_t i0 = 0; i0 < d0.in; ++i0) {
                    int64_t o0 = i0 * d0.stride - d0.padding + k0 * d0.dilation;
                    if (o0 < 0 || o0 >= d0.out) continue;
                    for (int64_t i1 = 0; i1 < d1.in; ++i1) {
                      int64_t o1 = i1 * d1.stride - d1.padding + k1 * d1.dilation;
                      if (o1 < 0 || o1 >= d1.out) continue;
                      for (int64_t i2 = 0; i2 < d2.in; ++i2) {
                        int64_t o2 = i2 * d2.stride - d2.padding + k2 * d2.dilation;
                        if (o2 < 0 || o2 >= d2.out) continue;
                        out[size_t(out_at(n, out_c, o0, o1, o2))] += x[size_t(in_at(n, in_c, i0, i1, i2))] * weight_value;
                      }
                    }
                  }
                }
              }
        }

  if (!call.is_none(2)) {
    const Tensor& bias = call.tensor(2);
    if (bias.dim() != 1 || bias.size(0) != out_channels)
      call.fail("convolution: bias must have shape [", out_channels, "], got ", sizes_to_string(bias.sizes()));
    std::vector<double> b = to_doubles(bias);
    int64_t volume = d0.out * d1.out * d2.out;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < out_channels; ++c)
        for (int64_t i = 0; i < volume; ++i) out[size_t((n * out_channels + c) * volume + i)] += b[size_t(c)];
  }
  return from_doubles(out_shape, input.dtype(), out);
}

}  // namespace

void register_convolution_kernels(KernelTable& table) { table["convolution"] = single(convolution); }

}  // namespace kiln::ir::kernels
