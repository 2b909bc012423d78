// ATen normalizations onto Kiln's composite ops: batch_norm and its native / legit variants
// (training mode with running statistics updates the running_mean / running_var buffers in
// place: copy_ into them, which functionalization turns into copy-back outputs; the
// functional variant returns the new statistics instead), layer_norm / native_layer_norm
// (with mean and rstd outputs), group_norm / native_group_norm, instance_norm, rms_norm; the
// weight normalization of nn.utils.weight_norm, _weight_norm (v g / |v|, the norm over every
// dim but `dim`).
#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

using ir::SymInt;

ir::Argument optional(ir::Node* node) { return node ? ir::Argument(node) : ir::Argument(); }

// The dims of a batch norm's statistics: every dim but 1.
std::vector<int64_t> statistic_dims(int64_t rank) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

// The batch statistics of x: (mean, biased variance), over every dim but 1, as [C].
std::pair<ir::Node*, ir::Node*> batch_statistics(AtenNodeContext& c, ir::Node* x) {
  ir::Node* both = c.call("var_mean", {x, ir::Argument::ints(statistic_dims(rank_of(x)))}, {{"correction", 0.0}});
  return {c.call("getitem", {both, int64_t(1)}), c.call("getitem", {both, int64_t(0)})};
}

// The running statistics after a training step: (1 - momentum) * running + momentum * batch,
// with the unbiased batch variance (n / (n - 1) times the biased one).
std::pair<ir::Node*, ir::Node*> updated_statistics(AtenNodeContext& c, ir::Node* x, ir::Node* running_mean,
                                                   ir::Node* running_var, ir::Node* mean, ir::Node* variance,
                                                   double momentum) {
  SymInt count = 1;
  const ir::SymShape& shape = shape_of(x);
  for (size_t d = 0; d < shape.size(); ++d)
    if (d != 1) count = count * shape[d];
  ir::Node* unbiased;
  if (count.is_constant()) {
    double n = double(count.constant());
    unbiased = c.call("mul", {variance, n / (n - 1.0)});
  } else {
    ir::Node* n = c.call("cast", {c.sym_int_tensor(count), DType::f32});
    unbiased = c.call("div", {c.call("mul", {variance, n}), c.call("sub", {n, 1.0})});
  }
  auto blend = [&](ir::Node* running, ir::Node* batch) {
    ir::Node* kept = c.call("mul", {running, 1.0 - momentum});
    ir::Node* added = c.call("mul", {batch, momentum});
    return cast_to(c, c.call("add", {kept, added}), dtype_of(running));
  };
  return {blend(running_mean, mean), blend(running_var, unbiased)};
}

// 1 / sqrt(variance + eps)
ir::Node* inverse_std(AtenNodeContext& c, ir::Node* variance, double eps) {
  return c.call("rsqrt", {c.call("add", {variance, eps})});
}

// Whether x has a static 0 among its sizes.
bool numel_is_zero(ir::Node* x) {
  for (const SymInt& size : shape_of(x))
    if (size.is_constant() && size.constant() == 0) return true;
  return false;
}

ir::Node* empty_statistic(AtenNodeContext& c, ir::Node* x) {
  return c.call("full", {ir::Argument::ints({0}), 0.0}, {{"dtype", dtype_of(x)}});
}

