// Property tests of compiler/subgraphs.h on random functional graphs (simplified random graphs
// of tests/support/random_graph.h): a prefix graph returns exactly the values the interpreter
// records for its nodes in the whole graph, a graph with nodes cut into inputs fed with their
// recorded values returns exactly the whole graph's outputs (verify's node search and the
// minifier rely on both), and so do stages run in order (data-parallel training's backward).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "compiler/backend_common.h"
#include "compiler/subgraphs.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"
#include "tests/support/random_graph.h"

namespace kiln {
namespace {

bool identical(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  Tensor x = a.contiguous().to(DType::f64), y = b.contiguous().to(DType::f64);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double p = x.data<double>()[i], q = y.data<double>()[i];
    if (!(p == q || (p != p && q != q))) return false;
  }
  return true;
}

struct Recorded {
  std::vector<Tensor> outputs;
  std::map<std::string, std::vector<Tensor>> values;
};

Recorded run_recording(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  ir::InterpreterOptions options;
  options.record_values = true;
  ir::Interpreter interpreter(options);
  ir::Graph copy = compiler::isolated_copy(graph);
  Recorded recorded;
  recorded.outputs = interpreter.run(copy, compiler::copied_inputs(inputs));
  recorded.values = interpreter.recorded();
  return recorded;
}

class Subgraphs : public ::testing::TestWithParam<uint64_t> {};

TEST_P(Subgraphs, PrefixGraphsReturnTheRecordedValues) {
  test_support::RandomGraphOptions options;
  options.allow_random = false;
  ir::Graph graph = compiler::simplified_graph(test_support::random_graph(GetParam(), options), /*freeze=*/false);
  std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, GetParam());
  Recorded whole = run_recording(graph, inputs);
  std::vector<const ir::Node*> order = compiler::computed_nodes(graph);
  for (size_t k = 0; k < order.size(); ++k) {
    for (bool only_last : {true, false}) {
      ir::Graph prefix = compiler::prefix_graph(graph, order, k, only_last);
      ir::verify(prefix);
      std::vector<ir::Node*> returned = prefix.outputs();
      std::vector<Tensor> got = ir::interpret(prefix, compiler::inputs_of(prefix, compiler::copied_inputs(inputs)));
      ASSERT_EQ(got.size(), returned.size());
      ASSERT_EQ(returned.back()->name(), order[k]->name());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(identical(got[i], whole.values.at(returned[i]->name()).at(0)))
            << "seed " << GetParam() << ", prefix " << k << ", output " << returned[i]->name();
    }
  }
}

TEST_P(Subgraphs, CutGraphsReturnTheWholeGraphsOutputs) {
  test_support::RandomGraphOptions options;
  options.allow_random = false;
  ir::Graph graph = compiler::simplified_graph(test_support::random_graph(GetParam(), options), /*freeze=*/false);
  std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, GetParam());
  Recorded whole = run_recording(graph, inputs);
  std::set<const ir::Node*> returned;
  for (const ir::Node* node : graph.outputs()) returned.insert(node);
  std::mt19937_64 random(GetParam());
  for (int trial = 0; trial < 4; ++trial) {
    std::set<std::string> cut;
    for (const ir::Node* node : compiler::computed_nodes(graph))
      if (!returned.count(node) && random() % 2 == 0) cut.insert(node->name());
    std::map<std::string, Tensor> cut_inputs = inputs;
    ir::Graph piece = compiler::cut_graph(graph, cut, whole.values, cut_inputs);
    ir::verify(piece);
    for (const std::string& name : cut) EXPECT_EQ(piece.find(name), nullptr) << name << " was cut";
    std::vector<Tensor> got = ir::interpret(piece, cut_inputs);
    ASSERT_EQ(got.size(), whole.outputs.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(identical(got[i], whole.outputs[i])) << "seed " << GetParam() << ", trial " << trial << ", output " << i;
  }
}

// Stages cut at random ends, run one after another (each fed the original inputs it reads and
// the values earlier stages returned), return exactly the whole graph's outputs, each from the
// stage output_stage names.
TEST_P(Subgraphs, StagesRunInOrderReturnTheWholeGraphsOutputs) {
  test_support::RandomGraphOptions options;
  options.allow_random = false;
  ir::Graph graph = compiler::simplified_graph(test_support::random_graph(GetParam(), options), /*freeze=*/false);
  if (!graph.signature().mutations().empty()) return;  // stages are cut from functional graphs (86 seeds of 100)
  std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, GetParam());
  std::vector<Tensor> whole = ir::interpret(compiler::isolated_copy(graph), compiler::copied_inputs(inputs));
  std::mt19937_64 random(GetParam() + 1000);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<const ir::Node*> ends;
    for (const ir::Node* node : graph.nodes())
      if (node->op() == ir::OpKind::call_function && random() % 3 == 0) ends.push_back(node);
    compiler::StagedGraph staged = compiler::split_in_stages(graph, ends);
    ASSERT_FALSE(staged.stages.empty());
    ASSERT_EQ(staged.output_stage.size(), whole.size());
    std::map<std::string, Tensor> values;
    for (size_t k = 0; k < staged.stages.size(); ++k) {
      const compiler::GraphStage& stage = staged.stages[k];
      ir::verify(stage.graph);
      std::map<std::string, Tensor> fed = compiler::inputs_of(stage.graph, compiler::copied_inputs(inputs));
      for (const auto& [placeholder, source] : stage.carried) {
        ASSERT_TRUE(values.count(source)) << "stage " << k << " reads " << source << " before a stage returns it";
        fed[placeholder] = values.at(source);
      }
      std::vector<Tensor> got = ir::interpret(stage.graph, fed);
      ASSERT_EQ(got.size(), stage.returns.size());
      for (size_t i = 0; i < got.size(); ++i) values[stage.returns[i]] = got[i];
    }
    const std::vector<ir::Node*> outputs = graph.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::vector<std::string>& returns = staged.stages.at(staged.output_stage[i]).returns;
      EXPECT_NE(std::find(returns.begin(), returns.end(), outputs[i]->name()), returns.end())
          << "seed " << GetParam() << ", trial " << trial << ": output " << i << " is not its stage's";
      ASSERT_TRUE(values.count(outputs[i]->name())) << "output " << i;
      EXPECT_TRUE(identical(values.at(outputs[i]->name()), whole[i]))
          << "seed " << GetParam() << ", trial " << trial << ", output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RandomGraphs, Subgraphs, ::testing::Range<uint64_t>(0, 100));

}  // namespace
}  // namespace kiln
