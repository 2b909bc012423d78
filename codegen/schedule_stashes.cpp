// Stage 3 of the scheduler (codegen/schedule.h): stashes. When a row step of a reduction kernel
// recomputes exactly the expensive value (by the loop op table's cost class) an earlier
// reduction of the kernel reduced, the reduction also stores each value in the row step's
// output and the row step reads it back: softmax computes each exp once, as ATen's kernel does.
#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

bool same_expr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  if (a->kind != b->kind || a->dtype != b->dtype || a->op != b->op || a->buffer != b->buffer ||
      a->float_value != b->float_value || a->int_value != b->int_value || a->seed != b->seed ||
      a->offset != b->offset || a->normal != b->normal || !(a->index == b->index) ||
      a->args.size() != b->args.size() || a->indirect.size() != b->indirect.size()) {
    return false;
  }
  for (size_t i = 0; i < a->args.size(); ++i) {
    if (!same_expr(a->args[i], b->args[i])) return false;
  }
  for (size_t i = 0; i < a->indirect.size(); ++i) {
    if (!same_expr(a->indirect[i].value, b->indirect[i].value) || !(a->indirect[i].stride == b->indirect[i].stride) ||
        !(a->indirect[i].size == b->indirect[i].size)) {
      return false;
    }
  }
  return same_expr(a->mask, b->mask) && same_expr(a->other, b->other);
}

namespace {

// Replaces every occurrence of `target` in `expr` by `replacement`; counts them.
Expr replace_expr(const Expr& expr, const Expr& target, const Expr& replacement, int& count) {
  if (!expr) return expr;
  if (same_expr(expr, target)) {
    ++count;
    return replacement;
  }
  return map_children(expr, [&](const Expr& child) { return replace_expr(child, target, replacement, count); });
}

}  // namespace

void stash_reduced_values(const LoopProgram& program, Kernel& kernel) {
  if (kernel.kind != KernelKind::Reduction) return;
  for (size_t i = 0; i < kernel.steps.size(); ++i) {
    KernelStep& reduce = kernel.steps[i];
    if (reduce.kind != KernelStep::Kind::Reduce || !applies_expensive_op(reduce.body)) continue;
    if (reduce.reduction == ReductionKind::Welford) continue;
    for (size_t j = i + 1; j < kernel.steps.size(); ++j) {
      KernelStep& row = kernel.steps[j];
      if (row.kind != KernelStep::Kind::StoreInner || row.outputs.size() != 1) continue;
      int out = row.outputs[0];
      if (program.buffer(out).dtype != reduce.body->dtype) continue;
      Expr stashed = load(out, reduce.body->dtype, row.store_index);
      int count = 0;
      Expr body = replace_expr(row.body, reduce.body, stashed, count);
      if (count == 0) continue;
      row.body = body;
      reduce.stash_buffer = out;
      reduce.stash_index = row.store_index;
      break;
    }
  }
}

}  // namespace kiln::codegen::scheduling
