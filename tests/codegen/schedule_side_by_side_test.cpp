// Tests of kernels side by side (codegen/schedule_side_by_side.cpp): two independent chains of
// small kernels (a bidirectional recurrence's directions) become one group of two lanes, one chain
// each, with the large kernel between them moved before both; the memory plan gives the buffers a
// group touches bytes of their own; nothing is grouped without the option, in one dependent
// chain, or where the kernels read indices from a tensor (a fault would name the wrong kernel).
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/codegen/schedule_test_support.h"

namespace kiln::codegen {
namespace {

using ir::Graph;
using ir::Node;
using ir::SymInt;

using testing::input;
using testing::schedule_graph;

ScheduleOptions side_by_side() {
  ScheduleOptions options;
  options.side_by_side.enabled = true;
  return options;
}

// Two recurrences over x [1, 32] (8 steps each, tanh and sigmoid), each after its own large
// projection of `long` [256, 256]: forward's projection, forward's steps, backward's projection,
// backward's steps, then the two joined. With `gather`, each backward step first reads a row of
// its state through an index tensor.
Graph two_chains(bool dependent = false, bool gather = false) {
  Graph graph;
  Node* x = input(graph, "x", {1, 32});
  Node* long_input = input(graph, "long_input", {256, 256});
  Node* projection_a = input(graph, "projection_a", {256, 256});
  Node* projection_b = input(graph, "projection_b", {256, 256});
  Node* wa = input(graph, "wa", {32, 32});
  Node* wb = input(graph, "wb", {32, 32});
  Node* row = input(graph, "row", {1}, DType::i64);
  Node* pa = graph.create_call("matmul", {long_input, projection_a});
  Node* a = x;
  for (int step = 0; step < 8; ++step) a = graph.create_call("tanh", {graph.create_call("matmul", {a, wa})});
  Node* pb = graph.create_call("matmul", {long_input, projection_b});
  Node* b = dependent ? a : x;
  for (int step = 0; step < 8; ++step) {
    if (gather) b = graph.create_call("index_select", {b, 0, row});
    b = graph.create_call("sigmoid", {graph.create_call("matmul", {b, wb})});
  }
  graph.create_output({graph.create_call("cat", {std::vector<ir::Argument>{a, b}, 1}), pa, pb});
  return graph;
}

// Whether every kernel of [begin, end) computes nodes of the tanh chain (or all of the sigmoid one).
bool one_chain(const ScheduledProgram& s, int begin, int end, const std::string& op) {
  for (int k = begin; k < end; ++k) {
    const std::vector<std::string>& origins = s.kernels[size_t(k)].origins;
    if (!std::any_of(origins.begin(), origins.end(), [&](const std::string& o) { return o.rfind(op, 0) == 0; })) return false;
  }
  return true;
}

TEST(ScheduleSideBySide, TwoIndependentChainsAreTwoLanesWithTheirOwnBytes) {
  ScheduledProgram s = schedule_graph(two_chains(), side_by_side());
  ASSERT_EQ(s.side_by_side.size(), 1u) << print_schedule(s);
  const SideBySide& group = s.side_by_side[0];
  EXPECT_EQ(group.lane0, 8);
  EXPECT_EQ(group.lane1, 8);
  // Both projections come first (the backward one moved before the forward steps).
  EXPECT_EQ(group.first, 2) << print_schedule(s);
  const bool tanh_first = one_chain(s, group.first, group.first + group.lane0, "tanh");
  EXPECT_TRUE(one_chain(s, group.first, group.first + group.lane0, tanh_first ? "tanh" : "sigmoid")) << print_schedule(s);
  EXPECT_TRUE(one_chain(s, group.first + group.lane0, group.first + 16, tanh_first ? "sigmoid" : "tanh")) << print_schedule(s);
  for (size_t k = 0; k < s.kernels.size(); ++k) EXPECT_EQ(s.kernels[k].id, int(k));
  EXPECT_NE(print_schedule(s).find("# side by side: "), std::string::npos);
  // No two buffers alive in the group share a byte.
  const int last = group.first + group.lane0 + group.lane1 - 1;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (const auto& [buffer, life] : s.memory.lifetimes) {
    if (life.last_kernel < group.first || life.first_kernel > last) continue;
    const int64_t offset = s.memory.offsets.at(buffer).constant();
    ranges.push_back({offset, offset + life.bytes.constant()});
  }
  std::sort(ranges.begin(), ranges.end());
  ASSERT_GE(ranges.size(), 16u);
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_LE(ranges[i - 1].second, ranges[i].first) << print_schedule(s);
}

TEST(ScheduleSideBySide, NoGroupsWithoutTheOptionInOneChainOrWhereIndicesAreRead) {
  ScheduledProgram plain = schedule_graph(two_chains(), {});
  EXPECT_TRUE(plain.side_by_side.empty());
  ScheduledProgram chained = schedule_graph(two_chains(/*dependent=*/true), side_by_side());
  EXPECT_TRUE(chained.side_by_side.empty()) << print_schedule(chained);
  ScheduledProgram gathered = schedule_graph(two_chains(false, /*gather=*/true), side_by_side());
  EXPECT_TRUE(gathered.side_by_side.empty()) << print_schedule(gathered);
}

}  // namespace
}  // namespace kiln::codegen
