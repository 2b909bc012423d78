// Tests of functionalization (passes/functionalize.h): afterwards no node mutates, and the
// graph computes what the original computed, including the final values of the inputs the
// original wrote (the copy-back outputs). Golden text cases live in
// tests/passes/golden/functionalize/ (run by golden_pass_test.cpp); here every one of them is
// also run for the copy-back values, and the samples against PyTorch's outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/functionalize.h"
#include "passes/graph_queries.h"
#include "kiln/error.h"
#include "kiln/npy.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_paths.h"

namespace kiln::passes {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(KILN_SOURCE_DIR) / "tests" / "passes" / "golden" / "functionalize";
const fs::path kModels = fs::path(KILN_SOURCE_DIR) / "samples" / "models";

std::string read_text(const fs::path& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Tensor tensor(const Sizes& sizes, const std::vector<double>& values, DType dtype = DType::f32) {
  return Tensor::from_doubles(sizes, values, dtype);
}

std::vector<double> values_of(const Tensor& tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.flat_double(i));
  return values;
}

void expect_same(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double a = actual.flat_double(i), e = expected.flat_double(i);
    if (std::isnan(a) && std::isnan(e)) continue;
    ASSERT_NEAR(a, e, 1e-5 + 1e-5 * std::fabs(e)) << what << " element " << i;
  }
}

// Random inputs for every placeholder; symbols bound to 3, integer inputs in [0, 5) so that
// they are valid indices for the cases' dims of 5.
std::map<std::string, Tensor> random_inputs(const ir::Graph& graph, uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::normal_distribution<double> normal;
  std::map<std::string, int64_t> bindings;
  std::map<std::string, Tensor> inputs;
  for (ir::Node* node : graph.placeholders()) {
    const ir::TensorMeta& meta = node->value();
    for (const ir::SymInt& dim : meta.shape)
      for (const std::string& symbol : dim.free_symbols()) bindings.emplace(symbol, 3);
    Tensor value = Tensor::empty(meta.evaluate_shape(bindings), meta.dtype);
    std::vector<int64_t> index(size_t(value.dim()), 0);
    for (int64_t i = 0; i < value.numel(); ++i) {
      int64_t rest = i;
      for (int64_t d = value.dim() - 1; d >= 0; --d) {
        index[size_t(d)] = rest % value.size(d);
        rest /= value.size(d);
      }
      if (is_floating(meta.dtype)) value.set_double(index, normal(generator));
      else value.set_int(index, int64_t(generator() % 5));
    }
    inputs[node->target()] = value;
  }
  return inputs;
}

std::map<std::string, Tensor> clones(const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, Tensor> result;
  for (const auto& [name, value] : inputs) result[name] = value.clone();
  return result;
}

// Runs `original` and its functionalized form on the same inputs and checks: the functional
// graph verifies and mutates nothing, its leading outputs equal the original's, and each
// copy-back output equals the value the original left in that input.
void check_functionalize_preserves_results(const ir::Graph& original, const std::map<std::string, Tensor>& inputs,
                                           const std::string& what) {
  ir::Graph functional = original.clone();
  functionalize(functional);
  EXPECT_TRUE(is_functional(functional)) << what;
  EXPECT_NO_THROW(ir::verify(functional)) << what;

  std::map<std::string, Tensor> original_inputs = clones(inputs);
  std::vector<Tensor> before = ir::Interpreter().run(original, original_inputs);
  std::map<std::string, Tensor> functional_inputs = clones(inputs);
  std::vector<Tensor> after = ir::Interpreter().run(functional, functional_inputs);

  std::vector<std::pair<size_t, ir::OutputSpec>> copy_backs = functional.signature().mutations();
  EXPECT_EQ(after.size(), before.size() + copy_backs.size()) << what;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i)
    expect_same(after[i], before[i], what + ": output " + std::to_string(i));
  for (size_t i = 0; i < copy_backs.size(); ++i) {
    const auto& [index, spec] = copy_backs[i];
    EXPECT_EQ(index, before.size() + i) << what;
    ASSERT_EQ(spec.kind, ir::OutputKind::user_input_mutation) << what;
    // The original wrote into its input; the functional graph returns the value instead.
    expect_same(after.at(index), original_inputs.at(spec.target), what + ": copy-back of input " + spec.target);
  }
  // An input the original changed must have a copy-back; the functional graph changes none.
  for (ir::Node* placeholder : original.placeholders()) {
    const std::string& name = placeholder->target();
    expect_same(functional_inputs.at(name), inputs.at(name), what + ": functional graph wrote input " + name);
    bool has_copy_back = std::any_of(copy_backs.begin(), copy_backs.end(),
                                     [&](const auto& copy_back) { return copy_back.second.target == name; });
    if (!has_copy_back)
      expect_same(original_inputs.at(name), inputs.at(name), what + ": input " + name + " changed without a copy-back");
  }
}

