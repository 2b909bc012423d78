// Functionalization: after the alias analysis (functionalize_aliases.h), one walk in graph
// order keeps, per storage base, its current functional value and a version that every
// write bumps. Each in-place node becomes functional ops plus a write-back into its base
// through the index map of its view chain; each read of an alias is redirected to its
// current value, regenerating views whose base changed since they were last computed.
// Then the mutated inputs become extra outputs, marked in the graph signature as copy-backs,
// the in-place nodes are erased, and so is whatever they alone kept alive.
#include "passes/functionalize.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/op_registry.h"
#include "passes/functionalize_aliases.h"
#include "passes/graph_queries.h"
#include "kiln/error.h"

namespace kiln::passes {

using ir::Argument;
using ir::Graph;
using ir::Kwargs;
using ir::Node;
using ir::OpKind;
using functionalization::AliasAnalysis;
using functionalization::AliasInfo;
using functionalization::AliasKind;

namespace {

// Whether a node's value is laid out contiguously from the start of its own storage, so
// that as_strided replayed on it reads what it read on the original (contiguous) base.
bool starts_dense(const Node& node) {
  if (!node.has_single_value() || !node.value().is_contiguous()) return false;
  if (node.op() != OpKind::call_function) return true;  // inputs start at offset 0
  const ir::OpInfo& op = ir::OpRegistry::global().get(node.target());
  if (!op.is_view) return true;  // a fresh result
  static const std::unordered_set<std::string> keep_offset = {"reshape", "view",    "squeeze", "unsqueeze",
                                                              "permute", "transpose", "expand"};
  return keep_offset.count(op.name()) && starts_dense(*ir::OpCall::of(node).arg(0).node());
}

class Functionalizer {
 public:
  Functionalizer(Graph& graph, const AliasAnalysis& aliases) : graph_(graph), aliases_(aliases) {}

  void run() {
    for (Node* node : graph_.node_list()) {
      auto guard = graph_.inserting_before(node);
      if (node_mutates(*node)) {
        functionalize_mutation(node);
        continue;
      }
      rewrite_inputs(node);
      if (node->op() != OpKind::output) start_value(node);
    }
    add_copy_back_outputs();
    // Later in-place nodes may read earlier ones: erase from the back.
    const std::vector<Node*>& mutations = aliases_.mutations();
    for (auto it = mutations.rbegin(); it != mutations.rend(); ++it) {
      for (Node* input : (*it)->input_nodes()) orphan_candidates_.push_back(input);
      erase(*it);
    }
    erase_orphans();
  }

 private:
  // ---- values

  struct Versioned {
    Node* value = nullptr;
    int64_t version = 0;
  };

  // The node that holds `node`'s value at this point of the walk.
  Node* current_value(Node* node) {
    const AliasInfo* info = aliases_.find(node);
    if (!info) return node;
    int64_t version = versions_[info->base];
    auto cached = current_.find(node);
    if (cached != current_.end() && cached->second.version == version) return cached->second.value;
    KILN_CHECK(info->kind != AliasKind::base, "no current value for base ", describe(*node));
    Node* parent = current_value(info->parent);
    // A regenerated view is named after the original: %t, then %t_1, ...
    Node* value =
        info->kind == AliasKind::view ? replay_view(*node, parent, graph_.unique_name(node->name())) : parent;
    current_[node] = {value, version};
    return value;
  }

  Argument current_argument(const Argument& argument) {
    if (argument.is_node()) return current_value(argument.node());
    if (!argument.is_list()) return argument;
    std::vector<Argument> items;
    for (const Argument& item : argument.list()) items.push_back(current_argument(item));
    return Argument(std::move(items));
  }

  // A node reached in the walk holds its own value (a view of its rewritten input, a fresh
  // result), except a second get_attr or getitem of a tensor that was written meanwhile.
  void start_value(Node* node) {
    const AliasInfo* info = aliases_.find(node);
    if (!info) return;
    int64_t version = versions_[info->base];
    bool reads_source = node->op() == OpKind::get_attr || node->target() == "getitem";
    if (info->kind == AliasKind::same_as && reads_source && version > 0) return;
    current_[node] = {node, version};
  }

  // ---- node creation

  Node* create(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {},
               const std::string& name = "") {
    Node* node = graph_.create_call(target, std::move(args), std::move(kwargs), name);
    created_.insert(node);
    return node;
  }

