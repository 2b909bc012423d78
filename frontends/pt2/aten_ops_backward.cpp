// The backward ops of the Core ATen opset (they appear in exported joint or training-step
// programs), as compositions: embedding_dense_backward (an accumulating index_put),
// max_pool2d_with_indices_backward (a scatter-add at the saved indices), avg_pool2d_backward (a
// transposed convolution of the gradient divided by each window's count, cropped to the input),
// _adaptive_avg_pool2d_backward (two matrix products with the pooling's averaging matrices),
// native_layer_norm_backward and native_group_norm_backward (the closed-form gradients), and
// col2im (a scatter-add of the columns into the image). Pooled sizes must be static.
#include <algorithm>
#include <numeric>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

int64_t static_size(AtenNodeContext& c, const SymInt& size, const char* what) {
  if (!size.is_constant()) c.fail(what, " must be static, got ", size.to_string());
  return size.constant();
}

void convert_embedding_dense_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_output");
  ir::Node* indices = c.tensor("indices");
  SymInt rows = c.sym_int("num_weights");
  int64_t padding = c.int_arg("padding_idx", -1);
  SymInt count = 1;
  for (const SymInt& size : shape_of(indices)) count = count * size;
  SymInt width = shape_of(grad).back();
  ir::Node* flat = cast_to(c, reshape_to(c, indices, {count}), DType::i64);
  ir::Node* g = reshape_to(c, grad, {count, width});
  if (padding >= 0) g = c.call("where", {c.call("unsqueeze", {c.call("eq", {flat, padding}), int64_t(1)}), 0.0, g});
  if (c.bool_arg("scale_grad_by_freq", false)) {
    ir::Node* ones = c.call("full", {ir::Argument::sym_ints({count}), 1.0}, {{"dtype", dtype_of(grad)}});
    ir::Node* zeros = c.call("full", {ir::Argument::sym_ints({rows}), 0.0}, {{"dtype", dtype_of(grad)}});
    ir::Node* counts = c.call("index_put", {zeros, std::vector<ir::Argument>{flat}, ones, true});
    g = c.call("div", {g, c.call("unsqueeze", {c.call("index_select", {counts, int64_t(0), flat}), int64_t(1)})});
  }
  ir::Node* zeros = c.call("full", {ir::Argument::sym_ints({rows, width}), 0.0}, {{"dtype", dtype_of(grad)}});
  c.set_output(0, c.call("index_put", {zeros, std::vector<ir::Argument>{flat}, g, true}));
}

// The gradient flows to the input position each window's max came from (indices: flat
// positions in each H x W plane).
void convert_max_pool_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_output");
  ir::Node* self = c.tensor("self");
  ir::Node* indices = c.tensor("indices");
  const ir::SymShape& shape = shape_of(self);
  size_t batch_dims = shape.size() - 2;
  std::vector<SymInt> planes(shape.begin(), shape.begin() + long(batch_dims));
  std::vector<SymInt> flat_in = planes, flat_out = planes;
  flat_in.push_back(shape[batch_dims] * shape[batch_dims + 1]);
  const ir::SymShape& out = shape_of(grad);
  flat_out.push_back(out[batch_dims] * out[batch_dims + 1]);
  ir::Node* zeros = c.call("full", {ir::Argument::sym_ints(flat_in), 0.0}, {{"dtype", dtype_of(grad)}});
  int64_t last = int64_t(flat_in.size()) - 1;
  ir::Node* summed = c.call("scatter", {zeros, last, cast_to(c, reshape_to(c, indices, flat_out), DType::i64), reshape_to(c, grad, flat_out)},
                            {{"reduce", std::string("sum")}});
  c.set_output(0, reshape_to(c, summed, shape));
}

