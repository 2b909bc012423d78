// Constant folding.
//
// Guarantees afterwards: every call_function node whose inputs are all constants (creation
// ops such as full/arange/iota, CONSTANT_TENSOR get_attr targets such as earlier folded
// values, and — only when `freeze` is set — parameters and buffers) and whose output has a static shape is replaced by a get_attr of a new
// parameter named "_folded_<node>" holding its value, computed by the reference interpreter
// and marked CONSTANT_TENSOR in the graph signature,
// so the result is exactly what running the graph would compute. Constant nodes used only by
// other constant nodes are removed. Not folded: ops that mutate, tuple-valued nodes, and
// creation ops (no tensor input) larger than kMaxFoldedElements, so that a cheap
// `full([4096, 4096], 0)` is not turned into 64 MiB of weights, values computed from constants
// larger than max(kMaxFoldedDerivedElements, the largest constant input), views (t, permute,
// expand, ...) of constants larger than kMaxFoldedDerivedElements, which the code generator reads
// in place while a folded copy would double the constant's memory, and copy-back outputs
// (mutation outputs of the graph signature), which keep their node. With `freeze`, a get_attr of a
// parameter equal to one read earlier in the graph (dtype, sizes and every byte; not one a mutation
// output writes) reads that one, and parameters and buffers that no get_attr reads and no mutation
// output writes are dropped from the graph (their folded forms or twins replaced them). Needs a
// functional graph; on a graph that still mutates it changes nothing.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace kiln::passes {

inline constexpr int64_t kMaxFoldedElements = 4096;
// A value computed from constants (a gather from frozen tables, a mask built from index ranges)
// up to 256 KB of f32 is folded: Swin-T's relative position biases and window masks were
// otherwise gathered and compared again in every attention row of every call (61 -> 48 ms).
inline constexpr int64_t kMaxFoldedDerivedElements = 65536;

// Returns whether any node was folded.
bool fold_constants(ir::Graph& graph, bool freeze);

}  // namespace kiln::passes
