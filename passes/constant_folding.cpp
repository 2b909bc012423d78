// Constant folding: evaluates constant subgraphs with the reference interpreter.
#include "passes/constant_folding.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "passes/graph_queries.h"

namespace kiln::passes {

namespace {

// Evaluates one node whose tensor inputs have known values, by running a two-level graph
// (the inputs as parameters, then the node) through the interpreter.
Tensor evaluate_node(const ir::Node& node, const std::map<const ir::Node*, Tensor>& values) {
  ir::Graph scratch;
  std::map<const ir::Node*, ir::Node*> inputs;
  for (ir::Node* input : node.input_nodes()) {
    std::string name = "c" + std::to_string(inputs.size());
    scratch.set_parameter(name, values.at(input));
    inputs[input] = scratch.create_get_attr(name);
  }
  std::function<ir::Argument(const ir::Argument&)> remap = [&](const ir::Argument& argument) -> ir::Argument {
    if (argument.is_node()) return ir::Argument(inputs.at(argument.node()));
    if (argument.is_list()) {
      std::vector<ir::Argument> items;
      for (const ir::Argument& item : argument.list()) items.push_back(remap(item));
      return ir::Argument(std::move(items));
    }
    return argument;
  };
  std::vector<ir::Argument> args;
  for (const ir::Argument& argument : node.args()) args.push_back(remap(argument));
  ir::Kwargs kwargs;
  for (const auto& [key, argument] : node.kwargs()) kwargs.emplace_back(key, remap(argument));
  ir::Node* call = scratch.create_call(node.target(), std::move(args), std::move(kwargs));
  scratch.create_output({call});
  std::vector<Tensor> outputs = ir::Interpreter().run(scratch, {});
  return outputs.at(0).clone();  // own the memory: views would pin their inputs
}

// A view (t, permute, reshape that can be one, expand, ...): the code generator reads its input
// through it at no cost. A reshape that cannot be a view of its input (a permuted weight's dims
// merged: a mixture of experts' [experts, d, h] weights as one [d, experts * h] matrix) is a copy,
// made again at every call unless folded: its result is contiguous where its input is not.
bool in_place_view(const ir::Node& node) {
  const ir::OpInfo* op = ir::OpRegistry::global().find(node.target());
  if (!op || !(op->is_view || op->has_tag("view"))) return false;
  if (!node.value().is_contiguous()) return true;
  for (ir::Node* input : node.input_nodes())
    if (input->has_single_value() && !input->value().is_contiguous()) return false;
  return true;
}

bool foldable(const ir::Node& node) {
  return node.op() == ir::OpKind::call_function && node.has_single_value() && node.value().is_static() &&
         !node_mutates(node);
}

// A parameter's dtype, sizes and 64 of its 8-byte words spread evenly: equal for equal
// parameters; those with the same key are then compared byte by byte.
using ContentKey = std::tuple<DType, Sizes, std::vector<uint64_t>>;

ContentKey content_key(const Tensor& t) {
  std::vector<uint64_t> samples;
  const size_t words = t.nbytes() / sizeof(uint64_t);
  const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
  for (size_t i = 0; i < std::min<size_t>(words, 64); ++i) {
    uint64_t word;
    std::memcpy(&word, bytes + (words <= 64 ? i : i * (words - 1) / 63) * sizeof(uint64_t), sizeof word);
    samples.push_back(word);
  }
  return {t.dtype(), t.sizes(), std::move(samples)};
}

// With freeze, a get_attr of a parameter equal to one read earlier (dtype, sizes and every byte)
// reads that one instead, so that the compiled model, its prepacked copies and the caches hold one:
// PyTorch's TorchScript ONNX exporter writes a weight again for each use in an unrolled
// recurrence (each step's Gemm or MatMul its own transposed initializer: a greedy GRU decoder's
// 6 steps read 6 copies of each of its weights, 2.2 MB where 0.47 MB are distinct). A parameter
// that a mutation output writes back keeps its own node. The copies nothing reads any more are
// dropped with the other unread parameters below.
bool share_identical_parameters(ir::Graph& graph, const std::set<std::string>& written_back) {
  std::map<ContentKey, std::vector<std::string>> seen;
  bool changed = false;
  for (ir::Node* node : graph.nodes()) {
    if (node->op() != ir::OpKind::get_attr || written_back.count(node->target())) continue;
    const Tensor* t = graph.parameter(node->target());
    if (t == nullptr || !t->device().is_cpu() || !t->is_contiguous() || t->numel() == 0) continue;
    std::vector<std::string>& same_key = seen[content_key(*t)];
    const std::string* twin = nullptr;
    for (const std::string& name : same_key) {
      if (name == node->target()) break;
      const Tensor* other = graph.parameter(name);
      if (std::memcmp(other->data_ptr(), t->data_ptr(), t->nbytes()) == 0) {
        twin = &name;
        break;
      }
    }
    if (twin != nullptr) {
      node->set_target(*twin);
      changed = true;
    } else if (std::find(same_key.begin(), same_key.end(), node->target()) == same_key.end()) {
      same_key.push_back(node->target());
    }
  }
  return changed;
}

}  // namespace

bool fold_constants(ir::Graph& graph, bool freeze) {
  if (!is_functional(graph)) return false;
  std::map<const ir::Node*, Tensor> values;
  // Large views of constants (in_place_view): constant, but evaluated only where a folded node
  // reads them; the graph keeps them as views, which the code generator reads in place.
  std::set<const ir::Node*> views;
  std::function<const Tensor&(const ir::Node*)> value_of = [&](const ir::Node* node) -> const Tensor& {
    auto found = values.find(node);
    if (found != values.end()) return found->second;
    for (ir::Node* input : node->input_nodes()) value_of(input);
    return values[node] = evaluate_node(*node, values);
  };
  auto is_constant = [&](const ir::Node* node) { return values.count(node) > 0 || views.count(node) > 0; };
  auto numel = [&](const ir::Node* node) {
    auto found = values.find(node);
    if (found != values.end()) return found->second.numel();
    return node->value().static_shape() ? numel_of(*node->value().static_shape()) : int64_t(0);
  };
  for (ir::Node* node : graph.nodes()) {
    if (node->op() == ir::OpKind::get_attr &&
        (freeze || graph.signature().attribute_kind(node->target()) == ir::InputKind::constant_tensor))
      values[node] = *graph.parameter(node->target());
    if (!foldable(*node)) continue;
    std::vector<ir::Node*> inputs = node->input_nodes();
    if (!std::all_of(inputs.begin(), inputs.end(), is_constant)) continue;
    const int64_t elements = node->value().static_shape() ? numel_of(*node->value().static_shape()) : 0;
    // A large view of constants stays a view: folding it would copy the constant (ViT-B/16's
    // transposed linear weights: 340 MB of fresh memory and 1.1 s of page faults on every
    // `kiln run --freeze`, for the same run time).
    if (elements > kMaxFoldedDerivedElements && in_place_view(*node)) {
      views.insert(node);
      continue;
    }
    int64_t limit = inputs.empty() ? kMaxFoldedElements : kMaxFoldedDerivedElements;
    for (ir::Node* input : inputs) limit = std::max(limit, numel(input));
    if (elements > limit) continue;
    value_of(node);
  }

  // The constant nodes that the graph's other nodes read: those read by a node that is not
  // constant, or by a view of constants that is itself read so (it stays, reading them in place).
  std::set<const ir::Node*> read_at_run_time;
  std::vector<ir::Node*> order = graph.node_list();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node* node = *it;
    if (!is_constant(node)) continue;
    bool read = std::any_of(node->users().begin(), node->users().end(), [&](ir::Node* user) {
      return !is_constant(user) || (views.count(user) && read_at_run_time.count(user));
    });
    if (read) read_at_run_time.insert(node);
  }

