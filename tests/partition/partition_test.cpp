// The min-cut partition on hand-built joint graphs whose best cut is known by reasoning: what
// is saved, what is recomputed, the bytes against the baseline, and that forward then
// backward reproduces the joint graph exactly (passes/partition.h).
#include "passes/partition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "tests/partition/partition_check.h"

namespace kiln::passes {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

JointGraph joint_from_text(std::string_view text, int num_forward_outputs, std::vector<std::string> wrt,
                           std::vector<std::string> tangents, ir::ParseOptions options = {}) {
  JointGraph joint;
  joint.graph = ir::parse_graph(text, options);
  joint.num_forward_outputs = num_forward_outputs;
  joint.wrt = std::move(wrt);
  joint.tangents = std::move(tangents);
  return joint;
}

std::vector<std::string> saved_names(const Partition& partition) {
  std::vector<std::string> names;
  for (const SavedValue& value : partition.saved) names.push_back(value.name);
  return names;
}

// Both graphs verify, and no choice of saved values costs fewer bytes than the cut's.
void expect_valid_and_minimal(const JointGraph& joint, const Partition& partition) {
  EXPECT_NO_THROW(ir::verify(partition.forward)) << ir::print_graph(partition.forward);
  EXPECT_NO_THROW(ir::verify(partition.backward)) << ir::print_graph(partition.backward);
  EXPECT_EQ(partition.saved_bytes, partition_test::brute_force_min_saved_bytes(joint));
}

// sin(exp(relu(x))): the backward needs exp (for cos and the chain rule) and x's sign. Saving x
// alone (48 bytes) and recomputing relu and exp beats saving exp and x (96 bytes).
constexpr std::string_view kChain = R"(graph():
    %x : f32[4, 3] = placeholder[target=x]
    %tangent_sin : f32[4, 3] = placeholder[target=tangent_sin]
    %relu = call_function[target=relu](args = (%x,), kwargs = {})
    %exp = call_function[target=exp](args = (%relu,), kwargs = {})
    %sin = call_function[target=sin](args = (%exp,), kwargs = {})
    %cos = call_function[target=cos](args = (%exp,), kwargs = {})
    %mul = call_function[target=mul](args = (%tangent_sin, %cos), kwargs = {})
    %mul_1 = call_function[target=mul](args = (%mul, %exp), kwargs = {})
    %gt = call_function[target=gt](args = (%x, 0), kwargs = {})
    %where = call_function[target=where](args = (%gt, %mul_1, 0.0), kwargs = {})
    return (sin, where)
)";

TEST(Partition, ChainSavesTheInputAndRecomputesPointwiseOps) {
  JointGraph joint = joint_from_text(kChain, 1, {"x"}, {"tangent_sin"});
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("x"));
  EXPECT_EQ(partition.saved_bytes, 48);
  EXPECT_EQ(partition.baseline_bytes, 96);
  EXPECT_EQ(partition.baseline_values, 2);
  EXPECT_THAT(partition.recomputed, ElementsAre("relu", "exp"));
  // Forward: x -> (sin, x); backward: (x, tangent_sin) -> gradient.
  EXPECT_EQ(partition.forward.output_names(), (std::vector<std::string>{"sin", "x"}));
  ASSERT_EQ(partition.backward.placeholders().size(), 2u);
  EXPECT_EQ(partition.backward.placeholders()[0]->name(), "x");
  EXPECT_EQ(partition.backward.placeholders()[1]->name(), "tangent_sin");
  EXPECT_EQ(partition.backward.find("sin"), nullptr);  // not needed by the backward
  partition_test::expect_same_as_joint(joint, partition);
}

TEST(Partition, ReportNamesSavedValuesAndBaselineAsComments) {
  Partition partition = partition_joint_graph(joint_from_text(kChain, 1, {"x"}, {"tangent_sin"}));
  std::string report = partition.report();
  EXPECT_THAT(report, HasSubstr("# partition: saved 1 values, 48 B (48 bytes); saving every activation: 2 values, 96 B "
                                "(96 bytes), 50.0%"));
  EXPECT_THAT(report, HasSubstr("#   saved x : f32[4, 3] 48 B"));
  EXPECT_THAT(report, HasSubstr("#   recomputed in the backward: relu exp"));
  // Every line is a comment, so the report can head a graph dump that still parses.
  std::string text = report + ir::print_graph(partition.forward);
  EXPECT_EQ(ir::print_graph(ir::parse_graph(text)), ir::print_graph(partition.forward));
}

