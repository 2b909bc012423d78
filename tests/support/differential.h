// Helpers of differential tests (a backend against the reference interpreter): reproducible
// random input tensors, a tolerance comparison that says where two results differ, and the
// differential test over random graphs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::test_support {

// Floats uniform in [low, high] (on a grid of 1000003 steps), integers in [-4, 4], bools fair.
Tensor random_tensor(const Sizes& sizes, DType dtype, uint64_t seed, double low = -2, double high = 2);

// Empty when `actual` matches `expected`: same dtype and sizes, floats within
// atol + rtol * |expected| (NaN matching NaN), integers and bools exactly; otherwise the first
// element that differs, with both values.
std::string compare_tensors(const Tensor& expected, const Tensor& actual, double rtol, double atol);

// A backend's way to run `graph` on `inputs` (compile, then run), returning its outputs.
using GraphRunner =
    std::function<std::vector<Tensor>(const ir::Graph& graph, const std::map<std::string, Tensor>& inputs)>;

// For seeds 0 .. count-1: random_graph(seed) on random_inputs(graph, seed) (random_graph.h)
// through `run`, every output expected within rtol/atol of the interpreter's (which runs on
// its own copies of the inputs, as in-place graphs write them). A graph the interpreter
// refuses for its inputs is skipped; an exception from `run` fails that seed, printing the
// graph.
void expect_random_graphs_match_interpreter(int count, const GraphRunner& run, double rtol, double atol);

}  // namespace kiln::test_support
