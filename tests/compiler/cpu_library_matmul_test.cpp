// The cpu target's GEMMs whose right operand is a frozen parameter, through oneDNN's matmul with
// that operand prepacked once (CppEmitOptions::library_matmul, codegen/cpp/kiln_dnnl.h): one GEMM,
// a batch folded into the rows of one, the weight read transposed, a strided left operand, a
// single row, a sequence-first batch (one call per entry) and GEMMs split into blocks of rows on
// the pool's threads (an uneven last block, the left operand transposed; a batch whose entries
// split on 4 threads), each with and without an epilogue, on 1, 2 and 4 threads and over
// repeated calls (the packed weights reused), against the interpreter; without frozen
// parameters, OpenBLAS for these small GEMMs, and for larger ones oneDNN reading the right
// operand on every call, which may change between calls; attention's batches of GEMMs with their
// own right operands (Q K^T with K read transposed, P V) as one oneDNN matmul over the batch, or
// over each run of it where its dims walk memory at two strides (permuted; q and k split into
// heads out of a sequence-first projection, read where they are, on the pool and on OpenMP's
// team), and batches that share an operand (broadcast) on OpenBLAS.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string_view>

#include "compiler/compile_driver.h"
#include "compiler/target_registry.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "tests/support/differential.h"
#include "tests/support/onednn_log.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;
using test_support::random_tensor;

bool built_with_onednn() { return find_code_target("cpu").lowering_options().library_convolution; }

ir::Graph linear_layers() {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", random_tensor({64, 96}, DType::f32, 1)},
      {"w_t", random_tensor({96, 64}, DType::f32, 2)},
      {"bias", random_tensor({96}, DType::f32, 3)},
      {"narrow_w", random_tensor({64, 8}, DType::f32, 4)}};
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[5, 64] = placeholder[target=x]\n"
      "    %seq : f32[2, 7, 64] = placeholder[target=seq]\n"
      "    %cols : f32[64, 5] = placeholder[target=cols]\n"
      "    %row : f32[1, 64] = placeholder[target=row]\n"
      "    %w : f32[64, 96] = get_attr[target=w]\n"
      "    %w_t : f32[96, 64] = get_attr[target=w_t]\n"
      "    %bias : f32[96] = get_attr[target=bias]\n"
      "    %mm : f32[5, 96] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
      "    %biased : f32[5, 96] = call_function[target=add](args = (%mm, %bias), kwargs = {})\n"
      "    %act : f32[5, 96] = call_function[target=relu](args = (%biased,), kwargs = {})\n"
      "    %folded : f32[2, 7, 96] = call_function[target=matmul](args = (%seq, %w), kwargs = {})\n"
      "    %wt : f32[64, 96] = call_function[target=transpose](args = (%w_t, 0, 1), kwargs = {})\n"
      "    %by_wt : f32[5, 96] = call_function[target=matmul](args = (%x, %wt), kwargs = {})\n"
      "    %xt : f32[5, 64] = call_function[target=transpose](args = (%cols, 0, 1), kwargs = {})\n"
      "    %strided : f32[5, 96] = call_function[target=matmul](args = (%xt, %w), kwargs = {})\n"
      "    %one : f32[1, 96] = call_function[target=matmul](args = (%row, %w), kwargs = {})\n"
      "    %one_biased : f32[1, 96] = call_function[target=add](args = (%one, %bias), kwargs = {})\n"
      "    %long : f32[2, 144, 64] = placeholder[target=long]\n"
      "    %seq_first : f32[144, 2, 64] = call_function[target=permute](args = (%long, [1, 0, 2]), kwargs = {})\n"
      "    %sf : f32[144, 2, 96] = call_function[target=matmul](args = (%seq_first, %w), kwargs = {})\n"
      "    %sf_biased : f32[144, 2, 96] = call_function[target=add](args = (%sf, %bias), kwargs = {})\n"
      "    %sf_wt : f32[144, 2, 96] = call_function[target=matmul](args = (%seq_first, %wt), kwargs = {})\n"
      "    %short_first : f32[7, 2, 64] = call_function[target=permute](args = (%seq, [1, 0, 2]), kwargs = {})\n"
      "    %sf_small : f32[7, 2, 96] = call_function[target=matmul](args = (%short_first, %w), kwargs = {})\n"
      "    %tall : f32[140, 64] = placeholder[target=tall]\n"
      "    %split : f32[140, 96] = call_function[target=matmul](args = (%tall, %w), kwargs = {})\n"
      "    %split_biased : f32[140, 96] = call_function[target=add](args = (%split, %bias), kwargs = {})\n"
      "    %tall_cols : f32[64, 140] = placeholder[target=tall_cols]\n"
      "    %tall_t : f32[140, 64] = call_function[target=transpose](args = (%tall_cols, 0, 1), kwargs = {})\n"
      "    %split_t : f32[140, 96] = call_function[target=matmul](args = (%tall_t, %wt), kwargs = {})\n"
      "    %narrow_w : f32[64, 8] = get_attr[target=narrow_w]\n"
      "    %longer : f32[2, 600, 64] = placeholder[target=longer]\n"
      "    %longer_first : f32[600, 2, 64] = call_function[target=permute](args = (%longer, [1, 0, 2]), kwargs = {})\n"
      "    %sf_narrow : f32[600, 2, 8] = call_function[target=matmul](args = (%longer_first, %narrow_w), kwargs = {})\n"
      "    %sf_narrow_small : f32[7, 2, 8] = call_function[target=matmul](args = (%short_first, %narrow_w), kwargs = {})\n"
      "    return (act, folded, by_wt, strided, one_biased, sf_biased, sf_wt, sf_small, split_biased, split_t, sf_narrow, "
      "sf_narrow_small)\n",
      "linear.kiln", parameters);
}

