// Reference kernels of the sampling ops, computed as PyTorch's grid_sampler and ONNX's
// reference implementations (onnx/reference/ops/op_grid_sample.py, op_roi_align.py) do:
//  - grid_sample: for every output position the grid holds normalized coordinates (last one
//    first: x indexes the last spatial dim) in [-1, 1], denormalized with or without
//    align_corners; out-of-range coordinates are clamped (border) or reflected (reflection);
//    nearest rounds half to even; bilinear and bicubic (Keys, a = -0.75) interpolate over 2 or 4
//    taps per dim, each tap read with the padding rule (zeros reads 0 outside);
//  - roi_align: per box and output bin, sampling_ratio^2 points (or ceil(bin size) per dim when
//    0) bilinearly interpolated and averaged (avg) or the largest weighted corner (max, as
//    ONNX defines it); aligned shifts box coordinates by half a pixel;
//  - deform_conv2d: a convolution whose taps are sampled bilinearly (zeros outside) at their
//    position plus a learned offset, weighted by the mask (as torchvision and ONNX's DeformConv).
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

// ---------------------------------------------------------------- grid_sample

struct GridSampler {
  std::vector<double> data;  // the input, row-major
  Sizes spatial;             // D1..Dr
  bool align_corners = false;
  std::string padding_mode;
  bool round_to_float = true;  // coordinates are kept in the grid's precision

  double low(size_t d) const { return align_corners ? 0.0 : -0.5; }
  double high(size_t d) const { return align_corners ? double(spatial[d]) - 1 : double(spatial[d]) - 0.5; }

  double keep(double value) const { return round_to_float ? double(float(value)) : value; }

  double denormalize(double n, size_t d) const {
    double length = double(spatial[d]);
    return keep(align_corners ? (n + 1) / 2.0 * (length - 1) : ((n + 1) * length - 1) / 2.0);
  }

  // ONNX's _gs_reflect: reflect by the nearer border until within [low, high].
  static double reflect(double x, double x_min, double x_max) {
    double range = x_max - x_min;
    if (x < x_min) {
      double dx = x_min - x;
      int64_t n = int64_t(dx / range);
      double r = dx - double(n) * range;
      return n % 2 == 0 ? x_min + r : x_max - r;
    }
    if (x > x_max) {
      double dx = x - x_max;
      int64_t n = int64_t(dx / range);
      double r = dx - double(n) * range;
      return n % 2 == 0 ? x_max - r : x_min + r;
    }
    return x;
  }

  // The coordinate after the padding rule of out-of-range positions (border, reflection).
  double padded_coordinate(double x, size_t d) const {
    if (x >= low(d) && x <= high(d)) return x;
    if (padding_mode == "border") return std::clamp(x, 0.0, double(spatial[d]) - 1);
    if (padding_mode == "reflection") return keep(reflect(x, low(d), high(d)));
    return x;
  }

  // The index read for tap `i` of dim d, or -1 for a zero (zeros padding outside).
  int64_t tap_index(int64_t i, size_t d) const {
    int64_t size = spatial[d];
    if (padding_mode == "zeros") return i >= 0 && i < size ? i : -1;
    if (padding_mode == "border") return std::clamp<int64_t>(i, 0, size - 1);
    return int64_t(reflect(double(i), low(d), high(d)));
  }

  // Sum over the taps of every dim: weight product times the value at the tap.
  double interpolate(int64_t plane_offset, const std::vector<std::vector<int64_t>>& taps,
                     const std::vector<std::vector<double>>& weights) const {
    size_t rank = spatial.size();
    std::vector<size_t> choice(rank, 0);
    double total = 0;
    while (true) {
      double weight = 1;
      int64_t offset = 0;
      bool zero = false;
      for (size_t d = 0; d < rank; ++d) {
        int64_t index = taps[d][choice[d]];
        weight *= weights[d][choice[d]];
        if (index < 0) zero = true;
        offset = offset * spatial[d] + (index < 0 ? 0 : index);
      }
      if (!zero) total += weight * data[size_t(plane_offset + offset)];
      size_t d = rank;
      while (d > 0 && ++choice[d - 1] == taps[d - 1].size()) choice[--d] = 0;
      if (d == 0) break;
    }
    return total;
  }
};

