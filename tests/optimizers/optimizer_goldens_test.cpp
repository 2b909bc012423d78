// The fused optimizers against PyTorch: every case of tests/data/optimizers/ (written by
// scripts/make_optimizer_goldens.py with torch.optim) replayed step by step; the parameters
// after every step and the optimizer state after the last must agree within 1e-6 relative. Each
// case runs twice: fused into one kernel that updates the arenas in place, and unfused (one
// kernel per op, run through CompiledModel::run and copied back).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "compiler/training/fused_optimizer.h"
#include "kiln/safetensors.h"
#include "tests/optimizers/optimizer_test_support.h"
#include "tests/support/test_paths.h"

namespace kiln::training {
namespace {

namespace fs = std::filesystem;
using testing::all_close;

constexpr double kTolerance = 1e-6;

fs::path golden_directory() { return fs::path(KILN_SOURCE_DIR) / "tests" / "data" / "optimizers"; }

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

// One golden case: its tensors and its metadata, read as the script wrote them.
struct GoldenCase {
  std::string name;
  SafetensorsContents contents;

  const std::string& meta(const std::string& key) const {
    auto it = contents.metadata.find(key);
    if (it == contents.metadata.end()) throw std::runtime_error(name + ": no metadata '" + key + "'");
    return it->second;
  }
  double number(const std::string& key, double otherwise) const {
    return contents.metadata.count(key) ? std::stod(meta(key)) : otherwise;
  }
  bool flag(const std::string& key) const { return contents.metadata.count(key) && meta(key) == "True"; }
  const Tensor& tensor(const std::string& key) const { return contents.tensors.at(key); }
  std::vector<std::string> parameter_names() const {
    std::vector<std::string> names;
    for (const std::string& spec : split(meta("params"), ',')) names.push_back(split(spec, ':')[0]);
    return names;
  }
};

FusedOptimizer make_optimizer(const GoldenCase& golden, ParameterArena& arena, const FusedOptimizerOptions& run) {
  const std::string& kind = golden.meta("optimizer");
  if (kind == "sgd") {
    SgdOptions options;
    options.lr = golden.number("lr", 1e-3);
    options.momentum = golden.number("momentum", 0);
    options.dampening = golden.number("dampening", 0);
    options.weight_decay = golden.number("weight_decay", 0);
    options.nesterov = golden.flag("nesterov");
    options.maximize = golden.flag("maximize");
    return FusedOptimizer::sgd(arena, options, run);
  }
  AdamOptions options = kind == "adamw" ? adamw_options() : AdamOptions{};
  std::vector<std::string> betas = split(golden.meta("betas"), ',');
  options.beta1 = std::stod(betas.at(0));
  options.beta2 = std::stod(betas.at(1));
  options.eps = golden.number("eps", 1e-8);
  options.weight_decay = golden.number("weight_decay", 0);
  options.amsgrad = golden.flag("amsgrad");
  options.maximize = golden.flag("maximize");
  if (kind == "adamw") return FusedOptimizer::adamw(arena, options, run);
  return FusedOptimizer::adam(arena, options, run);
}

// The update of a parameter combines its previous value with a step: errors scale with both.
double largest_magnitude(const Tensor& tensor) {
  double largest = 0;
  for (int64_t i = 0; i < tensor.numel(); ++i) largest = std::max(largest, std::abs(tensor.flat_double(i)));
  return largest;
}

class OptimizerGoldens : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(OptimizerGoldens, EveryStepMatchesPyTorch) {
  const auto& [case_name, fused] = GetParam();
  GoldenCase golden{case_name, load_safetensors((golden_directory() / (case_name + ".safetensors")).string())};
  const std::vector<std::string> names = golden.parameter_names();
  std::vector<NamedTensor> parameters;
  for (const std::string& name : names) parameters.push_back({name, golden.tensor("param." + name)});
  ParameterArena arena(parameters);
  FusedOptimizerOptions run = testing::test_optimizer_options();
  run.compile.fuse = fused;
  FusedOptimizer optimizer = make_optimizer(golden, arena, run);
  for (size_t group = 0; group < arena.groups().size(); ++group) ASSERT_EQ(optimizer.updates_in_place(group), fused);

  const std::vector<std::string> lrs = split(golden.meta("lrs"), ',');
  const int steps = std::stoi(golden.meta("steps"));
  ASSERT_EQ(int(lrs.size()), steps);
  for (int step = 1; step <= steps; ++step) {
    optimizer.set_lr(std::stod(lrs[size_t(step - 1)]));
    optimizer.zero_grad();
    std::map<std::string, Tensor> gradients;
    for (const std::string& name : names) gradients[name] = golden.tensor("grad." + std::to_string(step) + "." + name);
    arena.accumulate_gradients(gradients);
    optimizer.step();
    for (const std::string& name : names) {
      const std::string key = "param." + std::to_string(step) + "." + name;
      const Tensor& before = golden.tensor(step == 1 ? "param." + name : "param." + std::to_string(step - 1) + "." + name);
      ASSERT_TRUE(all_close(arena.parameter(name), golden.tensor(key), kTolerance, key, largest_magnitude(before)));
    }
  }
  size_t states_compared = 0;
  for (const std::string& key : optimizer.rule().state_names()) {
    for (const std::string& name : names) {
      const std::string golden_key = "state." + key + "." + name;
      ASSERT_TRUE(golden.contents.tensors.count(golden_key)) << "PyTorch kept no " << golden_key;
      EXPECT_TRUE(all_close(optimizer.state(name, key), golden.tensor(golden_key), kTolerance, golden_key));
      ++states_compared;
    }
  }
  EXPECT_EQ(states_compared, optimizer.rule().state_names().size() * names.size());
  EXPECT_EQ(optimizer.compile_count(), arena.groups().size()) << "one compile per dtype group, for every step";
}

std::vector<std::string> golden_cases() {
  std::vector<std::string> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(golden_directory())) {
    if (entry.path().extension() == ".safetensors") cases.push_back(entry.path().stem().string());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

INSTANTIATE_TEST_SUITE_P(PyTorch, OptimizerGoldens, ::testing::Combine(::testing::ValuesIn(golden_cases()), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& case_info) {
                           return std::get<0>(case_info.param) + (std::get<1>(case_info.param) ? "_in_place" : "_unfused");
                         });

TEST(OptimizerGoldenData, TheDirectoryHoldsEveryCase) {
  // The script's cases: guard against a data directory that lost files.
  EXPECT_GE(golden_cases().size(), 14u);
}

}  // namespace
}  // namespace kiln::training
