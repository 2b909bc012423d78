// Max-flow / min-cut on small graphs whose answers are known by hand (passes/max_flow.h).
#include "passes/max_flow.h"

#include <gtest/gtest.h>

namespace kiln::passes {
namespace {

TEST(MaxFlow, ClassicNetworkFromCormen) {
  // CLRS figure 26.1: s=0, v1..v4 = 1..4, t=5; the maximum flow is 23.
  MaxFlow network(6);
  network.add_edge(0, 1, 16);
  network.add_edge(0, 2, 13);
  network.add_edge(2, 1, 4);
  network.add_edge(1, 3, 12);
  network.add_edge(3, 2, 9);
  network.add_edge(2, 4, 14);
  network.add_edge(4, 3, 7);
  network.add_edge(3, 5, 20);
  network.add_edge(4, 5, 4);
  EXPECT_EQ(network.solve(0, 5), 23);
  // The minimum cut {s, v1, v2, v4} | {v3, t}: edges v1->v3 (12), v4->v3 (7), v4->t (4).
  std::vector<bool> source_side = network.source_side();
  EXPECT_EQ(source_side, (std::vector<bool>{true, true, true, false, true, false}));
}

TEST(MaxFlow, DisjointPathsAddUp) {
  MaxFlow network(4);
  network.add_edge(0, 1, 3);
  network.add_edge(1, 3, 5);
  network.add_edge(0, 2, 7);
  network.add_edge(2, 3, 2);
  EXPECT_EQ(network.solve(0, 3), 5);
}

TEST(MaxFlow, NoPathMeansZeroFlow) {
  MaxFlow network(3);
  network.add_edge(0, 1, 9);
  network.add_edge(2, 1, 9);
  EXPECT_EQ(network.solve(0, 2), 0);
  EXPECT_EQ(network.sink_side(), (std::vector<bool>{false, false, true}));
}

TEST(MaxFlow, InfiniteEdgesAreNeverCut) {
  // s -inf-> a -4-> b -inf-> t and s -inf-> b: only the infinite path b... is cut-free, so
  // the flow is infinite.
  MaxFlow blocked(3);
  blocked.add_edge(0, 1, MaxFlow::kInfinite);
  blocked.add_edge(1, 2, MaxFlow::kInfinite);
  EXPECT_EQ(blocked.solve(0, 2), MaxFlow::kInfinite);

  MaxFlow network(4);
  network.add_edge(0, 1, MaxFlow::kInfinite);
  network.add_edge(1, 2, 4);
  network.add_edge(2, 3, MaxFlow::kInfinite);
  network.add_edge(1, 3, 6);
  EXPECT_EQ(network.solve(0, 3), 10);
}

TEST(MaxFlow, TiesResolveToTheCutNearestEachEnd) {
  // s -5-> a -5-> b -5-> t: three minimum cuts of 5. Nearest the sink cuts b->t; nearest the
  // source cuts s->a.
  MaxFlow network(4);
  network.add_edge(0, 1, 5);
  network.add_edge(1, 2, 5);
  network.add_edge(2, 3, 5);
  EXPECT_EQ(network.solve(0, 3), 5);
  EXPECT_EQ(network.sink_side(), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(network.source_side(), (std::vector<bool>{true, false, false, false}));
}

TEST(MaxFlow, FlowReroutesThroughReverseEdges) {
  // A graph where a greedy first path (s-a-b-t) must be undone through b->a's residual edge.
  MaxFlow network(4);
  network.add_edge(0, 1, 1);
  network.add_edge(0, 2, 1);
  network.add_edge(1, 2, 1);
  network.add_edge(1, 3, 1);
  network.add_edge(2, 3, 1);
  EXPECT_EQ(network.solve(0, 3), 2);
}

}  // namespace
}  // namespace kiln::passes