// Normalizes x; in training mode also writes the updated running statistics into their
// buffers (in_place) or returns them (outputs 3 and 4). Sets outputs 1 and 2 (saved mean
// and inverse std) when `native`.
void batch_norm(AtenNodeContext& c, bool training, bool native, bool in_place, bool has_running) {
  ir::Node* x = c.tensor("input");
  ir::Node* weight = c.optional_tensor("weight");
  ir::Node* bias = c.optional_tensor("bias");
  ir::Node* running_mean = has_running ? c.optional_tensor("running_mean") : nullptr;
  ir::Node* running_var = has_running ? c.optional_tensor("running_var") : nullptr;
  double momentum = c.float_arg("momentum", 0.1);
  double eps = c.float_arg("eps", 1e-5);
  if (!native && numel_is_zero(x)) {
    // aten.batch_norm of an empty input: a copy of it (PyTorch's _batch_norm_impl_index returns
    // input.clone() before checking the rank; the running statistics stay as they are).
    return void(c.set_output(0, c.call("clone", {x})));
  }
  ir::Node* out = c.call("batch_norm", {x, optional(weight), optional(bias), optional(running_mean), optional(running_var),
                                        training, momentum, eps});
  c.set_output(0, out);
  bool wants_statistics = native && (c.output_used(1) || c.output_used(2));
  bool updates = training && running_mean && running_var;
  if (!(wants_statistics || updates || (native && c.output_count() > 3))) return;
  if (!training) {
    if (c.output_used(1)) c.set_output(1, empty_statistic(c, x));
    if (c.output_used(2)) c.set_output(2, empty_statistic(c, x));
    if (c.output_count() > 3) {
      c.set_output(3, running_mean);
      c.set_output(4, running_var);
    }
    return;
  }
  auto [mean, variance] = batch_statistics(c, x);
  if (c.output_used(1)) c.set_output(1, mean);
  if (c.output_used(2)) c.set_output(2, inverse_std(c, variance, eps));
  if (!updates) return;
  auto [new_mean, new_var] = updated_statistics(c, x, running_mean, running_var, mean, variance, momentum);
  if (in_place) {
    c.call("copy_", {running_mean, new_mean});
    c.call("copy_", {running_var, new_var});
  } else {
    c.set_output(3, new_mean);
    c.set_output(4, new_var);
  }
}

void convert_batch_norm(AtenNodeContext& c) { batch_norm(c, c.bool_arg("training", false), false, true, true); }
void convert_native_batch_norm(AtenNodeContext& c) { batch_norm(c, c.bool_arg("training"), true, true, true); }
void convert_legit_no_training(AtenNodeContext& c) { batch_norm(c, false, true, true, true); }
void convert_legit_no_stats(AtenNodeContext& c) { batch_norm(c, c.bool_arg("training"), true, true, false); }
void convert_legit_functional(AtenNodeContext& c) { batch_norm(c, c.bool_arg("training"), true, false, true); }

void convert_layer_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("input");
  std::vector<SymInt> shape = c.sym_ints("normalized_shape");
  c.emit(0, "layer_norm", {x, ir::Argument::sym_ints(shape), optional(c.optional_tensor("weight")),
                           optional(c.optional_tensor("bias")), c.float_arg("eps", 1e-5)});
}

// native_layer_norm -> (out, mean, rstd), the statistics with the normalized dims kept as 1.
void convert_native_layer_norm(AtenNodeContext& c) {
  convert_layer_norm(c);
  if (!c.output_used(1) && !c.output_used(2)) return;
  ir::Node* x = c.tensor("input");
  size_t count = c.sym_ints("normalized_shape").size();
  std::vector<int64_t> dims;
  for (int64_t d = rank_of(x) - int64_t(count); d < rank_of(x); ++d) dims.push_back(d);
  ir::Node* both = c.call("var_mean", {x, ir::Argument::ints(dims)}, {{"correction", 0.0}, {"keepdim", true}});
  if (c.output_used(1)) c.set_output(1, c.call("getitem", {both, int64_t(1)}));
  if (c.output_used(2)) c.set_output(2, inverse_std(c, c.call("getitem", {both, int64_t(0)}), c.float_arg("eps")));
}

void convert_group_norm(AtenNodeContext& c) {
  c.emit(0, "group_norm", {c.tensor("input"), c.int_arg("num_groups"), optional(c.optional_tensor("weight")),
                           optional(c.optional_tensor("bias")), c.float_arg("eps", 1e-5)});
}

