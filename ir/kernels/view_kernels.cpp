// Reference kernels of the view ops: each returns a Tensor sharing self's storage (reshape
// copies only when the strides make a view impossible, as PyTorch's does).
#include <algorithm>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

// squeeze: drop the listed size-1 dims (every size-1 dim when None); other dims stay.
Tensor squeeze(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  std::vector<int64_t> dims;
  if (call.arg(1).is_none()) {
    for (int64_t d = 0; d < self.dim(); ++d) dims.push_back(d);
  } else {
    for (int64_t d : call.ints(1)) {
      if (self.dim() == 0) {
        wrap_dim(d, 0);
        continue;
      }
      dims.push_back(wrap_dim(d, self.dim()));
    }
  }
  Sizes sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    bool drop = self.size(d) == 1 && std::find(dims.begin(), dims.end(), d) != dims.end();
    if (drop) continue;
    sizes.push_back(self.size(d));
    strides.push_back(self.stride(d));
  }
  return Tensor(self.storage(), sizes, strides, self.storage_offset(), self.dtype());
}

Tensor slice(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  if (self.dim() == 0) call.fail("slice() cannot be applied to a 0-dim tensor");
  int64_t start = call.optional_int(2).value_or(0);
  int64_t end = call.optional_int(3).value_or(std::numeric_limits<int64_t>::max());
  int64_t step = call.sym_int(4);
  if (step <= 0) call.fail("slice step must be positive, got ", step);
  return self.slice(call.int_arg(1), start, end, step);
}

Tensor as_strided(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  int64_t offset = call.optional_int(3).value_or(self.storage_offset());
  return self.as_strided(call.sym_ints(1), call.sym_ints(2), offset);
}

}  // namespace

void register_view_kernels(KernelTable& table) {
  table["reshape"] = single([](const KernelCall& call) { return call.tensor(0).reshape(call.sym_ints(1)); });
  table["view"] = single([](const KernelCall& call) { return call.tensor(0).view(call.sym_ints(1)); });
  table["permute"] = single([](const KernelCall& call) { return call.tensor(0).permute(call.ints(1)); });
  table["transpose"] = single(
      [](const KernelCall& call) { return call.tensor(0).transpose(call.int_arg(1), call.int_arg(2)); });
  table["expand"] = single([](const KernelCall& call) { return call.tensor(0).expand(call.sym_ints(1)); });
  table["squeeze"] = single(squeeze);
  table["unsqueeze"] = single([](const KernelCall& call) { return call.tensor(0).unsqueeze(call.int_arg(1)); });
  table["slice"] = single(slice);
  table["select"] = single([](const KernelCall& call) { return call.tensor(0).select(call.int_arg(1), call.sym_int(2)); });
  table["as_strided"] = single(as_strided);
}

}  // namespace kiln::ir::kernels
