// ATen elementwise ops that map onto Kiln's elementwise ops: the unary ops Kiln has, binary
// arithmetic with alpha and rounding modes, comparisons, logical and bitwise ops, where,
// clamp and its one-sided forms, and the in-place forms of each (add_, relu_, ...).
#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

// self OP other (Tensor or Scalar), with alpha for add/sub when given.
AtenConverter binary(std::string op, std::string self = "self", std::string other = "other") {
  return [op, self, other](AtenNodeContext& c) {
    ir::Kwargs kwargs;
    if (c.given("alpha")) kwargs.emplace_back("alpha", c.scalar("alpha"));
    c.result(op, {c.tensor_or_scalar(self), c.tensor_or_scalar(other)}, std::move(kwargs));
  };
}

void convert_rsub(AtenNodeContext& c) {
  ir::Kwargs kwargs;
  if (c.given("alpha")) kwargs.emplace_back("alpha", c.scalar("alpha"));
  c.result("sub", {c.tensor_or_scalar("other"), c.tensor_or_scalar("self")}, std::move(kwargs));
}

void convert_div_mode(AtenNodeContext& c) {
  ir::Kwargs kwargs;
  if (std::optional<std::string> mode = c.optional_string("rounding_mode")) kwargs.emplace_back("rounding_mode", *mode);
  c.result("div", {c.tensor_or_scalar("self"), c.tensor_or_scalar("other")}, std::move(kwargs));
}

void convert_floor_divide(AtenNodeContext& c) {
  c.result("div", {c.tensor_or_scalar("self"), c.tensor_or_scalar("other")}, {{"rounding_mode", std::string("floor")}});
}

void convert_where(AtenNodeContext& c) {
  c.result("where", {c.tensor("condition"), c.tensor_or_scalar("self"), c.tensor_or_scalar("other")});
}

// clamp with Scalar bounds (either may be None).
void convert_clamp(AtenNodeContext& c) {
  ir::Argument low = c.given("min") ? c.scalar("min") : ir::Argument();
  ir::Argument high = c.given("max") ? c.scalar("max") : ir::Argument();
  if (low.is_node() || high.is_node()) {  // a symbolic bound: clamp with tensors
    ir::Node* x = c.tensor("self");
    if (!low.is_none()) x = c.call("maximum", {x, low});
    if (!high.is_none()) x = c.call("minimum", {x, high});
    c.result_node(x);
    return;
  }
  if (low.is_none() && high.is_none()) c.fail("torch.clamp: At least one of 'min' or 'max' must not be None");
  c.result("clamp", {c.tensor("self"), low, high});
}

// clamp with Tensor bounds: max(min(...)) in PyTorch's order (min first, then max).
void convert_clamp_tensor(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (!c.given("min") && !c.given("max")) c.fail("torch.clamp: At least one of 'min' or 'max' must not be None");
  ir::Node* result = x;
  if (c.given("min")) result = c.call("maximum", {result, c.tensor_or_scalar("min")});
  if (c.given("max")) result = c.call("minimum", {result, c.tensor_or_scalar("max")});
  c.result_node(result);
}

AtenConverter clamp_side(bool is_min) {
  return [is_min](AtenNodeContext& c) {
    const char* bound = is_min ? "min" : "max";
    if (!c.is_scalar(bound)) {
      c.result(is_min ? "maximum" : "minimum", {c.tensor("self"), c.tensor(bound)});
      return;
    }
    ir::Argument value = c.scalar(bound);
    if (value.is_node()) {
      c.result(is_min ? "maximum" : "minimum", {c.tensor("self"), value});
      return;
    }
    c.result("clamp", {c.tensor("self"), is_min ? value : ir::Argument(), is_min ? ir::Argument() : value});
  };
}

// bitwise ops: Kiln's bitwise_* for integers and bools.
AtenConverter bitwise(std::string op) {
  return [op](AtenNodeContext& c) { c.result(op, {c.tensor_or_scalar("self"), c.tensor_or_scalar("other")}); };
}

}  // namespace

