// Alias analysis for functionalization: which storage every tensor-valued node of a graph
// reads and writes, computed once on the graph as given (before any rewriting), and the
// checks that must pass before functionalize may change anything.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::passes::functionalization {

// How a tensor-valued node relates to the storage it reads.
enum class AliasKind {
  base,     // owns its storage: an input, a parameter, a fresh result
  view,     // a view op (OpInfo::is_view) of `parent`
  same_as,  // the very same tensor as `parent`: an in-place op's result (its self), a second
            // get_attr of one parameter, a second getitem of one tuple element
};

struct AliasInfo {
  AliasKind kind = AliasKind::base;
  ir::Node* base = nullptr;    // the storage owner (a node of kind base)
  ir::Node* parent = nullptr;  // view and same_as: the node this one views or is
};

struct BaseInfo {
  ir::Node* first_mutation = nullptr;    // the first node that writes into this storage
  ir::Node* as_strided_alias = nullptr;  // an as_strided view of this storage, if any
};

class AliasAnalysis {
 public:
  // Analyzes `graph`, then checks what functionalize cannot do (see functionalize.h) and
  // throws kiln::Error naming the offending node.
  explicit AliasAnalysis(const ir::Graph& graph);

  // nullptr for nodes that are not single tensors (tuples, the output node).
  const AliasInfo* find(const ir::Node* node) const;
  const AliasInfo& at(const ir::Node* node) const;
  const BaseInfo& base_info(const ir::Node* base) const;
  // The in-place nodes, in graph order.
  const std::vector<ir::Node*>& mutations() const { return mutations_; }
  // The view nodes from `node`'s base down to `node`, outermost first (same_as links are
  // crossed, not listed). Empty when `node` is its base or the same tensor as it.
  std::vector<ir::Node*> view_chain(ir::Node* node) const;

 private:
  void analyze(ir::Node* node);
  void add_base(ir::Node* node);
  void add_alias(ir::Node* node, AliasKind kind, ir::Node* parent);
  void check(const ir::Graph& graph) const;

  std::unordered_map<const ir::Node*, AliasInfo> aliases_;
  std::unordered_map<const ir::Node*, BaseInfo> bases_;
  std::vector<ir::Node*> mutations_;
  std::unordered_map<std::string, ir::Node*> first_get_attr_;  // by target
  std::map<std::pair<const ir::Node*, int64_t>, ir::Node*> first_getitem_;  // by (tuple, index)
};

// The parameter an op writes into (its Tensor(a!) parameter), as an index into its schema.
size_t mutated_param(const ir::OpInfo& op);
// The node an in-place node writes into.
ir::Node* mutated_node(const ir::Node& node);
// Whether functionalize knows the functional form of a mutating op: in-place variants of a
// functional op, copy_ and fill_.
bool has_functional_form(const ir::OpInfo& op);

}  // namespace kiln::passes::functionalization