  // `view`'s op applied to `input` instead of its own self. A `view` is replayed as
  // `reshape`: the same values, whatever the layout of `input`.
  Node* replay_view(const Node& view, Node* input, const std::string& name = "") {
    bool as_reshape = view.target() == "view";
    std::vector<Argument> args = view.args();
    Kwargs kwargs = view.kwargs();
    if (!args.empty()) args[0] = input;
    for (auto& [key, value] : kwargs) {
      if (key == "self") value = input;
      if (key == "size" && as_reshape) key = "shape";
    }
    return create(as_reshape ? "reshape" : view.target(), std::move(args), std::move(kwargs), name);
  }

  // ---- rewriting

  // Every input is replaced by its current value; the meta follows (a view's strides may
  // change with its input's layout, and a `view` the new layout forbids becomes `reshape`).
  void rewrite_inputs(Node* node) {
    std::vector<Argument> args;
    for (const Argument& argument : node->args()) args.push_back(current_argument(argument));
    Kwargs kwargs;
    for (const auto& [key, value] : node->kwargs()) kwargs.emplace_back(key, current_argument(value));
    if (args == node->args() && kwargs == node->kwargs()) return;
    for (Node* input : node->input_nodes()) orphan_candidates_.push_back(input);
    node->set_args(std::move(args));
    node->set_kwargs(std::move(kwargs));
    if (node->op() != OpKind::call_function) return;
    try {
      node->meta = ir::infer_meta(*node);
    } catch (const Error&) {
      if (node->target() != "view") throw;
      node->set_target("reshape");
      Kwargs renamed = node->kwargs();
      for (auto& [key, value] : renamed)
        if (key == "size") key = "shape";
      node->set_kwargs(std::move(renamed));
      node->meta = ir::infer_meta(*node);
    }
  }

  // The value an in-place node writes into its self, computed out of place.
  Node* written_value(Node* node, Node* self) {
    const ir::OpInfo& op = ir::OpRegistry::global().get(node->target());
    const ir::TensorMeta& destination = self->value();
    if (op.is_inplace()) {
      std::vector<Argument> args;
      for (const Argument& argument : node->args()) args.push_back(current_argument(argument));
      Kwargs kwargs;
      for (const auto& [key, value] : node->kwargs()) kwargs.emplace_back(key, current_argument(value));
      return create(op.inplace_of, std::move(args), std::move(kwargs));
    }
    ir::OpCall call = ir::OpCall::of(*node);
    if (op.name() == "fill_") return create("full_like", {current_value(self), call.arg(1)});
    KILN_CHECK(op.name() == "copy_", "no functional form of ", describe(*node));
    Node* value = current_value(call.arg(1).node());
    if (value->value().dtype != destination.dtype) value = create("cast", {value, destination.dtype});
    if (value->value().shape != destination.shape)
      value = create("expand", {value, Argument::sym_ints(destination.shape)});
    return value;
  }

  void functionalize_mutation(Node* node) {
    Node* self = functionalization::mutated_node(*node);
    Node* value = written_value(node, self);
    if (value->value().dtype != self->value().dtype) value = create("cast", {value, self->value().dtype});
    write(self, value);
  }

  // Makes `value` the new content of `self` and of its base.
  void write(Node* self, Node* value) {
    Node* base = aliases_.at(self).base;
    std::vector<Node*> chain = aliases_.view_chain(self);
    Node* base_value = chain.empty() ? value : scatter_into_base(base, chain, value);
    if (aliases_.base_info(base).as_strided_alias && !starts_dense(*base_value))
      base_value = create("clone", {base_value});
    int64_t version = ++versions_[base];
    current_[base] = {base_value, version};
    if (!chain.empty()) current_[chain.back()] = {value, version};
  }