// relu(x @ y): the backward needs x, y (for the matmul's gradients) and relu's sign. Saving
// the relu output or the matmul output costs the same; the cut nearest the backward saves the
// relu output and recomputes nothing. The matmul is never recomputed.
TEST(Partition, TiesSaveTheValueNearestTheBackward) {
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[4, 8] = placeholder[target=x]
    %y : f32[8, 8] = placeholder[target=y]
    %tangent_relu : f32[4, 8] = placeholder[target=tangent_relu]
    %matmul = call_function[target=matmul](args = (%x, %y), kwargs = {})
    %relu = call_function[target=relu](args = (%matmul,), kwargs = {})
    %gt = call_function[target=gt](args = (%relu, 0), kwargs = {})
    %where = call_function[target=where](args = (%gt, %tangent_relu, 0.0), kwargs = {})
    %transpose = call_function[target=transpose](args = (%y, 0, 1), kwargs = {})
    %grad_x = call_function[target=matmul](args = (%where, %transpose), kwargs = {})
    %transpose_1 = call_function[target=transpose](args = (%x, 0, 1), kwargs = {})
    %grad_y = call_function[target=matmul](args = (%transpose_1, %where), kwargs = {})
    return (relu, grad_x, grad_y)
)",
                                     1, {"x", "y"}, {"tangent_relu"});
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("x", "y", "relu"));
  EXPECT_EQ(partition.saved_bytes, 128 + 256 + 128);
  EXPECT_EQ(partition.baseline_bytes, partition.saved_bytes);
  EXPECT_THAT(partition.recomputed, IsEmpty());
  EXPECT_THAT(partition_test::forbidden_recomputations(joint, partition), IsEmpty());
  partition_test::expect_same_as_joint(joint, partition);
}

// gelu(x @ w) with a scalar loss: the backward reads half, one_plus and scaled (all computed
// from the matmul) and x. The best cut saves the matmul output, which the backward never reads
// directly, in place of the three pointwise values it feeds: 256 bytes against 512.
TEST(Partition, CutSavesAValueTheBackwardDoesNotReadDirectly) {
  ir::ParseOptions options;
  options.parameters["w"] = test_support::random_tensor({8, 8}, DType::f32, 3);
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[4, 8] = placeholder[target=x]
    %w : f32[8, 8] = get_attr[target=w]
    %mm = call_function[target=matmul](args = (%x, %w), kwargs = {})
    %half = call_function[target=mul](args = (%mm, 0.5), kwargs = {})
    %scaled = call_function[target=mul](args = (%mm, 0.7071067811865476), kwargs = {})
    %erf = call_function[target=erf](args = (%scaled,), kwargs = {})
    %one_plus = call_function[target=add](args = (%erf, 1.0), kwargs = {})
    %gelu = call_function[target=mul](args = (%half, %one_plus), kwargs = {})
    %loss = call_function[target=sum](args = (%gelu,), kwargs = {})
    %ones = call_function[target=full](args = ([4, 8], 1.0), kwargs = {})
    %d_half = call_function[target=mul](args = (%ones, %one_plus), kwargs = {})
    %d_one_plus = call_function[target=mul](args = (%ones, %half), kwargs = {})
    %d_mm_a = call_function[target=mul](args = (%d_half, 0.5), kwargs = {})
    %square = call_function[target=mul](args = (%scaled, %scaled), kwargs = {})
    %neg = call_function[target=neg](args = (%square,), kwargs = {})
    %gauss = call_function[target=exp](args = (%neg,), kwargs = {})
    %d_erf = call_function[target=mul](args = (%d_one_plus, %gauss), kwargs = {})
    %d_scaled = call_function[target=mul](args = (%d_erf, 1.1283791670955126), kwargs = {})
    %d_mm_b = call_function[target=mul](args = (%d_scaled, 0.7071067811865476), kwargs = {})
    %d_mm = call_function[target=add](args = (%d_mm_a, %d_mm_b), kwargs = {})
    %xt = call_function[target=transpose](args = (%x, 0, 1), kwargs = {})
    %grad_w = call_function[target=matmul](args = (%xt, %d_mm), kwargs = {})
    return (loss, grad_w)
)",
                                     1, {"w"}, {}, options);
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("x", "mm"));
  EXPECT_EQ(partition.saved_bytes, 256);
  EXPECT_EQ(partition.baseline_bytes, 512);
  EXPECT_THAT(partition.recomputed, ElementsAre("half", "scaled", "erf", "one_plus"));
  EXPECT_THAT(partition_test::forbidden_recomputations(joint, partition), IsEmpty());
  partition_test::expect_same_as_joint(joint, partition);
}

