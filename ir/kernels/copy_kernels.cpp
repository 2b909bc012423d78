// Reference kernels of the ops that copy or rearrange whole tensors: clone, cat, stack,
// split, pad (constant, reflect, replicate, circular), tril/triu, flatten and getitem, and the
// mutations copy_ and fill_ (which write into self's storage and return self).
#include <algorithm>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

Tensor cat(const KernelCall& call) {
  const std::vector<Tensor>& all = call.tensors(0);
  if (all.empty()) call.fail("cat expects a non-empty list of tensors");
  // PyTorch skips legacy empty 1-d tensors (shape [0]) when other tensors have another rank.
  std::vector<Tensor> inputs;
  for (const Tensor& tensor : all)
    if (!(tensor.dim() == 1 && tensor.size(0) == 0)) inputs.push_back(tensor);
  if (inputs.empty()) inputs.push_back(all[0]);
  std::vector<TypeOperand> operands;
  for (const Tensor& tensor : all) operands.push_back(TypeOperand::of(tensor));
  DType dtype = common_dtype(operands);
  const Tensor& first = inputs[0];
  if (first.dim() == 0) call.fail("zero-dimensional tensor cannot be concatenated");
  int64_t dim = wrap_dim(call.int_arg(1), first.dim());
  Sizes shape = first.sizes();
  shape[size_t(dim)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& tensor = inputs[i];
    if (tensor.dim() != first.dim())
      call.fail("tensors must have the same number of dimensions: got ", first.dim(), " and ", tensor.dim());
    for (int64_t d = 0; d < first.dim(); ++d)
      if (d != dim && tensor.size(d) != first.size(d))
        call.fail("sizes of tensors must match except in dimension ", dim, ": expected size ", first.size(d),
                  " but got size ", tensor.size(d), " for tensor number ", i, " in the list");
    shape[size_t(dim)] += tensor.size(dim);
  }
  Tensor result = Tensor::empty(shape, dtype);
  int64_t offset = 0;
  for (const Tensor& tensor : inputs) {
    result.slice(dim, offset, offset + tensor.size(dim)).copy_from(tensor);
    offset += tensor.size(dim);
  }
  return result;
}

Tensor stack(const KernelCall& call) {
  const std::vector<Tensor>& inputs = call.tensors(0);
  if (inputs.empty()) call.fail("stack expects a non-empty list of tensors");
  std::vector<TypeOperand> operands;
  for (const Tensor& tensor : inputs) {
    if (tensor.sizes() != inputs[0].sizes())
      call.fail("stack expects each tensor to be equal size, but got ", sizes_to_string(inputs[0].sizes()),
                " and ", sizes_to_string(tensor.sizes()));
    operands.push_back(TypeOperand::of(tensor));
  }
  int64_t dim = wrap_dim(call.int_arg(1), inputs[0].dim() + 1);
  Sizes shape = inputs[0].sizes();
  shape.insert(shape.begin() + dim, int64_t(inputs.size()));
  Tensor result = Tensor::empty(shape, common_dtype(operands));
  for (size_t i = 0; i < inputs.size(); ++i) result.select(dim, int64_t(i)).copy_from(inputs[i]);
  return result;
}

std::vector<Tensor> split(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  if (self.dim() == 0) call.fail("split expects at least a 1-dimensional tensor");
  int64_t dim = wrap_dim(call.int_arg(2), self.dim());
  std::vector<int64_t> sizes;
  if (call.arg(1).is_list()) {
    sizes = call.sym_ints(1);
  } else {
    // One split size: chunks of that size, the last one possibly smaller (torch.split(x, 2)).
    int64_t chunk = call.sym_int(1), total = self.size(dim);
    if (chunk < 0 || (chunk == 0 && total != 0))
      call.fail("split: invalid split size ", chunk, " for a dimension of size ", total);
    if (total == 0) sizes.push_back(0);
    for (int64_t start = 0; start < total; start += chunk) sizes.push_back(std::min(chunk, total - start));
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0) call.fail("split: negative split size ", size);
    total += size;
  }
  if (total != self.size(dim))
    call.fail("split expects split_sizes to sum exactly to ", self.size(dim), " (input tensor's size at dimension ",
              dim, "), but got split_sizes=", sizes_to_string(sizes));
  std::vector<Tensor> pieces;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    pieces.push_back(self.slice(dim, offset, offset + size).clone());
    offset += size;
  }
  return pieces;
}

// The source position of one padded dim, or -1 for a constant-padded element.
int64_t padded_source(const std::string& mode, int64_t position, int64_t size) {
  if (position >= 0 && position < size) return position;
  if (mode == "constant") return -1;
  if (mode == "reflect") return position < 0 ? -position : 2 * (size - 1) - position;
  if (mode == "replicate") return std::clamp<int64_t>(position, 0, size - 1);
  return ((position % size) + size) % size;  // circular
}

