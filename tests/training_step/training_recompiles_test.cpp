// compile_training's variants (compiler/training/compiled_training.h): a batch of a new shape
// recompiles through kiln::compile(fn)'s guards, a changed batch size becomes a symbolic dim
// compiled once for all sizes (0 and 1 specialized), TrainingOptions::dynamic = never and
// recompile_limit, the interpreted steps past the limit, the logs, and evaluate()'s variants.
// Every compiled step's gradients are checked against the interpreter's on the joint graph.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/training_step/training_models.h"

namespace kiln::training_step_test {
namespace {

using ::testing::HasSubstr;

// The first `size` rows of the MLP reference's batch `step` (1 <= size <= 16).
Batch rows(const ParityReference& reference, int64_t step, int64_t size) {
  Batch batch = reference.batch(step);
  return {{batch.inputs[0].slice(0, 0, size).contiguous()}, {batch.targets[0].slice(0, 0, size).contiguous()}};
}

// Accumulates one batch from zero gradients and checks every gradient against the interpreter's.
void expect_interpreted_gradients(CompiledTraining& training, Mlp& model, const Batch& batch, const std::string& what) {
  std::map<std::string, Tensor> expected = interpreted_gradients(model, batch);
  training.zero_grad();
  training.accumulate(batch);
  for (const auto& [name, gradient] : expected)
    EXPECT_LE(relative_difference(gradient, training.gradient(name)), 1e-5) << what << ": " << name;
}

struct Fixture {
  ParityReference reference{"mlp"};
  Mlp model;
  Fixture() { model.load_state_dict(reference.init); }
  TrainingOptions options() const { return test_options(); }
  CompiledTraining compile(TrainingOptions options = test_options()) {
    return compile_training(model, cross_entropy_loss, SgdOptions{.lr = 0.01}, reference.batch(0), options);
  }
};

TEST(TrainingRecompiles, ANewBatchSizeMakesTheBatchDimDynamicOnce) {
  Fixture f;
  CompiledTraining training = f.compile();
  EXPECT_EQ(training.step_variant_count(), 1u);
  const size_t first_compiles = training.compile_count();
  expect_interpreted_gradients(training, f.model, rows(f.reference, 1, 4), "batch 4");
  EXPECT_EQ(training.step_variant_count(), 2u);  // the batch dim is now symbolic
  EXPECT_EQ(training.compile_count(), first_compiles + 2);
  for (int64_t size : {2, 7, 9, 13, 15})
    expect_interpreted_gradients(training, f.model, rows(f.reference, size % 5, size), "batch " + std::to_string(size));
  EXPECT_EQ(training.step_variant_count(), 2u);
  EXPECT_EQ(training.compile_count(), first_compiles + 2);
  training.step(f.reference.batch(2));  // 16: still the first, static variant
  EXPECT_EQ(training.step_variant_count(), 2u);
}

TEST(TrainingRecompiles, ABatchOfOneIsSpecialized) {
  Fixture f;
  CompiledTraining training = f.compile();
  expect_interpreted_gradients(training, f.model, rows(f.reference, 1, 4), "batch 4");
  expect_interpreted_gradients(training, f.model, rows(f.reference, 1, 1), "batch 1");
  EXPECT_EQ(training.step_variant_count(), 3u);  // 16, then s0 >= 2, then 1
  expect_interpreted_gradients(training, f.model, rows(f.reference, 3, 1), "batch 1 again");
  EXPECT_EQ(training.step_variant_count(), 3u);
}

TEST(TrainingRecompiles, NeverCompilesEachSize) {
  Fixture f;
  TrainingOptions never = f.options();
  never.dynamic = DynamicShapes::never;
  CompiledTraining training = f.compile(never);
  for (int64_t size : {4, 8, 4})
    expect_interpreted_gradients(training, f.model, rows(f.reference, 1, size), "batch " + std::to_string(size));
  EXPECT_EQ(training.step_variant_count(), 3u);  // 16, 4, 8
}

TEST(TrainingRecompiles, PastTheLimitBatchesRunInterpretedWithOneWarning) {
  Fixture f;
  TrainingOptions options = test_options();
  options.dynamic = DynamicShapes::never;
  options.recompile_limit = 2;
  CompiledTraining training = f.compile(options);
  training.step(rows(f.reference, 1, 4));
  const size_t compiles = training.compile_count();
  ::testing::internal::CaptureStderr();
  expect_interpreted_gradients(training, f.model, rows(f.reference, 2, 8), "batch 8, interpreted");
  expect_interpreted_gradients(training, f.model, rows(f.reference, 3, 6), "batch 6, interpreted");
  std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(training.step_variant_count(), 2u);
  EXPECT_EQ(training.compile_count(), compiles);
  EXPECT_THAT(warnings, HasSubstr("compile_training: the step (batch f32[8, 784] i64[8]) reached its recompile limit "
                                  "(2 variants); the guard that kept failing: input0.size(0) == 4 failed: it is 8"));
  EXPECT_EQ(warnings.find("warning", warnings.find("warning") + 1), std::string::npos) << warnings;
}

TEST(TrainingRecompiles, LogsSayWhyAStepRecompiled) {
  Fixture f;
  CompiledTraining training = f.compile();
  setenv("KILN_LOG", "recompiles,dynamic,guards", 1);
  ::testing::internal::CaptureStderr();
  training.step(rows(f.reference, 1, 4));
  std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("KILN_LOG");
  EXPECT_THAT(log, HasSubstr("kiln[recompiles]: compile_training: the step (batch f32[4, 784] i64[4]): recompiling "
                             "(variant 1): input0.size(0) == 16 failed: it is 4"));
  EXPECT_THAT(log, HasSubstr("kiln[dynamic]: compile_training: the step (batch f32[4, 784] i64[4]): input0.size(0) "
                             "changed from 16 to 4: made dynamic"));
  EXPECT_THAT(log, HasSubstr("target0.size(0) == input0.size(0) (s0)"));  // duck sizing: one batch symbol
}

TEST(TrainingRecompiles, EvaluateKeepsVariantsTheSameWay) {
  Fixture f;
  CompiledTraining training = f.compile();
  for (int64_t size : {3, 5, 12}) {
    Tensor x = rows(f.reference, 1, size).inputs[0];
    std::vector<Tensor> logits = training.evaluate({x});
    f.model.eval();
    std::vector<Tensor> expected = ir::interpret(trace_graph(f.model, {x}), {{"x", x}});
    f.model.train();
    EXPECT_LE(relative_difference(expected[0], logits[0]), 1e-5) << "batch " << size;
  }
  EXPECT_EQ(training.eval_variant_count(), 2u);  // 3, then s0
}

TEST(TrainingRecompiles, BadBatchesAndLimitsAreRefused) {
  Fixture f;
  TrainingOptions zero = test_options();
  zero.recompile_limit = 0;
  EXPECT_THROW(
      {
        try {
          f.compile(zero);
        } catch (const Error& error) {
          EXPECT_THAT(error.what(), HasSubstr("recompile_limit is 0; it must be at least 1"));
          throw;
        }
      },
      Error);
  CompiledTraining training = f.compile();
  Batch extra = f.reference.batch(1);
  extra.inputs.push_back(extra.inputs[0]);
  try {
    training.step(extra);
    FAIL() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("the batch has 2 inputs and 1 targets; the example batch had 1 and 1"));
  }
  try {
    training.evaluate({});
    FAIL() << "expected a kiln::Error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), HasSubstr("evaluate takes the module's 1 inputs; got 0"));
  }
}

}  // namespace
}  // namespace kiln::training_step_test
