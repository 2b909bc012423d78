// OnnxNodeContext: inputs, attributes and outputs of one ONNX node for its converter.
#include "frontends/onnx/onnx_node_context.h"

#include <cctype>
#include <map>

#include "frontends/onnx/onnx_importer.h"
#include "ir/op_registry.h"

namespace kiln::frontends {

std::string OnnxImportState::parameter_name(const std::string& onnx_name) const {
  std::string base;
  for (char c : onnx_name) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  if (base.empty() || base.front() == '.') base = "constant" + base;
  if (std::isdigit(static_cast<unsigned char>(base.front()))) base = "_" + base;
  std::string name = base;
  for (int suffix = 1; graph.parameter(name) != nullptr; ++suffix) name = base + "_" + std::to_string(suffix);
  return name;
}

namespace {

// Each element as a 1-element i64 node (a constant, or the element count of a tensor of ones
// of that symbolic size), concatenated.
ir::Node* compute_symbolic(ir::Graph& graph, const OnnxValue& value) {
  std::vector<ir::Argument> parts;
  for (const ir::SymInt& element : *value.symbolic) {
    if (element.is_constant()) {
      parts.emplace_back(graph.create_call("full", {ir::Argument::ints({1}), element.constant()}, {{"dtype", DType::i64}}));
      continue;
    }
    ir::Node* ones = graph.create_call("full", {ir::Argument::sym_ints({element}), int64_t(1)}, {{"dtype", DType::i64}});
    parts.emplace_back(graph.create_call("unsqueeze", {graph.create_call("sum", {ones}), int64_t(0)}));
  }
  ir::Node* result = graph.create_call("cat", {ir::Argument(parts), int64_t(0)});
  if (value.symbolic_scalar) result = graph.create_call("reshape", {result, ir::Argument::ints({})});
  if (value.symbolic_dtype != DType::i64) result = graph.create_call("cast", {result, value.symbolic_dtype});
  return result;
}

}  // namespace

namespace {

// Every name the nodes of `graph` (and of their subgraphs) read.
void subgraph_reads(const onnx::GraphProto& graph, std::vector<std::string>& names) {
  for (const auto& node : graph.node()) {
    for (const std::string& input : node.input()) names.push_back(input);
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) subgraph_reads(attribute.g(), names);
      for (const auto& subgraph : attribute.graphs()) subgraph_reads(subgraph, names);
    }
  }
}

void add_producers(const onnx::GraphProto& graph, std::map<std::string, const onnx::NodeProto*>& producer) {
  for (const auto& node : graph.node()) {
    for (const std::string& output : node.output()) producer[output] = &node;
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) add_producers(attribute.g(), producer);
      for (const auto& subgraph : attribute.graphs()) add_producers(subgraph, producer);
    }
  }
}

}  // namespace

std::vector<std::string> OnnxImportState::run_time_sources(const std::string& onnx_name) const {
  if (!onnx_graph) return {};
  std::map<std::string, const onnx::NodeProto*> producer;  // of the main graph's and its subgraphs' values
  add_producers(*onnx_graph, producer);
  std::set<std::string> sources, visited;
  std::vector<std::string> pending = {onnx_name};
  while (!pending.empty()) {
    std::string name = pending.back();
    pending.pop_back();
    if (name.empty() || !visited.insert(name).second) continue;
    if (run_time_inputs.count(name)) sources.insert(name);
    auto found = producer.find(name);
    if (found == producer.end()) continue;
    const onnx::NodeProto& node = *found->second;
    if (node.op_type() == "Shape" || node.op_type() == "Size") continue;
    for (const std::string& input : node.input()) pending.push_back(input);
    for (const auto& attribute : node.attribute()) {  // a subgraph reads outer values by name
      if (attribute.has_g()) subgraph_reads(attribute.g(), pending);
      for (const auto& subgraph : attribute.graphs()) subgraph_reads(subgraph, pending);
    }
  }
  return std::vector<std::string>(sources.begin(), sources.end());
}

ir::Node* OnnxImportState::node_of(const std::string& onnx_name) { return materialize(values.at(onnx_name)); }

