// Helpers for the interpreter and reference-kernel tests: build a small graph around one op
// (tensor arguments become placeholders typed from the tensors), run it through the
// interpreter, and compare tensors with expected values computed in the test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "kiln/tensor.h"

namespace kiln::ir::testing {

// A one-op graph under construction.
class OpRunner {
 public:
  // A placeholder for `tensor` (typed from its dtype and sizes; the tensor itself, with its
  // strides, is what the interpreter receives).
  Argument input(const Tensor& tensor) {
    std::string name = "in" + std::to_string(inputs_.size());
    SymShape shape(tensor.sizes().begin(), tensor.sizes().end());
    Node* node = graph_.create_placeholder(name, TensorMeta::contiguous(tensor.dtype(), shape));
    inputs_[name] = tensor;
    return Argument(node);
  }
  Argument inputs(const std::vector<Tensor>& tensors) {
    std::vector<Argument> list;
    for (const Tensor& tensor : tensors) list.push_back(tensor.defined() ? input(tensor) : Argument());
    return Argument(list);
  }

  // Adds the call, returns its values through the interpreter.
  std::vector<Tensor> run(const std::string& op, std::vector<Argument> args, Kwargs kwargs = {}) {
    Node* node = graph_.create_call(op, std::move(args), std::move(kwargs));
    graph_.create_output({Argument(node)});
    return interpret(graph_, inputs_);
  }
  Tensor run1(const std::string& op, std::vector<Argument> args, Kwargs kwargs = {}) {
    std::vector<Tensor> values = run(op, std::move(args), std::move(kwargs));
    EXPECT_EQ(values.size(), 1u);
    return values.at(0);
  }

  Graph& graph() { return graph_; }
  const std::map<std::string, Tensor>& bound_inputs() const { return inputs_; }

 private:
  Graph graph_;
  std::map<std::string, Tensor> inputs_;
};

inline Tensor tensor(const Sizes& sizes, const std::vector<double>& values, DType dtype = DType::f32) {
  return Tensor::from_doubles(sizes, values, dtype);
}

inline std::vector<double> values_of(const Tensor& tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.flat_double(i));
  return values;
}

inline std::vector<int64_t> ints_of(const Tensor& tensor) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < tensor.numel(); ++i) values.push_back(tensor.flat_int(i));
  return values;
}

// Checks dtype, shape and values (NaN matches NaN; `tolerance` is absolute plus relative).
inline void expect_tensor(const Tensor& actual, DType dtype, const Sizes& sizes, const std::vector<double>& expected,
                          double tolerance = 1e-6) {
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(dtype_name(actual.dtype()), dtype_name(dtype));
  ASSERT_EQ(sizes_to_string(actual.sizes()), sizes_to_string(sizes));
  ASSERT_EQ(size_t(actual.numel()), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    double value = actual.flat_double(int64_t(i));
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(value)) << "element " << i << " is " << value << ", expected NaN";
    } else if (std::isinf(expected[i])) {
      EXPECT_EQ(value, expected[i]) << "element " << i;
    } else {
      EXPECT_NEAR(value, expected[i], tolerance * (1 + std::fabs(expected[i]))) << "element " << i;
    }
  }
}

inline void expect_ints(const Tensor& actual, DType dtype, const Sizes& sizes, const std::vector<int64_t>& expected) {
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(dtype_name(actual.dtype()), dtype_name(dtype));
  ASSERT_EQ(sizes_to_string(actual.sizes()), sizes_to_string(sizes));
  EXPECT_EQ(ints_of(actual), expected);
}

// Runs `body`, expecting a kiln::Error whose message contains every part.
template <typename Body>
void expect_error(Body body, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "expected a kiln::Error containing '" << parts.at(0) << "'";
  } catch (const Error& error) {
    std::string message = error.what();
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "message: " << message << "\nmissing: " << part;
  }
}

}  // namespace kiln::ir::testing
