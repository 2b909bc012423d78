// Reference kernels of pooling over 1-3 spatial dims (the last ones; leading dims are planes):
// max_pool (padding acts as -inf, NaN propagates, dilation, ceil_mode), avg_pool
// (count_include_pad, divisor_override, ceil_mode), and the adaptive pools with PyTorch's
// windows start = floor(i * in / out), end = ceil((i + 1) * in / out).
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

constexpr size_t kMaxSpatial = 3;

// Input viewed as planes x three spatial dims (missing leading spatial dims have size 1).
struct Planes {
  int64_t count = 1;
  int64_t in[kMaxSpatial] = {1, 1, 1};
  Sizes leading;  // the dims before the spatial ones
};

Planes planes_of(const KernelCall& call, const Tensor& self, size_t spatial, const char* op) {
  if (spatial < 1 || spatial > kMaxSpatial)
    call.fail(op, ": expected 1 to 3 spatial dims, got ", spatial);
  if (self.dim() != int64_t(spatial) + 1 && self.dim() != int64_t(spatial) + 2)
    call.fail(op, ": expected a ", spatial + 1, "-D or ", spatial + 2, "-D input for ", spatial,
              " spatial dims, got shape ", sizes_to_string(self.sizes()));
  Planes planes;
  size_t first_spatial = size_t(self.dim()) - spatial;
  for (size_t d = 0; d < first_spatial; ++d) {
    planes.leading.push_back(self.sizes()[d]);
    planes.count *= self.sizes()[d];
  }
  for (size_t s = 0; s < spatial; ++s) planes.in[kMaxSpatial - spatial + s] = self.sizes()[first_spatial + s];
  return planes;
}

// PyTorch's pooling_output_shape.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  int64_t numerator = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (numerator >= 0 ? numerator / stride : -((-numerator + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;  // the last window must start inside
  return out;
}

struct Window {
  int64_t kernel[kMaxSpatial] = {1, 1, 1}, stride[kMaxSpatial] = {1, 1, 1};
  int64_t padding[kMaxSpatial] = {0, 0, 0}, dilation[kMaxSpatial] = {1, 1, 1};
  int64_t out[kMaxSpatial] = {1, 1, 1};
};

Window window_of(const KernelCall& call, const Planes& planes, size_t spatial, const std::vector<int64_t>& dilation,
                 bool ceil_mode, const char* op) {
  std::vector<int64_t> kernel = call.ints(1);
  std::vector<int64_t> stride = call.ints(2).empty() ? kernel : expand_param(call.ints(2), spatial, "stride");
  std::vector<int64_t> padding = expand_param(call.ints(3), spatial, "padding");
  Window window;
  for (size_t s = 0; s < spatial; ++s) {
    size_t d = kMaxSpatial - spatial + s;
    window.kernel[d] = kernel[s];
    window.stride[d] = stride[s];
    window.padding[d] = padding[s];
    window.dilation[d] = dilation[s];
    if (kernel[s] < 1 || stride[s] < 1 || dilation[s] < 1 || padding[s] < 0)
      call.fail(op, ": kernel size, stride and dilation must be positive and padding non-negative");
    if (padding[s] > kernel[s] / 2)
      call.fail(op, ": pad should be at most half of the kernel size, but got pad=", padding[s], " and kernel_size=",
                kernel[s]);
    window.out[d] = pooled_size(planes.in[d], kernel[s], padding[s], stride[s], dilation[s], ceil_mode);
    if (window.out[d] < 1)
      call.fail(op, ": the output size of spatial dim ", s, " is ", window.out[d], " (input ", planes.in[d],
                "): too small");
  }
  return window;
}

Sizes output_shape(const Planes& planes, const int64_t (&out)[kMaxSpatial], size_t spatial) {
  Sizes shape = planes.leading;
  for (size_t s = 0; s < spatial; ++s) shape.push_back(out[kMaxSpatial - spatial + s]);
  return shape;
}

Tensor max_pool(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  size_t spatial = call.ints(1).size();
  Planes planes = planes_of(call, self, spatial, "max_pool");
  std::vector<int64_t> dilation = expand_param(call.ints(4), spatial, "dilation");
  Window w = window_of(call, planes, spatial, dilation, call.bool_arg(5), "max_pool");
  std::vector<double> x = to_doubles(self);
  std::vector<double> out;
  const int64_t* in = planes.in;
  for (int64_t p = 0; p < planes.count; ++p)
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          double best = -std::numeric_limits<double>::infinity();
          for (int64_t k0 = 0; k0 < w.kernel[0]; ++k0) {
            int64_t i0 = o0 * w.stride[0] - w.padding[0] + k0 * w.dilation[0];
            if (i0 < 0 || i0 >= in[0]) continue;
            for (int64_t k1 = 0; k1 < w.kernel[1]; ++k1) {
              int64_t i1 = o1 * w.stride[1] - w.padding[1] + k1 * w.dilation[1];
              if (i1 < 0 || i1 >= in[1]) continue;
              for (int64_t k2 = 0; k2 < w.kernel[2]; ++k2) {
                int64_t i2 = o2 * w.stride[2] - w.padding[2] + k2 * w.dilation[2];
                if (i2 < 0 || i2 >= in[2]) continue;
                double value = x[size_t(((p * in[0] + i0) * in[1] + i1) * in[2] + i2)];
                if (!std::isnan(best) && (std::isnan(value) || value > best)) best = value;
              }
            }
          }
          out.push_back(best);
        }
  return from_doubles(output_shape(planes, w.out, spatial), self.dtype(), out);
}

