// ATen convolutions, pooling and upsampling: conv1d/2d/3d (including padding="same"),
// convolution, conv_transpose*, max / avg / adaptive pools onto Kiln's ops (unbatched inputs
// get a batch dim of 1 around the op; max pooling's indices are computed beside it), and the upsample ops (nearest, nearest-exact, linear /
// bilinear / trilinear, bicubic) as index selections along each resized dim with indices
// and weights computed at import time (PyTorch's source-index rules; resized dims must be
// static); im2col (nn.Unfold) as strided slices of the padded input, one per kernel offset;
// grid_sampler (2-d and 3-d) as Kiln's grid_sample, and affine_grid_generator as a constant
// base grid times theta^T; max_unpool2d/3d as a scatter of each plane's values to their indices.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "frontends/affine_grid.h"
#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// Expands a conv/pool parameter to one value per spatial dim.
std::vector<int64_t> per_dim(AtenNodeContext& c, std::vector<int64_t> values, size_t spatial, const char* what) {
  if (values.size() == 1 && spatial > 1) values.assign(spatial, values[0]);
  if (values.size() != spatial) c.fail(what, " has ", values.size(), " values for ", spatial, " spatial dims");
  return values;
}

// Runs `body` on x with a batch dim added when x is unbatched (rank spatial + 1), removing it
// from the result.
ir::Node* batched(AtenNodeContext& c, ir::Node* x, size_t spatial, const std::function<ir::Node*(ir::Node*)>& body) {
  if (rank_of(x) != int64_t(spatial) + 1) return body(x);
  return c.call("squeeze", {body(c.call("unsqueeze", {x, int64_t(0)})), ir::Argument::ints({0})});
}

AtenConverter conv(size_t spatial) {
  return [spatial](AtenNodeContext& c) {
    ir::Node* x = c.tensor("input");
    ir::Node* weight = c.tensor("weight");
    ir::Node* bias = c.optional_tensor("bias");
    std::vector<int64_t> stride = per_dim(c, c.ints("stride", std::vector<int64_t>{1}), spatial, "stride");
    std::vector<int64_t> dilation = per_dim(c, c.ints("dilation", std::vector<int64_t>{1}), spatial, "dilation");
    int64_t groups = c.int_arg("groups", 1);
    std::vector<int64_t> padding;
    const ExportArgument* pad = c.find("padding");
    if (pad && pad->kind == "as_string") {
      std::string mode = pad->value.get<std::string>();
      if (mode == "valid") {
        padding.assign(spatial, 0);
      } else if (mode == "same") {
        // total = dilation * (kernel - 1), the extra element (if odd) on the right, as PyTorch does.
        std::vector<SymInt> extra;
        padding.assign(spatial, 0);
        bool asymmetric = false;
        for (size_t d = 0; d < spatial; ++d) {
          std::optional<int64_t> kernel = shape_of(weight)[2 + d].maybe_constant();
          if (!kernel) c.fail("padding='same' needs a static kernel size");
          int64_t total = dilation[d] * (*kernel - 1);
          padding[d] = total / 2;
          asymmetric |= total % 2 != 0;
        }
        if (asymmetric) {
          std::vector<SymInt> pads;  // F.pad order: last dim first, (left, right) each
          for (size_t d = spatial; d-- > 0;) {
            int64_t total = dilation[d] * (shape_of(weight)[2 + d].constant() - 1);
            pads.insert(pads.end(), {SymInt(total / 2), SymInt(total - total / 2)});
            padding[d] = 0;
          }
          x = c.call("pad", {x, ir::Argument::sym_ints(pads), std::string("constant"), 0.0});
        }
      } else {
        c.fail("padding='", mode, "' is not supported (expected 'same' or 'valid')");
      }
    } else {
      padding = per_dim(c, c.ints("padding", std::vector<int64_t>{0}), spatial, "padding");
    }
    ir::Node* y = batched(c, x, spatial, [&](ir::Node* input) {
      return c.call("convolution", {input, weight, bias ? ir::Argument(bias) : ir::Argument(), ir::Argument::ints(stride),
                                    ir::Argument::ints(padding), ir::Argument::ints(dilation), false, ir::Argument::ints({0}), groups});
    });
    c.set_output(0, y);
  };
}

