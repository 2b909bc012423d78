// Importing a node test case's model for its inputs (see case_model.h).
#include "tests/onnx_conformance/case_model.h"

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_specialization.h"

namespace kiln::conformance {

std::string kiln_value_name(const std::string& onnx_name) { return frontends::onnx_value_name(onnx_name); }

CaseModel import_case_model(const NodeTestCase& test_case, const std::vector<std::pair<std::string, Tensor>>& inputs,
                            const fs::path& /*scratch_folder*/) {
  frontends::OnnxSpecializedModel model((test_case.folder / "model.onnx").string());
  std::map<std::string, Tensor> given;
  for (const auto& [name, value] : inputs) given[kiln_value_name(name)] = value;
  std::map<std::string, Tensor> run_inputs;
  frontends::OnnxSpecializedModel::Specialization& specialization = model.specialize(given, run_inputs);
  return {std::move(specialization.graph), std::move(run_inputs), model.value_inputs()};
}

}  // namespace kiln::conformance
