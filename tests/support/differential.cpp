// Helpers of differential tests. See tests/support/differential.h.
#include "tests/support/differential.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ir/interpreter.h"
#include "ir/printer.h"
#include "kiln/error.h"
#include "tests/support/random_graph.h"

namespace kiln::test_support {

Tensor random_tensor(const Sizes& sizes, DType dtype, uint64_t seed, double low, double high) {
  std::mt19937_64 rng(seed);
  std::vector<double> values(size_t(numel_of(sizes)));
  for (double& v : values) {
    if (dtype == DType::boolean) {
      v = double(rng() % 2);
    } else if (is_floating(dtype)) {
      v = low + (high - low) * double(rng() % 1000003) / 1000003.0;
    } else {
      v = double(int64_t(rng() % 9) - 4);
    }
  }
  return Tensor::from_doubles(sizes, values, dtype);
}

std::string compare_tensors(const Tensor& expected, const Tensor& actual, double rtol, double atol) {
  if (expected.dtype() != actual.dtype()) {
    return std::string("dtype ") + std::string(dtype_name(actual.dtype())) + ", expected " +
           std::string(dtype_name(expected.dtype()));
  }
  if (expected.sizes() != actual.sizes()) return "sizes differ";
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (is_floating(expected.dtype())) {
      double e = expected.flat_double(i), a = actual.flat_double(i);
      if (std::isnan(e) && std::isnan(a)) continue;
      if (e == a) continue;
      if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e))) {
        return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(e);
      }
    } else if (expected.flat_int(i) != actual.flat_int(i)) {
      return "element " + std::to_string(i) + " is " + std::to_string(actual.flat_int(i)) + ", expected " +
             std::to_string(expected.flat_int(i));
    }
  }
  return "";
}

void expect_random_graphs_match_interpreter(int count, const GraphRunner& run, double rtol, double atol) {
  for (int seed = 0; seed < count; ++seed) {
    ir::Graph graph = random_graph(uint64_t(seed));
    std::map<std::string, Tensor> inputs = random_inputs(graph, uint64_t(seed));
    std::map<std::string, Tensor> inputs_copy;
    for (auto& [name, value] : inputs) inputs_copy[name] = value.clone();
    std::vector<Tensor> expected;
    try {
      expected = ir::interpret(graph, inputs_copy);
    } catch (const Error&) {
      continue;  // the graph is invalid for these inputs (the interpreter refuses it too)
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<Tensor> actual;
    try {
      actual = run(graph, inputs);
    } catch (const std::exception& error) {
      ADD_FAILURE() << error.what() << "\n" << ir::print_graph(graph);
      continue;
    }
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(compare_tensors(expected[i], actual[i], rtol, atol), "") << "output " << i << "\n"
                                                                         << ir::print_graph(graph);
    }
  }
}

}  // namespace kiln::test_support
