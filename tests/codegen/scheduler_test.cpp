// Tests of the scheduler (codegen/scheduler.cpp): how many kernels common patterns become
// (softmax and layer_norm one each, GEMM epilogues fused, the MLP sample), the memory plan
// (reuse by liveness, peak no more than the naive sum, an epilogue's result over a residual that
// dies there), the fusion log, and an expensive value
// an im2col revisits or a broadcast reads stored rather than recomputed (also a value that
// ignores an outer loop of its reader, and a mask that every attention row reads), the exps of values
// minus their row's max spelled exp_nonpositive, 1 + erf spelled one_plus_erf, and copies out of
// permuted views split at the divisors of their indices, and stencils (direct convolutions) stored.
#include "codegen/schedule.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "codegen/lowering.h"
#include "ir/model_file.h"
#include "ir/parser.h"
#include "passes/pass_manager.h"
#include "tests/codegen/schedule_test_support.h"
#include "tests/support/test_paths.h"

namespace kiln::codegen {
namespace {

using ir::Graph;
using ir::Node;
using ir::SymInt;
using ir::TensorMeta;

ir::Argument ints(std::initializer_list<int64_t> values) {
  std::vector<ir::Argument> list;
  for (int64_t v : values) list.emplace_back(v);
  return ir::Argument(list);
}

using testing::input;
using testing::schedule_graph;

size_t count(const ScheduledProgram& s, KernelKind kind) {
  size_t n = 0;
  for (const Kernel& k : s.kernels) n += k.kind == kind;
  return n;
}

TEST(Scheduler, SoftmaxIsOneKernel) {
  Graph graph;
  Node* x = input(graph, "x", {64, 1000});
  graph.create_output({graph.create_call("softmax", {x, 1})});
  ScheduledProgram s = schedule_graph(std::move(graph));
  EXPECT_EQ(s.kernels.size(), 1u) << print_schedule(s);
  EXPECT_EQ(count(s, KernelKind::Reduction), 1u);
}

// How many times the kernels' step bodies apply `op`.
size_t count_op(const ScheduledProgram& s, LoopOp op) {
  std::function<size_t(const Expr&)> in = [&](const Expr& e) -> size_t {
    if (!e) return 0;
    size_t n = (e->kind == ExprKind::Unary || e->kind == ExprKind::Binary) && e->op == op;
    for (const Expr& arg : e->args) n += in(arg);
    for (const IndirectTerm& term : e->indirect) n += in(term.value);
    return n + in(e->mask) + in(e->other);
  };
  size_t n = 0;
  for (const Kernel& k : s.kernels)
    for (const KernelStep& step : k.steps) n += in(step.body);
  return n;
}

// softmax's and log_softmax's exp(x - max(x)) cannot overflow: the scheduler spells them
// exp_nonpositive. An exp of x minus another tensor's max can, and stays exp.
TEST(Scheduler, ExpOfAValueMinusItsRowsMaxIsNonpositive) {
  for (const char* op : {"softmax", "log_softmax"}) {
    Graph graph;
    Node* x = input(graph, "x", {64, 1000});
    graph.create_output({graph.create_call(op, {x, 1})});
    ScheduledProgram s = schedule_graph(std::move(graph));
    EXPECT_GE(count_op(s, LoopOp::exp_nonpositive), 1u) << op << "\n" << print_schedule(s);
    EXPECT_EQ(count_op(s, LoopOp::exp), 0u) << op << "\n" << print_schedule(s);
  }
  ScheduledProgram other = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[64, 1000] [num_users=1] = placeholder[target=x]
    %y : f32[64, 1000] [num_users=1] = placeholder[target=y]
    %m : f32[64, 1] [num_users=1] = call_function[target=amax](args = (%y, [1], True), kwargs = {})
    %d : f32[64, 1000] [num_users=1] = call_function[target=sub](args = (%x, %m), kwargs = {})
    %e : f32[64, 1000] [num_users=1] = call_function[target=exp](args = (%d,), kwargs = {})
    %s : f32[64] [num_users=1] = call_function[target=sum](args = (%e, [1]), kwargs = {})
    return (s,)
)"));
  EXPECT_EQ(count_op(other, LoopOp::exp_nonpositive), 0u) << print_schedule(other);
  EXPECT_EQ(count_op(other, LoopOp::exp), 1u) << print_schedule(other);
}

TEST(Scheduler, LayerNormIsOneKernel) {
  Graph graph;
  Node* x = input(graph, "x", {SymInt::symbol("s0"), 768});
  Node* w = input(graph, "w", {768});
  Node* b = input(graph, "b", {768});
  graph.create_output({graph.create_call("layer_norm", {x, ints({768}), w, b})});
  ScheduledProgram s = schedule_graph(std::move(graph));
  EXPECT_EQ(s.kernels.size(), 1u) << print_schedule(s);
}

TEST(Scheduler, GemmEpilogueIsFused) {
  Graph graph;
  Node* x = input(graph, "x", {64, 256});
  Node* w = input(graph, "w", {256, 512});
  Node* b = input(graph, "b", {512});
  Node* y = graph.create_call("gelu", {graph.create_call("add", {graph.create_call("matmul", {x, w}), b})});
  graph.create_output({y});
  ScheduledProgram s = schedule_graph(std::move(graph));
  EXPECT_EQ(count(s, KernelKind::Extern), 1u) << print_schedule(s);
  EXPECT_LE(s.kernels.size() - count(s, KernelKind::Extern), 1u) << print_schedule(s);
}

TEST(Scheduler, MlpSampleIsItsGemmsAndAtMostTwoKernels) {
  Graph graph = ir::load_model((std::filesystem::path(KILN_SOURCE_DIR) / "samples/models/mlp.kiln").string());
  ScheduledProgram s = schedule_graph(std::move(graph));
  EXPECT_EQ(count(s, KernelKind::Extern), 2u) << print_schedule(s);
  EXPECT_LE(s.kernels.size() - count(s, KernelKind::Extern), 2u) << print_schedule(s);
}

TEST(Scheduler, PointwiseChainIsOneKernelAndNeedsNoWorkspace) {
  Graph graph;
  Node* x = input(graph, "x", {4096, 4096});
  Node* w = input(graph, "w", {4096});
  Node* y = graph.create_call("mul", {graph.create_call("gelu", {graph.create_call("add", {graph.create_call("mul", {x, w}), 1.0})}),
                                      graph.create_call("sigmoid", {x})});
  graph.create_output({y});
  ScheduledProgram s = schedule_graph(std::move(graph));
  EXPECT_EQ(s.kernels.size(), 1u) << print_schedule(s);
  EXPECT_EQ(s.memory.peak_bytes, SymInt(0));
}

TEST(Scheduler, IndependentNodesOverOneRangeShareAKernel) {
  Graph graph;
  Node* x = input(graph, "x", {64, 100});
  Node* y = input(graph, "y", {64, 100});
  graph.create_output({graph.create_call("exp", {x}), graph.create_call("neg", {y}), graph.create_call("mul", {x, y})});
  ScheduledProgram s = schedule_graph(std::move(graph));
  ASSERT_EQ(s.kernels.size(), 1u) << print_schedule(s);
  EXPECT_EQ(s.kernels[0].steps.size(), 3u);
  EXPECT_EQ(s.kernels[0].outer.size(), 1u) << "contiguous dims are coalesced into one loop";
}

TEST(Scheduler, SymbolicMemoryPlanReusesSlotsOfEqualSize) {
  Graph graph;
  SymInt s0 = SymInt::symbol("s0");
  Node* x = input(graph, "x", {s0, 64});
  Node* w = input(graph, "w", {64, 64});
  Node* a = graph.create_call("matmul", {x, w});
  Node* b = graph.create_call("matmul", {a, w});
  Node* c = graph.create_call("matmul", {b, w});
  graph.create_output({graph.create_call("matmul", {c, w})});
  ScheduledProgram s = schedule_graph(std::move(graph));
  // naive: three intermediates of 256*s0 bytes; a and c never live together, so two slots.
  EXPECT_EQ(s.memory.naive_bytes, SymInt(768) * s0) << print_schedule(s);
  EXPECT_EQ(s.memory.peak_bytes, SymInt(512) * s0) << print_schedule(s);
}

TEST(Scheduler, MemoryPlanReusesDeadBuffers) {
  // Two GEMMs in a row with stored intermediates: a -> b -> c; a and c can share bytes.
  Graph graph;
  Node* x = input(graph, "x", {128, 128});
  Node* a = graph.create_call("matmul", {x, x});
  Node* b = graph.create_call("matmul", {a, x});
  Node* c = graph.create_call("matmul", {b, x});
  Node* d = graph.create_call("matmul", {c, x});
  graph.create_output({d});
  ScheduledProgram s = schedule_graph(std::move(graph));
  ASSERT_TRUE(s.memory.peak_bytes.is_constant());
  ASSERT_TRUE(s.memory.naive_bytes.is_constant());
  EXPECT_LT(s.memory.peak_bytes.constant(), s.memory.naive_bytes.constant()) << print_schedule(s);
  EXPECT_EQ(s.memory.peak_bytes.constant(), 2 * 128 * 128 * 4) << print_schedule(s);
}

// A library call's epilogue that adds an operand dying in its kernel (a residual: read only at
// the point the epilogue stores, by no later kernel, and not the call's own input) writes its
// result over that operand: one workspace slot for both (MemoryPlan::in_place_of). Not where the
// operand is read later, nor where the call itself reads it.
TEST(Scheduler, AnEpilogueResultTakesTheBytesOfAResidualThatDiesThere) {
  auto residual = [](bool read_later, bool call_reads_it) {
    Graph graph;
    Node* x = input(graph, "x", {64, 64});
    Node* w = input(graph, "w", {64, 64});
    Node* r = graph.create_call("relu", {graph.create_call("matmul", {x, w})});
    Node* h = graph.create_call("matmul", {r, w});
    Node* y = graph.create_call("add", {graph.create_call("matmul", {call_reads_it ? r : h, w}), r});
    std::vector<ir::Argument> outputs = {graph.create_call("matmul", {y, w})};
    if (read_later) outputs.push_back(graph.create_call("matmul", {r, h}));
    graph.create_output(outputs);
    return schedule_graph(std::move(graph));
  };
  auto named = [](const ScheduledProgram& s, const std::string& name) {
    for (const Buffer& b : s.program.buffers)
      if (b.name == name) return b.id;
    return -1;
  };
  ScheduledProgram s = residual(false, false);
  const int r = named(s, "relu"), y = named(s, "add");
  ASSERT_TRUE(r >= 0 && y >= 0) << print_schedule(s);
  EXPECT_EQ(s.memory.in_place_of, (std::map<int, int>{{y, r}})) << print_schedule(s);
  EXPECT_EQ(s.memory.offsets.at(y), s.memory.offsets.at(r));
  EXPECT_NE(print_schedule(s).find("add: f32[64, 64] at " + s.memory.offsets.at(r).to_string() + " (in place of relu)"),
            std::string::npos)
      << print_schedule(s);
  // At the third GEMM relu (and add, in its bytes), its input matmul_1 and its product: three
  // slots, where add apart would make four.
  EXPECT_EQ(s.memory.peak_bytes, SymInt(3 * 64 * 64 * 4)) << print_schedule(s);
  EXPECT_TRUE(residual(true, false).memory.in_place_of.empty()) << print_schedule(residual(true, false));
  EXPECT_TRUE(residual(false, true).memory.in_place_of.empty()) << print_schedule(residual(false, true));
  // A computed bias [64] dying at a one-row product's epilogue meets the point it stores once the
  // row's size-1 dim is gone, but holds no value of the result's shape: not in place.
  Graph graph;
  Node* row = input(graph, "row", {1, 64});
  Node* weight = input(graph, "weight", {64, 64});
  Node* z = input(graph, "z", {4, 64});
  Node* bias = graph.create_call("sum", {z, ints({0})});
  Node* biased_row = graph.create_call("add", {graph.create_call("matmul", {row, weight}), bias});
  graph.create_output({graph.create_call("matmul", {biased_row, weight})});
  ScheduledProgram biased = schedule_graph(std::move(graph));
  EXPECT_TRUE(biased.memory.in_place_of.empty()) << print_schedule(biased);
}

TEST(Scheduler, FusionLogSaysWhyAValueIsStored) {
  Graph graph;
  Node* x = input(graph, "x", {8, 16});
  Node* w = input(graph, "w", {16, 16});
  Node* h = graph.create_call("relu", {x});
  graph.create_output({graph.create_call("matmul", {h, w})});
  ScheduledProgram s = schedule_graph(std::move(graph));
  bool found = false;
  for (const std::string& line : s.fusion_log) found = found || line.find("library call reads it") != std::string::npos;
  EXPECT_TRUE(found) << print_schedule(s);
}

// An im2col visits each element of its input once per kernel tap: an expensive pointwise input
// (a batch norm and activation's worth) is computed once and stored rather than recomputed at
// each tap, while a cheap one (relu) is still inlined into the im2col.
TEST(Scheduler, AnExpensiveValueAnIm2colRevisitsIsStored) {
  auto im2col_over = [](const std::string& producer, int x_users) {
    std::string text = R"(graph():
    %x : f32[1, 4, 8, 8] [num_users=)" + std::to_string(x_users) + R"(] = placeholder[target=x]
    %w : f32[4, 4, 3, 3] [num_users=1] = placeholder[target=w]
)" + producer + R"(
    %convolution : f32[1, 4, 8, 8] [num_users=1] = call_function[target=convolution](args = (%h, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), kwargs = {})
    return (convolution,)
)";
    return schedule_graph(ir::parse_graph(text));
  };
  auto stored = [](const ScheduledProgram& s, const std::string& value) {
    for (const std::string& line : s.fusion_log)
      if (line.find(value + " is stored: convolution_columns visits") != std::string::npos) return true;
    return false;
  };
  ScheduledProgram expensive = im2col_over(R"(    %scaled : f32[1, 4, 8, 8] [num_users=1] = call_function[target=mul](args = (%x, 2.0), kwargs = {})
    %shifted : f32[1, 4, 8, 8] [num_users=1] = call_function[target=add](args = (%scaled, 1.0), kwargs = {})
    %gate : f32[1, 4, 8, 8] [num_users=1] = call_function[target=sigmoid](args = (%shifted,), kwargs = {})
    %gated : f32[1, 4, 8, 8] [num_users=1] = call_function[target=mul](args = (%gate, %x), kwargs = {})
    %h : f32[1, 4, 8, 8] [num_users=1] = call_function[target=tanh](args = (%gated,), kwargs = {}))", 2);
  EXPECT_TRUE(stored(expensive, "h")) << print_schedule(expensive);
  ScheduledProgram cheap = im2col_over(R"(    %h : f32[1, 4, 8, 8] [num_users=1] = call_function[target=relu](args = (%x,), kwargs = {}))", 1);
  EXPECT_FALSE(stored(cheap, "h")) << print_schedule(cheap);
  EXPECT_EQ(cheap.kernels.size() + 1, expensive.kernels.size()) << print_schedule(cheap) << print_schedule(expensive);
}