void convert_avg_pool_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_output");
  ir::Node* self = c.tensor("self");
  std::vector<int64_t> kernel = c.ints("kernel_size");
  std::vector<int64_t> stride = c.ints("stride", std::vector<int64_t>{});
  std::vector<int64_t> padding = c.ints("padding", std::vector<int64_t>{0});
  if (kernel.size() == 1) kernel.push_back(kernel[0]);
  if (stride.empty()) stride = kernel;
  if (stride.size() == 1) stride.push_back(stride[0]);
  if (padding.size() == 1) padding.push_back(padding[0]);
  bool count_include_pad = c.bool_arg("count_include_pad", true);
  std::optional<int64_t> divisor = c.optional_int("divisor_override");
  const ir::SymShape& in = shape_of(self);
  const ir::SymShape& out = shape_of(grad);
  size_t batch_dims = in.size() - 2;
  int64_t height = static_size(c, in[batch_dims], "the input height"), width = static_size(c, in[batch_dims + 1], "the input width");
  int64_t out_h = static_size(c, out[batch_dims], "the output height"), out_w = static_size(c, out[batch_dims + 1], "the output width");
  // Each window's divisor, as PyTorch's avg_pool2d computes it.
  std::vector<double> inverse(size_t(out_h * out_w));
  for (int64_t oh = 0; oh < out_h; ++oh)
    for (int64_t ow = 0; ow < out_w; ++ow) {
      int64_t h0 = oh * stride[0] - padding[0], w0 = ow * stride[1] - padding[1];
      int64_t h1 = std::min(h0 + kernel[0], height + padding[0]), w1 = std::min(w0 + kernel[1], width + padding[1]);
      int64_t pool = (h1 - h0) * (w1 - w0);
      h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
      h1 = std::min(h1, height), w1 = std::min(w1, width);
      int64_t count = divisor ? *divisor : count_include_pad ? pool : (h1 - h0) * (w1 - w0);
      inverse[size_t(oh * out_w + ow)] = count > 0 ? 1.0 / double(count) : 0.0;
    }
  ir::Node* scale = c.constant(Tensor::from_vector({out_h, out_w}, inverse, dtype_of(grad)), "avg_pool_scale");
  ir::Node* scaled = c.call("mul", {grad, scale});
  // Batched as [N * C, 1, OH, OW] through a transposed convolution with a kernel of ones.
  SymInt planes = 1;
  for (size_t d = 0; d < batch_dims; ++d) planes = planes * in[d];
  ir::Node* image = reshape_to(c, scaled, {planes, SymInt(1), SymInt(out_h), SymInt(out_w)});
  ir::Node* ones = c.call("full", {ir::Argument::ints({1, 1, kernel[0], kernel[1]}), 1.0}, {{"dtype", dtype_of(grad)}});
  ir::Node* spread = c.call("convolution", {image, ones, ir::Argument(), ir::Argument::ints(stride), ir::Argument::ints({0, 0}),
                                            ir::Argument::ints({1, 1}), true, ir::Argument::ints({0, 0}), int64_t(1)});
  // spread covers padded rows [0, (OH - 1) * s + k): crop (or pad) to [p, p + H).
  int64_t full_h = (out_h - 1) * stride[0] + kernel[0], full_w = (out_w - 1) * stride[1] + kernel[1];
  std::vector<SymInt> pads = {SymInt(0), SymInt(std::max<int64_t>(0, padding[1] + width - full_w)), SymInt(0),
                              SymInt(std::max<int64_t>(0, padding[0] + height - full_h))};
  if (pads[1].constant() > 0 || pads[3].constant() > 0) spread = c.call("pad", {spread, ir::Argument::sym_ints(pads), std::string("constant"), 0.0});
  spread = c.call("slice", {spread, int64_t(2), SymInt(padding[0]), SymInt(padding[0] + height)});
  spread = c.call("slice", {spread, int64_t(3), SymInt(padding[1]), SymInt(padding[1] + width)});
  c.set_output(0, reshape_to(c, spread, in));
}

// The averaging matrix of adaptive pooling along one dim: [out, in], row o averaging
// [floor(o * in / out), ceil((o + 1) * in / out)).
Tensor averaging_matrix(int64_t out, int64_t in, DType dtype) {
  std::vector<double> values(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    for (int64_t i = start; i < end; ++i) values[size_t(o * in + i)] = 1.0 / double(end - start);
  }
  return Tensor::from_vector({out, in}, values, dtype);
}

void convert_adaptive_avg_pool_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_output");
  ir::Node* self = c.tensor("self");
  size_t rank = shape_of(self).size();
  int64_t height = static_size(c, shape_of(self)[rank - 2], "the input height"), width = static_size(c, shape_of(self)[rank - 1], "the input width");
  int64_t out_h = static_size(c, shape_of(grad)[rank - 2], "the output height"), out_w = static_size(c, shape_of(grad)[rank - 1], "the output width");
  ir::Node* rows = c.constant(averaging_matrix(out_h, height, dtype_of(grad)), "adaptive_rows");      // [OH, H]
  ir::Node* columns = c.constant(averaging_matrix(out_w, width, dtype_of(grad)), "adaptive_columns");  // [OW, W]
  ir::Node* spread = c.call("matmul", {c.call("transpose", {rows, int64_t(0), int64_t(1)}), grad});  // [..., H, OW]
  c.set_output(0, c.call("matmul", {spread, columns}));                                           // [..., H, W]
}

