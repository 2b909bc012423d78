// Differential tests of the cpu target (compiler/targets/cpu_target.h, through the driver of
// compiler/compile_driver.h): graphs compiled to C++, built with the system compiler and run,
// against the reference interpreter. Every core op
// (the shared cases of tests/support/op_coverage_cases.h: odd sizes, broadcasting, i64 and
// bool, ...), non-contiguous inputs, padded and merged dims, tiled transposes, the samples
// against PyTorch's goldens, random graphs, guards, the cache, and bad input.
#include "compiler/compile_driver.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ir/interpreter.h"
#include "ir/model_file.h"
#include "ir/printer.h"
#include "runtime/compile_cache.h"
#include "runtime/cpu/cpu_artifact.h"
#include "kiln/npy.h"
#include "tests/support/differential.h"
#include "tests/support/op_coverage_cases.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

// GCC 12 reports -Wmaybe-uninitialized inside std::variant for braced Argument lists (a known
// false positive of its inliner, like the -Wrestrict one the build turns off).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::TensorMeta;
using test_support::compare_tensors;
using test_support::random_tensor;

// One cache for the whole suite (the cache is safe under the parallel test processes).
CompileOptions test_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
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

// Compiles `graph` once and runs it on each input set, against the interpreter.
void expect_matches_interpreter_on_each(const Graph& graph,
                                        const std::vector<std::map<std::string, Tensor>>& input_sets, double rtol,
                                        double atol) {
  CompiledModel model = compile(graph, test_options());
  std::vector<std::string> names = graph.output_names();
  for (const std::map<std::string, Tensor>& inputs : input_sets) {
    std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
    std::vector<Tensor> actual = model.run(inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string problem = compare_tensors(expected[i], actual[i], rtol, atol);
      EXPECT_TRUE(problem.empty()) << "output " << names[i] << ": " << problem << "\ngraph:\n"
                                   << ir::print_graph(graph);
    }
  }
}

