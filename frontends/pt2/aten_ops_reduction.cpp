// ATen reductions: sum, mean, prod, amax/amin, max/min with indices, argmax/argmin, var, std
// and var_mean/std_mean (Welford in Kiln), any/all, logsumexp, vector norms, the scans cumsum,
// cumprod, cummax, cummin and logcumsumexp, count_nonzero and aminmax. An empty dim list
// reduces every dim, as in PyTorch. The
// selections topk, sort, argsort, msort, kthvalue and median are Kiln's topk (stable: equal
// values keep their order; NaN above every number, as PyTorch sorts it) over a dim whose
// length is known at compile time.
#include <cmath>
#include <limits>

#include "frontends/pt2/aten_op_helpers.h"

namespace kiln::frontends {

namespace {

// The dims to reduce as a Kiln int[]? argument: None (all) for an absent, None or empty list.
ir::Argument reduced_dims(AtenNodeContext& c, const char* name = "dim") {
  std::optional<std::vector<int64_t>> dims = c.optional_ints(name);
  if (!dims || dims->empty()) return ir::Argument();
  return ir::Argument::ints(*dims);
}


// sum / mean / prod with optional dims, keepdim and dtype.
AtenConverter sum_like(std::string op) {
  return [op](AtenNodeContext& c) {
    ir::Kwargs kwargs;
    if (std::optional<DType> dtype = c.dtype_arg("dtype")) kwargs.emplace_back("dtype", *dtype);
    c.result(op, {c.tensor("self"), reduced_dims(c), c.bool_arg("keepdim", false)}, std::move(kwargs));
  };
}

void convert_prod_dim(AtenNodeContext& c) {
  ir::Kwargs kwargs;
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) kwargs.emplace_back("dtype", *dtype);
  c.result("prod", {c.tensor("self"), ir::Argument::ints({c.int_arg("dim")}), c.bool_arg("keepdim", false)}, std::move(kwargs));
}

AtenConverter extreme(std::string op) {
  return [op](AtenNodeContext& c) {
    std::vector<int64_t> dims = c.ints("dim", std::vector<int64_t>{});
    c.result(op, {c.tensor("self"), ir::Argument::ints(dims), c.bool_arg("keepdim", false)});
  };
}

// max.default / min.default: over every element.
AtenConverter extreme_all(std::string op) {
  return [op](AtenNodeContext& c) { c.result(op, {c.tensor("self"), ir::Argument::ints({}), false}); };
}

// max.dim / min.dim -> (values, indices)
AtenConverter extreme_with_index(bool is_max) {
  return [is_max](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    int64_t dim = c.int_arg("dim");
    bool keepdim = c.bool_arg("keepdim", false);
    c.emit(0, is_max ? "amax" : "amin", {x, ir::Argument::ints({dim}), keepdim});
    if (c.output_used(1)) c.emit(1, is_max ? "argmax" : "argmin", {x, dim, keepdim});
  };
}

AtenConverter arg_extreme(std::string op) {
  return [op](AtenNodeContext& c) {
    std::optional<int64_t> dim = c.optional_int("dim");
    c.result(op, {c.tensor("self"), dim ? ir::Argument(*dim) : ir::Argument(), c.bool_arg("keepdim", false)});
  };
}

// The correction of var/std: correction (var.correction), or unbiased (var.dim, var.default).
double correction_of(AtenNodeContext& c) {
  if (c.find("unbiased")) return c.bool_arg("unbiased", true) ? 1.0 : 0.0;
  return c.float_arg("correction", 1.0);
}

AtenConverter variance(bool root) {
  return [root](AtenNodeContext& c) {
    ir::Node* v = c.call("var", {c.tensor("self"), reduced_dims(c)},
                         {{"correction", correction_of(c)}, {"keepdim", c.bool_arg("keepdim", false)}});
    c.result_node(root ? c.call("sqrt", {v}) : v);
  };
}

AtenConverter variance_mean(bool root) {
  return [root](AtenNodeContext& c) {
    ir::Node* both = c.call("var_mean", {c.tensor("self"), reduced_dims(c)},
                            {{"correction", correction_of(c)}, {"keepdim", c.bool_arg("keepdim", false)}});
    ir::Node* v = c.call("getitem", {both, int64_t(0)});
    c.set_output(0, root ? c.call("sqrt", {v}) : v);
    c.set_output(1, c.call("getitem", {both, int64_t(1)}));
  };
}

// any / all: amax / amin of (x != 0) as bools.
AtenConverter any_all(bool is_any) {
  return [is_any](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    ir::Node* truth = dtype_of(x) == DType::boolean ? x : c.call("ne", {x, int64_t(0)});
    std::vector<int64_t> dims;
    if (std::optional<int64_t> dim = c.find("dim") && c.find("dim")->kind == "as_int" ? c.optional_int("dim") : std::nullopt)
      dims = {*dim};
    else if (std::optional<std::vector<int64_t>> list = c.optional_ints("dim"))
      dims = *list;
    if (rank_of(x) == 0) return void(c.result_node(c.call("clone", {truth})));
    c.result_node(c.call(is_any ? "amax" : "amin", {truth, ir::Argument::ints(dims), c.bool_arg("keepdim", false)}));
  };
}

void convert_logsumexp(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (!is_floating(dtype_of(x))) x = c.call("cast", {x, DType::f32});
  std::vector<int64_t> dims = c.ints("dim", std::vector<int64_t>{});
  bool keepdim = c.bool_arg("keepdim", false);
  if (rank_of(x) == 0) return void(c.result_node(c.call("clone", {x})));
  ir::Argument reduce = ir::Argument::ints(dims.empty() ? std::vector<int64_t>{} : dims);
  ir::Node* high = c.call("amax", {x, reduce, true});
  ir::Node* shift = c.call("where", {c.call("eq", {c.call("abs", {high}), std::numeric_limits<double>::infinity()}), 0.0, high});
  ir::Node* total = c.call("sum", {c.call("exp", {c.call("sub", {x, shift})}), dims.empty() ? ir::Argument() : reduce, keepdim});
  ir::Node* kept_shift = keepdim ? shift : c.call("squeeze", {shift, dims.empty() ? ir::Argument() : reduce});
  c.result_node(c.call("add", {c.call("log", {total}), kept_shift}));
}

}  // namespace

