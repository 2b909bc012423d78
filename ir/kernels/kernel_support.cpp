// Shared helpers of the reference kernels (see kernel_support.h).
#include "ir/kernels/kernel_support.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <numeric>

#include "ir/type_promotion.h"
#include "kiln/error.h"

namespace kiln::ir::kernels {

void for_each_offset(const Sizes& sizes, const Sizes& strides, int64_t base,
                     const std::function<void(int64_t)>& fn) {
  for (int64_t size : sizes)
    if (size == 0) return;
  size_t rank = sizes.size();
  if (rank == 0) {
    fn(base);
    return;
  }
  Sizes index(rank, 0);
  int64_t offset = base;
  int64_t last = int64_t(rank) - 1;
  while (true) {
    // Innermost dimension as a plain loop.
    int64_t inner_stride = strides[size_t(last)];
    for (int64_t i = 0; i < sizes[size_t(last)]; ++i) fn(offset + i * inner_stride);
    int64_t dim = last - 1;
    while (dim >= 0) {
      size_t d = size_t(dim);
      ++index[d];
      offset += strides[d];
      if (index[d] < sizes[d]) break;
      offset -= index[d] * strides[d];
      index[d] = 0;
      --dim;
    }
    if (dim < 0) return;
  }
}

std::vector<double> to_doubles(const Tensor& tensor) {
  std::vector<double> values;
  values.reserve(size_t(tensor.numel()));
  if (tensor.numel() == 0) return values;
  const char* data = static_cast<const char*>(tensor.storage()->data());
  int64_t width = int64_t(tensor.element_size());
  DType dtype = tensor.dtype();
  for_each_offset(tensor.sizes(), tensor.strides(), tensor.storage_offset(),
                  [&](int64_t offset) { values.push_back(load_double(dtype, data + offset * width)); });
  return values;
}

std::vector<int64_t> to_ints(const Tensor& tensor) {
  std::vector<int64_t> values;
  values.reserve(size_t(tensor.numel()));
  if (tensor.numel() == 0) return values;
  const char* data = static_cast<const char*>(tensor.storage()->data());
  int64_t width = int64_t(tensor.element_size());
  DType dtype = tensor.dtype();
  for_each_offset(tensor.sizes(), tensor.strides(), tensor.storage_offset(),
                  [&](int64_t offset) { values.push_back(load_int(dtype, data + offset * width)); });
  return values;
}

Tensor from_doubles(const Sizes& sizes, DType dtype, std::span<const double> values) {
  Tensor result = Tensor::empty(sizes, dtype);
  KILN_CHECK(int64_t(values.size()) == result.numel(), values.size(), " values for shape ", sizes_to_string(sizes));
  char* data = static_cast<char*>(result.data_ptr());
  size_t width = result.element_size();
  for (size_t i = 0; i < values.size(); ++i) store_double(dtype, data + i * width, values[i]);
  return result;
}

Tensor from_ints(const Sizes& sizes, DType dtype, std::span<const int64_t> values) {
  Tensor result = Tensor::empty(sizes, dtype);
  KILN_CHECK(int64_t(values.size()) == result.numel(), values.size(), " values for shape ", sizes_to_string(sizes));
  char* data = static_cast<char*>(result.data_ptr());
  size_t width = result.element_size();
  for (size_t i = 0; i < values.size(); ++i) store_int(dtype, data + i * width, values[i]);
  return result;
}

Sizes broadcast_shapes(const Sizes& a, const Sizes& b) {
  size_t rank = std::max(a.size(), b.size());
  Sizes out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail("shapes ", sizes_to_string(a), " and ", sizes_to_string(b), " cannot be broadcast together (dim ",
           i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    out.resize(size_t(rank));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int64_t dim : dims) {
    int64_t wrapped = wrap_dim(dim, rank);
    if (rank == 0) continue;  // dim 0 / -1 of a scalar reduces nothing more
    if (std::find(out.begin(), out.end(), wrapped) != out.end())
      fail("dim ", wrapped, " appears multiple times in the list of dims");
    out.push_back(wrapped);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int64_t> expand_param(const std::vector<int64_t>& values, size_t count, std::string_view name) {
  if (values.size() == count) return values;
  if (values.size() == 1) return std::vector<int64_t>(count, values[0]);
  fail(name, " must have 1 or ", count, " elements, got ", values.size());
}

Tensor reduction_order(const Tensor& tensor, const std::vector<int64_t>& dims) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < tensor.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) order.push_back(d);
  order.insert(order.end(), dims.begin(), dims.end());
  return tensor.permute(order);
}

ReductionLayout reduction_layout(const Tensor& tensor, const std::vector<int64_t>& dims, bool keepdim) {
  ReductionLayout layout;
  for (int64_t d = 0; d < tensor.dim(); ++d) {
    bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    int64_t size = tensor.size(d);
    if (reduced) {
      layout.inner *= size;
      if (keepdim) layout.out_shape.push_back(1);
    } else {
      layout.outer *= size;
      layout.out_shape.push_back(size);
    }
  }
  return layout;
}

Tensor map_rows(const Tensor& tensor, int64_t dim, DType out_dtype,
                const std::function<void(std::span<const double>, std::span<double>)>& fn) {
  if (tensor.dim() == 0) {
    std::vector<double> in = to_doubles(tensor), out(1);
    fn(in, out);
    return from_doubles({}, out_dtype, out);
  }
  int64_t d = wrap_dim(dim, tensor.dim());
  Tensor moved = tensor.transpose(d, -1);
  std::vector<double> in = to_doubles(moved);
  std::vector<double> out(in.size());
  int64_t row = moved.size(-1);
  for (size_t start = 0; row > 0 && start < in.size(); start += size_t(row))
    fn(std::span<const double>(in).subspan(start, size_t(row)), std::span<double>(out).subspan(start, size_t(row)));
  Tensor result = from_doubles(moved.sizes(), out_dtype, out);
  return result.transpose(d, -1).contiguous();
}

// ---- type promotion ----

// The interpreter promotes by the IR's table, so that shape inference and kernels agree.
DType promote_dtypes(DType a, DType b) { return promote_types(a, b); }

TypeOperand TypeOperand::of(const Tensor& tensor) {
  return {tensor.dtype(), tensor.dim() == 0 ? Priority::zero_dim : Priority::dimensioned};
}

TypeOperand TypeOperand::number(const Argument& value) {
  if (value.is_bool()) return {DType::boolean, Priority::wrapped_number};
  if (value.is_int()) return {DType::i64, Priority::wrapped_number};
  KILN_CHECK(value.is_float(), "not a number: ", value.to_string());
  return {DType::f32, Priority::wrapped_number};
}

namespace {
// PyTorch's combine_categories: `higher` is the result of the higher-priority group.
std::optional<DType> combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating(*higher)) return higher;
  if (*higher == DType::boolean || is_floating(*lower)) return promote_dtypes(*higher, *lower);
  return higher;
}
}  // namespace