// Whether KILN_ISA asks for AVX2 (tests/CMakeLists.txt runs tests so) on a CPU without it.
bool asks_for_avx2_without_it() {
  const char* isa = std::getenv("KILN_ISA");
  return isa && std::string_view(isa) == "avx2" && !host_supports(Isa::avx2);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

CompileOptions options(bool freeze) {
  CompileOptions o;
  o.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  o.freeze = freeze;
  return o;
}

TEST(CpuLibraryMatmul, FrozenWeightsRunThroughOneDnnAndMatchTheInterpreter) {
  ir::Graph graph = linear_layers();
  CodegenStageOptions stage;
  stage.freeze = true;
  std::string frozen = dump_codegen_stage(graph, "cpp", stage);
  std::string plain = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
  const std::string marker = "oneDNN's matmul, the operand prepacked once";
  // A sequence-first batch (x[seq, batch, d] @ w: x's rows interleave the batch) of a wide product
  // is x copied in order, then one GEMM (144 x 2 and 7 x 2 rows of 96 columns); of a narrow one
  // (8 columns), x stays in place and the batch cannot fold into one GEMM: one oneDNN call per batch
  // entry, C's rows strided, where each GEMM is worth both threads (600 x 8 x 64); a smaller one
  // (7 x 8 x 64) keeps OpenBLAS. Each call site of either kind also holds the path that splits it
  // into blocks of rows.
  const std::string batched_marker = "shared by the batch: oneDNN's matmul for each GEMM";
  EXPECT_EQ(plain.find(marker), std::string::npos);
  EXPECT_EQ(plain.find(batched_marker), std::string::npos);
  auto count = [&](const std::string& text) {
    size_t calls = 0;
    for (size_t at = 0; (at = frozen.find(text, at)) != std::string::npos; ++at) ++calls;
    return calls;
  };
  if (built_with_onednn()) {
    EXPECT_EQ(count(marker), 10u);
    EXPECT_EQ(count("multiplied = kiln_matmul_rows("), 11u);
    EXPECT_EQ(count(batched_marker), 1u) << frozen;
  }
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({5, 64}, DType::f32, 11)},
                                          {"seq", random_tensor({2, 7, 64}, DType::f32, 12)},
                                          {"cols", random_tensor({64, 5}, DType::f32, 13)},
                                          {"row", random_tensor({1, 64}, DType::f32, 14)},
                                          {"long", random_tensor({2, 144, 64}, DType::f32, 15)},
                                          {"tall", random_tensor({140, 64}, DType::f32, 16)},
                                          {"tall_cols", random_tensor({64, 140}, DType::f32, 17)},
                                          {"longer", random_tensor({2, 600, 64}, DType::f32, 18)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  for (bool freeze : {true, false}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2, 4, 1}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "")
            << names[i] << ", freeze " << freeze << ", " << threads << " threads";
    }
  }
}

// GEMMs of a few rows with a frozen right operand (a recurrent step, a decoder's token) run as
// Kiln's own product over the weight packed in panels of 16 columns, one packed copy per weight
// for the module (kiln_panel_matmul): at most 4 rows where oneDNN has its AVX-512 kernels, any
// number where it has not (oneDNN's log of the run shows no matmul then, and one past that);
// a recurrence of two steps through one weight, a width that leaves a partial panel (200 = 12 x
// 16 + 8), a bias; a weight read transposed whose product is worth both threads (256 x 1040: its
// 65 panels split between them), a residual accumulated into; against the interpreter on 1 and
// 2 threads, over repeated calls. Every row count from 1 to 9 (blocks of 4 rows and the rest).
// tests/CMakeLists.txt runs it again with oneDNN held to AVX2, and with the module compiled for
// AVX2 too (its blocking differs).
TEST(CpuLibraryMatmul, GemmsOfFewRowsMatchTheInterpreter) {
  if (asks_for_avx2_without_it()) GTEST_SKIP() << "KILN_ISA=avx2 and this CPU has no AVX2";
  for (int64_t rows = 1; rows <= 9; ++rows) {
    std::map<std::string, Tensor, std::less<>> parameters = {
        {"w", random_tensor({200, 200}, DType::f32, 21, -0.1, 0.1)},
        {"w_t", random_tensor({1040, 256}, DType::f32, 22, -0.1, 0.1)},
        {"bias", random_tensor({200}, DType::f32, 23)}};
    const std::string m = std::to_string(rows);
    ir::Graph graph = ir::parse_graph(
        "graph():\n"
        "    %x : f32[" + m + ", 200] = placeholder[target=x]\n"
        "    %r : f32[" + m + ", 1040] = placeholder[target=r]\n"
        "    %u : f32[256, " + m + "] = placeholder[target=u]\n"
        "    %w : f32[200, 200] = get_attr[target=w]\n"
        "    %w_t : f32[1040, 256] = get_attr[target=w_t]\n"
        "    %bias : f32[200] = get_attr[target=bias]\n"
        "    %m1 = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
        "    %a1 = call_function[target=add](args = (%m1, %bias), kwargs = {})\n"
        "    %h1 = call_function[target=tanh](args = (%a1,), kwargs = {})\n"
        "    %m2 = call_function[target=matmul](args = (%h1, %w), kwargs = {})\n"
        "    %a2 = call_function[target=add](args = (%m2, %bias), kwargs = {})\n"
        "    %h2 = call_function[target=tanh](args = (%a2,), kwargs = {})\n"
        "    %wt = call_function[target=transpose](args = (%w_t, 0, 1), kwargs = {})\n"
        "    %ut = call_function[target=transpose](args = (%u, 0, 1), kwargs = {})\n"
        "    %m3 = call_function[target=matmul](args = (%ut, %wt), kwargs = {})\n"
        "    %res = call_function[target=add](args = (%r, %m3), kwargs = {})\n"
        "    return (h2, res)\n",
        "few_rows.kiln", parameters);
    std::map<std::string, Tensor> inputs = {{"x", random_tensor({rows, 200}, DType::f32, 24)},
                                            {"r", random_tensor({rows, 1040}, DType::f32, 25)},
                                            {"u", random_tensor({256, rows}, DType::f32, 26)}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    CodegenStageOptions stage;
    stage.freeze = true;
    std::string frozen = dump_codegen_stage(graph, "cpp", stage);
    if (built_with_onednn()) {
      EXPECT_EQ(occurrences(frozen, "multiplied = kiln_matmul("), 3u) << frozen;
    }
    CompiledModel model = compile(graph, options(true));
    const bool kilns_product = rows <= 4 || !test_support::onednn_has_avx512();
    for (int threads : {1, 2, 2, 1}) {
      std::vector<Tensor> actual;
      const std::string log = test_support::onednn_log_of([&] { actual = model.run(inputs, threads); });
      ASSERT_EQ(actual.size(), 2u);
      for (size_t i = 0; i < 2; ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "")
            << "output " << i << ", " << rows << " rows, " << threads << " threads";
      if (built_with_onednn() && !log.empty()) {
        if (kilns_product) {
          EXPECT_EQ(occurrences(log, ",exec,cpu,matmul,"), 0u) << rows << " rows\n" << log;
        } else {
          EXPECT_GE(occurrences(log, ",exec,cpu,matmul,"), 3u) << rows << " rows\n" << log;
        }
      }
    }
  }
}

// Where oneDNN lacks AVX-512, a frozen GEMM of many rows is Kiln's product over panels too
// (kiln_panel_gemm_suits), its work split between the threads by groups of panels and, where
// there are too few groups, by rows (kiln_panel_row_parts): 37 rows (9 blocks of 4 and one row)
// by 768 x 40 (one group of 3 panels, worth a team: the rows split), with a bias; by 1040 columns read
// transposed (17 groups), the rows read transposed too, a residual accumulated into. Against the
// interpreter on 1 to 4 threads over repeated calls; oneDNN's log shows which library ran.
TEST(CpuLibraryMatmul, FrozenGemmsOfManyRowsSplitByRowsAndPanels) {
  if (asks_for_avx2_without_it()) GTEST_SKIP() << "KILN_ISA=avx2 and this CPU has no AVX2";
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"narrow", random_tensor({768, 40}, DType::f32, 61, -0.1, 0.1)},
      {"bias", random_tensor({40}, DType::f32, 62)},
      {"wide_t", random_tensor({1040, 96}, DType::f32, 63, -0.1, 0.1)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[37, 768] = placeholder[target=x]\n"
      "    %u : f32[96, 37] = placeholder[target=u]\n"
      "    %r : f32[37, 1040] = placeholder[target=r]\n"
      "    %narrow : f32[768, 40] = get_attr[target=narrow]\n"
      "    %bias : f32[40] = get_attr[target=bias]\n"
      "    %wide_t : f32[1040, 96] = get_attr[target=wide_t]\n"
      "    %m1 = call_function[target=matmul](args = (%x, %narrow), kwargs = {})\n"
      "    %a1 = call_function[target=add](args = (%m1, %bias), kwargs = {})\n"
      "    %wide = call_function[target=transpose](args = (%wide_t, 0, 1), kwargs = {})\n"
      "    %ut = call_function[target=transpose](args = (%u, 0, 1), kwargs = {})\n"
      "    %m2 = call_function[target=matmul](args = (%ut, %wide), kwargs = {})\n"
      "    %res = call_function[target=add](args = (%r, %m2), kwargs = {})\n"
      "    return (a1, res)\n",
      "many_rows.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({37, 768}, DType::f32, 64)},
                                          {"u", random_tensor({96, 37}, DType::f32, 65)},
                                          {"r", random_tensor({37, 1040}, DType::f32, 66)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(true));
  for (int threads : {2, 1, 3, 4, 2}) {
    std::vector<Tensor> actual;
    const std::string log = test_support::onednn_log_of([&] { actual = model.run(inputs, threads); });
    ASSERT_EQ(actual.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "") << "output " << i << ", " << threads << " threads";
    if (built_with_onednn() && !log.empty()) {
      if (test_support::onednn_has_avx512()) {
        EXPECT_GE(occurrences(log, ",exec,cpu,matmul,"), 2u) << log;
      } else {
        EXPECT_EQ(occurrences(log, ",exec,cpu,matmul,"), 0u) << log;
      }
    }
  }
}

// A batch of GEMMs whose right operands are frozen parameters of their own (an MoE's experts:
// [4, 40, 64] @ [4, 64, 96]) is one oneDNN matmul over the batch reading them in place, except
// where oneDNN lacks AVX-512: there Kiln's product over panels packs each once
// (kiln_panel_batch_suits; oneDNN's log shows no matmul). Without frozen parameters, oneDNN
// everywhere. The interpreter's values on 1, 2 and 4 threads over repeated calls.
TEST(CpuLibraryMatmul, ABatchOfFrozenRightOperandsIsPackedOnceWhereOneDnnLacksAvx512) {
  if (asks_for_avx2_without_it()) GTEST_SKIP() << "KILN_ISA=avx2 and this CPU has no AVX2";
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"experts", random_tensor({4, 64, 96}, DType::f32, 71, -0.1, 0.1)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4, 40, 64] = placeholder[target=x]\n"
      "    %experts : f32[4, 64, 96] = get_attr[target=experts]\n"
      "    %y = call_function[target=matmul](args = (%x, %experts), kwargs = {})\n"
      "    %out = call_function[target=tanh](args = (%y,), kwargs = {})\n"
      "    return (out,)\n",
      "experts.kiln", parameters);
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({4, 40, 64}, DType::f32, 72)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  for (bool freeze : {true, false}) {
    if (built_with_onednn()) {
      CodegenStageOptions stage;
      stage.freeze = freeze;
      std::string code = dump_codegen_stage(graph, "cpp", stage);
      EXPECT_EQ(occurrences(code, "a batch of GEMMs with their own right operands"), 1u) << code;
      EXPECT_EQ(occurrences(code, "(frozen parameters: where oneDNN lacks AVX-512"), freeze ? 1u : 0u) << code;
    }
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {2, 1, 4, 2}) {
      std::vector<Tensor> actual;
      const std::string log = test_support::onednn_log_of([&] { actual = model.run(inputs, threads); });
      ASSERT_EQ(actual.size(), 1u);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-5), "") << "freeze " << freeze << ", " << threads << " threads";
      if (built_with_onednn() && !log.empty()) {
        if (freeze && !test_support::onednn_has_avx512()) {
          EXPECT_EQ(occurrences(log, ",exec,cpu,matmul,"), 0u) << threads << " threads\n" << log;
        } else {
          EXPECT_GE(occurrences(log, ",exec,cpu,matmul,"), 1u) << "freeze " << freeze << ", " << threads << " threads";
        }
      }
    }
  }
}

