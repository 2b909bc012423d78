// The converters' shared helpers.
#include "frontends/pt2/aten_op_helpers.h"

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

}  // namespace kiln::frontends
