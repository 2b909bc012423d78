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

// scatter: portable::scatter_values on self's values (in double, or int64 for integers).
Tensor scatter(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& index = call.tensor(2);
  check_index_dtype(call, index, "scatter(): index");
  int64_t dim = self.dim() == 0 ? 0 : wrap_dim(call.int_arg(1), self.dim());
  std::string reduce_name = call.arg(4).is_none() ? "" : call.string_arg(4);
  portable::ScatterReduce reduce = run_portable(call, [&] { return portable::scatter_reduction(reduce_name); });
  Tensor src = operand_tensor(call, 3, self.dtype());
  Sizes src_sizes = call.is_tensor(3) ? src.sizes() : Sizes{};
  run_portable(call, [&] {
    portable::check_scatter_shapes(self.sizes(), dim, index.sizes(), call.is_tensor(3) ? &src_sizes : nullptr);
  });
  std::vector<int64_t> positions = to_ints(index);
  if (is_floating(self.dtype())) {
    std::vector<double> out = to_doubles(self), values = to_doubles(src);
    run_portable(call, [&] {
      portable::scatter_values(out.data(), self.sizes(), dim, positions.data(), index.sizes(), values.data(),
                               src_sizes, reduce);
    });
    return from_doubles(self.sizes(), self.dtype(), out);
  }
  std::vector<int64_t> out = to_ints(self), values = to_ints(src);
  run_portable(call, [&] {
    portable::scatter_values(out.data(), self.sizes(), dim, positions.data(), index.sizes(), values.data(),
                             src_sizes, reduce);
  });
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

// self with values written at self[indices] (added when accumulating): portable::index_put_values.
Tensor index_put_values(const KernelCall& call, const Tensor& self, const std::vector<Tensor>& indices,
                        const Tensor& values, bool accumulate) {
  std::vector<portable::IndexTensor> list;
  for (const Tensor& index : indices) {
    portable::IndexTensor entry;
    if (index.defined()) {
      if (is_floating(index.dtype()))
        call.fail("tensors used as indices must be long, int, byte or bool tensors, got ", dtype_name(index.dtype()));
      entry.defined = true;
      entry.mask = index.dtype() == DType::boolean || index.dtype() == DType::u8;
      entry.sizes = index.sizes();
      entry.values = to_ints(index);
    }
    list.push_back(std::move(entry));
  }
  Tensor source = values.to(self.dtype());
  if (is_floating(self.dtype())) {
    std::vector<double> out = to_doubles(self), in = to_doubles(source);
    run_portable(call, [&] {
      portable::index_put_values(out.data(), self.sizes(), list, in.data(), source.sizes(), accumulate);
    });
    return from_doubles(self.sizes(), self.dtype(), out);
  }
  std::vector<int64_t> out = to_ints(self), in = to_ints(source);
  run_portable(call, [&] {
    portable::index_put_values(out.data(), self.sizes(), list, in.data(), source.sizes(), accumulate);
  });
  return from_ints(self.sizes(), self.dtype(), out);
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
