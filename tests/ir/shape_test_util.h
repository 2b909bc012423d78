// A fixture for shape-inference tests: builds small graphs with placeholders and calls and
// returns the inferred meta or the kiln::Error message.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"

namespace kiln::ir::shape_test {

using ::testing::HasSubstr;

class ShapeTest : public ::testing::Test {
 protected:
  Graph graph;
  SymInt s0 = SymInt::symbol("s0");
  SymInt s1 = SymInt::symbol("s1");

  // A contiguous placeholder.
  Node* input(DType dtype, SymShape shape, const std::string& name = "x") {
    return graph.create_placeholder(name, TensorMeta::contiguous(dtype, std::move(shape)));
  }
  // A placeholder with the given strides (a non-contiguous input).
  Node* strided_input(DType dtype, SymShape shape, SymShape strides, const std::string& name = "x") {
    TensorMeta meta = TensorMeta::contiguous(dtype, std::move(shape));
    meta.strides = std::move(strides);
    return graph.create_placeholder(name, meta);
  }
  Node* call(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {}) {
    return graph.create_call(target, std::move(args), std::move(kwargs));
  }
  // The single tensor a call produces.
  TensorMeta meta(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {}) {
    return call(target, std::move(args), std::move(kwargs))->value();
  }
  // "f32[2, 3]" of the call's result.
  std::string type(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {}) {
    return call(target, std::move(args), std::move(kwargs))->meta.type_string();
  }
  // The message of the kiln::Error the call raises (a test failure when it raises none).
  std::string error(const std::string& target, std::vector<Argument> args, Kwargs kwargs = {}) {
    try {
      graph.create_call(target, std::move(args), std::move(kwargs));
    } catch (const Error& caught) {
      return caught.what();
    }
    ADD_FAILURE() << "expected a kiln::Error from " << target;
    return "";
  }
  static Argument ints(std::vector<int64_t> values) { return Argument::ints(values); }
  static Argument syms(std::vector<SymInt> values) { return Argument::sym_ints(values); }
  static Argument nodes(std::vector<Node*> values) {
    std::vector<Argument> items(values.begin(), values.end());
    return Argument(std::move(items));
  }
};

}  // namespace kiln::ir::shape_test
