// The math of the reference kernels that packages compile in: the ops the code generator does
// not lower and a package runs anyway (its "fallback" ops): cumsum, scatter (with reduce),
// index_put (bool masks, None dims, accumulate), topk, det, and convolution and matmul (a
// transposed convolution, or dtypes the code generator's GEMM does not take). There is one implementation of each: the
// interpreter's kernels (ir/kernels/reduction_kernels.cpp, indexing_kernels.cpp,
// linalg_kernels.cpp, convolution_kernels.cpp) call the cores below on the values they read from Tensors, and every
// package (`kiln compile MODEL -o DIR`) pastes this text into NAME.cpp, inside a namespace of
// its own (KILN_PORTABLE_NAMESPACE), where the generated fallback handler
// (codegen/package/package_fallbacks.h) calls the drivers at the end with each node's
// attributes baked in.
//
// So it needs the C++17 standard library alone: row-major sizes, element strides, plain
// pointers. Values are computed as the interpreter computes them: floating values in double,
// integers in int64 with wrap, each result rounded once on its store by runtime/tensor.cpp's
// rules (repeated here for the dtypes packages carry: f32, f64, i64, i32, i16, i8, u8, u16, u32, u64, bool;
// f16 and bf16 through runtime/half.h's conversions, as the interpreter reads and writes them:
// widened to float then double, and rounded from double to float, then to 16 bits). A package
// defines KILN_PORTABLE_STANDALONE and pastes runtime/half.h's functions into
// KILN_PORTABLE_NAMESPACE before this text (codegen/package/package_fallbacks.cpp).
// Errors throw KernelFailure with the interpreter's message (the caller adds the node).
#ifndef KILN_PORTABLE_KERNELS_H
#define KILN_PORTABLE_KERNELS_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#ifndef KILN_PORTABLE_STANDALONE
#include "runtime/half.h"
#endif

#ifndef KILN_PORTABLE_NAMESPACE
#define KILN_PORTABLE_NAMESPACE kiln::portable
#endif

