// Builders and queries of the loop IR (codegen/loop_ir.h).
#include "codegen/loop_ir.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::codegen {

SymInt loop_var(size_t dim) { return SymInt::symbol("x" + std::to_string(dim)); }
SymInt reduction_var(size_t dim) { return SymInt::symbol("r" + std::to_string(dim)); }

std::vector<SymInt> loop_vars(size_t rank) {
  std::vector<SymInt> vars;
  for (size_t d = 0; d < rank; ++d) vars.push_back(loop_var(d));
  return vars;
}

SymInt flat_index(const std::vector<SymInt>& index, const SymShape& shape) {
  KILN_CHECK(index.size() == shape.size(), "flat_index: rank mismatch");
  SymInt flat = 0;
  SymInt stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != SymInt(1)) flat = flat + index[d] * stride;
    stride = stride * shape[d];
  }
  return flat;
}

SymInt numel(const SymShape& shape) {
  SymInt n = 1;
  for (const SymInt& d : shape) n = n * d;
  return n;
}

namespace {

std::shared_ptr<ExprNode> make(ExprKind kind, DType dtype) {
  auto node = std::make_shared<ExprNode>();
  node->kind = kind;
  node->dtype = dtype;
  return node;
}

DType result_dtype(const LoopOpInfo& info, const Expr& a) {
  return info.result == LoopResultDType::boolean ? DType::boolean : a->dtype;
}

}  // namespace

Expr constant(double value, DType dtype) {
  auto node = make(ExprKind::Constant, dtype);
  if (is_floating(dtype)) {
    node->float_value = value;
  } else if (dtype == DType::boolean) {
    node->int_value = value != 0 ? 1 : 0;
  } else {
    node->int_value = int64_t(value);
  }
  return node;
}

Expr load(int buffer, DType dtype, SymInt index) {
  auto node = make(ExprKind::Load, dtype);
  node->buffer = buffer;
  node->index = std::move(index);
  return node;
}

Expr index_value(SymInt index, DType dtype) {
  auto node = make(ExprKind::IndexValue, dtype);
  node->index = std::move(index);
  return node;
}

Expr unary(LoopOp op, Expr a) {
  const LoopOpInfo& info = loop_op_info(op);
  KILN_CHECK(info.arity == 1, "loop op ", info.name, " is not unary");
  auto node = make(ExprKind::Unary, result_dtype(info, a));
  node->op = op;
  node->args = {std::move(a)};
  return node;
}

Expr binary(LoopOp op, Expr a, Expr b) {
  const LoopOpInfo& info = loop_op_info(op);
  KILN_CHECK(info.arity == 2, "loop op ", info.name, " is not binary");
  auto node = make(ExprKind::Binary, result_dtype(info, a));
  node->op = op;
  node->args = {std::move(a), std::move(b)};
  return node;
}

Expr where(Expr condition, Expr a, Expr b) {
  auto node = make(ExprKind::Where, a->dtype);
  node->args = {std::move(condition), std::move(a), std::move(b)};
  return node;
}

Expr cast(Expr a, DType dtype) {
  if (a->dtype == dtype) return a;
  auto node = make(ExprKind::Cast, dtype);
  node->args = {std::move(a)};
  return node;
}

void visit(const Expr& expr, const std::function<void(const ExprNode&)>& f) {
  if (!expr) return;
  for (const Expr& arg : expr->args) visit(arg, f);
  for (const IndirectTerm& term : expr->indirect) visit(term.value, f);
  visit(expr->mask, f);
  visit(expr->other, f);
  f(*expr);
}

Expr map_indices(const Expr& expr, const std::function<SymInt(const SymInt&)>& f) {
  if (!expr) return expr;
  auto node = std::make_shared<ExprNode>(*expr);
  if (node->kind == ExprKind::Load || node->kind == ExprKind::IndexValue || node->kind == ExprKind::Random) {
    node->index = f(node->index);
  }
  for (Expr& arg : node->args) arg = map_indices(arg, f);
  for (IndirectTerm& term : node->indirect) {
    term.value = map_indices(term.value, f);
    term.size = f(term.size);
    term.stride = f(term.stride);
  }
  node->mask = map_indices(node->mask, f);
  node->other = map_indices(node->other, f);
  return node;
}

Expr substitute(const Expr& expr, const std::map<std::string, SymInt>& replacements) {
  return map_indices(expr, [&](const SymInt& index) { return index.substitute(replacements); });
}

Expr with_loads_redirected(const Expr& expr, int from, int to) {
  if (!expr) return expr;
  auto node = std::make_shared<ExprNode>(*expr);
  if (node->kind == ExprKind::Load && node->buffer == from) node->buffer = to;
  for (Expr& arg : node->args) arg = with_loads_redirected(arg, from, to);
  for (IndirectTerm& term : node->indirect) term.value = with_loads_redirected(term.value, from, to);
  node->mask = with_loads_redirected(node->mask, from, to);
  node->other = with_loads_redirected(node->other, from, to);
  return node;
}

std::vector<int> loaded_buffers(const Expr& expr) {
  std::vector<int> buffers;
  visit(expr, [&](const ExprNode& node) {
    if (node.kind == ExprKind::Load && std::find(buffers.begin(), buffers.end(), node.buffer) == buffers.end()) {
      buffers.push_back(node.buffer);
    }
  });
  return buffers;
}

size_t expr_size(const Expr& expr) {
  size_t count = 0;
  visit(expr, [&](const ExprNode&) { ++count; });
  return count;
}

bool applies_expensive_op(const Expr& expr) {
  bool found = false;
  visit(expr, [&](const ExprNode& node) {
    found = found || ((node.kind == ExprKind::Unary || node.kind == ExprKind::Binary) &&
                      loop_op_info(node.op).cost == LoopCost::expensive);
  });
  return found;
}

std::string geometry_text(const ConvolutionGeometry& geometry) {
  auto list = [](const std::vector<int64_t>& values) {
    std::string text = "[";
    for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
    return text + "]";
  };
  return "stride=" + list(geometry.stride) + " padding=" + list(geometry.padding) + " dilation=" +
         list(geometry.dilation) + " groups=" + std::to_string(geometry.groups);
}

int LoopProgram::add_buffer(Buffer buffer) {
  buffer.id = int(buffers.size());
  buffers.push_back(std::move(buffer));
  return buffers.back().id;
}

int LoopProgram::add_node(LoopNode node) {
  node.id = int(nodes.size());
  nodes.push_back(std::move(node));
  return nodes.back().id;
}

std::vector<int> LoopProgram::readers(int buffer_id) const {
  std::vector<int> result;
  for (const LoopNode& node : nodes) {
    bool reads = false;
    if (node.kind == NodeKind::Extern) {
      for (const StridedView& view : node.extern_call.inputs) reads = reads || view.buffer == buffer_id;
    } else {
      std::vector<int> loaded = loaded_buffers(node.body);
      reads = std::find(loaded.begin(), loaded.end(), buffer_id) != loaded.end();
    }
    if (reads) result.push_back(node.id);
  }
  return result;
}

int LoopProgram::writer(int buffer_id) const {
  for (const LoopNode& node : nodes) {
    if (std::find(node.outputs.begin(), node.outputs.end(), buffer_id) != node.outputs.end()) return node.id;
  }
  return -1;
}

}  // namespace kiln::codegen
