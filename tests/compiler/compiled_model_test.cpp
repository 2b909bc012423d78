// CompiledModel (compiler/compiled_model.h) over a stand-in artifact, so that what it adds to any
// target's loader is seen alone: inputs handed over in the artifact's order (contiguous),
// parameters read from the graph, fallback calls answered by the graph's reference kernels, and
// the mutation outputs of the graph's signature written back into the inputs and parameters
// (wherever they stand among the outputs), the artifact told which parameter changed (a cuda
// artifact keeps device copies), and each call's inputs checked against the placeholders.
#include "compiler/compiled_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "compiler/backend_common.h"
#include "kiln/error.h"

namespace kiln::compiler {
namespace {

using ::testing::ElementsAre;

// Returns preset outputs and records what it was given.
class StandInArtifact final : public Artifact {
 public:
  StandInArtifact(std::vector<ArtifactTensor> inputs, std::vector<ArtifactTensor> outputs,
                  std::vector<ArtifactParameter> parameters, std::vector<Tensor> results)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)), parameters_(std::move(parameters)),
        results_(std::move(results)) {}

  const std::filesystem::path& directory() const override { return directory_; }
  const std::vector<ArtifactTensor>& inputs() const override { return inputs_; }
  const std::vector<ArtifactTensor>& outputs() const override { return outputs_; }
  const std::vector<ArtifactParameter>& parameters() const override { return parameters_; }
  const std::vector<std::string>& fallbacks() const override { return fallbacks_; }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& parameters,
                          const FallbackHandler&, int num_threads) override {
    given_inputs.clear();
    given_parameters.clear();
    for (const Tensor& input : inputs) given_inputs.push_back(input.clone());  // the values as given
    for (const Tensor& parameter : parameters) given_parameters.push_back(parameter.clone());
    given_threads = num_threads;
    std::vector<Tensor> copies;
    for (const Tensor& result : results_) copies.push_back(result.clone());
    return copies;
  }
  void parameter_changed(size_t index) override { changed.push_back(index); }

  std::vector<Tensor> given_inputs, given_parameters;
  int given_threads = -1;
  std::vector<size_t> changed;

 private:
  std::filesystem::path directory_ = "/stand-in";
  std::vector<ArtifactTensor> inputs_, outputs_;
  std::vector<ArtifactParameter> parameters_;
  std::vector<std::string> fallbacks_;
  std::vector<Tensor> results_;
};

Tensor floats(std::vector<double> values) { return Tensor::from_doubles({int64_t(values.size())}, values, DType::f32); }

// y = x + p, with x.add_(1) and p.mul_(2) afterwards: functionalized, y then x's and p's new values.
ir::Graph mutating_graph() {
  ir::Graph graph;
  graph.set_parameter("p", floats({10, 20, 30}));
  ir::Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {3}));
  ir::Node* p = graph.create_get_attr("p");
  ir::Node* y = graph.create_call("add", {x, p});
  graph.create_call("add_", {x, 1.0});
  graph.create_call("mul_", {p, 2.0});
  graph.create_output({y});
  return simplified_graph(graph, /*freeze=*/false);
}

// The artifact's results for mutating_graph(): y, and x's and p's new values where the graph's
// signature puts them.
std::vector<Tensor> results_for(const ir::Graph& graph) {
  std::vector<Tensor> results;
  for (size_t i = 0; i < graph.output_names().size(); ++i) {
    ir::OutputSpec spec = graph.signature().output(i);
    if (!spec.is_mutation()) results.push_back(floats({11, 22, 33}));
    else if (spec.target == "x") results.push_back(floats({2, 3, 4}));
    else results.push_back(floats({20, 40, 60}));
  }
  return results;
}

std::unique_ptr<StandInArtifact> stand_in(std::vector<Tensor> results) {
  std::vector<ArtifactTensor> outputs(results.size(), ArtifactTensor{"out", DType::f32, 1});
  return std::make_unique<StandInArtifact>(std::vector<ArtifactTensor>{{"x", DType::f32, 1}}, outputs,
                                           std::vector<ArtifactParameter>{{"p", DType::f32, {3}}}, std::move(results));
}

