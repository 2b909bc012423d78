// OnnxNodeContext: what a converter (one function per ONNX op, onnx_ops_*.cpp) sees of the
// ONNX node it converts, and how it emits Kiln ops:
//  - inputs as OnnxValues (onnx_value.h): their dtype and symbolic shape, a constant's
//    tensor, the integer elements of a shape-like input (int_values), or a graph node
//    (tensor(), which turns a constant into a parameter read, get_attr, on first use);
//  - attributes by name, with ONNX's defaults given by the converter, type-checked;
//  - call()/emit() create Kiln op nodes; every node created gets the ONNX node's name and op
//    type in its SourceInfo, and emit() names the node after the ONNX output it produces;
//  - fail() throws kiln::Error prefixed with the model file and the node.
// While the importer folds a node whose inputs are all constants, the same converter runs
// against a scratch graph that is then evaluated by the interpreter; converters need not
// know.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <onnx/onnx_pb.h>

#include "frontends/onnx/onnx_tensor.h"
#include "frontends/onnx/onnx_value.h"
#include "ir/graph.h"
#include "kiln/error.h"

namespace kiln::frontends {

// The importer's state shared by the converters of one model.
struct OnnxImportState {
  std::string model_path;
  std::string file_label;  // the model's file name, for SourceInfo
  int64_t opset = 0;
  ir::Graph graph;
  std::unordered_map<std::string, OnnxValue> values;  // by ONNX name
  OnnxTensorReader* tensors = nullptr;
  const onnx::GraphProto* onnx_graph = nullptr;  // the model's main graph
  // Converts a subgraph (If's branches, Loop's body) into `graph` with its inputs bound to
  // `inputs`: its outputs (set by the importer).
  std::function<std::vector<OnnxValue>(const onnx::GraphProto&, const std::vector<OnnxValue>&)> convert_subgraph;
  std::set<std::string> run_time_inputs;         // its graph inputs fed at run time
  // Size symbols at which a slice of a static dim takes exactly the symbol's elements rather than
  // min(symbol, size), with that size: the most the symbol may be (ir::SymbolBound;
  // onnx_importer.cpp imports again with them and makes it the symbol's range).
  std::map<std::string, int64_t> slices_cut_at;

  // The graph inputs fed at run time that `onnx_name`'s data is computed from (through any
  // node but Shape and Size, which read only shapes), sorted.
  std::vector<std::string> run_time_sources(const std::string& onnx_name) const;

  // A fresh parameter name derived from an ONNX name ([A-Za-z0-9_.], unique).
  std::string parameter_name(const std::string& onnx_name) const;
  // The value named `onnx_name` as a node of `graph`: a constant becomes a parameter and its
  // get_attr, a symbolic value is computed; either is kept with the value for later readers.
  ir::Node* node_of(const std::string& onnx_name);
  // Same for a value that has no name in scope (a subgraph's output).
  ir::Node* materialize(OnnxValue& value);
};

class OnnxNodeContext {
 public:
  // `graph` is state.graph, or a scratch graph while folding constants.
  OnnxNodeContext(OnnxImportState& state, const onnx::NodeProto& node, ir::Graph& graph);

  const onnx::NodeProto& proto() const { return node_; }
  const std::string& op_type() const { return node_.op_type(); }
  int64_t opset() const { return state_.opset; }
  // Whether slices cut from 0 at size symbol `symbol` take exactly its elements (OnnxImportState).
  bool slices_cut_at(const std::string& symbol) const { return state_.slices_cut_at.count(symbol) > 0; }
  // "node 'fc1' (Gemm)", or "the Gemm node producing 'y'" when it has no name.
  std::string node_description() const;
  // "'model.onnx': node 'fc1' (Gemm)"
  std::string where() const;
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    kiln::fail(where(), ": ", parts...);
  }