// A squeeze-excitation scale, sigmoid(gate[c]) * x[c, h, w]: the sigmoid of the 8 gates is
// computed once and stored, not once per pixel of the reader; a cheap broadcast (relu) is inlined.
TEST(Scheduler, AnExpensiveValueReadAsABroadcastIsStored) {
  auto scale_by = [](const std::string& op) {
    return schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[1, 8, 16, 16] [num_users=1] = placeholder[target=x]
    %g : f32[1, 8, 1, 1] [num_users=1] = placeholder[target=g]
    %gate : f32[1, 8, 1, 1] [num_users=1] = call_function[target=)" + op + R"(](args = (%g,), kwargs = {})
    %scaled : f32[1, 8, 16, 16] [num_users=1] = call_function[target=mul](args = (%x, %gate), kwargs = {})
    return (scaled,)
)"));
  };
  auto stored = [](const ScheduledProgram& s) {
    for (const std::string& line : s.fusion_log)
      if (line.find("gate is stored: ") != std::string::npos &&
          line.find("visits more points than it has elements, and it applies an expensive op") != std::string::npos)
        return true;
    return false;
  };
  ScheduledProgram sigmoid = scale_by("sigmoid");
  EXPECT_TRUE(stored(sigmoid)) << print_schedule(sigmoid);
  ScheduledProgram relu = scale_by("relu");
  EXPECT_FALSE(stored(relu)) << print_schedule(relu);
  EXPECT_EQ(relu.kernels.size() + 1, sigmoid.kernels.size()) << print_schedule(relu) << print_schedule(sigmoid);
}