void expect_matches_interpreter(const Graph& graph, const std::map<std::string, Tensor>& inputs, double rtol = 1e-4,
                                double atol = 1e-5) {
  expect_matches_interpreter_on_each(graph, {inputs}, rtol, atol);
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

// ---------------------------------------------------------------- every core op

class CpuBackendOps : public ::testing::TestWithParam<size_t> {};

TEST_P(CpuBackendOps, MatchTheInterpreter) {
  std::vector<test_support::OpCoverageCase> cases = test_support::op_coverage_cases();
  const test_support::OpCoverageCase& c = cases.at(GetParam());
  SCOPED_TRACE(c.name);
  expect_matches_interpreter_on_each(c.graph, c.input_sets, c.rtol, c.atol);
}

INSTANTIATE_TEST_SUITE_P(CoreOps, CpuBackendOps, ::testing::Range(size_t(0), test_support::op_coverage_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& case_index) {
                           return test_support::op_coverage_cases().at(case_index.param).name;
                         });

// ---------------------------------------------------------------- errors and layouts

TEST(CpuBackend, IndexOutOfRangeIsAnErrorNotAWrongNumber) {
  Graph graph;
  Node* x = input(graph, "x", {5, 7});
  Node* rows = input(graph, "rows", {2}, DType::i64);
  graph.create_output({graph.create_call("index_select", {x, 0, rows})});
  CompiledModel model = compile(graph, test_options());
  std::string message = error_of([&] {
    model.run({{"x", random_tensor({5, 7}, DType::f32, 1)}, {"rows", Tensor::from_doubles({2}, std::vector<double>{1, 5}, DType::i64)}});
  });
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

// A masked softmax: a where on a bool mask, which generated C++ evaluates as kiln_select (both
// sides computed, a blend) and whose mask it reads as unsigned char, so that the loop vectorizes.
TEST(CpuBackend, AMaskedSoftmaxMatchesTheInterpreter) {
  Graph graph;
  Node* scores = input(graph, "scores", {3, 37, 37});
  Node* mask = input(graph, "mask", {37, 37}, DType::boolean);
  Node* filled = graph.create_call("where", {mask, -std::numeric_limits<double>::infinity(), scores});
  graph.create_output({graph.create_call("softmax", {filled, -1})});
  std::vector<double> upper(37 * 37);
  for (int64_t i = 0; i < 37; ++i)
    for (int64_t j = 0; j < 37; ++j) upper[size_t(i * 37 + j)] = j > i ? 1 : 0;
  expect_matches_interpreter(graph, {{"scores", random_tensor({3, 37, 37}, DType::f32, 4)},
                                     {"mask", Tensor::from_doubles({37, 37}, upper, DType::boolean)}});
}

TEST(CpuBackend, NonContiguousInputsAreAccepted) {
  Graph graph;
  Node* x = input(graph, "x", {5, 7});
  graph.create_output({graph.create_call("exp", {x}), graph.create_call("sum", {x, ints({0})})});
  Tensor base = random_tensor({7, 5}, DType::f32, 9);
  Tensor transposed = base.permute({1, 0});
  ASSERT_FALSE(transposed.is_contiguous());
  expect_matches_interpreter(graph, {{"x", transposed}});
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

// A transposed read whose unit-stride walk spans two dims (a GroupNorm's [G, C/G, H*W] over a
// channels-last input: channel (C/G)*g + c): the tiles' rows are the two dims merged, each row's
// coordinates recovered from it; partial tiles at both edges (15 rows of 5 x 3, 70 columns), and
// a per-group scale read at the outer of the two.
TEST(CpuBackend, ATransposedReadOverTwoDimsTilesTheirMergedRows) {
  Graph graph;
  Node* x = input(graph, "x", {70, 15});
  Node* scale = input(graph, "scale", {5, 1, 1});
  Node* grouped = graph.create_call("reshape", {graph.create_call("transpose", {x, 0, 1}), ints({5, 3, 70})});
  graph.create_output({graph.create_call("mul", {grouped, scale})});
  const std::string source = dump_codegen_stage(graph, "cpp");
  EXPECT_NE(source.find("tiled 32x32: a transposed read (rows over 2 dims)"), std::string::npos) << source;
  expect_matches_interpreter(graph, {{"x", random_tensor({70, 15}, DType::f32, 91)},
                                     {"scale", random_tensor({5, 1, 1}, DType::f32, 92)}});
}

// A transpose to few columns (an image's channels made innermost): rows innermost in the simd
// loop, a statement per column; rows past a tile of 1024 and a batch dim outside, and a symbolic
// row count.
TEST(CpuBackend, TransposesToFewColumnsLoopOverRows) {
  for (int64_t columns : {2, 3, 8}) {
    for (int64_t rows : {5, 1500}) {
      Graph graph;
      Node* x = input(graph, "x", {2, columns, rows});
      graph.create_output({graph.create_call("mul", {graph.create_call("transpose", {x, 1, 2}), 2.0})});
      std::string source = dump_codegen_stage(graph, "cpp");
      EXPECT_NE(source.find(std::to_string(columns) + " columns, each its own statement"), std::string::npos)
          << columns << " columns, " << rows << " rows";
      expect_matches_interpreter(graph, {{"x", random_tensor({2, columns, rows}, DType::f32, uint64_t(rows + columns))}});
    }
  }
  Graph graph;
  Node* x = input(graph, "x", {SymInt(3), SymInt::symbol("n")});
  graph.create_output({graph.create_call("add", {graph.create_call("transpose", {x, 0, 1}), 1.0})});
  expect_matches_interpreter(graph, {{"x", random_tensor({3, 2050}, DType::f32, 77)}});
  // Nine columns keep the 32x32 tiles.
  Graph wide;
  Node* y = input(wide, "y", {9, 40});
  wide.create_output({wide.create_call("add", {wide.create_call("transpose", {y, 0, 1}), 1.0})});
  EXPECT_NE(dump_codegen_stage(wide, "cpp").find("tiled 32x32"), std::string::npos);
  expect_matches_interpreter(wide, {{"y", random_tensor({9, 40}, DType::f32, 78)}});
}

// Reductions over a middle dim whose second reduction reads the first's result: softmax and
// log_softmax over the classes of an NCHW map, and logsumexp written out (amax, exp of the
// difference, sum, log): column reductions over 64 points at once, one pass over the rows per
// dependent reduction and a last one for the stores, each lane with its own point's max, sum and
// log of the sum; a NaN and an infinity in one point's classes, and 630 points (a partial last
// block). All three share one kernel (one max, two sums); logsumexp alone takes two passes.
TEST(CpuBackend, SoftmaxOverAMiddleDimReducesColumnsInPasses) {
  Tensor values = random_tensor({2, 21, 9, 70}, DType::f32, 81, -6, 6);
  values.data<float>()[3 * 630 + 100] = std::numeric_limits<float>::quiet_NaN();  // class 3 of point 100
  values.data<float>()[5 * 630 + 200] = std::numeric_limits<float>::infinity();   // class 5 of point 200
  for (bool all : {true, false}) {
    Graph graph;
    Node* x = input(graph, "x", {2, 21, 9, 70});
    Node* peak = graph.create_call("amax", {x, ints({1}), true});
    Node* sum = graph.create_call("sum", {graph.create_call("exp", {graph.create_call("sub", {x, peak})}), ints({1})});
    Node* logsumexp = graph.create_call("add", {graph.create_call("log", {sum}), graph.create_call("squeeze", {peak, 1})});
    if (all) {
      graph.create_output({graph.create_call("softmax", {x, 1}), graph.create_call("log_softmax", {x, 1}), logsumexp});
    } else {
      graph.create_output({logsumexp});
    }
    const std::string source = dump_codegen_stage(graph, "cpp");
    const std::string expected = all ? "in 3 passes over the rows" : "in 2 passes over the rows";
    EXPECT_NE(source.find("column reduction: 64 points of x1 at once, " + expected), std::string::npos) << source;
    expect_matches_interpreter(graph, {{"x", values}});
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

TEST(CpuBackend, MatmulWithAnEmptyInnerDimIsZeros) {
  Graph graph;
  Node* a = input(graph, "a", {3, 4, 0});
  Node* b = input(graph, "b", {3, 0, 5});
  graph.create_output({graph.create_call("add", {graph.create_call("matmul", {a, b}), 1.0})});
  expect_matches_interpreter(graph, {{"a", Tensor::zeros({3, 4, 0}, DType::f32)}, {"b", Tensor::zeros({3, 0, 5}, DType::f32)}});
}

// Each way the pool splits BLAS GEMMs into tasks (codegen/cpp/kiln_thread_pool.h): blocks of rows
// (more rows than columns), blocks of columns (more columns than rows: an im2col convolution; or
// at most 16 rows), whole GEMMs of a batch, each with and without a pointwise epilogue, on 1, 2
// and 3 threads, the blocks' edges included (sizes that are not multiples of 16).
TEST(CpuBackend, GemmsSplitIntoTasksMatchTheInterpreter) {
  struct Shape {
    int64_t batch, m, k, n;
  };
  const Shape shapes[] = {{1, 203, 40, 70}, {1, 70, 40, 203}, {1, 9, 33, 150}, {3, 37, 40, 101}, {5, 90, 24, 40}};
  int seed = 60;
  for (const Shape& shape : shapes) {
    for (bool epilogue : {false, true}) {
      SCOPED_TRACE(std::to_string(shape.batch) + "x" + std::to_string(shape.m) + "x" + std::to_string(shape.k) + "x" +
                   std::to_string(shape.n) + (epilogue ? " + relu" : ""));
      Graph graph;
      std::vector<SymInt> a_shape = {shape.m, shape.k}, b_shape = {shape.k, shape.n};
      if (shape.batch > 1) a_shape.insert(a_shape.begin(), shape.batch), b_shape.insert(b_shape.begin(), shape.batch);
      Node* a = input(graph, "a", a_shape);
      Node* b = input(graph, "b", b_shape);
      Node* product = graph.create_call("matmul", {a, b});
      graph.create_output({epilogue ? graph.create_call("relu", {graph.create_call("add", {product, 0.25})}) : product});
      CompiledModel model = compile(graph, test_options());
      std::vector<int64_t> a_sizes, b_sizes;
      for (const SymInt& size : a_shape) a_sizes.push_back(*size.maybe_constant());
      for (const SymInt& size : b_shape) b_sizes.push_back(*size.maybe_constant());
      std::map<std::string, Tensor> inputs = {{"a", random_tensor(a_sizes, DType::f32, seed++)},
                                              {"b", random_tensor(b_sizes, DType::f32, seed++)}};
      std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
      for (int threads : {1, 2, 3}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        ASSERT_EQ(actual.size(), 1u);
        std::string problem = compare_tensors(expected[0], actual[0], 1e-4, 1e-5);
        EXPECT_TRUE(problem.empty()) << threads << " threads: " << problem;
      }
    }
  }
}

// x[seq, batch, d] @ w[d, n] where x is a sequence-first view of a batch-first tensor (an ONNX
// transformer's in-projection): the batch cannot fold into the rows as x lies. Where the product is
// wide enough to pay for it (n = 70), the lowering copies x in order and the batch folds into one
// GEMM of seq * batch rows; a narrow one (n = 12) keeps x in place, and each GEMM takes the longer
// seq dim as its rows (C's rows then seq * batch * n apart) with the batch as the loop: `batch`
// GEMMs rather than `seq`. With and without an epilogue, at 1 to 3 threads.
TEST(CpuBackend, ASequenceFirstMatmulFoldsAfterACopyOrTakesItsLongerDimAsRows) {
  for (int64_t n : {70, 12}) {
    for (bool epilogue : {false, true}) {
      SCOPED_TRACE(std::to_string(n) + " columns" + (epilogue ? " + bias" : ""));
      Graph graph;
      Node* x = input(graph, "x", {3, 41, 24});
      Node* w = input(graph, "w", {24, n});
      Node* bias = input(graph, "bias", {n});
      Node* seq_first = graph.create_call("permute", {x, ints({1, 0, 2})});
      Node* product = graph.create_call("matmul", {seq_first, w});
      graph.create_output({epilogue ? graph.create_call("add", {product, bias}) : product});
      std::string source = dump_codegen_stage(graph, "cpp", {});
      EXPECT_EQ(source.find("the rows are the output's dim 0") != std::string::npos, n == 12) << source;
      EXPECT_EQ(source.find("batch folded into M: one GEMM") != std::string::npos, n == 70) << source;
      CompiledModel model = compile(graph, test_options());
      std::map<std::string, Tensor> inputs = {{"x", random_tensor({3, 41, 24}, DType::f32, 80)},
                                              {"w", random_tensor({24, n}, DType::f32, 81)},
                                              {"bias", random_tensor({n}, DType::f32, 82)}};
      std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
      for (int threads : {1, 2, 3}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        std::string problem = compare_tensors(expected[0], actual[0], 1e-4, 1e-5);
        EXPECT_TRUE(problem.empty()) << threads << " threads: " << problem;
      }
    }
  }
}

// The same with a dynamic dim (an ONNX export with a dynamic batch or sequence): the choice is made
// before the size is known. A narrow product keeps x in place: a constant seq of 41 against a
// symbolic batch takes the seq as rows (`batch` GEMMs of 41 rows, not 41 GEMMs of `batch` rows, one
// row each at batch 1); two rows of each of s0 entries (x[s0, 3, 24][:, :2], whose batch cannot fold
// into the rows) take the symbolic s0 as rows instead. A wide one copies x in order and folds, at
// any size. Each at sizes 0, 1 and 5, against the interpreter.
TEST(CpuBackend, AMatmulWithADynamicDimChoosesItsRowsBeforeTheSizeIsKnown) {
  const SymInt s0 = SymInt::symbol("s0");
  for (int64_t n : {12, 70}) {
    for (bool sequence_first : {true, false}) {
      SCOPED_TRACE(std::string(sequence_first ? "x[41, s0, 24]" : "x[s0, 2, 24]") + " @ w[24, " + std::to_string(n) + "]");
      const std::vector<SymInt> x_shape =
          sequence_first ? std::vector<SymInt>{s0, 41, 24} : std::vector<SymInt>{s0, 3, 24};
      Graph graph;
      Node* x = input(graph, "x", x_shape);
      Node* w = input(graph, "w", {24, n});
      Node* bias = input(graph, "bias", {n});
      Node* left = sequence_first ? graph.create_call("permute", {x, ints({1, 0, 2})}) : graph.create_call("slice", {x, 1, 0, 2});
      graph.create_output({graph.create_call("add", {graph.create_call("matmul", {left, w}), bias})});
      std::string source = dump_codegen_stage(graph, "cpp", {});
      EXPECT_EQ(source.find("the rows are the output's dim 0") != std::string::npos, n == 12) << source;
      EXPECT_EQ(source.find("batch folded into M: one GEMM") != std::string::npos, n == 70) << source;
      CompiledModel model = compile(graph, test_options());
      for (int64_t size : {0, 1, 5}) {
        std::vector<int64_t> x_sizes;
        for (const SymInt& dim : x_shape) x_sizes.push_back(dim.maybe_constant().value_or(size));
        std::map<std::string, Tensor> inputs = {{"x", random_tensor(x_sizes, DType::f32, 83 + size)},
                                                {"w", random_tensor({24, n}, DType::f32, 81)},
                                                {"bias", random_tensor({n}, DType::f32, 82)}};
        std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
        for (int threads : {1, 2}) {
          std::vector<Tensor> actual = model.run(inputs, threads);
          std::string problem = compare_tensors(expected[0], actual[0], 1e-4, 1e-5);
          EXPECT_TRUE(problem.empty()) << "s0 = " << size << ", " << threads << " threads: " << problem;
        }
      }
    }
  }
}

// gather and index_select of 0-d tensors read them as shape [1] (PyTorch's rule): the one
// element at index 0, and another index is an IndexError, as in the interpreter (they used to
// be fallback nodes, which a package could not carry).
TEST(CpuBackend, GatherAndIndexSelectOfZeroDimTensors) {
  Graph graph;
  Node* x = input(graph, "x", {});
  Node* i = input(graph, "i", {}, DType::i64);
  Node* v = input(graph, "v", {4});
  Node* j = input(graph, "j", {1}, DType::i64);
  graph.create_output({graph.create_call("gather", {x, 0, i}), graph.create_call("index_select", {x, 0, j}),
                       graph.create_call("index_select", {x, -1, i}), graph.create_call("gather", {v, 0, j})});
  expect_matches_interpreter(graph, {{"x", Tensor::full({}, 2.5, DType::f32)},
                                     {"i", Tensor::full({}, 0.0, DType::i64)},
                                     {"v", random_tensor({4}, DType::f32, 90)},
                                     {"j", Tensor::full({1}, 0.0, DType::i64)}});
  CompiledModel model = compile(graph, test_options());
  std::string message = error_of([&] {
    model.run({{"x", Tensor::full({}, 2.5, DType::f32)}, {"i", Tensor::full({}, 1.0, DType::i64)},
               {"v", random_tensor({4}, DType::f32, 91)}, {"j", Tensor::full({1}, 0.0, DType::i64)}});
  });
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
}

// An index table that is a constant (frozen, or a constant of the graph) with every element inside
// the indexed dim (an ONNX Resize's source columns) is read through without a bounds check per
// element; one with an element outside it, or a parameter that may change between calls, keeps the
// check, and the run reports the bad index as before.
TEST(CpuBackend, AConstantIndexTableInsideItsDimIsReadWithoutACheck) {
  const std::string checked = "kiln_wrap_index(int64_t(";
  for (int64_t last : {5, 6}) {
    for (bool freeze : {true, false}) {
      SCOPED_TRACE("last index " + std::to_string(last) + (freeze ? ", frozen" : ", a parameter"));
      Graph graph;
      Node* x = input(graph, "x", {4, 6});
      Tensor table = Tensor::zeros({5}, DType::i64);
      const int64_t values[] = {0, 3, 2, 1, last};
      for (int64_t i = 0; i < 5; ++i) table.data<int64_t>()[i] = values[i];
      graph.set_parameter("table", table);
      graph.create_output({graph.create_call("index_select", {x, 1, graph.create_get_attr("table")})});
      CodegenStageOptions stage;
      stage.freeze = freeze;
      const std::string source = dump_codegen_stage(graph, "cpp", stage);
      EXPECT_EQ(source.find(checked) == std::string::npos, freeze && last < 6);
      CompileOptions options = test_options();
      options.freeze = freeze;
      CompiledModel model = compile(graph, options);
      const std::map<std::string, Tensor> inputs = {{"x", random_tensor({4, 6}, DType::f32, 93)}};
      if (last < 6) {
        EXPECT_EQ(compare_tensors(ir::Interpreter().run(graph, inputs)[0], model.run(inputs)[0], 0, 0), "");
      } else {
        const std::string message = error_of([&] { model.run(inputs); });
        EXPECT_NE(message.find("out of range"), std::string::npos) << message;
      }
    }
  }
}

// The mean of no values is NaN in PyTorch (torch.var_mean(torch.empty(3, 0), 1) is (nan, nan));
// the compiled Welford reduction said 0.
TEST(CpuBackend, VarMeanOverNoElementsIsNaN) {
  Graph graph;
  Node* x = input(graph, "x", {3, 0});
  Node* both = graph.create_call("var_mean", {x, ints({1})});
  graph.create_output({graph.create_call("getitem", {both, 0}), graph.create_call("getitem", {both, 1})});
  std::vector<Tensor> outputs = compile(graph, test_options()).run({{"x", Tensor::zeros({3, 0}, DType::f32)}});
  ASSERT_EQ(outputs.size(), 2u);
  for (const Tensor& output : outputs) {
    ASSERT_EQ(output.numel(), 3);
    for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(output.data<float>()[i])) << i;
  }
  expect_matches_interpreter(graph, {{"x", Tensor::zeros({3, 0}, DType::f32)}});
}

// A division by a row's reduction (here its max) is a division in the compiled row step, as in
// the interpreter and PyTorch: -2.5 / 0.019607844f is -127.49999 in f32, while -2.5 times the
// reciprocal is -127.5, which round() (half to even) makes -128 instead of -127.
TEST(CpuBackend, ADivisionByARowReductionIsExact) {
  Graph graph;
  Node* x = input(graph, "x", {2, 2});
  Node* max = graph.create_call("amax", {x, ints({1}), true});
  graph.create_output({graph.create_call("round", {graph.create_call("div", {x, max})})});
  Tensor data = Tensor::from_doubles({2, 2}, std::vector<double>{-2.5, 0.019607844, -2.5, 0.019607844}, DType::f32);
  std::vector<Tensor> outputs = compile(graph, test_options()).run({{"x", data}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].flat_double(0), -127.0);
  EXPECT_EQ(outputs[0].flat_double(1), 1.0);
  expect_matches_interpreter(graph, {{"x", data}}, 0, 0);
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
  CompiledModel model = compile(graph, test_options());
  std::vector<Tensor> actual = model.run(inputs);
  std::vector<std::string> names = graph.output_names();
  ASSERT_EQ(actual.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(compare_tensors(expected_interp[i], actual[i], 1e-4, 1e-5), "") << names[i] << " vs the interpreter";
    fs::path golden = data / "expected" / (names[i] + ".npy");
    if (fs::exists(golden)) {
      EXPECT_EQ(compare_tensors(read_npy(golden.string()), actual[i], 1e-4, 1e-5), "") << names[i] << " vs PyTorch";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, CpuBackendSamples, ::testing::Values("mlp", "cnn", "attention", "inplace"));

// ---------------------------------------------------------------- random graphs

TEST(CpuBackend, RandomGraphsMatchTheInterpreter) {
  int count = 24;
  if (const char* env = std::getenv("KILN_CPU_RANDOM_GRAPHS")) count = std::atoi(env);
  test_support::expect_random_graphs_match_interpreter(
      count,
      [](const Graph& graph, const std::map<std::string, Tensor>& inputs) {
        return compile(graph, test_options()).run(inputs);
      },
      1e-3, 1e-4);
}

// ---------------------------------------------------------------- guards

TEST(CpuBackend, GuardsNameTheInputAndTheValues) {
  Graph graph;
  SymInt s0 = SymInt::symbol("s0");
  Node* x = input(graph, "x", {s0, 8});
  Node* y = input(graph, "y", {s0, 8});
  graph.create_output({graph.create_call("add", {x, y})});
  CompiledModel model = compile(graph, test_options());
  const CpuArtifact& artifact = *model.artifact_as<CpuArtifact>();
  auto run = [&](Tensor a, Tensor b) { return const_cast<CpuArtifact&>(artifact).run({a, b}, {}); };
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
  // Through CompiledModel::run, the interpreter's own input checks speak first.
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

CompileOptions private_cache(const std::string& name) {
  CompileOptions options;
  options.cache_dir = fs::path(KILN_BINARY_DIR) / "test-caches" / (name + "-" + std::to_string(getpid()));
  fs::remove_all(*options.cache_dir);
  return options;
}

TEST(CpuBackendCache, SecondCompileIsAHitWithoutCompilingCpp) {
  CompileOptions options = private_cache("hit");
  std::vector<std::string> stages;
  options.on_stage = [&](const std::string& stage, double) { stages.push_back(stage); };
  CompiledModel first = compile(small_graph(1.5), options);
  EXPECT_FALSE(first.result().cache_hit);
  EXPECT_NE(std::find(stages.begin(), stages.end(), "c++ compile"), stages.end());
  stages.clear();
  CompiledModel second = compile(small_graph(1.5), options);
  EXPECT_TRUE(second.result().cache_hit);
  EXPECT_EQ(std::find(stages.begin(), stages.end(), "c++ compile"), stages.end());
  EXPECT_EQ(first.result().key, second.result().key);
  CompiledModel other = compile(small_graph(2.5), options);
  EXPECT_NE(other.result().key, first.result().key);
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackendCache, GraphsThatDifferOnlyInParameterNamesDoNotShareAnEntry) {
  // The same code, parameters named differently (as two ONNX models name their constants):
  // each gets its own artifact, whose manifest names its own parameter.
  auto graph_with = [](const std::string& parameter) {
    Graph graph;
    Node* x = input(graph, "x", {4});
    graph.set_parameter(parameter, Tensor::full({4}, 2.0, DType::f32));
    graph.create_output({graph.create_call("mul", {x, graph.create_get_attr(parameter)})});
    return graph;
  };
  CompileOptions options = private_cache("names");
  CompiledModel first = compile(graph_with("shape"), options);
  CompiledModel second = compile(graph_with("weight"), options);
  EXPECT_NE(first.result().key, second.result().key);
  Tensor x = Tensor::full({4}, 1.5, DType::f32);
  EXPECT_EQ(second.run({{"x", x}})[0].flat_double(0), 3.0);
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackendCache, CorruptedEntryIsRebuilt) {
  CompileOptions options = private_cache("corrupt");
  CompiledModel first = compile(small_graph(3.5), options);
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
  testing::internal::CaptureStderr();
  CompiledModel second = compile(small_graph(3.5), options);
  std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(second.result().cache_hit);
  // Rebuilt, and said so (it was silent).
  EXPECT_NE(warning.find("kiln: warning: the compile cache entry " + first.result().key + ": "), std::string::npos)
      << warning;
  EXPECT_NE(warning.find("; it was rebuilt\n"), std::string::npos) << warning;
  Tensor x = random_tensor({4, 4}, DType::f32, 20);
  EXPECT_EQ(compare_tensors(ir::interpret(small_graph(3.5), {{"x", x}})[0], second.run({{"x", x}})[0], 1e-5, 1e-6), "");
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackendCache, TwoProcessesRacingOnOneKeyBothSucceed) {
  CompileOptions options = private_cache("race");
  std::vector<pid_t> children;
  for (int i = 0; i < 2; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 1;
      try {
        CompiledModel model = compile(small_graph(4.5), options);
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
  EXPECT_TRUE(compile(small_graph(4.5), options).result().cache_hit);
  fs::remove_all(*options.cache_dir);
}

// ---------------------------------------------------------------- bad input

TEST(CpuBackend, MissingCompilerIsAClearError) {
  CompileOptions options = private_cache("nocxx");
  options.use_cache = false;
  const char* old = std::getenv("CXX");
  std::string saved = old ? old : "";
  setenv("CXX", "/nonexistent/kiln-test-c++", 1);
  std::string message = error_of([&] { compile(small_graph(5.5), options); });
  if (old) setenv("CXX", saved.c_str(), 1); else unsetenv("CXX");
  EXPECT_NE(message.find("C++ compiler '/nonexistent/kiln-test-c++' was not found"), std::string::npos) << message;
  fs::remove_all(*options.cache_dir);
}

TEST(CpuBackend, OutputDirectoryIsNotOverwrittenUnlessAsked) {
  CompileOptions options = test_options();
  fs::path out = fs::path(KILN_BINARY_DIR) / "test-caches" / ("out-" + std::to_string(getpid()));
  fs::remove_all(out);
  options.output_dir = out;
  compile(small_graph(6.5), options);
  EXPECT_TRUE(fs::exists(out / "module.cpp"));
  EXPECT_TRUE(fs::exists(out / "module.so"));
  std::string message = error_of([&] { compile(small_graph(6.5), options); });
  EXPECT_NE(message.find("exists and is not empty"), std::string::npos) << message;
  options.overwrite = true;
  compile(small_graph(6.5), options);
  fs::remove_all(out);
}

// The generated source compiles cleanly with -Wall -Wextra.
TEST(CpuBackend, GeneratedSourceCompilesWithoutWarnings) {
  fs::path dir = fs::path(KILN_BINARY_DIR) / "test-caches" / ("warnings-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // The attention sample; the cnn sample with frozen parameters (with oneDNN: its convolutions,
  // the matmul with prepacked weights, and their glue).
  for (const char* sample : {"attention", "cnn"}) {
    Graph graph = ir::load_model((fs::path(KILN_SOURCE_DIR) / "samples" / "models" / (std::string(sample) + ".kiln")).string());
    CodegenStageOptions stage;
    stage.freeze = std::string(sample) == "cnn";
    std::ofstream(dir / "module.cpp") << dump_codegen_stage(graph, "cpp", stage);
    std::string cxx = std::getenv("CXX") ? std::getenv("CXX") : "c++";
    std::string command = cxx + " -std=c++17 -O1 -fopenmp -Wall -Wextra -fsyntax-only " + (dir / "module.cpp").string() +
                          " > " + (dir / "log.txt").string() + " 2>&1";
    int status = std::system(command.c_str());
    std::ifstream log(dir / "log.txt");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(status, 0) << sample << ": " << text;
    EXPECT_EQ(text, "") << sample << ": warnings:\n" << text;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::compiler
