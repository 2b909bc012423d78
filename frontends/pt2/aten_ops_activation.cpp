// ATen activation functions, softmax and dropout: the ones Kiln has as ops (gelu, silu,
// hardswish, hardsigmoid, leaky_relu, elu, softplus, softmax, log_softmax, dropout) map
// directly, the others are short compositions (hardtanh as clamp, mish, selu, celu, glu,
// prelu, shrinkage, threshold, log_sigmoid); the random ones (rrelu, alpha and feature
// dropouts in training) draw from Kiln's Philox `rand`.
#include <cmath>
#include <limits>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

void convert_gelu(AtenNodeContext& c) {
  std::string approximate = c.string_arg("approximate", "none");
  if (approximate == "none") return void(c.result("gelu", {c.tensor("self")}));
  c.result("gelu", {c.tensor("self")}, {{"approximate", approximate}});
}

void convert_leaky_relu(AtenNodeContext& c) {
  c.result("leaky_relu", {c.tensor("self"), c.scalar("negative_slope", 0.01)});
}

// elu(x; alpha, scale, input_scale) = scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1))
void convert_elu(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  double alpha = c.float_arg("alpha", 1.0), scale = c.float_arg("scale", 1.0), input_scale = c.float_arg("input_scale", 1.0);
  if (scale == 1.0 && input_scale == 1.0) return void(c.result("elu", {x, alpha}));
  ir::Node* negative = c.call("mul", {c.call("expm1", {c.call("mul", {x, input_scale})}), alpha * scale});
  c.result_node(c.call("where", {c.call("gt", {x, 0.0}), c.call("mul", {x, scale}), negative}));
}

void convert_selu(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  ir::Node* negative = c.call("mul", {c.call("expm1", {x}), alpha * scale});
  c.result_node(c.call("where", {c.call("gt", {x, 0.0}), c.call("mul", {x, scale}), negative}));
}

void convert_celu(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  double alpha = c.float_arg("alpha", 1.0);
  ir::Node* negative = c.call("mul", {c.call("expm1", {c.call("div", {x, alpha})}), alpha});
  c.result_node(c.call("where", {c.call("gt", {x, 0.0}), x, negative}));
}

void convert_softplus(AtenNodeContext& c) {
  c.result("softplus", {c.tensor("self"), c.scalar("beta", 1), c.scalar("threshold", 20)});
}

void convert_mish(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  c.result_node(c.call("mul", {x, c.call("tanh", {c.call("softplus", {x})})}));
}

void convert_hardtanh(AtenNodeContext& c) {
  c.result("clamp", {c.tensor("self"), c.scalar("min_val", -1.0), c.scalar("max_val", 1.0)});
}

void convert_relu6(AtenNodeContext& c) { c.result("clamp", {c.tensor("self"), int64_t(0), int64_t(6)}); }

void convert_threshold(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  c.result("where", {c.call("gt", {x, c.scalar("threshold")}), x, c.scalar("value")});
}

// log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|))
ir::Node* log_sigmoid_of(AtenNodeContext& c, ir::Node* x) {
  ir::Node* tail = c.call("log1p", {c.call("exp", {c.call("neg", {c.call("abs", {x})})})});
  return c.call("sub", {c.call("minimum", {x, 0.0}), tail});
}

void convert_log_sigmoid(AtenNodeContext& c) { c.result_node(log_sigmoid_of(c, c.tensor("self"))); }

void convert_log_sigmoid_forward(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  c.set_output(0, log_sigmoid_of(c, x));
  if (c.output_used(1)) c.set_output(1, c.call("full", {ir::Argument::ints({0}), 0.0}, {{"dtype", dtype_of(x)}}));
}

void convert_softshrink(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  double lambd = c.float_arg("lambd", 0.5);
  ir::Node* low = c.call("where", {c.call("lt", {x, -lambd}), c.call("add", {x, lambd}), 0.0});
  c.result_node(c.call("where", {c.call("gt", {x, lambd}), c.call("sub", {x, lambd}), low}));
}

void convert_hardshrink(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  double lambd = c.float_arg("lambd", 0.5);
  c.result_node(c.call("where", {c.call("gt", {c.call("abs", {x}), lambd}), x, 0.0}));
}

void convert_glu(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", -1), rank_of(x));
  ir::SymInt size = shape_of(x)[size_t(dim)];
  if (size.is_constant() && size.constant() % 2 != 0)
    c.fail("Halving dimension must be even, but dimension ", dim, " is size ", size.constant());
  ir::SymInt half = floordiv(size, ir::SymInt(2));
  ir::Node* a = c.call("slice", {x, dim, ir::SymInt(0), half});
  ir::Node* b = c.call("slice", {x, dim, half, size});
  c.result_node(c.call("mul", {a, c.call("sigmoid", {b})}));
}

