// Tests for the reference interpreter (ir/interpreter.h): symbol binding and every input
// check with its message, parameters, outputs that alias inputs, the meta check that catches
// shape-rule bugs, value recording, and the time it takes on the bundled sample models.
#include "ir/interpreter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "ir/model_file.h"
#include "tests/ir/reference_test_support.h"
#include "tests/support/test_paths.h"

namespace kiln::ir {
namespace {

using testing::expect_error;
using testing::expect_tensor;
using testing::tensor;
using testing::values_of;

SymInt s0 = SymInt::symbol("s0");

// x: f32[s0, 4] -> relu(x @ W1^T + b1) @ W2^T; W1 [3, 4], b1 [3], W2 [2, 3].
struct Mlp {
  Graph graph;
  Tensor w1 = tensor({3, 4}, {1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 1, 1});
  Tensor b1 = tensor({3}, {0, -10, 1});
  Tensor w2 = tensor({2, 3}, {1, 1, 0, 0, 0, 2});
  Mlp() {
    graph.set_parameter("fc1.weight", w1);
    graph.set_parameter("fc1.bias", b1);
    graph.set_parameter("fc2.weight", w2);
    Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {s0, SymInt(4)}));
    Node* weight1 = graph.create_get_attr("fc1.weight");
    Node* bias1 = graph.create_get_attr("fc1.bias");
    Node* weight2 = graph.create_get_attr("fc2.weight");
    Node* hidden = graph.create_call("linear", {x, weight1, bias1});
    Node* relu = graph.create_call("relu", {hidden});
    Node* out = graph.create_call("linear", {relu, weight2});
    graph.create_output({out});
  }
  // The same computation written as loops.
  std::vector<double> expected(const std::vector<double>& x, int64_t rows) const {
    std::vector<double> a = values_of(w1), b = values_of(b1), c = values_of(w2), out;
    for (int64_t n = 0; n < rows; ++n) {
      double h[3];
      for (int j = 0; j < 3; ++j) {
        double sum = b[size_t(j)];
        for (int k = 0; k < 4; ++k) sum += a[size_t(j * 4 + k)] * x[size_t(n * 4 + k)];
        h[j] = sum > 0 ? sum : 0;
      }
      for (int i = 0; i < 2; ++i) out.push_back(c[size_t(i * 3)] * h[0] + c[size_t(i * 3 + 1)] * h[1] + c[size_t(i * 3 + 2)] * h[2]);
    }
    return out;
  }
};

TEST(Interpreter, RunsAnMlpForAnyBatchSize) {
  Mlp mlp;
  for (int64_t rows : {1, 2, 5}) {
    std::vector<double> x;
    for (int64_t i = 0; i < rows * 4; ++i) x.push_back(double(i % 7) - 2.5);
    Interpreter interpreter;
    std::vector<Tensor> out = interpreter.run(mlp.graph, {{"x", tensor({rows, 4}, x)}});
    ASSERT_EQ(out.size(), 1u);
    expect_tensor(out[0], DType::f32, {rows, 2}, mlp.expected(x, rows));
    EXPECT_EQ(interpreter.bindings().at("s0"), rows);
  }
}

TEST(Interpreter, SizeZeroBatch) {
  Mlp mlp;
  std::vector<Tensor> out = interpret(mlp.graph, {{"x", Tensor::zeros({0, 4}, DType::f32)}});
  expect_tensor(out.at(0), DType::f32, {0, 2}, {});
}

TEST(Interpreter, ReportsAMissingInput) {
  Mlp mlp;
  expect_error([&] { interpret(mlp.graph, {}); }, {"missing input 'x' (expected f32[s0, 4])"});
}

TEST(Interpreter, ReportsAnUnknownInput) {
  Mlp mlp;
  expect_error([&] { interpret(mlp.graph, {{"x", Tensor::zeros({1, 4}, DType::f32)}, {"y", Tensor::zeros({1}, DType::f32)}}); },
               {"unknown input 'y'", "inputs are: x"});
}

