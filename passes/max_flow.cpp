// Dinic's maximum flow: repeated BFS level graphs and DFS blocking flows; min-cut sides by
// residual reachability.
#include "passes/max_flow.h"

#include <algorithm>
#include <deque>

#include "kiln/error.h"

namespace kiln::passes {

MaxFlow::MaxFlow(int num_vertices) : adjacency_(size_t(num_vertices)) {}

int MaxFlow::add_vertex() {
  adjacency_.emplace_back();
  return int(adjacency_.size()) - 1;
}

void MaxFlow::add_edge(int from, int to, int64_t capacity) {
  KILN_CHECK(from >= 0 && from < num_vertices() && to >= 0 && to < num_vertices(), "edge out of range");
  KILN_CHECK(capacity >= 0, "negative capacity");
  adjacency_[size_t(from)].push_back(int(edges_.size()));
  edges_.push_back({to, std::min(capacity, kInfinite)});
  adjacency_[size_t(to)].push_back(int(edges_.size()));
  edges_.push_back({from, 0});
}

bool MaxFlow::build_levels(int source, int sink) {
  level_.assign(adjacency_.size(), -1);
  std::deque<int> queue{source};
  level_[size_t(source)] = 0;
  while (!queue.empty()) {
    int vertex = queue.front();
    queue.pop_front();
    for (int index : adjacency_[size_t(vertex)]) {
      const Edge& edge = edges_[size_t(index)];
      if (edge.capacity > 0 && level_[size_t(edge.to)] < 0) {
        level_[size_t(edge.to)] = level_[size_t(vertex)] + 1;
        queue.push_back(edge.to);
      }
    }
  }
  return level_[size_t(sink)] >= 0;
}

int64_t MaxFlow::push(int vertex, int sink, int64_t limit) {
  if (vertex == sink) return limit;
  for (size_t& i = next_edge_[size_t(vertex)]; i < adjacency_[size_t(vertex)].size(); ++i) {
    int index = adjacency_[size_t(vertex)][i];
    Edge& edge = edges_[size_t(index)];
    if (edge.capacity <= 0 || level_[size_t(edge.to)] != level_[size_t(vertex)] + 1) continue;
    int64_t pushed = push(edge.to, sink, std::min(limit, edge.capacity));
    if (pushed <= 0) continue;
    // Infinite edges stay infinite: their residual never matters, and this avoids overflow.
    if (edge.capacity < kInfinite) edge.capacity -= pushed;
    Edge& reverse = edges_[size_t(index ^ 1)];
    reverse.capacity = std::min(kInfinite, reverse.capacity + pushed);
    return pushed;
  }
  return 0;
}

int64_t MaxFlow::solve(int source, int sink) {
  KILN_CHECK(source != sink, "source and sink must differ");
  KILN_CHECK(sink_ < 0, "solve() called twice");
  source_ = source;
  sink_ = sink;
  int64_t total = 0;
  while (total < kInfinite && build_levels(source, sink)) {
    next_edge_.assign(adjacency_.size(), 0);
    while (int64_t pushed = push(source, sink, kInfinite)) {
      total = std::min(kInfinite, total + pushed);
      if (total >= kInfinite) break;
    }
  }
  return total;
}

std::vector<bool> MaxFlow::source_side() const {
  KILN_CHECK(source_ >= 0, "source_side() before solve()");
  std::vector<bool> reached(adjacency_.size(), false);
  std::deque<int> queue{source_};
  reached[size_t(source_)] = true;
  while (!queue.empty()) {
    int vertex = queue.front();
    queue.pop_front();
    for (int index : adjacency_[size_t(vertex)]) {
      const Edge& edge = edges_[size_t(index)];
      if (edge.capacity > 0 && !reached[size_t(edge.to)]) reached[size_t(edge.to)] = true, queue.push_back(edge.to);
    }
  }
  return reached;
}

std::vector<bool> MaxFlow::sink_side() const {
  KILN_CHECK(sink_ >= 0, "sink_side() before solve()");
  std::vector<bool> reaches(adjacency_.size(), false);
  std::deque<int> queue{sink_};
  reaches[size_t(sink_)] = true;
  while (!queue.empty()) {
    int vertex = queue.front();
    queue.pop_front();
    // u reaches `vertex` in the residual graph when the edge u -> vertex has capacity left;
    // that edge is the reverse of an edge vertex -> u stored beside it.
    for (int index : adjacency_[size_t(vertex)]) {
      const Edge& into = edges_[size_t(index ^ 1)];
      int from = edges_[size_t(index)].to;
      if (into.capacity > 0 && !reaches[size_t(from)]) reaches[size_t(from)] = true, queue.push_back(from);
    }
  }
  return reaches;
}

}  // namespace kiln::passes