  // ---- inputs ----
  size_t input_count() const { return size_t(node_.input_size()); }
  bool has_input(size_t index) const;  // given, with a non-empty name
  const OnnxValue& input(size_t index) const;  // fails when absent; any kind (a sequence, ...)
  // The input, which must be a tensor (fails for a sequence or an empty optional). Every
  // accessor below reads inputs through it.
  const OnnxValue& tensor_value(size_t index) const;
  DType dtype(size_t index) const { return tensor_value(index).dtype(); }
  ir::SymShape shape(size_t index) const { return tensor_value(index).shape(); }
  int64_t rank(size_t index) const { return int64_t(shape(index).size()); }
  // The input as a graph node (constants become parameters, symbolic values are computed).
  ir::Node* tensor(size_t index);
  const Tensor* constant(size_t index) const;  // nullptr unless a constant
  // The elements of a rank-0/1 integer input known at import time (constant or symbolic).
  std::optional<ir::SymShape> int_values(size_t index) const;
  // Same, but required to be known (see need_known); `what` names the input in messages.
  ir::SymShape known_ints(size_t index, std::string_view what) const;
  // Same, and required to be constant.
  std::vector<int64_t> constant_ints(size_t index, std::string_view what) const;
  // A one-element constant input as a double (fails otherwise).
  double constant_scalar(size_t index, std::string_view what) const;
  // The input's value, required to be known at import time (see need_known).
  const Tensor& constant_input(size_t index, std::string_view what) const;
  // Fails because input `index` (`what`) must be known when the model is imported: when the
  // model computes it from graph inputs fed at run time, throws OnnxInputValuesNeeded naming
  // them (their values make it known); `why` ends the message otherwise.
  [[noreturn]] void need_known(size_t index, std::string_view what, const std::string& why) const;

  // ---- attributes ----
  const onnx::AttributeProto* attribute(std::string_view name) const;  // nullptr when absent
  int64_t int_attribute(std::string_view name, int64_t fallback) const;
  double float_attribute(std::string_view name, double fallback) const;
  std::string string_attribute(std::string_view name, const std::string& fallback) const;
  std::vector<int64_t> ints_attribute(std::string_view name, const std::vector<int64_t>& fallback = {}) const;
  std::optional<std::vector<int64_t>> maybe_ints_attribute(std::string_view name) const;
  Tensor tensor_attribute(std::string_view name) const;
  const onnx::GraphProto& graph_attribute(std::string_view name) const;  // required

  // ---- subgraphs ----
  // The subgraph converted into the graph being built, its inputs bound to `inputs`.
  std::vector<OnnxValue> convert_subgraph(const onnx::GraphProto& subgraph, const std::vector<OnnxValue>& inputs);
  // A value (a subgraph's output) as a graph node.
  ir::Node* node_of(OnnxValue& value) { return state_.materialize(value); }
  // A dimension attribute (or value) wrapped into [0, rank), failing with the node named.
  int64_t wrap_axis(int64_t axis, int64_t rank) const;

  // ---- outputs ----
  size_t output_count() const { return size_t(node_.output_size()); }
  bool output_used(size_t index) const { return index < output_count() && !node_.output(int(index)).empty(); }
  // Fails when any output at or beyond `count` is requested (the converter computes fewer).
  void require_outputs_at_most(size_t count, std::string_view what) const;
  void set_output(size_t index, ir::Node* node);
  void set_output(size_t index, OnnxValue value);
  // A Kiln op node, with this node's SourceInfo; errors of the op's shape rule name this node.
  ir::Node* call(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});
  // A tensor computed by the converter (an index list, a mask) as a parameter read.
  ir::Node* constant_node(const Tensor& value);
  // call() named after output `index`, which it becomes.
  ir::Node* emit(size_t index, const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs = {});

  ir::Graph& graph() { return graph_; }
  // The values the converter set, by output index (unset ones are empty).
  std::vector<std::optional<OnnxValue>>& outputs() { return outputs_; }

 private:
  ir::Node* create(const std::string& target, std::vector<ir::Argument> args, ir::Kwargs kwargs, const std::string& name);

  OnnxImportState& state_;
  const onnx::NodeProto& node_;
  ir::Graph& graph_;
  bool folding_;
  std::map<size_t, ir::Node*> scratch_inputs_;  // folding: inputs materialized in the scratch graph
  std::vector<std::optional<OnnxValue>> outputs_;
};

}  // namespace kiln::frontends
