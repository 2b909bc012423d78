// VJPs of the pools, written as one pass over the kernel's offsets. For each offset k (in
// row-major kernel order) the strided slice of the padded input that the offset reads is
// output-shaped; the output gradient's share for that offset is placed back at those
// positions (embed_slice, per spatial dim), the shares are summed, and the padding is cropped.
//   max_pool  the share is the gradient where the offset holds the window's maximum, for the
//             first such offset only (the reference kernel's first max: PyTorch's index)
//   avg_pool  the share is the gradient over the window's divisor (divisor_override, the
//             window clipped to the padded input, or its part inside the input)
//   adaptive  when every input size is a multiple of the output size, the windows are a
//             plain pool's (kernel = stride = in / out); other sizes have no derivative here
// Spatial sizes must be static.
#include <limits>

#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

namespace {

struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
  std::vector<int64_t> in, out, padded;  // padded: the input extent with padding on both sides
  int64_t first_spatial;                 // the dim of the first spatial size
};

std::vector<int64_t> per_dim(std::vector<int64_t> values, size_t spatial, std::vector<int64_t> fallback) {
  if (values.empty()) return fallback;
  if (values.size() == 1 && spatial > 1) values.assign(spatial, values[0]);
  return values;
}

Window window_of(VjpEmitter& emit, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                 std::vector<int64_t> padding, std::vector<int64_t> dilation) {
  Node* x = emit.input(0);
  size_t spatial = kernel.size();
  Window w{kernel, per_dim(stride, spatial, kernel), per_dim(padding, spatial, std::vector<int64_t>(spatial, 0)),
           per_dim(dilation, spatial, std::vector<int64_t>(spatial, 1)), {}, {}, {}, rank_of(x) - int64_t(spatial)};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t dim = w.first_spatial + int64_t(d);
    w.in.push_back(constant_size(emit, shape_of(x)[size_t(dim)], "input size"));
    w.out.push_back(constant_size(emit, shape_of(emit.result())[size_t(dim)], "output size"));
    int64_t reach = (w.out[d] - 1) * w.stride[d] + (w.kernel[d] - 1) * w.dilation[d] + 1;
    w.padded.push_back(std::max(w.in[d] + 2 * w.padding[d], reach));
  }
  return w;
}

// F.pad's list for the spatial dims: `before[d]` and `after[d]` (pairs from the last dim back).
std::vector<int64_t> spatial_pads(const Window& w, int64_t sign) {
  std::vector<int64_t> pads;
  for (size_t d = w.kernel.size(); d-- > 0;) {
    pads.push_back(sign * w.padding[d]);
    pads.push_back(sign * (w.padded[d] - w.in[d] - w.padding[d]));
  }
  return pads;
}

// Calls `share(offset)` for every kernel offset in row-major order; returns the input gradient.
template <typename Share>
Node* sum_over_offsets(VjpEmitter& emit, const Window& w, Share share) {
  size_t spatial = w.kernel.size();
  std::vector<int64_t> offset(spatial, 0);
  Node* total = nullptr;
  while (true) {
    Node* part = share(offset);
    for (size_t d = 0; d < spatial; ++d)
      part = embed_slice(emit, part, w.first_spatial + int64_t(d), SymInt(offset[d] * w.dilation[d]), w.stride[d],
                         SymInt(w.padded[d]));
    total = total ? emit.call("add", {total, part}, {}, "sum") : part;
    size_t d = spatial;
    while (d-- > 0 && ++offset[d] == w.kernel[d]) offset[d] = 0;
    if (d == size_t(-1)) break;
  }
  return emit.call("pad", {total, Argument::ints(spatial_pads(w, -1))}, {}, "crop");
}

Node* max_pool_grad(VjpEmitter& emit, const Window& w) {
  Node* padded = emit.call("pad", {emit.input(0), Argument::ints(spatial_pads(w, 1)), "constant",
                                   -std::numeric_limits<double>::infinity()},
                           {}, "padded");
  Node* taken = nullptr;
  return sum_over_offsets(emit, w, [&](const std::vector<int64_t>& offset) {
    Node* window = padded;
    for (size_t d = 0; d < offset.size(); ++d) {
      int64_t start = offset[d] * w.dilation[d];
      window = emit.call("slice", {window, w.first_spatial + int64_t(d), start,
                                   start + (w.out[d] - 1) * w.stride[d] + 1, w.stride[d]},
                         {}, "window");
    }
    Node* hit = emit.call("eq", {window, emit.result()}, {}, "hit");
    if (taken) {
      hit = emit.call("logical_and", {hit, emit.call("logical_not", {taken}, {}, "free")}, {}, "first_hit");
      taken = emit.call("logical_or", {taken, hit}, {}, "taken");
    } else {
      taken = hit;
    }
    return emit.mask(hit, emit.grad(), "share");
  });
}