// A padding mask's additive bias, where(mask == 0, -inf, 0) over [batch, 1, 1, keys], read by
// the softmax of every head's every query row: computed once and stored where the softmax visits
// each of its elements 16 times or more (4 heads x 8 queries), inlined where it visits them fewer
// times (1 head x 8 queries) or where it is a load and one op (the mask converted to f32).
TEST(Scheduler, AMaskReadAlongEveryAttentionRowIsStored) {
  auto masked_softmax = [](int64_t heads, bool where) {
    std::string h = std::to_string(heads);
    std::string bias = where ? R"(
    %zero : bool[2, 1, 1, 16] [num_users=1] = call_function[target=eq](args = (%mask, 0), kwargs = {})
    %bias : f32[2, 1, 1, 16] [num_users=1] = call_function[target=where](args = (%zero, -inf, 0.0), kwargs = {}))"
                             : R"(
    %bias : f32[2, 1, 1, 16] [num_users=1] = call_function[target=cast](args = (%mask, f32), kwargs = {}))";
    return schedule_graph(ir::parse_graph(R"(graph():
    %scores : f32[2, )" + h + R"(, 8, 16] [num_users=1] = placeholder[target=scores]
    %mask : i64[2, 1, 1, 16] [num_users=1] = placeholder[target=mask])" + bias + R"(
    %masked : f32[2, )" + h + R"(, 8, 16] [num_users=1] = call_function[target=add](args = (%scores, %bias), kwargs = {})
    %p : f32[2, )" + h + R"(, 8, 16] [num_users=1] = call_function[target=softmax](args = (%masked, -1), kwargs = {})
    return (p,)
)"));
  };
  auto stored = [](const ScheduledProgram& s) {
    for (const std::string& line : s.fusion_log)
      if (line.find("bias is stored: ") != std::string::npos && line.find("visits each element 16 times or more") != std::string::npos)
        return true;
    return false;
  };
  ScheduledProgram four_heads = masked_softmax(4, true);
  EXPECT_TRUE(stored(four_heads)) << print_schedule(four_heads);
  EXPECT_EQ(four_heads.kernels.size(), 2u) << print_schedule(four_heads);
  ScheduledProgram one_head = masked_softmax(1, true);
  EXPECT_FALSE(stored(one_head)) << print_schedule(one_head);
  EXPECT_EQ(one_head.kernels.size(), 1u) << print_schedule(one_head);
  ScheduledProgram converted = masked_softmax(4, false);
  EXPECT_FALSE(stored(converted)) << print_schedule(converted);
  EXPECT_EQ(converted.kernels.size(), 1u) << print_schedule(converted);
}

