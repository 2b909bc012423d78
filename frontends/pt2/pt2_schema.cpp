// Reading model.json into ExportProgram, field by field, with the JSON path of anything
// missing or mistyped in the message.
#include "frontends/pt2/pt2_schema.h"

#include "kiln/error.h"

namespace kiln::frontends {

using nlohmann::json;

namespace {

// Field access with errors that name the file and the JSON path.
class Reader {
 public:
  explicit Reader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void fail_at(const std::string& path, const std::string& what) const {
    fail(label_, ": ", path.empty() ? "the document" : path, " ", what);
  }
  const json& field(const json& object, const std::string& key, const std::string& path) const {
    if (!object.is_object()) fail_at(path, "is not an object");
    auto found = object.find(key);
    if (found == object.end()) fail_at(join(path, key), "is missing");
    return *found;
  }
  const json* optional_field(const json& object, const std::string& key) const {
    auto found = object.find(key);
    return found == object.end() || found->is_null() ? nullptr : &*found;
  }
  std::string string(const json& value, const std::string& path) const {
    if (!value.is_string()) fail_at(path, "is not a string");
    return value.get<std::string>();
  }
  int64_t integer(const json& value, const std::string& path) const {
    if (!value.is_number_integer()) fail_at(path, "is not an integer");
    return value.get<int64_t>();
  }
  const json& array(const json& value, const std::string& path) const {
    if (!value.is_array()) fail_at(path, "is not a list");
    return value;
  }
  const json& object(const json& value, const std::string& path) const {
    if (!value.is_object()) fail_at(path, "is not an object");
    return value;
  }
  // A union: an object with exactly one key (the kind).
  std::pair<std::string, const json*> union_value(const json& value, const std::string& path) const {
    if (!value.is_object() || value.size() != 1) fail_at(path, "is not a union (an object with one key)");
    return {value.begin().key(), &value.begin().value()};
  }
  static std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }
  static std::string index(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

  const std::string& label() const { return label_; }

 private:
  std::string label_;
};

ExportArgument argument(const Reader& reader, const json& value, const std::string& path) {
  auto [kind, payload] = reader.union_value(value, path);
  return {kind, *payload};
}

ExportNode node(const Reader& reader, const json& value, const std::string& path, size_t index) {
  ExportNode result;
  result.index = index;
  result.target = reader.string(reader.field(value, "target", path), Reader::join(path, "target"));
  const json& inputs = reader.array(reader.field(value, "inputs", path), Reader::join(path, "inputs"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string at = Reader::index(Reader::join(path, "inputs"), i);
    ExportNamedArgument named;
    named.name = reader.string(reader.field(inputs[i], "name", at), Reader::join(at, "name"));
    named.arg = argument(reader, reader.field(inputs[i], "arg", at), Reader::join(at, "arg"));
    result.inputs.push_back(std::move(named));
  }
  const json& outputs = reader.array(reader.field(value, "outputs", path), Reader::join(path, "outputs"));
  for (size_t i = 0; i < outputs.size(); ++i)
    result.outputs.push_back(argument(reader, outputs[i], Reader::index(Reader::join(path, "outputs"), i)));
  if (const json* metadata = reader.optional_field(value, "metadata")) {
    reader.object(*metadata, Reader::join(path, "metadata"));
    for (auto it = metadata->begin(); it != metadata->end(); ++it)
      if (it->is_string()) result.metadata[it.key()] = it->get<std::string>();
  }
  if (const json* name = reader.optional_field(value, "name")) result.name = reader.string(*name, Reader::join(path, "name"));
  return result;
}

ExportInputSpec input_spec(const Reader& reader, const json& value, const std::string& path) {
  auto [kind, payload] = reader.union_value(value, path);
  std::string at = Reader::join(path, kind);
  ExportInputSpec spec;
  auto tensor_name = [&](const json& arg, const std::string& arg_path) {
    return reader.string(reader.field(arg, "name", arg_path), Reader::join(arg_path, "name"));
  };
  if (kind == "user_input") {
    spec.kind = InputKind::user_input;
    spec.argument = argument(reader, reader.field(*payload, "arg", at), Reader::join(at, "arg"));
    if (spec.argument.kind == "as_tensor") spec.name = tensor_name(spec.argument.value, Reader::join(at, "arg.as_tensor"));
    else if (spec.argument.value.is_object() && spec.argument.value.contains("as_name"))
      spec.name = reader.string(spec.argument.value["as_name"], Reader::join(at, "arg.as_name"));
    else if (spec.argument.value.is_object() && spec.argument.value.contains("name"))
      spec.name = reader.string(spec.argument.value["name"], Reader::join(at, "arg.name"));
  } else if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
    spec.kind = kind == "parameter" ? InputKind::parameter : kind == "buffer" ? InputKind::buffer : InputKind::tensor_constant;
    spec.name = tensor_name(reader.field(*payload, "arg", at), Reader::join(at, "arg"));
    std::string key = kind == "parameter" ? "parameter_name" : kind == "buffer" ? "buffer_name" : "tensor_constant_name";
    spec.target = reader.string(reader.field(*payload, key, at), Reader::join(at, key));
    if (kind == "buffer")
      if (const json* persistent = reader.optional_field(*payload, "persistent")) spec.persistent = persistent->get<bool>();
  } else if (kind == "custom_obj") {
    spec.kind = InputKind::custom_obj;
    spec.name = tensor_name(reader.field(*payload, "arg", at), Reader::join(at, "arg"));
    spec.target = reader.string(reader.field(*payload, "custom_obj_name", at), Reader::join(at, "custom_obj_name"));
  } else if (kind == "token") {
    spec.kind = InputKind::token;
    spec.name = tensor_name(reader.field(*payload, "arg", at), Reader::join(at, "arg"));
  } else if (kind == "constant_input") {
    spec.kind = InputKind::constant_input;
    spec.name = reader.string(reader.field(*payload, "name", at), Reader::join(at, "name"));
    spec.argument = argument(reader, reader.field(*payload, "value", at), Reader::join(at, "value"));
  } else {
    reader.fail_at(path, "has an input kind '" + kind + "' that Kiln does not know");
  }
  return spec;
}

ExportOutputSpec output_spec(const Reader& reader, const json& value, const std::string& path) {
  auto [kind, payload] = reader.union_value(value, path);
  std::string at = Reader::join(path, kind);
  static const std::map<std::string, std::pair<OutputKind, const char*>> kinds = {
      {"user_output", {OutputKind::user_output, nullptr}},
      {"loss_output", {OutputKind::loss_output, nullptr}},
      {"buffer_mutation", {OutputKind::buffer_mutation, "buffer_name"}},
      {"gradient_to_parameter", {OutputKind::gradient_to_parameter, "parameter_name"}},
      {"gradient_to_user_input", {OutputKind::gradient_to_user_input, "user_input_name"}},
      {"user_input_mutation", {OutputKind::user_input_mutation, "user_input_name"}},
      {"token", {OutputKind::token, nullptr}},
      {"parameter_mutation", {OutputKind::parameter_mutation, "parameter_name"}},
  };
  auto found = kinds.find(kind);
  if (found == kinds.end()) reader.fail_at(path, "has an output kind '" + kind + "' that Kiln does not know");
  ExportOutputSpec spec;
  spec.kind = found->second.first;
  const json& arg = reader.field(*payload, "arg", at);
  if (kind == "user_output") {
    spec.argument = argument(reader, arg, Reader::join(at, "arg"));
  } else {
    spec.argument = {"as_tensor", arg};  // a TensorArgument (or TokenArgument) directly
  }
  if (const char* key = found->second.second) spec.target = reader.string(reader.field(*payload, key, at), Reader::join(at, key));
  return spec;
}

}  // namespace

std::string input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::user_input: return "user input";
    case InputKind::parameter: return "parameter";
    case InputKind::buffer: return "buffer";
    case InputKind::tensor_constant: return "tensor constant";
    case InputKind::custom_obj: return "custom object";
    case InputKind::token: return "effect token";
    case InputKind::constant_input: return "constant input";
  }
  return "input";
}