// ---------------------------------------------------------------- every golden case

std::vector<std::string> golden_case_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    std::string name = entry.path().filename().string();
    if (!name.ends_with(".kiln") || name.ends_with(".expected.kiln")) continue;
    std::string stem = entry.path().stem().string();
    if (!fs::exists(kGoldenDir / (stem + ".expected.error"))) names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

class FunctionalizeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(FunctionalizeGolden, IsFunctionalAndPreservesResultsAndCopyBacks) {
  fs::path path = kGoldenDir / (GetParam() + ".kiln");
  ir::Graph graph = ir::parse_graph(read_text(path), path.filename().string());
  for (uint64_t seed : {1, 2, 3}) check_functionalize_preserves_results(graph, random_inputs(graph, seed), GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, FunctionalizeGolden, ::testing::ValuesIn(golden_case_names()),
                         [](const ::testing::TestParamInfo<std::string>& test) { return test.param; });

// ---------------------------------------------------------------- the samples

class FunctionalizeSample : public ::testing::TestWithParam<std::string> {};

TEST_P(FunctionalizeSample, IsFunctionalAndMatchesPyTorch) {
  ir::Graph graph = ir::load_model((kModels / (GetParam() + ".kiln")).string());
  std::vector<std::string> names = graph.output_names();
  bool had_mutation = !is_functional(graph);
  EXPECT_EQ(functionalize(graph), had_mutation);
  EXPECT_TRUE(is_functional(graph));
  EXPECT_NO_THROW(ir::verify(graph));
  EXPECT_TRUE(graph.signature().mutations().empty()) << "the samples write no input";

  fs::path data = kModels / (GetParam() + "_data");
  std::map<std::string, Tensor> inputs;
  for (ir::Node* placeholder : graph.placeholders())
    inputs[placeholder->target()] = read_npy((data / "inputs" / (placeholder->target() + ".npy")).string());
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, inputs);
  ASSERT_EQ(outputs.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor expected = read_npy((data / "expected" / (names[i] + ".npy")).string());
    ASSERT_EQ(outputs[i].sizes(), expected.sizes()) << names[i];
    for (int64_t j = 0; j < expected.numel(); ++j)
      ASSERT_NEAR(outputs[i].flat_double(j), expected.flat_double(j), 1e-5 + 1e-4 * std::fabs(expected.flat_double(j)))
          << GetParam() << " output " << names[i] << " element " << j;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, FunctionalizeSample, ::testing::Values("mlp", "cnn", "attention", "inplace"));

TEST(Functionalize, InplaceSampleBecomesFunctional) {
  ir::Graph graph = ir::load_model((kModels / "inplace.kiln").string());
  ASSERT_FALSE(is_functional(graph));
  ASSERT_TRUE(functionalize(graph));
  EXPECT_TRUE(is_functional(graph));
  for (ir::Node* node : graph.nodes()) EXPECT_FALSE(node->target().ends_with("_")) << describe(*node);
}

// ---------------------------------------------------------------- random graphs

// Random graphs with in-place ops on clones, views of views and inputs (tests/support/):
// functionalize must preserve every output and every input's final value.
TEST(FunctionalizeRandomGraphs, PreserveResultsAndCopyBacks) {
  constexpr uint64_t kGraphs = 500;
  int with_mutation = 0;
  for (uint64_t seed = 0; seed < kGraphs; ++seed) {
    ir::Graph graph = test_support::random_graph(seed);
    std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, seed);
    try {
      ir::Interpreter().run(graph, clones(inputs));
    } catch (const Error&) {
      continue;  // the generator's graph does not run at all: not functionalize's to judge
    }
    if (!is_functional(graph)) ++with_mutation;
    std::string what = "random graph " + std::to_string(seed) + ":\n" + ir::print_graph(graph);
    try {
      check_functionalize_preserves_results(graph, inputs, what);
    } catch (const std::exception& error) {
      ADD_FAILURE() << what << "\nthrew: " << error.what();
    }
    if (::testing::Test::HasFailure()) break;  // one graph's report is enough
  }
  RecordProperty("graphs_with_mutation", with_mutation);
  EXPECT_GT(with_mutation, int(kGraphs / 4)) << "the generator should write in place in many graphs";
}

