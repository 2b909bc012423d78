// The decomposition driver: one forward sweep over the graph that replaces each composite
// node by its decomposition (passes/decompositions/) and then continues with the first node
// that decomposition created, so composites emitted by a decomposition are rewritten in the
// same sweep. Here live the parts every decomposition shares: provenance (SourceInfo),
// names, the check that a result has the original's dtype and shape, redirecting users
// (through getitem for tuple-valued ops), removing created nodes nothing uses, and the
// in-place forms (functional op + copy_).
#include "passes/decompose.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "passes/decompositions/decomposition.h"
#include "passes/graph_queries.h"
#include "kiln/error.h"

namespace kiln::passes {

namespace {

using decompositions::Emitter;
using ir::Graph;
using ir::Node;
using ir::OpInfo;

const OpInfo* composite_op(const Node& node) {
  if (node.op() != ir::OpKind::call_function) return nullptr;
  const OpInfo* op = ir::OpRegistry::global().find(node.target());
  return op != nullptr && op->composite ? op : nullptr;
}

Node* first_node(const Graph& graph) { return graph.size() == 0 ? nullptr : *graph.nodes().begin(); }
Node* after(const Graph& graph, Node* node) { return node ? node->next() : first_node(graph); }

// The nodes created just before `end` since `before` (exclusive; nullptr: the graph's start).
std::vector<Node*> created_between(const Graph& graph, Node* before, Node* end) {
  std::vector<Node*> nodes;
  for (Node* node = after(graph, before); node != end; node = node->next()) nodes.push_back(node);
  return nodes;
}

// gelu_(self, ...) -> copy_(self, gelu(self, ...)): the functional op is a composite the sweep
// decomposes next; copy_ returns self, as the in-place op did.
std::vector<Node*> decompose_inplace(Emitter& emit, const Node& node, const OpInfo& op) {
  Node* value = emit.call(op.inplace_of, node.args(), node.kwargs(), "value");
  Node* self = ir::OpCall::of(node).arg(0).node();
  return {emit.call("copy_", {self, value}, {}, "copy")};
}

// Moves `name` onto `node` (created by the decomposition under another name): a node cannot
// be renamed, so an identical call is created under the freed name and takes over the users.
Node* take_name(Graph& graph, Node* node, const std::string& name) {
  if (node->name() == name) return node;
  Node* renamed = nullptr;
  {
    auto guard = graph.inserting_after(node);
    renamed = graph.create_call(node->target(), node->args(), node->kwargs(), name);
  }
  renamed->source = node->source;
  node->replace_all_uses_with(renamed);
  graph.erase(node);
  return renamed;
}

void check_result(const Node& original, const ir::TensorMeta& expected, const Node* result) {
  KILN_CHECK(result->has_single_value(), "decomposition of ", ir::describe(original), " returned the tuple ",
             ir::describe(*result));
  const ir::TensorMeta& got = result->value();
  KILN_CHECK(got.dtype == expected.dtype && got.shape == expected.shape && got.device == expected.device,
             "decomposition of ", ir::describe(original), " produced ", got.type_string(), " for ",
             expected.type_string());
}

bool same_meta(const ir::NodeMeta& a, const ir::NodeMeta& b) { return a.is_tuple == b.is_tuple && a.values == b.values; }

// A replacement has the original's dtype and shape but may have other strides (a slice of
// the input instead of a fresh tensor): views downstream re-infer theirs.
void refresh_users(Node* changed) {
  std::vector<Node*> work{changed};
  while (!work.empty()) {
    Node* node = work.back();
    work.pop_back();
    for (Node* user : node->users()) {
      if (user->op() != ir::OpKind::call_function) continue;
      ir::NodeMeta meta = ir::infer_meta(*user);
      if (same_meta(meta, user->meta)) continue;
      user->meta = std::move(meta);
      work.push_back(user);
    }
  }
}

// Redirects the users of `original` to `results` and erases it; each result takes over the
// name of the value it replaces (the original's, or its getitem's for a tuple).
void replace_values(Graph& graph, Node* original, std::vector<Node*> results) {
  if (!original->meta.is_tuple) {
    std::string name = original->name();
    original->replace_all_uses_with(results.at(0));
    graph.erase(original);
    refresh_users(take_name(graph, results[0], name));
    return;
  }
  std::vector<bool> named(results.size(), false);
  for (Node* user : std::vector<Node*>(original->users())) {
    KILN_CHECK(user->target() == "getitem", "tuple-valued ", ir::describe(*original), " used by ",
               ir::describe(*user));
    int64_t index = user->args().at(1).integer();
    if (index < 0) index += int64_t(results.size());
    KILN_CHECK(index >= 0 && index < int64_t(results.size()), ir::describe(*user), " out of range");
    Node*& result = results[size_t(index)];
    std::string name = user->name();
    user->replace_all_uses_with(result);
    graph.erase(user);
    if (!named[size_t(index)]) result = take_name(graph, result, name);
    named[size_t(index)] = true;
  }
  graph.erase(original);
  for (size_t i = 0; i < results.size(); ++i)
    if (named[i]) refresh_users(results[i]);
}

// The results whose values are read: all of them for a single value, the ones some getitem
// reads for a tuple.
std::vector<Node*> used_results(const Node& original, const std::vector<Node*>& results) {
  if (!original.meta.is_tuple) return results;
  std::vector<Node*> used;
  for (const Node* user : original.users()) {
    if (user->target() != "getitem" || user->args().size() < 2 || !user->args()[1].is_int()) continue;
    int64_t index = user->args()[1].integer();
    if (index < 0) index += int64_t(results.size());
    if (index >= 0 && index < int64_t(results.size())) used.push_back(results[size_t(index)]);
  }
  return used;
}

// Erases the created nodes nothing uses (an unused getitem of var_mean, a split's unused
// slice), last first so that their inputs become free in the same sweep.
void erase_unused(Graph& graph, const std::vector<Node*>& created, const std::vector<Node*>& keep) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    Node* node = *it;
    if (!node->users().empty() || node_mutates(*node)) continue;
    if (std::find(keep.begin(), keep.end(), node) != keep.end()) continue;
    graph.erase(node);
  }
}

