// VJPs of the copying ops:
//   cat           each input's slice of the gradient
//   pad           constant mode: the gradient cropped by the negated pads (reflect, replicate
//                 and circular fold several positions into one and have no derivative here)
//   gather        scatter-add of the gradient into zeros of self's shape
//   index_select  scatter-add of the gradient along dim, at the index broadcast to its shape
//   scatter       self: the gradient with the written positions zeroed (kept for 'sum');
//                 src: the gradient gathered at index; reduce 'prod'/'amax'/'amin' have none
//   index_put     self: the gradient with the written positions zeroed (kept when
//                 accumulating); values: the gradient read at the indices, for integer indices
//                 on the leading dims of self
#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

namespace {

std::vector<Gradient> cat_vjp(VjpEmitter& emit) {
  const std::vector<Argument>& tensors = emit.call().arg(0).list();
  int64_t rank = rank_of(emit.result());
  int64_t dim = wrap_dim(emit.call().int_arg(1), rank);
  std::vector<Gradient> grads;
  SymInt offset(0);
  for (const Argument& tensor : tensors) {
    Node* input = tensor.node();
    if (rank_of(input) != rank) continue;  // a legacy empty 1-d input takes no part
    SymInt end = offset + shape_of(input)[size_t(dim)];
    if (emit.needs_node(input)) {
      Node* part = emit.call("slice", {emit.grad(), dim, offset, end}, {}, "part");
      grads.push_back({input, emit.to_input(part, input)});
    }
    offset = end;
  }
  return grads;
}

std::vector<Gradient> pad_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  const std::string& mode = emit.call().string_arg(2);
  if (mode != "constant") emit.fail("pad mode \"", mode, "\" has no derivative (only \"constant\" has one)");
  std::vector<SymInt> crop;
  for (const SymInt& amount : emit.call().syms(1)) crop.push_back(-amount);
  return {emit.gradient_of(0, emit.call("pad", {emit.grad(), Argument::sym_ints(crop)}))};
}

// Scatter-add of `grad` into zeros shaped like `like`, along `dim` at `index`.
Node* scatter_add(VjpEmitter& emit, Node* like, int64_t dim, Node* index, Node* grad) {
  Node* zeros = emit.full(shape_of(like), 0.0, dtype_of(grad));
  return emit.call("scatter", {zeros, dim, index, grad}, {{"reduce", "sum"}});
}

std::vector<Gradient> gather_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* self = emit.input(0);
  int64_t dim = wrap_dim(emit.call().int_arg(1), rank_of(self));
  return {emit.gradient_of(0, scatter_add(emit, self, dim, emit.input(2), emit.grad()))};
}

std::vector<Gradient> index_select_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* self = emit.input(0);
  Node* g = emit.grad();
  int64_t rank = rank_of(self);
  int64_t dim = wrap_dim(emit.call().int_arg(1), rank);
  Node* index = emit.input(2);
  if (rank > 0) {
    SymShape along(size_t(rank), SymInt(1));
    along[size_t(dim)] = shape_of(g)[size_t(dim)];
    index = emit.call("reshape", {index, Argument::sym_ints(along)}, {}, "index");
    index = emit.call("expand", {index, Argument::sym_ints(shape_of(g))}, {}, "index");
  } else {
    index = emit.call("reshape", {index, Argument::ints({})}, {}, "index");
  }
  return {emit.gradient_of(0, scatter_add(emit, self, dim, index, g))};
}

// `grad` (shaped like index) as the gradient of src, which may be larger than index in any dim.
Node* grow_to(VjpEmitter& emit, Node* grad, const SymShape& shape) {
  const SymShape& from = shape_of(grad);
  if (from == shape) return grad;
  std::vector<SymInt> pads;
  for (size_t i = from.size(); i-- > 0;) {
    pads.push_back(SymInt(0));
    pads.push_back(shape[i] - from[i]);
  }
  return emit.call("pad", {grad, Argument::sym_ints(pads)}, {}, "grow");
}

