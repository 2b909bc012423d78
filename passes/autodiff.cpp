// The autodiff driver: checks the request, seeds the differentiated outputs, walks the forward
// graph backwards calling each node's VJP from the derivative table, sums the gradients that
// flow into each value, and returns the joint graph in the layout of joint_graph.h.
#include "passes/autodiff.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/op_registry.h"
#include "passes/derivatives/derivatives.h"
#include "passes/graph_queries.h"
#include "kiln/error.h"

namespace kiln::passes {

using ir::Argument;
using ir::Graph;
using ir::Node;
using ir::OpKind;

namespace {

// One entry of `wrt`: the nodes that read it (one placeholder, or every get_attr of a parameter).
struct WrtValue {
  std::string name;
  std::vector<Node*> nodes;
  ir::TensorMeta meta;
};

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}

void check_differentiable_graph(const Graph& graph) {
  for (Node* node : graph.nodes()) {
    if (node->op() != OpKind::call_function) continue;
    const ir::OpInfo* op = ir::OpRegistry::global().find(node->target());
    if (op != nullptr && op->composite)
      fail("autodiff: ", describe(*node), " is a composite op; autodiff needs a decomposed graph (run decompose first)");
    if (node_mutates(*node))
      fail("autodiff: ", describe(*node), " mutates its input; autodiff needs a functional graph (run functionalize "
           "first)");
  }
}

std::vector<WrtValue> resolve_wrt(const Graph& graph, const std::vector<std::string>& requested) {
  std::vector<std::string> names = requested;
  if (names.empty()) {
    for (Node* node : graph.nodes())
      if (node->op() == OpKind::get_attr && is_floating(node->value().dtype) &&
          std::find(names.begin(), names.end(), node->target()) == names.end())
        names.push_back(node->target());
  }
  std::vector<WrtValue> values;
  std::set<std::string> seen;
  for (const std::string& name : names) {
    if (!seen.insert(name).second) fail("autodiff: wrt names '", name, "' twice");
    WrtValue value{name, {}, {}};
    for (Node* node : graph.placeholders())
      if (node->target() == name) value.nodes.push_back(node);
    if (!value.nodes.empty()) {
      value.meta = value.nodes.front()->value();
    } else if (const Tensor* parameter = graph.parameter(name)) {
      for (Node* node : graph.nodes())
        if (node->op() == OpKind::get_attr && node->target() == name) value.nodes.push_back(node);
      ir::SymShape shape(parameter->sizes().begin(), parameter->sizes().end());
      value.meta = ir::TensorMeta::contiguous(parameter->dtype(), shape);
    } else {
      std::vector<std::string> placeholders, parameters;
      for (Node* node : graph.placeholders()) placeholders.push_back(node->target());
      for (const auto& [parameter_name, tensor] : graph.parameters()) parameters.push_back(parameter_name);
      fail("autodiff: wrt '", name, "' names no placeholder or parameter of the graph (placeholders: ",
           join(placeholders), "; parameters: ", join(parameters), ")");
    }
    if (!is_floating(value.meta.dtype))
      fail("autodiff: wrt '", name, "' has dtype ", dtype_name(value.meta.dtype),
           "; gradients exist only for floating values");
    values.push_back(std::move(value));
  }
  return values;
}

bool has_floating_value(const Node& node) {
  return std::any_of(node.meta.values.begin(), node.meta.values.end(),
                     [](const ir::TensorMeta& meta) { return is_floating(meta.dtype); });
}

// Builds the backward half into a graph that holds the forward nodes (and no output node).
class Backward {
 public:
  Backward(Graph& graph, std::vector<Node*> forward_nodes, const std::vector<WrtValue>& wrt)
      : graph_(graph), forward_nodes_(std::move(forward_nodes)) {
    for (const WrtValue& value : wrt)
      for (Node* node : value.nodes)
        if (is_floating(node->value().dtype)) requires_grad_.insert(node);
    for (Node* node : forward_nodes_) {
      if (node->op() != OpKind::call_function || !derivatives::find_derivative(node->target())) continue;
      if (!has_floating_value(*node)) continue;
      for (Node* input : node->input_nodes())
        if (requires_grad_.count(input)) {
          requires_grad_.insert(node);
          break;
        }
    }
  }

