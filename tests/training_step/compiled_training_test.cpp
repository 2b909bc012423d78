// CompiledTraining's behaviour beyond parity with PyTorch: the compiled forward and backward
// give the gradients the interpreter computes on the joint graph (before and after updates),
// gradient accumulation over micro-batches equals one large batch, steps of a known shape never
// compile again, eval-mode forward, and the errors a user can cause.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "frontends/module/trace_graph.h"
#include "ir/interpreter.h"
#include "tests/training_step/training_models.h"

namespace kiln::training_step_test {
namespace {

using ::testing::HasSubstr;

template <typename Model>
void expect_gradients_as_interpreted(const std::string& model_name) {
  ParityReference reference(model_name);
  Model model;
  model.load_state_dict(reference.init);
  CompiledTraining training = compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.05, .momentum = 0.9},
                                               reference.batch(0), test_options());
  for (int64_t step : {0, 1, 2, 3}) {
    // The interpreter reads the module's parameters: the values the compiled step trains.
    std::map<std::string, Tensor> expected = interpreted_gradients(model, reference.batch(step));
    training.zero_grad();
    training.accumulate(reference.batch(step));
    ASSERT_EQ(expected.size(), training.parameter_names().size());
    for (const auto& [name, gradient] : expected)
      EXPECT_LE(relative_difference(gradient, training.gradient(name)), 1e-5) << "step " << step << ": " << name;
    training.apply();
  }
}

TEST(CompiledTraining, MlpGradientsAreTheInterpretedJointGraphs) { expect_gradients_as_interpreted<Mlp>("mlp"); }
TEST(CompiledTraining, CnnGradientsAreTheInterpretedJointGraphs) {
  expect_gradients_as_interpreted<SmallCnn>("cnn");
}

// Weights after `steps` SGD steps on the MLP, each step either one batch of 16 or two
// accumulated micro-batches of 8 (each scaled by 1/2, as a mean over 16 needs); the losses.
std::pair<std::map<std::string, Tensor>, std::vector<float>> train_mlp(bool micro_batches, int steps) {
  ParityReference reference("mlp");
  Mlp model;
  model.load_state_dict(reference.init);
  SgdOptions sgd{.lr = 0.01, .momentum = 0.9, .weight_decay = 1e-4};
  Batch first = reference.batch(0);
  Batch half{{first.inputs[0].slice(0, 0, 8).contiguous()}, {first.targets[0].slice(0, 0, 8).contiguous()}};
  CompiledTraining training =
      compile_training(model, cross_entropy_loss, sgd, micro_batches ? half : first, test_options());
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    Batch batch = reference.batch(step);
    if (!micro_batches) {
      losses.push_back(training.step(batch));
      continue;
    }
    training.zero_grad();
    float loss = 0;
    for (int64_t start : {0, 8}) {
      Batch micro{{batch.inputs[0].slice(0, start, start + 8).contiguous()},
                  {batch.targets[0].slice(0, start, start + 8).contiguous()}};
      loss += 0.5f * training.accumulate(micro, 0.5);
    }
    training.apply();
    losses.push_back(loss);
  }
  return {model.state_dict(), losses};
}

TEST(CompiledTraining, TwoMicroBatchesOfEightAccumulateToOneBatchOfSixteen) {
  auto [whole_weights, whole_losses] = train_mlp(false, 4);
  auto [micro_weights, micro_losses] = train_mlp(true, 4);
  for (size_t step = 0; step < whole_losses.size(); ++step)
    EXPECT_NEAR(micro_losses[step], whole_losses[step], 1e-5 * std::fabs(whole_losses[step])) << "step " << step;
  for (const auto& [name, weight] : whole_weights)
    EXPECT_LE(relative_difference(weight, micro_weights.at(name)), 1e-5) << name;
}

TEST(CompiledTraining, GradientsAccumulateUntilZeroGradAsInPyTorch) {
  ParityReference reference("mlp");
  Mlp model;
  model.load_state_dict(reference.init);
  CompiledTraining training = compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.01},
                                               reference.batch(0), test_options());
  training.accumulate(reference.batch(0));
  Tensor once = training.gradient("fc2.weight").clone();
  training.accumulate(reference.batch(0));
  Tensor twice = training.gradient("fc2.weight").clone();
  for (int64_t i = 0; i < once.numel(); ++i) ASSERT_FLOAT_EQ(float(twice.flat_double(i)), float(2 * once.flat_double(i)));
  training.zero_grad();
  EXPECT_EQ(relative_difference(Tensor::zeros(once.sizes(), DType::f32), training.gradient("fc2.weight")), 0);
}