// The divisor of every output element of avg_pool, as a tensor that broadcasts against it.
Node* avg_divisor(VjpEmitter& emit, const Window& w, bool count_include_pad, DType dtype) {
  Node* divisor = nullptr;
  int64_t rank = rank_of(emit.result());
  for (size_t d = 0; d < w.kernel.size(); ++d) {
    int64_t p = w.padding[d], in = w.in[d];
    Node* start = emit.call("iota", {w.out[d]}, {{"start", -p}, {"step", w.stride[d]}}, "window_start");
    Node* end = emit.call("add", {start, w.kernel[d]}, {}, "window_end");
    Node* size = nullptr;
    if (count_include_pad) {
      size = emit.call("sub", {emit.call("minimum", {end, in + p}), start}, {}, "window_size");
    } else {
      Node* inside = emit.call("sub", {emit.call("minimum", {end, in}), emit.call("maximum", {start, 0})});
      size = emit.call("clamp", {inside, 0}, {}, "window_size");
    }
    SymShape along(size_t(rank), SymInt(1));
    along[size_t(w.first_spatial) + d] = SymInt(w.out[d]);
    size = emit.call("reshape", {emit.cast(size, dtype), Argument::sym_ints(along)}, {}, "window_size");
    divisor = divisor ? emit.call("mul", {divisor, size}, {}, "divisor") : size;
  }
  return divisor;
}

Node* avg_pool_grad(VjpEmitter& emit, const Window& w, bool count_include_pad, std::optional<int64_t> divisor_override) {
  Node* g = emit.grad();
  Node* share = nullptr;
  if (divisor_override) {
    share = emit.call("div", {g, double(*divisor_override)}, {}, "share");
  } else {
    Node* divisor = avg_divisor(emit, w, count_include_pad, dtype_of(g));
    share = emit.call("div", {g, divisor}, {}, "share");
    // An empty window (inside the padding only) produced 0: no gradient.
    if (!count_include_pad) share = emit.call("where", {emit.call("eq", {divisor, 0.0}), 0.0, share}, {}, "share");
  }
  return sum_over_offsets(emit, w, [&](const std::vector<int64_t>&) { return share; });
}

std::vector<Gradient> max_pool_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  const ir::OpCall& call = emit.call();
  Window w = window_of(emit, call.ints(1), call.ints(2), call.ints(3), call.ints(4));
  return {emit.gradient_of(0, max_pool_grad(emit, w))};
}

std::vector<Gradient> avg_pool_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  const ir::OpCall& call = emit.call();
  Window w = window_of(emit, call.ints(1), call.ints(2), call.ints(3), {});
  std::optional<int64_t> divisor_override;
  if (!call.is_none(6)) divisor_override = call.int_arg(6);
  return {emit.gradient_of(0, avg_pool_grad(emit, w, call.bool_arg(5), divisor_override))};
}

// The windows of an adaptive pool whose input sizes are multiples of its output sizes.
Window adaptive_window(VjpEmitter& emit) {
  Node* x = emit.input(0);
  std::vector<int64_t> output_size = emit.call().ints(1);
  std::vector<int64_t> kernel;
  int64_t first = rank_of(x) - int64_t(output_size.size());
  for (size_t d = 0; d < output_size.size(); ++d) {
    int64_t in = constant_size(emit, shape_of(x)[size_t(first) + d], "input size");
    if (output_size[d] == 0 || in % output_size[d] != 0)
      emit.fail("adaptive pooling from size ", in, " to ", output_size[d],
                " has no derivative here (only input sizes that are multiples of the output size)");
    kernel.push_back(in / output_size[d]);
  }
  return window_of(emit, kernel, kernel, {}, {});
}

}  // namespace

void register_pooling_derivatives(DerivativeTable& table) {
  table["max_pool"] = max_pool_vjp;
  table["avg_pool"] = avg_pool_vjp;
  table["adaptive_max_pool"] = [](VjpEmitter& emit) -> std::vector<Gradient> {
    if (!emit.needs(0)) return {};
    return {emit.gradient_of(0, max_pool_grad(emit, adaptive_window(emit)))};
  };
  table["adaptive_avg_pool"] = [](VjpEmitter& emit) -> std::vector<Gradient> {
    if (!emit.needs(0)) return {};
    return {emit.gradient_of(0, avg_pool_grad(emit, adaptive_window(emit), true, std::nullopt))};
  };
}

}  // namespace kiln::passes::derivatives
