// Reference kernels of the elementwise unary ops: neg, abs, the float functions (exp, log,
// ..., erf, erfinv; integer inputs compute in f32), relu, floor/ceil/round (identity on integers,
// round half to even), sign, logical_not, bitwise_not, isnan and clamp.
#include <cmath>
#include <limits>

#include "ir/kernels/erfinv.h"
#include "ir/kernels/kernel_support.h"
#include "runtime/scalar_arithmetic.h"

namespace kiln::ir::kernels {
namespace {

using FloatFn = double (*)(double);

// Input converted to `out` (the computation dtype), f applied in double, rounded once.
Tensor map_float(const Tensor& input, DType out, FloatFn fn) {
  std::vector<double> values = to_doubles(input.to(out));
  for (double& value : values) value = fn(value);
  return from_doubles(input.sizes(), out, values);
}

// Exact integer map (values as int64, stored back with the dtype's wrap).
template <typename Fn>
Tensor map_int(const Tensor& input, Fn fn) {
  std::vector<int64_t> values = to_ints(input);
  for (int64_t& value : values) value = fn(value);
  return from_ints(input.sizes(), input.dtype(), values);
}

// A float function: integer and bool inputs compute in f32.
ReferenceKernel float_kernel(FloatFn fn) {
  return single([fn](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    return map_float(self, float_result(self.dtype()), fn);
  });
}

// Same dtype out; `float_fn` for floating inputs, `int_fn` (exact) for integer and bool. u64
// values are int64 bits, negative from 2^63 up: `u64_fn` (given for the ops that look at the
// sign) takes them as uint64.
template <typename IntFn>
ReferenceKernel same_dtype_kernel(FloatFn float_fn, IntFn int_fn, int64_t (*u64_fn)(uint64_t) = nullptr) {
  return single([float_fn, int_fn, u64_fn](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    if (is_floating(self.dtype())) return map_float(self, self.dtype(), float_fn);
    if (u64_fn && self.dtype() == DType::u64) return map_int(self, [u64_fn](int64_t x) { return u64_fn(uint64_t(x)); });
    return map_int(self, int_fn);
  });
}

int64_t u64_identity(uint64_t x) { return int64_t(x); }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double rsqrt(double x) { return 1.0 / std::sqrt(x); }
double reciprocal(double x) { return 1.0 / x; }
double relu(double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); }
// PyTorch's sign: (0 < x) - (x < 0), so NaN and -0.0 give 0.
double sign(double x) { return double(0.0 < x) - double(x < 0.0); }
// Round half to even (the default floating-point rounding mode).
double round_half_even(double x) { return std::nearbyint(x); }

Tensor clamp(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  bool has_min = !call.arg(1).is_none(), has_max = !call.arg(2).is_none();
  if (!has_min && !has_max) call.fail("clamp: at least one of 'min' or 'max' must not be None");
  // PyTorch: the bounds take part in type promotion as Python scalars.
  std::vector<TypeOperand> operands = {TypeOperand::of(self)};
  if (has_min) operands.push_back(TypeOperand::number(call.arg(1)));
  if (has_max) operands.push_back(TypeOperand::number(call.arg(2)));
  DType dtype = common_dtype(operands);
  Tensor input = self.to(dtype);
  if (is_floating(dtype)) {
    // A NaN input or bound gives NaN; min > max gives max.
    double low = has_min ? number_tensor(call.arg(1), dtype).item() : -std::numeric_limits<double>::infinity();
    double high = has_max ? number_tensor(call.arg(2), dtype).item() : std::numeric_limits<double>::infinity();
    std::vector<double> values = to_doubles(input);
    for (double& value : values) value = nan_min(nan_max(value, low), high);
    return from_doubles(self.sizes(), dtype, values);
  }
  int64_t low = has_min ? to_ints(number_tensor(call.arg(1), dtype))[0] : std::numeric_limits<int64_t>::min();
  int64_t high = has_max ? to_ints(number_tensor(call.arg(2), dtype))[0] : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> values = to_ints(input);
  for (int64_t& value : values) value = std::min(std::max(value, low), high);
  return from_ints(self.sizes(), dtype, values);
}

}  // namespace

void register_unary_kernels(KernelTable& table) {
  table["neg"] = single([](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    if (self.dtype() == DType::boolean)
      call.fail("negation, the `-` operator, on a bool tensor is not supported; use logical_not instead");
    if (is_floating(self.dtype())) return map_float(self, self.dtype(), [](double x) { return -x; });
    return map_int(self, wrapping_negate);
  });
  table["abs"] = same_dtype_kernel([](double x) { return std::fabs(x); },
                                   [](int64_t x) { return x < 0 ? wrapping_negate(x) : x; }, u64_identity);
  table["exp"] = float_kernel([](double x) { return std::exp(x); });
  table["log"] = float_kernel([](double x) { return std::log(x); });
  table["log1p"] = float_kernel([](double x) { return std::log1p(x); });
  table["expm1"] = float_kernel([](double x) { return std::expm1(x); });
  table["sqrt"] = float_kernel([](double x) { return std::sqrt(x); });
  table["rsqrt"] = float_kernel(rsqrt);
  table["reciprocal"] = float_kernel(reciprocal);
  table["sin"] = float_kernel([](double x) { return std::sin(x); });
  table["cos"] = float_kernel([](double x) { return std::cos(x); });
  table["tanh"] = float_kernel([](double x) { return std::tanh(x); });
  table["sigmoid"] = float_kernel(sigmoid);
  table["erf"] = float_kernel([](double x) { return std::erf(x); });
  table["erfinv"] = float_kernel(erfinv);
  table["relu"] = same_dtype_kernel(relu, [](int64_t x) { return x > 0 ? x : int64_t(0); }, u64_identity);
  table["floor"] = same_dtype_kernel([](double x) { return std::floor(x); }, [](int64_t x) { return x; });
  table["ceil"] = same_dtype_kernel([](double x) { return std::ceil(x); }, [](int64_t x) { return x; });
  table["round"] = same_dtype_kernel(round_half_even, [](int64_t x) { return x; });
  table["sign"] = same_dtype_kernel(sign, [](int64_t x) { return int64_t(x > 0) - int64_t(x < 0); },
                                    [](uint64_t x) { return int64_t(x != 0); });
  table["logical_not"] = single([](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    std::vector<double> values = to_doubles(self);
    for (double& value : values) value = value != 0.0 ? 0.0 : 1.0;  // NaN is truthy
    return from_doubles(self.sizes(), DType::boolean, values);
  });
  table["bitwise_not"] = single([](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    if (is_floating(self.dtype())) call.fail("bitwise_not is only supported for integer and boolean tensors");
    if (self.dtype() == DType::boolean) return map_int(self, [](int64_t x) { return int64_t(x == 0); });
    return map_int(self, [](int64_t x) { return ~x; });
  });
  table["isnan"] = single([](const KernelCall& call) {
    const Tensor& self = call.tensor(0);
    std::vector<double> values = to_doubles(self);
    for (double& value : values) value = std::isnan(value) ? 1.0 : 0.0;
    return from_doubles(self.sizes(), DType::boolean, values);
  });
  table["clamp"] = single(clamp);
}

}  // namespace kiln::ir::kernels
