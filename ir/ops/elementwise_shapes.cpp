// Shape/dtype rules of the elementwise ops: unary (neg ... isnan, clamp), binary with
// broadcasting and PyTorch type promotion (add ... logical_xor, the bitwise ops), where, and
// cast.
// Results are contiguous tensors of the broadcast shape.
#include <array>

#include "ir/ops/shape_helpers.h"
#include "ir/ops/shape_rules.h"

namespace kiln::ir {

namespace {

// How an op's result dtype follows from the promoted dtype of its inputs (PyTorch's
// ELEMENTWISE_TYPE_PROMOTION_KIND).
enum class ResultKind { same, floating, boolean };

// The broadcast shape of every Tensor argument among `indices` ([] when all are numbers).
SymShape broadcast_arguments(const OpCall& call, std::initializer_list<size_t> indices) {
  SymShape shape;
  for (size_t index : indices)
    if (call.is_tensor(index)) shape = broadcast_shapes(call, shape, call.tensor(index).shape);
  return shape;
}

DType promote_arguments(const OpCall& call, std::initializer_list<size_t> indices) {
  std::vector<PromotionOperand> operands;
  for (size_t index : indices)
    if (!call.is_none(index)) operands.push_back(promotion_operand(call, index));
  return result_type(operands);
}

DType apply(ResultKind kind, DType promoted) {
  switch (kind) {
    case ResultKind::same: return promoted;
    case ResultKind::floating: return to_floating(promoted);
    case ResultKind::boolean: return DType::boolean;
  }
  return promoted;
}

ShapeRule unary(ResultKind kind) {
  return [kind](const OpCall& call) {
    const TensorMeta& self = call.tensor(0);
    return single(TensorMeta::contiguous(apply(kind, self.dtype), self.shape, self.device));
  };
}

NodeMeta neg_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (self.dtype == DType::boolean)
    call.fail("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
              "use the `~` or `logical_not()` operator instead.");
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

NodeMeta clamp_rule(const OpCall& call) {
  if (call.is_none(1) && call.is_none(2)) call.fail("torch.clamp: At least one of 'min' or 'max' must not be None");
  const TensorMeta& self = call.tensor(0);
  // Bounds are Python numbers: they raise the category only (int tensor, float bound -> f32).
  DType dtype = promote_arguments(call, {0, 1, 2});
  return single(TensorMeta::contiguous(dtype, self.shape, self.device));
}

NodeMeta binary_meta(const OpCall& call, DType dtype) {
  return single(TensorMeta::contiguous(dtype, broadcast_arguments(call, {0, 1}), first_device(call)));
}

ShapeRule binary(ResultKind kind) {
  return [kind](const OpCall& call) { return binary_meta(call, apply(kind, promote_arguments(call, {0, 1}))); };
}

// add and sub: self + alpha * other, with PyTorch's checks on alpha.
ShapeRule add_like(bool is_sub) {
  return [is_sub](const OpCall& call) {
    DType dtype = promote_arguments(call, {0, 1});
    if (is_sub) {
      DType self = promotion_operand(call, 0).dtype, other = promotion_operand(call, 1).dtype;
      if (self == DType::boolean && other == DType::boolean)
        call.fail("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                  "`logical_xor()` operator instead.");
      if (self == DType::boolean || other == DType::boolean)
        call.fail("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert "
                  "a mask, use the `~` or `logical_not()` operator instead.");
    }
    const Argument& alpha = call.arg(2);
    if (alpha.is_float() && !is_floating(dtype))
      call.fail("For integral input tensors, argument alpha must not be a floating point number.");
    if (alpha.is_bool() && dtype != DType::boolean) call.fail("Boolean alpha only supported for Boolean results.");
    return binary_meta(call, dtype);
  };
}

NodeMeta div_rule(const OpCall& call) {
  DType dtype = promote_arguments(call, {0, 1});
  if (call.is_none(2)) return binary_meta(call, to_floating(dtype));
  const std::string& mode = call.string_arg(2);
  if (mode != "trunc" && mode != "floor")
    call.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode, "'");
  return binary_meta(call, dtype);
}

NodeMeta where_rule(const OpCall& call) {
  const TensorMeta& condition = call.tensor(0);
  if (condition.dtype != DType::boolean)
    call.fail("where expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(condition.dtype));
  SymShape shape = broadcast_arguments(call, {0, 1, 2});
  return single(TensorMeta::contiguous(promote_arguments(call, {1, 2}), shape, condition.device));
}

// The bitwise ops take integers and bools (the shifts integers only), as PyTorch does.
ShapeRule bitwise(bool shift) {
  return [shift](const OpCall& call) {
    DType dtype = promote_arguments(call, {0, 1});
    if (is_floating(dtype) || (shift && dtype == DType::boolean))
      call.fail("\"", call.op().name(), "_cpu\" not implemented for '", dtype_name(dtype), "'");
    return binary_meta(call, dtype);
  };
}

NodeMeta bitwise_not_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  if (is_floating(self.dtype)) call.fail("bitwise_not is only supported for integer and boolean tensors, not ", dtype_name(self.dtype));
  return single(TensorMeta::contiguous(self.dtype, self.shape, self.device));
}

NodeMeta cast_rule(const OpCall& call) {
  const TensorMeta& self = call.tensor(0);
  return single(TensorMeta::contiguous(call.dtype_arg(1), self.shape, self.device));
}

}  // namespace

void attach_elementwise_shape_rules(ShapeRuleTable& rules) {
  for (const char* name : {"abs", "relu", "floor", "ceil", "round", "sign"}) rules[name] = unary(ResultKind::same);
  for (const char* name : {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tanh",
                           "sigmoid", "erf", "erfinv"})
    rules[name] = unary(ResultKind::floating);
  for (const char* name : {"logical_not", "isnan"}) rules[name] = unary(ResultKind::boolean);
  rules["neg"] = neg_rule;
  rules["clamp"] = clamp_rule;

  rules["add"] = add_like(false);
  rules["sub"] = add_like(true);
  rules["div"] = div_rule;
  for (const char* name : {"mul", "pow", "maximum", "minimum", "fmod", "remainder"})
    rules[name] = binary(ResultKind::same);
  for (const char* name : {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"})
    rules[name] = binary(ResultKind::boolean);
  for (const char* name : {"bitwise_and", "bitwise_or", "bitwise_xor"}) rules[name] = bitwise(false);
  for (const char* name : {"bitwise_left_shift", "bitwise_right_shift"}) rules[name] = bitwise(true);
  rules["bitwise_not"] = bitwise_not_rule;
  rules["where"] = where_rule;
  rules["cast"] = cast_rule;
}

}  // namespace kiln::ir
