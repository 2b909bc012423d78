// VJPs of the reductions and the scan. A reduction's gradient is the output gradient spread
// back over the reduced dims (reshaped to keep them, then expanded):
//   sum      g
//   mean     g / N
//   prod     g * (product of the other elements), exact where the slice holds zeros
//   amax     g / (number of maxima) at each maximum: PyTorch's even split among ties (amin alike)
//   var      g * 2 (x - mean) / (N - correction)
//   var_mean the var term plus g_mean / N
//   cumsum   the reversed cumulative sum of g: sum(g) - cumsum(g) + g
// N is the number of elements reduced; symbolic sizes give a 0-d count computed at run time.
#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

namespace {

// Which dims the `dim` argument at `index` reduces (every dim for None or []).
std::vector<bool> reduced_dims(const ir::OpCall& call, size_t index, int64_t rank) {
  std::vector<int64_t> dims;
  if (!call.is_none(index)) dims = call.arg(index).is_list() ? call.ints(index) : std::vector<int64_t>{call.int_arg(index)};
  std::vector<bool> reduced(size_t(rank), dims.empty());
  for (int64_t dim : dims)
    if (rank > 0) reduced[size_t(wrap_dim(dim, rank))] = true;
  return reduced;
}

std::vector<int64_t> dim_list(const std::vector<bool>& reduced) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < reduced.size(); ++i)
    if (reduced[i]) dims.push_back(int64_t(i));
  return dims;
}

SymShape reduced_sizes(const SymShape& shape, const std::vector<bool>& reduced) {
  SymShape sizes;
  for (size_t i = 0; i < shape.size(); ++i)
    if (reduced[i]) sizes.push_back(shape[i]);
  return sizes;
}

// `value` (a reduction's output, or its gradient) with the reduced dims kept as size 1.
Node* keep_dims(VjpEmitter& emit, Node* value, const SymShape& input_shape, const std::vector<bool>& reduced,
                bool keepdim) {
  if (keepdim) return value;
  SymShape kept = input_shape;
  for (size_t i = 0; i < kept.size(); ++i)
    if (reduced[i]) kept[i] = SymInt(1);
  if (shape_of(value) == kept) return value;
  return emit.call("reshape", {value, Argument::sym_ints(kept)}, {}, "keepdim");
}

// `value` spread over the input's shape.
Node* spread(VjpEmitter& emit, Node* value, const SymShape& input_shape, const std::vector<bool>& reduced,
             bool keepdim) {
  Node* kept = keep_dims(emit, value, input_shape, reduced, keepdim);
  if (shape_of(kept) == input_shape) return kept;
  return emit.call("expand", {kept, Argument::sym_ints(input_shape)}, {}, "spread");
}

struct Reduction {
  Node* x;
  std::vector<bool> reduced;
  bool keepdim;
};

Reduction reduction_of(VjpEmitter& emit, size_t dim_index, size_t keepdim_index) {
  Node* x = emit.input(0);
  return {x, reduced_dims(emit.call(), dim_index, rank_of(x)), emit.call().bool_arg(keepdim_index)};
}

std::vector<Gradient> sum_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Reduction r = reduction_of(emit, 1, 2);
  return {emit.gradient_of(0, spread(emit, emit.grad(), shape_of(r.x), r.reduced, r.keepdim))};
}

std::vector<Gradient> mean_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Reduction r = reduction_of(emit, 1, 2);
  Node* g = spread(emit, emit.grad(), shape_of(r.x), r.reduced, r.keepdim);
  Argument count = emit.count(reduced_sizes(shape_of(r.x), r.reduced), dtype_of(emit.grad()));
  return {emit.gradient_of(0, emit.call("div", {g, count}))};
}

std::vector<Gradient> prod_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Reduction r = reduction_of(emit, 1, 2);
  const SymShape& shape = shape_of(r.x);
  std::vector<int64_t> dims = dim_list(r.reduced);
  Node* x = emit.cast(r.x, dtype_of(emit.grad()));
  Node* g = spread(emit, emit.grad(), shape, r.reduced, r.keepdim);
  Node* product = spread(emit, emit.cast(emit.result(), dtype_of(g)), shape, r.reduced, r.keepdim);
  // No zero in the slice: product / x. One zero: the product of the others at the zero, 0
  // elsewhere. More zeros: 0 everywhere.
  Node* is_zero = emit.call("eq", {x, 0.0}, {}, "is_zero");
  Node* zeros = emit.call("sum", {is_zero, Argument::ints(dims), true}, {}, "zero_count");
  Node* nonzero = emit.call("where", {is_zero, 1.0, x}, {}, "nonzero");
  Node* others = spread(emit, emit.call("prod", {nonzero, Argument::ints(dims), true}, {}, "others"), shape, r.reduced,
                        true);
  Node* one_zero = emit.call("logical_and", {emit.call("eq", {zeros, 1}), is_zero}, {}, "the_zero");
  Node* with_zero = emit.mask(one_zero, others, "with_zero");
  Node* factor = emit.call("where", {emit.call("eq", {zeros, 0}), emit.call("div", {product, x}), with_zero});
  return {emit.gradient_of(0, emit.call("mul", {g, factor}))};
}

