// Values at the edges of f32's range in reductions and normalizations: PyTorch's results for
// fixed rows (tests/data/f32_edges/, from scripts/make_f32_edge_goldens.py) and random graphs
// over those ops fed such values, for the interpreter, eager mode and the CPU and CUDA code to
// agree on. What Kiln computes there (PyTorch's plain f32 results, ir/kernels/
// normalization_kernels.cpp): a statistic past f32's range is inf, 1 / sqrt(inf) is 0, an inf or
// NaN in a row makes its reductions NaN or inf as IEEE arithmetic does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::test_support {

// One golden row pair: op (a key of f32_edge_graph, or "logsumexp": the ONNX model
// tests/data/f32_edges/logsumexp.onnx), x of shape [2, n] (row 0 holds the edge values) and
// PyTorch's outputs.
struct F32EdgeCase {
  std::string name;  // "layer_norm.huge.32"
  std::string op;
  Tensor x;
  std::vector<Tensor> expected;
};

std::vector<F32EdgeCase> f32_edge_cases();

// The graph of `op` over x: f32[2, s0] (and weight, bias: f32[s0], channel_weight,
// channel_bias: f32[2] where the op takes them), as the golden script computes it.
ir::Graph f32_edge_graph(const std::string& op);
// Inputs of f32_edge_graph(op) for `x` (the weights as the golden script makes them).
std::map<std::string, Tensor> f32_edge_inputs(const ir::Graph& graph, const Tensor& x);

// A random chain of 1 to 3 reductions, normalizations and views over one f32 input of rank 2
// or 3 (last dim s0), a pure function of the seed.
ir::Graph random_f32_edge_graph(uint64_t seed);
// Inputs for it with s0 = `size`: values in [-2, 2], and in some rows one huge, overflowing,
// infinite or NaN value and some tiny or subnormal ones (never two huge values of opposite
// signs in a row, whose sum depends on the order of additions); every row of a few inputs -inf.
std::map<std::string, Tensor> random_f32_edge_inputs(const ir::Graph& graph, uint64_t seed, int64_t size);

}  // namespace kiln::test_support
