// ONNX math ops written with Kiln's core ops: the hyperbolic functions and their inverses
// (Sinh and Asinh, Atanh through expm1/log1p so that they stay accurate near 0), Tan, the
// inverse trigonometric functions (Atan by range reduction and a polynomial; Asin and Acos
// through it), IsInf, Celu (alpha * elu(x / alpha)) and Shrink.
#include <limits>
#include <numbers>

#include "frontends/onnx/onnx_op_helpers.h"
#include "frontends/onnx/onnx_op_table.h"

namespace kiln::frontends {

namespace {

// The floating input (integer inputs of float-only ops are refused by the schema).
ir::Node* floating_input(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  if (!is_floating(x->value().dtype)) context.fail("expects a floating-point input, but it is ", dtype_name(x->value().dtype));
  return x;
}

void convert_tan(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  context.emit(0, "div", {context.call("sin", {x}), context.call("cos", {x})});
}

// sinh x = (expm1(x) - expm1(-x)) / 2; cosh x = (e^x + e^-x) / 2.
void convert_sinh(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  ir::Node* difference = context.call("sub", {context.call("expm1", {x}), context.call("expm1", {context.call("neg", {x})})});
  context.emit(0, "mul", {difference, 0.5});
}

void convert_cosh(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  ir::Node* sum = context.call("add", {context.call("exp", {x}), context.call("exp", {context.call("neg", {x})})});
  context.emit(0, "mul", {sum, 0.5});
}

// asinh x = sign(x) * log1p(|x| + x^2 / (1 + sqrt(x^2 + 1))).
void convert_asinh(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  ir::Node* square = context.call("mul", {x, x});
  ir::Node* root = context.call("add", {context.call("sqrt", {context.call("add", {square, 1.0})}), 1.0});
  ir::Node* argument = context.call("add", {context.call("abs", {x}), context.call("div", {square, root})});
  context.emit(0, "mul", {context.call("sign", {x}), context.call("log1p", {argument})});
}

// acosh x = log(x + sqrt(x^2 - 1)) for x >= 1 (NaN below).
void convert_acosh(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  ir::Node* root = context.call("sqrt", {context.call("sub", {context.call("mul", {x, x}), 1.0})});
  context.emit(0, "log", {context.call("add", {x, root})});
}

// atanh x = log1p(2x / (1 - x)) / 2.
void convert_atanh(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  ir::Node* ratio = context.call("div", {context.call("mul", {x, 2.0}), context.call("sub", {1.0, x})});
  context.emit(0, "mul", {context.call("log1p", {ratio}), 0.5});
}

// atan from core ops: |x| > 1 reflects to pi/2 - atan(1/|x|); atan(t) = 2 atan(u) with
// u = t / (1 + sqrt(1 + t^2)) <= tan(pi/8); then the odd Taylor polynomial to u^11 (its
// remainder, below u^13 / 13, is under 2e-6 of the result); the sign restored last.
// Relative error about 3e-6 in f32 (tests/frontends/onnx_inverse_trig_test.cpp).
ir::Node* atan_of(OnnxNodeContext& context, ir::Node* x) {
  double half_pi = std::numbers::pi / 2;
  ir::Node* a = context.call("abs", {x});
  ir::Node* reflected = context.call("gt", {a, 1.0});
  ir::Node* t = context.call("where", {reflected, context.call("reciprocal", {a}), a});
  ir::Node* root = context.call("add", {context.call("sqrt", {context.call("add", {context.call("mul", {t, t}), 1.0})}), 1.0});
  ir::Node* u = context.call("div", {t, root});
  ir::Node* u2 = context.call("mul", {u, u});
  ir::Node* series = context.call("sub", {1.0 / 9, context.call("mul", {u2, 1.0 / 11})});
  for (double coefficient : {-1.0 / 7, 1.0 / 5, -1.0 / 3, 1.0})
    series = context.call("add", {context.call("mul", {u2, series}), coefficient});
  ir::Node* angle = context.call("mul", {context.call("mul", {u, series}), 2.0});
  angle = context.call("where", {reflected, context.call("sub", {half_pi, angle}), angle});
  return context.call("mul", {context.call("sign", {x}), angle});
}

void convert_atan(OnnxNodeContext& context) { context.set_output(0, atan_of(context, floating_input(context))); }

// asin x = atan(x / sqrt(1 - x^2)) (x = +-1 divides by 0: atan(+-inf) = +-pi/2; |x| > 1 is NaN).
ir::Node* asin_of(OnnxNodeContext& context, ir::Node* x) {
  ir::Node* cosine = context.call("sqrt", {context.call("sub", {1.0, context.call("mul", {x, x})})});
  return atan_of(context, context.call("div", {x, cosine}));
}

void convert_asin(OnnxNodeContext& context) { context.set_output(0, asin_of(context, floating_input(context))); }

void convert_acos(OnnxNodeContext& context) {
  context.emit(0, "sub", {std::numbers::pi / 2, asin_of(context, floating_input(context))});
}

void convert_is_inf(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  bool negative = context.int_attribute("detect_negative", 1) != 0, positive = context.int_attribute("detect_positive", 1) != 0;
  double infinity = std::numeric_limits<double>::infinity();
  if (negative && positive) return void(context.emit(0, "eq", {context.call("abs", {x}), infinity}));
  if (positive) return void(context.emit(0, "eq", {x, infinity}));
  if (negative) return void(context.emit(0, "eq", {x, -infinity}));
  context.emit(0, "full_like", {x, false}, {{"dtype", DType::boolean}});
}

void convert_celu(OnnxNodeContext& context) {
  ir::Node* x = floating_input(context);
  double alpha = context.float_attribute("alpha", 1.0);
  if (alpha == 0) context.fail("alpha cannot be 0");
  context.emit(0, "mul", {context.call("elu", {context.call("div", {x, alpha})}), alpha});
}

// x + bias below -lambd, x - bias above lambd, 0 between.
void convert_shrink(OnnxNodeContext& context) {
  ir::Node* x = context.tensor(0);
  DType dtype = x->value().dtype;
  double lambd = context.float_attribute("lambd", 0.5), bias = context.float_attribute("bias", 0.0);
  ir::Argument low = scalar_argument(-lambd, DType::f64), high = scalar_argument(lambd, DType::f64);
  ir::Node* raised = context.call("add", {x, scalar_argument(bias, dtype)});
  ir::Node* lowered = context.call("sub", {x, scalar_argument(bias, dtype)});
  ir::Node* zero = context.call("full_like", {x, scalar_argument(0, dtype)});
  ir::Node* upper = context.call("where", {context.call("gt", {x, high}), lowered, zero});
  ir::Node* result = context.call("where", {context.call("lt", {x, low}), raised, upper});
  if (result->value().dtype != dtype) result = context.call("cast", {result, dtype});
  context.set_output(0, result);
}

}  // namespace

void register_onnx_math_ops(OnnxOpTable& table) {
  table.add("Tan", convert_tan);
  table.add("Atan", convert_atan);
  table.add("Asin", convert_asin);
  table.add("Acos", convert_acos);
  table.add("Sinh", convert_sinh);
  table.add("Cosh", convert_cosh);
  table.add("Asinh", convert_asinh);
  table.add("Acosh", convert_acosh);
  table.add("Atanh", convert_atanh);
  table.add("IsInf", convert_is_inf);
  table.add("Celu", convert_celu);
  table.add("Shrink", convert_shrink);
}

}  // namespace kiln::frontends
