// The math of the reference kernels that packages compile in: the ops the code generator does
// not lower and a package runs anyway (its "fallback" ops): cumsum, scatter (with reduce),
// index_put (bool masks, None dims, accumulate), topk, det, convolution and matmul (a
// transposed convolution, or dtypes the code generator's GEMM does not take), and the sampling
// ops grid_sample (every mode and padding mode, 1-3 spatial dims), roi_align (avg, max) and
// deform_conv2d. There is one implementation of each: the interpreter's kernels
// (ir/kernels/reduction_kernels.cpp, indexing_kernels.cpp, linalg_kernels.cpp,
// convolution_kernels.cpp, sampling_kernels.cpp) call the cores below on the values they read
// from Tensors, and every
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

// Inclusive prefix sums (or products) of each row of `row` values (count values in all):
// floating values in double, integers in int64 with wrap.
template <typename T>
void prefix_scans(T* values, int64_t count, int64_t row, bool product) {
  for (int64_t start = 0; row > 0 && start < count; start += row) {
    if constexpr (std::is_floating_point_v<T>) {
      T running = product ? 1 : 0;
      for (int64_t i = start; i < start + row; ++i) values[i] = running = product ? running * values[i] : running + values[i];
    } else {
      uint64_t running = product ? 1 : 0;
      for (int64_t i = start; i < start + row; ++i)
        values[i] = T(running = product ? running * uint64_t(values[i]) : running + uint64_t(values[i]));
    }
  }
}

// The running max (or min) of each row and the index in the row where it was taken, as
// PyTorch's cummax / cummin: an element at least as large (small) as the running value, or a
// NaN, takes over (so ties and later NaNs move the index), and nothing but a NaN replaces a NaN.
template <typename T>
void running_extremes(T* values, int64_t* indices, int64_t count, int64_t row, bool largest) {
  auto is_nan = [](T x) {
    if constexpr (std::is_floating_point_v<T>) return x != x;
    return false;
  };
  for (int64_t start = 0; row > 0 && start < count; start += row) {
    T best = values[start];
    int64_t at = 0;
    for (int64_t i = 0; i < row; ++i) {
      T x = values[start + i];
      if (is_nan(x) || (!is_nan(best) && (largest ? x >= best : x <= best))) best = x, at = i;
      values[start + i] = best;
      indices[start + i] = at;
    }
  }
}

// log(exp(a) + exp(b)) as PyTorch's logcumsumexp adds each element: exact for infinities
// (two infinities of one sign give that infinity) and NaN-propagating.
inline double log_add_exp(double a, double b) {
  double low = std::isnan(b) ? b : std::min(a, b), high = std::isnan(b) ? b : std::max(a, b);
  if (low != high || std::isfinite(low)) return std::log1p(std::exp(low - high)) + high;
  return a;
}

