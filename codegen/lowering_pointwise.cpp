// Lowering of the elementwise ops to one Pointwise node each: the unary ops, the promoted
// binary ops and comparisons, and the logical ops by the lowering rule of their row in the loop
// op table (codegen/loop_ops.h); clamp, add/sub (with alpha), div (with its rounding modes), pow,
// where, cast and clone by their own functions here. Operands are converted to the promoted dtype exactly as the
// interpreter converts them (tensors through a cast, Python numbers rounded or wrapped to it),
// then to the computation dtype (f16/bf16 -> f32); the result is cast to the node's dtype.
#include "codegen/lowering_context.h"
#include "ir/type_promotion.h"
#include "kiln/error.h"

namespace kiln::codegen::lowering {
namespace {

// Argument `index` (a tensor, broadcast to `shape`, or a Python number) as `dtype`, then in
// the computation dtype.
Expr operand(Lowerer& lowerer, const ir::OpCall& call, size_t index, const SymShape& shape, DType dtype) {
  const ir::Argument& argument = call.arg(index);
  if (argument.is_node()) return upcast(cast(lowerer.load_broadcast(lowerer.tensor(call, index), shape), dtype));
  KILN_CHECK(argument.is_number() || argument.is_symint(), call.prefix(), "argument ", index,
             " is neither a tensor nor a number");
  return number(argument, dtype);
}

// Argument `index` as a truth value (bool), from its own dtype (NaN is true).
Expr truth(Lowerer& lowerer, const ir::OpCall& call, size_t index, const SymShape& shape) {
  const ir::Argument& argument = call.arg(index);
  if (argument.is_node()) return cast(lowerer.load_broadcast(lowerer.tensor(call, index), shape), DType::boolean);
  return cast(number(argument, number_dtype(argument)), DType::boolean);
}

// A unary op of the loop op table, lowered by its table row's rule.
void lower_unary(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const LoopOpInfo& op = loop_op_info(*find_loop_op(node.target()));
  const SymShape& shape = node.value().shape;
  DType out = node.value().dtype;
  Expr input = lowerer.load_broadcast(lowerer.tensor(call, 0), shape);
  DType in = input->dtype;
  Expr body;
  switch (op.lowering) {
    case GraphLowering::float_unary: body = unary(op.op, upcast(cast(input, out))); break;
    case GraphLowering::rounding_unary: body = is_floating(in) ? unary(op.op, upcast(input)) : input; break;
    case GraphLowering::truth_unary: body = unary(op.op, cast(input, DType::boolean)); break;
    case GraphLowering::nan_test_unary:
      body = is_floating(in) ? unary(op.op, upcast(input)) : constant(0, DType::boolean);
      break;
    case GraphLowering::same_unary: body = unary(op.op, upcast(input)); break;
    default: KILN_CHECK(false, "loop op ", op.name, " has no unary lowering rule");
  }
  lowerer.define_pointwise(node, body);
}

void lower_clamp(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const SymShape& shape = node.value().shape;
  DType dtype = promoted_dtype(call, {0, 1, 2});
  Expr body = operand(lowerer, call, 0, shape, dtype);
  if (!call.is_none(1)) body = binary(LoopOp::maximum, body, number(call.arg(1), dtype));
  if (!call.is_none(2)) body = binary(LoopOp::minimum, body, number(call.arg(2), dtype));
  lowerer.define_pointwise(node, body);
}

// add / sub: self + alpha * other (alpha 1 adds no multiplication).
void lower_add_sub(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const SymShape& shape = node.value().shape;
  DType dtype = promoted_dtype(call, {0, 1});
  Expr a = operand(lowerer, call, 0, shape, dtype);
  Expr b = operand(lowerer, call, 1, shape, dtype);
  const ir::Argument& alpha = call.arg(2);
  bool unit = alpha.is_float() ? alpha.floating() == 1.0 : (alpha.is_bool() ? alpha.boolean() : alpha.integer() == 1);
  if (!is_floating(dtype) && alpha.is_float())
    call.fail("for integral input tensors, argument alpha must not be a floating point number");
  if (!unit) {
    // Floating: alpha multiplies in the computation dtype; integers: alpha wraps to the dtype.
    Expr scale = is_floating(dtype) ? constant(alpha.floating(), compute_dtype(dtype)) : number(alpha, dtype);
    b = binary(LoopOp::mul, b, scale);
  }
  lowerer.define_pointwise(node, binary(*find_loop_op(node.target()), a, b));
}

void lower_div(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const SymShape& shape = node.value().shape;
  DType dtype = promoted_dtype(call, {0, 1});
  if (call.is_none(2)) {
    DType out = is_floating(dtype) ? dtype : ir::kDefaultFloat;
    lowerer.define_pointwise(
        node, binary(LoopOp::div, operand(lowerer, call, 0, shape, out), operand(lowerer, call, 1, shape, out)));
    return;
  }
  const std::string& mode = call.string_arg(2);
  if (mode != "trunc" && mode != "floor")
    call.fail("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", mode, "'");
  lowerer.define_pointwise(node, binary(mode == "trunc" ? LoopOp::div_trunc : LoopOp::div_floor,
                                        operand(lowerer, call, 0, shape, dtype), operand(lowerer, call, 1, shape, dtype)));
}

void lower_pow(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  DType dtype = promoted_dtype(call, {0, 1});
  const ir::Argument& exponent = call.arg(1);
  if (!is_floating(dtype) && exponent.is_int() && exponent.integer() < 0)
    call.fail("integers to negative integer powers are not allowed");
  const SymShape& shape = node.value().shape;
  Expr base = operand(lowerer, call, 0, shape, dtype);
  // A floating base squared (RMSNorm's and a variance's pow(x, 2)) is x * x: the square rounded
  // once, as pow rounds it, where pow's log and exp cost ~40 vector instructions an element (a
  // Llama's RMSNorm over the embedding gather, unvectorized, held 7% of its time).
  bool squared = (exponent.is_float() && exponent.floating() == 2.0) || (exponent.is_int() && exponent.integer() == 2);
  if (is_floating(dtype) && squared) {
    lowerer.define_pointwise(node, binary(LoopOp::mul, base, base));
    return;
  }
  lowerer.define_pointwise(node, binary(LoopOp::pow, base, operand(lowerer, call, 1, shape, dtype)));
}

// mul maximum minimum fmod remainder and the comparisons: both operands in the promoted dtype.
void lower_promoted_binary(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  DType dtype = promoted_dtype(call, {0, 1});
  const SymShape& shape = node.value().shape;
  lowerer.define_pointwise(node, binary(*find_loop_op(node.target()), operand(lowerer, call, 0, shape, dtype),
                                        operand(lowerer, call, 1, shape, dtype)));
}

// logical_and logical_or logical_xor: both operands as truth values.
void lower_logical(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const SymShape& shape = node.value().shape;
  lowerer.define_pointwise(node, binary(*find_loop_op(node.target()), truth(lowerer, call, 0, shape),
                                        truth(lowerer, call, 1, shape)));
}

// bitwise_not: ~x on integers, not x on bools.
void lower_bitwise_not(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  Expr input = lowerer.load_broadcast(lowerer.tensor(call, 0), node.value().shape);
  bool truth_value = input->dtype == DType::boolean;
  lowerer.define_pointwise(node, unary(truth_value ? LoopOp::logical_not : LoopOp::bitwise_not, input));
}

void lower_where(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  const SymShape& shape = node.value().shape;
  DType dtype = promoted_dtype(call, {1, 2});
  Expr condition = cast(lowerer.load_broadcast(lowerer.tensor(call, 0), shape), DType::boolean);
  lowerer.define_pointwise(node, where(condition, operand(lowerer, call, 1, shape, dtype),
                                       operand(lowerer, call, 2, shape, dtype)));
}

void lower_cast(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  lowerer.define_pointwise(node, cast(lowerer.load_broadcast(lowerer.tensor(call, 0), node.value().shape), call.dtype_arg(1)));
}

void lower_clone(Lowerer& lowerer, const ir::Node& node, const ir::OpCall& call) {
  lowerer.define_pointwise(node, lowerer.load_broadcast(lowerer.tensor(call, 0), node.value().shape));
}

}  // namespace

void register_pointwise_lowerings(LoweringTable& table) {
  // Graph ops named like a loop op lower by the rule of its table row.
  for (const LoopOpInfo& op : loop_ops()) {
    std::string name(op.name);
    switch (op.lowering) {
      case GraphLowering::float_unary:
      case GraphLowering::same_unary:
      case GraphLowering::rounding_unary:
      case GraphLowering::truth_unary:
      case GraphLowering::nan_test_unary: table[name] = lower_unary; break;
      case GraphLowering::promoted_binary: table[name] = lower_promoted_binary; break;
      case GraphLowering::truth_binary: table[name] = lower_logical; break;
      case GraphLowering::custom:
      case GraphLowering::none: break;
    }
  }
  table["clamp"] = lower_clamp;
  table["add"] = lower_add_sub;
  table["sub"] = lower_add_sub;
  table["div"] = lower_div;
  table["pow"] = lower_pow;
  table["bitwise_not"] = lower_bitwise_not;
  table["where"] = lower_where;
  table["cast"] = lower_cast;
  table["clone"] = lower_clone;
}

}  // namespace kiln::codegen::lowering
