// ATen math functions that Kiln has no single op for, written as compositions of Kiln's
// elementwise ops chosen to keep float32 accuracy: inverse trigonometric functions through
// Cephes' atanf (range reduction + a degree-9 odd polynomial), hyperbolic functions through
// expm1 / log1p (no cancellation near 0), log2 / log10 / exp2, trunc / frac, the IEEE
// classification tests, and small compositions (lerp, addcmul, hypot, copysign, xlogy, ...).
#include <cmath>
#include <limits>
#include <numbers>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The input as a floating tensor (integers and bools promote to f32, PyTorch's default dtype).
ir::Node* floating(AtenNodeContext& c, const char* name = "self") {
  ir::Node* x = c.tensor(name);
  return is_floating(dtype_of(x)) ? x : c.call("cast", {x, DType::f32});
}

// atan of a floating tensor (Cephes atanf: |error| ~ 1 ulp in float32).
ir::Node* atan_of(AtenNodeContext& c, ir::Node* t) {
  ir::Node* x = c.call("abs", {t});
  ir::Node* big = c.call("gt", {x, 2.414213562373095});
  ir::Node* mid = c.call("gt", {x, 0.4142135623730950});
  ir::Node* inverted = c.call("neg", {c.call("reciprocal", {x})});
  ir::Node* shifted = c.call("div", {c.call("sub", {x, 1.0}), c.call("add", {x, 1.0})});
  ir::Node* reduced = c.call("where", {big, inverted, c.call("where", {mid, shifted, x})});
  ir::Node* offset = c.call("where", {big, kPi / 2, c.call("where", {mid, kPi / 4, 0.0})});
  ir::Node* z = c.call("mul", {reduced, reduced});
  ir::Node* p = c.call("sub", {c.call("mul", {z, 8.05374449538e-2}), 1.38776856032e-1});
  p = c.call("add", {c.call("mul", {p, z}), 1.99777106478e-1});
  p = c.call("sub", {c.call("mul", {p, z}), 3.33329491539e-1});
  ir::Node* y = c.call("add", {c.call("mul", {c.call("mul", {p, z}), reduced}), reduced});
  ir::Node* magnitude = c.call("add", {offset, y});
  return c.call("where", {c.call("lt", {t, 0.0}), c.call("neg", {magnitude}), magnitude});
}

void convert_atan(AtenNodeContext& c) { c.result_node(atan_of(c, floating(c))); }

void convert_asin(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* cosine = c.call("sqrt", {c.call("mul", {c.call("sub", {1.0, x}), c.call("add", {x, 1.0})})});
  c.result_node(atan_of(c, c.call("div", {x, cosine})));
}

void convert_acos(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* ratio = c.call("sqrt", {c.call("div", {c.call("sub", {1.0, x}), c.call("add", {x, 1.0})})});
  c.result_node(c.call("mul", {atan_of(c, ratio), 2.0}));
}

ir::Node* atan2_of(AtenNodeContext& c) {
  ir::Node* y = floating(c, "self");
  ir::Node* x = floating(c, "other");
  ir::Node* base = atan_of(c, c.call("div", {y, x}));
  ir::Node* x_negative = c.call("lt", {x, 0.0});
  ir::Node* y_negative = c.call("lt", {y, 0.0});
  ir::Node* turned = c.call("where", {y_negative, c.call("sub", {base, kPi}), c.call("add", {base, kPi})});
  ir::Node* result = c.call("where", {x_negative, turned, base});
  // x == 0: +-pi/2 by the sign of y (0 when y is 0 too).
  ir::Node* on_axis = c.call("mul", {c.call("sign", {y}), kPi / 2});
  ir::Node* x_zero = c.call("logical_and", {c.call("eq", {x, 0.0}), c.call("logical_not", {c.call("isnan", {y})})});
  return c.call("where", {x_zero, on_axis, result});
}

void convert_atan2(AtenNodeContext& c) { c.result_node(atan2_of(c)); }

void convert_tan(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  c.result_node(c.call("div", {c.call("sin", {x}), c.call("cos", {x})}));
}

void convert_sinh(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* difference = c.call("sub", {c.call("expm1", {x}), c.call("expm1", {c.call("neg", {x})})});
  c.result_node(c.call("mul", {difference, 0.5}));
}

void convert_cosh(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* sum = c.call("add", {c.call("exp", {x}), c.call("exp", {c.call("neg", {x})})});
  c.result_node(c.call("mul", {sum, 0.5}));
}