  // Replace the frontier: constant call nodes read at run time, but the views of constants.
  bool changed = false;
  for (ir::Node* node : order) {
    if (node->op() != ir::OpKind::call_function || !values.count(node) || views.count(node)) continue;
    if (!read_at_run_time.count(node) || is_copy_back_output(*node)) continue;
    std::string name = "_folded_" + node->name();
    graph.set_parameter(name, values.at(node));
    graph.signature().set_attribute_kind(name, ir::InputKind::constant_tensor);
    ir::Node* constant;
    {
      auto guard = graph.inserting_before(node);
      constant = graph.create_get_attr(name);
    }
    constant->source = node->source;
    node->replace_all_uses_with(constant);
    changed = true;
  }
  // Constant nodes now unused go away, in reverse order.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    ir::Node* node = *it;
    if (node->op() == ir::OpKind::call_function && is_constant(node) && node->users().empty()) {
      graph.erase(node);
      changed = true;
    }
  }
  // Constants no get_attr reads any more are dropped if we created them, and with freeze any
  // parameter or buffer that nothing reads or writes back: the compiled model would hold it for
  // nothing (ResNet-50's weights before batch norm was folded into them: 117 MB of its 535 MB).
  std::set<std::string> written_back;
  for (const ir::OutputSpec& spec : graph.signature().outputs())
    if (spec.is_mutation()) written_back.insert(spec.target);
  if (freeze) changed |= share_identical_parameters(graph, written_back);
  std::set<std::string> read;
  for (ir::Node* node : graph.nodes())
    if (node->op() == ir::OpKind::get_attr) read.insert(node->target());
  for (const auto& [name, tensor] : std::map<std::string, Tensor, std::less<>>(graph.parameters())) {
    const bool ours = name.starts_with("_folded_") && graph.signature().attribute_kind(name) == ir::InputKind::constant_tensor;
    if (!(ours || freeze) || read.count(name) || written_back.count(name)) continue;
    graph.remove_parameter(name);
    changed = true;
  }
  return changed;
}

}  // namespace kiln::passes