// A per-channel value (an instance norm's rstd: an expression of 10 operations) read by a node
// whose channels are its innermost loop (a channels-last [N, W, C] value) is computed once per
// channel and stored: inlined, it would be computed again at every point along W, since nothing
// hoists it out of an outer loop. Read along NCW, the loops inside the channel's ignore it and
// the compilers hoist it: inlined.
TEST(Scheduler, AValueIgnoringAnOuterLoopOfItsReaderIsStored) {
  auto scale = [](const std::string& x_shape, const std::string& s_shape) {
    return schedule_graph(ir::parse_graph(R"(graph():
    %x : f32)" + x_shape + R"( [num_users=1] = placeholder[target=x]
    %s : f32)" + s_shape + R"( [num_users=2] = placeholder[target=s]
    %square : f32)" + s_shape + R"( [num_users=1] = call_function[target=mul](args = (%s, %s), kwargs = {})
    %half : f32)" + s_shape + R"( [num_users=1] = call_function[target=mul](args = (%square, 0.5), kwargs = {})
    %plus : f32)" + s_shape + R"( [num_users=1] = call_function[target=add](args = (%half, %s), kwargs = {})
    %eps : f32)" + s_shape + R"( [num_users=1] = call_function[target=add](args = (%plus, 1e-05), kwargs = {})
    %rstd : f32)" + s_shape + R"( [num_users=1] = call_function[target=rsqrt](args = (%eps,), kwargs = {})
    %y : f32)" + x_shape + R"( [num_users=1] = call_function[target=mul](args = (%x, %rstd), kwargs = {})
    return (y,)
)"));
  };
  auto stored = [](const ScheduledProgram& s) {
    for (const std::string& line : s.fusion_log)
      if (line.find("rstd is stored: y visits its elements several times") != std::string::npos) return true;
    return false;
  };
  ScheduledProgram channels_last = scale("[2, 300, 64]", "[2, 1, 64]");
  EXPECT_TRUE(stored(channels_last)) << print_schedule(channels_last);
  EXPECT_EQ(channels_last.kernels.size(), 2u) << print_schedule(channels_last);
  ScheduledProgram channels_first = scale("[2, 64, 300]", "[2, 64, 1]");
  EXPECT_FALSE(stored(channels_first)) << print_schedule(channels_first);
  EXPECT_EQ(channels_first.kernels.size(), 1u) << print_schedule(channels_first);
}

// A direct convolution (Kiln's own loop: each point the sum of 25 taps of its framed input) is a
// stencil, stored for its readers rather than computed in their loops (the relu after it is a
// kernel of its own, as is the framed input the stencil reads through flat rows); a value that
// loads one point several times (x * x + x) is no stencil.
TEST(Scheduler, AStencilIsStored) {
  auto stored = [](const ScheduledProgram& s, const std::string& what) {
    for (const std::string& line : s.fusion_log)
      if (line.find(what) != std::string::npos) return true;
    return false;
  };
  ScheduledProgram direct = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[2, 1, 12, 12] [num_users=1] = placeholder[target=x]
    %w : f32[6, 1, 5, 5] [num_users=1] = placeholder[target=w]
    %c : f32[2, 6, 12, 12] [num_users=1] = call_function[target=convolution](args = (%x, %w, None, [1, 1], [2, 2], [1, 1], False, [0, 0], 1), kwargs = {})
    %y : f32[2, 6, 12, 12] [num_users=1] = call_function[target=relu](args = (%c,), kwargs = {})
    return (y,)
)"));
  EXPECT_TRUE(stored(direct, "c is stored: it reads 25 points of one buffer (a stencil)")) << print_schedule(direct);
  EXPECT_EQ(direct.kernels.size(), 3u) << print_schedule(direct);
  ScheduledProgram square = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[4, 16] [num_users=2] = placeholder[target=x]
    %s : f32[4, 16] [num_users=1] = call_function[target=mul](args = (%x, %x), kwargs = {})
    %t : f32[4, 16] [num_users=1] = call_function[target=add](args = (%s, %x), kwargs = {})
    %y : f32[4, 16] [num_users=1] = call_function[target=exp](args = (%t,), kwargs = {})
    return (y,)
)"));
  EXPECT_FALSE(stored(square, "(a stencil)")) << print_schedule(square);
  EXPECT_EQ(square.kernels.size(), 1u) << print_schedule(square);
}

