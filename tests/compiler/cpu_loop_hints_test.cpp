// What the cpu target's generated C++ tells the compiler about its loops, and that the numbers
// stay the interpreter's: simd loops whose body applies an expensive op (exp, erf, sigmoid, ...)
// are marked KILN_INTERLEAVE_SIMD and cheap ones are not; reduction kernels prefetch the next
// row when a row has up to 16K elements, not when it is longer, and under a run-time test when
// its length is symbolic; an f32 max or min keeps its sixteen lanes in one vector, with the
// interpreter's NaN rule; a cat or a constant pad along the innermost dim is one loop per piece,
// each with its comparisons decided.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>

#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;
using test_support::random_tensor;
using ::testing::HasSubstr;
using ::testing::Not;

CompileOptions options() {
  CompileOptions o;
  o.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  return o;
}

// How many simd loops of the generated code carry the interleave hint.
size_t interleaved_loops(const std::string& code) {
  static const std::regex hinted("#pragma omp simd\\n\\s*KILN_INTERLEAVE_SIMD\\n");
  return size_t(std::distance(std::sregex_iterator(code.begin(), code.end(), hinted), std::sregex_iterator()));
}

void expect_interpreters_numbers(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options());
  for (int threads : {1, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-6, 1e-6), "") << "output " << i << ", " << threads << " threads";
  }
}

TEST(CpuLoopHints, SimdLoopsOfExpensiveMathAreInterleavedAndCheapOnesAreNot) {
  // 4099 elements: a vector body and a remainder.
  ir::Graph gelu_chain = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4099] = placeholder[target=x]\n"
      "    %scaled : f32[4099] = call_function[target=mul](args = (%x, 1.5), kwargs = {})\n"
      "    %gelu : f32[4099] = call_function[target=gelu](args = (%scaled,), kwargs = {})\n"
      "    %sigmoid : f32[4099] = call_function[target=sigmoid](args = (%x,), kwargs = {})\n"
      "    %out : f32[4099] = call_function[target=mul](args = (%gelu, %sigmoid), kwargs = {})\n"
      "    return (out,)\n",
      "gelu_chain.kiln");
  ir::Graph cheap = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4099] = placeholder[target=x]\n"
      "    %scaled : f32[4099] = call_function[target=mul](args = (%x, 1.5), kwargs = {})\n"
      "    %out : f32[4099] = call_function[target=relu](args = (%scaled,), kwargs = {})\n"
      "    return (out,)\n",
      "cheap.kiln");
  EXPECT_EQ(interleaved_loops(dump_codegen_stage(gelu_chain, "cpp")), 1u);
  EXPECT_EQ(interleaved_loops(dump_codegen_stage(cheap, "cpp")), 0u);
  expect_interpreters_numbers(gelu_chain, {{"x", random_tensor({4099}, DType::f32, 1)}});
}

TEST(CpuLoopHints, ARowStepOfExpensiveMathIsInterleaved) {
  // layer_norm's normalizing row step, with the tanh of every element fused into it.
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[6, 70] = placeholder[target=x]\n"
      "    %norm : f32[6, 70] = call_function[target=layer_norm](args = (%x, [70]), kwargs = {})\n"
      "    %out : f32[6, 70] = call_function[target=tanh](args = (%norm,), kwargs = {})\n"
      "    return (out,)\n",
      "row_tanh.kiln");
  EXPECT_GE(interleaved_loops(dump_codegen_stage(graph, "cpp")), 1u);
  expect_interpreters_numbers(graph, {{"x", random_tensor({6, 70}, DType::f32, 2)}});
}

TEST(CpuLoopHints, ReductionsPrefetchTheNextRowOnlyWhenItWaitsInCache) {
  auto softmax = [](const std::string& shape) {
    return ir::parse_graph("graph():\n"
                           "    %x : f32[" + shape + "] = placeholder[target=x]\n"
                           "    %out : f32[" + shape + "] = call_function[target=softmax](args = (%x, -1), kwargs = {})\n"
                           "    return (out,)\n",
                           "softmax.kiln");
  };
  const std::string prefetch = "__builtin_prefetch(";
  // The next row: the same chunk, one row (1030 elements) on.
  std::string rows = dump_codegen_stage(softmax("9, 1030"), "cpp");
  EXPECT_THAT(rows, HasSubstr(prefetch));
  EXPECT_THAT(rows, HasSubstr("1030*x0 + 1030)"));
  EXPECT_THAT(dump_codegen_stage(softmax("2, 16385"), "cpp"), Not(HasSubstr(prefetch)));
  std::string symbolic = dump_codegen_stage(softmax("3, s0"), "cpp");
  EXPECT_THAT(symbolic, HasSubstr(") <= 16384) " + prefetch));

  expect_interpreters_numbers(softmax("9, 1030"), {{"x", random_tensor({9, 1030}, DType::f32, 3)}});
  expect_interpreters_numbers(softmax("3, s0"), {{"x", random_tensor({3, 100}, DType::f32, 4)}});
}

