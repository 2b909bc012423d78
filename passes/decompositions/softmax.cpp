// Decompositions of softmax and log_softmax, max-subtracted so that exp never overflows:
//   shifted     = x - amax(x, dim, keepdim)
//   softmax     = exp(shifted) / sum(exp(shifted), dim, keepdim)
//   log_softmax = shifted - log(sum(exp(shifted), dim, keepdim))
// With `dtype`, x is cast to it first (PyTorch's semantics); f16/bf16 work runs in f32. An
// empty softmax dim (constant size 0) gives an empty result: a copy of the input; a
// symbolic one may be empty at run time, so its max is taken over x padded with -inf
// (row_max).
#include <limits>

#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {

using ir::Argument;
using ir::Node;
using ir::OpCall;

Node* row_max(Emitter& emit, Node* x, int64_t dim, std::string_view role) {
  int64_t rank = rank_of(x);
  // A 0-d tensor has one element: reduce over everything (dim [] means all dims).
  if (rank == 0) return emit.call("amax", {x, Argument::ints({}), true}, {}, role);
  std::optional<int64_t> size = shape_of(x)[size_t(dim)].maybe_constant();
  if (!size) {
    // F.pad order: pairs from the last dim backwards; one element after the end of `dim`.
    std::vector<int64_t> pads(size_t(2 * (rank - dim)), 0);
    pads[size_t(2 * (rank - 1 - dim) + 1)] = 1;
    x = emit.call("pad", {x, Argument::ints(pads), "constant", -std::numeric_limits<double>::infinity()}, {},
                  std::string(role) + "_padded");
  }
  return emit.call("amax", {x, Argument::ints({dim}), true}, {}, role);
}

namespace {

// The input cast as the op asks (dtype) and to the compute dtype.
Node* softmax_input(Emitter& emit, const OpCall& call) {
  Node* x = tensor_arg(call, 0);
  if (!call.is_none(2)) x = emit.cast(x, call.dtype_arg(2), "as_dtype");
  return emit.compute_input(x);
}

// Whether the softmax dim has the constant size 0: the result is empty, and amax would
// reject the empty reduction.
bool empty_dim(const Node* x, const OpCall& call) {
  if (rank_of(x) == 0) return false;
  std::optional<int64_t> size = shape_of(x)[size_t(wrap_dim(call.int_arg(1), rank_of(x)))].maybe_constant();
  return size && *size == 0;
}

struct Shifted {
  Node* shifted;  // x - max
  Node* exp;      // exp(shifted)
  Node* sum;      // sum(exp) over dim, kept
};

Shifted shifted_exp(Emitter& emit, const OpCall& call, Node* x) {
  int64_t rank = rank_of(x);
  std::vector<int64_t> dims;
  if (rank > 0) dims.push_back(wrap_dim(call.int_arg(1), rank));
  Node* max = row_max(emit, x, rank > 0 ? dims[0] : 0, "max");
  Node* shifted = emit.call("sub", {x, max}, {}, "shifted");
  Node* exp = emit.call("exp", {shifted});
  Node* sum = emit.call("sum", {exp, Argument::ints(dims), true});
  return {shifted, exp, sum};
}

std::vector<Node*> softmax(Emitter& emit, const OpCall& call) {
  Node* x = softmax_input(emit, call);
  if (empty_dim(x, call)) return {emit.finish(x)};
  Shifted parts = shifted_exp(emit, call, x);
  // exp times the sum's reciprocal, as ATen's CPU kernel computes it (one division per row).
  Node* reciprocal = emit.call("reciprocal", {parts.sum}, {}, "inverse_sum");
  return {emit.finish(emit.call("mul", {parts.exp, reciprocal}))};
}

std::vector<Node*> log_softmax(Emitter& emit, const OpCall& call) {
  Node* x = softmax_input(emit, call);
  if (empty_dim(x, call)) return {emit.finish(x)};
  Shifted parts = shifted_exp(emit, call, x);
  Node* log_sum = emit.call("log", {parts.sum}, {}, "log_sum");
  return {emit.finish(emit.call("sub", {parts.shifted, log_sum}))};
}

}  // namespace

void register_softmax_decompositions(DecompositionTable& table) {
  table["softmax"] = softmax;
  table["log_softmax"] = log_softmax;
}

}  // namespace kiln::passes::decompositions