std::vector<Gradient> reduced_extremum_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Reduction r = reduction_of(emit, 1, 2);
  const SymShape& shape = shape_of(r.x);
  Node* is_extremum = emit.call("eq", {r.x, spread(emit, emit.result(), shape, r.reduced, r.keepdim)}, {}, "winners");
  Node* count = emit.call("sum", {is_extremum, Argument::ints(dim_list(r.reduced)), true}, {}, "ties");
  Node* share = emit.call("div", {keep_dims(emit, emit.grad(), shape, r.reduced, r.keepdim), count}, {}, "share");
  Node* g = emit.call("expand", {share, Argument::sym_ints(shape)});
  return {emit.gradient_of(0, emit.mask(is_extremum, g))};
}

// var and var_mean: (self, dim, *, correction, keepdim). `grads`: of the variance and of the
// mean (either may be null).
std::vector<Gradient> variance_vjp(VjpEmitter& emit, Node* var_grad, Node* mean_grad) {
  if (!emit.needs(0)) return {};
  Reduction r = reduction_of(emit, 1, 3);
  const SymShape& shape = shape_of(r.x);
  Node* total = nullptr;
  DType dtype = dtype_of(var_grad ? var_grad : mean_grad);
  Argument count = emit.count(reduced_sizes(shape, r.reduced), dtype);
  if (var_grad) {
    double correction = emit.call().float_arg(2);
    Node* mean = emit.call("mean", {r.x, Argument::ints(dim_list(r.reduced)), true});
    Node* centered = emit.call("sub", {r.x, mean}, {}, "centered");
    Argument dof = count.is_number() ? Argument(count.floating() - correction)
                                     : Argument(emit.call("sub", {count, correction}, {}, "dof"));
    Node* scale = emit.call("div", {spread(emit, var_grad, shape, r.reduced, r.keepdim), dof});
    total = emit.call("mul", {emit.call("mul", {scale, centered}), 2.0}, {}, "var_grad");
  }
  if (mean_grad) {
    Node* grad = emit.call("div", {spread(emit, mean_grad, shape, r.reduced, r.keepdim), count}, {}, "mean_grad");
    total = total ? emit.call("add", {total, grad}) : grad;
  }
  return {emit.gradient_of(0, total)};
}

std::vector<Gradient> cumsum_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* g = emit.grad();
  int64_t dim = rank_of(g) == 0 ? 0 : wrap_dim(emit.call().int_arg(1), rank_of(g));
  if (rank_of(g) == 0) return {emit.gradient_of(0, g)};
  Node* total = emit.call("sum", {g, Argument::ints({dim}), true});
  Node* before = emit.call("sub", {emit.call("cumsum", {g, dim}), g}, {}, "before");
  return {emit.gradient_of(0, emit.call("sub", {total, before}, {}, "after"))};
}

// cummax / cummin: each output position's gradient goes to the input element whose value it
// holds (the index output), summed where one element holds several: a scatter-add into zeros.
std::vector<Gradient> running_extreme_vjp(VjpEmitter& emit) {
  Node* g = emit.grad(0);
  if (!emit.needs(0) || g == nullptr) return {};
  Node* x = emit.input(0);
  if (rank_of(x) == 0) return {emit.gradient_of(0, g)};
  int64_t dim = wrap_dim(emit.call().int_arg(1), rank_of(x));
  Node* indices = emit.call("getitem", {emit.result(), int64_t(1)}, {}, "indices");
  Node* zeros = emit.full(shape_of(x), 0.0, dtype_of(g));
  return {emit.gradient_of(0, emit.call("scatter", {zeros, dim, indices, g}, {{"reduce", std::string("sum")}}, "spread"))};
}

}  // namespace

void register_reduction_derivatives(DerivativeTable& table) {
  table["sum"] = sum_vjp;
  table["mean"] = mean_vjp;
  table["prod"] = prod_vjp;
  table["amax"] = reduced_extremum_vjp;
  table["amin"] = reduced_extremum_vjp;
  table["var"] = [](VjpEmitter& emit) { return variance_vjp(emit, emit.grad(0), nullptr); };
  table["var_mean"] = [](VjpEmitter& emit) { return variance_vjp(emit, emit.grad(0), emit.grad(1)); };
  table["cumsum"] = cumsum_vjp;
  table["cummax"] = running_extreme_vjp;
  table["cummin"] = running_extreme_vjp;
}

}  // namespace kiln::passes::derivatives