// ---------------------------------------------------------------- values worked by hand

ir::Graph parse(const std::string& body) { return ir::parse_graph("graph():\n" + body, "test.kiln"); }

TEST(Functionalize, MutatedInputBecomesNamedExtraOutput) {
  ir::Graph graph = parse(
      "    %x : f32[2, 2] = placeholder[target=x]\n"
      "    %y : f32[2] = placeholder[target=y]\n"
      "    %add_ = call_function[target=add_](args = (%x, %y), kwargs = {alpha: 2})\n"
      "    %mul = call_function[target=mul](args = (%x, 3.0), kwargs = {})\n"
      "    return (mul,)\n");
  ASSERT_TRUE(functionalize(graph));
  std::vector<std::string> names = graph.output_names();
  EXPECT_EQ(names, (std::vector<std::string>{"mul", "x_mutated"}));
  using Mutations = std::vector<std::pair<size_t, ir::OutputSpec>>;
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{1, {ir::OutputKind::user_input_mutation, "x"}}}));

  // x + 2 y with x = [[1, 2], [3, 4]], y = [10, 20]: [[21, 42], [23, 44]]; mul reads it.
  std::vector<Tensor> outputs = ir::Interpreter().run(
      graph, {{"x", tensor({2, 2}, {1, 2, 3, 4})}, {"y", tensor({2}, {10, 20})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{63, 126, 69, 132}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{21, 42, 23, 44}));
}

TEST(Functionalize, OverlappingViewsSeeEachOthersWrites) {
  ir::Graph graph = ir::parse_graph(read_text(kGoldenDir / "overlapping_views.kiln"), "overlapping_views.kiln");
  ASSERT_TRUE(functionalize(graph));
  // x = 0..15 as 4x4: row 0 gets +1, then column 0 gets *10 (a[0,0] = (0 + 1) * 10 = 10).
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = i;
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", tensor({4, 4}, x)}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]),
            (std::vector<double>{10, 2, 3, 4, 40, 5, 6, 7, 80, 9, 10, 11, 120, 13, 14, 15}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{10 + 2 + 3 + 4}));
}

TEST(Functionalize, AsStridedWritesUseTheViewsStorageOffset) {
  ir::Graph graph = ir::parse_graph(read_text(kGoldenDir / "as_strided_writes.kiln"), "as_strided_writes.kiln");
  ASSERT_TRUE(functionalize(graph));
  // Diagonal (0, 5, 10, 15) filled with 0; then elements 4 and 9 (offset 4, stride 5) * 3.
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[size_t(i)] = i + 1;
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", tensor({4, 4}, x)}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{0, 2, 3, 4, 15, 0, 7, 8, 9, 30, 0, 12, 13, 14, 15, 0}));
}

