// Differential tests of the CPU backend (compiler/cpu_backend.h): graphs compiled to C++,
// built with the system compiler and run, against the reference interpreter. Every core op,
// odd sizes (1, 3, 17, 1023, 4097), broadcasting, non-contiguous inputs, i64 and bool, the
// samples against PyTorch's goldens, random graphs, guards, the cache, and bad input.
#include "compiler/cpu_backend.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/printer.h"
#include "runtime/compile_cache.h"
#include "runtime/npy.h"
#include "tests/support/random_graph.h"

// GCC 12 reports -Wmaybe-uninitialized inside std::variant for braced Argument lists (a known
// false positive of its inliner, like the -Wrestrict one the build turns off).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::TensorMeta;

// One cache for the whole suite (the cache is safe under the parallel test processes).
CpuCompileOptions test_options() {
  CpuCompileOptions options;
  options.cache_dir = fs::path(KILN_BINARY_DIR) / "test-compile-cache";
  return options;
}

ir::Argument ints(std::initializer_list<int64_t> values) {
  std::vector<ir::Argument> list;
  for (int64_t v : values) list.emplace_back(v);
  return ir::Argument(list);
}

Node* input(Graph& graph, const std::string& name, const std::vector<SymInt>& shape, DType dtype = DType::f32) {
  return graph.create_placeholder(name, TensorMeta::contiguous(dtype, shape));
}

Tensor random_tensor(const Sizes& sizes, DType dtype, uint64_t seed, double low = -2, double high = 2) {
  std::mt19937_64 rng(seed);
  std::vector<double> values(size_t(numel_of(sizes)));
  for (double& v : values) {
    if (dtype == DType::boolean) {
      v = double(rng() % 2);
    } else if (is_floating(dtype)) {
      v = low + (high - low) * double(rng() % 1000003) / 1000003.0;
    } else {
      v = double(int64_t(rng() % 9) - 4);
    }
  }
  return Tensor::from_doubles(sizes, values, dtype);
}

// Max |a - b| - (atol + rtol |b|) over elements: <= 0 when within tolerance. Ints: exact.
std::string compare(const Tensor& expected, const Tensor& actual, double rtol, double atol) {
  if (expected.dtype() != actual.dtype()) {
    return std::string("dtype ") + std::string(dtype_name(actual.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  }
  if (expected.sizes() != actual.sizes()) return "sizes differ";
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (is_floating(expected.dtype())) {
      double e = expected.flat_double(i), a = actual.flat_double(i);
      if (std::isnan(e) && std::isnan(a)) continue;
      if (e == a) continue;
      if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
        return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(e);
      }
    } else if (expected.flat_int(i) != actual.flat_int(i)) {
      return "element " + std::to_string(i) + " is " + std::to_string(actual.flat_int(i)) + ", expected " +
             std::to_string(expected.flat_int(i));
    }
  }
  return "";
}

void expect_matches_interpreter(const Graph& graph, const std::map<std::string, Tensor>& inputs, double rtol = 1e-4,
                                double atol = 1e-5, const CpuCompileOptions& options = test_options()) {
  std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
  CpuModel model = CpuModel::compile(graph, options);
  std::vector<Tensor> actual = model.run(inputs);
  ASSERT_EQ(actual.size(), expected.size());
  std::vector<std::string> names = graph.output_names();
  for (size_t i = 0; i < expected.size(); ++i) {
    std::string problem = compare(expected[i], actual[i], rtol, atol);
    EXPECT_TRUE(problem.empty()) << "output " << names[i] << ": " << problem << "\ngraph:\n"
                                 << ir::print_graph(graph);
  }
}

template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "not a kiln::Error: " << error.what();
  }
  return "(no error)";
}

// ---------------------------------------------------------------- pointwise

