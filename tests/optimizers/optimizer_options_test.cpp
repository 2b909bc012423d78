// The optimizers refuse the hyperparameters PyTorch refuses, with PyTorch's messages.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <cmath>

#include "compiler/training/fused_optimizer.h"
#include "kiln/error.h"
#include "tests/optimizers/optimizer_test_support.h"

namespace kiln::training {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::string sgd_error(SgdOptions options) { return error_of([&] { validate(options); }); }
std::string adam_error(AdamOptions options) { return error_of([&] { validate(options); }); }

TEST(OptimizerOptions, SgdRefusesWhatTorchRefuses) {
  EXPECT_EQ(sgd_error({.lr = -0.1}), "SGD: Invalid learning rate: -0.1");
  EXPECT_EQ(sgd_error({.lr = NAN}), "SGD: Invalid learning rate: nan");
  EXPECT_EQ(sgd_error({.momentum = -0.5}), "SGD: Invalid momentum value: -0.5");
  EXPECT_EQ(sgd_error({.weight_decay = -1}), "SGD: Invalid weight_decay value: -1");
  EXPECT_EQ(sgd_error({.nesterov = true}), "SGD: Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(sgd_error({.momentum = 0.9, .dampening = 0.1, .nesterov = true}),
            "SGD: Nesterov momentum requires a momentum and zero dampening");
  EXPECT_EQ(sgd_error({.lr = 0, .momentum = 0.9, .nesterov = true}), "(no error)");
}

TEST(OptimizerOptions, AdamAndAdamWRefuseWhatTorchRefuses) {
  EXPECT_EQ(adam_error({.lr = -1e-3}), "Adam: Invalid learning rate: -0.001");
  EXPECT_EQ(adam_error({.eps = -1e-8}), "Adam: Invalid epsilon value: -1e-08");
  EXPECT_EQ(adam_error({.beta1 = 1.0}), "Adam: Invalid beta parameter at index 0: 1");
  EXPECT_EQ(adam_error({.beta1 = -0.1}), "Adam: Invalid beta parameter at index 0: -0.1");
  EXPECT_EQ(adam_error({.beta2 = 1.5}), "Adam: Invalid beta parameter at index 1: 1.5");
  EXPECT_EQ(adam_error({.weight_decay = -0.01}), "Adam: Invalid weight_decay value: -0.01");
  AdamOptions adamw = adamw_options();
  EXPECT_EQ(adamw.weight_decay, 1e-2);
  adamw.beta2 = 1.0;
  EXPECT_EQ(adam_error(adamw), "AdamW: Invalid beta parameter at index 1: 1");
  EXPECT_EQ(adam_error({.beta1 = 0.0}), "(no error)");
}

TEST(OptimizerOptions, TheOptimizerChecksBeforeCompilingAndOnSetLr) {
  ParameterArena arena({{"w", Tensor::zeros({3}, DType::f32)}});
  EXPECT_EQ(error_of([&] { FusedOptimizer::adamw(arena, {.lr = -1}); }), "AdamW: Invalid learning rate: -1");
  FusedOptimizer sgd = FusedOptimizer::sgd(arena, {.lr = 0.1}, testing::test_optimizer_options());
  EXPECT_EQ(error_of([&] { sgd.set_lr(-0.5); }), "SGD: Invalid learning rate: -0.5");
  EXPECT_EQ(sgd.lr(), 0.1);
  EXPECT_THAT(error_of([&] { sgd.state("w", "exp_avg"); }), HasSubstr("SGD has no state 'exp_avg' (it keeps: none)"));
  FusedOptimizerOptions threads = testing::test_optimizer_options();
  threads.num_threads = -2;
  EXPECT_THAT(error_of([&] { FusedOptimizer::sgd(arena, {}, threads); }), HasSubstr("num_threads must be >= 0"));
}

}  // namespace
}  // namespace kiln::training