AtenConverter conv_transpose(size_t spatial) {
  return [spatial](AtenNodeContext& c) {
    ir::Node* x = c.tensor("input");
    ir::Node* weight = c.tensor("weight");
    ir::Node* bias = c.optional_tensor("bias");
    std::vector<int64_t> stride = per_dim(c, c.ints("stride", std::vector<int64_t>{1}), spatial, "stride");
    std::vector<int64_t> padding = per_dim(c, c.ints("padding", std::vector<int64_t>{0}), spatial, "padding");
    std::vector<int64_t> output_padding = per_dim(c, c.ints("output_padding", std::vector<int64_t>{0}), spatial, "output_padding");
    std::vector<int64_t> dilation = per_dim(c, c.ints("dilation", std::vector<int64_t>{1}), spatial, "dilation");
    int64_t groups = c.int_arg("groups", 1);
    c.set_output(0, batched(c, x, spatial, [&](ir::Node* input) {
      return c.call("convolution", {input, weight, bias ? ir::Argument(bias) : ir::Argument(), ir::Argument::ints(stride),
                                    ir::Argument::ints(padding), ir::Argument::ints(dilation), true,
                                    ir::Argument::ints(output_padding), groups});
    }));
  };
}

void convert_convolution(AtenNodeContext& c) {
  ir::Node* weight = c.tensor("weight");
  ir::Node* bias = c.optional_tensor("bias");
  c.emit(0, "convolution", {c.tensor("input"), weight, bias ? ir::Argument(bias) : ir::Argument(),
                            ir::Argument::ints(c.ints("stride")), ir::Argument::ints(c.ints("padding")),
                            ir::Argument::ints(c.ints("dilation")), c.bool_arg("transposed"),
                            ir::Argument::ints(c.ints("output_padding")), c.int_arg("groups")});
}

// The indices of max pooling (flat positions in each input plane, as PyTorch returns them):
// the windows of the input padded with -inf (an as_strided view of it), the first maximum of
// each (argmax), and a table from (output position, window element) to the input position.
// Spatial sizes must be static.
ir::Node* max_pool_indices(AtenNodeContext& c, ir::Node* x, const ir::SymShape& out_shape, size_t spatial,
                           std::vector<int64_t> kernel, std::vector<int64_t> stride, std::vector<int64_t> padding,
                           std::vector<int64_t> dilation) {
  kernel = per_dim(c, kernel, spatial, "kernel_size");
  stride = stride.empty() ? kernel : per_dim(c, stride, spatial, "stride");
  padding = per_dim(c, padding, spatial, "padding");
  dilation = per_dim(c, dilation, spatial, "dilation");
  const ir::SymShape& in = shape_of(x);
  size_t batch_dims = in.size() - spatial;
  std::vector<int64_t> sizes, outs;
  for (size_t d = 0; d < spatial; ++d) {
    std::optional<int64_t> size = in[batch_dims + d].maybe_constant(), out = out_shape[batch_dims + d].maybe_constant();
    if (!size || !out) c.fail("the indices of max pooling need static spatial sizes");
    sizes.push_back(*size);
    outs.push_back(*out);
  }
  // Pad (F.pad order: last dim first) so that every window lies inside.
  std::vector<SymInt> pads;
  std::vector<int64_t> padded;
  for (size_t d = spatial; d-- > 0;) {
    int64_t extent = (outs[d] - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1;
    int64_t right = std::max<int64_t>(0, extent - sizes[d] - padding[d]);
    pads.insert(pads.end(), {SymInt(padding[d]), SymInt(right)});
  }
  for (size_t d = 0; d < spatial; ++d) padded.push_back(sizes[d] + pads[2 * (spatial - 1 - d)].constant() + pads[2 * (spatial - 1 - d) + 1].constant());
  double lowest = is_floating(dtype_of(x)) ? -std::numeric_limits<double>::infinity() : double(std::numeric_limits<int64_t>::min());
  ir::Node* filled = c.call("pad", {x, ir::Argument::sym_ints(pads), std::string("constant"), lowest});
  SymInt planes = 1;
  for (size_t d = 0; d < batch_dims; ++d) planes = planes * in[d];
  std::vector<SymInt> flat = {planes};
  for (int64_t size : padded) flat.emplace_back(size);
  filled = c.call("reshape", {filled, ir::Argument::sym_ints(flat)});
  // windows[b, o..., k...] = filled[b, o * stride + k * dilation]
  std::vector<int64_t> inner(spatial, 1);
  for (size_t d = spatial - 1; d-- > 0;) inner[d] = inner[d + 1] * padded[d + 1];
  int64_t plane = inner[0] * padded[0];
  std::vector<SymInt> window_sizes = {planes}, window_strides = {SymInt(plane)};
  int64_t outputs = 1, elements = 1;
  for (size_t d = 0; d < spatial; ++d) {
    window_sizes.emplace_back(outs[d]);
    window_strides.emplace_back(inner[d] * stride[d]);
    outputs *= outs[d];
  }
  for (size_t d = 0; d < spatial; ++d) {
    window_sizes.emplace_back(kernel[d]);
    window_strides.emplace_back(inner[d] * dilation[d]);
    elements *= kernel[d];
  }
  ir::Node* windows = c.call("as_strided", {filled, ir::Argument::sym_ints(window_sizes), ir::Argument::sym_ints(window_strides), SymInt(0)});
  windows = c.call("reshape", {windows, ir::Argument::sym_ints({planes, SymInt(outputs), SymInt(elements)})});
  ir::Node* local = c.call("argmax", {windows, int64_t(-1), false});  // [planes, outputs]
  // table[o * elements + w] = the input position of window element w of output o.
  std::vector<int64_t> table(static_cast<size_t>(outputs * elements));
  std::vector<int64_t> unpadded_inner(spatial, 1);
  for (size_t d = spatial - 1; d-- > 0;) unpadded_inner[d] = unpadded_inner[d + 1] * sizes[d + 1];
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t w = 0; w < elements; ++w) {
      int64_t position = 0, o_rest = o, w_rest = w;
      for (size_t d = spatial; d-- > 0;) {
        int64_t od = o_rest % outs[d], wd = w_rest % kernel[d];
        o_rest /= outs[d], w_rest /= kernel[d];
        position += (od * stride[d] - padding[d] + wd * dilation[d]) * unpadded_inner[d];
      }
      table[size_t(o * elements + w)] = position;
    }
  ir::Node* lookup = c.constant(Tensor::from_vector({outputs * elements}, table, DType::i64), "max_pool_positions");
  std::vector<int64_t> bases(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) bases[size_t(o)] = o * elements;
  ir::Node* base = c.constant(Tensor::from_vector({outputs}, bases, DType::i64), "max_pool_window_starts");
  ir::Node* flat_index = c.call("reshape", {c.call("add", {local, base}), ir::Argument::sym_ints({planes * SymInt(outputs)})});
  ir::Node* picked = c.call("index_select", {lookup, int64_t(0), flat_index});
  return c.call("reshape", {picked, ir::Argument::sym_ints(out_shape)});
}

