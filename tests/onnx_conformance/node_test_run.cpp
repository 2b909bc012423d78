// Running one node test case (see node_test_run.h).
#include "tests/onnx_conformance/node_test_run.h"

#include <exception>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "frontends/onnx/onnx_importer.h"
#include "frontends/onnx/onnx_tensor.h"
#include "ir/interpreter.h"
#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "tests/onnx_conformance/import_time_inputs.h"
#include "tests/onnx_conformance/onnx_tolerance.h"

namespace kiln::conformance {

namespace {

const char* const kStatusNames[] = {"passed", "failed", "unsupported", "not_applicable"};

// <prefix>_0.pb, <prefix>_1.pb, ... of test_data_set_0.
std::vector<fs::path> data_set_files(const NodeTestCase& test_case, const std::string& prefix) {
  fs::path folder = test_case.folder / "test_data_set_0";
  std::vector<fs::path> files;
  for (int k = 0; fs::exists(folder / (prefix + "_" + std::to_string(k) + ".pb")); ++k)
    files.push_back(folder / (prefix + "_" + std::to_string(k) + ".pb"));
  return files;
}

template <typename Message>
Message parse_file(const fs::path& path) {
  Message message;
  if (!message.ParseFromString(read_file(path.string()))) fail("'", path.string(), "' cannot be parsed");
  return message;
}

// A data set tensor of a graph input or output declared with `element_type`. ONNX stores
// bfloat16 data as UINT16 (numpy has no bfloat16): those bits are read as BFLOAT16.
Tensor read_data_tensor(const fs::path& path, int32_t element_type) {
  auto proto = std::make_shared<onnx::TensorProto>(parse_file<onnx::TensorProto>(path));
  if (element_type == onnx::TensorProto::BFLOAT16 && proto->data_type() == onnx::TensorProto::UINT16)
    proto->set_data_type(onnx::TensorProto::BFLOAT16);
  return frontends::OnnxTensorReader(proto, path.string()).read(*proto, "the tensor '" + proto->name() + "'");
}

// The case's model and run-time inputs, with its import-time inputs made initializers (the
// specialized model is written into `scratch_folder`).
struct PreparedCase {
  fs::path model_path;
  std::vector<Tensor> inputs;  // for the remaining graph inputs, in order
  std::vector<Tensor> expected;
  std::vector<std::string> import_time_inputs;
};

PreparedCase prepare(const NodeTestCase& test_case, const fs::path& scratch_folder) {
  PreparedCase prepared{test_case.folder / "model.onnx", {}, {}, {}};
  auto model = parse_file<onnx::ModelProto>(prepared.model_path);
  std::set<std::string> initializers;
  for (const auto& initializer : model.graph().initializer()) initializers.insert(initializer.name());
  std::vector<std::string> input_names;
  std::vector<int32_t> input_types;
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) {
      input_names.push_back(input.name());
      input_types.push_back(input.type().tensor_type().elem_type());
    }
  std::vector<fs::path> files = data_set_files(test_case, "input");
  if (files.size() != input_names.size())
    fail("the model has ", input_names.size(), " inputs, the data set ", files.size());

  std::set<std::string> needed = import_time_inputs(model);
  std::vector<onnx::TensorProto> constants;
  for (size_t k = 0; k < files.size(); ++k) {
    if (!needed.count(input_names[k])) {
      prepared.inputs.push_back(read_data_tensor(files[k], input_types[k]));
      continue;
    }
    constants.push_back(parse_file<onnx::TensorProto>(files[k]));
    constants.back().set_name(input_names[k]);
    prepared.import_time_inputs.push_back(input_names[k]);
  }
  std::vector<fs::path> outputs = data_set_files(test_case, "output");
  if (int(outputs.size()) != model.graph().output_size())
    fail("the model has ", model.graph().output_size(), " outputs, the data set ", outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k)
    prepared.expected.push_back(read_data_tensor(outputs[k], model.graph().output(int(k)).type().tensor_type().elem_type()));
  if (!constants.empty()) {
    fs::create_directories(scratch_folder);
    prepared.model_path = scratch_folder / (test_case.name + ".onnx");
    write_file_atomically(prepared.model_path.string(),
                          with_inputs_as_initializers(std::move(model), constants).SerializeAsString());
  }
  return prepared;
}

// Empty when every output matches; else the first mismatch.
std::string compare_outputs(const std::vector<Tensor>& expected, const std::vector<Tensor>& actual) {
  if (expected.size() != actual.size())
    return std::to_string(actual.size()) + " outputs, expected " + std::to_string(expected.size());
  for (size_t k = 0; k < expected.size(); ++k)
    if (std::string problem = difference_at_onnx_tolerance(expected[k], actual[k]); !problem.empty())
      return "output " + std::to_string(k) + ": " + problem;
  return "";
}

// Runs `stage`; its problem, or the message of what it threw.
std::string problem_of(const std::function<std::string()>& stage) {
  try {
    return stage();
  } catch (const std::exception& error) {
    return error.what();
  }
}

}  // namespace

std::string status_name(CaseStatus status) { return kStatusNames[int(status)]; }

std::optional<CaseStatus> status_from_name(const std::string& name) {
  for (int k = 0; k < 4; ++k)
    if (name == kStatusNames[k]) return CaseStatus(k);
  return std::nullopt;
}

CaseOutcome run_node_test_case(const NodeTestCase& test_case, const compiler::CompileOptions& options,
                               const fs::path& scratch_folder) {
  if (!opset_is_importable(test_case))
    return {CaseStatus::not_applicable, "opset " + std::to_string(test_case.opset), {}};
  if (std::vector<std::string> missing = unsupported_parts(test_case); !missing.empty()) {
    std::string ops;
    for (const std::string& op : missing) ops += (ops.empty() ? "" : " ") + op;
    return {CaseStatus::unsupported, ops, {}};
  }

  PreparedCase prepared;
  std::optional<ir::Graph> graph;
  std::map<std::string, Tensor> feeds;
  if (std::string problem = problem_of([&] {
        prepared = prepare(test_case, scratch_folder);
        graph.emplace(frontends::import_onnx(prepared.model_path.string()));
        std::vector<ir::Node*> placeholders = graph->placeholders();
        if (placeholders.size() != prepared.inputs.size())
          return "the graph has " + std::to_string(placeholders.size()) + " placeholders for " +
                 std::to_string(prepared.inputs.size()) + " inputs";
        for (size_t k = 0; k < placeholders.size(); ++k) feeds[placeholders[k]->target()] = prepared.inputs[k];
        return std::string();
      });
      !problem.empty())
    return {CaseStatus::failed, "import: " + problem, prepared.import_time_inputs};

  std::string interpreter = problem_of([&] { return compare_outputs(prepared.expected, ir::interpret(*graph, feeds)); });
  std::string cpu = problem_of([&] {
    compiler::CompiledModel model = compiler::compile(*graph, options);
    return compare_outputs(prepared.expected, model.run(feeds, 1));
  });
  if (interpreter.empty() && cpu.empty()) return {CaseStatus::passed, "", prepared.import_time_inputs};
  std::string detail;
  if (!interpreter.empty()) detail = "interpreter: " + interpreter;
  if (!cpu.empty()) detail += (detail.empty() ? "" : "; ") + std::string("cpu: ") + cpu;
  return {CaseStatus::failed, detail, prepared.import_time_inputs};
}

}  // namespace kiln::conformance