// Frozen products of at most 4 rows stream their weights: where the module's such weights (each
// counted once, however many kernels read it) outgrow a core's L2, known where the module runs,
// they run on OpenMP's team from 65536 multiply-adds instead of 262144, so that each core keeps
// half of every weight in its own L2 (kFewRowsTeamMacs). Here a 256 x 256 weight read by two steps
// and a 256 x 1024 one: 1310720 bytes. At 5 rows the products keep the one threshold (oneDNN's
// matmul, or, where oneDNN lacks AVX-512, Kiln's product as every frozen GEMM), as does a module
// whose parameters may change. The interpreter's values on 1, 2
// and 4 threads.
TEST(CpuLibraryMatmul, FewRowProductsWhoseWeightsOutgrowACoresL2RunOnTheTeamSooner) {
  for (int64_t rows : {1, 5}) {
    std::map<std::string, Tensor, std::less<>> parameters = {
        {"w", random_tensor({256, 256}, DType::f32, 51, -0.1, 0.1)},
        {"wide", random_tensor({256, 1024}, DType::f32, 52, -0.1, 0.1)}};
    const std::string m = std::to_string(rows);
    ir::Graph graph = ir::parse_graph(
        "graph():\n"
        "    %x : f32[" + m + ", 256] = placeholder[target=x]\n"
        "    %w : f32[256, 256] = get_attr[target=w]\n"
        "    %wide : f32[256, 1024] = get_attr[target=wide]\n"
        "    %m1 = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
        "    %h1 = call_function[target=tanh](args = (%m1,), kwargs = {})\n"
        "    %m2 = call_function[target=matmul](args = (%h1, %w), kwargs = {})\n"
        "    %h2 = call_function[target=tanh](args = (%m2,), kwargs = {})\n"
        "    %m3 = call_function[target=matmul](args = (%h2, %wide), kwargs = {})\n"
        "    return (m3,)\n",
        "few_rows_stream.kiln", parameters);
    const std::string sooner = "rows <= 4 && 1310720 > kiln_l2_bytes() ? 65536 : 262144";
    if (built_with_onednn()) {
      CodegenStageOptions stage;
      stage.freeze = true;
      std::string frozen = dump_codegen_stage(graph, "cpp", stage);
      EXPECT_EQ(occurrences(frozen, sooner), rows <= 4 ? 3u : 0u) << frozen;
      stage.freeze = false;
      std::string loose = dump_codegen_stage(graph, "cpp", stage);
      EXPECT_EQ(occurrences(loose, "kiln_l2_bytes() ?"), 0u) << loose;
    }
    std::map<std::string, Tensor> inputs = {{"x", random_tensor({rows, 256}, DType::f32, 53)}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    CompiledModel model = compile(graph, options(true));
    for (int threads : {2, 1, 4, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-5), "") << rows << " rows, " << threads << " threads";
    }
  }
}

