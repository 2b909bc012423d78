// Parsing and validating .onnx files with ONNX's C++ library.
#include "frontends/onnx/onnx_model_file.h"

#include <filesystem>
#include <map>
#include <set>

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include "runtime/atomic_file.h"
#include "kiln/error.h"

// Exported by libonnx 1.12 but missing from its checker.h: the check with a context, which
// the path overload uses to find external data relative to the model's folder.
namespace onnx::checker {
void check_model(const ModelProto& model, CheckerContext& context);
}  // namespace onnx::checker

namespace kiln::frontends {

namespace {

// The default domain's opset, or 0 when the model imports none.
int64_t default_domain_opset(const onnx::ModelProto& proto) {
  for (const auto& entry : proto.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") return entry.version();
  return 0;
}

// ONNX's multi-line messages on one line.
std::string one_line(const std::string& text) {
  std::string line;
  for (char c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == ' ' && (line.empty() || line.back() == ' ')) continue;
    line += c;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

void run_checker(const OnnxModel& model) {
  onnx::ModelProto& proto = *model.proto;
  int64_t declared_ir = proto.ir_version();
  bool newer_ir = declared_ir > int64_t(onnx::IR_VERSION);
  if (newer_ir) proto.set_ir_version(int64_t(onnx::IR_VERSION));
  try {
    onnx::checker::CheckerContext context;
    std::string folder = std::filesystem::path(model.path).parent_path().string();
    context.set_model_dir(folder.empty() ? "" : folder + "/");
    onnx::checker::check_model(proto, context);
  } catch (const std::exception& error) {
    if (newer_ir) proto.set_ir_version(declared_ir);
    fail("'", model.path, "' fails ONNX's model checker: ", one_line(error.what()));
  }
  if (newer_ir) proto.set_ir_version(declared_ir);
}

// The structural rules of ONNX's checker that hold in every opset (see the header).
void check_structure(const OnnxModel& model) {
  const onnx::GraphProto& graph = model.proto->graph();
  auto problem = [&](const auto&... parts) {
    if (model.opset > kMaxOnnxOpsetWithShapeInference)
      fail("'", model.path, "' fails Kiln's model check (ONNX ", onnx::LAST_RELEASE_VERSION,
           "'s checker knows opsets up to ", kMaxOnnxOpsetWithShapeInference, "): ", parts...);
    fail("'", model.path, "' fails Kiln's model check: ", parts...);
  };
  std::set<std::string> defined;
  for (const auto& initializer : graph.initializer())
    if (!defined.insert(initializer.name()).second) problem("initializer '", initializer.name(), "' is defined twice");
  for (const auto& input : graph.input()) defined.insert(input.name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    std::string label = node.name().empty() ? "node #" + std::to_string(i) : "node '" + node.name() + "'";
    if (node.op_type().empty()) problem(label, " has no op_type");
    for (const std::string& input : node.input())
      if (!input.empty() && !defined.count(input))
        problem(label, " (", node.op_type(), ") reads '", input,
                "', which no graph input, initializer or earlier node defines");
    for (const std::string& output : node.output())
      if (!output.empty() && !defined.insert(output).second)
        problem(label, " (", node.op_type(), ") defines '", output, "', which is already defined");
  }
  for (const auto& output : graph.output())
    if (!defined.count(output.name())) problem("graph output '", output.name(), "' is not defined");
}

// An opset below kMinOnnxOpset: checked, then converted by ONNX's version converter. ONNX 1.12's
// checker lets a graph output that nothing defines through, and the converter then crashes on it
// (a null value in graphProtoToGraph), so Kiln's structural check runs first too.
void convert_to_min_opset(OnnxModel& model) {
  run_checker(model);
  check_structure(model);
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(*model.proto, int(kMinOnnxOpset));
  } catch (const std::exception& error) {
    fail("'", model.path, "' uses ONNX opset ", model.opset, "; ONNX's version conversion to opset ", kMinOnnxOpset,
         " failed: ", one_line(error.what()));
  }
  *model.proto = std::move(converted);
  model.converted_from_opset = model.opset;
  model.opset = default_domain_opset(*model.proto);
  KILN_CHECK(model.opset == kMinOnnxOpset, "the version converter produced opset ", model.opset);
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
  if (model.opset == 0) {
    // A model of ops of other domains only (ai.onnx.ml, ai.onnx.preview.training): its nodes
    // are checked by Kiln's structural check, converted as of the newest default opset.
    bool other_domain = false;
    for (const auto& entry : proto.opset_import()) other_domain = other_domain || kOtherOnnxDomains.count(entry.domain()) > 0;
    if (!other_domain)
      fail("'", path, "' imports no opset of the default ONNX domain (\"\" or \"ai.onnx\") nor of ai.onnx.ml or "
           "ai.onnx.preview.training");
    model.opset = kMaxOnnxOpset;
    check_structure(model);
    model.other_domains_only = true;
    return model;
  }
  if (model.opset > kMaxOnnxOpset)
    fail("'", path, "' uses ONNX opset ", model.opset, "; Kiln imports opsets 1 to ", kMaxOnnxOpset, " (", kMinOnnxOpset,
         " and newer directly, older ones through ONNX's version converter)");
  if (model.opset < kMinOnnxOpset) convert_to_min_opset(model);
  if (model.opset <= kMaxOnnxOpsetWithShapeInference) {
    run_checker(model);
    if (!model.converted_from_opset) check_structure(model);
  } else {
    check_structure(model);
  }
  return model;
}

void infer_onnx_shapes(OnnxModel& model) {
  if (model.opset > kMaxOnnxOpsetWithShapeInference || model.other_domains_only) return;
  auto infer = [&] {
    onnx::ShapeInferenceOptions options(/*check_type=*/true, /*error_mode=*/1, /*enable_data_propagation=*/true);
    onnx::shape_inference::InferShapes(*model.proto, onnx::OpSchemaRegistry::Instance(), options);
  };
  try {
    infer();
  } catch (const std::exception& error) {
    // A size that the library (Debian's ONNX 1.12) infers differently from a type the model
    // file declares: newer ONNX releases changed some rules (MaxPool's ceil_mode output drops
    // a last window that would start past the input since 1.15), and the file, written by a
    // newer exporter, is usually right. Inference runs again without the declared shapes, which
    // are then put back: Kiln's converters decide, and a declared type that disagrees with
    // what they compute is still a user error naming both (check_types).
    std::string message = error.what();
    if (message.find("Inferred shape and existing shape differ") == std::string::npos)
      fail("'", model.path, "': ONNX shape inference failed: ", one_line(message));
    onnx::GraphProto& graph = *model.proto->mutable_graph();
    std::map<std::string, onnx::TypeProto> declared;
    auto forget_shape = [&](onnx::ValueInfoProto& info) {
      if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
      declared.emplace(info.name(), info.type());
      info.mutable_type()->mutable_tensor_type()->clear_shape();
    };
    for (auto& output : *graph.mutable_output()) forget_shape(output);
    for (auto& info : *graph.mutable_value_info()) forget_shape(info);
    try {
      infer();
    } catch (const std::exception& again) {
      fail("'", model.path, "': ONNX shape inference failed: ", one_line(again.what()));
    }
    for (auto& output : *graph.mutable_output())
      if (auto type = declared.find(output.name()); type != declared.end()) *output.mutable_type() = type->second;
    for (auto& info : *graph.mutable_value_info())
      if (auto type = declared.find(info.name()); type != declared.end()) *info.mutable_type() = type->second;
  }
  model.shapes_inferred = true;
}

}  // namespace kiln::frontends