TEST(CpuBackend, EveryUnaryOpOnF32) {
  Graph graph;
  Node* x = input(graph, "x", {17, 3});
  std::vector<ir::Argument> outputs;
  for (const char* op : {"neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos",
                         "tanh", "sigmoid", "erf", "relu", "floor", "ceil", "round", "sign", "logical_not", "isnan"}) {
    outputs.push_back(graph.create_call(op, {x}));
  }
  outputs.push_back(graph.create_call("clamp", {x, -0.5, 0.75}));
  graph.create_output(outputs);
  Tensor values = random_tensor({17, 3}, DType::f32, 1, -3, 3);
  expect_matches_interpreter(graph, {{"x", values}}, 2e-6, 1e-6);
}

TEST(CpuBackend, EveryBinaryOpWithBroadcasting) {
  Graph graph;
  Node* a = input(graph, "a", {17, 1});
  Node* b = input(graph, "b", {1, 5});
  std::vector<ir::Argument> outputs;
  for (const char* op : {"add", "sub", "mul", "div", "maximum", "minimum", "fmod", "remainder", "eq", "ne", "lt", "le",
                         "gt", "ge", "logical_and", "logical_or", "logical_xor"}) {
    outputs.push_back(graph.create_call(op, {a, b}));
  }
  outputs.push_back(graph.create_call("pow", {graph.create_call("abs", {a}), b}));
  outputs.push_back(graph.create_call("add", {a, 2.5}));
  outputs.push_back(graph.create_call("where", {graph.create_call("gt", {a, b}), a, b}));
  graph.create_output(outputs);
  expect_matches_interpreter(graph, {{"a", random_tensor({17, 1}, DType::f32, 2)}, {"b", random_tensor({1, 5}, DType::f32, 3)}},
                             2e-6, 1e-6);
}

TEST(CpuBackend, IntegerAndBoolOpsAreExact) {
  Graph graph;
  Node* a = input(graph, "a", {3, 17}, DType::i64);
  Node* b = input(graph, "b", {17}, DType::i64);
  Node* m = input(graph, "m", {3, 17}, DType::boolean);
  Node* nonzero = graph.create_call("add", {graph.create_call("abs", {b}), 1});
  std::vector<ir::Argument> outputs = {
      graph.create_call("add", {a, b}),
      graph.create_call("mul", {a, b}),
      graph.create_call("sub", {a, b}),
      graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string("floor")}}),
      graph.create_call("div", {a, nonzero}, {{"rounding_mode", std::string("trunc")}}),
      graph.create_call("remainder", {a, nonzero}),
      graph.create_call("fmod", {a, nonzero}),
      graph.create_call("maximum", {a, b}),
      graph.create_call("lt", {a, b}),
      graph.create_call("logical_and", {m, graph.create_call("gt", {a, 0})}),
      graph.create_call("where", {m, a, b}),
      graph.create_call("cast", {a, DType::f32}),
      graph.create_call("cast", {graph.create_call("div", {a, 2}), DType::i32}),
      graph.create_call("sum", {a, ints({1})}),
      graph.create_call("amax", {a, ints({0})}),
      graph.create_call("argmax", {a, 1}),
      graph.create_call("sum", {m, ints({0})}),
      graph.create_call("neg", {a}),
      graph.create_call("abs", {a}),
      graph.create_call("sign", {a}),
  };
  graph.create_output(outputs);
  expect_matches_interpreter(graph, {{"a", random_tensor({3, 17}, DType::i64, 4)},
                                     {"b", random_tensor({17}, DType::i64, 5)},
                                     {"m", random_tensor({3, 17}, DType::boolean, 6)}});
}

