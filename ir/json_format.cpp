// Graph <-> JSON: encoding of arguments, metas and source info, and the validating reader.
#include "ir/json_format.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ir/op_registry.h"
#include "ir/printer.h"
#include "ir/signature_specs.h"
#include "kiln/error.h"
#include "runtime/json_brief.h"
#include "runtime/message_text.h"

namespace kiln::ir {

namespace {

using nlohmann::json;

// ---- writing ----

json dim_to_json(const SymInt& dim) {
  if (std::optional<int64_t> constant = dim.maybe_constant()) return *constant;
  return dim.to_string();
}

json dims_to_json(const SymShape& dims) {
  json array = json::array();
  for (const SymInt& dim : dims) array.push_back(dim_to_json(dim));
  return array;
}

json argument_to_json(const Argument& argument) {
  switch (argument.kind()) {
    case Argument::Kind::none: return nullptr;
    case Argument::Kind::node: return {{"node", argument.node()->name()}};
    case Argument::Kind::integer: return argument.integer();
    case Argument::Kind::floating: {
      double value = argument.floating();
      if (std::isfinite(value)) return value;
      return {{"float", float_repr(value)}};
    }
    case Argument::Kind::boolean: return argument.boolean();
    case Argument::Kind::string: return argument.string();
    case Argument::Kind::symint: return {{"symint", argument.symint().to_string()}};
    case Argument::Kind::dtype: return {{"dtype", std::string(dtype_name(argument.dtype()))}};
    case Argument::Kind::device: return {{"device", argument.device().to_string()}};
    case Argument::Kind::list: {
      json array = json::array();
      for (const Argument& item : argument.list()) array.push_back(argument_to_json(item));
      return array;
    }
  }
  KILN_CHECK(false, "bad argument kind");
}

json meta_to_json(const NodeMeta& meta) {
  json values = json::array();
  for (const TensorMeta& value : meta.values)
    values.push_back({{"dtype", std::string(dtype_name(value.dtype))},
                      {"shape", dims_to_json(value.shape)},
                      {"strides", dims_to_json(value.strides)},
                      {"device", value.device.to_string()}});
  return {{"tuple", meta.is_tuple}, {"values", values}};
}

json node_to_json(const Node& node) {
  json args = json::array();
  for (const Argument& argument : node.args()) args.push_back(argument_to_json(argument));
  json kwargs = json::array();
  for (const auto& [key, value] : node.kwargs()) kwargs.push_back(json::array({key, argument_to_json(value)}));
  const SourceInfo& source = node.source;
  return {{"name", node.name()},
          {"op", std::string(op_kind_name(node.op()))},
          {"target", node.target()},
          {"args", args},
          {"kwargs", kwargs},
          {"meta", meta_to_json(node.meta)},
          {"source",
           {{"file", source.file},
            {"line", source.line},
            {"module_path", source.module_path},
            {"onnx_node", source.onnx_node},
            {"onnx_op", source.onnx_op}}}};
}

// The signature as the text form lists it (ir/signature_specs.h), every spec written.
json signature_to_json(const Graph& graph) {
  json inputs = json::array();
  for (const InputSpec& spec : input_specs(graph)) {
    std::string name = spec.node ? spec.node->name() : spec.name();
    json item = {{"name", name}, {"kind", std::string(input_kind_name(spec.kind))}};
    if (!spec.target.empty()) item["target"] = spec.target;
    inputs.push_back(std::move(item));
  }
  json outputs = json::array();
  for (const ReturnedSpec& returned : output_specs(graph)) {
    std::string name = returned.value.is_node() ? returned.value.node()->name() : spec_name(returned.value);
    json item = {{"name", name}, {"kind", std::string(output_kind_name(returned.spec.kind))}};
    if (!returned.spec.target.empty()) item["target"] = returned.spec.target;
    outputs.push_back(std::move(item));
  }
  json result = {{"inputs", inputs}, {"outputs", outputs}};
  if (!graph.signature().symbol_ranges().empty()) {
    json ranges = json::object();
    for (const auto& [symbol, range] : graph.signature().symbol_ranges())
      ranges[symbol] = {{"min", range.min}, {"max", range.max ? json(*range.max) : json(nullptr)}};
    result["symbol_ranges"] = std::move(ranges);
  }
  return result;
}

// ---- reading ----

class Reader {
 public:
  static constexpr long kMaxListDepth = 64;  // bounds the recursion on hostile input