AtenConverter max_pool(size_t spatial, bool with_indices) {
  return [spatial, with_indices](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    std::vector<int64_t> kernel = c.ints("kernel_size");
    std::vector<int64_t> stride = c.ints("stride", std::vector<int64_t>{});
    std::vector<int64_t> padding = c.ints("padding", std::vector<int64_t>{0});
    std::vector<int64_t> dilation = c.ints("dilation", std::vector<int64_t>{1});
    bool ceil_mode = c.bool_arg("ceil_mode", false);
    ir::Node* values = c.emit(0, "max_pool", {x, ir::Argument::ints(kernel), ir::Argument::ints(stride), ir::Argument::ints(padding),
                                              ir::Argument::ints(dilation), ceil_mode});
    if (with_indices && c.output_used(1))
      c.set_output(1, max_pool_indices(c, x, shape_of(values), spatial, kernel, stride, padding, dilation));
  };
}

void convert_avg_pool(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::optional<int64_t> divisor = c.optional_int("divisor_override");
  c.emit(0, "avg_pool", {x, ir::Argument::ints(c.ints("kernel_size")), ir::Argument::ints(c.ints("stride", std::vector<int64_t>{})),
                         ir::Argument::ints(c.ints("padding", std::vector<int64_t>{0})), c.bool_arg("ceil_mode", false),
                         c.bool_arg("count_include_pad", true), divisor ? ir::Argument(*divisor) : ir::Argument()});
}

void convert_adaptive_avg_pool(AtenNodeContext& c) {
  c.emit(0, "adaptive_avg_pool", {c.tensor("self"), ir::Argument::ints(c.ints("output_size"))});
}

