// The cpu target's parallel loops on the module's thread pool (codegen/cpp/kiln_thread_pool.h):
// every kind of loop nest that is shared among threads — pointwise nests of rank 1 and 2, row
// and column reductions, a tiled transpose, a batch of GEMMs, one GEMM split into row blocks, a
// folded GEMM with its epilogue, sizes known only at run time above and below the parallel
// threshold (a pointwise nest and a GEMM), a GEMM known to be small, GEMMs of one or a few rows
// (GEMVs, split by columns; the operands in either layout) — against the interpreter, on
// 1, 2 and 3 threads, and the generated source's use of the pool (no OpenMP region, the
// whole-tensor reductions' parts included; one kiln_parallel_for call per parallel loop, whatever
// its size, so that the loop's body is compiled once).
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::TensorMeta;
using test_support::compare_tensors;
using test_support::random_tensor;

CompileOptions test_options() {
  CompileOptions options;
  options.cache_dir = test_support::shared_compile_cache(std::filesystem::path(KILN_BINARY_DIR) / "test-compile-cache");
  return options;
}

ir::Argument ints(std::initializer_list<int64_t> values) {
  std::vector<ir::Argument> list;
  for (int64_t v : values) list.emplace_back(v);
  return ir::Argument(list);
}

Node* input(Graph& graph, const std::string& name, const std::vector<SymInt>& shape) {
  return graph.create_placeholder(name, TensorMeta::contiguous(DType::f32, shape));
}

// Every loop above the parallel threshold (32768 elements of work), in one model.
Graph parallel_loops_graph() {
  Graph graph;
  Node* x = input(graph, "x", {300, 200});
  Node* flat = input(graph, "flat", {70001});
  Node* cube = input(graph, "cube", {3, 150, 101});
  Node* a = input(graph, "a", {6, 70, 50});
  Node* b = input(graph, "b", {6, 50, 40});
  Node* tall = input(graph, "tall", {300, 64});
  Node* square = input(graph, "square", {64, 64});
  Node* seq = input(graph, "seq", {4, 64, 96});
  Node* w = input(graph, "w", {96, 80});
  Node* bias = input(graph, "bias", {80});
  Node* n = input(graph, "n", {SymInt::symbol("s0"), 256});
  Node* m = input(graph, "m", {SymInt::symbol("s0"), 64});
  Node* small_a = input(graph, "small_a", {8, 16});
  Node* small_b = input(graph, "small_b", {16, 8});
  Node* row = input(graph, "row", {1, 96});
  Node* wide = input(graph, "wide", {96, 300});
  Node* wide_t = input(graph, "wide_t", {300, 96});
  Node* few = input(graph, "few", {5, 96});
  Node* columns = input(graph, "columns", {96, 3});
  Node* rows_of_batch = input(graph, "rows_of_batch", {2, 1, 96});
  Node* widths = input(graph, "widths", {2, 96, 300});
  Node* wide_bias = input(graph, "wide_bias", {300});
  Node* peaks = input(graph, "peaks", {1000, 40});
  Node* image = input(graph, "image", {2, 40, 30, 16});
  // A row whose elements are 3 apart: the GEMV's x has a stride.
  Node* strided_row = graph.create_call("transpose", {graph.create_call("slice", {columns, 1, 1, 2}), 0, 1});
  graph.create_output({
      graph.create_call("relu", {graph.create_call("add", {x, 1.0})}),                   // pointwise, rank 2
      graph.create_call("mul", {flat, 2.0}),                                              // pointwise, rank 1
      graph.create_call("softmax", {x, 1}),                                               // row reductions
      graph.create_call("sum", {x, ints({0})}),                                           // a column reduction
      graph.create_call("sum", {flat, ints({0})}),                                        // a whole-tensor sum
      graph.create_call("add", {graph.create_call("transpose", {cube, 1, 2}), 1.0}),      // tiled transpose
      graph.create_call("add", {graph.create_call("matmul", {a, b}), 0.5}),               // a batch of GEMMs
      graph.create_call("matmul", {tall, square}),                                        // row blocks
      graph.create_call("relu", {graph.create_call("add", {graph.create_call("matmul", {seq, w}), bias})}),  // folded
      graph.create_call("exp", {n}),                                                      // a size known at run time
      graph.create_call("matmul", {m, square}),                                           // a GEMM's, too
      graph.create_call("matmul", {small_a, small_b}),                                    // a GEMM known to be small
      graph.create_call("relu", {graph.create_call("add", {graph.create_call("matmul", {row, wide}), wide_bias})}),
      graph.create_call("matmul", {row, graph.create_call("transpose", {wide_t, 0, 1})}),  // B transposed
      graph.create_call("matmul", {strided_row, wide}),                                   // x strided
      graph.create_call("add", {graph.create_call("matmul", {few, wide}), wide_bias}),   // columns, not rows
      graph.create_call("matmul", {few, graph.create_call("transpose", {wide_t, 0, 1})}),
      graph.create_call("matmul", {rows_of_batch, widths}),                               // a batch of two GEMVs
      // Column reductions of few blocks and long rows: each block's rows in one part per thread
      // (x's column sum above too), a max with a NaN in the last rows, a pool over two dims.
      graph.create_call("amax", {peaks, ints({0})}),
      graph.create_call("mean", {image, ints({1, 2})}),
      // Welford statistics of columns: in parts (the NaN reaches column 3's), and whole.
      graph.create_call("var", {peaks, ints({0})}, {{"correction", 1}}),
      graph.create_call("var", {image, ints({1, 2})}, {{"correction", 0}}),
  });
  return graph;
}