namespace KILN_PORTABLE_NAMESPACE {

#ifndef KILN_PORTABLE_STANDALONE
using kiln::bf16_to_float;
using kiln::f16_to_float;
using kiln::float_to_bf16;
using kiln::float_to_f16;
#endif

struct KernelFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Shape = std::vector<int64_t>;

// ---------------------------------------------------------------- shapes

inline std::string shape_text(const Shape& sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

inline int64_t element_count(const Shape& sizes) {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  return count;
}

// Calls fn(index) for every multi-index of `sizes` in row-major order.
template <typename Fn>
void for_each_index(const Shape& sizes, Fn&& fn) {
  for (int64_t size : sizes)
    if (size == 0) return;
  Shape index(sizes.size(), 0);
  while (true) {
    fn(static_cast<const int64_t*>(index.data()));
    size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

inline int64_t linear_index(const int64_t* index, const Shape& sizes) {
  int64_t position = 0;
  for (size_t d = 0; d < sizes.size(); ++d) position = position * sizes[d] + index[d];
  return position;
}

// PyTorch broadcasting of two shapes.
inline Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw KernelFailure("shapes " + shape_text(a) + " and " + shape_text(b) + " cannot be broadcast together (dim " +
                          std::to_string(i) + ": " + std::to_string(da) + " vs " + std::to_string(db) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Row-major values of `values` (of shape `from`) broadcast to shape `to` (from broadcasts to it).
template <typename T>
std::vector<T> expand_to(const T* values, const Shape& from, const Shape& to) {
  std::vector<T> out;
  out.reserve(size_t(element_count(to)));
  size_t lead = to.size() - from.size();
  Shape source(from.size());
  for_each_index(to, [&](const int64_t* index) {
    for (size_t d = 0; d < from.size(); ++d) source[d] = from[d] == 1 ? 0 : index[d + lead];
    out.push_back(values[size_t(linear_index(source.data(), from))]);
  });
  return out;
}

// ---------------------------------------------------------------- cumsum

// Inclusive prefix sums of each row of `row` values (count values in all): floating values in
// double, integers in int64 with wrap.
template <typename T>
void prefix_sums(T* values, int64_t count, int64_t row) {
  for (int64_t start = 0; row > 0 && start < count; start += row) {
    if constexpr (std::is_floating_point_v<T>) {
      T running = 0;
      for (int64_t i = start; i < start + row; ++i) values[i] = running += values[i];
    } else {
      uint64_t running = 0;
      for (int64_t i = start; i < start + row; ++i) values[i] = T(running += uint64_t(values[i]));
    }
  }
}

// ---------------------------------------------------------------- scatter

enum class ScatterReduce { none, sum, prod, amax, amin };

// The reduce argument of scatter: "" (none), "sum", "prod", "amax", "amin".
inline ScatterReduce scatter_reduction(const std::string& name) {
  if (name.empty()) return ScatterReduce::none;
  if (name == "sum") return ScatterReduce::sum;
  if (name == "prod") return ScatterReduce::prod;
  if (name == "amax") return ScatterReduce::amax;
  if (name == "amin") return ScatterReduce::amin;
  throw KernelFailure("scatter(): reduce argument must be 'sum', 'prod', 'amax' or 'amin', got '" + name + "'");
}

// An existing value combined with a scattered one: floats NaN-propagating, integers wrapping.
template <typename T>
T scatter_combine(ScatterReduce reduce, T current, T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (reduce == ScatterReduce::sum) return current + value;
    if (reduce == ScatterReduce::prod) return current * value;
    if (std::isnan(current) || std::isnan(value)) return std::numeric_limits<T>::quiet_NaN();
  } else {
    if (reduce == ScatterReduce::sum) return T(uint64_t(current) + uint64_t(value));
    if (reduce == ScatterReduce::prod) return T(uint64_t(current) * uint64_t(value));
  }
  if (reduce == ScatterReduce::amax) return std::max(current, value);
  if (reduce == ScatterReduce::amin) return std::min(current, value);
  return value;
}

// scatter's shape rules: self not 0-d, index of self's rank and no larger than self (but along
// dim) nor than src (a tensor src; `src` null for a number).
inline void check_scatter_shapes(const Shape& self, int64_t dim, const Shape& index, const Shape* src) {
  if (self.empty()) throw KernelFailure("scatter(): a 0-d self is not supported");
  if (index.size() != self.size())
    throw KernelFailure("scatter(): index tensor must have the same number of dimensions as self (" +
                        std::to_string(self.size()) + " vs " + std::to_string(index.size()) + ")");
  for (size_t d = 0; d < index.size(); ++d) {
    if (int64_t(d) != dim && index[d] > self[d])
      throw KernelFailure("scatter(): size of index dim " + std::to_string(d) + " (" + std::to_string(index[d]) +
                          ") exceeds self's (" + std::to_string(self[d]) + ")");
    if (src != nullptr && (src->size() != index.size() || index[d] > (*src)[d]))
      throw KernelFailure("scatter(): index of shape " + shape_text(index) + " does not fit src of shape " +
                          shape_text(*src));
  }
}

// out (self's values, shape self) with src written (or combined) at out[..., positions[i], ...]
// along dim for every element i of index; `src_sizes` empty: src is one number.
template <typename T>
void scatter_values(T* out, const Shape& self, int64_t dim, const int64_t* positions, const Shape& index,
                    const T* src, const Shape& src_sizes, ScatterReduce reduce) {
  int64_t at = 0;
  Shape target(self.size());
  for_each_index(index, [&](const int64_t* idx) {
    std::copy(idx, idx + index.size(), target.begin());
    int64_t position = positions[at++];
    if (position < 0 || position >= self[size_t(dim)])
      throw KernelFailure("scatter(): index " + std::to_string(position) + " is out of bounds for dimension of size " +
                          std::to_string(self[size_t(dim)]));
    target[size_t(dim)] = position;
    T value = src_sizes.empty() ? src[0] : src[size_t(linear_index(idx, src_sizes))];
    T& slot = out[size_t(linear_index(target.data(), self))];
    slot = reduce == ScatterReduce::none ? value : scatter_combine(reduce, slot, value);
  });
}

// ---------------------------------------------------------------- index_put

// One entry of index_put's `indices`: undefined (None, a whole dim), integer positions, or a
// bool (or u8) mask.
struct IndexTensor {
  bool defined = false;
  bool mask = false;
  Shape sizes;
  std::vector<int64_t> values;  // row-major
};

// The indices after bool masks became their nonzero coordinates: one entry per leading dim of
// self, undefined for a whole dim.
inline std::vector<IndexTensor> expand_masks(const Shape& self, const std::vector<IndexTensor>& indices) {
  std::vector<IndexTensor> result;
  for (const IndexTensor& index : indices) {
    if (!index.defined || !index.mask) {
      result.push_back(index);
      continue;
    }
    // A 0-d mask would add a dim of size 1 (true) or 0 (false); Kiln does not support it.
    if (index.sizes.empty()) throw KernelFailure("a 0-d bool index is not supported");
    size_t first = result.size();  // a mask covers as many dims of self as it has, from here
    if (first + index.sizes.size() > self.size())
      throw KernelFailure("too many indices for tensor of dimension " + std::to_string(self.size()));
    for (size_t d = 0; d < index.sizes.size(); ++d)
      if (index.sizes[d] != self[first + d])
        throw KernelFailure("the shape of the mask " + shape_text(index.sizes) + " at index " + std::to_string(d) +
                            " does not match the shape of the indexed tensor " + shape_text(self) + " at index " +
                            std::to_string(first + d));
    std::vector<IndexTensor> coordinates(index.sizes.size());
    int64_t at = 0;
    for_each_index(index.sizes, [&](const int64_t* idx) {
      if (index.values[size_t(at++)] == 0) return;
      for (size_t d = 0; d < index.sizes.size(); ++d) coordinates[d].values.push_back(idx[d]);
    });
    for (IndexTensor& c : coordinates) {
      c.defined = true;
      c.sizes = {int64_t(c.values.size())};
      result.push_back(std::move(c));
    }
  }
  if (result.size() > self.size())
    throw KernelFailure("too many indices for tensor of dimension " + std::to_string(self.size()));
  return result;
}

// out (self's values, shape self) with values written (or added, accumulate) at
// self[indices], PyTorch's advanced indexing: the defined indices broadcast together; their
// dims replace the indexed ones where those are adjacent, else come first.
template <typename T>
void index_put_values(T* out, const Shape& self, const std::vector<IndexTensor>& raw_indices, const T* values,
                      const Shape& value_sizes, bool accumulate) {
  std::vector<IndexTensor> indices = expand_masks(self, raw_indices);
  indices.resize(self.size());
  Shape broadcast;
  std::vector<size_t> indexed;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined) continue;
    broadcast = indexed.empty() ? indices[d].sizes : broadcast_shapes(broadcast, indices[d].sizes);
    indexed.push_back(d);
  }
  if (indexed.empty()) throw KernelFailure("index_put: at least one index must be a tensor");
  std::vector<std::vector<int64_t>> positions(indices.size());
  for (size_t d : indexed) positions[d] = expand_to(indices[d].values.data(), indices[d].sizes, broadcast);
  bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  size_t insert_at = adjacent ? indexed.front() : 0;
  std::vector<size_t> plain_dims;  // self dims indexed by a whole range, in order
  for (size_t d = 0; d < indices.size(); ++d)
    if (!indices[d].defined) plain_dims.push_back(d);
  Shape result_shape;
  size_t plain_before = 0;
  for (size_t d : plain_dims)
    if (d < insert_at) ++plain_before;
  for (size_t i = 0; i < plain_before; ++i) result_shape.push_back(self[plain_dims[i]]);
  result_shape.insert(result_shape.end(), broadcast.begin(), broadcast.end());
  for (size_t i = plain_before; i < plain_dims.size(); ++i) result_shape.push_back(self[plain_dims[i]]);
  if (broadcast_shapes(value_sizes, result_shape) != result_shape)
    throw KernelFailure("shape mismatch: value tensor of shape " + shape_text(value_sizes) +
                        " cannot be broadcast to indexing result of shape " + shape_text(result_shape));
  std::vector<T> source = expand_to(values, value_sizes, result_shape);

  size_t rank = broadcast.size();
  int64_t at = 0;
  Shape target(indices.size());
  for_each_index(result_shape, [&](const int64_t* r) {
    int64_t broadcast_position = linear_index(r + plain_before, broadcast);
    size_t plain = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (indices[d].defined) {
        int64_t index = positions[d][size_t(broadcast_position)], size = self[d];
        if (index < -size || index >= size)
          throw KernelFailure("index_put: index " + std::to_string(index) + " is out of bounds for size " +
                              std::to_string(size));
        target[d] = index < 0 ? index + size : index;
      } else {
        target[d] = r[plain < plain_before ? plain : plain + rank];
        ++plain;
      }
    }
    T& slot = out[size_t(linear_index(target.data(), self))];
    T value = source[size_t(at++)];
    if constexpr (std::is_floating_point_v<T>) {
      slot = accumulate ? slot + value : value;
    } else {
      slot = accumulate ? T(uint64_t(slot) + uint64_t(value)) : value;
    }
  });
}

// ---------------------------------------------------------------- topk

// k must select within a row of `row` values.
inline void check_top_k(int64_t k, int64_t row) {
  if (k < 0 || k > row)
    throw KernelFailure("selected index k out of range (k is " + std::to_string(k) + ", the dim has size " +
                        std::to_string(row) + ")");
}

// The k largest (or smallest) of each row of `row` values, in selection order: equal values
// keep their order (the lower index first), NaN counts as larger than every number.
template <typename T>
void top_k(const T* values, int64_t rows, int64_t row, int64_t k, bool largest, T* top_values, int64_t* top_indices) {
  check_top_k(k, row);
  std::vector<int64_t> order(static_cast<size_t>(row));
  for (int64_t r = 0; r < rows; ++r) {
    const T* v = values + r * row;
    auto before = [&](int64_t a, int64_t b) {
      T x = v[a], y = v[b];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y))
          return largest ? (std::isnan(x) && !std::isnan(y)) : (!std::isnan(x) && std::isnan(y));
      }
      return largest ? x > y : x < y;
    };
    for (int64_t i = 0; i < row; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(), before);
    for (int64_t i = 0; i < k; ++i) {
      top_values[r * k + i] = v[order[size_t(i)]];
      top_indices[r * k + i] = order[size_t(i)];
    }
  }
}

