// kiln::Graph (kiln/graph.h): the public handle over an ir::Graph, and GraphAccess
// (graph_access.h) between the two.
#include <utility>

#include "frontends/graph_access.h"
#include "frontends/model_loader.h"
#include "frontends/module/public_types.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/printer.h"
#include "kiln/error.h"

namespace kiln {

Graph GraphAccess::wrap(ir::Graph graph) { return Graph(std::make_shared<const ir::Graph>(std::move(graph))); }

const ir::Graph& GraphAccess::graph(const Graph& graph) { return *graph.graph_; }

Graph::Graph(std::shared_ptr<const ir::Graph> graph) : graph_(std::move(graph)) {}

Graph Graph::load(const std::string& path) { return GraphAccess::wrap(frontends::load_model(path)); }

std::vector<std::string> Graph::input_names() const {
  std::vector<std::string> names;
  for (const ir::Node* node : graph_->placeholders()) names.push_back(node->target());
  return names;
}

std::vector<TensorType> Graph::input_types() const {
  std::vector<TensorType> types;
  for (const ir::Node* node : graph_->placeholders()) types.push_back(frontends::from_ir(node->value()));
  return types;
}

namespace {

// The outputs a run returns: every output but the signature's copy-backs, by position.
std::vector<size_t> returned_outputs(const ir::Graph& graph) {
  std::vector<size_t> positions;
  const size_t count = graph.outputs().size();
  for (size_t i = 0; i < count; ++i)
    if (!graph.signature().output(i).is_mutation()) positions.push_back(i);
  return positions;
}

}  // namespace

std::vector<std::string> Graph::output_names() const {
  std::vector<std::string> all = graph_->output_names(), names;
  for (size_t i : returned_outputs(*graph_)) names.push_back(all.at(i));
  return names;
}

std::vector<TensorType> Graph::output_types() const {
  std::vector<ir::Node*> outputs = graph_->outputs();
  std::vector<TensorType> types;
  for (size_t i : returned_outputs(*graph_)) types.push_back(frontends::from_ir(outputs.at(i)->value()));
  return types;
}

std::map<std::string, Tensor> Graph::parameters() const {
  return std::map<std::string, Tensor>(graph_->parameters().begin(), graph_->parameters().end());
}

size_t Graph::node_count() const { return graph_->size(); }

std::string Graph::to_string() const { return ir::print_graph(*graph_); }

void Graph::save(const std::string& path, bool overwrite) const { ir::save_model(*graph_, path, overwrite); }

std::vector<Tensor> Graph::interpret(const std::map<std::string, Tensor>& inputs) const {
  std::vector<Tensor> all = ir::interpret(*graph_, inputs), outputs;
  for (size_t i : returned_outputs(*graph_)) outputs.push_back(all.at(i));
  return outputs;
}

}  // namespace kiln