// A GEMM too short to split into blocks of rows (64 rows: an MLP's layer at batch 64) runs on
// OpenMP's team while the pool's workers sleep; its epilogue (bias and relu over 64 x 512) then
// runs on that team too, rather than wake the pool's workers (`if (on_team) kiln_team_for`): the
// same values as the interpreter's on 1, 2 and 4 threads, over repeated calls.
TEST(CpuLibraryMatmul, TheEpilogueOfAGemmOnOpenMPsTeamRunsOnThatTeam) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({128, 512}, DType::f32, 31)},
                                                           {"bias", random_tensor({512}, DType::f32, 32)}};
  // (The 512-row GEMM, which splits into blocks of rows on the pool, keeps the module on the pool:
  // gemm_team_led.)
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[64, 128] = placeholder[target=x]\n"
      "    %tall : f32[512, 128] = placeholder[target=tall]\n"
      "    %w : f32[128, 512] = get_attr[target=w]\n"
      "    %bias : f32[512] = get_attr[target=bias]\n"
      "    %mm : f32[64, 512] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
      "    %biased : f32[64, 512] = call_function[target=add](args = (%mm, %bias), kwargs = {})\n"
      "    %act : f32[64, 512] = call_function[target=relu](args = (%biased,), kwargs = {})\n"
      "    %split : f32[512, 512] = call_function[target=matmul](args = (%tall, %w), kwargs = {})\n"
      "    return (act, split)\n",
      "team_epilogue.kiln", parameters);
  if (built_with_onednn()) {
    CodegenStageOptions stage;
    stage.freeze = true;
    std::string frozen = dump_codegen_stage(graph, "cpp", stage);
    EXPECT_NE(frozen.find("if (on_team) kiln_team_for(kiln_n, kiln_chunk);"), std::string::npos) << frozen;
    EXPECT_NE(frozen.find("on_team = macs >= 262144 && kiln_pool_threads() > 1;"), std::string::npos) << frozen;
  }
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({64, 128}, DType::f32, 33)},
                                          {"tall", random_tensor({512, 128}, DType::f32, 34)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(true));
  for (int threads : {2, 1, 4, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "") << i << ", " << threads << " threads";
  }
}

// An LSTM's step at batch 8: a GEMM of 8 rows runs whole on OpenMP's team while the pool's workers
// sleep, and its gates (slices of its output: no epilogue) are a kernel of 2048 points with five
// exponentials each, worth two threads by its work (a point plus 8 per expensive op), though below
// the pool's threshold in points. That loop runs on whichever runner is awake
// (kiln_team_or_pool_for): on the team after the GEMM. The same gates in cheap ops stay on one
// thread. The interpreter's values on 1, 2 and 4 threads, over repeated calls.
TEST(CpuLibraryMatmul, ExpensiveLoopsAfterAGemmOnOpenMPsTeamRunOnThatTeam) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({256, 1024}, DType::f32, 41)}};
  auto step = [&](const std::string& squash, const std::string& curve) {
    // (The 512-row GEMM, which splits into blocks of rows on the pool, keeps the module on the pool.)
    return ir::parse_graph(
        "graph():\n"
        "    %x : f32[8, 256] = placeholder[target=x]\n"
        "    %tall : f32[512, 256] = placeholder[target=tall]\n"
        "    %w : f32[256, 1024] = get_attr[target=w]\n"
        "    %mm : f32[8, 1024] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
        "    %i : f32[8, 256] = call_function[target=slice](args = (%mm, 1, 0, 256), kwargs = {})\n"
        "    %f : f32[8, 256] = call_function[target=slice](args = (%mm, 1, 256, 512), kwargs = {})\n"
        "    %g : f32[8, 256] = call_function[target=slice](args = (%mm, 1, 512, 768), kwargs = {})\n"
        "    %o : f32[8, 256] = call_function[target=slice](args = (%mm, 1, 768, 1024), kwargs = {})\n"
        "    %si : f32[8, 256] = call_function[target=" + squash + "](args = (%i,), kwargs = {})\n"
        "    %sf : f32[8, 256] = call_function[target=" + squash + "](args = (%f,), kwargs = {})\n"
        "    %so : f32[8, 256] = call_function[target=" + squash + "](args = (%o,), kwargs = {})\n"
        "    %tg : f32[8, 256] = call_function[target=" + curve + "](args = (%g,), kwargs = {})\n"
        "    %kept : f32[8, 256] = call_function[target=mul](args = (%sf, %x), kwargs = {})\n"
        "    %new : f32[8, 256] = call_function[target=mul](args = (%si, %tg), kwargs = {})\n"
        "    %c : f32[8, 256] = call_function[target=add](args = (%kept, %new), kwargs = {})\n"
        "    %tc : f32[8, 256] = call_function[target=" + curve + "](args = (%c,), kwargs = {})\n"
        "    %h : f32[8, 256] = call_function[target=mul](args = (%so, %tc), kwargs = {})\n"
        "    %split : f32[512, 1024] = call_function[target=matmul](args = (%tall, %w), kwargs = {})\n"
        "    return (h, c, split)\n",
        "lstm_step.kiln", parameters);
  };
  ir::Graph gates = step("sigmoid", "tanh");
  if (built_with_onednn()) {
    CodegenStageOptions stage;
    stage.freeze = true;
    EXPECT_EQ(occurrences(dump_codegen_stage(gates, "cpp", stage), "kiln_team_or_pool_for(kiln_n, kiln_chunk);"), 1u);
    EXPECT_EQ(occurrences(dump_codegen_stage(step("relu", "neg"), "cpp", stage), "kiln_team_or_pool_for(kiln_n"), 0u);
  }
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({8, 256}, DType::f32, 42)},
                                          {"tall", random_tensor({512, 256}, DType::f32, 43)}};
  std::vector<Tensor> expected = ir::interpret(gates, inputs);
  CompiledModel model = compile(gates, options(true));
  for (int threads : {2, 1, 4, 2, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    ASSERT_EQ(actual.size(), expected.size());
    // (The 512-row product sums 256 terms of up to 4 in magnitude: its rounding is the library's.)
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, i == 2 ? 1e-4 : 1e-5), "") << i << ", " << threads << " threads";
  }
}