// asinh(x) = sign(x) * log1p(|x| + x^2 / (1 + sqrt(x^2 + 1)))
void convert_asinh(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* a = c.call("abs", {x});
  ir::Node* square = c.call("mul", {a, a});
  ir::Node* root = c.call("sqrt", {c.call("add", {square, 1.0})});
  ir::Node* magnitude = c.call("log1p", {c.call("add", {a, c.call("div", {square, c.call("add", {root, 1.0})})})});
  // Past 1e18 x^2 overflows float32: there asinh(x) = log(2|x|).
  ir::Node* large = c.call("add", {c.call("log", {a}), std::numbers::ln2});
  magnitude = c.call("where", {c.call("gt", {a, 1e18}), large, magnitude});
  c.result_node(c.call("where", {c.call("lt", {x, 0.0}), c.call("neg", {magnitude}), magnitude}));
}

// acosh(x) = log1p((x - 1) + sqrt((x - 1) * (x + 1)))
void convert_acosh(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* below = c.call("sub", {x, 1.0});
  ir::Node* root = c.call("sqrt", {c.call("mul", {below, c.call("add", {x, 1.0})})});
  ir::Node* small = c.call("log1p", {c.call("add", {below, root})});
  ir::Node* large = c.call("add", {c.call("log", {x}), std::numbers::ln2});
  c.result_node(c.call("where", {c.call("gt", {x, 1e18}), large, small}));
}

// atanh(x) = 0.5 * log1p(2x / (1 - x))
void convert_atanh(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* ratio = c.call("div", {c.call("mul", {x, 2.0}), c.call("sub", {1.0, x})});
  c.result_node(c.call("mul", {c.call("log1p", {ratio}), 0.5}));
}

AtenConverter scaled_log(double factor) {
  return [factor](AtenNodeContext& c) { c.result_node(c.call("mul", {c.call("log", {floating(c)}), factor})); };
}

void convert_exp2(AtenNodeContext& c) { c.result_node(c.call("pow", {2.0, floating(c)})); }

ir::Node* trunc_of(AtenNodeContext& c, ir::Node* x) {
  if (!is_floating(dtype_of(x))) return x;
  return c.call("where", {c.call("lt", {x, 0.0}), c.call("ceil", {x}), c.call("floor", {x})});
}

void convert_trunc(AtenNodeContext& c) { c.result_node(trunc_of(c, c.tensor("self"))); }

void convert_frac(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  c.result_node(c.call("sub", {x, trunc_of(c, x)}));
}

ir::Node* all_false_like(AtenNodeContext& c, ir::Node* x) {
  return c.call("full_like", {x, false}, {{"dtype", DType::boolean}});
}

void convert_isinf(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (!is_floating(dtype_of(x))) return void(c.result_node(all_false_like(c, x)));
  c.result_node(c.call("eq", {c.call("abs", {x}), kInfinity}));
}

AtenConverter is_signed_infinity(double infinity) {
  return [infinity](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    if (!is_floating(dtype_of(x))) return void(c.result_node(all_false_like(c, x)));
    c.result_node(c.call("eq", {x, infinity}));
  };
}

void convert_isfinite(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (!is_floating(dtype_of(x))) return void(c.result_node(c.call("full_like", {x, true}, {{"dtype", DType::boolean}})));
  c.result_node(c.call("lt", {c.call("abs", {x}), kInfinity}));
}

void convert_erfc(AtenNodeContext& c) { c.result_node(c.call("sub", {1.0, c.call("erf", {floating(c)})})); }

void convert_square(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (dtype_of(x) == DType::boolean) x = c.call("cast", {x, DType::i64});
  c.result("mul", {x, x});
}

// signbit: x < 0, or x is -0.0 (1 / -0.0 is -inf).
void convert_signbit(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (!is_floating(dtype_of(x))) return void(c.result_node(c.call("lt", {x, int64_t(0)})));
  ir::Node* negative_zero = c.call("logical_and", {c.call("eq", {x, 0.0}), c.call("lt", {c.call("reciprocal", {x}), 0.0})});
  c.result_node(c.call("logical_or", {c.call("lt", {x, 0.0}), negative_zero}));
}

double finite_limit(DType dtype, bool highest) {
  double value = dtype == DType::f64 ? 1.7976931348623157e308 : dtype == DType::f16 ? 65504.0
                 : dtype == DType::bf16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
  return highest ? value : -value;
}

