// Reference kernels of the matrix products: matmul (torch.matmul's rules: 1-d operands gain
// and then lose a dim, batch dims broadcast), bmm, and the composites linear and addmm. Sums
// run in double for floating dtypes and exactly (wrapping uint64) for integers, with one
// rounding at the end. det: LU with partial pivoting in double.
#include <cmath>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

// Row-major values of a tensor in the accumulation type T (double or uint64_t).
template <typename T>
std::vector<T> values_as(const Tensor& tensor) {
  if constexpr (std::is_same_v<T, double>) {
    return to_doubles(tensor);
  } else {
    std::vector<int64_t> ints = to_ints(tensor);
    return std::vector<T>(ints.begin(), ints.end());
  }
}

template <typename T>
Tensor tensor_of(const Sizes& sizes, DType dtype, const std::vector<T>& values) {
  if constexpr (std::is_same_v<T, double>) {
    return from_doubles(sizes, dtype, values);
  } else {
    return from_ints(sizes, dtype, std::vector<int64_t>(values.begin(), values.end()));
  }
}

// a [..., n, k] @ b [..., k, m] with broadcast batch dims; returns the values and the shape.
template <typename T>
std::vector<T> batched_product(const Tensor& a, const Tensor& b, Sizes& shape) {
  int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
  Sizes batch_a(a.sizes().begin(), a.sizes().end() - 2), batch_b(b.sizes().begin(), b.sizes().end() - 2);
  Sizes batch = broadcast_shapes(batch_a, batch_b);
  Sizes a_shape = batch, b_shape = batch;
  a_shape.insert(a_shape.end(), {n, k});
  b_shape.insert(b_shape.end(), {k, m});
  std::vector<T> x = values_as<T>(a.expand(a_shape)), y = values_as<T>(b.expand(b_shape));
  int64_t batches = numel_of(batch);
  std::vector<T> out(static_cast<size_t>(batches * n * m));
  portable::batched_product(x.data(), y.data(), batches, n, k, m, out.data());  // packages run the same loop
  shape = batch;
  shape.insert(shape.end(), {n, m});
  return out;
}

void check_same_dtype(const KernelCall& call, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    call.fail("expected both operands to have the same dtype, but got ", dtype_name(a.dtype()), " and ",
              dtype_name(b.dtype()));
}

void check_inner(const KernelCall& call, const Tensor& a, const Tensor& b) {
  if (a.size(-1) != b.size(-2))
    call.fail("mat1 and mat2 shapes cannot be multiplied (", sizes_to_string(a.sizes()), " and ",
              sizes_to_string(b.sizes()), ")");
}

template <typename T>
Tensor matmul_typed(const KernelCall& call, const Tensor& self, const Tensor& other) {
  Tensor a = self.dim() == 1 ? self.unsqueeze(0) : self;
  Tensor b = other.dim() == 1 ? other.unsqueeze(1) : other;
  check_inner(call, a, b);
  Sizes shape;
  std::vector<T> values = batched_product<T>(a, b, shape);
  // Drop the dims the 1-d operands gained.
  if (other.dim() == 1) shape.erase(shape.end() - 1);
  if (self.dim() == 1) shape.erase(shape.end() - (other.dim() == 1 ? 1 : 2));
  return tensor_of<T>(shape, self.dtype(), values);
}

Tensor matmul(const KernelCall& call) {
  const Tensor &self = call.tensor(0), &other = call.tensor(1);
  if (self.dim() == 0 || other.dim() == 0)
    call.fail("both arguments to matmul need to be at least 1-D, but they are ", self.dim(), "-D and ", other.dim(), "-D");
  check_same_dtype(call, self, other);
  if (is_floating(self.dtype())) return matmul_typed<double>(call, self, other);
  return matmul_typed<uint64_t>(call, self, other);
}

Tensor bmm(const KernelCall& call) {
  const Tensor &self = call.tensor(0), &other = call.tensor(1);
  if (self.dim() != 3 || other.dim() != 3)
    call.fail("bmm expects 3-D tensors, got ", sizes_to_string(self.sizes()), " and ", sizes_to_string(other.sizes()));
  if (self.size(0) != other.size(0))
    call.fail("bmm: batch sizes differ (", self.size(0), " and ", other.size(0), ")");
  check_same_dtype(call, self, other);
  if (is_floating(self.dtype())) return matmul_typed<double>(call, self, other);
  return matmul_typed<uint64_t>(call, self, other);
}

