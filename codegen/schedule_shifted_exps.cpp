// Part of stage 3 of the scheduler (codegen/schedule.h), before the stashes: exps of a value minus
// its row's max. In a reduction kernel that reduces v to its max m over the row, exp(v - m) in a
// later step of the kernel has an argument <= 0 (v <= m exactly, and rounding keeps v - m <= 0)
// or NaN (a NaN in the row makes m NaN; v = m = +-inf gives inf - inf), so it never overflows:
// the step spells it exp_nonpositive (codegen/loop_ops.h), which skips exp's overflow select.
// That is softmax's, log_softmax's and cross_entropy's exp; 5% of the softmax kernel's time.
#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

// `expr` with every exp(v - m) spelled exp_nonpositive, where m loads `max_buffer` at
// `max_index` and v is `reduced` (the expression the max reduced).
Expr mark(const Expr& expr, const Expr& reduced, int max_buffer, const SymInt& max_index) {
  if (!expr) return expr;
  Expr marked = map_children(expr, [&](const Expr& child) { return mark(child, reduced, max_buffer, max_index); });
  if (marked->kind != ExprKind::Unary || marked->op != LoopOp::exp) return marked;
  const Expr& argument = marked->args[0];
  if (argument->kind != ExprKind::Binary || argument->op != LoopOp::sub) return marked;
  const Expr& shift = argument->args[1];
  const bool loads_the_max = shift->kind == ExprKind::Load && shift->buffer == max_buffer && !shift->mask &&
                             shift->indirect.empty() && shift->index == max_index;
  if (!loads_the_max || !same_expr(argument->args[0], reduced)) return marked;
  return unary(LoopOp::exp_nonpositive, argument);
}

}  // namespace

void mark_shifted_exps(Kernel& kernel) {
  if (kernel.kind != KernelKind::Reduction) return;
  for (size_t i = 0; i < kernel.steps.size(); ++i) {
    const KernelStep& max_step = kernel.steps[i];
    if (max_step.kind != KernelStep::Kind::Reduce || max_step.reduction != ReductionKind::Max ||
        max_step.outputs.size() != 1 || !is_floating(max_step.body->dtype)) {
      continue;
    }
    for (size_t j = i + 1; j < kernel.steps.size(); ++j)
      kernel.steps[j].body = mark(kernel.steps[j].body, max_step.body, max_step.outputs[0], max_step.store_index);
  }
}

}  // namespace kiln::codegen::scheduling
