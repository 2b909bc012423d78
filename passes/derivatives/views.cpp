// VJPs of the views, and of getitem (the element of a tuple-valued node). A view's gradient
// undoes the view on the output gradient:
//   reshape, view, squeeze, unsqueeze  reshape back to the input's shape
//   permute, transpose                 the inverse permutation
//   expand                             sum over the broadcast dims
//   slice, select                      the gradient placed into zeros at the sliced positions
//   as_strided                         scatter-add into the flat storage of a contiguous input
#include <numeric>

#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

namespace {

std::vector<Gradient> reshape_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* x = emit.input(0);
  Node* g = emit.grad();
  if (shape_of(g) != shape_of(x)) g = emit.call("reshape", {g, Argument::sym_ints(shape_of(x))});
  return {emit.gradient_of(0, g)};
}

std::vector<Gradient> permute_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  int64_t rank = rank_of(emit.input(0));
  std::vector<int64_t> dims = emit.call().ints(1);
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inverse[size_t(wrap_dim(dims[i], rank))] = int64_t(i);
  return {emit.gradient_of(0, emit.call("permute", {emit.grad(), Argument::ints(inverse)}))};
}

std::vector<Gradient> transpose_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  return {emit.gradient_of(0, emit.call("transpose", {emit.grad(), emit.call().arg(1), emit.call().arg(2)}))};
}

std::vector<Gradient> expand_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  return {emit.gradient_of(0, emit.grad())};  // to_input sums over the broadcast dims
}

// Python's clamping of a slice start into [0, size].
SymInt clamped_start(const ir::OpCall& call, const SymInt& size) {
  if (call.is_none(2)) return SymInt(0);
  SymInt start = call.sym(2);
  std::optional<int64_t> constant = start.maybe_constant();
  if (!constant) return ir::min(start, size);
  if (*constant >= 0) return ir::min(start, size);
  return ir::max(size + start, SymInt(0));
}

std::vector<Gradient> slice_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* x = emit.input(0);
  int64_t dim = wrap_dim(emit.call().int_arg(1), rank_of(x));
  const SymInt& size = shape_of(x)[size_t(dim)];
  int64_t step = constant_size(emit, emit.call().sym(4), "slice step");
  return {emit.gradient_of(0, embed_slice(emit, emit.grad(), dim, clamped_start(emit.call(), size), step, size))};
}

std::vector<Gradient> select_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* x = emit.input(0);
  int64_t dim = wrap_dim(emit.call().int_arg(1), rank_of(x));
  const SymInt& size = shape_of(x)[size_t(dim)];
  SymInt index = emit.call().sym(2);
  std::optional<int64_t> constant = index.maybe_constant();
  if (constant && *constant < 0) index = size + index;
  Node* row = emit.call("unsqueeze", {emit.grad(), dim});
  return {emit.gradient_of(0, embed_slice(emit, row, dim, index, 1, size))};
}

std::vector<Gradient> as_strided_vjp(VjpEmitter& emit) {
  if (!emit.needs(0)) return {};
  Node* x = emit.input(0);
  if (!meta_of(x).is_contiguous())
    emit.fail("the derivative of as_strided needs a contiguous input, got strides ",
              ir::shape_string(meta_of(x).strides));
  const ir::OpCall& call = emit.call();
  SymShape sizes = call.syms(1);
  SymShape strides = call.syms(2);
  int64_t offset = call.is_none(3) ? 0 : constant_size(emit, call.sym(3), "as_strided storage offset");
  // The storage position of every output element: offset + sum_k i_k * stride_k.
  Node* position = nullptr;
  for (size_t k = 0; k < sizes.size(); ++k) {
    SymShape along(sizes.size(), SymInt(1));
    along[k] = sizes[k];
    int64_t stride = constant_size(emit, strides[k], "as_strided stride");
    Node* index = emit.call("iota", {sizes[k]}, {{"step", stride}}, "position");
    index = emit.call("reshape", {index, Argument::sym_ints(along)}, {}, "position");
    position = position ? emit.call("add", {position, index}, {}, "position") : index;
  }
  Node* flat_grad = emit.call("reshape", {emit.grad(), Argument::ints({-1})}, {}, "flat_grad");
  SymShape flat_shape = shape_of(flat_grad);
  if (position == nullptr) {
    position = emit.call("full", {Argument::ints({1}), offset}, {{"dtype", DType::i64}}, "position");
  } else {
    if (offset != 0) position = emit.call("add", {position, offset}, {}, "position");
    position = emit.call("expand", {position, Argument::sym_ints(sizes)}, {}, "position");
    position = emit.call("reshape", {position, Argument::ints({-1})}, {}, "flat_position");
  }
  Node* storage = emit.full({meta_of(x).numel()}, 0.0, dtype_of(flat_grad), "storage");
  Node* scattered = emit.call("scatter", {storage, 0, position, flat_grad}, {{"reduce", "sum"}});
  return {emit.gradient_of(0, emit.call("reshape", {scattered, Argument::sym_ints(shape_of(x))}))};
}

// getitem(tuple, index): the gradient of element `index` of the tuple-valued input.
std::vector<Gradient> getitem_vjp(VjpEmitter& emit) {
  const Argument& source = emit.call().arg(0);
  Node* tuple = source.is_node() ? source.node() : source.list().at(0).node();
  if (!emit.needs_node(tuple)) return {};
  int64_t element = emit.call().int_arg(1);
  if (element < 0) element += int64_t(tuple->meta.values.size());
  return {Gradient{tuple, emit.grad(), element}};
}

}  // namespace

void register_view_derivatives(DerivativeTable& table) {
  table["reshape"] = reshape_vjp;
  table["view"] = reshape_vjp;
  table["squeeze"] = reshape_vjp;
  table["unsqueeze"] = reshape_vjp;
  table["permute"] = permute_vjp;
  table["transpose"] = transpose_vjp;
  table["expand"] = expand_vjp;
  table["slice"] = slice_vjp;
  table["select"] = select_vjp;
  table["as_strided"] = as_strided_vjp;
  table["getitem"] = getitem_vjp;
}

}  // namespace kiln::passes::derivatives