void convert_nan_to_num(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (!is_floating(dtype_of(x))) return void(c.result_node(c.call("clone", {x})));
  DType dtype = dtype_of(x);
  double nan = c.float_arg("nan", 0.0);
  double posinf = c.optional_float("posinf").value_or(finite_limit(dtype, true));
  double neginf = c.optional_float("neginf").value_or(finite_limit(dtype, false));
  ir::Node* result = c.call("where", {c.call("isnan", {x}), nan, x});
  result = c.call("where", {c.call("eq", {x, kInfinity}), posinf, result});
  c.result_node(c.call("where", {c.call("eq", {x, -kInfinity}), neginf, result}));
}

void convert_logit(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  // x < eps gives eps, then x > 1 - eps gives 1 - eps (PyTorch's order when eps > 0.5 too).
  if (std::optional<double> eps = c.optional_float("eps")) {
    ir::Node* high = c.call("where", {c.call("gt", {x, 1.0 - *eps}), 1.0 - *eps, x});
    x = c.call("where", {c.call("lt", {x, *eps}), *eps, high});
  }
  c.result_node(c.call("log", {c.call("div", {x, c.call("sub", {1.0, x})})}));
}

// xlogy(x, y) = 0 where x == 0 (and y is not NaN), else x * log(y); xlog1py likewise with
// log1p(y) (`log` names the one).
AtenConverter x_times_log(std::string log) {
  return [log](AtenNodeContext& c) {
    ir::Argument x = c.tensor_or_scalar("self");
    ir::Argument y = c.tensor_or_scalar("other");
    if (y.is_node() && !is_floating(dtype_of(y.node()))) y = c.call("cast", {y, DType::f32});
    if (!y.is_node()) y = c.call("full", {ir::Argument::ints({}), y.floating()}, {{"dtype", DType::f32}});
    ir::Node* product = c.call("mul", {x, c.call(log, {y})});
    ir::Node* zero = c.call("logical_and", {c.call("eq", {x, 0.0}), c.call("logical_not", {c.call("isnan", {y})})});
    c.result_node(c.call("where", {zero, 0.0, product}));
  };
}

AtenConverter scaled(double factor) {
  return [factor](AtenNodeContext& c) { c.result_node(c.call("mul", {floating(c), factor})); };
}

void convert_sinc(AtenNodeContext& c) {
  ir::Node* x = floating(c);
  ir::Node* scaled_x = c.call("mul", {x, kPi});
  ir::Node* ratio = c.call("div", {c.call("sin", {scaled_x}), scaled_x});
  c.result_node(c.call("where", {c.call("eq", {x, 0.0}), 1.0, ratio}));
}

void convert_hypot(AtenNodeContext& c) {
  ir::Node* a = c.tensor("self");
  ir::Node* b = c.tensor("other");
  c.result_node(c.call("sqrt", {c.call("add", {c.call("mul", {a, a}), c.call("mul", {b, b})})}));
}

void convert_copysign(AtenNodeContext& c) {
  ir::Node* magnitude = c.call("abs", {floating(c)});
  ir::Argument sign = c.tensor_or_scalar("other");
  ir::Node* negative;
  if (sign.is_node()) {
    ir::Node* s = sign.node();
    if (!is_floating(dtype_of(s))) negative = c.call("lt", {s, int64_t(0)});
    else negative = c.call("logical_or", {c.call("lt", {s, 0.0}),
                                          c.call("logical_and", {c.call("eq", {s, 0.0}), c.call("lt", {c.call("reciprocal", {s}), 0.0})})});
    c.result_node(c.call("where", {negative, c.call("neg", {magnitude}), magnitude}));
    return;
  }
  double value = sign.floating();
  c.result_node(std::signbit(value) ? c.call("neg", {magnitude}) : magnitude);
}

// lerp(start, end, weight) = start + weight * (end - start)
void convert_lerp(AtenNodeContext& c) {
  ir::Node* start = c.tensor("self");
  ir::Node* end = c.tensor("end");
  ir::Argument weight = c.tensor_or_scalar("weight");
  c.result_node(c.call("add", {start, c.call("mul", {weight, c.call("sub", {end, start})})}));
}

AtenConverter add_product(bool divide) {
  return [divide](AtenNodeContext& c) {
    ir::Node* self = c.tensor("self");
    ir::Node* term = c.call(divide ? "div" : "mul", {c.tensor("tensor1"), c.tensor("tensor2")});
    if (c.given("value")) term = c.call("mul", {term, c.scalar("value")});
    c.result("add", {self, term});
  };
}

// logaddexp(a, b) = max + log1p(exp(-|a - b|)), with equal infinities kept.
void convert_logaddexp(AtenNodeContext& c) {
  ir::Node* a = floating(c, "self");
  ir::Node* b = floating(c, "other");
  ir::Node* high = c.call("maximum", {a, b});
  ir::Node* gap = c.call("neg", {c.call("abs", {c.call("sub", {a, b})})});
  ir::Node* sum = c.call("add", {high, c.call("log1p", {c.call("exp", {gap})})});
  c.result_node(c.call("where", {c.call("eq", {a, b}), c.call("add", {a, std::numbers::ln2}), sum}));
}