// A residual stream, r = x + a + b + c, read by two nodes (a row sum and the next residual):
// recomputing it would read its four buffers again in each, so it is stored; a sum of two
// buffers read twice is still recomputed.
TEST(Scheduler, AValueReadTwiceThatReadsManyBuffersIsStored) {
  auto residual_of = [](const std::string& terms) {
    return schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[8, 64] [num_users=1] = placeholder[target=x]
    %a : f32[8, 64] [num_users=1] = placeholder[target=a]
    %d : f32[8, 64] [num_users=1] = placeholder[target=d]
)" + terms + R"(
    %total : f32[8] [num_users=1] = call_function[target=sum](args = (%r, [1]), kwargs = {})
    %next : f32[8, 64] [num_users=1] = call_function[target=add](args = (%r, %d), kwargs = {})
    return (total, next)
)"));
  };
  auto stored = [](const ScheduledProgram& s) {
    for (const std::string& line : s.fusion_log)
      if (line.find("r is stored: 2 reads of an expression of") != std::string::npos) return true;
    return false;
  };
  ScheduledProgram four = residual_of(R"(    %b : f32[8, 64] [num_users=1] = placeholder[target=b]
    %c : f32[8, 64] [num_users=1] = placeholder[target=c]
    %xa : f32[8, 64] [num_users=1] = call_function[target=add](args = (%x, %a), kwargs = {})
    %xab : f32[8, 64] [num_users=1] = call_function[target=add](args = (%xa, %b), kwargs = {})
    %r : f32[8, 64] [num_users=2] = call_function[target=add](args = (%xab, %c), kwargs = {}))");
  EXPECT_TRUE(stored(four)) << print_schedule(four);
  ScheduledProgram two = residual_of(R"(    %r : f32[8, 64] [num_users=2] = call_function[target=add](args = (%x, %a), kwargs = {}))");
  EXPECT_FALSE(stored(two)) << print_schedule(two);
}

