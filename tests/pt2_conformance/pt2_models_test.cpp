// Whole models exported with torch.export (scripts/make_pt2_models.py: torchvision classifiers,
// an nn.TransformerEncoder, a small causal GPT) compiled for the CPU and matched against eager
// PyTorch within 1e-4 relative to the output's magnitude (its largest |value|): the program
// exported at batch 1 (compiled as is and with frozen parameters), and the one with a dynamic
// batch dim at batches 1 and 3. One test per
// model (Pt2Models/Model.MatchesEager/<model>; ctest discovers them when it runs, from the
// generated data); each writes its outcome into the build tree, and Pt2ModelsSummary (run after
// them, a fixture) prints which models pass and fails when one does not. A model torch.export
// refuses is reported and not counted.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "compiler/compile_driver.h"
#include "frontends/pt2/pt2_importer.h"
#include "runtime/atomic_file.h"
#include "kiln/npy.h"
#include "tests/pt2_conformance/pt2_test_data.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::pt2_conformance {
namespace {

fs::path outcomes_folder() { return fs::path(KILN_BINARY_DIR) / "pt2_models"; }

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  std::optional<fs::path> folder = pt2_test_data("models");
  if (!folder) return names;
  for (const auto& entry : fs::directory_iterator(*folder))
    if (fs::exists(entry.path() / "meta.json")) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Empty when `actual` is within 1e-4 * max|expected| of `expected` everywhere.
std::string magnitude_difference(const Tensor& expected, const Tensor& actual) {
  if (expected.sizes() != actual.sizes() || expected.dtype() != actual.dtype())
    return "got " + std::string(dtype_name(actual.dtype())) + sizes_to_string(actual.sizes()) + ", expected " +
           std::string(dtype_name(expected.dtype())) + sizes_to_string(expected.sizes());
  Tensor a = actual.contiguous(), b = expected.contiguous();
  double magnitude = 0, worst = 0;
  for (int64_t i = 0; i < b.numel(); ++i) magnitude = std::max(magnitude, std::fabs(b.flat_double(i)));
  for (int64_t i = 0; i < a.numel(); ++i) {
    double difference = std::fabs(a.flat_double(i) - b.flat_double(i));
    if (std::isnan(difference)) return "element " + std::to_string(i) + " is NaN";
    worst = std::max(worst, difference);
  }
  if (worst <= 1e-4 * magnitude) return "";
  return "max |difference| " + std::to_string(worst) + " > 1e-4 * " + std::to_string(magnitude);
}

class Model : public ::testing::TestWithParam<std::string> {};

TEST_P(Model, MatchesEager) {
  const std::string name = GetParam();
  fs::path folder = *pt2_test_data("models") / name;
  std::ifstream meta_file(folder / "meta.json");
  nlohmann::json meta = nlohmann::json::parse(meta_file);
  fs::create_directories(outcomes_folder());
  auto record = [&](const std::string& outcome) { write_file_atomically((outcomes_folder() / (name + ".txt")).string(), outcome + "\n"); };
  if (meta.value("status", "") != "exported") {
    record("refused\ttorch.export refused it: " + meta.value("reason", ""));
    GTEST_SKIP() << "torch.export refused " << name << ": " << meta.value("reason", "");
  }
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(outcomes_folder() / "compile-cache");
  std::string failure;
  std::ostringstream timing;
  // The static export, as compiled and frozen (`--freeze`: batch norm folded into convolutions,
  // oneDNN post-ops and prepacked matmuls), and the dynamic one at two batch sizes.
  struct Variant {
    std::string name, program;
    bool freeze;
    std::vector<int> batches;
  };
  for (const Variant& variant : std::vector<Variant>{{"static", "static", false, {1}},
                                                      {"frozen", "static", true, {1}},
                                                      {"dynamic", "dynamic", false, {1, 3}}}) {
    const std::string& program = variant.name;
    const std::vector<int>& batches = variant.batches;
    options.freeze = variant.freeze;
    try {
      auto start = std::chrono::steady_clock::now();
      ir::Graph graph = frontends::import_pt2((folder / (variant.program + ".pt2")).string());
      compiler::CompiledModel model = compiler::compile(graph, options);
      timing << program << " import+compile " << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s; ";
      std::string input_name = graph.placeholders().at(0)->target();
      for (int batch : batches) {
        Tensor input = read_npy((folder / ("input_" + std::to_string(batch) + ".npy")).string());
        std::vector<Tensor> outputs = model.run({{input_name, input}}, 0);
        std::string problem = outputs.size() == 1 ? magnitude_difference(read_npy((folder / ("expected_" + std::to_string(batch) + ".npy")).string()), outputs[0])
                                                  : "it returns " + std::to_string(outputs.size()) + " outputs";
        if (!problem.empty() && failure.empty()) failure = program + " at batch " + std::to_string(batch) + ": " + problem;
      }
    } catch (const std::exception& error) {
      if (failure.empty()) failure = program + ": " + std::string(error.what()).substr(0, 400);
    }
  }
  record((failure.empty() ? "passed\t" : "failed\t" + failure + "; ") + timing.str());
  EXPECT_EQ(failure, "") << name;
}

INSTANTIATE_TEST_SUITE_P(Pt2Models, Model, ::testing::ValuesIn(model_names()));
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Model);

TEST(Pt2ModelsSummary, ListsTheModelsThatPass) {
  std::vector<std::string> names = model_names();
  if (names.empty()) {
    if (pt2_test_data_required()) FAIL() << missing_pt2_test_data("models");
    GTEST_SKIP() << missing_pt2_test_data("models");
  }
  std::vector<std::string> passed, failed, refused;
  for (const std::string& name : names) {
    std::ifstream file(outcomes_folder() / (name + ".txt"));
    std::string line;
    if (!std::getline(file, line)) {
      ADD_FAILURE() << name << ": no outcome (its test did not run; ctest runs every model test before this summary)";
      continue;
    }
    std::string status = line.substr(0, line.find('\t'));
    (status == "passed" ? passed : status == "refused" ? refused : failed).push_back(name + "  " + line.substr(line.find('\t') + 1));
  }
  std::cout << "== .pt2 models on the CPU backend vs eager PyTorch (1e-4 of the output's magnitude)\n-- pass (" << passed.size()
            << "):\n";
  for (const std::string& line : passed) std::cout << "  " << line << "\n";
  std::cout << "-- fail (" << failed.size() << "):\n";
  for (const std::string& line : failed) std::cout << "  " << line << "\n";
  std::cout << "-- torch.export refused (" << refused.size() << "):\n";
  for (const std::string& line : refused) std::cout << "  " << line << "\n";
  EXPECT_TRUE(failed.empty()) << failed.size() << " models fail";
}

}  // namespace
}  // namespace kiln::pt2_conformance
