// The Emitter, the helpers shared by the decomposition families, and the assembled table.
#include "passes/decompositions/decomposition.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln::passes::decompositions {

using ir::Argument;
using ir::Node;

// ---------------------------------------------------------------- Emitter

Emitter::Emitter(ir::Graph& graph, const Node& original, bool graph_mutates)
    : graph_(graph), original_(original), base_(original.name()), graph_mutates_(graph_mutates) {}

Node* Emitter::call(std::string_view target, std::vector<Argument> args, ir::Kwargs kwargs, std::string_view role) {
  std::string name = graph_.unique_name(base_ + "_" + std::string(role.empty() ? target : role));
  Node* node = graph_.create_call(std::string(target), std::move(args), std::move(kwargs), name);
  created_.push_back(node);
  return node;
}

Node* Emitter::getitem(Node* tuple, int64_t index, std::string_view role) {
  return call("getitem", {tuple, index}, {}, role);
}

Node* Emitter::cast(Node* value, DType dtype, std::string_view role) {
  if (dtype_of(value) == dtype) return value;
  return call("cast", {value, dtype}, {}, role);
}

Node* Emitter::compute_input(Node* value) {
  DType result = result_meta().dtype;
  if (!is_floating(result)) return value;
  return cast(value, compute_dtype(result), "upcast");
}

Node* Emitter::finish(Node* value) { return finish(value, result_meta().dtype); }

Node* Emitter::finish(Node* value, DType dtype) {
  if (dtype_of(value) != dtype) return cast(value, dtype, "cast");
  if (!created(value)) return call("clone", {value});
  if (graph_mutates_ && ir::OpRegistry::global().get(value->target()).is_view) return call("clone", {value});
  return value;
}

bool Emitter::created(const Node* node) const {
  return std::find(created_.begin(), created_.end(), node) != created_.end();
}

// ---------------------------------------------------------------- helpers

const ir::TensorMeta& meta_of(const Node* node) { return node->value(); }
DType dtype_of(const Node* node) { return node->value().dtype; }
int64_t rank_of(const Node* node) { return node->value().rank(); }
const ir::SymShape& shape_of(const Node* node) { return node->value().shape; }

DType compute_dtype(DType dtype) {
  if (dtype == DType::f32 || dtype == DType::f64) return dtype;
  return DType::f32;
}

Argument zero_scalar(DType dtype) {
  if (dtype == DType::boolean) return Argument(false);
  if (is_floating(dtype)) return Argument(0.0);
  return Argument(int64_t(0));
}

Node* tensor_arg(const ir::OpCall& call, size_t index) {
  return call.is_none(index) ? nullptr : call.arg(index).node();
}

Node* channel_view(Emitter& emit, Node* channel, int64_t rank, std::string_view role) {
  if (rank <= 2) return channel;
  ir::SymShape shape{shape_of(channel).at(0)};
  shape.resize(size_t(rank - 1), ir::SymInt(1));
  return emit.call("reshape", {channel, Argument::sym_ints(shape)}, {}, role);
}

// ---------------------------------------------------------------- the table

namespace {

DecompositionTable build_table() {
  DecompositionTable table;
  register_linear_decompositions(table);
  register_softmax_decompositions(table);
  register_normalization_decompositions(table);
  register_activation_decompositions(table);
  register_dropout_decompositions(table);
  register_attention_decompositions(table);
  register_loss_decompositions(table);
  register_shape_decompositions(table);
  return table;
}

}  // namespace

const Decomposition* find_decomposition(std::string_view op) {
  static const DecompositionTable table = build_table();
  auto found = table.find(op);
  return found == table.end() ? nullptr : &found->second;
}

}  // namespace kiln::passes::decompositions
