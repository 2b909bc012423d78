// Differential tests of the fallback nodes the cpu target computes itself (codegen/loop_ir.h:
// NativeFallback, codegen/cpp/kiln_sequence_kernels.h): cumsum, cumprod, topk, scatter and
// grid_sample compiled, built and run, bit for bit against the reference interpreter, along the
// first, a middle and the last dim (lines side by side as columns or as rows, whole tasks of
// lanes and partial ones), of f32, f64 and integer values (sums that wrap past int64), with NaNs,
// infinities, signed zeros and ties for topk, k of 0, a few, more than 32 (a heap) and the whole
// dim, largest and smallest, scatters written and added (an index out of range an IndexError),
// 2-d grid_samples, a non-contiguous input and a symbolic dim; and that no such node goes to the
// host's handler.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::TensorMeta;
using test_support::compare_tensors;
using test_support::random_tensor;

CompileOptions test_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

// Compiles `graph`, checks that no node runs on the host's handler, and runs it on each input set:
// every output equal to the interpreter's.
void expect_native_and_exact(const Graph& graph, const std::vector<std::map<std::string, Tensor>>& input_sets) {
  CompiledModel model = compile(graph, test_options());
  EXPECT_TRUE(model.artifact().fallbacks().empty()) << "host fallbacks: " << model.artifact().fallbacks().front();
  for (const std::map<std::string, Tensor>& inputs : input_sets) {
    std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
    std::vector<Tensor> actual = model.run(inputs);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string problem = compare_tensors(expected[i], actual[i], 0, 0);
      EXPECT_TRUE(problem.empty()) << "output " << i << ": " << problem << "\n" << ir::print_graph(graph);
    }
  }
}

Graph one_op(const std::string& op, DType dtype, const std::vector<SymInt>& shape, std::vector<ir::Argument> args,
             ir::Kwargs kwargs = {}, bool transposed = false) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(dtype, shape));
  if (transposed) x = graph.create_call("transpose", {x, 0, int64_t(shape.size()) - 1});
  args.insert(args.begin(), ir::Argument(x));
  Node* y = graph.create_call(op, std::move(args), std::move(kwargs));
  if (y->meta.is_tuple) {
    graph.create_output({graph.create_call("getitem", {y, 0}), graph.create_call("getitem", {y, 1})});
  } else {
    graph.create_output({y});
  }
  return graph;
}

// Sets the element at row-major position `flat` of `t`.
void set_flat(const Tensor& t, int64_t flat, double value) {
  std::vector<int64_t> at(size_t(t.dim()));
  for (size_t d = at.size(); d-- > 0;) {
    at[d] = flat % t.size(int64_t(d));
    flat /= t.size(int64_t(d));
  }
  t.set_double(at, value);
}

TEST(CpuNativeFallbacks, RunningSumsAndProductsAlongEveryDim) {
  // Rows of 600 (two tasks of 256 columns and part of a third); along the last dim, 120 rows side
  // by side (one partial task) and, in [300, 7], a task of 256 rows and one of 44.
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({3, 40, 600}, dtype, 11, -8, 8);
    for (int64_t i = 0; i < x.numel(); i += 5) set_flat(x, i, (i % 3 + 1) * 1.0e7);  // sums that round in f32
    Tensor near_one = random_tensor({3, 40, 600}, dtype, 12, 0.9, 1.1);
    for (int64_t dim = 0; dim < 3; ++dim) {
      expect_native_and_exact(one_op("cumsum", dtype, {3, 40, 600}, {dim}), {{{"x", x}}});
      expect_native_and_exact(one_op("cumprod", dtype, {3, 40, 600}, {dim}), {{{"x", near_one}}});
    }
    expect_native_and_exact(one_op("cumsum", dtype, {300, 7}, {1}), {{{"x", random_tensor({300, 7}, dtype, 13)}}});
  }
}

