// The joint forward+backward graph: what autodiff (passes/autodiff.h) builds from a forward
// graph and what partition (passes/partition.h) splits into a forward and a backward graph.
//
// Layout of `graph` (a functional graph: no node mutates anything):
//  - placeholders: the forward graph's placeholders, same names, same order; then, when the
//    gradient was taken against given grad_outputs, one placeholder per forward output holding
//    its incoming gradient (named in `tangents`, in forward-output order);
//  - get_attr nodes: the forward graph's parameters, unchanged (a parameter is available to
//    both halves after partitioning, never saved);
//  - outputs, in order: the forward graph's outputs (`num_forward_outputs` of them, with
//    their specs in the graph signature: copy-backs of mutated inputs, the loss), then one
//    gradient per entry of `wrt`, in the order of `wrt`, each with exactly the dtype and
//    shape of the value it is the gradient of (zeros when that value does not reach the
//    differentiated outputs).
// A node belongs to the forward half when some forward output depends on it; every other
// node belongs to the backward half.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

struct JointGraph {
  ir::Graph graph;
  int num_forward_outputs = 0;
  // What each gradient output is the gradient of: a placeholder name ("x") or a parameter's
  // get_attr target ("fc1.weight").
  std::vector<std::string> wrt;
  // Placeholders holding given grad_outputs, one per forward output; empty when a scalar loss
  // was differentiated (its gradient is 1).
  std::vector<std::string> tangents;
};

}  // namespace kiln::passes