// Reads output_mask (bool[3]); an absent mask computes everything.
std::vector<bool> output_mask(AtenNodeContext& c) {
  const ExportArgument* arg = c.find("output_mask");
  std::vector<bool> mask = {true, true, true};
  if (arg && arg->kind == "as_bools")
    for (size_t i = 0; i < 3 && i < arg->value.size(); ++i) mask[i] = arg->value[i].get<bool>();
  return mask;
}

void convert_layer_norm_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_out");
  ir::Node* x = c.tensor("input");
  ir::Node* mean = c.tensor("mean");
  ir::Node* rstd = c.tensor("rstd");
  ir::Node* weight = c.optional_tensor("weight");
  std::vector<bool> mask = output_mask(c);
  size_t normalized = c.sym_ints("normalized_shape").size();
  int64_t rank = rank_of(x);
  std::vector<int64_t> inner, outer;
  for (int64_t d = 0; d < rank; ++d) (d >= rank - int64_t(normalized) ? inner : outer).push_back(d);
  ir::Node* x_hat = c.call("mul", {c.call("sub", {x, mean}), rstd});
  if (mask[0] && c.output_used(0)) {
    ir::Node* g = weight ? c.call("mul", {grad, weight}) : grad;
    ir::Node* g_mean = c.call("mean", {g, ir::Argument::ints(inner), true});
    ir::Node* gx_mean = c.call("mean", {c.call("mul", {g, x_hat}), ir::Argument::ints(inner), true});
    c.set_output(0, c.call("mul", {rstd, c.call("sub", {c.call("sub", {g, g_mean}), c.call("mul", {x_hat, gx_mean})})}));
  }
  if (mask[1] && c.output_used(1) && weight) c.set_output(1, c.call("sum", {c.call("mul", {grad, x_hat}), ir::Argument::ints(outer), false}));
  if (mask[2] && c.output_used(2)) c.set_output(2, c.call("sum", {grad, ir::Argument::ints(outer), false}));
}

void convert_group_norm_backward(AtenNodeContext& c) {
  ir::Node* grad = c.tensor("grad_out");
  ir::Node* x = c.tensor("input");
  ir::Node* mean = c.tensor("mean");
  ir::Node* rstd = c.tensor("rstd");
  ir::Node* weight = c.optional_tensor("weight");
  std::vector<bool> mask = output_mask(c);
  SymInt n = c.sym_int("N"), channels = c.sym_int("C"), spatial = c.sym_int("HxW");
  int64_t groups = c.int_arg("group");
  SymInt per_group = floordiv(channels, SymInt(groups));
  std::vector<SymInt> grouped = {n, SymInt(groups), per_group, spatial};
  ir::Node* xg = reshape_to(c, x, grouped);
  ir::Node* gg = reshape_to(c, grad, grouped);
  ir::Node* m = reshape_to(c, mean, {n, SymInt(groups), SymInt(1), SymInt(1)});
  ir::Node* r = reshape_to(c, rstd, {n, SymInt(groups), SymInt(1), SymInt(1)});
  ir::Node* x_hat = c.call("mul", {c.call("sub", {xg, m}), r});
  if (mask[0] && c.output_used(0)) {
    ir::Node* g = weight ? c.call("mul", {gg, reshape_to(c, weight, {SymInt(1), SymInt(groups), per_group, SymInt(1)})}) : gg;
    ir::Argument dims = ir::Argument::ints({2, 3});
    ir::Node* g_mean = c.call("mean", {g, dims, true});
    ir::Node* gx_mean = c.call("mean", {c.call("mul", {g, x_hat}), dims, true});
    ir::Node* dx = c.call("mul", {r, c.call("sub", {c.call("sub", {g, g_mean}), c.call("mul", {x_hat, gx_mean})})});
    c.set_output(0, reshape_to(c, dx, shape_of(x)));
  }
  auto per_channel = [&](ir::Node* value) {
    return c.call("sum", {reshape_to(c, value, {n, channels, spatial}), ir::Argument::ints({0, 2}), false});
  };
  if (mask[1] && c.output_used(1) && weight) c.set_output(1, per_channel(c.call("mul", {gg, x_hat})));
  if (mask[2] && c.output_used(2)) c.set_output(2, per_channel(gg));
}

