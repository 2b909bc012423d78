// The golden-file driver for passes (after MLIR's lit tests). Each case is a pair of files
// under tests/passes/golden/<group>/:
//   NAME.kiln           the input graph; its first line says what to run:
//                         # RUN: functionalize, dce
//                       and a later comment line may set pass options:
//                         # OPTIONS: freeze      (constant folding may fold parameters)
//   NAME.safetensors    the values of its get_attr targets, when it has any (written by
//                       scripts/make_pass_golden_weights.py)
//   NAME.expected.kiln  the graph printed after those passes
// or, for a case that must fail, NAME.expected.error holding a substring of the message.
// Every case also checks that the passes preserve the interpreter's results on random inputs
// (symbolic dims bound to small sizes), and that the verifier accepts the result.
// Set KILN_UPDATE_GOLDENS=1 to rewrite the expected files when a change is intended, then
// review the diff.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/support/golden.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "kiln/error.h"
#include "tests/support/test_paths.h"

namespace kiln::passes {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenRoot = fs::path(KILN_SOURCE_DIR) / "tests" / "passes" / "golden";

std::string read_file(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<std::string_view> run_line_passes(const std::string& text, std::string& storage) {
  std::string first = text.substr(0, text.find('\n'));
  const std::string marker = "# RUN:";
  size_t at = first.find(marker);
  if (at == std::string::npos) throw Error("the first line must be '# RUN: pass, pass, ...'");
  storage = first.substr(at + marker.size());
  std::vector<std::string_view> passes;
  std::string_view rest = storage;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view part = rest.substr(0, comma);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) passes.push_back(part);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return passes;
}

// The pass options a "# OPTIONS: freeze" comment line asks for.
PassOptions pass_options(const std::string& text) {
  PassOptions options;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with("#")) continue;
    size_t at = line.find("# OPTIONS:");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at + std::string("# OPTIONS:").size()));
    for (std::string word; words >> word;) {
      if (word == "freeze") options.freeze = true;
      else throw Error("unknown option '" + word + "' (known: freeze)");
    }
  }
  return options;
}

// Random inputs for every placeholder, symbols bound to 3 (and to 2 for a second symbol, ...).
std::map<std::string, Tensor> random_inputs(const ir::Graph& graph, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::map<std::string, int64_t> bindings;
  std::map<std::string, Tensor> inputs;
  for (ir::Node* node : graph.placeholders()) {
    const ir::TensorMeta& meta = node->value();
    for (const ir::SymInt& dim : meta.shape)
      for (const std::string& symbol : dim.free_symbols())
        if (!bindings.count(symbol)) bindings[symbol] = 3 - int64_t(bindings.size() % 2);
    Tensor tensor = Tensor::empty(meta.evaluate_shape(bindings), meta.dtype);
    std::normal_distribution<double> normal;
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      void* address = static_cast<char*>(tensor.data_ptr()) + i * int64_t(tensor.element_size());
      if (is_floating(meta.dtype)) store_double(meta.dtype, address, normal(generator));
      else store_int(meta.dtype, address, int64_t(generator() % (meta.dtype == DType::boolean ? 2 : 5)));
    }
    inputs[node->target()] = tensor;
  }
  return inputs;
}

// Fresh copies, so that a graph that mutates its inputs does not disturb the other run.
std::map<std::string, Tensor> copies(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> result;
  for (const auto& [name, tensor] : inputs) result[name] = tensor.clone();
  return result;
}

void expect_same_values(const std::vector<Tensor>& before, const std::vector<Tensor>& after, const std::string& what) {
  ASSERT_EQ(before.size(), after.size()) << what;
  for (size_t i = 0; i < before.size(); ++i) {
    ASSERT_EQ(before[i].sizes(), after[i].sizes()) << what << " output " << i;
    ASSERT_EQ(before[i].dtype(), after[i].dtype()) << what << " output " << i;
    for (int64_t j = 0; j < before[i].numel(); ++j) {
      double a = before[i].flat_double(j), b = after[i].flat_double(j);
      if ((std::isnan(a) && std::isnan(b)) || a == b) continue;  // a == b: also the same infinity
      ASSERT_NEAR(a, b, 1e-5 + 1e-5 * std::fabs(a)) << what << " output " << i << " element " << j;
    }
  }
}

class GoldenPass : public ::testing::TestWithParam<fs::path> {};

TEST_P(GoldenPass, MatchesExpected) {
  const fs::path& input = GetParam();
  std::string text = read_file(input);
  std::string storage;
  std::vector<std::string_view> passes = run_line_passes(text, storage);
  fs::path stem = input.parent_path() / input.stem();
  fs::path expected_text = stem.string() + ".expected.kiln";
  fs::path expected_error = stem.string() + ".expected.error";

  ir::Graph graph = ir::load_model(input.string());  // with NAME.safetensors when there is one
  ir::Graph original = graph.clone();
  RunOptions options;
  options.verify_each = true;
  options.pass_options = pass_options(text);
  if (fs::exists(expected_error)) {
    try {
      run_passes(graph, passes, options);
      FAIL() << input << ": expected an error containing '" << read_file(expected_error) << "'";
    } catch (const Error& error) {
      std::string wanted = read_file(expected_error);
      while (!wanted.empty() && wanted.back() == '\n') wanted.pop_back();
      EXPECT_THAT(error.what(), ::testing::HasSubstr(wanted));
    }
    return;
  }
  run_passes(graph, passes, options);
  std::string printed = ir::print_graph(graph);
  test_support::expect_matches_golden(printed, expected_text);
  // The rewrite must not change what the graph computes.
  std::map<std::string, Tensor> inputs = random_inputs(original, 7);
  std::vector<Tensor> before = ir::Interpreter().run(original, copies(inputs));
  std::vector<Tensor> after = ir::Interpreter().run(graph, copies(inputs));
  // Mutated inputs become extra outputs after functionalization: compare the common prefix.
  after.resize(std::min(after.size(), before.size()));
  expect_same_values(before, after, input.string());
}

std::vector<fs::path> golden_cases() {
  std::vector<fs::path> cases;
  if (!fs::exists(kGoldenRoot)) return cases;
  for (const auto& entry : fs::recursive_directory_iterator(kGoldenRoot)) {
    std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.ends_with(".kiln") && !name.ends_with(".expected.kiln"))
      cases.push_back(entry.path());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.parent_path().filename().string() + "_" + info.param.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, GoldenPass, ::testing::ValuesIn(golden_cases()), case_name);

}  // namespace
}  // namespace kiln::passes
