// Merging the graphs of several cases into one, so that the CPU backend compiles one module per
// OpInfo entry instead of one per sample (the system compiler's fixed cost per module dominates
// a sample's run time). Each part's nodes, inputs and parameters get the prefix "c<k>_"; the
// merged graph returns every part's outputs in turn. The parts share nothing, so each part's
// results are what it computes alone (the runner still re-runs a part alone when its merged
// result differs, and reports that).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::pt2_conformance {

struct MergedPart {
  std::string prefix;     // "c3_"
  size_t first_output = 0;  // the part's outputs in the merged graph's outputs
  size_t output_count = 0;
};

// Whether a graph can be merged: static shapes only (symbols would collide).
bool mergeable(const ir::Graph& graph);

// Copies `part` into `merged` with `prefix`; returns the part's output nodes in `merged`.
std::vector<ir::Node*> copy_into(ir::Graph& merged, const ir::Graph& part, const std::string& prefix);

}  // namespace kiln::pt2_conformance