// ---------------------------------------------------------------- det

// The determinants of `count` n x n matrices (row-major in `matrices`, overwritten): LU with
// partial pivoting, in double.
inline void determinants(double* matrices, int64_t count, int64_t n, double* results) {
  for (int64_t m = 0; m < count; ++m) {
    double* a = matrices + m * n * n;
    double determinant = 1;
    for (int64_t col = 0; col < n && determinant != 0; ++col) {
      int64_t pivot = col;
      for (int64_t row = col + 1; row < n; ++row)
        if (std::fabs(a[row * n + col]) > std::fabs(a[pivot * n + col])) pivot = row;
      if (a[pivot * n + col] == 0) {
        determinant = 0;
        break;
      }
      if (pivot != col) {
        for (int64_t j = 0; j < n; ++j) std::swap(a[pivot * n + j], a[col * n + j]);
        determinant = -determinant;
      }
      determinant *= a[col * n + col];
      for (int64_t row = col + 1; row < n; ++row) {
        double factor = a[row * n + col] / a[col * n + col];
        for (int64_t j = col; j < n; ++j) a[row * n + j] -= factor * a[col * n + j];
      }
    }
    results[m] = determinant;
  }
}

// ---------------------------------------------------------------- convolution

// The geometry of a convolution (1-3 spatial dims, NC* layout, groups, transposed with
// output_padding); spatial dims are padded to three (missing ones: size 1), so one loop nest
// serves every rank.
struct ConvolutionGeometry {
  static constexpr size_t kMaxSpatial = 3;
  struct Dim {
    int64_t in = 1, out = 1, kernel = 1, stride = 1, padding = 0, dilation = 1;
  };
  int64_t batch = 0, in_channels = 0, out_channels = 0, groups = 1, in_per_group = 0, out_per_group = 0;
  bool transposed = false;
  Dim dims[kMaxSpatial];
  Shape out_shape;  // [N, out_channels, *spatial]
};

