// ONNX elementwise ops: unary math and activations, binary arithmetic and comparisons with
// broadcasting, the bitwise ops and BitShift, variadic Max/Min/Sum/Mean, Where, Cast, Clip. Integer arithmetic on values
// known at import time as symbolic sizes (shape arithmetic) is carried out on the sizes.
#include <cmath>
#include <functional>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;
using SymOp = std::function<std::optional<SymInt>(const SymInt&, const SymInt&)>;

// The op on the elements of two integer inputs known at import time, when one is symbolic
// and `op` can decide every element; nullopt sends the node down the tensor path.
bool convert_symbolic_binary(OnnxNodeContext& context, const SymOp& op, DType result_dtype) {
  if (!context.input(0).is_symbolic() && !context.input(1).is_symbolic()) return false;
  std::optional<ir::SymShape> a = context.int_values(0), b = context.int_values(1);
  if (!a || !b) return false;
  size_t count = std::max(a->size(), b->size());
  if ((a->size() != count && a->size() != 1) || (b->size() != count && b->size() != 1)) return false;
  ir::SymShape result;
  for (size_t i = 0; i < count; ++i) {
    std::optional<SymInt> element = op((*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]);
    if (!element) return false;
    result.push_back(*element);
  }
  bool scalar = context.rank(0) == 0 && context.rank(1) == 0;
  context.set_output(0, OnnxValue::of_ints(result, scalar, result_dtype));
  return true;
}

std::optional<SymInt> truncating_divide(const SymInt& a, const SymInt& b) {
  if (a.is_constant() && b.is_constant()) {
    if (b.constant() == 0) return std::nullopt;
    return SymInt(a.constant() / b.constant());
  }
  // Symbolic sizes are >= 0, so floor and truncation agree for a positive divisor.
  if (b.is_constant() && b.constant() > 0) return floordiv(a, b);
  return std::nullopt;
}

std::optional<SymInt> python_modulo(const SymInt& a, const SymInt& b) {
  if (b.is_constant() && b.constant() > 0) return mod(a, b);
  return std::nullopt;
}

// Whether two sizes are equal, when that can be decided (a symbolic size is >= 0).
std::optional<bool> sizes_equal(const SymInt& a, const SymInt& b) {
  if (a == b) return true;
  if (a.is_constant() && b.is_constant()) return false;
  if ((a.is_constant() && a.constant() < 0) || (b.is_constant() && b.constant() < 0)) return false;
  return std::nullopt;
}

void unary(OnnxNodeContext& context, const std::string& target) { context.emit(0, target, {context.tensor(0)}); }

// A broadcasting binary op; a one-element constant no higher in rank than the other input
// becomes a Scalar operand (ONNX gives both inputs one type, so the result's type is unchanged
// by that; a higher-ranked one stays a tensor, as it sets the result's rank).
void binary(OnnxNodeContext& context, const std::string& target, ir::Kwargs kwargs = {}) {
  ir::Argument a = operand(context, 0, context.rank(1)), b = operand(context, 1, context.rank(0));
  if (!a.is_node() && !b.is_node()) a = context.tensor(0);  // two scalars: keep a tensor result
  context.emit(0, target, {a, b}, std::move(kwargs));
}

void arithmetic(OnnxNodeContext& context, const std::string& target, const SymOp& symbolic) {
  if (convert_symbolic_binary(context, symbolic, context.dtype(0))) return;
  binary(context, target);
}

void convert_div(OnnxNodeContext& context) {
  if (convert_symbolic_binary(context, truncating_divide, context.dtype(0))) return;
  if (is_integral(context.dtype(0))) return binary(context, "div", {{"rounding_mode", "trunc"}});
  binary(context, "div");
}

void convert_mod(OnnxNodeContext& context) {
  bool c_fmod = context.int_attribute("fmod", 0) != 0;
  if (!c_fmod && is_floating(context.dtype(0))) context.fail("fmod=0 is not allowed for floating-point inputs");
  if (!c_fmod && convert_symbolic_binary(context, python_modulo, context.dtype(0))) return;
  binary(context, c_fmod ? "fmod" : "remainder");
}

