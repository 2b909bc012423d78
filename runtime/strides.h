// Strides and dimensions, written once over the size type: contiguous strides, PyTorch's
// computeStride (view_strides: the strides that view a layout as a new shape without a copy),
// and the wrapping of a negative dimension. Runtime tensors use them on int64_t
// (runtime/tensor.cpp); the shape rules and the lowering use the same templates on symbolic sizes
// (ir/strides.h supplies SizeArithmetic<ir::SymInt>).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace kiln {

// What the algorithms below ask of a size type; specialized for each. For symbolic sizes the
// predicates answer "provably": is_one(s0) is false, equal(a, b) means the same expression.
template <typename Size>
struct SizeArithmetic;

template <>
struct SizeArithmetic<int64_t> {
  static bool is_zero(int64_t size) { return size == 0; }
  static bool is_one(int64_t size) { return size == 1; }
  static bool equal(int64_t a, int64_t b) { return a == b; }
  // a < b where decidable; where not, "different".
  static bool maybe_less(int64_t a, int64_t b) { return a < b; }
  // The stride factor of a dim: max(size, 1), so that a 0-size dim keeps its neighbours apart.
  static int64_t stride_factor(int64_t size) { return std::max<int64_t>(size, 1); }
};

// The row-major strides of `sizes` (a 0-size dim counts as 1).
template <typename Size>
std::vector<Size> contiguous_strides(const std::vector<Size>& sizes) {
  std::vector<Size> strides(sizes.size());
  Size running(1);
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running = running * SizeArithmetic<Size>::stride_factor(sizes[i]);
  }
  return strides;
}

// PyTorch's computeStride: the strides of `new_sizes` viewing memory laid out by
// (old_sizes, old_strides), or nullopt when some new dim would span two non-contiguous chunks
// of the old layout. With symbolic sizes the answer can only under-approximate viewability.
template <typename Size>
std::optional<std::vector<Size>> view_strides(const std::vector<Size>& old_sizes, const std::vector<Size>& old_strides,
                                              const std::vector<Size>& new_sizes) {
  using A = SizeArithmetic<Size>;
  if (old_sizes.empty()) return std::vector<Size>(new_sizes.size(), Size(1));
  Size numel(1);
  for (const Size& size : old_sizes) numel = numel * size;
  if (A::is_zero(numel)) {
    bool same_shape = old_sizes.size() == new_sizes.size() &&
                      std::equal(old_sizes.begin(), old_sizes.end(), new_sizes.begin(), A::equal);
    if (same_shape) return old_strides;
    return contiguous_strides(new_sizes);
  }
  std::vector<Size> new_strides(new_sizes.size());
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  Size chunk_base_stride = old_strides.back();
  Size tensor_numel(1), tensor_span(1), view_numel(1), view_span(1);
  for (int64_t tensor_d = int64_t(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel = tensor_numel * old_sizes[size_t(tensor_d)];
    tensor_span = tensor_span * A::stride_factor(old_sizes[size_t(tensor_d)]);
    bool chunk_ends = tensor_d == 0;
    if (!chunk_ends) {
      const Size& outer_size = old_sizes[size_t(tensor_d - 1)];
      const Size& outer_stride = old_strides[size_t(tensor_d - 1)];
      chunk_ends = !A::is_one(outer_size) && !A::equal(outer_stride, tensor_span * chunk_base_stride) &&
                   !A::equal(outer_stride, tensor_numel * chunk_base_stride);
    }
    if (!chunk_ends) continue;
    while (view_d >= 0 && (A::maybe_less(view_numel, tensor_numel) || A::is_one(new_sizes[size_t(view_d)]))) {
      new_strides[size_t(view_d)] = view_span * chunk_base_stride;
      view_numel = view_numel * new_sizes[size_t(view_d)];
      view_span = view_span * A::stride_factor(new_sizes[size_t(view_d)]);
      --view_d;
    }
    if (!A::equal(view_numel, tensor_numel)) return std::nullopt;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[size_t(tensor_d - 1)];
      tensor_numel = tensor_span = view_numel = view_span = Size(1);
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

// `dim` wrapped into [0, rank) (rank 0 accepts 0 and -1, as PyTorch does for scalars), or
// nullopt when out of range. wrap_dim (kiln/tensor.h) and the shape rules' wrap_dim
// (ir/ops/shape_helpers.h) report the nullopt in their own words.
inline std::optional<int64_t> wrapped_dim(int64_t dim, int64_t rank) {
  int64_t extent = std::max<int64_t>(rank, 1);
  if (dim < -extent || dim >= extent) return std::nullopt;
  return dim < 0 ? dim + extent : dim;
}

}  // namespace kiln
