// kiln::Model and kiln::compile(graph) (kiln/model.h): the target registry's Executable behind a
// public handle.
#include "compiler/executable.h"
#include "compiler/target_registry.h"
#include "frontends/graph_access.h"
#include "kiln/model.h"

namespace kiln {

Model::Model(Graph graph, std::string target, std::shared_ptr<compiler::Executable> executable)
    : graph_(std::move(graph)), target_(std::move(target)), executable_(std::move(executable)) {}

std::vector<Tensor> Model::run(const std::map<std::string, Tensor>& inputs, int num_threads) {
  return executable_->run(inputs, num_threads);
}

const CompileResult* Model::compile_result() const { return executable_->compile_result(); }

Model compile(const Graph& graph, const CompileOptions& options) {
  std::shared_ptr<compiler::Executable> executable = compiler::prepare(GraphAccess::graph(graph), options);
  return Model(graph, options.target, std::move(executable));
}

}  // namespace kiln