std::vector<Gradient> scatter_vjp(VjpEmitter& emit) {
  const ir::OpCall& call = emit.call();
  bool sums = !call.is_none(4) && call.string_arg(4) == "sum";
  if (!call.is_none(4) && !sums)
    emit.fail("scatter with reduce='", call.string_arg(4), "' has no derivative (only None and 'sum' have one)");
  Node* self = emit.input(0);
  int64_t dim = wrap_dim(call.int_arg(1), rank_of(self));
  Node* index = emit.input(2);
  std::vector<Gradient> grads;
  if (emit.needs(0)) {
    Node* g = sums ? emit.grad() : emit.call("scatter", {emit.grad(), dim, index, 0.0}, {}, "overwritten");
    grads.push_back(emit.gradient_of(0, g));
  }
  if (emit.needs(3)) {
    Node* src = emit.input(3);
    Node* picked = emit.call("gather", {emit.grad(), dim, index});
    grads.push_back({src, emit.cast(grow_to(emit, picked, shape_of(src)), dtype_of(src))});
  }
  return grads;
}

// index_put's indices as (leading) integer index tensors; nullptr entries are None.
std::vector<Node*> index_tensors(const VjpEmitter& emit) {
  std::vector<Node*> indices;
  for (const Argument& index : emit.call().arg(1).list()) indices.push_back(index.is_node() ? index.node() : nullptr);
  return indices;
}

// grad[indices] for integer indices on the leading dims: the dims they cover flattened into
// one, read by index_select at the linear position.
Node* read_at_indices(VjpEmitter& emit, const std::vector<Node*>& indices, Node* self) {
  const SymShape& shape = shape_of(self);
  size_t covered = indices.size();
  SymShape index_shape;
  Node* linear = nullptr;
  SymInt flat(1);
  for (size_t k = covered; k-- > 0;) {
    Node* index = indices[k];
    // Negative indices count from the end.
    Node* wrapped = emit.call("where", {emit.call("lt", {index, 0}), emit.call("add", {index, shape[k]}), index},
                              {}, "index");
    Node* term = flat == SymInt(1) ? wrapped : emit.call("mul", {wrapped, flat}, {}, "index");
    linear = linear ? emit.call("add", {linear, term}, {}, "linear_index") : term;
    flat *= shape[k];
  }
  SymShape rest(shape.begin() + long(covered), shape.end());
  SymShape flat_shape{flat};
  flat_shape.insert(flat_shape.end(), rest.begin(), rest.end());
  Node* flat_grad = emit.call("reshape", {emit.grad(), Argument::sym_ints(flat_shape)}, {}, "flat_grad");
  Node* flat_index = emit.call("reshape", {linear, Argument::ints({-1})}, {}, "flat_index");
  Node* picked = emit.call("index_select", {flat_grad, 0, flat_index});
  SymShape result = shape_of(linear);
  result.insert(result.end(), rest.begin(), rest.end());
  return emit.call("reshape", {picked, Argument::sym_ints(result)}, {}, "picked");
}

std::vector<Gradient> index_put_vjp(VjpEmitter& emit) {
  std::vector<Node*> indices = index_tensors(emit);
  bool accumulate = emit.call().bool_arg(3);
  Node* values = emit.input(2);
  std::vector<Gradient> grads;
  if (emit.needs(0)) {
    Node* g = emit.grad();
    if (!accumulate) {
      Node* zeros = emit.full(shape_of(values), 0.0, dtype_of(g));
      g = emit.call("index_put", {g, emit.call().arg(1), zeros}, {}, "overwritten");
    }
    grads.push_back(emit.gradient_of(0, g));
  }
  if (emit.needs(2)) {
    for (Node* index : indices)
      if (index == nullptr || !(dtype_of(index) == DType::i64 || dtype_of(index) == DType::i32))
        emit.fail("the derivative of index_put with respect to values needs integer index tensors on the leading "
                  "dims (no None, no mask)");
    grads.push_back({values, emit.to_input(read_at_indices(emit, indices, emit.input(0)), values)});
  }
  return grads;
}

}  // namespace

void register_copy_derivatives(DerivativeTable& table) {
  table["cat"] = cat_vjp;
  table["pad"] = pad_vjp;
  table["gather"] = gather_vjp;
  table["index_select"] = index_select_vjp;
  table["scatter"] = scatter_vjp;
  table["index_put"] = index_put_vjp;
}

}  // namespace kiln::passes::derivatives
