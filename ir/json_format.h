// The IR as JSON, for tools: every node field, source info included, round trips exactly.
//
//   {"format": "kiln-graph", "version": 2, "nodes": [
//     {"name": "x", "op": "placeholder", "target": "x", "args": [], "kwargs": [],
//      "meta": {"tuple": false, "values": [{"dtype": "f32", "shape": ["s0", 784],
//                                            "strides": [784, 1], "device": "cpu"}]},
//      "source": {"file": "mlp.cpp", "line": 12, "module_path": "fc1", "onnx_node": "", "onnx_op": ""}},
//     ...,
//     {"name": "output", "op": "output", "target": "output", "args": [{"node": "relu"}], ...}],
//    "signature": {"inputs": [{"name": "x", "kind": "USER_INPUT"},
//                             {"name": "bn_running_mean", "kind": "BUFFER", "target": "bn.running_mean"}],
//                  "outputs": [{"name": "relu", "kind": "USER_OUTPUT"},
//                              {"name": "x_mutated", "kind": "USER_INPUT_MUTATION", "target": "x"}]}}
//
// The signature (ir/graph_signature.h) lists every spec, as the text form does when it prints
// one (ir/signature_specs.h): inputs first, then one spec per returned value, in order. Version
// 1 files, which have no signature, are still read: their inputs are user inputs and
// parameters, and their outputs user outputs except the copy-backs version 1 marked by name
// (trailing outputs named "<input>_mutated"), which become USER_INPUT_MUTATION and
// PARAMETER_MUTATION outputs.
//
// Arguments: null (None), true/false, JSON integers and floats, strings, arrays (lists), and
// one-key objects for the rest: {"node": "x"}, {"symint": "s0 + 1"}, {"dtype": "f32"},
// {"device": "cuda:0"}, {"float": "inf" | "-inf" | "nan"}. kwargs are [name, value] pairs
// (order matters). A dimension or stride is an integer or a symbolic expression string.
// Parameters are not in the JSON: they live in a safetensors file beside it (model_file.h).
//
// Reading re-infers every call_function node's meta through Graph::create_call and checks
// the written dtype/shape/device against it (the written strides are kept). Every error is a
// kiln::Error naming the file and the JSON path: "model.json: nodes[3].args[1]: ...".
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/parser.h"

namespace kiln::ir {

inline constexpr int kJsonFormatVersion = 2;  // the version written; 1 and 2 are read

nlohmann::json graph_to_json(const Graph& graph);

// get_attr targets take their values from options.parameters (see ir/parser.h).
Graph graph_from_json(const nlohmann::json& json, const ParseOptions& options);
Graph graph_from_json(const nlohmann::json& json, const std::string& file_name = "<json>");
Graph graph_from_json(const nlohmann::json& json, const std::string& file_name,
                      const std::map<std::string, Tensor, std::less<>>& parameters);
// The text of a .json model file: bad JSON is a kiln::Error naming options.file_name and the
// line and column, quoting a short excerpt.
Graph parse_graph_json(std::string_view text, const ParseOptions& options);

}  // namespace kiln::ir