// prelu: a learned slope per channel (dim 1) or one for all.
void convert_prelu(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* weight = c.tensor("weight");
  int64_t rank = rank_of(x);
  if (rank_of(weight) == 1 && rank >= 2) {
    std::vector<ir::SymInt> shape(size_t(rank - 1), ir::SymInt(1));
    shape[0] = shape_of(weight)[0];
    weight = c.call("reshape", {weight, ir::Argument::sym_ints(shape)});
  }
  c.result_node(c.call("where", {c.call("gt", {x, 0.0}), x, c.call("mul", {weight, x})}));
}

// rrelu: in training, x * r for x <= 0 with r uniform in [lower, upper] per element (drawn from
// Kiln's Philox `rand`, so not PyTorch's values); in evaluation, leaky_relu with the middle slope.
// rrelu_with_noise_functional also returns the noise: r where x <= 0, 1 elsewhere (training),
// the given noise unchanged (evaluation).
void convert_rrelu(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  double lower = c.float_arg("lower", 1.0 / 8), upper = c.float_arg("upper", 1.0 / 3);
  bool with_noise = c.find("noise") != nullptr;
  if (!c.bool_arg("training", false)) {
    c.result("leaky_relu", {x, (lower + upper) / 2});
    if (with_noise && c.output_used(1)) c.set_output(1, c.call("clone", {c.tensor("noise")}));
    return;
  }
  if (!is_floating(dtype_of(x))) c.fail("rrelu expects a floating-point input, but got ", dtype_name(dtype_of(x)));
  ir::Node* uniform = c.call("rand", {ir::Argument::sym_ints(shape_of(x))}, {{"dtype", dtype_of(x)}, {"seed", next_random_seed(c)}});
  ir::Node* slope = c.call("add", {c.call("mul", {uniform, upper - lower}), lower});
  ir::Node* negative = c.call("le", {x, 0.0});
  c.result_node(c.call("where", {negative, c.call("mul", {x, slope}), x}));
  if (with_noise && c.output_used(1)) c.set_output(1, c.call("where", {negative, slope, 1.0}));
}

AtenConverter softmax(std::string op, bool with_dtype) {
  return [op, with_dtype](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    int64_t dim = c.int_arg("dim");
    std::vector<ir::Argument> args = {x, dim, ir::Argument()};
    if (with_dtype) {
      if (std::optional<DType> dtype = c.dtype_arg("dtype")) args[2] = *dtype;
    } else if (c.bool_arg("half_to_float", false)) {
      args[2] = DType::f32;
    }
    c.result(op, std::move(args));
  };
}

// _safe_softmax: softmax, with rows that are all -inf giving 0 instead of NaN.
void convert_safe_softmax(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim"), rank_of(x));
  std::optional<DType> dtype = c.dtype_arg("dtype");
  ir::Node* probabilities = c.call("softmax", {x, dim, dtype ? ir::Argument(*dtype) : ir::Argument()});
  ir::Node* empty_row = c.call("eq", {c.call("amax", {x, ir::Argument::ints({dim}), true}), -std::numeric_limits<double>::infinity()});
  c.result_node(c.call("where", {empty_row, 0.0, probabilities}));
}

// The tensor argument of a dropout: "input", or "self" in the in-place forms.
ir::Node* dropout_input(AtenNodeContext& c) { return c.tensor(c.find("input") ? "input" : "self"); }

void convert_dropout(AtenNodeContext& c) {
  ir::Node* x = dropout_input(c);
  double p = c.float_arg("p", 0.5);
  bool train = c.bool_arg("train", true);
  if (!train || p == 0.0) return void(c.result_node(c.call("clone", {x})));
  c.result("dropout", {x, p, true}, {{"seed", next_random_seed(c)}});
}

// native_dropout(input, p, train) -> (output, mask); train None means training.
void convert_native_dropout(AtenNodeContext& c) {
  ir::Node* x = c.tensor("input");
  double p = c.float_arg("p");
  bool train = c.given("train") ? c.bool_arg("train") : true;
  if (!train) {
    c.set_output(0, c.call("clone", {x}));
    if (c.output_used(1)) c.set_output(1, c.call("full_like", {x, true}, {{"dtype", DType::boolean}}));
    return;
  }
  ir::Node* keep = c.call("ge", {c.call("rand", {ir::Argument::sym_ints(shape_of(x))}, {{"seed", next_random_seed(c)}}), p});
  double scale = p >= 1.0 ? 0.0 : 1.0 / (1.0 - p);
  c.set_output(0, c.call("where", {keep, c.call("mul", {x, scale}), 0.0}));
  if (c.output_used(1)) c.set_output(1, keep);
}

