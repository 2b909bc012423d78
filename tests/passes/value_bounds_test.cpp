// Value bounds (passes/value_bounds.h): each rule on small graphs whose bounds are worked out by
// hand from the weights they are given, what an unknown bound is (NaN weights, parameters that
// are not frozen, ops without a rule, f16, bounds past kLargestBound) and that integers are
// bounded by their type.
#include "passes/value_bounds.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "ir/parser.h"

namespace kiln::passes {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor filled(const Sizes& sizes, double value) { return Tensor::full(sizes, value, DType::f32); }

// x -> conv (w: every weight 0.5, 4 input channels x 3 x 3: a row sum of 18; bias -2 and 1) ->
// clamp [0, 6] -> depthwise conv (dw: 3x3 of 0.25 per channel: 2.25) -> add x's 1x1 conv (p: 0.5
// and -0.5 on 4 channels: 2) -> relu.
ir::Graph block(Tensor w = filled({2, 4, 3, 3}, 0.5)) {
  Tensor p = filled({2, 4, 1, 1}, 0.5);
  p.data<float>()[1] = -0.5f;
  Tensor b = Tensor::from_vector<float>({2}, {-2.0f, 1.0f}, DType::f32);
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", w}, {"b", b}, {"dw", filled({2, 1, 3, 3}, 0.25)}, {"p", p}};
  return ir::parse_graph(
      "graph():\n"
      "    %x : f32[1, 4, 8, 8] = placeholder[target=x]\n"
      "    %w : f32[2, 4, 3, 3] = get_attr[target=w]\n"
      "    %b : f32[2] = get_attr[target=b]\n"
      "    %dw : f32[2, 1, 3, 3] = get_attr[target=dw]\n"
      "    %p : f32[2, 4, 1, 1] = get_attr[target=p]\n"
      "    %conv = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %relu6 = call_function[target=clamp](args = (%conv, 0.0, 6.0), kwargs = {})\n"
      "    %depthwise = call_function[target=convolution](args = (%relu6, %dw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 2), kwargs = {})\n"
      "    %projected = call_function[target=convolution](args = (%x, %p, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %sum = call_function[target=add](args = (%depthwise, %projected), kwargs = {})\n"
      "    %relu = call_function[target=relu](args = (%sum,), kwargs = {})\n"
      "    %scaled = call_function[target=mul](args = (%relu, 0.5), kwargs = {})\n"
      "    %halved = call_function[target=div](args = (%relu, 2.0), kwargs = {})\n"
      "    return (scaled, halved)\n",
      "block.kiln", parameters);
}

double bound(const ValueBounds& bounds, const ir::Graph& graph, const std::string& node) {
  return bounds.of(*graph.find(node));
}

TEST(ValueBounds, ConvolutionsClampsSumsAndProductsFollowTheirOperands) {
  ir::Graph graph = block();
  ValueBounds bounds(graph, /*frozen=*/true);
  EXPECT_EQ(bound(bounds, graph, "x"), kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "conv"), 18 * kBoundedInput + 2);
  EXPECT_EQ(bound(bounds, graph, "relu6"), 6);
  EXPECT_EQ(bound(bounds, graph, "depthwise"), 6 * 2.25);
  EXPECT_EQ(bound(bounds, graph, "projected"), 2 * kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "sum"), 6 * 2.25 + 2 * kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "relu"), 6 * 2.25 + 2 * kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "scaled"), (6 * 2.25 + 2 * kBoundedInput) * 0.5);
  EXPECT_EQ(bound(bounds, graph, "halved"), (6 * 2.25 + 2 * kBoundedInput) / 2);
  EXPECT_EQ(bound(bounds, graph, "dw"), 0.25);  // a parameter's largest |value|
}

TEST(ValueBounds, ParametersThatAreNotFrozenAreUnknownAndSoIsAllTheyReach) {
  ir::Graph graph = block();
  ValueBounds bounds(graph, /*frozen=*/false);
  EXPECT_EQ(bound(bounds, graph, "conv"), kInf);
  EXPECT_EQ(bound(bounds, graph, "relu6"), kInf) << "a clamp keeps a NaN: unknown in, unknown out";
  EXPECT_EQ(bound(bounds, graph, "relu"), kInf);
}

TEST(ValueBounds, ANaNWeightMakesItsConvolutionUnknown) {
  Tensor w = filled({2, 4, 3, 3}, 0.5);
  w.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
  ir::Graph graph = block(w);
  ValueBounds bounds(graph, /*frozen=*/true);
  EXPECT_EQ(bound(bounds, graph, "conv"), kInf);
  EXPECT_EQ(bound(bounds, graph, "depthwise"), kInf);
  EXPECT_EQ(bound(bounds, graph, "projected"), 2 * kBoundedInput) << "the other branch keeps its bound";
  EXPECT_EQ(bound(bounds, graph, "w"), kInf);
  EXPECT_EQ(bounds.unknown_reason(*graph.find("projected")), "");
  EXPECT_EQ(bounds.unknown_reason(*graph.find("depthwise")), "%w holds a NaN, an infinity or a value past 1e30");
}

