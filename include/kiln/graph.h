// kiln::Graph: a model as Kiln's graph IR holds it, behind an opaque handle: what kiln::trace
// records and what Graph::load reads from a model file (.kiln or .json with the same-stem
// .safetensors weights, .onnx, .pt2). A user prints it, saves it, runs it in the reference
// interpreter, and compiles it (kiln::compile, kiln/model.h).
//
//   kiln::Graph graph = kiln::Graph::load("mlp.kiln");
//   std::cout << graph.to_string();                  // as torch.fx prints a graph
//   kiln::Model model = kiln::compile(graph);        // kiln/model.h
//
// A Graph is immutable; copies share the one graph. Kiln's own code reaches the ir::Graph
// through frontends/graph_access.h.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/tensor.h"
#include "kiln/tensor_type.h"

namespace kiln {

namespace ir {
class Graph;
}

class Graph {
 public:
  // Reads a model file by its extension. Throws kiln::Error for a missing file, an unsupported
  // extension (listing the readable ones) and anything the format's reader rejects, naming
  // the file and where in it.
  static Graph load(const std::string& path);

  // The user inputs (placeholders that are not parameters or buffers), in call order.
  std::vector<std::string> input_names() const;
  std::vector<TensorType> input_types() const;
  // The outputs a run returns (not the values a model writes back into its inputs or buffers).
  std::vector<std::string> output_names() const;
  std::vector<TensorType> output_types() const;
  // The parameters and buffers by name ("fc1.weight"); the tensors are shared, not copied.
  std::map<std::string, Tensor> parameters() const;
  size_t node_count() const;

  // The text form (as torch.fx prints a graph; `kiln dump` prints the same).
  std::string to_string() const;
  // Writes a .kiln (text) or .json file and the parameters beside it in a same-stem
  // .safetensors file. Without `overwrite`, an existing file is an error and nothing is written.
  void save(const std::string& path, bool overwrite = false) const;
  // Runs the graph in the reference interpreter (the oracle Kiln checks compiled code
  // against) on inputs by name; returns the outputs output_names() names, in order. Throws
  // kiln::Error naming a missing, unknown or mistyped input.
  std::vector<Tensor> interpret(const std::map<std::string, Tensor>& inputs) const;

 private:
  friend struct GraphAccess;  // frontends/graph_access.h
  explicit Graph(std::shared_ptr<const ir::Graph> graph);
  std::shared_ptr<const ir::Graph> graph_;
};

}  // namespace kiln
