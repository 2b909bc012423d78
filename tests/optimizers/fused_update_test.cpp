// The compiled update against the reference interpreter running the same update graph, step by
// step; one compile per dtype group for any number of steps and learning rates; the update is
// one fused kernel that updates the arenas in place (unfused, it runs through CompiledModel::run and
// matches too); the arena's padding stays zero.
#include <gtest/gtest.h>

#include <random>

#include "compiler/training/fused_optimizer.h"
#include "ir/interpreter.h"
#include "tests/optimizers/optimizer_test_support.h"

namespace kiln::training {
namespace {

using testing::all_close;

Tensor random_tensor(const Sizes& sizes, DType dtype, std::mt19937& random) {
  std::normal_distribution<double> normal;
  std::vector<double> values(size_t(numel_of(sizes)));
  for (double& value : values) value = normal(random);
  return Tensor::from_doubles(sizes, values, dtype);
}

std::vector<NamedTensor> mixed_parameters(std::mt19937& random) {
  return {{"fc.weight", random_tensor({9, 7}, DType::f32, random)},
          {"fc.bias", random_tensor({9}, DType::f32, random)},
          {"scale", random_tensor({}, DType::f64, random)},
          {"table", random_tensor({3, 5}, DType::f64, random)}};
}

void fill_random_gradients(ParameterArena& arena, std::mt19937& random) {
  arena.zero_grad();
  std::map<std::string, Tensor> gradients;
  for (const std::string& name : arena.names()) {
    const Tensor parameter = arena.parameter(name);
    gradients[name] = random_tensor(parameter.sizes(), parameter.dtype(), random);
  }
  arena.accumulate_gradients(gradients);
}

// Runs `steps` steps, each checked against ir::interpret of the rule's graph on the inputs the
// step saw, for every parameter and state.
void expect_steps_match_interpreter(FusedOptimizer& optimizer, ParameterArena& arena, int steps) {
  std::mt19937 random(7);
  const UpdateRule& rule = optimizer.rule();
  const std::vector<std::string> states = rule.state_names();
  for (int step = 1; step <= steps; ++step) {
    optimizer.set_lr(0.01 * step);
    fill_random_gradients(arena, random);
    std::vector<std::vector<Tensor>> expected;  // per group
    for (const ParameterArena::Group& group : arena.groups()) {
      std::map<std::string, Tensor> inputs = {{"param", group.parameters.clone()}, {"grad", group.gradients.clone()}};
      for (const std::string& state : states) {
        Tensor flat = Tensor::zeros(group.parameters.sizes(), group.dtype);
        for (size_t member : group.members) arena.view_of(arena.names()[member], flat).copy_from(optimizer.state(arena.names()[member], state));
        inputs[state] = flat;
      }
      for (const auto& [name, value] : rule.step_scalars(step, optimizer.lr()))
        inputs[name] = Tensor::scalar(value, update_scalar_dtype(group.dtype));
      expected.push_back(ir::interpret(rule.build_graph(group.dtype, group.parameters.numel()), inputs));
    }
    optimizer.step();
    for (const std::string& name : arena.names()) {
      const std::vector<Tensor>& outputs = expected[arena.group_of(name)];
      std::string where = std::string(optimizer.name()) + " step " + std::to_string(step) + " " + name;
      ASSERT_TRUE(all_close(arena.parameter(name), arena.view_of(name, outputs[0]), 1e-6, where));
      for (size_t s = 0; s < states.size(); ++s)
        ASSERT_TRUE(all_close(optimizer.state(name, states[s]), arena.view_of(name, outputs[1 + s]), 1e-6, where + " " + states[s]));
    }
  }
}

TEST(FusedUpdate, SgdNesterovMatchesTheInterpreter) {
  std::mt19937 random(1);
  ParameterArena arena(mixed_parameters(random));
  SgdOptions options;
  options.momentum = 0.9;
  options.nesterov = true;
  options.weight_decay = 0.01;
  FusedOptimizer optimizer = FusedOptimizer::sgd(arena, options, testing::test_optimizer_options());
  expect_steps_match_interpreter(optimizer, arena, 4);
}

TEST(FusedUpdate, AdamAmsgradMatchesTheInterpreter) {
  std::mt19937 random(2);
  ParameterArena arena(mixed_parameters(random));
  AdamOptions options;
  options.amsgrad = true;
  options.weight_decay = 0.1;
  FusedOptimizer optimizer = FusedOptimizer::adam(arena, options, testing::test_optimizer_options());
  expect_steps_match_interpreter(optimizer, arena, 4);
}

TEST(FusedUpdate, UnfusedUpdatesRunOutOfPlaceAndMatchTheInterpreter) {
  std::mt19937 random(8);
  ParameterArena arena(mixed_parameters(random));
  FusedOptimizerOptions unfused = testing::test_optimizer_options();
  unfused.compile.fuse = false;
  AdamOptions options;
  options.amsgrad = true;
  FusedOptimizer adam = FusedOptimizer::adam(arena, options, unfused);
  EXPECT_GT(adam.compiled(0).result().kernel_count, 1u);
  EXPECT_FALSE(adam.updates_in_place(0));
  expect_steps_match_interpreter(adam, arena, 3);
  SgdOptions sgd_options;
  sgd_options.momentum = 0.9;
  sgd_options.weight_decay = 0.1;
  FusedOptimizer sgd = FusedOptimizer::sgd(arena, sgd_options, unfused);
  expect_steps_match_interpreter(sgd, arena, 3);
}

TEST(FusedUpdate, AdamWMatchesTheInterpreter) {
  std::mt19937 random(3);
  ParameterArena arena(mixed_parameters(random));
  FusedOptimizer optimizer = FusedOptimizer::adamw(arena, adamw_options(), testing::test_optimizer_options());
  expect_steps_match_interpreter(optimizer, arena, 4);
}

TEST(FusedUpdate, HalfPrecisionArenasUpdateWithinTheirPrecision) {
  // f16 and bf16 arenas compute in f32 with f32 step scalars; the kernel keeps f32 between
  // fused ops where the interpreter rounds after each op, so they agree to the storage precision.
  std::mt19937 random(10);
  ParameterArena arena({{"h", random_tensor({11, 3}, DType::f16, random)}, {"b", random_tensor({19}, DType::bf16, random)}});
  ASSERT_EQ(arena.groups().size(), 2u);
  FusedOptimizer adam = FusedOptimizer::adam(arena, AdamOptions{.lr = 0.01}, testing::test_optimizer_options());
  std::mt19937 gradient_random(11);
  for (int step = 1; step <= 3; ++step) {
    fill_random_gradients(arena, gradient_random);
    std::vector<Tensor> expected;
    for (const ParameterArena::Group& group : arena.groups()) {
      std::map<std::string, Tensor> inputs = {{"param", group.parameters.clone()}, {"grad", group.gradients.clone()}};
      for (const std::string& state : adam.rule().state_names()) {
        Tensor flat = Tensor::zeros(group.parameters.sizes(), group.dtype);
        const std::string& member = arena.names()[group.members[0]];
        arena.view_of(member, flat).copy_from(adam.state(member, state));
        inputs[state] = flat;
      }
      for (const auto& [name, value] : adam.rule().step_scalars(step, adam.lr())) inputs[name] = Tensor::scalar(value, DType::f32);
      expected.push_back(ir::interpret(adam.rule().build_graph(group.dtype, group.parameters.numel()), inputs)[0]);
    }
    adam.step();
    for (const std::string& name : arena.names()) {
      const double precision = arena.parameter(name).dtype() == DType::f16 ? 1e-3 : 8e-3;
      ASSERT_TRUE(all_close(arena.parameter(name), arena.view_of(name, expected[arena.group_of(name)]), precision, name));
    }
  }
}

TEST(FusedUpdate, CompilesOncePerDtypeForAnyNumberOfStepsAndLearningRates) {
  std::mt19937 random(4);
  ParameterArena arena(mixed_parameters(random));
  FusedOptimizer optimizer = FusedOptimizer::adam(arena, AdamOptions{}, testing::test_optimizer_options());
  ASSERT_EQ(arena.groups().size(), 2u);
  EXPECT_EQ(optimizer.compile_count(), 2u);
  for (int step = 0; step < 20; ++step) {
    optimizer.set_lr(1e-3 / (step + 1));
    fill_random_gradients(arena, random);
    optimizer.step();
  }
  EXPECT_EQ(optimizer.step_count(), 20);
  EXPECT_EQ(optimizer.compile_count(), 2u);
  // A second optimizer of the same shapes and hyperparameters compiles no C++: the cache has it.
  FusedOptimizer again = FusedOptimizer::adam(arena, AdamOptions{}, testing::test_optimizer_options());
  EXPECT_TRUE(again.compiled(0).result().cache_hit);
  EXPECT_TRUE(again.compiled(1).result().cache_hit);
  EXPECT_EQ(again.compiled(0).result().key, optimizer.compiled(0).result().key);
}

TEST(FusedUpdate, EachStepIsOneKernelPerDtype) {
  std::mt19937 random(5);
  ParameterArena arena(mixed_parameters(random));
  AdamOptions options;
  options.amsgrad = true;
  FusedOptimizer adam = FusedOptimizer::adam(arena, options, testing::test_optimizer_options());
  SgdOptions sgd_options;
  sgd_options.momentum = 0.9;
  FusedOptimizer sgd = FusedOptimizer::sgd(arena, sgd_options, testing::test_optimizer_options());
  for (size_t group = 0; group < arena.groups().size(); ++group) {
    EXPECT_EQ(adam.compiled(group).result().kernel_count, 1u);
    EXPECT_EQ(sgd.compiled(group).result().kernel_count, 1u);
    EXPECT_TRUE(adam.updates_in_place(group));
    EXPECT_TRUE(sgd.updates_in_place(group));
  }
}

TEST(FusedUpdate, ALargeArenaUpdatedInPlaceByTwoThreadsMatchesTheUnfusedUpdate) {
  // Over a million elements the kernel's loop runs in parallel chunks; in place must still equal
  // fresh outputs everywhere.
  std::mt19937 random(9);
  const std::vector<NamedTensor> parameters = {{"big", random_tensor({1 << 20}, DType::f32, random)},
                                               {"odd", random_tensor({37, 3}, DType::f32, random)}};
  ParameterArena in_place_arena(parameters), unfused_arena(parameters);
  FusedOptimizerOptions in_place = testing::test_optimizer_options(), unfused = testing::test_optimizer_options();
  in_place.num_threads = unfused.num_threads = 2;
  unfused.compile.fuse = false;
  AdamOptions options;
  options.amsgrad = true;
  FusedOptimizer in_place_adam = FusedOptimizer::adam(in_place_arena, options, in_place);
  FusedOptimizer unfused_adam = FusedOptimizer::adam(unfused_arena, options, unfused);
  ASSERT_TRUE(in_place_adam.updates_in_place(0));
  ASSERT_FALSE(unfused_adam.updates_in_place(0));
  for (int step = 0; step < 2; ++step) {
    fill_random_gradients(in_place_arena, random);
    unfused_arena.zero_grad();
    std::map<std::string, Tensor> gradients;
    for (const std::string& name : in_place_arena.names()) gradients[name] = in_place_arena.gradient(name);
    unfused_arena.accumulate_gradients(gradients);
    in_place_adam.step();
    unfused_adam.step();
  }
  for (const std::string& name : in_place_arena.names()) {
    EXPECT_TRUE(all_close(in_place_arena.parameter(name), unfused_arena.parameter(name), 1e-6, name));
    for (const std::string& state : in_place_adam.rule().state_names())
      EXPECT_TRUE(all_close(in_place_adam.state(name, state), unfused_adam.state(name, state), 1e-6, name + " " + state));
  }
}

TEST(FusedUpdate, ThePaddingBetweenParametersStaysZero) {
  std::mt19937 random(6);
  ParameterArena arena({{"a", random_tensor({3}, DType::f32, random)}, {"b", random_tensor({5}, DType::f32, random)}});
  FusedOptimizer optimizer = FusedOptimizer::adam(arena, AdamOptions{}, testing::test_optimizer_options());
  for (int step = 0; step < 3; ++step) {
    fill_random_gradients(arena, random);
    optimizer.step();
  }
  const Tensor& flat = arena.groups()[0].parameters;
  ASSERT_EQ(flat.numel(), 32);  // each parameter starts on a 64-byte line: 16 floats each
  for (int64_t i = 0; i < 32; ++i) {
    if (i < 3 || (i >= 16 && i < 21)) continue;
    EXPECT_EQ(flat.flat_double(i), 0.0) << "padding element " << i;
  }
}

}  // namespace
}  // namespace kiln::training