// A module whose GEMMs are mostly frozen ones of few rows and wide weights (a ViT-B's 197 rows,
// which oneDNN's team runs whole: no blocks of rows on the pool) runs its loops on OpenMP's team too
// (gemm_team_led), its GEMMs still oneDNN's matmul with the weights prepacked, and a batch of GEMMs
// with their own operands (attention's) on that team: the interpreter's values on 1, 2 and 4
// threads, over repeated calls.
TEST(CpuLibraryMatmul, AModuleOfWholeGemmsRunsOnOpenMPsTeam) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({128, 1024}, DType::f32, 51)},
                                                           {"bias", random_tensor({1024}, DType::f32, 52)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[64, 128] = placeholder[target=x]\n"
      "    %w : f32[128, 1024] = get_attr[target=w]\n"
      "    %bias : f32[1024] = get_attr[target=bias]\n"
      "    %mm : f32[64, 1024] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
      "    %biased : f32[64, 1024] = call_function[target=add](args = (%mm, %bias), kwargs = {})\n"
      "    %act : f32[64, 1024] = call_function[target=gelu](args = (%biased,), kwargs = {})\n"
      "    %heads : f32[8, 64, 128] = call_function[target=reshape](args = (%act, [8, 64, 128]), kwargs = {})\n"
      "    %t : f32[8, 128, 64] = call_function[target=transpose](args = (%heads, 1, 2), kwargs = {})\n"
      "    %scores : f32[8, 64, 64] = call_function[target=matmul](args = (%heads, %t), kwargs = {})\n"
      "    %p : f32[8, 64, 64] = call_function[target=softmax](args = (%scores, -1), kwargs = {})\n"
      "    return (p,)\n",
      "whole_gemms.kiln", parameters);
  if (built_with_onednn()) {
    CodegenStageOptions stage;
    stage.freeze = true;
    std::string frozen = dump_codegen_stage(graph, "cpp", stage);
    EXPECT_EQ(occurrences(frozen, "kiln_parallel_for("), 0u) << frozen;
    EXPECT_NE(occurrences(frozen, "kiln_team_for("), 0u) << frozen;
    EXPECT_EQ(occurrences(frozen, "the right operand is a frozen parameter: oneDNN's matmul"), 1u) << frozen;
    EXPECT_EQ(occurrences(frozen, "oneDNN's matmul over the batch"), 1u) << frozen;
  }
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({64, 128}, DType::f32, 53)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(true));
  for (int threads : {2, 1, 4, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-5), "") << threads << " threads";
  }
}

// The same with a dynamic batch (x [s0, 64, 128], s0 * 64 rows): the rows are decided at size 1 of
// s0, where the GEMM runs whole, so the module runs on OpenMP's team too; at a batch whose GEMM a
// static module would split (s0 = 4: 256 rows), the values are still the interpreter's. With 128
// rows per unit of s0 the GEMM splits already at size 1: the pool.
TEST(CpuLibraryMatmul, AModuleOfDynamicGemmsIsDecidedAtSizeOne) {
  if (!built_with_onednn()) GTEST_SKIP() << "Kiln was built without oneDNN";
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({128, 1024}, DType::f32, 54)}};
  auto graph_of = [&](int64_t rows_per_unit) {
    const std::string x = "s0, " + std::to_string(rows_per_unit);
    return ir::parse_graph(
        "graph():\n"
        "    %x : f32[" + x + ", 128] = placeholder[target=x]\n"
        "    %w : f32[128, 1024] = get_attr[target=w]\n"
        "    %mm : f32[" + x + ", 1024] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
        "    %act : f32[" + x + ", 1024] = call_function[target=gelu](args = (%mm,), kwargs = {})\n"
        "    return (act,)\n",
        "dynamic_gemms.kiln", parameters);
  };
  CodegenStageOptions stage;
  stage.freeze = true;
  const std::string team = dump_codegen_stage(graph_of(64), "cpp", stage);
  EXPECT_EQ(occurrences(team, "kiln_parallel_for("), 0u) << team;
  EXPECT_NE(occurrences(team, "kiln_team_for("), 0u) << team;
  const std::string pool = dump_codegen_stage(graph_of(128), "cpp", stage);
  EXPECT_NE(occurrences(pool, "kiln_parallel_for("), 0u) << pool;
  ir::Graph graph = graph_of(64);
  CompiledModel model = compile(graph, options(true));
  for (int64_t batch : {1, 4}) {
    std::map<std::string, Tensor> inputs = {{"x", random_tensor({batch, 64, 128}, DType::f32, 55)}};
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    for (int threads : {2, 1}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-4, 1e-5), "") << batch << " x 64 rows, " << threads << " threads";
    }
  }
}

// Without frozen parameters, a GEMM of kTeamMacs (262144) multiply-adds or more whose right
// operand is a parameter runs through oneDNN's matmul reading that operand in place on every call
// (KilnMatmulShape::runtime_b): a parameter changed in place between two calls (as an optimizer
// does) gives the second call's results from the new values, on 1, 2 and 4 threads. The weight read
// transposed (a linear layer's), read as it is, and a 260-row GEMM that splits into blocks of rows
// on 4 threads (80 + 80 + 80 + 20: the last block's own primitive, since nothing is packed to
// share); a 4-row GEMM (under the threshold) keeps OpenBLAS, at run time. A weight of 1024
// columns goes to oneDNN only where it has AVX-512 (its gemm runs B rows 4 KiB apart slowly:
// kiln_runtime_b_matmul_allowed), else to OpenBLAS; ctest runs this test with oneDNN held to AVX2
// too (tests/CMakeLists.txt), so both ways are checked on any host.
TEST(CpuLibraryMatmul, ParametersThatChangeBetweenCallsAreReadOnEveryCall) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({96, 512}, DType::f32, 21)},
                                                           {"v", random_tensor({512, 96}, DType::f32, 22)},
                                                           {"bias", random_tensor({96}, DType::f32, 23)},
                                                           {"wide", random_tensor({512, 1024}, DType::f32, 24)}};
  std::map<std::string, Tensor, std::less<>> held = parameters;  // the same storage as the graph's
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 512] = placeholder[target=x]\n"
      "    %tall : f32[260, 512] = placeholder[target=tall]\n"
      "    %w : f32[96, 512] = get_attr[target=w]\n"
      "    %v : f32[512, 96] = get_attr[target=v]\n"
      "    %bias : f32[96] = get_attr[target=bias]\n"
      "    %wide : f32[512, 1024] = get_attr[target=wide]\n"
      "    %linear : f32[s0, 96] = call_function[target=linear](args = (%x, %w, %bias), kwargs = {})\n"
      "    %act : f32[s0, 96] = call_function[target=relu](args = (%linear,), kwargs = {})\n"
      "    %plain : f32[s0, 96] = call_function[target=matmul](args = (%x, %v), kwargs = {})\n"
      "    %split : f32[260, 96] = call_function[target=matmul](args = (%tall, %v), kwargs = {})\n"
      "    %widened : f32[260, 1024] = call_function[target=matmul](args = (%tall, %wide), kwargs = {})\n"
      "    return (act, plain, split, widened)\n",
      "changing.kiln", parameters);
  std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
  if (built_with_onednn()) {
    size_t sites = 0;
    for (size_t at = 0; (at = source.find("which may change between calls: oneDNN's matmul", at)) != std::string::npos; ++at)
      ++sites;
    EXPECT_EQ(sites, 4u) << source;
    EXPECT_NE(source.find("0, N, 0, 1, 1, 0, 0, 0, 0, 0, 0};"), std::string::npos);  // B read in place, one GEMM
    EXPECT_NE(source.find("0, N, 0, 1, 1, 0, 0, 0, 1, 0, 0};"), std::string::npos);  // and the linear's bias with it
  }
  CompiledModel model = compile(graph, options(false));
  std::vector<std::string> names = graph.output_names();
  for (int step = 0; step < 3; ++step) {
    if (step > 0) {  // new values in the same memory
      held.at("w").copy_from(random_tensor({96, 512}, DType::f32, uint64_t(30 + step)));
      held.at("v").copy_from(random_tensor({512, 96}, DType::f32, uint64_t(40 + step)));
      held.at("wide").copy_from(random_tensor({512, 1024}, DType::f32, uint64_t(45 + step)));
    }
    for (int64_t rows : {64, 4}) {
      std::map<std::string, Tensor> inputs = {{"x", random_tensor({rows, 512}, DType::f32, uint64_t(50 + step))},
                                              {"tall", random_tensor({260, 512}, DType::f32, uint64_t(60 + step))}};
      std::vector<Tensor> expected = ir::interpret(graph, inputs);
      for (int threads : {1, 2, 4}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        ASSERT_EQ(actual.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
          EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-4), "")  // sums of 512 products
              << names[i] << ", step " << step << ", " << rows << " rows, " << threads << " threads";
      }
    }
  }
}