  // The base's current value with the elements that `chain` views replaced by `value`:
  //   positions = chain(reshape(iota(numel), shape))   the flat base position of each element
  //   reshape(index_put(reshape(base, [numel]), [positions], value), shape)
  Node* scatter_into_base(Node* base, const std::vector<Node*>& chain, Node* value) {
    Node* base_value = current_value(base);
    const ir::SymShape& shape = base->value().shape;
    ir::SymInt numel = base->value().numel();
    bool flat = shape.size() == 1;
    Node* positions = create("iota", {numel});
    if (!flat) positions = create("reshape", {positions, Argument::sym_ints(shape)});
    for (Node* view : chain) {
      bool last = view == chain.back();
      positions = replay_view(*view, positions, last ? graph_.unique_name(view->name() + "_positions") : "");
    }
    Node* flat_base = flat ? base_value : create("reshape", {base_value, Argument::sym_ints({numel})});
    // The new base value is named after the base: %x, then %x_1, %x_2, ...
    Node* updated = create("index_put", {flat_base, Argument(std::vector<Argument>{positions}), value}, {},
                           flat ? graph_.unique_name(base->name()) : "");
    if (flat) return updated;
    return create("reshape", {updated, Argument::sym_ints(shape)}, {}, graph_.unique_name(base->name()));
  }

  // ---- the graph boundary and clean-up

  // One extra output per mutated input (placeholder order), then per mutated parameter or
  // buffer, named "<input>_mutated" (made unique) and marked in the graph signature as the
  // copy-back of its input.
  void add_copy_back_outputs() {
    std::vector<Node*> mutated;
    for (OpKind kind : {OpKind::placeholder, OpKind::get_attr})
      for (Node* node : graph_.nodes())
        if (node->op() == kind && aliases_.at(node).kind == AliasKind::base && versions_[node] > 0)
          mutated.push_back(node);
    Node* output = graph_.output_node();
    std::unordered_map<Node*, Node*> renamed;
    for (Node* input : mutated) {
      Node* value = current_[input].value;
      std::string name = graph_.unique_name(input->name() + "_mutated");
      Node* copy_back = nullptr;
      if (created_.count(value) && !renamed.count(value)) {
        // A node this pass made: give it the copy-back name.
        auto guard = graph_.inserting_after(value);
        copy_back = graph_.create_node(OpKind::call_function, value->target(), value->args(), value->kwargs(), name,
                                       value->meta);
        copy_back->source = value->source;
        value->replace_all_uses_with(copy_back);
        erase(value);
        renamed[value] = copy_back;
      } else {
        // Another input's copy-back, or a value the graph already had (copy_ from it).
        if (renamed.count(value)) value = renamed[value];
        auto guard = graph_.inserting_before(output);
        copy_back = create("clone", {value}, {}, name);
      }
      std::vector<Argument> outputs = output->args();
      outputs.push_back(copy_back);
      output->set_args(std::move(outputs));
      graph_.signature().set_output(output->args().size() - 1, copy_back_spec(*input));
    }
  }

  // What the copy-back of `input` is in the graph signature.
  ir::OutputSpec copy_back_spec(const Node& input) const {
    if (input.op() == OpKind::placeholder) return {ir::OutputKind::user_input_mutation, input.target()};
    std::optional<ir::OutputKind> kind = ir::attribute_mutation_kind(graph_.signature().attribute_kind(input.target()));
    KILN_CHECK(kind.has_value(), "functionalize: ", describe(input), " is written but cannot be");  // checked before
    return {*kind, input.target()};
  }

  void erase(Node* node) {
    graph_.erase(node);
    erased_.insert(node);
  }

  // Nodes that lost their last user to this pass (views of a written base, the destination
  // of a copy_, ...) are dead now: erase them, and what they alone kept alive.
  void erase_orphans() {
    while (!orphan_candidates_.empty()) {
      Node* node = orphan_candidates_.back();
      orphan_candidates_.pop_back();
      if (erased_.count(node) || !node->users().empty()) continue;
      if (node->op() != OpKind::call_function && node->op() != OpKind::get_attr) continue;
      for (Node* input : node->input_nodes()) orphan_candidates_.push_back(input);
      erase(node);
    }
  }

  Graph& graph_;
  const AliasAnalysis& aliases_;
  std::unordered_map<const Node*, int64_t> versions_;  // per base: how many writes so far
  std::unordered_map<const Node*, Versioned> current_;  // per alias: its value at a version
  std::unordered_set<const Node*> created_;
  std::unordered_set<const Node*> erased_;
  std::vector<Node*> orphan_candidates_;
};

}  // namespace

bool functionalize(Graph& graph) {
  AliasAnalysis aliases(graph);  // throws before anything changes
  if (aliases.mutations().empty()) return false;
  Functionalizer(graph, aliases).run();
  KILN_CHECK(is_functional(graph), "functionalize left a mutation in the graph");
  return true;
}

}  // namespace kiln::passes