void register_aten_elementwise_ops(AtenOpTable& table) {
  for (const char* op : {"abs", "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
                         "tanh", "sigmoid", "erf", "erfinv", "relu", "floor", "ceil", "sign"})
    add_op_and_inplace(table, op, "default", unary(op));
  add_op_and_inplace(table, "round", "default", unary("round"));
  add_op_and_inplace(table, "logical_not", "default", unary("logical_not"));
  add_op(table, "isnan", "default", unary("isnan"));
  add_op_and_inplace(table, "negative", "default", unary("neg"));
  add_op_and_inplace(table, "absolute", "default", unary("abs"));
  add_op_and_inplace(table, "sgn", "default", unary("sign"));

  for (const char* op : {"add", "sub", "mul"}) {
    add_op_and_inplace(table, op, "Tensor", binary(op));
    add_op_and_inplace(table, op, "Scalar", binary(op));
  }
  add_op_and_inplace(table, "multiply", "Tensor", binary("mul"));
  add_op_and_inplace(table, "subtract", "Tensor", binary("sub"));
  add_op(table, "rsub", "Tensor", convert_rsub);
  add_op(table, "rsub", "Scalar", convert_rsub);
  add_op_and_inplace(table, "div", "Tensor", binary("div"));
  add_op_and_inplace(table, "div", "Scalar", binary("div"));
  add_op_and_inplace(table, "div", "Tensor_mode", convert_div_mode);
  add_op_and_inplace(table, "div", "Scalar_mode", convert_div_mode);
  add_op_and_inplace(table, "divide", "Tensor", binary("div"));
  add_op_and_inplace(table, "true_divide", "Tensor", binary("div"));
  add_op_and_inplace(table, "floor_divide", "default", convert_floor_divide);
  add_op_and_inplace(table, "floor_divide", "Scalar", convert_floor_divide);
  add_op_and_inplace(table, "pow", "Tensor_Tensor", binary("pow", "self", "exponent"));
  add_op_and_inplace(table, "pow", "Tensor_Scalar", binary("pow", "self", "exponent"));
  add_op(table, "pow", "Scalar", binary("pow", "self", "exponent"));
  for (const char* op : {"fmod", "remainder"}) {
    add_op_and_inplace(table, op, "Tensor", binary(op));
    add_op_and_inplace(table, op, "Scalar", binary(op));
  }
  add_op(table, "remainder", "Scalar_Tensor", binary("remainder"));
  add_op(table, "maximum", "default", binary("maximum"));
  add_op(table, "minimum", "default", binary("minimum"));
  add_op(table, "max", "other", binary("maximum"));
  add_op(table, "min", "other", binary("minimum"));

  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    add_op_and_inplace(table, op, "Tensor", binary(op));
    add_op_and_inplace(table, op, "Scalar", binary(op));
  }
  for (auto [alias, op] : {std::pair{"greater", "gt"}, {"greater_equal", "ge"}, {"less", "lt"}, {"less_equal", "le"},
                           {"not_equal", "ne"}}) {
    add_op(table, alias, "Tensor", binary(op));
    add_op(table, alias, "Scalar", binary(op));
  }
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) add_op_and_inplace(table, op, "default", binary(op));

  for (const char* op : {"bitwise_and", "bitwise_or", "bitwise_xor"}) {
    add_op_and_inplace(table, op, "Tensor", bitwise(op));
    add_op_and_inplace(table, op, "Scalar", bitwise(op));
    add_op(table, op, "Scalar_Tensor", bitwise(op));
  }
  for (auto [name, op] : {std::pair{"and", "bitwise_and"}, {"or", "bitwise_or"}, {"xor", "bitwise_xor"}}) {
    add_python_operator(table, name, "Tensor", bitwise(op));
    add_python_operator(table, name, "Scalar", bitwise(op));
  }
  add_op_and_inplace(table, "bitwise_not", "default", unary("bitwise_not"));

  add_op(table, "where", "self", convert_where);
  add_op(table, "where", "ScalarSelf", convert_where);
  add_op(table, "where", "ScalarOther", convert_where);
  add_op(table, "where", "Scalar", convert_where);
  add_op_and_inplace(table, "clamp", "default", convert_clamp);
  add_op_and_inplace(table, "clip", "default", convert_clamp);
  add_op_and_inplace(table, "clamp", "Tensor", convert_clamp_tensor);
  add_op_and_inplace(table, "clip", "Tensor", convert_clamp_tensor);
  add_op_and_inplace(table, "clamp_min", "default", clamp_side(true));
  add_op_and_inplace(table, "clamp_max", "default", clamp_side(false));
  add_op_and_inplace(table, "clamp_min", "Tensor", clamp_side(true));
  add_op_and_inplace(table, "clamp_max", "Tensor", clamp_side(false));
}

}  // namespace kiln::frontends
