// Part of stage 3 of the scheduler (codegen/schedule.h), before the stashes: 1 + erf(a) and
// 1 - erf(a) spelled one_plus_erf(a) and one_plus_erf(-a) (codegen/loop_ops.h). GELU's exact form
// is x/2 (1 + erf(x / sqrt 2)) (passes/decompositions/activations.cpp) and erfc(x) arrives as
// 1 - erf(x) (frontends/pt2/aten_ops_math.cpp). In one op, erfc(-a) takes one exp where erf's two
// branches take an exp and two polynomials (the C++ prelude's kiln_one_plus_erf, CUDA's erfcf), and
// a small result keeps more of the relative precision that 1 + erf(a) loses to the cancellation
// (its absolute error stays that of 1 + erf(a) in float: kiln_prelude.h states the bound). Only an
// erf added to the constant 1 directly, with no rounding to a narrower dtype between them, is
// spelled so: the value is the same one, rounded once.
#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

bool is_erf(const Expr& expr) { return expr->kind == ExprKind::Unary && expr->op == LoopOp::erf; }

Expr spell(const Expr& expr) {
  if (!expr) return expr;
  Expr spelled = map_children(expr, spell);
  if (spelled->kind != ExprKind::Binary) return spelled;
  const Expr &a = spelled->args[0], &b = spelled->args[1];
  if (spelled->op == LoopOp::add && is_erf(a) && is_float_one(b)) return unary(LoopOp::one_plus_erf, a->args[0]);
  if (spelled->op == LoopOp::add && is_float_one(a) && is_erf(b)) return unary(LoopOp::one_plus_erf, b->args[0]);
  if (spelled->op == LoopOp::sub && is_float_one(a) && is_erf(b))
    return unary(LoopOp::one_plus_erf, unary(LoopOp::neg, b->args[0]));
  return spelled;
}

}  // namespace

void spell_erf_complements(Kernel& kernel) {
  for (KernelStep& step : kernel.steps) step.body = spell(step.body);
}

}  // namespace kiln::codegen::scheduling