TEST(CpuBackend, CopiesCreationRandomAndFallbackOps) {
  Graph graph;
  Node* x = input(graph, "x", {5, 7});
  Node* y = input(graph, "y", {5, 3});
  Node* idx = input(graph, "idx", {5, 4}, DType::i64);
  Node* rows = input(graph, "rows", {6}, DType::i64);
  std::vector<ir::Argument> outputs = {
      graph.create_call("cat", {std::vector<ir::Argument>{x, y}, 1}),
      graph.create_call("pad", {x, ints({1, 2, 0, 1}), "constant", 0.5}),
      graph.create_call("pad", {x, ints({2, 1}), "reflect"}),
      graph.create_call("pad", {x, ints({1, 3}), "replicate"}),
      graph.create_call("gather", {x, 1, idx}),
      graph.create_call("index_select", {x, 0, rows}),
      graph.create_call("full", {ints({3, 4}), 2.5}),
      graph.create_call("arange", {0, 10, 3}),
      graph.create_call("iota", {9}, {{"start", 2}, {"step", 3}}),
      graph.create_call("rand", {ints({4, 33})}, {{"seed", 7}, {"offset", 3}}),
      graph.create_call("randn", {ints({17})}, {{"seed", 9}}),
      graph.create_call("cumsum", {x, 1}),
      graph.create_call("scatter", {x, 1, graph.create_call("slice", {idx, 1, 0, 3}), y}),
      graph.create_call("prod", {x, ints({1})}),
      graph.create_call("amin", {x, ints({0, 1})}),
      graph.create_call("var", {x, ints({1})}),
      graph.create_call("adaptive_avg_pool", {graph.create_call("unsqueeze", {x, 0}), ints({3, 2})}),
      graph.create_call("adaptive_max_pool", {graph.create_call("unsqueeze", {x, 0}), ints({2, 4})}),
      graph.create_call("bmm", {graph.create_call("unsqueeze", {x, 0}), graph.create_call("unsqueeze",
                                {graph.create_call("transpose", {x, 0, 1}), 0})}),
      graph.create_call("cast", {x, DType::f16}),
      graph.create_call("cast", {graph.create_call("mul", {graph.create_call("cast", {x, DType::bf16}), 3.0}), DType::f32}),
      graph.create_call("cast", {graph.create_call("mul", {x, 10.0}), DType::i8}),
  };
  graph.create_output(outputs);
  Tensor index = Tensor::from_doubles({5, 4}, std::vector<double>{0, 6, 3, 3, 1, 2, 5, 0, 4, 4, 4, 1, 6, 5, 2, 0, 3, 1, 0, 2},
                                      DType::i64);
  Tensor row_index = Tensor::from_doubles({6}, std::vector<double>{4, 0, 0, 3, 1, 2}, DType::i64);
  expect_matches_interpreter(graph, {{"x", random_tensor({5, 7}, DType::f32, 30)},
                                     {"y", random_tensor({5, 3}, DType::f32, 31)},
                                     {"idx", index},
                                     {"rows", row_index}},
                             1e-4, 1e-5);
}