// sum(exp(expand(x))) with a scalar loss: the backward needs exp's 1 KiB output; saving the
// 16-byte input and recomputing the broadcast and exp is the minimum.
TEST(Partition, BroadcastInputIsSavedInsteadOfItsLargeImage) {
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[4] = placeholder[target=x]
    %expand = call_function[target=expand](args = (%x, [64, 4]), kwargs = {})
    %exp = call_function[target=exp](args = (%expand,), kwargs = {})
    %loss = call_function[target=sum](args = (%exp,), kwargs = {})
    %ones = call_function[target=full](args = ([], 1.0), kwargs = {})
    %expand_1 = call_function[target=expand](args = (%ones, [64, 4]), kwargs = {})
    %mul = call_function[target=mul](args = (%expand_1, %exp), kwargs = {})
    %grad_x = call_function[target=sum](args = (%mul, [0]), kwargs = {})
    return (loss, grad_x)
)",
                                     1, {"x"}, {});
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("x"));
  EXPECT_EQ(partition.saved_bytes, 16);
  EXPECT_EQ(partition.baseline_bytes, 1024);
  EXPECT_THAT(partition.recomputed, ElementsAre("expand", "exp"));
  EXPECT_TRUE(partition.backward.placeholders().size() == 1);  // no tangents for a scalar loss
  partition_test::expect_same_as_joint(joint, partition);
}

// The backward reads a random draw, a matmul of two parameters and a fill. Recomputing any of
// them would cost no saved bytes (none reads a forward input), but a random op is never
// duplicated and a matmul never recomputed: both are saved. The fill is recomputed for free.
TEST(Partition, RandomAndMatmulAreSavedEvenWhenRecomputingWouldBeFree) {
  ir::ParseOptions options;
  options.parameters["w"] = test_support::random_tensor({3, 3}, DType::f32, 7);
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[4, 3] = placeholder[target=x]
    %tangent_add : f32[4, 3] = placeholder[target=tangent_add]
    %w : f32[3, 3] = get_attr[target=w]
    %ww = call_function[target=matmul](args = (%w, %w), kwargs = {})
    %noise = call_function[target=rand](args = ([4, 3],), kwargs = {seed: 5})
    %arange = call_function[target=arange](args = (0, 3), kwargs = {})
    %scale = call_function[target=cast](args = (%arange, f32), kwargs = {})
    %mul = call_function[target=mul](args = (%x, %noise), kwargs = {})
    %matmul = call_function[target=matmul](args = (%mul, %ww), kwargs = {})
    %add = call_function[target=add](args = (%matmul, %scale), kwargs = {})
    %transpose = call_function[target=transpose](args = (%ww, 0, 1), kwargs = {})
    %grad_mul = call_function[target=matmul](args = (%tangent_add, %transpose), kwargs = {})
    %grad_x = call_function[target=mul](args = (%grad_mul, %noise), kwargs = {})
    %grad_x_1 = call_function[target=mul](args = (%grad_x, %scale), kwargs = {})
    return (add, grad_x_1)
)",
                                     1, {"x"}, {"tangent_add"}, options);
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("ww", "noise"));
  EXPECT_EQ(partition.saved_bytes, 36 + 48);
  EXPECT_THAT(partition.recomputed, ElementsAre("arange", "scale"));
  EXPECT_THAT(partition_test::forbidden_recomputations(joint, partition), IsEmpty());
  for (const ir::Node* node : partition.backward.nodes()) EXPECT_NE(node->target(), "rand");
  EXPECT_EQ(partition.backward.parameters().size(), 0u);  // the backward reads ww, not w
  EXPECT_EQ(partition.forward.parameters().count("w"), 1u);
  partition_test::expect_same_as_joint(joint, partition);
}

