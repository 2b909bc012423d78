// Importing a node test case's model for its inputs (see case_model.h).
#include "tests/onnx_conformance/case_model.h"

#include <cctype>

#include "frontends/onnx/onnx_importer.h"

namespace kiln::conformance {

std::string kiln_value_name(const std::string& onnx_name) {
  std::string name;
  for (char c : onnx_name) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty()) name = "_";
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
  return name;
}

CaseModel import_case_model(const NodeTestCase& test_case, const std::vector<std::pair<std::string, Tensor>>& inputs,
                            const fs::path& /*scratch_folder*/) {
  CaseModel model{frontends::import_onnx((test_case.folder / "model.onnx").string()), {}, {}};
  for (const auto& [name, value] : inputs) model.run_inputs[kiln_value_name(name)] = value;
  return model;
}

}  // namespace kiln::conformance
