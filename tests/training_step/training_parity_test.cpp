// Compiled training against PyTorch, step by step: the MLP and the small CNN of
// scripts/make_training_parity.py, trained 20 steps with SGD (momentum, weight decay) and 20
// with Adam from PyTorch's initial weights on PyTorch's batches. Every step's loss and every
// final weight tensor must match PyTorch's within 1e-4 relative:
//  - a loss l against PyTorch's p:  |l - p| <= 1e-4 * max(|p|, 1e-2)
//    (relative to its magnitude; a loss below 1e-2 is held to an absolute 1e-6);
//  - a weight tensor K against PyTorch's P:  ||K - P||_2 <= 1e-4 * max(||P||_2, 1e-6)
//    (relative to the tensor's magnitude; the floor only matters for an all-zero tensor).
// Weights are compared as tensors, not element by element, because of Adam: its step
// lr * m / (sqrt(v) + eps) has size lr whatever the gradient's size, so an element whose
// gradients are at rounding level (a hidden unit that fired for one sample of a batch) moves
// by a different fraction of lr in two correct implementations. The test prints the worst
// element too; SGD's weights agree element by element to ~3e-7 of their tensor's largest value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tests/training_step/training_models.h"

namespace kiln::training_step_test {
namespace {

constexpr double kRelative = 1e-4;

// ||actual - expected||_2 / max(||expected||_2, 1e-6)
double relative_l2_error(const Tensor& expected, const Tensor& actual) {
  double difference = 0, norm = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double p = expected.flat_double(i), k = actual.flat_double(i);
    difference += (k - p) * (k - p);
    norm += p * p;
  }
  return std::sqrt(difference) / std::max(std::sqrt(norm), 1e-6);
}

// The element farthest from PyTorch's, relative to the tensor's largest magnitude (printed).
std::string worst_element(const Tensor& expected, const Tensor& actual) {
  double largest = 0, worst = -1;
  int64_t at = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) largest = std::max(largest, std::fabs(expected.flat_double(i)));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double error = std::fabs(actual.flat_double(i) - expected.flat_double(i));
    if (error > worst) worst = error, at = i;
  }
  char text[160];
  std::snprintf(text, sizeof text, "[%lld] %.8g vs PyTorch %.8g (%.1e of the largest |w|)", static_cast<long long>(at),
                actual.flat_double(at), expected.flat_double(at), worst / std::max(largest, 1e-30));
  return text;
}

template <typename Model>
void expect_parity(const std::string& model_name, const std::string& optimizer) {
  ParityReference reference(model_name);
  Model model;
  model.load_state_dict(reference.init);
  CompiledTraining training = compile_training(model, cross_entropy_loss,
                                               reference_optimizer(reference.report.at("optimizers").at(optimizer)),
                                               reference.batch(0), test_options());
  const size_t compiles = training.compile_count();
  const nlohmann::json& losses = reference.report.at("losses").at(optimizer);
  ASSERT_EQ(int64_t(losses.size()), reference.steps());
  double worst_loss = 0;
  for (int64_t step = 0; step < reference.steps(); ++step) {
    const double expected = losses.at(size_t(step));
    const float loss = training.step(reference.batch(step));
    const double error = std::fabs(loss - expected) / std::max(std::fabs(expected), 1e-2);
    worst_loss = std::max(worst_loss, error);
    EXPECT_LE(error, kRelative) << "step " << step << ": loss " << loss << ", PyTorch " << expected;
  }
  EXPECT_EQ(training.compile_count(), compiles) << "steps of one shape must not compile again";

  double worst_weight = 0;
  std::map<std::string, Tensor> state = model.state_dict();
  for (const auto& [name, expected] : reference.final_weights(optimizer)) {
    ASSERT_TRUE(state.count(name)) << name;
    const double error = relative_l2_error(expected, state.at(name));
    worst_weight = std::max(worst_weight, error);
    EXPECT_LE(error, kRelative) << "final " << name << ": worst element " << worst_element(expected, state.at(name));
    std::printf("  %s: relative L2 error %.1e, worst element %s\n", name.c_str(), error,
                worst_element(expected, state.at(name)).c_str());
    // The module holds what the compiled step trained.
    EXPECT_EQ(relative_l2_error(training.parameter(name), state.at(name)), 0) << name;
  }
  std::printf("%s %s: worst loss error %.2e, worst weight error %.2e (relative L2)\n", model_name.c_str(),
              optimizer.c_str(), worst_loss, worst_weight);
}

TEST(TrainingParity, MlpSgdMatchesPyTorchEveryStep) { expect_parity<Mlp>("mlp", "sgd"); }
TEST(TrainingParity, MlpAdamMatchesPyTorchEveryStep) { expect_parity<Mlp>("mlp", "adam"); }
TEST(TrainingParity, CnnSgdMatchesPyTorchEveryStep) { expect_parity<SmallCnn>("cnn", "sgd"); }
TEST(TrainingParity, CnnAdamMatchesPyTorchEveryStep) { expect_parity<SmallCnn>("cnn", "adam"); }

}  // namespace
}  // namespace kiln::training_step_test
