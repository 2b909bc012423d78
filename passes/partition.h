// The min-cut partition: splits a joint forward+backward graph (passes/joint_graph.h) into a
// forward graph and a backward graph that compile and run separately, choosing what the
// forward saves for the backward by a minimum cut, after AOTAutograd's
// min_cut_rematerialization_partition.
//
// Forward graph: inputs are the joint graph's non-tangent placeholders (same names, same
// order); parameters are get_attr nodes; outputs are the forward outputs with their specs in
// the graph signature (copy-backs of mutated inputs and buffers, the loss), then the saved
// values (in joint-graph order), user outputs. Parameters keep their kinds.
// Backward graph: inputs are the saved values (placeholders named like the forward nodes they
// hold), then the tangents; parameters are get_attr nodes where used; outputs are the
// gradients in `wrt` order. Running the forward and feeding its saved outputs and the
// tangents to the backward computes exactly what the joint graph computes.
//
// The choice. The forward nodes the backward reads must reach it, either saved or recomputed
// in the backward from other saved values. The cost of saving a value is its size in bytes
// (symbolic sizes are weighed with each symbol at its hint, see PartitionOptions); the best
// choice is a minimum cut of a flow network in which each forward value is split into an
// in-vertex and an out-vertex joined by an edge of its size: the source feeds every forward
// input and every value that may not be recomputed; every value the backward reads drains
// into the sink; data edges are infinite. Among minimum cuts the one nearest the backward is
// taken (same bytes, least recomputation).
//  - Recomputable (may be duplicated into the backward): pointwise ops (cast, where, clamp,
//    comparisons, and composite pointwise ops such as gelu), views, getitem, and fills
//    (full, full_like, arange, iota). Never matmul/bmm, convolution, pooling, reductions,
//    scans, copies (cat, gather, ...), other composites, or random ops: those run once, in
//    the forward, and are saved when the backward needs them.
//  - Parameters (get_attr) are free: both graphs read them, they are never saved.
//  - Forward inputs (placeholders) cost their bytes when saved, as PyTorch counts primals: the
//    backward receives nothing but the saved values and the tangents, so keeping an input
//    alive for the backward holds its memory like any activation.
//  - A node producing a tuple is never saved itself; its getitem projections are.
// The report compares the saved bytes with the save-every-activation baseline: the bytes of
// every forward value the backward reads directly (no recomputation).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/joint_graph.h"

namespace kiln::passes {

struct PartitionOptions {
  // The value each symbolic dimension takes when sizes are weighed ("s0" -> 64). A symbol
  // not listed weighs default_symbol_hint.
  std::map<std::string, int64_t> size_hints;
  int64_t default_symbol_hint = 64;
};

struct SavedValue {
  std::string name;  // the forward node, and the backward placeholder holding it
  std::string type;  // "f32[s0, 128]"
  int64_t bytes = 0;
};

struct Partition {
  ir::Graph forward;
  ir::Graph backward;
  int num_forward_outputs = 0;  // the forward's first outputs; the saved values follow
  std::vector<std::string> wrt;       // what each backward output is the gradient of
  std::vector<std::string> tangents;  // the backward's inputs after the saved values
  std::vector<SavedValue> saved;      // in the forward's output order
  // Forward nodes the backward computes again from saved values, in graph order.
  std::vector<std::string> recomputed;
  int64_t saved_bytes = 0;
  // Saving every forward value the backward reads, with no recomputation.
  int64_t baseline_bytes = 0;
  int64_t baseline_values = 0;
  std::map<std::string, int64_t> size_hints;  // the symbol values the bytes were counted with

  // Lines starting with "# " (a comment the IR parser skips): the saved values with their
  // types and sizes, the recomputed nodes, saved bytes against the baseline.
  std::string report() const;
};

// Splits `joint` (not modified). Throws InternalError when `joint` breaks its layout.
Partition partition_joint_graph(const JointGraph& joint, const PartitionOptions& options = {});

// True for a call_function node that the backward may compute again (see above).
bool is_recomputable(const ir::Node& node);

// The bytes of the value(s) `node` produces, each symbol at its hint.
int64_t value_bytes(const ir::Node& node, const PartitionOptions& options);

}  // namespace kiln::passes