// The indices of adaptive max pooling (flat positions in each input plane, as PyTorch returns
// them). Output o's window along a dim of size `in` pooled to `out` is [floor(o * in / out),
// ceil((o + 1) * in / out)). Each plane is flattened and given a -inf element at its end; a
// constant table gathers every window, in row-major order and padded with that element to
// the longest window, into [planes, outputs, longest]; the first maximum of each (argmax), or
// the last NaN of a window that holds NaNs (PyTorch's loop takes a value when it is greater or
// NaN), is mapped back to its input position through the table. Spatial sizes must be static.
ir::Node* adaptive_max_pool_indices(AtenNodeContext& c, ir::Node* x, const ir::SymShape& out_shape,
                                    const std::vector<int64_t>& out_sizes) {
  size_t spatial = out_sizes.size();
  const ir::SymShape& in = shape_of(x);
  if (in.size() < spatial) c.fail("adaptive max pooling to ", spatial, " dims needs an input of at least ", spatial, " dims");
  if (!is_floating(dtype_of(x)))
    c.fail("the indices of adaptive max pooling need a floating-point input, but got ", dtype_name(dtype_of(x)));
  size_t batch_dims = in.size() - spatial;
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < spatial; ++d) {
    std::optional<int64_t> size = in[batch_dims + d].maybe_constant();
    if (!size) c.fail("the indices of adaptive max pooling need static spatial sizes");
    if (out_sizes[d] <= 0) c.fail("adaptive max pooling: output_size ", out_sizes[d], " must be positive");
    sizes.push_back(*size);
  }
  std::vector<std::vector<int64_t>> starts(spatial), lengths(spatial);
  int64_t outputs = 1, longest = 1, plane = 1;
  for (size_t d = 0; d < spatial; ++d) {
    int64_t widest = 0;
    for (int64_t o = 0; o < out_sizes[d]; ++o) {
      int64_t start = o * sizes[d] / out_sizes[d], end = ((o + 1) * sizes[d] + out_sizes[d] - 1) / out_sizes[d];
      starts[d].push_back(start);
      lengths[d].push_back(end - start);
      widest = std::max(widest, end - start);
    }
    outputs *= out_sizes[d], longest *= widest, plane *= sizes[d];
  }
  // table[o * longest + w] = the input position of element w of output o's window (plane: none).
  std::vector<int64_t> table(static_cast<size_t>(outputs * longest), plane);
  for (int64_t o = 0; o < outputs; ++o) {
    std::vector<int64_t> od(spatial);
    int64_t window = 1;
    for (size_t d = spatial, rest = size_t(o); d-- > 0;) {
      od[d] = int64_t(rest) % out_sizes[d], rest /= size_t(out_sizes[d]);
      window *= lengths[d][size_t(od[d])];
    }
    for (int64_t w = 0; w < window; ++w) {
      int64_t position = 0, rest = w, inner = 1;
      for (size_t d = spatial; d-- > 0;) {
        int64_t length = lengths[d][size_t(od[d])];
        position += (starts[d][size_t(od[d])] + rest % length) * inner;
        rest /= length, inner *= sizes[d];
      }
      table[size_t(o * longest + w)] = position;
    }
  }
  SymInt planes = 1;
  for (size_t d = 0; d < batch_dims; ++d) planes = planes * in[d];
  ir::Node* flat = c.call("reshape", {x, ir::Argument::sym_ints({planes, SymInt(plane)})});
  ir::Node* filler = c.call("full", {ir::Argument::sym_ints({planes, SymInt(1)}), -std::numeric_limits<double>::infinity()},
                            {{"dtype", dtype_of(x)}});
  ir::Node* extended = c.call("cat", {ir::Argument(std::vector<ir::Argument>{flat, filler}), int64_t(1)});
  ir::Node* lookup = c.constant(Tensor::from_vector({outputs * longest}, table, DType::i64), "adaptive_max_pool_positions");
  ir::Node* windows = c.call("index_select", {extended, int64_t(1), lookup});
  windows = c.call("reshape", {windows, ir::Argument::sym_ints({planes, SymInt(outputs), SymInt(longest)})});
  ir::Node* local = c.call("argmax", {windows, int64_t(-1), false});  // [planes, outputs]
  ir::Node* nan_at = c.call("where", {c.call("isnan", {windows}), c.call("iota", {SymInt(longest)}), int64_t(-1)});
  ir::Node* last_nan = c.call("amax", {nan_at, ir::Argument::ints({-1}), false});
  local = c.call("where", {c.call("ge", {last_nan, int64_t(0)}), last_nan, local});
  std::vector<int64_t> bases(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) bases[size_t(o)] = o * longest;
  ir::Node* base = c.constant(Tensor::from_vector({outputs}, bases, DType::i64), "adaptive_max_pool_window_starts");
  ir::Node* flat_index = c.call("reshape", {c.call("add", {local, base}), ir::Argument::sym_ints({planes * SymInt(outputs)})});
  ir::Node* picked = c.call("index_select", {lookup, int64_t(0), flat_index});
  return c.call("reshape", {picked, ir::Argument::sym_ints(out_shape)});
}

