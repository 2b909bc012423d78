// Shape/dtype rules of the reductions (sum, prod, mean, amax, amin, argmax, argmin, var,
// var_mean), the scans cumsum, cumprod, cummax, cummin and logcumsumexp, and the selection
// topk (k largest or smallest along a dim). A dim list of None or [] reduces every dim; keepdim
// keeps reduced dims as size 1. Dtypes follow PyTorch: sum/prod/cumsum/cumprod accumulate
// integers and bool as i64, mean, var and logcumsumexp need floating inputs, argmax/argmin and
// the indices of cummax/cummin are i64.
#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

// Which dims of a rank-`rank` tensor the `dim` argument reduces (all for None or []).
std::vector<bool> reduced_dims(const OpCall& call, size_t dim_index, int64_t rank) {
  std::vector<bool> reduced(size_t(rank), false);
  std::vector<int64_t> dims = call.is_none(dim_index) ? std::vector<int64_t>{} : call.ints(dim_index);
  if (dims.empty()) return std::vector<bool>(size_t(rank), true);
  for (int64_t dim : wrap_dims(call, dims, rank))
    if (rank > 0) reduced[size_t(dim)] = true;
  return reduced;
}

SymShape reduced_shape(const SymShape& shape, const std::vector<bool>& reduced, bool keepdim) {
  SymShape result;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i]) result.push_back(shape[i]);
    else if (keepdim) result.push_back(SymInt(1));
  }
  return result;
}

// sum, prod: integers and bool accumulate as i64 unless a dtype is given.
NodeMeta sum_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  DType dtype = call.is_none(3) ? sum_dtype(self.dtype) : call.dtype_arg(3);
  SymShape shape = reduced_shape(self.shape, reduced_dims(call, 1, self.rank()), call.bool_arg(2));
  return single(TensorMeta::contiguous(dtype, std::move(shape), self.device));
}

NodeMeta mean_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  DType dtype = self.dtype;
  if (!call.is_none(3)) {
    dtype = call.dtype_arg(3);
    if (!is_floating(dtype))
      call.fail("mean(): could not infer output dtype. Optional dtype must be either a floating point or complex "
                "dtype. Got: ", dtype_name(dtype));
  } else if (!is_floating(dtype)) {
    call.fail("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: ", dtype_name(dtype));
  }
  SymShape shape = reduced_shape(self.shape, reduced_dims(call, 1, self.rank()), call.bool_arg(2));
  return single(TensorMeta::contiguous(dtype, std::move(shape), self.device));
}

// amax, amin: an empty reduced dim has no max ("Expected reduction dim 0 to have non-zero size.").
NodeMeta extremum_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  std::vector<bool> reduced = reduced_dims(call, 1, self.rank());
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i] && is_zero(self.shape[i]))
      call.fail(call.op().name(), "(): Expected reduction dim ", i, " to have non-zero size.");
  SymShape shape = reduced_shape(self.shape, reduced, call.bool_arg(2));
  return single(TensorMeta::contiguous(self.dtype, std::move(shape), self.device));
}

// argmax, argmin: over one dim, or over the flattened tensor when dim is None (then keepdim
// keeps every dim as size 1, as PyTorch does).
NodeMeta arg_extremum_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  bool keepdim = call.bool_arg(2);
  const std::string& name = call.op().name();
  SymShape shape;
  if (call.is_none(1)) {
    if (is_zero(self.numel()))
      call.fail(name, "(): Expected reduction dim to be specified for input.numel() == 0.");
    if (keepdim) shape.assign(self.shape.size(), SymInt(1));
  } else {
    int64_t dim = wrap_dim(call, call.int_arg(1), self.rank());
    if (self.rank() > 0 && is_zero(self.shape[size_t(dim)]))
      call.fail(name, "(): Expected reduction dim ", dim, " to have non-zero size.");
    std::vector<bool> reduced(self.shape.size(), false);
    if (self.rank() > 0) reduced[size_t(dim)] = true;
    shape = reduced_shape(self.shape, reduced, keepdim);
  }
  return single(TensorMeta::contiguous(DType::i64, std::move(shape), self.device));
}

// var, var_mean: (self, dim, *, correction, keepdim); floating inputs only.
TensorMeta variance_meta(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (!is_floating(self.dtype))
    call.fail("std and var only support floating point and complex dtypes, but got ", dtype_name(self.dtype));
  SymShape shape = reduced_shape(self.shape, reduced_dims(call, 1, self.rank()), call.bool_arg(3));
  return TensorMeta::contiguous(self.dtype, std::move(shape), self.device);
}

NodeMeta var_rule(const OpCall& call) { return single(variance_meta(call)); }

NodeMeta var_mean_rule(const OpCall& call) {
  TensorMeta meta = variance_meta(call);
  return tuple_of({meta, meta});
}

NodeMeta cumsum_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  wrap_dim(call, call.int_arg(1), self.rank());
  DType dtype = call.is_none(2) ? sum_dtype(self.dtype) : call.dtype_arg(2);
  return single(TensorMeta::contiguous(dtype, self.shape, self.device));
}

// cummax / cummin: (values of self's dtype, i64 indices), both of self's shape.
NodeMeta running_extreme_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  wrap_dim(call, call.int_arg(1), self.rank());
  return tuple_of({TensorMeta::contiguous(self.dtype, self.shape, self.device),
                   TensorMeta::contiguous(DType::i64, self.shape, self.device)});
}

NodeMeta logcumsumexp_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  wrap_dim(call, call.int_arg(1), self.rank());
  if (!is_floating(self.dtype)) call.fail("logcumsumexp needs a floating tensor, got ", self.type_string());
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

// topk: (values, indices) of the input's shape with k along dim; indices i64.
NodeMeta topk_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (self.dtype == DType::boolean) call.fail("topk is not implemented for bool tensors");
  int64_t k = call.int_arg(1);
  int64_t dim = wrap_dim(call, call.int_arg(2), self.rank());
  SymShape shape = self.shape;
  if (self.rank() == 0) {
    if (k > 1 || k < 0) call.fail("selected index k out of range (k is ", k, ", a 0-d tensor has one element)");
  } else {
    const SymInt& size = shape[size_t(dim)];
    if (k < 0 || (size.is_constant() && k > size.constant()))
      call.fail("selected index k out of range (k is ", k, ", dim ", dim, " has size ", size, ")");
    shape[size_t(dim)] = SymInt(k);
  }
  return tuple_of({TensorMeta::contiguous(self.dtype, shape, self.device), TensorMeta::contiguous(DType::i64, shape, self.device)});
}

}  // namespace

void attach_reduction_shape_rules(ShapeRuleTable& rules) {
  rules["sum"] = sum_rule;
  rules["prod"] = sum_rule;
  rules["mean"] = mean_rule;
  rules["amax"] = extremum_rule;
  rules["amin"] = extremum_rule;
  rules["argmax"] = arg_extremum_rule;
  rules["argmin"] = arg_extremum_rule;
  rules["var"] = var_rule;
  rules["var_mean"] = var_mean_rule;
  rules["cumsum"] = cumsum_rule;
  rules["cumprod"] = cumsum_rule;
  rules["cummax"] = running_extreme_rule;
  rules["cummin"] = running_extreme_rule;
  rules["logcumsumexp"] = logcumsumexp_rule;
  rules["topk"] = topk_rule;
}

}  // namespace kiln::ir
