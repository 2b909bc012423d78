// Lowering of the view ops: reshape, view, permute, transpose, expand, squeeze, unsqueeze,
// slice, select, as_strided and getitem produce no loop node; each composes a new accessor
// (buffer + index over the view's own dim variables) from its input's accessor.
//
// reshape/view keep an affine index when strides can express the new shape (PyTorch's
// computeStride, on the accessor's actual strides); otherwise the new index is built from
// the row-major position within each group of dims whose sizes multiply to the same value,
// with floordiv/mod terms (the interpreter copies in that case; reading through the
// remapped index gives the same values).
#include <algorithm>
#include <limits>

#include "codegen/index_analysis.h"
#include "codegen/lowering_context.h"
#include "kiln/error.h"
#include "runtime/strides.h"

namespace kiln::codegen::lowering {
namespace {

// `input` seen through `node`: its index with each of the input's variables x<d> replaced
// by index[d] (an expression over the view's variables), and the view's shape.
Accessor remapped(const Accessor& input, const ir::Node& node, const std::vector<SymInt>& index) {
  KILN_CHECK(index.size() == input.shape.size(), "view ", node.name(), ": index of rank ", index.size(),
             " for an input of rank ", input.shape.size());
  std::map<std::string, SymInt> replacements;
  for (size_t d = 0; d < index.size(); ++d) replacements["x" + std::to_string(d)] = index[d];
  Accessor result = input;
  result.index = input.index.substitute(replacements);
  result.shape = node.value().shape;
  result.views.push_back(node.name());
  return result;
}

void permute(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  std::vector<int64_t> dims = call.ints(1);
  std::vector<SymInt> index(input.shape.size());
  for (size_t i = 0; i < input.shape.size(); ++i) index[size_t(wrap_dim(dims[i], int64_t(input.shape.size())))] = loop_var(i);
  lowerer.define(node, remapped(input, node, index));
}

void transpose(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  int64_t rank = int64_t(input.shape.size());
  std::vector<SymInt> index = vars_of(input.shape);
  if (rank > 0) std::swap(index[size_t(wrap_dim(call.int_arg(1), rank))], index[size_t(wrap_dim(call.int_arg(2), rank))]);
  lowerer.define(node, remapped(input, node, index));
}

void expand(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  const SymShape& out = node.value().shape;
  std::vector<SymInt> index = broadcast_index(input.shape, out);
  size_t lead = out.size() - input.shape.size();
  for (size_t d = 0; d < input.shape.size(); ++d)
    if (!(input.shape[d] == out[d + lead])) index[d] = SymInt(0);  // only a size-1 dim may grow
  lowerer.define(node, remapped(input, node, index));
}

void squeeze(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  int64_t rank = int64_t(input.shape.size());
  std::vector<bool> candidate(input.shape.size(), call.is_none(1));
  if (!call.is_none(1))
    for (int64_t dim : call.ints(1))
      if (rank > 0) candidate[size_t(wrap_dim(dim, rank))] = true;
  std::vector<SymInt> index;
  size_t kept = 0;
  for (size_t d = 0; d < input.shape.size(); ++d) {
    if (candidate[d] && input.shape[d] == SymInt(1)) {
      index.push_back(SymInt(0));
    } else {
      index.push_back(loop_var(kept++));
    }
  }
  KILN_CHECK(kept == node.value().shape.size(), call.prefix(), "squeeze kept ", kept, " dims");
  lowerer.define(node, remapped(input, node, index));
}

void unsqueeze(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  int64_t rank = int64_t(input.shape.size());
  int64_t dim = call.int_arg(1);
  if (dim < 0) dim += rank + 1;
  std::vector<SymInt> index;
  for (int64_t d = 0; d < rank; ++d) index.push_back(loop_var(size_t(d < dim ? d : d + 1)));
  lowerer.define(node, remapped(input, node, index));
}

// A slice start after Python's clamping into [0, size] (the shape rule's clamp_bound).
SymInt clamped_start(const ir::OpCall& call, const SymInt& size) {
  if (call.is_none(2)) return SymInt(0);
  SymInt start = call.sym(2);
  std::optional<int64_t> constant = start.maybe_constant();
  if (!constant) return min(start, size);
  if (*constant >= std::numeric_limits<int64_t>::max() / 2) return size;
  if (*constant >= 0) return min(start, size);
  return max(size + start, SymInt(0));
}

void slice(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  size_t dim = size_t(wrap_dim(call.int_arg(1), int64_t(input.shape.size())));
  std::vector<SymInt> index = vars_of(input.shape);
  index[dim] = clamped_start(call, input.shape[dim]) + call.sym(4) * loop_var(dim);
  lowerer.define(node, remapped(input, node, index));
}

void select(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  size_t dim = size_t(wrap_dim(call.int_arg(1), int64_t(input.shape.size())));
  SymInt position = call.sym(2);
  if (std::optional<int64_t> constant = position.maybe_constant(); constant && *constant < 0)
    position = input.shape[dim] + position;
  std::vector<SymInt> index;
  for (size_t d = 0; d < input.shape.size(); ++d)
    index.push_back(d < dim ? loop_var(d) : d == dim ? position : loop_var(d - 1));
  lowerer.define(node, remapped(input, node, index));
}

// ---- reshape

SymInt product(const SymShape& shape, size_t begin, size_t end) {
  SymInt result = 1;
  for (size_t d = begin; d < end; ++d) result = result * shape[d];
  return result;
}

// Groups of consecutive dims [old_begin, old_end) and [new_begin, new_end) whose sizes
// multiply to the same value; a single group of everything when sizes cannot be matched.
struct DimGroup {
  size_t old_begin, old_end, new_begin, new_end;
};

std::vector<DimGroup> dim_groups(const SymShape& old_shape, const SymShape& new_shape) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < old_shape.size() || j < new_shape.size()) {
    DimGroup group{i, i, j, j};
    SymInt old_product = 1, new_product = 1;
    if (i < old_shape.size()) old_product = old_product * old_shape[i++];
    if (j < new_shape.size()) new_product = new_product * new_shape[j++];
    bool matched = true;
    while (!(old_product == new_product)) {
      std::optional<int64_t> a = old_product.maybe_constant(), b = new_product.maybe_constant();
      if (a && b && *a < *b && i < old_shape.size()) {
        old_product = old_product * old_shape[i++];
      } else if (a && b && *b < *a && j < new_shape.size()) {
        new_product = new_product * new_shape[j++];
      } else {
        matched = false;
        break;
      }
    }
    if (!matched) {
      // One group from here to the end.
      groups.push_back({group.old_begin, old_shape.size(), group.new_begin, new_shape.size()});
      return groups;
    }
    group.old_end = i;
    group.new_end = j;
    groups.push_back(group);
  }
  return groups;
}

