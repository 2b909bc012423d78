// Reference kernels of the ops that read or write through index tensors: gather, scatter
// (with reduce), index_select, embedding, and index_put / index_put_ with PyTorch's advanced
// indexing (integer index tensors broadcast together, None for a whole dim, bool masks as
// their nonzero coordinates).
#include <algorithm>
#include <cmath>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

void check_index_dtype(const KernelCall& call, const Tensor& index, std::string_view what) {
  if (is_floating(index.dtype()) || index.dtype() == DType::boolean)
    call.fail(what, " must be an integer tensor, got ", dtype_name(index.dtype()));
}

// An index into a dim of `size` that must lie in [0, size) (gather, index_select, embedding).
int64_t checked_index(const KernelCall& call, int64_t index, int64_t size, std::string_view what) {
  if (index < 0 || index >= size) call.fail(what, " ", index, " is out of bounds for dimension of size ", size);
  return index;
}

Tensor gather(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  check_index_dtype(call, index, "gather(): index");
  int64_t rank = std::max<int64_t>(self.dim(), 1);
  int64_t dim = wrap_dim(call.int_arg(1), self.dim());
  if (std::max<int64_t>(index.dim(), 1) != rank)
    call.fail("gather(): index tensor must have the same number of dimensions as input tensor (", self.dim(),
              " vs ", index.dim(), ")");
  Sizes self_sizes = self.dim() == 0 ? Sizes{1} : self.sizes();
  Sizes index_sizes = index.dim() == 0 ? Sizes{1} : index.sizes();
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim && index_sizes[size_t(d)] > self_sizes[size_t(d)])
      call.fail("gather(): size of index dim ", d, " (", index_sizes[size_t(d)], ") exceeds the input's (",
                self_sizes[size_t(d)], ")");
  std::vector<int64_t> positions = to_ints(index);
  int64_t at = 0;
  Tensor result = take_elements(self.reshape(self_sizes), index_sizes, [&](std::span<const int64_t> out_index) {
    Sizes source(out_index.begin(), out_index.end());
    source[size_t(dim)] = checked_index(call, positions[size_t(at++)], self_sizes[size_t(dim)], "gather(): index");
    return linear_index(source, self_sizes);
  });
  return result.reshape(index.sizes());
}

// Combines an existing value with a scattered one.
template <typename T>
T combine(const std::string& reduce, T current, T value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (reduce == "sum") return current + value;
    if (reduce == "prod") return current * value;
    if (std::isnan(current) || std::isnan(value)) return std::nan("");
  } else {  // integers wrap
    if (reduce == "sum") return T(uint64_t(current) + uint64_t(value));
    if (reduce == "prod") return T(uint64_t(current) * uint64_t(value));
  }
  if (reduce == "amax") return std::max(current, value);
  return std::min(current, value);  // amin
}

template <typename T>
void scatter_values(const KernelCall& call, std::vector<T>& out, const Sizes& self_sizes, int64_t dim,
                    const Tensor& index, const std::vector<T>& src, const Sizes& src_sizes, const std::string& reduce) {
  std::vector<int64_t> positions = to_ints(index);
  int64_t at = 0;
  for_each_index(index.sizes(), [&](std::span<const int64_t> idx) {
    Sizes target(idx.begin(), idx.end());
    target[size_t(dim)] = checked_index(call, positions[size_t(at++)], self_sizes[size_t(dim)], "scatter(): index");
    T value = src_sizes.empty() ? src[0] : src[size_t(linear_index(idx, src_sizes))];
    T& slot = out[size_t(linear_index(target, self_sizes))];
    slot = reduce.empty() ? value : combine(reduce, slot, value);
  });
}

Tensor scatter(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  check_index_dtype(call, index, "scatter(): index");
  if (self.dim() == 0) call.fail("scatter(): a 0-d self is not supported");
  int64_t dim = wrap_dim(call.int_arg(1), self.dim());
  std::string reduce = call.arg(4).is_none() ? "" : call.string_arg(4);
  static const std::vector<std::string> known = {"sum", "prod", "amax", "amin"};
  if (!reduce.empty() && std::find(known.begin(), known.end(), reduce) == known.end())
    call.fail("scatter(): reduce argument must be 'sum', 'prod', 'amax' or 'amin', got '", reduce, "'");
  if (index.dim() != self.dim())
    call.fail("scatter(): index tensor must have the same number of dimensions as self (", self.dim(), " vs ",
              index.dim(), ")");
  Tensor src = operand_tensor(call, 3, self.dtype());
  Sizes src_sizes = call.is_tensor(3) ? src.sizes() : Sizes{};
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d != dim && index.size(d) > self.size(d))
      call.fail("scatter(): size of index dim ", d, " (", index.size(d), ") exceeds self's (", self.size(d), ")");
    if (call.is_tensor(3) && (src.dim() != index.dim() || index.size(d) > src.size(d)))
      call.fail("scatter(): index of shape ", sizes_to_string(index.sizes()), " does not fit src of shape ",
                sizes_to_string(src.sizes()));
  }
  if (is_floating(self.dtype())) {
    std::vector<double> out = to_doubles(self);
    scatter_values(call, out, self.sizes(), dim, index, to_doubles(src), src_sizes, reduce);
    return from_doubles(self.sizes(), self.dtype(), out);
  }
  std::vector<int64_t> out = to_ints(self);
  scatter_values(call, out, self.sizes(), dim, index, to_ints(src), src_sizes, reduce);
  return from_ints(self.sizes(), self.dtype(), out);
}