// The geometry of input (shape `input`) convolved with weight (`weight`: [out, in/groups, *k],
// transposed [in, out/groups, *k]); stride, padding, dilation and output_padding have one value
// per spatial dim. Throws KernelFailure for shapes and arguments that do not fit.
inline ConvolutionGeometry convolution_geometry(const Shape& input, const Shape& weight, const Shape& stride,
                                                const Shape& padding, const Shape& dilation, const Shape& output_padding,
                                                int64_t groups, bool transposed) {
  size_t spatial = weight.size() >= 3 ? weight.size() - 2 : 0;
  if (spatial < 1 || spatial > ConvolutionGeometry::kMaxSpatial)
    throw KernelFailure("convolution: weight must have 3 to 5 dims ([out, in/groups, *kernel]), got shape " +
                        shape_text(weight));
  if (input.size() != spatial + 2)
    throw KernelFailure("convolution: expected a " + std::to_string(spatial + 2) + "-D input [N, C, *spatial] for a " +
                        std::to_string(weight.size()) + "-D weight, got shape " + shape_text(input));
  if (groups < 1) throw KernelFailure("convolution: groups must be positive, got " + std::to_string(groups));
  ConvolutionGeometry g;
  g.transposed = transposed;
  g.groups = groups;
  g.batch = input[0];
  g.in_channels = input[1];
  g.out_channels = transposed ? weight[1] * groups : weight[0];
  g.in_per_group = transposed ? weight[0] / groups : weight[1];
  g.out_per_group = g.out_channels / groups;
  if (transposed ? weight[0] != g.in_channels || g.in_channels % groups != 0
                 : g.in_channels != weight[1] * groups || g.out_channels % groups != 0)
    throw KernelFailure("convolution: input of shape " + shape_text(input) + " and weight of shape " + shape_text(weight) +
                        " do not fit with groups=" + std::to_string(groups) + (transposed ? " (transposed)" : ""));
  g.out_shape = {g.batch, g.out_channels};
  for (size_t s = 0; s < spatial; ++s) {
    ConvolutionGeometry::Dim& dim = g.dims[ConvolutionGeometry::kMaxSpatial - spatial + s];
    dim.in = input[2 + s];
    dim.kernel = weight[2 + s];
    dim.stride = stride[s];
    dim.padding = padding[s];
    dim.dilation = dilation[s];
    if (dim.stride < 1 || dim.dilation < 1 || dim.padding < 0)
      throw KernelFailure("convolution: stride and dilation must be positive and padding non-negative");
    if (transposed) {
      if (output_padding[s] >= dim.stride && output_padding[s] >= dim.dilation)
        throw KernelFailure("convolution: output_padding must be smaller than either stride or dilation");
      dim.out = (dim.in - 1) * dim.stride - 2 * dim.padding + dim.dilation * (dim.kernel - 1) + output_padding[s] + 1;
    } else {
      dim.out = (dim.in + 2 * dim.padding - dim.dilation * (dim.kernel - 1) - 1) / dim.stride + 1;
      if (dim.in + 2 * dim.padding < dim.dilation * (dim.kernel - 1) + 1) dim.out = 0;
    }
    if (dim.out <= 0)
      throw KernelFailure("convolution: the output size of spatial dim " + std::to_string(s) + " is " +
                          std::to_string(dim.out) + " (input " + std::to_string(dim.in) + ", kernel " +
                          std::to_string(dim.kernel) + "): too small");
    g.out_shape.push_back(dim.out);
  }
  return g;
}

