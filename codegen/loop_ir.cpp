// Builders and queries of the loop IR (codegen/loop_ir.h).
#include "codegen/loop_ir.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <set>

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

Expr map_children(const Expr& expr, const std::function<Expr(const Expr&)>& f) {
  auto node = std::make_shared<ExprNode>(*expr);
  for (Expr& arg : node->args) arg = f(arg);
  for (IndirectTerm& term : node->indirect) term.value = f(term.value);
  node->mask = f(node->mask);
  node->other = f(node->other);
  return node;
}

Expr with_loads_redirected(const Expr& expr, int from, int to) {
  if (!expr) return expr;
  Expr copy = map_children(expr, [&](const Expr& child) { return with_loads_redirected(child, from, to); });
  if (copy->kind != ExprKind::Load || copy->buffer != from) return copy;
  auto node = std::make_shared<ExprNode>(*copy);
  node->buffer = to;
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

bool applies_expensive_op(const Expr& expr) { return expensive_op_count(expr) > 0; }

size_t expensive_op_count(const Expr& expr) {
  size_t count = 0;
  visit(expr, [&](const ExprNode& node) {
    if ((node.kind == ExprKind::Unary || node.kind == ExprKind::Binary) && loop_op_info(node.op).cost == LoopCost::expensive)
      ++count;
  });
  return count;
}

namespace {

// For a comparison of `var` plus a constant with an integer constant: the op with `var` alone on
// the left and the constant it is compared with; nullopt for anything else.
std::optional<std::pair<LoopOp, int64_t>> index_comparison(const ExprNode& node, const SymInt& var) {
  if (node.kind != ExprKind::Binary) return std::nullopt;
  if (node.op != LoopOp::lt && node.op != LoopOp::le && node.op != LoopOp::gt && node.op != LoopOp::ge) return std::nullopt;
  const Expr& a = node.args[0];
  const Expr& b = node.args[1];
  // The value of var + k (k a constant: a pad's x - left): its k. Only as i64 or i32, whose
  // values are the index's own (a narrower dtype could wrap).
  auto var_offset = [&](const Expr& e) -> std::optional<int64_t> {
    if (e->kind != ExprKind::IndexValue || (e->dtype != DType::i64 && e->dtype != DType::i32)) return std::nullopt;
    return (e->index - var).maybe_constant();
  };
  // An integer constant, or the value of a constant index (lowering writes a cat's bounds so).
  auto is_int = [](const Expr& e) {
    return (e->kind == ExprKind::Constant && is_integral(e->dtype)) ||
           (e->kind == ExprKind::IndexValue && e->index.is_constant());
  };
  auto value = [](const Expr& e) { return e->kind == ExprKind::Constant ? e->int_value : e->index.constant(); };
  // x + k < c is x < c - k.
  if (std::optional<int64_t> k = var_offset(a); k && is_int(b)) return std::make_pair(node.op, value(b) - *k);
  if (std::optional<int64_t> k = var_offset(b); k && is_int(a)) {  // c < x + k is x > c - k
    LoopOp mirrored = node.op == LoopOp::lt ? LoopOp::gt : node.op == LoopOp::le ? LoopOp::ge
                    : node.op == LoopOp::gt ? LoopOp::lt : LoopOp::le;
    return std::make_pair(mirrored, value(a) - *k);
  }
  return std::nullopt;
}

std::optional<bool> constant_truth(const Expr& e) {
  if (e && e->kind == ExprKind::Constant && e->dtype == DType::boolean) return e->int_value != 0;
  return std::nullopt;
}

}  // namespace

std::vector<int64_t> index_cuts(const Expr& expr, const SymInt& var) {
  std::set<int64_t> cuts;
  visit(expr, [&](const ExprNode& node) {
    if (auto comparison = index_comparison(node, var)) {
      const auto [op, c] = *comparison;
      cuts.insert(op == LoopOp::lt || op == LoopOp::ge ? c : c + 1);
    }
  });
  return {cuts.begin(), cuts.end()};
}

Expr with_index_range(const Expr& expr, const SymInt& var, int64_t lo, int64_t hi) {
  if (!expr) return expr;
  if (auto comparison = index_comparison(*expr, var)) {
    // x < c holds on all of [lo, hi) when hi <= c, on none when lo >= c.
    const auto [op, c] = *comparison;
    const int64_t first_true = op == LoopOp::lt || op == LoopOp::le ? INT64_MIN : (op == LoopOp::ge ? c : c + 1);
    const int64_t end_true = op == LoopOp::lt ? c : op == LoopOp::le ? c + 1 : INT64_MAX;
    if (lo >= first_true && hi <= end_true) return constant(1, DType::boolean);
    if (hi <= first_true || lo >= end_true) return constant(0, DType::boolean);
    return expr;
  }
  auto node = std::make_shared<ExprNode>(
      *map_children(expr, [&](const Expr& child) { return with_index_range(child, var, lo, hi); }));
  if (node->kind == ExprKind::Where) {
    if (std::optional<bool> truth = constant_truth(node->args[0])) return node->args[*truth ? 1 : 2];
  }
  if (node->kind == ExprKind::Binary && (node->op == LoopOp::logical_and || node->op == LoopOp::logical_or)) {
    const bool is_and = node->op == LoopOp::logical_and;
    for (int side = 0; side < 2; ++side) {
      std::optional<bool> truth = constant_truth(node->args[size_t(side)]);
      if (!truth) continue;
      // true && b is b, false && b is false; false || b is b, true || b is true.
      if (*truth == is_and) return node->args[size_t(1 - side)];
      return constant(is_and ? 0 : 1, DType::boolean);
    }
  }
  if (node->kind == ExprKind::Unary && node->op == LoopOp::logical_not) {
    if (std::optional<bool> truth = constant_truth(node->args[0])) return constant(*truth ? 0 : 1, DType::boolean);
  }
  if (node->kind == ExprKind::Load && node->mask) {
    if (std::optional<bool> truth = constant_truth(node->mask)) {
      if (!*truth) return node->other ? node->other : constant(0, node->dtype);
      node->mask = nullptr;
      node->other = nullptr;
    }
  }
  return node;
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

std::string native_fallback_text(const NativeFallback& native) {
  using Kind = NativeFallback::Kind;
  std::string shape = " [" + native.outer.to_string() + ", " + native.length.to_string() + ", " + native.inner.to_string() + "]";
  switch (native.kind) {
    case Kind::none: return "";
    case Kind::cumulative_sum: return "cumulative_sum" + shape;
    case Kind::cumulative_product: return "cumulative_product" + shape;
    case Kind::top_k: return "top_k" + shape + " k=" + std::to_string(native.k) + (native.largest ? " largest" : " smallest");
    case Kind::scatter: return "scatter" + shape + " index_length=" + native.index_length.to_string();
    case Kind::scatter_add: return "scatter_add" + shape + " index_length=" + native.index_length.to_string();
    case Kind::grid_sample: {
      static const char* const paddings[] = {"zeros", "border", "reflection"};
      return std::string("grid_sample ") + (native.nearest ? "nearest " : "bilinear ") + paddings[native.padding] +
             (native.align_corners ? " align_corners" : "");
    }
  }
  return "";
}

std::optional<SymInt> gemm_folded_row_stride(const StridedView& a, const StridedView& b) {
  const size_t rank = a.shape.size();
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (!(b.strides[i] == SymInt(0)) && !(b.shape[i] == SymInt(1))) return std::nullopt;
  }
  std::vector<size_t> walked;  // batch and row dims of `a` that have more than one element
  for (size_t i = 0; i + 1 < rank; ++i) {
    if (!(a.shape[i] == SymInt(1))) walked.push_back(i);
  }
  for (size_t j = 0; j + 1 < walked.size(); ++j) {
    if (!(a.strides[walked[j]] == a.strides[walked[j + 1]] * a.shape[walked[j + 1]])) return std::nullopt;
  }
  if (walked.empty()) return a.shape[rank - 1];  // one row: any stride >= K will do
  return a.strides[walked.back()];
}

ExternCall convolution_as_2d(const ExternCall& call) {
  KILN_CHECK(call.kind == ExternKind::Convolution, "convolution_as_2d: not a convolution");
  ExternCall flat = call;
  if (call.convolution.stride.size() != 1) return flat;
  // A dim of size 1 inserted at `at`, with the stride that keeps a contiguous view contiguous
  // (any stride would address the same elements).
  auto with_unit_dim = [](StridedView& view, size_t at) {
    KILN_CHECK(at < view.shape.size(), "convolution_as_2d: a view of rank ", view.shape.size());
    SymInt stride = view.strides[at] * view.shape[at];
    view.shape.insert(view.shape.begin() + std::ptrdiff_t(at), SymInt(1));
    view.strides.insert(view.strides.begin() + std::ptrdiff_t(at), stride);
  };
  with_unit_dim(flat.inputs.at(0), 1);
  with_unit_dim(flat.inputs.at(1), 2);
  with_unit_dim(flat.outputs.at(0), 1);
  ConvolutionGeometry& g = flat.convolution;
  g.stride.insert(g.stride.begin(), 1);
  g.padding.insert(g.padding.begin(), 0);
  g.dilation.insert(g.dilation.begin(), 1);
  return flat;
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

std::vector<std::vector<int>> LoopProgram::readers_by_buffer() const {
  std::vector<std::vector<int>> result(buffers.size());
  for (const LoopNode& node : nodes) {
    std::vector<int> read;
    if (node.kind == NodeKind::Extern) {
      for (const StridedView& view : node.extern_call.inputs) read.push_back(view.buffer);
    } else {
      read = loaded_buffers(node.body);
    }
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    for (int buffer : read) result.at(size_t(buffer)).push_back(node.id);
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
