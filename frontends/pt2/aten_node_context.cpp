// Reading an exported node's named arguments, emitting Kiln nodes with the node's source
// info, and recording its outputs.
#include "frontends/pt2/aten_node_context.h"

#include <cmath>
#include <cstdlib>

#include "frontends/pt2/pt2_dtypes.h"
#include "ir/op_registry.h"

namespace kiln::frontends {

using nlohmann::json;

Pt2Value Pt2Value::of_node(ir::Node* node) {
  Pt2Value value;
  value.kind = Kind::tensor;
  value.node = node;
  return value;
}

Pt2Value Pt2Value::of_sym_int(ir::SymInt sym) {
  Pt2Value value;
  value.kind = Kind::sym_int;
  value.sym_int = std::move(sym);
  return value;
}

std::string short_target(const std::string& target) {
  const std::string prefix = "torch.ops.";
  return target.compare(0, prefix.size(), prefix) == 0 ? target.substr(prefix.size()) : target;
}

namespace {

// "File \"/a/b.py\", line 10, in forward\n    code\n  File ..." -> (file, line) per frame.
std::vector<std::pair<std::string, int>> stack_frames(const std::string& trace) {
  std::vector<std::pair<std::string, int>> frames;
  size_t at = 0;
  while ((at = trace.find("File \"", at)) != std::string::npos) {
    size_t start = at + 6;
    size_t end = trace.find('"', start);
    if (end == std::string::npos) break;
    std::string file = trace.substr(start, end - start);
    int line = 0;
    size_t line_at = trace.find(", line ", end);
    if (line_at != std::string::npos && line_at == end + 1) line = std::atoi(trace.c_str() + line_at + 7);
    frames.emplace_back(file, line);
    at = end;
  }
  return frames;
}

bool inside_torch(const std::string& file) {
  return file.find("/torch/") != std::string::npos || file.rfind("torch/", 0) == 0;
}

// The module path of the innermost entry of "key,path,type;key,path,type" (paths may hold
// commas inside brackets, as torch's own reader allows).
std::string innermost_module(const std::string& stack) {
  std::string last;
  size_t start = 0;
  while (start <= stack.size()) {
    size_t end = stack.find(';', start);
    std::string item = stack.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::vector<std::string> parts(1);
    int depth = 0;
    for (char c : item) {
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') --depth;
      if (c == ',' && depth == 0) parts.emplace_back();
      else parts.back() += c;
    }
    if (parts.size() == 3) last = parts[1];
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return last;
}

}  // namespace

ir::SourceInfo source_info_of(const ExportNode& node, const std::string& fallback_file) {
  ir::SourceInfo source;
  auto trace = node.metadata.find("stack_trace");
  if (trace != node.metadata.end()) {
    std::vector<std::pair<std::string, int>> frames = stack_frames(trace->second);
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      if (inside_torch(it->first)) continue;
      source.file = it->first;
      source.line = it->second;
      break;
    }
  }
  if (source.file.empty()) source.file = fallback_file;
  auto modules = node.metadata.find("nn_module_stack");
  if (modules != node.metadata.end()) source.module_path = innermost_module(modules->second);
  return source;
}

AtenNodeContext::AtenNodeContext(Pt2ImportState& state, const ExportNode& node)
    : state_(state), node_(node), target_(short_target(node.target)), source_(source_info_of(node, state.source_file)) {}

std::string AtenNodeContext::where() const {
  std::string name = node_.name;
  if (name.empty() && !node_.outputs.empty()) name = output_name(0);
  return state_.file_label + ": node " + (name.empty() ? "#" + std::to_string(node_.index) : "'" + name + "'") + " (" +
         target_ + ")";
}

// ---- arguments

const ExportArgument* AtenNodeContext::find(std::string_view name) const {
  for (const ExportNamedArgument& input : node_.inputs)
    if (input.name == name) return &input.arg;
  return nullptr;
}

bool AtenNodeContext::given(std::string_view name) const {
  const ExportArgument* arg = find(name);
  if (!arg || arg->kind == "as_none") return false;
  if (arg->kind == "as_optional_tensor") return !arg->value.contains("as_none");
  return true;
}

const ExportArgument& AtenNodeContext::required(std::string_view name) const {
  const ExportArgument* arg = find(name);
  if (!arg) fail("argument '", name, "' is missing");
  return *arg;
}

void AtenNodeContext::wrong_kind(std::string_view name, const ExportArgument& arg, const char* expected) const {
  fail("argument '", name, "' is ", arg.kind, " where ", expected, " is expected");
}

const Pt2Value& AtenNodeContext::value_named(const std::string& name, std::string_view argument) const {
  auto found = state_.values.find(name);
  if (found == state_.values.end())
    fail("argument '", argument, "' reads '", name, "', which no earlier node or graph input defines");
  return found->second;
}

ir::Node* AtenNodeContext::tensor(std::string_view name) {
  const ExportArgument& arg = required(name);
  const json* tensor = nullptr;
  if (arg.kind == "as_tensor") tensor = &arg.value;
  else if (arg.kind == "as_optional_tensor" && arg.value.contains("as_tensor")) tensor = &arg.value["as_tensor"];
  if (!tensor) {
    if (arg.kind == "as_sym_int" || arg.kind == "as_int" || arg.kind == "as_float" || arg.kind == "as_bool")
      fail("argument '", name, "' is a Python number where a tensor is expected");
    wrong_kind(name, arg, "a tensor");
  }
  const Pt2Value& value = value_named(tensor->value("name", ""), name);
  if (value.kind != Pt2Value::Kind::tensor) fail("argument '", name, "' reads '", tensor->value("name", ""), "', which is not a tensor");
  return value.node;
}

ir::Node* AtenNodeContext::optional_tensor(std::string_view name) {
  return given(name) ? tensor(name) : nullptr;
}

std::vector<ir::Node*> AtenNodeContext::tensors(std::string_view name) {
  const ExportArgument& arg = required(name);
  if (arg.kind != "as_tensors") wrong_kind(name, arg, "a list of tensors");
  std::vector<ir::Node*> nodes;
  for (const json& item : arg.value) {
    std::string value_name = item.value("name", "");
    const Pt2Value& value = value_named(value_name, name);
    if (value.kind != Pt2Value::Kind::tensor) fail("argument '", name, "' reads '", value_name, "', which is not a tensor");
    nodes.push_back(value.node);
  }
  return nodes;
}

std::vector<ir::Node*> AtenNodeContext::optional_tensors(std::string_view name) {
  const ExportArgument& arg = required(name);
  if (arg.kind == "as_tensors") return tensors(name);
  if (arg.kind != "as_optional_tensors") wrong_kind(name, arg, "a list of optional tensors");
  std::vector<ir::Node*> nodes;
  for (const json& item : arg.value) {
    if (!item.contains("as_tensor")) {
      nodes.push_back(nullptr);
      continue;
    }
    std::string value_name = item["as_tensor"].value("name", "");
    const Pt2Value& value = value_named(value_name, name);
    if (value.kind != Pt2Value::Kind::tensor) fail("argument '", name, "' reads '", value_name, "', which is not a tensor");
    nodes.push_back(value.node);
  }
  return nodes;
}

ir::SymInt AtenNodeContext::sym_int_of(const json& value, std::string_view name) const {
  // A SymIntArgument: {"as_int": 3} or {"as_name": "sym_size_int_1"}.
  if (value.contains("as_int") && value["as_int"].is_number_integer()) return value["as_int"].get<int64_t>();
  if (value.contains("as_name")) {
    std::string value_name = value["as_name"].get<std::string>();
    const Pt2Value& found = value_named(value_name, name);
    if (found.kind != Pt2Value::Kind::sym_int) fail("argument '", name, "' reads '", value_name, "', which is not an int");
    return found.sym_int;
  }
  fail("argument '", name, "' holds a malformed symbolic int");
}

std::optional<int64_t> AtenNodeContext::optional_int(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  const ExportArgument& arg = required(name);
  if (arg.kind == "as_int") return arg.value.get<int64_t>();
  if (arg.kind == "as_sym_int") {
    ir::SymInt value = sym_int_of(arg.value, name);
    if (!value.is_constant()) fail("argument '", name, "' is the symbolic value ", value.to_string(), "; Kiln needs a constant here");
    return value.constant();
  }
  if (arg.kind == "as_bool") return int64_t(arg.value.get<bool>());
  wrong_kind(name, arg, "an int");
}

int64_t AtenNodeContext::int_arg(std::string_view name, std::optional<int64_t> fallback) const {
  std::optional<int64_t> value = optional_int(name);
  if (value) return *value;
  if (fallback) return *fallback;
  fail("argument '", name, "' is missing");
}

std::optional<std::vector<int64_t>> AtenNodeContext::optional_ints(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  const ExportArgument& arg = required(name);
  std::vector<int64_t> values;
  if (arg.kind == "as_int") return std::vector<int64_t>{arg.value.get<int64_t>()};
  if (arg.kind == "as_ints") {
    for (const json& item : arg.value) values.push_back(item.get<int64_t>());
    return values;
  }
  if (arg.kind == "as_sym_ints") {
    for (const json& item : arg.value) {
      ir::SymInt value = sym_int_of(item, name);
      if (!value.is_constant()) fail("argument '", name, "' holds the symbolic value ", value.to_string(), "; Kiln needs constants here");
      values.push_back(value.constant());
    }
    return values;
  }
  wrong_kind(name, arg, "a list of ints");
}

std::vector<int64_t> AtenNodeContext::ints(std::string_view name, std::optional<std::vector<int64_t>> fallback) const {
  std::optional<std::vector<int64_t>> values = optional_ints(name);
  if (values) return *values;
  if (fallback) return *fallback;
  fail("argument '", name, "' is missing");
}

std::optional<ir::SymInt> AtenNodeContext::optional_sym_int(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  const ExportArgument& arg = required(name);
  if (arg.kind == "as_int") return ir::SymInt(arg.value.get<int64_t>());
  if (arg.kind == "as_sym_int") return sym_int_of(arg.value, name);
  wrong_kind(name, arg, "an int");
}

ir::SymInt AtenNodeContext::sym_int(std::string_view name, std::optional<ir::SymInt> fallback) const {
  std::optional<ir::SymInt> value = optional_sym_int(name);
  if (value) return *value;
  if (fallback) return *fallback;
  fail("argument '", name, "' is missing");
}

std::vector<ir::SymInt> AtenNodeContext::sym_ints(std::string_view name, std::optional<std::vector<ir::SymInt>> fallback) const {
  if (!given(name)) {
    if (fallback) return *fallback;
    fail("argument '", name, "' is missing");
  }
  const ExportArgument& arg = required(name);
  std::vector<ir::SymInt> values;
  if (arg.kind == "as_ints") {
    for (const json& item : arg.value) values.emplace_back(item.get<int64_t>());
  } else if (arg.kind == "as_sym_ints") {
    for (const json& item : arg.value) values.push_back(sym_int_of(item, name));
  } else if (arg.kind == "as_int" || arg.kind == "as_sym_int") {
    values.push_back(sym_int(name));
  } else {
    wrong_kind(name, arg, "a list of ints");
  }
  return values;
}

std::optional<double> AtenNodeContext::optional_float(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  const ExportArgument& arg = required(name);
  if (arg.kind == "as_float") {
    if (arg.value.is_string()) {  // "inf", "-inf", "nan" are written as strings
      std::string text = arg.value.get<std::string>();
      if (text == "inf" || text == "Infinity") return INFINITY;
      if (text == "-inf" || text == "-Infinity") return -INFINITY;
      if (text == "nan" || text == "NaN") return NAN;
      wrong_kind(name, arg, "a float");
    }
    return arg.value.get<double>();
  }
  if (arg.kind == "as_int") return double(arg.value.get<int64_t>());
  if (arg.kind == "as_bool") return double(arg.value.get<bool>());
  if (arg.kind == "as_sym_int") {
    ir::SymInt value = sym_int_of(arg.value, name);
    if (!value.is_constant()) fail("argument '", name, "' is the symbolic value ", value.to_string(), "; Kiln needs a constant here");
    return double(value.constant());
  }
  if (arg.kind == "as_sym_float" && arg.value.contains("as_float")) return arg.value["as_float"].get<double>();
  wrong_kind(name, arg, "a float");
}

double AtenNodeContext::float_arg(std::string_view name, std::optional<double> fallback) const {
  std::optional<double> value = optional_float(name);
  if (value) return *value;
  if (fallback) return *fallback;
  fail("argument '", name, "' is missing");
}

bool AtenNodeContext::bool_arg(std::string_view name, std::optional<bool> fallback) const {
  if (!given(name)) {
    if (fallback) return *fallback;
    fail("argument '", name, "' is missing");
  }
  const ExportArgument& arg = required(name);
  if (arg.kind == "as_bool") return arg.value.get<bool>();
  if (arg.kind == "as_int") return arg.value.get<int64_t>() != 0;
  if (arg.kind == "as_sym_bool" && arg.value.contains("as_bool")) return arg.value["as_bool"].get<bool>();
  if (arg.kind == "as_sym_bool" && arg.value.contains("as_name")) {
    const Pt2Value& value = value_named(arg.value["as_name"].get<std::string>(), name);
    if (value.kind == Pt2Value::Kind::sym_bool) return value.sym_bool;
  }
  wrong_kind(name, arg, "a bool");
}

std::optional<std::string> AtenNodeContext::optional_string(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  const ExportArgument& arg = required(name);
  if (arg.kind != "as_string") wrong_kind(name, arg, "a string");
  return arg.value.get<std::string>();
}

std::string AtenNodeContext::string_arg(std::string_view name, std::optional<std::string> fallback) const {
  std::optional<std::string> value = optional_string(name);
  if (value) return *value;
  if (fallback) return *fallback;
  fail("argument '", name, "' is missing");
}

std::optional<DType> AtenNodeContext::dtype_arg(std::string_view name) const {
  if (!given(name)) return std::nullopt;
  const ExportArgument& arg = required(name);
  if (arg.kind != "as_scalar_type") wrong_kind(name, arg, "a dtype");
  int64_t code = arg.value.get<int64_t>();
  std::optional<DType> dtype = dtype_from_scalar_type(code);
  if (!dtype) fail("argument '", name, "' is ", scalar_type_name(code), ", a dtype Kiln does not support");
  return dtype;
}

bool AtenNodeContext::is_scalar(std::string_view name) const {
  const ExportArgument* arg = find(name);
  return arg && (arg->kind == "as_int" || arg->kind == "as_float" || arg->kind == "as_bool" || arg->kind == "as_sym_int" ||
                 arg->kind == "as_sym_float" || arg->kind == "as_sym_bool");
}

ir::Argument AtenNodeContext::scalar(std::string_view name, std::optional<ir::Argument> fallback) {
  if (!given(name)) {
    if (fallback) return *fallback;
    fail("argument '", name, "' is missing");
  }
  const ExportArgument& arg = required(name);
  if (arg.kind == "as_int") return ir::Argument(arg.value.get<int64_t>());
  if (arg.kind == "as_bool") return ir::Argument(arg.value.get<bool>());
  if (arg.kind == "as_float") return ir::Argument(float_arg(name));
  if (arg.kind == "as_sym_int") {
    ir::SymInt value = sym_int_of(arg.value, name);
    if (value.is_constant()) return ir::Argument(value.constant());
    return ir::Argument(sym_int_tensor(value));
  }
  if (arg.kind == "as_sym_float" && arg.value.contains("as_float")) return ir::Argument(arg.value["as_float"].get<double>());
  if (arg.kind == "as_sym_bool") return ir::Argument(bool_arg(name));
  wrong_kind(name, arg, "a number");
}

ir::Argument AtenNodeContext::tensor_or_scalar(std::string_view name) {
  if (is_scalar(name)) return scalar(name);
  return ir::Argument(tensor(name));
}

void AtenNodeContext::require_cpu(std::string_view name) const {
  const ExportArgument* arg = find(name);
  if (!arg || arg->kind != "as_device") return;
  std::string type = arg->value.value("type", "cpu");
  if (type != "cpu") fail("argument '", name, "' places a tensor on '", type, "'; Kiln imports CPU programs (compile for CUDA with --target cuda)");
}

// ---- emitting

ir::Node* AtenNodeContext::create(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs,
                                  const std::string& name) {
  ir::Node* node = nullptr;
  try {
    node = state_.graph.create_call(target, std::move(args), std::move(kwargs), name);
  } catch (const kiln::Error& error) {
    fail(error.what());
  }
  node->source = source_;
  return node;
}

ir::Node* AtenNodeContext::call(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs) {
  // Named after the exported node ("batch_norm_var_mean"), so that the program's own names
  // stay free for the values it names.
  std::string base = output_name(0);
  if (base.empty()) base = node_.name;
  std::string name = base.empty() ? "" : state_.graph.unique_name(base + "_" + target);
  return create(target, std::move(args), std::move(kwargs), name);
}

ir::Node* AtenNodeContext::try_call(const std::string& target, std::vector<ir::Argument> args) {
  try {
    std::string base = output_name(0);
    std::string name = base.empty() ? "" : state_.graph.unique_name(base + "_" + target);
    ir::Node* node = state_.graph.create_call(target, std::move(args), {}, name);
    node->source = source_;
    return node;
  } catch (const kiln::Error&) {
    return nullptr;
  }
}

ir::Node* AtenNodeContext::emit(size_t index, const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs) {
  std::string name = output_name(index);
  ir::Node* node = create(target, std::move(args), std::move(kwargs), name.empty() ? "" : state_.graph.unique_name(name));
  set_output(index, node);
  return node;
}

ir::Node* AtenNodeContext::result(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs) {
  if (!inplace_self_) return emit(0, target, std::move(args), std::move(kwargs));
  const ir::OpInfo* inplace_op = ir::OpRegistry::global().find(target + "_");
  if (inplace_op && inplace_op->inplace_of == target && !args.empty() && args[0].is_node() && args[0].node() == inplace_self_)
    return emit(0, target + "_", std::move(args), std::move(kwargs));
  return result_node(call(target, std::move(args), std::move(kwargs)));
}

ir::Node* AtenNodeContext::result_node(ir::Node* value) {
  if (!inplace_self_) {
    set_output(0, value);
    return value;
  }
  return emit(0, "copy_", {inplace_self_, value});
}

ir::Node* AtenNodeContext::constant(const Tensor& value, const std::string& hint) {
  std::string name;
  do {
    name = "_" + hint + "_" + std::to_string(state_.constant_count++);
  } while (state_.graph.parameter(name) != nullptr);
  state_.graph.set_parameter(name, value.contiguous());
  ir::Node* node = state_.graph.create_get_attr(name);
  node->source = source_;
  return node;
}

ir::Node* AtenNodeContext::sym_int_tensor(const ir::SymInt& value) {
  if (value.is_constant()) return constant(Tensor::scalar(double(value.constant()), DType::i64), "size");
  ir::Node* counting = call("iota", {value + 1});
  return call("select", {counting, int64_t(0), value});
}

// ---- outputs

std::string AtenNodeContext::output_name(size_t index) const {
  if (index >= node_.outputs.size()) return "";
  const ExportArgument& out = node_.outputs[index];
  if (out.kind == "as_tensor") return out.value.value("name", "");
  if (out.kind == "as_sym_int" || out.kind == "as_sym_bool" || out.kind == "as_sym_float")
    return out.value.contains("as_name") ? out.value["as_name"].get<std::string>() : "";
  return "";
}

bool AtenNodeContext::output_used(size_t index) const {
  if (index >= node_.outputs.size()) return false;
  const ExportArgument& out = node_.outputs[index];
  if (out.kind == "as_tensors") {
    for (const json& item : out.value)
      if (state_.used_names.count(item.value("name", ""))) return true;
    return false;
  }
  std::string name = output_name(index);
  return !name.empty() && state_.used_names.count(name);
}

const ExportTensorMeta* AtenNodeContext::output_meta(size_t index) const {
  std::string name = output_name(index);
  auto found = state_.program->tensor_values.find(name);
  return found == state_.program->tensor_values.end() ? nullptr : &found->second;
}

void AtenNodeContext::set_output(size_t index, ir::Node* node) {
  if (index >= node_.outputs.size()) {
    if (index == 0 && node_.outputs.empty()) return;  // an op whose result torch.export dropped
    throw InternalError(where() + ": output " + std::to_string(index) + " of a node with " +
                        std::to_string(node_.outputs.size()) + " outputs");
  }
  const ExportArgument& out = node_.outputs[index];
  if (out.kind == "as_none") return;
  if (out.kind != "as_tensor") fail("output ", index, " is ", out.kind, " where a tensor is produced");
  state_.values[out.value.value("name", "")] = Pt2Value::of_node(node);
}

void AtenNodeContext::set_output_list(size_t index, std::vector<ir::Node*> nodes) {
  if (node_.outputs.size() == 1 && node_.outputs[0].kind == "as_tensors") {
    const json& items = node_.outputs[0].value;
    if (items.size() != nodes.size()) fail("torch.export lists ", items.size(), " results, Kiln computed ", nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) state_.values[items[i].value("name", "")] = Pt2Value::of_node(nodes[i]);
    return;
  }
  // Multiple single-tensor outputs (a tuple).
  if (node_.outputs.size() != nodes.size() + index)
    fail("torch.export lists ", node_.outputs.size(), " results, Kiln computed ", nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) set_output(index + i, nodes[i]);
}

void AtenNodeContext::set_sym_int_output(size_t index, const ir::SymInt& value) {
  if (index >= node_.outputs.size()) return;
  const ExportArgument& out = node_.outputs[index];
  if (out.kind != "as_sym_int" || !out.value.contains("as_name")) fail("output ", index, " is ", out.kind, " where an int is produced");
  state_.values[out.value["as_name"].get<std::string>()] = Pt2Value::of_sym_int(value);
}

void AtenNodeContext::set_sym_bool_output(size_t index, bool value) {
  if (index >= node_.outputs.size()) return;
  const ExportArgument& out = node_.outputs[index];
  if (!out.value.is_object() || !out.value.contains("as_name")) return;
  Pt2Value result;
  result.kind = Pt2Value::Kind::sym_bool;
  result.sym_bool = value;
  state_.values[out.value["as_name"].get<std::string>()] = result;
}

}  // namespace kiln::frontends