  // Seeds `node` (a forward output) with gradient `grad`. Call every seed before run().
  void seed(Node* node, Node* grad) {
    if (!is_floating(node->value().dtype)) return;
    add_contribution(node, 0, grad);
    seeds_.insert(node);
  }

  void run() {
    mark_reaching_seeds();
    for (auto it = forward_nodes_.rbegin(); it != forward_nodes_.rend(); ++it) {
      Node* node = *it;
      if (node->op() != OpKind::call_function || !needs(node)) continue;
      auto found = contributions_.find(node);
      if (found == contributions_.end()) continue;
      std::vector<Node*> output_grads;
      for (size_t element = 0; element < node->meta.values.size(); ++element)
        output_grads.push_back(accumulated(node, element));
      ir::OpCall call = ir::OpCall::of(*node);
      derivatives::VjpEmitter emit(graph_, *node, call, output_grads, [this](const Node* input) { return needs(input); });
      for (const derivatives::Gradient& gradient : (*derivatives::find_derivative(node->target()))(emit)) {
        const ir::TensorMeta& expected = gradient.input->meta.values.at(size_t(gradient.element));
        const ir::TensorMeta& got = gradient.value->value();
        KILN_CHECK(got.dtype == expected.dtype && got.shape == expected.shape, "the VJP of ", describe(*node),
                   " gave ", got.type_string(), " for ", describe(*gradient.input), " of type ", expected.type_string());
        add_contribution(gradient.input, gradient.element, gradient.value);
      }
    }
  }

  // The gradient of a wrt value: the sum over the nodes that read it, or zeros.
  Node* gradient_of(const WrtValue& value) {
    std::vector<Node*> parts;
    for (Node* node : value.nodes)
      if (Node* grad = accumulated(node, 0)) parts.push_back(grad);
    std::string name = "grad_" + value.name;
    if (parts.empty())
      return graph_.create_call("full", {Argument::sym_ints(value.meta.shape), 0.0}, {{"dtype", value.meta.dtype}},
                                graph_.unique_name(name));
    return sum(parts, name);
  }

 private:
  bool needs(const Node* node) const { return requires_grad_.count(node) && reaches_seed_.count(node); }

  void mark_reaching_seeds() {
    reaches_seed_ = {seeds_.begin(), seeds_.end()};
    for (auto it = forward_nodes_.rbegin(); it != forward_nodes_.rend(); ++it)
      if (reaches_seed_.count(*it))
        for (Node* input : (*it)->input_nodes()) reaches_seed_.insert(input);
  }

  void add_contribution(Node* node, int64_t element, Node* grad) {
    std::vector<std::vector<Node*>>& per_element = contributions_[node];
    per_element.resize(node->meta.values.size());
    per_element.at(size_t(element)).push_back(grad);
  }

  // The summed gradient of element `element` of `node` (nullptr when none flowed in). The
  // sum is built once, in the order the contributions arrived.
  Node* accumulated(Node* node, size_t element) {
    auto found = contributions_.find(node);
    if (found == contributions_.end() || found->second.at(element).empty()) return nullptr;
    std::vector<Node*>& parts = found->second[element];
    if (parts.size() > 1) parts = {sum(parts, "grad_" + node->name())};
    return parts.front();
  }

  Node* sum(const std::vector<Node*>& parts, const std::string& name) {
    Node* total = parts.front();
    for (size_t i = 1; i < parts.size(); ++i) total = graph_.create_call("add", {total, parts[i]}, {}, graph_.unique_name(name));
    return total;
  }