TEST(Interpreter, ReportsAWrongDtype) {
  Mlp mlp;
  expect_error([&] { interpret(mlp.graph, {{"x", Tensor::zeros({2, 4}, DType::i64)}}); },
               {"input 'x': expected f32[s0, 4], got i64[2, 4]: dtype is i64, expected f32"});
}

TEST(Interpreter, ReportsAWrongRank) {
  Mlp mlp;
  expect_error([&] { interpret(mlp.graph, {{"x", Tensor::zeros({4}, DType::f32)}}); },
               {"input 'x': expected f32[s0, 4], got f32[4]: rank is 1, expected 2"});
}

TEST(Interpreter, ReportsAWrongStaticSize) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {s0, SymInt(784)}));
  graph.create_output({graph.create_call("relu", {x})});
  expect_error([&] { interpret(graph, {{"x", Tensor::zeros({3, 785}, DType::f32)}}); },
               {"input 'x': expected f32[s0, 784], got f32[3, 785]: dim 1 is 785, expected 784"});
}

TEST(Interpreter, ReportsInputsThatDisagreeOnASymbol) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {s0, SymInt(2)}));
  Node* y = graph.create_placeholder("y", TensorMeta::contiguous(DType::f32, {s0}));
  graph.create_output({x, y});
  expect_error([&] { interpret(graph, {{"x", Tensor::zeros({3, 2}, DType::f32)}, {"y", Tensor::zeros({4}, DType::f32)}}); },
               {"inputs 'x' and 'y' disagree on s0: 'x' dim 0 is 3, 'y' dim 0 is 4"});
  std::map<std::string, int64_t> bindings =
      bind_symbols(graph, {{"x", Tensor::zeros({3, 2}, DType::f32)}, {"y", Tensor::zeros({3}, DType::f32)}});
  EXPECT_EQ(bindings, (std::map<std::string, int64_t>{{"s0", 3}}));
}

TEST(Interpreter, ChecksCompoundDimsOnceSymbolsAreBound) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {s0}));
  Node* y = graph.create_placeholder("y", TensorMeta::contiguous(DType::f32, {s0 * SymInt(2)}));
  graph.create_output({x, y});
  EXPECT_NO_THROW(interpret(graph, {{"x", Tensor::zeros({3}, DType::f32)}, {"y", Tensor::zeros({6}, DType::f32)}}));
  expect_error([&] { interpret(graph, {{"x", Tensor::zeros({3}, DType::f32)}, {"y", Tensor::zeros({5}, DType::f32)}}); },
               {"input 'y'", "dim 0 is 5, expected 2*s0 = 6"});
}

TEST(Interpreter, ReportsAMissingParameter) {
  Mlp mlp;
  mlp.graph.remove_parameter("fc1.bias");
  expect_error([&] { interpret(mlp.graph, {{"x", Tensor::zeros({1, 4}, DType::f32)}}); },
               {"%fc1_bias", "no parameter named 'fc1.bias'"});
}

TEST(Interpreter, OutputsThatAliasInputsAndParametersAreReturnedAsIs) {
  Graph graph;
  Tensor weight = tensor({2}, {1, 2});
  graph.set_parameter("w", weight);
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(2)}));
  Node* w = graph.create_get_attr("w");
  graph.create_output({x, w, x});
  Tensor input = tensor({2}, {3, 4});
  std::vector<Tensor> out = interpret(graph, {{"x", input}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].shares_storage_with(input));
  EXPECT_TRUE(out[1].shares_storage_with(*graph.parameter("w")));
  EXPECT_TRUE(out[2].shares_storage_with(input));
}

