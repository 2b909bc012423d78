// Reference kernels of the creation ops: full, full_like, arange, iota, and the Philox
// random ops rand and randn (runtime/philox.h defines which numbers they draw).
#include <cmath>

#include "ir/kernels/kernel_support.h"
#include "runtime/philox.h"

namespace kiln::ir::kernels {
namespace {

// A tensor of `sizes` filled with a number argument converted to dtype.
Tensor filled(const KernelCall& call, const Sizes& sizes, const Argument& value, DType dtype) {
  for (int64_t size : sizes)
    if (size < 0) call.fail("trying to create a tensor with negative dimension ", size, ": ", sizes_to_string(sizes));
  Tensor one = number_tensor(value, dtype);
  return one.expand(sizes).clone();
}

Tensor arange(const KernelCall& call) {
  const Argument &start = call.arg(0), &end = call.arg(1), &step = call.arg(2);
  bool any_float = start.is_float() || end.is_float() || step.is_float();
  DType dtype = call.optional_dtype(3).value_or(any_float ? DType::f32 : DType::i64);
  if (step.floating() == 0) call.fail("arange: step must be nonzero");
  if (!(step.floating() > 0 ? end.floating() >= start.floating() : end.floating() <= start.floating()))
    call.fail("arange: upper bound and lower bound inconsistent with step sign (start ", start.to_string(), ", end ",
              end.to_string(), ", step ", step.to_string(), ")");
  if (!any_float && !is_floating(dtype)) {
    // Exact integer arange: ceil((end - start) / step) elements.
    int64_t first = call.scalar_int(0), last = call.scalar_int(1), stride = call.scalar_int(2);
    int64_t span = last - first;
    int64_t count = stride > 0 ? (span + stride - 1) / stride : (span + stride + 1) / stride;
    std::vector<int64_t> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) values[size_t(i)] = first + i * stride;
    return from_ints({count}, dtype, values);
  }
  double first = start.floating(), stride = step.floating();
  double count_double = std::ceil((end.floating() - first) / stride);
  if (!std::isfinite(count_double) || count_double > 1e12) call.fail("arange: invalid number of elements ", count_double);
  int64_t count = int64_t(count_double);
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[size_t(i)] = first + double(i) * stride;
  return from_doubles({count}, dtype, values);
}

Tensor iota(const KernelCall& call) {
  int64_t length = call.sym_int(0);
  if (length < 0) call.fail("iota: negative length ", length);
  int64_t start = call.int_arg(1), step = call.int_arg(2);
  std::vector<int64_t> values(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) values[size_t(i)] = int64_t(uint64_t(start) + uint64_t(i) * uint64_t(step));
  return from_ints({length}, call.dtype_arg(3), values);
}

// rand / randn: element i of the row-major order draws with counter i.
Tensor random(const KernelCall& call, bool normal) {
  Sizes sizes = call.sym_ints(0);
  for (int64_t size : sizes)
    if (size < 0) call.fail("trying to create a tensor with negative dimension ", size, ": ", sizes_to_string(sizes));
  uint64_t seed = uint64_t(call.int_arg(1)), offset = uint64_t(call.int_arg(2));
  DType dtype = call.dtype_arg(3);
  if (!is_floating(dtype)) call.fail(normal ? "randn" : "rand", " needs a floating dtype, got ", dtype_name(dtype));
  std::vector<double> values(static_cast<size_t>(numel_of(sizes)));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = normal ? philox_normal(seed, offset, i) : philox_uniform(seed, offset, i);
  return from_doubles(sizes, dtype, values);
}

// The dtype full() infers from its value: bool, i64 for an int, f32 for a float.
DType value_dtype(const Argument& value) { return TypeOperand::number(value).dtype; }

}  // namespace

void register_creation_kernels(KernelTable& table) {
  table["full"] = single([](const KernelCall& call) {
    const Argument& value = call.arg(1);
    return filled(call, call.sym_ints(0), value, call.optional_dtype(2).value_or(value_dtype(value)));
  });
  table["full_like"] = single([](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    return filled(call, self.sizes(), call.arg(1), call.optional_dtype(2).value_or(self.dtype()));
  });
  table["arange"] = single(arange);
  table["iota"] = single(iota);
  table["rand"] = single([](const KernelCall& call) { return random(call, false); });
  table["randn"] = single([](const KernelCall& call) { return random(call, true); });
}

}  // namespace kiln::ir::kernels