// log2(2^a + 2^b) = max(a, b) + log2(1 + 2^-|a - b|); a + 1 where a == b (infinities too).
void convert_logaddexp2(AtenNodeContext& c) {
  ir::Node* a = floating(c, "self");
  ir::Node* b = floating(c, "other");
  ir::Node* high = c.call("maximum", {a, b});
  ir::Node* gap = c.call("mul", {c.call("neg", {c.call("abs", {c.call("sub", {a, b})})}), std::numbers::ln2});
  ir::Node* sum = c.call("add", {high, c.call("div", {c.call("log1p", {c.call("exp", {gap})}), std::numbers::ln2})});
  c.result_node(c.call("where", {c.call("eq", {a, b}), c.call("add", {a, 1.0}), sum}));
}

// ldexp(x, e) = x * 2^e, floating.
void convert_ldexp(AtenNodeContext& c) {
  ir::Node* x = floating(c, "self");
  ir::Node* e = c.tensor("other");
  c.result_node(c.call("mul", {x, c.call("pow", {2.0, cast_to(c, e, dtype_of(x))})}));
}

// isclose(a, b, rtol, atol, equal_nan): a == b, or both NaN with equal_nan, or a finite
// |a - b| <= atol + |rtol * b| (ATen's rule; integers compare in float32).
void convert_isclose(AtenNodeContext& c) {
  ir::Node* a = c.tensor("self");
  ir::Node* b = c.tensor("other");
  double rtol = c.float_arg("rtol", 1e-5), atol = c.float_arg("atol", 1e-8);
  if (rtol < 0 || atol < 0) c.fail("rtol and atol must be non-negative, got rtol=", rtol, " and atol=", atol);
  ir::Node* close = c.call("eq", {a, b});
  if (dtype_of(a) == DType::boolean || dtype_of(b) == DType::boolean) return void(c.set_output(0, close));
  if (c.bool_arg("equal_nan", false))
    close = c.call("logical_or", {close, c.call("logical_and", {c.call("isnan", {a}), c.call("isnan", {b})})});
  DType work = is_floating(dtype_of(a)) ? dtype_of(a) : is_floating(dtype_of(b)) ? dtype_of(b) : DType::f32;
  ir::Node* fa = cast_to(c, a, work);
  ir::Node* fb = cast_to(c, b, work);
  ir::Node* error = c.call("abs", {c.call("sub", {fa, fb})});
  ir::Node* allowed = c.call("add", {c.call("abs", {c.call("mul", {fb, rtol})}), atol});
  ir::Node* finite = c.call("logical_not", {c.call("logical_or", {c.call("isnan", {error}), c.call("eq", {error, std::numeric_limits<double>::infinity()})})});
  c.set_output(0, c.call("logical_or", {close, c.call("logical_and", {finite, c.call("le", {error, allowed})})}));
}

void convert_heaviside(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* values = c.tensor("values");
  ir::Node* step = c.call("cast", {c.call("gt", {x, int64_t(0)}), dtype_of(x)});
  c.result_node(c.call("where", {c.call("eq", {x, int64_t(0)}), values, step}));
}

// fmax / fmin: like maximum / minimum, but a NaN loses to a number.
AtenConverter nan_ignoring(const char* op) {
  return [op](AtenNodeContext& c) {
    ir::Node* a = c.tensor("self");
    ir::Node* b = c.tensor("other");
    ir::Node* value = c.call(op, {a, b});
    if (!is_floating(dtype_of(value))) return void(c.result_node(value));
    value = c.call("where", {c.call("isnan", {a}), b, value});
    c.result_node(c.call("where", {c.call("isnan", {b}), a, value}));
  };
}

void convert_round_decimals(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t decimals = c.int_arg("decimals", 0);
  if (decimals == 0) return void(c.result("round", {x}));
  double scale = std::pow(10.0, double(decimals));
  c.result_node(c.call("div", {c.call("round", {c.call("mul", {x, scale})}), scale}));
}

void convert_float_power(AtenNodeContext& c) {
  auto as_double = [&](const char* name) -> ir::Argument {
    ir::Argument value = c.tensor_or_scalar(name);
    return value.is_node() ? ir::Argument(c.call("cast", {value, DType::f64})) : ir::Argument(value.floating());
  };
  c.result_node(c.call("pow", {as_double("self"), as_double("exponent")}));
}

}  // namespace

