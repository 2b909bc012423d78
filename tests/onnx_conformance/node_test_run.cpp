// Running one node test case as a user runs it (see node_test_run.h).
#include "tests/onnx_conformance/node_test_run.h"

#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include <onnx/onnx-data_pb.h>

#include "frontends/onnx/onnx_tensor.h"
#include "ir/interpreter.h"
#include "runtime/atomic_file.h"
#include "kiln/error.h"
#include "tests/onnx_conformance/case_model.h"
#include "tests/onnx_conformance/onnx_tolerance.h"

namespace kiln::conformance {

namespace {

const char* const kStatusNames[] = {"passed", "failed"};

struct FailureClassInfo {
  FailureClass failure;
  const char* name;
  const char* summary;
};

const FailureClassInfo kFailureClasses[] = {
    {FailureClass::none, "none", "passed"},
    {FailureClass::opset, "opset", "an opset the importer does not take"},
    {FailureClass::unsupported_op, "unsupported_op", "an op the importer does not convert"},
    {FailureClass::unsupported_type, "unsupported_type", "an element type Kiln has no dtype for (strings, 8-bit floats, 4-bit integers), or a map"},
    {FailureClass::shape_input, "shape_input", "a shape-deciding input that cannot be taken at run time"},
    {FailureClass::import, "import", "another import error (an attribute or edge case a converter refuses)"},
    {FailureClass::interpreter, "interpreter", "the interpreter fails or computes a wrong result"},
    {FailureClass::cpu, "cpu", "the CPU backend fails or is wrong where the interpreter is right"},
    {FailureClass::output_names, "output_names", "an output is not found under its ONNX name"},
};

const FailureClassInfo& info_of(FailureClass failure) {
  for (const FailureClassInfo& info : kFailureClasses)
    if (info.failure == failure) return info;
  throw InternalError("unknown failure class");
}

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
Tensor read_data_tensor(const onnx::TensorProto& message, const fs::path& path, int32_t element_type) {
  auto proto = std::make_shared<onnx::TensorProto>(message);
  if (element_type == onnx::TensorProto::BFLOAT16 && proto->data_type() == onnx::TensorProto::UINT16)
    proto->set_data_type(onnx::TensorProto::BFLOAT16);
  return frontends::OnnxTensorReader(proto, path.string()).read(*proto, "the tensor '" + proto->name() + "'");
}

// The element type a (possibly sequence or optional) type holds.
int32_t element_type_of(const onnx::TypeProto& type) {
  if (type.has_sequence_type()) return element_type_of(type.sequence_type().elem_type());
  if (type.has_optional_type()) return element_type_of(type.optional_type().elem_type());
  return type.has_tensor_type() ? type.tensor_type().elem_type() : 0;
}

// A data set value of `type` as the named tensors a user feeds or gets (onnx_importer.h): a
// tensor under `name`; a sequence's elements under name.0, name.1, ...; an optional's value as
// such, or nothing when empty.
void read_data_value(const fs::path& path, const std::string& name, const onnx::TypeProto& type,
                     std::vector<std::pair<std::string, Tensor>>& out) {
  int32_t element_type = element_type_of(type);
  auto add_sequence = [&](const onnx::SequenceProto& sequence) {
    for (int k = 0; k < sequence.tensor_values_size(); ++k)
      out.emplace_back(name + "." + std::to_string(k), read_data_tensor(sequence.tensor_values(k), path, element_type));
  };
  if (type.has_sequence_type()) return add_sequence(parse_file<onnx::SequenceProto>(path));
  if (type.has_optional_type()) {
    auto optional = parse_file<onnx::OptionalProto>(path);
    if (optional.has_tensor_value()) out.emplace_back(name, read_data_tensor(optional.tensor_value(), path, element_type));
    else if (optional.has_sequence_value()) add_sequence(optional.sequence_value());
    return;
  }
  out.emplace_back(name, read_data_tensor(parse_file<onnx::TensorProto>(path), path, element_type));
}

// The data set: every graph input that is not an initializer, by name, and the expected
// value of every graph output, by name, in the model's order (sequences and optionals as
// the named tensors a user feeds and gets: read_data_value).
struct DataSet {
  std::vector<std::pair<std::string, Tensor>> inputs;
  std::vector<std::pair<std::string, Tensor>> expected;
  // The model's sequence and optional outputs (ONNX names) with the number of tensors expected
  // for each: the run must give exactly these.
  std::vector<std::pair<std::string, size_t>> collection_outputs;
};

DataSet read_data_set(const NodeTestCase& test_case) {
  auto model = parse_file<onnx::ModelProto>(test_case.folder / "model.onnx");
  std::set<std::string> initializers;
  for (const auto& initializer : model.graph().initializer()) initializers.insert(initializer.name());
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) inputs.push_back(&input);
  std::vector<fs::path> input_files = data_set_files(test_case, "input");
  if (input_files.size() != inputs.size())
    fail("the model has ", inputs.size(), " inputs, the data set ", input_files.size());
  std::vector<fs::path> output_files = data_set_files(test_case, "output");
  if (int(output_files.size()) != model.graph().output_size())
    fail("the model has ", model.graph().output_size(), " outputs, the data set ", output_files.size());
  DataSet data;
  for (size_t k = 0; k < inputs.size(); ++k) read_data_value(input_files[k], inputs[k]->name(), inputs[k]->type(), data.inputs);
  for (size_t k = 0; k < output_files.size(); ++k) {
    const onnx::ValueInfoProto& output = model.graph().output(int(k));
    size_t before = data.expected.size();
    read_data_value(output_files[k], output.name(), output.type(), data.expected);
    if (!output.type().has_tensor_type()) data.collection_outputs.emplace_back(output.name(), data.expected.size() - before);
  }
  return data;
}

// Empty when every expected output is among `names` and matches; else the first problem.
// `missing_name` is set when an output was not found by its name.
std::string compare_outputs(const DataSet& data, const std::vector<std::string>& names, const std::vector<Tensor>& actual,
                            bool& missing_name) {
  for (const auto& [onnx_name, expected] : data.expected) {
    std::string name = kiln_value_name(onnx_name);
    size_t index = 0;
    while (index < names.size() && names[index] != name) ++index;
    if (index == names.size()) {
      missing_name = true;
      std::string listed;
      for (const std::string& each : names) listed += (listed.empty() ? "" : ", ") + each;
      return "no output named '" + name + "' (the outputs are " + listed + ")";
    }
    if (std::string problem = difference_at_onnx_tolerance(expected, actual.at(index)); !problem.empty())
      return "output '" + onnx_name + "': " + problem;
  }
  // A sequence gives no element past the expected ones; an empty optional gives nothing.
  auto has = [&](const std::string& onnx_name) {
    return std::find(names.begin(), names.end(), kiln_value_name(onnx_name)) != names.end();
  };
  for (const auto& [onnx_name, count] : data.collection_outputs) {
    if (has(onnx_name + "." + std::to_string(count)))
      return "output '" + onnx_name + "' has more than the " + std::to_string(count) + " elements expected";
    if (count == 0 && has(onnx_name)) return "output '" + onnx_name + "' is given, but an empty optional is expected";
  }
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The class of an import failure, from the importer's message.
FailureClass import_failure_class(const std::string& message) {
  if (contains(message, "uses ONNX opset") || contains(message, "version conversion")) return FailureClass::opset;
  if (contains(message, "that Kiln does not support, in")) return FailureClass::unsupported_op;
  if (contains(message, "element type") || contains(message, "is not a tensor")) return FailureClass::unsupported_type;
  if (contains(message, "must be known when the model is imported") || contains(message, "computed at run time"))
    return FailureClass::shape_input;
  return FailureClass::import;
}

}  // namespace

std::string status_name(CaseStatus status) { return kStatusNames[int(status)]; }

std::optional<CaseStatus> status_from_name(const std::string& name) {
  for (int k = 0; k < 2; ++k)
    if (name == kStatusNames[k]) return CaseStatus(k);
  return std::nullopt;
}

std::string failure_class_name(FailureClass failure) { return info_of(failure).name; }

std::optional<FailureClass> failure_class_from_name(const std::string& name) {
  for (const FailureClassInfo& info : kFailureClasses)
    if (name == info.name) return info.failure;
  return std::nullopt;
}

std::string failure_class_summary(FailureClass failure) { return info_of(failure).summary; }

CaseOutcome run_node_test_case(const NodeTestCase& test_case, const CompileOptions& options,
                               const fs::path& scratch_folder) {
  CaseOutcome outcome;
  auto failed = [&](FailureClass failure, std::string detail) {
    outcome.status = CaseStatus::failed;
    outcome.failure = failure;
    outcome.detail = std::move(detail);
    return outcome;
  };
  // Values the runner cannot even read or feed (maps, element types Kiln has no dtype for): a
  // user could not pass them either.
  if (!test_case.unsupported_types.empty()) {
    std::string types;
    for (const std::string& type : test_case.unsupported_types) types += (types.empty() ? "" : " ") + type;
    return failed(FailureClass::unsupported_type, types);
  }

  DataSet data;
  std::optional<CaseModel> model;
  std::string import_problem = problem_of([&] {
    data = read_data_set(test_case);
    model.emplace(import_case_model(test_case, data.inputs, scratch_folder));
    return std::string();
  });
  if (!import_problem.empty()) {
    FailureClass failure = import_failure_class(import_problem);
    if (failure == FailureClass::unsupported_op) {
      std::vector<std::string> missing = unsupported_parts(test_case);
      std::string ops;
      for (const std::string& op : missing) ops += (ops.empty() ? "" : " ") + op;
      if (!ops.empty()) return failed(failure, ops);
    }
    return failed(failure, "import: " + import_problem);
  }
  outcome.specialized_inputs = model->specialized_inputs;
  std::vector<std::string> names = model->graph.output_names();

  bool missing_name = false;
  std::string interpreter = problem_of([&] {
    return compare_outputs(data, names, ir::interpret(model->graph, model->run_inputs), missing_name);
  });
  std::string cpu = problem_of([&] {
    compiler::CompiledModel compiled = compiler::compile(model->graph, options);
    return compare_outputs(data, names, compiled.run(model->run_inputs, 1), missing_name);
  });
  outcome.interpreter_passed = interpreter.empty();
  outcome.cpu_passed = cpu.empty();
  if (outcome.interpreter_passed && outcome.cpu_passed) {
    outcome.status = CaseStatus::passed;
    return outcome;
  }
  std::string detail;
  if (!interpreter.empty()) detail = "interpreter: " + interpreter;
  if (!cpu.empty()) detail += (detail.empty() ? "" : "; ") + std::string("cpu: ") + cpu;
  FailureClass failure = missing_name ? FailureClass::output_names
                         : !interpreter.empty() ? FailureClass::interpreter
                                                : FailureClass::cpu;
  return failed(failure, detail);
}

}  // namespace kiln::conformance
