// ONNX Resize, modes nearest, linear and cubic (opsets 11-21), as index selections along each
// resized axis: nearest picks one source index per output index; linear blends two with a
// weight, cubic four (Keys' kernel with cubic_coeff_a, edge values repeated beyond the ends,
// or, with exclude_outside, those taps dropped and the weights renormalized); separable, so
// bilinear and bicubic are one axis after another. The indices and weights follow ONNX's
// coordinate_transformation_mode and nearest_mode exactly and are computed at import time, so
// the resized axes must be static. Not supported: tf_crop_and_resize, antialias,
// keep_aspect_ratio_policy other than stretch.
#include <algorithm>
#include <array>
#include <cmath>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

// The source coordinate of output index `out` along an axis. As in ONNX's reference, the
// resized length in align_corners and pytorch_half_pixel is in_size * scale unrounded (a
// downsampling by 0.6 of 4 elements divides by 2.4 - 1, not by 2 - 1).
double source_coordinate(const OnnxNodeContext& context, const std::string& mode, int64_t out, int64_t in_size,
                         int64_t out_size, double scale) {
  double o = double(out);
  double resized_length = double(in_size) * scale;
  if (mode == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return resized_length > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resized_length == 1 ? 0.0 : o * double(in_size - 1) / (resized_length - 1);
  if (mode == "asymmetric") return o / scale;
  if (mode == "half_pixel_symmetric") {
    double adjustment = double(out_size) / (scale * double(in_size));
    double center = double(in_size) / 2;
    return center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
  }
  context.fail("coordinate_transformation_mode '", mode, "' is not supported");
}

int64_t nearest_index(const OnnxNodeContext& context, const std::string& mode, double x, int64_t in_size) {
  double index = 0;
  bool half = std::fabs(x - std::floor(x) - 0.5) < 1e-9;
  if (mode == "round_prefer_floor") index = half ? std::floor(x) : std::round(x);
  else if (mode == "round_prefer_ceil") index = half ? std::ceil(x) : std::round(x);
  else if (mode == "floor") index = std::floor(x);
  else if (mode == "ceil") index = std::ceil(x);
  else context.fail("nearest_mode '", mode, "' is not supported");
  return std::clamp<int64_t>(int64_t(index), 0, in_size - 1);
}

Tensor index_tensor(const std::vector<int64_t>& indices) {
  return Tensor::from_vector({int64_t(indices.size())}, indices, DType::i64);
}

// Keys' cubic convolution weights of the taps at floor - 1 .. floor + 2 for a coordinate
// `ratio` (in (0, 1]) past the second tap, as ONNX's reference computes them.
std::array<double, 4> cubic_weights(double ratio, double a) {
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };          // |d| <= 1
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };     // 1 < |d| < 2
  return {far(ratio + 1), near(ratio), near(1 - ratio), far(2 - ratio)};
}

// Cubic resizing of `x` along `axis`: the sum over four taps of x's selected elements times
// their per-output-index weights.
ir::Node* resize_cubic(OnnxNodeContext& context, ir::Node* x, int64_t axis, const std::vector<double>& coordinates,
                       int64_t in_size) {
  double a = context.float_attribute("cubic_coeff_a", -0.75);
  bool exclude_outside = context.int_attribute("exclude_outside", 0) != 0;
  std::array<std::vector<int64_t>, 4> taps;
  std::array<std::vector<double>, 4> weights;
  for (double coordinate : coordinates) {
    int64_t base = int64_t(std::ceil(coordinate)) - 1;  // an integral coordinate is ratio 1 past base
    std::array<double, 4> w = cubic_weights(coordinate - double(base), a);
    double total = 0;
    for (int64_t k = 0; k < 4; ++k) {
      int64_t index = base - 1 + k;
      if (exclude_outside && (index < 0 || index >= in_size)) w[size_t(k)] = 0;
      total += w[size_t(k)];
    }
    for (size_t k = 0; k < 4; ++k) {
      taps[k].push_back(std::clamp<int64_t>(base - 1 + int64_t(k), 0, in_size - 1));
      weights[k].push_back(exclude_outside ? w[k] / total : w[k]);
    }
  }
  Sizes weight_shape(size_t(x->value().rank()), 1);
  weight_shape[size_t(axis)] = int64_t(coordinates.size());
  ir::Node* sum = nullptr;
  for (size_t k = 0; k < 4; ++k) {
    ir::Node* selected = context.call("index_select", {x, axis, context.constant_node(index_tensor(taps[k]))});
    ir::Node* term = context.call(
        "mul", {selected, context.constant_node(Tensor::from_doubles(weight_shape, weights[k], x->value().dtype))});
    sum = sum ? context.call("add", {sum, term}) : term;
  }
  return sum;
}