TEST(Functionalize, ReshapeThatCopiesIsNotWrittenBack) {
  ir::Graph graph = parse(
      "    %x : f32[2, 2] = placeholder[target=x]\n"
      "    %t = call_function[target=transpose](args = (%x, 0, 1), kwargs = {})\n"
      "    %r = call_function[target=reshape](args = (%t, [4]), kwargs = {})\n"
      "    %add_ = call_function[target=add_](args = (%r, 1.0), kwargs = {})\n"
      "    return (r,)\n");
  ASSERT_TRUE(functionalize(graph));
  EXPECT_TRUE(graph.signature().mutations().empty());
  // x = [[1, 2], [3, 4]]: x.t() flattened is [1, 3, 2, 4]; + 1 in the copy only.
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", tensor({2, 2}, {1, 2, 3, 4})}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{2, 4, 3, 5}));
}

TEST(Functionalize, ViewOfNonContiguousInputAfterWriteBecomesReshape) {
  // x is column-major, so x.t() is contiguous and view(x.t(), [12]) is valid; after the
  // write, x's value is a fresh (row-major) tensor on which that view is not.
  ir::Graph graph = parse(
      "    %x : f32[3, 4]{1, 3} = placeholder[target=x]\n"
      "    %t = call_function[target=transpose](args = (%x, 0, 1), kwargs = {})\n"
      "    %add_ = call_function[target=add_](args = (%x, 1.0), kwargs = {})\n"
      "    %v = call_function[target=view](args = (%t, [12]), kwargs = {})\n"
      "    return (v,)\n");
  ASSERT_TRUE(functionalize(graph));
  EXPECT_NO_THROW(ir::verify(graph));
  EXPECT_EQ(graph.find("v")->target(), "reshape");
  // The buffer b = 0..11 as [4, 3]; x = b.t(), so x.t() + 1 flattened is 1..12 and the
  // copy-back x + 1 has x[i][j] = b[j][i] + 1 = 3 j + i + 1.
  std::vector<double> buffer(12);
  for (int i = 0; i < 12; ++i) buffer[size_t(i)] = i;
  Tensor x = tensor({4, 3}, buffer).transpose(0, 1);
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", x}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12}));
}

TEST(Functionalize, GetitemOfAListIsTheElement) {
  ir::Graph graph = parse(
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %y : f32[3] = placeholder[target=y]\n"
      "    %g = call_function[target=getitem](args = ([%x, %y], 1), kwargs = {})\n"
      "    %mul_ = call_function[target=mul_](args = (%g, 2.0), kwargs = {})\n"
      "    %add = call_function[target=add](args = (%x, %y), kwargs = {})\n"
      "    return (add,)\n");
  ASSERT_TRUE(functionalize(graph));
  using Mutations = std::vector<std::pair<size_t, ir::OutputSpec>>;
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{1, {ir::OutputKind::user_input_mutation, "y"}}}));
  // add = x + 2 y with x = [1, 2, 3], y = [10, 20, 30].
  std::vector<Tensor> outputs =
      ir::Interpreter().run(graph, {{"x", tensor({3}, {1, 2, 3})}, {"y", tensor({3}, {10, 20, 30})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{21, 42, 63}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{20, 40, 60}));
}