// A residual stream (x + linear(h), x read by nothing after: as a transformer's, whose layer norm
// reads it before) is accumulated into by the matmul:
// the memory plan gives the sum the residual's bytes (MemoryPlan::in_place_of) and oneDNN's sum
// post-op adds the product, with the bias or without, to what is there; no loop follows. The
// 256-row GEMMs in blocks of rows on 2 and 4 threads, each block accumulating into its rows; the
// same values as the interpreter's, frozen or not, over repeated calls.
TEST(CpuLibraryMatmul, AResidualStreamIsAccumulatedIntoByTheMatmul) {
  std::map<std::string, Tensor, std::less<>> parameters;
  // Weights of about 1 / sqrt(64), so that five layers keep values of about 1 (wider ones grow,
  // and their rounding with them).
  for (int i = 0; i < 5; ++i)
    parameters["w" + std::to_string(i)] = random_tensor({64, 64}, DType::f32, uint64_t(91 + i), -0.2, 0.2);
  parameters["b0"] = random_tensor({64}, DType::f32, 97);
  parameters["b2"] = random_tensor({64}, DType::f32, 98);
  std::string text = "graph():\n    %x : f32[256, 64] = placeholder[target=x]\n";
  for (int i = 0; i < 5; ++i) text += "    %w" + std::to_string(i) + " : f32[64, 64] = get_attr[target=w" + std::to_string(i) + "]\n";
  text +=
      "    %b0 : f32[64] = get_attr[target=b0]\n"
      "    %b2 : f32[64] = get_attr[target=b2]\n"
      "    %m0 : f32[256, 64] = call_function[target=matmul](args = (%x, %w0), kwargs = {})\n"
      "    %l0 : f32[256, 64] = call_function[target=add](args = (%m0, %b0), kwargs = {})\n"
      "    %r : f32[256, 64] = call_function[target=relu](args = (%l0,), kwargs = {})\n"
      "    %t : f32[256, 64] = call_function[target=matmul](args = (%r, %w1), kwargs = {})\n"
      "    %m2 : f32[256, 64] = call_function[target=matmul](args = (%t, %w2), kwargs = {})\n"
      "    %l2 : f32[256, 64] = call_function[target=add](args = (%m2, %b2), kwargs = {})\n"
      "    %y : f32[256, 64] = call_function[target=add](args = (%l2, %r), kwargs = {})\n"
      "    %u : f32[256, 64] = call_function[target=matmul](args = (%y, %w1), kwargs = {})\n"
      "    %m4 : f32[256, 64] = call_function[target=matmul](args = (%u, %w4), kwargs = {})\n"
      "    %z : f32[256, 64] = call_function[target=add](args = (%y, %m4), kwargs = {})\n"
      "    %out : f32[256, 64] = call_function[target=matmul](args = (%z, %w3), kwargs = {})\n"
      "    return (out,)\n";
  ir::Graph graph = ir::parse_graph(text, "residual_stream.kiln", parameters);
  if (built_with_onednn()) {
    CodegenStageOptions stage;
    stage.freeze = true;
    const std::string frozen = dump_codegen_stage(graph, "cpp", stage);
    EXPECT_EQ(occurrences(frozen, "holds the residual, into which it accumulates (oneDNN's bias and sum post-op)"), 1u)
        << frozen;
    EXPECT_EQ(occurrences(frozen, "holds the residual, into which it accumulates (oneDNN's sum post-op)"), 1u) << frozen;
    // No loop adds anything; one epilogue loop is left, the first layer's relu (in place).
    EXPECT_EQ(occurrences(frozen, "kop_add(float("), 0u) << frozen;
    EXPECT_EQ(occurrences(frozen, "= kop_relu("), 1u) << frozen;
  }
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({256, 64}, DType::f32, 99)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  for (bool freeze : {true, false}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2, 4, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      ASSERT_EQ(actual.size(), 1u);
      EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-4, 1e-4), "") << "freeze " << freeze << ", " << threads << " threads";
    }
  }
}

// A GEMM whose operands are inputs (OpenBLAS, no library epilogue) adds a residual that dies there:
// the loop after it writes its result over the residual (the memory plan's "in place of"), so
// the two pointers are not declared restrict; the same values as the interpreter's.
TEST(CpuLibraryMatmul, AnEpilogueWrittenOverItsOperandDeclaresNeitherPointerRestrict) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[64, 64] = placeholder[target=x]\n"
      "    %w : f32[64, 64] = placeholder[target=w]\n"
      "    %mm : f32[64, 64] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
      "    %r : f32[64, 64] = call_function[target=relu](args = (%mm,), kwargs = {})\n"
      "    %h : f32[64, 64] = call_function[target=matmul](args = (%r, %w), kwargs = {})\n"
      "    %m2 : f32[64, 64] = call_function[target=matmul](args = (%h, %w), kwargs = {})\n"
      "    %y : f32[64, 64] = call_function[target=add](args = (%m2, %r), kwargs = {})\n"
      "    %out : f32[64, 64] = call_function[target=matmul](args = (%y, %w), kwargs = {})\n"
      "    return (out,)\n",
      "in_place.kiln");
  const std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
  // The kernel's pointers as declared: those not restrict are r's and y's alone.
  std::vector<std::string> plain;
  const std::regex declaration("  float\\* (__restrict )?b[0-9]+ = \\(float\\*\\)bufs\\[[0-9]+\\];  // (\\w+)");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), declaration); it != std::sregex_iterator(); ++it)
    if (!(*it)[1].matched) plain.push_back((*it)[2].str());
  EXPECT_EQ(plain, (std::vector<std::string>{"r", "y"})) << source;
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({64, 64}, DType::f32, 101, -0.3, 0.3)},
                                          {"w", random_tensor({64, 64}, DType::f32, 102, -0.3, 0.3)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  CompiledModel model = compile(graph, options(false));
  for (int threads : {1, 2}) {
    std::vector<Tensor> actual = model.run(inputs, threads);
    EXPECT_EQ(compare_tensors(expected[0], actual[0], 1e-5, 1e-5), "") << threads << " threads";
  }
}

