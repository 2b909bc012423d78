// Lowering of the creation ops to one Pointwise node each: full and full_like (a Constant),
// arange (exact integer arithmetic, or start + i * step in f64 rounded once, as the
// interpreter computes it), iota (start + i * step, wrapping), and rand / randn (a Random
// expression at the row-major element index, the Philox contract of runtime/philox.h).
#include "codegen/lowering_context.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {
namespace {

void lower_full(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  lowerer.define_pointwise(node, number(call.arg(1), node.value().dtype));
}

void lower_arange(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const ir::Argument &start = call.arg(0), &step = call.arg(2);
  bool any_float = start.is_float() || call.arg(1).is_float() || step.is_float();
  DType dtype = node.value().dtype;
  SymInt i = loop_var(0);
  if (!any_float && !is_floating(dtype)) {
    auto integer = [](const ir::Argument& value) { return value.is_bool() ? int64_t(value.boolean()) : value.integer(); };
    lowerer.define_pointwise(node, index_value(SymInt(integer(start)) + SymInt(integer(step)) * i, DType::i64));
    return;
  }
  Expr body = binary(LoopOp::add, binary(LoopOp::mul, index_value(i, DType::f64), constant(step.floating(), DType::f64)),
                     constant(start.floating(), DType::f64));
  lowerer.define_pointwise(node, body);
}

void lower_iota(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  SymInt value = SymInt(call.int_arg(1)) + SymInt(call.int_arg(2)) * loop_var(0);
  lowerer.define_pointwise(node, index_value(value, DType::i64));
}

void lower_random(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const SymShape& shape = node.value().shape;
  auto random = std::make_shared<ExprNode>();
  random->kind = ExprKind::Random;
  random->dtype = DType::f32;  // the generator yields floats; the store rounds to the node's dtype
  random->index = flat_index(vars_of(shape), shape);
  random->seed = call.int_arg(1);
  random->offset = call.int_arg(2);
  random->normal = node.target() == "randn";
  lowerer.define_pointwise(node, random);
}

}  // namespace

void register_creation_lowerings(LoweringTable& table) {
  table["full"] = lower_full;
  table["full_like"] = lower_full;
  table["arange"] = lower_arange;
  table["iota"] = lower_iota;
  table["rand"] = lower_random;
  table["randn"] = lower_random;
}

}  // namespace kiln::codegen::lowering