std::string output_kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::user_output: return "user output";
    case OutputKind::loss_output: return "loss output";
    case OutputKind::buffer_mutation: return "buffer mutation";
    case OutputKind::gradient_to_parameter: return "gradient to a parameter";
    case OutputKind::gradient_to_user_input: return "gradient to a user input";
    case OutputKind::user_input_mutation: return "user input mutation";
    case OutputKind::token: return "effect token";
    case OutputKind::parameter_mutation: return "parameter mutation";
  }
  return "output";
}

ExportSymInt parse_export_sym_int(const json& value, const std::string& path, const std::string& label) {
  Reader reader(label);
  auto [kind, payload] = reader.union_value(value, path);
  ExportSymInt result;
  if (kind == "as_int") {
    result.constant = reader.integer(*payload, Reader::join(path, kind));
  } else if (kind == "as_expr") {
    std::string at = Reader::join(path, kind);
    result.expression = reader.string(reader.field(*payload, "expr_str", at), Reader::join(at, "expr_str"));
    if (const json* hint = reader.optional_field(*payload, "hint")) {
      auto [hint_kind, hint_value] = reader.union_value(*hint, Reader::join(at, "hint"));
      if (hint_kind == "as_int" && hint_value->is_number_integer()) result.hint = hint_value->get<int64_t>();
    }
  } else {
    reader.fail_at(path, "is a SymInt of unknown kind '" + kind + "'");
  }
  return result;
}

