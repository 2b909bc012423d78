// ONNX ops on images and feature maps: DepthToSpace and SpaceToDepth (reshape, permute,
// reshape), CenterCropPad (slice and pad), LRN (a sum of shifted squares across channels),
// MeanVarianceNormalization (its ONNX function body), GridSample, RoiAlign and DeformConv
// (Kiln's grid_sample, roi_align and deform_conv2d), AffineGrid (a constant base grid times theta), MaxUnpool (a
// scatter into zeros) and Col2Im (a scatter-add by a constant index map). Sizes given as
// inputs (CenterCropPad's shape, AffineGrid's size, ...) must be known at import time.
#include <algorithm>
#include <map>
#include <numeric>

#include "frontends/affine_grid.h"
#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;
using ir::SymShape;

std::vector<int64_t> static_shape(const OnnxNodeContext& context, size_t index, std::string_view what) {
  std::vector<int64_t> sizes;
  for (const SymInt& size : context.shape(index)) {
    if (!size.is_constant()) context.fail(what, " must have static sizes, but its shape is ", ir::shape_string(context.shape(index)));
    sizes.push_back(size.constant());
  }
  return sizes;
}

void convert_depth_to_space(OnnxNodeContext& context) {
  std::vector<int64_t> s = static_shape(context, 0, "the input");
  int64_t block = context.int_attribute("blocksize", 0);
  if (s.size() != 4 || block < 1 || s[1] % (block * block) != 0)
    context.fail("needs an input [N, C, H, W] with C divisible by blocksize^2 (blocksize ", block, ")");
  bool crd = context.string_attribute("mode", "DCR") == "CRD";
  int64_t channels = s[1] / (block * block);
  std::vector<int64_t> split = crd ? std::vector<int64_t>{s[0], channels, block, block, s[2], s[3]}
                                   : std::vector<int64_t>{s[0], block, block, channels, s[2], s[3]};
  std::vector<int64_t> order = crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2};
  ir::Node* x = context.call("reshape", {context.tensor(0), ir::Argument::ints(split)});
  x = context.call("permute", {x, ir::Argument::ints(order)});
  context.emit(0, "reshape", {x, ir::Argument::ints({s[0], channels, s[2] * block, s[3] * block})});
}

void convert_space_to_depth(OnnxNodeContext& context) {
  std::vector<int64_t> s = static_shape(context, 0, "the input");
  int64_t block = context.int_attribute("blocksize", 0);
  if (s.size() != 4 || block < 1 || s[2] % block != 0 || s[3] % block != 0)
    context.fail("needs an input [N, C, H, W] with H and W divisible by blocksize (", block, ")");
  ir::Node* x = context.call("reshape", {context.tensor(0), ir::Argument::ints({s[0], s[1], s[2] / block, block, s[3] / block, block})});
  x = context.call("permute", {x, ir::Argument::ints({0, 3, 5, 1, 2, 4})});
  context.emit(0, "reshape", {x, ir::Argument::ints({s[0], s[1] * block * block, s[2] / block, s[3] / block})});
}

// Crops (centered, the extra element at the end) or pads with zeros (centered likewise) each
// listed axis to the size asked.
void convert_center_crop_pad(OnnxNodeContext& context) {
  std::vector<int64_t> shape = context.constant_ints(1, "shape");
  std::vector<int64_t> input = static_shape(context, 0, "the input");
  int64_t rank = int64_t(input.size());
  std::vector<int64_t> axes = context.ints_attribute("axes", dims_from(0, rank));
  if (axes.size() != shape.size()) context.fail("shape has ", shape.size(), " sizes for ", axes.size(), " axes");
  ir::Node* x = context.tensor(0);
  std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = context.wrap_axis(axes[i], rank), size = input[size_t(axis)], wanted = shape[i];
    if (wanted < 0) context.fail("shape[", i, "] is negative (", wanted, ")");
    if (wanted < size) {
      int64_t start = (size - wanted) / 2;
      x = context.call("slice", {x, axis, start, start + wanted});
    } else if (wanted > size) {
      begin[size_t(axis)] = (wanted - size) / 2;
      end[size_t(axis)] = wanted - size - begin[size_t(axis)];
    }
  }
  auto nonzero = [](int64_t v) { return v != 0; };
  if (std::any_of(begin.begin(), begin.end(), nonzero) || std::any_of(end.begin(), end.end(), nonzero))
    x = context.call("pad", {x, ir::Argument::ints(torch_pad_list(begin, end)), "constant", 0.0});
  context.set_output(0, x);
}

