// kiln::trace: placeholders, the recorded calls, the output node (kiln/trace.h), as an
// ir::Graph (trace_graph.h) and as the public kiln::Graph.
#include "frontends/module/trace_graph.h"

#include "frontends/graph_access.h"
#include "frontends/module/public_types.h"
#include "frontends/module/tracer.h"
#include "ir/verifier.h"
#include "kiln/error.h"

namespace kiln {

namespace {

std::vector<std::string> input_names(size_t count, const TraceOptions& options) {
  if (!options.input_names.empty()) {
    if (options.input_names.size() != count) {
      fail("kiln::trace: ", options.input_names.size(), " input names for ", count, " inputs");
    }
    return options.input_names;
  }
  if (count == 1) return {"x"};
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back("x" + std::to_string(i));
  return names;
}

}  // namespace

ir::TensorMeta example_meta(const Tensor& example) {
  if (!example.defined()) fail("kiln::trace: an example input is an undefined tensor");
  return ir::TensorMeta::contiguous(example.dtype(), ir::SymShape(example.sizes().begin(), example.sizes().end()));
}

ir::Graph trace_graph(const TracedFunction& function, const std::vector<ir::TensorMeta>& input_types,
                const TraceOptions& options, frontends::BreakCarrier* carrier) {
  ir::Graph graph;
  {
    frontends::Tracer tracer(graph);
    tracer.set_value_provider(&options.on_value);
    tracer.set_break_carrier(carrier);
    std::vector<std::string> names = input_names(input_types.size(), options);
    std::vector<Var> inputs;
    for (size_t i = 0; i < input_types.size(); ++i) inputs.emplace_back(tracer.placeholder(names[i], input_types[i]));
    std::vector<Var> outputs = function(inputs);
    if (outputs.empty()) fail("kiln::trace: the traced function returned no outputs");
    std::vector<ir::Argument> values;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined()) fail("kiln::trace: output ", i, " is an undefined kiln::Var");
      values.emplace_back(outputs[i].node());
    }
    graph.create_output(std::move(values));
    tracer.drop_unused_carried_values();
  }
  ir::verify(graph);
  return graph;
}

ir::Graph trace_graph(nn::Module& module, const std::vector<ir::TensorMeta>& input_types, const TraceOptions& options) {
  module.assign_paths();
  return trace_graph([&module](const std::vector<Var>& inputs) { return module(inputs); }, input_types, options);
}

ir::Graph trace_graph(nn::Module& module, const std::vector<Tensor>& example_inputs, const TraceOptions& options) {
  std::vector<ir::TensorMeta> types;
  for (const Tensor& example : example_inputs) types.push_back(example_meta(example));
  return trace_graph(module, types, options);
}

Graph trace(nn::Module& module, const std::vector<Tensor>& example_inputs, const TraceOptions& options) {
  return GraphAccess::wrap(trace_graph(module, example_inputs, options));
}

Graph trace(nn::Module& module, const std::vector<TensorType>& input_types, const TraceOptions& options) {
  std::vector<ir::TensorMeta> types;
  for (const TensorType& type : input_types) types.push_back(frontends::to_ir(type));
  return GraphAccess::wrap(trace_graph(module, types, options));
}

Graph trace(const TracedFunction& function, const std::vector<TensorType>& input_types, const TraceOptions& options) {
  std::vector<ir::TensorMeta> types;
  for (const TensorType& type : input_types) types.push_back(frontends::to_ir(type));
  return GraphAccess::wrap(trace_graph(function, types, options));
}

}  // namespace kiln