TEST(CpuNativeFallbacks, IntegerSumsAccumulateInInt64AndWrap) {
  Tensor big = random_tensor({5, 90}, DType::i64, 3);
  for (int64_t i = 0; i < big.numel(); ++i)
    big.set_int(std::vector<int64_t>{i / 90, i % 90}, (i % 2 ? 3 : -1) * (std::numeric_limits<int64_t>::max() / 3 - i));
  expect_native_and_exact(one_op("cumsum", DType::i64, {5, 90}, {1}), {{{"x", big}}});
  expect_native_and_exact(one_op("cumprod", DType::i64, {5, 90}, {0}), {{{"x", random_tensor({5, 90}, DType::i64, 4)}}});
  expect_native_and_exact(one_op("cumsum", DType::i32, {5, 90}, {1}), {{{"x", random_tensor({5, 90}, DType::i32, 5)}}});
  expect_native_and_exact(one_op("cumsum", DType::boolean, {66, 9}, {0}),
                          {{{"x", random_tensor({66, 9}, DType::boolean, 6)}}});
}

TEST(CpuNativeFallbacks, ANonContiguousInputAndASymbolicDim) {
  expect_native_and_exact(one_op("cumsum", DType::f32, {40, 70}, {1}, {}, /*transposed=*/true),
                          {{{"x", random_tensor({40, 70}, DType::f32, 7)}}});
  Graph symbolic = one_op("cumsum", DType::f32, {SymInt::symbol("s0"), 33}, {0});
  expect_native_and_exact(symbolic, {{{"x", random_tensor({5, 33}, DType::f32, 8)}},
                                     {{"x", random_tensor({130, 33}, DType::f32, 9)}}});
}

// A line with NaNs, infinities, signed zeros and repeated values (ties keep their order).
Tensor awkward_rows(const Sizes& sizes, DType dtype, uint64_t seed) {
  Tensor t = random_tensor(sizes, dtype, seed, -3, 3);
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {std::nan(""), inf, -inf, 0.0, -0.0, 1.5, 1.5, -2.0};
  for (int64_t i = 0; i < t.numel(); i += 3) {
    const double value = specials[(i / sizes.back() + i) % 8];
    if (is_floating(dtype) || std::isfinite(value)) set_flat(t, i, value);
  }
  return t;
}

TEST(CpuNativeFallbacks, TopKOrdersAsAStableSortDoes) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::i32}) {
    Tensor rows = awkward_rows({7, 300}, dtype, 21);
    for (int64_t k : {0, 1, 5, 32, 40, 300})
      for (bool largest : {true, false})
        expect_native_and_exact(one_op("topk", dtype, {7, 300}, {k, 1, largest}), {{{"x", rows}}});
  }
  // Along the first dim: columns side by side (70 of them: a block of 64 and 6).
  Tensor columns = awkward_rows({50, 70}, DType::f32, 22);
  expect_native_and_exact(one_op("topk", DType::f32, {50, 70}, {16, 0, true}), {{{"x", columns}}});
  expect_native_and_exact(one_op("topk", DType::f32, {50, 70}, {50, 0, false}), {{{"x", columns}}});
  // Without NaNs (the selection's fast path), many rows.
  Tensor plain = random_tensor({200, 257}, DType::f32, 23);
  expect_native_and_exact(one_op("topk", DType::f32, {200, 257}, {16, -1, true}), {{{"x", plain}}});
}

Graph scatter_graph(DType dtype, const std::vector<SymInt>& self, const std::vector<SymInt>& index, int64_t dim,
                    const std::string& reduce) {
  Graph graph;
  Node* x = graph.create_placeholder("x", TensorMeta::contiguous(dtype, self));
  Node* i = graph.create_placeholder("i", TensorMeta::contiguous(DType::i64, index));
  Node* src = graph.create_placeholder("src", TensorMeta::contiguous(dtype, index));
  ir::Kwargs kwargs;
  if (!reduce.empty()) kwargs.emplace_back("reduce", ir::Argument(reduce));
  graph.create_output({graph.create_call("scatter", {x, dim, i, src}, std::move(kwargs))});
  return graph;
}