// out (zeros, g.out_shape) += the convolution of x by w, plus bias (one per output channel, or
// null): direct loops, in double.
inline void convolution_sums(const ConvolutionGeometry& g, const double* x, const double* w, const double* bias,
                             double* out) {
  const ConvolutionGeometry::Dim &d0 = g.dims[0], &d1 = g.dims[1], &d2 = g.dims[2];
  int64_t kernel_volume = d0.kernel * d1.kernel * d2.kernel;
  auto in_at = [&](int64_t n, int64_t c, int64_t i0, int64_t i1, int64_t i2) {
    return ((n * g.in_channels + c) * d0.in + i0) * d1.in * d2.in + i1 * d2.in + i2;
  };
  auto out_at = [&](int64_t n, int64_t c, int64_t o0, int64_t o1, int64_t o2) {
    return ((n * g.out_channels + c) * d0.out + o0) * d1.out * d2.out + o1 * d2.out + o2;
  };
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t group = 0; group < g.groups; ++group)
      for (int64_t ci = 0; ci < g.in_per_group; ++ci)
        for (int64_t co = 0; co < g.out_per_group; ++co) {
          int64_t in_c = group * g.in_per_group + ci, out_c = group * g.out_per_group + co;
          const double* kernel = g.transposed ? &w[(in_c * g.out_per_group + co) * kernel_volume]
                                              : &w[(out_c * g.in_per_group + ci) * kernel_volume];
          for (int64_t k0 = 0; k0 < d0.kernel; ++k0)
            for (int64_t k1 = 0; k1 < d1.kernel; ++k1)
              for (int64_t k2 = 0; k2 < d2.kernel; ++k2) {
                double weight_value = kernel[(k0 * d1.kernel + k1) * d2.kernel + k2];
                if (!g.transposed) {
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
                        out[out_at(n, out_c, o0, o1, o2)] += x[in_at(n, in_c, i0, i1, i2)] * weight_value;
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
                        out[out_at(n, out_c, o0, o1, o2)] += x[in_at(n, in_c, i0, i1, i2)] * weight_value;
                      }
                    }
                  }
                }
              }
        }
  if (bias == nullptr) return;
  int64_t volume = d0.out * d1.out * d2.out;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.out_channels; ++c)
      for (int64_t i = 0; i < volume; ++i) out[(n * g.out_channels + c) * volume + i] += bias[c];
}

// ---------------------------------------------------------------- matmul

// out[g] = x[g] @ y[g] for `batches` row-major [n, k] and [k, m] matrices, accumulated in T
// from zero (double for floating dtypes; uint64_t for integers, whose products and sums wrap as
// the interpreter's do). `out` holds batches * n * m values.
template <typename T>
void batched_product(const T* x, const T* y, int64_t batches, int64_t n, int64_t k, int64_t m, T* out) {
  std::fill(out, out + batches * n * m, T(0));
  for (int64_t g = 0; g < batches; ++g) {
    const T* xa = x + g * n * k;
    const T* yb = y + g * k * m;
    T* o = out + g * n * m;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < k; ++p) {
        T left = xa[i * k + p];
        for (int64_t j = 0; j < m; ++j) o[i * m + j] += left * yb[p * m + j];
      }
  }
}

// ---------------------------------------------------------------- strided tensors (packages)

// The dtype codes of kiln::DType (kiln/dtype.h), as packages pass them.
enum DTypeCode : int32_t {
  kF32 = 0, kF16 = 1, kBF16 = 2, kF64 = 3, kI64 = 4, kI32 = 5, kI8 = 6, kU8 = 7, kBool = 8, kI16 = 9,
  kU16 = 10, kU32 = 11, kU64 = 12,
  kLastDTypeCode = kU64
};

inline bool floating_code(int32_t dtype) { return dtype == kF32 || dtype == kF16 || dtype == kBF16 || dtype == kF64; }

