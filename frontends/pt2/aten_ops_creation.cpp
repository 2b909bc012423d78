// ATen ops that create tensors: zeros / ones / full / empty / empty_permuted (empty memory is
// zero-filled, so results are deterministic) and their _like and new_ forms, arange,
// scalar_tensor, linspace, eye, and the random creations rand / randn and bernoulli (Kiln's
// Philox generator, a seed per random node: the values differ from PyTorch's).
#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

// The dtype argument, else `fallback`.
DType dtype_or(AtenNodeContext& c, DType fallback) { return c.dtype_arg("dtype").value_or(fallback); }

ir::Node* full_of(AtenNodeContext& c, const std::vector<SymInt>& size, ir::Argument value, DType dtype) {
  if (value.is_node()) {  // a symbolic fill value: broadcast the 0-d tensor
    ir::Node* scalar = cast_to(c, value.node(), dtype);
    return c.call("clone", {c.call("expand", {scalar, ir::Argument::sym_ints(size)})});
  }
  return c.call("full", {ir::Argument::sym_ints(size), value}, {{"dtype", dtype}});
}

AtenConverter constant_fill(double value) {
  return [value](AtenNodeContext& c) {
    c.require_cpu("device");
    c.set_output(0, full_of(c, c.sym_ints("size"), value, dtype_or(c, DType::f32)));
  };
}

// The dtype torch.full infers from its value: bool, int64, or the default float.
DType value_dtype(const ir::Argument& value) {
  if (value.is_bool()) return DType::boolean;
  if (value.is_int()) return DType::i64;
  if (value.is_node()) return dtype_of(value.node());
  return DType::f32;
}

void convert_full(AtenNodeContext& c) {
  c.require_cpu("device");
  ir::Argument value = c.scalar("fill_value");
  c.set_output(0, full_of(c, c.sym_ints("size"), value, dtype_or(c, value_dtype(value))));
}

AtenConverter like(std::optional<double> value) {
  return [value](AtenNodeContext& c) {
    c.require_cpu("device");
    ir::Node* self = c.tensor("self");
    ir::Argument fill = value ? ir::Argument(*value) : c.scalar("fill_value");
    DType dtype = dtype_or(c, dtype_of(self));
    c.set_output(0, full_of(c, shape_of(self), fill, dtype));
  };
}

AtenConverter random_like(std::string op) {
  return [op](AtenNodeContext& c) {
    ir::Node* self = c.tensor("self");
    c.emit(0, op, {ir::Argument::sym_ints(shape_of(self))}, {{"dtype", dtype_or(c, dtype_of(self))}, {"seed", next_random_seed(c)}});
  };
}

// bernoulli(self): 1 where a uniform draw is below the probability self[i], else 0;
// bernoulli.p(self, p): the same with one probability, in self's shape and dtype.
void convert_bernoulli(AtenNodeContext& c) {
  ir::Node* self = c.tensor("self");
  if (!is_floating(dtype_of(self))) c.fail("bernoulli expects a floating-point self, but got ", dtype_name(dtype_of(self)));
  ir::Argument probability = self;
  if (c.find("p")) {
    double p = c.float_arg("p");
    if (!(p >= 0 && p <= 1)) c.fail("bernoulli expects p to be in [0, 1], but got p=", p);
    probability = p;
  }
  ir::Node* uniform =
      c.call("rand", {ir::Argument::sym_ints(shape_of(self))}, {{"dtype", dtype_of(self)}, {"seed", next_random_seed(c)}});
  c.set_output(0, c.call("cast", {c.call("lt", {uniform, probability}), dtype_of(self)}));
}

AtenConverter new_filled(std::optional<double> value) {
  return [value](AtenNodeContext& c) {
    c.require_cpu("device");
    ir::Node* self = c.tensor("self");
    ir::Argument fill = value ? ir::Argument(*value) : c.scalar("fill_value");
    c.set_output(0, full_of(c, c.sym_ints("size"), fill, dtype_or(c, dtype_of(self))));
  };
}

AtenConverter random(std::string op) {
  return [op](AtenNodeContext& c) {
    c.require_cpu("device");
    c.emit(0, op, {ir::Argument::sym_ints(c.sym_ints("size"))}, {{"dtype", dtype_or(c, DType::f32)}, {"seed", next_random_seed(c)}});
  };
}

