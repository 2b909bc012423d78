// Reference kernels of the reductions: sum, prod, mean, amax, amin (NaN propagates), argmax,
// argmin (first occurrence; NaN counts as the extreme, like PyTorch), var and var_mean (two
// passes in double, divisor max(0, N - correction)), the scans cumsum, cumprod, cummax, cummin and
// logcumsumexp (portable::prefix_scans, running_extremes, prefix_log_sum_exps);
// the selection topk. Floating values
// accumulate in double and round once; integers accumulate exactly in int64 with wrap.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/kernels/kernel_support.h"

namespace kiln::ir::kernels {
namespace {

// The reduced dims of an `int[]? dim` argument (None or [] reduce everything).
std::vector<int64_t> reduced_dims(const KernelCall& call, size_t index, const Tensor& self) {
  if (call.arg(index).is_none()) return normalize_dims({}, self.dim());
  return normalize_dims(call.ints(index), self.dim());
}

// Input converted to an explicit `dtype` argument when one is given.
Tensor with_dtype(const KernelCall& call, const Tensor& self, size_t dtype_index) {
  std::optional<DType> dtype = call.optional_dtype(dtype_index);
  return dtype ? self.to(*dtype) : self;
}

// sum / prod: integers and bool accumulate as i64 unless a dtype is given.
Tensor sum_or_prod(const KernelCall& call, bool product) {
  Tensor self = with_dtype(call, call.tensor(0), 3);
  DType out = call.optional_dtype(3) ? self.dtype() : (is_floating(self.dtype()) ? self.dtype() : DType::i64);
  std::vector<int64_t> dims = reduced_dims(call, 1, self);
  ReductionLayout layout = reduction_layout(self, dims, call.bool_arg(2));
  Tensor ordered = reduction_order(self, dims);
  if (is_floating(out)) {
    std::vector<double> values = to_doubles(ordered), result(static_cast<size_t>(layout.outer));
    for (int64_t o = 0; o < layout.outer; ++o) {
      double accumulator = product ? 1.0 : 0.0;
      for (int64_t i = 0; i < layout.inner; ++i) {
        double value = values[size_t(o * layout.inner + i)];
        accumulator = product ? accumulator * value : accumulator + value;
      }
      result[size_t(o)] = accumulator;
    }
    return from_doubles(layout.out_shape, out, result);
  }
  std::vector<int64_t> values = to_ints(ordered), result(static_cast<size_t>(layout.outer));
  for (int64_t o = 0; o < layout.outer; ++o) {
    uint64_t accumulator = product ? 1 : 0;
    for (int64_t i = 0; i < layout.inner; ++i) {
      uint64_t value = uint64_t(values[size_t(o * layout.inner + i)]);
      accumulator = product ? accumulator * value : accumulator + value;
    }
    result[size_t(o)] = int64_t(accumulator);
  }
  return from_ints(layout.out_shape, out, result);
}

Tensor mean(const KernelCall& call) {
  Tensor self = with_dtype(call, call.tensor(0), 3);
  if (!is_floating(self.dtype()))
    call.fail("mean(): could not infer output dtype. Input dtype must be a floating point dtype, got ",
              dtype_name(self.dtype()));
  std::vector<int64_t> dims = reduced_dims(call, 1, self);
  ReductionLayout layout = reduction_layout(self, dims, call.bool_arg(2));
  std::vector<double> values = to_doubles(reduction_order(self, dims)), result(static_cast<size_t>(layout.outer));
  for (int64_t o = 0; o < layout.outer; ++o) {
    double sum = 0;
    for (int64_t i = 0; i < layout.inner; ++i) sum += values[size_t(o * layout.inner + i)];
    result[size_t(o)] = sum / double(layout.inner);  // an empty reduction gives NaN
  }
  return from_doubles(layout.out_shape, self.dtype(), result);
}

// amax / amin over `int[] dim` ([] reduces everything); NaN wins.
Tensor extreme(const KernelCall& call, bool is_max) {
  const Tensor& self = call.tensor(0);
  std::vector<int64_t> dims = normalize_dims(call.ints(1), self.dim());
  ReductionLayout layout = reduction_layout(self, dims, call.bool_arg(2));
  if (layout.inner == 0 && layout.outer > 0)
    call.fail(is_max ? "amax" : "amin", "(): cannot reduce over a zero-size dimension of a tensor of shape ",
              sizes_to_string(self.sizes()), ": the operation has no identity");
  Tensor ordered = reduction_order(self, dims);
  if (is_floating(self.dtype())) {
    std::vector<double> values = to_doubles(ordered), result(static_cast<size_t>(layout.outer));
    for (int64_t o = 0; o < layout.outer; ++o) {
      double best = values[size_t(o * layout.inner)];
      for (int64_t i = 1; i < layout.inner && !std::isnan(best); ++i) {
        double value = values[size_t(o * layout.inner + i)];
        if (std::isnan(value) || (is_max ? value > best : value < best)) best = value;
      }
      result[size_t(o)] = best;
    }
    return from_doubles(layout.out_shape, self.dtype(), result);
  }
  std::vector<int64_t> values = to_ints(ordered), result(static_cast<size_t>(layout.outer));
  for (int64_t o = 0; o < layout.outer; ++o) {
    int64_t best = values[size_t(o * layout.inner)];
    for (int64_t i = 1; i < layout.inner; ++i) {
      int64_t value = values[size_t(o * layout.inner + i)];
      if (is_max ? value > best : value < best) best = value;
    }
    result[size_t(o)] = best;
  }
  return from_ints(layout.out_shape, self.dtype(), result);
}

// argmax / argmin: over the flattened tensor when dim is None (keepdim then keeps every dim
// as size 1); the first extreme wins, and the first NaN beats everything.
Tensor arg_extreme(const KernelCall& call, bool is_max) {
  const Tensor& self = call.tensor(0);
  bool keepdim = call.bool_arg(2);
  std::vector<int64_t> dims;
  Sizes out_shape;
  if (call.arg(1).is_none()) {
    dims = normalize_dims({}, self.dim());
    if (keepdim) out_shape = Sizes(size_t(self.dim()), 1);
  } else {
    dims = normalize_dims({call.int_arg(1)}, self.dim());
  }
  ReductionLayout layout = reduction_layout(self, dims, keepdim);
  if (!call.arg(1).is_none()) out_shape = layout.out_shape;
  if (layout.inner == 0)
    call.fail(is_max ? "argmax" : "argmin", "(): expected reduction dim to be specified for an empty tensor of shape ",
              sizes_to_string(self.sizes()));
  std::vector<double> values = to_doubles(reduction_order(self, dims));
  std::vector<int64_t> ints = is_floating(self.dtype()) ? std::vector<int64_t>{} : to_ints(reduction_order(self, dims));
  std::vector<int64_t> result(static_cast<size_t>(layout.outer));
  for (int64_t o = 0; o < layout.outer; ++o) {
    int64_t best = 0;
    for (int64_t i = 1; i < layout.inner; ++i) {
      size_t at = size_t(o * layout.inner + i), best_at = size_t(o * layout.inner + best);
      bool better;
      if (ints.empty()) {
        double value = values[at], current = values[best_at];
        if (std::isnan(current)) break;
        better = std::isnan(value) || (is_max ? value > current : value < current);
      } else {
        better = is_max ? ints[at] > ints[best_at] : ints[at] < ints[best_at];
      }
      if (better) best = i;
    }
    result[size_t(o)] = best;
  }
  return from_ints(out_shape, DType::i64, result);
}

// (variance, mean) over dims with `correction`; keepdim per argument indices.
std::vector<Tensor> variance_and_mean(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  if (!is_floating(self.dtype()))
    call.fail("var: only floating point dtypes are supported, got ", dtype_name(self.dtype()));
  std::vector<int64_t> dims = reduced_dims(call, 1, self);
  double correction = call.float_arg(2);
  ReductionLayout layout = reduction_layout(self, dims, call.bool_arg(3));
  std::vector<double> values = to_doubles(reduction_order(self, dims));
  std::vector<double> variances(static_cast<size_t>(layout.outer)), means(static_cast<size_t>(layout.outer));
  double divisor = std::max(0.0, double(layout.inner) - correction);
  for (int64_t o = 0; o < layout.outer; ++o) {
    double sum = 0;
    for (int64_t i = 0; i < layout.inner; ++i) sum += values[size_t(o * layout.inner + i)];
    double mean = sum / double(layout.inner);
    double squares = 0;
    for (int64_t i = 0; i < layout.inner; ++i) {
      double deviation = values[size_t(o * layout.inner + i)] - mean;
      squares += deviation * deviation;
    }
    // PyTorch's var_mean runs Welford updates, in which the value after an infinity has the
    // delta inf - inf: the mean is NaN unless the only infinity is the last value.
    for (int64_t i = 0; i + 1 < layout.inner; ++i)
      if (std::isinf(values[size_t(o * layout.inner + i)])) mean = std::numeric_limits<double>::quiet_NaN();
    means[size_t(o)] = mean;
    variances[size_t(o)] = squares / divisor;
  }
  return {from_doubles(layout.out_shape, self.dtype(), variances), from_doubles(layout.out_shape, self.dtype(), means)};
}

// Inclusive prefix sum (or product) along dim; integers and bool accumulate as i64 unless a
// dtype is given.
Tensor prefix_scan(const KernelCall& call, bool product) {
  Tensor self = with_dtype(call, call.tensor(0), 2);
  DType out = call.optional_dtype(2) ? self.dtype() : (is_floating(self.dtype()) ? self.dtype() : DType::i64);
  if (self.dim() == 0) {
    wrap_dim(call.int_arg(1), 0);
    return self.to(out).clone();
  }
  int64_t dim = wrap_dim(call.int_arg(1), self.dim());
  Tensor moved = self.transpose(dim, -1);
  int64_t row = moved.size(-1);
  Tensor result;
  if (is_floating(out)) {
    std::vector<double> values = to_doubles(moved);
    portable::prefix_scans(values.data(), int64_t(values.size()), row, product);
    result = from_doubles(moved.sizes(), out, values);
  } else {
    std::vector<int64_t> values = to_ints(moved);
    portable::prefix_scans(values.data(), int64_t(values.size()), row, product);
    result = from_ints(moved.sizes(), out, values);
  }
  return result.transpose(dim, -1).contiguous();
}

// (running max or min, i64 index of it) along dim (portable::running_extremes).
std::vector<Tensor> running_extreme(const KernelCall& call, bool largest) {
  const Tensor& self = call.tensor(0);
  int64_t dim = self.dim() == 0 ? (wrap_dim(call.int_arg(1), 0), 0) : wrap_dim(call.int_arg(1), self.dim());
  Tensor moved = self.dim() == 0 ? self.reshape({1}) : self.transpose(dim, -1);
  int64_t row = moved.size(-1);
  std::vector<int64_t> indices(size_t(moved.numel()));
  Tensor values;
  if (is_floating(self.dtype())) {
    std::vector<double> running = to_doubles(moved);
    portable::running_extremes(running.data(), indices.data(), int64_t(running.size()), row, largest);
    values = from_doubles(moved.sizes(), self.dtype(), running);
  } else {
    std::vector<int64_t> running = to_ints(moved);
    portable::running_extremes(running.data(), indices.data(), int64_t(running.size()), row, largest);
    values = from_ints(moved.sizes(), self.dtype(), running);
  }
  Tensor index_tensor = from_ints(moved.sizes(), DType::i64, indices);
  if (self.dim() == 0) return {values.reshape({}), index_tensor.reshape({})};
  return {values.transpose(dim, -1).contiguous(), index_tensor.transpose(dim, -1).contiguous()};
}

// log(cumsum(exp(x))) along dim, each step a stable log_add_exp in double (portable).
Tensor logcumsumexp(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  int64_t dim = self.dim() == 0 ? (wrap_dim(call.int_arg(1), 0), 0) : wrap_dim(call.int_arg(1), self.dim());
  Tensor moved = self.dim() == 0 ? self.reshape({1}) : self.transpose(dim, -1);
  std::vector<double> values = to_doubles(moved);
  portable::prefix_log_sum_exps(values.data(), int64_t(values.size()), moved.size(-1));
  Tensor result = from_doubles(moved.sizes(), self.dtype(), values);
  return self.dim() == 0 ? result.reshape({}) : result.transpose(dim, -1).contiguous();
}

// k largest (or smallest) along dim (portable::top_k): equal values keep their order, NaN
// counts as larger than every number. Sorted or not, the result is in selection order.
std::vector<Tensor> topk(const KernelCall& call) {
  const Tensor& self = call.tensor(0);
  int64_t k = call.int_arg(1);
  bool largest = call.bool_arg(3);
  Tensor moved = self.dim() == 0 ? self.reshape({1}) : self.transpose(wrap_dim(call.int_arg(2), self.dim()), -1);
  int64_t row = moved.size(-1);
  run_portable(call, [&] { portable::check_top_k(k, row); });
  Sizes out_sizes = moved.sizes();
  out_sizes.back() = k;
  int64_t rows = row == 0 ? 0 : moved.numel() / row;
  std::vector<int64_t> top_indices(size_t(rows * k));
  Tensor result;
  if (is_floating(self.dtype())) {
    std::vector<double> values = to_doubles(moved), top(top_indices.size());
    run_portable(call, [&] { portable::top_k(values.data(), rows, row, k, largest, top.data(), top_indices.data()); });
    result = from_doubles(out_sizes, self.dtype(), top);
  } else {
    std::vector<int64_t> values = to_ints(moved), top(top_indices.size());
    run_portable(call, [&] { portable::top_k(values.data(), rows, row, k, largest, top.data(), top_indices.data()); });
    result = from_ints(out_sizes, self.dtype(), top);
  }
  Tensor indices = from_ints(out_sizes, DType::i64, top_indices);
  if (self.dim() == 0) return {result.reshape({}), indices.reshape({})};
  int64_t dim = wrap_dim(call.int_arg(2), self.dim());
  return {result.transpose(dim, -1).contiguous(), indices.transpose(dim, -1).contiguous()};
}

}  // namespace

void register_reduction_kernels(KernelTable& table) {
  table["sum"] = single([](const KernelCall& call) { return sum_or_prod(call, false); });
  table["prod"] = single([](const KernelCall& call) { return sum_or_prod(call, true); });
  table["mean"] = single(mean);
  table["amax"] = single([](const KernelCall& call) { return extreme(call, true); });
  table["amin"] = single([](const KernelCall& call) { return extreme(call, false); });
  table["argmax"] = single([](const KernelCall& call) { return arg_extreme(call, true); });
  table["argmin"] = single([](const KernelCall& call) { return arg_extreme(call, false); });
  table["var"] = single([](const KernelCall& call) { return variance_and_mean(call)[0]; });
  table["var_mean"] = variance_and_mean;
  table["cumsum"] = single([](const KernelCall& call) { return prefix_scan(call, false); });
  table["cumprod"] = single([](const KernelCall& call) { return prefix_scan(call, true); });
  table["cummax"] = [](const KernelCall& call) { return running_extreme(call, true); };
  table["cummin"] = [](const KernelCall& call) { return running_extreme(call, false); };
  table["logcumsumexp"] = single(logcumsumexp);
  table["topk"] = topk;
}

}  // namespace kiln::ir::kernels