TEST(ValueBounds, ANaNBiasMakesItsConvolutionUnknown) {
  // block() with b = [-2, NaN]: conv's second channel is NaN wherever its weights are.
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"w", filled({2, 4, 3, 3}, 0.5)},
      {"b", Tensor::from_vector<float>({2}, {-2.0f, std::numeric_limits<float>::quiet_NaN()}, DType::f32)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[1, 4, 8, 8] = placeholder[target=x]\n"
      "    %w : f32[2, 4, 3, 3] = get_attr[target=w]\n"
      "    %b : f32[2] = get_attr[target=b]\n"
      "    %conv = call_function[target=convolution](args = (%x, %w, %b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})\n"
      "    %relu6 = call_function[target=clamp](args = (%conv, 0.0, 6.0), kwargs = {})\n"
      "    return (relu6,)\n",
      "nan_bias.kiln", parameters);
  ValueBounds bounds(graph, /*frozen=*/true);
  EXPECT_EQ(bound(bounds, graph, "b"), kInf);
  EXPECT_EQ(bound(bounds, graph, "conv"), kInf);
  EXPECT_EQ(bounds.unknown_reason(*graph.find("relu6")), "%b holds a NaN, an infinity or a value past 1e30");
}

TEST(ValueBounds, TheReasonNamesWhereUnknownBoundsBegin) {
  ir::Graph graph = block();
  ValueBounds unfrozen(graph, /*frozen=*/false);
  EXPECT_EQ(unfrozen.unknown_reason(*graph.find("relu")), "%w is a parameter that is not frozen");
  ir::Graph large = block(filled({2, 4, 3, 3}, 1e14));
  ValueBounds past(large, /*frozen=*/true);
  EXPECT_EQ(past.unknown_reason(*large.find("relu")), "%conv (convolution) may reach 4.05e+30, past 1e30");
  ir::Graph ops = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4] = placeholder[target=x]\n"
      "    %h : f16[4] = placeholder[target=h]\n"
      "    %log = call_function[target=log](args = (%x,), kwargs = {})\n"
      "    %sig = call_function[target=sigmoid](args = (%log,), kwargs = {})\n"
      "    %hx = call_function[target=cast](args = (%h, f32), kwargs = {})\n"
      "    return (sig, hx)\n",
      "reasons.kiln");
  ValueBounds reasons(ops, /*frozen=*/true);
  EXPECT_EQ(reasons.unknown_reason(*ops.find("sig")), "%log (log) has no bound rule for its operands");
  EXPECT_EQ(reasons.unknown_reason(*ops.find("hx")), "%h is a f16 input (only f32 and f64 inputs are checked)");
}

TEST(ValueBounds, BoundsPastTheLargestAreUnknown) {
  // Weights of 1e14: 36 of them per output channel, 36e14 x 2^50 = 4.05e30 > kLargestBound.
  ir::Graph graph = block(filled({2, 4, 3, 3}, 1e14));
  ValueBounds bounds(graph, /*frozen=*/true);
  EXPECT_EQ(bound(bounds, graph, "conv"), kInf);
  EXPECT_EQ(bound(bounds, graph, "relu6"), kInf);
}

// The same graph for calls whose inputs are within +-kSmallInput: every bound that the inputs
// reach is the one worked out above with 2^8 for 2^50; the clamp's and the parameters' are the
// same. Where 2^50 took a convolution past kLargestBound (weights of 1e14), 2^8 does not.
TEST(ValueBounds, BoundsForSmallInputsFollowFromTheirOwnInputBound) {
  ir::Graph graph = block();
  ValueBounds wide(graph, /*frozen=*/true);
  ValueBounds small = wide.for_inputs_within(kSmallInput);
  EXPECT_EQ(kSmallInput, 256.0);
  EXPECT_EQ(bound(small, graph, "x"), 256);
  EXPECT_EQ(bound(small, graph, "conv"), 18 * 256 + 2);
  EXPECT_EQ(bound(small, graph, "relu6"), 6);
  EXPECT_EQ(bound(small, graph, "sum"), 6 * 2.25 + 2 * 256);
  EXPECT_EQ(bound(small, graph, "halved"), (6 * 2.25 + 2 * 256) / 2.0);
  EXPECT_EQ(bound(small, graph, "dw"), 0.25);
  EXPECT_EQ(bound(wide, graph, "conv"), 18 * kBoundedInput + 2) << "the first analysis is unchanged";
  ir::Graph heavy = block(filled({2, 4, 3, 3}, 1e14));
  ValueBounds heavy_small = ValueBounds(heavy, /*frozen=*/true).for_inputs_within(kSmallInput);
  EXPECT_EQ(bound(heavy_small, heavy, "conv"), 36.0 * double(1e14f) * 256 + 2);
  EXPECT_EQ(heavy_small.unknown_reason(*heavy.find("relu")), "");
  ValueBounds direct(heavy, /*frozen=*/true, kSmallInput);
  EXPECT_EQ(bound(direct, heavy, "relu"), bound(heavy_small, heavy, "relu"));
}