// Positions in [0, size) along `dim` of an index of `sizes`, many repeated (a message passing's
// destinations).
Tensor positions(const Sizes& sizes, int64_t size, uint64_t seed) {
  Tensor t = Tensor::empty(sizes, DType::i64);
  uint64_t state = seed * 6364136223846793005ull + 1;
  for (int64_t n = 0; n < t.numel(); ++n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    set_flat(t, n, double(int64_t((state >> 33) % uint64_t(size))));
  }
  return t;
}

// Features of 800 edges added into 200 nodes (columns side by side: 64 and 6), written instead,
// and along the last dim (rows side by side); sums of wide magnitudes (one rounding, in double, as
// the reference's), integers that wrap.
TEST(CpuNativeFallbacks, ScattersWriteAndAddInTheReferencesOrder) {
  for (DType dtype : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({200, 70}, dtype, 31), src = random_tensor({800, 70}, dtype, 32);
    for (int64_t n = 0; n < src.numel(); n += 7) set_flat(src, n, 3.0e7);
    Tensor at = positions({800, 70}, 200, 33);
    for (const char* reduce : {"sum", ""})
      expect_native_and_exact(scatter_graph(dtype, {200, 70}, {800, 70}, 0, reduce),
                              {{{"x", x}, {"i", at}, {"src", src}}});
    Tensor rows = random_tensor({9, 50}, dtype, 34), row_src = random_tensor({9, 120}, dtype, 35);
    expect_native_and_exact(scatter_graph(dtype, {9, 50}, {9, 120}, 1, "sum"),
                            {{{"x", rows}, {"i", positions({9, 120}, 50, 36)}, {"src", row_src}}});
  }
  Tensor big = random_tensor({4, 3}, DType::i64, 37), big_src = random_tensor({40, 3}, DType::i64, 38);
  for (int64_t n = 0; n < big_src.numel(); ++n) set_flat(big_src, n, double(std::numeric_limits<int64_t>::max() / 4));
  expect_native_and_exact(scatter_graph(DType::i64, {4, 3}, {40, 3}, 0, "sum"),
                          {{{"x", big}, {"i", positions({40, 3}, 4, 39)}, {"src", big_src}}});
}

// A 2-d grid_sample, bilinear and nearest, with each padding, with and without align_corners, at a
// grid reaching past [-1, 1] (f32, rounded as the reference rounds it, and f64), of f32 and f64
// images.
TEST(CpuNativeFallbacks, GridSamplesOfImagesAsTheReference) {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (DType grid_dtype : {DType::f32, DType::f64}) {
      Tensor image = random_tensor({2, 3, 9, 11}, dtype, 51);
      Tensor grid = random_tensor({2, 7, 5, 2}, grid_dtype, 52, -1.3, 1.3);
      for (const char* mode : {"bilinear", "nearest"})
        for (const char* padding : {"zeros", "border", "reflection"})
          for (bool corners : {false, true}) {
            SCOPED_TRACE(std::string(mode) + " " + padding + (corners ? " align_corners" : ""));
            Graph graph;
            Node* x = graph.create_placeholder("x", TensorMeta::contiguous(dtype, {2, 3, 9, 11}));
            Node* g = graph.create_placeholder("g", TensorMeta::contiguous(grid_dtype, {2, 7, 5, 2}));
            graph.create_output({graph.create_call("grid_sample", {x, g, std::string(mode), std::string(padding), corners})});
            expect_native_and_exact(graph, {{{"x", image}, {"g", grid}}});
          }
    }
  }
}

// An index outside the dim is an IndexError of the kernel, as the reference kernel's error is.
TEST(CpuNativeFallbacks, AScatterIndexOutOfRangeIsAnIndexError) {
  Graph graph = scatter_graph(DType::f32, {6, 4}, {5, 4}, 0, "sum");
  CompiledModel model = compile(graph, test_options());
  Tensor at = positions({5, 4}, 6, 40);
  for (int64_t bad : {6, -1}) {
    set_flat(at, 9, double(bad));
    std::string message;
    try {
      model.run({{"x", random_tensor({6, 4}, DType::f32, 41)}, {"i", at}, {"src", random_tensor({5, 4}, DType::f32, 42)}});
    } catch (const Error& error) {
      message = error.what();
    }
    EXPECT_NE(message.find("IndexError: an index is out of range"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kiln::compiler
