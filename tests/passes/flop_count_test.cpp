// FLOP count (passes/flop_count.h): each product op on small graphs, the expected counts worked
// out by hand from the shapes (2 x multiply-adds: output elements times the length of each dot
// product), composites counted through their decompositions, symbols bound by the caller, and no
// count where a symbol is unbound.
#include "passes/flop_count.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ir/parser.h"

namespace kiln::passes {
namespace {

FlopCount counted(const std::string& body, const std::map<std::string, int64_t>& symbols = {}) {
  ir::Graph graph = ir::parse_graph("graph():\n" + body, "flops.kiln");
  std::optional<FlopCount> count = count_model_flops(graph, symbols);
  EXPECT_TRUE(count.has_value());
  return count.value_or(FlopCount{});
}

TEST(FlopCount, AConvolutionIsItsOutputTimesOneGroupsChannelsTimesTheTaps) {
  // [2, 3, 8, 8] * [4, 3, 3, 3], padding 1: 2 x 4 x 8 x 8 outputs, each 3 x 3 x 3 multiply-adds.
  FlopCount count = counted(
      "    %x : f32[2, 3, 8, 8] = placeholder[target=x]\n"
      "    %w : f32[4, 3, 3, 3] = placeholder[target=w]\n"
      "    %y = call_function[target=convolution](args = (%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    return (y,)\n");
  EXPECT_EQ(count.total, 2.0 * (2 * 4 * 8 * 8) * (3 * 3 * 3));
  EXPECT_EQ(count.by_op.at("convolution"), count.total);
}

TEST(FlopCount, ADepthwiseConvolutionWithStrideCountsOneChannelPerOutput) {
  // 6 groups of one channel, 9 x 9 at stride 2, padding 1: 6 x 5 x 5 outputs, 3 x 3 each.
  FlopCount count = counted(
      "    %x : f32[1, 6, 9, 9] = placeholder[target=x]\n"
      "    %w : f32[6, 1, 3, 3] = placeholder[target=w]\n"
      "    %y = call_function[target=convolution](args = (%x, %w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 6), kwargs = {})\n"
      "    return (y,)\n");
  EXPECT_EQ(count.total, 2.0 * (6 * 5 * 5) * 9);
}

TEST(FlopCount, ATransposedConvolutionScattersEachInputToOneGroupsOutputs) {
  // Weight [in 4, out 2 per group, 3, 3]: each of the 4 x 5 x 5 inputs meets 2 x 3 x 3 weights.
  FlopCount count = counted(
      "    %x : f32[1, 4, 5, 5] = placeholder[target=x]\n"
      "    %w : f32[4, 2, 3, 3] = placeholder[target=w]\n"
      "    %y = call_function[target=convolution](args = (%x, %w, None, [2, 2], [0, 0], [1, 1], True, [0, 0], 1), kwargs = {})\n"
      "    return (y,)\n");
  EXPECT_EQ(count.total, 2.0 * (4 * 5 * 5) * (2 * 3 * 3));
}

TEST(FlopCount, MatmulsCountTheirBroadcastOutputTimesK) {
  // [3, 1, 5, 7] @ [4, 7, 2] -> [3, 4, 5, 2], K 7; and the 1-d forms: [7] @ [7, 2], [5, 7] @ [7],
  // [7] @ [7]; bmm [2, 5, 7] @ [2, 7, 3].
  FlopCount count = counted(
      "    %a : f32[3, 1, 5, 7] = placeholder[target=a]\n"
      "    %b : f32[4, 7, 2] = placeholder[target=b]\n"
      "    %m : f32[5, 7] = placeholder[target=m]\n"
      "    %n : f32[7, 2] = placeholder[target=n]\n"
      "    %v : f32[7] = placeholder[target=v]\n"
      "    %p : f32[2, 5, 7] = placeholder[target=p]\n"
      "    %q : f32[2, 7, 3] = placeholder[target=q]\n"
      "    %broadcast = call_function[target=matmul](args = (%a, %b), kwargs = {})\n"
      "    %row = call_function[target=matmul](args = (%v, %n), kwargs = {})\n"
      "    %column = call_function[target=matmul](args = (%m, %v), kwargs = {})\n"
      "    %dot = call_function[target=matmul](args = (%v, %v), kwargs = {})\n"
      "    %batched = call_function[target=bmm](args = (%p, %q), kwargs = {})\n"
      "    return (broadcast, row, column, dot, batched)\n");
  EXPECT_EQ(count.by_op.at("matmul"), 2.0 * (3 * 4 * 5 * 2 * 7 + 2 * 7 + 5 * 7 + 7));
  EXPECT_EQ(count.by_op.at("bmm"), 2.0 * (2 * 5 * 3 * 7));
  EXPECT_EQ(count.total, count.by_op.at("matmul") + count.by_op.at("bmm"));
}

TEST(FlopCount, CompositesCountThroughTheirDecompositionsWithTheSymbolsBound) {
  // linear [s0, 16] x [8, 16]^T with s0 = 10, and attention of [2, 4, 16, 8]: Q K^T and P V,
  // each 2 x 4 x 16 x 16 x 8 multiply-adds; the softmax, the scale and the bias are not counted.
  FlopCount count = counted(
      "    %x : f32[s0, 16] = placeholder[target=x]\n"
      "    %w : f32[8, 16] = placeholder[target=w]\n"
      "    %b : f32[8] = placeholder[target=b]\n"
      "    %q : f32[2, 4, 16, 8] = placeholder[target=q]\n"
      "    %k : f32[2, 4, 16, 8] = placeholder[target=k]\n"
      "    %v : f32[2, 4, 16, 8] = placeholder[target=v]\n"
      "    %y = call_function[target=linear](args = (%x, %w, %b), kwargs = {})\n"
      "    %o = call_function[target=scaled_dot_product_attention](args = (%q, %k, %v), kwargs = {})\n"
      "    return (y, o)\n",
      {{"s0", 10}});
  EXPECT_EQ(count.total, 2.0 * (10 * 8 * 16) + 2 * (2.0 * (2 * 4 * 16 * 16 * 8)));
}

TEST(FlopCount, PointwiseWorkIsNotCounted) {
  FlopCount count = counted(
      "    %x : f32[4, 4] = placeholder[target=x]\n"
      "    %y = call_function[target=relu](args = (%x,), kwargs = {})\n"
      "    %z = call_function[target=softmax](args = (%y, -1), kwargs = {})\n"
      "    return (z,)\n");
  EXPECT_EQ(count.total, 0.0);
  EXPECT_TRUE(count.by_op.empty());
}

TEST(FlopCount, AnUnboundSymbolGivesNoCount) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[s0, 16] = placeholder[target=x]\n"
      "    %w : f32[16, 8] = placeholder[target=w]\n"
      "    %y = call_function[target=matmul](args = (%x, %w), kwargs = {})\n"
      "    return (y,)\n",
      "unbound.kiln");
  EXPECT_FALSE(count_model_flops(graph, {}).has_value());
  EXPECT_EQ(count_model_flops(graph, {{"s0", 3}})->total, 2.0 * 3 * 8 * 16);
}

}  // namespace
}  // namespace kiln::passes