DType common_dtype(std::span<const TypeOperand> operands) {
  std::optional<DType> groups[3];
  for (const TypeOperand& operand : operands) {
    std::optional<DType>& group = groups[size_t(operand.priority)];
    group = group ? promote_dtypes(*group, operand.dtype) : operand.dtype;
  }
  std::optional<DType> result = combine_categories(groups[0], combine_categories(groups[1], groups[2]));
  KILN_CHECK(result.has_value(), "common_dtype of no operands");
  return *result;
}

TypeOperand operand_of(const KernelCall& call, size_t index) {
  if (call.is_tensor(index)) return TypeOperand::of(call.tensor(index));
  return TypeOperand::number(call.arg(index));
}

Tensor number_tensor(const Argument& value, DType dtype) {
  Tensor result = Tensor::empty({}, dtype);
  if (value.is_float()) result.set_double({}, value.floating());
  else if (value.is_bool()) result.set_int({}, value.boolean() ? 1 : 0);
  else result.set_int({}, value.integer());
  return result;
}

Tensor operand_tensor(const KernelCall& call, size_t index, DType dtype) {
  if (call.is_tensor(index)) return call.tensor(index).to(dtype);
  return number_tensor(call.arg(index), dtype);
}

Tensor take_elements(const Tensor& src, const Sizes& out_shape,
                     const std::function<int64_t(std::span<const int64_t>)>& source, double fill) {
  Tensor input = src.contiguous();
  Tensor result = Tensor::empty(out_shape, src.dtype());
  const char* from = input.numel() > 0 ? static_cast<const char*>(input.data_ptr()) : nullptr;
  char* to = result.numel() > 0 ? static_cast<char*>(result.data_ptr()) : nullptr;
  size_t width = src.element_size();
  int64_t position = 0;
  for_each_index(out_shape, [&](std::span<const int64_t> index) {
    int64_t at = source(index);
    char* target = to + size_t(position++) * width;
    if (at < 0) {
      store_double(src.dtype(), target, fill);
      return;
    }
    KILN_CHECK(at < input.numel(), "take_elements: source position ", at, " outside ", input.numel(), " elements");
    std::memcpy(target, from + size_t(at) * width, width);
  });
  return result;
}

int64_t wrap_index(const KernelCall& call, int64_t index, int64_t size, std::string_view what) {
  if (index < -size || index >= size)
    call.fail(what, " ", index, " is out of bounds for size ", size);
  return index < 0 ? index + size : index;
}

}  // namespace kiln::ir::kernels