// y = x / (bias + alpha / size * sum of squares over channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
void convert_lrn(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  int64_t rank = x->value().rank();
  if (rank < 3) context.fail("the input must be [N, C, ...]");
  int64_t size = context.int_attribute("size", 0);
  if (size < 1) context.fail("size must be positive, but it is ", size);
  double alpha = context.float_attribute("alpha", 1e-4), beta = context.float_attribute("beta", 0.75),
         bias = context.float_attribute("bias", 1.0);
  const SymInt& channels = x->value().shape[1];
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::vector<int64_t> begin(size_t(rank - 1), 0), end(size_t(rank - 1), 0);
  begin[0] = before;
  end[0] = after;
  ir::Node* squares = context.call("mul", {x, x});
  ir::Node* padded = context.call("pad", {squares, ir::Argument::ints(torch_pad_list(begin, end)), "constant", 0.0});
  ir::Node* total = nullptr;
  for (int64_t k = 0; k < size; ++k) {
    ir::Node* shifted = context.call("slice", {padded, int64_t(1), k, SymInt(k) + channels});
    total = total ? context.call("add", {total, shifted}) : shifted;
  }
  ir::Node* scale = context.call("add", {context.call("mul", {total, alpha / double(size)}), bias});
  context.emit(0, "div", {x, context.call("pow", {scale, beta})});
}

// ONNX's function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes`.
void convert_mean_variance_normalization(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  int64_t rank = x->value().rank();
  std::vector<int64_t> axes;
  for (int64_t axis : context.ints_attribute("axes", {0, 2, 3})) axes.push_back(context.wrap_axis(axis, rank));
  ir::Argument dims = ir::Argument::ints(axes);
  ir::Node* mean = context.call("mean", {x, dims, true});
  ir::Node* mean_of_squares = context.call("mean", {context.call("mul", {x, x}), dims, true});
  ir::Node* variance = context.call("sub", {mean_of_squares, context.call("mul", {mean, mean})});
  ir::Node* deviation = context.call("add", {context.call("sqrt", {variance}), 1e-9});
  context.emit(0, "div", {context.call("sub", {x, mean}), deviation});
}

void convert_grid_sample(OnnxNodeContext& context) {
  std::string mode = context.string_attribute("mode", context.opset() >= 20 ? "linear" : "bilinear");
  static const std::map<std::string, std::string> kModes = {
      {"linear", "bilinear"}, {"bilinear", "bilinear"}, {"nearest", "nearest"}, {"cubic", "bicubic"}, {"bicubic", "bicubic"}};
  auto found = kModes.find(mode);
  if (found == kModes.end()) context.fail("mode '", mode, "' is not one of linear, nearest, cubic");
  std::string padding = context.string_attribute("padding_mode", "zeros");
  bool align_corners = context.int_attribute("align_corners", 0) != 0;
  context.emit(0, "grid_sample", {context.tensor(0), context.tensor(1), found->second, padding, align_corners});
}