ir::Node* vector_norm(AtenNodeContext& c, ir::Node* x, double p, ir::Argument dims, bool keepdim) {
  if (!is_floating(dtype_of(x))) x = c.call("cast", {x, DType::f32});
  ir::Node* a = c.call("abs", {x});
  bool all = dims.is_none();
  ir::Argument extreme_dims = all ? ir::Argument::ints({}) : dims;
  if (std::isinf(p)) return c.call(p > 0 ? "amax" : "amin", {a, extreme_dims, keepdim});
  if (p == 0) return c.call("sum", {c.call("cast", {c.call("ne", {x, 0.0}), dtype_of(x)}), dims, keepdim});
  if (p == 1) return c.call("sum", {a, dims, keepdim});
  if (p == 2) return c.call("sqrt", {c.call("sum", {c.call("mul", {x, x}), dims, keepdim})});
  return c.call("pow", {c.call("sum", {c.call("pow", {a, p}), dims, keepdim}), 1.0 / p});
}

namespace {

void convert_linalg_vector_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) x = cast_to(c, x, *dtype);
  c.result_node(vector_norm(c, x, c.float_arg("ord", 2.0), reduced_dims(c), c.bool_arg("keepdim", false)));
}

// A matrix norm over dims (d0, d1) of x: 'fro' (the 2-norm of all), 1 / -1 (the largest /
// smallest column sum of |x|), inf / -inf (row sums). 2, -2 and 'nuc' need singular values,
// which Kiln does not compute.
ir::Node* matrix_norm(AtenNodeContext& c, ir::Node* x, const std::string& ord, std::vector<int64_t> dims, bool keepdim) {
  if (dims.size() != 2) c.fail("linalg.matrix_norm: dim must be a 2-tuple, got ", dims.size(), " dims");
  dims = wrap_dims(c, dims, rank_of(x));
  if (dims[0] == dims[1]) c.fail("linalg.matrix_norm: dims must be different, got (", dims[0], ", ", dims[1], ")");
  if (!is_floating(dtype_of(x))) x = c.call("cast", {x, DType::f32});
  if (ord == "fro") return c.call("sqrt", {c.call("sum", {c.call("mul", {x, x}), ir::Argument::ints(dims), keepdim})});
  bool columns = ord == "1" || ord == "-1";  // summed over rows (dims[0]), extreme over columns
  bool largest = ord == "1" || ord == "inf";
  if (!columns && ord != "inf" && ord != "-inf")
    c.fail("the matrix norm of order ", ord, " needs singular values, which Kiln does not compute (orders 'fro', 1, -1, inf, "
           "-inf are supported)");
  int64_t summed = columns ? dims[0] : dims[1], extreme = columns ? dims[1] : dims[0];
  ir::Node* sums = c.call("sum", {c.call("abs", {x}), ir::Argument::ints({summed}), true});
  ir::Node* result = c.call(largest ? "amax" : "amin", {sums, ir::Argument::ints({extreme}), true});
  return keepdim ? result : c.call("squeeze", {result, ir::Argument::ints(dims)});
}