ir::Node* OnnxImportState::materialize(OnnxValue& value) {
  KILN_CHECK(value.is_tensor(), "a graph node for ", value.kind_text(), " '", value.name, "'");
  if (value.node) return value.node;
  if (value.constant) {
    std::string name = parameter_name(value.name.empty() ? "constant" : value.name);
    graph.set_parameter(name, value.constant->contiguous());
    value.node = graph.create_get_attr(name);
  } else {
    value.node = compute_symbolic(graph, value);
  }
  value.node->source.file = file_label;
  return value.node;
}

OnnxNodeContext::OnnxNodeContext(OnnxImportState& state, const onnx::NodeProto& node, ir::Graph& graph)
    : state_(state), node_(node), graph_(graph), folding_(&graph != &state.graph), outputs_(size_t(node.output_size())) {}

std::string OnnxNodeContext::node_description() const {
  if (!node_.name().empty()) return "node '" + node_.name() + "' (" + node_.op_type() + ")";
  return "the " + node_.op_type() + " node producing '" + (node_.output_size() ? node_.output(0) : "") + "'";
}

std::string OnnxNodeContext::where() const { return "'" + state_.model_path + "': " + node_description(); }

bool OnnxNodeContext::has_input(size_t index) const {
  return index < input_count() && !node_.input(int(index)).empty();
}

const OnnxValue& OnnxNodeContext::input(size_t index) const {
  if (!has_input(index)) fail("input ", index, " is required but not given");
  auto found = state_.values.find(node_.input(int(index)));
  if (found == state_.values.end())
    fail("input ", index, " '", node_.input(int(index)), "' is not defined by any earlier node, graph input or initializer");
  return found->second;
}

const OnnxValue& OnnxNodeContext::tensor_value(size_t index) const {
  const OnnxValue& value = input(index);
  if (!value.is_tensor())
    fail("input ", index, " '", node_.input(int(index)), "' is ", value.kind_text(), ", where ", op_type(),
         " takes a tensor");
  return value;
}

ir::Node* OnnxNodeContext::tensor(size_t index) {
  const OnnxValue& value = tensor_value(index);
  if (!folding_) return value.node ? value.node : state_.node_of(value.name);
  if (auto found = scratch_inputs_.find(index); found != scratch_inputs_.end()) return found->second;
  KILN_CHECK(value.constant, "only constants are folded");
  std::string name = "input" + std::to_string(index);
  graph_.set_parameter(name, *value.constant);
  ir::Node* node = graph_.create_get_attr(name);
  scratch_inputs_[index] = node;
  return node;
}

const Tensor* OnnxNodeContext::constant(size_t index) const {
  const OnnxValue& value = tensor_value(index);
  return value.constant ? &*value.constant : nullptr;
}

std::optional<ir::SymShape> OnnxNodeContext::int_values(size_t index) const {
  const OnnxValue& value = tensor_value(index);
  if (value.symbolic) return value.symbolic;
  if (!value.constant || value.constant->dim() > 1) return std::nullopt;
  if (!is_integral(value.constant->dtype())) return std::nullopt;
  ir::SymShape elements;
  for (int64_t i = 0; i < value.constant->numel(); ++i) elements.emplace_back(value.constant->flat_int(i));
  return elements;
}

std::vector<int64_t> OnnxNodeContext::constant_ints(size_t index, std::string_view what) const {
  const OnnxValue& value = input(index);
  if (value.constant && !is_integral(value.constant->dtype()))
    fail("input ", index, " (", what, ") must be an integer tensor, but it is ", dtype_name(value.constant->dtype()));
  if (value.constant && value.constant->dim() > 1)
    fail("input ", index, " (", what, ") must have rank 0 or 1, but its shape is ", sizes_to_string(value.constant->sizes()));
  std::optional<ir::SymShape> elements = int_values(index);
  std::vector<int64_t> result;
  if (elements) {
    for (const ir::SymInt& element : *elements) {
      if (!element.is_constant()) {
        result.clear();
        break;
      }
      result.push_back(element.constant());
    }
    if (result.size() == elements->size()) return result;
  }
  if (elements)
    fail("input ", index, " (", what, ") must be known when the model is imported (a constant, or computed from static "
         "shapes), but it is symbolic: [", ir::shape_string(*elements), "]");
  need_known(index, what, "it is computed at run time");
}

