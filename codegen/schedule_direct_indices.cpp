// Indices read from the loop itself (codegen/schedule.h, after stage 4): a load through an index
// tensor whose value, once inlined, is the loop variable (an index_select by arange(n), as the
// ONNX importer cuts a mask buffer [:seq, :seq] at a dynamic size) is a plain strided load where
// the variable's extent is within the indexed dim, by its constant or its symbol's range: no
// index check per element, and no fault flag the kernel may raise. (The dynamic GPT's masked
// softmax read its mask through a bounds check per element.)
#include <map>
#include <optional>

#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

// The largest value `extent` may take: a constant, or a symbol with a range that has a maximum.
std::optional<int64_t> largest(const SymInt& extent, const LoopProgram& program) {
  if (std::optional<int64_t> value = extent.maybe_constant()) return value;
  if (!extent.is_symbol()) return std::nullopt;
  const std::string name = extent.free_symbols().front();
  for (const LoopProgram::SymbolRange& range : program.symbol_ranges)
    if (range.symbol == name) return range.max;
  return std::nullopt;
}

// `value` without its casts to a wide integer.
const Expr& without_wide_casts(const Expr& value) {
  const Expr* at = &value;
  while ((*at)->kind == ExprKind::Cast && ((*at)->dtype == DType::i64 || (*at)->dtype == DType::i32)) at = &(*at)->args[0];
  return *at;
}

// The loop variable an index value is, through casts to a wide integer: nullopt otherwise.
std::optional<std::string> bare_loop_variable(const Expr& value) {
  const Expr& at = without_wide_casts(value);
  if (at->kind != ExprKind::IndexValue || !at->index.is_symbol()) return std::nullopt;
  return at->index.free_symbols().front();
}

// Whether `expr` is the integer constant 0 (through casts).
bool is_zero(const Expr& expr) {
  const Expr* at = &expr;
  while ((*at)->kind == ExprKind::Cast) at = &(*at)->args[0];
  return (*at)->kind == ExprKind::Constant && (*at)->int_value == 0 && !is_floating((*at)->dtype);
}

// The loop variable an index value is: bare, or as an export's normalization of a negative index,
// where(v < 0, v + size, v), which for a loop variable (never negative) is v itself (a GPT's
// position embedding read at arange(seq) through ONNX's Gather). nullopt otherwise.
std::optional<std::string> loop_variable(const Expr& value) {
  const Expr& at = without_wide_casts(value);
  if (at->kind != ExprKind::Where) return bare_loop_variable(at);
  const Expr& condition = at->args[0];
  std::optional<std::string> kept = bare_loop_variable(at->args[2]);
  if (kept && condition->kind == ExprKind::Binary && condition->op == LoopOp::lt &&
      bare_loop_variable(condition->args[0]) == kept && is_zero(condition->args[1]))
    return kept;
  return std::nullopt;
}

Expr direct(const Expr& expr, const std::map<std::string, int64_t>& extents) {
  if (!expr) return expr;
  Expr mapped = map_children(expr, [&](const Expr& child) { return direct(child, extents); });
  if (mapped->kind != ExprKind::Load || mapped->indirect.empty()) return mapped;
  auto node = std::make_shared<ExprNode>(*mapped);
  std::vector<IndirectTerm> kept;
  for (const IndirectTerm& term : node->indirect) {
    std::optional<std::string> var = loop_variable(term.value);
    auto extent = var ? extents.find(*var) : extents.end();
    std::optional<int64_t> size = term.size.maybe_constant();
    if (extent != extents.end() && size && extent->second <= *size) {
      node->index = node->index + SymInt::symbol(*var) * term.stride;
    } else {
      kept.push_back(term);
    }
  }
  node->indirect = std::move(kept);
  return node;
}

}  // namespace

void read_loop_indices_directly(const LoopProgram& program, Kernel& kernel) {
  std::map<std::string, int64_t> extents;  // each loop variable's largest extent
  // A library call's epilogue runs over the call's output: its dims are the loop variables there.
  SymShape outer = kernel.outer;
  if (kernel.kind == KernelKind::Extern) {
    if (kernel.steps.empty() || kernel.extern_node < 0) return;
    const ExternCall& call = program.nodes[size_t(kernel.extern_node)].extern_call;
    if (call.kind == ExternKind::Fallback || call.outputs.empty()) return;
    outer = call.outputs[0].shape;
  }
  for (size_t d = 0; d < outer.size(); ++d)
    if (std::optional<int64_t> most = largest(outer[d], program)) extents[loop_var(d).to_string()] = *most;
  for (size_t d = 0; d < kernel.inner.size(); ++d)
    if (std::optional<int64_t> most = largest(kernel.inner[d], program)) extents[reduction_var(d).to_string()] = *most;
  for (KernelStep& step : kernel.steps) step.body = direct(step.body, extents);
}

}  // namespace kiln::codegen::scheduling
