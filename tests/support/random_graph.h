// A random graph generator for property tests: random, valid DAGs over Kiln's op set, and
// random inputs to run them with.
//
// A graph from random_graph(seed) is a pure function of the seed and the options. It has
// 1-5 placeholders (f32 mostly, some i64 and bool; ranks 0-4, sizes 1-5, sometimes 0,
// sometimes the symbols s0 and s1), a few parameters (get_attr), and a chain of calls drawn
// from: pointwise unary and binary ops with broadcasting and Python-number operands,
// comparisons, where, casts, reductions (keepdim, negative dims, all dims), views (permute,
// transpose, slice, select, unsqueeze, squeeze, expand, reshape, view), matmul/bmm, cat,
// cumsum, creation ops, copies (pad, gather, index_select, scatter, index_put), convolution
// and pooling, composite ops (softmax, layer_norm, gelu, linear, losses, attention, ...) and
// in-place ops (add_, mul_, relu_, copy_, fill_, clamp_, gelu_, index_put_, ...) on clones,
// on views of clones, on fresh results, and now and then on graph inputs.
//
// Every node is built with Graph::create_call, so the registry's shape rules validate it; a
// choice they reject is dropped and another one drawn. Beyond what shape rules can check,
// the generator keeps to what PyTorch defines and what compares well under a tolerance:
//  - values stay bounded: it tracks a bound on every value's magnitude and squashes a value
//    (tanh, clamp) before an op that would let it grow past ~1e3; log, sqrt, division and
//    friends only see guarded operands (log(|x| + 1), x / (|y| + 1), ...);
//  - no write goes into an expanded view, into a parameter, or from an operand that
//    partially overlaps the written tensor; a reshape that might copy is never written
//    through, and its base is not written after it;
//  - index tensors (gather, scatter, embedding, losses) are in range by construction (argmax
//    along the indexed dim, clamp, arange), and scatter targets are unique per row;
//  - whatever depends on a symbol's value (select and index_select indices, pads, squeeze,
//    reductions that must not be empty) is valid for every binding of s0 and s1 in [2, 5];
//  - values computed through composite ops (whose rounding changes when decomposed) never
//    feed discontinuous ops (comparisons, floor, sign, integer casts, argmax), so a
//    last-bit difference cannot flip a result.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::test_support {

struct RandomGraphOptions {
  int num_ops = 14;             // generation steps; each adds one op (plus any guard/helper nodes)
  bool allow_inplace = true;    // in-place ops and writes through views
  bool allow_symbolic = true;   // placeholders typed with s0 / s1 in some graphs
  bool allow_composite = true;  // softmax, layer_norm, linear, gelu_, ... (before decompose)
  bool allow_random = true;     // rand, randn and dropout (Philox, seeded in the graph)
};

ir::Graph random_graph(uint64_t seed, const RandomGraphOptions& options = {});

// The sizes random inputs bind to symbols: s0 = 3, s1 = 2.
std::map<std::string, int64_t> default_symbol_sizes();

// One tensor per placeholder, by target name, shaped by the placeholder's type with symbols
// bound by `symbol_sizes` (each in [2, 5] for graphs from random_graph). f32 values are
// uniform in [-2, 2], integers uniform in [-4, 4], bools fair coins.
std::map<std::string, Tensor> random_inputs(
    const ir::Graph& graph, uint64_t seed, const std::map<std::string, int64_t>& symbol_sizes = default_symbol_sizes());

}  // namespace kiln::test_support
