// Maximum flow and minimum cut on a small directed graph with int64 capacities (Dinic's
// algorithm: BFS levels, then blocking flows by DFS), for the min-cut partition of the joint
// graph (passes/partition.h). Capacities may be kInfinite; a sum of flows saturates at
// kInfinite instead of overflowing, so a cut that must cross an infinite edge reports
// kInfinite.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::passes {

class MaxFlow {
 public:
  static constexpr int64_t kInfinite = INT64_MAX / 4;

  explicit MaxFlow(int num_vertices = 0);
  int add_vertex();  // returns its index
  int num_vertices() const { return int(adjacency_.size()); }
  // A directed edge with `capacity` >= 0 (kInfinite or more counts as infinite).
  void add_edge(int from, int to, int64_t capacity);

  // Pushes a maximum flow from `source` to `sink` and returns its value (kInfinite when no
  // finite cut exists). Call once per instance.
  int64_t solve(int source, int sink);

  // After solve(): the sink side of the minimum cut nearest the sink, i.e. the vertices that
  // can still reach the sink in the residual graph. Every other vertex is on the source side;
  // the cut is the set of edges from the source side into this set (all saturated). Among the
  // minimum cuts it is the one with the smallest sink side.
  std::vector<bool> sink_side() const;
  // After solve(): the vertices the source still reaches in the residual graph (the minimum
  // cut nearest the source).
  std::vector<bool> source_side() const;

 private:
  struct Edge {
    int to;
    int64_t capacity;  // residual capacity
  };
  bool build_levels(int source, int sink);
  int64_t push(int vertex, int sink, int64_t limit);

  std::vector<Edge> edges_;  // edge i and its reverse i ^ 1
  std::vector<std::vector<int>> adjacency_;
  std::vector<int> level_;
  std::vector<std::size_t> next_edge_;
  int source_ = -1;
  int sink_ = -1;
};

}  // namespace kiln::passes