// The text of a matrix norm order given as a number (1, -1, inf, -inf, 2, -2).
std::string order_text(double ord) {
  if (std::isinf(ord)) return ord > 0 ? "inf" : "-inf";
  return ord == std::floor(ord) ? std::to_string(int64_t(ord)) : std::to_string(ord);
}

// linalg_matrix_norm (.default: a number order; .str_ord: 'fro' or 'nuc').
void convert_linalg_matrix_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) x = cast_to(c, x, *dtype);
  std::string ord = c.find("ord") && c.find("ord")->kind == "as_string" ? c.string_arg("ord", "fro")
                    : c.given("ord")                                 ? order_text(c.float_arg("ord"))
                                                                     : "fro";
  c.result_node(matrix_norm(c, x, ord, c.ints("dim", std::vector<int64_t>{-2, -1}), c.bool_arg("keepdim", false)));
}

// linalg_norm(x, ord, dim): without ord, the 2-norm over dim (all of x when None); with ord and
// one dim (or a 1-d x) a vector norm, with two dims (or a 2-d x) a matrix norm.
void convert_linalg_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) x = cast_to(c, x, *dtype);
  bool keepdim = c.bool_arg("keepdim", false);
  std::optional<std::vector<int64_t>> dims = c.optional_ints("dim");
  bool string_order = c.find("ord") && c.find("ord")->kind == "as_string";
  if (!string_order && !c.given("ord")) {
    ir::Argument reduce = dims && !dims->empty() ? ir::Argument::ints(*dims) : ir::Argument();
    return void(c.result_node(vector_norm(c, x, 2.0, reduce, keepdim)));
  }
  std::vector<int64_t> over = dims ? *dims : std::vector<int64_t>{};
  if (over.empty()) {
    if (rank_of(x) != 1 && rank_of(x) != 2)
      c.fail("linalg.norm: if dim is not given, input must be 1-D or 2-D when ord is given, got ", x->value().type_string());
    for (int64_t d = 0; d < rank_of(x); ++d) over.push_back(d);
  }
  if (over.size() == 1 && !string_order)
    return void(c.result_node(vector_norm(c, x, c.float_arg("ord"), ir::Argument::ints(over), keepdim)));
  if (over.size() != 2) c.fail("linalg.norm: dim must be a 1- or 2-tuple, got ", over.size(), " dims");
  std::string ord = string_order ? c.string_arg("ord") : order_text(c.float_arg("ord"));
  c.result_node(matrix_norm(c, x, ord, over, keepdim));
}

void convert_norm(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) x = cast_to(c, x, *dtype);
  c.result_node(vector_norm(c, x, c.float_arg("p", 2.0), reduced_dims(c), c.bool_arg("keepdim", false)));
}

void convert_cumsum(AtenNodeContext& c) {
  ir::Kwargs kwargs;
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) kwargs.emplace_back("dtype", *dtype);
  c.result("cumsum", {c.tensor("self"), c.int_arg("dim")}, std::move(kwargs));
}

// Outputs 0 and 1 of `both`, a (values, indices) node; the indices only where they are read.
void set_values_and_indices(AtenNodeContext& c, ir::Node* both) {
  c.set_output(0, c.call("getitem", {both, int64_t(0)}));
  if (c.output_used(1)) c.set_output(1, c.call("getitem", {both, int64_t(1)}));
}