// A linear layer's bias (an add of a vector along the product's rows, which nothing else reads)
// is oneDNN's bias: the matmul writes the layer's result and no loop follows (the GEMM of 256 rows
// split into blocks on 2 and 4 threads, each block adding the bias; the 32-row one on OpenMP's
// team or one thread); with a relu after it, the relu runs in place over the matmul's output.
// Not folded: a product that another kernel also reads (it must stay without the bias), a vector
// along the columns ([M, 1]: one value per row). A bias sliced out of a longer vector is folded. The same values as the interpreter's, frozen or not (not
// frozen: the 256-row GEMMs are worth oneDNN reading B in place), on 1, 2 and 4 threads.
TEST(CpuLibraryMatmul, ALinearLayersBiasIsOneDnnsBiasAndNoLoopFollows) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"w", random_tensor({64, 96}, DType::f32, 71)},
                                                           {"w2", random_tensor({64, 96}, DType::f32, 77)},
                                                           {"w4", random_tensor({64, 96}, DType::f32, 78)},
                                                           {"w5", random_tensor({64, 96}, DType::f32, 79)},
                                                           {"bias", random_tensor({96}, DType::f32, 72)},
                                                           {"rowwise", random_tensor({256, 1}, DType::f32, 73)},
                                                           {"long_bias", random_tensor({100}, DType::f32, 74)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[256, 64] = placeholder[target=x]\n"
      "    %small : f32[32, 64] = placeholder[target=small]\n"
      "    %w : f32[64, 96] = get_attr[target=w]\n"
      "    %w2 : f32[64, 96] = get_attr[target=w2]\n"
      "    %w4 : f32[64, 96] = get_attr[target=w4]\n"
      "    %w5 : f32[64, 96] = get_attr[target=w5]\n"
      "    %bias : f32[96] = get_attr[target=bias]\n"
      "    %rowwise : f32[256, 1] = get_attr[target=rowwise]\n"
      "    %long_bias : f32[100] = get_attr[target=long_bias]\n"
      "    %mm : f32[256, 96] = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
      "    %linear : f32[256, 96] = call_function[target=add](args = (%mm, %bias), kwargs = {})\n"
      "    %mm2 : f32[256, 96] = call_function[target=matmul](args = (%x, %w2), kwargs = {})\n"
      "    %biased2 : f32[256, 96] = call_function[target=add](args = (%bias, %mm2), kwargs = {})\n"
      "    %act : f32[256, 96] = call_function[target=relu](args = (%biased2,), kwargs = {})\n"
      "    %mm3 : f32[32, 96] = call_function[target=matmul](args = (%small, %w), kwargs = {})\n"
      "    %shifted : f32[96] = call_function[target=slice](args = (%long_bias, 0, 3, 99), kwargs = {})\n"
      "    %small_linear : f32[32, 96] = call_function[target=add](args = (%mm3, %shifted), kwargs = {})\n"
      "    %mm4 : f32[256, 96] = call_function[target=matmul](args = (%x, %w4), kwargs = {})\n"
      "    %kept : f32[256, 96] = call_function[target=add](args = (%mm4, %bias), kwargs = {})\n"
      "    %mm5 : f32[256, 96] = call_function[target=matmul](args = (%x, %w5), kwargs = {})\n"
      "    %per_row : f32[256, 96] = call_function[target=add](args = (%mm5, %rowwise), kwargs = {})\n"
      "    return (linear, act, small_linear, kept, mm4, per_row)\n",
      "biases.kiln", parameters);
  if (built_with_onednn()) {
    CodegenStageOptions stage;
    stage.freeze = true;
    const std::string frozen = dump_codegen_stage(graph, "cpp", stage);
    EXPECT_EQ(occurrences(frozen, "// the epilogue (a bias along the rows) as oneDNN's bias: the matmul writes"), 2u) << frozen;
    EXPECT_EQ(occurrences(frozen, "// the epilogue's bias as oneDNN's bias; the rest in place: the matmul writes act"), 1u);
    EXPECT_EQ(occurrences(frozen, "as oneDNN's bias"), 3u);  // not mm4's (returned) nor per_row's
  }
  std::map<std::string, Tensor> inputs = {{"x", random_tensor({256, 64}, DType::f32, 75)},
                                          {"small", random_tensor({32, 64}, DType::f32, 76)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  for (bool freeze : {true, false}) {
    CompiledModel model = compile(graph, options(freeze));
    for (int threads : {1, 2, 4, 2}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "")
            << names[i] << ", freeze " << freeze << ", " << threads << " threads";
    }
  }
}