// linear: input [..., in] @ weight[out, in]^T + bias[out].
template <typename T>
Tensor linear_typed(const KernelCall& call, const Tensor& input, const Tensor& weight) {
  Tensor a = input.dim() == 1 ? input.unsqueeze(0) : input;
  Tensor b = weight.dim() == 1 ? weight.unsqueeze(1) : weight.transpose(0, 1);
  check_inner(call, a, b);
  Sizes shape;
  std::vector<T> values = batched_product<T>(a, b, shape);
  if (!call.is_none(2)) {
    const Tensor& bias = call.tensor(2);
    check_same_dtype(call, input, bias);
    Sizes fitted = broadcast_shapes(bias.sizes(), shape);
    if (fitted != shape)
      call.fail("linear: bias of shape ", sizes_to_string(bias.sizes()), " does not broadcast to the output shape ",
                sizes_to_string(shape));
    std::vector<T> bias_values = values_as<T>(bias.expand(shape));
    for (size_t i = 0; i < values.size(); ++i) values[i] += bias_values[i];
  }
  if (weight.dim() == 1) shape.erase(shape.end() - 1);
  if (input.dim() == 1) shape.erase(shape.end() - (weight.dim() == 1 ? 1 : 2));
  return tensor_of<T>(shape, input.dtype(), values);
}

Tensor linear(const KernelCall& call) {
  const Tensor &input = call.tensor(0), &weight = call.tensor(1);
  if (input.dim() == 0) call.fail("linear: input must be at least 1-D");
  if (weight.dim() > 2 || weight.dim() == 0)
    call.fail("linear: weight must be 1-D or 2-D, got shape ", sizes_to_string(weight.sizes()));
  check_same_dtype(call, input, weight);
  if (is_floating(input.dtype())) return linear_typed<double>(call, input, weight);
  return linear_typed<uint64_t>(call, input, weight);
}

// addmm: beta * self + alpha * (mat1 @ mat2); beta == 0 ignores self (even NaN), as PyTorch.
template <typename T>
Tensor addmm_typed(const KernelCall& call, T beta, T alpha) {
  const Tensor &self = call.tensor(0), &mat1 = call.tensor(1), &mat2 = call.tensor(2);
  check_inner(call, mat1, mat2);
  Sizes shape;
  std::vector<T> values = batched_product<T>(mat1, mat2, shape);
  Sizes fitted = broadcast_shapes(self.sizes(), shape);
  if (fitted != shape)
    call.fail("addmm: self of shape ", sizes_to_string(self.sizes()), " does not broadcast to ", sizes_to_string(shape));
  std::vector<T> base = values_as<T>(self.expand(shape));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = beta == T(0) ? alpha * values[i] : beta * base[i] + alpha * values[i];
  return tensor_of<T>(shape, mat1.dtype(), values);
}

Tensor addmm(const KernelCall& call) {
  const Tensor &self = call.tensor(0), &mat1 = call.tensor(1), &mat2 = call.tensor(2);
  if (mat1.dim() != 2 || mat2.dim() != 2)
    call.fail("addmm: mat1 and mat2 must be matrices, got ", sizes_to_string(mat1.sizes()), " and ",
              sizes_to_string(mat2.sizes()));
  check_same_dtype(call, mat1, mat2);
  check_same_dtype(call, self, mat1);
  if (is_floating(mat1.dtype())) return addmm_typed<double>(call, call.scalar_double(3), call.scalar_double(4));
  return addmm_typed<uint64_t>(call, uint64_t(call.scalar_int(3)), uint64_t(call.scalar_int(4)));
}

// Determinant of each matrix of the last two dims (portable::determinants: LU with partial
// pivoting, in double).
Tensor det(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  int64_t n = self.size(-1);
  std::vector<double> values = to_doubles(self);
  Sizes out_shape(self.sizes().begin(), self.sizes().end() - 2);
  int64_t count = numel_of(out_shape);
  std::vector<double> results(size_t(count), 1.0);
  portable::determinants(values.data(), count, n, results.data());
  return from_doubles(out_shape, self.dtype(), results);
}

}  // namespace

void register_linalg_kernels(KernelTable& table) {
  table["det"] = single(det);
  table["matmul"] = single(matmul);
  table["bmm"] = single(bmm);
  table["linear"] = single(linear);
  table["addmm"] = single(addmm);
}

}  // namespace kiln::ir::kernels