  explicit Reader(const ParseOptions& options) : options_(options) {}

  Graph read(const json& document) {
    for (const auto& [name, tensor] : options_.parameters) graph_.set_parameter(name, tensor);
    if (!document.is_object()) error("", "expected a JSON object, found ", kind_of(document));
    const json& format = field(document, "format", "");
    if (format != "kiln-graph") error("format", "expected \"kiln-graph\", found ", json_brief(format));
    const json& version = field(document, "version", "");
    if (!version.is_number_integer() || version.get<int64_t>() < 1 || version.get<int64_t>() > kJsonFormatVersion)
      error("version", "unsupported version ", json_brief(version), " (Kiln reads versions 1 to ", kJsonFormatVersion,
            ")");
    const json& nodes = field(document, "nodes", "");
    if (!nodes.is_array()) error("nodes", "expected an array, found ", kind_of(nodes));
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (graph_.output_node()) error(index_path("nodes", i), "a node after the output node");
      read_node(nodes[i], index_path("nodes", i));
    }
    if (!graph_.output_node()) error("nodes", "no output node");
    if (version.get<int64_t>() >= 2) read_signature(field(document, "signature", ""), "signature");
    else read_version_1_copy_backs();
    return std::move(graph_);
  }

 private:
  template <typename... Parts>
  [[noreturn]] void error(const std::string& path, const Parts&... parts) const {
    if (path.empty()) fail(options_.file_name, ": ", parts...);
    fail(options_.file_name, ": ", path, ": ", parts...);
  }

  static std::string index_path(const std::string& path, size_t index) {
    return path + "[" + std::to_string(index) + "]";
  }
  static std::string member_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }
  static std::string bad_name_message(std::string_view what, const std::string& name) {
    return std::string(what) + " " + json_brief(json(name)) + " is not a name: names are 1 to " +
           std::to_string(kMaxTextNameLength) + " letters, digits and '_'";
  }

  static std::string kind_of(const json& value) { return std::string(value.type_name()) + " " + json_brief(value); }

  const json& field(const json& object, const std::string& key, const std::string& path) const {
    auto found = object.find(key);
    if (found == object.end()) error(path, "missing field \"", key, "\"");
    return *found;
  }

  std::string string_field(const json& object, const std::string& key, const std::string& path) const {
    const json& value = field(object, key, path);
    if (!value.is_string()) error(member_path(path, key), "expected a string, found ", kind_of(value));
    return value.get<std::string>();
  }

