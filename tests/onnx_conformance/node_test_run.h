// Running one node test case as a user runs the model: the model file as it is, every graph
// input fed at run time from test_data_set_0 (by name), the outputs fetched by their ONNX
// names and compared with the expected ones at ONNX's tolerances (onnx_tolerance.h), through
// the reference interpreter and through the CPU backend. The case passes when both match.
// Inputs that decide shapes (Reshape's shape, Slice's starts, ...) go through the same
// value specialization a user's `kiln run` gets (case_model.h). Sequence and optional values
// are fed and compared as a user feeds and gets them (frontends/onnx/onnx_importer.h): a
// sequence `s` as the tensors s.0, s.1, ..., an optional as its value or nothing; a sequence
// output must have exactly the expected elements, an empty optional output must be absent.
//
// A failure is put in one class (FailureClass), from the stage that failed and what it said,
// so that the report can count the remaining failures by reason.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/compile_driver.h"
#include "tests/onnx_conformance/node_test_case.h"

namespace kiln::conformance {

enum class CaseStatus { passed, failed };

std::string status_name(CaseStatus status);  // "passed", "failed"
std::optional<CaseStatus> status_from_name(const std::string& name);

// Why a case fails, by the first stage that failed.
enum class FailureClass {
  none,              // it passed
  opset,             // its opset is one the importer does not take (or cannot convert)
  unsupported_op,    // it uses an op the importer does not convert
  unsupported_type,  // an element type Kiln has no dtype for, or a map value
  shape_input,       // an input that decides a shape could not be taken at run time
  import,            // any other import error (an attribute, an edge case of a converter)
  interpreter,       // the interpreter failed or computed a wrong result
  cpu,               // the interpreter is right, the CPU backend failed or is wrong
  output_names,      // an expected output is not among the model's outputs by its name
};

std::string failure_class_name(FailureClass failure);  // "unsupported_op", ...
std::optional<FailureClass> failure_class_from_name(const std::string& name);
// One line for the report: "needs an op the importer does not convert".
std::string failure_class_summary(FailureClass failure);

struct CaseOutcome {
  CaseStatus status = CaseStatus::failed;
  FailureClass failure = FailureClass::none;
  bool interpreter_passed = false;
  bool cpu_passed = false;
  // failed: what went wrong, by stage ("interpreter: output 'y': element 3 is ..."); for
  // unsupported_op, the missing ops separated by spaces.
  std::string detail;
  // The graph inputs whose values the model was specialized on (shape-deciding inputs).
  std::vector<std::string> specialized_inputs;
};

// `scratch_folder` receives what a case needs written (specialized models).
CaseOutcome run_node_test_case(const NodeTestCase& test_case, const CompileOptions& options,
                               const fs::path& scratch_folder);

}  // namespace kiln::conformance
