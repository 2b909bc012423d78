// The min-cut partition of a joint graph: classify nodes into forward and backward, weigh the
// forward values the backward reads, cut the flow network (passes/max_flow.h), and extract
// the forward and backward graphs (verified when RunOptions::default_verify_each() says so).
#include "passes/partition.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/max_flow.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"

namespace kiln::passes {

namespace {

using ir::Node;
using ir::OpKind;
using NodeSet = std::set<const Node*>;

// `roots` and every node they read, transitively, not walking past `stops` (which are
// included when reached).
NodeSet ancestors(const std::vector<const Node*>& roots, const NodeSet& stops) {
  NodeSet reached;
  std::vector<const Node*> pending(roots.begin(), roots.end());
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    if (!reached.insert(node).second || stops.count(node)) continue;
    for (const Node* input : node->input_nodes()) pending.push_back(input);
  }
  return reached;
}

// Carries parameter `target` of `source` over to `graph`, with its kind.
void carry_parameter(const ir::Graph& source, ir::Graph& graph, const std::string& target) {
  const Tensor* value = source.parameter(target);
  KILN_CHECK(value, "partition: no parameter '", target, "'");
  graph.set_parameter(target, *value);
  graph.signature().set_attribute_kind(target, source.signature().attribute_kind(target));
}

// The graph made of `inputs` (as placeholders, in order) and the nodes of `source` that
// `outputs` need, in source order, returning `outputs` with `output_specs` (by position; the
// rest are user outputs). An input that is not a placeholder of `source` becomes a contiguous
// placeholder named like it. The parameters some get_attr reads are carried over, and those
// a mutation output writes back into, each with its kind.
ir::Graph extract(const ir::Graph& source, const std::vector<const Node*>& inputs,
                  const std::vector<const Node*>& outputs, const std::vector<ir::OutputSpec>& output_specs = {}) {
  NodeSet stops(inputs.begin(), inputs.end());
  NodeSet needed = ancestors(outputs, stops);
  ir::Graph graph;
  std::map<const Node*, Node*> copies;
  for (const Node* input : inputs) {
    const ir::TensorMeta& meta = input->value();
    ir::NodeMeta placeholder_meta;
    placeholder_meta.values.push_back(ir::TensorMeta::contiguous(meta.dtype, meta.shape, meta.device));
    std::string target = input->op() == OpKind::placeholder ? input->target() : input->name();
    Node* copy = graph.create_node(OpKind::placeholder, target, {}, {}, input->name(), std::move(placeholder_meta));
    copy->source = input->source;
    copies[input] = copy;
  }
  std::function<ir::Argument(const ir::Argument&)> remap = [&](const ir::Argument& argument) -> ir::Argument {
    if (argument.is_node()) return ir::Argument(copies.at(argument.node()));
    if (!argument.is_list()) return argument;
    std::vector<ir::Argument> items;
    for (const ir::Argument& item : argument.list()) items.push_back(remap(item));
    return ir::Argument(std::move(items));
  };
  for (const Node* node : source.nodes()) {
    if (!needed.count(node) || stops.count(node)) continue;
    KILN_CHECK(node->op() != OpKind::placeholder, "partition: ", describe(*node),
               " is needed but is not an input of the graph being extracted");
    if (node->op() == OpKind::get_attr) carry_parameter(source, graph, node->target());
    std::vector<ir::Argument> args;
    for (const ir::Argument& argument : node->args()) args.push_back(remap(argument));
    ir::Kwargs kwargs;
    for (const auto& [key, argument] : node->kwargs()) kwargs.emplace_back(key, remap(argument));
    Node* copy = graph.create_node(node->op(), node->target(), std::move(args), std::move(kwargs), node->name(), node->meta);
    copy->source = node->source;
    copies[node] = copy;
  }
  std::vector<ir::Argument> returned;
  for (const Node* output : outputs) returned.emplace_back(copies.at(output));
  graph.create_output(std::move(returned));
  for (size_t i = 0; i < output_specs.size(); ++i) {
    const ir::OutputSpec& spec = output_specs[i];
    if (spec.is_mutation() && spec.kind != ir::OutputKind::user_input_mutation && !graph.parameter(spec.target))
      carry_parameter(source, graph, spec.target);
    graph.signature().set_output(i, spec);
  }
  return graph;
}

std::string format_bytes(int64_t bytes) {
  char text[64];
  if (bytes < 1024) std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  else if (bytes < 1024 * 1024) std::snprintf(text, sizeof text, "%.2f KiB", double(bytes) / 1024);
  else std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / (1024 * 1024));
  return text;
}

