// Batch splitting (passes/batch_split.h): which graphs compute their samples apart, the chunk
// graph's shapes and rewritten size arguments, how many chunks, and one test per kind of graph
// that must not split (each names the node that mixes samples).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/batch_split.h"
#include "tests/support/batch_models.h"
#include "tests/support/differential.h"

namespace kiln::passes {
namespace {

using test_support::random_tensor;

// A small CNN on a batch of 4: convolution, relu, max pool, flatten, linear layer.
ir::Graph conv_net(int64_t batch = 4, int64_t features = 10) {
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", random_tensor({4, 3, 3, 3}, DType::f32, 1)},
      {"b", random_tensor({4}, DType::f32, 2)},
      {"fc", random_tensor({64, features}, DType::f32, 3)}};
  const std::string b = std::to_string(batch), f = std::to_string(features);
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[" + b + ", 3, 8, 8] = placeholder[target=x]\n"
      "    %w : f32[4, 3, 3, 3] = get_attr[target=w]\n"
      "    %b : f32[4] = get_attr[target=b]\n"
      "    %fc : f32[64, " + f + "] = get_attr[target=fc]\n"
      "    %conv = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %relu = call_function[target=relu](args = (%conv,), kwargs = {})\n"
      "    %pool = call_function[target=max_pool](args = (%relu, [2, 2], [2, 2]), kwargs = {})\n"
      "    %flat = call_function[target=reshape](args = (%pool, [" + b + ", 64]), kwargs = {})\n"
      "    %y = call_function[target=matmul](args = (%flat, %fc), kwargs = {})\n"
      "    return (y,)\n",
      "conv_net.kiln", parameters);
}

BatchChunking exactly(int64_t chunks) {
  BatchChunking chunking;
  chunking.chunks = chunks;
  return chunking;
}

std::string shape_of(const ir::Graph& graph, const std::string& node) {
  return ir::format_tensor_type(graph.find(node)->value());
}

TEST(BatchSplit, AConvNetSplitsIntoChunksWithItsSizesDivided) {
  ir::Graph graph = conv_net();
  std::string why;
  std::optional<BatchSplit> split = split_batch(graph, exactly(2), &why);
  ASSERT_TRUE(split) << why;
  EXPECT_EQ(split->batch, 4);
  EXPECT_EQ(split->chunks, 2);
  EXPECT_EQ(split->inputs, (std::vector<BatchSlice>{BatchSlice{0, 1, 1}}));
  EXPECT_EQ(split->outputs, (std::vector<BatchSlice>{BatchSlice{0, 1, 1}}));
  EXPECT_EQ(shape_of(split->chunk, "x"), "f32[2, 3, 8, 8]");
  EXPECT_EQ(shape_of(split->chunk, "pool"), "f32[2, 4, 4, 4]");
  EXPECT_EQ(shape_of(split->chunk, "y"), "f32[2, 10]");
  // The reshape's own size argument is the chunk's.
  EXPECT_EQ(ir::format_argument(split->chunk.find("flat")->args().at(1)), "[2, 64]");
  // The whole graph is untouched.
  EXPECT_EQ(shape_of(graph, "y"), "f32[4, 10]");
}

TEST(BatchSplit, AnInputWithoutTheBatchIsPassedWholeToEveryChunk) {
  std::map<std::string, Tensor, std::less<>> none;
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[6, 5] = placeholder[target=x]\n"
      "    %scale : f32[5] = placeholder[target=scale]\n"
      "    %y = call_function[target=mul](args = (%x, %scale), kwargs = {})\n"
      "    return (y,)\n",
      "scale.kiln", none);
  std::optional<BatchSplit> split = split_batch(graph, exactly(3));
  ASSERT_TRUE(split);
  EXPECT_EQ(split->inputs, (std::vector<BatchSlice>{BatchSlice{0, 1, 1}, BatchSlice{}}));
  EXPECT_EQ(shape_of(split->chunk, "x"), "f32[2, 5]");
  EXPECT_EQ(shape_of(split->chunk, "scale"), "f32[5]");
}

