// Reading a node test case's model and classifying it (see node_test_case.h).
#include "tests/onnx_conformance/node_test_case.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_model_file.h"
#include "frontends/onnx/onnx_tensor.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "tests/frontends/onnx_generated_data.h"

namespace kiln::conformance {

std::optional<fs::path> node_tests_folder() {
  std::optional<fs::path> data = frontends::testing::generated_onnx_test_data();
  std::error_code status;
  if (!data || !fs::is_directory(*data / "node", status)) return std::nullopt;
  return *data / "node";
}

std::string missing_node_tests_message() {
  return "ONNX's backend node tests are missing: " + frontends::testing::missing_generated_onnx_test_data();
}

std::vector<std::string> node_test_case_names(const fs::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder))
    if (fs::exists(entry.path() / "model.onnx")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

void collect_op_types(const onnx::GraphProto& graph, std::set<std::string>& op_types, std::vector<std::string>& in_order) {
  for (const auto& node : graph.node()) {
    bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    std::string op = default_domain ? node.op_type() : node.domain() + "." + node.op_type();
    if (op_types.insert(op).second) in_order.push_back(op);
    for (const auto& attribute : node.attribute()) {
      if (attribute.has_g()) collect_op_types(attribute.g(), op_types, in_order);
      for (const auto& subgraph : attribute.graphs()) collect_op_types(subgraph, op_types, in_order);
    }
  }
}

// "ReduceSum" and "reduce_sum" both as "reducesum".
std::string squashed(const std::string& name) {
  std::string out;
  for (char c : name)
    if (c != '_') out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The longest op name (of ONNX's schemas and the case's own ops) that starts the case's name.
std::string tested_op_of(const std::string& case_name, const std::vector<std::string>& ops_in_order) {
  static const std::vector<std::string> schema_ops = [] {
    std::set<std::string> names;
    for (const auto& schema : onnx::OpSchemaRegistry::get_all_schemas())
      if (schema.domain().empty()) names.insert(schema.Name());
    return std::vector<std::string>(names.begin(), names.end());
  }();
  std::string key = squashed(case_name.rfind("test_", 0) == 0 ? case_name.substr(5) : case_name);
  std::string best;
  auto consider = [&](const std::string& op) {
    std::string op_key = squashed(op);
    if (op_key.size() > squashed(best).size() && key.rfind(op_key, 0) == 0) best = op;
  };
  for (const std::string& op : schema_ops) consider(op);
  for (const std::string& op : ops_in_order) consider(op);
  if (!best.empty()) return best;
  return ops_in_order.empty() ? "(no nodes)" : ops_in_order.front();
}

}  // namespace

NodeTestCase read_node_test_case(const fs::path& folder) {
  NodeTestCase test_case;
  test_case.name = folder.filename().string();
  test_case.folder = folder;
  onnx::ModelProto model;
  if (!model.ParseFromString(read_file((folder / "model.onnx").string())))
    fail("'", (folder / "model.onnx").string(), "' is not a readable ONNX model");
  for (const auto& entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx") test_case.opset = entry.version();
  std::vector<std::string> in_order;
  collect_op_types(model.graph(), test_case.op_types, in_order);
  test_case.tested_op = tested_op_of(test_case.name, in_order);
  auto check_element_type = [&](int32_t element_type) {
    if (frontends::dtype_from_onnx(element_type)) return;
    std::string name = frontends::onnx_type_name(element_type);  // "element type 17" past ONNX 1.12's names
    std::replace(name.begin(), name.end(), ' ', '_');
    test_case.unsupported_types.insert("type:" + name);
  };
  // Tensors, and sequences and optionals of them (fed and compared as named tensors, see
  // node_test_run.h); an element type 0 (an optional's or sequence's left open) is any.
  std::function<void(const onnx::TypeProto&)> check_type = [&](const onnx::TypeProto& type) {
    if (type.has_tensor_type()) {
      if (type.tensor_type().elem_type() != 0) check_element_type(type.tensor_type().elem_type());
    } else if (type.has_sequence_type()) {
      check_type(type.sequence_type().elem_type());
    } else if (type.has_optional_type()) {
      check_type(type.optional_type().elem_type());
    } else if (type.has_map_type()) {
      test_case.unsupported_types.insert("type:map");
    } else {
      test_case.unsupported_types.insert("type:unknown");
    }
  };
  for (const auto* values : {&model.graph().input(), &model.graph().output()})
    for (const onnx::ValueInfoProto& value : *values) check_type(value.type());
  for (const auto& node : model.graph().node())
    if (node.op_type() == "Cast")
      for (const auto& attribute : node.attribute())
        if (attribute.name() == "to") check_element_type(int32_t(attribute.i()));
  return test_case;
}

bool opset_is_importable(const NodeTestCase& test_case) {
  return test_case.opset >= frontends::kMinOnnxOpset && test_case.opset <= frontends::kMaxOnnxOpset;
}

std::vector<std::string> unsupported_parts(const NodeTestCase& test_case) {
  static const std::vector<std::string> supported = frontends::supported_onnx_ops();
  std::vector<std::string> missing;
  for (const std::string& op : test_case.op_types)
    if (!std::binary_search(supported.begin(), supported.end(), op)) missing.push_back(op);
  missing.insert(missing.end(), test_case.unsupported_types.begin(), test_case.unsupported_types.end());
  return missing;
}

}  // namespace kiln::conformance