// The joint graph's nodes sorted by role.
struct Roles {
  std::vector<const Node*> primals;   // non-tangent placeholders, in order
  std::vector<const Node*> tangents;  // in JointGraph::tangents order
  std::vector<const Node*> forward_outputs;
  std::vector<const Node*> gradients;
  NodeSet forward;  // every node some forward output depends on, and every primal
  // Forward values (not parameters) that backward nodes or gradient outputs read, in graph order.
  std::vector<const Node*> read_by_backward;
};

Roles find_roles(const JointGraph& joint) {
  const ir::Graph& graph = joint.graph;
  Roles roles;
  KILN_CHECK(graph.output_node(), "partition: the joint graph has no output node");
  std::vector<Node*> outputs = graph.outputs();
  KILN_CHECK(outputs.size() == size_t(joint.num_forward_outputs) + joint.wrt.size(), "partition: the joint graph returns ",
             outputs.size(), " values, expected ", joint.num_forward_outputs, " forward outputs and ", joint.wrt.size(),
             " gradients");
  roles.forward_outputs.assign(outputs.begin(), outputs.begin() + joint.num_forward_outputs);
  roles.gradients.assign(outputs.begin() + joint.num_forward_outputs, outputs.end());

  std::map<std::string, const Node*, std::less<>> placeholders;
  for (const Node* placeholder : graph.placeholders()) placeholders[placeholder->name()] = placeholder;
  for (const std::string& name : joint.tangents) {
    auto found = placeholders.find(name);
    KILN_CHECK(found != placeholders.end(), "partition: no tangent placeholder '", name, "'");
    roles.tangents.push_back(found->second);
  }
  NodeSet tangent_set(roles.tangents.begin(), roles.tangents.end());
  for (const Node* placeholder : graph.placeholders())
    if (!tangent_set.count(placeholder)) roles.primals.push_back(placeholder);

  roles.forward = ancestors(roles.forward_outputs, {});
  for (const Node* tangent : roles.tangents)
    KILN_CHECK(!roles.forward.count(tangent), "partition: forward output depends on tangent ", tangent->name());
  roles.forward.insert(roles.primals.begin(), roles.primals.end());
  // A projection of a forward tuple is computed in the forward, so that it can be saved.
  for (const Node* node : graph.nodes())
    if (node->op() == OpKind::call_function && node->target() == "getitem" && roles.forward.count(node->input_nodes().at(0)))
      roles.forward.insert(node);

  // Backward nodes (needed by a gradient, not forward) and the gradient outputs read these.
  NodeSet backward = ancestors(roles.gradients, roles.forward);
  NodeSet read;
  auto note_read = [&](const Node* value) {
    if (roles.forward.count(value) && value->op() != OpKind::get_attr) read.insert(value);
  };
  for (const Node* node : backward) {
    if (roles.forward.count(node)) continue;
    for (const Node* input : node->input_nodes()) note_read(input);
  }
  for (const Node* gradient : roles.gradients) note_read(gradient);
  for (const Node* node : graph.nodes())
    if (read.count(node)) roles.read_by_backward.push_back(node);
  return roles;
}

// The forward values to save: the minimum cut nearest the backward.
std::vector<const Node*> choose_saved(const JointGraph& joint, const Roles& roles, const PartitionOptions& options) {
  std::map<const Node*, int> in_vertex;  // the out-vertex is in_vertex + 1
  MaxFlow network(2);
  const int source = 0, sink = 1;
  std::vector<const Node*> forward_values;
  for (const Node* node : joint.graph.nodes()) {
    if (!roles.forward.count(node) || node->op() == OpKind::get_attr) continue;
    forward_values.push_back(node);
    int in = network.add_vertex();
    network.add_vertex();
    in_vertex[node] = in;
    bool savable = node->has_single_value();
    network.add_edge(in, in + 1, savable ? value_bytes(*node, options) : MaxFlow::kInfinite);
    if (node->op() == OpKind::placeholder || !is_recomputable(*node)) network.add_edge(source, in, MaxFlow::kInfinite);
  }
  for (const Node* node : forward_values)
    for (const Node* input : node->input_nodes())
      if (auto found = in_vertex.find(input); found != in_vertex.end())
        network.add_edge(found->second + 1, in_vertex.at(node), MaxFlow::kInfinite);
  for (const Node* value : roles.read_by_backward) network.add_edge(in_vertex.at(value) + 1, sink, MaxFlow::kInfinite);

  int64_t flow = network.solve(source, sink);
  KILN_CHECK(flow < MaxFlow::kInfinite, "partition: no finite cut (a value the backward reads cannot be saved)");
  std::vector<bool> sink_side = network.sink_side();
  std::vector<const Node*> saved;
  for (const Node* node : forward_values) {
    int in = in_vertex.at(node);
    if (!sink_side[size_t(in)] && sink_side[size_t(in + 1)]) saved.push_back(node);
  }
  return saved;
}

}  // namespace