void convert_resize(OnnxNodeContext& context) {
  std::string mode = context.string_attribute("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    context.fail("mode '", mode, "' is not one of nearest, linear, cubic");
  std::string transform = context.string_attribute("coordinate_transformation_mode", "half_pixel");
  std::string nearest_mode = context.string_attribute("nearest_mode", "round_prefer_floor");
  if (context.int_attribute("antialias", 0) != 0) context.fail("antialias is not supported");
  if (context.string_attribute("keep_aspect_ratio_policy", "stretch") != "stretch")
    context.fail("keep_aspect_ratio_policy other than stretch is not supported");
  ir::Node* x = context.tensor(0);
  ir::SymShape shape = x->value().shape;
  int64_t rank = int64_t(shape.size());
  std::vector<int64_t> axes = context.ints_attribute("axes", dims_from(0, rank));
  for (int64_t& axis : axes) axis = context.wrap_axis(axis, rank);

  // Scales (floats) or sizes (ints) per listed axis; whichever is given and not empty.
  std::vector<double> scales(size_t(rank), 1.0);
  std::vector<int64_t> sizes(size_t(rank), -1);
  const Tensor* scale_input = context.has_input(2) ? context.constant(2) : nullptr;
  if (context.has_input(2) && !scale_input) context.fail("scales must be a constant");
  bool by_scale = scale_input && scale_input->numel() > 0;
  if (by_scale) {
    if (scale_input->numel() != int64_t(axes.size())) context.fail("scales has ", scale_input->numel(), " values for ", axes.size(), " axes");
    for (size_t i = 0; i < axes.size(); ++i) scales[size_t(axes[i])] = scale_input->flat_double(int64_t(i));
  } else {
    if (!context.has_input(3)) context.fail("needs scales or sizes");
    std::vector<int64_t> given = context.constant_ints(3, "sizes");
    if (given.size() != axes.size()) context.fail("sizes has ", given.size(), " values for ", axes.size(), " axes");
    for (size_t i = 0; i < axes.size(); ++i) sizes[size_t(axes[i])] = given[i];
  }

  ir::Node* result = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    const ir::SymInt& dim = shape[size_t(axis)];
    bool unchanged = by_scale ? scales[size_t(axis)] == 1.0 : sizes[size_t(axis)] == -1 || dim == ir::SymInt(sizes[size_t(axis)]);
    if (unchanged) continue;
    if (!dim.is_constant()) context.fail("resizing dim ", axis, " needs its size to be static, but it is ", dim);
    int64_t in_size = dim.constant();
    int64_t out_size = by_scale ? int64_t(std::floor(double(in_size) * scales[size_t(axis)])) : sizes[size_t(axis)];
    double scale = by_scale ? scales[size_t(axis)] : double(out_size) / double(in_size);
    if (out_size <= 0 || scale <= 0) context.fail("resizing dim ", axis, " to ", out_size, " elements is not possible");
    if (mode == "nearest") {
      std::vector<int64_t> indices;
      for (int64_t o = 0; o < out_size; ++o)
        indices.push_back(nearest_index(context, nearest_mode, source_coordinate(context, transform, o, in_size, out_size, scale), in_size));
      result = context.call("index_select", {result, axis, context.constant_node(index_tensor(indices))});
      continue;
    }
    if (mode == "cubic") {
      std::vector<double> coordinates;
      for (int64_t o = 0; o < out_size; ++o)
        coordinates.push_back(source_coordinate(context, transform, o, in_size, out_size, scale));
      result = resize_cubic(context, result, axis, coordinates, in_size);
      continue;
    }
    std::vector<int64_t> low, high;
    std::vector<double> weights;
    for (int64_t o = 0; o < out_size; ++o) {
      double coordinate = std::clamp(source_coordinate(context, transform, o, in_size, out_size, scale), 0.0, double(in_size - 1));
      int64_t below = int64_t(std::floor(coordinate));
      low.push_back(below);
      high.push_back(std::min(below + 1, in_size - 1));
      weights.push_back(coordinate - double(below));
    }
    Sizes weight_shape(size_t(rank), 1);
    weight_shape[size_t(axis)] = out_size;
    Tensor weight = Tensor::from_doubles(weight_shape, weights, result->value().dtype);
    ir::Node* a = context.call("index_select", {result, axis, context.constant_node(index_tensor(low))});
    ir::Node* b = context.call("index_select", {result, axis, context.constant_node(index_tensor(high))});
    ir::Node* blend = context.call("mul", {context.call("sub", {b, a}), context.constant_node(weight)});
    result = context.call("add", {a, blend});
  }
  if (result == x) return context.set_output(0, context.input(0));
  context.set_output(0, result);
}

}  // namespace

void register_onnx_resize_ops(OnnxOpTable& table) { table.add("Resize", convert_resize); }

}  // namespace kiln::frontends