// A head split as ONNX exports it (qkv [seq, batch, 3*d] -> [seq, batch*heads, hd] -> transposed
// -> [batch, heads, seq, hd]) reads its input through (64*x1 + x3)//256 and % 256, which the
// loop ranges (x1 < 4 heads, x3 < 64) decide: the load's index is folded to the affine one.
TEST(Scheduler, DivisionsTheLoopRangesDecideAreFolded) {
  ScheduledProgram s = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[128, 8, 768] [num_users=1] = placeholder[target=x]
    %r : f32[128, 8, 3, 256] [num_users=1] = call_function[target=reshape](args = (%x, [128, 8, 3, 256]), kwargs = {})
    %q : f32[128, 8, 256] [num_users=1] = call_function[target=select](args = (%r, 2, 0), kwargs = {})
    %h : f32[128, 32, 64] [num_users=1] = call_function[target=reshape](args = (%q, [128, 32, 64]), kwargs = {})
    %t : f32[32, 128, 64] [num_users=1] = call_function[target=permute](args = (%h, [1, 0, 2]), kwargs = {})
    %s : f32[8, 4, 128, 64] [num_users=1] = call_function[target=reshape](args = (%t, [8, 4, 128, 64]), kwargs = {})
    %out : f32[8, 4, 128, 64] [num_users=1] = call_function[target=mul](args = (%s, 0.5), kwargs = {})
    return (out,)
)"));
  ASSERT_EQ(s.kernels.size(), 1u) << print_schedule(s);
  std::vector<std::string> indices;
  for (const KernelStep& step : s.kernels[0].steps)
    map_indices(step.body, [&](const SymInt& index) {
      indices.push_back(index.to_string());
      return index;
    });
  SymInt x0 = SymInt::symbol("x0"), x1 = SymInt::symbol("x1"), x2 = SymInt::symbol("x2"), x3 = SymInt::symbol("x3");
  ASSERT_EQ(indices.size(), 1u);
  EXPECT_EQ(indices[0], (768 * x0 + 64 * x1 + 6144 * x2 + x3).to_string()) << print_schedule(s);
}

// Every index of the kernel, as text.
std::vector<std::string> kernel_indices(const Kernel& kernel) {
  std::vector<std::string> indices;
  for (const KernelStep& step : kernel.steps) {
    map_indices(step.body, [&](const SymInt& index) {
      indices.push_back(index.to_string());
      return index;
    });
    indices.push_back(step.store_index.to_string());
  }
  return indices;
}

bool divides(const std::vector<std::string>& indices) {
  for (const std::string& index : indices)
    if (index.find("//") != std::string::npos || index.find('%') != std::string::npos) return true;
  return false;
}