void register_aten_math_ops(AtenOpTable& table) {
  add_op_and_inplace(table, "atan", "default", convert_atan);
  add_op_and_inplace(table, "arctan", "default", convert_atan);
  add_op_and_inplace(table, "asin", "default", convert_asin);
  add_op_and_inplace(table, "arcsin", "default", convert_asin);
  add_op_and_inplace(table, "acos", "default", convert_acos);
  add_op_and_inplace(table, "arccos", "default", convert_acos);
  add_op_and_inplace(table, "atan2", "default", convert_atan2);
  add_op_and_inplace(table, "arctan2", "default", convert_atan2);
  add_op_and_inplace(table, "tan", "default", convert_tan);
  add_op_and_inplace(table, "sinh", "default", convert_sinh);
  add_op_and_inplace(table, "cosh", "default", convert_cosh);
  add_op_and_inplace(table, "asinh", "default", convert_asinh);
  add_op_and_inplace(table, "arcsinh", "default", convert_asinh);
  add_op_and_inplace(table, "acosh", "default", convert_acosh);
  add_op_and_inplace(table, "arccosh", "default", convert_acosh);
  add_op_and_inplace(table, "atanh", "default", convert_atanh);
  add_op_and_inplace(table, "arctanh", "default", convert_atanh);
  add_op_and_inplace(table, "log2", "default", scaled_log(1.0 / std::numbers::ln2));
  add_op_and_inplace(table, "log10", "default", scaled_log(1.0 / std::numbers::ln10));
  add_op_and_inplace(table, "exp2", "default", convert_exp2);
  add_op_and_inplace(table, "trunc", "default", convert_trunc);
  add_op_and_inplace(table, "fix", "default", convert_trunc);
  add_op_and_inplace(table, "frac", "default", convert_frac);
  add_op(table, "isinf", "default", convert_isinf);
  add_op(table, "isposinf", "default", is_signed_infinity(kInfinity));
  add_op(table, "isneginf", "default", is_signed_infinity(-kInfinity));
  add_op(table, "isfinite", "default", convert_isfinite);
  add_op_and_inplace(table, "erfc", "default", convert_erfc);
  add_op_and_inplace(table, "square", "default", convert_square);
  add_op(table, "signbit", "default", convert_signbit);
  add_op_and_inplace(table, "nan_to_num", "default", convert_nan_to_num);
  add_op_and_inplace(table, "logit", "default", convert_logit);
  for (const char* overload : {"Tensor", "Scalar_Self", "Scalar_Other"}) add_op(table, "xlogy", overload, x_times_log("log"));
  for (const char* overload : {"default", "self_scalar", "other_scalar"})
    add_op(table, "special_xlog1py", overload, x_times_log("log1p"));
  add_op_and_inplace(table, "deg2rad", "default", scaled(kPi / 180.0));
  add_op_and_inplace(table, "rad2deg", "default", scaled(180.0 / kPi));
  add_op_and_inplace(table, "sinc", "default", convert_sinc);
  add_op_and_inplace(table, "hypot", "default", convert_hypot);
  add_op_and_inplace(table, "copysign", "Tensor", convert_copysign);
  add_op_and_inplace(table, "copysign", "Scalar", convert_copysign);
  add_op_and_inplace(table, "lerp", "Scalar", convert_lerp);
  add_op_and_inplace(table, "lerp", "Tensor", convert_lerp);
  add_op_and_inplace(table, "addcmul", "default", add_product(false));
  add_op_and_inplace(table, "addcdiv", "default", add_product(true));
  add_op(table, "logaddexp", "default", convert_logaddexp);
  add_op(table, "logaddexp2", "default", convert_logaddexp2);
  add_op(table, "ldexp", "Tensor", convert_ldexp);
  add_op(table, "isclose", "default", convert_isclose);
  add_op_and_inplace(table, "heaviside", "default", convert_heaviside);
  add_op(table, "fmax", "default", nan_ignoring("maximum"));
  add_op(table, "fmin", "default", nan_ignoring("minimum"));
  add_op_and_inplace(table, "round", "decimals", convert_round_decimals);
  add_op(table, "float_power", "Tensor_Tensor", convert_float_power);
  add_op(table, "float_power", "Tensor_Scalar", convert_float_power);
  add_op(table, "float_power", "Scalar", convert_float_power);
  table.add("aten.positive.default", [](AtenNodeContext& c) { c.result_node(c.call("clone", {c.tensor("self")})); });
}

}  // namespace kiln::frontends
