// The ONNX importer's driver: model checks, unsupported-op report, constants, inputs, the
// node-by-node conversion with constant folding, the type self-check, outputs.
#include "frontends/onnx/onnx_importer.h"

#include <filesystem>
#include <map>

#include "frontends/onnx/onnx_model_file.h"
#include "frontends/onnx/onnx_op_table.h"
#include "frontends/onnx/onnx_symbols.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"

namespace kiln::frontends {

namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
}

// Every node whose op the table lacks, grouped by op, in one message.
void report_unsupported_ops(const OnnxModel& model) {
  std::map<std::string, std::vector<std::string>> unsupported;  // op -> node labels
  const auto& nodes = model.proto->graph().node();
  for (int i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& node = nodes[i];
    bool known = is_default_domain(node.domain()) && OnnxOpTable::global().find(node.op_type()) != nullptr;
    if (known) continue;
    std::string op = is_default_domain(node.domain()) ? node.op_type() : node.domain() + "." + node.op_type();
    unsupported[op].push_back(node_label(node, i));
  }
  if (unsupported.empty()) return;
  size_t node_count = 0;
  std::string list;
  for (const auto& [op, labels] : unsupported) {
    node_count += labels.size();
    list += list.empty() ? "" : "; ";
    list += op + " (" + std::to_string(labels.size()) + (labels.size() == 1 ? " node: " : " nodes: ");
    for (size_t i = 0; i < labels.size() && i < 5; ++i) list += (i ? ", " : "") + labels[i];
    if (labels.size() > 5) list += ", and " + std::to_string(labels.size() - 5) + " more";
    list += ")";
  }
  fail("'", model.path, "' uses ", unsupported.size(), " ONNX op", unsupported.size() == 1 ? "" : "s",
       " that Kiln does not support, in ", node_count, " node", node_count == 1 ? "" : "s", ": ", list);
}

// The types ONNX knows for values (inferred, or declared by the exporter), by name.
std::map<std::string, const onnx::TypeProto*> known_types(const onnx::GraphProto& graph) {
  std::map<std::string, const onnx::TypeProto*> types;
  for (const auto& info : graph.value_info()) types[info.name()] = &info.type();
  for (const auto& info : graph.output()) types[info.name()] = &info.type();
  return types;
}

// A converted value must have ONNX's element type and agree on rank and every static dim.
void check_against_onnx_type(const OnnxValue& value, const onnx::TypeProto& type, const std::string& where) {
  if (!type.has_tensor_type()) return;
  const auto& tensor_type = type.tensor_type();
  std::optional<DType> expected = dtype_from_onnx(tensor_type.elem_type());
  DType actual = value.dtype();
  if (expected && *expected != actual)
    throw InternalError(where + ": the importer produced " + std::string(dtype_name(actual)) + " for '" + value.name +
                        "', but ONNX types it " + onnx_type_name(tensor_type.elem_type()));
  if (!tensor_type.has_shape()) return;
  ir::SymShape shape = value.shape();
  const auto& dims = tensor_type.shape().dim();
  bool agrees = int64_t(dims.size()) == int64_t(shape.size());
  for (int i = 0; agrees && i < dims.size(); ++i)
    if (dims[i].has_dim_value() && shape[size_t(i)].is_constant() && dims[i].dim_value() != shape[size_t(i)].constant())
      agrees = false;
  if (agrees) return;
  std::string onnx_shape = "[";
  for (int i = 0; i < dims.size(); ++i)
    onnx_shape += (i ? ", " : "") + (dims[i].has_dim_value() ? std::to_string(dims[i].dim_value()) : dims[i].dim_param().empty() ? "?" : dims[i].dim_param());
  throw InternalError(where + ": the importer produced shape " + ir::shape_string(shape) + " for '" + value.name +
                      "', but ONNX infers " + onnx_shape + "]");
}

class Importer {
 public:
  explicit Importer(OnnxModel model) : model_(std::move(model)), reader_(model_.proto, model_.path) {
    state_.model_path = model_.path;
    state_.file_label = std::filesystem::path(model_.path).filename().string();
    state_.opset = model_.opset;
    state_.tensors = &reader_;
  }

  ir::Graph run() {
    const onnx::GraphProto& graph = model_.proto->graph();
    if (graph.sparse_initializer_size() > 0)
      fail("'", model_.path, "' has sparse initializers, which Kiln does not support");
    for (const auto& initializer : graph.initializer()) {
      OnnxValue value = OnnxValue::of_constant(reader_.read(initializer, "initializer '" + initializer.name() + "'"));
      value.name = initializer.name();
      state_.values[initializer.name()] = std::move(value);
    }
    for (const auto& input : graph.input())
      if (!state_.values.count(input.name())) add_input(input);
    std::map<std::string, const onnx::TypeProto*> types = known_types(graph);
    for (int i = 0; i < graph.node_size(); ++i) convert(graph.node(i), types);
    add_outputs(graph);
    ir::verify(state_.graph);
    return std::move(state_.graph);
  }

