// Model files by extension: torch.export archives, ONNX, or Kiln's text/JSON IR.
#include "frontends/model_loader.h"

#include <filesystem>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/pt2/pt2_importer.h"
#include "ir/model_file.h"
#include "kiln/error.h"

namespace kiln::frontends {

ir::Graph load_model(const std::string& path) {
  std::error_code status;
  if (!std::filesystem::exists(path, status)) fail("model file '", path, "' does not exist");
  std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".onnx") return import_onnx(path);
  if (extension == ".pt2") return import_pt2(path);
  if (extension == ".kiln" || extension == ".json") return ir::load_model(path);
  std::string found = extension.empty() ? "no extension" : "the extension '" + extension + "'";
  fail("'", path, "' has ", found, "; supported model files: .pt2 (torch.export), .onnx (ONNX), .kiln (text IR), .json (JSON IR)");
}

}  // namespace kiln::frontends