TEST(CpuBackend, IndexOutOfRangeIsAnErrorNotAWrongNumber) {
  Graph graph;
  Node* x = input(graph, "x", {5, 7});
  Node* rows = input(graph, "rows", {2}, DType::i64);
  graph.create_output({graph.create_call("index_select", {x, 0, rows})});
  CpuModel model = CpuModel::compile(graph, test_options());
  std::string message = error_of([&] {
    model.run({{"x", random_tensor({5, 7}, DType::f32, 1)}, {"rows", Tensor::from_doubles({2}, std::vector<double>{1, 5}, DType::i64)}});
  });
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

TEST(CpuBackend, FloatToIntegerCastsSaturateAsTheInterpreterDoes) {
  Graph graph;
  Node* x = input(graph, "x", {8});
  graph.create_output({graph.create_call("cast", {x, DType::i64}), graph.create_call("cast", {x, DType::i32}),
                       graph.create_call("cast", {x, DType::u8}), graph.create_call("cast", {x, DType::boolean})});
  Tensor values = Tensor::from_doubles(
      {8}, std::vector<double>{NAN, INFINITY, -INFINITY, 3e20, -3e20, 300.7, -2.5, 0.0}, DType::f32);
  expect_matches_interpreter(graph, {{"x", values}});
}

TEST(CpuBackend, WholeTensorReductionsSplitAcrossThreads) {
  Graph graph;
  Node* x = input(graph, "x", {300007});
  graph.create_output({graph.create_call("sum", {x}), graph.create_call("amax", {x}), graph.create_call("amin", {x}),
                       graph.create_call("mean", {x})});
  Tensor values = random_tensor({300007}, DType::f32, 40);
  expect_matches_interpreter(graph, {{"x", values}}, 1e-4, 1e-3);
  Tensor with_nan = values.clone();
  with_nan.data<float>()[123457] = NAN;
  expect_matches_interpreter(graph, {{"x", with_nan}}, 1e-4, 1e-3);
}

// ---------------------------------------------------------------- sizes

class CpuBackendSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(CpuBackendSizes, PointwiseChainSoftmaxLayerNormAndReductions) {
  int64_t n = GetParam();
  Graph graph;
  Node* x = input(graph, "x", {3, n});
  Node* w = input(graph, "w", {n});
  Node* chain = graph.create_call(
      "mul", {graph.create_call("tanh", {graph.create_call("add", {graph.create_call("mul", {x, w}), 1.0})}),
              graph.create_call("sigmoid", {x})});
  Node* softmax = graph.create_call("softmax", {x, -1});
  Node* norm = graph.create_call("layer_norm", {x, ints({n}), w, ir::Argument()});
  Node* sum = graph.create_call("sum", {x, ints({1})});
  Node* amax = graph.create_call("amax", {x, ints({1}), true});
  Node* argmin = graph.create_call("argmin", {x, 1});
  Node* column_mean = graph.create_call("mean", {x, ints({0})});
  Node* total = graph.create_call("sum", {x});
  graph.create_output({chain, softmax, norm, sum, amax, argmin, column_mean, total});
  expect_matches_interpreter(graph, {{"x", random_tensor({3, n}, DType::f32, 7)}, {"w", random_tensor({n}, DType::f32, 8)}},
                             1e-4, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(OddSizes, CpuBackendSizes, ::testing::Values(1, 3, 17, 1023, 4097));

// ---------------------------------------------------------------- layouts

TEST(CpuBackend, NonContiguousInputsAreAccepted) {
  Graph graph;
  Node* x = input(graph, "x", {5, 7});
  graph.create_output({graph.create_call("exp", {x}), graph.create_call("sum", {x, ints({0})})});
  Tensor base = random_tensor({7, 5}, DType::f32, 9);
  Tensor transposed = base.permute({1, 0});
  ASSERT_FALSE(transposed.is_contiguous());
  expect_matches_interpreter(graph, {{"x", transposed}});
}

TEST(CpuBackend, ViewsFoldIntoIndexing) {
  Graph graph;
  Node* x = input(graph, "x", {4, 6, 5});
  Node* p = graph.create_call("permute", {x, ints({2, 0, 1})});
  Node* s = graph.create_call("slice", {p, 1, 1, 4, 2});
  Node* sel = graph.create_call("select", {x, 2, 3});
  Node* r = graph.create_call("reshape", {x, ints({24, 5})});
  Node* t = graph.create_call("transpose", {r, 0, 1});
  Node* e = graph.create_call("expand", {graph.create_call("unsqueeze", {sel, 0}), ints({3, 4, 6})});
  graph.create_output({graph.create_call("mul", {s, 2.0}), graph.create_call("add", {t, 1.0}),
                       graph.create_call("neg", {e}), graph.create_call("clone", {t})});
  expect_matches_interpreter(graph, {{"x", random_tensor({4, 6, 5}, DType::f32, 10)}});
}

// A pad of one dim guards only that dim: when a reshape then merges the padded dim with its
// neighbour, the merged read must not be inlined as if the mask kept every coordinate in
// bounds (this is the shape of max_pool2d's backward: each value spread over a 2x2 window).
TEST(CpuBackend, PaddedDimsMergedByAReshapeAreIndexedRight) {
  Graph graph;
  Node* g = input(graph, "g", {2, 3, 4, 4});
  Node* rows = graph.create_call("pad", {graph.create_call("unsqueeze", {g, 3}), ints({0, 0, 0, 1})});
  Node* merged = graph.create_call("reshape", {rows, ints({2, 3, 8, 4})});
  Node* cols = graph.create_call("pad", {graph.create_call("unsqueeze", {merged, 4}), ints({0, 1})});
  Node* spread = graph.create_call("reshape", {cols, ints({2, 3, 8, 8})});
  // A pad that shifts the merged dim by one: its mask bounds the merged dim, not the inner one.
  Node* shifted = graph.create_call("pad", {spread, ints({1, -1})});
  graph.create_output({spread, graph.create_call("add", {shifted, 1.0})});
  expect_matches_interpreter(graph, {{"g", random_tensor({2, 3, 4, 4}, DType::f32, 12)}});
}

TEST(CpuBackend, TransposesAreTiledAndRight) {
  for (int64_t rows : {1, 31, 100}) {
    Graph graph;
    Node* x = input(graph, "x", {3, rows, 67});
    graph.create_output({graph.create_call("add", {graph.create_call("transpose", {x, 1, 2}), 1.0})});
    bool tiled = dump_codegen_stage(graph, "cpp").find("tiled 32x32") != std::string::npos;
    EXPECT_EQ(tiled, rows > 1) << rows << " rows (a 1-row transpose is a plain copy)";
    expect_matches_interpreter(graph, {{"x", random_tensor({3, rows, 67}, DType::f32, uint64_t(rows))}});
  }
}

TEST(CpuBackend, SymbolicBatch) {
  Graph graph;
  SymInt s0 = SymInt::symbol("s0");
  Node* x = input(graph, "x", {s0, 33});
  Node* y = graph.create_call("softmax", {graph.create_call("mul", {x, 0.5}), 1});
  graph.create_output({y, graph.create_call("sum", {x, ints({0})})});
  CpuModel model = CpuModel::compile(graph, test_options());
  for (int64_t batch : {1, 2, 65}) {
    std::map<std::string, Tensor> inputs = {{"x", random_tensor({batch, 33}, DType::f32, uint64_t(batch))}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    std::vector<Tensor> actual = model.run(inputs);
    for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(compare(expected[i], actual[i], 1e-4, 1e-5), "") << batch;
  }
}

TEST(CpuBackend, SymbolsNamedLikeGeneratedVariablesCompile) {
  Graph graph;
  SymInt batch = SymInt::symbol("batch"), sym = SymInt::symbol("sym"), n = SymInt::symbol("N");
  Node* a = input(graph, "a", {batch, sym, 4});
  Node* b = input(graph, "b", {batch, 4, n});
  graph.create_output({graph.create_call("matmul", {a, b}), graph.create_call("softmax", {a, 2})});
  expect_matches_interpreter(graph, {{"a", random_tensor({2, 3, 4}, DType::f32, 50)}, {"b", random_tensor({2, 4, 5}, DType::f32, 51)}});
}

// ---------------------------------------------------------------- library calls

TEST(CpuBackend, MatmulBatchedAndBroadcast) {
  Graph graph;
  Node* a = input(graph, "a", {2, 3, 17, 5});
  Node* b = input(graph, "b", {5, 4});
  Node* c = input(graph, "c", {3, 4, 7});
  Node* mm = graph.create_call("matmul", {a, b});
  Node* bmm = graph.create_call("matmul", {mm, c});
  Node* v = graph.create_call("matmul", {input(graph, "v", {5}), b});
  Node* gelu = graph.create_call("gelu", {graph.create_call("add", {mm, 0.25})});
  graph.create_output({mm, bmm, v, gelu});
  expect_matches_interpreter(graph, {{"a", random_tensor({2, 3, 17, 5}, DType::f32, 11)},
                                     {"b", random_tensor({5, 4}, DType::f32, 12)},
                                     {"c", random_tensor({3, 4, 7}, DType::f32, 13)},
                                     {"v", random_tensor({5}, DType::f32, 14)}});
}

TEST(CpuBackend, MatmulWithAnEmptyInnerDimIsZeros) {
  Graph graph;
  Node* a = input(graph, "a", {3, 4, 0});
  Node* b = input(graph, "b", {3, 0, 5});
  graph.create_output({graph.create_call("add", {graph.create_call("matmul", {a, b}), 1.0})});
  expect_matches_interpreter(graph, {{"a", Tensor::zeros({3, 4, 0}, DType::f32)}, {"b", Tensor::zeros({3, 0, 5}, DType::f32)}});
}

TEST(CpuBackend, ConvolutionAndPooling) {
  Graph graph;
  Node* x = input(graph, "x", {2, 4, 9, 11});
  Node* w = input(graph, "w", {6, 2, 3, 3});
  Node* bias = input(graph, "bias", {6});
  Node* conv = graph.create_call("convolution", {x, w, bias, ints({2, 1}), ints({1, 2}),
                                                 ints({1, 2}), false, ints({0, 0}), 2});
  Node* relu = graph.create_call("relu", {conv});
  Node* pool = graph.create_call("max_pool", {relu, ints({2, 2}), ints({2, 2}),
                                              ints({1, 1})});
  Node* avg = graph.create_call("avg_pool", {x, ints({3, 3}), ints({2, 2}),
                                             ints({1, 1})});
  graph.create_output({conv, pool, avg});
  expect_matches_interpreter(graph, {{"x", random_tensor({2, 4, 9, 11}, DType::f32, 15)},
                                     {"w", random_tensor({6, 2, 3, 3}, DType::f32, 16)},
                                     {"bias", random_tensor({6}, DType::f32, 17)}});
}

// ---------------------------------------------------------------- samples

class CpuBackendSamples : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuBackendSamples, MatchPyTorchAndTheInterpreter) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "samples" / "models";
  Graph graph = ir::load_model((dir / (GetParam() + ".kiln")).string());
  fs::path data = dir / (GetParam() + "_data");
  std::map<std::string, Tensor> inputs;
  for (const auto& entry : fs::directory_iterator(data / "inputs")) {
    inputs[entry.path().stem().string()] = read_npy(entry.path().string());
  }
  std::vector<Tensor> expected_interp = ir::interpret(graph, inputs);
  CpuModel model = CpuModel::compile(graph, test_options());
  std::vector<Tensor> actual = model.run(inputs);
  std::vector<std::string> names = graph.output_names();
  ASSERT_EQ(actual.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(compare(expected_interp[i], actual[i], 1e-4, 1e-5), "") << names[i] << " vs the interpreter";
    fs::path golden = data / "expected" / (names[i] + ".npy");
    if (fs::exists(golden)) {
      EXPECT_EQ(compare(read_npy(golden.string()), actual[i], 1e-4, 1e-5), "") << names[i] << " vs PyTorch";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, CpuBackendSamples, ::testing::Values("mlp", "cnn", "attention", "inplace"));

// ---------------------------------------------------------------- random graphs

TEST(CpuBackend, RandomGraphsMatchTheInterpreter) {
  int count = 24;
  if (const char* env = std::getenv("KILN_CPU_RANDOM_GRAPHS")) count = std::atoi(env);
  for (int seed = 0; seed < count; ++seed) {
    Graph graph = test_support::random_graph(uint64_t(seed));
    std::map<std::string, Tensor> inputs = test_support::random_inputs(graph, uint64_t(seed));
    std::map<std::string, Tensor> inputs_copy;
    for (auto& [k, v] : inputs) inputs_copy[k] = v.clone();
    std::vector<Tensor> expected;
    try {
      expected = ir::interpret(graph, inputs_copy);
    } catch (const Error&) {
      continue;  // the graph is invalid for these inputs (the interpreter refuses it too)
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<Tensor> actual;
    try {
      CpuModel model = CpuModel::compile(graph, test_options());
      actual = model.run(inputs);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "seed " << seed << ": " << error.what() << "\n" << ir::print_graph(graph);
      continue;
    }
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(compare(expected[i], actual[i], 1e-3, 1e-4), "") << "output " << i << "\n" << ir::print_graph(graph);
    }
  }
}

// ---------------------------------------------------------------- guards

TEST(CpuBackend, GuardsNameTheInputAndTheValues) {
  Graph graph;
  SymInt s0 = SymInt::symbol("s0");
  Node* x = input(graph, "x", {s0, 8});
  Node* y = input(graph, "y", {s0, 8});
  graph.create_output({graph.create_call("add", {x, y})});
  CpuModel model = CpuModel::compile(graph, test_options());
  const CompiledArtifact& artifact = model.artifact();
  auto run = [&](Tensor a, Tensor b) { return const_cast<CompiledArtifact&>(artifact).run({a, b}, {}); };
  std::string dtype = error_of([&] { run(Tensor::zeros({2, 8}, DType::f64), Tensor::zeros({2, 8}, DType::f32)); });
  EXPECT_NE(dtype.find("input 'x' has dtype f64, expected f32"), std::string::npos) << dtype;
  std::string rank = error_of([&] { run(Tensor::zeros({2, 8, 1}, DType::f32), Tensor::zeros({2, 8}, DType::f32)); });
  EXPECT_NE(rank.find("input 'x' has rank 3, expected 2"), std::string::npos) << rank;
  std::string size = error_of([&] { run(Tensor::zeros({2, 7}, DType::f32), Tensor::zeros({2, 8}, DType::f32)); });
  EXPECT_NE(size.find("input 'x' dim 1 has size 7, expected 8"), std::string::npos) << size;
  std::string relation = error_of([&] { run(Tensor::zeros({2, 8}, DType::f32), Tensor::zeros({3, 8}, DType::f32)); });
  EXPECT_NE(relation.find("input 'y' dim 0 has size 3, expected s0 = 2"), std::string::npos) << relation;
  std::string strides =
      error_of([&] { run(Tensor::zeros({8, 2}, DType::f32).permute({1, 0}), Tensor::zeros({2, 8}, DType::f32)); });
  EXPECT_NE(strides.find("stride"), std::string::npos) << strides;
  // Through CpuModel::run, the interpreter's own input checks speak first.
  std::string through_model = error_of([&] { model.run({{"x", Tensor::zeros({2, 7}, DType::f32)}, {"y", Tensor::zeros({2, 8}, DType::f32)}}); });
  EXPECT_NE(through_model.find("input 'x'"), std::string::npos) << through_model;
}

// ---------------------------------------------------------------- cache

Graph small_graph(double constant) {
  Graph graph;
  Node* x = input(graph, "x", {4, 4});
  graph.create_output({graph.create_call("add", {graph.create_call("exp", {x}), constant})});
  return graph;
}

CpuCompileOptions private_cache(const std::string& name) {
  CpuCompileOptions options;
  options.cache_dir = fs::path(KILN_BINARY_DIR) / "test-caches" / (name + "-" + std::to_string(getpid()));
  fs::remove_all(*options.cache_dir);
  return options;
}

TEST(CpuBackendCache, SecondCompileIsAHitWithoutCompilingCpp) {
  CpuCompileOptions options = private_cache("hit");
  std::vector<std::string> stages;
  options.on_stage = [&](const std::string& stage, double) { stages.push_back(stage); };
  CpuModel first = CpuModel::compile(small_graph(1.5), options);
  EXPECT_FALSE(first.result().cache_hit);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "c++ compile"), stages.end());
  stages.clear();
  CpuModel second = CpuModel::compile(small_graph(1.5), options);
  EXPECT_TRUE(second.result().cache_hit);
  EXPECT_EQ(std::find(stages.begin(), stages.end(), "c++ compile"), stages.end());
  EXPECT_EQ(first.result().key, second.result().key);
  CpuModel other = CpuModel::compile(small_graph(2.5), options);
  EXPECT_NE(other.result().key, first.result().key);
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackendCache, CorruptedEntryIsRebuilt) {
  CpuCompileOptions options = private_cache("corrupt");
  CpuModel first = CpuModel::compile(small_graph(3.5), options);
  fs::path so = first.result().artifact_dir / "module.so";
  {
    std::fstream file(so, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(100);
    byte = char(byte ^ 0x5A);
    file.write(&byte, 1);
  }
  CpuModel second = CpuModel::compile(small_graph(3.5), options);
  EXPECT_FALSE(second.result().cache_hit);
  Tensor x = random_tensor({4, 4}, DType::f32, 20);
  EXPECT_EQ(compare(ir::interpret(small_graph(3.5), {{"x", x}})[0], second.run({{"x", x}})[0], 1e-5, 1e-6), "");
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackendCache, TwoProcessesRacingOnOneKeyBothSucceed) {
  CpuCompileOptions options = private_cache("race");
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 1;
      try {
        CpuModel model = CpuModel::compile(small_graph(4.5), options);
        Tensor x = Tensor::full({4, 4}, 0.0, DType::f32);
        std::vector<Tensor> out = model.run({{"x", x}});
        status = std::fabs(out[0].flat_double(0) - 5.5) < 1e-5 ? 0 : 2;
      } catch (...) {
        status = 3;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  EXPECT_TRUE(CpuModel::compile(small_graph(4.5), options).result().cache_hit);
  fs::remove_all(*options.cache_dir);
}

// ---------------------------------------------------------------- bad input

TEST(CpuBackend, MissingCompilerIsAClearError) {
  CpuCompileOptions options = private_cache("nocxx");
  options.use_cache = false;
  const char* old = std::getenv("CXX");
  std::string saved = old ? old : "";
  setenv("CXX", "/nonexistent/kiln-test-c++", 1);
  std::string message = error_of([&] { CpuModel::compile(small_graph(5.5), options); });
  if (old) setenv("CXX", saved.c_str(), 1); else unsetenv("CXX");
  EXPECT_NE(message.find("C++ compiler '/nonexistent/kiln-test-c++' was not found"), std::string::npos) << message;
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackend, OutputDirectoryIsNotOverwrittenUnlessAsked) {
  CpuCompileOptions options = test_options();
  fs::path out = fs::path(KILN_BINARY_DIR) / "test-caches" / ("out-" + std::to_string(getpid()));
  fs::remove_all(out);
  options.output_dir = out;
  CpuModel::compile(small_graph(6.5), options);
  EXPECT_TRUE(fs::exists(out / "module.cpp"));
  EXPECT_TRUE(fs::exists(out / "module.so"));
  std::string message = error_of([&] { CpuModel::compile(small_graph(6.5), options); });
  EXPECT_NE(message.find("exists and is not empty"), std::string::npos) << message;
  options.overwrite = true;
  CpuModel::compile(small_graph(6.5), options);
  fs::remove_all(out);
}

// The generated source compiles cleanly with -Wall -Wextra.
TEST(CpuBackend, GeneratedSourceCompilesWithoutWarnings) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "test-caches" / ("warnings-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  Graph graph = ir::load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / "attention.kiln").string());
  std::ofstream(dir / "module.cpp") << dump_codegen_stage(graph, "cpp");
  std::string cxx = std::getenv("CXX") ? std::getenv("CXX") : "c++";
  std::string command = cxx + " -std=c++17 -O1 -fopenmp -Wall -Wextra -fsyntax-only " + (dir / "module.cpp").string() +
                        " > " + (dir / "log.txt").string() + " 2>&1";
  int status = std::system(command.c_str());
  std::ifstream log(dir / "log.txt");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(status, 0) << text;
  EXPECT_EQ(text, "") << "warnings:\n" << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::compiler