void convert_roi_align(OnnxNodeContext& context) {
  // Opset 16 added the attribute (default half_pixel); RoiAlign-10 behaves as output_half_pixel.
  std::string transform = context.string_attribute("coordinate_transformation_mode",
                                                   context.opset() >= 16 ? "half_pixel" : "output_half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    context.fail("coordinate_transformation_mode '", transform, "' is not half_pixel or output_half_pixel");
  ir::Node* indices = context.tensor(2);
  if (indices->value().dtype != DType::i64) indices = context.call("cast", {indices, DType::i64});
  context.emit(0, "roi_align",
               {context.tensor(0), context.tensor(1), indices, context.int_attribute("output_height", 1),
                context.int_attribute("output_width", 1), context.int_attribute("sampling_ratio", 0),
                context.float_attribute("spatial_scale", 1.0), context.string_attribute("mode", "avg"),
                transform == "half_pixel"});
}

void convert_affine_grid(OnnxNodeContext& context) {
  std::vector<int64_t> size = context.constant_ints(1, "size");
  ir::Node* theta = context.tensor(0);
  if (size.size() != 4 && size.size() != 5) context.fail("size must be (N, C, H, W) or (N, C, D, H, W)");
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  int64_t r = int64_t(spatial.size());
  const ir::TensorMeta& meta = theta->value();
  if (meta.rank() != 3 || !(meta.shape[1] == SymInt(r)) || !(meta.shape[2] == SymInt(r + 1)))
    context.fail("theta must be [N, ", r, ", ", r + 1, "] for ", r, " spatial dims, but it is ", meta.type_string());
  bool align_corners = context.int_attribute("align_corners", 0) != 0;
  ir::Node* base = context.constant_node(affine_base_grid(spatial, align_corners, meta.dtype, SinglePoint::at_minus_one));
  ir::Node* grid = context.call("matmul", {base, context.call("transpose", {theta, int64_t(1), int64_t(2)})});
  std::vector<int64_t> shape = {size[0]};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  shape.push_back(r);
  context.emit(0, "reshape", {grid, ir::Argument::ints(shape)});
}

// Y: zeros of the size MaxPool's input had, X scattered to the flat positions in I (over the
// whole tensor), then padded at the end to output_shape when given.
void convert_max_unpool(OnnxNodeContext& context) {
  std::vector<int64_t> x = static_shape(context, 0, "X");
  size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel = context.ints_attribute("kernel_shape");
  std::vector<int64_t> strides = context.ints_attribute("strides", std::vector<int64_t>(spatial, 1));
  std::vector<int64_t> pads = context.ints_attribute("pads", std::vector<int64_t>(2 * spatial, 0));
  if (x.size() < 3 || kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial)
    context.fail("kernel_shape, strides and pads must fit the ", spatial, " spatial dims of X");
  std::vector<int64_t> inferred = {x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) inferred.push_back((x[i + 2] - 1) * strides[i] - (pads[i] + pads[i + spatial]) + kernel[i]);
  std::vector<int64_t> output = context.has_input(2) ? context.constant_ints(2, "output_shape") : inferred;
  if (output.size() != inferred.size()) context.fail("output_shape must have ", inferred.size(), " sizes");
  int64_t total = std::accumulate(inferred.begin(), inferred.end(), int64_t(1), std::multiplies<int64_t>());
  ir::Node* values = context.call("reshape", {context.tensor(0), ir::Argument::ints({-1})});
  ir::Node* positions = context.call("reshape", {context.tensor(1), ir::Argument::ints({-1})});
  if (positions->value().dtype != DType::i64) positions = context.call("cast", {positions, DType::i64});
  ir::Node* zeros = context.call("full", {ir::Argument::ints({total}), scalar_argument(0, values->value().dtype)},
                                 {{"dtype", values->value().dtype}});
  ir::Node* y = context.call("reshape", {context.call("scatter", {zeros, int64_t(0), positions, values}), ir::Argument::ints(inferred)});
  std::vector<int64_t> begin(inferred.size(), 0), end(inferred.size(), 0);
  bool grow = false;
  for (size_t d = 0; d < inferred.size(); ++d) {
    if (output[d] < inferred[d]) context.fail("output_shape[", d, "] = ", output[d], " is smaller than ", inferred[d]);
    end[d] = output[d] - inferred[d];
    grow = grow || end[d] != 0;
  }
  if (grow) y = context.call("pad", {y, ir::Argument::ints(torch_pad_list(begin, end)), "constant", 0.0});
  context.set_output(0, y);
}

// Each column element [n, c * K + k, l] added into the image pixel it came from (a constant
// index map over the padded image), then the padding cropped.
void convert_col2im(OnnxNodeContext& context) {
  std::vector<int64_t> image = context.constant_ints(1, "image_shape"), block = context.constant_ints(2, "block_shape");
  std::vector<int64_t> input = static_shape(context, 0, "the input");
  size_t r = image.size();
  std::vector<int64_t> dilations = context.ints_attribute("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> strides = context.ints_attribute("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = context.ints_attribute("pads", std::vector<int64_t>(2 * r, 0));
  if (input.size() != 3 || block.size() != r || dilations.size() != r || strides.size() != r || pads.size() != 2 * r)
    context.fail("needs an input [N, C * prod(block_shape), L] and one block size, dilation, stride and two pads per dim");
  int64_t kernel = std::accumulate(block.begin(), block.end(), int64_t(1), std::multiplies<int64_t>());
  if (input[1] % kernel != 0) context.fail("the input's dim 1 (", input[1], ") is not a multiple of prod(block_shape) = ", kernel);
  int64_t channels = input[1] / kernel;
  std::vector<int64_t> padded(r), blocks(r);
  int64_t locations = 1, plane = 1;
  for (size_t d = 0; d < r; ++d) {
    padded[d] = image[d] + pads[d] + pads[d + r];
    blocks[d] = (padded[d] - dilations[d] * (block[d] - 1) - 1) / strides[d] + 1;
    locations *= blocks[d];
    plane *= padded[d];
  }
  if (locations != input[2]) context.fail("the input has ", input[2], " block locations, the sizes give ", locations);
  // index[k, l]: the padded-image position of kernel offset k at block location l.
  std::vector<int64_t> index(static_cast<size_t>(kernel * locations));
  for (int64_t k = 0; k < kernel; ++k)
    for (int64_t l = 0; l < locations; ++l) {
      int64_t position = 0, kr = k, lr = l;
      std::vector<int64_t> offset(r), at(r);
      for (size_t d = r; d-- > 0;) {
        offset[d] = kr % block[d], kr /= block[d];
        at[d] = lr % blocks[d], lr /= blocks[d];
      }
      for (size_t d = 0; d < r; ++d) position = position * padded[d] + at[d] * strides[d] + offset[d] * dilations[d];
      index[size_t(k * locations + l)] = position;
    }
  ir::Node* columns = context.call("reshape", {context.tensor(0), ir::Argument::ints({input[0], channels, kernel * locations})});
  Tensor map = Tensor::from_vector({1, 1, kernel * locations}, index, DType::i64);
  ir::Node* where = context.call("expand", {context.constant_node(map), ir::Argument::ints({input[0], channels, kernel * locations})});
  DType dtype = columns->value().dtype;
  ir::Node* zeros = context.call("full", {ir::Argument::ints({input[0], channels, plane}), scalar_argument(0, dtype)}, {{"dtype", dtype}});
  ir::Node* summed = context.call("scatter", {zeros, int64_t(2), where, columns}, {{"reduce", "sum"}});
  std::vector<int64_t> full_shape = {input[0], channels};
  full_shape.insert(full_shape.end(), padded.begin(), padded.end());
  ir::Node* y = context.call("reshape", {summed, ir::Argument::ints(full_shape)});
  for (size_t d = 0; d < r; ++d)
    if (pads[d] != 0 || pads[d + r] != 0) y = context.call("slice", {y, int64_t(d + 2), pads[d], pads[d] + image[d]});
  context.set_output(0, y);
}

// DeformConv (2-d): Kiln's deform_conv2d; the output size is the offset's, the end pads only
// decide it (they are checked by ONNX's shape inference).
void convert_deform_conv(OnnxNodeContext& context) {
  if (context.rank(0) != 4) context.fail("only 2-d DeformConv (an input [N, C, H, W]) is supported");
  std::vector<int64_t> pads = context.ints_attribute("pads", {0, 0, 0, 0});
  std::vector<int64_t> strides = context.ints_attribute("strides", {1, 1}), dilations = context.ints_attribute("dilations", {1, 1});
  if (pads.size() != 4 || strides.size() != 2 || dilations.size() != 2) context.fail("pads, strides and dilations must fit 2 spatial dims");
  context.emit(0, "deform_conv2d",
               {context.tensor(0), context.tensor(1), context.tensor(2), optional_tensor(context, 4), optional_tensor(context, 3),
                ir::Argument::ints(strides), ir::Argument::ints({pads[0], pads[1]}), ir::Argument::ints(dilations),
                context.int_attribute("group", 1), context.int_attribute("offset_group", 1)});
}

}  // namespace

void register_onnx_spatial_ops(OnnxOpTable& table) {
  table.add("DeformConv", convert_deform_conv);
  table.add("DepthToSpace", convert_depth_to_space);
  table.add("SpaceToDepth", convert_space_to_depth);
  table.add("CenterCropPad", convert_center_crop_pad);
  table.add("LRN", convert_lrn);
  table.add("MeanVarianceNormalization", convert_mean_variance_normalization);
  table.add("GridSample", convert_grid_sample);
  table.add("RoiAlign", convert_roi_align);
  table.add("AffineGrid", convert_affine_grid);
  table.add("MaxUnpool", convert_max_unpool);
  table.add("Col2Im", convert_col2im);
}

}  // namespace kiln::frontends