// Inclusive log-sum-exp prefixes of each row, in double.
inline void prefix_log_sum_exps(double* values, int64_t count, int64_t row) {
  for (int64_t start = 0; row > 0 && start < count; start += row) {
    double running = -std::numeric_limits<double>::infinity();
    for (int64_t i = start; i < start + row; ++i) values[i] = running = log_add_exp(running, values[i]);
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

// ---------------------------------------------------------------- grid_sample

// grid_sample samples input [N, C, D1..Dr] (1 <= r <= 3) at a grid [N, O1..Or, r] of
// normalized coordinates (last one first: x indexes the last spatial dim) in [-1, 1],
// denormalized with or without align_corners, as PyTorch's grid_sampler and ONNX's reference
// (onnx/reference/ops/op_grid_sample.py) do: out-of-range coordinates are clamped (border) or
// reflected (reflection); nearest rounds half to even; bilinear and bicubic (Keys, a = -0.75)
// interpolate over 2 or 4 taps per dim, each tap read with the padding rule (zeros reads 0
// outside). Coordinates are kept in the grid's precision (rounded to float after each step
// unless the grid is f64).
enum class GridSampleMode { bilinear, nearest, bicubic };
enum class GridSamplePadding { zeros, border, reflection };

inline GridSampleMode grid_sample_mode(const std::string& name) {
  if (name == "bilinear") return GridSampleMode::bilinear;
  if (name == "nearest") return GridSampleMode::nearest;
  if (name == "bicubic") return GridSampleMode::bicubic;
  throw KernelFailure("mode '" + name + "' is not one of bilinear, nearest, bicubic");
}

inline GridSamplePadding grid_sample_padding(const std::string& name) {
  if (name == "zeros") return GridSamplePadding::zeros;
  if (name == "border") return GridSamplePadding::border;
  if (name == "reflection") return GridSamplePadding::reflection;
  throw KernelFailure("padding_mode '" + name + "' is not one of zeros, border, reflection");
}

// The shape of grid_sample's result, [N, C, O1..Or], for an input and a grid that fit.
inline Shape grid_sample_shape(const Shape& input, const Shape& grid) {
  if (input.size() < 3 || input.size() > 5)
    throw KernelFailure("grid_sample expects an input of rank 3 to 5, but got shape " + shape_text(input));
  if (grid.size() != input.size())
    throw KernelFailure("grid_sample expects a grid of the input's rank " + std::to_string(input.size()) +
                        ", but got shape " + shape_text(grid));
  if (grid[0] != input[0])
    throw KernelFailure("grid_sample: the grid's batch size " + std::to_string(grid[0]) + " is not the input's " +
                        std::to_string(input[0]));
  if (grid.back() != int64_t(input.size()) - 2)
    throw KernelFailure("grid_sample: the grid's last dim must be " + std::to_string(input.size() - 2) +
                        " (one coordinate per spatial dim), but it is " + std::to_string(grid.back()));
  Shape out = {input[0], input[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return out;
}

// The coordinate rules of one input's spatial dims.
struct GridSampler {
  const double* data = nullptr;  // the input, row-major
  Shape spatial;                 // D1..Dr
  bool align_corners = false;
  GridSamplePadding padding = GridSamplePadding::zeros;
  bool round_to_float = true;  // coordinates are kept in the grid's precision

  double low(size_t) const { return align_corners ? 0.0 : -0.5; }
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
    if (padding == GridSamplePadding::border) return std::clamp(x, 0.0, double(spatial[d]) - 1);
    if (padding == GridSamplePadding::reflection) return keep(reflect(x, low(d), high(d)));
    return x;
  }

  // The index read for tap `i` of dim d, or -1 for a zero (zeros padding outside).
  int64_t tap_index(int64_t i, size_t d) const {
    int64_t size = spatial[d];
    if (padding == GridSamplePadding::zeros) return i >= 0 && i < size ? i : -1;
    if (padding == GridSamplePadding::border) return std::clamp<int64_t>(i, 0, size - 1);
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

// Keys' cubic convolution weights (a = -0.75) of the four taps around a point at fraction x.
inline void cubic_coefficients(double x, std::vector<double>& coefficients) {
  const double a = -0.75;
  x = std::fabs(x);
  coefficients = {((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a, ((a + 2) * x - (a + 3)) * x * x + 1,
                  ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1,
                  ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a};
}

// out (grid_sample_shape's, row-major) = input (row-major, shape `input_sizes`) sampled at
// `grid` (row-major, `grid_sizes`); round_to_float unless the grid is f64.
inline void grid_sample_values(const double* input, const Shape& input_sizes, const double* grid,
                               const Shape& grid_sizes, GridSampleMode mode, GridSamplePadding padding,
                               bool align_corners, bool round_to_float, double* out) {
  GridSampler sampler;
  sampler.data = input;
  sampler.spatial = Shape(input_sizes.begin() + 2, input_sizes.end());
  sampler.padding = padding;
  sampler.align_corners = align_corners;
  sampler.round_to_float = round_to_float;
  size_t rank = sampler.spatial.size();
  int64_t batch = input_sizes[0], channels = input_sizes[1];
  int64_t plane = element_count(sampler.spatial);
  int64_t points = element_count(Shape(grid_sizes.begin() + 1, grid_sizes.end() - 1));
  std::vector<std::vector<int64_t>> taps(rank);
  std::vector<std::vector<double>> weights(rank);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t p = 0; p < points; ++p) {
      const double* normalized = &grid[size_t((n * points + p) * int64_t(rank))];
      for (size_t d = 0; d < rank; ++d) {
        double x = sampler.denormalize(normalized[rank - 1 - d], d);
        if (mode == GridSampleMode::nearest) x = std::nearbyint(x);
        x = sampler.padded_coordinate(x, d);
        if (mode == GridSampleMode::nearest) {
          taps[d] = {sampler.tap_index(int64_t(x), d)};
          weights[d] = {1.0};
          continue;
        }
        int64_t first = int64_t(std::floor(x));
        double t = x - double(first);
        if (mode == GridSampleMode::bilinear) {
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
}

// ---------------------------------------------------------------- roi_align

// roi_align pools input [N, C, H, W] over boxes rois [R, 4] (x1, y1, x2, y2, scaled by
// spatial_scale) of images batch_indices [R], as torchvision and ONNX's reference
// (onnx/reference/ops/op_roi_align.py) do: per box and output bin, sampling_ratio^2 points (or
// ceil(bin size) per dim when 0) bilinearly interpolated and averaged (avg) or the largest
// weighted corner (max, as ONNX defines it); aligned shifts box coordinates by half a pixel.

// The shape of roi_align's result, [R, C, pooled_height, pooled_width], for arguments that fit.
inline Shape roi_align_shape(const Shape& input, const Shape& rois, const Shape& batch_indices, int64_t pooled_height,
                             int64_t pooled_width) {
  if (input.size() != 4) throw KernelFailure("roi_align expects an input [N, C, H, W], but got shape " + shape_text(input));
  if (rois.size() != 2 || rois[1] != 4)
    throw KernelFailure("roi_align expects rois [R, 4], but got shape " + shape_text(rois));
  if (batch_indices.size() != 1 || batch_indices[0] != rois[0])
    throw KernelFailure("roi_align expects batch_indices [" + std::to_string(rois[0]) + "], but got shape " +
                        shape_text(batch_indices));
  if (pooled_height < 1 || pooled_width < 1)
    throw KernelFailure("roi_align: the output size " + std::to_string(pooled_height) + "x" +
                        std::to_string(pooled_width) + " must be positive");
  return {rois[0], input[1], pooled_height, pooled_width};
}

// One sample point's four corners (offsets in the plane) and bilinear weights.
struct RoiSamplePoint {
  int64_t position[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

inline RoiSamplePoint roi_sample_point(double y, double x, int64_t height, int64_t width) {
  RoiSamplePoint point;
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

// out ([R, C, pooled_height, pooled_width], row-major) from input (row-major, `input_sizes`),
// `roi_count` boxes (row-major [R, 4]) and their batch indices; max_mode: "max", else "avg".
// Throws KernelFailure for a batch index out of range.
inline void roi_align_values(const double* input, const Shape& input_sizes, const double* rois,
                             const int64_t* batch_indices, int64_t roi_count, int64_t pooled_height,
                             int64_t pooled_width, int64_t sampling_ratio, double spatial_scale, bool max_mode,
                             bool aligned, double* out) {
  int64_t batch = input_sizes[0], channels = input_sizes[1], height = input_sizes[2], width = input_sizes[3];
  double offset = aligned ? 0.5 : 0.0;
  for (int64_t r = 0; r < roi_count; ++r) {
    int64_t image = batch_indices[r];
    if (image < 0 || image >= batch)
      throw KernelFailure("roi_align: batch index " + std::to_string(image) + " of box " + std::to_string(r) +
                          " is out of range for a batch of " + std::to_string(batch));
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
        std::vector<RoiSamplePoint> samples;
        for (int64_t iy = 0; iy < grid_h; ++iy)
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            double y = start_h + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h);
            double x = start_w + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w);
            samples.push_back(roi_sample_point(y, x, height, width));
          }
        for (int64_t c = 0; c < channels; ++c) {
          const double* plane = &input[size_t((image * channels + c) * height * width)];
          double value = 0;
          bool first = true;
          for (const RoiSamplePoint& s : samples) {
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
}

// ---------------------------------------------------------------- deform_conv2d

// deform_conv2d (torchvision's, ONNX's DeformConv): each output position sums, over the input
// channels of its group and the kernel taps, the weight times the input sampled bilinearly
// (zeros outside) at the tap's position plus its learned offset, times the mask; plus the bias.
// input [N, C, H, W], weight [OC, C / groups, KH, KW], offset [N, 2 * offset_groups * KH * KW,
// OH, OW] (dy, dx per tap), mask [N, offset_groups * KH * KW, OH, OW], bias [OC].

// The shape of deform_conv2d's result, [N, OC, OH, OW], for arguments that fit (mask and bias
// null when None).
inline Shape deform_conv2d_shape(const Shape& input, const Shape& weight, const Shape& offset, const Shape* mask,
                                 const Shape* bias, int64_t groups, int64_t offset_groups) {
  if (input.size() != 4 || weight.size() != 4 || offset.size() != 4)
    throw KernelFailure("deform_conv2d expects 4-d input, weight and offset, but got shapes " + shape_text(input) +
                        ", " + shape_text(weight) + " and " + shape_text(offset));
  if (groups < 1 || offset_groups < 1) throw KernelFailure("groups and offset_groups must be positive");
  if (input[1] != weight[1] * groups || weight[0] % groups != 0)
    throw KernelFailure("deform_conv2d: input channels " + std::to_string(input[1]) + " do not match weight " +
                        shape_text(weight) + " and groups " + std::to_string(groups));
  if (input[1] % offset_groups != 0)
    throw KernelFailure("deform_conv2d: " + std::to_string(input[1]) + " channels are not divisible by offset_groups " +
                        std::to_string(offset_groups));
  int64_t taps = weight[2] * weight[3];
  if (offset[0] != input[0] || offset[1] != 2 * offset_groups * taps)
    throw KernelFailure("deform_conv2d: offset must be [N, 2 * offset_groups * KH * KW, OH, OW], but it is " +
                        shape_text(offset));
  if (mask != nullptr && *mask != Shape{input[0], offset_groups * taps, offset[2], offset[3]})
    throw KernelFailure("deform_conv2d: mask must be [N, offset_groups * KH * KW, OH, OW], but it is " +
                        shape_text(*mask));
  if (bias != nullptr && *bias != Shape{weight[0]})
    throw KernelFailure("deform_conv2d: bias must have shape [" + std::to_string(weight[0]) + "], got " +
                        shape_text(*bias));
  return {input[0], weight[0], offset[2], offset[3]};
}

// out ([N, OC, OH, OW], row-major) from row-major input, weight, offset, mask and bias (null
// when None); stride, padding and dilation have two values (height, width).
inline void deform_conv2d_values(const double* x, const Shape& input_sizes, const double* w, const Shape& weight_sizes,
                                 const double* off, const Shape& offset_sizes, const double* mask, const double* bias,
                                 const Shape& stride, const Shape& padding, const Shape& dilation, int64_t groups,
                                 int64_t offset_groups, double* out) {
  int64_t n = input_sizes[0], channels = input_sizes[1], height = input_sizes[2], width = input_sizes[3];
  int64_t out_channels = weight_sizes[0], per_group = weight_sizes[1], kh = weight_sizes[2], kw = weight_sizes[3];
  int64_t oh = offset_sizes[2], ow = offset_sizes[3], taps = kh * kw;
  int64_t channels_per_offset_group = channels / offset_groups, out_per_group = out_channels / groups;
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
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < out_channels; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double total = bias == nullptr ? 0.0 : bias[o];
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
              double m = mask == nullptr ? 1.0 : mask[size_t((((b * offset_groups + g) * taps + t) * oh + i) * ow + j)];
              total += w[size_t(((o * per_group + (c - group * per_group)) * kh + ki) * kw + kj)] * sample(plane, y, xx) * m;
            }
          }
          out[size_t(((b * out_channels + o) * oh + i) * ow + j)] = total;
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

// cumsum or cumprod(self, dim) into out, whose dtype is the result's (the dtype argument, or
// self's for floats, i64 for integers and bool).
inline void prefix_scan(const View& self, const View& out, int64_t dim, bool product) {
  if (self.sizes.empty()) {  // a copy (no arithmetic: -0 stays -0)
    if (floating_code(out.dtype)) write_values(out, read_values<double>(self, out.dtype));
    else write_values(out, read_values<int64_t>(self, out.dtype));
    return;
  }
  View in = dim_last(self, dim), result = dim_last(out, dim);
  int64_t row = in.sizes.back();
  if (floating_code(out.dtype)) {
    std::vector<double> values = read_values<double>(in, out.dtype);
    prefix_scans(values.data(), int64_t(values.size()), row, product);
    write_values(result, values);
  } else {
    std::vector<int64_t> values = read_values<int64_t>(in, out.dtype);
    prefix_scans(values.data(), int64_t(values.size()), row, product);
    write_values(result, values);
  }
}

// cummax / cummin(self, dim) into values (self's dtype) and indices (i64).
inline void cummax(const View& self, const View& values_out, const View& indices_out, int64_t dim, bool largest) {
  View in = self.sizes.empty() ? self : dim_last(self, dim);
  View values_view = self.sizes.empty() ? values_out : dim_last(values_out, dim);
  View indices_view = self.sizes.empty() ? indices_out : dim_last(indices_out, dim);
  int64_t row = self.sizes.empty() ? 1 : in.sizes.back();
  if (floating_code(self.dtype)) {
    std::vector<double> values = read_values<double>(in, self.dtype);
    std::vector<int64_t> indices(values.size());
    running_extremes(values.data(), indices.data(), int64_t(values.size()), row, largest);
    write_values(values_view, values);
    write_values(indices_view, indices);
  } else {
    std::vector<int64_t> values = read_values<int64_t>(in, self.dtype);
    std::vector<int64_t> indices(values.size());
    running_extremes(values.data(), indices.data(), int64_t(values.size()), row, largest);
    write_values(values_view, values);
    write_values(indices_view, indices);
  }
}

// logcumsumexp(self, dim) into out (a floating dtype).
inline void logcumsumexp(const View& self, const View& out, int64_t dim) {
  View in = self.sizes.empty() ? self : dim_last(self, dim), result = self.sizes.empty() ? out : dim_last(out, dim);
  std::vector<double> values = read_values<double>(in, out.dtype);
  prefix_log_sum_exps(values.data(), int64_t(values.size()), self.sizes.empty() ? 1 : in.sizes.back());
  write_values(result, values);
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

// The result of a driver, of `shape`, must be what `out` holds.
inline void check_out_shape(const View& out, const Shape& shape, const char* op) {
  if (out.sizes != shape)
    throw KernelFailure(std::string(op) + ": the output has shape " + shape_text(out.sizes) + ", the result " +
                        shape_text(shape));
}

// grid_sample(input, grid, mode, padding_mode, align_corners) into out (input's dtype).
inline void grid_sample(const View& input, const View& grid, GridSampleMode mode, GridSamplePadding padding,
                        bool align_corners, const View& out) {
  Shape shape = grid_sample_shape(input.sizes, grid.sizes);
  check_out_shape(out, shape, "grid_sample");
  std::vector<double> x = read_values<double>(input), coordinates = read_values<double>(grid);
  std::vector<double> result(size_t(element_count(shape)), 0.0);
  grid_sample_values(x.data(), input.sizes, coordinates.data(), grid.sizes, mode, padding, align_corners,
                     grid.dtype != kF64, result.data());
  write_values(out, result);
}

// roi_align(input, rois, batch_indices, output_height, output_width, sampling_ratio,
// spatial_scale, mode, aligned) into out (input's dtype); max_mode: mode "max".
inline void roi_align(const View& input, const View& rois, const View& batch_indices, int64_t pooled_height,
                      int64_t pooled_width, int64_t sampling_ratio, double spatial_scale, bool max_mode, bool aligned,
                      const View& out) {
  check_index_dtype(batch_indices, "roi_align: batch_indices");
  Shape shape = roi_align_shape(input.sizes, rois.sizes, batch_indices.sizes, pooled_height, pooled_width);
  check_out_shape(out, shape, "roi_align");
  std::vector<double> x = read_values<double>(input), boxes = read_values<double>(rois);
  std::vector<int64_t> images = read_values<int64_t>(batch_indices);
  std::vector<double> result(size_t(element_count(shape)), 0.0);
  roi_align_values(x.data(), input.sizes, boxes.data(), images.data(), shape[0], pooled_height, pooled_width,
                   sampling_ratio, spatial_scale, max_mode, aligned, result.data());
  write_values(out, result);
}

// deform_conv2d(input, weight, offset, mask, bias, stride, padding, dilation, groups,
// offset_groups) into out (input's dtype); `mask` and `bias` null when None; the lists have
// two values (height, width).
inline void deform_conv2d(const View& input, const View& weight, const View& offset, const View* mask,
                          const View* bias, const Shape& stride, const Shape& padding, const Shape& dilation,
                          int64_t groups, int64_t offset_groups, const View& out) {
  Shape shape = deform_conv2d_shape(input.sizes, weight.sizes, offset.sizes, mask != nullptr ? &mask->sizes : nullptr,
                                    bias != nullptr ? &bias->sizes : nullptr, groups, offset_groups);
  check_out_shape(out, shape, "deform_conv2d");
  std::vector<double> x = read_values<double>(input), w = read_values<double>(weight), off = read_values<double>(offset);
  std::vector<double> m = mask != nullptr ? read_values<double>(*mask) : std::vector<double>{};
  std::vector<double> b = bias != nullptr ? read_values<double>(*bias) : std::vector<double>{};
  std::vector<double> result(size_t(element_count(shape)), 0.0);
  deform_conv2d_values(x.data(), input.sizes, w.data(), weight.sizes, off.data(), offset.sizes,
                       mask != nullptr ? m.data() : nullptr, bias != nullptr ? b.data() : nullptr, stride, padding,
                       dilation, groups, offset_groups, result.data());
  write_values(out, result);
}

}  // namespace KILN_PORTABLE_NAMESPACE

#endif  // KILN_PORTABLE_KERNELS_H
