// The cpu target's batch split (passes/batch_split.h, CppSourcePrinter::emit_chunked_run): a model
// whose samples are computed apart runs as chunks side by side, each on one thread. Against the
// interpreter: a CNN (oneDNN's convolutions and matmul called by chunks at once, frozen and not),
// a model with an input passed whole to every chunk and an output whose first dim merges the batch
// with the sequence, and a sequence-first attention (slices copied in and out); 2 and 4 chunks on
// 1, 2 and 4 threads, over repeated calls. The guards and
// output sizes are the whole batch's, and a chunk's failure is reported once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/compile_driver.h"
#include "ir/interpreter.h"
#include "ir/parser.h"
#include "kiln/error.h"
#include "runtime/cpu/cpu_artifact.h"
#include "tests/support/batch_models.h"
#include "tests/support/differential.h"
#include "tests/support/shared_compile_cache.h"
#include "tests/support/test_paths.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using test_support::compare_tensors;
using test_support::random_tensor;

ir::Graph conv_net() {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w1", random_tensor({16, 3, 3, 3}, DType::f32, 1)},
      {"b1", random_tensor({16}, DType::f32, 2)},
      {"w2", random_tensor({16, 1, 3, 3}, DType::f32, 3)},
      {"fc", random_tensor({256, 10}, DType::f32, 4)},
      {"bias", random_tensor({10}, DType::f32, 5)}};
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[4, 3, 8, 8] = placeholder[target=x]\n"
      "    %w1 : f32[16, 3, 3, 3] = get_attr[target=w1]\n"
      "    %b1 : f32[16] = get_attr[target=b1]\n"
      "    %w2 : f32[16, 1, 3, 3] = get_attr[target=w2]\n"
      "    %fc : f32[256, 10] = get_attr[target=fc]\n"
      "    %bias : f32[10] = get_attr[target=bias]\n"
      "    %conv = call_function[target=convolution](args = (%x, %w1, %b1, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %act = call_function[target=clamp](args = (%conv, 0.0, 6.0), kwargs = {})\n"
      "    %depthwise = call_function[target=convolution](args = (%act, %w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 16), kwargs = {})\n"
      "    %sum = call_function[target=add](args = (%depthwise, %act), kwargs = {})\n"
      "    %pool = call_function[target=max_pool](args = (%sum, [2, 2], [2, 2]), kwargs = {})\n"
      "    %flat = call_function[target=reshape](args = (%pool, [4, 256]), kwargs = {})\n"
      "    %mm = call_function[target=matmul](args = (%flat, %fc), kwargs = {})\n"
      "    %y = call_function[target=add](args = (%mm, %bias), kwargs = {})\n"
      "    %features = call_function[target=mean](args = (%sum, [2, 3]), kwargs = {})\n"
      "    return (y, features)\n",
      "conv_net.kiln", parameters);
}

// Token ids and a position table passed whole (its first dim is not the batch): logits [batch *
// seq, vocab], whose first dim merges the batch with the sequence.
ir::Graph token_model() {
  std::map<std::string, Tensor, std::less<>> parameters = {{"table", random_tensor({20, 8}, DType::f32, 6)},
                                                           {"out", random_tensor({8, 20}, DType::f32, 7)}};
  return ir::parse_graph(
      "graph():\n"
      "    %ids : i64[4, 5] = placeholder[target=ids]\n"
      "    %positions : f32[5, 8] = placeholder[target=positions]\n"
      "    %table : f32[20, 8] = get_attr[target=table]\n"
      "    %out : f32[8, 20] = get_attr[target=out]\n"
      "    %flat = call_function[target=reshape](args = (%ids, [-1]), kwargs = {})\n"
      "    %rows = call_function[target=index_select](args = (%table, 0, %flat), kwargs = {})\n"
      "    %x = call_function[target=reshape](args = (%rows, [4, 5, 8]), kwargs = {})\n"
      "    %h = call_function[target=add](args = (%x, %positions), kwargs = {})\n"
      "    %tokens = call_function[target=reshape](args = (%h, [20, 8]), kwargs = {})\n"
      "    %logits = call_function[target=matmul](args = (%tokens, %out), kwargs = {})\n"
      "    return (logits,)\n",
      "tokens.kiln", parameters);
}

CompileOptions options(int chunks, bool freeze) {
  CompileOptions o;
  o.cache_dir = test_support::shared_compile_cache(fs::path(KILN_BINARY_DIR) / "test-compile-cache");
  o.freeze = freeze;
  o.batch_chunks = chunks;
  return o;
}