TEST(CpuLibraryMatmul, AttentionsBatchedProductsRunAsOneOneDnnMatmulOverTheBatch) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %q : f32[2, 4, 64, 32] = placeholder[target=q]\n"
      "    %k : f32[2, 4, 64, 32] = placeholder[target=k]\n"
      "    %v : f32[2, 4, 64, 32] = placeholder[target=v]\n"
      "    %heads_first : f32[4, 2, 64, 32] = placeholder[target=heads_first]\n"
      "    %shared : f32[1, 4, 32, 64] = placeholder[target=shared]\n"
      "    %left : f32[64, 32] = placeholder[target=left]\n"
      "    %kt : f32[2, 4, 32, 64] = call_function[target=transpose](args = (%k, 2, 3), kwargs = {})\n"
      "    %scores : f32[2, 4, 64, 64] = call_function[target=matmul](args = (%q, %kt), kwargs = {})\n"
      "    %scaled : f32[2, 4, 64, 64] = call_function[target=mul](args = (%scores, 0.125), kwargs = {})\n"
      "    %p : f32[2, 4, 64, 64] = call_function[target=softmax](args = (%scaled, -1), kwargs = {})\n"
      "    %o : f32[2, 4, 64, 32] = call_function[target=matmul](args = (%p, %v), kwargs = {})\n"
      "    %permuted : f32[2, 4, 64, 32] = call_function[target=permute](args = (%heads_first, [1, 0, 2, 3]), kwargs = {})\n"
      "    %mixed : f32[2, 4, 64, 64] = call_function[target=matmul](args = (%permuted, %kt), kwargs = {})\n"
      "    %broadcast : f32[2, 4, 64, 64] = call_function[target=matmul](args = (%q, %shared), kwargs = {})\n"
      "    %left_shared : f32[2, 4, 64, 64] = call_function[target=matmul](args = (%left, %kt), kwargs = {})\n"
      "    return (o, mixed, broadcast, left_shared)\n",
      "attention.kiln");
  const std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
  // Q K^T and P V; the permuted left operand's batch (heads one stride apart, batch entries
  // another) and the right operand broadcast over the first batch dim (each run of 4 reads the
  // same 4 matrices) in runs of 4, one matmul each; a left operand shared by the whole batch
  // stays on BLAS.
  EXPECT_EQ(occurrences(source, "oneDNN's matmul over the batch"), built_with_onednn() ? 4u : 0u);
  EXPECT_EQ(occurrences(source, "const int64_t run = 4;"), built_with_onednn() ? 2u : 0u);
  std::map<std::string, Tensor> inputs = {{"q", random_tensor({2, 4, 64, 32}, DType::f32, 31)},
                                          {"k", random_tensor({2, 4, 64, 32}, DType::f32, 32)},
                                          {"v", random_tensor({2, 4, 64, 32}, DType::f32, 33)},
                                          {"heads_first", random_tensor({4, 2, 64, 32}, DType::f32, 34)},
                                          {"shared", random_tensor({1, 4, 32, 64}, DType::f32, 35)},
                                          {"left", random_tensor({64, 32}, DType::f32, 36)}};
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  CompiledModel model = compile(graph, options(false));
  for (int threads : {1, 2, 3}) {
    for (int call = 0; call < 2; ++call) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "") << names[i] << ", " << threads << " threads";
    }
  }
}

// nn.MultiheadAttention as torch.onnx exports it: q, k, v are views of a sequence-first in-projection
// [s, b, 3 * h * d] split into heads ([b, h, s, d]: b's stride 3 h d, h's d), q and k each scaled
// by a number. The GEMMs read q, k and v where they are (the views' divisions decided by their
// sizes, the factors moved to the scores) in runs of h GEMMs, b of them (1.6M multiply-adds a
// run, past the size where oneDNN takes a run); in a module whose loops run on the pool and in
// one led by convolutions (its loops on OpenMP's team).
TEST(CpuLibraryMatmul, HeadsSplitOutOfASequenceFirstProjectionAreReadWhereTheyAre) {
  auto text = [](bool with_convolutions) {
    std::string heads;
    for (int part = 0; part < 3; ++part) {
      const std::string n = std::to_string(part);
      heads += "    %s" + n + " = call_function[target=select](args = (%r, 2, " + n + "), kwargs = {})\n"
               "    %m" + n + " = call_function[target=reshape](args = (%s" + n + ", [128, 9, 32]), kwargs = {})\n"
               "    %t" + n + " = call_function[target=permute](args = (%m" + n + ", [1, 0, 2]), kwargs = {})\n"
               "    %h" + n + " = call_function[target=reshape](args = (%t" + n + ", [3, 3, 128, 32]), kwargs = {})\n";
    }
    std::string convolutions, outputs = "o";
    if (with_convolutions) {
      convolutions = "    %image : f32[1, 2, 6, 6] = placeholder[target=image]\n"
                     "    %w : f32[2, 2, 3, 3] = placeholder[target=w]\n";
      std::string in = "image";
      for (int c = 0; c < 3; ++c) {
        const std::string n = "c" + std::to_string(c);
        convolutions += "    %" + n + " = call_function[target=convolution](args = (%" + in +
                        ", %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n";
        in = n;
      }
      outputs += ", c2";
    }
    return "graph():\n"
           "    %x : f32[128, 3, 288] = placeholder[target=x]\n"
           "    %r = call_function[target=reshape](args = (%x, [128, 3, 3, 96]), kwargs = {})\n" +
           heads +
           "    %kt = call_function[target=permute](args = (%h1, [0, 1, 3, 2]), kwargs = {})\n"
           "    %qs = call_function[target=mul](args = (%h0, 0.42044820762685725), kwargs = {})\n"
           "    %ks = call_function[target=mul](args = (%kt, 0.42044820762685725), kwargs = {})\n"
           "    %scores = call_function[target=matmul](args = (%qs, %ks), kwargs = {})\n"
           "    %p = call_function[target=softmax](args = (%scores, -1), kwargs = {})\n"
           "    %o = call_function[target=matmul](args = (%p, %h2), kwargs = {})\n" +
           convolutions + "    return (" + outputs + ")\n";
  };
  for (bool with_convolutions : {false, true}) {
    ir::Graph graph = ir::parse_graph(text(with_convolutions), "heads.kiln");
    const std::string loops = dump_codegen_stage(graph, "loops", CodegenStageOptions{});
    // No copy of an operand (a buffer NAME_a or NAME_b): each GEMM reads x, or the softmax and x.
    EXPECT_EQ(occurrences(loops, "_a: Intermediate") + occurrences(loops, "_b: Intermediate"), 0u) << loops;
    EXPECT_EQ(occurrences(loops, "= gemm(x{"), 1u) << loops;
    EXPECT_EQ(occurrences(loops, "= gemm(p{offset=0, shape=[3, 3, 128, 128], strides=[49152, 16384, 128, 1]}, x{"), 1u) << loops;
    const std::string source = dump_codegen_stage(graph, "cpp", CodegenStageOptions{});
    EXPECT_EQ(occurrences(source, "const int64_t run = 3;"), built_with_onednn() ? 2u : 0u) << with_convolutions;
    // Runs as each thread's share on the pool, or one after another on OpenMP's team.
    const char* runs = with_convolutions ? "for (int64_t o = 0; o < batch / run && multiplied == 0; ++o)" : "while (count > 0)";
    EXPECT_EQ(occurrences(source, runs), built_with_onednn() ? 2u : 0u) << with_convolutions;
    std::map<std::string, Tensor> inputs = {{"x", random_tensor({128, 3, 288}, DType::f32, 41)}};
    if (with_convolutions) {
      inputs["image"] = random_tensor({1, 2, 6, 6}, DType::f32, 42);
      // Weights of an initialized layer's size (fan-in 18): three convolutions of [-2, 2] weights grow
      // the image ~20x each, and the im2col build's sums (no oneDNN) then differ from the
      // interpreter's in their order by more than 1e-5 of an output that cancels out.
      inputs["w"] = random_tensor({2, 2, 3, 3}, DType::f32, 43, -0.3, 0.3);
    }
    std::vector<Tensor> expected = ir::interpret(graph, inputs);
    CompiledModel model = compile(graph, options(false));
    for (int threads : {1, 2, 3}) {
      std::vector<Tensor> actual = model.run(inputs, threads);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-5, 1e-5), "")
            << "output " << i << ", " << threads << " threads, convolutions " << with_convolutions;
    }
  }
}

}  // namespace
}  // namespace kiln::compiler