// Replaces one composite node. Returns the node before the first one it created.
void decompose_node(Graph& graph, Node* node, const OpInfo& op, bool graph_mutates) {
  Node* before = node->prev();
  std::vector<Node*> results;
  try {
    auto guard = graph.inserting_before(node);
    Emitter emit(graph, *node, graph_mutates);
    if (op.is_inplace()) {
      results = decompose_inplace(emit, *node, op);
    } else {
      const decompositions::Decomposition* decomposition = decompositions::find_decomposition(op.name());
      KILN_CHECK(decomposition != nullptr, "composite op '", op.name(), "' has no decomposition");
      results = (*decomposition)(emit, ir::OpCall::of(*node));
    }
    KILN_CHECK(results.size() == node->meta.values.size(), "decomposition of ", ir::describe(*node), " returned ",
               results.size(), " values for ", node->meta.values.size());
    for (size_t i = 0; i < results.size(); ++i) {
      KILN_CHECK(emit.created(results[i]), "decomposition of ", ir::describe(*node), " returned a node it did not create");
      check_result(*node, node->meta.values[i], results[i]);
    }
  } catch (const Error& error) {
    // A call the decomposition made was rejected: undo it, and say which node was being rewritten.
    std::vector<Node*> created = created_between(graph, before, node);
    for (auto it = created.rbegin(); it != created.rend(); ++it) graph.erase(*it);
    fail("decompose: cannot rewrite ", ir::describe(*node), ": ", error.what());
  }

  std::vector<Node*> created = created_between(graph, before, node);
  for (Node* made : created) made->source = node->source;
  erase_unused(graph, created, used_results(*node, results));
  replace_values(graph, node, std::move(results));
}

}  // namespace

bool decompose(Graph& graph) {
  const bool graph_mutates = !is_functional(graph);
  // A decomposition that (by mistake) emitted its own op again would loop forever.
  const size_t limit = 1000 + 1000 * graph.size();
  size_t rewrites = 0;
  for (Node* node = first_node(graph); node != nullptr;) {
    const OpInfo* op = composite_op(*node);
    if (op == nullptr) {
      node = node->next();
      continue;
    }
    KILN_CHECK(++rewrites < limit, "decompose: no fixed point after ", rewrites, " rewrites (at ",
               ir::describe(*node), ")");
    Node* before = node->prev();
    decompose_node(graph, node, *op, graph_mutates);
    node = after(graph, before);
  }
  return rewrites > 0;
}

}  // namespace kiln::passes
