// Part of stage 3 of the scheduler (codegen/schedule.h), beside the erf complements: 1 + tanh(a)
// and 1 - tanh(a) spelled 2 sigmoid(2a) and 2 sigmoid(-2a) (the same functions: 1 + tanh(a) =
// 2 / (1 + e^-2a)). GELU's tanh form is x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
// (passes/decompositions/activations.cpp). tanh takes two branches, a polynomial for small
// arguments and (1 - e) / (1 + e) beyond, where sigmoid takes one exp and one quotient (the C++
// prelude's kiln_sigmoid: a GELU (tanh) loop 10% faster, bench/README.md); and where 1 + tanh(a)
// is small (a very negative) its float sum cancels, the quotient does not. The products by 2 and
// -2 are exact (2a overflows only past 1.7e38, to an infinity whose sigmoid is 1 or 0, as
// 1 + tanh(a) is then 2 or 0). Only a tanh added to, or subtracted from, the constant 1 directly,
// with no rounding to a narrower dtype between them, is spelled so.
#include "codegen/schedule_stages.h"

namespace kiln::codegen::scheduling {

namespace {

bool is_tanh(const Expr& expr) { return expr->kind == ExprKind::Unary && expr->op == LoopOp::tanh; }

// 2 sigmoid(factor a), in a's dtype.
Expr twice_sigmoid(const Expr& a, double factor) {
  return binary(LoopOp::mul, constant(2.0, a->dtype),
                unary(LoopOp::sigmoid, binary(LoopOp::mul, a, constant(factor, a->dtype))));
}

Expr spell(const Expr& expr) {
  if (!expr) return expr;
  Expr spelled = map_children(expr, spell);
  if (spelled->kind != ExprKind::Binary) return spelled;
  const Expr &a = spelled->args[0], &b = spelled->args[1];
  if (spelled->op == LoopOp::add && is_tanh(a) && is_float_one(b)) return twice_sigmoid(a->args[0], 2.0);
  if (spelled->op == LoopOp::add && is_float_one(a) && is_tanh(b)) return twice_sigmoid(b->args[0], 2.0);
  if (spelled->op == LoopOp::sub && is_float_one(a) && is_tanh(b)) return twice_sigmoid(b->args[0], -2.0);
  return spelled;
}

}  // namespace

void spell_tanh_complements(Kernel& kernel) {
  for (KernelStep& step : kernel.steps) step.body = spell(step.body);
}

}  // namespace kiln::codegen::scheduling
