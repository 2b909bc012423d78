// Decomposition of dropout through the Philox `rand` op, keeping exactly the elements the
// reference kernel keeps (ir/kernels/activation_kernels.cpp): element i (row-major) is kept
// when rand(shape, seed, offset 0)[i] >= p, and a kept element is scaled by 1 / (1 - p):
//   keep   = ge(rand(x.shape, seed=seed), threshold)
//   result = where(keep, x * (1 / (1 - p)), 0)
// rand draws k * 2^-24 for an integer k, so "u >= p" is "k >= ceil(p * 2^24)": the threshold
// is written as ceil(p * 2^24) * 2^-24, exact in f32 and in double, so the comparison keeps
// the same elements whether it runs in f32 (ge converts p to the tensor's dtype) or in
// double (the kernel). Not training, or p == 0: a copy of the input. p == 1: zeros.
#include <cmath>

#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;

// The smallest multiple of 2^-24 that is >= p (p in [0, 1]).
double keep_threshold(double p) { return std::ceil(std::ldexp(p, 24)) * std::ldexp(1.0, -24); }

std::vector<Node*> dropout(Emitter& emit, const OpCall& call) {
  Node* input = tensor_arg(call, 0);
  double p = call.float_arg(1);
  bool train = call.bool_arg(2);
  int64_t seed = call.int_arg(3);
  if (!train || p == 0) return {emit.finish(input)};
  if (!is_floating(dtype_of(input)))
    emit.fail("dropout expects a floating-point input when training, but got ", dtype_name(dtype_of(input)));
  if (p >= 1) return {emit.finish(emit.call("full_like", {input, 0.0}, {}, "zeros"))};
  Node* x = emit.compute_input(input);
  Node* uniform = emit.call("rand", {Argument::sym_ints(shape_of(input))},
                            {{"seed", seed}, {"offset", int64_t(0)}, {"dtype", DType::f32}}, "uniform");
  Node* keep = emit.call("ge", {uniform, keep_threshold(p)}, {}, "keep");
  Node* scaled = emit.call("mul", {x, 1.0 / (1.0 - p)}, {}, "scaled");
  return {emit.finish(emit.call("where", {keep, scaled, 0.0}))};
}

}  // namespace

void register_dropout_decompositions(DecompositionTable& table) { table["dropout"] = dropout; }

}  // namespace kiln::passes::decompositions
