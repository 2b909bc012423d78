// The ONNX importer's driver: model checks, unsupported-op report, constants, inputs, the
// node-by-node conversion with constant folding, the type self-check, outputs.
#include "frontends/onnx/onnx_importer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "frontends/onnx/onnx_model_file.h"
#include "frontends/onnx/onnx_op_table.h"
#include "frontends/onnx/onnx_symbols.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/interpreter.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "runtime/log.h"

namespace kiln::frontends {

namespace {

std::string node_label(const onnx::NodeProto& node, int index) {
  return node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
}

// The nodes of `graph` and of its nodes' subgraphs (If's branches, Loop's body) whose op the
// table lacks, by op.
void collect_unsupported_ops(const onnx::GraphProto& graph, std::map<std::string, std::vector<std::string>>& unsupported) {
  const auto& nodes = graph.node();
  for (int i = 0; i < nodes.size(); ++i) {
    const onnx::NodeProto& node = nodes[i];
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect_unsupported_ops(attribute.g(), unsupported);
      for (const auto& subgraph : attribute.graphs()) collect_unsupported_ops(subgraph, unsupported);
    }
    std::string op = qualified_op_type(node);
    if (OnnxOpTable::global().find(op) != nullptr) continue;
    unsupported[op].push_back(node_label(node, i));
  }
}

// Every node whose op the table lacks, grouped by op, in one message.
void report_unsupported_ops(const OnnxModel& model) {
  std::map<std::string, std::vector<std::string>> unsupported;  // op -> node labels
  collect_unsupported_ops(model.proto->graph(), unsupported);
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

// ONNX's type of a value, as "f32[2, ?, batch]" (element type and the dims it knows).
std::string onnx_type_text(const onnx::TypeProto::Tensor& tensor_type) {
  std::optional<DType> dtype = dtype_from_onnx(tensor_type.elem_type());
  std::string text = dtype ? std::string(dtype_name(*dtype)) : onnx_type_name(tensor_type.elem_type());
  if (!tensor_type.has_shape()) return text + "[...]";
  const auto& dims = tensor_type.shape().dim();
  text += "[";
  for (int i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + (dims[i].has_dim_value() ? std::to_string(dims[i].dim_value())
                               : dims[i].dim_param().empty() ? "?" : dims[i].dim_param());
  return text + "]";
}

// A tensor value has ONNX's element type (where ONNX names one Kiln has), its rank, and every
// static dim that both know.
bool agrees_with_onnx_type(const OnnxValue& value, const onnx::TypeProto::Tensor& tensor_type) {
  std::optional<DType> expected = dtype_from_onnx(tensor_type.elem_type());
  if (expected && *expected != value.dtype()) return false;
  if (!tensor_type.has_shape()) return true;
  const auto& dims = tensor_type.shape().dim();
  ir::SymShape shape = value.shape();
  if (int64_t(dims.size()) != int64_t(shape.size())) return false;
  for (int i = 0; i < dims.size(); ++i)
    if (dims[i].has_dim_value() && shape[size_t(i)].is_constant() && dims[i].dim_value() != shape[size_t(i)].constant())
      return false;
  return true;
}

// A tensor value's type as Kiln writes it: "f32[2, s0, 4]".
std::string type_text(const OnnxValue& value) { return std::string(dtype_name(value.dtype())) + ir::shape_string(value.shape()); }

// A converted value must have ONNX's element type and agree on rank and every static dim.
// `declared`: the type is written in the model file (a graph output or value_info), so a
// disagreement is the model's (kiln::Error); otherwise ONNX inferred it, and a disagreement
// is the importer's bug (kiln::InternalError).
void check_against_onnx_type(const OnnxValue& value, const onnx::TypeProto& type, bool declared, const std::string& where) {
  if (!type.has_tensor_type()) return;
  if (!value.is_tensor()) {
    if (declared) fail(where, ": output '", value.name, "' is declared a tensor in the model, but the node computes ", value.kind_text());
    throw InternalError(where + ": the importer produced " + value.kind_text() + " for '" + value.name +
                        "', but ONNX infers a tensor");
  }
  const auto& tensor_type = type.tensor_type();
  if (agrees_with_onnx_type(value, tensor_type)) return;
  std::string computed = type_text(value);
  if (declared)
    fail(where, ": output '", value.name, "' is declared ", onnx_type_text(tensor_type),
         " in the model, but the node computes ", computed, " from its inputs");
  throw InternalError(where + ": the importer produced " + computed + " for '" + value.name + "', but ONNX infers " +
                      onnx_type_text(tensor_type));
}

// The types the model file itself writes (graph outputs and value_info), copied before ONNX's
// shape inference merges its own into them.
std::map<std::string, onnx::TypeProto> declared_types(const onnx::GraphProto& graph) {
  std::map<std::string, onnx::TypeProto> types;
  for (const auto& info : graph.value_info())
    if (info.type().has_tensor_type()) types.emplace(info.name(), info.type());
  for (const auto& output : graph.output())
    if (output.type().has_tensor_type()) types.emplace(output.name(), output.type());
  return types;
}

// A node whose output sizes Debian's ONNX library (1.12) infers by a rule ONNX has since fixed:
// pooling with ceil_mode, whose last window is dropped when it would start past the input and
// its front padding (ONNX 1.15, as PyTorch computes it). Kiln follows the fixed rule.
bool library_rule_outdated(const onnx::NodeProto& node) {
  if (node.op_type() != "MaxPool" && node.op_type() != "AveragePool" && node.op_type() != "LpPool") return false;
  for (const auto& attribute : node.attribute())
    if (attribute.name() == "ceil_mode") return attribute.i() != 0;
  return false;
}

std::string shape_text(const onnx::TypeProto::Tensor& type) {
  std::string text = "[";
  for (int i = 0; i < type.shape().dim_size(); ++i) {
    const auto& dim = type.shape().dim(i);
    text += (i ? ", " : "") + (dim.has_dim_value() ? std::to_string(dim.dim_value()) : dim.dim_param().empty() ? "?" : dim.dim_param());
  }
  return text + "]";
}

// Graph inputs given values become initializers of those values (and leave the inputs).
void freeze_inputs(OnnxModel& model, const std::map<std::string, Tensor>& values) {
  onnx::GraphProto& graph = *model.proto->mutable_graph();
  std::set<std::string> initializers;
  for (const auto& initializer : graph.initializer()) initializers.insert(initializer.name());
  for (const auto& [name, value] : values) {
    auto& inputs = *graph.mutable_input();
    int index = 0;
    while (index < inputs.size() && (inputs[index].name() != name || initializers.count(name))) ++index;
    std::string where = "'" + model.path + "': the value given for graph input '" + name + "'";
    if (index == inputs.size()) {
      std::string listed;
      for (const auto& input : inputs)
        if (!initializers.count(input.name())) listed += (listed.empty() ? "'" : ", '") + input.name() + "'";
      fail("'", model.path, "': '", name, "' is not a graph input fed at run time (the inputs are ", listed, ")");
    }
    const onnx::TypeProto& type = inputs[index].type();
    if (type.has_tensor_type()) {
      const auto& tensor_type = type.tensor_type();
      std::optional<DType> declared = dtype_from_onnx(tensor_type.elem_type());
      if (declared && *declared != value.dtype())
        fail(where, " is ", dtype_name(value.dtype()), ", but the input is declared ", onnx_type_name(tensor_type.elem_type()));
      if (tensor_type.has_shape()) {
        const auto& dims = tensor_type.shape().dim();
        bool fits = dims.size() == value.dim();
        for (int d = 0; fits && d < dims.size(); ++d)
          fits = !dims[d].has_dim_value() || dims[d].dim_value() == value.size(d);
        if (!fits)
          fail(where, " has shape ", sizes_to_string(value.sizes()), ", but the input is declared ", shape_text(tensor_type));
      }
    }
    *graph.add_initializer() = onnx_tensor_proto(value, name);
    inputs.DeleteSubrange(index, 1);
  }
}

class Importer {
 public:
  Importer(OnnxModel model, const OnnxImportOptions& options, std::map<std::string, ir::SymInt> equal_symbols = {},
           std::map<std::string, int64_t> slices_cut_at = {})
      : model_(std::move(model)), options_(options), reader_(model_.proto, model_.path), symbols_(std::move(equal_symbols)) {
    state_.slices_cut_at = std::move(slices_cut_at);
    state_.model_path = model_.path;
    state_.file_label = std::filesystem::path(model_.path).filename().string();
    if (model_.converted_from_opset)
      state_.file_label += " (opset " + std::to_string(model_.converted_from_opset) + ", converted to " +
                           std::to_string(model_.opset) + " by ONNX's version converter)";
    state_.opset = model_.opset;
    state_.tensors = &reader_;
    state_.convert_subgraph = [this](const onnx::GraphProto& subgraph, const std::vector<OnnxValue>& inputs) {
      return convert_subgraph(subgraph, inputs);
    };
  }

  // Steps 4-6 of the header: every node converted by Kiln's converters, which validate their
  // attributes against the actual ranks (an axis out of range, an output the op does not
  // have) before ONNX's shape inference, which crashes on some of those, sees the model.
  void convert_all() {
    const onnx::GraphProto& graph = model_.proto->graph();
    if (graph.sparse_initializer_size() > 0)
      fail("'", model_.path, "' has sparse initializers, which Kiln does not support");
    for (const auto& initializer : graph.initializer()) {
      OnnxValue value = OnnxValue::of_constant(reader_.read(initializer, "initializer '" + initializer.name() + "'"));
      value.name = initializer.name();
      state_.values[initializer.name()] = std::move(value);
    }
    state_.onnx_graph = &graph;
    for (const auto& input : graph.input())
      if (auto initializer = state_.values.find(input.name()); initializer != state_.values.end())
        check_initializer_of_input(input, initializer->second);
    for (const auto& input : graph.input())
      if (!state_.values.count(input.name())) {
        add_input(input);
        state_.run_time_inputs.insert(input.name());
      }
    for (int i = 0; i < graph.node_size(); ++i) convert(graph.node(i));
  }

  // Step 7: each converted value of the main graph against ONNX's type of it (inferred, or
  // declared in the file); a subgraph's values are gone from the state by then.
  // `declared`: the types the model file writes, as read before ONNX's inference merged its own
  // into them (a declared [a, b] that ONNX filled in is still the file's [a, b]).
  void check_types(const std::map<std::string, onnx::TypeProto>& declared) {
    const onnx::GraphProto& graph = model_.proto->graph();
    // Graph inputs and initializers that the file declares again (as a graph output, or in
    // value_info) with another type: ONNX types their users from that declaration.
    std::map<std::string, std::string> given;  // name -> "graph input" or "initializer"
    for (const auto& initializer : graph.initializer()) given.emplace(initializer.name(), "initializer");
    for (const auto& input : graph.input()) given.emplace(input.name(), "graph input");
    for (const auto& [name, kind] : given) {
      auto file_type = declared.find(name);
      auto value = state_.values.find(name);
      if (file_type == declared.end() || value == state_.values.end() || !value->second.is_tensor() ||
          !file_type->second.has_tensor_type() || agrees_with_onnx_type(value->second, file_type->second.tensor_type()))
        continue;
      bool is_output = std::any_of(graph.output().begin(), graph.output().end(), [&](const auto& o) { return o.name() == name; });
      fail("'", model_.path, "': ", kind, " '", name, "' is ", type_text(value->second), ", but the model declares it ",
           onnx_type_text(file_type->second.tensor_type()), is_output ? " as a graph output" : " in its value_info");
    }
    std::map<std::string, const onnx::TypeProto*> types = known_types(graph);
    for (const Converted& value_of : converted_) {
      auto value = state_.values.find(value_of.name);
      if (value == state_.values.end()) continue;
      if (auto file_type = declared.find(value_of.name); file_type != declared.end()) {
        check_against_onnx_type(value->second, file_type->second, true, value_of.where);
      } else if (auto type = types.find(value_of.name); type != types.end() && !value_of.library_rule_outdated) {
        check_against_onnx_type(value->second, *type->second, false, value_of.where);
      }
    }
  }

  // Step 8.
  ir::Graph finish() {
    add_outputs(model_.proto->graph());
    // A symbol that slices were cut at is at most the size they cut (its range, where it is an
    // input's dim: the range is checked on the inputs).
    ir::GraphSignature& signature = state_.graph.signature();
    for (const auto& [symbol, most] : state_.slices_cut_at) {
      bool input_dim = false;
      for (const ir::Node* input : state_.graph.placeholders())
        for (const ir::SymInt& size : input->value().shape)
          input_dim = input_dim || (size.is_symbol() && size.free_symbols().front() == symbol);
      if (!input_dim) continue;
      auto known = signature.symbol_ranges().find(symbol);
      ir::SymbolRange range = known != signature.symbol_ranges().end() ? known->second : ir::SymbolRange{};
      range.max = range.max ? std::min(*range.max, most) : most;
      signature.set_symbol_range(symbol, range);
    }
    ir::verify(state_.graph);
    return std::move(state_.graph);
  }

  OnnxModel& model() { return model_; }
  OnnxModel release() { return std::move(model_); }

 private:
  // A graph input that has an initializer takes the initializer's value (Kiln freezes it), whose
  // type must be the one the input declares: ONNX's shape inference types the input's users
  // from the declaration.
  void check_initializer_of_input(const onnx::ValueInfoProto& input, const OnnxValue& value) {
    if (!input.type().has_tensor_type() || agrees_with_onnx_type(value, input.type().tensor_type())) return;
    fail("'", model_.path, "': graph input '", input.name(), "' is declared ", onnx_type_text(input.type().tensor_type()),
         ", but its initializer holds ", type_text(value));
  }

  void add_input(const onnx::ValueInfoProto& input) {
    auto where = [&] { return "'" + model_.path + "': graph input '" + input.name() + "'"; };
    if (input.type().has_sequence_type() || input.type().has_optional_type()) return add_collection_input(input);
    if (!input.type().has_tensor_type())
      fail(where(), " is not a tensor (Kiln imports tensors, and sequences and optionals of tensors)");
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

  // A sequence or optional graph input, from the tensors fed for it (see the header).
  void add_collection_input(const onnx::ValueInfoProto& input) {
    std::string where = "'" + model_.path + "': graph input '" + input.name() + "'";
    const onnx::TypeProto& type = input.type();
    bool optional = type.has_optional_type();
    const onnx::TypeProto& inner = optional ? type.optional_type().elem_type() : type;
    bool sequence = inner.has_sequence_type();
    if (!sequence && !inner.has_tensor_type())
      fail(where, " is not a tensor (Kiln imports tensors, and sequences and optionals of tensors)");
    const onnx::TypeProto& element = sequence ? inner.sequence_type().elem_type() : inner;
    if (!element.has_tensor_type())
      fail(where, " is a sequence of non-tensors (Kiln imports sequences of tensors)");
    std::optional<DType> declared;
    if (element.tensor_type().elem_type() != 0) {
      declared = dtype_from_onnx(element.tensor_type().elem_type());
      if (!declared)
        fail(where, " holds element type ", onnx_type_name(element.tensor_type().elem_type()), ", which Kiln does not support");
    }
    std::string base = onnx_value_name(input.name());
    if (options_.collection_inputs) options_.collection_inputs->push_back(base);
    if (!options_.fed_types)
      fail(where, " is ", sequence ? "a sequence" : "an optional", ": Kiln specializes it on the tensors fed at run time (",
           sequence ? "its elements as " + base + "_0, " + base + "_1, ..." : "the tensor " + base + ", or none",
           "), so give them (kiln run --input ...)");
    // The tensors fed: a sequence's consecutive elements, an optional's one tensor.
    std::vector<std::string> names;
    auto is_fed = [&](const std::string& name) { return options_.fed_types->count(name) > 0; };
    if (sequence) {
      while (is_fed(onnx_value_name(input.name() + "." + std::to_string(names.size()))))
        names.push_back(onnx_value_name(input.name() + "." + std::to_string(names.size())));
    } else if (is_fed(base)) {
      names.push_back(base);
    }
    // A dim_param of the element type is the symbol it names (shared with other inputs) where
    // every tensor fed agrees on that size; ONNX lets a sequence's elements differ in shape,
    // and there each element keeps the size fed.
    std::vector<bool> shared(size_t(element.tensor_type().shape().dim_size()), true);
    for (size_t axis = 0; axis < shared.size(); ++axis)
      for (const std::string& name : names) {
        const ir::SymShape& shape = options_.fed_types->at(name).shape;
        const ir::SymShape& first = options_.fed_types->at(names.front()).shape;
        shared[axis] = shared[axis] && axis < shape.size() && axis < first.size() && shape[axis] == first[axis];
      }
    // One fed tensor as a placeholder: the element type's declared dims, the fed sizes where it
    // declares none.
    auto fed = [&](const std::string& name) -> OnnxValue {
      ir::TensorMeta meta = options_.fed_types->at(name);
      if (declared && meta.dtype != *declared)
        fail(where, ": the tensor fed as '", name, "' is ", dtype_name(meta.dtype), ", but the input holds ",
             onnx_type_name(element.tensor_type().elem_type()));
      if (element.tensor_type().has_shape()) {
        const auto& dims = element.tensor_type().shape().dim();
        if (dims.size() != int(meta.shape.size()))
          fail(where, ": the tensor fed as '", name, "' has rank ", meta.shape.size(), ", but the input's elements have rank ",
               dims.size());
        for (int axis = 0; axis < dims.size(); ++axis) {
          if (dims[axis].has_dim_value() && !(meta.shape[size_t(axis)] == ir::SymInt(dims[axis].dim_value())))
            fail(where, ": the tensor fed as '", name, "' has size ", meta.shape[size_t(axis)], " at axis ", axis,
                 ", but the input's elements have ", dims[axis].dim_value());
          if (!dims[axis].has_dim_value() && !dims[axis].dim_param().empty() && shared[size_t(axis)])
            meta.shape[size_t(axis)] = symbols_.for_dim_param(dims[axis].dim_param());
        }
        meta = ir::TensorMeta::contiguous(meta.dtype, meta.shape);
      }
      ir::Node* node = state_.graph.create_placeholder(name, meta);
      node->source.file = state_.file_label;
      OnnxValue value = OnnxValue::of_node(node);
      value.name = name;
      return value;
    };
    OnnxValue value;
    if (sequence) {
      std::vector<OnnxValue> elements;
      for (const std::string& name : names) elements.push_back(fed(name));
      value = optional && elements.empty() ? OnnxValue::none() : OnnxValue::sequence(std::move(elements), declared);
    } else {
      value = names.empty() ? OnnxValue::none() : fed(base);
    }
    value.name = input.name();
    state_.values[input.name()] = std::move(value);
  }

  // Binds a subgraph's inputs and initializers, converts its nodes in the current scope (they
  // may read outer values), returns its outputs, and forgets the names it defined.
  std::vector<OnnxValue> convert_subgraph(const onnx::GraphProto& subgraph, const std::vector<OnnxValue>& inputs) {
    if (int(inputs.size()) != subgraph.input_size())
      fail("'", model_.path, "': a subgraph '", subgraph.name(), "' has ", subgraph.input_size(), " inputs, but ",
           inputs.size(), " are given");
    std::vector<std::pair<std::string, std::optional<OnnxValue>>> shadowed;  // name, its outer value
    auto remember = [&](const std::string& name) {
      auto found = state_.values.find(name);
      shadowed.emplace_back(name, found == state_.values.end() ? std::nullopt : std::optional<OnnxValue>(found->second));
    };
    for (const auto& initializer : subgraph.initializer()) {
      remember(initializer.name());
      OnnxValue value = OnnxValue::of_constant(reader_.read(initializer, "initializer '" + initializer.name() + "'"));
      value.name = initializer.name();
      state_.values[initializer.name()] = std::move(value);
    }
    for (int i = 0; i < subgraph.input_size(); ++i) {
      remember(subgraph.input(i).name());
      OnnxValue value = inputs[size_t(i)];
      value.name = subgraph.input(i).name();
      state_.values[value.name] = std::move(value);
    }
    for (const auto& node : subgraph.node()) {
      for (const std::string& output : node.output())
        if (!output.empty()) remember(output);
      convert(node);
    }
    std::vector<OnnxValue> outputs;
    for (const auto& output : subgraph.output()) {
      auto found = state_.values.find(output.name());
      if (found == state_.values.end())
        fail("'", model_.path, "': subgraph output '", output.name(), "' is not computed by any node");
      outputs.push_back(found->second);
    }
    for (auto entry = shadowed.rbegin(); entry != shadowed.rend(); ++entry) {
      if (entry->second) state_.values[entry->first] = *entry->second;
      else state_.values.erase(entry->first);
    }
    return outputs;
  }

  static bool has_subgraph(const onnx::NodeProto& node) {
    for (const auto& attribute : node.attribute())
      if (attribute.has_g() || attribute.graphs_size() > 0) return true;
    return false;
  }

  static bool all_inputs_constant(const OnnxImportState& state, const onnx::NodeProto& node) {
    if (has_subgraph(node)) return false;  // its subgraph converts into the graph being built
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
    for (const std::optional<OnnxValue>& value : context.outputs())
      if (value && !value->is_tensor()) return false;  // a sequence's elements stay values of the graph
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

  void convert(const onnx::NodeProto& node) {
    OnnxConverter converter = OnnxOpTable::global().find(qualified_op_type(node));
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
    // A converter sets every output its op has (in Kiln); a node that names more is the model's
    // error. ONNX's checker refuses such nodes for the opsets it knows, but not newer ones.
    size_t computed = 0;
    for (const std::optional<OnnxValue>& output : outputs) computed += output.has_value();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string& name = node.output(int(i));
      if (!name.empty() && !outputs[i])
        fail(where, " has ", node.output_size(), " outputs, but Kiln's ", node.op_type(), " computes ", computed,
             " (output ", i, " '", name, "' is not one of them)");
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string& name = node.output(int(i));
      if (name.empty()) continue;
      state_.values[name] = std::move(*outputs[i]);
      converted_.push_back({name, where, library_rule_outdated(node)});
    }
  }

  void add_outputs(const onnx::GraphProto& graph) {
    std::vector<ir::Argument> results;
    std::set<ir::Node*> named;  // nodes that already carry an output's name
    for (const auto& output : graph.output()) {
      auto found = state_.values.find(output.name());
      if (found == state_.values.end())
        fail("'", model_.path, "': graph output '", output.name(), "' is not computed by any node");
      OnnxValue& value = found->second;
      if (value.is_none) continue;  // an empty optional is left out
      if (value.is_sequence) {
        for (size_t k = 0; k < value.elements.size(); ++k) {
          std::string name = onnx_value_name(output.name() + "." + std::to_string(k));
          results.emplace_back(named_output(state_.materialize(value.elements[k]), name, named));
        }
        continue;
      }
      results.emplace_back(named_output(state_.node_of(output.name()), onnx_value_name(output.name()), named));
    }
    if (graph.output_size() == 0) fail("'", model_.path, "' has no graph outputs");
    if (results.empty())
      fail("'", model_.path, "': every graph output is an empty sequence or optional here, so the model computes no tensor");
    state_.graph.create_output(results);
  }

  // The node that returns a graph output under its ONNX name: the node itself, renamed, when
  // it is a computed value that carries no other output's name; a copy (clone) of it for a
  // graph input, or a value that another output already names (Identity, Clip without
  // bounds, ... alias their input). A node that holds the name already is renamed away.
  ir::Node* named_output(ir::Node* node, const std::string& name, std::set<ir::Node*>& named) {
    ir::Graph& graph = state_.graph;
    if (node->name() == name && !named.count(node)) {
      named.insert(node);
      return node;
    }
    if (node->op() == ir::OpKind::placeholder || named.count(node)) {
      ir::Node* copy = graph.create_call("clone", {node});
      copy->source = node->source;
      node = copy;
    }
    if (ir::Node* holder = graph.find(name); holder && holder != node) {
      if (named.count(holder)) {  // two ONNX names that sanitize alike: the second gets a suffix
        named.insert(node);
        return node;
      }
      graph.rename(holder, graph.unique_name(name + "_"));
    }
    graph.rename(node, name);
    named.insert(node);
    return node;
  }

  OnnxModel model_;
  const OnnxImportOptions& options_;
  struct Converted {
    std::string name;   // an output of a converted node
    std::string where;  // the node, for messages
    // ONNX's library infers this node's output type by an outdated rule (library_rule_outdated):
    // a disagreement with what Kiln computes is not Kiln's bug.
    bool library_rule_outdated = false;
  };
  std::vector<Converted> converted_;  // in order
  OnnxTensorReader reader_;
  OnnxImportState state_;
  OnnxSymbols symbols_;
};

}  // namespace

// The symbols of dynamic dims found equal by ops that need them equal (onnx_symbols.h): each
// import that meets such an op records the equality and starts again, at most this many times.
constexpr int kMaxSymbolEqualities = 256;

ir::Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  OnnxModel model = read_onnx_model(path);
  freeze_inputs(model, options.input_values);
  report_unsupported_ops(model);
  std::map<std::string, onnx::TypeProto> declared = declared_types(model.proto->graph());
  std::map<std::string, ir::SymInt> equal_symbols;
  std::map<std::string, int64_t> slices_cut_at;
  std::optional<Importer> attempt;
  for (;;) {
    attempt.emplace(std::move(model), options, equal_symbols, slices_cut_at);
    try {
      attempt->convert_all();
      break;
    } catch (const ir::SymbolMismatch& mismatch) {
      const std::string& name = mismatch.symbol();
      if (equal_symbols.size() >= size_t(kMaxSymbolEqualities) || equal_symbols.count(name)) throw;
      equal_symbols.emplace(name, mismatch.value());
      log("dynamic", "'" + path + "': imported again with " + name + " = " + mismatch.value().to_string() +
                         ", which the sizes of an op need (" + mismatch.what() + ")");
      model = attempt->release();
    } catch (const ir::SymbolBound& bound) {
      // A slice of a static dim cut at a dynamic size s (a causal mask [:seq, :seq]) has
      // min(s, size) elements, which an op needs to be s: import again with such slices taking s
      // elements, s at most that size (the symbol's range, checked when the model runs: a larger s
      // is the error PyTorch's broadcast would have raised).
      if (slices_cut_at.count(bound.symbol())) throw;
      slices_cut_at.emplace(bound.symbol(), bound.bound());
      log("dynamic", "'" + path + "': imported again with slices cut at " + bound.symbol() + " taking " + bound.symbol() +
                         " elements (at most " + std::to_string(bound.bound()) + "), which the sizes of an op need (" +
                         bound.what() + ")");
      model = attempt->release();
    }
  }
  Importer& importer = *attempt;
  infer_onnx_shapes(importer.model());
  importer.check_types(declared);
  return importer.finish();
}

std::vector<std::string> supported_onnx_ops() { return OnnxOpTable::global().op_types(); }

std::string onnx_value_name(const std::string& onnx_name) { return ir::Graph::sanitized_name(onnx_name); }

}  // namespace kiln::frontends