void cubic_coefficients(double x, std::vector<double>& coefficients) {
  const double a = -0.75;
  x = std::fabs(x);
  coefficients = {((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a, ((a + 2) * x - (a + 3)) * x * x + 1,
                  ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1,
                  ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a};
}

Tensor grid_sample(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& grid = call.tensor(1);
  const std::string& mode = call.string_arg(2);
  GridSampler sampler;
  sampler.data = to_doubles(input);
  sampler.spatial = Sizes(input.sizes().begin() + 2, input.sizes().end());
  sampler.padding_mode = call.string_arg(3);
  sampler.align_corners = call.bool_arg(4);
  sampler.round_to_float = grid.dtype() != DType::f64;
  size_t rank = sampler.spatial.size();
  int64_t batch = input.size(0), channels = input.size(1);
  int64_t plane = numel_of(sampler.spatial);
  Sizes out_spatial(grid.sizes().begin() + 1, grid.sizes().end() - 1);
  int64_t points = numel_of(out_spatial);
  std::vector<double> coordinates = to_doubles(grid);
  Sizes out_shape = {batch, channels};
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  std::vector<double> out(size_t(numel_of(out_shape)), 0.0);

  std::vector<std::vector<int64_t>> taps(rank);
  std::vector<std::vector<double>> weights(rank);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t p = 0; p < points; ++p) {
      const double* normalized = &coordinates[size_t((n * points + p) * int64_t(rank))];
      for (size_t d = 0; d < rank; ++d) {
        double x = sampler.denormalize(normalized[rank - 1 - d], d);
        if (mode == "nearest") x = std::nearbyint(x);
        x = sampler.padded_coordinate(x, d);
        if (mode == "nearest") {
          taps[d] = {sampler.tap_index(int64_t(x), d)};
          weights[d] = {1.0};
          continue;
        }
        int64_t first = int64_t(std::floor(x));
        double t = x - double(first);
        if (mode == "bilinear") {
          taps[d] = {sampler.tap_index(first, d), sampler.tap_index(first + 1, d)};
          weights[d] = {1 - t, t};
        } else {
          taps[d] = {sampler.tap_index(first - 1, d), sampler.tap_index(first, d), sampler.tap_index(first + 1, d),
                     sampler.tap_index(first + 2, d)};
          cubic_coefficients(t, weights[d]);
        }
      }
      for (int64_t c = 0; c < channels; ++c)
        out[size_t((n * channels + c) * points + p)] = sampler.interpolate((n * channels + c) * plane, taps, weights);
    }
  return from_doubles(out_shape, input.dtype(), out);
}

// ---------------------------------------------------------------- roi_align

// One sample point's four corners (offsets in the plane) and bilinear weights.
struct SamplePoint {
  int64_t position[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

SamplePoint sample_point(double y, double x, int64_t height, int64_t width) {
  SamplePoint point;
  if (y < -1.0 || y > double(height) || x < -1.0 || x > double(width)) return point;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y_low = int64_t(y), x_low = int64_t(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = double(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = double(x_low);
  } else {
    x_high = x_low + 1;
  }
  double ly = y - double(y_low), lx = x - double(x_low), hy = 1 - ly, hx = 1 - lx;
  point.position[0] = y_low * width + x_low;
  point.position[1] = y_low * width + x_high;
  point.position[2] = y_high * width + x_low;
  point.position[3] = y_high * width + x_high;
  point.weight[0] = hy * hx;
  point.weight[1] = hy * lx;
  point.weight[2] = ly * hx;
  point.weight[3] = ly * lx;
  return point;
}

Tensor roi_align(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  std::vector<double> data = to_doubles(input);
  std::vector<double> rois = to_doubles(call.tensor(1));
  std::vector<int64_t> batch_indices = to_ints(call.tensor(2));
  int64_t pooled_height = call.int_arg(3), pooled_width = call.int_arg(4), sampling_ratio = call.int_arg(5);
  double spatial_scale = call.float_arg(6);
  bool max_mode = call.string_arg(7) == "max";
  bool aligned = call.bool_arg(8);
  int64_t batch = input.size(0), channels = input.size(1), height = input.size(2), width = input.size(3);
  int64_t roi_count = int64_t(batch_indices.size());
  Sizes out_shape = {roi_count, channels, pooled_height, pooled_width};
  std::vector<double> out(size_t(numel_of(out_shape)), 0.0);
  double offset = aligned ? 0.5 : 0.0;
  for (int64_t r = 0; r < roi_count; ++r) {
    int64_t image = batch_indices[size_t(r)];
    if (image < 0 || image >= batch)
      call.fail("roi_align: batch index ", image, " of box ", r, " is out of range for a batch of ", batch);
    const double* box = &rois[size_t(r * 4)];
    double start_w = box[0] * spatial_scale - offset, start_h = box[1] * spatial_scale - offset;
    double roi_width = box[2] * spatial_scale - offset - start_w, roi_height = box[3] * spatial_scale - offset - start_h;
    if (!aligned) {
      roi_width = std::max(roi_width, 1.0);
      roi_height = std::max(roi_height, 1.0);
    }
    double bin_h = roi_height / double(pooled_height), bin_w = roi_width / double(pooled_width);
    int64_t grid_h = sampling_ratio > 0 ? sampling_ratio : int64_t(std::ceil(roi_height / double(pooled_height)));
    int64_t grid_w = sampling_ratio > 0 ? sampling_ratio : int64_t(std::ceil(roi_width / double(pooled_width)));
    double count = double(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t ph = 0; ph < pooled_height; ++ph)
      for (int64_t pw = 0; pw < pooled_width; ++pw) {
        std::vector<SamplePoint> samples;
        for (int64_t iy = 0; iy < grid_h; ++iy)
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            double y = start_h + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h);
            double x = start_w + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w);
            samples.push_back(sample_point(y, x, height, width));
          }
        for (int64_t c = 0; c < channels; ++c) {
          const double* plane = &data[size_t((image * channels + c) * height * width)];
          double value = 0;
          bool first = true;
          for (const SamplePoint& s : samples) {
            if (!max_mode) {
              for (int k = 0; k < 4; ++k) value += s.weight[k] * plane[s.position[k]];
              continue;
            }
            double largest = -std::numeric_limits<double>::infinity();
            for (int k = 0; k < 4; ++k) largest = std::max(largest, s.weight[k] * plane[s.position[k]]);
            value = first ? largest : std::max(value, largest);
            first = false;
          }
          if (!max_mode) value /= count;
          out[size_t(((r * channels + c) * pooled_height + ph) * pooled_width + pw)] = value;
        }
      }
  }
  return from_doubles(out_shape, input.dtype(), out);
}

// ---------------------------------------------------------------- deform_conv2d

// Each output position sums, over input channels of its group and kernel taps, the weight times
// the input sampled bilinearly (zeros outside) at the tap's position plus its offset, times the
// mask; plus the bias.
Tensor deform_conv2d(const KernelCall& call) {
  const Tensor& input = call.tensor(0);
  const Tensor& weight = call.tensor(1);
  const Tensor& offset = call.tensor(2);
  std::vector<double> x = to_doubles(input), w = to_doubles(weight), off = to_doubles(offset);
  std::vector<double> mask = call.is_tensor(3) ? to_doubles(call.tensor(3)) : std::vector<double>();
  std::vector<double> bias = call.is_tensor(4) ? to_doubles(call.tensor(4)) : std::vector<double>();
  std::vector<int64_t> stride = call.ints(5), padding = call.ints(6), dilation = call.ints(7);
  int64_t groups = call.int_arg(8), offset_groups = call.int_arg(9);
  int64_t n = input.size(0), channels = input.size(1), height = input.size(2), width = input.size(3);
  int64_t out_channels = weight.size(0), per_group = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  int64_t oh = offset.size(2), ow = offset.size(3), taps = kh * kw;
  int64_t channels_per_offset_group = channels / offset_groups, out_per_group = out_channels / groups;
  if (channels % offset_groups != 0) call.fail("deform_conv2d: ", channels, " channels are not divisible by offset_groups ", offset_groups);
  auto sample = [&](const double* plane, double y, double xx) {
    int64_t y0 = int64_t(std::floor(y)), x0 = int64_t(std::floor(xx));
    double dy = y - double(y0), dx = xx - double(x0), total = 0;
    for (int64_t a = 0; a < 2; ++a)
      for (int64_t b = 0; b < 2; ++b) {
        int64_t yy = y0 + a, xi = x0 + b;
        if (yy < 0 || yy >= height || xi < 0 || xi >= width) continue;
        total += (a ? dy : 1 - dy) * (b ? dx : 1 - dx) * plane[yy * width + xi];
      }
    return total;
  };
  std::vector<double> out(size_t(n * out_channels * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double total = bias.empty() ? 0.0 : bias[size_t(o)];
          int64_t group = o / out_per_group;
          for (int64_t c = group * per_group; c < (group + 1) * per_group; ++c) {
            int64_t g = c / channels_per_offset_group;
            const double* plane = &x[size_t((b * channels + c) * height * width)];
            for (int64_t t = 0; t < taps; ++t) {
              int64_t ki = t / kw, kj = t % kw;
              size_t at = size_t(((b * offset_groups + g) * taps + t) * 2);
              double dy = off[(at * size_t(oh) + size_t(i)) * size_t(ow) + size_t(j)];
              double dx = off[((at + 1) * size_t(oh) + size_t(i)) * size_t(ow) + size_t(j)];
              double y = double(i * stride[0] - padding[0] + ki * dilation[0]) + dy;
              double xx = double(j * stride[1] - padding[1] + kj * dilation[1]) + dx;
              double m = mask.empty() ? 1.0 : mask[size_t((((b * offset_groups + g) * taps + t) * oh + i) * ow + j)];
              total += w[size_t(((o * per_group + (c - group * per_group)) * kh + ki) * kw + kj)] * sample(plane, y, xx) * m;
            }
          }
          out[size_t(((b * out_channels + o) * oh + i) * ow + j)] = total;
        }
  return from_doubles({n, out_channels, oh, ow}, input.dtype(), out);
}

}  // namespace

void register_sampling_kernels(KernelTable& table) {
  table.emplace("deform_conv2d", single(deform_conv2d));
  table.emplace("grid_sample", single(grid_sample));
  table.emplace("roi_align", single(roi_align));
}

}  // namespace kiln::ir::kernels