TEST(CpuLoopHints, MaxAndMinRowsKeepTheirLanesInOneVectorAndNaNSticks) {
  // Rows of 40: two chunks of 16 and a tail of 8.
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[6, 40] = placeholder[target=x]\n"
      "    %hi : f32[6] = call_function[target=amax](args = (%x, [1]), kwargs = {})\n"
      "    %lo : f32[6] = call_function[target=amin](args = (%x, [1]), kwargs = {})\n"
      "    return (hi, lo)\n",
      "max_min.kiln");
  EXPECT_THAT(dump_codegen_stage(graph, "cpp"), HasSubstr("kiln_f32x16 vacc"));
  Tensor x = random_tensor({6, 40}, DType::f32, 5);
  float* v = x.data<float>();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  v[0 * 40 + 3] = nan;   // row 0: NaN in the first chunk
  v[1 * 40 + 20] = nan;  // row 1: in the second
  v[2 * 40 + 37] = nan;  // row 2: in the tail
  v[3 * 40 + 0] = inf;   // row 3: infinities, no NaN
  v[3 * 40 + 39] = -inf;
  v[4 * 40 + 5] = nan;   // row 4: NaN, then a larger and a smaller number in the same lane
  v[4 * 40 + 21] = 1e30f;
  v[4 * 40 + 37] = -1e30f;
  std::vector<Tensor> expected = ir::interpret(graph, {{"x", x}});
  for (int64_t row : {0, 1, 2, 4}) {
    ASSERT_TRUE(std::isnan(expected[0].flat_double(row)) && std::isnan(expected[1].flat_double(row))) << row;
  }
  expect_interpreters_numbers(graph, {{"x", x}});
}

TEST(CpuLoopHints, ACatOrPadAlongTheInnermostDimIsOneLoopPerPiece) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %a : f32[6, 5] = placeholder[target=a]\n"
      "    %b : f32[6, 3] = placeholder[target=b]\n"
      "    %c : f32[6, 9] = placeholder[target=c]\n"
      "    %cat : f32[6, 17] = call_function[target=cat](args = ([%a, %b, %c], 1), kwargs = {})\n"
      "    %out : f32[6, 17] = call_function[target=relu](args = (%cat,), kwargs = {})\n"
      "    %padded : f32[6, 12] = call_function[target=pad](args = (%c, [2, 1], 'constant', 1.5), kwargs = {})\n"
      "    %scaled : f32[6, 12] = call_function[target=mul](args = (%padded, 2.0), kwargs = {})\n"
      "    return (out, scaled)\n",
      "pieces.kiln");
  std::string code = dump_codegen_stage(graph, "cpp");
  // The cat's pieces [0, 5), [5, 8), [8, 17) and the pad's [0, 2), [2, 11), [11, 12), each a plain
  // loop with no comparison of x1 left in it.
  for (const char* loop : {"x1 = 0; x1 < 5;", "x1 = 5; x1 < 8;", "x1 = 8; x1 < 17;", "x1 = 0; x1 < 2;",
                           "x1 = 2; x1 < 11;", "x1 = 11; x1 < 12;"}) {
    EXPECT_NE(code.find(std::string("for (int64_t ") + loop), std::string::npos) << loop;
  }
  EXPECT_EQ(code.find("kop_lt(int64_t(int64_t(x1"), std::string::npos);
  EXPECT_EQ(code.find("kop_ge(int64_t(int64_t(x1"), std::string::npos);
  expect_interpreters_numbers(graph, {{"a", random_tensor({6, 5}, DType::f32, 6)},
                                      {"b", random_tensor({6, 3}, DType::f32, 7)},
                                      {"c", random_tensor({6, 9}, DType::f32, 8)}});
}

