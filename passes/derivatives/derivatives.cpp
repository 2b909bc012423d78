// The VjpEmitter, the helpers shared by the derivative families, and the assembled table.
#include "passes/derivatives/derivatives.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

// ---------------------------------------------------------------- VjpEmitter

VjpEmitter::VjpEmitter(ir::Graph& graph, const Node& forward, const ir::OpCall& call, std::vector<Node*> output_grads,
                       std::function<bool(const Node*)> needs_grad)
    : graph_(graph),
      forward_(forward),
      call_(call),
      output_grads_(std::move(output_grads)),
      needs_grad_(std::move(needs_grad)) {}

Node* VjpEmitter::input(size_t index) const {
  const Argument& argument = call_.arg(index);
  return argument.is_node() ? argument.node() : nullptr;
}

bool VjpEmitter::needs(size_t index) const { return needs_node(input(index)); }

Node* VjpEmitter::call(std::string_view target, std::vector<Argument> args, ir::Kwargs kwargs, std::string_view role) {
  std::string name = graph_.unique_name(forward_.name() + "_vjp_" + std::string(role.empty() ? target : role));
  return graph_.create_call(std::string(target), std::move(args), std::move(kwargs), name);
}

Node* VjpEmitter::sum_to_shape(Node* value, const SymShape& shape) {
  const SymShape& from = shape_of(value);
  if (from == shape) return value;
  size_t leading = from.size() - shape.size();
  KILN_CHECK(from.size() >= shape.size(), "sum_to_shape: ", ir::shape_string(from), " cannot reduce to ",
             ir::shape_string(shape));
  std::vector<int64_t> dims;
  for (size_t i = 0; i < from.size(); ++i) {
    bool stretched = i >= leading && shape[i - leading] == SymInt(1) && !(from[i] == SymInt(1));
    if (i < leading || stretched) dims.push_back(int64_t(i));
  }
  Node* reduced = value;
  if (!dims.empty()) reduced = call("sum", {value, Argument::ints(dims), true}, {}, "sum_to_shape");
  if (shape_of(reduced) == shape) return reduced;
  return call("reshape", {reduced, Argument::sym_ints(shape)}, {}, "reshape_to_shape");
}

Node* VjpEmitter::to_input(Node* value, const Node* input) {
  return cast(sum_to_shape(value, shape_of(input)), dtype_of(input));
}

Gradient VjpEmitter::gradient_of(size_t index, Node* value) {
  Node* target = input(index);
  KILN_CHECK(target != nullptr, "gradient_of: argument ", index, " of ", ir::describe(forward_), " is not a tensor");
  return {target, to_input(value, target)};
}

Node* VjpEmitter::cast(Node* value, DType dtype) {
  if (dtype_of(value) == dtype) return value;
  return call("cast", {value, dtype});
}

Node* VjpEmitter::full(const SymShape& shape, double fill, DType dtype, std::string_view role) {
  return call("full", {Argument::sym_ints(shape), fill}, {{"dtype", dtype}}, role);
}

Node* VjpEmitter::mask(Node* condition, Node* value, std::string_view role) {
  return call("where", {condition, value, 0.0}, {}, role);
}

Argument VjpEmitter::count(const SymShape& sizes, DType dtype) {
  SymInt product(1);
  for (const SymInt& size : sizes) product *= size;
  if (std::optional<int64_t> constant = product.maybe_constant()) return Argument(double(*constant));
  // A symbolic count: the sum of ones over those sizes, computed when the sizes are known.
  Node* ones = full(sizes, 1.0, dtype, "ones");
  return call("sum", {ones}, {}, "count");
}

void VjpEmitter::fail_message(const std::string& message) const {
  ::kiln::fail("autodiff: ", ir::describe(forward_), ": ", message);
}

// ---------------------------------------------------------------- helpers

const ir::TensorMeta& meta_of(const Node* node) { return node->value(); }
DType dtype_of(const Node* node) { return node->value().dtype; }
int64_t rank_of(const Node* node) { return node->value().rank(); }
const SymShape& shape_of(const Node* node) { return node->value().shape; }

int64_t constant_size(const VjpEmitter& emit, const SymInt& size, std::string_view what) {
  std::optional<int64_t> constant = size.maybe_constant();
  if (!constant) emit.fail("the derivative needs a static ", what, ", got ", size);
  return *constant;
}

namespace {

// F.pad's list (pairs from the last dim backwards) that pads only `dim` of a rank-`rank` tensor.
std::vector<SymInt> pad_one_dim(int64_t rank, int64_t dim, const SymInt& before, const SymInt& after) {
  std::vector<SymInt> pads(size_t(2 * (rank - dim)), SymInt(0));
  pads[size_t(2 * (rank - 1 - dim))] = before;
  pads[size_t(2 * (rank - 1 - dim) + 1)] = after;
  return pads;
}

}  // namespace

Node* embed_slice(VjpEmitter& emit, Node* grad, int64_t dim, const SymInt& start, int64_t step, const SymInt& size) {
  int64_t rank = rank_of(grad);
  SymInt length = shape_of(grad)[size_t(dim)];
  if (step > 1) {
    // [.., n, ..] -> [.., n, 1, ..] -> zeros after each element: [.., n, step, ..] -> [.., n * step, ..].
    Node* spread = emit.call("unsqueeze", {grad, dim + 1}, {}, "spread");
    spread = emit.call("pad", {spread, Argument::sym_ints(pad_one_dim(rank + 1, dim + 1, SymInt(0), SymInt(step - 1)))},
                       {}, "spread_pad");
    SymShape merged = shape_of(grad);
    merged[size_t(dim)] = length * SymInt(step);
    grad = emit.call("reshape", {spread, Argument::sym_ints(merged)}, {}, "spread_merge");
    length = merged[size_t(dim)];
  }
  SymInt after = size - start - length;
  if (start == SymInt(0) && after == SymInt(0)) return grad;
  return emit.call("pad", {grad, Argument::sym_ints(pad_one_dim(rank, dim, start, after))}, {}, "embed");
}

// ---------------------------------------------------------------- the table

namespace {

DerivativeTable build_table() {
  DerivativeTable table;
  register_pointwise_derivatives(table);
  register_reduction_derivatives(table);
  register_view_derivatives(table);
  register_copy_derivatives(table);
  register_linear_algebra_derivatives(table);
  register_convolution_derivatives(table);
  register_pooling_derivatives(table);
  return table;
}

const DerivativeTable& table() {
  static const DerivativeTable instance = build_table();
  return instance;
}

}  // namespace

const Vjp* find_derivative(std::string_view op) {
  auto found = table().find(op);
  return found == table().end() ? nullptr : &found->second;
}

std::vector<std::string> ops_with_derivative() {
  std::vector<std::string> names;
  for (const auto& [name, vjp] : table()) names.push_back(name);
  return names;
}

}  // namespace kiln::passes::derivatives