Tensor index_select(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  check_index_dtype(call, index, "index_select(): index");
  if (index.dim() > 1) call.fail("index_select(): index must be 0-d or 1-d, got ", index.dim(), " dims");
  Sizes self_sizes = self.dim() == 0 ? Sizes{1} : self.sizes();
  int64_t dim = wrap_dim(call.int_arg(1), self.dim());
  std::vector<int64_t> positions = to_ints(index);
  Sizes shape = self_sizes;
  shape[size_t(dim)] = int64_t(positions.size());
  Tensor result = take_elements(self.reshape(self_sizes), shape, [&](std::span<const int64_t> out_index) {
    Sizes source(out_index.begin(), out_index.end());
    source[size_t(dim)] =
        checked_index(call, positions[size_t(out_index[size_t(dim)])], self_sizes[size_t(dim)], "index_select(): index");
    return linear_index(source, self_sizes);
  });
  return self.dim() == 0 ? result.reshape({}) : result;
}

Tensor embedding(const KernelCall& call) {
  const Tensor& weight = call.tensor(0);
  const Tensor& indices = call.tensor(1);
  check_index_dtype(call, indices, "embedding(): indices");
  if (weight.dim() != 2) call.fail("embedding(): weight must be 2-D, got shape ", sizes_to_string(weight.sizes()));
  std::vector<int64_t> rows = to_ints(indices);
  Sizes shape = indices.sizes();
  shape.push_back(weight.size(1));
  int64_t width = weight.size(1);
  // padding_idx only affects the gradient; the forward is a plain row lookup.
  return take_elements(weight, shape, [&](std::span<const int64_t> out_index) {
    int64_t position = linear_index(out_index.first(out_index.size() - 1), indices.sizes());
    int64_t row = checked_index(call, rows[size_t(position)], weight.size(0), "embedding(): index");
    return row * width + out_index.back();
  });
}

// ---- advanced indexing ----

// The index tensors of self[indices] after bool masks became their nonzero coordinates:
// one entry per leading dim of self, undefined for a whole dim (None).
std::vector<Tensor> expand_masks(const KernelCall& call, const Tensor& self, const std::vector<Tensor>& indices) {
  std::vector<Tensor> result;
  for (const Tensor& index : indices) {
    if (!index.defined()) {
      result.emplace_back();
      continue;
    }
    if (is_floating(index.dtype()))
      call.fail("tensors used as indices must be long, int, byte or bool tensors, got ", dtype_name(index.dtype()));
    if (index.dtype() != DType::boolean && index.dtype() != DType::u8) {
      result.push_back(index);
      continue;
    }
    // A 0-d mask would add a dim of size 1 (true) or 0 (false); Kiln does not support it.
    if (index.dim() == 0) call.fail("a 0-d bool index is not supported");
    // A mask covers as many dims of self as it has, starting at the current one.
    size_t first = result.size();
    if (first + size_t(index.dim()) > size_t(self.dim()))
      call.fail("too many indices for tensor of dimension ", self.dim());
    for (int64_t d = 0; d < index.dim(); ++d)
      if (index.size(d) != self.size(int64_t(first) + d))
        call.fail("the shape of the mask ", sizes_to_string(index.sizes()), " at index ", d,
                  " does not match the shape of the indexed tensor ", sizes_to_string(self.sizes()), " at index ",
                  int64_t(first) + d);
    std::vector<std::vector<int64_t>> coordinates(size_t(index.dim()));
    std::vector<int64_t> truth = to_ints(index);
    int64_t at = 0;
    for_each_index(index.sizes(), [&](std::span<const int64_t> idx) {
      if (truth[size_t(at++)] == 0) return;
      for (size_t d = 0; d < idx.size(); ++d) coordinates[d].push_back(idx[d]);
    });
    for (const std::vector<int64_t>& values : coordinates)
      result.push_back(from_ints({int64_t(values.size())}, DType::i64, values));
  }
  if (result.size() > size_t(self.dim())) call.fail("too many indices for tensor of dimension ", self.dim());
  return result;
}