TEST(Functionalize, CopyOfAnotherInputIsClonedForTheCopyBack) {
  ir::Graph graph = parse(
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %y : f32[3] = placeholder[target=y]\n"
      "    %copy_ = call_function[target=copy_](args = (%x, %y), kwargs = {})\n"
      "    return (x,)\n");
  ASSERT_TRUE(functionalize(graph));
  ir::Node* copy_back = graph.find("x_mutated");
  ASSERT_NE(copy_back, nullptr);
  EXPECT_EQ(copy_back->target(), "clone");
  std::vector<Tensor> outputs =
      ir::Interpreter().run(graph, {{"x", tensor({3}, {1, 2, 3})}, {"y", tensor({3}, {7, 8, 9})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{7, 8, 9}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{7, 8, 9}));
}

TEST(Functionalize, MutatedParameterBecomesCopyBack) {
  ir::ParseOptions options;
  options.file_name = "buffer.kiln";
  options.parameters["running"] = tensor({3}, {1, 2, 3});
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %running : f32[3] = get_attr[target=running]\n"
      "    %mul_ = call_function[target=mul_](args = (%running, 0.5), kwargs = {})\n"
      "    %add_ = call_function[target=add_](args = (%mul_, %x), kwargs = {})\n"
      "    %sum_1 = call_function[target=sum](args = (%running,), kwargs = {})\n"
      "    return (sum_1,)\n",
      options);
  ASSERT_TRUE(functionalize(graph));
  EXPECT_TRUE(is_functional(graph));
  using Mutations = std::vector<std::pair<size_t, ir::OutputSpec>>;
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{1, {ir::OutputKind::parameter_mutation, "running"}}}));
  // running * 0.5 + x with x = [10, 20, 30]: [10.5, 21, 31.5]; the parameter is untouched.
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", tensor({3}, {10, 20, 30})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{63}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{10.5, 21, 31.5}));
  EXPECT_EQ(values_of(*graph.parameter("running")), (std::vector<double>{1, 2, 3}));
}

