// The f32 edge cases: PyTorch's goldens, the graphs of their ops, and random edge graphs.
#include "tests/support/f32_edge_cases.h"

#include <cmath>
#include <limits>

#include "ir/graph.h"
#include "kiln/safetensors.h"
#include "tests/support/test_paths.h"

namespace kiln::test_support {

namespace {

using ir::Argument;
using ir::Node;
using ir::SymInt;

// torch.linspace(start, end, n) in f32.
Tensor linspace(double start, double end, int64_t n) {
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = n == 1 ? start : start + (end - start) * double(i) / double(n - 1);
  return Tensor::from_doubles({n}, values, DType::f32);
}

Node* placeholder(ir::Graph& graph, const std::string& name, ir::SymShape shape) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(DType::f32, std::move(shape)));
}

// One op of the golden script over `x` (rows along the last dim).
std::vector<Node*> apply(ir::Graph& graph, const std::string& op, Node* x) {
  const ir::SymShape& shape = x->value().shape;
  SymInt n = shape.back();
  Argument last = Argument::ints({-1});
  if (op == "softmax" || op == "log_softmax") return {graph.create_call(op, {x, int64_t(-1)})};
  if (op == "layer_norm") {
    Node* weight = placeholder(graph, "weight", {n});
    Node* bias = placeholder(graph, "bias", {n});
    return {graph.create_call("layer_norm", {x, Argument::sym_ints({n}), weight, bias, 1e-5})};
  }
  if (op == "rms_norm") {
    Node* weight = placeholder(graph, "weight", {n});
    return {graph.create_call("rms_norm", {x, Argument::sym_ints({n}), weight, Argument()})};
  }
  if (op == "group_norm") {  // [2, n] as [1, 2, n]: one group of two channels
    Node* weight = placeholder(graph, "channel_weight", {2});
    Node* bias = placeholder(graph, "channel_bias", {2});
    Node* grouped = graph.create_call("reshape", {x, Argument::sym_ints({SymInt(1), SymInt(2), n})});
    Node* normalized = graph.create_call("group_norm", {grouped, int64_t(1), weight, bias, 1e-5});
    return {graph.create_call("reshape", {normalized, Argument::sym_ints(shape)})};
  }
  if (op == "batch_norm") {  // [2, n] transposed: n samples of two channels
    Node* weight = placeholder(graph, "channel_weight", {2});
    Node* bias = placeholder(graph, "channel_bias", {2});
    Node* samples = graph.create_call("transpose", {x, int64_t(0), int64_t(1)});
    Node* normalized =
        graph.create_call("batch_norm", {samples, weight, bias, Argument(), Argument(), true, 0.1, 1e-5});
    return {graph.create_call("transpose", {normalized, int64_t(0), int64_t(1)})};
  }
  if (op == "var") return {graph.create_call("var", {x, last})};
  if (op == "var_mean") {
    Node* both = graph.create_call("var_mean", {x, last}, {{"correction", 0.0}});
    return {graph.create_call("getitem", {both, int64_t(0)}), graph.create_call("getitem", {both, int64_t(1)})};
  }
  if (op == "sum" || op == "mean") return {graph.create_call(op, {x, last})};
  if (op == "amax" || op == "amin") return {graph.create_call(op, {x, last})};
  throw std::invalid_argument("no f32 edge graph for op '" + op + "'");
}

}  // namespace

std::vector<F32EdgeCase> f32_edge_cases() {
  SafetensorsContents contents =
      load_safetensors(std::string(KILN_SOURCE_DIR) + "/tests/data/f32_edges/goldens.safetensors");
  std::vector<F32EdgeCase> cases;
  for (const auto& [key, op] : contents.metadata) {
    if (key.rfind("case.", 0) != 0) continue;
    F32EdgeCase c;
    c.name = key.substr(5);
    c.op = op;
    c.x = contents.tensors.at(c.name + ".x");
    for (int i = 0; contents.tensors.count(c.name + ".out" + std::to_string(i)); ++i)
      c.expected.push_back(contents.tensors.at(c.name + ".out" + std::to_string(i)));
    cases.push_back(std::move(c));
  }
  return cases;
}

ir::Graph f32_edge_graph(const std::string& op) {
  ir::Graph graph;
  Node* x = placeholder(graph, "x", {SymInt(2), SymInt::symbol("s0")});
  std::vector<Node*> outputs = apply(graph, op, x);
  graph.create_output(std::vector<Argument>(outputs.begin(), outputs.end()));
  return graph;
}

std::map<std::string, Tensor> f32_edge_inputs(const ir::Graph& graph, const Tensor& x) {
  int64_t n = x.size(-1);
  std::map<std::string, Tensor> inputs{{"x", x.clone()}};
  for (Node* node : graph.placeholders()) {
    const std::string& name = node->target();
    if (name == "weight") inputs[name] = linspace(0.5, 1.5, n);
    if (name == "bias") inputs[name] = linspace(-0.25, 0.25, n);
    if (name == "channel_weight") inputs[name] = linspace(0.5, 1.5, 2);
    if (name == "channel_bias") inputs[name] = linspace(-0.25, 0.25, 2);
  }
  return inputs;
}