bool is_recomputable(const Node& node) {
  if (node.op() != OpKind::call_function) return false;
  const ir::OpInfo* op = ir::OpRegistry::global().find(node.target());
  if (!op || op->has_tag("random") || op->has_tag("mutation") || op->is_inplace()) return false;
  return op->name() == "getitem" || op->has_tag("pointwise") || op->is_view || op->has_tag("view") ||
         op->has_tag("creation");
}

int64_t value_bytes(const Node& node, const PartitionOptions& options) {
  int64_t bytes = 0;
  for (const ir::TensorMeta& value : node.meta.values) {
    ir::SymInt numel = value.numel();
    std::map<std::string, int64_t> bindings;
    for (const std::string& symbol : numel.free_symbols()) {
      auto hint = options.size_hints.find(symbol);
      bindings[symbol] = hint != options.size_hints.end() ? hint->second : options.default_symbol_hint;
    }
    bytes += numel.evaluate(bindings) * int64_t(dtype_size(value.dtype));
  }
  return bytes;
}

Partition partition_joint_graph(const JointGraph& joint, const PartitionOptions& options) {
  Roles roles = find_roles(joint);
  std::vector<const Node*> saved = choose_saved(joint, roles, options);

  Partition result;
  result.num_forward_outputs = joint.num_forward_outputs;
  result.wrt = joint.wrt;
  result.tangents = joint.tangents;
  std::vector<const Node*> forward_outputs = roles.forward_outputs;
  forward_outputs.insert(forward_outputs.end(), saved.begin(), saved.end());
  std::vector<ir::OutputSpec> forward_specs;  // the forward outputs'; the saved values are user outputs
  for (int i = 0; i < joint.num_forward_outputs; ++i) forward_specs.push_back(joint.graph.signature().output(size_t(i)));
  result.forward = extract(joint.graph, roles.primals, forward_outputs, forward_specs);
  std::vector<const Node*> backward_inputs = saved;
  backward_inputs.insert(backward_inputs.end(), roles.tangents.begin(), roles.tangents.end());
  result.backward = extract(joint.graph, backward_inputs, roles.gradients);
  if (RunOptions::default_verify_each()) {
    ir::verify(result.forward);
    ir::verify(result.backward);
  }

  for (const Node* node : saved) {
    result.saved.push_back({node->name(), node->meta.type_string(), value_bytes(*node, options)});
    result.saved_bytes += result.saved.back().bytes;
  }
  for (const Node* node : roles.read_by_backward) result.baseline_bytes += value_bytes(*node, options);
  result.baseline_values = int64_t(roles.read_by_backward.size());
  for (const Node* node : result.backward.nodes()) {
    const Node* original = joint.graph.find(node->name());
    if (node->op() == OpKind::call_function && roles.forward.count(original)) {
      KILN_CHECK(is_recomputable(*original), "partition: ", describe(*original), " may not be recomputed");
      result.recomputed.push_back(node->name());
    }
  }
  std::set<std::string> symbols;
  for (const Node* node : roles.read_by_backward)
    for (const ir::TensorMeta& value : node->meta.values)
      for (const std::string& symbol : value.numel().free_symbols()) symbols.insert(symbol);
  for (const std::string& symbol : symbols) {
    auto hint = options.size_hints.find(symbol);
    result.size_hints[symbol] = hint != options.size_hints.end() ? hint->second : options.default_symbol_hint;
  }
  return result;
}

std::string Partition::report() const {
  std::ostringstream out;
  out << "# partition: saved " << saved.size() << " values, " << format_bytes(saved_bytes) << " (" << saved_bytes
      << " bytes); saving every activation: " << baseline_values << " values, " << format_bytes(baseline_bytes) << " ("
      << baseline_bytes << " bytes)";
  if (baseline_bytes > 0) {
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.1f%%", 100.0 * double(saved_bytes) / double(baseline_bytes));
    out << ", " << percent;
  }
  out << "\n";
  if (!size_hints.empty()) {
    out << "# sizes counted with";
    for (const auto& [symbol, value] : size_hints) out << " " << symbol << "=" << value;
    out << "\n";
  }
  for (const SavedValue& value : saved) out << "#   saved " << value.name << " : " << value.type << " " << format_bytes(value.bytes) << "\n";
  if (!recomputed.empty()) {
    out << "#   recomputed in the backward:";
    for (const std::string& name : recomputed) out << " " << name;
    out << "\n";
  }
  return out.str();
}

}  // namespace kiln::passes
