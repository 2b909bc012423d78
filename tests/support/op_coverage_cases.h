// Graphs that cover every core op, for differential tests of a backend against the reference
// interpreter: each case is a graph, inputs to run it with and the tolerance to compare at.
// The set follows the CPU backend's coverage (tests/compiler/cpu_backend_test.cpp): every
// unary and binary op, integer and bool exactness, i16 end to end, copies, creation, Philox,
// fallback ops, half and narrow casts, saturating casts, whole-tensor reductions (with a NaN),
// odd row sizes for the pointwise chain / softmax / layer_norm / reductions, views,
// transposes, a symbolic batch, batched and broadcast matmul, convolution and pooling.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::test_support {

struct OpCoverageCase {
  std::string name;  // a C identifier, for test names
  ir::Graph graph;
  std::vector<std::map<std::string, Tensor>> input_sets;  // each run and compared
  double rtol = 1e-4, atol = 1e-5;
};

std::vector<OpCoverageCase> op_coverage_cases();

}  // namespace kiln::test_support