TEST(CompiledModel, WritesMutatedInputsAndParametersBackAndTellsTheArtifact) {
  ir::Graph graph = mutating_graph();
  ASSERT_EQ(graph.signature().mutations().size(), 2u);  // x and p are copied back
  auto owned = stand_in(results_for(graph));
  StandInArtifact& artifact = *owned;
  CompiledModel model(graph.clone(), std::move(owned), CompileResult{});

  Tensor x = floats({1, 2, 3});
  std::vector<Tensor> outputs = model.run({{"x", x}}, /*num_threads=*/3);
  ASSERT_EQ(outputs.size(), 1u);  // the mutation outputs are not the caller's outputs
  EXPECT_EQ(outputs[0].flat_double(2), 33);
  EXPECT_EQ(artifact.given_threads, 3);
  ASSERT_EQ(artifact.given_parameters.size(), 1u);
  EXPECT_EQ(artifact.given_parameters[0].flat_double(0), 10);
  // The caller's input and the model's parameter now hold the new values.
  EXPECT_EQ(x.flat_double(0), 2);
  EXPECT_EQ(x.flat_double(2), 4);
  EXPECT_EQ(model.graph().parameters().at("p").flat_double(1), 40);
  EXPECT_THAT(artifact.changed, ElementsAre(0u));
  // The next run passes the parameter's new value.
  model.run({{"x", x}});
  EXPECT_EQ(artifact.given_parameters[0].flat_double(1), 40);
}

// The signature, not the position, says which outputs are mutations: here the first one.
TEST(CompiledModel, AMutationOutputNeedNotComeLast) {
  ir::Graph graph;
  ir::Node* input = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {3}));
  ir::Node* doubled = graph.create_call("mul", {input, 2.0});
  ir::Node* y = graph.create_call("add", {input, 1.0});
  graph.create_output({doubled, y});
  graph.signature().set_output(0, ir::OutputSpec{ir::OutputKind::user_input_mutation, "x"});
  auto owned = std::make_unique<StandInArtifact>(
      std::vector<ArtifactTensor>{{"x", DType::f32, 1}},
      std::vector<ArtifactTensor>{{"doubled", DType::f32, 1}, {"y", DType::f32, 1}}, std::vector<ArtifactParameter>{},
      std::vector<Tensor>{floats({2, 4, 6}), floats({2, 3, 4})});
  CompiledModel model(std::move(graph), std::move(owned), CompileResult{});
  Tensor x = floats({1, 2, 3});
  std::vector<Tensor> outputs = model.run({{"x", x}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].flat_double(0), 2);  // y
  EXPECT_EQ(x.flat_double(2), 6);           // x holds the mutation output
}

// Every call checks its inputs against the graph's placeholders (found once, when the model is
// made) as the interpreter does, with the interpreter's words; also after the model has moved.
TEST(CompiledModel, EachCallChecksItsInputsAsTheInterpreterDoes) {
  ir::Graph graph = mutating_graph();
  CompiledModel made(graph.clone(), stand_in(results_for(graph)), CompileResult{});
  CompiledModel model = std::move(made);
  auto error_of = [&](const std::map<std::string, Tensor>& inputs) -> std::string {
    try {
      model.run(inputs);
    } catch (const Error& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of({}), "missing input 'x' (expected f32[3])");
  EXPECT_EQ(error_of({{"x", floats({1, 2, 3})}, {"z", floats({1})}}), "unknown input 'z'; the graph's inputs are: x");
  EXPECT_EQ(error_of({{"x", floats({1, 2})}}), "input 'x': expected f32[3], got f32[2]: dim 0 is 2, expected 3");
  EXPECT_EQ(error_of({{"x", floats({1, 2, 3})}}), "no error");
  EXPECT_EQ(error_of({{"x", floats({1, 2, 3, 4})}}), "input 'x': expected f32[3], got f32[4]: dim 0 is 4, expected 3");
}

TEST(CompiledModel, AParameterTheGraphLacksOrHoldsOtherwiseIsAnError) {
  ir::Graph graph = mutating_graph();
  auto with_parameter = [&](ArtifactParameter parameter) {
    return std::make_unique<StandInArtifact>(std::vector<ArtifactTensor>{{"x", DType::f32, 1}}, std::vector<ArtifactTensor>{},
                                             std::vector<ArtifactParameter>{std::move(parameter)}, std::vector<Tensor>{});
  };
  try {
    CompiledModel model(graph.clone(), with_parameter({"q", DType::f32, {3}}), CompileResult{});
    ADD_FAILURE() << "accepted a parameter the graph lacks";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "the model has no parameter 'q'");
  }
  try {
    CompiledModel model(graph.clone(), with_parameter({"p", DType::f32, {4}}), CompileResult{});
    ADD_FAILURE() << "accepted a parameter of another shape";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "parameter 'p' is f32 with another shape than the compiled model's");
  }
}

}  // namespace
}  // namespace kiln::compiler
