// kiln::trace and kiln::Var (kiln/trace.h, kiln/var.h): the recorded graph's nodes, their
// source locations and module paths, in-place ops and their functionalization, hooks,
// train/eval, and the errors a user meets while tracing.
#include <gtest/gtest.h>

#include "frontends/module/trace_graph.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "kiln/kiln.h"
#include "passes/functionalize.h"
#include "tests/training/training_test_support.h"

namespace kiln::training_test {
namespace {

namespace F = nn::functional;

int count_target(const ir::Graph& graph, const std::string& target) {
  int count = 0;
  for (ir::Node* node : graph.nodes()) count += node->op() == ir::OpKind::call_function && node->target() == target;
  return count;
}

ir::Node* first_call(const ir::Graph& graph, const std::string& target) {
  for (ir::Node* node : graph.nodes()) {
    if (node->op() == ir::OpKind::call_function && node->target() == target) return node;
  }
  return nullptr;
}

struct TwoLayer : nn::Module {
  nn::Linear fc1{6, 5};
  nn::Dropout drop{0.5};
  nn::Linear fc2{5, 3};
  int fc1_line = 0;
  TwoLayer() : Module("TwoLayer") {
    register_module("fc1", fc1);
    register_module("drop", drop);
    register_module("fc2", fc2);
  }
  Var forward(const Var& x) override {
    fc1_line = __LINE__ + 1;
    Var hidden = fc1(x);
    return fc2(drop(hidden.relu()));
  }
};

TEST(Trace, RecordsPlaceholdersParametersByPathAndOutputs) {
  TwoLayer model;
  model.eval();
  ir::Graph graph = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  std::vector<ir::Node*> inputs = graph.placeholders();
  ASSERT_EQ(inputs.size(), 1u);
  EXPECT_EQ(inputs[0]->target(), "x");
  EXPECT_EQ(inputs[0]->value().type_string(), "f32[2, 6]");
  std::vector<std::string> attributes;
  for (ir::Node* node : graph.nodes()) {
    if (node->op() == ir::OpKind::get_attr) attributes.push_back(node->target());
  }
  EXPECT_EQ(attributes, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(graph.parameters().size(), 4u);
  EXPECT_TRUE(graph.parameter("fc1.weight")->shares_storage_with(model.fc1.parameter("weight")));
  EXPECT_EQ(count_target(graph, "linear"), 2);
  EXPECT_EQ(graph.outputs().at(0)->value().type_string(), "f32[2, 3]");
}

// Layers inside an nn::Sequential run from Kiln's Sequential::forward: their nodes take the
// line where the user called the Sequential (the innermost call site outside Kiln), with each
// layer's module path.
struct WithSequential : nn::Module {
  nn::Sequential body{nn::Linear(6, 5), nn::ReLU(), nn::Linear(5, 3)};
  int body_line = 0;
  WithSequential() : Module("WithSequential") { register_module("body", body); }
  Var forward(const Var& x) override {
    body_line = __LINE__ + 1;
    return body(x);
  }
};

TEST(Trace, LayersInsideASequentialRecordTheUsersLine) {
  WithSequential model;
  ir::Graph graph = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  int calls = 0;
  for (ir::Node* node : graph.nodes()) {
    if (node->op() != ir::OpKind::call_function) continue;
    ++calls;
    EXPECT_NE(node->source.file.find("trace_test.cpp"), std::string::npos) << ir::describe(*node) << ": " << node->source.file;
    EXPECT_EQ(node->source.line, model.body_line) << ir::describe(*node);
  }
  EXPECT_GE(calls, 3);
  EXPECT_EQ(first_call(graph, "linear")->source.module_path, "body.0");
  EXPECT_EQ(first_call(graph, "relu")->source.module_path, "body.1");
}

TEST(Trace, RegisteredBuffersAreBuffersInTheGraphSignature) {
  nn::BatchNorm2d bn(3);
  bn.train();
  ir::Graph graph = trace_graph(bn, {Tensor::zeros({2, 3, 4, 4}, DType::f32)});
  const ir::GraphSignature& signature = graph.signature();
  for (const char* name : {"weight", "bias"}) EXPECT_EQ(signature.attribute_kind(name), ir::InputKind::parameter) << name;
  for (const char* name : {"running_mean", "running_var", "num_batches_tracked"})
    EXPECT_EQ(signature.attribute_kind(name), ir::InputKind::buffer) << name;
  // Functionalized, the train-mode updates of the buffers are BUFFER_MUTATION outputs.
  EXPECT_TRUE(passes::functionalize(graph));
  std::vector<std::string> written;
  for (const auto& [index, spec] : graph.signature().mutations()) {
    EXPECT_EQ(spec.kind, ir::OutputKind::buffer_mutation) << spec.target;
    written.push_back(spec.target);
  }
  EXPECT_EQ(written, (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
}

TEST(Trace, NodesCarryTheUsersSourceLocationAndModulePath) {
  TwoLayer model;
  model.eval();
  ir::Graph graph = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  ir::Node* linear = first_call(graph, "linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->source.module_path, "fc1");
  EXPECT_NE(linear->source.file.find("trace_test.cpp"), std::string::npos) << linear->source.file;
  EXPECT_EQ(linear->source.line, model.fc1_line) << "the location of the user's fc1(x), not Kiln's linear.cpp";
  ir::Node* relu = first_call(graph, "relu");
  EXPECT_EQ(relu->source.module_path, "") << "relu ran in the root module's forward";
  EXPECT_EQ(relu->source.line, model.fc1_line + 1);
  for (ir::Node* node : graph.nodes()) {
    if (node->op() == ir::OpKind::call_function) {
      EXPECT_FALSE(node->source.empty()) << ir::describe(*node);
    }
  }
  ir::PrintOptions options;
  options.show_source = true;
  std::string text = ir::print_graph(graph, options);
  EXPECT_NE(text.find("trace_test.cpp:" + std::to_string(model.fc1_line) + " fc1"), std::string::npos) << text;
  EXPECT_NE(text.find(" fc2"), std::string::npos) << text;
}

TEST(Trace, TrainModeRecordsDropoutAndEvalModeDoesNot) {
  TwoLayer model;
  model.train();
  ir::Graph training = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  EXPECT_EQ(count_target(training, "dropout"), 1);
  EXPECT_EQ(first_call(training, "dropout")->source.module_path, "drop");
  model.eval();
  ir::Graph inference = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  EXPECT_EQ(count_target(inference, "dropout"), 0);
  EXPECT_EQ(training.size(), inference.size() + 1);
}

TEST(Trace, ForwardHooksFireAndMayReplaceOutputs) {
  TwoLayer model;
  model.eval();
  std::vector<std::string> fired;
  size_t handle = model.fc2.register_forward_hook(
      [&](nn::Module& module, const std::vector<Var>& inputs, std::vector<Var>& outputs) {
        fired.push_back(module.path() + " " + inputs.at(0).type_string() + " -> " + outputs.at(0).type_string());
        outputs[0] = outputs[0] * 2.0;
      });
  ir::Graph graph = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  EXPECT_EQ(fired, (std::vector<std::string>{"fc2 f32[2, 5] -> f32[2, 3]"}));
  EXPECT_EQ(graph.outputs().at(0)->target(), "mul");
  EXPECT_EQ(graph.outputs().at(0)->source.module_path, "fc2");
  model.fc2.remove_forward_hook(handle);
  ir::Graph without = trace_graph(model, {Tensor::zeros({2, 6}, DType::f32)});
  EXPECT_EQ(fired.size(), 1u);
  EXPECT_EQ(without.outputs().at(0)->target(), "linear");
}

std::string trace_error(nn::Module& module, const std::vector<Tensor>& inputs) {
  try {
    trace_graph(module, inputs);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(TraceErrors, WrongInputShapeToLinearNamesTheModulePathAndShapes) {
  TwoLayer model;
  std::string message = trace_error(model, {Tensor::zeros({2, 7}, DType::f32)});
  EXPECT_NE(message.find("Linear 'fc1'"), std::string::npos) << message;
  EXPECT_NE(message.find("expected an input of shape [..., 6]"), std::string::npos) << message;
  EXPECT_NE(message.find("got f32[2, 7]"), std::string::npos) << message;
  EXPECT_NE(message.find("trace_test.cpp:" + std::to_string(model.fc1_line)), std::string::npos) << message;
}

TEST(TraceErrors, AShapeRuleErrorIsPrefixedWithTheUsersLocation) {
  int line = 0;
  try {
    trace_graph([&](const std::vector<Var>& in) -> std::vector<Var> {
            line = __LINE__ + 1;
            return {in[0].matmul(in[1])};
          },
          {ir::TensorMeta::contiguous(DType::f32, {2, 3}), ir::TensorMeta::contiguous(DType::f32, {4, 5})});
    FAIL();
  } catch (const Error& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("trace_test.cpp:" + std::to_string(line) + ": "), std::string::npos) << message;
    EXPECT_NE(message.find("matmul"), std::string::npos) << message;
  }
}

TEST(TraceErrors, AVarOfAnEndedTraceIsRejected) {
  Var leaked;
  trace_graph([&](const std::vector<Var>& in) -> std::vector<Var> {
          leaked = in[0];
          return {in[0].relu()};
        },
        {ir::TensorMeta::contiguous(DType::f32, {2})});
  try {
    trace_graph([&](const std::vector<Var>& in) -> std::vector<Var> { return {in[0] + leaked}; },
          {ir::TensorMeta::contiguous(DType::f32, {2})});
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("another trace"), std::string::npos) << error.what();
  }
}

// Tensor methods against values worked out by hand.
TEST(VarOps, RecordTheRegistryOpsAndComputeWhatPyTorchWould) {
  ir::Graph graph = trace_graph(
      [](const std::vector<Var>& in) -> std::vector<Var> {
        const Var& x = in[0];  // [[1, 2, 3], [4, 5, 6]]
        const Var& rows = in[1];  // [1, 0, 1]
        Var masked = x.masked_fill(x > 3, 0.0);               // [[1, 2, 3], [0, 0, 0]]
        Var picked = x.index(rows).sum({1});                  // [15, 6, 15]
        Var joined = cat({x.t().reshape({-1}), x.flatten()});  // [1, 4, 2, 5, 3, 6, 1, ..., 6]
        Var mean = x.mean({0}, true).squeeze(0);               // [2.5, 3.5, 4.5]
        Var scaled = (2 - x.slice(1, 1, std::nullopt)) * 10;  // [[0, -10], [-30, -40]]
        Var counted = (x >= 2).to(DType::i64).sum();           // 5
        Var softmax = x.select(0, 0).softmax(0);
        Var chosen = where(x == 5, x, -1);                     // [[-1, -1, -1], [-1, 5, -1]]
        return {masked, picked, joined, mean, scaled, counted, softmax, chosen,
                x.unsqueeze(0).permute({2, 0, 1}).view({3, 2})};  // [[1, 4], [2, 5], [3, 6]]
      },
      {ir::TensorMeta::contiguous(DType::f32, {2, 3}), ir::TensorMeta::contiguous(DType::i64, {3})});
  std::vector<Tensor> out = ir::interpret(
      graph, {{"x0", Tensor::from_vector<double>({2, 3}, {1, 2, 3, 4, 5, 6}, DType::f32)},
              {"x1", Tensor::from_vector<int64_t>({3}, {1, 0, 1}, DType::i64)}});
  auto f32 = [](const Sizes& sizes, std::vector<double> values) { return Tensor::from_vector(sizes, values, DType::f32); };
  EXPECT_EQ(mismatch(f32({2, 3}, {1, 2, 3, 0, 0, 0}), out[0]), "");
  EXPECT_EQ(mismatch(f32({3}, {15, 6, 15}), out[1]), "");
  EXPECT_EQ(mismatch(f32({12}, {1, 4, 2, 5, 3, 6, 1, 2, 3, 4, 5, 6}), out[2]), "");
  EXPECT_EQ(mismatch(f32({3}, {2.5, 3.5, 4.5}), out[3]), "");
  EXPECT_EQ(mismatch(f32({2, 2}, {0, -10, -30, -40}), out[4]), "");
  EXPECT_EQ(out[5].dtype(), DType::i64);
  EXPECT_EQ(out[5].item(), 5);
  double total = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_EQ(mismatch(f32({3}, {std::exp(1.0) / total, std::exp(2.0) / total, std::exp(3.0) / total}), out[6]), "");
  EXPECT_EQ(mismatch(f32({2, 3}, {-1, -1, -1, -1, 5, -1}), out[7]), "");
  EXPECT_EQ(mismatch(f32({3, 2}, {1, 4, 2, 5, 3, 6}), out[8]), "");
  EXPECT_EQ(count_target(graph, "index_select"), 1);
  EXPECT_EQ(count_target(graph, "where"), 2);
}

// Var::erfinv records erfinv; erf undoes it.
TEST(VarOps, ErfinvRecordsItsOpAndErfUndoesIt) {
  ir::Graph graph = trace_graph([](const std::vector<Var>& in) -> std::vector<Var> { return {in[0].erfinv().erf()}; },
                          {ir::TensorMeta::contiguous(DType::f64, {4})});
  EXPECT_EQ(count_target(graph, "erfinv"), 1);
  Tensor x = Tensor::from_vector<double>({4}, {-0.9, -0.25, 0.0, 0.75}, DType::f64);
  std::vector<Tensor> out = ir::interpret(graph, {{"x", x}});  // a lone input is named x
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(out[0].flat_double(i), x.flat_double(i), 1e-15);
}

TEST(VarOps, InPlaceMethodsRecordInPlaceOpsThatFunctionalizeAway) {
  ir::Graph graph = trace_graph(
      [](const std::vector<Var>& in) -> std::vector<Var> {
        Var y = in[0].clone();
        y.mul_(3).add_(1);
        y += in[0];
        y.slice(0, 0, 2).zero_();
        y.relu_();
        return {y, y * y};
      },
      {ir::TensorMeta::contiguous(DType::f32, {4})});
  for (const char* op : {"mul_", "add_", "fill_", "relu_"}) EXPECT_GE(count_target(graph, op), 1) << op;
  EXPECT_EQ(count_target(graph, "add_"), 2);
  std::map<std::string, Tensor> inputs{{"x", Tensor::from_vector<double>({4}, {1, -2, 3, -4}, DType::f32)}};
  std::vector<Tensor> eager = ir::interpret(graph, inputs);
  // y = relu(4x + 1) with the first two zeroed: [0, 0, 13, 0].
  EXPECT_EQ(mismatch(Tensor::from_vector<double>({4}, {0, 0, 13, 0}, DType::f32), eager[0]), "");
  EXPECT_TRUE(passes::functionalize(graph));
  for (ir::Node* node : graph.nodes()) EXPECT_NE(node->target().back(), '_') << ir::describe(*node);
  std::vector<Tensor> functional = ir::interpret(graph, inputs);
  EXPECT_EQ(mismatch(eager[0], functional[0]), "");
  EXPECT_EQ(mismatch(eager[1], functional[1]), "");
}

TEST(VarOps, FunctionalLossesAndAttentionTrace) {
  ir::Graph graph = trace_graph(
      [](const std::vector<Var>& in) -> std::vector<Var> {
        Var logits = in[0];
        Var target = in[1];
        Var q = logits.view({1, 2, 2, 2});
        return {F::cross_entropy(logits, target), F::nll_loss(F::log_softmax(logits, 1), target),
                F::mse_loss(logits, logits * 0.5, "sum"), F::scaled_dot_product_attention(q, q, q, {}, 0, true)};
      },
      {ir::TensorMeta::contiguous(DType::f32, {2, 4}), ir::TensorMeta::contiguous(DType::i64, {2})});
  std::vector<Tensor> out = ir::interpret(graph, {{"x0", Tensor::from_vector<double>({2, 4}, {1, 2, 3, 4, 0, 0, 0, 0}, DType::f32)},
                                                  {"x1", Tensor::from_vector<int64_t>({2}, {3, 1}, DType::i64)}});
  // Row 0: -log softmax at class 3; row 1: log 4.
  double row0 = -(4 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0)));
  double expected = (row0 + std::log(4.0)) / 2;
  EXPECT_NEAR(out[0].item(), expected, 1e-5);
  EXPECT_NEAR(out[1].item(), expected, 1e-5);
  EXPECT_NEAR(out[2].item(), 0.25 * (1 + 4 + 9 + 16), 1e-5);
  EXPECT_EQ(out[3].sizes(), (Sizes{1, 2, 2, 2}));
}

}  // namespace
}  // namespace kiln::training_test