// alpha_dropout, feature_dropout (dropout2d / dropout3d) and feature_alpha_dropout, as
// PyTorch's _dropout_impl: a Bernoulli(1 - p) keep mask, per element or, for the feature forms,
// per (N, C) slice (shape [N, C, 1, ...], broadcast over the other dims), drawn from Kiln's
// Philox `rand` (kept where u >= p; not PyTorch's draws). Plain: x * keep / (1 - p). Alpha
// (SELU's self-normalizing dropout, alpha = 1.7580993408473766,
// a = 1 / sqrt((alpha^2 p + 1)(1 - p))): x * keep * a + (keep - 1) * alpha * a + alpha * a * p.
// The identity when not training, when p == 0 or for an empty input; x * 0 when p == 1.
AtenConverter random_dropout(bool feature, bool alpha) {
  return [feature, alpha](AtenNodeContext& c) {
    ir::Node* x = dropout_input(c);
    double p = c.float_arg("p", 0.5);
    if (p < 0 || p > 1) c.fail("dropout probability has to be between 0 and 1, but got ", p);
    if (!c.bool_arg("train", true) || p == 0.0) return void(c.result_node(c.call("clone", {x})));
    if (!is_floating(dtype_of(x)))
      c.fail(c.target(), " in training expects a floating-point input, but got ", dtype_name(dtype_of(x)));
    if (p == 1.0) return void(c.result_node(c.call("mul", {x, 0.0})));
    ir::SymShape noise_shape = shape_of(x);
    if (feature) {
      if (noise_shape.size() < 2) c.fail("feature dropout requires at least 2 dimensions in the input, but got ", noise_shape.size());
      for (size_t d = 2; d < noise_shape.size(); ++d) noise_shape[d] = ir::SymInt(1);
    }
    ir::Node* uniform = c.call("rand", {ir::Argument::sym_ints(noise_shape)}, {{"dtype", dtype_of(x)}, {"seed", next_random_seed(c)}});
    ir::Node* keep = c.call("cast", {c.call("ge", {uniform, p}), dtype_of(x)});
    if (!alpha) return void(c.result_node(c.call("mul", {x, c.call("mul", {keep, 1.0 / (1.0 - p)})})));
    constexpr double kAlpha = 1.7580993408473766;
    double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
    ir::Node* shift = c.call("add", {c.call("mul", {c.call("sub", {keep, 1.0}), kAlpha * a}), kAlpha * a * p});
    c.result_node(c.call("add", {c.call("mul", {x, c.call("mul", {keep, a})}), shift}));
  };
}

}  // namespace

void register_aten_activation_ops(AtenOpTable& table) {
  add_op_and_inplace(table, "gelu", "default", convert_gelu);
  add_op(table, "special_expit", "default", unary("sigmoid"));
  for (const char* op : {"silu", "hardswish", "hardsigmoid"}) add_op_and_inplace(table, op, "default", unary(op));
  add_op_and_inplace(table, "leaky_relu", "default", convert_leaky_relu);
  add_op_and_inplace(table, "elu", "default", convert_elu);
  add_op_and_inplace(table, "selu", "default", convert_selu);
  add_op_and_inplace(table, "celu", "default", convert_celu);
  add_op(table, "softplus", "default", convert_softplus);
  add_op_and_inplace(table, "mish", "default", convert_mish);
  add_op_and_inplace(table, "hardtanh", "default", convert_hardtanh);
  add_op_and_inplace(table, "relu6", "default", convert_relu6);
  add_op_and_inplace(table, "threshold", "default", convert_threshold);
  add_op(table, "log_sigmoid", "default", convert_log_sigmoid);
  add_op(table, "log_sigmoid_forward", "default", convert_log_sigmoid_forward);
  add_op(table, "softshrink", "default", convert_softshrink);
  add_op(table, "hardshrink", "default", convert_hardshrink);
  add_op(table, "glu", "default", convert_glu);
  add_op(table, "prelu", "default", convert_prelu);
  add_op(table, "_prelu_kernel", "default", convert_prelu);
  add_op_and_inplace(table, "rrelu", "default", convert_rrelu);
  add_op(table, "rrelu_with_noise_functional", "default", convert_rrelu);
  add_op(table, "softmax", "int", softmax("softmax", true));
  add_op(table, "log_softmax", "int", softmax("log_softmax", true));
  add_op(table, "_softmax", "default", softmax("softmax", false));
  add_op(table, "_log_softmax", "default", softmax("log_softmax", false));
  add_op(table, "_safe_softmax", "default", convert_safe_softmax);
  add_op_and_inplace(table, "dropout", "default", convert_dropout);
  add_op(table, "native_dropout", "default", convert_native_dropout);
  add_op_and_inplace(table, "alpha_dropout", "default", random_dropout(false, true));
  add_op_and_inplace(table, "feature_dropout", "default", random_dropout(true, false));
  add_op_and_inplace(table, "feature_alpha_dropout", "default", random_dropout(true, true));
}

}  // namespace kiln::frontends