void convert_cumprod(AtenNodeContext& c) {
  ir::Kwargs kwargs;
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) kwargs.emplace_back("dtype", *dtype);
  c.result("cumprod", {c.tensor("self"), c.int_arg("dim")}, std::move(kwargs));
}

AtenConverter running_extreme(const char* op) {
  return [op](AtenNodeContext& c) {
    set_values_and_indices(c, c.call(op, {c.tensor("self"), c.int_arg("dim")}));
  };
}

void convert_count_nonzero(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* nonzero = c.call("ne", {x, int64_t(0)});
  ir::Argument dims = reduced_dims(c);
  if (dims.is_none() && c.find("dim") && c.find("dim")->kind == "as_int") dims = ir::Argument::ints({c.int_arg("dim")});
  c.result_node(c.call("sum", {nonzero, dims, false}));
}

void convert_aminmax(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::optional<int64_t> dim = c.optional_int("dim");
  ir::Argument dims = dim ? ir::Argument::ints({*dim}) : ir::Argument::ints({});
  bool keepdim = c.bool_arg("keepdim", false);
  c.emit(0, "amin", {x, dims, keepdim});
  c.emit(1, "amax", {x, dims, keepdim});
}

// nanmean: the sum of the non-NaN elements over their count (NaN where there are none).
void convert_nanmean(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) x = cast_to(c, x, *dtype);
  if (!is_floating(dtype_of(x))) c.fail("nanmean(): expected input to have floating point dtype but got ", x->value().type_string());
  ir::Node* nan = c.call("isnan", {x});
  ir::Argument dims = reduced_dims(c);
  bool keepdim = c.bool_arg("keepdim", false);
  ir::Node* total = c.call("sum", {c.call("where", {nan, 0.0, x}), dims, keepdim});
  ir::Node* count = c.call("sum", {c.call("cast", {c.call("logical_not", {nan}), dtype_of(x)}), dims, keepdim});
  c.result_node(c.call("div", {total, count}));
}

// sum_to_size(self, size): self summed (kept as size-1 dims) where `size` is 1 and over the
// leading dims it lacks.
void convert_sum_to_size(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  std::vector<ir::SymInt> size = c.sym_ints("size");
  int64_t rank = rank_of(x), lead = rank - int64_t(size.size());
  if (lead < 0) c.fail("size {", size.size(), " dims} is not expandable to size ", x->value().type_string());
  std::vector<int64_t> reduced;
  for (int64_t d = 0; d < rank; ++d) {
    const ir::SymInt& have = shape_of(x)[size_t(d)];
    if (d < lead) {
      reduced.push_back(d);
      continue;
    }
    const ir::SymInt& want = size[size_t(d - lead)];
    if (want == have) continue;
    if (want.maybe_constant() != std::optional<int64_t>(1))
      c.fail("size ", ir::shape_string(size), " is not expandable to ", x->value().type_string());
    reduced.push_back(d);
  }
  ir::Node* y = reduced.empty() ? c.call("clone", {x}) : c.call("sum", {x, ir::Argument::ints(reduced), true});
  if (lead > 0) y = c.call("reshape", {y, ir::Argument::sym_ints(size)});
  c.set_output(0, y);
}

void convert_nansum(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  if (is_floating(dtype_of(x))) x = c.call("where", {c.call("isnan", {x}), 0.0, x});
  ir::Kwargs kwargs;
  if (std::optional<DType> dtype = c.dtype_arg("dtype")) kwargs.emplace_back("dtype", *dtype);
  c.result_node(c.call("sum", {x, reduced_dims(c), c.bool_arg("keepdim", false)}, std::move(kwargs)));
}

// The length of x's dim `dim` (wrapped), which a selection needs at compile time.
int64_t selected_length(AtenNodeContext& c, ir::Node* x, int64_t dim) {
  if (rank_of(x) == 0) return 1;
  std::optional<int64_t> length = shape_of(x)[size_t(dim)].maybe_constant();
  if (!length)
    c.fail("selects along dim ", dim, " of ", x->value().type_string(),
           ", whose length is symbolic; Kiln's topk needs it at compile time (export with that dim static)");
  return *length;
}

