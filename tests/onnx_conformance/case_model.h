// The graph a user's run of a node test case gets, and the inputs it is run with: the model
// file as it is, every data set input fed at run time by its name, through the specialization
// a user's run gets (frontends/onnx/onnx_specialization.h: the inputs that decide shapes are
// specialized on their values).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "tests/onnx_conformance/node_test_case.h"

namespace kiln::conformance {

struct CaseModel {
  ir::Graph graph;
  std::map<std::string, Tensor> run_inputs;      // by placeholder name
  std::vector<std::string> specialized_inputs;  // graph inputs whose values the graph was specialized on
};

// The name Kiln gives the value an ONNX model names `onnx_name` (a placeholder, an output).
std::string kiln_value_name(const std::string& onnx_name);

// Throws kiln::Error when the model cannot be imported for these inputs.
CaseModel import_case_model(const NodeTestCase& test_case, const std::vector<std::pair<std::string, Tensor>>& inputs,
                            const fs::path& scratch_folder);

}  // namespace kiln::conformance