// A token embedding merges the batch with the sequence ([4, 6] ids flattened to [24]): sample b
// holds indices [6b, 6b + 6) of the merged dim, which stays apart through the table lookup and
// the reshape back.
TEST(BatchSplit, ABatchMergedWithTheDimsAfterItStaysApart) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"table", random_tensor({50, 8}, DType::f32, 4)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %ids : i64[4, 6] = placeholder[target=ids]\n"
      "    %table : f32[50, 8] = get_attr[target=table]\n"
      "    %flat = call_function[target=reshape](args = (%ids, [-1]), kwargs = {})\n"
      "    %rows = call_function[target=index_select](args = (%table, 0, %flat), kwargs = {})\n"
      "    %x = call_function[target=reshape](args = (%rows, [4, 6, 8]), kwargs = {})\n"
      "    %norm = call_function[target=var_mean](args = (%x, [2]), kwargs = {keepdim: True})\n"
      "    %mean = call_function[target=getitem](args = (%norm, 1), kwargs = {})\n"
      "    %centered = call_function[target=sub](args = (%x, %mean), kwargs = {})\n"
      "    %heads = call_function[target=reshape](args = (%centered, [4, 6, 2, 4]), kwargs = {})\n"
      "    %t = call_function[target=permute](args = (%heads, [0, 2, 1, 3]), kwargs = {})\n"
      "    %kt = call_function[target=transpose](args = (%t, 2, 3), kwargs = {})\n"
      "    %scores = call_function[target=matmul](args = (%t, %kt), kwargs = {})\n"
      "    %logits = call_function[target=reshape](args = (%rows, [24, 8]), kwargs = {})\n"
      "    return (scores, logits)\n",
      "embedding.kiln", parameters);
  std::string why;
  std::optional<BatchSplit> split = split_batch(graph, exactly(2), &why);
  ASSERT_TRUE(split) << why;
  EXPECT_EQ(shape_of(split->chunk, "flat"), "i64[12]");
  EXPECT_EQ(shape_of(split->chunk, "rows"), "f32[12, 8]");
  EXPECT_EQ(shape_of(split->chunk, "scores"), "f32[2, 2, 6, 6]");
  EXPECT_EQ(shape_of(split->chunk, "logits"), "f32[12, 8]");
  EXPECT_EQ(ir::format_argument(split->chunk.find("heads")->args().at(1)), "[2, 6, 2, 4]");
  EXPECT_EQ(split->outputs, (std::vector<BatchSlice>{BatchSlice{0, 1, 1}, BatchSlice{0, 6, 1}}));
}

// A sequence-first attention (PyTorch's nn.MultiheadAttention without batch_first: [seq, batch,
// d]) holds the batch in the second dim; its heads merge it with the heads ([seq, batch*heads, hd])
// and its output projection with the sequence ([seq*batch, d]: seq blocks of batch rows).
TEST(BatchSplit, ASequenceFirstAttentionSplitsAlongItsSecondDim) {
  ir::Graph graph = test_support::sequence_first_attention();
  std::string why;
  std::optional<BatchSplit> split = split_batch(graph, exactly(2), &why);
  ASSERT_TRUE(split) << why;
  EXPECT_EQ(split->batch, 4);
  EXPECT_EQ(split->inputs, (std::vector<BatchSlice>{BatchSlice{1, 1, 1}}));
  EXPECT_EQ(split->outputs, (std::vector<BatchSlice>{BatchSlice{1, 1, 1}, BatchSlice{0, 1, 5}}));
  EXPECT_EQ(shape_of(split->chunk, "heads"), "f32[5, 4, 4]");
  EXPECT_EQ(shape_of(split->chunk, "scores"), "f32[4, 5, 5]");
  EXPECT_EQ(shape_of(split->chunk, "projected"), "f32[10, 8]");
  EXPECT_EQ(shape_of(split->chunk, "y"), "f32[5, 2, 8]");
}

TEST(BatchSplit, AnOutputMayHoldTheBatchInAnyDim) {
  std::map<std::string, Tensor, std::less<>> none;
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4, 6] = placeholder[target=x]\n"
      "    %y = call_function[target=transpose](args = (%x, 0, 1), kwargs = {})\n"
      "    return (y,)\n",
      "transposed.kiln", none);
  std::optional<BatchSplit> split = split_batch(graph, exactly(2));
  ASSERT_TRUE(split);
  EXPECT_EQ(split->outputs, (std::vector<BatchSlice>{BatchSlice{1, 1, 1}}));
}

// One graph per way of mixing samples (or of not being splittable): split_batch refuses it and
// names the node.
struct Refusal {
  const char* name;
  const char* body;     // nodes after %x : f32[4, 1, 6] and %c : f32[4, 1, 1] (a parameter); x's second
                        // dim, of size 1, cannot be the batch either
  const char* because;  // in the reason
};