// A bool mask drawn from a random tensor (dropout): saving the 12-byte mask beats saving the
// 48-byte draw it could be recomputed from.
TEST(Partition, DropoutMaskIsSavedRatherThanTheDraw) {
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[4, 3] = placeholder[target=x]
    %tangent_where : f32[4, 3] = placeholder[target=tangent_where]
    %noise = call_function[target=rand](args = ([4, 3],), kwargs = {})
    %keep = call_function[target=lt](args = (%noise, 0.5), kwargs = {})
    %where = call_function[target=where](args = (%keep, %x, 0.0), kwargs = {})
    %grad_x = call_function[target=where](args = (%keep, %tangent_where, 0.0), kwargs = {})
    return (where, grad_x)
)",
                                     1, {"x"}, {"tangent_where"});
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("keep"));
  EXPECT_EQ(partition.saved_bytes, 12);
  partition_test::expect_same_as_joint(joint, partition);
}

// A tuple (var_mean) is never saved whole: its projection the backward reads is, and the
// reduction is not run again.
TEST(Partition, TupleProjectionsAreSavedNotTheTuple) {
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[4, 8] = placeholder[target=x]
    %tangent_mul : f32[4, 8] = placeholder[target=tangent_mul]
    %var_mean = call_function[target=var_mean](args = (%x, [1]), kwargs = {keepdim: True})
    %mean = call_function[target=getitem](args = (%var_mean, 1), kwargs = {})
    %mul = call_function[target=mul](args = (%x, %mean), kwargs = {})
    %grad_x = call_function[target=mul](args = (%tangent_mul, %mean), kwargs = {})
    return (mul, grad_x)
)",
                                     1, {"x"}, {"tangent_mul"});
  Partition partition = partition_joint_graph(joint);
  expect_valid_and_minimal(joint, partition);
  EXPECT_THAT(saved_names(partition), ElementsAre("mean"));
  EXPECT_EQ(partition.saved_bytes, 16);
  EXPECT_THAT(partition_test::forbidden_recomputations(joint, partition), IsEmpty());
  partition_test::expect_same_as_joint(joint, partition);
}

// Symbolic sizes are weighed with each symbol at its hint (64 unless given).
TEST(Partition, SymbolicSizesAreCountedAtTheirHints) {
  constexpr std::string_view text = R"(graph():
    %x : f32[s0, 4] = placeholder[target=x]
    %tangent_exp : f32[s0, 4] = placeholder[target=tangent_exp]
    %exp = call_function[target=exp](args = (%x,), kwargs = {})
    %grad_x = call_function[target=mul](args = (%tangent_exp, %exp), kwargs = {})
    return (exp, grad_x)
)";
  JointGraph joint = joint_from_text(text, 1, {"x"}, {"tangent_exp"});
  Partition by_default = partition_joint_graph(joint);
  EXPECT_EQ(by_default.saved_bytes, 64 * 16);
  EXPECT_THAT(by_default.report(), HasSubstr("# sizes counted with s0=64"));
  PartitionOptions options;
  options.size_hints["s0"] = 10;
  Partition hinted = partition_joint_graph(joint, options);
  EXPECT_EQ(hinted.saved_bytes, 160);
  EXPECT_THAT(saved_names(hinted), ElementsAre("exp"));  // tie between x and exp: nearest the backward
  partition_test::expect_same_as_joint(joint, hinted, {{"s0", 5}});
}

