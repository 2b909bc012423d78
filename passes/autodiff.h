// Autodiff: builds the joint forward+backward graph (passes/joint_graph.h) of a forward graph,
// the values to differentiate against (`wrt`) and what to differentiate (a scalar loss output,
// whose gradient is 1, or every output against a given gradient).
//
// Needs: a functional graph after decomposition (functionalize -> decompose -> autodiff): no
// composite op and no op that mutates; a kiln::Error names the first such node otherwise.
//
// Guarantees: the joint graph keeps every forward node unchanged (same names, same order) and
// appends the backward nodes after them; its layout is the one joint_graph.h fixes. Its
// graph signature is the forward graph's (attribute kinds, and the specs of the forward
// outputs, copy-backs included), with the differentiated scalar loss marked LOSS_OUTPUT. Each op's
// vector-Jacobian product is written in graph ops, found by op name in the derivative table
// (passes/derivatives/derivatives.h). Gradients flowing into one value are summed in the
// order the backward reaches its users (reverse topological order of the forward graph), so
// the result is deterministic. A wrt value the differentiated outputs do not depend on gets
// zeros of its dtype and shape. Values that are not floating (integers, bool: comparisons,
// argmax, indices) and outputs of ops without a derivative (random draws, creation ops,
// piecewise-constant ops such as floor) carry no gradient, and do not stop gradients flowing
// to other inputs of their users. f16/bf16 gradients are computed in their own dtype, as the
// forward is.
//
// Does not: simplify the backward (CSE/DCE run afterwards), partition it (passes/partition.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/joint_graph.h"

namespace kiln::passes {

struct AutodiffOptions {
  // What to take gradients against: placeholder targets ("x") and/or parameter get_attr
  // targets ("fc1.weight"), in the order of the gradient outputs. Empty: every floating
  // parameter some get_attr node reads, in the order of each one's first get_attr.
  std::vector<std::string> wrt;

  enum class Seed : uint8_t {
    scalar_loss,   // differentiate forward output `loss_output` (a floating scalar); its gradient is 1
    grad_outputs,  // one tangent placeholder per forward output holds its incoming gradient
  };
  Seed seed = Seed::scalar_loss;
  int64_t loss_output = 0;  // with Seed::scalar_loss

  static AutodiffOptions for_loss(int64_t output_index, std::vector<std::string> wrt = {}) {
    return {std::move(wrt), Seed::scalar_loss, output_index};
  }
  static AutodiffOptions for_grad_outputs(std::vector<std::string> wrt = {}) {
    return {std::move(wrt), Seed::grad_outputs, 0};
  }
};

// Throws kiln::Error for a wrt that names no placeholder or parameter, a wrt whose dtype is
// not floating, a loss index out of range, a loss that is not a floating scalar, or a node
// that autodiff cannot handle (composite, mutating, or an op argument with no derivative
// such as pad mode "reflect"), each message naming the value or node.
JointGraph build_joint_graph(const ir::Graph& forward, const AutodiffOptions& options = {});

// Tangent placeholders are named "tangent_<output name>" (tangents in JointGraph).

}  // namespace kiln::passes