Tensor avg_pool(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  size_t spatial = call.ints(1).size();
  Planes planes = planes_of(call, self, spatial, "avg_pool");
  Window w = window_of(call, planes, spatial, std::vector<int64_t>(spatial, 1), call.bool_arg(4), "avg_pool");
  bool count_include_pad = call.bool_arg(5);
  std::optional<int64_t> divisor_override = call.optional_int(6);
  if (divisor_override && *divisor_override == 0) call.fail("avg_pool: divisor must be not zero");
  std::vector<double> x = to_doubles(self);
  std::vector<double> out;
  const int64_t* in = planes.in;
  for (int64_t p = 0; p < planes.count; ++p)
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          int64_t o[kMaxSpatial] = {o0, o1, o2}, start[kMaxSpatial], end[kMaxSpatial];
          int64_t pool_size = 1, inside = 1;
          for (size_t d = 0; d < kMaxSpatial; ++d) {
            start[d] = o[d] * w.stride[d] - w.padding[d];
            end[d] = std::min(start[d] + w.kernel[d], in[d] + w.padding[d]);
            pool_size *= end[d] - start[d];  // counts padding, clipped at the padded edge
            start[d] = std::max<int64_t>(start[d], 0);
            end[d] = std::min(end[d], in[d]);
            inside *= std::max<int64_t>(end[d] - start[d], 0);
          }
          if (inside == 0) {
            out.push_back(0.0);
            continue;
          }
          double sum = 0;
          for (int64_t i0 = start[0]; i0 < end[0]; ++i0)
            for (int64_t i1 = start[1]; i1 < end[1]; ++i1)
              for (int64_t i2 = start[2]; i2 < end[2]; ++i2) sum += x[size_t(((p * in[0] + i0) * in[1] + i1) * in[2] + i2)];
          int64_t divisor = divisor_override ? *divisor_override : (count_include_pad ? pool_size : inside);
          out.push_back(sum / double(divisor));
        }
  return from_doubles(output_shape(planes, w.out, spatial), self.dtype(), out);
}

Tensor adaptive_pool(const KernelCall& call, bool is_max) {
  const Tensor& self = call.tensor(0);
  std::vector<int64_t> output_size = call.ints(1);
  size_t spatial = output_size.size();
  const char* op = is_max ? "adaptive_max_pool" : "adaptive_avg_pool";
  Planes planes = planes_of(call, self, spatial, op);
  int64_t out[kMaxSpatial] = {1, 1, 1};
  for (size_t s = 0; s < spatial; ++s) {
    size_t d = kMaxSpatial - spatial + s;
    out[d] = output_size[s];
    if (out[d] < 0) call.fail(op, ": negative output size ", out[d]);
    if (planes.in[d] == 0 && out[d] > 0) call.fail(op, ": cannot pool an empty spatial dim ", s);
  }
  auto start_of = [](int64_t i, int64_t in, int64_t outs) { return (i * in) / outs; };
  auto end_of = [](int64_t i, int64_t in, int64_t outs) { return ((i + 1) * in + outs - 1) / outs; };
  std::vector<double> x = to_doubles(self);
  std::vector<double> result;
  const int64_t* in = planes.in;
  for (int64_t p = 0; p < planes.count; ++p)
    for (int64_t o0 = 0; o0 < out[0]; ++o0)
      for (int64_t o1 = 0; o1 < out[1]; ++o1)
        for (int64_t o2 = 0; o2 < out[2]; ++o2) {
          int64_t s0 = start_of(o0, in[0], out[0]), e0 = end_of(o0, in[0], out[0]);
          int64_t s1 = start_of(o1, in[1], out[1]), e1 = end_of(o1, in[1], out[1]);
          int64_t s2 = start_of(o2, in[2], out[2]), e2 = end_of(o2, in[2], out[2]);
          double sum = 0, best = -std::numeric_limits<double>::infinity();
          for (int64_t i0 = s0; i0 < e0; ++i0)
            for (int64_t i1 = s1; i1 < e1; ++i1)
              for (int64_t i2 = s2; i2 < e2; ++i2) {
                double value = x[size_t(((p * in[0] + i0) * in[1] + i1) * in[2] + i2)];
                sum += value;
                if (!std::isnan(best) && (std::isnan(value) || value > best)) best = value;
              }
          result.push_back(is_max ? best : sum / double((e0 - s0) * (e1 - s1) * (e2 - s2)));
        }
  return from_doubles(output_shape(planes, out, spatial), self.dtype(), result);
}

}  // namespace

void register_pooling_kernels(KernelTable& table) {
  table["max_pool"] = single(max_pool);
  table["avg_pool"] = single(avg_pool);
  table["adaptive_avg_pool"] = single([](const KernelCall& call) { return adaptive_pool(call, false); });
  table["adaptive_max_pool"] = single([](const KernelCall& call) { return adaptive_pool(call, true); });
}

}  // namespace kiln::ir::kernels
