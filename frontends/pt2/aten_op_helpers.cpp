// The converters' shared helpers.
#include "frontends/pt2/aten_op_helpers.h"
#include "runtime/strides.h"

#include <algorithm>
#include <optional>

namespace kiln::frontends {

void add_op(AtenOpTable& table, const std::string& name, const std::string& overload, AtenConverter converter,
            bool inplace) {
  table.add("aten." + name + "." + overload, converter);
  if (!inplace) return;
  table.add("aten." + name + "_." + overload, [converter](AtenNodeContext& context) {
    context.set_inplace(context.tensor("self"));
    converter(context);
  });
}

void add_op_and_inplace(AtenOpTable& table, const std::string& name, const std::string& overload, AtenConverter converter) {
  add_op(table, name, overload, std::move(converter), true);
}

void add_python_operator(AtenOpTable& table, const std::string& name, const std::string& overload,
                         AtenConverter converter) {
  table.add("aten.__" + name + "__." + overload, converter);
  table.add("aten.__i" + name + "__." + overload, [converter](AtenNodeContext& context) {
    context.set_inplace(context.tensor("self"));
    converter(context);
  });
}

int64_t wrap_dim(const AtenNodeContext& context, int64_t dim, int64_t rank) {
  int64_t bound = rank == 0 ? 1 : rank;
  if (dim < -bound || dim >= bound)
    context.fail("Dimension out of range (expected to be in range of [", -bound, ", ", bound - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + bound : dim;
}

std::vector<int64_t> wrap_dims(const AtenNodeContext& context, const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> wrapped;
  for (int64_t dim : dims) wrapped.push_back(wrap_dim(context, dim, rank));
  return wrapped;
}

int64_t next_random_seed(AtenNodeContext& context) { return context.state().random_nodes++; }

ir::Node* cast_to(AtenNodeContext& context, ir::Node* node, DType dtype) {
  return node->value().dtype == dtype ? node : context.call("cast", {node, dtype});
}

int64_t rank_of(const ir::Node* node) { return node->value().rank(); }
const ir::SymShape& shape_of(const ir::Node* node) { return node->value().shape; }
DType dtype_of(const ir::Node* node) { return node->value().dtype; }

ir::SymShape broadcast_shapes(const ir::SymShape& a, const ir::SymShape& b) {
  ir::SymShape shape = a.size() >= b.size() ? a : b;
  const ir::SymShape& other = a.size() >= b.size() ? b : a;
  for (size_t i = 0; i < other.size(); ++i) {
    ir::SymInt& target = shape[shape.size() - other.size() + i];
    if (target.is_constant() && target.constant() == 1) target = other[i];
  }
  return shape;
}

ir::Node* scalar_constant(AtenNodeContext& context, double value, DType dtype) {
  return context.call("full", {ir::Argument::ints({}), value}, {{"dtype", dtype}});
}

std::vector<ir::Argument> diagonal_as_strided_args(AtenNodeContext& c, ir::Node* x) {
  int64_t rank = rank_of(x);
  int64_t offset = c.int_arg("offset", 0);
  int64_t dim1 = wrap_dim(c, c.int_arg("dim1", 0), rank), dim2 = wrap_dim(c, c.int_arg("dim2", 1), rank);
  const ir::SymShape& shape = shape_of(x);
  ir::SymShape strides = contiguous_strides(shape);
  std::optional<int64_t> n1 = shape[size_t(dim1)].maybe_constant(), n2 = shape[size_t(dim2)].maybe_constant();
  if (!n1 || !n2) c.fail("diagonal of symbolic dims is not supported");
  int64_t length = offset >= 0 ? std::max<int64_t>(0, std::min(*n1, *n2 - offset)) : std::max<int64_t>(0, std::min(*n1 + offset, *n2));
  ir::SymInt start = 0;
  if (length > 0) start = offset >= 0 ? ir::SymInt(offset) * strides[size_t(dim2)] : ir::SymInt(-offset) * strides[size_t(dim1)];
  std::vector<ir::SymInt> sizes, new_strides;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim1 || d == dim2) continue;
    sizes.push_back(shape[size_t(d)]);
    new_strides.push_back(strides[size_t(d)]);
  }
  sizes.emplace_back(length);
  new_strides.push_back(strides[size_t(dim1)] + strides[size_t(dim2)]);
  return {x, ir::Argument::sym_ints(sizes), ir::Argument::sym_ints(new_strides), start};
}

AtenConverter unary(std::string op) {
  return [op](AtenNodeContext& c) { c.result(op, {c.tensor("self")}); };
}

ir::Node* reshape_to(AtenNodeContext& context, ir::Node* x, std::vector<ir::SymInt> shape) {
  return context.call("reshape", {x, ir::Argument::sym_ints(shape)});
}

}  // namespace kiln::frontends
