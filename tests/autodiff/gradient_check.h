// Gradient checking for the autodiff tests: the gradients of the joint graph (run in the
// reference interpreter) against central finite differences (f(x + h) - f(x - h)) / 2h of the
// forward graph, both on the loss sum over outputs of sum(output * fixed random weights).
// Header-only: the suite's build compiles its *_test.cpp files.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <cmath>
#include <random>
#include <sstream>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "passes/autodiff.h"
#include "kiln/tensor.h"

namespace kiln::testing {

using ir::Graph;
using ir::Node;

struct GradientCheckOptions {
  double step = 1e-6;       // h
  double atol = 1e-5;       // torch.autograd.gradcheck's defaults
  double rtol = 1e-3;
  uint64_t seed = 7;        // of the loss weights
  // Check at most this many elements of each value, spread evenly over it (-1: every one).
  int64_t max_elements = -1;
};



// Uniform values in [low, high) of a floating dtype, from a fixed seed.
inline Tensor random_tensor(const Sizes& sizes, DType dtype, uint64_t seed, double low = -1.0, double high = 1.0) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  std::vector<double> values(size_t(numel_of(sizes)));
  for (double& value : values) value = uniform(engine);
  return Tensor::from_doubles(sizes, values, dtype);
}

// `forward` with its floating outputs folded into one scalar loss: sum_i sum(out_i * w_i), the
// weights w_i being new placeholders "loss_weight_<i>" whose values are added to `inputs`.
inline Graph with_weighted_loss(const Graph& forward, std::map<std::string, Tensor>& inputs, uint64_t seed) {
  Graph graph = forward.clone();
  std::vector<Node*> outputs = graph.outputs();
  graph.erase(graph.output_node());
  std::map<std::string, int64_t> bindings = ir::bind_symbols(graph, inputs);
  Node* loss = nullptr;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::TensorMeta& meta = outputs[i]->value();
    if (!is_floating(meta.dtype)) continue;
    std::string name = "loss_weight_" + std::to_string(i);
    Node* weight = graph.create_placeholder(name, meta);
    inputs[name] = random_tensor(meta.evaluate_shape(bindings), meta.dtype, seed + i);
    Node* term = graph.create_call("sum", {graph.create_call("mul", {outputs[i], weight})});
    loss = loss ? graph.create_call("add", {loss, term}) : term;
  }
  graph.create_output({loss});
  return graph;
}

// The scalar loss of `graph` on `inputs`.
inline double loss_of(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  return ir::interpret(graph, inputs).at(0).item();
}

// Checks the gradients of every floating placeholder and parameter of `forward` (which the
// loss is built on) against finite differences; returns one message per mismatch (empty: ok).
inline std::vector<std::string> check_gradients(const Graph& forward, std::map<std::string, Tensor> inputs,
                                                const GradientCheckOptions& options = {}) {
  Graph loss_graph = with_weighted_loss(forward, inputs, options.seed);
  std::vector<std::string> wrt;
  for (Node* node : forward.placeholders())
    if (is_floating(node->value().dtype)) wrt.push_back(node->target());
  for (const auto& [name, tensor] : forward.parameters())
    if (is_floating(tensor.dtype())) wrt.push_back(name);
  passes::JointGraph joint = passes::build_joint_graph(loss_graph, passes::AutodiffOptions::for_loss(0, wrt));
  ir::verify(joint.graph);
  std::vector<Tensor> results = ir::interpret(joint.graph, inputs);

  std::vector<std::string> mismatches;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const std::string& name = wrt[w];
    const Tensor& analytic = results.at(size_t(joint.num_forward_outputs) + w);
    bool is_input = inputs.count(name) > 0;
    Tensor original = is_input ? inputs.at(name) : *loss_graph.parameter(name);
    if (analytic.sizes() != original.sizes()) {
      mismatches.push_back(name + ": gradient has sizes " + sizes_to_string(analytic.sizes()));
      continue;
    }
    int64_t numel = original.numel();
    int64_t stride = options.max_elements > 0 && numel > options.max_elements ? numel / options.max_elements : 1;
    for (int64_t i = 0; i < numel; i += stride) {
      double value[2];
      for (int side = 0; side < 2; ++side) {
        Tensor perturbed = original.clone();
        Sizes index(original.sizes().size());
        for (int64_t rest = i, d = int64_t(index.size()) - 1; d >= 0; --d) {
          index[size_t(d)] = rest % original.size(d);
          rest /= original.size(d);
        }
        perturbed.set_double(index, original.flat_double(i) + (side == 0 ? options.step : -options.step));
        if (is_input) {
          std::map<std::string, Tensor> moved = inputs;
          moved[name] = perturbed;
          value[side] = loss_of(loss_graph, moved);
        } else {
          Graph moved = loss_graph.clone();
          moved.set_parameter(name, perturbed);
          value[side] = loss_of(moved, inputs);
        }
      }
      double numeric = (value[0] - value[1]) / (2 * options.step);
      double got = analytic.flat_double(i);
      if (!(std::abs(got - numeric) <= options.atol + options.rtol * std::abs(numeric))) {
        std::ostringstream message;
        message << name << "[" << i << "]: autodiff " << got << ", finite differences " << numeric;
        mismatches.push_back(message.str());
      }
    }
  }
  return mismatches;
}

}  // namespace kiln::testing