ir::SymShape OnnxNodeContext::known_ints(size_t index, std::string_view what) const {
  std::optional<ir::SymShape> elements = int_values(index);
  if (elements) return *elements;
  const OnnxValue& value = input(index);
  if (value.constant && !is_integral(value.constant->dtype()))
    fail("input ", index, " (", what, ") must be an integer tensor, but it is ", dtype_name(value.constant->dtype()));
  if (value.constant) fail("input ", index, " (", what, ") must have rank 0 or 1, but its shape is ", sizes_to_string(value.constant->sizes()));
  need_known(index, what, "data-dependent shapes are not supported");
}

double OnnxNodeContext::constant_scalar(size_t index, std::string_view what) const {
  const Tensor& value = constant_input(index, what);
  if (value.numel() != 1) fail("input ", index, " (", what, ") must have one element, but has shape ", sizes_to_string(value.sizes()));
  return value.flat_double(0);
}

const Tensor& OnnxNodeContext::constant_input(size_t index, std::string_view what) const {
  const OnnxValue& value = tensor_value(index);
  if (!value.constant) need_known(index, what, "it is computed at run time");
  return *value.constant;
}

void OnnxNodeContext::need_known(size_t index, std::string_view what, const std::string& why) const {
  std::string prefix = where() + ": input " + std::to_string(index) + " (" + std::string(what) +
                       ") must be known when the model is imported";
  std::vector<std::string> sources = state_.run_time_sources(node_.input(int(index)));
  if (sources.empty()) kiln::fail(prefix, " (a constant, or computed from the inputs' shapes); ", why);
  std::string names;
  for (const std::string& source : sources) names += (names.empty() ? "'" : ", '") + source + "'";
  throw OnnxInputValuesNeeded(prefix + ", but it is computed from the graph input" + (sources.size() == 1 ? " " : "s ") +
                                  names + " fed at run time: give " + (sources.size() == 1 ? "its value" : "their values") +
                                  " (kiln run and kiln bench specialize the model on the values --input gives)",
                              sources);
}

const onnx::AttributeProto* OnnxNodeContext::attribute(std::string_view name) const {
  for (const auto& attribute : node_.attribute())
    if (attribute.name() == name) return &attribute;
  return nullptr;
}

namespace {

const char* attribute_type_name(onnx::AttributeProto::AttributeType type) {
  switch (type) {
    case onnx::AttributeProto::INT: return "INT";
    case onnx::AttributeProto::FLOAT: return "FLOAT";
    case onnx::AttributeProto::STRING: return "STRING";
    case onnx::AttributeProto::INTS: return "INTS";
    case onnx::AttributeProto::FLOATS: return "FLOATS";
    case onnx::AttributeProto::TENSOR: return "TENSOR";
    case onnx::AttributeProto::GRAPH: return "GRAPH";
    default: return "another type";
  }
}

}  // namespace

#define KILN_EXPECT_ATTRIBUTE_TYPE(found, expected)                                                   \
  if ((found)->type() != onnx::AttributeProto::expected)                                             \
    fail("attribute '", (found)->name(), "' must be " #expected ", but it is ",                      \
         attribute_type_name((found)->type()));

int64_t OnnxNodeContext::int_attribute(std::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) return fallback;
  KILN_EXPECT_ATTRIBUTE_TYPE(found, INT)
  return found->i();
}

double OnnxNodeContext::float_attribute(std::string_view name, double fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) return fallback;
  KILN_EXPECT_ATTRIBUTE_TYPE(found, FLOAT)
  return double(found->f());
}

std::string OnnxNodeContext::string_attribute(std::string_view name, const std::string& fallback) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) return fallback;
  KILN_EXPECT_ATTRIBUTE_TYPE(found, STRING)
  return found->s();
}