// col2im: each column entry (channel, kernel row, kernel column; block l) adds into its image
// pixel; entries falling into the padding go to a dropped slot.
void convert_col2im(AtenNodeContext& c) {
  ir::Node* columns = c.tensor("self");
  std::vector<int64_t> size = c.ints("output_size"), kernel = c.ints("kernel_size"), dilation = c.ints("dilation"),
                       padding = c.ints("padding"), stride = c.ints("stride");
  auto two = [](std::vector<int64_t>& v) {
    if (v.size() == 1) v.push_back(v[0]);
  };
  two(size), two(kernel), two(dilation), two(padding), two(stride);
  bool unbatched = rank_of(columns) == 2;
  ir::Node* x = unbatched ? c.call("unsqueeze", {columns, int64_t(0)}) : columns;
  int64_t patch = kernel[0] * kernel[1];
  int64_t rows_total = static_size(c, shape_of(x)[1], "the column count"), blocks = static_size(c, shape_of(x)[2], "the block count");
  if (rows_total % patch != 0) c.fail("expected the second dim (", rows_total, ") to be divisible by the kernel size ", patch);
  int64_t channels = rows_total / patch;
  int64_t blocks_h = (size[0] + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) / stride[0] + 1;
  int64_t blocks_w = (size[1] + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) / stride[1] + 1;
  if (blocks_h * blocks_w != blocks) c.fail("expected ", blocks_h * blocks_w, " blocks, got ", blocks);
  int64_t pixels = channels * size[0] * size[1];
  std::vector<int64_t> target(size_t(rows_total * blocks));
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t i = 0; i < kernel[0]; ++i)
      for (int64_t j = 0; j < kernel[1]; ++j)
        for (int64_t bh = 0; bh < blocks_h; ++bh)
          for (int64_t bw = 0; bw < blocks_w; ++bw) {
            int64_t h = bh * stride[0] - padding[0] + i * dilation[0], w = bw * stride[1] - padding[1] + j * dilation[1];
            int64_t row = (ch * kernel[0] + i) * kernel[1] + j;
            bool inside = h >= 0 && h < size[0] && w >= 0 && w < size[1];
            target[size_t(row * blocks + bh * blocks_w + bw)] = inside ? (ch * size[0] + h) * size[1] + w : pixels;
          }
  SymInt batch = shape_of(x)[0];
  ir::Node* index = c.constant(Tensor::from_vector({1, rows_total * blocks}, target, DType::i64), "col2im_index");
  index = c.call("expand", {index, ir::Argument::sym_ints({batch, SymInt(rows_total * blocks)})});
  ir::Node* zeros = c.call("full", {ir::Argument::sym_ints({batch, SymInt(pixels + 1)}), 0.0}, {{"dtype", dtype_of(x)}});
  ir::Node* summed = c.call("scatter", {zeros, int64_t(1), index, reshape_to(c, x, {batch, SymInt(rows_total * blocks)})},
                            {{"reduce", std::string("sum")}});
  ir::Node* image = reshape_to(c, c.call("slice", {summed, int64_t(1), SymInt(0), SymInt(pixels)}), {batch, SymInt(channels), SymInt(size[0]), SymInt(size[1])});
  c.set_output(0, unbatched ? c.call("squeeze", {image, ir::Argument::ints({0})}) : image);
}

}  // namespace

void register_aten_backward_ops(AtenOpTable& table) {
  add_op(table, "embedding_dense_backward", "default", convert_embedding_dense_backward);
  add_op(table, "max_pool2d_with_indices_backward", "default", convert_max_pool_backward);
  add_op(table, "avg_pool2d_backward", "default", convert_avg_pool_backward);
  add_op(table, "_adaptive_avg_pool2d_backward", "default", convert_adaptive_avg_pool_backward);
  add_op(table, "native_layer_norm_backward", "default", convert_layer_norm_backward);
  add_op(table, "native_group_norm_backward", "default", convert_group_norm_backward);
  add_op(table, "col2im", "default", convert_col2im);
}

}  // namespace kiln::frontends
