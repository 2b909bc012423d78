// Running one OpInfo case (see pt2_case_run.h).
#include "tests/pt2_conformance/pt2_case_run.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <sstream>

#include "frontends/pt2/pt2_importer.h"
#include "ir/interpreter.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "tests/pt2_conformance/graph_merge.h"
#include "tests/pt2_conformance/random_output_checks.h"

namespace kiln::pt2_conformance {

namespace {

const char* const kStatusNames[] = {"passed", "failed", "unsupported", "diverging"};

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The largest |a - b| over the elements where both are finite: how far eager's float32 output is
// from the float64 result. 0 for integer tensors and where the shapes differ.
double largest_finite_distance(const Tensor& a, const Tensor& b) {
  if (!is_floating(a.dtype()) || a.sizes() != b.sizes()) return 0;
  Tensor x = a.contiguous(), y = b.contiguous();
  double largest = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double u = x.flat_double(i), v = y.flat_double(i);
    if (std::isfinite(u) && std::isfinite(v)) largest = std::max(largest, std::fabs(u - v));
  }
  return largest;
}

// Compares every output (values, or a property where they are random: random_output_checks.h);
// empty when all match.
std::string compare_outputs(const OpInfoCase& test_case, const std::vector<Tensor>& outputs,
                            const std::map<std::string, Tensor>& inputs) {
  size_t count = 0;
  while (fs::exists(test_case.folder / ("expected_" + std::to_string(count) + ".npy"))) ++count;
  if (outputs.size() != count) return "it returns " + std::to_string(outputs.size()) + " outputs, PyTorch " + std::to_string(count);
  for (size_t i = 0; i < count; ++i) {
    Tensor expected = read_npy((test_case.folder / ("expected_" + std::to_string(i) + ".npy")).string());
    std::string problem = check_output(output_check(test_case.op), expected, outputs[i], inputs, test_case.atol, test_case.rtol);
    fs::path exact_path = test_case.folder / ("exact_" + std::to_string(i) + ".npy");
    if (!problem.empty() && fs::exists(exact_path)) {
      Tensor exact = read_npy(exact_path.string());
      // Where eager meets float64, the output may be as far from it as eager is, and the tolerances
      // beyond; where eager misses it, no farther from it than eager is.
      const bool eager_misses = !difference(exact, expected, test_case.atol, test_case.rtol).empty();
      const double eager_distance = largest_finite_distance(exact, expected);
      const double atol = eager_misses ? std::max(test_case.atol, eager_distance) : test_case.atol + eager_distance;
      if (difference(exact, outputs[i], atol, test_case.rtol).empty()) problem.clear();
    }
    if (!problem.empty()) return "output " + std::to_string(i) + ": " + problem;
  }
  return "";
}

}  // namespace

std::string status_name(CaseStatus status) { return kStatusNames[int(status)]; }

CaseStatus status_from_name(const std::string& name) {
  for (int i = 0; i < int(std::size(kStatusNames)); ++i)
    if (name == kStatusNames[i]) return CaseStatus(i);
  fail("unknown case status '", name, "'");
}

std::string difference(const Tensor& expected, const Tensor& actual, double atol, double rtol) {
  std::ostringstream out;
  // npy has no bfloat16: the generator writes those outputs as float32.
  DType expected_dtype = expected.dtype() == DType::f32 && actual.dtype() == DType::bf16 ? DType::bf16 : expected.dtype();
  if (expected_dtype != actual.dtype()) {
    out << "dtype " << dtype_name(actual.dtype()) << ", expected " << dtype_name(expected.dtype());
    return out.str();
  }
  if (expected.sizes() != actual.sizes()) {
    out << "shape " << sizes_to_string(actual.sizes()) << ", expected " << sizes_to_string(expected.sizes());
    return out.str();
  }
  bool exact = !is_floating(actual.dtype());
  Tensor a = actual.contiguous(), b = expected.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    if (exact) {
      if (a.flat_int(i) != b.flat_int(i)) {
        out << "element " << i << " is " << a.flat_int(i) << ", expected " << b.flat_int(i);
        return out.str();
      }
      continue;
    }
    double x = a.flat_double(i), y = b.flat_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (std::isfinite(x) && std::isfinite(y) && std::fabs(x - y) <= atol + rtol * std::fabs(y)) continue;
    out.precision(9);
    out << "element " << i << " is " << x << ", expected " << y << " (atol " << atol << ", rtol " << rtol << ")";
    return out.str();
  }
  return "";
}