void convert_pow(OnnxNodeContext& context) {
  // ONNX's result has the base's type, whatever the exponent's. Kiln's pow promotes its operands
  // as PyTorch does, which refuses u16/u32/u64 with any integer: such an exponent of an integer
  // base is taken as i64 (every exponent up to 2^63 is exact there; larger ones wrap).
  DType base = context.dtype(0);
  ir::Argument exponent = operand(context, 1, context.rank(0));
  DType exponent_dtype = context.dtype(1);
  bool wide_unsigned = exponent_dtype == DType::u16 || exponent_dtype == DType::u32 || exponent_dtype == DType::u64;
  if (wide_unsigned && !is_floating(base) && exponent.is_node()) exponent = context.call("cast", {exponent, DType::i64});
  ir::Node* result = context.call("pow", {context.tensor(0), exponent});
  if (result->value().dtype != base) result = context.call("cast", {result, base});
  context.set_output(0, result);
}

void comparison(OnnxNodeContext& context, const std::string& target) {
  if (target == "eq" && convert_symbolic_binary(
                            context,
                            [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> {
                              std::optional<bool> equal = sizes_equal(a, b);
                              if (!equal) return std::nullopt;
                              return SymInt(*equal ? 1 : 0);
                            },
                            DType::boolean))
    return;
  binary(context, target);
}

// Max, Min, Sum, Mean: a left fold of the broadcasting op over every input.
void variadic(OnnxNodeContext& context, const std::string& target, const SymOp& symbolic, bool mean) {
  size_t count = context.input_count();
  if (count == 0) context.fail("needs at least one input");
  if (count == 2 && !mean && convert_symbolic_binary(context, symbolic, context.dtype(0))) return;
  if (count == 1) return context.set_output(0, context.input(0));
  ir::Node* result = context.tensor(0);
  for (size_t i = 1; i < count; ++i) {
    bool last = i + 1 == count && !mean;
    ir::Argument next = operand(context, i, result->value().rank());
    result = last ? context.emit(0, target, {result, next}) : context.call(target, {result, next});
  }
  if (mean) context.emit(0, "div", {result, double(count)});
}

void convert_where(OnnxNodeContext& context) {
  const Tensor* condition = context.constant(0);
  if (condition && condition->dim() <= 1 && (context.input(1).is_symbolic() || context.input(2).is_symbolic())) {
    std::optional<ir::SymShape> a = context.int_values(1), b = context.int_values(2);
    int64_t count = std::max<int64_t>({condition->numel(), a ? int64_t(a->size()) : 0, b ? int64_t(b->size()) : 0});
    auto pick = [&](const ir::SymShape& values, int64_t i) { return values[values.size() == 1 ? 0 : size_t(i)]; };
    bool fits = a && b;
    for (int64_t n : {condition->numel(), a ? int64_t(a->size()) : 0, b ? int64_t(b->size()) : 0})
      fits = fits && (n == count || n == 1);
    if (fits) {
      ir::SymShape result;
      for (int64_t i = 0; i < count; ++i)
        result.push_back(condition->flat_int(condition->numel() == 1 ? 0 : i) ? pick(*a, i) : pick(*b, i));
      bool scalar = context.rank(0) == 0 && context.rank(1) == 0 && context.rank(2) == 0;
      return context.set_output(0, OnnxValue::of_ints(result, scalar, context.dtype(1)));
    }
  }
  ir::Argument a = operand(context, 1, std::max(context.rank(0), context.rank(2)));
  ir::Argument b = operand(context, 2, std::max(context.rank(0), context.rank(1)));
  context.emit(0, "where", {context.tensor(0), a, b});
}

void cast_to(OnnxNodeContext& context, DType dtype) {
  if (context.dtype(0) == dtype) return context.set_output(0, context.input(0));
  const OnnxValue& input = context.input(0);
  if (input.is_symbolic() && is_integral(dtype))
    return context.set_output(0, OnnxValue::of_ints(*input.symbolic, input.symbolic_scalar, dtype));
  context.emit(0, "cast", {context.tensor(0), dtype});
}

void convert_cast(OnnxNodeContext& context) {
  int64_t to = context.int_attribute("to", 0);
  std::optional<DType> dtype = dtype_from_onnx(int32_t(to));
  if (!dtype) context.fail("casting to ", onnx_type_name(int32_t(to)), " is not supported");
  cast_to(context, *dtype);
}

void convert_clip(OnnxNodeContext& context) {
  DType dtype = context.dtype(0);
  ir::Node* x = context.tensor(0);
  bool has_min = context.has_input(1), has_max = context.has_input(2);
  bool constant_bounds = (!has_min || context.constant(1)) && (!has_max || context.constant(2));
  if (constant_bounds) {
    ir::Argument low = has_min ? scalar_argument(context.constant_scalar(1, "min"), dtype) : ir::Argument();
    ir::Argument high = has_max ? scalar_argument(context.constant_scalar(2, "max"), dtype) : ir::Argument();
    if (!has_min && !has_max) return context.set_output(0, context.input(0));
    context.emit(0, "clamp", {x, low, high});
    return;
  }
  ir::Node* result = x;
  if (has_min) result = has_max ? context.call("maximum", {result, context.tensor(1)}) : context.emit(0, "maximum", {result, context.tensor(1)});
  if (has_max) context.emit(0, "minimum", {result, context.tensor(2)});
}

void convert_bit_shift(OnnxNodeContext& context) {
  std::string direction = context.string_attribute("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") context.fail("direction '", direction, "' is not LEFT or RIGHT");
  binary(context, direction == "LEFT" ? "bitwise_left_shift" : "bitwise_right_shift");
}

void convert_leaky_relu(OnnxNodeContext& context) {
  context.emit(0, "leaky_relu", {context.tensor(0), context.float_attribute("alpha", 0.01)});
}

void convert_elu(OnnxNodeContext& context) {
  context.emit(0, "elu", {context.tensor(0), context.float_attribute("alpha", 1.0)});
}

void convert_selu(OnnxNodeContext& context) {
  double alpha = context.float_attribute("alpha", 1.67326319217681884765625);
  double gamma = context.float_attribute("gamma", 1.05070102214813232421875);
  context.emit(0, "mul", {context.call("elu", {context.tensor(0), alpha}), gamma});
}

void convert_hard_sigmoid(OnnxNodeContext& context) {
  double alpha = context.float_attribute("alpha", 0.2), beta = context.float_attribute("beta", 0.5);
  ir::Node* scaled = context.call("add", {context.call("mul", {context.tensor(0), alpha}), beta});
  context.emit(0, "clamp", {scaled, 0.0, 1.0});
}

void convert_thresholded_relu(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  double alpha = context.float_attribute("alpha", 1.0);
  context.emit(0, "where", {context.call("gt", {x, alpha}), x, 0.0});
}

void convert_prelu(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  ir::Node* scaled = context.call("mul", {x, context.tensor(1)});
  context.emit(0, "where", {context.call("lt", {x, 0.0}), scaled, x});
}

void convert_softsign(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  context.emit(0, "div", {x, context.call("add", {context.call("abs", {x}), 1.0})});
}

void convert_mish(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  context.emit(0, "mul", {x, context.call("tanh", {context.call("softplus", {x})})});
}

void convert_gelu(OnnxNodeContext& context) {
  std::string approximate = context.string_attribute("approximate", "none");
  if (approximate != "none" && approximate != "tanh") context.fail("approximate '", approximate, "' is not none or tanh");
  context.emit(0, "gelu", {context.tensor(0)}, {{"approximate", approximate}});
}

SymOp sym_add = [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> { return a + b; };
SymOp sym_sub = [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> { return a - b; };
SymOp sym_mul = [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> { return a * b; };
SymOp sym_max = [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> { return max(a, b); };
SymOp sym_min = [](const SymInt& a, const SymInt& b) -> std::optional<SymInt> { return min(a, b); };

}  // namespace

void register_onnx_elementwise_ops(OnnxOpTable& table) {
  table.add("Abs", [](OnnxNodeContext& c) { unary(c, "abs"); });
  table.add("Neg", [](OnnxNodeContext& c) { unary(c, "neg"); });
  table.add("Exp", [](OnnxNodeContext& c) { unary(c, "exp"); });
  table.add("Log", [](OnnxNodeContext& c) { unary(c, "log"); });
  table.add("Sqrt", [](OnnxNodeContext& c) { unary(c, "sqrt"); });
  table.add("Reciprocal", [](OnnxNodeContext& c) { unary(c, "reciprocal"); });
  table.add("Sin", [](OnnxNodeContext& c) { unary(c, "sin"); });
  table.add("Cos", [](OnnxNodeContext& c) { unary(c, "cos"); });
  table.add("Tanh", [](OnnxNodeContext& c) { unary(c, "tanh"); });
  table.add("Sigmoid", [](OnnxNodeContext& c) { unary(c, "sigmoid"); });
  table.add("Erf", [](OnnxNodeContext& c) { unary(c, "erf"); });
  table.add("Relu", [](OnnxNodeContext& c) { unary(c, "relu"); });
  table.add("Floor", [](OnnxNodeContext& c) { unary(c, "floor"); });
  table.add("Ceil", [](OnnxNodeContext& c) { unary(c, "ceil"); });
  table.add("Round", [](OnnxNodeContext& c) { unary(c, "round"); });
  table.add("Sign", [](OnnxNodeContext& c) { unary(c, "sign"); });
  table.add("Not", [](OnnxNodeContext& c) { unary(c, "logical_not"); });
  table.add("IsNaN", [](OnnxNodeContext& c) { unary(c, "isnan"); });
  table.add("HardSwish", [](OnnxNodeContext& c) { unary(c, "hardswish"); });
  table.add("Softplus", [](OnnxNodeContext& c) { unary(c, "softplus"); });
  table.add("Softsign", convert_softsign);
  table.add("Mish", convert_mish);
  table.add("Gelu", convert_gelu);
  table.add("LeakyRelu", convert_leaky_relu);
  table.add("Elu", convert_elu);
  table.add("Selu", convert_selu);
  table.add("HardSigmoid", convert_hard_sigmoid);
  table.add("ThresholdedRelu", convert_thresholded_relu);
  table.add("PRelu", convert_prelu);
  table.add("Clip", convert_clip);

  table.add("Add", [](OnnxNodeContext& c) { arithmetic(c, "add", sym_add); });
  table.add("Sub", [](OnnxNodeContext& c) { arithmetic(c, "sub", sym_sub); });
  table.add("Mul", [](OnnxNodeContext& c) { arithmetic(c, "mul", sym_mul); });
  table.add("Div", convert_div);
  table.add("Mod", convert_mod);
  table.add("Pow", convert_pow);
  table.add("Equal", [](OnnxNodeContext& c) { comparison(c, "eq"); });
  table.add("Less", [](OnnxNodeContext& c) { comparison(c, "lt"); });
  table.add("LessOrEqual", [](OnnxNodeContext& c) { comparison(c, "le"); });
  table.add("Greater", [](OnnxNodeContext& c) { comparison(c, "gt"); });
  table.add("GreaterOrEqual", [](OnnxNodeContext& c) { comparison(c, "ge"); });
  table.add("And", [](OnnxNodeContext& c) { binary(c, "logical_and"); });
  table.add("Or", [](OnnxNodeContext& c) { binary(c, "logical_or"); });
  table.add("Xor", [](OnnxNodeContext& c) { binary(c, "logical_xor"); });
  table.add("BitwiseAnd", [](OnnxNodeContext& c) { binary(c, "bitwise_and"); });
  table.add("BitwiseOr", [](OnnxNodeContext& c) { binary(c, "bitwise_or"); });
  table.add("BitwiseXor", [](OnnxNodeContext& c) { binary(c, "bitwise_xor"); });
  table.add("BitwiseNot", [](OnnxNodeContext& c) { unary(c, "bitwise_not"); });
  table.add("BitShift", convert_bit_shift);
  table.add("Max", [](OnnxNodeContext& c) { variadic(c, "maximum", sym_max, false); });
  table.add("Min", [](OnnxNodeContext& c) { variadic(c, "minimum", sym_min, false); });
  table.add("Sum", [](OnnxNodeContext& c) { variadic(c, "add", sym_add, false); });
  table.add("Mean", [](OnnxNodeContext& c) { variadic(c, "add", sym_add, true); });
  table.add("Where", convert_where);
  table.add("Cast", convert_cast);
  table.add("CastLike", [](OnnxNodeContext& c) { cast_to(c, c.dtype(1)); });
}

}  // namespace kiln::frontends