const Refusal kRefusals[] = {
    {"SumOverTheBatch", "    %y = call_function[target=sum](args = (%x, [0]), kwargs = {})\n    return (y,)\n",
     "%y (sum): reduces over the batch"},
    {"SumOfEverything", "    %y = call_function[target=sum](args = (%x,), kwargs = {})\n    return (y,)\n",
     "%y (sum): reduces every dim"},
    {"ReshapeThatMixes", "    %y = call_function[target=reshape](args = (%x, [6, 4]), kwargs = {})\n    return (y,)\n",
     "%y (reshape): its new shape mixes samples"},
    {"ContractionOverTheBatch",
     "    %x2 = call_function[target=reshape](args = (%x, [4, 6]), kwargs = {})\n"
     "    %xt = call_function[target=transpose](args = (%x2, 0, 1), kwargs = {})\n"
     "    %y = call_function[target=matmul](args = (%xt, %x2), kwargs = {})\n    return (y,)\n",
     "%y (matmul)"},
    {"ATensorOfTheBatchsSizeThatIsNotTheBatch",
     "    %y = call_function[target=add](args = (%x, %c), kwargs = {})\n    return (y,)\n",
     "%y (add): combines samples with a tensor that has the batch's size"},
    {"SliceOfTheBatch", "    %y = call_function[target=slice](args = (%x, 0, 0, 2), kwargs = {})\n    return (y,)\n",
     "%y (slice): works along the batch dim"},
    {"AnOutputThatDoesNotHoldTheBatch",
     "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n    return (y, c)\n",
     "%c (a parameter): an output that does not hold the batch"},
    {"CumulativeSumAlongTheBatch", "    %y = call_function[target=cumsum](args = (%x, 0), kwargs = {})\n    return (y,)\n",
     "%y (cumsum): works along the batch dim"},
    {"SqueezeOfEverySizeOneDim", "    %y = call_function[target=squeeze](args = (%x,), kwargs = {})\n    return (y,)\n",
     "%y (squeeze)"},
};

class BatchSplitRefuses : public ::testing::TestWithParam<Refusal> {};

TEST_P(BatchSplitRefuses, NamingTheNode) {
  std::map<std::string, Tensor, std::less<>> parameters = {{"c", random_tensor({4, 1, 1}, DType::f32, 5)}};
  ir::Graph graph = ir::parse_graph(std::string("graph():\n"
                                                "    %x : f32[4, 1, 6] = placeholder[target=x]\n"
                                                "    %c : f32[4, 1, 1] = get_attr[target=c]\n") +
                                        GetParam().body,
                                    "refusal.kiln", parameters);
  std::string why;
  EXPECT_FALSE(split_batch(graph, exactly(2), &why));
  EXPECT_NE(why.find(GetParam().because), std::string::npos) << why;
}

INSTANTIATE_TEST_SUITE_P(Graphs, BatchSplitRefuses, ::testing::ValuesIn(kRefusals),
                         [](const ::testing::TestParamInfo<Refusal>& info) { return std::string(info.param.name); });

TEST(BatchSplit, ASymbolicBatchIsNotSplit) {
  std::map<std::string, Tensor, std::less<>> none;
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 6] = placeholder[target=x]\n"
      "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    return (y,)\n",
      "symbolic.kiln", none);
  std::string why;
  EXPECT_FALSE(split_batch(graph, exactly(2), &why));
  EXPECT_NE(why.find("symbolic size"), std::string::npos) << why;
}

// A graph with an empty tensor (a dim of size 0 anywhere) is not split: there is nothing to share.
TEST(BatchSplit, AGraphWithAnEmptyTensorIsNotSplit) {
  std::map<std::string, Tensor, std::less<>> none;
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4, 0] = placeholder[target=x]\n"
      "    %y = call_function[target=reshape](args = (%x, [0, 4]), kwargs = {})\n"
      "    return (y,)\n",
      "empty.kiln", none);
  std::string why;
  EXPECT_FALSE(split_batch(graph, exactly(2), &why));
  EXPECT_NE(why.find("%x has no elements"), std::string::npos) << why;
}

TEST(BatchSplit, ChunksThatDoNotDivideTheBatchAreRefused) {
  std::string why;
  EXPECT_FALSE(split_batch(conv_net(6), exactly(4), &why));
  EXPECT_NE(why.find("4 chunks do not divide its batch of 6"), std::string::npos) << why;
  EXPECT_FALSE(split_batch(conv_net(1), exactly(2), &why));
  EXPECT_NE(why.find("its batch is 1"), std::string::npos) << why;
}