// A dense block concatenates one piece per layer: DenseNet-121's third block 25 of them, DenseNet-201's
// last 33, its third 49. Each piece is still its own plain loop.
TEST(CpuLoopHints, ADenseBlocksManyPiecesAreOneLoopEach) {
  constexpr int kPieces = 40;
  std::string text = "graph():\n", names;
  std::map<std::string, Tensor> inputs;
  for (int i = 0; i < kPieces; ++i) {
    const int width = i == 0 ? 16 : 4;
    text += "    %p" + std::to_string(i) + " : f32[3, " + std::to_string(width) + "] = placeholder[target=p" +
            std::to_string(i) + "]\n";
    names += (i ? ", %p" : "%p") + std::to_string(i);
    inputs["p" + std::to_string(i)] = random_tensor({3, width}, DType::f32, uint64_t(20 + i));
  }
  const int total = 16 + 4 * (kPieces - 1);
  text += "    %cat : f32[3, " + std::to_string(total) + "] = call_function[target=cat](args = ([" + names +
          "], 1), kwargs = {})\n";
  text += "    %out : f32[3, " + std::to_string(total) + "] = call_function[target=relu](args = (%cat,), kwargs = {})\n";
  text += "    return (out,)\n";
  ir::Graph graph = ir::parse_graph(text, "dense_block.kiln");
  std::string code = dump_codegen_stage(graph, "cpp");
  EXPECT_NE(code.find("for (int64_t x1 = 0; x1 < 16;"), std::string::npos);
  for (int i = 1; i < kPieces; ++i) {
    const std::string loop = "x1 = " + std::to_string(16 + 4 * (i - 1)) + "; x1 < " + std::to_string(16 + 4 * i) + ";";
    EXPECT_NE(code.find("for (int64_t " + loop), std::string::npos) << loop;
  }
  EXPECT_EQ(code.find("kop_lt(int64_t(int64_t(x1"), std::string::npos);
  expect_interpreters_numbers(graph, inputs);
}

// A stack along outer dims (an unrolled bidirectional recurrent layer's outputs: steps x
// directions) is one branch per piece of each cut dim inside the outer loops, its innermost loop a
// plain copy of one step's value: no chain of comparisons per element (a BiGRU's 100 x 2 steps
// spent 43% of its time there).
TEST(CpuLoopHints, AStackAlongOuterDimsIsOneBranchPerPiece) {
  constexpr int kSteps = 12;
  std::string text = "graph():\n", forward, backward;
  std::map<std::string, Tensor> inputs;
  for (int i = 0; i < kSteps; ++i) {
    for (const char* direction : {"f", "b"}) {
      const std::string name = std::string(direction) + std::to_string(i);
      text += "    %" + name + " : f32[3, 8] = placeholder[target=" + name + "]\n";
      (direction[0] == 'f' ? forward : backward) += (i ? ", %" : "%") + name;
      inputs[name] = random_tensor({3, 8}, DType::f32, uint64_t(40 + 2 * i + (direction[0] == 'b')));
    }
  }
  const std::string steps = std::to_string(kSteps);
  text += "    %fs : f32[" + steps + ", 3, 8] = call_function[target=stack](args = ([" + forward + "], 0), kwargs = {})\n";
  text += "    %bs : f32[" + steps + ", 3, 8] = call_function[target=stack](args = ([" + backward + "], 0), kwargs = {})\n";
  text += "    %both : f32[" + steps + ", 2, 3, 8] = call_function[target=stack](args = ([%fs, %bs], 1), kwargs = {})\n";
  text += "    %halves : f32[" + steps + ", 3, 16] = call_function[target=cat](args = ([%fs, %bs], 2), kwargs = {})\n";
  text += "    return (both, halves)\n";
  ir::Graph graph = ir::parse_graph(text, "stacked_steps.kiln");
  std::string code = dump_codegen_stage(graph, "cpp");
  auto occurrences = [&code](const std::string& what) {
    size_t count = 0;
    for (size_t at = code.find(what); at != std::string::npos; at = code.find(what, at + 1)) ++count;
    return count;
  };
  for (int i = 0; i < kSteps; ++i) {
    const std::string branch = "if (x0 >= " + std::to_string(i) + " && x0 < " + std::to_string(i + 1) + ")";
    EXPECT_GE(occurrences(branch), 1u) << branch << "\n" << code;
  }
  // The stack of the two directions, [steps, 2, 3 * 8]: a branch per direction.
  EXPECT_NE(code.find("if (x1 >= 1 && x1 < 2)"), std::string::npos) << code;
  // The cat, [steps * 3, 16]: its innermost loop in two pieces.
  EXPECT_NE(code.find("for (int64_t x1 = 8; x1 < 16;"), std::string::npos) << code;
  EXPECT_EQ(code.find("kop_lt(int64_t(int64_t(x0"), std::string::npos) << code;
  EXPECT_EQ(code.find("kop_lt(int64_t(int64_t(x1"), std::string::npos) << code;
  expect_interpreters_numbers(graph, inputs);
}

