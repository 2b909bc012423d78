// VJP of convolution (1-3 spatial dims, groups, stride, padding, dilation). The forward
// convolution:
//   input:  the transposed convolution of the gradient with the same weight, stride, padding,
//           dilation and groups; output_padding recovers input sizes that the stride rounded off
//   weight: a convolution of the input (batch and channels swapped, so the batch is summed)
//           with the gradient as kernel, stride and dilation exchanged, groups kept by
//           folding each group's channels into the channel dim; the result is cropped to the
//           kernel size and its channel dims swapped back
//   bias:   the gradient summed over every dim but the channels
// The transposed convolution is the forward one's input VJP (its weight [C, O/groups, kernel...]
// read as a forward convolution's from O channels to C), so its VJPs are the forward one's
// with the roles exchanged:
//   input:  the forward convolution of the gradient with the same weight and geometry
//   weight: the forward convolution's weight VJP with the gradient as its input and the
//           input as its gradient
//   bias:   as above
// Spatial sizes must be static (output_padding is a list of ints).
#include "passes/derivatives/derivatives.h"

namespace kiln::passes::derivatives {

using ir::Argument;
using ir::Node;
using ir::SymInt;
using ir::SymShape;

namespace {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  size_t spatial;
};

std::vector<int64_t> per_dim(std::vector<int64_t> values, size_t spatial) {
  if (values.size() == 1 && spatial > 1) values.assign(spatial, values[0]);
  return values;
}

// A permutation of [a, b, c, spatial...]: `leading` then the spatial dims 3, 4, ... in order.
std::vector<int64_t> with_spatial(std::vector<int64_t> leading, size_t spatial) {
  for (size_t d = 0; d < spatial; ++d) leading.push_back(int64_t(d) + 3);
  return leading;
}

Node* input_grad(VjpEmitter& emit, const ConvParams& p, Node* input, Node* weight) {
  std::vector<int64_t> output_padding;
  for (size_t d = 0; d < p.spatial; ++d) {
    int64_t in = constant_size(emit, shape_of(input)[d + 2], "input size");
    int64_t out = constant_size(emit, shape_of(emit.grad())[d + 2], "output size");
    int64_t kernel = constant_size(emit, shape_of(weight)[d + 2], "kernel size");
    int64_t reached = (out - 1) * p.stride[d] - 2 * p.padding[d] + p.dilation[d] * (kernel - 1) + 1;
    output_padding.push_back(in - reached);
  }
  Node* grad = emit.call("convolution", {emit.grad(), emit.cast(weight, dtype_of(emit.grad())), Argument(),
                                         Argument::ints(p.stride), Argument::ints(p.padding),
                                         Argument::ints(p.dilation), true, Argument::ints(output_padding), p.groups},
                         {}, "grad_input");
  return grad;
}

// The weight VJP of the forward convolution of `input` with `weight`, given `grad` (the header).
Node* weight_grad(VjpEmitter& emit, const ConvParams& p, Node* input, Node* output_grad, Node* weight) {
  Node* g = output_grad;
  Node* x = emit.cast(input, dtype_of(g));
  const SymShape& x_shape = shape_of(x);
  const SymShape& g_shape = shape_of(g);
  const SymInt& batch = x_shape[0];
  SymInt groups(p.groups);
  SymInt in_per_group(constant_size(emit, x_shape[1], "input channels") / p.groups);
  SymInt out_per_group(constant_size(emit, g_shape[1], "output channels") / p.groups);
  SymShape x_spatial(x_shape.begin() + 2, x_shape.end());
  SymShape g_spatial(g_shape.begin() + 2, g_shape.end());
  // input [N, G*Cg, S] -> [N, G, Cg, S] -> [Cg, G, N, S] -> [Cg, G*N, S]: batch Cg, channels (group, n).
  SymShape split{batch, groups, in_per_group};
  split.insert(split.end(), x_spatial.begin(), x_spatial.end());
  Node* lhs = emit.call("reshape", {x, Argument::sym_ints(split)}, {}, "input_groups");
  lhs = emit.call("permute", {lhs, Argument::ints(with_spatial({2, 1, 0}, p.spatial))}, {}, "input_groups");
  SymShape lhs_shape{in_per_group, groups * batch};
  lhs_shape.insert(lhs_shape.end(), x_spatial.begin(), x_spatial.end());
  lhs = emit.call("reshape", {lhs, Argument::sym_ints(lhs_shape)}, {}, "input_groups");
  // grad [N, G*Og, O] -> [N, G, Og, O] -> [G, Og, N, O] -> [G*Og, N, O]: out channels (group, o), in channels n.
  SymShape g_split{batch, groups, out_per_group};
  g_split.insert(g_split.end(), g_spatial.begin(), g_spatial.end());
  Node* rhs = emit.call("reshape", {g, Argument::sym_ints(g_split)}, {}, "grad_groups");
  rhs = emit.call("permute", {rhs, Argument::ints(with_spatial({1, 2, 0}, p.spatial))}, {}, "grad_groups");
  SymShape rhs_shape{groups * out_per_group, batch};
  rhs_shape.insert(rhs_shape.end(), g_spatial.begin(), g_spatial.end());
  rhs = emit.call("reshape", {rhs, Argument::sym_ints(rhs_shape)}, {}, "grad_groups");
  // [Cg, G*Og, K'] with K' >= K: crop, then [G*Og, Cg, K].
  Node* grad = emit.call("convolution", {lhs, rhs, Argument(), Argument::ints(p.dilation), Argument::ints(p.padding),
                                         Argument::ints(p.stride), false,
                                         Argument::ints(std::vector<int64_t>(p.spatial, 0)), p.groups},
                         {}, "grad_weight");
  for (size_t d = 0; d < p.spatial; ++d) {
    const SymInt& kernel = shape_of(weight)[d + 2];
    if (!(shape_of(grad)[d + 2] == kernel))
      grad = emit.call("slice", {grad, int64_t(d) + 2, 0, kernel}, {}, "grad_weight_crop");
  }
  return emit.call("transpose", {grad, 0, 1}, {}, "grad_weight");
}

// The transposed convolution's input VJP: the forward convolution of the gradient (the header).
Node* transposed_input_grad(VjpEmitter& emit, const ConvParams& p, Node* weight) {
  return emit.call("convolution", {emit.grad(), emit.cast(weight, dtype_of(emit.grad())), Argument(),
                                   Argument::ints(p.stride), Argument::ints(p.padding), Argument::ints(p.dilation),
                                   false, Argument::ints(std::vector<int64_t>(p.spatial, 0)), p.groups},
                   {}, "grad_input");
}

std::vector<Gradient> convolution_vjp(VjpEmitter& emit) {
  const ir::OpCall& call = emit.call();
  bool transposed = call.bool_arg(6);
  Node* input = emit.input(0);
  Node* weight = emit.input(1);
  size_t spatial = size_t(rank_of(input) - 2);
  ConvParams p{per_dim(call.ints(3), spatial), per_dim(call.ints(4), spatial), per_dim(call.ints(5), spatial),
               call.int_arg(8), spatial};
  std::vector<Gradient> grads;
  if (emit.needs(0)) {
    Node* grad = transposed ? transposed_input_grad(emit, p, weight) : input_grad(emit, p, input, weight);
    grads.push_back({input, emit.to_input(grad, input)});
  }
  if (emit.needs(1)) {
    Node* grad = transposed ? weight_grad(emit, p, emit.grad(), emit.cast(input, dtype_of(emit.grad())), weight)
                            : weight_grad(emit, p, input, emit.grad(), weight);
    grads.push_back({weight, emit.to_input(grad, weight)});
  }
  if (emit.needs(2)) {
    std::vector<int64_t> dims{0};
    for (size_t d = 0; d < spatial; ++d) dims.push_back(int64_t(d) + 2);
    grads.push_back(emit.gradient_of(2, emit.call("sum", {emit.grad(), Argument::ints(dims)}, {}, "grad_bias")));
  }
  return grads;
}

}  // namespace

void register_convolution_derivatives(DerivativeTable& table) { table["convolution"] = convolution_vjp; }

}  // namespace kiln::passes::derivatives
