// Checks shared by the partition tests: run a joint graph and its forward + backward on the
// same random inputs and compare, and find forward ops the backward duplicated that it must
// not have.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/joint_graph.h"
#include "passes/partition.h"
#include "kiln/tensor.h"
#include "tests/support/differential.h"

namespace kiln::partition_test {

// A random tensor for each placeholder of `graph`, by target; symbols take `symbols`' values.
inline std::map<std::string, Tensor> random_inputs(const ir::Graph& graph, const std::map<std::string, int64_t>& symbols,
                                                   uint64_t seed = 1) {
  std::map<std::string, Tensor> inputs;
  for (const ir::Node* placeholder : graph.placeholders()) {
    const ir::TensorMeta& meta = placeholder->value();
    inputs[placeholder->target()] = test_support::random_tensor(meta.evaluate_shape(symbols), meta.dtype, seed++);
  }
  return inputs;
}

// The forward on the primal inputs, then the backward on the saved values and the tangents;
// returns the forward outputs followed by the gradients, as the joint graph returns them.
using Runner = std::function<std::vector<Tensor>(const ir::Graph&, const std::map<std::string, Tensor>&)>;

inline std::vector<Tensor> run_partitioned(const passes::Partition& partition, const std::map<std::string, Tensor>& inputs,
                                           const Runner& run = &ir::interpret) {
  std::map<std::string, Tensor> forward_inputs;
  for (const ir::Node* placeholder : partition.forward.placeholders())
    forward_inputs[placeholder->target()] = inputs.at(placeholder->target());
  std::vector<Tensor> forward_results = run(partition.forward, forward_inputs);
  EXPECT_EQ(forward_results.size(), size_t(partition.num_forward_outputs) + partition.saved.size());

  std::vector<ir::Node*> backward_placeholders = partition.backward.placeholders();
  EXPECT_EQ(backward_placeholders.size(), partition.saved.size() + partition.tangents.size());
  std::map<std::string, Tensor> backward_inputs;
  for (size_t i = 0; i < backward_placeholders.size(); ++i) {
    const std::string& target = backward_placeholders[i]->target();
    backward_inputs[target] = i < partition.saved.size() ? forward_results.at(partition.num_forward_outputs + i)
                                                         : inputs.at(target);
  }
  std::vector<Tensor> results(forward_results.begin(), forward_results.begin() + partition.num_forward_outputs);
  for (const Tensor& gradient : run(partition.backward, backward_inputs)) results.push_back(gradient);
  return results;
}

// Expects the forward + backward to reproduce the joint graph's outputs bit for bit in the
// reference interpreter.
inline void expect_same_as_joint(const passes::JointGraph& joint, const passes::Partition& partition,
                                 const std::map<std::string, int64_t>& symbols = {}) {
  std::map<std::string, Tensor> inputs = random_inputs(joint.graph, symbols);
  std::vector<Tensor> expected = ir::interpret(joint.graph, inputs);
  std::vector<Tensor> actual = run_partitioned(partition, inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(test_support::compare_tensors(expected[i], actual[i], 0, 0), "") << "output " << i;
}

// Backward nodes that duplicate a forward node which may not be recomputed (matmul,
// convolution, reduction, random, ...): the names of forward nodes of `joint` that also
// appear, as computations, in the backward graph and are not recomputable.
inline std::vector<std::string> forbidden_recomputations(const passes::JointGraph& joint, const passes::Partition& partition) {
  std::vector<std::string> forbidden;
  for (const std::string& name : partition.recomputed)
    if (!passes::is_recomputable(*joint.graph.find(name))) forbidden.push_back(name);
  // Independently of `recomputed`: a backward computation named like a forward node that the
  // forward graph also computes.
  for (const ir::Node* node : partition.backward.nodes()) {
    if (node->op() != ir::OpKind::call_function) continue;
    const ir::Node* in_forward = partition.forward.find(node->name());
    if (in_forward && in_forward->op() == ir::OpKind::call_function && !passes::is_recomputable(*in_forward))
      forbidden.push_back(node->name());
  }
  return forbidden;
}

// The fewest bytes any valid choice of saved values costs, by trying every subset of the
// forward values (so only for small graphs): a choice is valid when every forward value the
// backward reads is saved, a parameter, or recomputable from valid values. Written apart from
// the partition's flow network, to check its cut is a minimum.
inline int64_t brute_force_min_saved_bytes(const passes::JointGraph& joint) {
  const ir::Graph& graph = joint.graph;
  std::vector<ir::Node*> outputs = graph.outputs();
  std::set<const ir::Node*> forward, tangents;
  for (const std::string& name : joint.tangents) tangents.insert(graph.find(name));
  std::vector<const ir::Node*> pending(outputs.begin(), outputs.begin() + joint.num_forward_outputs);
  for (const ir::Node* placeholder : graph.placeholders())
    if (!tangents.count(placeholder)) pending.push_back(placeholder);
  while (!pending.empty()) {
    const ir::Node* node = pending.back();
    pending.pop_back();
    if (!forward.insert(node).second) continue;
    for (const ir::Node* input : node->input_nodes()) pending.push_back(input);
  }
  std::vector<const ir::Node*> candidates;  // forward values, not parameters
  std::set<const ir::Node*> read;           // forward values that backward nodes or gradients read
  for (const ir::Node* node : graph.nodes()) {
    if (forward.count(node) && node->op() != ir::OpKind::get_attr && node->has_single_value()) candidates.push_back(node);
    if (node->op() == ir::OpKind::output) {
      for (size_t i = size_t(joint.num_forward_outputs); i < outputs.size(); ++i)
        if (forward.count(outputs[i])) read.insert(outputs[i]);
    } else if (!forward.count(node)) {
      for (const ir::Node* input : node->input_nodes())
        if (forward.count(input) && input->op() != ir::OpKind::get_attr) read.insert(input);
    }
  }
  EXPECT_LE(candidates.size(), 20u) << "too many forward values to try every subset";
  int64_t best = INT64_MAX;
  for (uint64_t mask = 0; mask < (uint64_t(1) << candidates.size()); ++mask) {
    std::set<const ir::Node*> saved;
    int64_t bytes = 0;
    for (size_t i = 0; i < candidates.size(); ++i)
      if (mask >> i & 1) saved.insert(candidates[i]), bytes += passes::value_bytes(*candidates[i], {});
    if (bytes >= best) continue;
    std::function<bool(const ir::Node*)> available = [&](const ir::Node* node) {
      if (saved.count(node) || node->op() == ir::OpKind::get_attr) return true;
      if (!passes::is_recomputable(*node)) return false;
      for (const ir::Node* input : node->input_nodes())
        if (!available(input)) return false;
      return true;
    };
    bool valid = true;
    for (const ir::Node* node : read) valid = valid && available(node);
    if (valid) best = bytes;
  }
  return best;
}

}  // namespace kiln::partition_test