TEST(Functionalize, MutatedBufferBecomesBufferMutation) {
  ir::ParseOptions options;
  options.file_name = "buffer.kiln";
  options.parameters["bn.running_mean"] = tensor({3}, {1, 2, 3});
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %mean : f32[3] = get_attr[target=bn.running_mean]\n"
      "    %copy_ = call_function[target=copy_](args = (%mean, %x), kwargs = {})\n"
      "    %neg = call_function[target=neg](args = (%x,), kwargs = {})\n"
      "    return (neg,)\n"
      "Graph signature:\n"
      "    mean: BUFFER target=bn.running_mean\n",
      options);
  ASSERT_TRUE(functionalize(graph));
  EXPECT_NO_THROW(ir::verify(graph));
  using Mutations = std::vector<std::pair<size_t, ir::OutputSpec>>;
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{1, {ir::OutputKind::buffer_mutation, "bn.running_mean"}}}));
  // copy_ overwrites the buffer without reading it: no get_attr is left, the buffer is still
  // listed (by its target) and the printed graph reads back the same.
  std::string text = ir::print_graph(graph);
  EXPECT_THAT(text, ::testing::HasSubstr("    bn_running_mean: BUFFER target=bn.running_mean\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("    mean_mutated: BUFFER_MUTATION target=bn.running_mean\n"));
  EXPECT_EQ(ir::print_graph(ir::parse_graph(text, "again.kiln", graph.parameters())), text);
}

TEST(Functionalize, CopyBackNameTakenGetsAFreshName) {
  ir::Graph graph = parse(
      "    %x : f32[3] = placeholder[target=x]\n"
      "    %x_mutated = call_function[target=neg](args = (%x,), kwargs = {})\n"
      "    %add_ = call_function[target=add_](args = (%x, 1.0), kwargs = {})\n"
      "    return (x_mutated,)\n");
  ASSERT_TRUE(functionalize(graph));
  EXPECT_EQ(graph.output_names(), (std::vector<std::string>{"x_mutated", "x_mutated_1"}));
  using Mutations = std::vector<std::pair<size_t, ir::OutputSpec>>;
  EXPECT_EQ(graph.signature().mutations(), (Mutations{{1, {ir::OutputKind::user_input_mutation, "x"}}}));
  // neg(x) = [-1, -2, -3] is a user output; x + 1 = [2, 3, 4] is the copy-back.
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", tensor({3}, {1, 2, 3})}});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(values_of(outputs[0]), (std::vector<double>{-1, -2, -3}));
  EXPECT_EQ(values_of(outputs[1]), (std::vector<double>{2, 3, 4}));
}

TEST(Functionalize, GraphWithoutMutationIsUnchanged) {
  ir::Graph graph = ir::parse_graph(read_text(kGoldenDir / "no_mutation.kiln"), "no_mutation.kiln");
  std::string before = ir::print_graph(graph);
  EXPECT_FALSE(functionalize(graph));
  EXPECT_EQ(ir::print_graph(graph), before);
  EXPECT_TRUE(graph.signature().is_default());
}

// ---------------------------------------------------------------- errors

// Functionalizing `body` fails with a message containing each of `parts`, and leaves the
// graph as it was.
void expect_error(const std::string& body, const std::vector<std::string>& parts) {
  ir::Graph graph = parse(body);
  std::string before = ir::print_graph(graph);
  try {
    functionalize(graph);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& error) {
    for (const std::string& part : parts) EXPECT_THAT(error.what(), ::testing::HasSubstr(part));
  }
  EXPECT_EQ(ir::print_graph(graph), before);
}

TEST(FunctionalizeErrors, WriteIntoExpandedView) {
  expect_error(
      "    %x : f32[1, 4] = placeholder[target=x]\n"
      "    %e = call_function[target=expand](args = (%x, [3, 4]), kwargs = {})\n"
      "    %t = call_function[target=transpose](args = (%e, 0, 1), kwargs = {})\n"
      "    %mul_ = call_function[target=mul_](args = (%t, 2.0), kwargs = {})\n"
      "    return (x,)\n",
      {"node %mul_ (mul_): unsupported operation: more than one element of the written-to tensor refers to a "
       "single memory location. Please clone() the tensor before performing the operation.",
       "%t is a broadcast view of %x"});
}

TEST(FunctionalizeErrors, ExpandWithoutBroadcastIsWritable) {
  ir::Graph graph = parse(
      "    %x : f32[3, 4] = placeholder[target=x]\n"
      "    %e = call_function[target=expand](args = (%x, [3, -1]), kwargs = {})\n"
      "    %fill_ = call_function[target=fill_](args = (%e, 1.0), kwargs = {})\n"
      "    return (x,)\n");
  EXPECT_TRUE(functionalize(graph));
  std::vector<Tensor> outputs = ir::Interpreter().run(graph, {{"x", Tensor::zeros({3, 4}, DType::f32)}});
  EXPECT_EQ(values_of(outputs.at(1)), std::vector<double>(12, 1.0));
}

TEST(FunctionalizeErrors, WriteIntoStrideZeroInput) {
  expect_error(
      "    %x : f32[3, 4]{0, 1} = placeholder[target=x]\n"
      "    %relu_ = call_function[target=relu_](args = (%x,), kwargs = {})\n"
      "    return (x,)\n",
      {"node %relu_ (relu_): unsupported operation: more than one element"});
}

TEST(FunctionalizeErrors, WriteIntoConstant) {
  ir::ParseOptions options;
  options.file_name = "constant.kiln";
  options.parameters["mask"] = tensor({3}, {1, 0, 1});
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %mask : f32[3] = get_attr[target=mask]\n"
      "    %mul_ = call_function[target=mul_](args = (%mask, 2.0), kwargs = {})\n"
      "    return (mask,)\n"
      "Graph signature:\n"
      "    mask: CONSTANT_TENSOR target=mask\n",
      options);
  std::string before = ir::print_graph(graph);
  try {
    functionalize(graph);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("node %mul_ (mul_) writes into %mask, which reads 'mask', a constant "
                                                   "(CONSTANT_TENSOR in the graph signature)"));
  }
  EXPECT_EQ(ir::print_graph(graph), before) << "the graph changed before the error";
}

TEST(FunctionalizeErrors, AsStridedOfNonContiguousBaseWritten) {
  expect_error(
      "    %x : f32[3, 4]{1, 3} = placeholder[target=x]\n"
      "    %d = call_function[target=as_strided](args = (%x, [3], [5]), kwargs = {})\n"
      "    %fill_ = call_function[target=fill_](args = (%d, 0.0), kwargs = {})\n"
      "    return (x,)\n",
      {"node %fill_ (fill_)", "node %d (as_strided)", "not contiguous"});
}

}  // namespace
}  // namespace kiln::passes
