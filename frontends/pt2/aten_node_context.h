// AtenNodeContext: what a converter (one function per ATen overload, aten_ops_*.cpp) sees of
// the exported node it converts, and how it emits Kiln ops:
//  - arguments by their schema name ("self", "dim", "weight"), as torch.export writes them:
//    the serializer leaves out keyword arguments equal to their default, so each accessor
//    takes the default the ATen schema declares. Tensors come back as graph nodes, symbolic
//    ints as SymInts (a size read with sym_size, or a Python operator on sizes), Python
//    scalars as Kiln arguments; a wrong kind is a kiln::Error naming the node and argument;
//  - call()/emit() create Kiln op nodes, each with the node's source info (the user's file
//    and line from stack_trace, the module path from nn_module_stack); emit() names the node
//    after the exported output it produces;
//  - outputs are set by index (a tensor, a list of tensors, or a SymInt).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/pt2/pt2_schema.h"
#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::frontends {

// A value of the exported graph as imported: a tensor, a list of tensors (an op returning
// Tensor[]), a symbolic int, float or bool.
struct Pt2Value {
  enum class Kind { tensor, tensor_list, sym_int, sym_float, sym_bool };
  Kind kind = Kind::tensor;
  ir::Node* node = nullptr;
  std::vector<ir::Node*> nodes;
  ir::SymInt sym_int;
  double sym_float = 0;
  bool sym_bool = false;

  static Pt2Value of_node(ir::Node* node);
  static Pt2Value of_sym_int(ir::SymInt value);
};

// The importer's state shared by the converters of one program.
struct Pt2ImportState {
  std::string file_label;   // "'model.pt2'", prefix of messages
  std::string source_file;  // the model file's name, for nodes without a stack trace
  ir::Graph graph;
  std::map<std::string, Pt2Value> values;  // by exported name
  const ExportProgram* program = nullptr;
  int64_t constant_count = 0;  // tensors computed at import time, kept as parameters
  int64_t random_nodes = 0;    // random nodes emitted so far: the next one's seed
  std::set<std::string> used_names;  // names read by some node or returned by the graph
};

class AtenNodeContext {
 public:
  AtenNodeContext(Pt2ImportState& state, const ExportNode& node);

  const ExportNode& node() const { return node_; }
  // "aten.conv2d.default"
  const std::string& target() const { return target_; }
  // "'m.pt2': node 'conv2d' (aten.conv2d.default)"
  std::string where() const;
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    kiln::fail(where(), ": ", parts...);
  }

  // ---- arguments by name
  const ExportArgument* find(std::string_view name) const;  // nullptr when absent
  bool given(std::string_view name) const;                  // present and not None
  ir::Node* tensor(std::string_view name);
  ir::Node* optional_tensor(std::string_view name);          // nullptr when absent or None
  std::vector<ir::Node*> tensors(std::string_view name);     // Tensor[]
  std::vector<ir::Node*> optional_tensors(std::string_view name);  // Tensor?[] (None entries null)
  int64_t int_arg(std::string_view name, std::optional<int64_t> fallback = std::nullopt) const;
  std::optional<int64_t> optional_int(std::string_view name) const;
  std::vector<int64_t> ints(std::string_view name, std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  std::optional<std::vector<int64_t>> optional_ints(std::string_view name) const;
  ir::SymInt sym_int(std::string_view name, std::optional<ir::SymInt> fallback = std::nullopt) const;
  std::optional<ir::SymInt> optional_sym_int(std::string_view name) const;
  std::vector<ir::SymInt> sym_ints(std::string_view name, std::optional<std::vector<ir::SymInt>> fallback = std::nullopt) const;
  double float_arg(std::string_view name, std::optional<double> fallback = std::nullopt) const;
  std::optional<double> optional_float(std::string_view name) const;
  bool bool_arg(std::string_view name, std::optional<bool> fallback = std::nullopt) const;
  std::string string_arg(std::string_view name, std::optional<std::string> fallback = std::nullopt) const;
  std::optional<std::string> optional_string(std::string_view name) const;
  std::optional<DType> dtype_arg(std::string_view name) const;  // ScalarType?; nullopt when absent or None
  // A Scalar: a Python number as a Kiln argument (int, float or bool); a symbolic int becomes a
  // 0-d i64 tensor holding its value.
  ir::Argument scalar(std::string_view name, std::optional<ir::Argument> fallback = std::nullopt);
  // A Tensor or a Scalar (for Kiln's Scalar|Tensor parameters).
  ir::Argument tensor_or_scalar(std::string_view name);
  // Whether the argument is a Python scalar (not a tensor).
  bool is_scalar(std::string_view name) const;
  // The device argument, when given, must be the CPU.
  void require_cpu(std::string_view name) const;

  // ---- emitting
  ir::Node* call(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});
  // call(), or nullptr when the op's shape rule rejects the arguments (for a converter that
  // has a second way: view, else reshape).
  ir::Node* try_call(const std::string& target, std::vector<ir::Argument> args);
  // call() named after output `index`, which it becomes.
  ir::Node* emit(size_t index, const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});
  // The value of this node (output 0), named after the exported output. When the context
  // converts an in-place ATen op (set_inplace), the value is written into self instead: with
  // Kiln's in-place variant of `target` when it has one and self is its first argument, else
  // with the functional op followed by copy_ (Kiln's functionalization removes both).
  ir::Node* result(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});
  // result() of a value the converter computed itself.
  ir::Node* result_node(ir::Node* value);
  void set_inplace(ir::Node* self) { inplace_self_ = self; }
  bool inplace() const { return inplace_self_ != nullptr; }
  // A tensor computed at import time, as a parameter read.
  ir::Node* constant(const Tensor& value, const std::string& hint = "constant");
  // A 0-d i64 tensor holding a symbolic int's value (iota(v + 1)[v]).
  ir::Node* sym_int_tensor(const ir::SymInt& value);

  // ---- outputs
  size_t output_count() const { return node_.outputs.size(); }
  bool output_used(size_t index) const;  // named and read by a later node or the graph outputs
  void set_output(size_t index, ir::Node* node);
  void set_output_list(size_t index, std::vector<ir::Node*> nodes);
  void set_sym_int_output(size_t index, const ir::SymInt& value);
  void set_sym_bool_output(size_t index, bool value);
  // The name the exported program gives output `index` ("" when it has none).
  std::string output_name(size_t index) const;

  ir::Graph& graph() { return state_.graph; }
  Pt2ImportState& state() { return state_; }
  // The dtype and shape torch.export recorded for output `index` (nullptr when not a tensor).
  const ExportTensorMeta* output_meta(size_t index) const;

 private:
  const ExportArgument& required(std::string_view name) const;
  [[noreturn]] void wrong_kind(std::string_view name, const ExportArgument& arg, const char* expected) const;
  const Pt2Value& value_named(const std::string& name, std::string_view argument) const;
  ir::SymInt sym_int_of(const nlohmann::json& value, std::string_view name) const;
  ir::Node* create(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs, const std::string& name);

  Pt2ImportState& state_;
  const ExportNode& node_;
  std::string target_;
  ir::SourceInfo source_;
  ir::Node* inplace_self_ = nullptr;
};

// The source info of an exported node: the innermost frame of its stack_trace outside
// PyTorch's own package (the user's model code), and the innermost module of its
// nn_module_stack.
ir::SourceInfo source_info_of(const ExportNode& node, const std::string& fallback_file);

// "torch.ops.aten.add.Tensor" -> "aten.add.Tensor"; other targets unchanged.
std::string short_target(const std::string& target);

}  // namespace kiln::frontends