// Kiln's topk of x: the node with both outputs (values, indices).
ir::Node* select_k(AtenNodeContext& c, ir::Node* x, int64_t k, int64_t dim, bool largest) {
  return c.call("topk", {x, k, dim, largest, true});
}

// The node's k, which must lie in [lowest, length of x's dim `dim`].
int64_t checked_k(AtenNodeContext& c, ir::Node* x, int64_t dim, int64_t lowest) {
  int64_t k = c.int_arg("k");
  int64_t length = selected_length(c, x, dim);
  if (k < lowest || k > length) c.fail("k = ", k, " is out of range for dim ", dim, " of length ", length);
  return k;
}

void convert_topk(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", -1), rank_of(x));
  int64_t k = checked_k(c, x, dim, 0);
  set_values_and_indices(c, select_k(c, x, k, dim, c.bool_arg("largest", true)));
}

// sort (default and stable) and argsort: every element selected, ascending unless descending.
// Kiln's topk keeps equal values in their order, which is what stable=True asks; PyTorch's
// unstable sort may order ties either way.
AtenConverter sort_like(bool values_too) {
  return [values_too](AtenNodeContext& c) {
    ir::Node* x = c.tensor("self");
    int64_t dim = wrap_dim(c, c.int_arg("dim", -1), rank_of(x));
    ir::Node* both = select_k(c, x, selected_length(c, x, dim), dim, c.bool_arg("descending", false));
    if (!values_too) return void(c.set_output(0, c.call("getitem", {both, int64_t(1)})));
    set_values_and_indices(c, both);
  };
}

void convert_msort(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  ir::Node* both = select_k(c, x, selected_length(c, x, 0), 0, false);
  c.set_output(0, c.call("getitem", {both, int64_t(0)}));
}

// The k-th smallest along dim (k from 1) and its index: the last of the k smallest.
void convert_kthvalue(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  int64_t dim = wrap_dim(c, c.int_arg("dim", -1), rank_of(x));
  int64_t k = checked_k(c, x, dim, 1);
  ir::Node* both = select_k(c, x, k, dim, false);
  bool keepdim = c.bool_arg("keepdim", false);
  for (int64_t i : {0, 1}) {
    if (i == 1 && !c.output_used(1)) break;
    ir::Node* picked = c.call("getitem", {both, i});  // a 0-d x's topk is 0-d
    if (rank_of(x) > 0) picked = c.call("slice", {picked, dim, k - 1, k});
    if (rank_of(x) > 0 && !keepdim) picked = c.call("squeeze", {picked, ir::Argument::ints({dim})});
    c.set_output(size_t(i), picked);
  }
}

// The lower median along dim (element (n - 1) / 2 of the sorted row) and its index; a row
// with a NaN gives NaN and the index of its first NaN, as PyTorch's median does. median.default
// takes the whole tensor flattened and returns the value alone.
void convert_median(AtenNodeContext& c) {
  ir::Node* x = c.tensor("self");
  bool whole = !c.find("dim");
  if (whole) x = c.call("reshape", {x, ir::Argument::ints({-1})});
  int64_t rank = rank_of(x);
  int64_t dim = whole ? 0 : wrap_dim(c, c.int_arg("dim"), rank);
  bool keepdim = !whole && c.bool_arg("keepdim", false);
  int64_t length = selected_length(c, x, dim);
  if (length == 0) c.fail("median of an empty dim (dim ", dim, " of ", x->value().type_string(), ") is undefined");
  int64_t k = (length - 1) / 2 + 1;
  ir::Node* both = select_k(c, x, k, dim, false);
  auto pick = [&](ir::Node* selected) {  // a 0-d x's topk is 0-d
    if (rank == 0) return selected;
    ir::Node* picked = c.call("slice", {selected, dim, k - 1, k});
    return keepdim ? picked : c.call("squeeze", {picked, ir::Argument::ints({dim})});
  };
  ir::Node* value = pick(c.call("getitem", {both, int64_t(0)}));
  ir::Node* index = c.output_used(1) ? pick(c.call("getitem", {both, int64_t(1)})) : nullptr;
  if (is_floating(dtype_of(x)) && rank > 0) {
    ir::Node* nan = c.call("isnan", {x});
    ir::Node* any_nan = c.call("amax", {nan, ir::Argument::ints({dim}), keepdim});
    value = c.call("where", {any_nan, std::numeric_limits<double>::quiet_NaN(), value});
    if (index) index = c.call("where", {any_nan, c.call("argmax", {nan, dim, keepdim}), index});
  }
  if (whole) value = c.call("reshape", {value, ir::Argument::ints({})});
  c.set_output(0, value);
  if (index) c.set_output(1, index);
}

}  // namespace