// A layer norm's Welford lanes hold equal counts: they combine as sums over the lanes (trees of
// pairs), with no division lane by lane; only the tail's lane takes Chan's update. Rows of 96
// (no tail) and 200 (a tail of 8), values offset from 0 so that the lanes' means matter.
TEST(CpuLoopHints, ALayerNormsLanesCombineWithoutADivisionEach) {
  for (int row : {96, 200}) {
    const std::string n = std::to_string(row);
    ir::Graph graph = ir::parse_graph(
        "graph():\n"
        "    %x : f32[37, " + n + "] = placeholder[target=x]\n"
        "    %w : f32[" + n + "] = placeholder[target=w]\n"
        "    %b : f32[" + n + "] = placeholder[target=b]\n"
        "    %ln = call_function[target=layer_norm](args = (%x, [" + n + "], %w, %b, 1e-05), kwargs = {})\n"
        "    return (ln,)\n",
        "layer_norm.kiln");
    std::string code = dump_codegen_stage(graph, "cpp");
    EXPECT_NE(code.find("means[l] += means[l + w];"), std::string::npos) << row;
    EXPECT_EQ(code.find("if (cnt0[l] == 0) continue;"), std::string::npos) << row;  // Chan's update lane by lane
    expect_interpreters_numbers(graph, {{"x", random_tensor({37, row}, DType::f32, 40, 1.0, 5.0)},
                                        {"w", random_tensor({row}, DType::f32, 41)},
                                        {"b", random_tensor({row}, DType::f32, 42)}});
  }
}

// A row's sixteen lanes of a sum, product, max or min combine as a tree of pairs, not lane after
// lane (fifteen steps in a row, each waiting on the one before: a third of a softmax over rows of
// 128); a softmax's max and sum, a product and a min, against the interpreter.
TEST(CpuLoopHints, ARowsLanesCombineAsATreeOfPairs) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[33, 128] = placeholder[target=x]\n"
      "    %out : f32[33, 128] = call_function[target=softmax](args = (%x, -1), kwargs = {})\n"
      "    %p : f32[33] = call_function[target=prod](args = (%x, 1), kwargs = {})\n"
      "    %m : f32[33] = call_function[target=amin](args = (%x, [1]), kwargs = {})\n"
      "    return (out, p, m)\n",
      "lanes_tree.kiln");
  std::string code = dump_codegen_stage(graph, "cpp");
  for (const char* op : {"kred_max", "kop_add", "kop_mul", "kred_min"}) {
    EXPECT_THAT(code, testing::ContainsRegex(std::string("for \\(int w = 16 / 2; w > 0; w /= 2\\) for \\(int l = 0; l < w; "
                                                         "\\+\\+l\\) acc[0-9]+\\[l\\] = ") + op))
        << op;
  }
  EXPECT_THAT(code, Not(HasSubstr("for (int l = 1; l < 16; ++l) res")));
  // Values near 1, so that a product of 128 stays in range.
  expect_interpreters_numbers(graph, {{"x", random_tensor({33, 128}, DType::f32, 60, 0.97, 1.03)}});
}

// The rest of a row past its last whole chunk is one more chunk over the row's last 16 elements,
// each lane taking only what the chunks before did not: a softmax over ViT's rows of 197 (its exp
// stashed), a max, a sum of a row of 20 (rests of 5 and 4), and a row of symbolic length, short
// (3, under a chunk) and long (35).
TEST(CpuLoopHints, ARowsRestIsOneMoreChunkOverItsLastSixteen) {
  ir::Graph softmax = ir::parse_graph(
      "graph():\n"
      "    %x : f32[12, 197] = placeholder[target=x]\n"
      "    %out : f32[12, 197] = call_function[target=softmax](args = (%x, -1), kwargs = {})\n"
      "    return (out,)\n",
      "softmax197.kiln");
  std::string code = dump_codegen_stage(softmax, "cpp");
  EXPECT_NE(code.find("const bool fresh1 = r0 >= rl1;"), std::string::npos) << code;
  expect_interpreters_numbers(softmax, {{"x", random_tensor({12, 197}, DType::f32, 50, -30, 30)}});
  ir::Graph max_sum = ir::parse_graph(
      "graph():\n"
      "    %x : f32[7, 20] = placeholder[target=x]\n"
      "    %m : f32[7] = call_function[target=amax](args = (%x, [1]), kwargs = {})\n"
      "    %s : f32[7] = call_function[target=sum](args = (%x, [1]), kwargs = {})\n"
      "    return (m, s)\n",
      "max_sum20.kiln");
  expect_interpreters_numbers(max_sum, {{"x", random_tensor({7, 20}, DType::f32, 51)}});
  ir::Graph symbolic = ir::parse_graph(
      "graph():\n"
      "    %x : f32[5, s0] = placeholder[target=x]\n"
      "    %s : f32[5] = call_function[target=sum](args = (%x, [1]), kwargs = {})\n"
      "    return (s,)\n",
      "sum_symbolic.kiln");
  EXPECT_NE(dump_codegen_stage(symbolic, "cpp").find("fresh0"), std::string::npos);
  for (int64_t length : {3, 35}) expect_interpreters_numbers(symbolic, {{"x", random_tensor({5, length}, DType::f32, 52)}});
}

}  // namespace
}  // namespace kiln::compiler
