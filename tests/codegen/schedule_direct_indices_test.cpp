// Tests of direct loop indices (codegen/schedule_direct_indices.cpp): a mask buffer [8, 8] read
// through index_select by arange(s0) on both dims (the ONNX importer's cut of mask[:s0, :s0]) is
// read directly where s0's range keeps it within the buffer, and through checked indices where
// it does not (no range, or a range past 8). (The compiled values: OnnxImport.
// AMaskBufferSlicedAtADynamicSizeTakesThatSize, whose import gives its symbol that range.) An
// index an export normalized, where(i < 0, i + 8, i), is the loop variable all the same, in a
// pointwise kernel and in a GEMM's epilogue.
#include <gtest/gtest.h>

#include "tests/codegen/schedule_test_support.h"

namespace kiln::codegen {
namespace {

using ir::Graph;
using ir::Node;
using ir::SymInt;

// where(mask[arange(s0)][:, arange(s0)], x [s0, s0], -1e9), with s0 in [0, most] when given.
Graph masked(std::optional<int64_t> most) {
  Graph graph;
  const SymInt s0 = SymInt::symbol("s0");
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {s0, s0}));
  Tensor mask = Tensor::zeros({8, 8}, DType::boolean);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j <= i; ++j) mask.data<bool>()[i * 8 + j] = true;
  graph.set_parameter("mask", mask);
  Node* indices = graph.create_call("arange", {int64_t(0), s0}, {{"dtype", DType::i64}});
  Node* rows = graph.create_call("index_select", {graph.create_get_attr("mask"), 0, indices});
  Node* cut = graph.create_call("index_select", {rows, 1, indices});
  graph.create_output({graph.create_call("where", {cut, x, -1e9})});
  if (most) graph.signature().set_symbol_range("s0", ir::SymbolRange{0, *most});
  return graph;
}

size_t indirect_loads(const ScheduledProgram& s) {
  size_t count = 0;
  for (const Kernel& kernel : s.kernels)
    for (const KernelStep& step : kernel.steps)
      visit(step.body, [&](const ExprNode& node) { count += node.kind == ExprKind::Load && !node.indirect.empty(); });
  return count;
}

TEST(ScheduleDirectIndices, AMaskCutAtARangedSymbolIsReadDirectly) {
  for (std::optional<int64_t> most : {std::optional<int64_t>(8), std::optional<int64_t>(), std::optional<int64_t>(9)}) {
    SCOPED_TRACE(most ? "s0 in [0, " + std::to_string(*most) + "]" : "s0 unbounded");
    ScheduledProgram s = testing::schedule_graph(masked(most));
    EXPECT_EQ(indirect_loads(s) == 0, most == std::optional<int64_t>(8)) << print_schedule(s);
  }
}

// x [s0, 4] plus the rows of table [8, 4] at where(arange(s0) < 0, arange(s0) + 8, arange(s0)) (a
// position embedding read through ONNX's Gather), or x @ w plus them (the add is the GEMM's
// epilogue).
Graph positions(std::optional<int64_t> most, bool through_gemm) {
  Graph graph;
  const SymInt s0 = SymInt::symbol("s0");
  Node* x = graph.create_placeholder("x", ir::TensorMeta::contiguous(DType::f32, {s0, 4}));
  graph.set_parameter("table", Tensor::full({8, 4}, 0.5, DType::f32));
  Node* at = graph.create_call("arange", {int64_t(0), s0}, {{"dtype", DType::i64}});
  Node* wrapped = graph.create_call("where", {graph.create_call("lt", {at, int64_t(0)}), graph.create_call("add", {at, int64_t(8)}), at});
  Node* rows = graph.create_call("index_select", {graph.create_get_attr("table"), 0, wrapped});
  Node* base = x;
  if (through_gemm) {
    graph.set_parameter("w", Tensor::full({4, 4}, 0.25, DType::f32));
    base = graph.create_call("matmul", {x, graph.create_get_attr("w")});
  }
  graph.create_output({graph.create_call("add", {base, rows})});
  if (most) graph.signature().set_symbol_range("s0", ir::SymbolRange{0, *most});
  return graph;
}

TEST(ScheduleDirectIndices, AnExportsNormalizedIndexOverALoopVariableIsReadDirectly) {
  for (bool through_gemm : {false, true}) {
    for (int64_t most : {8, 9}) {
      SCOPED_TRACE(std::string(through_gemm ? "a GEMM's epilogue" : "a pointwise kernel") + ", s0 in [0, " +
                   std::to_string(most) + "]");
      ScheduledProgram s = testing::schedule_graph(positions(most, through_gemm));
      EXPECT_EQ(indirect_loads(s), most == 8 ? 0u : 1u) << print_schedule(s);
    }
  }
}

}  // namespace
}  // namespace kiln::codegen