namespace {

// A case read and checked up to the CPU backend.
struct PreparedCase {
  ir::Graph graph;
  std::map<std::string, Tensor> inputs;
};

// Classifies, imports and runs the interpreter; an outcome when the case is settled already.
std::optional<CaseOutcome> prepare(const OpInfoCase& test_case, PreparedCase& prepared) {
  std::string path = test_case.program.string();
  std::map<std::string, int> targets;
  try {
    targets = frontends::pt2_program_targets(path);
  } catch (const std::exception& error) {
    return CaseOutcome{CaseStatus::failed, "reading: " + first_line(error.what())};
  }
  static const std::vector<std::string> supported = frontends::supported_aten_targets();
  std::string missing;
  for (const auto& [target, count] : targets)
    if (!std::binary_search(supported.begin(), supported.end(), target)) missing += (missing.empty() ? "" : " ") + target;
  if (!missing.empty()) return CaseOutcome{CaseStatus::unsupported, missing};
  try {
    prepared.graph = frontends::import_pt2(path);
    prepared.inputs = frontends::read_pt2_sample_inputs(path);
  } catch (const std::exception& error) {
    return CaseOutcome{CaseStatus::failed, "import: " + first_line(error.what())};
  }
  try {
    std::map<std::string, Tensor> copies;  // the interpreter may mutate its inputs
    for (const auto& [name, tensor] : prepared.inputs) copies[name] = tensor.clone();
    std::string problem = compare_outputs(test_case, ir::Interpreter().run(prepared.graph, copies), prepared.inputs);
    if (!problem.empty()) return CaseOutcome{CaseStatus::failed, "interpreter: " + problem};
  } catch (const std::exception& error) {
    return CaseOutcome{CaseStatus::failed, "interpreter: " + first_line(error.what())};
  }
  return std::nullopt;
}

CaseOutcome run_alone(const OpInfoCase& test_case, const PreparedCase& prepared, const CompileOptions& options) {
  try {
    compiler::CompiledModel model = compiler::compile(prepared.graph, options);
    std::string problem = compare_outputs(test_case, model.run(prepared.inputs, 1), prepared.inputs);
    if (!problem.empty()) return {CaseStatus::failed, "cpu: " + problem};
  } catch (const std::exception& error) {
    return {CaseStatus::failed, "cpu: " + first_line(error.what())};
  }
  return {CaseStatus::passed, ""};
}

// A failure where PyTorch's own run of the program misses eager too becomes `diverging`.
CaseOutcome excused(const OpInfoCase& test_case, CaseOutcome outcome) {
  if (outcome.status != CaseStatus::failed || test_case.pytorch_diverges.empty()) return outcome;
  return {CaseStatus::diverging, outcome.detail + "; PyTorch's own run of the program: " + test_case.pytorch_diverges};
}

}  // namespace

CaseOutcome run_opinfo_case(const OpInfoCase& test_case, const CompileOptions& options) {
  PreparedCase prepared;
  if (std::optional<CaseOutcome> settled = prepare(test_case, prepared)) return excused(test_case, *settled);
  return excused(test_case, run_alone(test_case, prepared, options));
}

std::vector<CaseOutcome> run_opinfo_cases(const std::vector<const OpInfoCase*>& cases, const CompileOptions& options) {
  std::vector<CaseOutcome> outcomes(cases.size());
  std::vector<PreparedCase> prepared(cases.size());
  std::vector<size_t> pending;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (std::optional<CaseOutcome> settled = prepare(*cases[i], prepared[i])) outcomes[i] = excused(*cases[i], *settled);
    else pending.push_back(i);
  }
  // One merged graph of the mergeable cases; the others run alone.
  ir::Graph merged;
  std::map<std::string, Tensor> merged_inputs;
  std::vector<std::pair<size_t, MergedPart>> parts;
  std::vector<ir::Argument> merged_outputs;
  for (size_t i : pending) {
    if (!mergeable(prepared[i].graph)) {
      outcomes[i] = excused(*cases[i], run_alone(*cases[i], prepared[i], options));
      continue;
    }
    MergedPart part{"c" + std::to_string(i) + "_", merged_outputs.size(), 0};
    for (ir::Node* output : copy_into(merged, prepared[i].graph, part.prefix)) merged_outputs.emplace_back(output);
    part.output_count = merged_outputs.size() - part.first_output;
    for (const auto& [name, tensor] : prepared[i].inputs) merged_inputs[part.prefix + name] = tensor;
    parts.emplace_back(i, part);
  }
  if (parts.empty()) return outcomes;
  std::vector<Tensor> results;
  try {
    merged.create_output(merged_outputs);
    compiler::CompiledModel model = compiler::compile(merged, options);
    results = model.run(merged_inputs, 1);
  } catch (const std::exception&) {
    results.clear();  // attribute the failure case by case
  }
  for (const auto& [i, part] : parts) {
    if (results.size() == merged_outputs.size()) {
      std::vector<Tensor> mine(results.begin() + long(part.first_output), results.begin() + long(part.first_output + part.output_count));
      if (compare_outputs(*cases[i], mine, prepared[i].inputs).empty()) {
        outcomes[i] = {CaseStatus::passed, ""};
        continue;
      }
    }
    outcomes[i] = excused(*cases[i], run_alone(*cases[i], prepared[i], options));
  }
  return outcomes;
}

}  // namespace kiln::pt2_conformance
