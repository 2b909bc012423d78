// Running an ONNX model whose shape-deciding inputs are fed at run time (Reshape's shape,
// Slice's starts, Pad's pads, Resize's sizes, TopK's k, ...), the way TorchDynamo treats the
// Python ints a function is called with: Kiln compiles ahead of time with known shapes, so the
// model is specialized on the values of those inputs.
//
//  - The importer finds the inputs: a converter that needs a value the model computes from
//    graph inputs throws OnnxInputValuesNeeded naming them (onnx_importer.h); they become the
//    model's value inputs, learnt on the first call (and widened if a later specialization
//    needs more).
//  - A call's key is the dtype, shape and bytes of each value input. A new key imports the
//    model with those inputs frozen to the call's values (OnnxImportOptions::input_values)
//    and compiles the graph (the Compile given, e.g. the CPU backend); a known key reuses its
//    compiled graph. The key is the guard: other values never reach a graph specialized on
//    different ones. Up to `max_specializations` keys are kept; one more is an error naming
//    the inputs (a model fed ever new shape values is not a good fit for ahead-of-time code).
//  - The compiled graph runs on the other inputs.
// A model that needs no values has one specialization, under the empty key. Inputs and value
// inputs are named as the graph's placeholders are (onnx_value_name of the ONNX names).
// Sequence and optional inputs (onnx_importer.h) are specialized likewise: the key holds which
// of their tensors are fed (a sequence's length) and their dtypes and shapes.
//
//   frontends::OnnxSpecializedModel model("model.onnx", [](const ir::Graph& graph) {
//     auto compiled = std::make_shared<compiler::CompiledModel>(compiler::compile(graph));
//     return [compiled](const std::map<std::string, Tensor>& inputs) { return compiled->run(inputs); };
//   });
//   std::vector<Tensor> outputs = model.run({{"x", x}, {"shape", shape}});
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::frontends {

class OnnxSpecializedModel {
 public:
  using Runner = std::function<std::vector<Tensor>(const std::map<std::string, Tensor>&)>;
  using Compile = std::function<Runner(const ir::Graph&)>;

  struct Specialization {
    std::string key;                       // empty when the model needs no values
    std::map<std::string, Tensor> values;  // the value inputs it was specialized on
    ir::Graph graph;
    Runner runner;  // compiled on first run
  };

  // `compile` defaults to the reference interpreter.
  explicit OnnxSpecializedModel(std::string path, Compile compile = nullptr, size_t max_specializations = 64);

  // Runs on `inputs` by name: specializes on the value inputs (importing and compiling on a
  // new key), runs the graph on the others. Outputs in the graph's order (output_names()).
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);

  // The specialization for `inputs` (imported, not compiled, on a new key); `run_inputs`
  // receives the inputs its graph takes. Throws kiln::Error when a value input is missing.
  Specialization& specialize(const std::map<std::string, Tensor>& inputs, std::map<std::string, Tensor>& run_inputs);

  const std::string& path() const { return path_; }
  // The inputs whose values decide shapes, sorted (known after the first call).
  const std::vector<std::string>& value_inputs() const { return value_inputs_; }
  size_t specialization_count() const { return specializations_.size(); }

 private:
  std::string key_of(const std::map<std::string, Tensor>& inputs) const;
  Specialization& import_for(const std::map<std::string, Tensor>& inputs);

  std::string path_;
  Compile compile_;
  size_t max_specializations_;
  bool imported_once_ = false;
  std::vector<std::string> value_inputs_;           // placeholder names
  std::map<std::string, std::string> onnx_names_;  // placeholder name -> ONNX input name
  std::vector<std::string> collection_inputs_;     // Kiln names of sequence and optional inputs
  std::map<std::string, std::unique_ptr<Specialization>> specializations_;  // by key
};

}  // namespace kiln::frontends
