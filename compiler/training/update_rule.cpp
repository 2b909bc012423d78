// The graph building blocks shared by the update rules. See compiler/training/update_rule.h.
#include "compiler/training/update_rule.h"

namespace kiln::training {

DType update_scalar_dtype(DType arena_dtype) { return arena_dtype == DType::f64 ? DType::f64 : DType::f32; }

namespace update_graph {

ir::Node* flat_input(ir::Graph& graph, const std::string& name, DType dtype, int64_t numel) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(dtype, {ir::SymInt(numel)}));
}

ir::Node* scalar_input(ir::Graph& graph, const std::string& name, DType arena_dtype) {
  return graph.create_placeholder(name, ir::TensorMeta::contiguous(update_scalar_dtype(arena_dtype), {}));
}

ir::Node* call(ir::Graph& graph, const char* op, std::vector<ir::Argument> args) {
  return graph.create_call(op, std::move(args));
}

}  // namespace update_graph

}  // namespace kiln::training