std::string module_source(const CompiledModel& model) {
  std::ifstream in(model.result().artifact_dir / "module.cpp");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void expect_chunks_match_the_interpreter(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> expected = ir::interpret(graph, inputs);
  std::vector<std::string> names = graph.output_names();
  for (bool freeze : {true, false}) {
    for (int chunks : {2, 4}) {
      CompiledModel model = compile(graph, options(chunks, freeze));
      EXPECT_NE(module_source(model).find("kiln_run_chunk"), std::string::npos) << chunks << " chunks";
      for (int threads : {1, 2, 4, 2}) {
        std::vector<Tensor> actual = model.run(inputs, threads);
        ASSERT_EQ(actual.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
          EXPECT_EQ(compare_tensors(expected[i], actual[i], 1e-4, 1e-5), "")
              << names[i] << ", " << chunks << " chunks, freeze " << freeze << ", " << threads << " threads";
      }
    }
  }
}

TEST(CpuBatchSplit, ACnnInChunksMatchesTheInterpreter) {
  expect_chunks_match_the_interpreter(conv_net(), {{"x", random_tensor({4, 3, 8, 8}, DType::f32, 11)}});
}

TEST(CpuBatchSplit, AWholeInputAndAnOutputMergingTheBatchMatchTheInterpreter) {
  Tensor ids = Tensor::empty({4, 5}, DType::i64);
  for (int64_t i = 0; i < 20; ++i) ids.data<int64_t>()[i] = (i * 7) % 20;
  expect_chunks_match_the_interpreter(token_model(), {{"ids", ids}, {"positions", random_tensor({5, 8}, DType::f32, 12)}});
}

TEST(CpuBatchSplit, ASequenceFirstAttentionCopiesItsSlicesAndMatchesTheInterpreter) {
  expect_chunks_match_the_interpreter(test_support::sequence_first_attention(),
                                      {{"x", random_tensor({5, 4, 8}, DType::f32, 15)}});
}

// An input returned as it is, and one value returned twice: every output is the whole batch's.
TEST(CpuBatchSplit, AnInputReturnedAndAValueReturnedTwiceMatchTheInterpreter) {
  std::map<std::string, Tensor, std::less<>> none;
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4, 3] = placeholder[target=x]\n"
      "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    return (x, y, y)\n",
      "returns.kiln", none);
  expect_chunks_match_the_interpreter(graph, {{"x", random_tensor({4, 3}, DType::f32, 16)}});
}

TEST(CpuBatchSplit, WithOneChunkTheModelIsNotSplit) {
  CompiledModel model = compile(conv_net(), options(1, true));
  EXPECT_EQ(module_source(model).find("kiln_run_chunk"), std::string::npos);
}

// The module's own guards (kiln_bind, which an app embedding the artifact meets) check the whole
// batch: a batch of 2 given to a model of 4 in chunks of 2 fails, naming the size to give.
TEST(CpuBatchSplit, TheGuardsAskForTheWholeBatch) {
  CompiledModel model = compile(conv_net(), options(2, true));
  CpuArtifact artifact = CpuArtifact::load(model.result().artifact_dir);
  EXPECT_NO_THROW(artifact.bind({random_tensor({4, 3, 8, 8}, DType::f32, 13)}));
  try {
    artifact.bind({random_tensor({2, 3, 8, 8}, DType::f32, 13)});
    FAIL() << "a batch of 2 passed the guards";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("dim 0 has size 2, expected 4"), std::string::npos) << error.what();
  }
}

// An index out of range in a chunk (an embedding given an id past the table) fails the call
// with the one message of its kernel, whichever chunks fail.
TEST(CpuBatchSplit, AChunkThatFailsFailsTheCallOnce) {
  CompiledModel model = compile(token_model(), options(4, true));
  Tensor ids = Tensor::full({4, 5}, 3.0, DType::i64);
  ids.data<int64_t>()[7] = 25;
  ids.data<int64_t>()[19] = 99;
  for (int threads : {1, 4}) {
    try {
      model.run({{"ids", ids}, {"positions", random_tensor({5, 8}, DType::f32, 14)}}, threads);
      FAIL() << "an id past the table ran";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("IndexError: an index is out of range"), std::string::npos) << message;
      EXPECT_EQ(message.find("IndexError", message.find("IndexError") + 1), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace kiln::compiler