// [1000, 40] with a NaN in column 3's row 990, which the last part of the rows reduces.
Tensor peaks_with_a_nan() {
  Tensor peaks = random_tensor({1000, 40}, DType::f32, 23);
  peaks.data<float>()[990 * 40 + 3] = std::numeric_limits<float>::quiet_NaN();
  return peaks;
}

std::map<std::string, Tensor> inputs_with(int64_t rows) {
  return {{"x", random_tensor({300, 200}, DType::f32, 1)},      {"flat", random_tensor({70001}, DType::f32, 2)},
          {"cube", random_tensor({3, 150, 101}, DType::f32, 3)}, {"a", random_tensor({6, 70, 50}, DType::f32, 4)},
          {"b", random_tensor({6, 50, 40}, DType::f32, 5)},      {"tall", random_tensor({300, 64}, DType::f32, 6)},
          {"square", random_tensor({64, 64}, DType::f32, 7)},    {"seq", random_tensor({4, 64, 96}, DType::f32, 8)},
          {"w", random_tensor({96, 80}, DType::f32, 9)},         {"bias", random_tensor({80}, DType::f32, 10)},
          {"n", random_tensor({rows, 256}, DType::f32, 11)},     {"m", random_tensor({rows, 64}, DType::f32, 12)},
          {"small_a", random_tensor({8, 16}, DType::f32, 13)},   {"small_b", random_tensor({16, 8}, DType::f32, 14)},
          {"row", random_tensor({1, 96}, DType::f32, 15)},       {"wide", random_tensor({96, 300}, DType::f32, 16)},
          {"wide_t", random_tensor({300, 96}, DType::f32, 17)},  {"few", random_tensor({5, 96}, DType::f32, 18)},
          {"columns", random_tensor({96, 3}, DType::f32, 19)},   {"rows_of_batch", random_tensor({2, 1, 96}, DType::f32, 20)},
          {"widths", random_tensor({2, 96, 300}, DType::f32, 21)}, {"wide_bias", random_tensor({300}, DType::f32, 22)},
          {"peaks", peaks_with_a_nan()},                          {"image", random_tensor({2, 40, 30, 16}, DType::f32, 24)}};
}

TEST(CpuThreading, EveryParallelLoopMatchesTheInterpreterOnOneTwoAndThreeThreads) {
  Graph graph = parallel_loops_graph();
  CompiledModel model = compile(graph, test_options());
  std::vector<std::string> names = graph.output_names();
  for (int64_t rows : {200, 3}) {  // the run-time size above, then below the threshold
    std::map<std::string, Tensor> inputs = inputs_with(rows);
    std::vector<Tensor> expected = ir::Interpreter().run(graph, inputs);
    for (int threads : {1, 2, 3}) {
      for (int repeat = 0; repeat < 3; ++repeat) {  // the pool's workers are reused across calls
        std::vector<Tensor> actual = model.run(inputs, threads);
        ASSERT_EQ(actual.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
          std::string problem = compare_tensors(expected[i], actual[i], 1e-4, 1e-4);
          EXPECT_TRUE(problem.empty()) << "output " << names[i] << ", " << threads << " threads, " << rows
                                       << " rows: " << problem;
        }
      }
    }
  }
}

TEST(CpuThreading, LoopsRunOnThePoolAndNoModuleOpensAnOpenMPRegionItself) {
  std::string source = dump_codegen_stage(parallel_loops_graph(), "cpp");
  // Known to be large, known only at run time: one call either way, the body never called directly.
  EXPECT_NE(source.find("kiln_parallel_for(kiln_n, kiln_chunk);"), std::string::npos);
  EXPECT_NE(source.find("kiln_parallel_for(kiln_n, kiln_chunk, ("), std::string::npos);
  EXPECT_EQ(source.find("kiln_chunk(0"), std::string::npos);
  EXPECT_NE(source.find("kiln_parallel_for(batch * gemm_tasks_each, gemm_tasks);"), std::string::npos);
  EXPECT_NE(source.find("kiln_parallel_for(batch * gemm_tasks_each, gemm_tasks, batch * M * N * K >= 262144);"),
            std::string::npos);
  // Known to be small: the tasks run on the caller, with no pool call compiled.
  EXPECT_NE(source.find("gemm_tasks(0, batch * gemm_tasks_each);"), std::string::npos);
  // The whole-tensor sum splits its row into parts on the pool too: the module asks no OpenMP
  // lowering of the compiler (codegen/cpp/kiln_openmp_team.h says why).
  EXPECT_NE(source.find(", kiln_parts, parts"), std::string::npos);
  // So do the column reductions of few blocks: x's column sum, peaks' max with its variance (one
  // kernel), image's mean with its variance (one kernel: a point step, the mean, between the two
  // reductions).
  size_t split_columns = 0;
  for (size_t at = source.find("rows in one part per thread"); at != std::string::npos;
       at = source.find("rows in one part per thread", at + 1))
    ++split_columns;
  EXPECT_EQ(split_columns, 3u) << source;
  // The variances are column reductions (Welford's form with a lane per point), not rows.
  EXPECT_NE(source.find("// reduce welford, a point per lane: "), std::string::npos) << source;
  EXPECT_EQ(source.find("// reduce welford: "), std::string::npos) << source;
  EXPECT_EQ(source.find("#pragma omp parallel"), std::string::npos);
  EXPECT_EQ(source.find("kiln_team_for"), std::string::npos);
}

}  // namespace
}  // namespace kiln::compiler