TEST(Interpreter, AMetaThatDisagreesWithTheKernelIsAnInternalError) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(2)}));
  NodeMeta wrong;
  wrong.values.push_back(TensorMeta::contiguous(DType::f32, {SymInt(3)}));  // add of [2] and a number is [2]
  Node* bad = graph.create_node(OpKind::call_function, "add", {x, 1.0}, {}, "bad", wrong);
  graph.create_output({bad});
  try {
    interpret(graph, {{"x", Tensor::zeros({2}, DType::f32)}});
    ADD_FAILURE() << "expected an InternalError";
  } catch (const InternalError& error) {
    std::string message = error.what();
    EXPECT_NE(message.find("node %bad (add)"), std::string::npos) << message;
    EXPECT_NE(message.find("f32[2]"), std::string::npos) << message;
    EXPECT_NE(message.find("f32[3]"), std::string::npos) << message;
  }
  // With the check off the kernel's result is returned.
  InterpreterOptions options;
  options.check_meta = false;
  std::vector<Tensor> out = Interpreter(options).run(graph, {{"x", Tensor::zeros({2}, DType::f32)}});
  expect_tensor(out.at(0), DType::f32, {2}, {1, 1});
}

TEST(Interpreter, AKernelErrorNamesTheNode) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::i64, {SymInt(2)}));
  Node* y = graph.create_placeholder("y", TensorMeta::contiguous(DType::i64, {SymInt(2)}));
  graph.create_output({graph.create_call("remainder", {x, y}, {}, "ratio")});
  expect_error([&] { interpret(graph, {{"x", tensor({2}, {1, 2}, DType::i64)}, {"y", tensor({2}, {1, 0}, DType::i64)}}); },
               {"node %ratio (remainder): ZeroDivisionError"});
}

TEST(Interpreter, RecordsSnapshotsOfEveryValue) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(2)}));
  Node* doubled = graph.create_call("mul", {x, 2.0});
  graph.create_call("add_", {doubled, 1.0});  // mutates %mul after it was recorded
  graph.create_output({doubled});
  InterpreterOptions options;
  options.record_values = true;
  Interpreter interpreter(options);
  std::vector<Tensor> out = interpreter.run(graph, {{"x", tensor({2}, {1, 2})}});
  expect_tensor(out.at(0), DType::f32, {2}, {3, 5});
  const auto& recorded = interpreter.recorded();
  ASSERT_TRUE(recorded.count("mul"));
  expect_tensor(recorded.at("mul").at(0), DType::f32, {2}, {2, 4});
  expect_tensor(recorded.at("x").at(0), DType::f32, {2}, {1, 2});
  expect_tensor(recorded.at("add_").at(0), DType::f32, {2}, {3, 5});
}

TEST(Interpreter, NonContiguousInputs) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(DType::f32, {SymInt(3), SymInt(2)}));
  graph.create_output({graph.create_call("sum", {x, Argument::ints({1})})});
  Tensor base = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> out = interpret(graph, {{"x", base.transpose(0, 1)}});
  expect_tensor(out.at(0), DType::f32, {3}, {5, 7, 9});
}

// The bundled samples (an MLP, a small CNN, an attention block, in-place ops) each run well
// under a second.
TEST(Interpreter, SamplesRunQuickly) {
  namespace fs = std::filesystem;
  fs::path models = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  for (const char* name : {"mlp", "cnn", "attention", "inplace"}) {
    fs::path path = models / (std::string(name) + ".kiln");
    if (!fs::exists(path)) continue;
    SCOPED_TRACE(name);
    Graph graph = load_model(path.string());
    std::map<std::string, Tensor> inputs;
    for (Node* placeholder : graph.placeholders()) {
      Sizes sizes;
      for (const SymInt& dim : placeholder->value().shape) sizes.push_back(dim.maybe_constant().value_or(4));
      inputs[placeholder->target()] = Tensor::full(sizes, 0.25, placeholder->value().dtype);
    }
    auto start = std::chrono::steady_clock::now();
    std::vector<Tensor> out = interpret(graph, inputs);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_FALSE(out.empty());
    EXPECT_LT(seconds, 0.5) << name << " took " << seconds << " s";
  }
}

}  // namespace
}  // namespace kiln::ir