TEST(CompiledTraining, StepsOfKnownShapesNeverCompileAgain) {
  ParityReference reference("mlp");
  Mlp model;
  model.load_state_dict(reference.init);
  CompiledTraining training =
      compile_training(model, cross_entropy_loss, AdamOptions{}, reference.batch(0), test_options());
  EXPECT_EQ(training.compile_count(), 3u);  // forward, backward, the optimizer's one f32 group
  for (int64_t step = 0; step < 5; ++step) training.step(reference.batch(step));
  EXPECT_EQ(training.compile_count(), 3u);
  Batch small{{reference.batch(0).inputs[0].slice(0, 0, 4).contiguous()},
              {reference.batch(0).targets[0].slice(0, 0, 4).contiguous()}};
  training.step(small);  // a new shape: its own forward and backward
  EXPECT_EQ(training.compile_count(), 5u);
  training.step(reference.batch(5));
  training.step(small);
  EXPECT_EQ(training.compile_count(), 5u);
}

TEST(CompiledTraining, EvaluateRunsTheModuleInEvalModeWithTheTrainedWeights) {
  ParityReference reference("mlp");
  Mlp model;
  model.load_state_dict(reference.init);
  CompiledTraining training = compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.1},
                                               reference.batch(0), test_options());
  training.step(reference.batch(0));
  Tensor x = reference.batch(1).inputs[0];
  std::vector<Tensor> logits = training.evaluate({x});
  model.eval();
  std::vector<Tensor> expected = ir::interpret(trace_graph(model, {x}), {{"x", x}});
  ASSERT_EQ(logits.size(), 1u);
  EXPECT_LE(relative_difference(expected[0], logits[0]), 1e-5);
  const size_t compiles = training.compile_count();
  training.step(reference.batch(1));
  std::vector<Tensor> after = training.evaluate({x});  // the new weights, no new compile
  EXPECT_EQ(training.compile_count(), compiles);
  EXPECT_GT(relative_difference(logits[0], after[0]), 1e-4);
}

// ConvBatchNorm (training_models.h) on 6x6 images: the step updates BatchNorm's running statistics
// as a train-mode forward does (the interpreter running the traced module on the same batch).
TEST(CompiledTraining, BatchNormRunningStatisticsAreCopiedBackIntoTheModule) {
  manual_seed(3);
  ConvBatchNorm model(6, 3), reference(6, 3);
  reference.load_state_dict(model.state_dict());
  std::vector<double> pixels(5 * 36), labels(5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::sin(0.37 * double(i)) * 2 + 0.5;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = double(i % 3);
  Tensor x = Tensor::from_doubles({5, 1, 6, 6}, pixels, DType::f32);
  Tensor y = Tensor::from_doubles({5}, labels, DType::i64);
  CompiledTraining training = compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.0}, {{x}, {y}},
                                               test_options());
  training.step({{x}, {y}});
  reference.train();
  ir::interpret(trace_graph(reference, {x}), {{"x", x}});  // updates reference's buffers in place
  std::map<std::string, Tensor> expected = reference.state_dict(), actual = model.state_dict();
  for (const char* buffer : {"bn.running_mean", "bn.running_var"}) {
    EXPECT_GT(relative_difference(Tensor::zeros({4}, DType::f32), actual.at(buffer)), 0) << buffer << " was updated";
    EXPECT_LE(relative_difference(expected.at(buffer), actual.at(buffer)), 1e-5) << buffer;
  }
  EXPECT_EQ(actual.at("bn.num_batches_tracked").item(), 1);
}

// ---- errors a user can cause ----

TEST(CompiledTraining, ALossThatIsNotAScalarIsRefused) {
  Mlp model;
  ParityReference reference("mlp");
  LossFunction not_reduced = [](const std::vector<Var>& outputs, const std::vector<Var>&) { return outputs[0]; };
  try {
    compile_training(model, not_reduced, SgdOptions{}, reference.batch(0), test_options());
    FAIL() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("the loss function returned f32[16, 10]; a loss must be a floating scalar"));
  }
}

TEST(CompiledTraining, ALossThatReadsNoParameterIsRefused) {
  Mlp model;
  ParityReference reference("mlp");
  LossFunction of_targets_only = [](const std::vector<Var>&, const std::vector<Var>& targets) {
    return targets[0].to(DType::f32).mean();
  };
  try {
    compile_training(model, of_targets_only, SgdOptions{}, reference.batch(0), test_options());
    FAIL() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("the loss reads none of Mlp (root)'s trainable parameters"));
  }
}

TEST(CompiledTraining, AOneTargetLossGivenTwoTargetsIsRefused) {
  Mlp model;
  ParityReference reference("mlp");
  Batch two_targets = reference.batch(0);
  two_targets.targets.push_back(two_targets.targets[0]);
  try {
    compile_training(model, cross_entropy_loss, SgdOptions{}, two_targets, test_options());
    FAIL() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("this loss takes one output and one target; the module returned 1 outputs "
                                        "and the batch has 2 targets"));
  }
}

TEST(CompiledTraining, BadOptimizerSettingsAreRefusedWithPyTorchsMessage) {
  Mlp model;
  ParityReference reference("mlp");
  EXPECT_THROW(compile_training(model, cross_entropy_loss, SgdOptions{.lr = -1}, reference.batch(0), test_options()),
               Error);
}

}  // namespace
}  // namespace kiln::training_step_test