// The graph signature follows the forward outputs into the forward graph (the loss, a buffer's
// copy-back; the saved values are user outputs) and the parameters' kinds into both halves.
TEST(Partition, TheSignatureFollowsTheForwardOutputsAndTheParameters) {
  ir::ParseOptions options;
  options.file_name = "joint.kiln";
  options.parameters = {{"w", Tensor::full({3}, 0.5, DType::f32)},
                        {"bn.mean", Tensor::zeros({3}, DType::f32)},
                        {"_folded_mask", Tensor::full({3}, 1, DType::f32)}};
  // loss = sum(exp(x * w * mask)); its gradient against w is exp(x * w * mask) * mask * x.
  JointGraph joint = joint_from_text(R"(graph():
    %x : f32[3] = placeholder[target=x]
    %w : f32[3] = get_attr[target=w]
    %mean : f32[3] = get_attr[target=bn.mean]
    %mask : f32[3] = get_attr[target=_folded_mask]
    %mul = call_function[target=mul](args = (%x, %w), kwargs = {})
    %masked = call_function[target=mul](args = (%mul, %mask), kwargs = {})
    %exp = call_function[target=exp](args = (%masked,), kwargs = {})
    %loss = call_function[target=sum](args = (%exp,), kwargs = {})
    %mean_new = call_function[target=add](args = (%mean, %x), kwargs = {})
    %g = call_function[target=mul](args = (%exp, %mask), kwargs = {})
    %grad_w = call_function[target=mul](args = (%g, %x), kwargs = {})
    return (loss, mean_new, grad_w)
Graph signature:
    mean: BUFFER target=bn.mean
    mask: CONSTANT_TENSOR target=_folded_mask
    loss: LOSS_OUTPUT
    mean_new: BUFFER_MUTATION target=bn.mean
    grad_w: USER_OUTPUT
)",
                                     2, {"w"}, {}, options);
  Partition partition = partition_joint_graph(joint);
  ir::verify(partition.forward);
  ir::verify(partition.backward);
  const ir::GraphSignature& forward = partition.forward.signature();
  EXPECT_EQ(forward.output(0), (ir::OutputSpec{ir::OutputKind::loss_output, ""}));
  EXPECT_EQ(forward.output(1), (ir::OutputSpec{ir::OutputKind::buffer_mutation, "bn.mean"}));
  ASSERT_FALSE(partition.saved.empty());
  for (size_t i = 2; i < 2 + partition.saved.size(); ++i) EXPECT_EQ(forward.output(i), ir::OutputSpec{}) << i;
  EXPECT_EQ(forward.attribute_kind("bn.mean"), ir::InputKind::buffer);
  EXPECT_EQ(forward.attribute_kind("_folded_mask"), ir::InputKind::constant_tensor);
  EXPECT_EQ(partition.backward.signature().attribute_kind("_folded_mask"), ir::InputKind::constant_tensor);
  EXPECT_TRUE(partition.backward.signature().mutations().empty());
}

TEST(Partition, RecomputableOps) {
  ir::Graph graph = ir::parse_graph(R"(graph():
    %x : f32[4, 3] = placeholder[target=x]
    %relu = call_function[target=relu](args = (%x,), kwargs = {})
    %view = call_function[target=reshape](args = (%relu, [12]), kwargs = {})
    %full = call_function[target=full](args = ([3], 2.0), kwargs = {})
    %noise = call_function[target=rand](args = ([3],), kwargs = {})
    %sum = call_function[target=sum](args = (%x, [0]), kwargs = {})
    %cat = call_function[target=cat](args = ([%x, %x],), kwargs = {})
    %mm = call_function[target=matmul](args = (%x, %full), kwargs = {})
    return (view, noise, sum, cat, mm)
)");
  auto recomputable = [&](const char* name) { return is_recomputable(*graph.find(name)); };
  EXPECT_TRUE(recomputable("relu"));
  EXPECT_TRUE(recomputable("view"));
  EXPECT_TRUE(recomputable("full"));
  EXPECT_FALSE(recomputable("noise"));
  EXPECT_FALSE(recomputable("sum"));
  EXPECT_FALSE(recomputable("cat"));
  EXPECT_FALSE(recomputable("mm"));
  EXPECT_FALSE(recomputable("x"));
}

}  // namespace
}  // namespace kiln::passes