void convert_adaptive_max_pool(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<int64_t> out_sizes = c.ints("output_size");
  ir::Node* values = c.emit(0, "adaptive_max_pool", {x, ir::Argument::ints(out_sizes)});
  if (c.output_used(1)) c.set_output(1, adaptive_max_pool_indices(c, x, shape_of(values), out_sizes));
}

// ---- upsampling

enum class Interpolation { nearest, nearest_exact, linear, cubic };

// The output size of each resized dim: output_size, or floor(input * scale).
std::vector<int64_t> output_sizes(AtenNodeContext& c, const std::vector<int64_t>& input, std::vector<double>& scales) {
  std::optional<std::vector<int64_t>> given = c.optional_ints("output_size");
  std::vector<double> factors;
  if (const ExportArgument* arg = c.find("scale_factors"); arg && arg->kind == "as_floats")
    for (const auto& v : arg->value) factors.push_back(v.get<double>());
  for (const char* name : {"scales_d", "scales_h", "scales_w", "scales"})
    if (std::optional<double> s = c.optional_float(name)) factors.push_back(*s);
  std::vector<int64_t> sizes(input.size());
  scales.assign(input.size(), 0.0);  // 0: derive from the sizes
  if (!factors.empty() && factors.size() != input.size())
    c.fail("expected ", input.size(), " scale factors, got ", factors.size());
  for (size_t d = 0; d < input.size(); ++d) {
    if (!factors.empty()) scales[d] = factors[d];
    if (given && !given->empty()) sizes[d] = (*given)[d];
    else if (!factors.empty()) sizes[d] = int64_t(std::floor(double(input[d]) * factors[d]));
    else c.fail("neither output_size nor scale_factors is given");
  }
  return sizes;
}

// in / out, or 1 / scale when a scale was given (PyTorch's area_pixel_compute_scale).
double pixel_scale(bool align_corners, int64_t in, int64_t out, double scale) {
  if (align_corners) return out > 1 ? double(in - 1) / double(out - 1) : 0.0;
  return scale > 0 ? 1.0 / scale : double(in) / double(out);
}

// Resizes dim `dim` of x from `in` to `out`.
ir::Node* resize_dim(AtenNodeContext& c, ir::Node* x, int64_t dim, int64_t in, int64_t out, double scale, Interpolation mode,
                     bool align_corners) {
  auto indices = [&](const std::vector<int64_t>& v) { return c.constant(Tensor::from_vector({int64_t(v.size())}, v, DType::i64), "resize_index"); };
  auto weights = [&](const std::vector<double>& w) {
    std::vector<SymInt> shape(size_t(rank_of(x)), SymInt(1));
    shape[size_t(dim)] = SymInt(int64_t(w.size()));
    ir::Node* t = c.constant(Tensor::from_vector({int64_t(w.size())}, w, is_floating(dtype_of(x)) ? dtype_of(x) : DType::f32), "resize_weight");
    return c.call("reshape", {t, ir::Argument::sym_ints(shape)});
  };
  if (mode == Interpolation::nearest || mode == Interpolation::nearest_exact) {
    double s = pixel_scale(false, in, out, scale);
    std::vector<int64_t> picks;
    for (int64_t i = 0; i < out; ++i) {
      double src = mode == Interpolation::nearest ? std::floor(double(i) * s) : std::floor((double(i) + 0.5) * s);
      picks.push_back(std::min<int64_t>(int64_t(src), in - 1));
    }
    return c.call("index_select", {x, dim, indices(picks)});
  }
  double s = pixel_scale(align_corners, in, out, scale);
  if (mode == Interpolation::linear) {
    std::vector<int64_t> low, high;
    std::vector<double> low_weight, high_weight;
    for (int64_t i = 0; i < out; ++i) {
      double src = align_corners ? double(i) * s : std::max(0.0, (double(i) + 0.5) * s - 0.5);
      int64_t i0 = std::min<int64_t>(int64_t(src), in - 1);
      int64_t i1 = std::min<int64_t>(i0 + 1, in - 1);
      double lambda = std::clamp(src - double(i0), 0.0, 1.0);
      low.push_back(i0);
      high.push_back(i1);
      low_weight.push_back(1.0 - lambda);
      high_weight.push_back(lambda);
    }
    ir::Node* a = c.call("mul", {c.call("index_select", {x, dim, indices(low)}), weights(low_weight)});
    ir::Node* b = c.call("mul", {c.call("index_select", {x, dim, indices(high)}), weights(high_weight)});
    return c.call("add", {a, b});
  }
  // cubic: Keys' kernel with A = -0.75, taps clamped to the edges.
  constexpr double A = -0.75;
  auto near = [](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };
  std::array<std::vector<int64_t>, 4> taps;
  std::array<std::vector<double>, 4> tap_weights;
  for (int64_t i = 0; i < out; ++i) {
    double src = align_corners ? double(i) * s : (double(i) + 0.5) * s - 0.5;
    double base = std::floor(src);
    double t = src - base;
    std::array<double, 4> w = {far(t + 1), near(t), near(1 - t), far(2 - t)};
    for (int k = 0; k < 4; ++k) {
      taps[size_t(k)].push_back(std::clamp<int64_t>(int64_t(base) - 1 + k, 0, in - 1));
      tap_weights[size_t(k)].push_back(w[size_t(k)]);
    }
  }
  ir::Node* sum = nullptr;
  for (size_t k = 0; k < 4; ++k) {
    ir::Node* term = c.call("mul", {c.call("index_select", {x, dim, indices(taps[k])}), weights(tap_weights[k])});
    sum = sum ? c.call("add", {sum, term}) : term;
  }
  return sum;
}