std::vector<int64_t> OnnxNodeContext::ints_attribute(std::string_view name, const std::vector<int64_t>& fallback) const {
  std::optional<std::vector<int64_t>> found = maybe_ints_attribute(name);
  return found ? *found : fallback;
}

std::optional<std::vector<int64_t>> OnnxNodeContext::maybe_ints_attribute(std::string_view name) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) return std::nullopt;
  KILN_EXPECT_ATTRIBUTE_TYPE(found, INTS)
  return std::vector<int64_t>(found->ints().begin(), found->ints().end());
}

const onnx::GraphProto& OnnxNodeContext::graph_attribute(std::string_view name) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) fail("attribute '", name, "' is required");
  KILN_EXPECT_ATTRIBUTE_TYPE(found, GRAPH)
  return found->g();
}

std::vector<OnnxValue> OnnxNodeContext::convert_subgraph(const onnx::GraphProto& subgraph, const std::vector<OnnxValue>& inputs) {
  KILN_CHECK(!folding_, "a node with a subgraph is never folded");
  return state_.convert_subgraph(subgraph, inputs);
}

Tensor OnnxNodeContext::tensor_attribute(std::string_view name) const {
  const onnx::AttributeProto* found = attribute(name);
  if (!found) fail("attribute '", name, "' is required");
  KILN_EXPECT_ATTRIBUTE_TYPE(found, TENSOR)
  return state_.tensors->read(found->t(), "attribute '" + std::string(name) + "' of " + node_description());
}

#undef KILN_EXPECT_ATTRIBUTE_TYPE

int64_t OnnxNodeContext::wrap_axis(int64_t axis, int64_t rank) const {
  if (axis < -rank || axis >= rank)
    fail("axis ", axis, " is out of range for a tensor of rank ", rank, " (expected ", -rank, " to ", rank - 1, ")");
  return axis < 0 ? axis + rank : axis;
}

void OnnxNodeContext::require_outputs_at_most(size_t count, std::string_view what) const {
  for (size_t i = count; i < output_count(); ++i)
    if (output_used(i)) fail("output ", i, " (", what, ") is not supported; Kiln computes only the first ", count);
}

void OnnxNodeContext::set_output(size_t index, ir::Node* node) { set_output(index, OnnxValue::of_node(node)); }

void OnnxNodeContext::set_output(size_t index, OnnxValue value) {
  KILN_CHECK(index < outputs_.size(), "output ", index, " of a node with ", outputs_.size());
  value.name = node_.output(int(index));
  outputs_[index] = std::move(value);
}

ir::Node* OnnxNodeContext::create(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs,
                                  const std::string& name) {
  ir::Node* node = nullptr;
  try {
    node = graph_.create_call(target, std::move(args), std::move(kwargs), name);
  } catch (const ir::SymbolMismatch& mismatch) {
    throw mismatch.with_message(where() + ": " + mismatch.what());  // the importer may unify the two
  } catch (const ir::SymbolBound& bound) {
    throw bound.with_message(where() + ": " + bound.what());  // the importer may cut slices at the symbol
  } catch (const kiln::Error& error) {
    fail(error.what());
  }
  node->source.file = state_.file_label;
  node->source.onnx_node = node_.name();
  node->source.onnx_op = node_.op_type();
  return node;
}

ir::Node* OnnxNodeContext::call(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs) {
  return create(target, std::move(args), std::move(kwargs), "");
}

ir::Node* OnnxNodeContext::constant_node(const Tensor& value) {
  std::string wanted = (node_.name().empty() ? node_.op_type() : node_.name()) + ".constant";
  std::string name = folding_ ? wanted : state_.parameter_name(wanted);
  for (int suffix = 1; graph_.parameter(name) != nullptr; ++suffix) name = wanted + "_" + std::to_string(suffix);
  graph_.set_parameter(name, value.contiguous());
  ir::Node* node = graph_.create_get_attr(name);
  node->source.file = state_.file_label;
  return node;
}

ir::Node* OnnxNodeContext::emit(size_t index, const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs) {
  ir::Node* node = create(target, std::move(args), std::move(kwargs), graph_.unique_name(node_.output(int(index))));
  set_output(index, node);
  return node;
}

}  // namespace kiln::frontends