  Graph& graph_;
  std::vector<Node*> forward_nodes_;
  std::set<const Node*> requires_grad_;
  std::set<const Node*> reaches_seed_;
  std::set<Node*> seeds_;
  std::map<const Node*, std::vector<std::vector<Node*>>> contributions_;
};

}  // namespace

JointGraph build_joint_graph(const Graph& forward, const AutodiffOptions& options) {
  JointGraph joint;
  joint.graph = forward.clone();
  Graph& graph = joint.graph;
  Node* output = graph.output_node();
  if (output == nullptr) fail("autodiff: the forward graph has no output node");
  check_differentiable_graph(graph);
  std::vector<WrtValue> wrt = resolve_wrt(graph, options.wrt);

  std::vector<Argument> forward_outputs = output->args();
  std::vector<Node*> returned = graph.outputs();
  std::vector<std::string> output_names = graph.output_names();
  joint.num_forward_outputs = int64_t(forward_outputs.size());
  if (options.seed == AutodiffOptions::Seed::scalar_loss) {
    int64_t count = int64_t(returned.size());
    if (options.loss_output < 0 || options.loss_output >= count)
      fail("autodiff: loss output ", options.loss_output, " is out of range: the graph has ", count, " output",
           count == 1 ? "" : "s");
    const ir::TensorMeta& loss = returned[size_t(options.loss_output)]->value();
    std::optional<int64_t> numel = loss.numel().maybe_constant();
    if (!is_floating(loss.dtype) || !numel || *numel != 1)
      fail("autodiff: loss output ", options.loss_output, " (%", returned[size_t(options.loss_output)]->name(), ") is ",
           loss.type_string(), ", not a floating scalar; differentiate a scalar loss, or give grad_outputs");
  }
  graph.erase(output);

  std::vector<Node*> forward_nodes = graph.node_list();
  Backward backward(graph, forward_nodes, wrt);
  if (options.seed == AutodiffOptions::Seed::scalar_loss) {
    Node* loss = returned[size_t(options.loss_output)];
    const ir::TensorMeta& meta = loss->value();
    backward.seed(loss, graph.create_call("full", {Argument::sym_ints(meta.shape), 1.0}, {{"dtype", meta.dtype}},
                                          graph.unique_name("grad_" + loss->name())));
  } else {
    // Tangent placeholders go right after the forward placeholders.
    std::vector<Node*> tangents;
    auto create_tangents = [&] {
      for (size_t i = 0; i < returned.size(); ++i) {
        std::string name = graph.unique_name("tangent_" + output_names[i]);
        const ir::TensorMeta& meta = returned[i]->value();
        tangents.push_back(graph.create_placeholder(name, ir::TensorMeta::contiguous(meta.dtype, meta.shape)));
        joint.tangents.push_back(name);
      }
    };
    std::vector<Node*> placeholders = graph.placeholders();
    if (!placeholders.empty()) {
      auto position = graph.inserting_after(placeholders.back());
      create_tangents();
    } else if (!forward_nodes.empty()) {
      auto position = graph.inserting_before(forward_nodes.front());
      create_tangents();
    } else {
      create_tangents();
    }
    for (size_t i = 0; i < returned.size(); ++i) backward.seed(returned[i], tangents[i]);
  }
  backward.run();

  std::vector<Argument> outputs = forward_outputs;
  outputs.reserve(forward_outputs.size() + wrt.size());
  for (const WrtValue& value : wrt) {
    Node* gradient = backward.gradient_of(value);
    outputs.emplace_back(gradient);
    joint.wrt.push_back(value.name);
  }
  graph.create_output(std::move(outputs));
  // The forward outputs keep their specs (copy-backs stay copy-backs); the differentiated
  // output is the loss, the gradients are user outputs.
  if (options.seed == AutodiffOptions::Seed::scalar_loss &&
      graph.signature().output(size_t(options.loss_output)).kind == ir::OutputKind::user_output)
    graph.signature().set_output(size_t(options.loss_output), {ir::OutputKind::loss_output, ""});
  return joint;
}

}  // namespace kiln::passes