TEST(ValueBounds, OpsWithoutARuleAndHalfFloatsAreUnknownIntegersBoundedByTheirType) {
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[4] = placeholder[target=x]\n"
      "    %h : f16[4] = placeholder[target=h]\n"
      "    %i : i32[4] = placeholder[target=i]\n"
      "    %log = call_function[target=log](args = (%x,), kwargs = {})\n"
      "    %sig = call_function[target=sigmoid](args = (%x,), kwargs = {})\n"
      "    %sig_of_log = call_function[target=sigmoid](args = (%log,), kwargs = {})\n"
      "    %hx = call_function[target=cast](args = (%h, f32), kwargs = {})\n"
      "    %lt = call_function[target=lt](args = (%log, 0.0), kwargs = {})\n"
      "    %ix = call_function[target=cast](args = (%i, f32), kwargs = {})\n"
      "    %var_mean = call_function[target=var_mean](args = (%x,), kwargs = {})\n"
      "    %mean = call_function[target=getitem](args = (%var_mean, 1), kwargs = {})\n"
      "    %amax = call_function[target=amax](args = (%x,), kwargs = {})\n"
      "    %total = call_function[target=sum](args = (%x,), kwargs = {})\n"
      "    return (sig, sig_of_log, hx, lt, ix, mean, amax, total)\n",
      "ops.kiln");
  ValueBounds bounds(graph, /*frozen=*/true);
  EXPECT_EQ(bound(bounds, graph, "log"), kInf);
  EXPECT_EQ(bound(bounds, graph, "sig"), 1.0);
  EXPECT_EQ(bound(bounds, graph, "sig_of_log"), kInf) << "sigmoid(NaN) is NaN";
  EXPECT_EQ(bound(bounds, graph, "h"), kInf);
  EXPECT_EQ(bound(bounds, graph, "hx"), kInf);
  EXPECT_EQ(bound(bounds, graph, "lt"), 1.0) << "a bool is never NaN";
  EXPECT_EQ(bound(bounds, graph, "i"), 0x1p31);
  EXPECT_EQ(bound(bounds, graph, "ix"), 0x1p31);
  EXPECT_EQ(bound(bounds, graph, "mean"), kInf) << "var_mean has no rule";
  EXPECT_EQ(bound(bounds, graph, "amax"), kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "total"), 4 * kBoundedInput);
}

TEST(ValueBounds, AClampBoundsByItsLimitsAndAMatmulByItsFrozenColumns) {
  // fc's columns: |1| + |-3| = 4 and |2| + |0.5| = 2.5.
  std::map<std::string, Tensor, std::less<>> parameters = {
      {"fc", Tensor::from_vector<float>({2, 2}, {1.0f, 2.0f, -3.0f, 0.5f}, DType::f32)}};
  ir::Graph graph = ir::parse_graph(
      "graph():\n"
      "    %x : f32[3, 2] = placeholder[target=x]\n"
      "    %sq : f32[2, 2] = placeholder[target=sq]\n"
      "    %fc : f32[2, 2] = get_attr[target=fc]\n"
      "    %y = call_function[target=matmul](args = (%x, %fc), kwargs = {})\n"
      "    %low = call_function[target=clamp](args = (%y, -1.5, None), kwargs = {})\n"
      "    %band = call_function[target=clamp](args = (%y, -1.5, 0.25), kwargs = {})\n"
      "    %yy = call_function[target=matmul](args = (%x, %sq), kwargs = {})\n"
      "    return (low, band, yy)\n",
      "matmul.kiln", parameters);
  ValueBounds bounds(graph, /*frozen=*/true);
  EXPECT_EQ(bound(bounds, graph, "y"), 4 * kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "low"), 4 * kBoundedInput);
  EXPECT_EQ(bound(bounds, graph, "band"), 1.5);
  EXPECT_EQ(bound(bounds, graph, "yy"), kInf) << "2 x 2^50 x 2^50 is past kLargestBound";
}

}  // namespace
}  // namespace kiln::passes