AtenConverter upsample(Interpolation mode) {
  return [mode](AtenNodeContext& c) {
    ir::Node* x = c.tensor(c.find("input") ? "input" : "self");
    int64_t rank = rank_of(x);
    if (rank < 3) c.fail("upsampling expects a batched input (N, C, ...), got rank ", rank);
    std::vector<int64_t> input;
    for (int64_t d = 2; d < rank; ++d) {
      std::optional<int64_t> size = shape_of(x)[size_t(d)].maybe_constant();
      if (!size) c.fail("upsampling a dim of symbolic size is not supported (the resized dims must be static)");
      input.push_back(*size);
    }
    std::vector<double> scales;
    std::vector<int64_t> sizes = output_sizes(c, input, scales);
    bool align_corners = c.bool_arg("align_corners", false);
    ir::Node* y = x;
    for (size_t d = 0; d < input.size(); ++d)
      y = resize_dim(c, y, int64_t(d) + 2, input[d], sizes[d], scales[d], mode, align_corners);
    c.set_output(0, y == x ? c.call("clone", {x}) : y);
  };
}

// im2col(self [N, C, H, W] or [C, H, W], kernel_size, dilation, padding, stride): the sliding
// windows as columns, [N, C * kh * kw, L], rows ordered by channel, then kernel row and column.
// Each kernel offset (i, j) is a slice of the zero-padded input starting at (i dh, j dw) with
// the strides as steps; the slices are stacked after the channels and merged.
void convert_im2col(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<int64_t> kernel = per_dim(c, c.ints("kernel_size"), 2, "kernel_size");
  std::vector<int64_t> dilation = per_dim(c, c.ints("dilation"), 2, "dilation");
  std::vector<int64_t> padding = per_dim(c, c.ints("padding"), 2, "padding");
  std::vector<int64_t> stride = per_dim(c, c.ints("stride"), 2, "stride");
  for (size_t i = 0; i < 2; ++i)
    if (kernel[i] <= 0 || dilation[i] <= 0 || stride[i] <= 0 || padding[i] < 0)
      c.fail("im2col expects positive kernel_size, dilation and stride and non-negative padding");
  if (rank_of(x) != 3 && rank_of(x) != 4)
    c.fail("im2col expects a 3-d or 4-d input ([C, H, W] or [N, C, H, W]), got ", x->value().type_string());
  c.set_output(0, batched(c, x, 2, [&](ir::Node* input) {
    const ir::SymShape& shape = shape_of(input);
    std::vector<ir::SymInt> outputs;
    for (size_t i = 0; i < 2; ++i) {
      ir::SymInt span = shape[2 + i] + ir::SymInt(2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1);
      std::optional<int64_t> known = span.maybe_constant();
      if (known && *known < 0)
        c.fail("im2col: the padded input ", input->value().type_string(), " is smaller than the dilated kernel");
      outputs.push_back(floordiv(span, ir::SymInt(stride[i])) + ir::SymInt(1));
    }
    ir::Node* padded = c.call("pad", {input, ir::Argument::ints({padding[1], padding[1], padding[0], padding[0]})});
    std::vector<ir::Argument> windows;
    for (int64_t i = 0; i < kernel[0]; ++i) {
      for (int64_t j = 0; j < kernel[1]; ++j) {
        ir::SymInt top(i * dilation[0]), left(j * dilation[1]);
        ir::Node* rows = c.call("slice", {padded, int64_t(2), top, top + (outputs[0] - 1) * stride[0] + 1, stride[0]});
        ir::Node* window = c.call("slice", {rows, int64_t(3), left, left + (outputs[1] - 1) * stride[1] + 1, stride[1]});
        windows.emplace_back(c.call("unsqueeze", {window, int64_t(2)}));
      }
    }
    ir::Node* stacked = c.call("cat", {ir::Argument(windows), int64_t(2)});  // [N, C, kh * kw, oh, ow]
    return c.call("reshape", {stacked, ir::Argument::sym_ints({shape[0], shape[1] * ir::SymInt(kernel[0] * kernel[1]),
                                                                outputs[0] * outputs[1]})});
  }));
}