// arange(start, end, step): a symbolic end (arange(x.shape[0])) becomes iota.
void convert_arange(AtenNodeContext& c) {
  c.require_cpu("device");
  ir::Argument start = c.find("start") ? c.scalar("start") : ir::Argument(int64_t(0));
  ir::Argument end = c.scalar("end");
  ir::Argument step = c.find("step") ? c.scalar("step") : ir::Argument(int64_t(1));
  std::optional<DType> dtype = c.dtype_arg("dtype");
  if (start.is_node() || end.is_node() || step.is_node()) {
    // Symbolic bounds: iota over the length, scaled and shifted.
    std::optional<SymInt> s = c.optional_sym_int("start"), e = c.optional_sym_int("end"), st = c.optional_sym_int("step");
    SymInt first = s.value_or(SymInt(0)), last = e.value_or(SymInt(0)), stride = st.value_or(SymInt(1));
    if (!stride.is_constant() || stride.constant() <= 0) c.fail("arange with a symbolic bound needs a positive constant step");
    SymInt length = floordiv(last - first + stride - SymInt(1), stride);
    ir::Node* positions = c.call("iota", {length}, {{"start", int64_t(0)}, {"step", stride.constant()}});
    if (!first.is_constant() || first.constant() != 0) positions = c.call("add", {positions, c.sym_int_tensor(first)});
    c.set_output(0, dtype ? cast_to(c, positions, *dtype) : positions);
    return;
  }
  c.emit(0, "arange", {start, end, step}, {{"dtype", dtype ? ir::Argument(*dtype) : ir::Argument()}});
}

void convert_scalar_tensor(AtenNodeContext& c) {
  c.require_cpu("device");
  c.set_output(0, full_of(c, {}, c.scalar("s"), dtype_or(c, DType::f32)));
}

// linspace: PyTorch's symmetric formula (from the start for the first half, from the end for
// the second) so that both ends are exact.
void convert_linspace(AtenNodeContext& c) {
  c.require_cpu("device");
  double start = c.float_arg("start"), end = c.float_arg("end");
  int64_t steps = c.int_arg("steps");
  if (steps < 0) c.fail("number of steps must be non-negative");
  DType dtype = dtype_or(c, DType::f32);
  DType compute = is_floating(dtype) ? dtype : DType::f64;
  if (steps <= 1) return void(c.set_output(0, full_of(c, {SymInt(steps)}, start, dtype)));
  double step = (end - start) / double(steps - 1);
  ir::Node* i = c.call("cast", {c.call("iota", {SymInt(steps)}), compute});
  ir::Node* from_start = c.call("add", {c.call("mul", {i, step}), start});
  ir::Node* from_end = c.call("sub", {end, c.call("mul", {c.call("sub", {double(steps - 1), i}), step})});
  ir::Node* values = c.call("where", {c.call("lt", {i, double(steps / 2)}), from_start, from_end});
  c.set_output(0, cast_to(c, values, dtype));
}

void convert_eye(AtenNodeContext& c) {
  c.require_cpu("device");
  SymInt n = c.sym_int("n");
  SymInt m = c.given("m") ? c.sym_int("m") : n;
  ir::Node* rows = c.call("unsqueeze", {c.call("iota", {n}), int64_t(1)});
  ir::Node* columns = c.call("unsqueeze", {c.call("iota", {m}), int64_t(0)});
  c.emit(0, "cast", {c.call("eq", {rows, columns}), dtype_or(c, DType::f32)});
}

}  // namespace

void register_aten_creation_ops(AtenOpTable& table) {
  add_op(table, "zeros", "default", constant_fill(0.0));
  add_op(table, "ones", "default", constant_fill(1.0));
  add_op(table, "empty", "memory_format", constant_fill(0.0));
  add_op(table, "empty", "default", constant_fill(0.0));
  add_op(table, "empty_strided", "default", constant_fill(0.0));
  add_op(table, "empty_permuted", "default", constant_fill(0.0));  // the layout only orders memory
  add_op(table, "full", "default", convert_full);
  add_op(table, "zeros_like", "default", like(0.0));
  add_op(table, "ones_like", "default", like(1.0));
  add_op(table, "empty_like", "default", like(0.0));
  add_op(table, "full_like", "default", like(std::nullopt));
  add_op(table, "rand_like", "default", random_like("rand"));
  add_op(table, "randn_like", "default", random_like("randn"));
  add_op(table, "bernoulli", "default", convert_bernoulli);
  add_op(table, "bernoulli", "p", convert_bernoulli);
  add_op(table, "new_zeros", "default", new_filled(0.0));
  add_op(table, "new_ones", "default", new_filled(1.0));
  add_op(table, "new_empty", "default", new_filled(0.0));
  add_op(table, "new_empty_strided", "default", new_filled(0.0));
  add_op(table, "new_full", "default", new_filled(std::nullopt));
  add_op(table, "rand", "default", random("rand"));
  add_op(table, "randn", "default", random("randn"));
  add_op(table, "arange", "default", convert_arange);
  add_op(table, "arange", "start", convert_arange);
  add_op(table, "arange", "start_step", convert_arange);
  add_op(table, "scalar_tensor", "default", convert_scalar_tensor);
  add_op(table, "linspace", "default", convert_linspace);
  add_op(table, "eye", "default", convert_eye);
  add_op(table, "eye", "m", convert_eye);
}

}  // namespace kiln::frontends
