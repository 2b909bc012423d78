// The export schema (torch/_export/serde/schema.py, version 8.x) as read from a .pt2
// archive's models/<model>.json: the graph (nodes with ATen targets and named arguments,
// tensor and symbolic-int values), the graph signature, and range constraints. Reading
// checks the structure (every field a converter relies on, with its JSON type) and the schema
// version; the meaning of arguments is left to the converters (aten_node_context.h), which
// read them by name. Errors name the file and the JSON path.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::frontends {

// The schema major version Kiln reads (PyTorch 2.6 to 2.15 write 8.x).
inline constexpr int64_t kKnownSchemaMajor = 8;

// One value of the schema's Argument union: its kind ("as_tensor", "as_int", "as_none", ...)
// and the JSON under it.
struct ExportArgument {
  std::string kind;
  nlohmann::json value;
};

struct ExportNamedArgument {
  std::string name;
  ExportArgument arg;
};

struct ExportNode {
  std::string target;  // "torch.ops.aten.conv2d.default", "_operator.mul", ...
  std::vector<ExportNamedArgument> inputs;
  std::vector<ExportArgument> outputs;
  std::map<std::string, std::string> metadata;  // stack_trace, nn_module_stack, ...
  std::string name;  // the node's name in the exported program (may be empty)
  size_t index = 0;  // position in graph.nodes
};

// A SymInt of tensor metadata: a constant, or a sympy expression (srepr text) with the value
// it had on the example inputs.
struct ExportSymInt {
  std::optional<int64_t> constant;
  std::string expression;
  std::optional<int64_t> hint;
};

struct ExportTensorMeta {
  int64_t dtype = 0;  // schema ScalarType code
  std::vector<ExportSymInt> sizes;
  std::vector<ExportSymInt> strides;
  ExportSymInt storage_offset;
  std::string device = "cpu";
  int64_t layout = 7;  // Strided
};

enum class InputKind { user_input, parameter, buffer, tensor_constant, custom_obj, token, constant_input };
enum class OutputKind {
  user_output, loss_output, buffer_mutation, gradient_to_parameter, gradient_to_user_input, user_input_mutation,
  token, parameter_mutation
};

struct ExportInputSpec {
  InputKind kind = InputKind::user_input;
  std::string name;     // the graph input's value name ("p_fc_weight", "x")
  std::string target;   // parameter / buffer / constant FQN ("fc.weight"); empty for user inputs
  bool persistent = true;
  ExportArgument argument;  // user inputs: the argument (a tensor, or a constant); constant inputs: the value
};

struct ExportOutputSpec {
  OutputKind kind = OutputKind::user_output;
  ExportArgument argument;  // the value returned
  std::string target;       // mutated buffer / parameter / input name
};

struct ExportRange {
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

struct ExportProgram {
  std::string label;  // "'model.pt2': models/model.json", for messages
  int64_t schema_major = 0, schema_minor = 0;
  std::string torch_version;
  std::vector<ExportArgument> inputs;   // graph inputs, in order
  std::vector<ExportArgument> outputs;  // graph outputs, in order
  std::vector<ExportNode> nodes;
  std::map<std::string, ExportTensorMeta> tensor_values;
  std::map<std::string, ExportSymInt> sym_int_values;
  std::vector<ExportInputSpec> input_specs;
  std::vector<ExportOutputSpec> output_specs;
  std::map<std::string, ExportRange> range_constraints;  // by symbol expression ("s77")
};

std::string input_kind_name(InputKind kind);    // "parameter"
std::string output_kind_name(OutputKind kind);  // "buffer mutation"

// Parses model.json's text. `label` names it in messages. Throws kiln::Error on malformed
// JSON, a missing or mistyped field, an unknown union kind, or a schema version other than
// kKnownSchemaMajor.x.
ExportProgram parse_export_program(const std::string& text, const std::string& label);

// Reads one SymInt union (as_int / as_expr) found at `path`.
ExportSymInt parse_export_sym_int(const nlohmann::json& value, const std::string& path, const std::string& label);
// Reads a TensorMeta object found at `path`.
ExportTensorMeta parse_export_tensor_meta(const nlohmann::json& value, const std::string& path, const std::string& label);

}  // namespace kiln::frontends
