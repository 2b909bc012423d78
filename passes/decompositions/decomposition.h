// The decomposition table: for every composite op of the registry (OpInfo::composite), a
// function that rewrites one call of it into other ops, and the Emitter those functions use
// to create nodes. The driver (passes/decompose.cpp) applies the table until no composite op
// remains, so a decomposition may emit other composites (sdpa emits softmax, cross_entropy
// emits log_softmax and nll_loss).
//
// One file per op family fills the table:
//   linear.cpp         linear, addmm, embedding
//   softmax.cpp        softmax, log_softmax
//   normalization.cpp  layer_norm, rms_norm, batch_norm, group_norm
//   activations.cpp    gelu, silu, leaky_relu, elu, hardsigmoid, hardswish, softplus
//   dropout.cpp        dropout
//   attention.cpp      scaled_dot_product_attention
//   losses.cpp         cross_entropy, nll_loss, mse_loss
//   shape.cpp          tril, triu, flatten, stack, split
// The in-place forms (gelu_, silu_, ...) need no entry: the driver rewrites them as the
// functional op followed by copy_ into self.
//
// Conventions every decomposition follows:
//  - it reads its arguments from the bound OpCall (schema order, defaults filled in);
//  - it returns one node per value the op produces, each with exactly the dtype and shape of
//    the original (the driver checks); a result is always a node the decomposition created,
//    never an input (an identity becomes clone), so the original's name can move onto it;
//  - floating work runs in the compute dtype (f32 for f16/bf16 and for integer inputs of
//    float ops, as the reference kernels compute in wide precision and round once), with one
//    cast back at the end;
//  - numerically stable forms: max-subtracted softmax / log_softmax, var_mean (Welford) for
//    every normalization, softplus linear above its threshold, cross_entropy via log_softmax.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::passes::decompositions {

// Creates the nodes of one decomposition at the graph's current insertion point (the driver
// places it just before the composite node). Nodes are named after the composite node and
// their role: the decomposition of %ln (layer_norm) creates %ln_mean, %ln_rstd, ...
class Emitter {
 public:
  // `graph_mutates`: the graph has in-place ops, so a result must not alias an input (the
  // composite returned fresh memory); finish() then clones a view.
  Emitter(ir::Graph& graph, const ir::Node& original, bool graph_mutates = false);

  ir::Graph& graph() const { return graph_; }
  const ir::Node& original() const { return original_; }
  // The original's single value (its dtype and shape are what the result must have).
  const ir::TensorMeta& result_meta() const { return original_.value(); }

  // A call of `target`, named "<original>_<role>" (role defaults to the target).
  ir::Node* call(std::string_view target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {},
                 std::string_view role = "");

  // Element `index` of a tuple-valued node.
  ir::Node* getitem(ir::Node* tuple, int64_t index, std::string_view role);
  // `value` cast to `dtype`; `value` itself when it already has it.
  ir::Node* cast(ir::Node* value, DType dtype, std::string_view role = "cast");
  // An input of a floating op cast to the dtype the work runs in: compute_dtype of the
  // result's dtype (f32 for f16/bf16 results). Unchanged when the result is not floating.
  ir::Node* compute_input(ir::Node* value);
  // The final step: `value` cast to the original's dtype (or `dtype`), as a node this
  // decomposition created that owns its memory: a clone when `value` already has the dtype
  // but was not created here (an input of the original), or is a view while the graph mutates.
  ir::Node* finish(ir::Node* value);
  ir::Node* finish(ir::Node* value, DType dtype);
  bool created(const ir::Node* node) const;

  // Throws kiln::Error for an argument the decomposition cannot handle; the driver prefixes
  // it with the node being rewritten ("decompose: cannot rewrite node %x (op): ...").
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    ::kiln::fail(parts...);
  }

 private:
  ir::Graph& graph_;
  const ir::Node& original_;
  std::string base_;  // the original's name
  bool graph_mutates_;
  std::vector<const ir::Node*> created_;
};

// ---- small helpers shared by the families ----

const ir::TensorMeta& meta_of(const ir::Node* node);
DType dtype_of(const ir::Node* node);
int64_t rank_of(const ir::Node* node);
const ir::SymShape& shape_of(const ir::Node* node);

// The dtype floating work on `dtype` runs in: f32 for f16, bf16 and non-floating dtypes; the
// dtype itself for f32 and f64.
DType compute_dtype(DType dtype);
// A Python number 0 of the kind that keeps `dtype` under type promotion (False, 0 or 0.0).
ir::Argument zero_scalar(DType dtype);
// The tensor argument `index` of a call, or nullptr for None.
ir::Node* tensor_arg(const ir::OpCall& call, size_t index);
// A 1-d per-channel tensor [C] reshaped to broadcast along dim 1 of a rank-`rank` tensor:
// [C, 1, ..., 1] (rank - 2 ones). Returns `channel` itself when rank <= 2.
ir::Node* channel_view(Emitter& emit, ir::Node* channel, int64_t rank, std::string_view role);

// amax(x, [dim], keepdim=True), the max softmax subtracts (softmax.cpp). amax rejects an
// empty reduction, so when the dim's size is symbolic (it may be 0 at run time) x is first
// padded along dim with one -inf, which never wins over a value and makes an empty row's
// max -inf, as the softmax kernel has it.
ir::Node* row_max(Emitter& emit, ir::Node* x, int64_t dim, std::string_view role);

// ---- the table ----

// Returns one node per value of the original call (one, or a tuple's elements).
using Decomposition = std::function<std::vector<ir::Node*>(Emitter&, const ir::OpCall&)>;
using DecompositionTable = std::map<std::string, Decomposition, std::less<>>;

void register_linear_decompositions(DecompositionTable& table);         // linear.cpp
void register_softmax_decompositions(DecompositionTable& table);        // softmax.cpp
void register_normalization_decompositions(DecompositionTable& table);  // normalization.cpp
void register_activation_decompositions(DecompositionTable& table);     // activations.cpp
void register_dropout_decompositions(DecompositionTable& table);        // dropout.cpp
void register_attention_decompositions(DecompositionTable& table);      // attention.cpp
void register_loss_decompositions(DecompositionTable& table);           // losses.cpp
void register_shape_decompositions(DecompositionTable& table);          // shape.cpp

// The decomposition of a composite op (its out-of-place name for an in-place form is looked
// up by the caller), or nullptr when there is none.
const Decomposition* find_decomposition(std::string_view op);

}  // namespace kiln::passes::decompositions
