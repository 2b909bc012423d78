// Eager mode against the reference interpreter, its oracle: on the bundled sample models
// (and PyTorch's goldens for them) and on 200 random graphs with in-place ops, views and
// writes through views, eager mode in the VM's single-thread and multi-thread modes (and with
// kernels dealt to three streams that run at once) gives exactly the interpreter's outputs,
// leaves the inputs exactly as the interpreter leaves them, and fails with exactly its
// message where it fails.
#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "compiler/eager_executor.h"
#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/op_registry.h"
#include "ir/printer.h"
#include "kiln/npy.h"
#include "tests/compiler/eager_test_support.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

using testing::clone_inputs;
using testing::difference;
using testing::eager_options;
using testing::three_stream_options;

namespace fs = std::filesystem;

const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

// ---------------------------------------------------------------- samples

class EagerSample : public ::testing::TestWithParam<std::string> {
 protected:
  ir::Graph load() const { return ir::load_model((kModels / (GetParam() + ".kiln")).string()); }
  fs::path data_dir() const { return kModels / (GetParam() + "_data"); }
  std::map<std::string, Tensor> inputs(const ir::Graph& graph) const {
    std::map<std::string, Tensor> tensors;
    for (ir::Node* placeholder : graph.placeholders())
      tensors[placeholder->target()] =
          read_npy((data_dir() / "inputs" / (placeholder->target() + ".npy")).string());
    return tensors;
  }
};

TEST_P(EagerSample, MatchesTheInterpreterExactlyInEveryVmMode) {
  ir::Graph graph = load();
  std::map<std::string, Tensor> inputs = this->inputs(graph);
  std::vector<Tensor> expected = ir::interpret(graph, clone_inputs(inputs));
  for (int mode = 0; mode < 3; ++mode) {
    SCOPED_TRACE(mode == 0 ? "single-thread VM" : mode == 1 ? "multi-thread VM" : "three streams");
    EagerExecutor eager(mode == 2 ? three_stream_options() : eager_options(mode == 0));
    std::vector<Tensor> actual = eager.run(graph, clone_inputs(inputs));
    EXPECT_EQ(difference(expected, actual), "");
    EXPECT_GT(eager.last_run().kernel_calls, 0u);
    // Run twice on one VM: the second run reuses cached memory and must not see the first.
    EXPECT_EQ(difference(expected, eager.run(graph, clone_inputs(inputs))), "");
  }
}

// |actual - expected| <= 1e-5 + 1e-4 |expected|: PyTorch computed the goldens in f32.
TEST_P(EagerSample, MatchesPyTorch) {
  ir::Graph graph = load();
  std::vector<Tensor> outputs = EagerExecutor().run(graph, inputs(graph));
  std::vector<std::string> names = graph.output_names();
  ASSERT_EQ(outputs.size(), names.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor expected = read_npy((data_dir() / "expected" / (names[i] + ".npy")).string());
    ASSERT_EQ(outputs[i].sizes(), expected.sizes()) << names[i];
    int64_t bad = 0;
    for (int64_t k = 0; k < expected.numel(); ++k) {
      double e = expected.flat_double(k), a = outputs[i].flat_double(k);
      if (!(std::fabs(a - e) <= 1e-5 + 1e-4 * std::fabs(e))) ++bad;
    }
    EXPECT_EQ(bad, 0) << GetParam() << " output " << names[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EagerSample, ::testing::Values("mlp", "cnn", "attention", "inplace"));

// ---------------------------------------------------------------- random graphs

constexpr uint64_t kSeeds = 200;

struct Outcome {
  std::vector<Tensor> outputs;
  std::map<std::string, Tensor> inputs_after;
  std::string error;  // the message when the run threw
};

template <typename Run>
Outcome outcome_of(const std::map<std::string, Tensor>& inputs, Run run) {
  Outcome outcome;
  outcome.inputs_after = clone_inputs(inputs);
  try {
    outcome.outputs = run(outcome.inputs_after);
  } catch (const std::exception& error) {
    outcome.error = error.what();
  }
  return outcome;
}

bool mutates(const ir::Graph& graph) {
  for (const ir::Node* node : graph.nodes()) {
    if (node->op() != ir::OpKind::call_function) continue;
    for (const ir::Param& param : ir::OpRegistry::global().get(node->target()).schema.params)
      if (param.mutated) return true;
  }
  return false;
}

TEST(EagerRandomGraphs, MatchTheInterpreterExactlyInEveryVmMode) {
  EagerExecutor single(eager_options(true));
  EagerExecutor threaded(eager_options(false));
  EagerExecutor streams(three_stream_options());
  size_t mutating_graphs = 0, functional_graphs = 0, host_views = 0, failures = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    ir::Graph graph = test_support::random_graph(seed);
    std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, seed);
    (mutates(graph) ? mutating_graphs : functional_graphs) += 1;

    Outcome expected = outcome_of(inputs, [&](std::map<std::string, Tensor>& in) { return ir::interpret(graph, in); });
    Outcome one = outcome_of(inputs, [&](std::map<std::string, Tensor>& in) { return single.run(graph, in); });
    host_views += single.last_run().host_views;
    Outcome many = outcome_of(inputs, [&](std::map<std::string, Tensor>& in) { return threaded.run(graph, in); });
    Outcome spread = outcome_of(inputs, [&](std::map<std::string, Tensor>& in) { return streams.run(graph, in); });
    if (!expected.error.empty()) ++failures;

    for (const auto& [mode, actual] : {std::pair{"single-thread VM", &one}, std::pair{"multi-thread VM", &many},
                                       std::pair{"three streams", &spread}}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << ", " << mode << "\n" << ir::print_graph(graph));
      EXPECT_EQ(actual->error, expected.error);
      EXPECT_EQ(difference(expected.outputs, actual->outputs), "");
      for (const auto& [name, tensor] : expected.inputs_after)
        EXPECT_EQ(difference(tensor, actual->inputs_after.at(name)), "") << "input " << name << " after the run";
    }
    if (HasFailure()) break;  // one graph's report is enough to read
  }
  std::cout << "random graphs: " << mutating_graphs << " mutate, " << functional_graphs << " are functional; "
            << host_views << " views resolved while building\n";
  if (HasFailure()) return;
  // The mix must cover what the comparison is for.
  EXPECT_GE(mutating_graphs, 20u);
  EXPECT_GE(functional_graphs, 20u);
  EXPECT_GT(host_views, kSeeds);
  EXPECT_EQ(failures, 0u) << "random graphs are meant to run";
}

// The same graphs without in-place ops, and through fresh VMs in both modes, so the
// comparison does not depend on memory reused from an earlier run.
TEST(EagerRandomGraphs, FunctionalGraphsOnFreshVms) {
  test_support::RandomGraphOptions options;
  options.allow_inplace = false;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    ir::Graph graph = test_support::random_graph(seed, options);
    ASSERT_FALSE(mutates(graph)) << "seed " << seed;
    std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, seed);
    std::vector<Tensor> expected = ir::interpret(graph, clone_inputs(inputs));
    for (bool single_thread : {true, false}) {
      std::vector<Tensor> actual = run_eager(graph, clone_inputs(inputs), eager_options(single_thread));
      EXPECT_EQ(difference(expected, actual), "") << "seed " << seed << (single_thread ? ", single" : ", multi")
                                                  << "-thread VM\n" << ir::print_graph(graph);
    }
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace kiln::compiler
