// The graph signature listed against its graph, checked, and built from written specs.
#include "ir/signature_specs.h"

#include <map>

#include "kiln/error.h"

namespace kiln::ir {

namespace {

using kiln::detail::concat;

// "output 1 (x_mutated)"
std::string describe_output(const Graph& graph, size_t index) {
  return concat("output ", index, " (", spec_name(graph.output_node()->args().at(index)), ")");
}

bool read_by_get_attr(const Graph& graph, std::string_view target) {
  for (Node* node : graph.nodes())
    if (node->op() == OpKind::get_attr && node->target() == target) return true;
  return false;
}

Node* placeholder_with_target(const Graph& graph, std::string_view target) {
  for (Node* node : graph.placeholders())
    if (node->target() == target) return node;
  return nullptr;
}

// What a mutation output is copied back into, or the problem.
std::string destination_type(const Graph& graph, const OutputSpec& spec, TensorMeta& type) {
  std::string kind(output_kind_name(spec.kind));
  if (spec.kind == OutputKind::user_input_mutation) {
    Node* input = placeholder_with_target(graph, spec.target);
    if (!input) return concat(kind, " target '", spec.target, "' names no placeholder");
    type = input->value();
    return "";
  }
  const Tensor* parameter = graph.parameter(spec.target);
  if (!parameter) return concat(kind, " target '", spec.target, "' names no parameter of the graph");
  InputKind attribute = graph.signature().attribute_kind(spec.target);
  if (attribute_mutation_kind(attribute) != spec.kind)
    return concat(kind, " target '", spec.target, "' is a ", input_kind_name(attribute),
                  attribute == InputKind::constant_tensor ? ", which is never written" : "");
  type = TensorMeta::contiguous(parameter->dtype(), SymShape(parameter->sizes().begin(), parameter->sizes().end()),
                                parameter->device());
  return "";
}

// A key per destination: user inputs and attributes are named apart.
std::string destination_key(const OutputSpec& spec) {
  return (spec.kind == OutputKind::user_input_mutation ? "input " : "attribute ") + spec.target;
}

}  // namespace

std::string InputSpec::name() const {
  if (node) return spec_name(Argument(node));
  std::string text = target;
  for (char& c : text)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  return text;
}

std::vector<InputSpec> input_specs(const Graph& graph) {
  std::vector<InputSpec> specs;
  std::set<std::string_view> listed;
  for (Node* node : graph.nodes()) {
    if (node->op() == OpKind::placeholder) specs.push_back({InputKind::user_input, node, ""});
    if (node->op() == OpKind::get_attr && listed.insert(node->target()).second)
      specs.push_back({graph.signature().attribute_kind(node->target()), node, node->target()});
  }
  for (const auto& [target, kind] : graph.signature().attribute_kinds())
    if (!listed.count(target) && graph.parameter(target)) specs.push_back({kind, nullptr, target});
  return specs;
}

std::vector<ReturnedSpec> output_specs(const Graph& graph) {
  std::vector<ReturnedSpec> specs;
  Node* output = graph.output_node();
  if (!output) return specs;
  for (size_t i = 0; i < output->args().size(); ++i) specs.push_back({output->args()[i], graph.signature().output(i)});
  return specs;
}

bool signature_is_default(const Graph& graph) {
  for (const InputSpec& spec : input_specs(graph))
    if (spec.kind != (spec.target.empty() ? InputKind::user_input : InputKind::parameter)) return false;
  for (const ReturnedSpec& returned : output_specs(graph))
    if (!(returned.spec == OutputSpec{})) return false;
  return true;
}

std::string spec_name(const Argument& value) {
  if (!value.is_node()) return value.to_string();
  // A name that reads as a keyword keeps its '%', as on the return line.
  const std::string& name = value.node()->name();
  return name == "None" || name == "True" || name == "False" ? "%" + name : name;
}

std::string output_spec_problem(const Graph& graph, size_t index, const OutputSpec& spec) {
  std::string kind(output_kind_name(spec.kind));
  Node* output = graph.output_node();
  size_t count = output ? output->args().size() : 0;
  if (index >= count)
    return concat("output ", index, " is ", kind, ", but the graph returns ", count, count == 1 ? " value" : " values");
  if (spec.is_mutation() == spec.target.empty())
    return concat(describe_output(graph, index), ": ", kind, spec.target.empty() ? " needs a target" : " takes no target");
  if (!spec.is_mutation()) return "";
  const Argument& value = output->args()[index];
  if (!value.is_node() || !value.node()->has_single_value())
    return concat(describe_output(graph, index), ": a ", kind, " must return one tensor");
  TensorMeta destination;
  std::string problem = destination_type(graph, spec, destination);
  if (!problem.empty()) return concat(describe_output(graph, index), ": ", problem);
  const TensorMeta& written = value.node()->value();
  if (written.dtype != destination.dtype || written.shape != destination.shape)
    return concat(describe_output(graph, index), ": ", written.type_string(), " cannot be copied back into '",
                  spec.target, "' of type ", destination.type_string());
  return "";
}

std::string signature_problem(const Graph& graph) {
  const GraphSignature& signature = graph.signature();
  for (const auto& [target, kind] : signature.attribute_kinds())
    if (!graph.parameter(target))
      return concat("'", target, "' is a ", input_kind_name(kind), " but the graph has no parameter of that name");
  Node* output = graph.output_node();
  size_t count = output ? output->args().size() : 0;
  std::set<std::string> written;
  for (size_t i = 0; i < signature.outputs().size(); ++i) {
    const OutputSpec& spec = signature.outputs()[i];
    if (i >= count && spec == OutputSpec{}) continue;  // a default past the end says nothing
    std::string problem = output_spec_problem(graph, i, spec);
    if (!problem.empty()) return problem;
    if (spec.is_mutation() && !written.insert(destination_key(spec)).second)
      return concat(describe_output(graph, i), ": '", spec.target, "' is written back by two outputs");
  }
  return "";
}

std::string SignatureBuilder::add_input(std::string_view name, InputKind kind, const std::string& target) {
  std::string kind_name(input_kind_name(kind));
  if (outputs_ > 0) return concat("input spec '", name, "' after the output specs: list the inputs first");
  Node* node = graph_.find(name);
  if (!node || (node->op() != OpKind::placeholder && node->op() != OpKind::get_attr)) {
    // A buffer or constant that no get_attr reads: named by its target.
    bool unread_parameter = !target.empty() && graph_.parameter(target) && !read_by_get_attr(graph_, target);
    if (!unread_parameter || kind == InputKind::user_input)
      return concat("input spec '", name, "' names no placeholder or get_attr node",
                    target.empty() ? "" : concat(" (nor a parameter '", target, "' that no get_attr reads)"));
    if (!listed_targets_.insert(target).second) return concat("get_attr target '", target, "' is listed twice");
    graph_.signature().set_attribute_kind(target, kind);
    return "";
  }
  if (!listed_inputs_.insert(node).second) return concat("%", name, " is listed twice");
  if (node->op() == OpKind::placeholder) {
    if (kind != InputKind::user_input)
      return concat("%", name, " is a placeholder: its kind is USER_INPUT, not ", kind_name);
    if (!target.empty()) return concat("USER_INPUT %", name, " takes no target");
    return "";
  }
  if (kind == InputKind::user_input)
    return concat("%", name, " is a get_attr node: its kind is PARAMETER, BUFFER or CONSTANT_TENSOR");
  if (target.empty()) return concat(kind_name, " %", name, " needs target=", node->target());
  if (target != node->target()) return concat("%", name, " reads '", node->target(), "', not '", target, "'");
  if (!listed_targets_.insert(target).second) return concat("get_attr target '", target, "' is listed twice");
  graph_.signature().set_attribute_kind(target, kind);
  return "";
}

std::string SignatureBuilder::add_output(std::string_view name, OutputSpec spec) {
  Node* output = graph_.output_node();
  KILN_CHECK(output != nullptr, "output specs of a graph without an output node");
  size_t index = outputs_++;
  size_t count = output->args().size();
  if (index >= count)
    return concat("the signature lists more outputs than the graph returns (", count, count == 1 ? " value)" : " values)");
  const Argument& value = output->args()[index];
  bool same = value.is_node() ? value.node()->name() == name : spec_name(value) == name;
  if (!same) return concat("output ", index, " is ", spec_name(value), ", not ", name);
  std::string problem = output_spec_problem(graph_, index, spec);
  if (!problem.empty()) return problem;
  for (size_t i = 0; spec.is_mutation() && i < index; ++i) {
    OutputSpec earlier = graph_.signature().output(i);
    if (earlier.is_mutation() && destination_key(earlier) == destination_key(spec))
      return concat("'", spec.target, "' is written back by two outputs (", i, " and ", index, ")");
  }
  graph_.signature().set_output(index, std::move(spec));
  return "";
}

std::string SignatureBuilder::finish() const {
  Node* output = graph_.output_node();
  size_t count = output ? output->args().size() : 0;
  if (outputs_ == 0 || outputs_ == count) return "";
  return concat("the signature lists ", outputs_, outputs_ == 1 ? " output" : " outputs", " but the graph returns ",
                count, count == 1 ? " value" : " values");
}

}  // namespace kiln::ir
