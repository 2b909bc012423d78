// Parsing and validating .onnx files with ONNX's C++ library.
#include "compiler/onnx/onnx_model_file.h"

#include <filesystem>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace kiln::compiler {

namespace {

// The default domain's opset, or 0 when the model imports none.
int64_t default_domain_opset(const onnx::ModelProto& proto) {
  for (const auto& entry : proto.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") return entry.version();
  return 0;
}

void run_checker(const OnnxModel& model) {
  onnx::ModelProto& proto = *model.proto;
  int64_t declared_ir = proto.ir_version();
  bool newer_ir = declared_ir > int64_t(onnx::IR_VERSION);
  if (newer_ir) proto.set_ir_version(int64_t(onnx::IR_VERSION));
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& error) {
    if (newer_ir) proto.set_ir_version(declared_ir);
    fail("'", model.path, "' fails ONNX's model checker: ", error.what());
  }
  if (newer_ir) proto.set_ir_version(declared_ir);
}

}  // namespace

OnnxModel read_onnx_model(const std::string& path) {
  std::error_code status;
  if (!std::filesystem::exists(path, status)) fail("model file '", path, "' does not exist");
  if (std::filesystem::is_directory(path, status)) fail("model file '", path, "' is a directory");
  std::string bytes = read_file(path);
  if (bytes.empty()) fail("'", path, "' is empty, not an ONNX model");

  OnnxModel model;
  model.path = path;
  model.proto = std::make_shared<onnx::ModelProto>();
  if (!model.proto->ParseFromString(bytes))
    fail("'", path, "' is not a readable ONNX model: protobuf cannot parse its ", bytes.size(),
         " bytes (a truncated file, or not an ONNX file)");
  bytes.clear();
  bytes.shrink_to_fit();

  const onnx::ModelProto& proto = *model.proto;
  if (!proto.has_graph() || proto.ir_version() <= 0 || proto.opset_import_size() == 0) {
    std::string missing = !proto.has_graph() ? "graph" : proto.ir_version() <= 0 ? "ir_version" : "opset_import";
    fail("'", path, "' is not a complete ONNX model: it has no ", missing, " (a truncated file, or not an ONNX file)");
  }
  model.opset = default_domain_opset(proto);
  if (model.opset == 0) fail("'", path, "' imports no opset of the default ONNX domain (\"\" or \"ai.onnx\")");
  if (model.opset < kMinOnnxOpset || model.opset > kMaxOnnxOpset)
    fail("'", path, "' uses ONNX opset ", model.opset, "; Kiln imports opsets ", kMinOnnxOpset, " to ", kMaxOnnxOpset,
         model.opset < kMinOnnxOpset ? " (convert the model to a newer opset, e.g. with onnx.version_converter)" : "");
  run_checker(model);
  return model;
}

void infer_onnx_shapes(OnnxModel& model) {
  if (model.opset > kMaxOnnxOpsetWithShapeInference) return;
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(*model.proto, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& error) {
    fail("'", model.path, "': ONNX shape inference failed: ", error.what());
  }
  model.shapes_inferred = true;
}

}  // namespace kiln::compiler