  int64_t integer(const json& value, const std::string& path) const {
    if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))
      error(path, "integer ", json_brief(value), " is out of range");
    if (!value.is_number_integer()) error(path, "expected an integer, found ", kind_of(value));
    return value.get<int64_t>();
  }

  SymInt dim(const json& value, const std::string& path) const {
    if (value.is_number_integer()) return SymInt(integer(value, path));
    if (!value.is_string())
      error(path, "expected an integer or a symbolic expression string, found ", kind_of(value));
    try {
      return parse_sym_int(value.get<std::string>());
    } catch (const SymbolicError& failure) {
      error(path, failure.what());
    }
  }

  SymShape dims(const json& value, const std::string& path) const {
    if (!value.is_array()) error(path, "expected an array of dimensions, found ", kind_of(value));
    SymShape result;
    for (size_t i = 0; i < value.size(); ++i) result.push_back(dim(value[i], index_path(path, i)));
    return result;
  }

  Argument argument(const json& value, const std::string& path) const {
    switch (value.type()) {
      case json::value_t::null: return Argument();
      case json::value_t::boolean: return Argument(value.get<bool>());
      case json::value_t::number_integer:
      case json::value_t::number_unsigned: return Argument(integer(value, path));
      case json::value_t::number_float: return Argument(value.get<double>());
      case json::value_t::string: return Argument(value.get<std::string>());
      case json::value_t::array: {
        if (std::count(path.begin(), path.end(), '[') > kMaxListDepth)
          error(path, "lists nested deeper than ", kMaxListDepth, " levels");
        std::vector<Argument> items;
        for (size_t i = 0; i < value.size(); ++i) items.push_back(argument(value[i], index_path(path, i)));
        return Argument(std::move(items));
      }
      case json::value_t::object: return tagged_argument(value, path);
      default: error(path, "expected an argument, found ", kind_of(value));
    }
  }

  Argument tagged_argument(const json& value, const std::string& path) const {
    if (value.size() == 1 && value.begin().value().is_string()) {
      const std::string& tag = value.begin().key();
      std::string text = value.begin().value().get<std::string>();
      std::string tag_path = member_path(path, tag);
      if (tag == "node") {
        Node* node = graph_.find(text);
        if (!node) error(tag_path, "%", text, " used before it is defined");
        return Argument(node);
      }
      if (tag == "symint") return Argument(dim(value.begin().value(), tag_path));
      if (tag == "dtype") {
        std::optional<DType> dtype = parse_dtype(text);
        if (!dtype) error(tag_path, "unknown dtype \"", text, "\"");
        return Argument(*dtype);
      }
      if (tag == "device") {
        try {
          return Argument(parse_device(text));
        } catch (const Error& failure) {
          error(tag_path, failure.what());
        }
      }
      if (tag == "float") {
        if (text == "inf") return Argument(HUGE_VAL);
        if (text == "-inf") return Argument(-HUGE_VAL);
        if (text == "nan") return Argument(std::nan(""));
        error(tag_path, "expected \"inf\", \"-inf\" or \"nan\", found \"", text, "\"");
      }
    }
    error(path, "expected an argument: null, a bool, a number, a string, an array, or one of ",
          "{\"node\"|\"symint\"|\"dtype\"|\"device\"|\"float\": string}; found ", kind_of(value));
  }

  NodeMeta meta(const json& value, const std::string& path) const {
    if (!value.is_object()) error(path, "expected an object, found ", kind_of(value));
    NodeMeta result;
    const json& tuple = field(value, "tuple", path);
    if (!tuple.is_boolean()) error(member_path(path, "tuple"), "expected true or false, found ", kind_of(tuple));
    result.is_tuple = tuple.get<bool>();
    const json& values = field(value, "values", path);
    std::string values_path = member_path(path, "values");
    if (!values.is_array()) error(values_path, "expected an array, found ", kind_of(values));
    for (size_t i = 0; i < values.size(); ++i) {
      std::string item_path = index_path(values_path, i);
      const json& item = values[i];
      if (!item.is_object()) error(item_path, "expected an object, found ", kind_of(item));
      TensorMeta tensor;
      std::string dtype_text = string_field(item, "dtype", item_path);
      std::optional<DType> dtype = parse_dtype(dtype_text);
      if (!dtype) error(member_path(item_path, "dtype"), "unknown dtype \"", dtype_text, "\"");
      tensor.dtype = *dtype;
      tensor.shape = dims(field(item, "shape", item_path), member_path(item_path, "shape"));
      tensor.strides = dims(field(item, "strides", item_path), member_path(item_path, "strides"));
      if (tensor.strides.size() != tensor.shape.size())
        error(member_path(item_path, "strides"), tensor.strides.size(), " strides for ", tensor.shape.size(),
              " dimensions");
      try {
        tensor.device = parse_device(string_field(item, "device", item_path));
      } catch (const Error& failure) {
        error(member_path(item_path, "device"), failure.what());
      }
      result.values.push_back(std::move(tensor));
    }
    if (!result.is_tuple && result.values.size() > 1)
      error(values_path, result.values.size(), " values in a meta that is not a tuple");
    return result;
  }

  SourceInfo source(const json& value, const std::string& path) const {
    if (!value.is_object()) error(path, "expected an object, found ", kind_of(value));
    SourceInfo result;
    auto text = [&](const char* key) {
      return value.contains(key) ? string_field(value, key, path) : std::string();
    };
    result.file = text("file");
    result.module_path = text("module_path");
    result.onnx_node = text("onnx_node");
    result.onnx_op = text("onnx_op");
    if (value.contains("line")) result.line = int(integer(value["line"], member_path(path, "line")));
    return result;
  }

  void check_type(const Node& node, const NodeMeta& written, const std::string& path, const std::string& origin) {
    std::string written_text = format_node_type(written);
    std::string actual_text = format_node_type(node.meta);
    if (written_text != actual_text)
      error(path, "type of %", node.name(), " is written ", written_text, " but ", origin, " ", actual_text);
  }

  void read_node(const json& value, const std::string& path) {
    if (!value.is_object()) error(path, "expected a node object, found ", kind_of(value));
    std::string name = string_field(value, "name", path);
    std::string op = string_field(value, "op", path);
    std::string target = string_field(value, "target", path);
    const json& args_json = field(value, "args", path);
    const json& kwargs_json = field(value, "kwargs", path);
    NodeMeta written = meta(field(value, "meta", path), member_path(path, "meta"));

    std::string args_path = member_path(path, "args");
    if (!args_json.is_array()) error(args_path, "expected an array, found ", kind_of(args_json));
    std::vector<Argument> args;
    for (size_t i = 0; i < args_json.size(); ++i) args.push_back(argument(args_json[i], index_path(args_path, i)));
    std::string kwargs_path = member_path(path, "kwargs");
    if (!kwargs_json.is_array())
      error(kwargs_path, "expected an array of [name, value] pairs, found ", kind_of(kwargs_json));
    Kwargs kwargs;
    for (size_t i = 0; i < kwargs_json.size(); ++i) {
      const json& pair = kwargs_json[i];
      std::string pair_path = index_path(kwargs_path, i);
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string())
        error(pair_path, "expected a [name, value] pair, found ", kind_of(pair));
      std::string key = pair[0].get<std::string>();
      if (!is_text_name(key)) error(index_path(pair_path, 0), bad_name_message("keyword", key));
      kwargs.emplace_back(std::move(key), argument(pair[1], index_path(pair_path, 1)));
    }

    if (op != "output" && !is_text_name(name)) error(member_path(path, "name"), bad_name_message("node name", name));
    if (op != "output" && graph_.find(name)) error(member_path(path, "name"), "duplicate name %", name);
    Node* node = nullptr;
    if (op == "placeholder") {
      if (written.is_tuple || written.values.size() != 1)
        error(member_path(path, "meta"), "a placeholder needs exactly one tensor value");
      node = graph_.create_node(OpKind::placeholder, target, std::move(args), std::move(kwargs), name, written);
    } else if (op == "get_attr") {
      if (!graph_.parameter(target)) error(member_path(path, "target"), options_.missing_parameter_message(target));
      node = graph_.create_get_attr(target, name);
      check_type(*node, written, member_path(path, "meta"), "the parameter '" + target + "' is");
      node->meta = written;
    } else if (op == "call_function") {
      if (!OpRegistry::global().find(target)) {
        try {
          OpRegistry::global().get(target);
        } catch (const Error& failure) {
          error(member_path(path, "target"), failure.what());
        }
      }
      try {
        node = graph_.create_call(target, std::move(args), std::move(kwargs), name);
      } catch (const Error& failure) {
        error(path, failure.what());
      }
      check_type(*node, written, member_path(path, "meta"), "infers");
      node->meta = written;
    } else if (op == "output") {
      try {
        node = graph_.create_output(std::move(args));
      } catch (const Error& failure) {
        error(member_path(path, "args"), failure.what());
      }
    } else {
      error(member_path(path, "op"), "expected placeholder, get_attr, call_function or output, found \"", op, "\"");
    }
    if (value.contains("source")) node->source = source(value["source"], member_path(path, "source"));
  }

  // One written spec: its name, kind and target (empty when absent).
  struct WrittenSpec {
    std::string name, kind, target;
  };

  WrittenSpec spec(const json& value, const std::string& path) const {
    if (!value.is_object()) error(path, "expected a spec object {\"name\", \"kind\"[, \"target\"]}, found ", kind_of(value));
    WrittenSpec written{string_field(value, "name", path), string_field(value, "kind", path), ""};
    if (value.contains("target")) written.target = string_field(value, "target", path);
    return written;
  }

  const json& spec_array(const json& signature, const std::string& key, const std::string& path) const {
    const json& array = field(signature, key, path);
    if (!array.is_array()) error(member_path(path, key), "expected an array, found ", kind_of(array));
    return array;
  }

  void read_ranges(const json& value, const std::string& path) {
    if (!value.is_object()) error(path, "expected an object {\"SYMBOL\": {\"min\": N, \"max\": N or null}}, found ", kind_of(value));
    for (auto it = value.begin(); it != value.end(); ++it) {
      std::string item = member_path(path, it.key());
      const json& min = field(*it, "min", item);
      const json& max = field(*it, "max", item);
      if (!min.is_number_integer()) error(member_path(item, "min"), "expected an integer, found ", kind_of(min));
      if (!max.is_null() && !max.is_number_integer()) error(member_path(item, "max"), "expected an integer or null, found ", kind_of(max));
      SymbolRange range{min.get<int64_t>(), max.is_null() ? std::nullopt : std::optional<int64_t>(max.get<int64_t>())};
      if (range.max && *range.max < range.min) error(item, "the range is empty: ", range.to_string());
      graph_.signature().set_symbol_range(it.key(), range);
    }
  }

  void read_signature(const json& value, const std::string& path) {
    if (!value.is_object()) error(path, "expected an object {\"inputs\": [...], \"outputs\": [...]}, found ", kind_of(value));
    SignatureBuilder builder(graph_);
    const json& inputs = spec_array(value, "inputs", path);
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string item_path = index_path(member_path(path, "inputs"), i);
      WrittenSpec written = spec(inputs[i], item_path);
      std::optional<InputKind> kind = parse_input_kind(written.kind);
      if (!kind)
        error(member_path(item_path, "kind"), "unknown input kind \"", written.kind,
              "\" (USER_INPUT, PARAMETER, BUFFER, CONSTANT_TENSOR)");
      std::string problem = builder.add_input(written.name, *kind, written.target);
      if (!problem.empty()) error(item_path, problem);
    }
    if (value.contains("symbol_ranges")) read_ranges(value["symbol_ranges"], member_path(path, "symbol_ranges"));
    const json& outputs = spec_array(value, "outputs", path);
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string item_path = index_path(member_path(path, "outputs"), i);
      WrittenSpec written = spec(outputs[i], item_path);
      std::optional<OutputKind> kind = parse_output_kind(written.kind);
      if (!kind)
        error(member_path(item_path, "kind"), "unknown output kind \"", written.kind,
              "\" (USER_OUTPUT, LOSS_OUTPUT, USER_INPUT_MUTATION, PARAMETER_MUTATION, BUFFER_MUTATION)");
      std::string problem = builder.add_output(written.name, OutputSpec{*kind, written.target});
      if (!problem.empty()) error(item_path, problem);
    }
    std::string problem = builder.finish();
    if (!problem.empty()) error(member_path(path, "outputs"), problem);
  }

  // Version 1 had no signature: its inputs are user inputs and parameters, and its copy-backs
  // were named, not marked: the trailing outputs named "<input>_mutated" after a placeholder
  // or get_attr node, each input once (scanning from the last output), were copied back.
  // They become the mutation outputs they meant.
  void read_version_1_copy_backs() {
    std::map<std::string, Node*> by_copy_back_name;
    for (Node* node : graph_.nodes())
      if (node->op() == OpKind::placeholder || node->op() == OpKind::get_attr)
        by_copy_back_name.emplace(node->name() + "_mutated", node);
    const std::vector<Argument>& outputs = graph_.output_node()->args();
    std::set<const Node*> seen;
    for (size_t i = outputs.size(); i-- > 0;) {
      auto found = outputs[i].is_node() ? by_copy_back_name.find(outputs[i].node()->name()) : by_copy_back_name.end();
      if (found == by_copy_back_name.end() || !seen.insert(found->second).second) break;
      Node* input = found->second;
      OutputKind kind = input->op() == OpKind::placeholder ? OutputKind::user_input_mutation : OutputKind::parameter_mutation;
      graph_.signature().set_output(i, OutputSpec{kind, input->target()});
    }
  }

  const ParseOptions& options_;
  Graph graph_;
};

}  // namespace

nlohmann::json graph_to_json(const Graph& graph) {
  json nodes = json::array();
  for (Node* node : graph.nodes()) nodes.push_back(node_to_json(*node));
  return {{"format", "kiln-graph"}, {"version", kJsonFormatVersion}, {"nodes", nodes}, {"signature", signature_to_json(graph)}};
}

Graph graph_from_json(const nlohmann::json& json, const ParseOptions& options) { return Reader(options).read(json); }

Graph parse_graph_json(std::string_view text, const ParseOptions& options) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    fail(options.file_name, ": bad JSON: ", excerpt(error.what(), 200));
  }
  return graph_from_json(document, options);
}

Graph graph_from_json(const nlohmann::json& json, const std::string& file_name) {
  ParseOptions options;
  options.file_name = file_name;
  return graph_from_json(json, options);
}

Graph graph_from_json(const nlohmann::json& json, const std::string& file_name,
                      const std::map<std::string, Tensor, std::less<>>& parameters) {
  ParseOptions options;
  options.file_name = file_name;
  options.parameters = parameters;
  return graph_from_json(json, options);
}

}  // namespace kiln::ir