Tensor pad(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  std::vector<int64_t> pads = call.sym_ints(1);
  const std::string& mode = call.string_arg(2);
  if (mode != "constant" && mode != "reflect" && mode != "replicate" && mode != "circular")
    call.fail("pad: unknown mode '", mode, "' (expected constant, reflect, replicate or circular)");
  if (pads.size() % 2 != 0) call.fail("pad: the padding length must be even, got ", pads.size());
  int64_t padded_dims = int64_t(pads.size() / 2);
  if (padded_dims > self.dim())
    call.fail("pad: padding of length ", pads.size(), " is too long for a ", self.dim(), "-d input");
  std::optional<double> value = call.optional_float(3);
  if (mode != "constant" && value && *value != 0.0)
    call.fail("pad: padding mode '", mode, "' doesn't take a value argument");
  // pads[2k], pads[2k+1] pad dim (rank - 1 - k) before and after.
  Sizes before(size_t(self.dim()), 0), shape = self.sizes();
  for (int64_t k = 0; k < padded_dims; ++k) {
    size_t d = size_t(self.dim() - 1 - k);
    int64_t left = pads[size_t(2 * k)], right = pads[size_t(2 * k + 1)], size = self.sizes()[d];
    if (mode == "reflect" && (left >= size || right >= size))
      call.fail("pad: reflect padding (", left, ", ", right, ") must be less than the input size ", size, " of dim ", d);
    if (mode == "circular" && (left > size || right > size))
      call.fail("pad: circular padding (", left, ", ", right, ") must not exceed the input size ", size, " of dim ", d);
    if (mode == "replicate" && size == 0 && (left > 0 || right > 0))
      call.fail("pad: replicate padding of an empty dim ", d);
    before[d] = left;
    shape[d] = size + left + right;
    if (shape[d] < 0) call.fail("pad: the padded size of dim ", d, " is negative (", shape[d], ")");
  }
  const Sizes& in_sizes = self.sizes();
  return take_elements(
      self, shape,
      [&](std::span<const int64_t> index) {
        int64_t position = 0;
        for (size_t d = 0; d < index.size(); ++d) {
          int64_t source = padded_source(mode, index[d] - before[d], in_sizes[d]);
          if (source < 0) return int64_t(-1);
          position = position * in_sizes[d] + source;
        }
        return position;
      },
      value.value_or(0.0));
}

// tril (keep j - i <= diagonal) / triu (keep j - i >= diagonal) over the last two dims.
Tensor triangle(const KernelCall& call, bool lower) {
  const Tensor& self = call.tensor(0);
  if (self.dim() < 2) call.fail(lower ? "tril" : "triu", ": input tensor must have at least 2 dimensions");
  int64_t diagonal = call.int_arg(1);
  size_t row = size_t(self.dim() - 2), column = size_t(self.dim() - 1);
  const Sizes& sizes = self.sizes();
  return take_elements(self, sizes, [&](std::span<const int64_t> index) {
    int64_t offset = index[column] - index[row];
    bool keep = lower ? offset <= diagonal : offset >= diagonal;
    return keep ? linear_index(index, sizes) : int64_t(-1);
  });
}

Tensor flatten(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  if (self.dim() == 0) {
    wrap_dim(call.int_arg(1), 0);
    wrap_dim(call.int_arg(2), 0);
    return self.reshape({1}).clone();
  }
  int64_t start = wrap_dim(call.int_arg(1), self.dim()), end = wrap_dim(call.int_arg(2), self.dim());
  if (start > end) call.fail("flatten() has invalid args: start_dim (", start, ") cannot come after end_dim (", end, ")");
  Sizes shape;
  for (int64_t d = 0; d < start; ++d) shape.push_back(self.size(d));
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= self.size(d);
  shape.push_back(merged);
  for (int64_t d = end + 1; d < self.dim(); ++d) shape.push_back(self.size(d));
  return self.contiguous().reshape(shape).clone();
}

Tensor getitem(const KernelCall& call) {
  const std::vector<Tensor>& values = call.tensors(0);
  int64_t index = wrap_index(call, call.int_arg(1), int64_t(values.size()), "getitem: index");
  return values[size_t(index)];
}

// copy_: src broadcast to self's shape and converted to self's dtype.
std::vector<Tensor> copy_into(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  const Tensor& src = call.tensor(1);
  Sizes shape = broadcast_shapes(self.sizes(), src.sizes());
  if (shape != self.sizes())
    call.fail("copy_: source of shape ", sizes_to_string(src.sizes()), " cannot be broadcast to destination shape ",
              sizes_to_string(self.sizes()));
  Tensor value = src.clone();  // src may overlap self
  self.copy_from(value.expand(self.sizes()));
  return {self};
}

std::vector<Tensor> fill(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  self.copy_from(number_tensor(call.arg(1), self.dtype()).expand(self.sizes()));
  return {self};
}

}  // namespace

void register_copy_kernels(KernelTable& table) {
  table["clone"] = single([](const KernelCall& call) { return call.tensor(0).clone(); });
  table["cat"] = single(cat);
  table["stack"] = single(stack);
  table["split"] = split;
  table["pad"] = single(pad);
  table["tril"] = single([](const KernelCall& call) { return triangle(call, true); });
  table["triu"] = single([](const KernelCall& call) { return triangle(call, false); });
  table["flatten"] = single(flatten);
  table["getitem"] = single(getitem);
  table["copy_"] = copy_into;
  table["fill_"] = fill;
}

}  // namespace kiln::ir::kernels