// native_group_norm(input, weight, bias, N, C, HxW, group, eps) -> (out, mean [N, G], rstd [N, G])
void convert_native_group_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("input");
  int64_t groups = c.int_arg("group");
  double eps = c.float_arg("eps");
  c.emit(0, "group_norm", {x, groups, optional(c.optional_tensor("weight")), optional(c.optional_tensor("bias")), eps});
  if (!c.output_used(1) && !c.output_used(2)) return;
  // [N, G, C / G * HxW] from the op's own sizes (a -1 cannot be resolved for 0 elements).
  std::optional<int64_t> channels = c.sym_int("C").maybe_constant();
  if (groups <= 0 || (channels && *channels % groups != 0))
    c.fail("native_group_norm: C (", c.sym_int("C").to_string(), ") is not a multiple of group (", groups, ")");
  SymInt per_group = channels ? SymInt(*channels / groups) * c.sym_int("HxW") : SymInt(-1);
  ir::Node* grouped = c.call("reshape", {x, ir::Argument::sym_ints({c.sym_int("N"), SymInt(groups), per_group})});
  ir::Node* both = c.call("var_mean", {grouped, ir::Argument::ints({2})}, {{"correction", 0.0}});
  if (c.output_used(1)) c.set_output(1, c.call("getitem", {both, int64_t(1)}));
  if (c.output_used(2)) c.set_output(2, inverse_std(c, c.call("getitem", {both, int64_t(0)}), eps));
}

void convert_instance_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("input");
  ir::Node* weight = c.optional_tensor("weight");
  ir::Node* bias = c.optional_tensor("bias");
  double eps = c.float_arg("eps", 1e-5);
  if (!c.bool_arg("use_input_stats", true)) {
    c.emit(0, "batch_norm", {x, optional(weight), optional(bias), optional(c.optional_tensor("running_mean")),
                             optional(c.optional_tensor("running_var")), false, c.float_arg("momentum", 0.1), eps});
    return;
  }
  std::optional<int64_t> channels = shape_of(x)[1].maybe_constant();
  if (!channels) c.fail("instance_norm needs a static channel dim");
  c.emit(0, "group_norm", {x, *channels, optional(weight), optional(bias), eps});
}

void convert_rms_norm(AtenNodeContext& c) {
  std::optional<double> eps = c.optional_float("eps");
  c.emit(0, "rms_norm", {c.tensor("input"), ir::Argument::sym_ints(c.sym_ints("normalized_shape")),
                         optional(c.optional_tensor("weight")), eps ? ir::Argument(*eps) : ir::Argument()});
}

// v * (g / norm_except_dim(v, dim)): the 2-norm of v over every dim but `dim` (over all of v
// for dim -1), kept as size-1 dims.
void convert_weight_norm(AtenNodeContext& c) {
  ir::Node* v = c.tensor("v");
  ir::Node* g = c.tensor("g");
  int64_t rank = rank_of(v);
  int64_t dim = c.int_arg("dim", 0);
  std::vector<int64_t> reduced;
  if (dim != -1) dim = wrap_dim(c, dim, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim) reduced.push_back(d);
  ir::Node* norm = reduced.empty() ? c.call("abs", {v})
                                   : c.call("sqrt", {c.call("sum", {c.call("mul", {v, v}), ir::Argument::ints(reduced), true})});
  if (dim == -1) norm = c.call("reshape", {norm, ir::Argument::ints({})});
  c.set_output(0, c.call("mul", {v, c.call("div", {g, norm})}));
}

}  // namespace

void register_aten_normalization_ops(AtenOpTable& table) {
  add_op(table, "batch_norm", "default", convert_batch_norm);
  add_op(table, "native_batch_norm", "default", convert_native_batch_norm);
  add_op(table, "_native_batch_norm_legit_no_training", "default", convert_legit_no_training);
  add_op(table, "_native_batch_norm_legit", "default", convert_native_batch_norm);
  add_op(table, "_native_batch_norm_legit", "no_stats", convert_legit_no_stats);
  add_op(table, "_native_batch_norm_legit_functional", "default", convert_legit_functional);
  add_op(table, "layer_norm", "default", convert_layer_norm);
  add_op(table, "native_layer_norm", "default", convert_native_layer_norm);
  add_op(table, "group_norm", "default", convert_group_norm);
  add_op(table, "native_group_norm", "default", convert_native_group_norm);
  add_op(table, "instance_norm", "default", convert_instance_norm);
  add_op(table, "rms_norm", "default", convert_rms_norm);
  add_op(table, "_weight_norm", "default", convert_weight_norm);
}

}  // namespace kiln::frontends