inline const char* dtype_code_name(int32_t dtype) {
  static const char* const names[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool", "i16", "u16", "u32", "u64"};
  return dtype >= 0 && dtype <= kLastDTypeCode ? names[dtype] : "an unknown dtype";
}

// A tensor as a package's kernels pass it: data, row-major sizes, strides in elements, dtype.
struct View {
  void* data = nullptr;
  Shape sizes;
  Shape strides;
  int32_t dtype = kF32;
};

// The view with dims `dim` and the last swapped (rank 0: a view of one element).
inline View dim_last(View view, int64_t dim) {
  if (view.sizes.empty()) return View{view.data, {1}, {1}, view.dtype};
  std::swap(view.sizes[size_t(dim)], view.sizes.back());
  std::swap(view.strides[size_t(dim)], view.strides.back());
  return view;
}

[[noreturn]] inline void unsupported_dtype(int32_t dtype) {
  throw KernelFailure(std::string("the package's fallback kernels do not support ") + dtype_code_name(dtype) + " tensors");
}

// Float-to-integer conversion without undefined behaviour: NaN becomes 0, values beyond the
// range saturate (runtime/tensor.cpp's rule).
template <typename Int>
Int saturate(double value) {
  if (std::isnan(value)) return 0;
  constexpr double low = double(std::numeric_limits<Int>::min());
  constexpr double high = double(std::numeric_limits<Int>::max());
  if (value <= low) return std::numeric_limits<Int>::min();
  if (value >= high) return std::numeric_limits<Int>::max();
  return Int(value);
}

template <typename T>
T read_raw(const void* address) {
  T value;
  std::memcpy(&value, address, sizeof(T));
  return value;
}

template <typename T>
void write_raw(void* address, T value) {
  std::memcpy(address, &value, sizeof(T));
}

inline size_t code_size(int32_t dtype) {
  static const size_t sizes[] = {4, 2, 2, 8, 8, 4, 1, 1, 1, 2, 2, 4, 8};
  if (dtype < 0 || dtype > kLastDTypeCode) unsupported_dtype(dtype);
  return sizes[dtype];
}

// One element read or written by runtime/tensor.cpp's load_double, load_int, store_double, store_int.
inline double load_double(int32_t dtype, const void* p) {
  switch (dtype) {
    case kF32: return read_raw<float>(p);
    case kF16: return f16_to_float(read_raw<uint16_t>(p));
    case kBF16: return bf16_to_float(read_raw<uint16_t>(p));
    case kF64: return read_raw<double>(p);
    case kI64: return double(read_raw<int64_t>(p));
    case kI32: return read_raw<int32_t>(p);
    case kI16: return read_raw<int16_t>(p);
    case kI8: return read_raw<int8_t>(p);
    case kU8: return read_raw<uint8_t>(p);
    case kU16: return read_raw<uint16_t>(p);
    case kU32: return read_raw<uint32_t>(p);
    case kU64: return double(read_raw<uint64_t>(p));
    case kBool: return read_raw<uint8_t>(p) != 0 ? 1.0 : 0.0;
    default: unsupported_dtype(dtype);
  }
}

inline int64_t load_int(int32_t dtype, const void* p) {
  switch (dtype) {
    case kI64: return read_raw<int64_t>(p);
    case kI32: return read_raw<int32_t>(p);
    case kI16: return read_raw<int16_t>(p);
    case kI8: return read_raw<int8_t>(p);
    case kU8: return read_raw<uint8_t>(p);
    case kU16: return read_raw<uint16_t>(p);
    case kU32: return read_raw<uint32_t>(p);
    case kU64: return int64_t(read_raw<uint64_t>(p));
    case kBool: return read_raw<uint8_t>(p) != 0;
    default: return saturate<int64_t>(load_double(dtype, p));
  }
}

inline void store_int(int32_t dtype, void* p, int64_t value);

inline void store_double(int32_t dtype, void* p, double value) {
  switch (dtype) {
    case kF32: write_raw(p, float(value)); return;
    case kF64: write_raw(p, value); return;
    case kBool: write_raw(p, uint8_t(value != 0.0)); return;
    case kF16: write_raw(p, float_to_f16(float(value))); return;
    case kBF16: write_raw(p, float_to_bf16(float(value))); return;
    case kU64:
      if (value >= 0x1p63) {
        write_raw(p, value >= 0x1p64 ? UINT64_MAX : uint64_t(value));
        return;
      }
      store_int(dtype, p, saturate<int64_t>(value));
      return;
    default: store_int(dtype, p, saturate<int64_t>(value)); return;
  }
}

inline void store_int(int32_t dtype, void* p, int64_t value) {
  switch (dtype) {
    case kI64: write_raw(p, value); return;
    case kI32: write_raw(p, int32_t(uint32_t(uint64_t(value)))); return;
    case kI16: write_raw(p, int16_t(uint16_t(uint64_t(value)))); return;
    case kI8: write_raw(p, int8_t(uint8_t(uint64_t(value)))); return;
    case kU8: write_raw(p, uint8_t(uint64_t(value))); return;
    case kU16: write_raw(p, uint16_t(uint64_t(value))); return;
    case kU32: write_raw(p, uint32_t(uint64_t(value))); return;
    case kU64: write_raw(p, uint64_t(value)); return;
    case kBool: write_raw(p, uint8_t(value != 0)); return;
    default: store_double(dtype, p, double(value)); return;
  }
}

// An element of dtype `from` as T (double or int64_t), converted first to dtype `through` as
// Tensor::to converts (integer to integer exactly, anything else through double).
template <typename T>
T load_through(int32_t from, const void* p, int32_t through) {
  unsigned char converted[8];
  if (through != from) {
    if (!floating_code(from) && !floating_code(through)) store_int(through, converted, load_int(from, p));
    else store_double(through, converted, load_double(from, p));
    p = converted;
    from = through;
  }
  if constexpr (std::is_floating_point_v<T>) return load_double(from, p);
  else return load_int(from, p);
}

// Row-major values of a view as T, converted through dtype `through` (-1: the view's own).
template <typename T>
std::vector<T> read_values(const View& view, int32_t through = -1) {
  if (through < 0) through = view.dtype;
  std::vector<T> values;
  values.reserve(size_t(element_count(view.sizes)));
  const char* base = static_cast<const char*>(view.data);
  size_t width = code_size(view.dtype);
  for_each_index(view.sizes, [&](const int64_t* index) {
    int64_t offset = 0;
    for (size_t d = 0; d < view.sizes.size(); ++d) offset += index[d] * view.strides[d];
    values.push_back(load_through<T>(view.dtype, base + offset * int64_t(width), through));
  });
  return values;
}

// Stores row-major `values` into a view, rounded once to its dtype.
template <typename T>
void write_values(const View& view, const std::vector<T>& values) {
  char* base = static_cast<char*>(view.data);
  size_t width = code_size(view.dtype);
  size_t at = 0;
  for_each_index(view.sizes, [&](const int64_t* index) {
    int64_t offset = 0;
    for (size_t d = 0; d < view.sizes.size(); ++d) offset += index[d] * view.strides[d];
    if constexpr (std::is_floating_point_v<T>) store_double(view.dtype, base + offset * int64_t(width), values[at++]);
    else store_int(view.dtype, base + offset * int64_t(width), values[at++]);
  });
}

// ---------------------------------------------------------------- drivers (packages)

// cumsum(self, dim) into out, whose dtype is the result's (the dtype argument, or self's for
// floats, i64 for integers and bool).
inline void cumsum(const View& self, const View& out, int64_t dim) {
  if (self.sizes.empty()) {  // a copy (no addition: -0 stays -0)
    if (floating_code(out.dtype)) write_values(out, read_values<double>(self, out.dtype));
    else write_values(out, read_values<int64_t>(self, out.dtype));
    return;
  }
  View in = dim_last(self, dim), result = dim_last(out, dim);
  int64_t row = in.sizes.back();
  if (floating_code(out.dtype)) {
    std::vector<double> values = read_values<double>(in, out.dtype);
    prefix_sums(values.data(), int64_t(values.size()), row);
    write_values(result, values);
  } else {
    std::vector<int64_t> values = read_values<int64_t>(in, out.dtype);
    prefix_sums(values.data(), int64_t(values.size()), row);
    write_values(result, values);
  }
}

template <typename T>
void scatter_as(const View& self, const View& index, const View* src, T number, const View& out, int64_t dim,
                ScatterReduce reduce) {
  std::vector<T> values = read_values<T>(self);
  std::vector<int64_t> positions = read_values<int64_t>(index);
  std::vector<T> source = src != nullptr ? read_values<T>(*src, self.dtype) : std::vector<T>{number};
  scatter_values(values.data(), self.sizes, dim, positions.data(), index.sizes, source.data(),
                 src != nullptr ? src->sizes : Shape{}, reduce);
  write_values(out, values);
}

inline void check_index_dtype(const View& index, const char* what) {
  if (floating_code(index.dtype) || index.dtype == kBool)
    throw KernelFailure(std::string(what) + " must be an integer tensor, got " + dtype_code_name(index.dtype));
}

// scatter(self, dim, index, src, reduce) into out; `src` null: the number (as self's dtype
// converts it: `number_double` for floating self, `number_int` otherwise).
inline void scatter(const View& self, const View& index, const View* src, double number_double, int64_t number_int,
                    const View& out, int64_t dim, ScatterReduce reduce) {
  check_index_dtype(index, "scatter(): index");
  check_scatter_shapes(self.sizes, dim, index.sizes, src != nullptr ? &src->sizes : nullptr);
  if (floating_code(self.dtype)) scatter_as<double>(self, index, src, number_double, out, dim, reduce);
  else scatter_as<int64_t>(self, index, src, number_int, out, dim, reduce);
}

// index_put(self, indices, values, accumulate) into out; a null index is None (a whole dim).
inline void index_put(const View& self, const std::vector<const View*>& indices, const View& values, const View& out,
                      bool accumulate) {
  std::vector<IndexTensor> list;
  for (const View* index : indices) {
    IndexTensor entry;
    if (index != nullptr) {
      if (floating_code(index->dtype))
        throw KernelFailure(std::string("tensors used as indices must be long, int, byte or bool tensors, got ") +
                            dtype_code_name(index->dtype));
      entry.defined = true;
      entry.mask = index->dtype == kBool || index->dtype == kU8;
      entry.sizes = index->sizes;
      entry.values = read_values<int64_t>(*index);
    }
    list.push_back(std::move(entry));
  }
  if (floating_code(self.dtype)) {
    std::vector<double> result = read_values<double>(self), source = read_values<double>(values, self.dtype);
    index_put_values(result.data(), self.sizes, list, source.data(), values.sizes, accumulate);
    write_values(out, result);
  } else {
    std::vector<int64_t> result = read_values<int64_t>(self), source = read_values<int64_t>(values, self.dtype);
    index_put_values(result.data(), self.sizes, list, source.data(), values.sizes, accumulate);
    write_values(out, result);
  }
}

template <typename T>
void topk_as(const View& in, int64_t k, bool largest, const View& values_out, const View& indices_out) {
  std::vector<T> values = read_values<T>(in);
  int64_t row = in.sizes.back(), rows = row == 0 ? 0 : int64_t(values.size()) / row;
  std::vector<T> top(size_t(rows * k));
  std::vector<int64_t> indices(size_t(rows * k));
  top_k(values.data(), rows, row, k, largest, top.data(), indices.data());
  write_values(values_out, top);
  write_values(indices_out, indices);
}

// topk(self, k, dim, largest) into values_out (self's dtype) and indices_out (i64).
inline void topk(const View& self, int64_t k, int64_t dim, bool largest, const View& values_out,
                 const View& indices_out) {
  View in = dim_last(self, dim), values = dim_last(values_out, dim), indices = dim_last(indices_out, dim);
  if (floating_code(self.dtype)) topk_as<double>(in, k, largest, values, indices);
  else topk_as<int64_t>(in, k, largest, values, indices);
}

// det(self) into out: one determinant per matrix of self's last two dims.
inline void det(const View& self, const View& out) {
  std::vector<double> matrices = read_values<double>(self);
  std::vector<double> results(size_t(element_count(out.sizes)), 1.0);
  determinants(matrices.data(), int64_t(results.size()), self.sizes.back(), results.data());
  write_values(out, results);
}

// convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups) into out; `bias` null when None; the lists have one value per spatial dim.
inline void convolution(const View& input, const View& weight, const View* bias, const Shape& stride,
                        const Shape& padding, const Shape& dilation, bool transposed, const Shape& output_padding,
                        int64_t groups, const View& out) {
  ConvolutionGeometry g =
      convolution_geometry(input.sizes, weight.sizes, stride, padding, dilation, output_padding, groups, transposed);
  if (bias != nullptr && (bias->sizes.size() != 1 || bias->sizes[0] != g.out_channels))
    throw KernelFailure("convolution: bias must have shape [" + std::to_string(g.out_channels) + "], got " +
                        shape_text(bias->sizes));
  std::vector<double> x = read_values<double>(input), w = read_values<double>(weight);
  std::vector<double> b = bias != nullptr ? read_values<double>(*bias) : std::vector<double>{};
  std::vector<double> result(size_t(element_count(g.out_shape)), 0.0);
  convolution_sums(g, x.data(), w.data(), bias != nullptr ? b.data() : nullptr, result.data());
  write_values(out, result);
}

// matmul(self, other) into out (torch.matmul: a 1-d operand gains a dim that the result then
// drops; batch dims broadcast), for the dtypes the code generator's GEMM does not take (integers,
// f16, bf16): floating values in double, integers in wrapping 64-bit arithmetic, each result
// rounded once on its store, as the interpreter computes them.
inline void matmul(const View& self, const View& other, const View& out) {
  if (self.sizes.empty() || other.sizes.empty())
    throw KernelFailure("both arguments to matmul need to be at least 1-D");
  View a = self, b = other;
  if (a.sizes.size() == 1) {  // [k] -> [1, k]
    a.sizes.insert(a.sizes.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b.sizes.size() == 1) {  // [k] -> [k, 1]
    b.sizes.push_back(1);
    b.strides.push_back(0);
  }
  int64_t n = a.sizes[a.sizes.size() - 2], k = a.sizes.back(), m = b.sizes.back();
  if (b.sizes[b.sizes.size() - 2] != k)
    throw KernelFailure("matmul: the inner sizes differ (" + shape_text(self.sizes) + " and " + shape_text(other.sizes) + ")");
  Shape batch_a(a.sizes.begin(), a.sizes.end() - 2), batch_b(b.sizes.begin(), b.sizes.end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b);
  // Each operand as a view of [batch..., rows, cols]: broadcast dims read with stride 0.
  auto expanded = [&](const View& view, const Shape& own_batch) {
    View result{view.data, batch, Shape(batch.size(), 0), view.dtype};
    size_t offset = batch.size() - own_batch.size();
    for (size_t d = 0; d < own_batch.size(); ++d)
      result.strides[offset + d] = own_batch[d] == 1 ? 0 : view.strides[d];
    result.sizes.insert(result.sizes.end(), view.sizes.end() - 2, view.sizes.end());
    result.strides.insert(result.strides.end(), view.strides.end() - 2, view.strides.end());
    return result;
  };
  View x = expanded(a, batch_a), y = expanded(b, batch_b);
  int64_t batches = element_count(batch);
  // out's elements in row-major order are those of [batch..., n, m] (a dropped dim had size 1).
  if (floating_code(out.dtype)) {
    std::vector<double> left = read_values<double>(x), right = read_values<double>(y), product(size_t(batches * n * m));
    batched_product(left.data(), right.data(), batches, n, k, m, product.data());
    write_values(out, product);
  } else {
    std::vector<int64_t> left = read_values<int64_t>(x), right = read_values<int64_t>(y);
    std::vector<uint64_t> l(left.begin(), left.end()), r(right.begin(), right.end()), product(size_t(batches * n * m));
    batched_product(l.data(), r.data(), batches, n, k, m, product.data());
    write_values(out, std::vector<int64_t>(product.begin(), product.end()));
  }
}

}  // namespace KILN_PORTABLE_NAMESPACE

#endif  // KILN_PORTABLE_KERNELS_H
