// Alias analysis for functionalization: which storage each node reads, and the checks made
// before the graph is changed.
#include "passes/functionalize_aliases.h"

#include <algorithm>

#include "passes/graph_queries.h"
#include "kiln/error.h"

namespace kiln::passes::functionalization {

using ir::Node;
using ir::OpKind;

namespace {

// A reshape returns a view exactly when `view` with the same size would succeed on its
// input (PyTorch's reshape is view-or-copy); otherwise it returns a fresh copy.
bool reshape_is_view(const Node& node) {
  const ir::OpInfo& view = ir::OpRegistry::global().get("view");
  ir::OpCall bound = ir::OpCall::of(node);  // [self, shape]: the same layout as view's [self, size]
  try {
    view.infer(ir::OpCall(view, bound.args(), &node));
    return true;
  } catch (const Error&) {
    return false;
  }
}

// PyTorch's has_internal_overlap: some dim of size other than 1 has stride 0, so more than
// one element refers to one memory location. A symbolic size is taken to be more than 1
// (sizes 0 and 1 are specialized).
bool has_internal_overlap(const ir::TensorMeta& meta) {
  for (size_t i = 0; i < meta.shape.size(); ++i) {
    std::optional<int64_t> size = meta.shape[i].maybe_constant();
    if (meta.strides[i].maybe_constant() == 0 && (!size || *size > 1)) return true;
  }
  return false;
}

}  // namespace

size_t mutated_param(const ir::OpInfo& op) {
  const std::vector<ir::Param>& params = op.schema.params;
  auto found = std::find_if(params.begin(), params.end(), [](const ir::Param& param) { return param.mutated; });
  KILN_CHECK(found != params.end(), "op ", op.name(), " mutates no parameter");
  return size_t(found - params.begin());
}

Node* mutated_node(const Node& node) {
  ir::OpCall call = ir::OpCall::of(node);
  const ir::Argument& self = call.arg(mutated_param(call.op()));
  KILN_CHECK(self.is_node(), describe(node), " writes into a non-tensor argument");
  return self.node();
}

bool has_functional_form(const ir::OpInfo& op) {
  return op.is_inplace() || op.name() == "copy_" || op.name() == "fill_";
}

AliasAnalysis::AliasAnalysis(const ir::Graph& graph) {
  for (Node* node : graph.nodes()) analyze(node);
  check(graph);
}

const AliasInfo* AliasAnalysis::find(const Node* node) const {
  auto found = aliases_.find(node);
  return found == aliases_.end() ? nullptr : &found->second;
}

const AliasInfo& AliasAnalysis::at(const Node* node) const {
  const AliasInfo* info = find(node);
  KILN_CHECK(info != nullptr, "no alias information for ", describe(*node));
  return *info;
}

const BaseInfo& AliasAnalysis::base_info(const Node* base) const {
  auto found = bases_.find(base);
  KILN_CHECK(found != bases_.end(), describe(*base), " is not a storage base");
  return found->second;
}

std::vector<Node*> AliasAnalysis::view_chain(Node* node) const {
  std::vector<Node*> chain;
  for (const AliasInfo* info = &at(node); info->kind != AliasKind::base; info = &at(node)) {
    if (info->kind == AliasKind::view) chain.push_back(node);
    node = info->parent;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

void AliasAnalysis::add_base(Node* node) {
  aliases_[node] = AliasInfo{AliasKind::base, node, nullptr};
  bases_[node];
}

void AliasAnalysis::add_alias(Node* node, AliasKind kind, Node* parent) {
  const AliasInfo* of = find(parent);
  if (!of) {  // the parent is no single tensor (not in a verified graph): own the storage
    add_base(node);
    return;
  }
  aliases_[node] = AliasInfo{kind, of->base, parent};
  if (kind == AliasKind::view && node->target() == "as_strided" && !bases_[of->base].as_strided_alias)
    bases_[of->base].as_strided_alias = node;
}

void AliasAnalysis::analyze(Node* node) {
  switch (node->op()) {
    case OpKind::placeholder:
      add_base(node);
      return;
    case OpKind::get_attr: {
      auto [first, inserted] = first_get_attr_.emplace(node->target(), node);
      if (inserted) add_base(node);
      else add_alias(node, AliasKind::same_as, first->second);
      return;
    }
    case OpKind::output:
      return;
    case OpKind::call_function:
      break;
  }
  if (node_mutates(*node)) {
    Node* self = mutated_node(*node);
    add_alias(node, AliasKind::same_as, self);
    mutations_.push_back(node);
    const AliasInfo& info = at(node);
    BaseInfo& base = bases_[info.base];
    if (!base.first_mutation) base.first_mutation = node;
    return;
  }
  if (!node->has_single_value()) return;
  const ir::OpInfo& op = ir::OpRegistry::global().get(node->target());
  if (op.is_view && (op.name() != "reshape" || reshape_is_view(*node))) {
    add_alias(node, AliasKind::view, ir::OpCall::of(*node).arg(0).node());
    return;
  }
  if (op.name() == "getitem") {
    ir::OpCall call = ir::OpCall::of(*node);
    const ir::Argument& source = call.arg(0);
    int64_t index = call.int_arg(1);
    if (source.is_list()) {  // getitem([%a, %b], 1) is %b itself
      int64_t count = int64_t(source.list().size());
      const ir::Argument& element = source.list().at(size_t(index < 0 ? index + count : index));
      if (element.is_node()) add_alias(node, AliasKind::same_as, element.node());
      else add_base(node);
      return;
    }
    // Two getitems of one tuple element read the same tensor: the first is its base.
    if (index < 0) index += int64_t(source.node()->meta.values.size());
    auto [first, inserted] = first_getitem_.emplace(std::make_pair(source.node(), index), node);
    if (inserted) add_base(node);
    else add_alias(node, AliasKind::same_as, first->second);
    return;
  }
  add_base(node);
}

void AliasAnalysis::check(const ir::Graph& graph) const {
  for (Node* node : mutations_) {
    const ir::OpInfo& op = ir::OpRegistry::global().get(node->target());
    if (!has_functional_form(op))
      fail(describe(*node), ": functionalize does not know a functional form of ", op.name());
    Node* self = mutated_node(*node);
    if (has_internal_overlap(self->value())) {
      const AliasInfo& info = at(self);
      fail(describe(*node),
           ": unsupported operation: more than one element of the written-to tensor refers to a single memory "
           "location. Please clone() the tensor before performing the operation. (%",
           self->name(), " is a broadcast view of %", info.base->name(), ")");
    }
  }
  for (Node* base : graph.nodes()) {
    auto found = bases_.find(base);
    if (found == bases_.end() || !found->second.first_mutation) continue;
    const BaseInfo& info = found->second;
    if (info.as_strided_alias && !base->value().is_contiguous())
      fail(describe(*info.first_mutation), ": functionalize cannot write into %", base->name(),
           ", which ", describe(*info.as_strided_alias),
           " reads through as_strided, because its layout is not contiguous (as_strided reads the "
           "storage, which a functional value does not reproduce); clone() it first");
    if (base->op() == OpKind::get_attr &&
        !ir::attribute_mutation_kind(graph.signature().attribute_kind(base->target())))
      fail(describe(*info.first_mutation), " writes into %", base->name(), ", which reads '", base->target(),
           "', a constant (CONSTANT_TENSOR in the graph signature) that nothing may change; clone() it first");
  }
}

}  // namespace kiln::passes::functionalization