void register_aten_reduction_ops(AtenOpTable& table) {
  add_op(table, "sum", "default", sum_like("sum"));
  add_op(table, "sum", "dim_IntList", sum_like("sum"));
  add_op(table, "mean", "default", sum_like("mean"));
  add_op(table, "mean", "dim", sum_like("mean"));
  add_op(table, "prod", "default", sum_like("prod"));
  add_op(table, "prod", "dim_int", convert_prod_dim);
  add_op(table, "nansum", "default", convert_nansum);
  add_op(table, "nanmean", "default", convert_nanmean);
  add_op(table, "sum_to_size", "default", convert_sum_to_size);
  add_op(table, "amax", "default", extreme("amax"));
  add_op(table, "amin", "default", extreme("amin"));
  add_op(table, "max", "default", extreme_all("amax"));
  add_op(table, "min", "default", extreme_all("amin"));
  add_op(table, "max", "dim", extreme_with_index(true));
  add_op(table, "min", "dim", extreme_with_index(false));
  add_op(table, "argmax", "default", arg_extreme("argmax"));
  add_op(table, "argmin", "default", arg_extreme("argmin"));
  add_op(table, "aminmax", "default", convert_aminmax);
  for (const char* overload : {"correction", "dim", "default"}) {
    add_op(table, "var", overload, variance(false));
    add_op(table, "std", overload, variance(true));
  }
  for (const char* overload : {"correction", "dim", "default"}) {
    add_op(table, "var_mean", overload, variance_mean(false));
    add_op(table, "std_mean", overload, variance_mean(true));
  }
  for (const char* overload : {"default", "dim", "dims"}) {
    add_op(table, "any", overload, any_all(true));
    add_op(table, "all", overload, any_all(false));
  }
  add_op(table, "logsumexp", "default", convert_logsumexp);
  add_op(table, "linalg_vector_norm", "default", convert_linalg_vector_norm);
  add_op(table, "norm", "ScalarOpt_dim", convert_norm);
  add_op(table, "norm", "Scalar", convert_norm);
  add_op(table, "linalg_norm", "default", convert_linalg_norm);
  add_op(table, "linalg_norm", "ord_str", convert_linalg_norm);
  add_op(table, "linalg_matrix_norm", "default", convert_linalg_matrix_norm);
  add_op(table, "linalg_matrix_norm", "str_ord", convert_linalg_matrix_norm);
  add_op(table, "norm", "ScalarOpt_dim_dtype", convert_norm);
  add_op_and_inplace(table, "cumsum", "default", convert_cumsum);
  add_op_and_inplace(table, "cumprod", "default", convert_cumprod);
  add_op(table, "cummax", "default", running_extreme("cummax"));
  add_op(table, "cummin", "default", running_extreme("cummin"));
  add_op(table, "logcumsumexp", "default", [](AtenNodeContext& c) {
    c.set_output(0, c.call("logcumsumexp", {c.tensor("self"), c.int_arg("dim")}));
  });
  add_op(table, "count_nonzero", "dim_IntList", convert_count_nonzero);
  add_op(table, "count_nonzero", "default", convert_count_nonzero);
  add_op(table, "topk", "default", convert_topk);
  add_op(table, "sort", "default", sort_like(true));
  add_op(table, "sort", "stable", sort_like(true));
  add_op(table, "argsort", "default", sort_like(false));
  add_op(table, "argsort", "stable", sort_like(false));
  add_op(table, "msort", "default", convert_msort);
  add_op(table, "kthvalue", "default", convert_kthvalue);
  add_op(table, "median", "dim", convert_median);
  add_op(table, "median", "default", convert_median);
}

}  // namespace kiln::frontends