// max_unpool2d/3d(self, indices, output_size, ...): zeros of the output planes with each value
// written at its index (flat in its plane, as max pooling returns them); an index outside the
// plane fails at run time as an index does.
AtenConverter max_unpool(size_t spatial) {
  return [spatial](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    ir::Node* indices = cast_to(c, c.tensor("indices"), DType::i64);
    std::vector<ir::SymInt> size = c.sym_ints("output_size");
    if (size.size() != spatial) c.fail("output_size must have ", spatial, " elements, got ", size.size());
    int64_t rank = rank_of(x);
    if (rank != int64_t(spatial) + 1 && rank != int64_t(spatial) + 2)
      c.fail("expected a ", spatial + 1, "-d or ", spatial + 2, "-d input, got ", x->value().type_string());
    if (shape_of(indices) != shape_of(x))
      c.fail("expected indices of the input's shape ", x->value().type_string(), ", got ", indices->value().type_string());
    c.set_output(0, batched(c, x, spatial, [&](ir::Node* input) {
      ir::Node* where = rank == int64_t(spatial) + 1 ? c.call("unsqueeze", {indices, int64_t(0)}) : indices;
      const ir::SymShape& shape = shape_of(input);
      ir::SymInt plane = 1;
      for (const ir::SymInt& s : size) plane = plane * s;
      std::vector<ir::SymInt> flat = {shape[0], shape[1], ir::SymInt(-1)};
      ir::Node* zeros = c.call("full", {ir::Argument::sym_ints({shape[0], shape[1], plane}), 0.0}, {{"dtype", dtype_of(input)}});
      ir::Node* placed = c.call("scatter", {zeros, int64_t(2), c.call("reshape", {where, ir::Argument::sym_ints(flat)}),
                                            c.call("reshape", {input, ir::Argument::sym_ints(flat)})});
      std::vector<ir::SymInt> out = {shape[0], shape[1]};
      out.insert(out.end(), size.begin(), size.end());
      return c.call("reshape", {placed, ir::Argument::sym_ints(out)});
    }));
  };
}

// grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners): ATen numbers the
// modes (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border, 2 reflection).
void convert_grid_sampler(AtenNodeContext& c) {
  static const char* const kModes[] = {"bilinear", "nearest", "bicubic"};
  static const char* const kPadding[] = {"zeros", "border", "reflection"};
  int64_t mode = c.int_arg("interpolation_mode");
  int64_t padding = c.int_arg("padding_mode");
  if (mode < 0 || mode > 2) c.fail("interpolation_mode must be 0 (bilinear), 1 (nearest) or 2 (bicubic), got ", mode);
  if (padding < 0 || padding > 2) c.fail("padding_mode must be 0 (zeros), 1 (border) or 2 (reflection), got ", padding);
  // Bicubic border and reflection differ between PyTorch and ONNX where a coordinate falls
  // outside: PyTorch pads each of the 4 taps' indices, ONNX (and Kiln's grid_sample) pads the
  // coordinate first and then each tap.
  if (mode == 2 && padding != 0)
    c.fail("bicubic grid sampling with ", kPadding[padding], " padding is not supported: PyTorch pads each tap where "
           "Kiln's grid_sample pads the coordinate first, as ONNX does (bilinear, nearest, and bicubic with zeros padding are)");
  ir::Node* input = c.tensor("input");
  c.emit(0, "grid_sample", {input, c.tensor("grid"), std::string(kModes[mode]), std::string(kPadding[padding]),
                            c.bool_arg("align_corners")});
}

