// Which node test inputs Kiln needs at import time (see import_time_inputs.h).
#include "tests/onnx_conformance/import_time_inputs.h"

#include <map>

namespace kiln::conformance {

namespace {

// Op type -> the positions of its inputs that Kiln's importer needs as constants.
const std::map<std::string, std::vector<int>>& import_time_arguments() {
  static const std::map<std::string, std::vector<int>> arguments = {
      {"ConstantOfShape", {0}}, {"CumSum", {1}}, {"Dropout", {1, 2}}, {"Expand", {1}},
      {"Pad", {1, 2, 3}}, {"Range", {0, 1, 2}}, {"ReduceL1", {1}}, {"ReduceL2", {1}},
      {"ReduceLogSum", {1}}, {"ReduceLogSumExp", {1}}, {"ReduceMax", {1}}, {"ReduceMean", {1}},
      {"ReduceMin", {1}}, {"ReduceProd", {1}}, {"ReduceSum", {1}}, {"ReduceSumSquare", {1}},
      {"Reshape", {1}}, {"Resize", {1, 2, 3}}, {"Slice", {1, 2, 3, 4}}, {"Split", {1}},
      {"Squeeze", {1}}, {"Tile", {1}}, {"Trilu", {1}}, {"Unsqueeze", {1}}};
  return arguments;
}

}  // namespace

std::set<std::string> import_time_inputs(const onnx::ModelProto& model) {
  const onnx::GraphProto& graph = model.graph();
  std::set<std::string> initializers, graph_inputs;
  for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
  for (const auto& input : graph.input())
    if (!initializers.count(input.name())) graph_inputs.insert(input.name());
  std::map<std::string, const onnx::NodeProto*> producer;
  for (const auto& node : graph.node())
    for (const std::string& output : node.output()) producer[output] = &node;

  std::set<std::string> needed, visited;
  auto visit = [&](auto&& self, const std::string& value) -> void {
    if (value.empty() || !visited.insert(value).second) return;
    if (graph_inputs.count(value)) needed.insert(value);
    auto found = producer.find(value);
    if (found == producer.end()) return;
    const onnx::NodeProto& node = *found->second;
    if (node.op_type() == "Shape" || node.op_type() == "Size") return;
    for (const std::string& input : node.input()) self(self, input);
  };
  for (const auto& node : graph.node()) {
    auto arguments = import_time_arguments().find(node.op_type());
    if (arguments == import_time_arguments().end()) continue;
    for (int index : arguments->second)
      if (index < node.input_size()) visit(visit, node.input(index));
  }
  return needed;
}

onnx::ModelProto with_inputs_as_initializers(onnx::ModelProto model, const std::vector<onnx::TensorProto>& values) {
  onnx::GraphProto& graph = *model.mutable_graph();
  for (const onnx::TensorProto& value : values) {
    *graph.add_initializer() = value;
    auto& inputs = *graph.mutable_input();
    for (int k = 0; k < inputs.size(); ++k)
      if (inputs[k].name() == value.name()) {
        inputs.DeleteSubrange(k, 1);
        break;
      }
  }
  return model;
}

}  // namespace kiln::conformance