// The input's multi-index for each point of the new shape, through row-major positions.
std::vector<SymInt> reshape_index(const SymShape& old_shape, const SymShape& new_shape) {
  std::vector<SymInt> index(old_shape.size());
  std::vector<SymInt> vars = vars_of(new_shape);
  for (const DimGroup& group : dim_groups(old_shape, new_shape)) {
    SymInt position = 0;
    for (size_t d = group.new_begin; d < group.new_end; ++d) position = position * new_shape[d] + vars[d];
    for (size_t d = group.old_begin; d < group.old_end; ++d) {
      SymInt inner = product(old_shape, d + 1, group.old_end);
      SymInt quotient = floordiv(position, inner);
      index[d] = d == group.old_begin ? quotient : mod(quotient, old_shape[d]);
    }
  }
  return index;
}

void reshape(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const Accessor& input = lowerer.tensor(call, 0);
  const SymShape& new_shape = node.value().shape;
  if (std::optional<AffineIndex> form = affine_form(input.index, vars_of(input.shape))) {
    if (std::optional<SymShape> strides = view_strides(input.shape, form->coefficients, new_shape)) {
      Accessor result = input;
      result.index = form->offset;
      for (size_t d = 0; d < new_shape.size(); ++d) result.index = result.index + (*strides)[d] * loop_var(d);
      result.shape = new_shape;
      result.views.push_back(node.name());
      lowerer.define(node, std::move(result));
      return;
    }
  }
  lowerer.define(node, remapped(input, node, reshape_index(input.shape, new_shape)));
}

// as_strided reads the storage of its input: the input's buffer when the accessor is a
// strided view of it (offset defaults to the accessor's), else a contiguous copy of it.
void as_strided(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  Accessor input = lowerer.tensor(call, 0);
  std::optional<AffineIndex> form = affine_form(input.index, vars_of(input.shape));
  if (!form) {
    input = lowerer.contiguous(input, node.name() + "_storage");
    form = affine_form(input.index, vars_of(input.shape));
  }
  SymShape sizes = call.syms(1), strides = call.syms(2);
  Accessor result = input;
  result.index = call.is_none(3) ? form->offset : call.sym(3);
  for (size_t d = 0; d < sizes.size(); ++d) result.index = result.index + strides[d] * loop_var(d);
  result.shape = node.value().shape;
  result.views.push_back(node.name());
  lowerer.define(node, std::move(result));
}

void getitem(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const ir::Node* tuple = call.arg(0).node();
  int64_t count = int64_t(tuple->meta.values.size());
  int64_t element = call.int_arg(1);
  if (element < 0) element += count;
  Accessor result = lowerer.value(tuple, size_t(element));
  result.views.push_back(node.name());
  lowerer.define(node, std::move(result));
}

}  // namespace

void register_view_lowerings(LoweringTable& table) {
  table["permute"] = permute;
  table["transpose"] = transpose;
  table["expand"] = expand;
  table["squeeze"] = squeeze;
  table["unsqueeze"] = unsqueeze;
  table["slice"] = slice;
  table["select"] = select;
  table["reshape"] = reshape;
  table["view"] = reshape;
  table["as_strided"] = as_strided;
  table["getitem"] = getitem;
}

}  // namespace kiln::codegen::lowering