 private:
  void add_input(const onnx::ValueInfoProto& input) {
    auto where = [&] { return "'" + model_.path + "': graph input '" + input.name() + "'"; };
    if (!input.type().has_tensor_type()) fail(where(), " is not a tensor (Kiln imports tensor inputs only)");
    const auto& tensor_type = input.type().tensor_type();
    std::optional<DType> dtype = dtype_from_onnx(tensor_type.elem_type());
    if (!dtype) fail(where(), " has element type ", onnx_type_name(tensor_type.elem_type()), ", which Kiln does not support");
    if (!tensor_type.has_shape()) fail(where(), " has no shape; Kiln needs at least the rank of every input");
    ir::SymShape shape;
    for (int axis = 0; axis < tensor_type.shape().dim_size(); ++axis) {
      const auto& dim = tensor_type.shape().dim(axis);
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0) fail(where(), " has a negative size ", dim.dim_value(), " at axis ", axis);
        shape.emplace_back(dim.dim_value());
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        shape.push_back(symbols_.for_dim_param(dim.dim_param()));
      } else {
        shape.push_back(symbols_.for_unnamed_dim(input.name(), axis));
      }
    }
    std::string name = state_.graph.unique_name(input.name());
    ir::Node* node = state_.graph.create_placeholder(name, ir::TensorMeta::contiguous(*dtype, shape));
    node->source.file = state_.file_label;
    OnnxValue value = OnnxValue::of_node(node);
    value.name = input.name();
    state_.values[input.name()] = std::move(value);
  }

  static bool all_inputs_constant(const OnnxImportState& state, const onnx::NodeProto& node) {
    bool any = false;
    for (const std::string& name : node.input()) {
      if (name.empty()) continue;
      auto found = state.values.find(name);
      if (found == state.values.end() || !found->second.constant) return false;
      any = true;
    }
    return any;
  }

  // Converts into a scratch graph and evaluates it; false when the result is too large to be
  // worth keeping as a constant (the node is then converted into the graph as usual).
  bool fold(const onnx::NodeProto& node, OnnxConverter converter, std::vector<std::optional<OnnxValue>>& outputs) {
    ir::Graph scratch;
    OnnxNodeContext context(state_, node, scratch);
    converter(context);
    std::vector<ir::Argument> computed;
    std::vector<size_t> indices;
    size_t output_bytes = 0;
    for (size_t i = 0; i < context.outputs().size(); ++i) {
      const std::optional<OnnxValue>& value = context.outputs()[i];
      if (!value || !value->node) continue;
      computed.emplace_back(value->node);
      indices.push_back(i);
      std::optional<Sizes> sizes = value->node->value().static_shape();
      KILN_CHECK(sizes, "a folded value has a static shape");
      output_bytes += size_t(numel_of(*sizes)) * dtype_size(value->node->value().dtype);
    }
    size_t input_bytes = 0;
    for (const std::string& name : node.input())
      if (!name.empty()) input_bytes += state_.values.at(name).constant->nbytes();
    if (output_bytes > (size_t(1) << 20) && output_bytes > input_bytes) return false;
    if (!computed.empty()) {
      scratch.create_output(computed);
      std::vector<Tensor> results;
      try {
        results = ir::interpret(scratch, {});
      } catch (const kiln::Error& error) {
        fail(context.where(), ": evaluating it on constant inputs failed: ", error.what());
      }
      for (size_t k = 0; k < indices.size(); ++k) {
        std::string name = context.outputs()[indices[k]]->name;
        context.outputs()[indices[k]] = OnnxValue::of_constant(results[k].contiguous());
        context.outputs()[indices[k]]->name = name;
      }
    }
    outputs = std::move(context.outputs());
    return true;
  }

  void convert(const onnx::NodeProto& node, const std::map<std::string, const onnx::TypeProto*>& types) {
    OnnxConverter converter = OnnxOpTable::global().find(node.op_type());
    KILN_CHECK(converter, "unsupported ops are reported before conversion");
    std::vector<std::optional<OnnxValue>> outputs;
    std::string where;
    if (!(all_inputs_constant(state_, node) && fold(node, converter, outputs))) {
      OnnxNodeContext context(state_, node, state_.graph);
      converter(context);
      outputs = std::move(context.outputs());
      where = context.where();
    } else {
      where = OnnxNodeContext(state_, node, state_.graph).where();
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string& name = node.output(int(i));
      if (name.empty()) continue;
      if (!outputs[i]) throw InternalError(where + ": the converter did not set output " + std::to_string(i) + " '" + name + "'");
      if (auto type = types.find(name); type != types.end()) check_against_onnx_type(*outputs[i], *type->second, where);
      state_.values[name] = std::move(*outputs[i]);
    }
  }

  void add_outputs(const onnx::GraphProto& graph) {
    std::vector<ir::Argument> results;
    for (const auto& output : graph.output()) {
      if (!state_.values.count(output.name()))
        fail("'", model_.path, "': graph output '", output.name(), "' is not computed by any node");
      results.emplace_back(state_.node_of(output.name()));
    }
    if (results.empty()) fail("'", model_.path, "' has no graph outputs");
    state_.graph.create_output(results);
  }

  OnnxModel model_;
  OnnxTensorReader reader_;
  OnnxImportState state_;
  OnnxSymbols symbols_;
};

}  // namespace

ir::Graph import_onnx(const std::string& path) {
  OnnxModel model = read_onnx_model(path);
  report_unsupported_ops(model);
  infer_onnx_shapes(model);
  return Importer(std::move(model)).run();
}

std::vector<std::string> supported_onnx_ops() { return OnnxOpTable::global().op_types(); }

}  // namespace kiln::frontends
