// Running one node test case: classified first (an opset Kiln does not import: not applicable;
// an op the importer does not convert or an element type Kiln has no dtype for: unsupported;
// neither is run), then imported (with the
// inputs Kiln needs at import time given as constants: import_time_inputs.h), run by the
// reference interpreter and by the CPU backend on test_data_set_0's other inputs, and each
// result compared with the expected outputs at ONNX's tolerances (onnx_tolerance.h). It passes
// when both match.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/compile_driver.h"
#include "tests/onnx_conformance/node_test_case.h"

namespace kiln::conformance {

enum class CaseStatus { passed, failed, unsupported, not_applicable };

std::string status_name(CaseStatus status);               // "passed", "failed", ...
std::optional<CaseStatus> status_from_name(const std::string& name);

struct CaseOutcome {
  CaseStatus status = CaseStatus::failed;
  // failed: what went wrong, by stage ("interpreter: output 0: element 3 is ...");
  // unsupported: the ops and types the importer lacks; not_applicable: the opset.
  std::string detail;
  // The graph inputs given as constants at import (run cases only).
  std::vector<std::string> import_time_inputs;
};

// `scratch_folder` receives the specialized model of a case that has import-time inputs.
CaseOutcome run_node_test_case(const NodeTestCase& test_case, const compiler::CompileOptions& options,
                               const fs::path& scratch_folder);

}  // namespace kiln::conformance
