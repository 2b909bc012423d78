// ONNX Resize, modes nearest, linear and cubic (opsets 11-21), as index selections along each
// resized axis: nearest picks one source index per output index; linear blends two with a
// weight, cubic four (Keys' kernel with cubic_coeff_a, edge values repeated beyond the ends,
// or, with exclude_outside, those taps dropped and the weights renormalized); separable, so
// bilinear and bicubic are one axis after another. The indices and weights follow ONNX's
// coordinate_transformation_mode and nearest_mode exactly and are computed at import time, so
// the resized axes must be static. antialias and tf_crop_and_resize (with extrapolation_value)
// apply a matrix of the reference's tap coefficients per axis; keep_aspect_ratio_policy
// not_larger / not_smaller resize every listed axis by one scale.
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

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

// The coefficients ONNX's reference gives the taps of one output position: nearest picks one of
// two, linear and cubic (Keys) blend 2 and 4, and with antialias a downscaling widens the
// linear or cubic kernel by 1 / scale (normalized to sum to 1).
std::vector<double> tap_coefficients(const std::string& mode, const std::string& nearest_mode, bool antialias, double ratio,
                                     double scale, double a) {
  if (mode == "nearest") {
    if (ratio == 1) return {0, 1};
    if (nearest_mode == "round_prefer_floor") return {double(ratio <= 0.5), double(ratio > 0.5)};
    if (nearest_mode == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    return nearest_mode == "floor" ? std::vector<double>{1, 0} : std::vector<double>{0, 1};
  }
  if (!antialias) {
    if (mode == "linear") return {1 - ratio, ratio};
    std::array<double, 4> w = cubic_weights(ratio, a);
    return {w[0], w[1], w[2], w[3]};
  }
  scale = std::min(scale, 1.0);
  std::vector<double> coefficients;
  if (mode == "linear") {
    int64_t start = int64_t(std::floor(-1 / scale) + 1), footprint = 2 - 2 * start;
    for (int64_t i = start; i < start + footprint; ++i) coefficients.push_back(std::clamp(1 - std::fabs((double(i) - ratio) * scale), 0.0, 1.0));
  } else {
    int64_t start = int64_t(std::floor(-2 / scale) + 1), end = 2 - start;
    for (int64_t i = start; i < end; ++i) {
      double x = std::fabs(scale * (double(i) - ratio));
      coefficients.push_back(x <= 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0.0);
    }
  }
  double total = 0;
  for (double c : coefficients) total += c;
  for (double& c : coefficients) c /= total;
  return coefficients;
}

// Resizing `x` along `axis` as the reference does it for antialias and tf_crop_and_resize: a
// matrix [out, in] of tap coefficients (taps beyond the ends read the edge element, or are
// dropped with exclude_outside) applied by a matmul, plus extrapolation_value where a crop
// position falls outside the input.
ir::Node* resize_by_matrix(OnnxNodeContext& context, ir::Node* x, int64_t axis, int64_t in_size, int64_t out_size,
                           double scale, const std::string& transform, std::pair<double, double> roi) {
  std::string mode = context.string_attribute("mode", "nearest");
  std::string nearest_mode = context.string_attribute("nearest_mode", "round_prefer_floor");
  bool antialias = context.int_attribute("antialias", 0) != 0, exclude_outside = context.int_attribute("exclude_outside", 0) != 0;
  double a = context.float_attribute("cubic_coeff_a", -0.75), extrapolation = context.float_attribute("extrapolation_value", 0.0);
  std::vector<double> matrix(size_t(out_size * in_size), 0.0), bias(size_t(out_size), 0.0);
  bool extrapolated = false;
  double resized = scale * double(in_size);
  for (int64_t o = 0; o < out_size; ++o) {
    double coordinate = 0;
    if (transform == "tf_crop_and_resize") {
      coordinate = resized == 1 ? (roi.second - roi.first) * double(in_size - 1) / 2
                                : double(o) * (roi.second - roi.first) * double(in_size - 1) / (resized - 1);
      coordinate += roi.first * double(in_size - 1);
      if (coordinate < 0 || coordinate > double(in_size - 1)) {
        bias[size_t(o)] = extrapolation;
        extrapolated = true;
        continue;
      }
    } else {
      coordinate = source_coordinate(context, transform, o, in_size, out_size, scale);
    }
    double ratio = coordinate == std::floor(coordinate) ? 1.0 : coordinate - std::floor(coordinate);
    std::vector<double> coefficients = tap_coefficients(mode, nearest_mode, antialias, ratio, scale, a);
    int64_t n = int64_t(coefficients.size()), pad = (n + 1) / 2;
    // The n taps nearest to the coordinate (in the edge-padded array), preferring lower ones.
    double centre = coordinate + double(pad);
    std::vector<int64_t> taps(static_cast<size_t>(in_size + 2 * pad));
    std::iota(taps.begin(), taps.end(), 0);
    std::stable_sort(taps.begin(), taps.end(), [centre](int64_t p, int64_t q) { return std::fabs(centre - double(p)) < std::fabs(centre - double(q)); });
    taps.resize(size_t(n));
    std::sort(taps.begin(), taps.end());
    double total = 0;
    for (int64_t k = 0; k < n; ++k) {
      int64_t index = taps[size_t(k)] - pad;
      if (exclude_outside && (index < 0 || index >= in_size)) coefficients[size_t(k)] = 0;
      total += coefficients[size_t(k)];
    }
    for (int64_t k = 0; k < n; ++k) {
      int64_t index = std::clamp<int64_t>(taps[size_t(k)] - pad, 0, in_size - 1);
      matrix[size_t(o * in_size + index)] += exclude_outside ? coefficients[size_t(k)] / total : coefficients[size_t(k)];
    }
  }
  DType dtype = x->value().dtype;
  int64_t rank = x->value().rank();
  ir::Node* moved = axis == rank - 1 ? x : context.call("transpose", {x, axis, rank - 1});
  Tensor weights = Tensor::from_doubles({out_size, in_size}, matrix, dtype).transpose(0, 1).contiguous();
  ir::Node* result = context.call("matmul", {moved, context.constant_node(weights)});
  if (extrapolated) result = context.call("add", {result, context.constant_node(Tensor::from_doubles({out_size}, bias, dtype))});
  return axis == rank - 1 ? result : context.call("transpose", {result, axis, rank - 1});
}

// The most entries of the index or coefficient tables Resize's import builds for one axis (2^24:
// 128 MiB of doubles). Real models resize images, far below it; a model past it is refused at
// import rather than left to exhaust memory or time building tables.
constexpr int64_t kMaxResizeTable = int64_t(1) << 24;

// One axis's output size: floor(in_size * scale) for a scale, else the size given, checked to be
// a positive count that int64 holds (a scale of 1e30, NaN or inf is an error, not a cast).
int64_t resized_size(const OnnxNodeContext& context, int64_t axis, int64_t in_size, bool by_scale, double scale,
                     int64_t size) {
  if (!by_scale) {
    if (size <= 0) context.fail("resizing dim ", axis, " to ", size, " elements is not possible");
    return size;
  }
  double resized = std::floor(double(in_size) * scale);
  if (!(scale > 0) || !(resized >= 1) || !(resized < 9.2e18))
    context.fail("resizing dim ", axis, " of ", in_size, " elements by scale ", scale, " gives ",
                 resized, " elements, which is not possible");
  return int64_t(resized);
}

void convert_resize(OnnxNodeContext& context) {
  std::string mode = context.string_attribute("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    context.fail("mode '", mode, "' is not one of nearest, linear, cubic");
  std::string transform = context.string_attribute("coordinate_transformation_mode", "half_pixel");
  std::string nearest_mode = context.string_attribute("nearest_mode", "round_prefer_floor");
  bool antialias = context.int_attribute("antialias", 0) != 0;
  std::string policy = context.string_attribute("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    context.fail("keep_aspect_ratio_policy '", policy, "' is not stretch, not_larger or not_smaller");
  ir::Node* x = context.tensor(0);
  ir::SymShape shape = x->value().shape;
  int64_t rank = int64_t(shape.size());
  std::vector<int64_t> axes = context.ints_attribute("axes", dims_from(0, rank));
  for (int64_t& axis : axes) axis = context.wrap_axis(axis, rank);

  // Scales (floats) or sizes (ints) per listed axis; whichever is given and not empty.
  std::vector<double> scales(size_t(rank), 1.0);
  std::vector<int64_t> sizes(size_t(rank), -1);
  const Tensor* scale_input = context.has_input(2) ? &context.constant_input(2, "scales") : nullptr;
  bool by_scale = scale_input && scale_input->numel() > 0;
  if (by_scale) {
    if (scale_input->numel() != int64_t(axes.size())) context.fail("scales has ", scale_input->numel(), " values for ", axes.size(), " axes");
    for (size_t i = 0; i < axes.size(); ++i) scales[size_t(axes[i])] = scale_input->flat_double(int64_t(i));
  } else {
    if (!context.has_input(3)) context.fail("needs scales or sizes");
    std::vector<int64_t> given = context.constant_ints(3, "sizes");
    if (given.size() != axes.size()) context.fail("sizes has ", given.size(), " values for ", axes.size(), " axes");
    for (size_t i = 0; i < axes.size(); ++i) sizes[size_t(axes[i])] = given[i];
    if (policy != "stretch") {
      // One scale for every listed axis (the smallest or largest of theirs), sizes rounded half up.
      double chosen = policy == "not_larger" ? 1e300 : 0;
      for (int64_t axis : axes) {
        if (!shape[size_t(axis)].is_constant()) context.fail("keep_aspect_ratio_policy needs static sizes");
        double ratio = double(sizes[size_t(axis)]) / double(shape[size_t(axis)].constant());
        chosen = policy == "not_larger" ? std::min(chosen, ratio) : std::max(chosen, ratio);
      }
      for (int64_t axis : axes) sizes[size_t(axis)] = int64_t(chosen * double(shape[size_t(axis)].constant()) + 0.5);
    }
  }
  // tf_crop_and_resize's region per axis (start, end as fractions of the input).
  std::vector<std::pair<double, double>> regions(size_t(rank), {0.0, 1.0});
  if (transform == "tf_crop_and_resize") {
    const Tensor& roi = context.constant_input(1, "roi");
    if (roi.numel() != int64_t(2 * axes.size())) context.fail("roi has ", roi.numel(), " values for ", axes.size(), " axes");
    for (size_t i = 0; i < axes.size(); ++i)
      regions[size_t(axes[i])] = {roi.flat_double(int64_t(i)), roi.flat_double(int64_t(i + axes.size()))};
  }

  ir::Node* result = x;
  for (int64_t axis = 0; axis < rank; ++axis) {
    const ir::SymInt& dim = shape[size_t(axis)];
    bool unchanged = by_scale ? scales[size_t(axis)] == 1.0 : sizes[size_t(axis)] == -1 || dim == ir::SymInt(sizes[size_t(axis)]);
    if (transform == "tf_crop_and_resize" && regions[size_t(axis)] != std::pair<double, double>{0.0, 1.0}) unchanged = false;
    if (unchanged) continue;
    if (!dim.is_constant()) context.fail("resizing dim ", axis, " needs its size to be static, but it is ", dim);
    int64_t in_size = dim.constant();
    int64_t out_size = resized_size(context, axis, in_size, by_scale, scales[size_t(axis)], sizes[size_t(axis)]);
    double scale = by_scale ? scales[size_t(axis)] : double(out_size) / double(in_size);
    // The tables below are built here, at import: antialias and tf_crop_and_resize hold a matrix
    // of out_size x in_size coefficients, the other modes a few entries per output index.
    int64_t table = out_size;
    bool by_matrix = antialias || transform == "tf_crop_and_resize";
    if ((by_matrix && __builtin_mul_overflow(out_size, in_size, &table)) || table > kMaxResizeTable)
      context.fail("resizing dim ", axis, " from ", in_size, " to ", out_size, " elements needs import-time tables of more than ",
                   kMaxResizeTable, " entries, more than Kiln builds");
    if (by_matrix) {
      result = resize_by_matrix(context, result, axis, in_size, out_size, scale, transform, regions[size_t(axis)]);
      continue;
    }
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
