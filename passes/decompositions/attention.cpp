// Decomposition of scaled_dot_product_attention, PyTorch's math path:
//   scores  = matmul(q, transpose(k, -2, -1)) * scale        scale defaults to 1 / sqrt(E)
//                                                            (a 0-d tensor when E is symbolic)
//   scores  = where(causal, scores, -inf)                    is_causal: key j <= query i
//   scores  = where(mask, scores, -inf) | scores + mask      bool mask: True attends
//   weights = softmax(scores, -1)                            (a composite, decomposed next)
//   weights = where(amax(scores) == -inf, 0, weights)        with a mask: a fully masked row
//                                                            gives zeros, not NaN (_safe_softmax)
//   result  = matmul(weights, v)
// f16/bf16 inputs run in f32. dropout_p > 0 is refused: the op carries no seed, and the
// reference interpreter refuses it too, so nothing could check the result.
#include <cmath>
#include <limits>

#include "passes/decompositions/decomposition.h"

namespace kiln::passes::decompositions {
namespace {

using ir::Argument;
using ir::Node;
using ir::OpCall;
using ir::SymInt;

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

// The bool [L, S] mask of is_causal: column j <= row i.
Node* causal_mask(Emitter& emit, const SymInt& rows, const SymInt& columns) {
  Node* row = emit.call("iota", {rows}, {}, "query_index");
  Node* column = emit.call("iota", {columns}, {}, "key_index");
  Node* row_column = emit.call("unsqueeze", {row, -1}, {}, "query_index_column");
  Node* column_row = emit.call("unsqueeze", {column, 0}, {}, "key_index_row");
  return emit.call("ge", {row_column, column_row}, {}, "causal");
}

// The scale as a number: the given one, or 1 / sqrt(E). A symbolic E becomes a 0-d tensor,
// rsqrt(sum(full([E], 1))), since a number argument cannot hold a symbol.
Argument scale_of(Emitter& emit, const OpCall& call, const SymInt& embed, DType dtype) {
  if (!call.is_none(6)) return call.float_arg(6);
  if (std::optional<int64_t> size = embed.maybe_constant()) return 1.0 / std::sqrt(double(*size));
  Node* ones = emit.call("full", {Argument::sym_ints({embed}), 1.0}, {{"dtype", dtype}}, "embed_ones");
  Node* size = emit.call("sum", {ones}, {}, "embed_size");
  return emit.call("rsqrt", {size}, {}, "scale");
}

std::vector<Node*> attention(Emitter& emit, const OpCall& call) {
  Node* query = emit.compute_input(tensor_arg(call, 0));
  Node* key = emit.compute_input(tensor_arg(call, 1));
  Node* value = emit.compute_input(tensor_arg(call, 2));
  Node* mask = tensor_arg(call, 3);
  if (call.float_arg(4) != 0.0)
    emit.fail("dropout_p = ", ir::float_repr(call.float_arg(4)),
              " has no decomposition (the op has no seed); apply dropout to the attention weights explicitly");
  bool causal = call.bool_arg(5);

  const ir::SymShape& q = shape_of(query);
  const ir::SymShape& k = shape_of(key);
  Node* key_t = emit.call("transpose", {key, -2, -1}, {}, "key_t");
  Node* scores = emit.call("matmul", {query, key_t}, {}, "scores");
  scores = emit.call("mul", {scores, scale_of(emit, call, q.back(), dtype_of(query))}, {}, "scaled");
  if (causal) {
    Node* keep = causal_mask(emit, q[q.size() - 2], k[k.size() - 2]);
    scores = emit.call("where", {keep, scores, kNegativeInfinity}, {}, "causal_scores");
  }
  if (mask) {
    if (dtype_of(mask) == DType::boolean) {
      scores = emit.call("where", {mask, scores, kNegativeInfinity}, {}, "masked");
    } else {
      scores = emit.call("add", {scores, emit.compute_input(mask)}, {}, "masked");
    }
  }
  Node* weights = emit.call("softmax", {scores, -1}, {}, "weights");
  // With a mask a row can be fully masked (with no keys at all, the result is zeros anyway).
  std::optional<int64_t> keys = k[k.size() - 2].maybe_constant();
  if (mask && !(keys && *keys == 0)) {
    // The same max the softmax computes, so CSE shares it.
    Node* max = row_max(emit, scores, rank_of(scores) - 1, "row_max");
    Node* masked_row = emit.call("eq", {max, kNegativeInfinity}, {}, "masked_row");
    weights = emit.call("where", {masked_row, 0.0, weights}, {}, "safe_weights");
  }
  return {emit.finish(emit.call("matmul", {weights, value}))};
}

}  // namespace

void register_attention_decompositions(DecompositionTable& table) {
  table["scaled_dot_product_attention"] = attention;
}

}  // namespace kiln::passes::decompositions
