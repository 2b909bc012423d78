// The derivative table: for every core op of the registry that has a derivative, a function
// that writes its vector-Jacobian product (VJP) as graph ops, and the VjpEmitter those
// functions use. The driver (passes/autodiff.cpp) calls an op's VJP once per forward node that
// received a gradient, and sums what flows into each input.
//
// One file per op family fills the table:
//   pointwise.cpp       unary and binary elementwise ops, where, clamp, cast, clone
//   reductions.cpp      sum, mean, prod, amax, amin, var, var_mean, cumsum, cummax, cummin
//   views.cpp           reshape, view, permute, transpose, expand, squeeze, unsqueeze, slice,
//                       select, as_strided, getitem
//   copies.cpp          cat, pad, gather, scatter, index_select, index_put
//   linear_algebra.cpp  matmul, bmm
//   convolution.cpp     convolution
//   pooling.cpp         max_pool, avg_pool, adaptive_avg_pool, adaptive_max_pool
// Ops with no derivative on purpose are listed (with the reason) in
// tests/autodiff/ops_without_derivative.txt; the coverage test keeps the two lists complete.
//
// Conventions every VJP follows:
//  - it reads its arguments from the bound OpCall (schema order, defaults filled in);
//  - it returns one Gradient per tensor input it differentiates, and only for inputs that
//    need one (VjpEmitter::needs); the value has exactly the input's dtype and shape
//    (VjpEmitter::to_input reduces broadcast dims and casts back); the driver checks;
//  - it computes in the dtype of the gradient it receives (f16 stays f16, like the forward).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::passes::derivatives {

// The gradient of one input of a forward node. `element` is the tuple element for an input
// that produces a tuple (only getitem reads those).
struct Gradient {
  ir::Node* input = nullptr;
  ir::Node* value = nullptr;
  int64_t element = 0;
};

class VjpEmitter {
 public:
  // `output_grads`: one entry per value of `forward` (nullptr for a tuple element that
  // received no gradient; a single-valued node always has its gradient).
  VjpEmitter(ir::Graph& graph, const ir::Node& forward, const ir::OpCall& call, std::vector<ir::Node*> output_grads,
             std::function<bool(const ir::Node*)> needs_grad);

  ir::Graph& graph() const { return graph_; }
  const ir::Node& forward() const { return forward_; }
  const ir::OpCall& call() const { return call_; }
  // The forward node as an argument of backward ops (its value is the op's result).
  ir::Node* result() const { return const_cast<ir::Node*>(&forward_); }
  // The gradient of the forward node's single value (of element `index` of a tuple).
  ir::Node* grad(size_t index = 0) const { return output_grads_.at(index); }
  // Tensor argument `index` of the call (nullptr when None or not a tensor).
  ir::Node* input(size_t index) const;
  // Whether the tensor argument `index` exists and needs a gradient.
  bool needs(size_t index) const;
  bool needs_node(const ir::Node* node) const { return node != nullptr && needs_grad_(node); }

  // A call of `target`, named "<forward>_vjp_<role>" (role defaults to the target).
  ir::Node* call(std::string_view target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {},
                 std::string_view role = "");

  // `value` summed over the dims that broadcasting added or stretched to reach its shape from
  // `shape`, then reshaped to `shape`.
  ir::Node* sum_to_shape(ir::Node* value, const ir::SymShape& shape);
  // `value` as the gradient of `input`: sum_to_shape then cast to the input's dtype.
  ir::Node* to_input(ir::Node* value, const ir::Node* input);
  // The Gradient of tensor argument `index`: to_input(value, input(index)).
  Gradient gradient_of(size_t index, ir::Node* value);
  // `value` cast to `dtype` (itself when it has it).
  ir::Node* cast(ir::Node* value, DType dtype);
  // A tensor of `shape` and `dtype` filled with `fill`.
  ir::Node* full(const ir::SymShape& shape, double fill, DType dtype, std::string_view role = "zeros");
  // where(mask, value, 0): the zero keeps value's dtype.
  ir::Node* mask(ir::Node* condition, ir::Node* value, std::string_view role = "masked");
  // The product of `sizes` as a 0-d tensor of `dtype` when symbolic, as a number otherwise.
  ir::Argument count(const ir::SymShape& sizes, DType dtype);

  // Throws kiln::Error naming the forward node: "autodiff: node %x (op): <message>".
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    fail_message(::kiln::detail::concat(parts...));
  }

 private:
  [[noreturn]] void fail_message(const std::string& message) const;

  ir::Graph& graph_;
  const ir::Node& forward_;
  const ir::OpCall& call_;
  std::vector<ir::Node*> output_grads_;
  std::function<bool(const ir::Node*)> needs_grad_;
};

// ---- small helpers shared by the families ----

const ir::TensorMeta& meta_of(const ir::Node* node);
DType dtype_of(const ir::Node* node);
int64_t rank_of(const ir::Node* node);
const ir::SymShape& shape_of(const ir::Node* node);
// The constant value of `size`, or a kiln::Error naming `what` through the emitter.
int64_t constant_size(const VjpEmitter& emit, const ir::SymInt& size, std::string_view what);

// The gradient of a strided slice's input along `dim`: `grad` (whose `dim` has the slice's
// length) placed at start, start + step, ... of a zero tensor whose `dim` has `size`.
ir::Node* embed_slice(VjpEmitter& emit, ir::Node* grad, int64_t dim, const ir::SymInt& start, int64_t step,
                      const ir::SymInt& size);

// ---- the table ----

using Vjp = std::function<std::vector<Gradient>(VjpEmitter&)>;
using DerivativeTable = std::map<std::string, Vjp, std::less<>>;

void register_pointwise_derivatives(DerivativeTable& table);        // pointwise.cpp
void register_reduction_derivatives(DerivativeTable& table);        // reductions.cpp
void register_view_derivatives(DerivativeTable& table);             // views.cpp
void register_copy_derivatives(DerivativeTable& table);             // copies.cpp
void register_linear_algebra_derivatives(DerivativeTable& table);   // linear_algebra.cpp
void register_convolution_derivatives(DerivativeTable& table);      // convolution.cpp
void register_pooling_derivatives(DerivativeTable& table);          // pooling.cpp

// The VJP of `op`, or nullptr when it has none.
const Vjp* find_derivative(std::string_view op);
// Every op with a derivative, sorted.
std::vector<std::string> ops_with_derivative();

}  // namespace kiln::passes::derivatives
