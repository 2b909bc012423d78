// kiln::Model and kiln::compile(graph): a graph made ready to run on a target. For the code
// targets (cpu, cuda) compiling goes through the whole pipeline (functionalize, decompose,
// simplify, lower, fuse, emit, build) and Kiln's on-disk compile cache (a graph compiled
// before, with the same options, loads without building); interp and eager run the graph
// without compiling.
//
//   kiln::Graph graph = kiln::Graph::load("mlp.kiln");
//   kiln::Model model = kiln::compile(graph, {.target = "cpu", .cache_dir = "/tmp/kiln-cache"});
//   std::vector<kiln::Tensor> outputs = model.run({{"x", input}}, /*num_threads=*/4);
//
// A Model is shared by its copies; run() may be called from one thread at a time.
// (A compiled package, `kiln compile -o DIR`, loads with kiln::Package: kiln/package.h.)
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compile_options.h"
#include "kiln/graph.h"
#include "kiln/tensor.h"
#include "kiln/tensor_type.h"

namespace kiln {

namespace compiler {
class Executable;
}

class Model {
 public:
  // Runs on inputs by name; returns the outputs in the graph's order. An input the model
  // mutates gets its new value, as in PyTorch. `num_threads`: host threads (cpu: OpenMP;
  // 0: the default). Throws kiln::Error naming a missing, unknown or mistyped input.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, int num_threads = 0);

  // The graph compiled (as given to kiln::compile), with its inputs' and outputs' names and types.
  const Graph& graph() const { return graph_; }
  std::vector<std::string> input_names() const { return graph_.input_names(); }
  std::vector<TensorType> input_types() const { return graph_.input_types(); }
  std::vector<std::string> output_names() const { return graph_.output_names(); }
  std::vector<TensorType> output_types() const { return graph_.output_types(); }
  // The target it runs on ("cpu").
  const std::string& target() const { return target_; }
  // What compiling reported (cache hit, kernel count, the artifact's folder); nullptr for
  // the targets that compile nothing (interp, eager).
  const CompileResult* compile_result() const;

 private:
  friend struct ModelAccess;  // compiler/model_access.h
  friend Model compile(const Graph& graph, const CompileOptions& options);
  Model(Graph graph, std::string target, std::shared_ptr<compiler::Executable> executable);
  Graph graph_;
  std::string target_;
  std::shared_ptr<compiler::Executable> executable_;
};

// Compiles (or finds in the compile cache) `graph` for options.target and loads it. Throws
// kiln::Error for an unknown target (listing them) and anything a stage rejects.
Model compile(const Graph& graph, const CompileOptions& options = {});

}  // namespace kiln