// Writes values into self[indices] (accumulating when asked) and returns the new content.
Tensor index_put_values(const KernelCall& call, const Tensor& self, const std::vector<Tensor>& raw_indices,
                        const Tensor& values, bool accumulate) {
  std::vector<Tensor> indices = expand_masks(call, self, raw_indices);
  indices.resize(size_t(self.dim()));
  // Broadcast the defined index tensors together.
  Sizes broadcast;
  std::vector<size_t> indexed;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (!indices[d].defined()) continue;
    broadcast = indexed.empty() ? indices[d].sizes() : broadcast_shapes(broadcast, indices[d].sizes());
    indexed.push_back(d);
  }
  if (indexed.empty()) call.fail("index_put: at least one index must be a tensor");
  std::vector<std::vector<int64_t>> positions(indices.size());
  for (size_t d : indexed) positions[d] = to_ints(indices[d].expand(broadcast));
  // The indexed result's dims: the broadcast dims replace the indexed ones where they are
  // adjacent; otherwise they come first (PyTorch's rule).
  bool adjacent = indexed.back() - indexed.front() + 1 == indexed.size();
  size_t insert_at = adjacent ? indexed.front() : 0;
  std::vector<size_t> plain_dims;  // self dims indexed by a whole range, in order
  for (size_t d = 0; d < indices.size(); ++d)
    if (!indices[d].defined()) plain_dims.push_back(d);
  Sizes result_shape;
  size_t plain_before = 0;
  for (size_t d : plain_dims)
    if (d < insert_at) ++plain_before;
  for (size_t i = 0; i < plain_before; ++i) result_shape.push_back(self.sizes()[plain_dims[i]]);
  result_shape.insert(result_shape.end(), broadcast.begin(), broadcast.end());
  for (size_t i = plain_before; i < plain_dims.size(); ++i) result_shape.push_back(self.sizes()[plain_dims[i]]);

  Sizes fitted = broadcast_shapes(values.sizes(), result_shape);
  if (fitted != result_shape)
    call.fail("shape mismatch: value tensor of shape ", sizes_to_string(values.sizes()),
              " cannot be broadcast to indexing result of shape ", sizes_to_string(result_shape));
  Tensor source = values.to(self.dtype()).expand(result_shape);
  bool floating = is_floating(self.dtype());
  std::vector<double> out_doubles = floating ? to_doubles(self) : std::vector<double>{};
  std::vector<int64_t> out_ints = floating ? std::vector<int64_t>{} : to_ints(self);
  std::vector<double> in_doubles = floating ? to_doubles(source) : std::vector<double>{};
  std::vector<int64_t> in_ints = floating ? std::vector<int64_t>{} : to_ints(source);

  size_t rank = broadcast.size();
  int64_t at = 0;
  Sizes target(indices.size());
  for_each_index(result_shape, [&](std::span<const int64_t> r) {
    std::span<const int64_t> broadcast_index = r.subspan(plain_before, rank);
    int64_t broadcast_position = linear_index(broadcast_index, broadcast);
    size_t plain = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (indices[d].defined()) {
        target[d] = wrap_index(call, positions[d][size_t(broadcast_position)], self.sizes()[d],
                               "index_put: index");
      } else {
        size_t result_dim = plain < plain_before ? plain : plain + rank;
        target[d] = r[result_dim];
        ++plain;
      }
    }
    size_t slot = size_t(linear_index(target, self.sizes()));
    size_t from = size_t(at++);
    if (floating) out_doubles[slot] = accumulate ? out_doubles[slot] + in_doubles[from] : in_doubles[from];
    else out_ints[slot] = accumulate ? int64_t(uint64_t(out_ints[slot]) + uint64_t(in_ints[from])) : in_ints[from];
  });
  return floating ? from_doubles(self.sizes(), self.dtype(), out_doubles)
                  : from_ints(self.sizes(), self.dtype(), out_ints);
}

Tensor index_put(const KernelCall& call) {
  return index_put_values(call, call.tensor(0), call.tensors(1), call.tensor(2), call.bool_arg(3));
}

std::vector<Tensor> index_put_inplace(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  self.copy_from(index_put_values(call, self, call.tensors(1), call.tensor(2), call.bool_arg(3)));
  return {self};
}

}  // namespace

void register_indexing_kernels(KernelTable& table) {
  table["gather"] = single(gather);
  table["scatter"] = single(scatter);
  table["index_select"] = single(index_select);
  table["embedding"] = single(embedding);
  table["index_put"] = single(index_put);
  table["index_put_"] = index_put_inplace;
}

}  // namespace kiln::ir::kernels