// A flatten of a channels-last [N, 5, 5, 16] value read as NCHW [N, 400] (x1 // 25, x1 % 5,
// x1 // 5 % 5), and attention's heads merged back ([B, H, S, 64] -> [B, S, H * 64]: x2 // 64,
// x2 % 64): the copy's dim is split at the divisors, so that its indices are affine.
TEST(Scheduler, ACopyOutOfAPermutedViewSplitsTheDimItsIndicesDivide) {
  ScheduledProgram flatten = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[64, 5, 5, 16] [num_users=1] = placeholder[target=x]
    %p : f32[64, 16, 5, 5] [num_users=1] = call_function[target=permute](args = (%x, [0, 3, 1, 2]), kwargs = {})
    %f : f32[64, 400] [num_users=1] = call_function[target=reshape](args = (%p, [64, 400]), kwargs = {})
    %out : f32[64, 400] [num_users=1] = call_function[target=mul](args = (%f, 2.0), kwargs = {})
    return (out,)
)"));
  ASSERT_EQ(flatten.kernels.size(), 1u) << print_schedule(flatten);
  EXPECT_FALSE(divides(kernel_indices(flatten.kernels[0]))) << print_schedule(flatten);
  EXPECT_EQ(flatten.kernels[0].outer, (SymShape{64, 16, 25})) << print_schedule(flatten);
  ScheduledProgram heads = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[2, 4, 128, 64] [num_users=1] = placeholder[target=x]
    %t : f32[2, 128, 4, 64] [num_users=1] = call_function[target=permute](args = (%x, [0, 2, 1, 3]), kwargs = {})
    %m : f32[2, 128, 256] [num_users=1] = call_function[target=reshape](args = (%t, [2, 128, 256]), kwargs = {})
    %out : f32[2, 128, 256] [num_users=1] = call_function[target=add](args = (%m, 1.0), kwargs = {})
    return (out,)
)"));
  ASSERT_EQ(heads.kernels.size(), 1u) << print_schedule(heads);
  EXPECT_FALSE(divides(kernel_indices(heads.kernels[0]))) << print_schedule(heads);
  EXPECT_EQ(heads.kernels[0].outer.back(), SymInt(64)) << print_schedule(heads);
}