// Chosen chunks (BatchChunking::chunks 0): one sample each where a sample's convolution outputs
// outweigh the weights; as many as the CPUs, of samples enough, where the weights are larger; none
// where even the whole batch is too small for them (a linear layer of a few rows, whose weights
// every chunk would read again).
TEST(BatchSplit, ChosenChunksWeighTheWeightsEveryChunkReadsAgainstTheSamples) {
  BatchChunking chosen;
  chosen.cpus = 2;
  // Per sample: a 4 x 8 x 8 output of 112 weights plus a 64 x 1 GEMM: the outputs outweigh.
  std::optional<BatchSplit> small_weights = split_batch(conv_net(8, 1), chosen);
  ASSERT_TRUE(small_weights);
  EXPECT_EQ(small_weights->chunks, 8);
  // A 64 x 2000 linear layer: 512 KB of weights, 8 KB of output per sample (the GEMM is also
  // most of the multiply-adds, with one row per sample: at least 16 rows).
  std::string why;
  std::optional<BatchSplit> large_weights = split_batch(conv_net(128, 2000), chosen, &why);
  ASSERT_TRUE(large_weights) << why;
  EXPECT_EQ(large_weights->chunks, 2);
  EXPECT_FALSE(split_batch(conv_net(8, 2000), chosen, &why));
  EXPECT_NE(why.find("its weights, read by every chunk, needs them"), std::string::npos) << why;
  // Chunks of 64 samples on 4 CPUs would leave two idle.
  chosen.cpus = 4;
  EXPECT_FALSE(split_batch(conv_net(128, 2000), chosen, &why));
  EXPECT_NE(why.find("fewer than the 4 CPUs"), std::string::npos) << why;
}

// Rows of a [512, 64] table gathered by 8192 indices: the rows mix, the columns do not, so the
// columns (the table's second dim) are a batch. Chosen chunks would copy the table's columns and
// the output's float by float: not split; asked for, made. A sequence-first batch whose rows are
// long enough is split when chosen.
TEST(BatchSplit, ChosenChunksThatWouldCopyShortRunsAreRefused) {
  ir::Graph gather = ir::parse_graph(
      "graph():\n"
      "    %table : f32[512, 64] = placeholder[target=table]\n"
      "    %ids : i64[8192] = placeholder[target=ids]\n"
      "    %y = call_function[target=index_select](args = (%table, 0, %ids), kwargs = {})\n"
      "    return (y,)\n",
      "gather.kiln");
  BatchChunking chosen;
  chosen.cpus = 2;
  std::string why;
  EXPECT_FALSE(split_batch(gather, chosen, &why));
  EXPECT_NE(why.find("a chunk's part of input %table is runs of"), std::string::npos) << why;
  EXPECT_NE(why.find("fewer than 256 (copies too fine to pay)"), std::string::npos) << why;
  std::optional<BatchSplit> asked = split_batch(gather, exactly(2), &why);
  ASSERT_TRUE(asked) << why;
  EXPECT_EQ(asked->inputs.at(0), (BatchSlice{1, 1, 1}));
  // A running sum over a sequence-first [64, 4, 256] value keeps its 4 samples apart: each chunk
  // copies runs of 256 floats.
  ir::Graph sequence_first = ir::parse_graph(
      "graph():\n"
      "    %x : f32[64, 4, 256] = placeholder[target=x]\n"
      "    %y = call_function[target=cumsum](args = (%x, 0), kwargs = {})\n"
      "    return (y,)\n",
      "sequence_first.kiln");
  std::optional<BatchSplit> rows = split_batch(sequence_first, chosen, &why);
  ASSERT_TRUE(rows) << why;
  EXPECT_EQ(rows->inputs.at(0), (BatchSlice{1, 1, 1}));
}

// A call with less work than one parallel loop's runs whole when the chunks are chosen (waking a
// thread for it costs more than the call), and in the chunks asked for when they are asked for.
TEST(BatchSplit, ACallTooSmallToShareIsNotSplitUnlessAskedTo) {
  ir::Graph tiny = ir::parse_graph(
      "graph():\n"
      "    %x : f32[16, 4] = placeholder[target=x]\n"
      "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    return (y,)\n",
      "tiny.kiln");
  BatchChunking chosen;
  chosen.cpus = 2;
  std::string why;
  EXPECT_FALSE(split_batch(tiny, chosen, &why));
  EXPECT_NE(why.find("a call's work (64 multiply-adds and output elements) is less than 32768"), std::string::npos)
      << why;
  std::optional<BatchSplit> asked = split_batch(tiny, exactly(2), &why);
  ASSERT_TRUE(asked) << why;
  EXPECT_EQ(asked->chunks, 2);
  // 16 x 2048 output elements are work enough.
  ir::Graph wide = ir::parse_graph(
      "graph():\n"
      "    %x : f32[16, 2048] = placeholder[target=x]\n"
      "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    return (y,)\n",
      "wide.kiln");
  std::optional<BatchSplit> chunked = split_batch(wide, chosen, &why);
  ASSERT_TRUE(chunked) << why;
  EXPECT_EQ(chunked->chunks, 16);
}

}  // namespace
}  // namespace kiln::passes
