// The partition of real models' joint graphs (samples/models: the MLP, the CNN, the attention
// block), each with a scalar loss (the mean of its output) differentiated against every
// floating parameter by autodiff (compiler/training_stages.h): forward then backward reproduce the joint graph exactly in
// the interpreter (and, for the MLP, through the CPU backend), the saved bytes are below the
// save-every-activation baseline, and no forbidden op is recomputed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "compiler/compile_driver.h"
#include "frontends/model_loader.h"
#include "compiler/training_stages.h"
#include "ir/verifier.h"
#include "passes/autodiff.h"
#include "passes/partition.h"
#include "passes/pass_manager.h"
#include "tests/partition/partition_check.h"
#include "tests/support/test_paths.h"

namespace kiln::passes {
namespace {

namespace fs = std::filesystem;
using ::testing::IsEmpty;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

// The model returning (output, mean(output)); its joint graph for the loss against every
// floating parameter, as `kiln dump --stage joint` builds it (after the default pipeline).
JointGraph model_joint_graph(const std::string& model) {
  ir::Graph graph = frontends::load_model((kModels / (model + ".kiln")).string());
  ir::Node* output = graph.outputs().at(0);
  ir::Node* loss = graph.create_call("mean", {output}, {}, "loss");
  graph.output_node()->set_args({output, loss});
  return compiler::training_joint_graph(graph, "loss");
}

class ModelPartition : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelPartition, ForwardThenBackwardIsTheJointGraphAndSavesLessThanEveryActivation) {
  JointGraph joint = model_joint_graph(GetParam());
  ASSERT_FALSE(joint.wrt.empty());
  Partition partition = partition_joint_graph(joint);
  std::cout << GetParam() << ":\n" << partition.report();
  EXPECT_NO_THROW(ir::verify(partition.forward));
  EXPECT_NO_THROW(ir::verify(partition.backward));
  EXPECT_LT(partition.saved_bytes, partition.baseline_bytes);
  EXPECT_THAT(partition_test::forbidden_recomputations(joint, partition), IsEmpty());
  partition_test::expect_same_as_joint(joint, partition, {{"s0", 5}});
}

INSTANTIATE_TEST_SUITE_P(Samples, ModelPartition, ::testing::Values("mlp", "cnn", "attention"));

// With given grad_outputs instead of a loss: the backward's inputs end with the tangent.
TEST(ModelPartitionTangents, AttentionWithAGivenOutputGradient) {
  ir::Graph graph = frontends::load_model((kModels / "attention.kiln").string());
  run_pipeline(graph, "simplified");
  JointGraph joint = build_joint_graph(graph, AutodiffOptions::for_grad_outputs());
  ASSERT_EQ(joint.tangents.size(), 1u);
  Partition partition = partition_joint_graph(joint);
  std::vector<ir::Node*> inputs = partition.backward.placeholders();
  ASSERT_EQ(inputs.size(), partition.saved.size() + 1);
  EXPECT_EQ(inputs.back()->name(), joint.tangents[0]);
  EXPECT_LT(partition.saved_bytes, partition.baseline_bytes);
  EXPECT_THAT(partition_test::forbidden_recomputations(joint, partition), IsEmpty());
  partition_test::expect_same_as_joint(joint, partition);
}

TEST(ModelPartitionCpu, MlpForwardAndBackwardCompiledMatchTheJointGraph) {
  JointGraph joint = model_joint_graph("mlp");
  Partition partition = partition_joint_graph(joint);
  CompileOptions options;
  options.cache_dir = fs::path(KILN_BINARY_DIR) / "test-caches" / ("partition-" + std::to_string(getpid()));
  auto run_compiled = [&](const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
    return compiler::compile(graph, options).run(inputs);
  };
  std::map<std::string, int64_t> symbols{{"s0", 7}};
  std::map<std::string, Tensor> inputs = partition_test::random_inputs(joint.graph, symbols);
  std::vector<Tensor> expected = ir::interpret(joint.graph, inputs);
  std::vector<Tensor> actual = partition_test::run_partitioned(partition, inputs, run_compiled);
  fs::remove_all(*options.cache_dir);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(test_support::compare_tensors(expected[i], actual[i], 1e-4, 1e-6), "") << "output " << i;
}

}  // namespace
}  // namespace kiln::passes