ExportTensorMeta parse_export_tensor_meta(const json& value, const std::string& path, const std::string& label) {
  Reader reader(label);
  ExportTensorMeta meta;
  meta.dtype = reader.integer(reader.field(value, "dtype", path), Reader::join(path, "dtype"));
  for (const char* key : {"sizes", "strides"}) {
    const json& list = reader.array(reader.field(value, key, path), Reader::join(path, key));
    std::vector<ExportSymInt>& out = std::string(key) == "sizes" ? meta.sizes : meta.strides;
    for (size_t i = 0; i < list.size(); ++i) out.push_back(parse_export_sym_int(list[i], Reader::index(Reader::join(path, key), i), label));
  }
  if (meta.sizes.size() != meta.strides.size())
    reader.fail_at(path, "has " + std::to_string(meta.sizes.size()) + " sizes but " + std::to_string(meta.strides.size()) + " strides");
  if (const json* offset = reader.optional_field(value, "storage_offset"))
    meta.storage_offset = parse_export_sym_int(*offset, Reader::join(path, "storage_offset"), label);
  else
    meta.storage_offset.constant = 0;
  if (const json* device = reader.optional_field(value, "device"))
    if (const json* type = reader.optional_field(*device, "type")) meta.device = reader.string(*type, Reader::join(path, "device.type"));
  if (const json* layout = reader.optional_field(value, "layout")) meta.layout = reader.integer(*layout, Reader::join(path, "layout"));
  return meta;
}

ExportProgram parse_export_program(const std::string& text, const std::string& label) {
  json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) fail(label, " is not valid JSON");
  Reader reader(label);
  ExportProgram program;
  program.label = label;
  const json& version = reader.field(document, "schema_version", "");
  program.schema_major = reader.integer(reader.field(version, "major", "schema_version"), "schema_version.major");
  program.schema_minor = reader.integer(reader.field(version, "minor", "schema_version"), "schema_version.minor");
  if (program.schema_major != kKnownSchemaMajor)
    fail(label, " has export schema version ", program.schema_major, ".", program.schema_minor, "; Kiln reads version ",
         kKnownSchemaMajor, ".x (torch.export of PyTorch 2.6 to 2.15)");
  if (const json* torch_version = reader.optional_field(document, "torch_version"))
    program.torch_version = reader.string(*torch_version, "torch_version");

  const json& module = reader.field(document, "graph_module", "");
  const json& graph = reader.field(module, "graph", "graph_module");
  const std::string g = "graph_module.graph";
  for (const char* key : {"inputs", "outputs"}) {
    const json& list = reader.array(reader.field(graph, key, g), g + "." + key);
    for (size_t i = 0; i < list.size(); ++i)
      (std::string(key) == "inputs" ? program.inputs : program.outputs)
          .push_back(argument(reader, list[i], Reader::index(g + "." + key, i)));
  }
  const json& nodes = reader.array(reader.field(graph, "nodes", g), g + ".nodes");
  for (size_t i = 0; i < nodes.size(); ++i) program.nodes.push_back(node(reader, nodes[i], Reader::index(g + ".nodes", i), i));
  const json& tensors = reader.object(reader.field(graph, "tensor_values", g), g + ".tensor_values");
  for (auto it = tensors.begin(); it != tensors.end(); ++it)
    program.tensor_values[it.key()] = parse_export_tensor_meta(*it, g + ".tensor_values." + it.key(), label);
  if (const json* sym_ints = reader.optional_field(graph, "sym_int_values")) {
    reader.object(*sym_ints, g + ".sym_int_values");
    for (auto it = sym_ints->begin(); it != sym_ints->end(); ++it)
      program.sym_int_values[it.key()] = parse_export_sym_int(*it, g + ".sym_int_values." + it.key(), label);
  }

  const json& signature = reader.field(module, "signature", "graph_module");
  const std::string s = "graph_module.signature";
  const json& input_specs = reader.array(reader.field(signature, "input_specs", s), s + ".input_specs");
  for (size_t i = 0; i < input_specs.size(); ++i)
    program.input_specs.push_back(input_spec(reader, input_specs[i], Reader::index(s + ".input_specs", i)));
  const json& output_specs = reader.array(reader.field(signature, "output_specs", s), s + ".output_specs");
  for (size_t i = 0; i < output_specs.size(); ++i)
    program.output_specs.push_back(output_spec(reader, output_specs[i], Reader::index(s + ".output_specs", i)));

  if (const json* ranges = reader.optional_field(document, "range_constraints")) {
    reader.object(*ranges, "range_constraints");
    for (auto it = ranges->begin(); it != ranges->end(); ++it) {
      ExportRange range;
      const json* min = reader.optional_field(*it, "min_val");
      const json* max = reader.optional_field(*it, "max_val");
      if (min && min->is_number_integer()) range.min = min->get<int64_t>();
      if (max && max->is_number_integer()) range.max = max->get<int64_t>();
      program.range_constraints[it.key()] = range;
    }
  }
  return program;
}

}  // namespace kiln::frontends
