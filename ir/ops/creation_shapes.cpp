// Shape/dtype rules of the creation ops: full, full_like, arange, iota, rand, randn.
// They take no tensor input (full_like reads only self's meta) and produce contiguous
// tensors on the CPU (full_like: on self's device).
#include <cmath>
#include <limits>

#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

// full's dtype when none is given: the value's own (bool -> bool, int -> i64, float -> f32).
DType value_dtype(const OpCall& call, size_t value_index, size_t dtype_index) {
  if (!call.is_none(dtype_index)) return call.dtype_arg(dtype_index);
  return scalar_dtype(call.arg(value_index));
}

NodeMeta full_rule(const OpCall& call) {
  SymShape shape = call.syms(0);
  check_sizes_nonnegative(call, shape);
  return single(TensorMeta::contiguous(value_dtype(call, 1, 2), std::move(shape)));
}

NodeMeta full_like_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  DType dtype = call.is_none(2) ? self.dtype : call.dtype_arg(2);
  return single(TensorMeta::contiguous(dtype, self.shape, self.device));
}

// ceil(a / b) for a constant b != 0, in the form the simplifier reduces best: (a + b - 1)//b.
SymInt ceil_div(const SymInt& a, int64_t b) {
  if (b < 0) return ceil_div(-a, -b);
  return floordiv(a + SymInt(b - 1), SymInt(b));
}

NodeMeta arange_rule(const OpCall& call) {
  const Argument& start = call.arg(0);
  const Argument& end = call.arg(1);
  const Argument& step = call.arg(2);
  bool all_integral = !start.is_float() && !end.is_float() && !step.is_float();
  DType dtype = call.is_none(3) ? (all_integral ? DType::i64 : kDefaultFloat) : call.dtype_arg(3);

  bool symbolic = start.is_symint() || end.is_symint() || step.is_symint();
  SymInt length;
  if (symbolic) {
    if (!all_integral) call.fail("arange with a symbolic bound needs integer start, end and step");
    if (!step.is_int())
      call.fail("arange with a symbolic step (", step.to_string(), ") is not supported; the step must be a constant");
    if (step.integer() == 0) call.fail("step must be nonzero");
    length = ceil_div(end.symint() - start.symint(), step.integer());
    if (length.is_constant() && length.constant() < 0)
      call.fail("upper bound and lower bound inconsistent with step sign");
  } else if (all_integral) {
    int64_t first = start.integer(), last = end.integer(), stride = step.integer();
    if (stride == 0) call.fail("step must be nonzero");
    if ((stride > 0 && last < first) || (stride < 0 && last > first))
      call.fail("upper bound and lower bound inconsistent with step sign");
    length = ceil_div(SymInt(last - first), stride);
  } else {
    double first = start.floating(), last = end.floating(), stride = step.floating();
    if (!std::isfinite(first) || !std::isfinite(last))
      call.fail("unsupported range: ", float_repr(first), " -> ", float_repr(last));
    if (stride == 0) call.fail("step must be nonzero");
    if ((stride > 0 && last < first) || (stride < 0 && last > first))
      call.fail("upper bound and lower bound inconsistent with step sign");
    double count = std::ceil((last - first) / stride);
    if (count >= double(std::numeric_limits<int64_t>::max()))
      call.fail("invalid size, possible overflow? (arange from ", float_repr(first), " to ", float_repr(last),
                " by ", float_repr(stride), ")");
    length = SymInt(int64_t(count));
  }
  return single(TensorMeta::contiguous(dtype, {length}));
}

NodeMeta iota_rule(const OpCall& call) {
  SymShape shape = {call.sym(0)};
  check_sizes_nonnegative(call, shape);
  return single(TensorMeta::contiguous(call.dtype_arg(3), std::move(shape)));
}

NodeMeta random_rule(const OpCall& call) {
  SymShape shape = call.syms(0);
  check_sizes_nonnegative(call, shape);
  DType dtype = call.dtype_arg(3);
  if (!is_floating(dtype))
    call.fail(call.op().name(), " expects a floating-point dtype, but got ", dtype_name(dtype));
  return single(TensorMeta::contiguous(dtype, std::move(shape)));
}

}  // namespace

void attach_creation_shape_rules(ShapeRuleTable& rules) {
  rules["full"] = full_rule;
  rules["full_like"] = full_like_rule;
  rules["arange"] = arange_rule;
  rules["iota"] = iota_rule;
  rules["rand"] = random_rule;
  rules["randn"] = random_rule;
}

}  // namespace kiln::ir