// affine_grid_generator(theta [N, r, r + 1], size [N, C, (D,) H, W], align_corners): the sampling
// grid [N, (D,) H, W, r], the base grid of normalized coordinates times theta^T.
void convert_affine_grid_generator(AtenNodeContext& c) {
  ir::Node* theta = c.tensor("theta");
  std::vector<int64_t> size = c.ints("size");
  if (size.size() != 4 && size.size() != 5) c.fail("affine_grid only supports 4D and 5D sizes, got ", size.size(), " sizes");
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  int64_t r = int64_t(spatial.size());
  const ir::SymShape& shape = shape_of(theta);
  if (rank_of(theta) != 3 || !(shape[1] == ir::SymInt(r)) || !(shape[2] == ir::SymInt(r + 1)))
    c.fail("expected theta [N, ", r, ", ", r + 1, "] for ", r, " spatial dims, got ", theta->value().type_string());
  ir::Node* base = c.constant(affine_base_grid(spatial, c.bool_arg("align_corners"), dtype_of(theta), SinglePoint::at_centre),
                              "affine_base_grid");
  ir::Node* grid = c.call("matmul", {base, c.call("transpose", {theta, int64_t(1), int64_t(2)})});  // [N, points, r]
  std::vector<int64_t> result = {size[0]};
  result.insert(result.end(), spatial.begin(), spatial.end());
  result.push_back(r);
  c.emit(0, "reshape", {grid, ir::Argument::ints(result)});
}

}  // namespace

void register_aten_conv_pool_ops(AtenOpTable& table) {
  for (size_t spatial : {1, 2, 3}) {
    std::string suffix = std::to_string(spatial) + "d";
    add_op(table, "conv" + suffix, "default", conv(spatial));
    add_op(table, "conv" + suffix, "padding", conv(spatial));
    add_op(table, "conv_transpose" + suffix, "input", conv_transpose(spatial));
    add_op(table, "conv_transpose" + suffix, "default", conv_transpose(spatial));  // conv_transpose1d's name
    add_op(table, "max_pool" + suffix, "default", max_pool(spatial, false));
    add_op(table, "max_pool" + suffix + "_with_indices", "default", max_pool(spatial, true));
    add_op(table, "avg_pool" + suffix, "default", convert_avg_pool);
    add_op(table, "adaptive_avg_pool" + suffix, "default", convert_adaptive_avg_pool);
    add_op(table, "adaptive_max_pool" + suffix, "default", convert_adaptive_max_pool);
  }
  add_op(table, "_adaptive_avg_pool2d", "default", convert_adaptive_avg_pool);
  add_op(table, "_adaptive_avg_pool3d", "default", convert_adaptive_avg_pool);
  add_op(table, "convolution", "default", convert_convolution);
  add_op(table, "im2col", "default", convert_im2col);
  for (const char* name : {"grid_sampler", "grid_sampler_2d", "grid_sampler_3d"}) add_op(table, name, "default", convert_grid_sampler);
  add_op(table, "affine_grid_generator", "default", convert_affine_grid_generator);
  add_op(table, "max_unpool2d", "default", max_unpool(2));
  add_op(table, "max_unpool3d", "default", max_unpool(3));
  add_op(table, "_convolution", "default", convert_convolution);
  for (const char* overload : {"vec", "default"}) {
    for (const char* rank : {"1d", "2d", "3d"}) {
      add_op(table, std::string("upsample_nearest") + rank, overload, upsample(Interpolation::nearest));
      add_op(table, std::string("_upsample_nearest_exact") + rank, overload, upsample(Interpolation::nearest_exact));
    }
    add_op(table, "upsample_linear1d", overload, upsample(Interpolation::linear));
    add_op(table, "upsample_bilinear2d", overload, upsample(Interpolation::linear));
    add_op(table, "upsample_trilinear3d", overload, upsample(Interpolation::linear));
    add_op(table, "upsample_bicubic2d", overload, upsample(Interpolation::cubic));
  }
}

}  // namespace kiln::frontends