// Interleaving two rows ([2, 512] -> [512, 2] -> [1024]: x0 % 2, x0 // 2) would split into an
// innermost loop of 2 points: the division stays.
TEST(Scheduler, ASplitThatLeavesAShortInnermostLoopIsNotMade) {
  ScheduledProgram s = schedule_graph(ir::parse_graph(R"(graph():
    %x : f32[2, 512] [num_users=1] = placeholder[target=x]
    %t : f32[512, 2] [num_users=1] = call_function[target=permute](args = (%x, [1, 0]), kwargs = {})
    %f : f32[1024] [num_users=1] = call_function[target=reshape](args = (%t, [1024]), kwargs = {})
    %out : f32[1024] [num_users=1] = call_function[target=mul](args = (%f, 3.0), kwargs = {})
    return (out,)
)"));
  ASSERT_EQ(s.kernels.size(), 1u) << print_schedule(s);
  EXPECT_EQ(s.kernels[0].outer, (SymShape{1024})) << print_schedule(s);
  EXPECT_TRUE(divides(kernel_indices(s.kernels[0]))) << print_schedule(s);
}

// GELU's 1 + erf(x / sqrt 2) and erfc's 1 - erf(x) are spelled one_plus_erf (one exp); an erf
// added to another constant, or rounded to f16 before the add, is not.
TEST(Scheduler, OnePlusOrOneMinusErfIsSpelledOnePlusErf) {
  auto spelled = [](const std::string& lines) {
    return schedule_graph(ir::parse_graph("graph():\n" + lines + "    return (out,)\n"));
  };
  ScheduledProgram gelu = spelled(R"(    %x : f32[64, 100] [num_users=1] = placeholder[target=x]
    %out : f32[64, 100] [num_users=1] = call_function[target=gelu](args = (%x,), kwargs = {})
)");
  EXPECT_EQ(count_op(gelu, LoopOp::one_plus_erf), 1u) << print_schedule(gelu);
  EXPECT_EQ(count_op(gelu, LoopOp::erf), 0u) << print_schedule(gelu);
  ScheduledProgram erfc = spelled(R"(    %x : f32[64, 100] [num_users=1] = placeholder[target=x]
    %e : f32[64, 100] [num_users=1] = call_function[target=erf](args = (%x,), kwargs = {})
    %out : f32[64, 100] [num_users=1] = call_function[target=sub](args = (1.0, %e), kwargs = {})
)");
  EXPECT_EQ(count_op(erfc, LoopOp::one_plus_erf), 1u) << print_schedule(erfc);
  EXPECT_EQ(count_op(erfc, LoopOp::neg), 1u) << print_schedule(erfc);
  ScheduledProgram two = spelled(R"(    %x : f32[64, 100] [num_users=1] = placeholder[target=x]
    %e : f32[64, 100] [num_users=1] = call_function[target=erf](args = (%x,), kwargs = {})
    %out : f32[64, 100] [num_users=1] = call_function[target=add](args = (%e, 2.0), kwargs = {})
)");
  EXPECT_EQ(count_op(two, LoopOp::one_plus_erf), 0u) << print_schedule(two);
  ScheduledProgram half = spelled(R"(    %x : f16[64, 100] [num_users=1] = placeholder[target=x]
    %e : f16[64, 100] [num_users=1] = call_function[target=erf](args = (%x,), kwargs = {})
    %out : f16[64, 100] [num_users=1] = call_function[target=add](args = (%e, 1.0), kwargs = {})
)");
  EXPECT_EQ(count_op(half, LoopOp::one_plus_erf), 0u) << print_schedule(half);
  EXPECT_EQ(count_op(half, LoopOp::erf), 1u) << print_schedule(half);
}

// GELU's 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)) and 1 - tanh(x) are spelled 2 sigmoid(2a) and
// 2 sigmoid(-2a) (one exp, no polynomial branch); a tanh added to another constant, or rounded to
// f16 before the add, stays a tanh.
TEST(Scheduler, OnePlusOrOneMinusTanhIsSpelledTwiceASigmoid) {
  auto spelled = [](const std::string& lines) {
    return schedule_graph(ir::parse_graph("graph():\n" + lines + "    return (out,)\n"));
  };
  auto scale_of_sigmoid = [](const ScheduledProgram& s) {
    std::optional<double> scale;
    for (const Kernel& kernel : s.kernels)
      for (const KernelStep& step : kernel.steps)
        visit(step.body, [&](const ExprNode& node) {
          if (node.kind != ExprKind::Unary || node.op != LoopOp::sigmoid) return;
          const Expr& product = node.args[0];
          if (product->kind == ExprKind::Binary && product->op == LoopOp::mul &&
              product->args[1]->kind == ExprKind::Constant)
            scale = product->args[1]->float_value;
        });
    return scale;
  };
  ScheduledProgram gelu = spelled(R"(    %x : f32[64, 100] [num_users=1] = placeholder[target=x]
    %out : f32[64, 100] [num_users=1] = call_function[target=gelu](args = (%x,), kwargs = {approximate: "tanh"})
)");
  EXPECT_EQ(count_op(gelu, LoopOp::sigmoid), 1u) << print_schedule(gelu);
  EXPECT_EQ(count_op(gelu, LoopOp::tanh), 0u) << print_schedule(gelu);
  EXPECT_EQ(scale_of_sigmoid(gelu), 2.0) << print_schedule(gelu);
  ScheduledProgram minus = spelled(R"(    %x : f32[64, 100] [num_users=1] = placeholder[target=x]
    %t : f32[64, 100] [num_users=1] = call_function[target=tanh](args = (%x,), kwargs = {})
    %out : f32[64, 100] [num_users=1] = call_function[target=sub](args = (1.0, %t), kwargs = {})
)");
  EXPECT_EQ(count_op(minus, LoopOp::sigmoid), 1u) << print_schedule(minus);
  EXPECT_EQ(scale_of_sigmoid(minus), -2.0) << print_schedule(minus);
  ScheduledProgram two = spelled(R"(    %x : f32[64, 100] [num_users=1] = placeholder[target=x]
    %t : f32[64, 100] [num_users=1] = call_function[target=tanh](args = (%x,), kwargs = {})
    %out : f32[64, 100] [num_users=1] = call_function[target=add](args = (%t, 2.0), kwargs = {})
)");
  EXPECT_EQ(count_op(two, LoopOp::sigmoid), 0u) << print_schedule(two);
  EXPECT_EQ(count_op(two, LoopOp::tanh), 1u) << print_schedule(two);
  ScheduledProgram half = spelled(R"(    %x : f16[64, 100] [num_users=1] = placeholder[target=x]
    %t : f16[64, 100] [num_users=1] = call_function[target=tanh](args = (%x,), kwargs = {})
    %out : f16[64, 100] [num_users=1] = call_function[target=add](args = (%t, 1.0), kwargs = {})
)");
  EXPECT_EQ(count_op(half, LoopOp::sigmoid), 0u) << print_schedule(half);
  EXPECT_EQ(count_op(half, LoopOp::tanh), 1u) << print_schedule(half);
}

TEST(Scheduler, WithoutFusionEveryNodeIsAKernel) {
  Graph graph;
  Node* x = input(graph, "x", {64, 100});
  graph.create_output({graph.create_call("softmax", {x, 1})});
  passes::run_pipeline(graph, "simplified");
  LoopProgram program = lower(graph);
  size_t nodes = program.nodes.size();
  ScheduleOptions options;
  options.fuse = false;
  ScheduledProgram s = schedule(std::move(program), options);
  EXPECT_EQ(s.kernels.size(), nodes);
  EXPECT_GT(nodes, 1u);
}

}  // namespace
}  // namespace kiln::codegen
