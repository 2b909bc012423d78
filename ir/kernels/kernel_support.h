// Shared helpers of the reference kernels: reading tensors into plain row-major vectors and
// writing results back with one rounding, broadcasting, PyTorch's type promotion, dimension
// lists, moving a dimension last for row-wise work, and the table each kernel family fills.
// Everything here favours obvious correctness over speed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/kernels/portable_kernels.h"
#include "ir/reference_kernels.h"
#include "kiln/tensor.h"

namespace kiln::ir::kernels {

using KernelTable = std::map<std::string, ReferenceKernel, std::less<>>;

// One file per op family fills the table.
void register_unary_kernels(KernelTable& table);          // unary_kernels.cpp
void register_binary_kernels(KernelTable& table);         // binary_kernels.cpp
void register_creation_kernels(KernelTable& table);       // creation_kernels.cpp
void register_reduction_kernels(KernelTable& table);      // reduction_kernels.cpp
void register_view_kernels(KernelTable& table);           // view_kernels.cpp
void register_copy_kernels(KernelTable& table);           // copy_kernels.cpp
void register_indexing_kernels(KernelTable& table);       // indexing_kernels.cpp
void register_linalg_kernels(KernelTable& table);         // linalg_kernels.cpp
void register_convolution_kernels(KernelTable& table);    // convolution_kernels.cpp
void register_pooling_kernels(KernelTable& table);        // pooling_kernels.cpp
void register_sampling_kernels(KernelTable& table);       // sampling_kernels.cpp
void register_normalization_kernels(KernelTable& table);  // normalization_kernels.cpp
void register_activation_kernels(KernelTable& table);     // activation_kernels.cpp
void register_loss_kernels(KernelTable& table);           // loss_kernels.cpp
void register_attention_kernels(KernelTable& table);      // attention_kernels.cpp

// A kernel producing a single tensor.
template <typename Fn>
ReferenceKernel single(Fn fn) {
  return [fn](const KernelCall& call) { return std::vector<Tensor>{fn(call)}; };
}

// ---- reading and writing values ----

// Calls fn(element_offset) for every element of a strided layout in row-major order.
void for_each_offset(const Sizes& sizes, const Sizes& strides, int64_t base,
                     const std::function<void(int64_t)>& fn);
// Row-major values of any tensor (any strides). Integers convert exactly to int64; floats
// to int64 saturate like runtime/tensor.cpp.
std::vector<double> to_doubles(const Tensor& tensor);
std::vector<int64_t> to_ints(const Tensor& tensor);
// A new contiguous tensor holding `values` rounded once to dtype (store rules of tensor.cpp).
Tensor from_doubles(const Sizes& sizes, DType dtype, std::span<const double> values);
Tensor from_ints(const Sizes& sizes, DType dtype, std::span<const int64_t> values);

// ---- shapes ----

// PyTorch broadcasting of two shapes; throws kiln::Error naming both.
Sizes broadcast_shapes(const Sizes& a, const Sizes& b);
// Normalized, sorted, duplicate-free list of dims; `dims` empty or absent reduces all.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t rank);
// Repeats a 1-element parameter list `count` times (PyTorch's expand_param_if_needed);
// throws when the list has another length.
std::vector<int64_t> expand_param(const std::vector<int64_t>& values, size_t count, std::string_view name);

// Splits a tensor for a reduction over `dims`: the kept dims come first (outer), the
// reduced dims last (inner), each output element owning a contiguous block of `inner`
// values in `values`, in row-major order of the reduced dims.
struct ReductionLayout {
  Sizes out_shape;  // with keepdim applied
  int64_t outer = 1;
  int64_t inner = 1;
};
ReductionLayout reduction_layout(const Tensor& tensor, const std::vector<int64_t>& dims, bool keepdim);
// The tensor permuted so the kept dims come first and the reduced dims last (a view).
Tensor reduction_order(const Tensor& tensor, const std::vector<int64_t>& dims);

// Applies fn(row_in, row_out) to every 1-d row of `tensor` along `dim` (values in double),
// returning a new contiguous tensor of the same shape with `out_dtype`.
Tensor map_rows(const Tensor& tensor, int64_t dim, DType out_dtype,
                const std::function<void(std::span<const double>, std::span<double>)>& fn);

// ---- type promotion (PyTorch's rules) ----

// PyTorch's promote_types for two dtypes (ir/type_promotion.h's table: the lattice bool <
// integers < floats; f16 with bf16 is f32; u8 with i8 is i16).
DType promote_dtypes(DType a, DType b);

// One participant of common_dtype: a tensor with dims, a 0-d tensor, or a Python number.
struct TypeOperand {
  enum class Priority : uint8_t { dimensioned, zero_dim, wrapped_number };
  DType dtype;
  Priority priority;
  static TypeOperand of(const Tensor& tensor);
  // A Python number: bool -> bool, int -> i64, float -> f32 (the default dtype).
  static TypeOperand number(const Argument& value);
};
// PyTorch's result_type: dimensioned tensors decide unless a 0-d tensor or a number is of a
// higher category (bool < integer < floating).
DType common_dtype(std::span<const TypeOperand> operands);

// The operand of parameter `index` (tensor or number) for common_dtype.
TypeOperand operand_of(const KernelCall& call, size_t index);

// Parameter `index` (a Scalar|Tensor) as a tensor of dtype `dtype` (numbers become 0-d).
Tensor operand_tensor(const KernelCall& call, size_t index, DType dtype);

// A number argument converted to a 0-d tensor of dtype (exact for integers).
Tensor number_tensor(const Argument& value, DType dtype);

// Float ops on integer inputs compute in the default float dtype, f32.
inline DType float_result(DType dtype) { return is_floating(dtype) ? dtype : DType::f32; }

// ---- moving elements ----

// A new contiguous tensor of `out_shape` and src's dtype: the element at each index is src's
// element at row-major position source(index) (bits copied exactly), or `fill` converted to
// the dtype when source returns -1.
Tensor take_elements(const Tensor& src, const Sizes& out_shape,
                     const std::function<int64_t(std::span<const int64_t>)>& source, double fill = 0);

// ---- misc ----

// Row-major position of a multi-index in a tensor of `sizes`.
inline int64_t linear_index(std::span<const int64_t> index, const Sizes& sizes) {
  int64_t position = 0;
  for (size_t d = 0; d < sizes.size(); ++d) position = position * sizes[d] + index[d];
  return position;
}

// Runs fn, a call of the shared cores of ir/kernels/portable_kernels.h, their KernelFailure
// reported through call.fail (naming the node).
template <typename Fn>
decltype(auto) run_portable(const KernelCall& call, Fn&& fn) {
  try {
    return fn();
  } catch (const portable::KernelFailure& failure) {
    call.fail(failure.what());
  }
}

// Wraps an index into [0, size); throws kiln::Error through call.fail when out of range.
int64_t wrap_index(const KernelCall& call, int64_t index, int64_t size, std::string_view what);

}  // namespace kiln::ir::kernels