namespace {

// splitmix64, so that graphs and inputs are the same everywhere.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t uniform(int64_t low, int64_t high) { return low + int64_t(next() % uint64_t(high - low + 1)); }
  double real(double low, double high) { return low + (high - low) * double(next() >> 11) / double(1ull << 53); }
};

}  // namespace

ir::Graph random_f32_edge_graph(uint64_t seed) {
  Random random{seed * 7919 + 3};
  static const std::vector<std::string> ops = {"softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm",
                                               "batch_norm", "var", "var_mean", "sum", "mean", "amax", "amin"};
  ir::Graph graph;
  bool three_dims = random.uniform(0, 1) == 1;
  ir::SymShape shape = three_dims ? ir::SymShape{SymInt(2), SymInt(3), SymInt::symbol("s0")}
                                  : ir::SymShape{SymInt(2), SymInt::symbol("s0")};
  Node* value = placeholder(graph, "x", shape);
  std::vector<Argument> outputs;
  int64_t steps = random.uniform(1, 3);
  for (int64_t step = 0; step < steps; ++step) {
    const std::string& op = ops[size_t(random.uniform(0, int64_t(ops.size()) - 1))];
    // Normalizations over channels need [2, n]; every op needs a row left.
    const ir::SymShape& now = value->value().shape;
    if ((op == "group_norm" || op == "batch_norm") && (now.size() != 2 || now[0] != SymInt(2))) continue;
    if (now.empty()) continue;
    if (op == "layer_norm" || op == "rms_norm") {
      // Weights of the row's length: a placeholder per use.
      SymInt n = value->value().shape.back();
      Node* weight = placeholder(graph, "weight" + std::to_string(step), {n});
      value = op == "layer_norm"
                  ? graph.create_call(op, {value, Argument::sym_ints({n}), weight, Argument(), 1e-5})
                  : graph.create_call(op, {value, Argument::sym_ints({n}), weight, Argument()});
    } else if (op == "group_norm" || op == "batch_norm") {
      Node* weight = placeholder(graph, "channel_weight" + std::to_string(step), {2});
      Node* bias = placeholder(graph, "channel_bias" + std::to_string(step), {2});
      if (op == "group_norm") {
        Node* grouped = graph.create_call("unsqueeze", {value, int64_t(0)});
        Node* normalized = graph.create_call("group_norm", {grouped, int64_t(1), weight, bias, 1e-5});
        value = graph.create_call("squeeze", {normalized, int64_t(0)});
      } else {
        Node* samples = graph.create_call("transpose", {value, int64_t(0), int64_t(1)});
        Node* normalized =
            graph.create_call("batch_norm", {samples, weight, bias, Argument(), Argument(), true, 0.1, 1e-5});
        value = graph.create_call("transpose", {normalized, int64_t(0), int64_t(1)});
      }
    } else if (op == "var_mean") {
      Node* both = graph.create_call("var_mean", {value, Argument::ints({-1})}, {{"correction", 0.0}});
      outputs.emplace_back(graph.create_call("getitem", {both, int64_t(0)}));
      value = graph.create_call("getitem", {both, int64_t(1)});
    } else {
      value = apply(graph, op, value).front();
    }
    // Now and then a view between steps, so that rows are read through strides.
    if (value->value().rank() >= 2 && random.uniform(0, 3) == 0)
      value = graph.create_call("transpose", {value, int64_t(-1), int64_t(-2)});
  }
  outputs.emplace_back(value);
  graph.create_output(std::move(outputs));
  return graph;
}

std::map<std::string, Tensor> random_f32_edge_inputs(const ir::Graph& graph, uint64_t seed, int64_t size) {
  Random random{seed * 104729 + 11};
  static const double kInfinity = std::numeric_limits<double>::infinity();
  static const std::vector<double> huge = {3e38, -3e38, 1e21, -1e21, kInfinity, -kInfinity, std::nan("")};
  static const std::vector<double> tiny = {1e-40, -1e-45, 1.2e-38, -3e-39};
  std::map<std::string, Tensor> inputs;
  for (Node* node : graph.placeholders()) {
    Sizes sizes = node->value().evaluate_shape({{"s0", size}});
    int64_t row = sizes.empty() ? 1 : sizes.back();
    int64_t count = numel_of(sizes);
    std::vector<double> values(static_cast<size_t>(count));
    bool weight = node->target() != "x";
    bool all_negative_infinity = !weight && random.uniform(0, 9) == 0;
    for (int64_t start = 0; start < count; start += row) {
      int64_t kind = weight ? 0 : random.uniform(0, 3);  // 0 plain, 1 one huge, 2 tiny ones, 3 both
      for (int64_t i = 0; i < row; ++i) values[size_t(start + i)] = weight ? random.real(0.5, 1.5) : random.real(-2, 2);
      if (kind & 1) values[size_t(start + random.uniform(0, row - 1))] = huge[size_t(random.uniform(0, 6))];
      if (kind & 2)
        for (int64_t k = 0; k < 2; ++k) {
          size_t at = size_t(start + random.uniform(0, row - 1));
          if (std::fabs(values[at]) <= 2) values[at] = tiny[size_t(random.uniform(0, 3))];
        }
      if (all_negative_infinity)
        for (int64_t i = 0; i < row; ++i) values[size_t(start + i)] = -kInfinity;
    }
    inputs[node->target()] = Tensor::from_doubles(sizes, values, DType::f32);
  }
  return inputs;
}

}  // namespace kiln::test_support
